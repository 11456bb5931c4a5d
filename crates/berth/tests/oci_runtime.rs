//! berth as an OCI runtime (`berth-runc`), checked against Debian's runc on the same
//! bundles: the lifecycle and its exit codes, a battery of configurations run by both with
//! the same status and output, exec/ps/pause/resume/kill --all, bad input refused with
//! nothing left behind. Runs as root (namespaces, cgroups).
#![allow(clippy::unwrap_used)]

mod oci;
mod support;

use oci::{base_config, bundle, cgroup_dirs, rootfs, runtimes, Cleanup, Runtime};
use serde_json::{json, Value};

fn is_root() -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    eprintln!("skipped: the OCI runtime tests need root");
    false
}

fn id_for(test: &str, runtime: &Runtime) -> String {
    format!("{test}-{}", runtime.name)
}

#[test]
fn lifecycle_matches_runc() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rootfs = rootfs(dir.path());
    let runtimes = runtimes(dir.path());
    let ids: Vec<String> = runtimes
        .iter()
        .map(|runtime| id_for("life", runtime))
        .collect();
    let _cleanup = Cleanup {
        runtimes: &runtimes,
        ids: ids.clone(),
    };
    let mut transcripts = Vec::new();
    for (runtime, id) in runtimes.iter().zip(&ids) {
        let config = base_config(&rootfs, id, &["echo", "hi"]);
        let bundle = bundle(dir.path(), &format!("bundle-{}", runtime.name), &config);
        let mut codes = Vec::new();
        let created = runtime.create(
            &bundle,
            id,
            &dir.path().join(format!("io-{}", runtime.name)),
        );
        codes.push(("create", created.code));
        let state = runtime.state(id).unwrap();
        assert_eq!(state["status"], "created", "{}", runtime.name);
        assert!(state["pid"].as_i64().unwrap() > 0);
        assert_eq!(state["bundle"], bundle.to_str().unwrap());
        let keys: Vec<String> = state.as_object().unwrap().keys().cloned().collect();
        let listed = runtime.run(&["list", "--format", "json"]);
        let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
        assert_eq!(listed[0]["id"], id.as_str(), "{}", runtime.name);
        codes.push(("start", runtime.run(&["start", id]).code));
        runtime.wait_status(id, "stopped");
        let stopped = runtime.state(id).unwrap();
        assert_eq!(stopped["pid"], 0, "{}", runtime.name);
        codes.push(("start again", runtime.run(&["start", id]).code));
        codes.push(("kill stopped", runtime.run(&["kill", id]).code));
        codes.push(("delete", runtime.run(&["delete", id]).code));
        codes.push(("delete again", runtime.run(&["delete", id]).code));
        codes.push((
            "delete --force missing",
            runtime.run(&["delete", "--force", id]).code,
        ));
        codes.push(("state deleted", runtime.run(&["state", id]).code));
        let output =
            fs_err::read_to_string(dir.path().join(format!("io-{}.out", runtime.name))).unwrap();
        assert_eq!(output, "hi\n", "{}: the container's stdout", runtime.name);
        runtime.assert_empty();
        assert!(
            cgroup_dirs(id).is_empty(),
            "{}: cgroup left: {:?}",
            runtime.name,
            cgroup_dirs(id)
        );
        transcripts.push((runtime.name, codes, keys));
    }
    assert_eq!(
        transcripts[0].1,
        vec![
            ("create", 0),
            ("start", 0),
            ("start again", 1),
            ("kill stopped", 1),
            ("delete", 0),
            ("delete again", 1),
            ("delete --force missing", 0),
            ("state deleted", 1)
        ]
    );
    for other in &transcripts[1..] {
        assert_eq!(
            transcripts[0].1, other.1,
            "exit codes: berth vs {}",
            other.0
        );
        assert_eq!(
            transcripts[0].2, other.2,
            "state JSON keys: berth vs {}",
            other.0
        );
    }
}

/// One configuration: a name, the command, and what changes in the base config.
struct Case {
    name: &'static str,
    args: &'static [&'static str],
    edit: fn(&mut Value, &std::path::Path),
    /// What both must print (and exit with), where it is known.
    expect: Option<(i32, &'static str)>,
}

fn no_edit(_: &mut Value, _: &std::path::Path) {}

