//! What a container's VM boots, made once and cached: the guest kernel
//! (the uncompressed `vmlinux` of `BERTH_VM_KERNEL_DIR`'s package) and an
//! initramfs whose `/init` is the agent, keyed by the kernel's banner, the
//! modules it packs and the agent binary's identity (device, inode, size,
//! modification time), so a rebuilt berth, a new kernel package or another
//! module list gets a new one and concurrent
//! starts share one file (each writes a private temporary and renames it).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::initramfs::{self, AgentBinary, InitramfsConfig, InitramfsError};
use crate::kernel::{self, GuestKernel, KernelError};

/// A kernel and initramfs ready to boot.
#[derive(Debug, Clone)]
pub struct PreparedGuest {
    pub kernel: GuestKernel,
    pub initramfs: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum GuestError {
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error(transparent)]
    Initramfs(#[from] InitramfsError),
}

/// The kernel of `BERTH_VM_KERNEL_DIR` and an initramfs with `agent` as
/// `/init`, under `cache` (`kernels/`, `initramfs-<key>.cpio`).
pub fn prepare(cache: &Path, agent: &AgentBinary) -> Result<PreparedGuest, GuestError> {
    let kernel = kernel::prepare(&kernel::kernel_dir_from_env()?, &cache.join("kernels"))?;
    let agent = agent.path()?;
    let metadata = fs_err::metadata(&agent).map_err(|source| InitramfsError::Read {
        path: agent.clone(),
        source,
    })?;
    let config = InitramfsConfig::new(agent.clone(), kernel.clone());
    let mut key = kernel.banner.as_bytes().to_vec();
    for module in &config.modules {
        key.push(0);
        key.extend_from_slice(module.as_bytes());
    }
    for number in [
        metadata.dev(),
        metadata.ino(),
        metadata.size(),
        metadata.mtime() as u64,
        metadata.mtime_nsec() as u64,
    ] {
        key.extend_from_slice(&number.to_le_bytes());
    }
    let initramfs = cache.join(format!("initramfs-{:016x}.cpio", kernel::fnv1a(&key)));
    if !initramfs.is_file() {
        initramfs::write(&config, &initramfs)?;
    }
    Ok(PreparedGuest { kernel, initramfs })
}
