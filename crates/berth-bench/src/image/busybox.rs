//! Debian's static busybox: the shell and tools of every bench image, and
//! the same binary run on the host for the host baselines (so host and
//! container run the very same code).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

pub const PASSWD: &str = "root:x:0:0:root:/root:/bin/sh\n\
daemon:x:1:1:daemon:/usr/sbin:/bin/false\n\
nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n";
pub const GROUP: &str = "root:x:0:\ndaemon:x:1:\nnogroup:x:65534:\n";

/// True for a 64-bit little-endian ELF executable without an interpreter
/// (PT_INTERP): it runs in an image that has no libc.
pub fn is_static_elf(bytes: &[u8]) -> bool {
    const PT_INTERP: u32 = 3;
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 || bytes[5] != 1 {
        return false;
    }
    let u16_at = |offset: usize| {
        bytes
            .get(offset..offset + 2)
            .map(|slice| u16::from_le_bytes([slice[0], slice[1]]) as usize)
    };
    let (Some(entry_size), Some(count)) = (u16_at(0x36), u16_at(0x38)) else {
        return false;
    };
    let Some(table) = bytes
        .get(0x20..0x28)
        .and_then(|slice| <[u8; 8]>::try_from(slice).ok())
        .map(u64::from_le_bytes)
        .and_then(|offset| usize::try_from(offset).ok())
    else {
        return false;
    };
    (0..count).all(|index| {
        let offset = table + index * entry_size;
        bytes
            .get(offset..offset + 4)
            .and_then(|slice| <[u8; 4]>::try_from(slice).ok())
            .map(u32::from_le_bytes)
            .is_some_and(|kind| kind != PT_INTERP)
    })
}

fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// Adds busybox and the basics of a root file system to `root` without
/// replacing anything already there: the usual directories, /etc/passwd
/// and /etc/group, /bin/busybox and a /bin/<applet> link per applet.
pub fn populate(root: &Path, busybox: &Path, applets: &[String]) -> std::io::Result<()> {
    for (directory, mode) in [
        ("bin", 0o755),
        ("etc", 0o755),
        ("dev", 0o755),
        ("proc", 0o555),
        ("sys", 0o555),
        ("root", 0o700),
        ("tmp", 0o1777),
        ("home", 0o755),
        ("var", 0o755),
        ("mnt", 0o755),
    ] {
        let path = root.join(directory);
        if !path.exists() {
            fs_err::create_dir_all(&path)?;
            set_mode(&path, mode)?;
        }
    }
    for (file, text) in [("etc/passwd", PASSWD), ("etc/group", GROUP)] {
        let path = root.join(file);
        if !path.exists() {
            fs_err::write(&path, text)?;
            set_mode(&path, 0o644)?;
        }
    }
    let target = root.join("bin/busybox");
    fs_err::copy(busybox, &target)?;
    set_mode(&target, 0o755)?;
    for applet in applets {
        if applet.is_empty() || applet.contains('/') || applet == "busybox" {
            continue;
        }
        let link = root.join("bin").join(applet);
        if link.symlink_metadata().is_err() {
            fs_err::os::unix::fs::symlink("busybox", &link)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64 header with `kinds` as its program header types.
    fn elf(kinds: &[u32]) -> Vec<u8> {
        let mut bytes = vec![0u8; 64 + 56 * kinds.len()];
        bytes[..4].copy_from_slice(b"\x7fELF");
        bytes[4] = 2;
        bytes[5] = 1;
        bytes[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        bytes[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        bytes[0x38..0x3a].copy_from_slice(&(kinds.len() as u16).to_le_bytes());
        for (index, kind) in kinds.iter().enumerate() {
            let offset = 64 + 56 * index;
            bytes[offset..offset + 4].copy_from_slice(&kind.to_le_bytes());
        }
        bytes
    }

    #[test]
    fn static_means_no_interpreter() {
        assert!(is_static_elf(&elf(&[1, 1, 4])));
        assert!(!is_static_elf(&elf(&[6, 3, 1])));
        assert!(!is_static_elf(b"#!/bin/sh\n"));
        let mut truncated = elf(&[1, 1]);
        truncated.truncate(100);
        assert!(!is_static_elf(&truncated));
    }

    #[test]
    fn populate_keeps_what_is_there() {
        let directory = tempfile::tempdir().unwrap();
        let root = directory.path().join("root");
        fs_err::create_dir_all(root.join("bin")).unwrap();
        fs_err::write(root.join("bin/ar"), b"binutils ar").unwrap();
        let fake = directory.path().join("busybox");
        fs_err::write(&fake, b"busybox").unwrap();
        populate(&root, &fake, &["sh".into(), "ar".into(), "../x".into()]).unwrap();
        assert_eq!(fs_err::read(root.join("bin/ar")).unwrap(), b"binutils ar");
        assert_eq!(
            fs_err::read_link(root.join("bin/sh")).unwrap(),
            Path::new("busybox")
        );
        assert!(!directory.path().join("x").exists());
        let tmp = fs_err::metadata(root.join("tmp")).unwrap();
        assert_eq!(tmp.permissions().mode() & 0o7777, 0o1777);
        assert_eq!(
            fs_err::read_to_string(root.join("etc/passwd")).unwrap(),
            PASSWD
        );
    }
}