fn cases() -> Vec<Case> {
    vec![
        Case { name: "echo", args: &["echo", "hello"], edit: no_edit, expect: Some((0, "hello\n")) },
        Case { name: "exit", args: &["sh", "-c", "exit 3"], edit: no_edit, expect: Some((3, "")) },
        Case {
            name: "killed",
            args: &["sh", "-c", "sh -c 'kill -9 $$'; echo $?"],
            edit: no_edit,
            expect: Some((0, "137\n")),
        },
        Case { name: "hostname", args: &["hostname"], edit: no_edit, expect: Some((0, "oci\n")) },
        Case {
            name: "env",
            args: &["sh", "-c", "echo $FOO"],
            edit: |config, _| config["process"]["env"].as_array_mut().unwrap().push(json!("FOO=bar")),
            expect: Some((0, "bar\n")),
        },
        Case {
            name: "cwd",
            args: &["pwd"],
            edit: |config, _| config["process"]["cwd"] = json!("/bin"),
            expect: Some((0, "/bin\n")),
        },
        Case {
            name: "user",
            args: &["id"],
            edit: |config, _| {
                config["process"]["user"] = json!({"uid": 1000, "gid": 1000, "additionalGids": [10, 20]})
            },
            expect: None,
        },
        Case {
            name: "rlimits",
            args: &["sh", "-c", "ulimit -n; ulimit -Hn"],
            edit: |config, _| {
                config["process"]["rlimits"] = json!([{"type": "RLIMIT_NOFILE", "soft": 1000, "hard": 2000}])
            },
            expect: Some((0, "1000\n2000\n")),
        },
        Case {
            name: "capabilities",
            args: &["grep", "^Cap", "/proc/self/status"],
            edit: no_edit,
            expect: None,
        },
        Case {
            name: "capabilities-as-user",
            args: &["grep", "^Cap", "/proc/self/status"],
            edit: |config, _| config["process"]["user"] = json!({"uid": 1000, "gid": 1000}),
            expect: None,
        },
        Case {
            name: "nnp",
            args: &["grep", "NoNewPrivs", "/proc/self/status"],
            edit: |config, _| config["process"]["noNewPrivileges"] = json!(true),
            expect: Some((0, "NoNewPrivs:\t1\n")),
        },
        Case {
            name: "readonly-root",
            args: &["sh", "-c", "touch /x 2>/dev/null; echo $?"],
            edit: no_edit,
            expect: Some((0, "1\n")),
        },
        Case {
            name: "masked-and-readonly-paths",
            args: &["sh", "-c", "wc -c < /proc/timer_list; ls /sys/firmware | wc -l; echo x 2>/dev/null > /proc/sys/kernel/domainname; echo $?"],
            edit: no_edit,
            expect: Some((0, "0\n0\n1\n")),
        },
        Case {
            name: "tmpfs",
            args: &["sh", "-c", "echo a > /tmp/f && cat /tmp/f && df -k /tmp | tail -1 | awk '{print $2}'"],
            edit: |config, _| {
                config["mounts"].as_array_mut().unwrap().push(json!({
                    "destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
                    "options": ["nosuid", "nodev", "mode=1777", "size=1m"]
                }))
            },
            expect: Some((0, "a\n1024\n")),
        },
        Case {
            name: "bind-readonly",
            args: &["sh", "-c", "cat /data/f; touch /data/g 2>/dev/null; echo $?"],
            edit: |config, dir| {
                let data = dir.join("data");
                fs_err::create_dir_all(&data).unwrap();
                fs_err::write(data.join("f"), "content\n").unwrap();
                config["mounts"].as_array_mut().unwrap().push(json!({
                    "destination": "/data", "type": "bind", "source": data, "options": ["rbind", "ro"]
                }))
            },
            expect: Some((0, "content\n1\n")),
        },
        Case {
            name: "sysctl",
            args: &["cat", "/proc/sys/net/ipv4/ip_forward", "/proc/sys/kernel/shmmni"],
            edit: |config, _| {
                config["linux"]["sysctl"] = json!({"net.ipv4.ip_forward": "1", "kernel.shmmni": "1234"})
            },
            expect: Some((0, "1\n1234\n")),
        },
        Case {
            name: "seccomp",
            args: &["sh", "-c", "mkdir /dev/shm/d 2>/dev/null; echo $?; ls -d /dev/shm"],
            edit: |config, _| {
                config["linux"]["seccomp"] = json!({
                    "defaultAction": "SCMP_ACT_ALLOW",
                    "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
                    "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]
                })
            },
            expect: Some((0, "1\n/dev/shm\n")),
        },
        Case {
            name: "seccomp-kill",
            args: &["sh", "-c", "mkdir /dev/shm/d"],
            edit: |config, _| {
                config["linux"]["seccomp"] = json!({
                    "defaultAction": "SCMP_ACT_ALLOW",
                    "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_KILL_PROCESS"}]
                })
            },
            expect: Some((159, "")),
        },
        Case {
            name: "oom-score",
            args: &["cat", "/proc/self/oom_score_adj"],
            edit: |config, _| config["process"]["oomScoreAdj"] = json!(500),
            expect: Some((0, "500\n")),
        },
        Case { name: "pid-namespace", args: &["sh", "-c", "echo $$"], edit: no_edit, expect: Some((0, "1\n")) },
        Case {
            name: "host-pid",
            args: &["sh", "-c", "test $$ -ne 1 && echo host"],
            edit: |config, _| remove_namespace(config, "pid"),
            expect: Some((0, "host\n")),
        },
        Case {
            name: "new-network",
            args: &["sh", "-c", "wc -l < /proc/net/dev"],
            edit: no_edit,
            expect: Some((0, "3\n")),
        },
        Case {
            name: "host-network",
            args: &["sh", "-c", "wc -l < /proc/net/dev"],
            edit: |config, _| remove_namespace(config, "network"),
            expect: None,
        },
        Case {
            name: "host-uts",
            args: &["hostname"],
            edit: |config, _| {
                remove_namespace(config, "uts");
                config.as_object_mut().unwrap().remove("hostname");
            },
            expect: None,
        },
        Case {
            name: "device",
            args: &["stat", "-c", "%F %t:%T %a %u", "/dev/fuse"],
            edit: |config, _| {
                config["linux"]["devices"] = json!([{"type": "c", "path": "/dev/fuse", "major": 10, "minor": 229, "fileMode": 432, "uid": 0, "gid": 0}]);
                config["linux"]["resources"]["devices"].as_array_mut().unwrap().push(json!({"allow": true, "type": "c", "major": 10, "minor": 229, "access": "rwm"}));
            },
            expect: Some((0, "character special file a:e5 660 0\n")),
        },
        Case {
            name: "device-denied",
            args: &["sh", "-c", "head -c1 /dev/fuse 2>/dev/null; echo $?"],
            edit: |config, _| {
                config["linux"]["devices"] = json!([{"type": "c", "path": "/dev/fuse", "major": 10, "minor": 229, "fileMode": 438}]);
            },
            expect: Some((0, "1\n")),
        },
        Case {
            name: "pids-limit",
            args: &["sh", "-c", "cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max"],
            edit: |config, _| {
                config["linux"]["resources"]["pids"] = json!({"limit": 42});
                config["linux"]["namespaces"].as_array_mut().unwrap().push(json!({"type": "cgroup"}));
                config["mounts"].as_array_mut().unwrap().push(json!({
                    "destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
                    "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]
                }));
            },
            expect: Some((0, "42\n")),
        },
        Case {
            name: "memory-limit",
            args: &["sh", "-c", "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max"],
            edit: |config, _| {
                config["linux"]["resources"]["memory"] = json!({"limit": 67108864});
                config["linux"]["namespaces"].as_array_mut().unwrap().push(json!({"type": "cgroup"}));
                config["mounts"].as_array_mut().unwrap().push(json!({
                    "destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
                    "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]
                }));
            },
            expect: Some((0, "67108864\n")),
        },
        Case {
            name: "cgroup-fs-own-namespace",
            // (Not compared: runc 1.1.5 leaves this tmpfs writable despite `ro`; berth does not.)
            args: &["sh", "-c", "ls /sys/fs/cgroup; ls /sys/fs/cgroup/pids | head -3"],
            edit: |config, _| {
                config["linux"]["namespaces"].as_array_mut().unwrap().push(json!({"type": "cgroup"}));
                config["mounts"].as_array_mut().unwrap().push(json!({
                    "destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
                    "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]
                }));
            },
            expect: None,
        },
        Case {
            name: "cgroup-fs-host-namespace",
            args: &["sh", "-c", "ls /sys/fs/cgroup; ls /sys/fs/cgroup/pids | head -3; touch /sys/fs/cgroup/x /sys/fs/cgroup/pids/x 2>/dev/null; echo $?"],
            edit: |config, _| {
                config["mounts"].as_array_mut().unwrap().push(json!({
                    "destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
                    "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]
                }));
            },
            expect: None,
        },
        Case {
            name: "not-found",
            args: &["no-such-program"],
            edit: no_edit,
            expect: Some((1, "")),
        },
    ]
}

