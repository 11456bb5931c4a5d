//! The guest's initramfs: `/init` (the agent), the kernel modules it loads,
//! its configuration, and for now the root the command runs in.
//!
//! Layout:
//!
//! ```text
//! init                     the agent (a static binary: berth itself later)
//! berth/agent.json         AgentConfig: the port name, the modules in load order
//! berth/modules/NAME.ko    each module, decompressed
//! dev/console              c 5 1: the kernel opens it for /init's stdio before
//!                          anything is mounted (no devtmpfs automount in Debian)
//! proc/ sys/ tmp/ root/    mount points and a writable /tmp
//! mnt/                     where the agent mounts the container's root share
//! bin/busybox + links      the "image" of this first slice (Debian's busybox-static
//!                          and its applets): the root is the initramfs itself until
//!                          the container root comes over virtiofs
//! ```
//!
//! Uncompressed by default: the kernel then only copies the archive into its
//! rootfs, while gzip would make a TCG guest inflate it first (measured in
//! docs/VM.md).

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use fs_err as fs;

use crate::agent::{AgentConfig, PowerOff, AGENT_CONFIG_PATH};
use crate::cpio::CpioWriter;
use crate::kernel::GuestKernel;
use crate::modules::{read_module, ModuleError, ModuleIndex};
use crate::protocol::PORT_NAME;

/// What the agent needs to reach the host: the virtio-mmio transport and the
/// virtio-serial port driver (virtio and virtio_ring come as dependencies).
pub const AGENT_MODULES: &[&str] = &["virtio_mmio", "virtio_console"];

/// What the container's files need: virtio-fs (`fuse` comes as its
/// dependency). Loaded at boot, so that a warm VM has paid for them.
pub const VIRTIOFS_MODULES: &[&str] = &["virtiofs"];

/// The guest's network card (`net_failover` and `failover` come as its
/// dependencies); loaded at boot, a VM without a card pays ≈ nothing more.
pub const NETWORK_MODULES: &[&str] = &["virtio_net"];

/// Free page reporting (see [`crate::qemu`]): the guest hands the pages it
/// frees back to the host. `CONFIG_PAGE_REPORTING` is built into Debian's
/// kernel; the driver is a module (`virtio` and `virtio_ring` as its
/// dependencies, already there).
pub const BALLOON_MODULES: &[&str] = &["virtio_balloon"];

/// Chooses the guest's /init: `small` (the default), `berth`, or a path.
pub const AGENT_ENV: &str = "BERTH_VM_AGENT";

/// Which program becomes the guest's `/init`.
///
/// berth itself can be the agent (its `main` runs it when it is PID 1 with
/// `/berth/agent.json` present), but it makes the initramfs 16.5 MB instead
/// of 2.2 MB, which a TCG guest unpacks ≈ 0.1–0.2 s slower at every boot
/// (docs/VM.md) against a 1 s cold target, so the small agent is the
/// default and `BERTH_VM_AGENT=berth` the switch. Under KVM the difference
/// is a memcpy of 14 MB.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AgentBinary {
    /// `berth-vm-agent`: the same agent code and nothing else (1.7 MB).
    #[default]
    Small,
    /// The running berth binary.
    Berth,
    Path(PathBuf),
}

/// Where scripts install the small agent when it is not beside berth.
pub const TOOLS_AGENT: &str = "/var/lib/berth-tools/bin/berth-vm-agent";

impl AgentBinary {
    /// `BERTH_VM_AGENT`: `small`, `berth`, or a path; unset or empty is
    /// [`AgentBinary::Small`].
    pub fn from_env() -> AgentBinary {
        Self::from_env_or(AgentBinary::Small)
    }

    /// As [`AgentBinary::from_env`], with `default` when the variable is unset.
    pub fn from_env_or(default: AgentBinary) -> AgentBinary {
        match std::env::var_os(AGENT_ENV) {
            None => default,
            Some(value) => match value.to_str() {
                Some("") | Some("small") => AgentBinary::Small,
                Some("berth") => AgentBinary::Berth,
                _ => AgentBinary::Path(PathBuf::from(value)),
            },
        }
    }

