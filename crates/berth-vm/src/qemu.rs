//! QEMU's command line for a berth microVM, and the QEMU process.
//!
//! `-M microvm`: no PCI, no firmware tables beyond ACPI, virtio over MMIO.
//! ACPI stays on because Debian's kernel finds virtio-mmio devices only
//! through it (CONFIG_VIRTIO_MMIO_CMDLINE_DEVICES is off) and powers off
//! through microvm's ACPI GED device. Two sockets connect berth to QEMU, both
//! one end of a `socketpair` handed over by descriptor (`fd=N`), so there is
//! no socket file to create, race on or clean up:
//!
//! - the agent channel: a virtio-serial port named `org.berth.agent`;
//! - QMP, QEMU's control protocol;
//! - one vhost-user socket per virtiofs share (`vhost-user-fs-device`: microvm
//!   has no PCI), already connected to its virtiofsd (see [`crate::virtiofs`]).
//!   vhost-user devices need the guest's memory shared with the daemon, so a
//!   VM with shares gets its RAM from a `memfd` mapped `share=on`.
//!
//! The serial console (kernel messages, the agent's own errors) goes to a log
//! file in the VM's directory.
//!
//! Idle memory goes back to the host through `virtio-balloon-device` with
//! `free-page-reporting=on` (virtio 1.1's VIRTIO_BALLOON_F_REPORTING): the
//! guest kernel (CONFIG_PAGE_REPORTING, Debian's `=y`, and the
//! `virtio_balloon` module) reports runs of free pages of 2 MiB and more
//! (`pageblock_order`) about 2 s after they are freed, and QEMU discards
//! them (`madvise(MADV_DONTNEED)` for anonymous RAM, `fallocate(PUNCH_HOLE)`
//! for the memfd a VM with shares has), so what a guest freed stops counting
//! in QEMU's RSS and virtiofsd's. The balloon is never inflated: berth asks
//! no memory back beyond what the guest has freed itself.

use std::ffi::OsString;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use fs_err as fs;

use crate::accel::Accelerator;
use crate::child::ChildProcess;
use crate::protocol::PORT_NAME;

/// The QEMU binary to use instead of `qemu-system-x86_64` from `PATH`.
pub const QEMU_ENV: &str = "BERTH_VM_QEMU";

#[derive(Debug, thiserror::Error)]
pub enum QemuError {
    #[error(
        "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86), or set {QEMU_ENV}"
    )]
    NotInstalled,
    #[error("failed to start {qemu:?}")]
    Spawn {
        qemu: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to create QEMU's log {path:?}")]
    Log {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Finds QEMU: `BERTH_VM_QEMU`, else `qemu-system-x86_64` in `PATH`.
pub fn find_qemu() -> Result<PathBuf, QemuError> {
    if let Some(path) = std::env::var_os(QEMU_ENV).filter(|path| !path.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|dir| dir.join("qemu-system-x86_64"))
        .find(|candidate| candidate.is_file())
        .ok_or(QemuError::NotInstalled)
}

/// Everything QEMU's command line is made of.
#[derive(Debug, Clone)]
pub struct QemuArgs<'a> {
    pub accelerator: Accelerator,
    pub memory_mib: u32,
    pub cpus: u32,
    pub kernel: &'a Path,
    pub initramfs: &'a Path,
    pub console_log: &'a Path,
    /// QEMU's end of the agent channel.
    pub agent_fd: RawFd,
    /// QEMU's end of the QMP connection.
    pub qmp_fd: RawFd,
    pub kernel_cmdline_extra: &'a [String],
    /// The virtiofs devices: QEMU's end of each share's vhost-user socket.
    pub filesystems: &'a [FilesystemDevice],
    /// The network cards, each on a tap device the caller opened, in the
    /// order the guest should see them (`net0`, `net1`, …).
    pub networks: &'a [NetworkDevice],
    /// A balloon device whose free page reporting hands the pages the guest
    /// frees back to the host.
    pub free_page_reporting: bool,
}

/// One `virtio-net-device` on a tap: QEMU's descriptor of the tap and the
/// card's MAC address (how the guest agent tells the cards apart).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkDevice {
    pub tap_fd: RawFd,
    pub mac: String,
}

/// One `vhost-user-fs-device`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilesystemDevice {
    /// What the guest mounts (`mount -t virtiofs TAG`).
    pub tag: String,
    /// QEMU's end of the connection to the share's virtiofsd.
    pub fd: RawFd,
}

