//! /dev: the device nodes and links every Docker container has, then the
//! ones the container was given (`--device`, the host's with `--privileged`).
//! Which of them it may open is the device cgroup's business
//! ([`crate::devices`]); a node here is only a name.

use std::os::unix::fs::symlink;
use std::path::Path;

use nix::sys::stat::{makedev, mknod, Mode, SFlag};

use super::mounts::target_in_root;
use super::{InitFailure, InitResult};
use crate::devices::{DeviceKind, DeviceNode};

use crate::devices::{DEFAULT_LINKS as LINKS, DEFAULT_NODES as DEVICES};

/// Fills the fresh tmpfs at `dev` (the container's /dev under `rootfs`).
pub(super) fn populate(rootfs: &Path, dev: &Path, extra: &[DeviceNode]) -> InitResult<()> {
    for (name, major, minor) in DEVICES {
        let path = dev.join(name);
        mknod(
            &path,
            SFlag::S_IFCHR,
            Mode::from_bits_truncate(0o666),
            makedev(*major, *minor),
        )
        .map_err(|error| InitFailure::nix(&format!("mknod /dev/{name}"), error))?;
        // mknod applies the umask; the nodes must be 0666 regardless.
        nix::sys::stat::fchmodat(
            None,
            &path,
            Mode::from_bits_truncate(0o666),
            nix::sys::stat::FchmodatFlags::FollowSymlink,
        )
        .map_err(|error| InitFailure::nix(&format!("chmod /dev/{name}"), error))?;
    }
    for (name, target) in LINKS {
        // runc links /dev/core only when the host has /proc/kcore.
        if *name == "core" && !Path::new("/proc/kcore").exists() {
            continue;
        }
        #[allow(clippy::disallowed_methods)] // bare errno for InitFailure::io
        symlink(target, dev.join(name))
            .map_err(|error| InitFailure::io(&format!("link /dev/{name}"), error))?;
    }
    for node in extra {
        make_node(rootfs, node)?;
    }
    Ok(())
}

/// Makes `node` at its path in the container with the host node's type,
/// numbers, mode and owner. A path that already exists is left as it is
/// (runc does the same): a default node, or a link such as /dev/ptmx.
fn make_node(rootfs: &Path, node: &DeviceNode) -> InitResult<()> {
    let shown = node.path.display().to_string();
    let (Some(parent), Some(name)) = (node.path.parent(), node.path.file_name()) else {
        return Err(InitFailure::new(
            &format!("create device {shown}"),
            "not a file path",
            libc::EINVAL,
        ));
    };
    // The parent is resolved (and made) inside the root: an image's
    // symlink cannot send the node elsewhere.
    let path = target_in_root(rootfs, parent, false)?.join(name);
    let kind = match node.kind {
        DeviceKind::Block => SFlag::S_IFBLK,
        DeviceKind::Char | DeviceKind::All => SFlag::S_IFCHR,
    };
    let mode = Mode::from_bits_truncate(node.mode);
    match mknod(
        &path,
        kind,
        mode,
        makedev(u64::from(node.major), u64::from(node.minor)),
    ) {
        Ok(()) => {}
        Err(nix::Error::EEXIST) => return Ok(()),
        Err(error) => return Err(InitFailure::nix(&format!("mknod {shown}"), error)),
    }
    nix::unistd::chown(
        &path,
        Some(nix::unistd::Uid::from_raw(node.uid)),
        Some(nix::unistd::Gid::from_raw(node.gid)),
    )
    .map_err(|error| InitFailure::nix(&format!("chown {shown}"), error))?;
    // After chown, which clears set-id bits, and past the umask.
    nix::sys::stat::fchmodat(
        None,
        &path,
        mode,
        nix::sys::stat::FchmodatFlags::FollowSymlink,
    )
    .map_err(|error| InitFailure::nix(&format!("chmod {shown}"), error))
}
