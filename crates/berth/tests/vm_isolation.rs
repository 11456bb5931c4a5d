//! `--isolation=vm`: containers in microVMs of their own (QEMU microvm under
//! TCG on this machine, berth's guest kernel, berth's agent as /init), through
//! the same CLI, images and monitor as namespace containers.
//!
//! The guest kernel is berth's own build of Debian's `linux-source`, put into
//! the test target's tmp directory by scripts/vm-kernel-minimal.sh unless
//! `BERTH_VM_KERNEL_DIR` names one (scripts/test.sh builds it first; Debian's
//! own package from scripts/vm-kernel.sh works too);
//! the kernel and initramfs cache is shared by every test's root
//! (`BERTH_VM_CACHE`). Without QEMU or virtiofsd the tests skip, saying so
//! (`.ci/run` installs both).

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use berth_runtime::console::window;
use support::containers::{mounts_under, pid_alive, wait_until};
use support::terminal::TerminalRun;
use support::vm::{children_of, command_of, free_port, http_get, kill9, vm_processes, VmBerth};
use support::Run;

/// What every VM run here adds: berth's microVM backend, and no network
/// (the network tests name theirs).
const VM: &[&str] = &["--isolation=vm", "--network", "none"];

impl VmBerth {
    /// `run --rm [VM] OPTIONS busybox ARGS`.
    fn run_in(&self, vm: bool, options: &[&str], args: &[&str], stdin: Option<&[u8]>) -> Run {
        let mut all = vec!["run", "--rm"];
        if vm {
            all.extend_from_slice(VM);
        } else {
            all.extend_from_slice(&["--network", "none"]);
        }
        all.extend_from_slice(options);
        all.push("busybox");
        all.extend_from_slice(args);
        self.run_with_stdin(&all, stdin)
    }

    /// `run -d` in a VM, the full id.
    #[track_caller]
    fn run_detached(&self, args: &[&str]) -> String {
        let mut all = vec!["run", "-d"];
        all.extend_from_slice(VM);
        all.extend_from_slice(args);
        let id = self.run(&all).ok().trim().to_owned();
        assert_eq!(id.len(), 64, "{id:?}");
        id
    }

    #[track_caller]
    fn wait_logs(&self, id: &str, text: &str) -> String {
        let mut logs = String::new();
        wait_until(120.0, &format!("{text:?} in the logs of {id}"), || {
            logs = self.run(&["logs", id]).all_output();
            logs.contains(text)
        });
        logs
    }

    #[track_caller]
    fn wait_exited(&self, id: &str) {
        wait_until(60.0, &format!("{id} to exit"), || {
            self.inspect(id, "{{.State.Status}}") == "exited"
        });
    }

    /// Nothing of the container on the host: no process of its VM (QEMU,
    /// virtiofsd, the shim), no mount, no cgroup, no VM directory.
    #[track_caller]
    fn assert_nothing_left(&self, id: &str, pids: &[i32]) {
        wait_until(
            20.0,
            &format!("the processes {pids:?} of {id} to end"),
            || pids.iter().all(|pid| !pid_alive(*pid)),
        );
        self.berth.assert_no_leftovers(id);
        let vm_dirs: Vec<_> = fs_err::read_dir(self.run_root().join("vm"))
            .map(|entries| entries.flatten().map(|entry| entry.path()).collect())
            .unwrap_or_default();
        assert!(vm_dirs.is_empty(), "VM directories left: {vm_dirs:?}");
        let mounts = mounts_under(self.berth.root());
        assert!(mounts.is_empty(), "mounts left: {mounts:?}");
    }

    /// `run --rm --isolation=vm --network none busybox true` with `variable`
    /// set to `value` exits 125 saying `words`, and leaves no container, no
    /// directory and no mount.
    #[track_caller]
    fn fails_leaving_nothing(&self, variable: &str, value: &Path, words: &str) {
        let mut command = self.command();
        command.env(variable, value).args([
            "run",
            "--rm",
            "--isolation=vm",
            "--network",
            "none",
            "busybox",
            "true",
        ]);
        let output = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(125), "{stderr}");
        assert!(stderr.contains(words), "{stderr}");
        assert!(self.berth.all_ids().is_empty(), "--rm removed it");
        assert!(self.berth.container_dirs().is_empty());
        assert!(mounts_under(self.berth.root()).is_empty());
    }

    fn run_root(&self) -> PathBuf {
        self.berth.run_root().to_path_buf()
    }
}