fn remove_namespace(config: &mut Value, kind: &str) {
    config["linux"]["namespaces"]
        .as_array_mut()
        .unwrap()
        .retain(|namespace| namespace["type"] != kind);
}

#[test]
fn battery_matches_runc() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rootfs = rootfs(dir.path());
    let runtimes = runtimes(dir.path());
    let cases = cases();
    let ids: Vec<String> = cases
        .iter()
        .flat_map(|case| {
            runtimes
                .iter()
                .map(move |runtime| format!("{}-{}", case.name, runtime.name))
        })
        .collect();
    let _cleanup = Cleanup {
        runtimes: &runtimes,
        ids,
    };
    let mut failures = Vec::new();
    for case in &cases {
        let mut results = Vec::new();
        for runtime in &runtimes {
            let id = format!("{}-{}", case.name, runtime.name);
            let mut config = base_config(&rootfs, &id, case.args);
            (case.edit)(&mut config, dir.path());
            let bundle = bundle(dir.path(), &id, &config);
            let out = runtime.run(&["run", "--bundle", bundle.to_str().unwrap(), &id]);
            runtime.assert_empty();
            assert!(cgroup_dirs(&id).is_empty(), "{id}: cgroup left behind");
            results.push((runtime.name, out));
        }
        let (_, berth) = &results[0];
        if let Some((code, stdout)) = case.expect {
            if berth.code != code || berth.stdout != stdout {
                failures.push(format!(
                    "{}: berth gave {} {:?} (stderr {:?}), expected {code} {stdout:?}",
                    case.name, berth.code, berth.stdout, berth.stderr
                ));
            }
        }
        for (name, other) in &results[1..] {
            if other.code != berth.code || other.stdout != berth.stdout {
                failures.push(format!(
                    "{}: berth gave {} {:?} (stderr {:?}), {name} gave {} {:?} (stderr {:?})",
                    case.name,
                    berth.code,
                    berth.stdout,
                    berth.stderr,
                    other.code,
                    other.stdout,
                    other.stderr
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// A bad bundle: what to break, whether runc refuses it too, and a word the error must hold.
struct BadCase {
    name: &'static str,
    edit: fn(&mut Value, &std::path::Path),
    runc_refuses: bool,
    says: &'static str,
}

fn bad_cases() -> Vec<BadCase> {
    vec![
        BadCase {
            name: "missing-rootfs",
            edit: |config, dir| config["root"]["path"] = json!(dir.join("nope")),
            runc_refuses: true,
            says: "rootfs",
        },
        BadCase {
            name: "unknown-namespace",
            edit: |config, _| {
                config["linux"]["namespaces"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"type": "bogus"}))
            },
            runc_refuses: true,
            says: "bogus",
        },
        BadCase {
            name: "failing-hook",
            edit: |config, _| {
                config["hooks"] = json!({"prestart": [{"path": "/bin/false", "args": ["false"]}]})
            },
            runc_refuses: true,
            says: "prestart",
        },
        BadCase {
            name: "empty-args",
            edit: |config, _| config["process"]["args"] = json!([]),
            runc_refuses: true,
            says: "args",
        },
        BadCase {
            name: "seccomp-listener",
            edit: |config, _| {
                config["linux"]["seccomp"] =
                    json!({"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": "/run/x.sock"})
            },
            runc_refuses: false,
            says: "linux.seccomp.listenerPath",
        },
        BadCase {
            name: "user-namespace",
            edit: |config, _| {
                config["linux"]["namespaces"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"type": "user"}));
                config["linux"]["uidMappings"] =
                    json!([{"containerID": 0, "hostID": 100000, "size": 65536}]);
                config["linux"]["gidMappings"] =
                    json!([{"containerID": 0, "hostID": 100000, "size": 65536}]);
            },
            runc_refuses: false,
            says: "user",
        },
        BadCase {
            name: "ambient",
            edit: |config, _| config["process"]["capabilities"]["ambient"] = json!(["CAP_KILL"]),
            runc_refuses: false,
            says: "process.capabilities.ambient",
        },
        BadCase {
            name: "container-hook",
            edit: |config, _| config["hooks"] = json!({"createContainer": [{"path": "/bin/true"}]}),
            runc_refuses: false,
            says: "hooks.createContainer",
        },
        BadCase {
            name: "overlay-mount",
            edit: |config, _| {
                config["mounts"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"destination": "/x", "type": "overlay", "source": "overlay"}))
            },
            runc_refuses: false,
            says: "mounts[6].type",
        },
        BadCase {
            name: "systemd-cgroup",
            edit: |config, _| config["linux"]["cgroupsPath"] = json!("system.slice:berth:x"),
            // runc without --systemd-cgroup takes it as a directory name.
            runc_refuses: false,
            says: "linux.cgroupsPath",
        },
        BadCase {
            name: "shared-propagation",
            edit: |config, _| {
                config["mounts"].as_array_mut().unwrap().push(json!({"destination": "/x", "type": "bind", "source": "/tmp", "options": ["rbind", "rshared"]}))
            },
            runc_refuses: false,
            says: "rshared",
        },
    ]
}

