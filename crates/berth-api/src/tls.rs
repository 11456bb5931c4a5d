//! `-H tcp://…`: TLS with client certificates (dockerd's `--tlsverify`).
//!
//! Only clients with a certificate signed by `--tlscacert` get through;
//! the handshake is finished (and the certificate verified) before
//! anything reaches the API. TLS ends here, in a pump: every accepted
//! connection gets one thread that does the handshake, then hands one end
//! of a `UnixStream::pair()` to [`server::handle_connection`] (on a thread
//! of its own, as for a unix client) and moves bytes between the other end
//! and the TLS connection with rustls' `read_tls`/`process_new_packets`/
//! `write_tls` state machine, waiting in poll(2) on both descriptors. The
//! HTTP code (hijacked streams included) thus sees the same kind of socket
//! whichever way a client came.
//!
//! Closing, both ways, is carried over as the API code expects of a unix
//! client (see `server::client_gone`):
//! - the client's `close_notify` (Go's `tls.Conn.CloseWrite`, which the
//!   docker CLI sends when stdin ends on an attach or exec) shuts the
//!   pair's write side: the handler reads EOF and goes on writing;
//! - the client's TCP end (FIN or reset) means it left: the pair is closed,
//!   so that long waits (`wait`, `events`, `logs -f`) stop, as on a unix
//!   socket (Go's net/http cancels a request on a read EOF too);
//! - the handler closing its end: `close_notify` is sent, the TCP write
//!   side shut, and what the client still sends is read for a moment, so
//!   that it sees our answer rather than a reset (as `server::linger`).

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, ServerConnection};

use crate::limits::ConnectionSlot;
use crate::server::{self, Server};

/// A client that has not finished its handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Plaintext moved per read; one TLS record holds at most 16 KiB.
const CHUNK: usize = 16 * 1024;
/// After our side is done, how long and how much of the client's input is
/// read and dropped before closing (see `server::linger`).
const LINGER_TIME: Duration = Duration::from_secs(1);
const LINGER_BYTES: usize = 256 * 1024;

/// `--tlscacert`, `--tlscert`, `--tlskey`.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The CA that signs client certificates: only its clients get in.
    pub ca_certificate: PathBuf,
    /// The server's certificate (chain), and its key.
    pub certificate: PathBuf,
    pub key: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("failed to read the TLS {what} {path:?}")]
    Read {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to parse the TLS {what} {path:?} (PEM expected)")]
    Pem {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    #[error("no {expected} in the TLS {what} {path:?}")]
    Empty {
        what: &'static str,
        expected: &'static str,
        path: PathBuf,
    },
    #[error("invalid CA certificate in {path:?}")]
    CaCertificate {
        path: PathBuf,
        #[source]
        source: rustls::Error,
    },
    #[error("failed to use the CA certificates of {path:?} to verify clients")]
    Verifier {
        path: PathBuf,
        #[source]
        source: rustls::server::VerifierBuilderError,
    },
    #[error("failed to use the TLS certificate {certificate:?} with the key {key:?}")]
    KeyPair {
        certificate: PathBuf,
        key: PathBuf,
        #[source]
        source: rustls::Error,
    },
}

/// The server's TLS configuration: its certificate and key, and client
/// certificates required and verified against the CA.
pub struct TlsAcceptor {
    config: Arc<ServerConfig>,
}

impl std::fmt::Debug for TlsAcceptor {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("TlsAcceptor")
    }
}

impl TlsAcceptor {
    /// Reads and checks the three files; any problem is an error naming
    /// the file, before the server listens anywhere.
    pub fn load(files: &TlsFiles) -> Result<Self, TlsError> {
        // ring, the provider ureq already brings (no second crypto library).
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let authorities = read_pem_all::<CertificateDer<'static>>(
            "CA certificate (--tlscacert)",
            "certificate",
            &files.ca_certificate,
        )?;
        let mut roots = RootCertStore::empty();
        for authority in authorities {
            roots
                .add(authority)
                .map_err(|source| TlsError::CaCertificate {
                    path: files.ca_certificate.clone(),
                    source,
                })?;
        }
        let verifier =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .map_err(|source| TlsError::Verifier {
                    path: files.ca_certificate.clone(),
                    source,
                })?;
        let chain = read_pem_all::<CertificateDer<'static>>(
            "certificate (--tlscert)",
            "certificate",
            &files.certificate,
        )?;
        let key = read_pem_key(&files.key)?;
        let key_pair_error = |source| TlsError::KeyPair {
            certificate: files.certificate.clone(),
            key: files.key.clone(),
            source,
        };
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(key_pair_error)?
            .with_client_cert_verifier(verifier)
            // Checks that the key parses and belongs to the certificate.
            .with_single_cert(chain, key)
            .map_err(key_pair_error)?;
        Ok(Self {
            config: Arc::new(config),
        })
    }
}

