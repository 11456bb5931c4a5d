//! Starts real containers from the busybox fixture rootfs with the runtime
//! alone (no engine): isolation as seen from inside.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

use std::collections::BTreeSet;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use berth_runtime::cgroups::{new_manager, CgroupDriver, CgroupVersion, Resources};
use berth_runtime::rootfs::{mount_rootfs, unmount_rootfs, RootfsPaths};
use berth_runtime::spec::{DEFAULT_MASKED_PATHS, DEFAULT_PATH, DEFAULT_READONLY_PATHS};
use berth_runtime::{capabilities, launch, ContainerSpec, NetworkMode, ProcessSpec, Stdio};

fn rootfs_tar() -> PathBuf {
    let directory = match std::env::var_os("BERTH_FIXTURES") {
        Some(directory) => PathBuf::from(directory),
        None => {
            let directory = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fixtures");
            let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
                .ancestors()
                .nth(2)
                .unwrap();
            let lock = fs_err::File::create(
                PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fixtures.lock"),
            )
            .unwrap()
            .into_file();
            let _guard =
                nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive).unwrap();
            if !directory.join("image-ids.txt").exists() {
                let status = std::process::Command::new("bash")
                    .arg(workspace.join("scripts/make-fixtures.sh"))
                    .arg(&directory)
                    .stdout(std::process::Stdio::null())
                    .status()
                    .unwrap();
                assert!(status.success());
            }
            directory
        }
    };
    directory.join("rootfs.tar")
}

struct Container {
    _directory: tempfile::TempDir,
    paths: RootfsPaths,
    spec: ContainerSpec,
}

fn container(args: &[&str]) -> Container {
    let directory = tempfile::tempdir().unwrap();
    let lower = directory.path().join("lower");
    fs_err::create_dir(&lower).unwrap();
    let mut archive = tar::Archive::new(fs_err::File::open(rootfs_tar()).unwrap());
    archive.set_preserve_permissions(true);
    archive.set_preserve_ownerships(true);
    archive.unpack(&lower).unwrap();
    let paths = RootfsPaths::under(&directory.path().join("container"));
    mount_rootfs(&[lower], &paths).unwrap();
    let id = format!("runtime-test-{}-{}", std::process::id(), rand_suffix());
    let etc = directory.path().join("hostname");
    fs_err::write(&etc, "testhost\n").unwrap();
    let spec = ContainerSpec {
        id,
        rootfs: paths.merged.clone(),
        readonly_rootfs: false,
        hostname: "testhost".into(),
        process: ProcessSpec {
            args: args.iter().map(|arg| arg.to_string()).collect(),
            env: vec![DEFAULT_PATH.to_owned()],
            cwd: "/".into(),
            uid: 0,
            gid: 0,
            additional_gids: vec![],
            capabilities: capabilities::resolve(&[], &[], false).unwrap(),
            no_new_privileges: false,
            rlimits: vec![],
            console_size: None,
            oom_score_adj: None,
            seccomp: Some(
                berth_runtime::seccomp::compile(
                    &berth_runtime::seccomp::Profile::docker_default(),
                    &capabilities::resolve(&[], &[], false)
                        .unwrap()
                        .iter()
                        .map(|capability| capabilities::name(*capability).to_owned())
                        .collect::<Vec<_>>(),
                )
                .unwrap(),
            ),
            tty: false,
        },
        mounts: vec![],
        etc_files: vec![(etc, PathBuf::from("/etc/hostname"))],
        network: NetworkMode::New,
        masked_paths: DEFAULT_MASKED_PATHS
            .iter()
            .map(|path| path.to_string())
            .collect(),
        readonly_paths: DEFAULT_READONLY_PATHS
            .iter()
            .map(|path| path.to_string())
            .collect(),
        privileged: false,
        init: false,
        shm_size: 64 << 20,
        cgroup_v1_hierarchies: vec![],
        cgroup_v2: false,
        cgroup_namespace: true,
        overlay: None,
        devices: vec![],
        device_rules: berth_runtime::devices::container_rules(false, &[]),
        host_namespaces: Default::default(),
        no_shm: false,
        joined_namespaces: Default::default(),
        domainname: String::new(),
    };
    Container {
        _directory: directory,
        paths,
        spec,
    }
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        % 1_000_000
}

