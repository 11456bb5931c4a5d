//! The build context of `POST /build`: the request body, a tar stream
//! (plain, or compressed as moby's `DecompressStream` detects it), extracted
//! into a fresh directory the build reads and that is removed afterwards.
//!
//! Where: `ROOT/build-contexts/context-PID-RANDOM/context`. Not under the
//! store's `ROOT/tmp`: the store empties `tmp/` whenever a process opens
//! it and finds the content lock free (`Store::recover_interrupted`), and
//! every API request opens the store, so a context kept there would vanish
//! in the middle of its build. The directory is removed when the build ends
//! ([`ContextDir`]'s drop); one a killed server left is removed by
//! [`remove_stale`] (at server start and before each build), known by the
//! dead pid in its name.
//!
//! Safety: the body is hostile. It is extracted by the engine's `cp`
//! extractor (`berth_engine::copy::extract_into_container`), which is
//! moby's `chrootarchive.Untar`: every parent is opened with
//! `openat2(RESOLVE_IN_ROOT)`, so neither a `..`, an absolute name, nor a
//! symlink in the context (an earlier entry) can lead outside the
//! directory; a name or a hard link that climbs out of it is refused
//! ("invalid entry name", "invalid hardlink target"). Owners, modes, xattrs
//! and times are kept as the tar says, as moby's classic builder keeps
//! them. The Dockerfile is read the same way ([`read_dockerfile`]), so a
//! `Dockerfile` symlink to `/etc/shadow` reads the context's own file.

use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use berth_engine::copy::{extract_into_container, ContainerFs, CopyError, ExtractOptions};
use fs_err::os::unix::fs::OpenOptionsExt;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::Mode;

use crate::error::ApiError;

/// The directory under the engine's root that holds the contexts.
pub const CONTEXTS_DIRECTORY: &str = "build-contexts";
const PREFIX: &str = "context";

#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    #[error("failed to create the build context directory {path:?}")]
    Create {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{format}-compressed build contexts are not supported: send the context uncompressed, or compressed with gzip, xz or zstd")]
    Compression { format: &'static str },
    #[error("failed to read the build context")]
    Read(#[source] io::Error),
    #[error("failed to spool the build context to {path:?}")]
    Spool {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to extract the build context")]
    Extract(#[source] CopyError),
    /// moby's words (a missing `dockerfile`).
    #[error("Cannot locate specified Dockerfile: {0}")]
    DockerfileNotFound(String),
    #[error("failed to read the Dockerfile {path:?}")]
    ReadDockerfile {
        path: String,
        #[source]
        source: io::Error,
    },
    /// moby's words.
    #[error("the Dockerfile ({0}) cannot be empty")]
    EmptyDockerfile(String),
}

impl From<ContextError> for ApiError {
    fn from(error: ContextError) -> Self {
        let status = match &error {
            ContextError::Compression { .. } => 501,
            ContextError::Extract(copy) => crate::error::status_for_kind(copy.kind()),
            ContextError::Read(_)
            | ContextError::DockerfileNotFound(_)
            | ContextError::EmptyDockerfile(_) => 400,
            ContextError::Create { .. }
            | ContextError::Spool { .. }
            | ContextError::ReadDockerfile { .. } => 500,
        };
        ApiError::new(status, berth_engine::ErrorChain(&error).to_string())
    }
}

/// One build's directory, removed (with everything in it) when dropped.
#[derive(Debug)]
pub struct ContextDir {
    /// `ROOT/build-contexts/context-PID-RANDOM`.
    base: PathBuf,
    /// `base/context`: what the build sees.
    context: PathBuf,
}

impl ContextDir {
    /// A fresh, empty context directory under `root` (the engine's root).
    pub fn create(root: &Path) -> Result<Self, ContextError> {
        let parent = root.join(CONTEXTS_DIRECTORY);
        let created = |path: &Path| {
            let failed = |source| ContextError::Create {
                path: path.to_owned(),
                source,
            };
            fs_err::create_dir(path)
                .or_else(|error| match error.kind() {
                    io::ErrorKind::AlreadyExists if path == parent => Ok(()),
                    _ => Err(error),
                })
                .map_err(failed)?;
            fs_err::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o700))
                .map_err(failed)
        };
        created(&parent)?;
        let random = &berth_engine::containers::names::new_id()[..16];
        let base = parent.join(format!("{PREFIX}-{}-{random}", std::process::id()));
        created(&base)?;
        let directory = Self {
            context: base.join("context"),
            base,
        };
        created(&directory.context)?;
        Ok(directory)
    }

    /// The extracted context.
    pub fn path(&self) -> &Path {
        &self.context
    }

    /// Extracts the tar stream `body` (compressed or not) into the context.
    pub fn extract(&self, body: impl Read) -> Result<(), ContextError> {
        let (compression, body) = detect(body)?;
        let decoded: Box<dyn Read + '_> = match compression {
            Compression::None => Box::new(body),
            Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(body)),
            Compression::Zstd => {
                Box::new(zstd::stream::read::Decoder::new(body).map_err(ContextError::Read)?)
            }
            // The xz decoder wants a reader it owns ('static): the stream
            // is spooled to a file beside the context first.
            Compression::Xz => Box::new(xz4rust::XzReader::new(self.spool(body)?)),
        };
        let target = ContainerFs::new(&self.context, "build context");
        extract_into_container(
            &target,
            "/",
            BlockPadded::new(decoded),
            &ExtractOptions::default(),
        )
        .map_err(ContextError::Extract)
    }

    fn spool(&self, mut body: impl Read) -> Result<std::fs::File, ContextError> {
        let path = self.base.join("context.tar.xz");
        let failed = |source| ContextError::Spool {
            path: path.clone(),
            source,
        };
        let mut file = fs_err::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(failed)?;
        io::copy(&mut body, &mut file).map_err(failed)?;
        io::Seek::rewind(&mut file).map_err(failed)?;
        Ok(file.into_parts().0)
    }
}

