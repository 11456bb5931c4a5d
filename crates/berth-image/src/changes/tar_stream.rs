//! Writes tar entries over `tar::Header`, hashing and counting the stream as it goes.
//!
//! Not `tar::Builder`: it rewrites link targets through `Path::components` (`a//b` becomes
//! `a/b`, a trailing `/.` vanishes), cannot tell a failed read of a file from a failed write
//! of the stream, and writes the end-of-archive blocks from `Drop` even after an error.
//!
//! Headers are GNU ones, as the `tar` crate writes by default. A name or link target over
//! 100 bytes goes in a `././@LongLink` entry before its header, extended attributes in a
//! pax `x` entry as `SCHILY.xattr.<name>` records. As in Docker (`FileInfoHeader`), mtimes
//! are whole seconds and atime, ctime and user and group names are left out, so a tree
//! always gives the same bytes.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use berth_types::Digest;
use nix::sys::stat::FileStat;
use sha2::{Digest as _, Sha256};
use tar::{EntryType, Header};

use super::error::ChangesError;
use super::tree::Xattrs;

const BLOCK: usize = 512;
const NAME_FIELD: usize = 100;
const XATTR_RECORD_PREFIX: &[u8] = b"SCHILY.xattr.";
/// Big enough to copy a large file in few syscalls, small enough to stay in cache.
const COPY_BUFFER: usize = 256 * 1024;

/// What a finished stream amounted to.
pub(super) struct Totals {
    /// sha256 of every byte written, end-of-archive blocks included.
    pub diff_id: Digest,
    /// Sum of the sizes of the regular files written (hardlinks count once).
    pub size: u64,
    /// Bytes in the stream.
    pub tar_size: u64,
}

/// One file system object about to become an entry.
pub(super) struct Entry<'a> {
    /// The path in the archive: relative, `/`-separated, directories with a trailing `/`.
    pub name: &'a [u8],
    pub stat: &'a FileStat,
    pub xattrs: &'a Xattrs,
}

pub(super) struct TarStream<W: Write> {
    out: HashingWriter<W>,
    /// First archive name of each inode with more than one link, by (device, inode).
    links: HashMap<(u64, u64), Vec<u8>>,
    size: u64,
    buffer: Vec<u8>,
    /// No entry's mtime is later than this (`SOURCE_DATE_EPOCH`).
    mtime_clamp: Option<u64>,
}

impl<W: Write> TarStream<W> {
    /// Entries' mtimes later than `clamp` are written as `clamp` (BuildKit's
    /// `rewrite-timestamp` with `SOURCE_DATE_EPOCH`: reproducible layers).
    pub(super) fn clamping_mtimes(mut self, clamp: Option<u64>) -> Self {
        self.mtime_clamp = clamp;
        self
    }

    pub(super) fn new(out: W) -> Self {
        Self {
            out: HashingWriter {
                inner: out,
                hasher: Sha256::new(),
                written: 0,
            },
            links: HashMap::new(),
            size: 0,
            buffer: Vec::new(),
            mtime_clamp: None,
        }
    }

    /// For an inode with several links: `None` the first time (and remembers `name`), its
    /// first name afterwards, for a hardlink entry. Docker does this for every
    /// non-directory.
    pub(super) fn earlier_name(&mut self, stat: &FileStat, name: &[u8]) -> Option<Vec<u8>> {
        if stat.st_nlink <= 1 {
            return None;
        }
        let key = (stat.st_dev, stat.st_ino);
        if let Some(first) = self.links.get(&key) {
            return Some(first.clone());
        }
        self.links.insert(key, name.to_vec());
        None
    }

    pub(super) fn directory(&mut self, entry: &Entry<'_>) -> Result<(), ChangesError> {
        let header = header(EntryType::Directory, entry.stat);
        self.write_header(header, entry.name, None, entry.xattrs)
            .map_err(write_error(entry.name))
    }

