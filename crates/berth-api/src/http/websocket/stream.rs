//! Carrying a byte stream over one websocket: the client's data frames to
//! a local socket, what the socket gives back in frames, pings answered,
//! and the closing handshake from either side.

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::frame::{close_frame, encode, Decoder, Frame, Opcode, CLOSE_NORMAL, MAX_FRAME};

/// How long a client has to answer the server's close frame.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

const READ_BUFFER: usize = 32 * 1024;

/// Carries a byte stream over the websocket on `client`: what the
/// client's data frames hold is written to `local`, and what `local`
/// gives is sent in `data` frames (binary, or text for old API versions).
/// Ends when the client closes (answered with a close frame), breaks the
/// protocol (closed with 1002 or 1009), or goes away; or when `local`
/// ends (a close frame with 1000, then a short wait for the client's).
/// `local` is dropped on return, so its peer sees the end too.
pub fn serve_stream(client: &UnixStream, leftover: &[u8], local: UnixStream, data: Opcode) {
    let mut session = Session {
        client,
        local: Some(local),
        decoder: Decoder::new(MAX_FRAME),
        frames: Vec::new(),
    };
    match session.receive(leftover) {
        Flow::Continue => {}
        Flow::Stop => return,
        Flow::LocalEnded => return session.close(),
    }
    let mut buffer = vec![0u8; READ_BUFFER];
    loop {
        let mut fds = vec![PollFd::new(client.as_fd(), PollFlags::POLLIN)];
        if let Some(local) = &session.local {
            fds.push(PollFd::new(local.as_fd(), PollFlags::POLLIN));
        }
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {}
            Err(nix::Error::EINTR) => continue,
            Err(_) => return,
        }
        let ready = |fd: &PollFd<'_>| fd.revents().is_some_and(|events| !events.is_empty());
        let client_ready = ready(&fds[0]);
        let local_ready = fds.get(1).is_some_and(ready);
        drop(fds);
        if client_ready {
            let read = match (&mut &*client).read(&mut buffer) {
                // Gone without a close frame: nobody to answer.
                Ok(0) | Err(_) => return,
                Ok(read) => read,
            };
            match session.receive(&buffer[..read]) {
                Flow::Continue => {}
                Flow::Stop => return,
                Flow::LocalEnded => return session.close(),
            }
        }
        if local_ready {
            let Some(local) = session.local.as_mut() else {
                continue;
            };
            match local.read(&mut buffer) {
                Ok(0) | Err(_) => return session.close(),
                Ok(read) => {
                    if !session.send(&encode(data, &buffer[..read])) {
                        return;
                    }
                }
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    /// The session is over (the client closed, left, or broke the protocol).
    Stop,
    /// The local side ended or refused a write: the server closes.
    LocalEnded,
}

struct Session<'c> {
    client: &'c UnixStream,
    local: Option<UnixStream>,
    decoder: Decoder,
    frames: Vec<Frame>,
}

impl Session<'_> {
    fn send(&self, frame: &[u8]) -> bool {
        let mut client = self.client;
        client
            .write_all(frame)
            .and_then(|()| client.flush())
            .is_ok()
    }

    /// Acts on the client's bytes.
    fn receive(&mut self, bytes: &[u8]) -> Flow {
        let result = self.decoder.decode(bytes, &mut self.frames);
        for frame in std::mem::take(&mut self.frames) {
            match frame {
                Frame::Data(bytes) => {
                    let written = self
                        .local
                        .as_mut()
                        .is_some_and(|local| local.write_all(&bytes).is_ok());
                    if !written {
                        return Flow::LocalEnded;
                    }
                }
                Frame::Ping(payload) => {
                    if !self.send(&encode(Opcode::Pong, &payload)) {
                        return Flow::Stop;
                    }
                }
                Frame::Pong(_) => {}
                Frame::Close(code) => {
                    tracing::debug!(?code, "websocket closed by the client");
                    // x/net answers every close with 1000, as Docker does.
                    self.send(&close_frame(CLOSE_NORMAL));
                    return Flow::Stop;
                }
            }
        }
        match result {
            Ok(()) => Flow::Continue,
            Err(error) => {
                tracing::debug!(%error, "websocket closed: bad frame from the client");
                self.send(&close_frame(error.close_code()));
                Flow::Stop
            }
        }
    }

    /// The server ends the session: the local side is dropped (its peer
    /// sees the end), a close frame with 1000 goes out, and the client's
    /// answer is awaited.
    fn close(mut self) {
        self.local = None;
        if self.send(&close_frame(CLOSE_NORMAL)) {
            self.await_close();
        }
    }

    /// After the server's close: reads (and drops) what the client still
    /// sends until its close frame, so that it sees a clean closing
    /// handshake; gives up after [`CLOSE_WAIT`].
    fn await_close(&mut self) {
        if self.client.set_read_timeout(Some(CLOSE_WAIT)).is_err() {
            return;
        }
        let deadline = std::time::Instant::now() + CLOSE_WAIT;
        let mut buffer = vec![0u8; 4096];
        while std::time::Instant::now() < deadline {
            let read = match (&mut &*self.client).read(&mut buffer) {
                Ok(0) | Err(_) => return,
                Ok(read) => read,
            };
            let result = self.decoder.decode(&buffer[..read], &mut self.frames);
            let closed = self
                .frames
                .drain(..)
                .any(|frame| matches!(frame, Frame::Close(_)));
            if closed || result.is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::http::websocket::frame::client_frame;

    const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

    /// Reads one server frame (unmasked) from `stream`.
    fn read_frame(stream: &mut UnixStream) -> (u8, Vec<u8>) {
        let mut head = [0u8; 2];
        stream.read_exact(&mut head).unwrap();
        assert_eq!(head[1] & 0x80, 0, "server frames are not masked");
        let length = match head[1] & 0x7f {
            126 => {
                let mut field = [0u8; 2];
                stream.read_exact(&mut field).unwrap();
                u64::from(u16::from_be_bytes(field))
            }
            127 => {
                let mut field = [0u8; 8];
                stream.read_exact(&mut field).unwrap();
                u64::from_be_bytes(field)
            }
            length => u64::from(length),
        };
        let mut payload = vec![0u8; length as usize];
        stream.read_exact(&mut payload).unwrap();
        (head[0], payload)
    }

    /// Runs [`serve_stream`] on socket pairs: (client peer, local peer, thread).
    fn serve(leftover: Vec<u8>) -> (UnixStream, UnixStream, std::thread::JoinHandle<()>) {
        let (client, client_peer) = UnixStream::pair().unwrap();
        let (local, local_peer) = UnixStream::pair().unwrap();
        let thread = std::thread::spawn(move || {
            serve_stream(&client, &leftover, local, Opcode::Binary);
        });
        client_peer
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        local_peer
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        (client_peer, local_peer, thread)
    }

    #[test]
    fn stream_carries_data_answers_pings_and_closes() {
        // The first frame came with the request head.
        let (mut client, mut local, thread) = serve(client_frame(true, 0x1, b"early ", MASK));
        client
            .write_all(&client_frame(true, 0x2, b"input\n", MASK))
            .unwrap();
        let mut received = [0u8; 12];
        local.read_exact(&mut received).unwrap();
        assert_eq!(&received, b"early input\n");
        client
            .write_all(&client_frame(true, 0x9, b"are you there", MASK))
            .unwrap();
        assert_eq!(read_frame(&mut client), (0x8a, b"are you there".to_vec()));
        local.write_all(b"output").unwrap();
        assert_eq!(read_frame(&mut client), (0x82, b"output".to_vec()));
        client
            .write_all(&client_frame(true, 0x8, &1000u16.to_be_bytes(), MASK))
            .unwrap();
        assert_eq!(read_frame(&mut client), (0x88, vec![0x03, 0xe8]));
        thread.join().unwrap();
        // The local side sees the end, and so does the client.
        let mut rest = Vec::new();
        local.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
        client.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
    }

    #[test]
    fn the_end_of_the_local_side_is_a_normal_close() {
        let (mut client, local, thread) = serve(Vec::new());
        (&local).write_all(b"last words").unwrap();
        drop(local);
        assert_eq!(read_frame(&mut client), (0x82, b"last words".to_vec()));
        assert_eq!(read_frame(&mut client), (0x88, vec![0x03, 0xe8]));
        // The client's answer ends the wait.
        client
            .write_all(&client_frame(true, 0x8, &1000u16.to_be_bytes(), MASK))
            .unwrap();
        thread.join().unwrap();
    }

    #[test]
    fn a_bad_frame_closes_with_its_code() {
        let (mut client, mut local, thread) = serve(Vec::new());
        // Unmasked: x/net closes with 1002.
        client.write_all(&[0x81, 0x02, b'h', b'i']).unwrap();
        assert_eq!(read_frame(&mut client), (0x88, vec![0x03, 0xea]));
        thread.join().unwrap();
        let mut rest = Vec::new();
        local.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());

        let (mut client, _local, thread) = serve(Vec::new());
        let mut header = vec![0x82, 0x80 | 127];
        header.extend_from_slice(&(MAX_FRAME + 1).to_be_bytes());
        client.write_all(&header).unwrap();
        assert_eq!(read_frame(&mut client), (0x88, vec![0x03, 0xf1]));
        thread.join().unwrap();
    }

    #[test]
    fn a_client_that_vanishes_ends_the_stream() {
        let (client, mut local, thread) = serve(Vec::new());
        drop(client);
        thread.join().unwrap();
        let mut rest = Vec::new();
        local.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
    }
}