impl Drop for ContextDir {
    fn drop(&mut self) {
        if let Err(error) = fs_err::remove_dir_all(&self.base) {
            tracing::warn!(%error, "failed to remove a build context");
        }
    }
}

/// A tar stream that may end inside its last block, completed with zeros
/// to the block's end. The docker CLI sends such streams: with `-f` outside
/// the context (20.10's `AddDockerfileToBuildContext`) the archive stops
/// right after the last file's data, without its padding nor the two end
/// blocks. Go's tar reader takes an end there for the end of the archive;
/// the tar crate takes one at a block boundary only, so the padding is
/// supplied here. Only a clean end of the body is completed (a connection
/// lost mid-body is an error before this sees it); the cost is that a
/// body its client ends inside a file's last block is taken with the rest
/// of that block as zeros, where Go would refuse it.
struct BlockPadded<R> {
    inner: R,
    position: u64,
    /// Zeros still to give after the inner stream ended.
    padding: Option<u64>,
}

impl<R: Read> BlockPadded<R> {
    const BLOCK: u64 = 512;

    fn new(inner: R) -> Self {
        Self {
            inner,
            position: 0,
            padding: None,
        }
    }
}

impl<R: Read> Read for BlockPadded<R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        if self.padding.is_none() {
            let count = self.inner.read(buffer)?;
            if count > 0 || buffer.is_empty() {
                self.position += count as u64;
                return Ok(count);
            }
            let partial = self.position % Self::BLOCK;
            self.padding = Some(if partial == 0 {
                0
            } else {
                Self::BLOCK - partial
            });
        }
        let remaining = self.padding.unwrap_or(0);
        let count = usize::try_from(remaining)
            .unwrap_or(usize::MAX)
            .min(buffer.len());
        buffer[..count].fill(0);
        self.padding = Some(remaining - count as u64);
        Ok(count)
    }
}

/// How a context is compressed, by its magic bytes (moby
/// `compression.Detect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
    Xz,
}

