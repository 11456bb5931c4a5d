//! The attributes an entry asks for: mode, owner, modification time, extended attributes.

use std::ffi::OsString;
use std::io::{self, Read};
use std::os::unix::ffi::OsStringExt;
use std::path::Path;

use nix::sys::time::TimeSpec;

use super::error::UnpackError;

const XATTR_PREFIX: &[u8] = b"SCHILY.xattr.";
/// overlayfs keeps its own state in `trusted.overlay.*` (opaque, redirect, metacopy…).
/// berth writes the ones a layer needs from its whiteouts; letting an image set them
/// would let it steer how the kernel assembles the container's root.
const OVERLAY_XATTR_PREFIX: &[u8] = b"trusted.overlay.";

pub(super) struct EntryMetadata {
    /// Permission bits including setuid, setgid and sticky.
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub mtime: TimeSpec,
    pub xattrs: Vec<(OsString, Vec<u8>)>,
}

impl EntryMetadata {
    /// Reads the header fields and the entry's pax records. uid and gid pax records are
    /// already folded into the header by the tar crate.
    pub(super) fn read<R: Read>(
        entry: &mut tar::Entry<'_, R>,
        path: &Path,
    ) -> Result<Self, UnpackError> {
        let invalid = |field: &'static str| {
            move |source: io::Error| UnpackError::InvalidHeader {
                entry: path.to_owned(),
                field,
                source,
            }
        };
        let header = entry.header();
        let mode = header.mode().map_err(invalid("mode"))? & 0o7777;
        let uid = narrow(header.uid()).map_err(invalid("uid"))?;
        let gid = narrow(header.gid()).map_err(invalid("gid"))?;
        let header_mtime = header.mtime().map_err(invalid("mtime"))?;
        let mut mtime = TimeSpec::new(
            i64::try_from(header_mtime).map_err(|_| invalid("mtime")(out_of_range()))?,
            0,
        );
        let mut xattrs = Vec::new();

        let extensions = entry
            .pax_extensions()
            .map_err(|source| UnpackError::MalformedPax {
                entry: path.to_owned(),
                source,
            })?;
        for extension in extensions.into_iter().flatten() {
            // tar 0.4 splits pax records at newlines instead of walking their lengths, so a
            // value holding a newline comes back as broken records; its `path` and
            // `linkpath` could then come from a fragment of another value. Refuse the
            // entry instead of guessing (composefs/tar-rs#452).
            let extension = extension.map_err(|source| UnpackError::MalformedPax {
                entry: path.to_owned(),
                source,
            })?;
            let key = extension.key_bytes();
            if let Some(name) = key.strip_prefix(XATTR_PREFIX) {
                if name.starts_with(OVERLAY_XATTR_PREFIX) {
                    tracing::warn!(entry = ?path, name = %String::from_utf8_lossy(name), "ignoring overlayfs xattr from a layer");
                    continue;
                }
                xattrs.push((
                    OsString::from_vec(name.to_vec()),
                    extension.value_bytes().to_vec(),
                ));
            } else if key == b"mtime" {
                mtime = parse_pax_time(extension.value_bytes()).ok_or_else(|| {
                    invalid("pax mtime")(io::Error::from(io::ErrorKind::InvalidData))
                })?;
            }
        }
        Ok(Self {
            mode,
            uid,
            gid,
            mtime,
            xattrs,
        })
    }
}

fn narrow(id: io::Result<u64>) -> io::Result<u32> {
    u32::try_from(id?).map_err(|_| out_of_range())
}

fn out_of_range() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "value out of range")
}

/// Parses a pax time, `[-]seconds[.fraction]`, to nanosecond precision.
fn parse_pax_time(value: &[u8]) -> Option<TimeSpec> {
    let text = std::str::from_utf8(value).ok()?;
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (seconds, fraction) = text.split_once('.').unwrap_or((text, ""));
    if seconds.is_empty() || !seconds.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    if !fraction.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let seconds: i64 = seconds.parse().ok()?;
    let mut nanoseconds: i64 = 0;
    for position in 0..9 {
        let digit = fraction
            .as_bytes()
            .get(position)
            .map_or(0, |byte| byte - b'0');
        nanoseconds = nanoseconds * 10 + i64::from(digit);
    }
    Some(if !negative {
        TimeSpec::new(seconds, nanoseconds)
    } else if nanoseconds == 0 {
        TimeSpec::new(-seconds, 0)
    } else {
        TimeSpec::new(-seconds - 1, 1_000_000_000 - nanoseconds)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pax_times_parse_to_nanoseconds() {
        let parse = |text: &str| {
            parse_pax_time(text.as_bytes()).map(|time| (time.tv_sec(), time.tv_nsec()))
        };
        assert_eq!(parse("1700000000"), Some((1_700_000_000, 0)));
        assert_eq!(parse("1700000000.5"), Some((1_700_000_000, 500_000_000)));
        assert_eq!(parse("12.1234567891"), Some((12, 123_456_789)));
        assert_eq!(parse("-1.5"), Some((-2, 500_000_000)));
        assert_eq!(parse("-3"), Some((-3, 0)));
        assert_eq!(parse(""), None);
        assert_eq!(parse("1e9"), None);
        assert_eq!(parse("1.2.3"), None);
    }
}
