//! One file of a copy, as a tar header describes it. The tree walker produces these, the
//! tar writer and the extractor consume them, so an in-process copy and a copy through a
//! tar stream make the very same decisions.

use std::fs::File;
use std::io::Read;

use super::error::CopyError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timestamp {
    pub seconds: i64,
    pub nanoseconds: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EntryKind {
    Regular {
        size: u64,
    },
    Directory,
    Symlink {
        target: Vec<u8>,
    },
    /// `target` is another entry's name in the same archive.
    HardLink {
        target: Vec<u8>,
    },
    CharDevice {
        major: u32,
        minor: u32,
    },
    BlockDevice {
        major: u32,
        minor: u32,
    },
    Fifo,
}

#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// The name as written in the archive: `/`-separated, directories may end in `/`,
    /// hostile streams may hold anything.
    pub name: Vec<u8>,
    pub kind: EntryKind,
    /// Permission bits plus setuid, setgid and sticky (`0o7777`).
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub modified: Timestamp,
    pub accessed: Option<Timestamp>,
    /// `SCHILY.xattr.*` records: name without the prefix, value.
    pub xattrs: Vec<(Vec<u8>, Vec<u8>)>,
}

/// The content of a regular file entry.
pub(crate) enum Data<'a> {
    None,
    /// An open file to copy from its current offset (lets the kernel copy).
    File(&'a File),
    /// The rest of a stream, exactly the entry's size long.
    Stream(&'a mut dyn Read),
}

/// Where entries go: a tar stream or a directory tree.
pub(crate) trait Sink {
    fn add(&mut self, entry: &Entry, data: Data<'_>) -> Result<(), CopyError>;
}
