//! berth's microVM backend: one QEMU `microvm` per container, Debian's
//! kernel, an initramfs berth writes itself, and berth's agent as the
//! guest's `/init` (docs/VM.md).
//!
//! - [`kernel`]: the guest kernel from an extracted Debian package, made
//!   bootable fast (the uncompressed `vmlinux`, cached).
//! - [`modules`], [`cpio`], [`initramfs`]: the initramfs: the agent, the
//!   virtio modules in load order, the agent's configuration.
//! - [`accel`], [`qemu`], [`qmp`], [`child`]: the accelerator, QEMU's
//!   command line and process, its control protocol, the processes berth
//!   starts for a VM.
//! - [`virtiofs`]: host directories in the guest, one virtiofsd each.
//! - [`protocol`]: what host and agent say to each other.
//! - [`dns_relay`]: the embedded DNS of a user-defined network, through the agent.
//! - [`vm`]: the host side: boot, run, pause, shut down.
//! - [`guest`]: the kernel and initramfs a container's VM boots, cached.
//! - [`agent`]: the guest side, PID 1 in the VM.

pub mod accel;
pub mod agent;
pub mod child;
pub mod cpio;
pub mod dns_relay;
pub mod flow;
pub mod guest;
pub mod initramfs;
pub mod kernel;
pub mod modules;
pub mod protocol;
pub mod qemu;
pub mod qmp;
pub mod tsc;
pub mod virtiofs;
pub mod vm;

pub use accel::{Accelerator, AcceleratorChoice};
pub use initramfs::{Compression, InitramfsConfig};
pub use kernel::GuestKernel;
pub use protocol::{GuestMount, GuestRoot, RunRequest};
pub use virtiofs::{CachePolicy, Share};
pub use vm::{
    BootTimes, Event, Exit, OutputStream, Relay, RunOutput, Shutdown, Vm, VmConfig, VmError,
};
