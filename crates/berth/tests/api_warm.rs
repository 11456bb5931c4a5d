//! `berth serve` and the warm pool: the API's create claims a ready
//! sandbox when the request fits one and its start hands the member the
//! streams; a claim whose start never comes leaves an ordinary created
//! container; and the server starts cold containers itself, from its
//! threads, with a monitor it does not fork (berth-engine
//! `containers/monitor/launch.rs`).

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

#[path = "api/harness.rs"]
mod harness;
mod support;

use std::collections::BTreeSet;

use harness::Server;
use support::containers::{cgroup_dirs, parent_pid, pid_alive, wait_until};

/// The full ids of the pool's offered members.
fn offered(server: &Server) -> BTreeSet<String> {
    let short: BTreeSet<String> = server
        .berth
        .run(&["warm", "ls", "-q"])
        .ok()
        .lines()
        .map(str::to_owned)
        .collect();
    support::warm_member_ids(server.berth.run_root.path())
        .into_iter()
        .filter(|id| short.contains(&id[..12]))
        .collect()
}

/// A server whose root has a pool of one busybox member; None without a
/// docker CLI.
fn server_with_pool() -> Option<(Server, String)> {
    let server = Server::start()?;
    server.berth.run(&["warm", "busybox", "--depth", "1"]).ok();
    let members = offered(&server);
    assert_eq!(members.len(), 1, "{members:?}");
    let member = members.into_iter().next().unwrap();
    Some((server, member))
}

/// The server's child processes, from /proc.
fn server_children(server: &Server) -> String {
    fs_err::read_dir(format!("/proc/{}/task", server.pid()))
        .unwrap()
        .flatten()
        .map(|task| fs_err::read_to_string(task.path().join("children")).unwrap_or_default())
        .collect::<String>()
        .trim()
        .to_owned()
}

fn refilled(server: &Server, taken: &str) {
    wait_until(20.0, "the pool is refilled", || {
        let now = offered(server);
        now.len() == 1 && !now.contains(taken)
    });
}

#[test]
fn the_api_run_uses_the_warm_pool() {
    let Some((server, member)) = server_with_pool() else {
        return;
    };
    // docker run: create, attach, wait, start — over the API.
    let run = server.docker(&[
        "run",
        "--rm",
        "busybox",
        "sh",
        "-c",
        "hostname; echo to-stderr >&2; exit 3",
    ]);
    assert_eq!(run.code(), 3, "{}", run.stderr());
    assert_eq!(
        run.stdout().trim(),
        &member[..12],
        "ran in the member: {}",
        run.stderr()
    );
    assert!(run.stderr().contains("to-stderr"), "{}", run.stderr());
    assert_eq!(server.berth.run(&["ps", "-aq"]).ok(), "", "--rm removed it");
    refilled(&server, &member);

    // create, then start -a: the container is the member.
    let member = offered(&server).into_iter().next().unwrap();
    let id = server
        .docker(&[
            "create",
            "--name",
            "claimed",
            "busybox",
            "sh",
            "-c",
            "echo from the member; exit 4",
        ])
        .ok();
    assert_eq!(id.trim(), member, "the create claimed the member");
    assert!(!offered(&server).contains(&member));
    let inspect = server
        .docker(&[
            "inspect",
            "--format",
            "{{.State.Status}} {{.Name}}",
            "claimed",
        ])
        .ok();
    assert_eq!(inspect.trim(), "created /claimed");
    let start = server.docker(&["start", "-a", "claimed"]);
    assert_eq!(start.code(), 4, "{}", start.stderr());
    assert_eq!(start.stdout(), "from the member\n");
    let wait = server.docker(&["wait", "claimed"]).ok();
    assert_eq!(wait.trim(), "4");
    server.docker(&["rm", "claimed"]).ok();
    refilled(&server, &member);

    // Detached.
    let member = offered(&server).into_iter().next().unwrap();
    let id = server
        .docker(&[
            "run",
            "-d",
            "busybox",
            "sh",
            "-c",
            "echo detached; sleep 30",
        ])
        .ok();
    assert_eq!(id.trim(), member);
    wait_until(10.0, "the log line", || {
        server.docker(&["logs", &member]).stdout() == "detached\n"
    });
    server.docker(&["rm", "-f", &member]).ok();
    wait_until(10.0, "its cgroup is gone", || {
        cgroup_dirs(&member).is_empty()
    });
    // Its refills (`berth warm` run by the server) were reaped.
    wait_until(10.0, "the server has no children", || {
        server_children(&server).is_empty()
    });
}