#[test]
fn bad_input_is_refused_and_leaves_nothing() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rootfs = rootfs(dir.path());
    let runtimes = runtimes(dir.path());
    let cases = bad_cases();
    let mut ids: Vec<String> = cases
        .iter()
        .flat_map(|case| {
            runtimes
                .iter()
                .map(move |runtime| format!("{}-{}", case.name, runtime.name))
        })
        .collect();
    ids.extend(
        runtimes
            .iter()
            .map(|runtime| format!("bad-json-{}", runtime.name)),
    );
    let _cleanup = Cleanup {
        runtimes: &runtimes,
        ids,
    };
    for runtime in &runtimes {
        // Not JSON at all.
        let id = format!("bad-json-{}", runtime.name);
        let bundle = dir.path().join(&id);
        fs_err::create_dir_all(&bundle).unwrap();
        fs_err::write(bundle.join("config.json"), "{bad").unwrap();
        let out = runtime.create(&bundle, &id, &dir.path().join(&id));
        assert_eq!(out.code, 1, "{}: {out:?}", runtime.name);
        runtime.assert_empty();
        // An invalid id (runc reads the config first, so a good one).
        let good = oci::bundle(
            dir.path(),
            &format!("good-{}", runtime.name),
            &base_config(&rootfs, "good", &["true"]),
        );
        let out = runtime.run(&["create", "--bundle", good.to_str().unwrap(), "a/b"]);
        assert_eq!(out.code, 1, "{}: {out:?}", runtime.name);
        assert!(
            out.stderr.contains("invalid container ID format"),
            "{}: {}",
            runtime.name,
            out.stderr
        );
    }
    for case in &cases {
        for runtime in &runtimes {
            if runtime.name != "berth" && !case.runc_refuses {
                continue;
            }
            let id = format!("{}-{}", case.name, runtime.name);
            let mut config = base_config(&rootfs, &id, &["true"]);
            (case.edit)(&mut config, dir.path());
            let bundle = bundle(dir.path(), &id, &config);
            let out = runtime.create(&bundle, &id, &dir.path().join(&id));
            assert_eq!(out.code, 1, "{}: {}: {out:?}", case.name, runtime.name);
            if runtime.name == "berth" {
                assert!(
                    out.stderr.contains(case.says),
                    "{}: the error should name {:?}: {}",
                    case.name,
                    case.says,
                    out.stderr
                );
            }
            runtime.assert_empty();
            assert!(
                cgroup_dirs(&id).is_empty(),
                "{}: {}: cgroup left: {:?}",
                case.name,
                runtime.name,
                cgroup_dirs(&id)
            );
            assert_eq!(runtime.run(&["state", &id]).code, 1);
        }
    }
    // Refused flags.
    let berth = &runtimes[0];
    let config = base_config(&rootfs, "flags", &["true"]);
    let bundle = bundle(dir.path(), "flags", &config);
    for (args, says) in [
        (
            vec![
                "--systemd-cgroup",
                "create",
                "--bundle",
                bundle.to_str().unwrap(),
                "flags",
            ],
            "--systemd-cgroup",
        ),
        (
            vec![
                "create",
                "--no-pivot",
                "--bundle",
                bundle.to_str().unwrap(),
                "flags",
            ],
            "--no-pivot",
        ),
        (vec!["checkpoint", "flags"], "checkpoint"),
        (vec!["restore", "flags"], "restore"),
    ] {
        let out = berth.run(&args);
        assert_eq!(out.code, 1, "{args:?}: {out:?}");
        assert!(out.stderr.contains(says), "{args:?}: {}", out.stderr);
        berth.assert_empty();
    }
}

