//! Copying between a hijacked client connection and a container's streams
//! (pipes from a helper, a pty master, or a monitor's attach socket), in
//! Docker's framing: 8-byte multiplexed frames without a tty, raw with one.

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;

use berth_engine::containers::monitor::frame;
use berth_engine::logs::Stream;
use berth_types::detach_keys::{DetachMatcher, Fed};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

/// How the bytes read from the container reach the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// Raw bytes in, one frame per read out (no tty).
    Multiplex,
    /// Raw in, raw out (a tty).
    Raw,
    /// Frames in (a monitor's attach socket) and out.
    PassFrames,
    /// Frames in, their payloads out (a monitor's socket, with a tty).
    Unframe,
}

/// The container's side of one attached stream.
pub struct Streams {
    /// Readable ends and the stream each carries.
    pub outputs: Vec<(OwnedFd, Stream)>,
    /// Where the client's input goes (None: input is discarded).
    pub input: Option<OwnedFd>,
    pub framing: Framing,
    /// With a terminal: the client's input is watched for these detach
    /// keys, which end the relay (dockerd's `copyEscapable`).
    pub detach: Option<DetachMatcher>,
}

/// How a relay ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relayed {
    /// The container's streams ended, or the client went away.
    Ended,
    /// The client sent the detach keys.
    Detached,
}

const BUFFER: usize = 32 * 1024;

/// Copies until every output ended (the container's streams closed) or
/// the client went away. `leftover` is input the client sent with its
/// request head.
pub fn relay(client: &UnixStream, leftover: &[u8], mut streams: Streams) -> Relayed {
    let mut client_input_open = true;
    if !leftover.is_empty() && pass_input(&mut streams, leftover) {
        return Relayed::Detached;
    }
    let mut open: Vec<bool> = streams.outputs.iter().map(|_| true).collect();
    let mut pending: Vec<Vec<u8>> = streams.outputs.iter().map(|_| Vec::new()).collect();
    let mut buffer = vec![0u8; BUFFER];
    let mut client_writer = client;
    while open.iter().any(|open| *open) {
        let mut fds = Vec::with_capacity(streams.outputs.len() + 1);
        let client_events = if client_input_open {
            PollFlags::POLLIN
        } else {
            PollFlags::empty()
        };
        fds.push(PollFd::new(client.as_fd(), client_events));
        let mut indexes = Vec::new();
        for (index, (fd, _)) in streams.outputs.iter().enumerate() {
            if open[index] {
                fds.push(PollFd::new(fd.as_fd(), PollFlags::POLLIN));
                indexes.push(index);
            }
        }
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {}
            Err(nix::Error::EINTR) => continue,
            Err(_) => return Relayed::Ended,
        }
        let events: Vec<PollFlags> = fds
            .iter()
            .map(|fd| fd.revents().unwrap_or(PollFlags::empty()))
            .collect();
        drop(fds);
        let client_events = events[0];
        if client_input_open && client_events.intersects(PollFlags::POLLIN | PollFlags::POLLHUP) {
            let mut reader = client;
            match reader.read(&mut buffer) {
                Ok(0) | Err(_) => {
                    // The client's stdin ended: the container's ends too
                    // (a socket's sending side is shut down).
                    client_input_open = false;
                    if let Some(input) = streams.input.take() {
                        let _ = nix::sys::socket::shutdown(
                            input.as_raw_fd(),
                            nix::sys::socket::Shutdown::Write,
                        );
                    }
                }
                Ok(read) => {
                    let input = buffer[..read].to_vec();
                    if pass_input(&mut streams, &input) {
                        return Relayed::Detached;
                    }
                }
            }
        } else if !client_input_open
            && client_events.intersects(PollFlags::POLLHUP | PollFlags::POLLERR)
        {
            // Gone for good: nobody to copy to.
            return Relayed::Ended;
        }
        for (position, index) in indexes.iter().enumerate() {
            if events[position + 1].is_empty() {
                continue;
            }
            let (fd, stream) = &streams.outputs[*index];
            let read = match nix::unistd::read(fd.as_raw_fd(), &mut buffer) {
                Ok(0) | Err(nix::Error::EIO) => {
                    open[*index] = false;
                    continue;
                }
                Ok(read) => read,
                Err(nix::Error::EINTR | nix::Error::EAGAIN) => continue,
                Err(_) => {
                    open[*index] = false;
                    continue;
                }
            };
            let bytes = &buffer[..read];
            let written = match streams.framing {
                Framing::Raw => client_writer.write_all(bytes),
                Framing::Multiplex => client_writer.write_all(&frame(*stream, bytes)),
                Framing::PassFrames | Framing::Unframe => {
                    let queue = &mut pending[*index];
                    queue.extend_from_slice(bytes);
                    write_frames(
                        &mut client_writer,
                        queue,
                        streams.framing == Framing::Unframe,
                    )
                }
            };
            if written.is_err() {
                return Relayed::Ended;
            }
        }
    }
    let _ = client_writer.flush();
    Relayed::Ended
}

