//! Where the shim writes a VM container's process output: the run's stdio
//! or an exec's descriptors (received from its relay). One process whose
//! reader stops reading must not hold up the others, which share the shim's
//! loop and the agent channel; so a [`HostOutput`] never blocks: it writes
//! what the descriptor takes now and holds the rest, and the loop waits for
//! `POLLOUT` on it only while it holds something. What it holds is bounded
//! by the agent protocol's window (`berth_vm::flow`): the guest sends no more
//! of a stream until the shim has written it out, and the process itself
//! then waits on its pipe in the guest, as it would on a namespace
//! container's.
//!
//! The descriptors are shared with other processes (an exec's stdout is
//! often the user's terminal or a pipe of their shell), and `O_NONBLOCK`
//! belongs to the open file description: set on it, it would be set for
//! them too (a shell whose terminal turned non-blocking fails its reads
//! with `EAGAIN`). So a pipe or a terminal is opened anew through
//! `/proc/self/fd` (its own description, non-blocking), a socket is written
//! with `MSG_DONTWAIT`, and anything else (a regular file, `/dev/null`),
//! which never waits on a reader, is written as it is.

use fs_err::os::unix::fs::OpenOptionsExt;
use std::collections::VecDeque;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use nix::sys::socket::MsgFlags;
use nix::sys::stat::{fstat, SFlag};

/// One output stream of a process, on the host.
pub(super) struct HostOutput {
    target: Target,
    /// Bytes the descriptor did not take yet, in order.
    pending: VecDeque<u8>,
    /// The reader went away (or the descriptor failed): output is dropped
    /// as it comes, as a namespace container's to a closed pipe is.
    closed: bool,
}

/// How a descriptor is written without blocking.
enum Target {
    /// A description of its own with `O_NONBLOCK`.
    NonBlocking(fs_err::File),
    /// `send(MSG_DONTWAIT)`.
    Socket(OwnedFd),
    /// A descriptor whose writes do not wait on a reader.
    Plain(fs_err::File),
}

/// What a write came to.
enum Written {
    Bytes(usize),
    /// The descriptor takes nothing now.
    Full,
    /// The descriptor is done for.
    Failed,
}

impl HostOutput {
    /// Takes `fd` (see the module doc for how it is written); `name` names
    /// it in errors.
    pub(super) fn new(fd: OwnedFd, name: &str) -> HostOutput {
        let kind = fstat(fd.as_raw_fd())
            .map(|stat| SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits()))
            .unwrap_or(SFlag::empty());
        let terminal = nix::unistd::isatty(fd.as_raw_fd()).unwrap_or(false);
        let target = if kind == SFlag::S_IFSOCK {
            Target::Socket(fd)
        } else if kind == SFlag::S_IFIFO || terminal {
            match reopen_non_blocking(&fd) {
                Ok(file) => Target::NonBlocking(file),
                // A pipe whose reader is gone already (ENXIO): its writes
                // fail at once and do not block.
                Err(error) => {
                    tracing::debug!(%error, name, "kept the output descriptor as it is");
                    Target::Plain(plain(fd, name))
                }
            }
        } else {
            Target::Plain(plain(fd, name))
        };
        HostOutput {
            target,
            pending: VecDeque::new(),
            closed: false,
        }
    }

    /// Writes `bytes` (after what is pending), as much as the descriptor
    /// takes now, and holds the rest; returns how many bytes were passed
    /// on (written, or dropped for a reader that is gone).
    pub(super) fn push(&mut self, bytes: &[u8]) -> usize {
        if self.closed {
            return bytes.len();
        }
        if !self.pending.is_empty() {
            self.pending.extend(bytes);
            return self.flush();
        }
        let mut passed = 0;
        while passed < bytes.len() {
            match self.target.write(&bytes[passed..]) {
                Written::Bytes(count) => passed += count,
                Written::Full => break,
                Written::Failed => {
                    self.closed = true;
                    return bytes.len();
                }
            }
        }
        self.pending.extend(&bytes[passed..]);
        passed
    }

    /// Writes what is pending, as much as the descriptor takes now; returns
    /// how many bytes were passed on.
    pub(super) fn flush(&mut self) -> usize {
        let mut passed = 0;
        while !self.pending.is_empty() {
            let (front, _) = self.pending.as_slices();
            match self.target.write(front) {
                Written::Bytes(count) => {
                    self.pending.drain(..count);
                    passed += count;
                }
                Written::Full => break,
                Written::Failed => {
                    passed += self.pending.len();
                    self.pending.clear();
                    self.closed = true;
                }
            }
        }
        passed
    }

    /// Whether bytes wait for the descriptor (watch it for `POLLOUT` then).
    pub(super) fn is_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        match &self.target {
            Target::NonBlocking(file) | Target::Plain(file) => file.as_fd(),
            Target::Socket(socket) => socket.as_fd(),
        }
    }
}