#[test]
fn exec_ps_pause_resume_kill_all_match_runc() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rootfs = rootfs(dir.path());
    let runtimes = runtimes(dir.path());
    let ids: Vec<String> = runtimes
        .iter()
        .map(|runtime| id_for("ops", runtime))
        .collect();
    let _cleanup = Cleanup {
        runtimes: &runtimes,
        ids: ids.clone(),
    };
    let mut transcripts = Vec::new();
    for (runtime, id) in runtimes.iter().zip(&ids) {
        let config = base_config(&rootfs, id, &["sleep", "100"]);
        let bundle = bundle(dir.path(), id, &config);
        let mut steps: Vec<(String, i32, String)> = Vec::new();
        let mut step = |what: &str, out: oci::Out, keep_stdout: bool| {
            steps.push((
                what.to_owned(),
                out.code,
                if keep_stdout {
                    out.stdout
                } else {
                    String::new()
                },
            ));
        };
        step(
            "create",
            runtime.create(&bundle, id, &dir.path().join(id)),
            false,
        );
        step(
            "exec in created",
            runtime.run(&["exec", id, "echo", "early"]),
            true,
        );
        step("start", runtime.run(&["start", id]), false);
        step(
            "exec",
            runtime.run(&["exec", id, "sh", "-c", "echo in; exit 7"]),
            true,
        );
        step(
            "exec env cwd user",
            runtime.run(&[
                "exec",
                "--env",
                "A=b",
                "--cwd",
                "/bin",
                "--user",
                "1000:1000",
                id,
                "sh",
                "-c",
                "echo $A $(pwd) $(id -u):$(id -g)",
            ]),
            true,
        );
        let process = dir.path().join(format!("{id}-process.json"));
        fs_err::write(&process, serde_json::to_vec(&json!({
            "args": ["sh", "-c", "echo from-file $X"], "env": ["X=y", "PATH=/bin"], "cwd": "/", "user": {"uid": 0, "gid": 0}
        })).unwrap()).unwrap();
        step(
            "exec --process",
            runtime.run(&["exec", "--process", process.to_str().unwrap(), id]),
            true,
        );
        let state = runtime.state(id).unwrap();
        let pid = state["pid"].as_i64().unwrap();
        let ps = runtime.run(&["ps", "--format", "json", id]);
        let pids: Vec<i64> = serde_json::from_str(&ps.stdout).unwrap();
        assert_eq!(pids, vec![pid], "{}: ps lists the init only", runtime.name);
        step("ps", ps, false);
        step("resume running", runtime.run(&["resume", id]), false);
        step("pause", runtime.run(&["pause", id]), false);
        step(
            "status",
            oci::Out {
                code: 0,
                stdout: runtime.status(id),
                stderr: String::new(),
            },
            true,
        );
        step("pause paused", runtime.run(&["pause", id]), false);
        step("exec paused", runtime.run(&["exec", id, "true"]), false);
        step("delete paused", runtime.run(&["delete", id]), false);
        step("resume", runtime.run(&["resume", id]), false);
        step(
            "status",
            oci::Out {
                code: 0,
                stdout: runtime.status(id),
                stderr: String::new(),
            },
            true,
        );
        step(
            "update",
            runtime.run(&["update", "--pids-limit", "20", id]),
            false,
        );
        step("delete running", runtime.run(&["delete", id]), false);
        step(
            "kill --all",
            runtime.run(&["kill", "--all", id, "KILL"]),
            false,
        );
        runtime.wait_status(id, "stopped");
        step("exec stopped", runtime.run(&["exec", id, "true"]), false);
        step("delete", runtime.run(&["delete", id]), false);
        runtime.assert_empty();
        assert!(cgroup_dirs(id).is_empty());
        transcripts.push((runtime.name, steps));
    }
    let expected_stdout: Vec<(&str, &str)> = vec![
        ("exec", "in\n"),
        ("exec env cwd user", "b /bin 1000:1000\n"),
        ("exec --process", "from-file y\n"),
    ];
    for (what, stdout) in expected_stdout {
        let found = transcripts[0].1.iter().find(|step| step.0 == what).unwrap();
        assert_eq!(found.2, stdout, "berth: {what}");
    }
    for other in &transcripts[1..] {
        assert_eq!(transcripts[0].1, other.1, "berth vs {}", other.0);
    }
}

