//! Writes entries as a tar stream shaped like Docker's (Go `archive/tar` in PAX mode):
//! ustar headers, a PAX extended header only where ustar cannot say it (long or
//! non-ASCII names and link targets, xattrs), empty user and group names, and the two
//! zero blocks at the end.

use std::io::{self, BufWriter, Read, Write};

use tar::{EntryType, Header};

use super::entry::{Data, Entry, EntryKind, Sink};
use super::error::CopyError;
use super::sys::COPY_BUFFER;

const BLOCK: usize = 512;
const NAME_SIZE: usize = 100;
const PREFIX_SIZE: usize = 155;

pub(crate) struct TarWriter<W: Write> {
    out: BufWriter<W>,
    buffer: Vec<u8>,
}

impl<W: Write> TarWriter<W> {
    pub(crate) fn new(out: W) -> Self {
        Self {
            out: BufWriter::with_capacity(COPY_BUFFER, out),
            buffer: vec![0; COPY_BUFFER],
        }
    }

    /// Writes the end-of-archive marker and flushes.
    pub(crate) fn finish(mut self) -> Result<(), CopyError> {
        let result = self
            .out
            .write_all(&[0; 2 * BLOCK])
            .and_then(|()| self.out.flush());
        result.map_err(|source| CopyError::WriteArchive { source })
    }

    fn write_entry(&mut self, entry: &Entry, data: Data<'_>) -> io::Result<()> {
        let mut header = Header::new_ustar();
        let mut records: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let (type_flag, size, link) = match &entry.kind {
            EntryKind::Regular { size } => (EntryType::Regular, *size, None),
            EntryKind::Directory => (EntryType::Directory, 0, None),
            EntryKind::Symlink { target } => (EntryType::Symlink, 0, Some(target)),
            EntryKind::HardLink { target } => (EntryType::Link, 0, Some(target)),
            EntryKind::CharDevice { major, minor } => {
                header.set_device_major(*major)?;
                header.set_device_minor(*minor)?;
                (EntryType::Char, 0, None)
            }
            EntryKind::BlockDevice { major, minor } => {
                header.set_device_major(*major)?;
                header.set_device_minor(*minor)?;
                (EntryType::Block, 0, None)
            }
            EntryKind::Fifo => (EntryType::Fifo, 0, None),
        };
        header.set_entry_type(type_flag);
        header.set_mode(entry.mode & 0o7777);
        header.set_uid(u64::from(entry.uid));
        header.set_gid(u64::from(entry.gid));
        header.set_size(size);
        header.set_mtime(u64::try_from(entry.modified.seconds).unwrap_or(0));
        if !set_name(&mut header, &entry.name) {
            records.push((b"path".to_vec(), entry.name.clone()));
        }
        if let Some(link) = link {
            if link.len() <= NAME_SIZE && link.is_ascii() {
                header.set_link_name_literal(link)?;
            } else {
                records.push((b"linkpath".to_vec(), link.clone()));
            }
        }
        for (name, value) in &entry.xattrs {
            let mut key = b"SCHILY.xattr.".to_vec();
            key.extend_from_slice(name);
            records.push((key, value.clone()));
        }
        if !records.is_empty() {
            self.write_pax(&entry.name, &records)?;
        }
        header.set_cksum();
        self.out.write_all(header.as_bytes())?;
        if size > 0 {
            match data {
                Data::File(file) => self.write_data(&mut &*file, size)?,
                Data::Stream(reader) => self.write_data(reader, size)?,
                Data::None => self.write_data(&mut io::empty(), size)?,
            }
        }
        Ok(())
    }

    fn write_pax(&mut self, name: &[u8], records: &[(Vec<u8>, Vec<u8>)]) -> io::Result<()> {
        let mut body = Vec::new();
        for (key, value) in records {
            body.extend_from_slice(&pax_record(key, value));
        }
        let mut header = Header::new_ustar();
        header.set_entry_type(EntryType::XHeader);
        header.set_mode(0o644);
        header.set_size(body.len() as u64);
        let trimmed = name.strip_suffix(b"/").unwrap_or(name);
        let base = trimmed
            .rsplit(|byte| *byte == b'/')
            .next()
            .unwrap_or_default();
        let mut pax_name = b"PaxHeaders.0/".to_vec();
        pax_name.extend(base.iter().copied().filter(u8::is_ascii));
        pax_name.truncate(NAME_SIZE);
        set_name(&mut header, &pax_name);
        header.set_cksum();
        self.out.write_all(header.as_bytes())?;
        self.out.write_all(&body)?;
        self.pad(body.len() as u64)
    }

