//! ADD's local archives: recognized by their first bytes as moby's
//! `archive.DetectCompression` does (a tar, or one compressed with gzip or
//! zstd is extracted; bzip2 and xz are recognized and refused by name),
//! anything else is copied as a file.

use std::io::Read;
use std::path::Path;

use crate::BuildError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Tar,
    Gzip,
    Zstd,
    Bzip2,
    Xz,
}

fn format_of(head: &[u8]) -> Option<Format> {
    if head.starts_with(&[0x1f, 0x8b, 0x08]) {
        return Some(Format::Gzip);
    }
    if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        return Some(Format::Zstd);
    }
    if head.starts_with(b"BZh") {
        return Some(Format::Bzip2);
    }
    if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
        return Some(Format::Xz);
    }
    // A tar's magic is at 257: "ustar\0" (POSIX) or "ustar  " (GNU).
    if head.len() >= 262 && &head[257..262] == b"ustar" {
        return Some(Format::Tar);
    }
    None
}

fn head(path: &Path) -> Vec<u8> {
    let mut head = Vec::with_capacity(512);
    if let Ok(file) = fs_err::File::open(path) {
        let _ = file.take(512).read_to_end(&mut head);
    }
    head
}

/// Whether ADD extracts the file at `path`.
pub fn is_archive(path: &Path) -> bool {
    format_of(&head(path)).is_some()
}

/// The archive's tar stream, decompressed.
pub fn open_archive(path: &Path) -> Result<Box<dyn Read>, BuildError> {
    let format = format_of(&head(path));
    let file = fs_err::File::open(path).map_err(|source| BuildError::Context {
        path: path.to_owned(),
        source,
    })?;
    let file = std::io::BufReader::new(file);
    match format {
        Some(Format::Tar) | None => Ok(Box::new(file)),
        Some(Format::Gzip) => Ok(Box::new(flate2::read::GzDecoder::new(file))),
        Some(Format::Zstd) => Ok(Box::new(zstd::stream::read::Decoder::new(file).map_err(
            |source| BuildError::Context {
                path: path.to_owned(),
                source,
            },
        )?)),
        Some(Format::Bzip2) => Err(BuildError::Unsupported(format!(
            "ADD of a bzip2 archive ({}) is not supported by berth yet",
            path.display()
        ))),
        Some(Format::Xz) => Err(BuildError::Unsupported(format!(
            "ADD of an xz archive ({}) is not supported by berth yet",
            path.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_by_their_first_bytes() {
        let mut tar = vec![0u8; 512];
        tar[257..263].copy_from_slice(b"ustar\0");
        assert_eq!(format_of(&tar), Some(Format::Tar));
        assert_eq!(format_of(&[0x1f, 0x8b, 0x08, 0]), Some(Format::Gzip));
        assert_eq!(format_of(&[0x28, 0xb5, 0x2f, 0xfd]), Some(Format::Zstd));
        assert_eq!(format_of(b"BZh91AY"), Some(Format::Bzip2));
        assert_eq!(format_of(b"\xfd7zXZ\0"), Some(Format::Xz));
        assert_eq!(format_of(b"#!/bin/sh\n"), None);
        assert_eq!(format_of(&[]), None);
    }
}