#[test]
fn delete_force_of_a_running_container_and_concurrent_starts() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rootfs = rootfs(dir.path());
    let runtimes = runtimes(dir.path());
    let ids: Vec<String> = runtimes
        .iter()
        .map(|runtime| id_for("race", runtime))
        .collect();
    let _cleanup = Cleanup {
        runtimes: &runtimes,
        ids: ids.clone(),
    };
    for (runtime, id) in runtimes.iter().zip(&ids) {
        let config = base_config(&rootfs, id, &["sleep", "100"]);
        let bundle = bundle(dir.path(), id, &config);
        assert_eq!(runtime.create(&bundle, id, &dir.path().join(id)).code, 0);
        // Four starts at once: the lock lets exactly one through. (runc 1.1.5 here sometimes
        // reports such a container `stopped` while its process runs on, so only berth is held
        // to it; runc gets one start.)
        let starts = if runtime.name == "berth" { 4 } else { 1 };
        let children: Vec<_> = (0..starts)
            .map(|_| {
                runtime
                    .command(&["start", id])
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let codes: Vec<i32> = children
            .into_iter()
            .map(|mut child| child.wait().unwrap().code().unwrap())
            .collect();
        assert_eq!(
            codes.iter().filter(|code| **code == 0).count(),
            1,
            "{}: {codes:?}",
            runtime.name
        );
        assert_eq!(
            runtime.status(id),
            "running",
            "{}: after the starts {codes:?}",
            runtime.name
        );
        let pid = runtime.state(id).unwrap()["pid"].as_i64().unwrap();
        assert_eq!(
            runtime.run(&["delete", "--force", id]).code,
            0,
            "{}",
            runtime.name
        );
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}/cmdline")).exists() || {
                // Reaped by init a moment later.
                std::thread::sleep(std::time::Duration::from_millis(200));
                !std::path::Path::new(&format!("/proc/{pid}/cmdline")).exists()
                    || fs_err::read_to_string(format!("/proc/{pid}/cmdline"))
                        .unwrap_or_default()
                        .is_empty()
            }
        );
        runtime.assert_empty();
        assert!(cgroup_dirs(id).is_empty());
    }
}

#[test]
fn hooks_get_the_state_and_run_in_order() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rootfs = rootfs(dir.path());
    let runtimes = runtimes(dir.path());
    let ids: Vec<String> = runtimes
        .iter()
        .map(|runtime| id_for("hooks", runtime))
        .collect();
    let _cleanup = Cleanup {
        runtimes: &runtimes,
        ids: ids.clone(),
    };
    let mut seen = Vec::new();
    for (runtime, id) in runtimes.iter().zip(&ids) {
        let log = dir.path().join(format!("{id}.log"));
        let hook = |kind: &str| json!({"path": "/bin/sh", "args": ["sh", "-c", format!("read -r state; echo \"{kind} $state\" >> {}", log.display())], "env": ["PATH=/bin:/usr/bin"]});
        let mut config = base_config(&rootfs, id, &["true"]);
        config["hooks"] = json!({
            "prestart": [hook("prestart")],
            "createRuntime": [hook("createRuntime")],
            "poststart": [hook("poststart")],
            "poststop": [hook("poststop")]
        });
        let bundle = bundle(dir.path(), id, &config);
        let out = runtime.run(&["run", "--bundle", bundle.to_str().unwrap(), id]);
        assert_eq!(out.code, 0, "{}: {out:?}", runtime.name);
        let text = fs_err::read_to_string(&log).unwrap();
        let mut lines = Vec::new();
        for line in text.lines() {
            let (kind, state) = line.split_once(' ').unwrap();
            let state: Value = serde_json::from_str(state).unwrap();
            assert_eq!(state["id"], id.as_str());
            assert_eq!(state["bundle"], bundle.to_str().unwrap());
            let mut keys: Vec<String> = state.as_object().unwrap().keys().cloned().collect();
            keys.sort();
            lines.push((
                kind.to_owned(),
                state["status"].as_str().unwrap_or("").to_owned(),
                state["pid"].as_i64().unwrap_or(0) > 0,
                keys,
            ));
        }
        runtime.assert_empty();
        seen.push((runtime.name, lines));
    }
    let kinds: Vec<&str> = seen[0].1.iter().map(|line| line.0.as_str()).collect();
    assert_eq!(
        kinds,
        ["prestart", "createRuntime", "poststart", "poststop"]
    );
    assert_eq!(seen[0].1[0].1, "creating");
    // runc 1.1 reports `created` to poststart hooks (its exec FIFO is still there); berth
    // does the same, for the hooks written against runc.
    assert_eq!(seen[0].1[2].1, "created");
    assert_eq!(seen[0].1[3].1, "stopped");
    for other in &seen[1..] {
        let statuses = |lines: &Vec<(String, String, bool, Vec<String>)>| {
            lines
                .iter()
                .map(|line| (line.0.clone(), line.1.clone(), line.2))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            statuses(&seen[0].1),
            statuses(&other.1),
            "hooks: berth vs {}",
            other.0
        );
    }
}

#[test]
fn joins_a_network_namespace_by_path() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rootfs = rootfs(dir.path());
    let runtimes = runtimes(dir.path());
    let ids: Vec<String> = runtimes
        .iter()
        .map(|runtime| id_for("netns", runtime))
        .collect();
    let _cleanup = Cleanup {
        runtimes: &runtimes,
        ids: ids.clone(),
    };
    // A network namespace of this test's own, with one more interface than a new one has.
    let mut holder = std::process::Command::new("unshare")
        .args([
            "--net",
            "sh",
            "-c",
            "echo 33 > /proc/sys/net/ipv4/ip_default_ttl && echo ready && exec sleep 60",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.take().unwrap()),
        &mut ready,
    )
    .unwrap();
    assert_eq!(ready, "ready\n");
    let path = format!("/proc/{}/ns/net", holder.id());
    // Read by the container: 33 only in the namespace made above (a new one has 64).
    let mut outputs = Vec::new();
    for (runtime, id) in runtimes.iter().zip(&ids) {
        let mut config = base_config(&rootfs, id, &["cat", "/proc/sys/net/ipv4/ip_default_ttl"]);
        for namespace in config["linux"]["namespaces"].as_array_mut().unwrap() {
            if namespace["type"] == "network" {
                namespace["path"] = json!(path);
            }
        }
        let bundle = bundle(dir.path(), id, &config);
        let out = runtime.run(&["run", "--bundle", bundle.to_str().unwrap(), id]);
        outputs.push((runtime.name, out.code, out.stdout));
    }
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!((outputs[0].1, outputs[0].2.as_str()), (0, "33\n"));
    for other in &outputs[1..] {
        assert_eq!(
            (outputs[0].1, &outputs[0].2),
            (other.1, &other.2),
            "berth vs {}",
            other.0
        );
    }
}

