//! What one client may hold of the server: a connection (and its thread)
//! only while it sends a request head in time, or waits for its next
//! request no longer than the keep-alive idle timeout; and a bound on the
//! connections served at once. Without these a slowloris client (a head
//! sent one byte a minute) or an idle keep-alive client would keep a
//! thread forever, and enough of them would exhaust the process.
//!
//! Go's net/http (dockerd's server) is the model: `ReadHeaderTimeout`
//! counts from the start of a connection, or from the first byte of a
//! keep-alive connection's next request; `IdleTimeout` bounds the wait for
//! that byte; both end when the head is read, so a request's body, a
//! stream (`logs -f`, `events`) or a hijacked connection (`attach`,
//! `exec`) is never cut by them. Expired connections are closed without
//! an answer, as Go does. Over the connection bound, new connections wait
//! in the listening socket's backlog (as Go's `netutil.LimitListener`),
//! not refused: the accept loop takes the next one when one ends.

use std::io::BufReader;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use crate::http::HeadError;

/// `--read-header-timeout`'s default: far more than any client needs to
/// send a head (dockerd allows 5 minutes, which its own comment calls "not
/// a real concern"; berth serves the same sockets with less patience).
pub const DEFAULT_READ_HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// `--idle-connection-timeout`'s default, as many Go servers set
/// `IdleTimeout` (dockerd sets none, so its idle clients stay forever).
pub const DEFAULT_IDLE_CONNECTION_TIMEOUT: Duration = Duration::from_secs(120);
/// `--max-connections`'s default. Each connection costs a thread with a
/// 1 MiB stack reservation (a TLS one two), a few KiB resident.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// The limits `berth serve` applies to clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// The whole request head must arrive within this; None: no limit.
    pub read_header_timeout: Option<Duration>,
    /// A keep-alive connection waiting this long for its next request is
    /// closed; None: no limit.
    pub idle_connection_timeout: Option<Duration>,
    /// Connections served at once (at least 1).
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            read_header_timeout: Some(DEFAULT_READ_HEADER_TIMEOUT),
            idle_connection_timeout: Some(DEFAULT_IDLE_CONNECTION_TIMEOUT),
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// The count of connections being served, against the bound.
pub struct ConnectionSlots {
    max: usize,
    open: Mutex<usize>,
    freed: Condvar,
}

/// One connection's place; given back when dropped (a TLS connection's
/// two threads share it in an `Arc`).
pub struct ConnectionSlot<'a>(&'a ConnectionSlots);

impl ConnectionSlots {
    pub fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            open: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, usize> {
        // A counter stays consistent whatever panicked while holding it.
        self.open
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A place for one more connection, if there is room.
    pub fn try_take(&self) -> Option<ConnectionSlot<'_>> {
        let mut open = self.lock();
        if *open >= self.max {
            return None;
        }
        *open += 1;
        Some(ConnectionSlot(self))
    }

    pub fn has_room(&self) -> bool {
        *self.lock() < self.max
    }

    /// Waits up to `timeout` for room; true when there is some.
    pub fn wait_for_room(&self, timeout: Duration) -> bool {
        let open = self.lock();
        let (open, _) = self
            .freed
            .wait_timeout_while(open, timeout, |open| *open >= self.max)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *open < self.max
    }

    /// Connections being served now.
    pub fn open(&self) -> usize {
        *self.lock()
    }
}

impl Drop for ConnectionSlot<'_> {
    fn drop(&mut self) {
        let mut open = self.0.lock();
        *open = open.saturating_sub(1);
        self.0.freed.notify_all();
    }
}

/// What waiting for a keep-alive connection's next request found.
#[derive(Debug, PartialEq, Eq)]
pub enum NextRequest {
    /// Bytes (or the client's end of the connection) arrived: read on.
    Ready,
    /// Nothing came within the idle timeout.
    Idle,
}

/// Waits for the first byte of the next request on a keep-alive
/// connection, up to `timeout` (None: forever). Bytes already buffered
/// (a pipelined request) count as arrived.
pub fn wait_for_request(
    reader: &BufReader<UnixStream>,
    timeout: Option<Duration>,
) -> Result<NextRequest, nix::Error> {
    if !reader.buffer().is_empty() {
        return Ok(NextRequest::Ready);
    }
    let deadline = timeout.map(|timeout| Instant::now() + timeout);
    loop {
        let wait = match deadline {
            None => PollTimeout::NONE,
            Some(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(NextRequest::Idle);
                }
                poll_timeout(left)
            }
        };
        let mut fds = [PollFd::new(reader.get_ref().as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, wait) {
            // POLLIN, or POLLHUP/POLLERR: the read that follows says which.
            Ok(ready) if ready > 0 => return Ok(NextRequest::Ready),
            Ok(_) | Err(nix::Error::EINTR) => {}
            Err(error) => return Err(error),
        }
    }
}

/// A poll(2) timeout of at least 1 ms (rounded up, so a wait never ends
/// just before its deadline and spins).
fn poll_timeout(duration: Duration) -> PollTimeout {
    let millis = duration
        .as_micros()
        .div_ceil(1000)
        .clamp(1, i32::MAX as u128);
    PollTimeout::try_from(millis as i32).unwrap_or(PollTimeout::MAX)
}

/// Bounds each read of a request head by what is left until `deadline`
/// (None: no bound): the hook [`crate::http::request::read_head_with`]
/// runs before it reads more input.
pub fn before_head_read(
    deadline: Option<Instant>,
) -> impl FnMut(&mut BufReader<UnixStream>) -> Result<(), HeadError> {
    move |reader| {
        let Some(deadline) = deadline else {
            return Ok(());
        };
        if !reader.buffer().is_empty() {
            return Ok(());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(HeadError::TimedOut);
        }
        reader
            .get_ref()
            .set_read_timeout(Some(left))
            .map_err(HeadError::Io)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::io::Write;

    #[test]
    fn slots_are_bounded_and_given_back() {
        let slots = ConnectionSlots::new(2);
        let first = slots.try_take().unwrap();
        let second = slots.try_take().unwrap();
        assert!(slots.try_take().is_none());
        assert!(!slots.wait_for_room(Duration::from_millis(10)));
        drop(first);
        assert!(slots.wait_for_room(Duration::from_millis(10)));
        assert_eq!(slots.open(), 1);
        drop(second);
        assert_eq!(slots.open(), 0);
        // 0 would serve nobody: it means 1.
        let one = ConnectionSlots::new(0);
        let _only = one.try_take().unwrap();
        assert!(one.try_take().is_none());
    }

    #[test]
    fn a_slow_head_times_out_and_an_idle_wait_ends() {
        let (client, server) = UnixStream::pair().unwrap();
        let mut reader = BufReader::new(server);
        assert_eq!(
            wait_for_request(&reader, Some(Duration::from_millis(20))).unwrap(),
            NextRequest::Idle
        );
        (&client).write_all(b"GET /_ping HTTP/1.1\r\n").unwrap();
        assert_eq!(
            wait_for_request(&reader, Some(Duration::from_millis(20))).unwrap(),
            NextRequest::Ready
        );
        let deadline = Some(Instant::now() + Duration::from_millis(100));
        let started = Instant::now();
        let result = crate::http::request::read_head_with(&mut reader, before_head_read(deadline));
        assert!(matches!(result, Err(HeadError::TimedOut)), "{result:?}");
        assert!(started.elapsed() >= Duration::from_millis(90));
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
