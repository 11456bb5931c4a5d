//! Where a VM container's cold start goes: a VM booted by berth-vm
//! directly, as the VM shim boots one (the same cached kernel and
//! initramfs, berth itself as `/init`, 256 MiB in a shared memfd, one
//! virtio-fs root served by virtiofsd), runs `echo hi` in that root and is
//! powered off. Each phase is a row; what the container's cold run takes
//! beyond their sum is the engine's part (the overlay root, the monitor and
//! the shim, the container's record and cleanup).
//!
//! - QEMU start → guest kernel clock: QEMU loading the kernel and the
//!   kernel's early boot, before its clock runs (the host's `ready` minus
//!   the guest's clock at `Ready`).
//! - guest kernel → `/init`: the kernel's own boot (the guest's
//!   `CLOCK_BOOTTIME` when the agent started, carried in `Ready`).
//! - `/init` → Ready: the agent's mounts, modules and port.
//! - first run: `Run` sent → `Exited` for `echo hi` (the root's mounts
//!   included).
//! - power-off: `Shutdown` sent → QEMU reaped (virtiofsd with it).
//! - the whole: `Vm::boot` called (virtiofsd started first) → QEMU reaped.

use std::time::{Duration, Instant};

use berth_vm::initramfs::AgentBinary;
use berth_vm::{GuestRoot, RunRequest, Share, Vm, VmConfig};

use crate::context::Context;
use crate::report::{Measurement, MetricReport, Unit};
use crate::vm::VmSupport;

pub const QEMU_TO_KERNEL: &str = "VM boot: QEMU start → guest kernel clock";
pub const KERNEL_TO_INIT: &str = "VM boot: guest kernel → /init";
pub const INIT_TO_READY: &str = "VM boot: /init → agent Ready";
pub const FIRST_RUN: &str = "VM: first run of echo (root mounts included)";
pub const POWER_OFF: &str = "VM: power-off → QEMU reaped";
pub const TOTAL: &str = "VM: virtiofsd + boot + run + power-off (berth-vm alone)";
const PHASES: [&str; 6] = [
    QEMU_TO_KERNEL,
    KERNEL_TO_INIT,
    INIT_TO_READY,
    FIRST_RUN,
    POWER_OFF,
    TOTAL,
];

/// The phases of one boot, in [`PHASES`]' order, in seconds.
fn one(config: &VmConfig) -> Result<[f64; 6], String> {
    let chain = |error: &dyn std::error::Error| crate::image::chain(error);
    let started = Instant::now();
    let mut vm = Vm::boot(config).map_err(|error| chain(&error))?;
    let times = vm.boot_times();
    let run_started = Instant::now();
    let output = vm
        .run(&RunRequest {
            args: vec!["/bin/busybox".into(), "echo".into(), "hi".into()],
            env: Vec::new(),
            cwd: "/".into(),
            root: Some(GuestRoot {
                tag: "root".into(),
                read_only: false,
                subdir: None,
            }),
            mounts: Vec::new(),
            container: None,
            stdin: false,
            networks: Vec::new(),
            embedded_dns: false,
        })
        .map_err(|error| chain(&error))?;
    let run = run_started.elapsed();
    if output.exit.code != 0 || output.stdout != b"hi\n" {
        return Err(format!(
            "echo in the VM gave exit {} and {:?} {:?}",
            output.exit.code,
            String::from_utf8_lossy(&output.stdout),
            output.exit.error
        ));
    }
    let stopping = Instant::now();
    vm.shutdown();
    let power_off = stopping.elapsed();
    let seconds = |duration: Duration| duration.as_secs_f64();
    Ok([
        seconds(times.ready.saturating_sub(times.guest_ready)),
        seconds(times.guest_init),
        seconds(times.guest_ready.saturating_sub(times.guest_init)),
        seconds(run),
        seconds(power_off),
        seconds(started.elapsed()),
    ])
}

/// The VM a shim would boot, with `root` as its virtio-fs root.
fn config(context: &mut Context, support: &VmSupport) -> Result<VmConfig, String> {
    let chain = |error: &dyn std::error::Error| crate::image::chain(error);
    // The shim's agent: berth itself, which is this process.
    let guest = berth_vm::guest::prepare(
        &support.cache,
        &AgentBinary::from_env_or(AgentBinary::Berth),
    )
    .map_err(|error| chain(&error))?;
    let busybox = context.images.busybox_binary()?;
    let root = context.scratch_dir("vm-root")?;
    let bin = root.join("bin");
    fs_err::create_dir_all(&bin).map_err(|error| error.to_string())?;
    fs_err::copy(&busybox, bin.join("busybox")).map_err(|error| error.to_string())?;
    let run_dir = context.scratch_dir("vm-run")?;
    let mut config = VmConfig::new(guest.kernel.vmlinux.clone(), guest.initramfs.clone())
        .map_err(|error| chain(&error))?;
    config.accelerator = support.accelerator;
    config.run_dir = run_dir;
    config.shares = vec![Share::root("root", &root, false)];
    Ok(config)
}

/// Adds a row per phase for `support`'s label.
pub fn measure(context: &mut Context, support: &VmSupport, report: &mut MetricReport) {
    let label = support.label.as_str();
    let runs = context.plan.vm_start_runs;
    context.log(format!("start: {label} boot phases"));
    let result = config(context, support).and_then(|config| {
        (0..runs)
            .map(|_| one(&config))
            .collect::<Result<Vec<_>, _>>()
    });
    match result {
        Ok(rounds) => {
            for (index, name) in PHASES.into_iter().enumerate() {
                let mut measurement = Measurement::new(name, label, Unit::Seconds);
                measurement.set_samples(rounds.iter().map(|round| round[index]).collect());
                report.measurements.push(measurement);
            }
        }
        Err(why) => {
            for name in PHASES {
                report.measurements.push(Measurement::skipped(
                    name,
                    label,
                    Unit::Seconds,
                    why.clone(),
                ));
            }
        }
    }
}