#[test]
fn a_create_killed_midway_is_repaired_by_the_next_command() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rootfs = rootfs(dir.path());
    let runtimes = runtimes(dir.path());
    let berth = &runtimes[..1];
    let _cleanup = Cleanup {
        runtimes: berth,
        ids: vec!["killed".into(), "debris".into()],
    };
    let runtime = &berth[0];
    let marker = dir.path().join("hook-ran");
    let mut config = base_config(&rootfs, "killed", &["true"]);
    // The hook holds `create` between the clone and the root while the test kills it.
    config["hooks"] = json!({"createRuntime": [{"path": "/bin/sh", "args": ["sh", "-c", format!("echo $$ > {}.tmp && mv {0}.tmp {0} && exec sleep 30", marker.display())]}]});
    let bundle = bundle(dir.path(), "killed", &config);
    let mut create = runtime
        .command(&["create", "--bundle", bundle.to_str().unwrap(), "killed"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !marker.exists() {
        assert!(std::time::Instant::now() < deadline, "the hook never ran");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(create.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let _ = create.wait();
    // The hook (this test's own process) goes too.
    let hook: i32 = fs_err::read_to_string(&marker)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(hook),
        nix::sys::signal::Signal::SIGKILL,
    );
    let state = runtime
        .state("killed")
        .expect("the record written before the clone");
    let pid = state["pid"].as_i64().unwrap();
    assert!(pid > 0, "{state}");
    assert!(
        !cgroup_dirs("killed").is_empty(),
        "the cgroup was made before the kill"
    );
    let deleted = runtime.run(&["delete", "--force", "killed"]);
    assert_eq!(deleted.code, 0, "{deleted:?}");
    runtime.assert_empty();
    assert!(
        cgroup_dirs("killed").is_empty(),
        "cgroup left: {:?}",
        cgroup_dirs("killed")
    );
    std::thread::sleep(std::time::Duration::from_millis(100));
    let stat = fs_err::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        stat.is_empty() || stat.contains(") Z"),
        "the half-made init still runs: {stat}"
    );
    // A directory with no record and no lock holder (a create killed before its first
    // write) does not block the id.
    fs_err::create_dir_all(runtime.root.join("debris")).unwrap();
    let config = base_config(&rootfs, "debris", &["true"]);
    let bundle = oci::bundle(dir.path(), "debris", &config);
    let created = runtime.create(&bundle, "debris", &dir.path().join("debris-io"));
    assert_eq!(created.code, 0, "{created:?}");
    assert_eq!(runtime.run(&["delete", "--force", "debris"]).code, 0);
    runtime.assert_empty();
    // A record without a pid (what a create killed before its clone leaves: the record is
    // written first) is `stopped` and a plain delete removes it and its cgroup.
    let created = runtime.create(&bundle, "debris", &dir.path().join("debris-io"));
    assert_eq!(created.code, 0, "{created:?}");
    let pid = runtime.state("debris").unwrap()["pid"].as_i64().unwrap();
    let record_path = runtime.root.join("debris/state.json");
    let mut record: Value = serde_json::from_slice(&fs_err::read(&record_path).unwrap()).unwrap();
    record["pid"] = json!(0);
    fs_err::write(&record_path, serde_json::to_vec(&record).unwrap()).unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert_eq!(runtime.status("debris"), "stopped");
    assert_eq!(
        runtime.run(&["kill", "debris", "KILL"]).code,
        1,
        "nothing to signal"
    );
    let deleted = runtime.run(&["delete", "debris"]);
    assert_eq!(deleted.code, 0, "{deleted:?}");
    runtime.assert_empty();
    assert!(cgroup_dirs("debris").is_empty());
}

#[test]
fn preserve_fds_pass_descriptors_on_like_runc() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rootfs = rootfs(dir.path());
    let runtimes = runtimes(dir.path());
    let ids: Vec<String> = runtimes
        .iter()
        .map(|runtime| id_for("fds", runtime))
        .collect();
    let _cleanup = Cleanup {
        runtimes: &runtimes,
        ids: ids.clone(),
    };
    let file = dir.path().join("passed");
    fs_err::write(&file, "through fd 3\n").unwrap();
    let mut outputs = Vec::new();
    for (runtime, id) in runtimes.iter().zip(&ids) {
        let config = base_config(
            &rootfs,
            id,
            &["sh", "-c", "cat <&3; ls /proc/self/fd | wc -l"],
        );
        let bundle = bundle(dir.path(), id, &config);
        // The shell opens fd 3 (not close-on-exec) for the runtime, which passes it on.
        let line = format!(
            "exec 3<{} && exec {} --root {} run --preserve-fds 1 --bundle {} {id}",
            file.display(),
            runtime.program.display(),
            runtime.root.display(),
            bundle.display()
        );
        let output = std::process::Command::new("sh")
            .args(["-c", &line])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        outputs.push((
            runtime.name,
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        ));
        runtime.assert_empty();
    }
    // 0, 1, 2, 3 and the one ls opens to list them.
    assert_eq!(
        (outputs[0].1, outputs[0].2.as_str()),
        (Some(0), "through fd 3\n5\n")
    );
    for other in &outputs[1..] {
        assert_eq!(
            (outputs[0].1, &outputs[0].2),
            (other.1, &other.2),
            "berth vs {}",
            other.0
        );
    }
}