#[test]
fn a_vm_container_runs_as_a_namespace_one_does() {
    let Some(berth) = VmBerth::new() else { return };
    // Output (both streams) and exit code of each, under both backends.
    // (run options, command, stdin)
    type Case<'a> = (&'a [&'a str], &'a [&'a str], Option<&'a [u8]>);
    let cases: &[Case] = &[
        (&[], &["echo", "hello", "world"], None),
        (&[], &["sh", "-c", "echo out; echo err >&2; exit 3"], None),
        (&[], &["no-such-program"], None),
        (&[], &["/etc/passwd"], None),
        (
            &["-u", "1000", "-w", "/tmp/work", "-e", "FOO=bar baz"],
            &["sh", "-c", "id; pwd; echo $FOO; echo $HOME"],
            None,
        ),
        (
            &["-i"],
            &["sh", "-c", "cat; echo done"],
            Some(b"line one\nline two\n"),
        ),
        (
            &["--hostname", "guest", "--read-only"],
            &[
                "sh",
                "-c",
                "hostname; cat /etc/hostname; touch /x 2>&1; echo $?",
            ],
            None,
        ),
        (
            &[],
            // A pid namespace of its own, Docker's capabilities, masked paths.
            &[
                "sh",
                "-c",
                "echo $$; grep CapBnd /proc/self/status; ls /proc/acpi 2>/dev/null | wc -l",
            ],
            None,
        ),
        (
            &["--cap-drop", "ALL", "--cap-add", "CHOWN", "-u", "0"],
            &["sh", "-c", "grep CapEff /proc/self/status"],
            None,
        ),
    ];
    for (options, args, stdin) in cases {
        let namespaces = berth.run_in(false, options, args, *stdin);
        let vm = berth.run_in(true, options, args, *stdin);
        assert_eq!(
            (vm.code(), vm.stdout(), vm.stderr()),
            (namespaces.code(), namespaces.stdout(), namespaces.stderr()),
            "{options:?} {args:?}: the VM (left) differs from namespaces (right)"
        );
    }
    // The guest's kernel is the package's (Debian's or berth's own build), not the host's.
    let guest = berth.run_in(true, &[], &["uname", "-r"], None).ok();
    let host = String::from_utf8(Command::new("uname").arg("-r").output().unwrap().stdout).unwrap();
    assert_ne!(guest, host, "the guest runs its own kernel");
    let package: Vec<String> = fs_err::read_dir(berth.kernel.join("boot"))
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().unwrap();
            name.strip_prefix("vmlinuz-").map(str::to_string)
        })
        .collect();
    assert_eq!(package, [guest.trim()], "the release of {:?}", berth.kernel);
    assert!(berth.berth.all_ids().is_empty(), "--rm removed them all");
}

#[test]
fn binds_volumes_and_the_writable_layer_reach_the_vm() {
    let Some(berth) = VmBerth::new() else { return };
    let host = tempfile::tempdir().unwrap();
    fs_err::write(host.path().join("from-host"), "host file\n").unwrap();
    let bind = format!("{}:/data", host.path().display());
    let read_only = format!("{}:/ro:ro", host.path().display());
    let out = berth
        .run_in(
            true,
            &["-v", &bind, "-v", &read_only, "-v", "named:/vol"],
            &[
                "sh",
                "-c",
                "cat /data/from-host; echo from-guest > /data/new; \
                 touch /ro/x 2>/dev/null || echo read-only; echo kept > /vol/file",
            ],
            None,
        )
        .ok();
    assert_eq!(out, "host file\nread-only\n");
    assert_eq!(
        fs_err::read_to_string(host.path().join("new")).unwrap(),
        "from-guest\n"
    );
    // Docker Desktop's `--mount type=virtiofs` is a bind for a VM container
    // (read-only where asked), and refused for a namespace one.
    let mount = format!(
        "type=virtiofs,source={},target=/shared",
        host.path().display()
    );
    let out = berth
        .run_in(
            true,
            &["--mount", &mount, "--mount", &format!("{mount}2,readonly")],
            &[
                "sh",
                "-c",
                "cat /shared/new; echo again > /shared/again; \
                 touch /shared2/x 2>/dev/null || echo read-only",
            ],
            None,
        )
        .ok();
    assert_eq!(out, "from-guest\nread-only\n");
    assert_eq!(
        fs_err::read_to_string(host.path().join("again")).unwrap(),
        "again\n"
    );
    let stderr = berth
        .run_in(false, &["--mount", &mount], &["true"], None)
        .fails(125);
    assert!(
        stderr.contains(
            "mount type \"virtiofs\" is for VM containers (--isolation=vm): use type=bind"
        ),
        "{stderr}"
    );
    // The named volume outlives the container, for a namespace one too.
    let out = berth
        .run_in(false, &["-v", "named:/vol"], &["cat", "/vol/file"], None)
        .ok();
    assert_eq!(out, "kept\n");
    // What the guest writes lands in the container's writable layer:
    // `diff`, `cp` and `commit` see it as for a namespace container.
    let id = berth
        .run(&[
            "create",
            "--isolation=vm",
            "--network",
            "none",
            "busybox",
            "sh",
            "-c",
            "echo layer > /etc/added; rm /etc/group",
        ])
        .ok()
        .trim()
        .to_owned();
    let run = berth.run(&["start", "-a", &id]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let diff = berth.run(&["diff", &id]).ok();
    assert!(diff.contains("A /etc/added"), "{diff}");
    assert!(diff.contains("D /etc/group"), "{diff}");
    let copied = tempfile::tempdir().unwrap();
    let target = copied.path().join("added");
    berth
        .run(&["cp", &format!("{id}:/etc/added"), target.to_str().unwrap()])
        .ok();
    assert_eq!(fs_err::read_to_string(&target).unwrap(), "layer\n");
    berth.run(&["commit", &id, "from-vm:1"]).ok();
    let out = berth.run_in(false, &[], &["cat", "/etc/added"], None);
    assert_eq!(out.code(), 1, "busybox itself is unchanged");
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            "none",
            "from-vm:1",
            "cat",
            "/etc/added",
        ])
        .ok();
    assert_eq!(out, "layer\n");
    berth.run(&["rm", &id]).ok();
    berth.assert_nothing_left(&id, &[]);
}