fn detect<R: Read>(mut body: R) -> Result<(Compression, impl Read), ContextError> {
    const MAGIC: usize = 6;
    let mut head = Vec::with_capacity(MAGIC);
    (&mut body)
        .take(MAGIC as u64)
        .read_to_end(&mut head)
        .map_err(ContextError::Read)?;
    let compression = if head.starts_with(&[0x1f, 0x8b, 0x08]) {
        Compression::Gzip
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Compression::Zstd
    } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
        Compression::Xz
    } else if head.starts_with(b"BZh") {
        return Err(ContextError::Compression { format: "bzip2" });
    } else {
        Compression::None
    };
    Ok((compression, io::Cursor::new(head).chain(body)))
}

/// The Dockerfile `name` of the context at `context`, resolved inside it
/// (moby `FollowSymlinkInScope`); the default `Dockerfile` falls back to
/// `dockerfile`, as moby's does.
pub fn read_dockerfile(context: &Path, name: &str) -> Result<String, ContextError> {
    let read = |name: &str| read_in_root(context, name);
    let bytes = match read(name) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            let lowercase = name.to_lowercase();
            let fallback = (name == super::query::DEFAULT_DOCKERFILE)
                .then(|| read(&lowercase))
                .and_then(Result::ok);
            fallback.ok_or_else(|| ContextError::DockerfileNotFound(name.to_owned()))?
        }
        Err(source) => {
            return Err(ContextError::ReadDockerfile {
                path: name.to_owned(),
                source,
            })
        }
    };
    if bytes.is_empty() {
        return Err(ContextError::EmptyDockerfile(name.to_owned()));
    }
    // Go reads the Dockerfile as bytes; a stray invalid byte is kept as
    // U+FFFD rather than refused.
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Reads the regular file `path` inside `root` as if `root` were `/`.
fn read_in_root(root: &Path, path: &str) -> io::Result<Vec<u8>> {
    let root_fd = nix::fcntl::open(
        root,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    // SAFETY: open returned a new descriptor that nothing else owns.
    let root_fd = unsafe { OwnedFd::from_raw_fd(root_fd) };
    let relative = path.trim_start_matches('/');
    let relative = if relative.is_empty() { "." } else { relative };
    let how = OpenHow::new()
        .flags(OFlag::O_RDONLY | OFlag::O_CLOEXEC | OFlag::O_NOCTTY | OFlag::O_NONBLOCK)
        .resolve(ResolveFlag::RESOLVE_IN_ROOT | ResolveFlag::RESOLVE_NO_MAGICLINKS);
    let fd = loop {
        // EAGAIN: a concurrent rename might have let `..` escape; retry
        // (openat2(2)).
        match nix::fcntl::openat2(root_fd.as_raw_fd(), relative, how) {
            Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => continue,
            other => break other?,
        }
    };
    // SAFETY: openat2 returned a new descriptor that nothing else owns.
    let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    // A FIFO or a device would block or never end: only regular files
    // (O_NONBLOCK above keeps the open of a FIFO from waiting).
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Removes the context directories under `root` whose server is gone (a
/// killed `berth serve`); returns how many. Names without a live pid are
/// removed; this process's own are kept.
pub fn remove_stale(root: &Path) -> usize {
    let Ok(entries) = fs_err::read_dir(root.join(CONTEXTS_DIRECTORY)) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        if !owner_is_dead(name) {
            continue;
        }
        match fs_err::remove_dir_all(entry.path()) {
            Ok(()) => removed += 1,
            Err(error) => tracing::warn!(%error, "failed to remove a stale build context"),
        }
    }
    removed
}

/// `context-PID-RANDOM` whose PID no longer exists. Anything else there
/// (a name berth did not make) is left alone.
fn owner_is_dead(name: &str) -> bool {
    let mut parts = name.splitn(3, '-');
    let (Some(PREFIX), Some(pid), Some(_random)) = (parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let Ok(pid) = pid.parse::<i32>() else {
        return false;
    };
    if pid <= 0 || pid == std::process::id() as i32 {
        return false;
    }
    matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
        Err(nix::errno::Errno::ESRCH)
    )
}

#[cfg(test)]
#[path = "context_tests.rs"]
mod tests;