#[test]
fn terminals_in_the_foreground_give_runcs_bytes() {
    if !is_root() {
        return;
    }
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: script(1) is not installed (it gives the runtime a terminal)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rootfs = rootfs(dir.path());
    let runtimes = runtimes(dir.path());
    let ids: Vec<String> = runtimes
        .iter()
        .flat_map(|runtime| [id_for("tty-run", runtime), id_for("tty-exec", runtime)])
        .collect();
    let _cleanup = Cleanup {
        runtimes: &runtimes,
        ids,
    };
    let mut outputs = Vec::new();
    for runtime in &runtimes {
        let run_id = id_for("tty-run", runtime);
        let mut config = base_config(&rootfs, &run_id, &["sh", "-c", "tty; exit 4"]);
        config["process"]["terminal"] = json!(true);
        let run_bundle = bundle(dir.path(), &run_id, &config);
        let exec_id = id_for("tty-exec", runtime);
        let exec_bundle = bundle(
            dir.path(),
            &exec_id,
            &base_config(&rootfs, &exec_id, &["sleep", "60"]),
        );
        let program = runtime.program.display();
        let root = runtime.root.display();
        let line = format!(
            "stty rows 30 cols 100; {program} --root {root} run --bundle {} {run_id}; echo rc=$?; \
             {program} --root {root} run -d --bundle {} {exec_id} </dev/null >/dev/null 2>&1; \
             {program} --root {root} exec -t {exec_id} sh -c 'tty; exit 6'; echo rc=$?; \
             {program} --root {root} delete -f {exec_id}",
            run_bundle.display(),
            exec_bundle.display()
        );
        let output = std::process::Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        outputs.push((
            runtime.name,
            // script(1) echoes a NUL it reads as `^@`, wherever it lands: not the runtime's.
            String::from_utf8_lossy(&output.stdout)
                .replace('\0', "")
                .replace("^@", ""),
        ));
        runtime.assert_empty();
    }
    let berth = &outputs[0].1;
    // (The size is not compared: runc sets it after the process may have read it.)
    for expected in ["/dev/pts/0", "rc=4", "rc=6"] {
        assert!(
            berth.contains(expected),
            "berth's terminal output lacks {expected:?}: {berth:?}"
        );
    }
    // berth's terminal is raw before the first byte is copied (no CR added twice)...
    assert!(
        !berth.contains("\r\r\n"),
        "berth's terminal was not raw: {berth:?}"
    );
    for (name, other) in &outputs[1..] {
        // ... runc's is raw a moment later, so a line may come out cooked.
        let other = other.replace("\r\r\n", "\r\n");
        assert_eq!(berth, &other, "the bytes on the terminal: berth vs {name}");
    }
}

#[test]
fn a_created_container_is_deleted_or_killed_like_runcs() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rootfs = rootfs(dir.path());
    let runtimes = runtimes(dir.path());
    let ids: Vec<String> = runtimes
        .iter()
        .flat_map(|runtime| {
            [
                id_for("created-del", runtime),
                id_for("created-kill", runtime),
            ]
        })
        .collect();
    let _cleanup = Cleanup {
        runtimes: &runtimes,
        ids,
    };
    let mut transcripts = Vec::new();
    for runtime in &runtimes {
        let mut steps = Vec::new();
        // delete without --force of a created container: its waiting init is killed.
        let id = id_for("created-del", runtime);
        let bundle = bundle(dir.path(), &id, &base_config(&rootfs, &id, &["true"]));
        steps.push(runtime.create(&bundle, &id, &dir.path().join(&id)).code);
        let pid = runtime.state(&id).unwrap()["pid"].as_i64().unwrap();
        steps.push(runtime.run(&["delete", &id]).code);
        std::thread::sleep(std::time::Duration::from_millis(100));
        let stat = fs_err::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(
            stat.is_empty() || stat.contains(") Z"),
            "{}: the init survived delete",
            runtime.name
        );
        assert!(cgroup_dirs(&id).is_empty());
        // kill of a created container: it stops without ever running its program.
        let id = id_for("created-kill", runtime);
        let bundle = oci::bundle(dir.path(), &id, &base_config(&rootfs, &id, &["true"]));
        steps.push(runtime.create(&bundle, &id, &dir.path().join(&id)).code);
        steps.push(runtime.run(&["kill", &id, "KILL"]).code);
        runtime.wait_status(&id, "stopped");
        steps.push(runtime.run(&["start", &id]).code);
        steps.push(runtime.run(&["delete", &id]).code);
        runtime.assert_empty();
        transcripts.push((runtime.name, steps));
    }
    assert_eq!(transcripts[0].1, vec![0, 0, 0, 0, 1, 0]);
    for other in &transcripts[1..] {
        assert_eq!(transcripts[0].1, other.1, "berth vs {}", other.0);
    }
}