/// A C program that writes each file it is given through a shared mapping
/// and exits without `msync` or `munmap`, built static with the host's gcc.
const MAPPED_WRITER: &str = r#"
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        int fd = open(argv[i], O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || ftruncate(fd, 4096) != 0) return 1;
        char *map = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED) return 2;
        close(fd);
        memcpy(map, "through a mapping\n", 18);
    }
    return 0;
}
"#;

/// What a VM container wrote through a shared mapping, and never synced,
/// is on the host when its run returns: a mapping of a virtio-fs file is
/// written back when the exiting process unmaps it, before the agent
/// reaps it (the agent does not `sync`, which would make virtiofsd
/// `syncfs` the host's whole file system at every exit).
#[test]
fn what_a_vm_container_maps_and_writes_is_on_the_host_when_it_ends() {
    let Some(berth) = VmBerth::new() else { return };
    let host = tempfile::tempdir().unwrap();
    let source = host.path().join("writer.c");
    fs_err::write(&source, MAPPED_WRITER).unwrap();
    let built = std::process::Command::new("gcc")
        .args(["-static", "-O2", "-o"])
        .arg(host.path().join("writer"))
        .arg(&source)
        .output()
        .expect("gcc (.ci/run installs it)");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let bind = format!("{}:/data", host.path().display());
    let name = "mapped-writer";
    let run = berth.run(&[
        "run",
        "--isolation=vm",
        "--network",
        "none",
        "--name",
        name,
        "-v",
        &bind,
        "busybox",
        "/data/writer",
        "/data/mapped",
        "/in-layer",
    ]);
    run.ok();
    let text = |bytes: Vec<u8>| {
        String::from_utf8_lossy(&bytes)
            .trim_end_matches('\0')
            .to_owned()
    };
    assert_eq!(
        text(fs_err::read(host.path().join("mapped")).unwrap()),
        "through a mapping\n"
    );
    // The writable layer is on the share too.
    let copied = tempfile::tempdir().unwrap();
    let target = copied.path().join("in-layer");
    berth
        .run(&["cp", &format!("{name}:/in-layer"), target.to_str().unwrap()])
        .ok();
    assert_eq!(text(fs_err::read(&target).unwrap()), "through a mapping\n");
    berth.run(&["rm", name]).ok();
}

/// A volume with driver options is mounted on the host before the VM's
/// shim starts, so the guest's virtiofs share of it shows the mounted file
/// system (a host directory's bind, a tmpfs), and unmounted after the run.
#[test]
fn volumes_with_driver_options_reach_the_vm() {
    let Some(berth) = VmBerth::new() else { return };
    let host = tempfile::tempdir().unwrap();
    fs_err::write(host.path().join("from-host"), "host file\n").unwrap();
    let device = format!("device={}", host.path().display());
    berth
        .run(&[
            "volume",
            "create",
            "-o",
            "type=none",
            "-o",
            "o=bind",
            "-o",
            &device,
            "bound",
        ])
        .ok();
    berth
        .run(&[
            "volume",
            "create",
            "-o",
            "type=tmpfs",
            "-o",
            "device=tmpfs",
            "-o",
            "o=size=4m",
            "scratch",
        ])
        .ok();
    let out = berth
        .run_in(
            true,
            &["-v", "bound:/data", "-v", "scratch:/scratch"],
            &[
                "sh",
                "-c",
                "cat /data/from-host; echo from-guest > /data/new; \
                 echo tmp > /scratch/t && cat /scratch/t",
            ],
            None,
        )
        .ok();
    assert_eq!(out, "host file\ntmp\n");
    assert_eq!(
        fs_err::read_to_string(host.path().join("new")).unwrap(),
        "from-guest\n"
    );
    let volumes = berth.berth.root().join("volumes");
    assert!(
        mounts_under(&volumes).is_empty(),
        "{:?}",
        mounts_under(&volumes)
    );
    // The tmpfs was the volume's, not a directory on the host's disk.
    assert!(!volumes.join("scratch/_data/t").exists());
}