/// The kernel command line.
///
/// - `console=ttyS0 quiet`: messages to the serial log, but only warnings:
///   every character is an emulated port write.
/// - `panic=-1`: a panic reboots at once, which `-no-reboot` makes QEMU's exit.
/// - `cryptomgr.notests`: no self-test of every crypto algorithm as it
///   registers (≈ 0.2 s under TCG; the implementations are the kernel's own).
/// - TCG only: `tsc_early_khz=<the host's TSC rate> no_timer_check
///   lpj=5000000`. Without a TSC frequency the kernel calibrates the LAPIC
///   timer against the PIT and under TCG on this host hangs there
///   (timestamps stay 0.000000); giving it the TSC rate and the
///   loops-per-jiffy skips both calibrations. The guest's `rdtsc` reads the
///   host's TSC, so the rate is the host's, measured (`tsc.rs`): a rate
///   assumed instead (2 GHz on a 2.3 GHz host) made the guest's clock run
///   15 % fast.
///   `tsc=reliable` skips the clocksource watchdog's checks of the (emulated,
///   host-clock driven) TSC: ≈ 0.3 s. KVM gives the guest kvm-clock and the
///   TSC rate and needs none of this.
pub fn kernel_cmdline(accelerator: Accelerator) -> String {
    let mut words = vec!["console=ttyS0", "quiet", "panic=-1", "cryptomgr.notests"];
    let tsc = format!(
        "tsc_early_khz={}",
        crate::tsc::host_tsc_khz().unwrap_or(2_000_000)
    );
    if accelerator == Accelerator::Tcg {
        words.extend([
            tsc.as_str(),
            "no_timer_check",
            "lpj=5000000",
            "tsc=reliable",
        ]);
    }
    words.join(" ")
}

pub fn arguments(args: &QemuArgs) -> Vec<OsString> {
    let mut out: Vec<OsString> = Vec::new();
    let mut push = |words: &[&str]| out.extend(words.iter().map(OsString::from));
    let mut machine = format!(
        "microvm,accel={},acpi=on,pcie=off",
        args.accelerator.qemu_name()
    );
    if !args.filesystems.is_empty() {
        // vhost-user: virtiofsd maps the guest's RAM to reach the virtqueues
        // and buffers, so it must be a shareable file, not anonymous memory.
        machine.push_str(",memory-backend=mem");
        push(&[
            "-object",
            &format!(
                "memory-backend-memfd,id=mem,size={}M,share=on",
                args.memory_mib
            ),
        ]);
    }
    push(&["-M", &machine]);
    push(&[
        "-m",
        &args.memory_mib.to_string(),
        "-smp",
        &args.cpus.to_string(),
    ]);
    push(&[
        "-nodefaults",
        "-no-user-config",
        "-display",
        "none",
        "-no-reboot",
    ]);
    // Modern (virtio 1.0) devices rather than microvm's legacy default.
    push(&["-global", "virtio-mmio.force-legacy=false"]);
    let mut cmdline = kernel_cmdline(args.accelerator);
    for word in args.kernel_cmdline_extra {
        cmdline.push(' ');
        cmdline.push_str(word);
    }
    push(&["-append", &cmdline, "-serial", "chardev:console"]);
    // max_ports=2: port 0 is reserved for a console, ours takes 1; the
    // default 31 would make the guest set up 64 virtqueues.
    push(&["-device", "virtio-serial-device,max_ports=2"]);
    push(&["-chardev", &format!("socket,id=agent,fd={}", args.agent_fd)]);
    push(&[
        "-device",
        &format!("virtserialport,chardev=agent,name={PORT_NAME}"),
    ]);
    for (index, filesystem) in args.filesystems.iter().enumerate() {
        push(&[
            "-chardev",
            &format!("socket,id=fs{index},fd={}", filesystem.fd),
            "-device",
            &format!(
                "vhost-user-fs-device,chardev=fs{index},tag={}",
                filesystem.tag
            ),
        ]);
    }
    if args.free_page_reporting {
        push(&["-device", "virtio-balloon-device,free-page-reporting=on"]);
    }
    for (index, network) in args.networks.iter().enumerate() {
        push(&[
            "-netdev",
            &format!("tap,id=net{index},fd={}", network.tap_fd),
            "-device",
            &format!("virtio-net-device,netdev=net{index},mac={}", network.mac),
        ]);
    }
    push(&["-chardev", &format!("socket,id=qmp,fd={}", args.qmp_fd)]);
    push(&["-mon", "chardev=qmp,mode=control"]);
    let mut console = OsString::from("file,id=console,path=");
    console.push(args.console_log.as_os_str());
    out.extend([
        "-kernel".into(),
        args.kernel.as_os_str().to_owned(),
        "-initrd".into(),
        args.initramfs.as_os_str().to_owned(),
        "-chardev".into(),
        console,
    ]);
    out
}