    /// A regular file; reads exactly `st_size` bytes of `content`, from `path` on the host.
    pub(super) fn regular(
        &mut self,
        entry: &Entry<'_>,
        content: &mut impl Read,
        path: &Path,
    ) -> Result<(), ChangesError> {
        let size = u64::try_from(entry.stat.st_size).unwrap_or(0);
        let mut header = header(EntryType::Regular, entry.stat);
        header.set_size(size);
        self.write_header(header, entry.name, None, entry.xattrs)
            .map_err(write_error(entry.name))?;
        self.copy_content(entry.name, content, size, path)?;
        self.size += size;
        Ok(())
    }

    /// A symlink, or with `EntryType::Link` a further name of an earlier entry.
    pub(super) fn link(
        &mut self,
        entry: &Entry<'_>,
        entry_type: EntryType,
        target: &[u8],
    ) -> Result<(), ChangesError> {
        let header = header(entry_type, entry.stat);
        self.write_header(header, entry.name, Some(target), entry.xattrs)
            .map_err(write_error(entry.name))?;
        if entry_type == EntryType::Symlink {
            // Counted as the unpacker (and Docker) counts it: lstat's size.
            self.size += target.len() as u64;
        }
        Ok(())
    }

    /// A character or block device or a fifo.
    pub(super) fn node(
        &mut self,
        entry: &Entry<'_>,
        entry_type: EntryType,
    ) -> Result<(), ChangesError> {
        let mut header = header(entry_type, entry.stat);
        if entry_type != EntryType::Fifo {
            let rdev = entry.stat.st_rdev;
            let (major, minor) = (nix::sys::stat::major(rdev), nix::sys::stat::minor(rdev));
            // Linux device numbers are 12 + 20 bits, so they fit.
            let field = |number: u64| u32::try_from(number).unwrap_or(u32::MAX);
            let set = header
                .set_device_major(field(major))
                .and_then(|()| header.set_device_minor(field(minor)));
            set.map_err(write_error(entry.name))?;
        }
        self.write_header(header, entry.name, None, entry.xattrs)
            .map_err(write_error(entry.name))
    }

    /// The OCI form of an overlayfs whiteout: an empty `.wh.<name>` file. Like Docker's
    /// `overlayWhiteoutConverter`: mode 0600, owner and mtime of the whiteout device.
    pub(super) fn whiteout(&mut self, name: &[u8], stat: &FileStat) -> Result<(), ChangesError> {
        let mut header = header(EntryType::Regular, stat);
        header.set_mode(0o600);
        self.write_header(header, name, None, &Vec::new())
            .map_err(write_error(name))
    }

    /// The OCI form of an opaque directory: an empty `<dir>/.wh..wh..opq` file. Like
    /// Docker's: the directory's permission bits and owner, mtime 0.
    pub(super) fn opaque(&mut self, name: &[u8], directory: &FileStat) -> Result<(), ChangesError> {
        let mut header = header(EntryType::Regular, directory);
        header.set_mode(directory.st_mode & 0o777);
        header.set_mtime(0);
        self.write_header(header, name, None, &Vec::new())
            .map_err(write_error(name))
    }

    /// Writes the end-of-archive blocks and flushes.
    pub(super) fn finish(mut self) -> Result<Totals, ChangesError> {
        let finish_error = |source| ChangesError::FinishArchive { source };
        self.out.write_all(&[0; 2 * BLOCK]).map_err(finish_error)?;
        self.out.flush().map_err(finish_error)?;
        Ok(Totals {
            diff_id: Digest::from_sha256(self.out.hasher),
            size: self.size,
            tar_size: self.out.written,
        })
    }