#[test]
fn stop_kill_pause_and_logs_of_a_vm_container() {
    let Some(berth) = VmBerth::new() else { return };
    // SIGTERM reaches the process in the guest, which handles it.
    let id = berth.run_detached(&[
        "busybox",
        "sh",
        "-c",
        "trap 'echo got TERM; exit 42' TERM; echo ready; while :; do sleep 0.1; done",
    ]);
    assert_eq!(berth.inspect(&id, "{{.HostConfig.Isolation}}"), "vm");
    // The runtime inspect names, as dockerd names its default (runc).
    assert_eq!(berth.inspect(&id, "{{.HostConfig.Runtime}}"), "vm");
    let plain = berth
        .run(&["create", "busybox", "true"])
        .ok()
        .trim()
        .to_owned();
    assert_eq!(berth.inspect(&plain, "{{.HostConfig.Runtime}}"), "runc");
    berth.run(&["rm", &plain]).ok();
    berth.wait_logs(&id, "ready");
    let shim: i32 = berth.inspect(&id, "{{.State.Pid}}").parse().unwrap();
    let processes = vm_processes(shim);
    assert!(
        processes
            .iter()
            .any(|pid| command_of(*pid).contains("qemu-system")),
        "{:?}",
        processes
            .iter()
            .map(|pid| command_of(*pid))
            .collect::<Vec<_>>()
    );
    // The whole VM freezes and thaws.
    berth.run(&["pause", &id]).ok();
    assert_eq!(berth.inspect(&id, "{{.State.Status}}"), "paused");
    berth.run(&["unpause", &id]).ok();
    berth.run(&["stop", &id]).ok();
    assert_eq!(berth.inspect(&id, "{{.State.ExitCode}}"), "42");
    let logs = berth.run(&["logs", &id]).ok();
    assert_eq!(logs, "ready\ngot TERM\n");
    berth.run(&["rm", &id]).ok();
    berth.assert_nothing_left(&id, &processes);

    // A process that ignores SIGTERM is killed after the timeout (137), as
    // Docker does; `kill` is SIGKILL (137) too.
    let id = berth.run_detached(&[
        "busybox",
        "sh",
        "-c",
        "trap '' TERM; echo ready; sleep 1000",
    ]);
    berth.wait_logs(&id, "ready");
    let processes = vm_processes(berth.inspect(&id, "{{.State.Pid}}").parse().unwrap());
    berth.run(&["stop", "-t", "1", &id]).ok();
    assert_eq!(berth.inspect(&id, "{{.State.ExitCode}}"), "137");
    berth.run(&["start", &id]).ok();
    berth.wait_logs(&id, "ready\nready");
    let restarted = vm_processes(berth.inspect(&id, "{{.State.Pid}}").parse().unwrap());
    assert!(
        processes.iter().all(|pid| !restarted.contains(pid)),
        "a restart boots a new VM"
    );
    berth.run(&["kill", &id]).ok();
    berth.wait_exited(&id);
    assert_eq!(berth.inspect(&id, "{{.State.ExitCode}}"), "137");
    berth.run(&["rm", &id]).ok();
    berth.assert_nothing_left(&id, &restarted);
}