/// A running QEMU, killed and reaped when dropped.
pub type QemuProcess = ChildProcess;

/// Starts `qemu` with `arguments`, passing it `inherit` (the descriptors the
/// arguments name) and nothing else; its stderr goes to `log`. It dies with
/// the thread that started it ([`ChildProcess::spawn`]).
pub fn spawn(
    qemu: &Path,
    arguments: &[OsString],
    inherit: &[RawFd],
    log: &Path,
) -> Result<QemuProcess, QemuError> {
    let stderr = fs::File::create(log).map_err(|source| QemuError::Log {
        path: log.to_path_buf(),
        source,
    })?;
    let mut command = Command::new(qemu);
    command
        .args(arguments)
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(stderr.into_parts().0));
    ChildProcess::spawn(&mut command, inherit).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            QemuError::NotInstalled
        } else {
            QemuError::Spawn {
                qemu: qemu.to_path_buf(),
                source,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The arguments as one line, to look for runs of them.
    fn command_line(args: &[std::ffi::OsString]) -> String {
        args.iter()
            .map(|arg| arg.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn command_line_names_every_device_and_descriptor() {
        let args = arguments(&QemuArgs {
            accelerator: Accelerator::Tcg,
            memory_mib: 256,
            cpus: 1,
            kernel: Path::new("/cache/vmlinux"),
            initramfs: Path::new("/vm/initramfs.cpio"),
            console_log: Path::new("/vm/console.log"),
            agent_fd: 7,
            qmp_fd: 9,
            kernel_cmdline_extra: &["loglevel=7".to_string()],
            filesystems: &[],
            networks: &[
                NetworkDevice {
                    tap_fd: 13,
                    mac: "06:42:0a:58:00:02".into(),
                },
                NetworkDevice {
                    tap_fd: 14,
                    mac: "06:42:0a:59:00:02".into(),
                },
            ],
            free_page_reporting: true,
        });
        let line = command_line(&args);
        for expected in [
            "-M microvm,accel=tcg,acpi=on,pcie=off",
            "-m 256 -smp 1",
            "-nodefaults",
            "-no-reboot",
            "-kernel /cache/vmlinux -initrd /vm/initramfs.cpio",
            "tsc=reliable loglevel=7",
            "-serial chardev:console",
            "-chardev file,id=console,path=/vm/console.log",
            "-chardev socket,id=agent,fd=7 -device virtserialport,chardev=agent,name=org.berth.agent",
            "-chardev socket,id=qmp,fd=9 -mon chardev=qmp,mode=control",
            "-netdev tap,id=net0,fd=13 -device virtio-net-device,netdev=net0,mac=06:42:0a:58:00:02",
            "-netdev tap,id=net1,fd=14 -device virtio-net-device,netdev=net1,mac=06:42:0a:59:00:02",
            "-device virtio-balloon-device,free-page-reporting=on",
        ] {
            assert!(line.contains(expected), "{expected:?} missing from {line}");
        }
        let rate = crate::tsc::host_tsc_khz().unwrap();
        assert!(line.contains(&format!("tsc_early_khz={rate} ")), "{line}");
        assert!(!kernel_cmdline(Accelerator::Kvm).contains("tsc_early_khz"));
        assert!(!line.contains("memory-backend"), "{line}");
    }

    #[test]
    fn shares_get_devices_and_shared_memory() {
        let filesystems = [
            FilesystemDevice {
                tag: "root".into(),
                fd: 11,
            },
            FilesystemDevice {
                tag: "share1".into(),
                fd: 12,
            },
        ];
        let args = arguments(&QemuArgs {
            accelerator: Accelerator::Tcg,
            memory_mib: 512,
            cpus: 1,
            kernel: Path::new("/k"),
            initramfs: Path::new("/i"),
            console_log: Path::new("/c"),
            agent_fd: 7,
            qmp_fd: 9,
            kernel_cmdline_extra: &[],
            filesystems: &filesystems,
            networks: &[],
            free_page_reporting: false,
        });
        let line = command_line(&args);
        for expected in [
            "-object memory-backend-memfd,id=mem,size=512M,share=on",
            "-M microvm,accel=tcg,acpi=on,pcie=off,memory-backend=mem",
            "-m 512",
            "-chardev socket,id=fs0,fd=11 -device vhost-user-fs-device,chardev=fs0,tag=root",
            "-chardev socket,id=fs1,fd=12 -device vhost-user-fs-device,chardev=fs1,tag=share1",
        ] {
            assert!(line.contains(expected), "{expected:?} missing from {line}");
        }
        assert!(!line.contains("virtio-balloon"), "{line}");
    }
}
