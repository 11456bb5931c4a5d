//! VM containers (`berth run --isolation=vm`, issue 16) measured beside the
//! namespace ones: whether this machine can run them at all, with which
//! accelerator, and the engine label of their rows (`berth-vm (TCG)`).
//!
//! The checks are berth-vm's own (the same functions the VM shim calls), so
//! a row is skipped for the reason a `run --isolation=vm` would fail with:
//! no QEMU, no guest kernel configured (`BERTH_VM_KERNEL_DIR`), no
//! virtiofsd. The accelerator is what berth-vm's `accel::detect` chooses:
//! KVM, or TCG with the reason (a PVM host's `/dev/kvm` named as such).

use std::path::PathBuf;

use berth_vm::accel::{self, Accelerator, KvmFacts};

use crate::options::BerthBinary;

/// A machine that can run VM containers.
#[derive(Clone, Debug)]
pub struct VmSupport {
    /// The engine label of every VM row: `berth-vm (TCG)`, `berth-vm (KVM)`.
    pub label: String,
    pub accelerator: Accelerator,
    /// Why this accelerator (berth-vm's words).
    pub reason: String,
    /// Where the shim caches the guest kernel and initramfs (`BERTH_VM_CACHE`,
    /// else `<root>/vm`).
    pub cache: PathBuf,
}

impl VmSupport {
    /// `TCG`, `KVM`, or `TCG (PVM host)`.
    pub fn accelerator_name(&self) -> &'static str {
        accelerator_name(self.accelerator, self.reason.contains("PVM"))
    }
}

fn accelerator_name(accelerator: Accelerator, pvm: bool) -> &'static str {
    match (accelerator, pvm) {
        (Accelerator::Kvm, _) => "KVM",
        (Accelerator::Tcg, true) => "TCG (PVM host)",
        (Accelerator::Tcg, false) => "TCG",
    }
}

/// Whether the berth under test can run VM containers here, or why not.
pub fn probe(berth: &BerthBinary) -> Result<VmSupport, String> {
    let chain = |error: &dyn std::error::Error| crate::image::chain(error);
    berth_vm::qemu::find_qemu().map_err(|error| chain(&error))?;
    let kernel_dir = berth_vm::kernel::kernel_dir_from_env().map_err(|error| chain(&error))?;
    if !kernel_dir.join("boot").is_dir() {
        return Err(format!(
            "the guest kernel directory {} ({}) holds no boot/ (an extracted Debian \
             linux-image package: scripts/vm-kernel.sh DIR)",
            kernel_dir.display(),
            berth_vm::kernel::KERNEL_DIR_ENV
        ));
    }
    berth_vm::virtiofs::find_virtiofsd().map_err(|error| chain(&error))?;
    let choice = accel::detect();
    let pvm = choice.accelerator == Accelerator::Tcg && KvmFacts::probe().pvm;
    let cache = match std::env::var_os("BERTH_VM_CACHE") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => berth.root.join("vm"),
    };
    Ok(VmSupport {
        label: format!(
            "berth-vm ({})",
            match choice.accelerator {
                Accelerator::Kvm => "KVM",
                Accelerator::Tcg => "TCG",
            }
        ),
        accelerator: choice.accelerator,
        reason: if pvm && !choice.reason.contains("PVM") {
            format!("{} (the host's /dev/kvm is PVM)", choice.reason)
        } else {
            choice.reason
        },
        cache,
    })
}

/// The skip reason every VM row carries when VMs cannot run here.
pub fn skip_reason(why: &str) -> String {
    format!("no VM containers on this machine: {why}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accelerators_are_named() {
        assert_eq!(accelerator_name(Accelerator::Kvm, false), "KVM");
        assert_eq!(accelerator_name(Accelerator::Tcg, true), "TCG (PVM host)");
        assert_eq!(accelerator_name(Accelerator::Tcg, false), "TCG");
    }

    #[test]
    fn this_machine_gets_an_answer() {
        let berth = BerthBinary {
            program: "/usr/bin/berth".into(),
            root: "/var/lib/berth".into(),
            run_root: "/run/berth".into(),
        };
        match probe(&berth) {
            Ok(support) => {
                assert!(support.label.starts_with("berth-vm ("), "{support:?}");
                assert!(!support.reason.is_empty());
            }
            Err(why) => assert!(!why.is_empty()),
        }
    }
}
