//! A writer of the "newc" cpio format, the one the kernel unpacks as an
//! initramfs (Documentation/driver-api/early-userspace/buffer-format.rst).
//!
//! Every entry is a 110-byte ASCII header (`070701` and thirteen 8-digit hex
//! fields), the NUL-terminated name padded to 4 bytes, then the data padded
//! to 4 bytes; a `TRAILER!!!` entry ends the archive. Owners are root and
//! times are 0, so the same inputs give the same bytes. berth writes it
//! itself rather than depend on a host `cpio` (Debian does not install one).

use std::io::{self, Write};

const S_IFDIR: u32 = 0o040_000;
const S_IFREG: u32 = 0o100_000;
const S_IFLNK: u32 = 0o120_000;
const S_IFCHR: u32 = 0o020_000;

/// Writes a newc archive to `W`. Names are relative (`bin/sh`); a directory
/// must be written before what it contains.
pub struct CpioWriter<W: Write> {
    out: W,
    next_inode: u32,
    written: u64,
}

impl<W: Write> CpioWriter<W> {
    pub fn new(out: W) -> CpioWriter<W> {
        CpioWriter {
            out,
            next_inode: 1,
            written: 0,
        }
    }

    pub fn directory(&mut self, name: &str, permissions: u32) -> io::Result<()> {
        self.entry(name, S_IFDIR | (permissions & 0o7777), 2, (0, 0), &[])
    }

    pub fn file(&mut self, name: &str, permissions: u32, data: &[u8]) -> io::Result<()> {
        self.entry(name, S_IFREG | (permissions & 0o7777), 1, (0, 0), data)
    }

    pub fn symlink(&mut self, name: &str, target: &str) -> io::Result<()> {
        self.entry(name, S_IFLNK | 0o777, 1, (0, 0), target.as_bytes())
    }

    pub fn char_device(
        &mut self,
        name: &str,
        permissions: u32,
        major: u32,
        minor: u32,
    ) -> io::Result<()> {
        self.entry(
            name,
            S_IFCHR | (permissions & 0o7777),
            1,
            (major, minor),
            &[],
        )
    }

    /// Writes the trailer and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        // The trailer has inode 0 and nlink 1, as GNU cpio writes it.
        self.next_inode = 0;
        self.entry("TRAILER!!!", 0, 1, (0, 0), &[])?;
        self.out.flush()?;
        Ok(self.out)
    }

    fn entry(
        &mut self,
        name: &str,
        mode: u32,
        links: u32,
        device: (u32, u32),
        data: &[u8],
    ) -> io::Result<()> {
        let name = name.trim_start_matches('/');
        if name.is_empty() || name.contains('\0') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "bad cpio entry name",
            ));
        }
        let size = u32::try_from(data.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "cpio entry over 4 GiB"))?;
        let name_size = name.len() as u32 + 1;
        let header = format!(
            "070701{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            self.next_inode,
            mode,
            0, // uid
            0, // gid
            links,
            0, // mtime
            size,
            0, // devmajor
            0, // devminor
            device.0,
            device.1,
            name_size,
            0, // check
        );
        self.next_inode = self.next_inode.wrapping_add(1);
        self.write_all(header.as_bytes())?;
        self.write_all(name.as_bytes())?;
        self.write_all(&[0])?;
        self.pad()?;
        self.write_all(data)?;
        self.pad()
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn pad(&mut self) -> io::Result<()> {
        let padding = (4 - (self.written % 4) as usize) % 4;
        self.write_all(&[0; 3][..padding])
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One parsed entry: name, mode, rdev (major, minor), data.
    pub(crate) type Entry = (String, u32, (u32, u32), Vec<u8>);

    /// Reads a newc archive back (what the kernel's unpacker does), checking
    /// magic, alignment and the trailer.
    pub(crate) fn parse(mut bytes: &[u8]) -> Vec<Entry> {
        let total = bytes.len();
        let mut entries = Vec::new();
        loop {
            assert_eq!(&bytes[..6], b"070701");
            let field = |index: usize| {
                let start = 6 + index * 8;
                u32::from_str_radix(std::str::from_utf8(&bytes[start..start + 8]).unwrap(), 16)
                    .unwrap()
            };
            let (mode, size, major, minor, name_size) = (
                field(1),
                field(6) as usize,
                field(9),
                field(10),
                field(11) as usize,
            );
            let name = std::str::from_utf8(&bytes[110..110 + name_size - 1])
                .unwrap()
                .to_string();
            assert_eq!(bytes[110 + name_size - 1], 0);
            let data_start = (110 + name_size).next_multiple_of(4);
            let data = bytes[data_start..data_start + size].to_vec();
            let next = (data_start + size).next_multiple_of(4);
            bytes = &bytes[next..];
            assert_eq!((total - bytes.len()) % 4, 0);
            if name == "TRAILER!!!" {
                assert!(bytes.is_empty());
                return entries;
            }
            entries.push((name, mode, (major, minor), data));
        }
    }

    #[test]
    fn writes_what_the_kernel_reads() {
        let mut writer = CpioWriter::new(Vec::new());
        writer.directory("dev", 0o755).unwrap();
        writer.char_device("dev/console", 0o600, 5, 1).unwrap();
        writer.file("/init", 0o755, b"\x7fELF...").unwrap();
        writer.symlink("bin/sh", "/bin/busybox").unwrap();
        writer.file("empty", 0o644, b"").unwrap();
        let bytes = writer.finish().unwrap();
        assert_eq!(bytes.len() % 4, 0);
        let entries = parse(&bytes);
        assert_eq!(
            entries,
            vec![
                ("dev".to_string(), 0o040_755, (0, 0), vec![]),
                ("dev/console".to_string(), 0o020_600, (5, 1), vec![]),
                (
                    "init".to_string(),
                    0o100_755,
                    (0, 0),
                    b"\x7fELF...".to_vec()
                ),
                (
                    "bin/sh".to_string(),
                    0o120_777,
                    (0, 0),
                    b"/bin/busybox".to_vec()
                ),
                ("empty".to_string(), 0o100_644, (0, 0), vec![]),
            ]
        );
    }

    #[test]
    fn refuses_bad_names() {
        let mut writer = CpioWriter::new(Vec::new());
        assert!(writer.file("/", 0o644, b"").is_err());
        assert!(writer.file("a\0b", 0o644, b"").is_err());
    }
}