/// `exec` and `top` reach the guest's processes: output and exit codes as a
/// namespace container's exec gives them, several at once, `-d`, a killed
/// exec, and health checks (each probe an exec).
#[test]
fn exec_top_and_health_checks_of_a_vm_container() {
    let Some(berth) = VmBerth::new() else { return };
    let vm = berth.run_detached(&[
        "--health-cmd",
        "test -f /tmp/healthy",
        "--health-interval",
        "1s",
        "busybox",
        "sleep",
        "600",
    ]);
    let namespaces = berth
        .run(&["run", "-d", "--network", "none", "busybox", "sleep", "600"])
        .ok()
        .trim()
        .to_owned();
    // (exec options, command, stdin)
    type Case<'a> = (&'a [&'a str], &'a [&'a str], Option<&'a [u8]>);
    let cases: &[Case] = &[
        (&[], &["sh", "-c", "echo out; echo err >&2; exit 3"], None),
        (&[], &["no-such-program"], None),
        (
            &["-u", "1000", "-w", "/tmp", "-e", "FOO=bar baz"],
            &["sh", "-c", "id; pwd; echo $FOO"],
            None,
        ),
        (
            &["-i"],
            &["sh", "-c", "cat; echo done"],
            Some(b"one\ntwo\n"),
        ),
        // The exec is in the container's pid namespace, with its caps.
        (
            &[],
            &[
                "sh",
                "-c",
                "ps -o pid,comm | grep -c sleep; grep CapEff /proc/self/status",
            ],
            None,
        ),
        (
            &["--privileged"],
            &["sh", "-c", "grep CapEff /proc/self/status"],
            None,
        ),
    ];
    for (options, args, stdin) in cases {
        let exec = |id: &str| {
            let mut all = vec!["exec"];
            all.extend_from_slice(options);
            all.push(id);
            all.extend_from_slice(args);
            berth.run_with_stdin(&all, *stdin)
        };
        let (in_vm, in_namespaces) = (exec(&vm), exec(&namespaces));
        assert_eq!(
            (in_vm.code(), in_vm.stdout(), in_vm.stderr()),
            (
                in_namespaces.code(),
                in_namespaces.stdout(),
                in_namespaces.stderr()
            ),
            "{options:?} {args:?}: the VM (left) differs from namespaces (right)"
        );
    }
    // `cp` into the running VM: the guest sees the new content of a file it
    // has read (it caches its root), and a new file.
    let host = tempfile::tempdir().unwrap();
    fs_err::write(host.path().join("motd"), "first\n").unwrap();
    let source = host.path().join("motd");
    let into = format!("{vm}:/tmp/motd");
    berth.run(&["cp", source.to_str().unwrap(), &into]).ok();
    assert_eq!(
        berth.run(&["exec", &vm, "cat", "/tmp/motd"]).ok(),
        "first\n"
    );
    fs_err::write(&source, "second, longer\n").unwrap();
    berth.run(&["cp", source.to_str().unwrap(), &into]).ok();
    assert_eq!(
        berth.run(&["exec", &vm, "cat", "/tmp/motd"]).ok(),
        "second, longer\n"
    );
    // The guest's clock keeps the host's time (its TSC rate is the host's):
    // its uptime grows by no more than the host saw pass around it.
    let started = std::time::Instant::now();
    let uptimes = berth
        .run(&[
            "exec",
            &vm,
            "sh",
            "-c",
            "cat /proc/uptime; sleep 3; cat /proc/uptime",
        ])
        .ok();
    let host = started.elapsed().as_secs_f64();
    let guest: Vec<f64> = uptimes
        .lines()
        .map(|line| line.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    let passed = guest[1] - guest[0];
    assert!(
        (3.0..host + 0.05).contains(&passed),
        "the guest saw {passed:.2} s pass while the host saw {host:.2} s"
    );
    // Several at once, each with its own output and exit code.
    let children: Vec<_> = (0..4)
        .map(|n| {
            let mut command = berth.command();
            command
                .args(["exec", &vm, "sh", "-c"])
                .arg(format!("sleep 1; echo exec {n}; exit {n}"))
                .stdout(std::process::Stdio::piped());
            command.spawn().unwrap()
        })
        .collect();
    for (n, child) in children.into_iter().enumerate() {
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(n as i32));
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            format!("exec {n}\n")
        );
    }
    // top: the guest's processes in ps -ef's columns.
    let top = berth.run(&["top", &vm]).ok();
    let mut lines = top.lines();
    assert_eq!(
        lines.next().unwrap().split_whitespace().collect::<Vec<_>>(),
        ["UID", "PID", "PPID", "C", "STIME", "TTY", "TIME", "CMD"],
        "{top}"
    );
    let rows: Vec<&str> = lines.collect();
    assert!(
        rows.iter()
            .any(|row| row.starts_with("root") && row.ends_with("sleep 600")),
        "{top}"
    );
    // Only the container's processes (a health probe may be among them),
    // not the agent's or the guest kernel's.
    assert!(
        rows.iter()
            .all(|row| !row.contains("/init") && !row.contains("kthreadd")),
        "{top}"
    );
    let refused = berth.run(&["top", &vm, "aux"]);
    assert_ne!(refused.code(), 0);
    assert!(
        refused.stderr().contains("other than -ef"),
        "{}",
        refused.stderr()
    );
    // The health check passes once its file is there (written by `exec -d`).
    berth
        .run(&["exec", "-d", &vm, "touch", "/tmp/healthy"])
        .ok();
    wait_until(60.0, "the VM container to be healthy", || {
        berth.inspect(&vm, "{{.State.Health.Status}}") == "healthy"
    });
    // A killed exec's process goes with it (its pid, which berth waits for,
    // is the host relay's).
    let mut exec = berth.command();
    exec.args(["exec", &vm, "sleep", "999"]);
    let mut child = exec.spawn().unwrap();
    wait_until(30.0, "the exec in top", || {
        berth.run(&["top", &vm]).ok().contains("sleep 999")
    });
    let relay = children_of(child.id() as i32);
    assert_eq!(relay.len(), 1, "{relay:?}");
    assert!(
        command_of(relay[0]).contains("__vm-exec"),
        "{}",
        command_of(relay[0])
    );
    kill9(relay[0]);
    assert_eq!(child.wait().unwrap().code(), Some(137));
    wait_until(30.0, "the killed exec's process to end", || {
        !berth.run(&["top", &vm]).ok().contains("sleep 999")
    });
    // stats: the guest's own counters (its RAM the limit), NET I/O from the
    // container's end of its network.
    let stats = berth
        .run(&[
            "stats",
            "--no-stream",
            "--format",
            "{{.MemUsage}} {{.PIDs}}",
            &vm,
        ])
        .ok();
    assert!(stats.contains(" / 2") && stats.contains("MiB"), "{stats}");
    let processes = vm_processes(berth.inspect(&vm, "{{.State.Pid}}").parse().unwrap());
    berth.run(&["rm", "-f", &vm, &namespaces]).ok();
    berth.assert_nothing_left(&vm, &processes);
}

