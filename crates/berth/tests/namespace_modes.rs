//! `--pid`, `--ipc`, `--uts` host/none modes, `--pid/--ipc container:`, `--domainname`, `--oom-score-adj`, and the
//! create settings berth refuses rather than accept and ignore (`--runtime`, log drivers and
//! options, joining another container's namespaces). Where a
//! Docker engine is reachable the same probes run against it and must print the same.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use support::{docker, docker_host, fixture, Berth};

fn busybox() -> Berth {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth
}

/// `run --rm --network none OPTIONS busybox sh -c SCRIPT` in berth, and in Docker when one is
/// reachable (with the busybox fixture loaded): both must succeed and print the same.
fn same_in_docker(berth: &Berth, options: &[&str], script: &str) -> String {
    let mut args = vec!["run", "--rm", "--network", "none"];
    args.extend_from_slice(options);
    args.extend_from_slice(&["busybox", "sh", "-c", script]);
    let out = berth.run(&args).ok();
    if let Some(host) = docker_host() {
        let archive = fixture("busybox-docker.tar");
        docker(&host, &["load", "-q", "-i", archive.to_str().unwrap()]);
        let reference = docker(&host, &args);
        assert!(reference.status.success(), "docker {args:?}: {reference:?}");
        assert_eq!(String::from_utf8_lossy(&reference.stdout), out, "{args:?}");
    }
    out
}

fn host_namespace(kind: &str) -> String {
    fs_err::read_link(format!("/proc/self/ns/{kind}"))
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn pid_host_shares_the_hosts_pid_namespace() {
    let berth = busybox();
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            "none",
            "--pid",
            "host",
            "busybox",
            "sh",
            "-c",
            "readlink /proc/self/ns/pid; echo $$; test -d /proc/1 && cat /proc/1/comm",
        ])
        .ok();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], host_namespace("pid"), "{out}");
    assert_ne!(
        lines[1], "1",
        "the shell is not pid 1 in the host's namespace"
    );
    let host_init = fs_err::read_to_string("/proc/1/comm").unwrap();
    assert_eq!(lines[2], host_init.trim(), "{out}");
    // The default is still a namespace of its own.
    let own = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            "none",
            "busybox",
            "readlink",
            "/proc/self/ns/pid",
        ])
        .ok();
    assert_ne!(own.trim(), host_namespace("pid"));
}

#[test]
fn ipc_host_none_and_shareable() {
    let berth = busybox();
    let marker = format!("berth-test-{}", std::process::id());
    let host_file = std::path::Path::new("/dev/shm").join(&marker);
    fs_err::write(&host_file, b"from the host").unwrap();
    let script = format!("readlink /proc/self/ns/ipc; cat /dev/shm/{marker}");
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            "none",
            "--ipc",
            "host",
            "busybox",
            "sh",
            "-c",
            &script,
        ])
        .ok();
    fs_err::remove_file(&host_file).unwrap();
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [host_namespace("ipc").as_str(), "from the host"],
        "{out}"
    );
    let none = same_in_docker(&berth, &["--ipc", "none"], "ls -d /dev/shm 2>&1; echo $?");
    assert!(none.ends_with("1\n"), "no /dev/shm with --ipc none: {none}");
    let shareable = same_in_docker(
        &berth,
        &["--ipc", "shareable"],
        "grep -c ' /dev/shm tmpfs' /proc/mounts",
    );
    assert_eq!(shareable, "1\n");
    let own = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            "none",
            "--ipc",
            "shareable",
            "busybox",
            "readlink",
            "/proc/self/ns/ipc",
        ])
        .ok();
    assert_ne!(own.trim(), host_namespace("ipc"));
}

#[test]
fn uts_host_keeps_the_hosts_names_and_refuses_a_hostname() {
    let berth = busybox();
    let host_name = nix::unistd::gethostname()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            "none",
            "--uts",
            "host",
            "busybox",
            "sh",
            "-c",
            "hostname; readlink /proc/self/ns/uts",
        ])
        .ok();
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [host_name.as_str(), host_namespace("uts").as_str()],
        "{out}"
    );
    let error = berth
        .run(&[
            "run", "--rm", "--uts", "host", "-h", "other", "busybox", "true",
        ])
        .fails(125);
    assert!(
        error.contains("conflicting options: hostname and the UTS mode"),
        "{error}"
    );
    assert_eq!(berth.run(&["ps", "-aq"]).ok(), "");
}

#[test]
fn domainname_and_oom_score_adj_are_set() {
    let berth = busybox();
    let out = same_in_docker(
        &berth,
        &["--domainname", "example.org", "--oom-score-adj", "100"],
        "cat /proc/sys/kernel/domainname /proc/self/oom_score_adj",
    );
    assert_eq!(out, "example.org\n100\n");
    // An exec'd process gets the container's score, as under runc.
    let id = berth.run_detached(&[
        "--network",
        "none",
        "--oom-score-adj",
        "200",
        "busybox",
        "sleep",
        "60",
    ]);
    let exec = berth
        .run(&["exec", &id, "cat", "/proc/self/oom_score_adj"])
        .ok();
    berth.run(&["rm", "-f", &id]).ok();
    assert_eq!(exec, "200\n");
}

