//! Architectures, kernel versions and the host a filter is compiled for.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::SeccompError;

/// `AUDIT_ARCH_*` from `<linux/audit.h>` (not in libc): the ELF machine plus the
/// 64-bit and little-endian flag bits, as the kernel puts them in `seccomp_data.arch`.
pub const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
/// `EM_386` with the little-endian flag: what an `int 0x80` or i386 binary presents.
pub const AUDIT_ARCH_I386: u32 = 3 | 0x4000_0000;
/// x32 syscalls arrive as `AUDIT_ARCH_X86_64` with this bit set in the number.
pub const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// An architecture a filter can have a section for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arch {
    /// Native 64-bit x86.
    X86_64,
    /// i386, reached from an x86_64 host by 32-bit binaries or `int 0x80`.
    X86,
}

impl Arch {
    /// The value the kernel puts in `seccomp_data.arch` for this architecture.
    pub fn audit_value(self) -> u32 {
        match self {
            Arch::X86_64 => AUDIT_ARCH_X86_64,
            Arch::X86 => AUDIT_ARCH_I386,
        }
    }

    /// The libseccomp name used in profiles' `architectures` and `archMap`.
    pub fn scmp_name(self) -> &'static str {
        match self {
            Arch::X86_64 => "SCMP_ARCH_X86_64",
            Arch::X86 => "SCMP_ARCH_X86",
        }
    }

    /// The name Docker matches against `includes.arches`/`excludes.arches` (Go's
    /// GOARCH turned into libseccomp's native name: "amd64" for x86_64).
    pub fn docker_name(self) -> &'static str {
        match self {
            Arch::X86_64 => "amd64",
            Arch::X86 => "x86",
        }
    }

    pub(crate) fn from_scmp_name(name: &str) -> Option<Arch> {
        match name {
            "SCMP_ARCH_X86_64" => Some(Arch::X86_64),
            "SCMP_ARCH_X86" => Some(Arch::X86),
            _ => None,
        }
    }

    /// The architecture of this build, if berth can build filters for it.
    pub fn native() -> Option<Arch> {
        if cfg!(target_arch = "x86_64") {
            Some(Arch::X86_64)
        } else {
            None
        }
    }
}

/// A kernel's "version.major" (e.g. 4.8), as Docker's `minKernel` compares them: the
/// minor revision and distribution suffixes are ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KernelVersion {
    pub version: u32,
    pub major: u32,
}

impl KernelVersion {
    pub const fn new(version: u32, major: u32) -> KernelVersion {
        KernelVersion { version, major }
    }

    /// Parses a `uname -r` release such as "6.1.0-18-amd64" or "3.12-1-amd64".
    pub fn from_release(release: &str) -> Result<KernelVersion, SeccompError> {
        let invalid = || SeccompError::KernelVersion {
            release: release.to_owned(),
        };
        let mut parts = release.splitn(3, |c: char| !c.is_ascii_digit());
        let version = parts
            .next()
            .and_then(|part| part.parse().ok())
            .ok_or_else(invalid)?;
        let major = parts
            .next()
            .and_then(|part| part.parse().ok())
            .ok_or_else(invalid)?;
        Ok(KernelVersion { version, major })
    }

    /// The running kernel's version, from uname(2).
    pub fn current() -> Result<KernelVersion, SeccompError> {
        // SAFETY: utsname is plain old data (arrays of c_char); all-zero is a valid value.
        let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
        // SAFETY: `uts` is a valid, writable utsname that outlives the call.
        if unsafe { libc::uname(&mut uts) } != 0 {
            return Err(SeccompError::Uname {
                source: std::io::Error::last_os_error(),
            });
        }
        let release: Vec<u8> = uts
            .release
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        KernelVersion::from_release(&String::from_utf8_lossy(&release))
    }
}

impl fmt::Display for KernelVersion {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}.{}", self.version, self.major)
    }
}

impl FromStr for KernelVersion {
    type Err = SeccompError;

    /// Parses Docker's strict `minKernel` form: exactly "<version>.<major>", not 0.0.
    fn from_str(text: &str) -> Result<KernelVersion, SeccompError> {
        let invalid = || SeccompError::KernelVersion {
            release: text.to_owned(),
        };
        let (version, major) = text.split_once('.').ok_or_else(invalid)?;
        let parsed = KernelVersion {
            version: version.parse().map_err(|_| invalid())?,
            major: major.parse().map_err(|_| invalid())?,
        };
        if parsed == KernelVersion::new(0, 0) {
            return Err(invalid());
        }
        Ok(parsed)
    }
}

impl Serialize for KernelVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for KernelVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<KernelVersion, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// What a profile is resolved against besides capabilities: Docker's rules select on the
/// native architecture and the kernel version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Host {
    pub arch: Arch,
    pub kernel: KernelVersion,
}

impl Host {
    /// This machine: the build's architecture and the running kernel.
    pub fn current() -> Result<Host, SeccompError> {
        let arch = Arch::native().ok_or(SeccompError::UnsupportedArchitecture {
            arch: std::env::consts::ARCH,
        })?;
        Ok(Host {
            arch,
            kernel: KernelVersion::current()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_releases_like_docker() {
        for (release, expected) in [
            ("6.18.44-fc-v782", KernelVersion::new(6, 18)),
            ("3.12-1-amd64", KernelVersion::new(3, 12)),
            ("4.8", KernelVersion::new(4, 8)),
            ("5.10.0-rc5", KernelVersion::new(5, 10)),
        ] {
            assert_eq!(
                KernelVersion::from_release(release).unwrap(),
                expected,
                "{release}"
            );
        }
        assert!(KernelVersion::from_release("linux").is_err());
        assert!(KernelVersion::current().unwrap() >= KernelVersion::new(3, 0));
    }

    #[test]
    fn min_kernel_is_strict() {
        assert_eq!(
            "4.8".parse::<KernelVersion>().unwrap(),
            KernelVersion::new(4, 8)
        );
        for bad in ["4", "4.8.1", "0.0", "a.b", ""] {
            assert!(bad.parse::<KernelVersion>().is_err(), "{bad}");
        }
    }

    #[test]
    fn audit_values_match_linux_audit_h() {
        assert_eq!(AUDIT_ARCH_X86_64, 0xc000_003e);
        assert_eq!(AUDIT_ARCH_I386, 0x4000_0003);
    }
}