/// `-t`: the guest process's terminal has the user's size from the start
/// and follows a resize, for `run` and for `exec`; the exit code comes
/// through.
#[test]
fn a_vm_containers_terminal_has_the_users_size() {
    let Some(berth) = VmBerth::new() else { return };
    let mut args = vec!["run", "--rm", "-t"];
    args.extend_from_slice(VM);
    args.extend_from_slice(&["busybox", "sh", "-c", "tty; stty size; exit 5"]);
    let mut command = berth.command();
    command.args(&args);
    let (output, code) = TerminalRun::start_command(command, window(33, 77)).finish();
    assert_eq!((output.as_str(), code), ("/dev/pts/0\n33 77\n", Some(5)));

    let mut args = vec!["run", "--rm", "-it"];
    args.extend_from_slice(VM);
    args.extend_from_slice(&["busybox", "sh", "-c", "stty size; sleep 2; stty size"]);
    let mut command = berth.command();
    command.args(&args);
    let mut run = TerminalRun::start_command(command, window(30, 100));
    run.wait_for("30 100", 120);
    run.resize(window(40, 120));
    assert_eq!(run.output(), "30 100\n40 120\n");

    let id = berth.run_detached(&["busybox", "sleep", "600"]);
    let mut command = berth.command();
    command.args(["exec", "-t", &id, "stty", "size"]);
    assert_eq!(
        TerminalRun::start_command(command, window(41, 93)).output(),
        "41 93\n"
    );
    let mut command = berth.command();
    command.args([
        "exec",
        "-it",
        &id,
        "sh",
        "-c",
        "stty size; sleep 2; stty size",
    ]);
    let mut exec = TerminalRun::start_command(command, window(20, 60));
    exec.wait_for("20 60", 60);
    exec.resize(window(25, 70));
    assert_eq!(exec.output(), "20 60\n25 70\n");
    let processes = vm_processes(berth.inspect(&id, "{{.State.Pid}}").parse().unwrap());
    berth.run(&["rm", "-f", &id]).ok();
    berth.assert_nothing_left(&id, &processes);
}

#[test]
fn killed_vm_processes_are_reconciled_and_leave_nothing() {
    let Some(berth) = VmBerth::new() else { return };
    for victim in ["qemu-system", "virtiofsd", "__vm-shim"] {
        let id = berth.run_detached(&["busybox", "sh", "-c", "echo ready; sleep 1000"]);
        berth.wait_logs(&id, "ready");
        let processes = vm_processes(berth.inspect(&id, "{{.State.Pid}}").parse().unwrap());
        let target = *processes
            .iter()
            .find(|pid| command_of(**pid).contains(victim))
            .unwrap_or_else(|| panic!("no {victim} among {processes:?}"));
        eprintln!("kill -9 {victim} ({target})");
        kill9(target);
        berth.wait_exited(&id);
        assert_eq!(
            berth.inspect(&id, "{{.State.ExitCode}}"),
            "137",
            "kill -9 of {victim}"
        );
        berth.run(&["rm", &id]).ok();
        berth.assert_nothing_left(&id, &processes);
    }
    // The monitor killed: the next command repairs (the container is
    // exited, its VM gone).
    let id = berth.run_detached(&["busybox", "sh", "-c", "echo ready; sleep 1000"]);
    berth.wait_logs(&id, "ready");
    let shim: i32 = berth.inspect(&id, "{{.State.Pid}}").parse().unwrap();
    let processes = vm_processes(shim);
    let monitor: i32 = berth.inspect(&id, "{{.State.Pid}}").parse().unwrap();
    let monitor = support::containers::parent_pid(monitor);
    assert!(
        command_of(monitor).contains("berth"),
        "{}",
        command_of(monitor)
    );
    kill9(monitor);
    wait_until(30.0, "the dead monitor's container to be repaired", || {
        berth.inspect(&id, "{{.State.Status}}") == "exited"
    });
    berth.run(&["rm", "-f", &id]).ok();
    berth.assert_nothing_left(&id, &processes);
}

