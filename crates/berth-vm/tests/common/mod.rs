//! What the real-VM tests share: a kernel, an initramfs, a VM configuration,
//! and the checks that nothing is left behind.

#![allow(dead_code)] // each test file uses its own part
#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use berth_vm::kernel::{self, GuestKernel};
use berth_vm::{accel, initramfs, qemu, InitramfsConfig, RunRequest, VmConfig};

pub struct Setup {
    pub config: VmConfig,
    pub kernel: GuestKernel,
    pub dir: tempfile::TempDir,
}

/// Everything to boot a VM, or `None` (printed) when QEMU is not installed.
pub fn setup() -> Option<Setup> {
    setup_with(Path::new(env!("CARGO_BIN_EXE_berth-vm-agent")), true)
}

/// As [`setup`] with `agent` as /init, and busybox in the initramfs or not.
pub fn setup_with(agent: &Path, with_busybox: bool) -> Option<Setup> {
    let qemu = match qemu::find_qemu() {
        Ok(qemu) => qemu,
        Err(error) => {
            eprintln!("skipped: {error}");
            return None;
        }
    };
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("vm-kernel");
    let package = match kernel::kernel_dir_from_env() {
        Ok(dir) => dir,
        Err(_) => {
            // berth's own kernel (docs/VM.md, "A kernel of berth's own"); built once, a few
            // minutes, when scripts/test.sh has not (it sets BERTH_VM_KERNEL_DIR).
            let dir = base.join("minimal");
            let script =
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/vm-kernel-minimal.sh");
            let status = Command::new("bash")
                .arg(&script)
                .arg(&dir)
                .status()
                .unwrap();
            assert!(status.success(), "{script:?} {dir:?} failed: {status}");
            dir
        }
    };
    let kernel = kernel::prepare(&package, &base.join("cache")).unwrap();
    let busybox = PathBuf::from("/bin/busybox");
    assert!(
        busybox.is_file(),
        "/bin/busybox missing: apt-get install busybox-static"
    );

    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("initramfs.cpio");
    let mut config = InitramfsConfig::new(agent.to_path_buf(), kernel.clone());
    if with_busybox {
        config.busybox = Some(busybox);
    }
    initramfs::write(&config, &image).unwrap();
    let run_dir = dir.path().join("run");
    fs_err::create_dir(&run_dir).unwrap();
    let config = VmConfig {
        qemu,
        accelerator: accel::detect().accelerator,
        kernel: kernel.vmlinux.clone(),
        initramfs: image,
        memory_mib: 256,
        cpus: 1,
        run_dir,
        // TCG on two cores shared with other builds: seconds, and more under load.
        boot_timeout: Duration::from_secs(120),
        kernel_cmdline_extra: Vec::new(),
        shares: Vec::new(),
        virtiofsd: None,
        networks: Vec::new(),
        free_page_reporting: true,
    };
    Some(Setup {
        config,
        kernel,
        dir,
    })
}

pub fn request(args: &[&str]) -> RunRequest {
    RunRequest {
        args: args.iter().map(|arg| arg.to_string()).collect(),
        env: vec![],
        cwd: "/".into(),
        root: None,
        mounts: vec![],
        container: None,
        stdin: false,
        networks: vec![],
        embedded_dns: false,
    }
}

/// No QEMU with this pid, and nothing left in the run directory.
pub fn assert_nothing_left(pid: u32, vm_dir: &Path, run_dir: &Path) {
    let cmdline = fs_err::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    assert!(
        !String::from_utf8_lossy(&cmdline).contains("qemu"),
        "QEMU (pid {pid}) still running"
    );
    assert!(!vm_dir.exists(), "{vm_dir:?} left behind");
    assert_eq!(
        fs_err::read_dir(run_dir).unwrap().count(),
        0,
        "files left in {run_dir:?}"
    );
}

/// The fixtures' busybox rootfs (`$BERTH_FIXTURES/rootfs.tar`, else the
/// workspace's `target/fixtures`, made by scripts/make-fixtures.sh) extracted
/// into `into`, owners and modes kept; `None` (printed) when there is none.
pub fn fixture_rootfs(into: &Path) -> Option<PathBuf> {
    let fixtures = std::env::var_os("BERTH_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/fixtures"));
    let tar = fixtures.join("rootfs.tar");
    if !tar.is_file() {
        eprintln!("skipped: no {tar:?} (scripts/make-fixtures.sh, or set BERTH_FIXTURES)");
        return None;
    }
    let mut archive = tar::Archive::new(fs_err::File::open(&tar).unwrap());
    archive.set_preserve_permissions(true);
    archive.set_preserve_ownerships(true);
    archive.unpack(into).unwrap();
    Some(into.to_path_buf())
}

/// The live (not zombie) processes whose command line mentions `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in fs_err::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse().ok())
        else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let cmdline = fs_err::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline)
            .replace('\0', " ")
            .contains(needle)
        {
            found.push(pid);
        }
    }
    found
}