#[test]
fn pid_and_ipc_of_another_container_are_joined() {
    let berth = busybox();
    let donor = berth.run_detached(&[
        "--network",
        "none",
        "--name",
        "donor",
        "busybox",
        "sh",
        "-c",
        "echo from-the-donor > /dev/shm/f; sleep 300",
    ]);
    let namespace = |container: &str, kind: &str| {
        berth
            .run(&[
                "exec",
                container,
                "readlink",
                &format!("/proc/self/ns/{kind}"),
            ])
            .ok()
    };
    // --pid: the donor's processes, its sleep (which its sh became) as pid 1.
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            "none",
            "--pid",
            "container:donor",
            "busybox",
            "sh",
            "-c",
            "cat /proc/1/cmdline | tr '\\0' ' '; readlink /proc/self/ns/pid",
        ])
        .ok();
    assert_eq!(out, format!("sleep 300 {}", namespace("donor", "pid")));
    // --ipc: the donor's IPC namespace and its /dev/shm (one tmpfs: a file
    // written by either is the other's).
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            "none",
            "--ipc",
            "container:donor",
            "busybox",
            "sh",
            "-c",
            "cat /dev/shm/f; echo from-the-joiner > /dev/shm/g; readlink /proc/self/ns/ipc",
        ])
        .ok();
    assert_eq!(
        out,
        format!("from-the-donor\n{}", namespace("donor", "ipc"))
    );
    assert_eq!(
        berth.run(&["exec", "donor", "cat", "/dev/shm/g"]).ok(),
        "from-the-joiner\n"
    );
    // The mode as given, in inspect.
    let joiner = berth.run_detached(&[
        "--network",
        "none",
        "--pid",
        "container:donor",
        "--ipc",
        &format!("container:{donor}"),
        "busybox",
        "sleep",
        "300",
    ]);
    assert_eq!(
        berth.inspect(&joiner, "{{.HostConfig.PidMode}} {{.HostConfig.IpcMode}}"),
        format!("container:donor container:{donor}")
    );
    berth.run(&["rm", "-f", &joiner]).ok();

    // What cannot be joined, in dockerd's words; nothing is left.
    let private = berth.run_detached(&[
        "--network",
        "none",
        "--ipc",
        "private",
        "busybox",
        "sleep",
        "300",
    ]);
    let error = berth
        .run(&[
            "run",
            "--rm",
            "--ipc",
            &format!("container:{private}"),
            "busybox",
            "true",
        ])
        .fails(125);
    assert!(
        error.contains(&format!("can't join IPC of container {private}: non-shareable IPC (hint: use IpcMode:shareable for the donor container)")),
        "{error}"
    );
    berth.run(&["stop", "-t", "0", "donor"]).ok();
    let error = berth
        .run(&["run", "--rm", "--pid", "container:donor", "busybox", "true"])
        .fails(125);
    assert!(
        error.contains(&format!("container {donor} is not running")),
        "{error}"
    );
    let error = berth
        .run(&["run", "--rm", "--ipc", "container:donor", "busybox", "true"])
        .fails(125);
    assert!(
        error.contains(&format!(
            "can't join IPC of container {donor}: container {donor} is not running"
        )),
        "{error}"
    );
    berth.run(&["rm", "-f", &private, &donor]).ok();
    assert_eq!(berth.run(&["ps", "-aq"]).ok(), "");
}

#[test]
fn settings_berth_cannot_honour_are_refused_by_name() {
    let berth = busybox();
    let other = berth.run_detached(&[
        "--network",
        "none",
        "--name",
        "other",
        "busybox",
        "sleep",
        "60",
    ]);
    let cases: &[(&[&str], &str)] = &[
        (&["--runtime", "foo"], "Unknown runtime specified foo"),
        (
            &["--log-driver", "foo"],
            "error looking up logging plugin foo: plugin \"foo\" not found",
        ),
        (
            &["--log-driver", "syslog"],
            "log driver \"syslog\" is not supported: berth has no daemon",
        ),
        (
            &["--log-opt", "x=1"],
            "unknown log opt 'x' for json-file log driver",
        ),
        (&["--pid", "container:nosuch"], "No such container: nosuch"),
        (&["--ipc", "container:nosuch"], "No such container: nosuch"),
    ];
    for (options, wanted) in cases {
        let mut args = vec!["run", "--rm"];
        args.extend_from_slice(options);
        args.extend_from_slice(&["busybox", "true"]);
        let error = berth.run(&args).fails(125);
        assert!(error.contains(wanted), "{options:?}: {error}");
    }
    // Nothing was created but the container they named.
    let all = berth.run(&["ps", "-aq", "--no-trunc"]).ok();
    berth.run(&["rm", "-f", &other]).ok();
    assert_eq!(all.trim(), other);
    // What berth does run: its own runtime by Docker's default name, json-file.
    berth
        .run(&[
            "run",
            "--rm",
            "--runtime",
            "runc",
            "--log-driver",
            "json-file",
            "busybox",
            "true",
        ])
        .ok();
}
