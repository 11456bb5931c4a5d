//! Which accelerator QEMU gets: KVM where it can boot a stock kernel, TCG
//! (QEMU's emulator) otherwise, with one warning saying why.
//!
//! `/dev/kvm` alone does not mean hardware virtualization. On this machine
//! kind it is **PVM** (the `kvm_pvm` module, "Pagetable-based Virtual
//! Machine"): KVM for a host that is itself a guest, without VMX/SVM, which
//! runs only guest kernels built for PVM — Debian's stock kernel does not boot
//! under it. So KVM is chosen only when the device answers
//! `KVM_GET_API_VERSION` with 12 *and* the CPU has vmx or svm with
//! `kvm_intel` or `kvm_amd` loaded; a loaded `kvm_pvm` is named in the reason.
//! `BERTH_VM_ACCEL=kvm|tcg` overrides the choice.

use std::os::fd::AsRawFd;

use fs_err as fs;

pub const ACCEL_ENV: &str = "BERTH_VM_ACCEL";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accelerator {
    Kvm,
    Tcg,
}

impl Accelerator {
    /// The name in QEMU's `-M …,accel=`.
    pub fn qemu_name(self) -> &'static str {
        match self {
            Accelerator::Kvm => "kvm",
            Accelerator::Tcg => "tcg",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceleratorChoice {
    pub accelerator: Accelerator,
    /// Why, in words for a log or `berth info`.
    pub reason: String,
    /// Whether the user chose it (`BERTH_VM_ACCEL`): no warning is due then.
    pub requested: bool,
}

/// What the host says about KVM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvmFacts {
    /// `KVM_GET_API_VERSION` of `/dev/kvm`, or why it could not be asked.
    pub api_version: Result<i32, String>,
    /// `vmx` or `svm` in `/proc/cpuinfo`.
    pub hardware_virtualization: bool,
    /// `kvm_intel` or `kvm_amd`, if loaded.
    pub vendor_module: Option<&'static str>,
    /// `kvm_pvm` is loaded.
    pub pvm: bool,
}

impl KvmFacts {
    pub fn probe() -> KvmFacts {
        let module = |name: &str| std::path::Path::new("/sys/module").join(name).exists();
        let flags = fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find(|line| line.starts_with("flags"))
                    .map(|line| {
                        line.split_whitespace()
                            .map(str::to_string)
                            .collect::<Vec<_>>()
                    })
            })
            .unwrap_or_default();
        KvmFacts {
            api_version: kvm_api_version(),
            hardware_virtualization: flags.iter().any(|flag| flag == "vmx" || flag == "svm"),
            vendor_module: ["kvm_intel", "kvm_amd"]
                .into_iter()
                .find(|name| module(name)),
            pvm: module("kvm_pvm"),
        }
    }
}

fn kvm_api_version() -> Result<i32, String> {
    // KVM_GET_API_VERSION = _IO(KVMIO, 0x00), include/uapi/linux/kvm.h.
    nix::ioctl_none!(kvm_get_api_version, 0xae, 0x00);
    let device = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .map_err(|error| error.to_string())?;
    // SAFETY: the descriptor is an open /dev/kvm, and KVM_GET_API_VERSION
    // takes no argument and writes no memory; it returns the version.
    unsafe { kvm_get_api_version(device.as_raw_fd()) }.map_err(|error| error.to_string())
}

/// The choice for `facts`, or for `requested` (`kvm`, `tcg`) when given.
pub fn decide(facts: &KvmFacts, requested: Option<&str>) -> AcceleratorChoice {
    let choice = |accelerator, reason: String| AcceleratorChoice {
        accelerator,
        reason,
        requested: false,
    };
    let asked = |accelerator: Accelerator| AcceleratorChoice {
        accelerator,
        reason: format!("{ACCEL_ENV}={}", accelerator.qemu_name()),
        requested: true,
    };
    match requested.map(str::trim) {
        Some("kvm") => return asked(Accelerator::Kvm),
        Some("tcg") => return asked(Accelerator::Tcg),
        _ => {}
    }
    match (&facts.api_version, facts.vendor_module) {
        (Ok(12), Some(module)) if facts.hardware_virtualization => {
            choice(Accelerator::Kvm, format!("/dev/kvm with {module}"))
        }
        // PVM explains the rest (its /dev/kvm may not even answer the API
        // version: EINVAL on this machine kind).
        (_, None) if facts.pvm => choice(
            Accelerator::Tcg,
            "/dev/kvm is PVM (kvm_pvm: KVM without VMX/SVM, for a host that is itself a \
             guest), which boots only kernels built as PVM guests, not Debian's"
                .to_string(),
        ),
        (Err(error), _) => choice(Accelerator::Tcg, format!("/dev/kvm is not usable: {error}")),
        (Ok(version), _) if *version != 12 => choice(
            Accelerator::Tcg,
            format!("/dev/kvm has API version {version}, not 12"),
        ),
        _ => choice(
            Accelerator::Tcg,
            "/dev/kvm is there but the CPU shows no vmx/svm or neither kvm_intel nor kvm_amd \
             is loaded"
                .to_string(),
        ),
    }
}

/// Probes the host (once per call). The user's warning about TCG is the
/// engine's (a VM container's create warnings), which says why.
pub fn detect() -> AcceleratorChoice {
    let requested = std::env::var(ACCEL_ENV).ok();
    let choice = decide(&KvmFacts::probe(), requested.as_deref());
    tracing::debug!(accelerator = ?choice.accelerator, reason = %choice.reason, "accelerator");
    choice
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> KvmFacts {
        KvmFacts {
            api_version: Ok(12),
            hardware_virtualization: true,
            vendor_module: Some("kvm_intel"),
            pvm: false,
        }
    }

    #[test]
    fn kvm_only_with_hardware_virtualization() {
        assert_eq!(decide(&facts(), None).accelerator, Accelerator::Kvm);
        let pvm = KvmFacts {
            hardware_virtualization: false,
            vendor_module: None,
            pvm: true,
            ..facts()
        };
        let choice = decide(&pvm, None);
        assert_eq!(choice.accelerator, Accelerator::Tcg);
        assert!(choice.reason.contains("PVM"), "{}", choice.reason);
        // This machine kind's PVM device does not even answer the version:
        // PVM is still the reason given.
        let silent_pvm = KvmFacts {
            api_version: Err("EINVAL: Invalid argument".into()),
            ..pvm.clone()
        };
        assert!(decide(&silent_pvm, None).reason.contains("PVM"));
        let missing = KvmFacts {
            api_version: Err("No such file or directory".into()),
            ..facts()
        };
        assert!(decide(&missing, None).reason.contains("not usable"));
        let no_module = KvmFacts {
            vendor_module: None,
            ..facts()
        };
        assert_eq!(decide(&no_module, None).accelerator, Accelerator::Tcg);
    }

    #[test]
    fn the_environment_overrides() {
        assert_eq!(decide(&facts(), Some("tcg")).accelerator, Accelerator::Tcg);
        let pvm = KvmFacts {
            hardware_virtualization: false,
            vendor_module: None,
            pvm: true,
            ..facts()
        };
        assert_eq!(decide(&pvm, Some("kvm")).accelerator, Accelerator::Kvm);
        assert_eq!(decide(&pvm, Some("bogus")).accelerator, Accelerator::Tcg);
    }

    #[test]
    fn this_host_gets_an_answer() {
        let choice = decide(&KvmFacts::probe(), None);
        assert!(!choice.reason.is_empty());
    }
}