    /// The file to pack: the running binary for [`AgentBinary::Berth`];
    /// `berth-vm-agent` beside the running binary (or one directory up, as
    /// cargo lays out tests and examples), else [`TOOLS_AGENT`], for
    /// [`AgentBinary::Small`].
    pub fn path(&self) -> Result<PathBuf, InitramfsError> {
        let exe = std::env::current_exe().map_err(|source| InitramfsError::Read {
            path: PathBuf::from("/proc/self/exe"),
            source,
        });
        match self {
            AgentBinary::Path(path) => Ok(path.clone()),
            // Not `current_exe`: a sealed berth runs from a detached
            // read-only mount of its binary, which that names "/"; the
            // magic link opens (and stats) the binary itself.
            AgentBinary::Berth => Ok(PathBuf::from("/proc/self/exe")),
            AgentBinary::Small => {
                let exe = exe?;
                let mut looked: Vec<PathBuf> = exe
                    .ancestors()
                    .skip(1)
                    .take(2)
                    .map(|dir| dir.join("berth-vm-agent"))
                    .collect();
                looked.push(PathBuf::from(TOOLS_AGENT));
                match looked.iter().find(|path| path.is_file()) {
                    Some(path) => Ok(path.clone()),
                    None => Err(InitramfsError::NoAgent { looked }),
                }
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    #[default]
    None,
    Gzip,
}

/// What goes into the initramfs.
#[derive(Debug, Clone)]
pub struct InitramfsConfig {
    /// The static binary that becomes `/init`.
    pub agent: PathBuf,
    /// The kernel whose modules are packed.
    pub kernel: GuestKernel,
    /// Modules to load (with their dependencies), in this order.
    pub modules: Vec<String>,
    /// A static busybox to install with its applet links, as the root the
    /// commands run in.
    pub busybox: Option<PathBuf>,
    pub compression: Compression,
    pub power_off: PowerOff,
}

impl InitramfsConfig {
    pub fn new(agent: PathBuf, kernel: GuestKernel) -> InitramfsConfig {
        InitramfsConfig {
            agent,
            kernel,
            modules: AGENT_MODULES
                .iter()
                .chain(VIRTIOFS_MODULES)
                .chain(NETWORK_MODULES)
                .chain(BALLOON_MODULES)
                .map(|name| name.to_string())
                .collect(),
            busybox: None,
            compression: Compression::None,
            power_off: PowerOff::default(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum InitramfsError {
    #[error("failed to read {path:?}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path:?} is not a statically linked executable (it would find no loader in the guest)"
    )]
    NotStatic { path: PathBuf },
    #[error("failed to list the applets of {busybox:?}")]
    Applets {
        busybox: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no berth-vm-agent at {looked:?} (cargo build -p berth-vm --bins), or set {AGENT_ENV}=berth")]
    NoAgent { looked: Vec<PathBuf> },
    #[error(transparent)]
    Module(#[from] ModuleError),
    #[error("failed to write the initramfs")]
    Write {
        #[source]
        source: std::io::Error,
    },
    #[error("failed to write the initramfs {path:?}")]
    WriteFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Builds the archive in memory.
pub fn build(config: &InitramfsConfig) -> Result<Vec<u8>, InitramfsError> {
    let write_error = |source| InitramfsError::Write { source };
    let mut archive = Archive {
        writer: CpioWriter::new(Vec::new()),
        directories: BTreeSet::new(),
    };

    archive.directory("dev", 0o755).map_err(write_error)?;
    archive
        .writer
        .char_device("dev/console", 0o600, 5, 1)
        .map_err(write_error)?;
    for (directory, mode) in [
        ("proc", 0o555),
        ("sys", 0o555),
        ("tmp", 0o1777),
        ("root", 0o700),
        ("mnt", 0o755),
    ] {
        archive.directory(directory, mode).map_err(write_error)?;
    }

    let agent = strip(read_static_executable(&config.agent)?);
    archive
        .writer
        .file("init", 0o755, &agent)
        .map_err(write_error)?;

    let index = ModuleIndex::load(&config.kernel.modules)?;
    let names: Vec<&str> = config.modules.iter().map(String::as_str).collect();
    let mut module_paths = Vec::new();
    archive
        .directory("berth/modules", 0o755)
        .map_err(write_error)?;
    for module in index.resolve(&names)? {
        let guest_path = format!("berth/modules/{}.ko", module.name);
        archive
            .writer
            .file(&guest_path, 0o644, &read_module(&module.path)?)
            .map_err(write_error)?;
        module_paths.push(format!("/{guest_path}"));
    }
    let agent_config = AgentConfig {
        port: PORT_NAME.to_string(),
        modules: module_paths,
        power_off: config.power_off,
    };
    let json = serde_json::to_vec_pretty(&agent_config).expect("the agent config serializes");
    archive
        .writer
        .file(AGENT_CONFIG_PATH.trim_start_matches('/'), 0o644, &json)
        .map_err(write_error)?;

    if let Some(busybox) = &config.busybox {
        archive.busybox(busybox)?;
    }

    let cpio = archive.writer.finish().map_err(write_error)?;
    match config.compression {
        Compression::None => Ok(cpio),
        Compression::Gzip => {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            encoder.write_all(&cpio).map_err(write_error)?;
            encoder.finish().map_err(write_error)
        }
    }
}

/// Builds the archive into `path` (through a temporary file and a rename).
pub fn write(config: &InitramfsConfig, path: &Path) -> Result<(), InitramfsError> {
    let bytes = build(config)?;
    crate::kernel::write_atomically(path, &bytes).map_err(|source| InitramfsError::WriteFile {
        path: path.to_path_buf(),
        source,
    })
}

struct Archive {
    writer: CpioWriter<Vec<u8>>,
    directories: BTreeSet<String>,
}

impl Archive {
    /// Writes `path` and each missing parent.
    fn directory(&mut self, path: &str, mode: u32) -> std::io::Result<()> {
        let mut prefix = String::new();
        for component in path.split('/').filter(|component| !component.is_empty()) {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(component);
            if self.directories.insert(prefix.clone()) {
                let mode = if prefix == path { mode } else { 0o755 };
                self.writer.directory(&prefix, mode)?;
            }
        }
        Ok(())
    }

    fn busybox(&mut self, busybox: &Path) -> Result<(), InitramfsError> {
        let write_error = |source| InitramfsError::Write { source };
        let binary = strip(read_static_executable(busybox)?);
        self.directory("bin", 0o755).map_err(write_error)?;
        self.writer
            .file("bin/busybox", 0o755, &binary)
            .map_err(write_error)?;
        // The applets busybox was built with, as the paths it expects
        // (`usr/bin/awk`, `sbin/reboot`).
        let output = Command::new(busybox)
            .arg("--list-full")
            .output()
            .map_err(|source| InitramfsError::Applets {
                busybox: busybox.into(),
                source,
            })?;
        if !output.status.success() {
            let source = std::io::Error::other(format!("busybox --list-full: {}", output.status));
            return Err(InitramfsError::Applets {
                busybox: busybox.into(),
                source,
            });
        }
        let list = String::from_utf8_lossy(&output.stdout);
        let mut links = BTreeSet::new();
        for applet in list.lines().map(str::trim).filter(|line| !line.is_empty()) {
            let applet = applet.trim_start_matches('/');
            // Never let an applet shadow the agent or the binary itself.
            if applet == "bin/busybox" || applet == "init" || applet.contains("..") {
                continue;
            }
            links.insert(applet.to_string());
        }
        for link in links {
            if let Some((parent, _)) = link.rsplit_once('/') {
                self.directory(parent, 0o755).map_err(write_error)?;
            }
            self.writer
                .symlink(&link, "/bin/busybox")
                .map_err(write_error)?;
        }
        Ok(())
    }
}

/// Reads an ELF executable and checks it has no program interpreter
/// (`PT_INTERP`): the guest has no dynamic loader or libraries. A static-pie
/// (berth's link mode) has none either.
fn read_static_executable(path: &Path) -> Result<Vec<u8>, InitramfsError> {
    let bytes = fs::read(path).map_err(|source| InitramfsError::Read {
        path: path.into(),
        source,
    })?;
    if !is_static_elf(&bytes) {
        return Err(InitramfsError::NotStatic {
            path: path.to_path_buf(),
        });
    }
    Ok(bytes)
}

/// Drops what a program does not need to run: everything past the end of
/// its last loadable part, which is where linkers put the non-allocated
/// sections (debug information, symbols), and the section headers that
/// describe them. The kernel loads an ELF by its program headers only. A
/// debug build of the agent goes from ≈ 15 MB to ≈ 5 MB, and every MB is
/// unpacked by the guest at each boot (≈ 10 ms per MB under TCG).
fn strip(mut bytes: Vec<u8>) -> Vec<u8> {
    let u16_at = |bytes: &[u8], at: usize| {
        bytes
            .get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let u64_at = |bytes: &[u8], at: usize| {
        bytes
            .get(at..at + 8)
            .and_then(|b| b.first_chunk::<8>())
            .map(|b| u64::from_le_bytes(*b))
    };
    let (Some(program_headers), Some(entry_size), Some(count)) = (
        u64_at(&bytes, 0x20),
        u16_at(&bytes, 0x36),
        u16_at(&bytes, 0x38),
    ) else {
        return bytes;
    };
    let table_end = program_headers + u64::from(entry_size) * u64::from(count);
    let mut end = table_end.max(0x40);
    for index in 0..u64::from(count) {
        let at = (program_headers + index * u64::from(entry_size)) as usize;
        let (Some(offset), Some(size)) = (u64_at(&bytes, at + 0x08), u64_at(&bytes, at + 0x20))
        else {
            return bytes;
        };
        end = end.max(offset + size);
    }
    if end >= bytes.len() as u64 {
        return bytes;
    }
    bytes.truncate(end as usize);
    // e_shoff, e_shnum, e_shstrndx: no section headers any more.
    bytes[0x28..0x30].fill(0);
    bytes[0x3c..0x40].fill(0);
    bytes
}

fn is_static_elf(bytes: &[u8]) -> bool {
    const PT_INTERP: u32 = 3;
    let u16_at = |at: usize| {
        bytes
            .get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let u32_at = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let u64_at = |at: usize| {
        bytes
            .get(at..at + 8)
            .and_then(|b| b.first_chunk::<8>())
            .map(|b| u64::from_le_bytes(*b))
    };
    if bytes.get(..6) != Some(b"\x7fELF\x02\x01") {
        return false;
    }
    let (Some(program_headers), Some(entry_size), Some(count)) =
        (u64_at(0x20), u16_at(0x36), u16_at(0x38))
    else {
        return false;
    };
    (0..usize::from(count)).all(|index| {
        let at = program_headers as usize + index * usize::from(entry_size);
        matches!(u32_at(at), Some(kind) if kind != PT_INTERP)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn tells_static_from_dynamic_executables() {
        let me = fs::read(std::env::current_exe().unwrap()).unwrap();
        // The workspace links everything with crt-static (.cargo/config.toml).
        assert!(is_static_elf(&me));
        if let Ok(ls) = fs::read("/bin/ls") {
            assert!(!is_static_elf(&ls), "Debian's /bin/ls is dynamic");
        }
        assert!(!is_static_elf(b"#!/bin/sh\n"));
    }

    #[test]
    fn a_stripped_program_still_runs() {
        let me = std::env::current_exe().unwrap();
        let original = fs::read(&me).unwrap();
        let stripped = strip(original.clone());
        assert!(
            stripped.len() < original.len(),
            "a test binary has debug information"
        );
        assert!(is_static_elf(&stripped));
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("stripped");
        fs::write(&copy, &stripped).unwrap();
        fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
        // The test harness lists its tests and exits 0: it ran.
        let output = Command::new(&copy).arg("--list").output().unwrap();
        assert!(output.status.success(), "{output:?}");
        assert!(String::from_utf8_lossy(&output.stdout).contains("a_stripped_program_still_runs"));
        // Stripping twice changes nothing more; a non-ELF is left alone.
        assert_eq!(strip(stripped.clone()), stripped);
        assert_eq!(strip(b"#!/bin/sh\n".to_vec()), b"#!/bin/sh\n");
    }

    #[test]
    fn the_small_agent_is_the_default_and_berth_a_switch() {
        assert_eq!(AgentBinary::default(), AgentBinary::Small);
        // Tests run from target/<triple>/debug/deps; cargo puts the agent in
        // debug/ when it builds this package's binaries (it does for tests).
        match AgentBinary::Small.path() {
            Ok(path) => assert!(path.ends_with("berth-vm-agent"), "{path:?}"),
            Err(error) => assert!(matches!(error, InitramfsError::NoAgent { .. }), "{error}"),
        }
        // The running binary through its magic link (a sealed berth runs
        // from a detached mount that `current_exe` names "/").
        let berth = AgentBinary::Berth.path().unwrap();
        assert_eq!(berth, PathBuf::from("/proc/self/exe"));
        assert_eq!(
            fs_err::metadata(&berth).unwrap().len(),
            fs_err::metadata(std::env::current_exe().unwrap())
                .unwrap()
                .len()
        );
    }

    #[test]
    fn directories_come_before_what_they_hold_and_once() {
        let mut archive = Archive {
            writer: CpioWriter::new(Vec::new()),
            directories: BTreeSet::new(),
        };
        archive.directory("usr/bin", 0o755).unwrap();
        archive.directory("usr/sbin", 0o700).unwrap();
        archive.directory("usr", 0o755).unwrap();
        let entries = crate::cpio::tests::parse(&archive.writer.finish().unwrap());
        let names: Vec<_> = entries
            .iter()
            .map(|entry| (entry.0.as_str(), entry.1))
            .collect();
        assert_eq!(
            names,
            [
                ("usr", 0o040_755),
                ("usr/bin", 0o040_755),
                ("usr/sbin", 0o040_700)
            ]
        );
    }
}
