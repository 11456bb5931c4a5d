//! A TCP proxy on 127.0.0.1 that relays to one upstream (a test registry)
//! and slows what comes back to a set rate per connection, so that a test
//! can act while a big blob is on its way. It counts the bytes it relayed
//! to clients. When the upstream closes (killed), the client's connection
//! is closed after what was already relayed; when the upstream cannot be
//! reached, the client's connection is reset, as a dead server's would be.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CHUNK: usize = 16 * 1024;

pub struct ThrottlingProxy {
    host: String,
    shared: Arc<Shared>,
}

struct Shared {
    upstream: String,
    /// Bytes per second per connection; 0: as fast as it goes.
    rate: AtomicU64,
    relayed: AtomicU64,
    stopped: AtomicBool,
}

impl ThrottlingProxy {
    /// Listens on a free port of 127.0.0.1, relaying to `upstream`
    /// (`127.0.0.1:PORT`) at `bytes_per_second` per connection.
    pub fn start(upstream: &str, bytes_per_second: u64) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let host = listener.local_addr().unwrap().to_string();
        let shared = Arc::new(Shared {
            upstream: upstream.to_owned(),
            rate: AtomicU64::new(bytes_per_second),
            relayed: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&shared);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if accepting.stopped.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(client) = client else { continue };
                let shared = Arc::clone(&accepting);
                std::thread::spawn(move || relay(client, &shared));
            }
        });
        Self { host, shared }
    }

    /// `127.0.0.1:PORT`, to put in image references.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Bytes sent to clients so far, all connections together.
    pub fn relayed(&self) -> u64 {
        self.shared.relayed.load(Ordering::Relaxed)
    }

    pub fn set_rate(&self, bytes_per_second: u64) {
        self.shared.rate.store(bytes_per_second, Ordering::Relaxed);
    }

    /// Waits until `bytes` were relayed, or `timeout`; true when they were.
    pub fn wait_relayed(&self, bytes: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.relayed() < bytes {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }
}

impl Drop for ThrottlingProxy {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::Relaxed);
        // Wakes the accept loop up so that it sees `stopped`.
        let _ = TcpStream::connect(&self.host);
    }
}

fn relay(client: TcpStream, shared: &Shared) {
    let upstream = match TcpStream::connect(&shared.upstream) {
        Ok(upstream) => upstream,
        Err(_) => {
            reset(&client);
            return;
        }
    };
    let (Ok(mut client_reader), Ok(mut upstream_writer)) =
        (client.try_clone(), upstream.try_clone())
    else {
        return;
    };
    // Requests go up unthrottled.
    let requests = std::thread::spawn(move || {
        let _ = std::io::copy(&mut client_reader, &mut upstream_writer);
        let _ = upstream_writer.shutdown(Shutdown::Write);
    });
    relay_responses(upstream, &client, shared);
    let _ = client.shutdown(Shutdown::Both);
    let _ = requests.join();
}

/// Copies the upstream's answers to the client at the set rate, until the
/// upstream closes or fails.
fn relay_responses(mut upstream: TcpStream, mut client: &TcpStream, shared: &Shared) {
    let mut buffer = vec![0; CHUNK];
    let started = Instant::now();
    let mut sent: u64 = 0;
    loop {
        let count = match upstream.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(count) => count,
        };
        if client.write_all(&buffer[..count]).is_err() {
            let _ = upstream.shutdown(Shutdown::Both);
            return;
        }
        sent += count as u64;
        shared.relayed.fetch_add(count as u64, Ordering::Relaxed);
        let rate = shared.rate.load(Ordering::Relaxed);
        if rate > 0 {
            let due = Duration::from_secs_f64(sent as f64 / rate as f64);
            if let Some(wait) = due.checked_sub(started.elapsed()) {
                std::thread::sleep(wait);
            }
        }
    }
}

/// Closes `stream` with a reset (SO_LINGER 0), as a host with nothing
/// listening answers.
fn reset(stream: &TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    let _ =
        nix::sys::socket::setsockopt(&stream.as_fd(), nix::sys::socket::sockopt::Linger, &linger);
}