impl Target {
    fn write(&mut self, bytes: &[u8]) -> Written {
        loop {
            let result = match self {
                // Not `Write`: fs_err's errors lose their `raw_os_error`.
                Target::NonBlocking(file) | Target::Plain(file) => {
                    nix::unistd::write(file.as_fd(), bytes)
                }
                Target::Socket(socket) => nix::sys::socket::send(
                    socket.as_raw_fd(),
                    bytes,
                    MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL,
                ),
            };
            return match result {
                Ok(0) => Written::Failed,
                Ok(count) => Written::Bytes(count),
                Err(nix::Error::EINTR) => continue,
                Err(nix::Error::EAGAIN) => Written::Full,
                Err(_) => Written::Failed,
            };
        }
    }
}

fn plain(fd: OwnedFd, name: &str) -> fs_err::File {
    fs_err::File::from_parts(std::fs::File::from(fd), name)
}

/// The same pipe or terminal through a new open file description, with
/// `O_NONBLOCK` (and no controlling terminal taken on the way).
fn reopen_non_blocking(fd: &OwnedFd) -> std::io::Result<fs_err::File> {
    fs_err::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn pipe() -> (fs_err::File, OwnedFd) {
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
        (plain(read, "read end"), write)
    }

    fn is_non_blocking(fd: BorrowedFd<'_>) -> bool {
        let flags = nix::fcntl::fcntl(fd.as_raw_fd(), nix::fcntl::FcntlArg::F_GETFL).unwrap();
        nix::fcntl::OFlag::from_bits_truncate(flags).contains(nix::fcntl::OFlag::O_NONBLOCK)
    }

    /// A reader that stops: the output takes what the pipe holds, keeps the
    /// rest in order without blocking, and hands all of it over once the
    /// reader reads again; the descriptor it was given stays blocking.
    #[test]
    fn a_stopped_reader_is_never_waited_for() {
        let (mut reader, writer) = pipe();
        let shared = writer.try_clone().unwrap();
        let mut output = HostOutput::new(writer, "test pipe");
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let mut passed = 0;
        for piece in data.chunks(64 << 10) {
            passed += output.push(piece);
        }
        // A Linux pipe holds 64 KiB.
        assert_eq!(passed, 64 << 10);
        assert!(output.is_pending());
        assert!(
            !is_non_blocking(shared.as_fd()),
            "the shared description changed"
        );
        let mut received = Vec::new();
        let mut buffer = vec![0u8; 32 << 10];
        while received.len() < data.len() {
            let read = reader.read(&mut buffer).unwrap();
            received.extend_from_slice(&buffer[..read]);
            passed += output.flush();
        }
        assert_eq!(passed, data.len());
        assert!(!output.is_pending());
        assert_eq!(received, data);
    }

    #[test]
    fn a_reader_that_went_away_loses_the_output() {
        let (reader, writer) = pipe();
        let mut output = HostOutput::new(writer, "test pipe");
        assert_eq!(output.push(&[1; 70_000]), 64 << 10);
        drop(reader);
        // EPIPE (SIGPIPE is ignored in tests as in the shim): dropped.
        assert_eq!(output.flush(), 70_000 - (64 << 10));
        assert_eq!(output.push(b"more"), 4);
        assert!(!output.is_pending());
    }

    #[test]
    fn a_socket_is_written_without_waiting() {
        let (left, right) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut output = HostOutput::new(OwnedFd::from(left), "test socket");
        let mut passed = output.push(&vec![7u8; 4 << 20]);
        assert!(passed < 4 << 20, "a socket buffer holds less than 4 MiB");
        assert!(output.is_pending());
        let mut right = right;
        let mut buffer = vec![0u8; 1 << 20];
        let mut received = 0;
        while received < 4 << 20 {
            received += right.read(&mut buffer).unwrap();
            passed += output.flush();
        }
        assert_eq!(passed, 4 << 20);
    }

    #[test]
    fn a_file_takes_everything() {
        let file = tempfile::tempfile().unwrap();
        let mut copy = file.try_clone().unwrap();
        let mut output = HostOutput::new(OwnedFd::from(file), "test file");
        assert_eq!(output.push(&[3; 200_000]), 200_000);
        assert!(!output.is_pending());
        let mut written = Vec::new();
        std::io::Seek::rewind(&mut copy).unwrap();
        copy.read_to_end(&mut written).unwrap();
        assert_eq!(written.len(), 200_000);
    }
}