/// Runs the container to completion; returns (exit code, stdout, stderr).
fn run(container: &Container) -> (i32, String, String) {
    let cgroup = test_cgroup(container);
    let (stdio, out_read, err_read) = pipes();
    let result = launch(&container.spec, stdio, cgroup.as_ref(), &mut |_| Ok(()));
    let launched = match result {
        Ok(launched) => launched,
        Err(error) => {
            cgroup.delete().unwrap();
            unmount_rootfs(&container.paths).unwrap();
            return (error.exit_status(), String::new(), format!("{error}"));
        }
    };
    let stdout = read_all(out_read);
    let stderr = read_all(err_read);
    let status = nix::sys::wait::waitpid(launched.pid, None).unwrap();
    let code = match status {
        nix::sys::wait::WaitStatus::Exited(_, code) => code,
        nix::sys::wait::WaitStatus::Signaled(_, signal, _) => 128 + signal as i32,
        other => panic!("unexpected {other:?}"),
    };
    cgroup.delete().unwrap();
    unmount_rootfs(&container.paths).unwrap();
    (code, stdout, stderr)
}

#[test]
fn runs_a_command_as_pid_one_with_its_own_hostname() {
    let container = container(&["sh", "-c", "echo $$; hostname; cat /etc/hostname; id -u"]);
    let (code, stdout, stderr) = run(&container);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "1\ntesthost\ntesthost\n0\n");
}

#[test]
fn sees_no_host_processes_and_cannot_mount() {
    let container = container(&[
        "sh",
        "-c",
        "ls /proc | grep -c '^[0-9]'; mount -t tmpfs none /mnt 2>&1; echo mount=$?",
    ]);
    let (code, stdout, stderr) = run(&container);
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    // sh, ls and grep: only the container's own processes.
    assert!(lines[0].parse::<u32>().unwrap() <= 4, "{stdout}");
    assert!(
        stdout.contains("mount=1") || stdout.contains("mount=255"),
        "{stdout}"
    );
    assert!(stdout.contains("permission denied"), "{stdout}");
}

#[test]
fn masked_paths_and_capabilities_match_docker() {
    let container = container(&["sh", "-c", "cat /proc/kcore | wc -c; grep CapEff /proc/self/status; grep Seccomp: /proc/self/status; echo x 2>&1 > /proc/sys/kernel/domainname || true"]);
    let (code, stdout, stderr) = run(&container);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("0\n"), "{stdout}");
    // Docker's 14 default capabilities: 0x00000000a80425fb.
    assert!(stdout.contains("CapEff:\t00000000a80425fb"), "{stdout}");
    assert!(stdout.contains("Seccomp:\t2"), "{stdout}");
    assert!(stdout.contains("Read-only file system"), "{stdout}");
}

#[test]
fn missing_command_is_127_and_says_so() {
    let container = container(&["no-such-command"]);
    let (code, _, error) = run(&container);
    assert_eq!(code, 127, "{error}");
    assert!(
        error.contains("executable file not found in $PATH"),
        "{error}"
    );
}

fn test_cgroup(container: &Container) -> Box<dyn berth_runtime::cgroups::CgroupManager> {
    let version = CgroupVersion::detect().unwrap();
    let cgroup = new_manager(
        &version,
        CgroupDriver::default()
            .container_path(None, &container.spec.id)
            .unwrap(),
    );
    cgroup
        .create(&Resources {
            devices: Some(container.spec.device_rules.clone()),
            ..Resources::default()
        })
        .unwrap();
    cgroup
}

/// Docker's default device rules: a node of the host's /dev/kmsg made in
/// the container (mknod is allowed) cannot be opened; /dev/null can.
#[test]
fn default_device_rules_refuse_host_devices() {
    let container = container(&[
        "sh",
        "-c",
        "echo x > /dev/null && echo null-ok; mknod /tmp/k c 1 11 && echo made; echo x 2>&1 > /tmp/k",
    ]);
    let (code, stdout, stderr) = run(&container);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.starts_with("null-ok\nmade\n"), "{stdout}");
    assert!(stdout.contains("Operation not permitted"), "{stdout}");
}

/// `--device /dev/fuse:/dev/myfuse:rw` as the runtime gets it: the node
/// with the host's numbers and mode, and a rule that lets it be opened.
#[test]
fn a_given_device_is_made_and_can_be_opened() {
    if !std::path::Path::new("/dev/fuse").exists() {
        eprintln!("skipping a_given_device_is_made_and_can_be_opened: no /dev/fuse on the host");
        return;
    }
    use berth_runtime::devices::{container_rules, devices_from_path, Access};
    let mut container = container(&[
        "sh",
        "-c",
        "ls -ln /dev/myfuse; exec 3<>/dev/myfuse && echo opened",
    ]);
    let nodes = devices_from_path("/dev/fuse", std::path::Path::new("/dev/myfuse")).unwrap();
    let rules: Vec<_> = nodes
        .iter()
        .map(|node| node.rule(Access::READ.union(Access::WRITE)))
        .collect();
    container.spec.device_rules = container_rules(false, &rules);
    container.spec.devices = nodes;
    let (code, stdout, stderr) = run(&container);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.starts_with("crw-------"), "{stdout}");
    assert!(stdout.contains("10, 229"), "{stdout}");
    assert!(stdout.ends_with("opened\n"), "{stdout}");
}