    fn write_header(
        &mut self,
        mut header: Header,
        name: &[u8],
        link: Option<&[u8]>,
        xattrs: &Xattrs,
    ) -> io::Result<()> {
        if !xattrs.is_empty() {
            self.pax_xattrs(xattrs)?;
        }
        if let Some(link) = link {
            if link.len() > NAME_FIELD {
                self.long_name(EntryType::GNULongLink, link)?;
            }
            copy_truncated(&mut header.as_old_mut().linkname, link);
        }
        if name.len() > NAME_FIELD {
            self.long_name(EntryType::GNULongName, name)?;
        }
        copy_truncated(&mut header.as_old_mut().name, name);
        if let Some(clamp) = self.mtime_clamp {
            if header.mtime().is_ok_and(|mtime| mtime > clamp) {
                header.set_mtime(clamp);
            }
        }
        header.set_cksum();
        self.out.write_all(header.as_bytes())
    }

    /// A GNU `L` (name) or `K` (link target) entry: the whole value, NUL-terminated, for
    /// the header that follows.
    fn long_name(&mut self, entry_type: EntryType, value: &[u8]) -> io::Result<()> {
        let mut header = Header::new_gnu();
        copy_truncated(&mut header.as_old_mut().name, b"././@LongLink");
        header.set_mode(0o644);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        header.set_entry_type(entry_type);
        header.set_size(value.len() as u64 + 1);
        header.set_cksum();
        self.out.write_all(header.as_bytes())?;
        self.out.write_all(value)?;
        self.out.write_all(&[0])?;
        self.pad(value.len() as u64 + 1)
    }

    /// A pax `x` entry with one `SCHILY.xattr.<name>=<value>` record per attribute.
    fn pax_xattrs(&mut self, xattrs: &Xattrs) -> io::Result<()> {
        let mut records = Vec::new();
        for (name, value) in xattrs {
            let mut key = XATTR_RECORD_PREFIX.to_vec();
            key.extend_from_slice(name.as_bytes());
            pax_record(&mut records, &key, value);
        }
        let mut header = Header::new_ustar();
        copy_truncated(&mut header.as_old_mut().name, b"././@PaxHeader");
        header.set_mode(0o644);
        header.set_entry_type(EntryType::XHeader);
        header.set_size(records.len() as u64);
        header.set_cksum();
        self.out.write_all(header.as_bytes())?;
        self.out.write_all(&records)?;
        self.pad(records.len() as u64)
    }

    fn copy_content(
        &mut self,
        name: &[u8],
        content: &mut impl Read,
        size: u64,
        path: &Path,
    ) -> Result<(), ChangesError> {
        if self.buffer.is_empty() {
            self.buffer = vec![0; COPY_BUFFER];
        }
        let mut remaining = size;
        while remaining > 0 {
            let want = usize::try_from(remaining).map_or(COPY_BUFFER, |left| left.min(COPY_BUFFER));
            let count = match content.read(&mut self.buffer[..want]) {
                // The file shrank since its `fstat`: the header already promised more.
                Ok(0) => {
                    return Err(ChangesError::ChangedWhileReading {
                        path: path.to_owned(),
                    })
                }
                Ok(count) => count,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(ChangesError::ReadFile {
                        path: path.to_owned(),
                        source,
                    })
                }
            };
            self.out
                .write_all(&self.buffer[..count])
                .map_err(write_error(name))?;
            remaining -= count as u64;
        }
        self.pad(size).map_err(write_error(name))
    }

    /// Zeros up to the next 512-byte boundary after `length` bytes of data.
    fn pad(&mut self, length: u64) -> io::Result<()> {
        let partial = (length % BLOCK as u64) as usize;
        if partial == 0 {
            return Ok(());
        }
        self.out.write_all(&[0; BLOCK][partial..])
    }
}

/// The fields every entry shares. Times before 1970 become 0: the GNU header holds no
/// negative octal, and Docker's layers never carry one.
fn header(entry_type: EntryType, stat: &FileStat) -> Header {
    let mut header = Header::new_gnu();
    header.set_entry_type(entry_type);
    header.set_mode(stat.st_mode & 0o7777);
    header.set_uid(u64::from(stat.st_uid));
    header.set_gid(u64::from(stat.st_gid));
    header.set_mtime(u64::try_from(stat.st_mtime).unwrap_or(0));
    header.set_size(0);
    header
}