/// The client's input to the container, without the detach keys; true
/// when they were sent (what came before them is passed on).
fn pass_input(streams: &mut Streams, bytes: &[u8]) -> bool {
    let (bytes, detached) = match streams.detach.as_mut().map(|matcher| matcher.feed(bytes)) {
        None => (bytes.to_vec(), false),
        Some(Fed::Pass(bytes)) => (bytes, false),
        Some(Fed::Detach(bytes)) => (bytes, true),
    };
    if let Some(input) = &streams.input {
        if write_fd(input, &bytes).is_err() {
            streams.input = None;
        }
    }
    detached
}

/// Writes every complete frame in `queue` (whole, or only its payload).
fn write_frames(
    client: &mut &UnixStream,
    queue: &mut Vec<u8>,
    payload_only: bool,
) -> std::io::Result<()> {
    let mut start = 0;
    while queue.len() - start >= 8 {
        let header = &queue[start..start + 8];
        let length = u32::from_be_bytes([header[4], header[5], header[6], header[7]]) as usize;
        if queue.len() - start - 8 < length {
            break;
        }
        let frame = &queue[start..start + 8 + length];
        if payload_only {
            client.write_all(&frame[8..])?;
        } else {
            client.write_all(frame)?;
        }
        start += 8 + length;
    }
    queue.drain(..start);
    Ok(())
}

fn write_fd(fd: &OwnedFd, mut bytes: &[u8]) -> nix::Result<()> {
    while !bytes.is_empty() {
        match nix::unistd::write(fd, bytes) {
            Ok(written) => bytes = &bytes[written..],
            Err(nix::Error::EINTR) => continue,
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// A pipe whose write end goes to a helper (read end ours).
pub fn output_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(std::io::Error::from)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn multiplexes_pipes_and_forwards_input() {
        let (client, mut peer) = UnixStream::pair().unwrap();
        let (out_read, out_write) = output_pipe().unwrap();
        let (err_read, err_write) = output_pipe().unwrap();
        let (in_read, in_write) = output_pipe().unwrap();
        let relay_thread = std::thread::spawn(move || {
            relay(
                &client,
                b"early ",
                Streams {
                    outputs: vec![(out_read, Stream::Stdout), (err_read, Stream::Stderr)],
                    input: Some(in_write),
                    framing: Framing::Multiplex,
                    detach: None,
                },
            );
        });
        peer.write_all(b"input").unwrap();
        peer.shutdown(std::net::Shutdown::Write).unwrap();
        let mut input = String::new();
        std::fs::File::from(in_read)
            .read_to_string(&mut input)
            .unwrap();
        assert_eq!(input, "early input");
        write_fd(&out_write, b"out").unwrap();
        drop(out_write);
        write_fd(&err_write, b"err").unwrap();
        drop(err_write);
        relay_thread.join().unwrap();
        let mut received = Vec::new();
        peer.read_to_end(&mut received).unwrap();
        let mut expected = frame(Stream::Stdout, b"out");
        expected.extend(frame(Stream::Stderr, b"err"));
        assert_eq!(received, expected);
    }

    #[test]
    fn detach_keys_end_the_relay_and_stay_out_of_the_input() {
        let (client, mut peer) = UnixStream::pair().unwrap();
        let (out_read, out_write) = output_pipe().unwrap();
        let (in_read, in_write) = output_pipe().unwrap();
        let relay_thread = std::thread::spawn(move || {
            relay(
                &client,
                b"",
                Streams {
                    outputs: vec![(out_read, Stream::Stdout)],
                    input: Some(in_write),
                    framing: Framing::Raw,
                    detach: Some(DetachMatcher::new(vec![0x10, 0x11])),
                },
            )
        });
        // A broken sequence passes on; the whole one ends the relay, with
        // what followed it dropped.
        peer.write_all(&[b'a', 0x10, b'b']).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        peer.write_all(&[b'c', 0x10]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        peer.write_all(&[0x11, b'd']).unwrap();
        assert_eq!(relay_thread.join().unwrap(), Relayed::Detached);
        let mut input = Vec::new();
        std::fs::File::from(in_read)
            .read_to_end(&mut input)
            .unwrap();
        assert_eq!(input, [b'a', 0x10, b'b', b'c']);
        drop(out_write);
    }

    #[test]
    fn unframes_split_frames() {
        let (client, mut peer) = UnixStream::pair().unwrap();
        let mut queue = frame(Stream::Stdout, b"hello");
        queue.extend_from_slice(&frame(Stream::Stdout, b"world")[..6]);
        let mut writer = &client;
        write_frames(&mut writer, &mut queue, true).unwrap();
        assert_eq!(queue.len(), 6);
        drop(client);
        let mut received = Vec::new();
        peer.read_to_end(&mut received).unwrap();
        assert_eq!(received, b"hello");
    }
}