#[test]
fn a_claim_whose_start_never_comes_leaves_a_created_container() {
    let Some((mut server, member)) = server_with_pool() else {
        return;
    };
    let id = server
        .docker(&[
            "create",
            "--name",
            "later",
            "busybox",
            "sh",
            "-c",
            "echo ran; hostname",
        ])
        .ok();
    assert_eq!(id.trim(), member);
    // Its member gives the container back when the claimant goes: here the
    // server is killed outright (SIGKILL; a server that exits releases it
    // itself).
    server.child().kill().unwrap();
    server.child().wait().unwrap();
    wait_until(10.0, "the member is gone", || {
        !support::warm_member_ids(server.berth.run_root.path()).contains(&member)
    });
    wait_until(10.0, "the sandbox's cgroup is gone", || {
        cgroup_dirs(&member).is_empty()
    });
    let status = server
        .berth
        .run(&["ps", "-a", "--format", "{{.Names}} {{.Status}}"])
        .ok();
    assert_eq!(status.trim(), "later Created");
    // An ordinary created container: a cold start runs it.
    let start = server.berth.run(&["start", "-a", "later"]);
    assert_eq!(start.code(), 0, "{}", start.stderr());
    assert_eq!(start.stdout(), format!("ran\n{}\n", &member[..12]));
    server.berth.run(&["rm", "later"]).ok();
    server.berth.assert_no_leftovers(&member);
}

#[test]
fn a_server_that_exits_releases_its_claims() {
    let Some(mut server) = Server::start_with(&["--idle-timeout", "1s"], true) else {
        return;
    };
    server.berth.run(&["warm", "busybox", "--depth", "1"]).ok();
    let member = offered(&server).into_iter().next().unwrap();
    let id = server.docker(&["create", "busybox", "echo", "later"]).ok();
    assert_eq!(id.trim(), member);
    // Idle for a second: the server exits, and gives the member back first.
    let status = support::containers::wait_child(server.child(), 20.0, "the idle server");
    assert!(status.success(), "{status:?}");
    assert!(!support::warm_member_ids(server.berth.run_root.path()).contains(&member));
    assert!(cgroup_dirs(&member).is_empty());
    let start = server.berth.run(&["start", "-a", &member]);
    assert_eq!((start.code(), start.stdout().as_str()), (0, "later\n"));
}

#[test]
fn what_changes_a_held_claim_releases_it_first() {
    let Some((server, member)) = server_with_pool() else {
        return;
    };
    // rm of a container created from the pool and never started.
    let id = server.docker(&["create", "busybox", "true"]).ok();
    assert_eq!(id.trim(), member);
    server.docker(&["rm", &member]).ok();
    assert_eq!(server.berth.run(&["ps", "-aq"]).ok(), "");
    wait_until(10.0, "the member and its cgroup are gone", || {
        !support::warm_member_ids(server.berth.run_root.path()).contains(&member)
            && cgroup_dirs(&member).is_empty()
    });
    refilled(&server, &member);

    // update changes what the sandbox was built with: the start is cold,
    // with the new limit.
    let member = offered(&server).into_iter().next().unwrap();
    let id = server
        .docker(&[
            "create",
            "busybox",
            "sh",
            "-c",
            "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max",
        ])
        .ok();
    assert_eq!(id.trim(), member);
    server.docker(&["update", "--memory", "64m", &member]).ok();
    let start = server.docker(&["start", "-a", &member]);
    assert_eq!(start.code(), 0, "{}", start.stderr());
    assert_eq!(start.stdout().trim(), (64u64 << 20).to_string());
    server.docker(&["rm", &member]).ok();
}

/// The server starts cold containers itself, many at once from its
/// connection threads: each monitor is a fresh berth process (spawned, not
/// forked from the threaded server) that is not the server's child, so
/// none is left as the server's zombie.
#[test]
fn the_server_starts_cold_containers_without_forking_itself() {
    let Some(server) = Server::start() else {
        return;
    };
    let runs: Vec<_> = (0..4)
        .map(|index| {
            let mut command = server.docker_command();
            command
                .args(["run", "-d", "--name", &format!("cold{index}"), "busybox"])
                .args(["sh", "-c", "echo up; sleep 30"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            command.spawn().unwrap()
        })
        .collect();
    let ids: Vec<String> = runs
        .into_iter()
        .map(support::containers::succeeded)
        .collect();
    for (index, id) in ids.iter().enumerate() {
        let name = format!("cold{index}");
        wait_until(10.0, "the log line", || {
            server.docker(&["logs", &name]).stdout() == "up\n"
        });
        let pid: i32 = server
            .docker(&["inspect", "--format", "{{.State.Pid}}", id])
            .ok()
            .trim()
            .parse()
            .unwrap();
        let monitor = parent_pid(pid);
        assert!(pid_alive(monitor));
        assert_ne!(parent_pid(monitor), server.pid() as i32, "{id}");
        let command = fs_err::read(format!("/proc/{monitor}/cmdline")).unwrap();
        let command = String::from_utf8_lossy(&command).replace('\0', " ");
        assert!(command.contains(&format!("__monitor {id}")), "{command}");
    }
    // An attached cold run's exit code reaches the client.
    let run = server.docker(&["run", "--rm", "busybox", "sh", "-c", "echo cold; exit 6"]);
    assert_eq!((run.code(), run.stdout().as_str()), (6, "cold\n"));
    let mut remove = vec!["rm", "-f"];
    remove.extend(ids.iter().map(String::as_str));
    server.docker(&remove).ok();
    assert_eq!(
        server_children(&server),
        "",
        "the server has no children left"
    );
}
