//! /dev: the device nodes and links every Docker container has.

use std::os::unix::fs::symlink;
use std::path::Path;

use nix::sys::stat::{makedev, mknod, Mode, SFlag};

use super::{InitFailure, InitResult};

/// (name, major, minor): Docker's default devices, all mode 0666.
const DEVICES: &[(&str, u64, u64)] = &[
    ("null", 1, 3),
    ("zero", 1, 5),
    ("full", 1, 7),
    ("random", 1, 8),
    ("urandom", 1, 9),
    ("tty", 5, 0),
];

const LINKS: &[(&str, &str)] = &[
    ("fd", "/proc/self/fd"),
    ("stdin", "/proc/self/fd/0"),
    ("stdout", "/proc/self/fd/1"),
    ("stderr", "/proc/self/fd/2"),
    ("ptmx", "pts/ptmx"),
    ("core", "/proc/kcore"),
];

pub(super) fn populate(dev: &Path, _privileged: bool) -> InitResult<()> {
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
        symlink(target, dev.join(name))
            .map_err(|error| InitFailure::io(&format!("link /dev/{name}"), error))?;
    }
    Ok(())
}