#[test]
fn what_a_vm_container_cannot_do_yet_is_refused() {
    let Some(berth) = VmBerth::new() else { return };
    for (options, words) in [
        (
            &["--isolation=vm", "--network", "host"][..],
            "--network host is not supported with --isolation=vm",
        ),
        (
            &["--runtime", "vm", "--network", "container:x"][..],
            "--network container:x is not supported with --isolation=vm",
        ),
        (
            &["--isolation=vm", "--network", "none", "--privileged"][..],
            "--privileged is not supported",
        ),
        (
            &["--isolation=vm", "--network", "none", "--pids-limit", "10"][..],
            "--pids-limit is not supported",
        ),
        (
            &["--isolation=vm", "--mac-address", "02:42:ac:11:00:09"][..],
            "--mac-address is not supported with --isolation=vm yet",
        ),
    ] {
        let mut args = vec!["run", "--rm"];
        args.extend_from_slice(options);
        args.extend_from_slice(&["busybox", "true"]);
        let stderr = berth.run(&args).fails(125);
        assert!(stderr.contains(words), "{options:?}: {stderr}");
    }
    assert!(berth.berth.all_ids().is_empty(), "nothing was created");

    // No guest kernel, no QEMU: a clear error naming it, nothing left.
    berth.fails_leaving_nothing(
        "BERTH_VM_KERNEL_DIR",
        "/nonexistent/kernel".as_ref(),
        "/nonexistent/kernel",
    );
    let empty = tempfile::tempdir().unwrap();
    berth.fails_leaving_nothing("PATH", empty.path(), "qemu-system-x86_64");
    // An image of another architecture: the guest is x86-64.
    let archive = tempfile::NamedTempFile::new().unwrap();
    support::write_arm64_busybox(archive.path());
    berth
        .run(&["load", "-i", archive.path().to_str().unwrap()])
        .ok();
    let stderr = berth
        .run(&["run", "--rm", "--isolation=vm", "busybox-arm64", "true"])
        .fails(125);
    assert!(
        stderr.contains(
            "image busybox-arm64 is for linux/arm64/v8: a VM container's guest is linux/amd64"
        ),
        "{stderr}"
    );
    assert!(berth.berth.all_ids().is_empty(), "nothing was created");
    // A plain run works after all those failures.
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--isolation=vm",
            "--network",
            "none",
            "busybox",
            "echo",
            "ok",
        ])
        .ok();
    assert_eq!(out, "ok\n");
}

/// berth's config file's `default-runtime: vm` (daemon.json's key) makes
/// a container without `--runtime`/`--isolation` a VM container;
/// `--runtime runc` still picks namespaces; an unknown default is refused.
#[test]
fn the_config_file_can_make_vm_the_default() {
    let Some(berth) = VmBerth::new() else { return };
    let config = tempfile::NamedTempFile::new().unwrap();
    fs_err::write(config.path(), r#"{"default-runtime": "vm"}"#).unwrap();
    let run = |args: &[&str]| {
        let mut command = berth.command();
        command.env("BERTH_CONFIG", config.path()).args(args);
        support::output_with_stdin(command, None)
    };
    let host = String::from_utf8(Command::new("uname").arg("-r").output().unwrap().stdout).unwrap();
    let output = run(&[
        "run",
        "--network",
        "none",
        "--name",
        "by-default",
        "busybox",
        "uname",
        "-r",
    ]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let guest = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_ne!(guest, host, "the default ran it in a VM");
    assert_eq!(berth.inspect("by-default", "{{.HostConfig.Runtime}}"), "vm");
    let output = run(&[
        "run",
        "--rm",
        "--runtime",
        "runc",
        "--network",
        "none",
        "busybox",
        "uname",
        "-r",
    ]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), host);
    let info = String::from_utf8_lossy(&run(&["info"]).stdout).into_owned();
    assert!(
        info.contains("Runtimes: runc vm\nDefault Runtime: vm\n"),
        "{info}"
    );
    fs_err::write(config.path(), r#"{"default-runtime": "kata"}"#).unwrap();
    let output = run(&["run", "--rm", "busybox", "true"]);
    assert_eq!(output.status.code(), Some(125));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("Unknown runtime specified kata"),
        "{output:?}"
    );
    berth.run(&["rm", "by-default"]).ok();
}

/// Without KVM (this machine: /dev/kvm is PVM) a VM container's create
/// warns that it runs under TCG and why, once, before the container's
/// output, as Docker prints a create's warnings.
#[test]
fn tcg_is_warned_about_once_per_create() {
    let Some(berth) = VmBerth::new() else { return };
    let choice = berth_vm::accel::decide(&berth_vm::accel::KvmFacts::probe(), None);
    if choice.accelerator != berth_vm::Accelerator::Tcg {
        eprintln!("skipped: this host has KVM ({})", choice.reason);
        return;
    }
    let mut command = berth.command();
    command.env_remove("BERTH_VM_ACCEL").args([
        "run",
        "--rm",
        "--isolation=vm",
        "--network",
        "none",
        "busybox",
        "sh",
        "-c",
        "echo out; echo err >&2",
    ]);
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "out\n");
    assert_eq!(
        stderr,
        format!(
            "WARNING: VM containers run under TCG emulation here ({}): each VM boots in \
             seconds, not milliseconds\nerr\n",
            choice.reason
        )
    );
}

