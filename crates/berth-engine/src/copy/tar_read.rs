//! Reads a tar stream entry by entry into a sink. The `tar` crate parses the headers
//! (ustar, GNU long names, PAX); the meaning of each entry is decided here, as Go's
//! `archive/tar` reader and go-archive's `Unpack` decide it.

use std::io::{BufRead, BufReader, Read};

use tar::EntryType;

use super::entry::{Data, Entry, EntryKind, Sink, Timestamp};
use super::error::CopyError;
use super::sys::{self, COPY_BUFFER};

/// Feeds every entry of the uncompressed tar stream `input` to `sink`.
pub(crate) fn read_archive(input: impl Read, sink: &mut dyn Sink) -> Result<(), CopyError> {
    let mut input = BufReader::with_capacity(COPY_BUFFER, input);
    let read_error = |source| CopyError::ReadArchive { source };
    let head = input.fill_buf().map_err(read_error)?;
    if let Some(format) = compression(head) {
        return Err(CopyError::CompressedArchive { format });
    }
    let mut archive = tar::Archive::new(input);
    for entry in archive.entries().map_err(read_error)? {
        let mut entry = entry.map_err(read_error)?;
        let Some(parsed) = parse(&mut entry)? else {
            continue;
        };
        sink.add(&parsed, Data::Stream(&mut entry))?;
    }
    Ok(())
}

/// The compression a stream starts with, by magic bytes (the formats Docker's
/// `DecompressStream` accepts).
fn compression(head: &[u8]) -> Option<&'static str> {
    const FORMATS: [(&[u8], &str); 4] = [
        (&[0x1f, 0x8b, 0x08], "gzip"),
        (b"BZh", "bzip2"),
        (&[0xfd, b'7', b'z', b'X', b'Z', 0x00], "xz"),
        (&[0x28, 0xb5, 0x2f, 0xfd], "zstd"),
    ];
    FORMATS
        .iter()
        .find(|(magic, _)| head.starts_with(magic))
        .map(|(_, format)| *format)
}

/// The entry as the extractor sees it; `None` for entries that carry no file (PAX
/// global headers).
fn parse<R: Read>(entry: &mut tar::Entry<'_, R>) -> Result<Option<Entry>, CopyError> {
    let header = entry.header();
    let name = entry.path_bytes().into_owned();
    let shown = sys::display(&name);
    let field_error = |source| CopyError::ReadArchive { source };
    let type_flag = header.entry_type();
    let link = entry
        .link_name_bytes()
        .map(|link| link.into_owned())
        .unwrap_or_default();
    let device = || -> Result<(u32, u32), CopyError> {
        let major = header.device_major().map_err(field_error)?.unwrap_or(0);
        let minor = header.device_minor().map_err(field_error)?.unwrap_or(0);
        Ok((major, minor))
    };
    let kind = match type_flag {
        EntryType::XGlobalHeader => return Ok(None),
        // Old tars mark directories as regular files with a trailing `/` (Go's reader
        // turns those into directories).
        EntryType::Regular | EntryType::Continuous if name.ends_with(b"/") => EntryKind::Directory,
        EntryType::Regular | EntryType::Continuous | EntryType::GNUSparse => {
            EntryKind::Regular { size: entry.size() }
        }
        EntryType::Directory => EntryKind::Directory,
        EntryType::Symlink => EntryKind::Symlink { target: link },
        EntryType::Link => EntryKind::HardLink { target: link },
        EntryType::Char => {
            let (major, minor) = device()?;
            EntryKind::CharDevice { major, minor }
        }
        EntryType::Block => {
            let (major, minor) = device()?;
            EntryKind::BlockDevice { major, minor }
        }
        EntryType::Fifo => EntryKind::Fifo,
        other => {
            return Err(CopyError::UnsupportedEntryType {
                name: shown,
                type_flag: other.as_byte(),
            })
        }
    };
    let old = header.as_old();
    let mut parsed = Entry {
        name,
        kind,
        mode: u32::try_from(numeric(header.mode().map(u64::from), &old.mode)?).unwrap_or(0)
            & 0o7777,
        uid: id(numeric(header.uid(), &old.uid)?),
        gid: id(numeric(header.gid(), &old.gid)?),
        modified: Timestamp {
            seconds: i64::try_from(numeric(header.mtime(), &old.mtime)?).unwrap_or(i64::MAX),
            nanoseconds: 0,
        },
        accessed: None,
        xattrs: Vec::new(),
    };
    if let Some(extensions) = entry.pax_extensions().map_err(field_error)? {
        for extension in extensions {
            let extension = extension.map_err(field_error)?;
            let key = extension.key_bytes();
            let value = extension.value_bytes();
            match key {
                b"uid" => parsed.uid = parse_id(value).unwrap_or(parsed.uid),
                b"gid" => parsed.gid = parse_id(value).unwrap_or(parsed.gid),
                b"mtime" => parsed.modified = parse_time(value).unwrap_or(parsed.modified),
                b"atime" => parsed.accessed = parse_time(value),
                _ => {
                    if let Some(xattr) = key.strip_prefix(b"SCHILY.xattr.") {
                        parsed.xattrs.push((xattr.to_vec(), value.to_vec()));
                    }
                }
            }
        }
    }
    Ok(Some(parsed))
}

/// A numeric header field; an empty one (all NULs or spaces) is 0, as Go reads it.
fn numeric(parsed: std::io::Result<u64>, raw: &[u8]) -> Result<u64, CopyError> {
    match parsed {
        Ok(value) => Ok(value),
        Err(_) if raw.iter().all(|byte| *byte == 0 || *byte == b' ') => Ok(0),
        Err(source) => Err(CopyError::ReadArchive { source }),
    }
}

fn id(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

fn parse_id(value: &[u8]) -> Option<u32> {
    std::str::from_utf8(value).ok()?.parse::<u64>().ok().map(id)
}

/// A PAX time: decimal seconds with an optional fraction, possibly negative.
fn parse_time(value: &[u8]) -> Option<Timestamp> {
    let text = std::str::from_utf8(value).ok()?;
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let seconds: i64 = whole.parse().ok()?;
    let digits: String = fraction.chars().take(9).collect();
    if !digits.chars().all(|digit| digit.is_ascii_digit()) {
        return None;
    }
    let mut nanoseconds: u32 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    for _ in digits.len()..9 {
        nanoseconds *= 10;
    }
    if whole.starts_with('-') && nanoseconds > 0 {
        return Some(Timestamp {
            seconds: seconds - 1,
            nanoseconds: 1_000_000_000 - nanoseconds,
        });
    }
    Some(Timestamp {
        seconds,
        nanoseconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pax_times() {
        let time = |text: &str| parse_time(text.as_bytes()).map(|t| (t.seconds, t.nanoseconds));
        assert_eq!(time("1234"), Some((1234, 0)));
        assert_eq!(time("1234.5"), Some((1234, 500_000_000)));
        assert_eq!(time("1234.123456789123"), Some((1234, 123_456_789)));
        assert_eq!(time("-1.5"), Some((-2, 500_000_000)));
        assert_eq!(time("x"), None);
    }

    #[test]
    fn compressed_streams_are_recognised() {
        assert_eq!(compression(&[0x1f, 0x8b, 0x08, 0]), Some("gzip"));
        assert_eq!(compression(&[0x28, 0xb5, 0x2f, 0xfd, 0]), Some("zstd"));
        assert_eq!(compression(b"dir/\0\0\0"), None);
    }
}
