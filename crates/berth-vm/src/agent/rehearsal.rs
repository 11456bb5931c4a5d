//! A warm member's rehearsal of a container's start, before its claim.
//!
//! Under TCG, the first time the guest kernel runs a path (a clone into new
//! namespaces, a mount of /proc, the masks, a capability drop, a seccomp
//! filter's install, an `execve`) QEMU translates that code first, and
//! keeps the translation: a path's first run costs many times its later
//! ones. So before a member is offered, the agent starts a throwaway
//! "container" through the very path a claim's process takes
//! ([`super::exec::spawn_container`], berth-runtime's guest half) with
//! Docker's default settings, in a root of its own that holds nothing but
//! the agent's own binary, and waits for it to end. Nothing of a container
//! is in the guest yet, and nothing of the rehearsal stays: its root is
//! unmounted before the member is offered (docs/VM.md).

use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;

use fs_err as fs;
use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sys::wait::waitpid;

use super::exec::{spawn_container, Spawned};

/// How many throwaway containers a rehearsal starts, one after another.
const REHEARSALS: usize = 3;

/// The rehearsal's root: a tmpfs with the agent's binary as `/init` and the
/// guest's `/proc`, `/sys` and `/dev` mount points. Not the initramfs
/// itself: the agent's config there would make `/init`, as PID 1 of the
/// rehearsal's pid namespace, think it is a guest's agent.
const REHEARSAL_ROOT: &str = "/mnt/rehearsal";

/// Starts [`REHEARSALS`] throwaway containers, each printing the agent's
/// version, and waits for each; the root they ran in is gone afterwards.
/// A failure only costs the claim its head start: it is told on the
/// console, and the member is offered all the same.
pub(super) fn rehearse() {
    let root = Path::new(REHEARSAL_ROOT);
    let outcome = build_root(root).and_then(|()| {
        let spec = rehearsal_spec()?;
        (0..REHEARSALS).try_for_each(|_| start_and_wait(&spec, root))
    });
    if let Err(error) = outcome {
        eprintln!("berth-agent: the start rehearsal failed: {error}");
    }
    // Everything under the root goes with it.
    let _ = umount2(root, MntFlags::MNT_DETACH);
}

/// A tmpfs at `root` with an empty `proc`, the guest's `/sys` and `/dev`
/// (the masks bind `/dev/null` and cover `/sys/firmware`) and `/init`, all
/// read-only but `proc`.
fn build_root(root: &Path) -> Result<(), String> {
    let failed = |what: &str, error: &dyn std::fmt::Display| format!("{what}: {error}");
    fs::create_dir_all(root).map_err(|error| failed("create the root", &error))?;
    mount(
        Some("tmpfs"),
        root,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some("size=64k,mode=0755"),
    )
    .map_err(|error| failed("mount the root", &error))?;
    for dir in ["proc", "sys", "dev"] {
        fs::create_dir(root.join(dir)).map_err(|error| failed("create a mount point", &error))?;
    }
    fs::write(root.join("init"), b"").map_err(|error| failed("create /init", &error))?;
    for (source, target) in [("/sys", "sys"), ("/dev", "dev"), ("/init", "init")] {
        let target = root.join(target);
        mount(
            Some(source),
            &target,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .map_err(|error| failed(&format!("bind {source}"), &error))?;
        mount(
            None::<&str>,
            &target,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY,
            None::<&str>,
        )
        .map_err(|error| failed(&format!("make {source} read-only"), &error))?;
    }
    Ok(())
}

/// What `docker run IMAGE /init --version` would be given: Docker's default
/// capabilities, seccomp profile, masked and read-only paths, as root in
/// `/`, with new pid and mount namespaces (the agent's clone).
fn rehearsal_spec() -> Result<berth_runtime::ContainerSpec, String> {
    use berth_runtime::capabilities;
    let capabilities = capabilities::DOCKER_DEFAULT
        .iter()
        .map(|name| capabilities::parse(name))
        .collect::<Result<BTreeSet<_>, _>>()
        .map_err(|error| format!("Docker's default capabilities: {error}"))?;
    let names: Vec<String> = capabilities::DOCKER_DEFAULT
        .iter()
        .map(|name| (*name).to_owned())
        .collect();
    let seccomp =
        berth_runtime::seccomp::compile(&berth_runtime::seccomp::Profile::docker_default(), &names)
            .map_err(|error| format!("Docker's default seccomp profile: {error}"))?;
    let to_strings = |paths: &[&str]| paths.iter().map(|path| (*path).to_owned()).collect();
    Ok(berth_runtime::ContainerSpec {
        id: "rehearsal".to_owned(),
        rootfs: REHEARSAL_ROOT.into(),
        overlay: None,
        readonly_rootfs: false,
        hostname: "rehearsal".to_owned(),
        process: berth_runtime::ProcessSpec {
            args: vec!["/init".to_owned(), "--version".to_owned()],
            env: vec![berth_runtime::spec::DEFAULT_PATH.to_owned()],
            cwd: "/".to_owned(),
            uid: 0,
            gid: 0,
            additional_gids: Vec::new(),
            capabilities,
            no_new_privileges: false,
            rlimits: Vec::new(),
            seccomp: Some(seccomp),
            tty: false,
            console_size: None,
            oom_score_adj: None,
        },
        mounts: Vec::new(),
        etc_files: Vec::new(),
        network: berth_runtime::NetworkMode::New,
        masked_paths: to_strings(berth_runtime::spec::DEFAULT_MASKED_PATHS),
        readonly_paths: to_strings(berth_runtime::spec::DEFAULT_READONLY_PATHS),
        privileged: false,
        init: false,
        shm_size: 0,
        cgroup_v1_hierarchies: Vec::new(),
        cgroup_v2: false,
        cgroup_namespace: false,
        devices: Vec::new(),
        device_rules: Vec::new(),
        host_namespaces: Default::default(),
        no_shm: false,
        joined_namespaces: Default::default(),
        domainname: String::new(),
    })
}

/// One throwaway container: started as a claim's process is, its output
/// read to the end (and dropped), then reaped.
fn start_and_wait(spec: &berth_runtime::ContainerSpec, root: &Path) -> Result<(), String> {
    let Spawned { pid, outputs, .. } = spawn_container(spec, root, false).map_err(|finished| {
        finished
            .error
            .unwrap_or_else(|| format!("exit status {}", finished.code))
    })?;
    let mut sink = Vec::new();
    for (_, mut output) in outputs.into_iter().flatten() {
        let _ = output.read_to_end(&mut sink);
    }
    waitpid(pid, None).map_err(|error| format!("wait for the rehearsal: {error}"))?;
    Ok(())
}