    /// Writes exactly `size` bytes from `reader`, padding with zeros if it ends early (a
    /// file that shrank while being archived), then pads to a whole block.
    fn write_data(&mut self, reader: &mut dyn Read, size: u64) -> io::Result<()> {
        let mut remaining = size;
        while remaining > 0 {
            let want = usize::try_from(remaining.min(self.buffer.len() as u64))
                .unwrap_or(self.buffer.len());
            let read = match reader.read(&mut self.buffer[..want]) {
                Ok(read) => read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            };
            if read == 0 {
                tracing::warn!(missing = remaining, "file shrank while archived; padding");
                self.buffer[..want].fill(0);
                self.out.write_all(&self.buffer[..want])?;
                remaining -= want as u64;
                continue;
            }
            self.out.write_all(&self.buffer[..read])?;
            remaining -= read as u64;
        }
        self.pad(size)
    }

    fn pad(&mut self, written: u64) -> io::Result<()> {
        let partial = (written % BLOCK as u64) as usize;
        if partial != 0 {
            self.out.write_all(&[0; BLOCK][..BLOCK - partial])?;
        }
        Ok(())
    }
}

impl<W: Write> Sink for TarWriter<W> {
    fn add(&mut self, entry: &Entry, data: Data<'_>) -> Result<(), CopyError> {
        self.write_entry(entry, data)
            .map_err(|source| CopyError::WriteArchive { source })
    }
}

/// Puts `name` in the ustar name (and prefix) fields; false when it does not fit or is not
/// ASCII and needs a PAX `path` record (Go's `splitUSTARPath`).
fn set_name(header: &mut Header, name: &[u8]) -> bool {
    let Some(ustar) = header.as_ustar_mut() else {
        return false;
    };
    if name.len() <= NAME_SIZE && name.is_ascii() {
        ustar.name[..name.len()].copy_from_slice(name);
        return true;
    }
    let fallback = |ustar: &mut tar::UstarHeader| {
        let shown: Vec<u8> = name
            .iter()
            .copied()
            .filter(u8::is_ascii)
            .take(NAME_SIZE)
            .collect();
        ustar.name[..shown.len()].copy_from_slice(&shown);
        false
    };
    if !name.is_ascii() {
        return fallback(ustar);
    }
    let mut length = name.len();
    if length > PREFIX_SIZE + 1 {
        length = PREFIX_SIZE + 1;
    } else if name[length - 1] == b'/' {
        length -= 1;
    }
    let Some(slash) = name[..length].iter().rposition(|byte| *byte == b'/') else {
        return fallback(ustar);
    };
    let suffix = &name[slash + 1..];
    if slash == 0 || suffix.is_empty() || suffix.len() > NAME_SIZE || slash > PREFIX_SIZE {
        return fallback(ustar);
    }
    ustar.prefix[..slash].copy_from_slice(&name[..slash]);
    ustar.name[..suffix.len()].copy_from_slice(suffix);
    true
}

/// One PAX record, `"<length> <key>=<value>\n"`, where the length counts itself.
fn pax_record(key: &[u8], value: &[u8]) -> Vec<u8> {
    let body = key.len() + value.len() + 3; // ' ', '=', '\n'
    let mut length = body + 1;
    while body + length.to_string().len() != length {
        length = body + length.to_string().len();
    }
    let mut record = length.to_string().into_bytes();
    record.push(b' ');
    record.extend_from_slice(key);
    record.push(b'=');
    record.extend_from_slice(value);
    record.push(b'\n');
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pax_record_lengths_count_themselves() {
        // As Go's archive/tar formats them.
        assert_eq!(pax_record(b"path", b"a"), b"9 path=a\n");
        let record = pax_record(b"path", &[b'x'; 95]);
        assert!(record.starts_with(b"105 path="));
        assert_eq!(record.len(), 105);
        // 98 bytes plus a 2-digit length would be 100, which needs 3 digits.
        let record = pax_record(b"path", &[b'x'; 91]);
        assert!(record.starts_with(b"101 path="));
        assert_eq!(record.len(), 101);
    }

    #[test]
    fn long_names_split_into_prefix_or_go_to_pax() {
        let mut header = Header::new_ustar();
        let name = format!("{}/{}", "d".repeat(120), "f".repeat(50));
        assert!(set_name(&mut header, name.as_bytes()));
        assert_eq!(header.path_bytes().as_ref(), name.as_bytes());
        let mut header = Header::new_ustar();
        assert!(!set_name(&mut header, "f".repeat(101).as_bytes()));
        let mut header = Header::new_ustar();
        assert!(!set_name(&mut header, "é".as_bytes()));
    }
}