/// Copies `value` into a fixed header field; a longer value went into a long-name entry
/// already, so the field keeps only its start (as GNU tar and the `tar` crate do).
fn copy_truncated(field: &mut [u8], value: &[u8]) {
    let length = value.len().min(field.len());
    field[..length].copy_from_slice(&value[..length]);
}

/// A pax record is `<length> <key>=<value>\n`, where the length counts itself.
fn pax_record(records: &mut Vec<u8>, key: &[u8], value: &[u8]) {
    let rest = key.len() + value.len() + 3; // space, '=', newline
    let mut length = rest + 1;
    while length != rest + length.to_string().len() {
        length = rest + length.to_string().len();
    }
    records.extend_from_slice(length.to_string().as_bytes());
    records.push(b' ');
    records.extend_from_slice(key);
    records.push(b'=');
    records.extend_from_slice(value);
    records.push(b'\n');
}

fn write_error(name: &[u8]) -> impl FnOnce(io::Error) -> ChangesError + '_ {
    move |source| ChangesError::WriteEntry {
        entry: PathBuf::from(std::ffi::OsStr::from_bytes(name)),
        source,
    }
}

/// Passes writes through, hashing and counting the bytes that went out.
struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
    written: u64,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        let count = self.inner.write(buffer)?;
        self.hasher.update(&buffer[..count]);
        self.written += count as u64;
        Ok(count)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;

    use super::*;

    #[test]
    fn a_file_that_shrank_is_reported() {
        let temp = tempfile::NamedTempFile::new().unwrap();
        fs_err::write(temp.path(), b"0123456789").unwrap();
        let stat = nix::sys::stat::fstat(temp.as_file().as_raw_fd()).unwrap();
        let mut stream = TarStream::new(Vec::new());
        let entry = Entry {
            name: b"file",
            stat: &stat,
            xattrs: &Xattrs::new(),
        };
        let error = stream
            .regular(&entry, &mut &b"01234"[..], temp.path())
            .unwrap_err();
        assert!(
            matches!(&error, ChangesError::ChangedWhileReading { path } if path == temp.path()),
            "{error:?}"
        );
    }

    #[test]
    fn a_file_that_grew_is_cut_at_its_size() {
        let temp = tempfile::NamedTempFile::new().unwrap();
        fs_err::write(temp.path(), b"0123").unwrap();
        let stat = nix::sys::stat::fstat(temp.as_file().as_raw_fd()).unwrap();
        let mut stream = TarStream::new(Vec::new());
        let entry = Entry {
            name: b"file",
            stat: &stat,
            xattrs: &Xattrs::new(),
        };
        stream
            .regular(&entry, &mut &b"0123456789"[..], temp.path())
            .unwrap();
        let bytes = stream.out.inner.clone();
        let totals = stream.finish().unwrap();
        assert_eq!(totals.size, 4);
        let mut archive = tar::Archive::new(&bytes[..]);
        let mut entry = archive.entries().unwrap().next().unwrap().unwrap();
        let mut content = String::new();
        entry.read_to_string(&mut content).unwrap();
        assert_eq!(content, "0123");
    }

    #[test]
    fn pax_record_length_counts_itself() {
        let mut records = Vec::new();
        pax_record(&mut records, b"a", b"b");
        assert_eq!(records, b"6 a=b\n");
        // Around the points where the length gains a digit.
        for size in 0..1100 {
            let mut records = Vec::new();
            pax_record(&mut records, b"key", &vec![b'x'; size]);
            let text = String::from_utf8(records.clone()).unwrap();
            let (length, rest) = text.split_once(' ').unwrap();
            assert_eq!(length.parse::<usize>().unwrap(), records.len(), "{size}");
            assert!(rest.starts_with("key=") && rest.ends_with('\n'));
        }
    }
}