#[test]
fn a_vm_container_is_on_the_bridge_network_with_its_published_ports() {
    let Some(berth) = VmBerth::new() else { return };
    let port = free_port();
    let publish = format!("127.0.0.1:{port}:80");
    let mut args = vec!["run", "-d", "--isolation=vm", "-p", &publish];
    args.extend_from_slice(&["busybox", "httpd", "-f", "-v", "-p", "80", "-h", "/etc"]);
    let id = berth.run(&args).ok().trim().to_owned();
    let address = berth.inspect(&id, "{{.NetworkSettings.IPAddress}}");
    assert!(
        !address.is_empty(),
        "the VM container has the bridge address"
    );
    let hostname = berth.inspect(&id, "{{.Config.Hostname}}");
    // From the host, through the published port (the same DNAT as for a
    // namespace container), once the guest's httpd listens.
    let mut answer = String::new();
    wait_until(120.0, "the VM's httpd on the published port", || {
        answer = http_get(port, "/hostname").unwrap_or_default();
        !answer.is_empty()
    });
    assert!(answer.ends_with(&format!("\n\n{hostname}\n")), "{answer:?}");
    // From a namespace container on the same bridge, by the VM's address
    // (the guest answers for it itself).
    let url = format!("http://{address}/hostname");
    let out = berth
        .run(&["run", "--rm", "busybox", "wget", "-qO-", &url])
        .ok();
    assert_eq!(out, format!("{hostname}\n"));
    // While it runs, a spare card of its VM takes another network, and
    // gives it back (vm_networks.rs has the rest).
    berth.run(&["network", "create", "second"]).ok();
    berth.run(&["network", "connect", "second", &id]).ok();
    let second = berth.inspect(
        &id,
        "{{(index .NetworkSettings.Networks \"second\").IPAddress}}",
    );
    let card = berth
        .run(&["exec", &id, "ip", "-4", "addr", "show", "dev", "eth1"])
        .ok();
    assert!(card.contains(&format!("inet {second}/")), "{card}");
    berth.run(&["network", "disconnect", "second", &id]).ok();
    let links = berth.run(&["exec", &id, "ip", "-o", "link"]).ok();
    assert!(
        !support::vm::links_up(&links).contains(&"eth1".to_owned()),
        "{links}"
    );
    let addresses = berth.run(&["exec", &id, "ip", "-o", "-4", "addr"]).ok();
    assert!(
        !addresses.contains(&format!("inet {second}/")),
        "{addresses}"
    );
    berth.run(&["network", "rm", "second"]).ok();
    // stats' NET I/O counts what crossed the VM's card.
    let net = berth
        .run(&["stats", "--no-stream", "--format", "{{.NetIO}}", &id])
        .ok();
    assert!(
        !net.starts_with("0B / ") && !net.trim().ends_with("/ 0B"),
        "{net}"
    );
    // Off its first network too: the card with the default route and the
    // published port leaves the guest, and the port no longer answers.
    berth.run(&["network", "disconnect", "bridge", &id]).ok();
    let links = berth.run(&["exec", &id, "ip", "-o", "link"]).ok();
    assert!(
        !support::vm::links_up(&links).contains(&"eth0".to_owned()),
        "{links}"
    );
    let addresses = berth.run(&["exec", &id, "ip", "-o", "-4", "addr"]).ok();
    assert!(
        !addresses.contains(&format!("inet {address}/")),
        "{addresses}"
    );
    assert_eq!(http_get(port, "/hostname"), None);
    let processes = vm_processes(berth.inspect(&id, "{{.State.Pid}}").parse().unwrap());
    berth.run(&["rm", "-f", &id]).ok();
    berth.assert_nothing_left(&id, &processes);
    // The port is free again.
    assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_ok());
}

#[test]
fn vm_and_namespace_containers_find_each_other_by_name() {
    let Some(berth) = VmBerth::new() else { return };
    berth.run(&["network", "create", "names"]).ok();
    let serve = ["busybox", "httpd", "-f", "-p", "80", "-h", "/etc"];
    let mut args = vec!["run", "-d", "--network", "names", "--name", "in-ns"];
    args.extend_from_slice(&serve);
    berth.run(&args).ok();
    let mut args = vec![
        "run",
        "-d",
        "--isolation=vm",
        "--network",
        "names",
        "--name",
        "in-vm",
    ];
    args.extend_from_slice(&serve);
    let vm = berth.run(&args).ok().trim().to_owned();
    // The guest asks 127.0.0.11, as its resolv.conf (Docker's) says: the
    // agent relays to the container's embedded DNS.
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--isolation=vm",
            "--network",
            "names",
            "busybox",
            "sh",
            "-c",
            "grep nameserver /etc/resolv.conf; wget -qO- http://in-ns/hostname",
        ])
        .ok();
    let ns_hostname = berth.inspect("in-ns", "{{.Config.Hostname}}");
    assert_eq!(out, format!("nameserver 127.0.0.11\n{ns_hostname}\n"));
    // And a namespace container finds the VM's httpd by its name.
    let vm_hostname = berth.inspect(&vm, "{{.Config.Hostname}}");
    let mut answer = String::new();
    wait_until(120.0, "the VM's httpd by name", || {
        let run = berth.run(&[
            "run",
            "--rm",
            "--network",
            "names",
            "busybox",
            "wget",
            "-qO-",
            "http://in-vm/hostname",
        ]);
        answer = run.stdout();
        run.code() == 0
    });
    assert_eq!(answer, format!("{vm_hostname}\n"));
    berth.run(&["rm", "-f", "in-ns", "in-vm"]).ok();
    berth.run(&["network", "rm", "names"]).ok();
}