fn pipes() -> (Stdio, OwnedFd, OwnedFd) {
    let (out_read, out_write) = nix::unistd::pipe().unwrap();
    let (err_read, err_write) = nix::unistd::pipe().unwrap();
    let stdin: OwnedFd = fs_err::File::open("/dev/null").unwrap().into();
    let stdio = Stdio {
        stdin,
        stdout: out_write,
        stderr: err_write,
        console: None,
    };
    (stdio, out_read, err_read)
}

fn read_all(fd: OwnedFd) -> String {
    let mut text = String::new();
    std::fs::File::from(fd).read_to_string(&mut text).unwrap();
    text
}

/// A sandbox is built with a placeholder process; the run that claims it
/// brings its own command, environment and bind mounts, and gets pid 1.
#[test]
fn a_prepared_sandbox_runs_the_claiming_process_as_pid_one() {
    let base = container(&["placeholder-never-runs"]);
    let cgroup = test_cgroup(&base);
    let sandbox =
        berth_runtime::Sandbox::prepare(&base.spec, cgroup.as_ref(), &mut |_| Ok(())).unwrap();
    let pid = sandbox.pid().unwrap();
    // Waiting: in its cgroup, not yet running anything of the user's.
    assert!(cgroup.processes().unwrap().contains(&pid));

    let data = tempfile::tempdir().unwrap();
    fs_err::write(data.path().join("note"), "from the host\n").unwrap();
    let mut claimed = base.spec.clone();
    claimed.process.args = [
        "sh",
        "-c",
        "echo $$; hostname; echo $GREETING; cat /data/note",
    ]
    .iter()
    .map(|arg| arg.to_string())
    .collect();
    claimed.process.env.push("GREETING=hello".to_owned());
    claimed.mounts.push(berth_runtime::MountSpec {
        kind: berth_runtime::MountKind::Bind {
            source: data.path().to_owned(),
            recursive: true,
        },
        destination: PathBuf::from("/data"),
        readonly: true,
        nosuid: false,
        nodev: false,
        noexec: false,
    });
    let (stdio, out, err) = pipes();
    let launched = sandbox.start(&claimed, stdio).unwrap();
    assert_eq!(launched.pid, pid);
    let stdout = read_all(out);
    let stderr = read_all(err);
    let status = nix::sys::wait::waitpid(launched.pid, None).unwrap();
    assert_eq!(
        status,
        nix::sys::wait::WaitStatus::Exited(pid, 0),
        "{stderr}"
    );
    assert_eq!(stdout, "1\ntesthost\nhello\nfrom the host\n");
    cgroup.delete().unwrap();
    unmount_rootfs(&base.paths).unwrap();
}

/// A run that asks for another sandbox (here another hostname) is refused,
/// and an unclaimed sandbox that is dropped leaves no process behind.
#[test]
fn a_sandbox_refuses_a_different_run_and_ends_when_dropped() {
    let base = container(&["placeholder"]);
    let cgroup = test_cgroup(&base);
    let sandbox =
        berth_runtime::Sandbox::prepare(&base.spec, cgroup.as_ref(), &mut |_| Ok(())).unwrap();
    let mut other = base.spec.clone();
    other.hostname = "elsewhere".to_owned();
    let (stdio, _out, _err) = pipes();
    let error = sandbox.start(&other, stdio).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("does not match the prepared sandbox"),
        "{error}"
    );

    let sandbox =
        berth_runtime::Sandbox::prepare(&base.spec, cgroup.as_ref(), &mut |_| Ok(())).unwrap();
    let pid = sandbox.pid().unwrap();
    drop(sandbox);
    assert_eq!(
        nix::sys::signal::kill(pid, None),
        Err(nix::errno::Errno::ESRCH),
        "the dropped sandbox's process is gone"
    );
    cgroup.delete().unwrap();
    unmount_rootfs(&base.paths).unwrap();
}

#[allow(dead_code)]
fn unused(_: BTreeSet<u8>) {}