fn read_file(what: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    fs_err::read(path).map_err(|source| TlsError::Read {
        what,
        path: path.to_owned(),
        source,
    })
}

fn read_pem_all<T: PemObject>(
    what: &'static str,
    expected: &'static str,
    path: &Path,
) -> Result<Vec<T>, TlsError> {
    let bytes = read_file(what, path)?;
    let items = T::pem_slice_iter(&bytes)
        .collect::<Result<Vec<T>, _>>()
        .map_err(|source| TlsError::Pem {
            what,
            path: path.to_owned(),
            source,
        })?;
    if items.is_empty() {
        return Err(TlsError::Empty {
            what,
            expected,
            path: path.to_owned(),
        });
    }
    Ok(items)
}

fn read_pem_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    const WHAT: &str = "key (--tlskey)";
    let bytes = read_file(WHAT, path)?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|source| match source {
        rustls::pki_types::pem::Error::NoItemsFound => TlsError::Empty {
            what: WHAT,
            expected: "private key",
            path: path.to_owned(),
        },
        source => TlsError::Pem {
            what: WHAT,
            path: path.to_owned(),
            source,
        },
    })
}

/// Serves one accepted TCP connection; runs on its own thread until the
/// connection ends. `slot` is its place under `--max-connections`, held
/// by this thread and the handler's until both are done.
pub fn serve_connection(
    server: &'static Server,
    acceptor: &TlsAcceptor,
    tcp: TcpStream,
    peer: SocketAddr,
    slot: Arc<ConnectionSlot<'static>>,
) {
    let mut tls = match ServerConnection::new(acceptor.config.clone()) {
        Ok(tls) => tls,
        Err(error) => {
            tracing::warn!(%peer, %error, "failed to start a TLS connection");
            return;
        }
    };
    if let Err(error) = tcp.set_nonblocking(true) {
        tracing::warn!(%peer, %error, "failed to set up a TCP connection");
        return;
    }
    keep_alive(&tcp);
    {
        // A handshake under way keeps the server from going idle.
        let _open = server.activity.begin();
        match handshake(&mut tls, &tcp) {
            Ok(()) => {}
            // A port probe, or a client that gave up: nothing to report.
            Err(error @ PumpError::Closed) => {
                tracing::debug!(%peer, %error, "TLS handshake not finished");
                return;
            }
            Err(error) => {
                tracing::warn!(%peer, %error, "TLS handshake failed");
                return;
            }
        }
    }
    tracing::debug!(%peer, "TLS client authenticated");
    let (ours, theirs) = match UnixStream::pair() {
        Ok(pair) => pair,
        Err(error) => {
            tracing::warn!(%peer, %error, "failed to create a socket pair");
            return;
        }
    };
    if let Err(error) = ours.set_nonblocking(true) {
        tracing::warn!(%peer, %error, "failed to set up a socket pair");
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("berth-api-connection".to_owned())
        .stack_size(1024 * 1024)
        .spawn({
            let slot = Arc::clone(&slot);
            move || {
                let _slot = slot;
                server::handle_connection(server, theirs);
            }
        });
    if let Err(error) = spawned {
        tracing::warn!(%peer, %error, "failed to start a connection thread");
        return;
    }
    let mut pump = Pump::new(tls, tcp, ours);
    match pump.run() {
        Ok(()) => pump.linger(),
        Err(error) => tracing::debug!(%peer, %error, "TLS connection ended"),
    }
}

/// Dead peers (a cable pulled, a laptop closed) are found by TCP
/// keep-alive, every 15 s as Go's net/http server (dockerd) does: the
/// connection errors, and its threads end.
fn keep_alive(tcp: &TcpStream) {
    use nix::sys::socket::{setsockopt, sockopt};
    let _ = setsockopt(tcp, sockopt::KeepAlive, &true);
    let _ = setsockopt(tcp, sockopt::TcpKeepIdle, &15);
    let _ = setsockopt(tcp, sockopt::TcpKeepInterval, &15);
}

#[derive(Debug, thiserror::Error)]
enum PumpError {
    #[error("timed out")]
    Timeout,
    #[error("the client closed the connection")]
    Closed,
    #[error(transparent)]
    Tls(#[from] rustls::Error),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Poll(#[from] nix::Error),
}

/// Runs the handshake on the non-blocking `tcp`, within
/// [`HANDSHAKE_TIMEOUT`] however slowly the client sends.
fn handshake(tls: &mut ServerConnection, tcp: &TcpStream) -> Result<(), PumpError> {
    let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
    while tls.is_handshaking() {
        flush(tls, tcp)?;
        let mut flags = PollFlags::POLLIN;
        if tls.wants_write() {
            flags |= PollFlags::POLLOUT;
        }
        let left = deadline
            .checked_duration_since(Instant::now())
            .ok_or(PumpError::Timeout)?;
        let mut fds = [PollFd::new(tcp.as_fd(), flags)];
        match poll(&mut fds, poll_timeout(left)) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(nix::Error::EINTR) => continue,
            Err(error) => return Err(error.into()),
        }
        match tls.read_tls(&mut &*tcp) {
            Ok(0) => return Err(PumpError::Closed),
            Ok(_) => {
                if let Err(error) = tls.process_new_packets() {
                    // The alert (bad certificate, …) tells the client why.
                    let _ = tls.write_tls(&mut &*tcp);
                    return Err(error.into());
                }
            }
            Err(error) if error.kind() == ErrorKind::WouldBlock => {}
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

fn poll_timeout(duration: Duration) -> PollTimeout {
    PollTimeout::try_from(duration.as_millis().clamp(1, 60_000) as i32).unwrap_or(PollTimeout::MAX)
}

/// Writes what TLS records rustls has to `tcp`, until done or the socket
/// is full.
fn flush(tls: &mut ServerConnection, tcp: &TcpStream) -> Result<(), std::io::Error> {
    while tls.wants_write() {
        match tls.write_tls(&mut &*tcp) {
            Ok(_) => {}
            Err(error) if error.kind() == ErrorKind::WouldBlock => return Ok(()),
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// One TLS connection and its end of the pair to the handler.
struct Pump {
    tls: ServerConnection,
    tcp: TcpStream,
    unix: UnixStream,
    /// Plaintext from the client not yet taken by the handler.
    to_server: Vec<u8>,
    /// Plaintext from the handler not yet taken by rustls.
    to_client: Vec<u8>,
    /// The client sent `close_notify`: it sends nothing more.
    client_done: bool,
    /// ... and the handler was told (its read side shut).
    client_done_forwarded: bool,
    /// The handler shut its write side (read EOF).
    server_done: bool,
    /// `close_notify` is queued.
    close_notify_sent: bool,
    /// The handler closed its end (POLLHUP or a write error): what the
    /// client still sends is dropped.
    server_gone: bool,
}

impl Pump {
    fn new(tls: ServerConnection, tcp: TcpStream, unix: UnixStream) -> Self {
        Self {
            tls,
            tcp,
            unix,
            to_server: Vec::new(),
            to_client: Vec::new(),
            client_done: false,
            client_done_forwarded: false,
            server_done: false,
            close_notify_sent: false,
            server_gone: false,
        }
    }

    /// Moves bytes both ways until the handler is done and everything it
    /// said is sent (Ok), or the client left or failed (Err: nothing more
    /// can reach it). Returning drops the pair's end, which the handler
    /// sees as a client gone.
    fn run(&mut self) -> Result<(), PumpError> {
        loop {
            self.take_plaintext()?;
            self.write_to_server();
            if self.client_done && self.to_server.is_empty() && !self.client_done_forwarded {
                let _ = self.unix.shutdown(Shutdown::Write);
                self.client_done_forwarded = true;
            }
            self.give_plaintext()?;
            if self.server_done && self.to_client.is_empty() && !self.close_notify_sent {
                self.tls.send_close_notify();
                self.close_notify_sent = true;
            }
            flush(&mut self.tls, &self.tcp)?;
            if self.close_notify_sent
                && !self.tls.wants_write()
                && (self.server_gone || self.client_done_forwarded)
            {
                return Ok(());
            }
            self.wait()?;
        }
    }

    /// Moves the client's decrypted bytes from rustls to `to_server`.
    fn take_plaintext(&mut self) -> Result<(), PumpError> {
        let mut buffer = [0u8; CHUNK];
        loop {
            match self.tls.reader().read(&mut buffer) {
                Ok(0) => {
                    self.client_done = true;
                    return Ok(());
                }
                Ok(read) => {
                    if !self.server_gone {
                        self.to_server.extend_from_slice(&buffer[..read]);
                    }
                }
                Err(error) if error.kind() == ErrorKind::WouldBlock => return Ok(()),
                // TCP ended without close_notify: the client left.
                Err(error) if error.kind() == ErrorKind::UnexpectedEof => {
                    return Err(PumpError::Closed)
                }
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// Writes `to_server` to the handler as far as it takes it.
    fn write_to_server(&mut self) {
        while !self.to_server.is_empty() {
            match self.unix.write(&self.to_server) {
                Ok(written) => {
                    self.to_server.drain(..written);
                }
                Err(error) if error.kind() == ErrorKind::WouldBlock => return,
                Err(error) if error.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    // The handler closed its end; it reads nothing more.
                    self.server_gone = true;
                    self.to_server.clear();
                }
            }
        }
    }

    /// Hands `to_client` to rustls as far as its buffer takes it.
    fn give_plaintext(&mut self) -> Result<(), PumpError> {
        while !self.to_client.is_empty() {
            let written = self.tls.writer().write(&self.to_client)?;
            if written == 0 {
                break;
            }
            self.to_client.drain(..written);
        }
        Ok(())
    }

    /// Waits until one side can move, and moves what came in.
    fn wait(&mut self) -> Result<(), PumpError> {
        // Read from one side only when the other has taken everything:
        // the sockets' buffers, not ours, hold what is in flight.
        let mut tcp_flags = PollFlags::empty();
        // After close_notify, reads only notice the TCP end.
        if self.client_done || self.to_server.is_empty() {
            tcp_flags |= PollFlags::POLLIN;
        }
        if self.tls.wants_write() {
            tcp_flags |= PollFlags::POLLOUT;
        }
        let mut unix_flags = PollFlags::empty();
        if !self.server_done && self.to_client.is_empty() && !self.tls.wants_write() {
            unix_flags |= PollFlags::POLLIN;
        }
        if !self.to_server.is_empty() {
            unix_flags |= PollFlags::POLLOUT;
        }
        // POLLHUP is reported whatever is asked: once the handler closed,
        // its end is left out unless there is something to do on it, or
        // the loop would spin.
        let watch_unix = !unix_flags.is_empty() || !self.server_gone;
        let mut fds = vec![PollFd::new(self.tcp.as_fd(), tcp_flags)];
        if watch_unix {
            fds.push(PollFd::new(self.unix.as_fd(), unix_flags));
        }
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {}
            Err(nix::Error::EINTR) => return Ok(()),
            Err(error) => return Err(error.into()),
        }
        let tcp_events = fds[0].revents().unwrap_or(PollFlags::empty());
        let unix_events = fds
            .get(1)
            .and_then(|fd| fd.revents())
            .unwrap_or(PollFlags::empty());
        drop(fds);

        if tcp_events.intersects(PollFlags::POLLERR | PollFlags::POLLHUP) {
            return Err(PumpError::Closed);
        }
        if tcp_events.contains(PollFlags::POLLIN) {
            self.read_client()?;
        }
        if unix_events.contains(PollFlags::POLLHUP) {
            self.server_gone = true;
        }
        if unix_events.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR)
            && !self.server_done
            && self.to_client.is_empty()
        {
            self.read_server();
        }
        Ok(())
    }

    fn read_client(&mut self) -> Result<(), PumpError> {
        if self.client_done {
            // Past close_notify rustls reads nothing; what matters now is
            // whether the client is still there (anything it sends is
            // dropped).
            let mut buffer = [0u8; CHUNK];
            return match (&self.tcp).read(&mut buffer) {
                Ok(0) => Err(PumpError::Closed),
                Ok(_) => Ok(()),
                Err(error)
                    if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) =>
                {
                    Ok(())
                }
                Err(error) => Err(error.into()),
            };
        }
        match self.tls.read_tls(&mut &self.tcp) {
            Ok(0) => Err(PumpError::Closed),
            Ok(_) => match self.tls.process_new_packets() {
                Ok(_) => Ok(()),
                Err(error) => {
                    let _ = self.tls.write_tls(&mut &self.tcp);
                    Err(error.into())
                }
            },
            Err(error)
                if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) =>
            {
                Ok(())
            }
            Err(error) => Err(error.into()),
        }
    }

    fn read_server(&mut self) {
        let mut buffer = [0u8; CHUNK];
        match self.unix.read(&mut buffer) {
            Ok(0) => self.server_done = true,
            Ok(read) => self.to_client.extend_from_slice(&buffer[..read]),
            Err(error)
                if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
            Err(_) => {
                self.server_done = true;
                self.server_gone = true;
            }
        }
    }

    /// The handler is done and all it said is sent: shut our write side
    /// and read what the client still sends for a moment, so that closing
    /// does not reset the connection under an answer it has not read yet.
    fn linger(&mut self) {
        let _ = self.tcp.shutdown(Shutdown::Write);
        if self.tcp.set_nonblocking(false).is_err() {
            return;
        }
        let deadline = Instant::now() + LINGER_TIME;
        let mut buffer = [0u8; CHUNK];
        let mut drained = 0;
        while drained < LINGER_BYTES {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return;
            };
            if self
                .tcp
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .is_err()
            {
                return;
            }
            match self.tcp.read(&mut buffer) {
                Ok(0) | Err(_) => return,
                Ok(read) => drained += read,
            }
        }
    }
}
