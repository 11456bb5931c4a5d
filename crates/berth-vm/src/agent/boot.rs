//! The agent's first steps as PID 1: mounts, modules, the port, and the end.

use std::ffi::CStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fs_err as fs;
use nix::kmod::{finit_module, ModuleInitFlags};
use nix::mount::{mount, MsFlags};
use nix::time::{clock_gettime, ClockId};

use super::{AgentError, PowerOff};

/// Nanoseconds since the kernel started (`CLOCK_BOOTTIME`).
pub(super) fn boottime_ns() -> u64 {
    clock_gettime(ClockId::CLOCK_BOOTTIME)
        .map(|time| time.tv_sec() as u64 * 1_000_000_000 + time.tv_nsec() as u64)
        .unwrap_or(0)
}

/// `/proc`, `/sys`, and a devtmpfs `/dev` (Debian's kernel does not mount it
/// itself: CONFIG_DEVTMPFS_MOUNT is off), where the port's node appears.
pub(super) fn mount_basics() -> Result<(), AgentError> {
    let nodev = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    for (source, target, kind, flags) in [
        ("proc", "/proc", "proc", nodev),
        ("sysfs", "/sys", "sysfs", nodev),
        (
            "devtmpfs",
            "/dev",
            "devtmpfs",
            MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        ),
    ] {
        let _ = fs::create_dir_all(target);
        match mount(Some(source), target, Some(kind), flags, None::<&str>) {
            // /dev may already be devtmpfs on a kernel that mounts it.
            Ok(()) | Err(nix::Error::EBUSY) => {}
            Err(source) => {
                return Err(AgentError::Mount {
                    target: target.into(),
                    source,
                })
            }
        }
    }
    Ok(())
}

pub(super) fn load_modules(modules: &[String]) -> Result<(), AgentError> {
    const NO_PARAMETERS: &CStr = c"";
    for module in modules {
        let path = PathBuf::from(module);
        let load_error = |source| AgentError::LoadModule {
            path: path.clone(),
            source,
        };
        let file = fs::File::open(&path).map_err(load_error)?;
        match finit_module(&file, NO_PARAMETERS, ModuleInitFlags::empty()) {
            Ok(()) | Err(nix::Error::EEXIST) => {}
            Err(error) => return Err(load_error(error.into())),
        }
    }
    Ok(())
}

/// Finds the virtio-serial port called `name` (its driver creates the port
/// when the host's control message arrives, so it is waited for) and opens it
/// once the host is connected to it.
pub(super) fn open_port(name: &str, timeout: Duration) -> Result<fs::File, AgentError> {
    let deadline = Instant::now() + timeout;
    let class = Path::new("/sys/class/virtio-ports");
    let device = loop {
        if let Some(device) = find_port(class, name) {
            break device;
        }
        if Instant::now() >= deadline {
            return Err(AgentError::NoPort {
                name: name.to_string(),
                waited: timeout,
            });
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let path = Path::new("/dev").join(&device);
    let port = loop {
        match fs::OpenOptions::new().read(true).write(true).open(&path) {
            Ok(port) => break port,
            // devtmpfs may not have made the node yet.
            Err(error)
                if error.kind() == std::io::ErrorKind::NotFound && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(source) => return Err(AgentError::OpenPort { path, source }),
        }
    };
    super::wait_host_connected(
        &port,
        name,
        deadline.saturating_duration_since(Instant::now()),
    )?;
    Ok(port)
}

fn find_port(class: &Path, name: &str) -> Option<String> {
    fs::read_dir(class)
        .ok()?
        .filter_map(|entry| entry.ok())
        .find_map(|entry| {
            let port_name = fs::read_to_string(entry.path().join("name")).ok()?;
            (port_name.trim_end() == name).then(|| entry.file_name().to_string_lossy().into_owned())
        })
}

pub(super) fn kernel_release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|release| release.trim().to_string())
        .unwrap_or_default()
}

/// Ends the guest. PID 1 must not exit (the kernel would panic), so if the
/// reboot call fails it sleeps; the host kills QEMU.
pub(super) fn power_off(mode: PowerOff) -> ! {
    use nix::sys::reboot::{reboot, RebootMode};
    let mode = match mode {
        PowerOff::Halt => RebootMode::RB_POWER_OFF,
        PowerOff::Reboot => RebootMode::RB_AUTOBOOT,
    };
    // Whatever the guest still holds dirty (an mmap'd file of a share, say)
    // goes to virtiofsd first: reboot(2) does not sync.
    nix::unistd::sync();
    let Err(error) = reboot(mode);
    eprintln!("berth-agent: failed to power off: {error}");
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// Drops the guest's clean page cache, dentries and inodes (`drop_caches`
/// 3): the next read of a file the host changed asks virtiofsd again. What
/// an open file keeps (its inode's attributes) stays until it is closed.
pub(super) fn drop_caches() {
    if let Err(error) = fs_err::write("/proc/sys/vm/drop_caches", "3") {
        eprintln!("berth-agent: {error}");
    }
}
