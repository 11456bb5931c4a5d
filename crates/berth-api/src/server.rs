//! The accept loop, one thread per connection (at most
//! `--max-connections`, see [`crate::limits`]), the idle timer, and the
//! state the server keeps between requests (attaches waiting for a start,
//! exec instances, exit codes of containers it started, warm pool claims of
//! containers it created).

use std::collections::HashMap;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use berth_engine::containers::PreparedRun;
use berth_engine::{Engine, EngineConfig};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use crate::error::ApiError;
use crate::http::request::read_head_with;
use crate::http::{write_response, Connection, HeadError, Response};
use crate::limits::{
    before_head_read, wait_for_request, ConnectionLimits, ConnectionSlots, NextRequest,
};
use crate::listen::{open_listeners, ListenError, Listener, Socket};
use crate::routes::attach::PendingAttach;
use crate::routes::exec::ExecInstance;
use crate::tls::{TlsAcceptor, TlsError, TlsFiles};

/// `berth serve`'s settings.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub engine: EngineConfig,
    /// `-H` values; empty means systemd's sockets or the default socket.
    pub hosts: Vec<String>,
    /// The socket's group (`--group`).
    pub group: Option<String>,
    /// Exit after this long with no request or stream open.
    pub idle_timeout: Option<Duration>,
    /// `--tlsverify`: the files for `tcp://` hosts, which are refused
    /// without them (clients must present a certificate the CA signed).
    pub tls: Option<TlsFiles>,
    /// The berth binary, which the server runs for anything that forks
    /// (starting a container, exec): a multi-threaded process must not
    /// fork and go on running Rust code in the child.
    pub helper: PathBuf,
    /// Header and keep-alive timeouts, and the connection bound.
    pub limits: ConnectionLimits,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Listen(#[from] ListenError),
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("failed to wait for connections")]
    Poll(#[source] nix::Error),
}

/// Counts what is open (requests being answered, streams); the server
/// is idle when nothing has been open for the idle timeout.
pub struct Activity {
    open: AtomicUsize,
    last: Mutex<Instant>,
    /// Memory was given back since the last request.
    trimmed: std::sync::atomic::AtomicBool,
}

pub struct ActivityGuard<'a>(&'a Activity);

impl Activity {
    fn new() -> Self {
        Self {
            open: AtomicUsize::new(0),
            last: Mutex::new(Instant::now()),
            trimmed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub fn begin(&self) -> ActivityGuard<'_> {
        self.open.fetch_add(1, Ordering::SeqCst);
        self.trimmed.store(false, Ordering::SeqCst);
        self.touch();
        ActivityGuard(self)
    }

    fn touch(&self) {
        if let Ok(mut last) = self.last.lock() {
            *last = Instant::now();
        }
    }

    /// How long nothing has been open; None while something is.
    fn idle_for(&self) -> Option<Duration> {
        if self.open.load(Ordering::SeqCst) > 0 {
            return None;
        }
        self.last.lock().ok().map(|last| last.elapsed())
    }
}

impl Drop for ActivityGuard<'_> {
    fn drop(&mut self) {
        self.0.touch();
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Exit codes of containers whose exit the server watches (those it
/// started attached, or with `--rm`): `wait` needs them after the
/// container's record is gone.
#[derive(Default)]
pub struct ExitBoard {
    codes: Mutex<HashMap<String, (Option<i32>, Instant)>>,
    changed: Condvar,
}

impl ExitBoard {
    /// The container is starting; its code will be recorded.
    pub fn expect(&self, id: &str) {
        if let Ok(mut codes) = self.codes.lock() {
            // Old entries go: a wait comes right after the exit or never.
            codes.retain(|_, (code, when)| {
                code.is_none() || when.elapsed() < Duration::from_secs(600)
            });
            codes.insert(id.to_owned(), (None, Instant::now()));
        }
    }

    pub fn record(&self, id: &str, code: Option<i32>) {
        if let Ok(mut codes) = self.codes.lock() {
            codes.insert(id.to_owned(), (Some(code.unwrap_or(-1)), Instant::now()));
        }
        self.changed.notify_all();
    }

    /// None: not watched. Some(None): still running.
    pub fn get(&self, id: &str) -> Option<Option<i32>> {
        self.codes.lock().ok()?.get(id).map(|(code, _)| *code)
    }

    /// Waits up to `timeout` for the code of a watched container.
    pub fn wait(&self, id: &str, timeout: Duration) -> Option<i32> {
        let deadline = Instant::now() + timeout;
        let mut codes = self.codes.lock().ok()?;
        loop {
            match codes.get(id) {
                None => return None,
                Some((Some(code), _)) => return Some(*code),
                Some((None, _)) => {}
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            codes = self.changed.wait_timeout(codes, left).ok()?.0;
        }
    }
}

/// How long a container created from a warm pool member may wait for its
/// start before the member is released (see [`HeldClaims`]). `docker run`
/// starts within milliseconds of its create; a `docker create` whose start
/// comes later gets an ordinary created container.
pub const CLAIM_HOLD: Duration = Duration::from_secs(30);

/// Warm pool members claimed by `POST /containers/create` whose container
/// was not started yet, by container id. `start` takes its claim and hands
/// the member its streams; whatever else would change the container (`rm`,
/// `update`, `prune`), a claim older than [`CLAIM_HOLD`] and the server's
/// exit release it, which leaves an ordinary created container (a server
/// killed outright closes the members' sockets, which they take as the
/// same).
#[derive(Default)]
pub struct HeldClaims {
    claims: Mutex<HashMap<String, (PreparedRun, Instant)>>,
}

impl HeldClaims {
    pub fn hold(&self, run: PreparedRun) {
        if let Ok(mut claims) = self.claims.lock() {
            claims.insert(run.id.clone(), (run, Instant::now()));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.claims.lock().map_or(true, |claims| claims.is_empty())
    }

    /// The claim of container `id` (a full id), now the caller's.
    pub fn take(&self, id: &str) -> Option<PreparedRun> {
        let mut claims = self.claims.lock().ok()?;
        claims.remove(id).map(|(run, _)| run)
    }

    /// Releases the claim of container `id`, if one is held; returns once
    /// the container is an ordinary created one.
    pub fn release(&self, id: &str) {
        if let Some(run) = self.take(id) {
            run.release();
        }
    }

    /// Releases every held claim (before a prune, or at exit).
    pub fn release_all(&self) {
        let runs: Vec<PreparedRun> = match self.claims.lock() {
            Ok(mut claims) => claims.drain().map(|(_, (run, _))| run).collect(),
            Err(_) => return,
        };
        for run in runs {
            run.release();
        }
    }

    /// Releases, on a thread of their own, the claims held longer than
    /// [`CLAIM_HOLD`].
    fn release_expired(&self) {
        let expired: Vec<PreparedRun> = match self.claims.lock() {
            Ok(mut claims) if !claims.is_empty() => {
                let ids: Vec<String> = claims
                    .iter()
                    .filter(|(_, (_, since))| since.elapsed() >= CLAIM_HOLD)
                    .map(|(id, _)| id.clone())
                    .collect();
                ids.iter()
                    .filter_map(|id| claims.remove(id))
                    .map(|(run, _)| run)
                    .collect()
            }
            _ => return,
        };
        if expired.is_empty() {
            return;
        }
        let released = std::thread::Builder::new()
            .name("berth-api-release".to_owned())
            .stack_size(256 * 1024)
            .spawn(move || {
                for run in expired {
                    tracing::debug!(container = %run.id, "an unstarted claim is released");
                    run.release();
                }
            });
        if let Err(error) = released {
            tracing::warn!(%error, "failed to start a thread to release claims");
        }
    }
}

/// Everything the handlers share.
pub struct Server {
    pub config: ServeConfig,
    pub activity: Activity,
    /// Attach requests for containers not started yet, by container id.
    pub attaches: Mutex<HashMap<String, PendingAttach>>,
    pub execs: Mutex<HashMap<String, Arc<ExecInstance>>>,
    pub exits: ExitBoard,
    pub claims: HeldClaims,
    /// Connections being served, against `--max-connections`.
    pub connections: ConnectionSlots,
}

impl Server {
    pub fn new(config: ServeConfig) -> Self {
        Self {
            connections: ConnectionSlots::new(config.limits.max_connections),
            config,
            activity: Activity::new(),
            attaches: Mutex::new(HashMap::new()),
            execs: Mutex::new(HashMap::new()),
            exits: ExitBoard::default(),
            claims: HeldClaims::default(),
        }
    }

    /// An engine for one request (its own store connection).
    pub fn engine(&self) -> Result<Engine, ApiError> {
        Engine::open(self.config.engine.clone()).map_err(ApiError::from)
    }
}

/// Runs the server until the idle timeout (forever without one).
pub fn serve(config: ServeConfig) -> Result<(), ServeError> {
    // The certificates are checked before anything listens: a bad file
    // leaves no socket behind.
    let tls = match &config.tls {
        Some(files) => Some(Arc::new(TlsAcceptor::load(files)?)),
        None => None,
    };
    let listeners = open_listeners(&config.hosts, config.group.as_deref(), tls)?;
    for listener in &listeners {
        match &listener.socket {
            Socket::Unix(socket) => {
                if let Some(path) = &listener.path {
                    tracing::info!(socket = %path.display(), "listening");
                }
                let _ = socket.set_nonblocking(true);
            }
            Socket::Tcp { listener, .. } => {
                if let Ok(address) = listener.local_addr() {
                    tracing::info!(%address, "listening (TLS, client certificates required)");
                }
                let _ = listener.set_nonblocking(true);
            }
        }
    }
    // Build contexts a killed server left (`routes::build::context`).
    let stale = crate::routes::build::remove_stale(&config.engine.root);
    if stale > 0 {
        tracing::info!(stale, "removed build contexts an earlier server left");
    }
    let server: &'static Server = Box::leak(Box::new(Server::new(config)));
    let served = accept_loop(server, &listeners);
    // Containers created from the pool and never started stay as created
    // ones.
    server.claims.release_all();
    served
}

/// An idle server gives back what serving took: freed heap, and the pages
/// of its code (they fault back in from the page cache when next used).
/// This is what keeps an idle server's RSS at a few MB.
fn trim_when_idle(activity: &Activity) {
    let idle = activity
        .idle_for()
        .is_some_and(|idle| idle >= Duration::from_millis(500));
    if idle && !activity.trimmed.swap(true, Ordering::SeqCst) {
        // SAFETY: malloc_trim only returns free heap pages to the kernel.
        unsafe { libc::malloc_trim(0) };
        berth_engine::containers::monitor::release_read_only_pages();
    }
}

fn accept_loop(server: &'static Server, listeners: &[Listener]) -> Result<(), ServeError> {
    let idle_timeout = server.config.idle_timeout;
    loop {
        trim_when_idle(&server.activity);
        server.claims.release_expired();
        let wait = match idle_timeout {
            // Woken once a second to trim after the last request.
            None => PollTimeout::from(1000u16),
            Some(timeout) => {
                let left = match server.activity.idle_for() {
                    Some(idle) if idle >= timeout => {
                        tracing::info!("idle timeout reached; exiting");
                        return Ok(());
                    }
                    Some(idle) => timeout - idle,
                    None => timeout,
                };
                PollTimeout::try_from(left.as_millis().clamp(10, 1000) as i32)
                    .unwrap_or(PollTimeout::MAX)
            }
        };
        // At the bound, connections wait in the listen backlog until one
        // being served ends.
        if !server.connections.has_room() {
            server.connections.wait_for_room(wait_duration(wait));
            continue;
        }
        let mut fds: Vec<PollFd<'_>> = listeners
            .iter()
            .map(|listener| PollFd::new(listener.socket.as_fd(), PollFlags::POLLIN))
            .collect();
        match poll(&mut fds, wait) {
            Ok(_) => {}
            Err(nix::Error::EINTR) => continue,
            Err(error) => return Err(ServeError::Poll(error)),
        }
        let ready: Vec<bool> = fds
            .iter()
            .map(|fd| fd.revents().is_some_and(|events| !events.is_empty()))
            .collect();
        drop(fds);
        for (listener, ready) in listeners.iter().zip(ready) {
            if ready {
                accept(server, &listener.socket);
            }
        }
    }
}

/// A poll timeout as a duration (at most a second here).
fn wait_duration(wait: PollTimeout) -> Duration {
    let millis = wait.as_millis().map_or(1000, u64::from);
    Duration::from_millis(millis)
}

/// Takes every waiting connection while there is room, each onto a
/// thread of its own; TCP ones start with the TLS handshake (see
/// [`crate::tls`]).
fn accept(server: &'static Server, socket: &Socket) {
    loop {
        // Given back if nothing was accepted (or no thread started).
        let Some(slot) = server.connections.try_take() else {
            return;
        };
        let spawned = match socket {
            Socket::Unix(socket) => {
                let Ok((stream, _)) = socket.accept() else {
                    return;
                };
                let _ = stream.set_nonblocking(false);
                // Counted from accept, so that the idle timer cannot fire
                // between accept and the first request.
                server.activity.touch();
                std::thread::Builder::new()
                    .name("berth-api-connection".to_owned())
                    .stack_size(1024 * 1024)
                    .spawn(move || {
                        let _slot = slot;
                        handle_connection(server, stream);
                    })
            }
            Socket::Tcp { listener, tls } => {
                let Ok((stream, peer)) = listener.accept() else {
                    return;
                };
                server.activity.touch();
                let tls = Arc::clone(tls);
                std::thread::Builder::new()
                    .name("berth-api-tls".to_owned())
                    .stack_size(1024 * 1024)
                    .spawn(move || {
                        crate::tls::serve_connection(server, &tls, stream, peer, Arc::new(slot));
                    })
            }
        };
        if let Err(error) = spawned {
            tracing::warn!(%error, "failed to start a connection thread");
        }
    }
}

/// Answers requests on one connection until it closes, a handler keeps
/// the socket, or a limit ends it: the head of its first request must
/// arrive within the read-header timeout from now, each later one within
/// the keep-alive idle timeout and then the read-header timeout from its
/// first byte (see [`crate::limits`]). Public for the randomized tests,
/// which run it on one end of a socket pair.
pub fn handle_connection(server: &'static Server, stream: UnixStream) {
    let limits = server.config.limits;
    let mut connection = Connection::new(stream);
    let mut first = true;
    loop {
        if !first {
            match wait_for_request(&connection.reader, limits.idle_connection_timeout) {
                Ok(NextRequest::Ready) => {}
                Ok(NextRequest::Idle) => {
                    tracing::debug!("idle keep-alive connection closed");
                    return;
                }
                Err(error) => {
                    tracing::debug!(%error, "failed to wait for the next request");
                    return;
                }
            }
        }
        first = false;
        let deadline = limits
            .read_header_timeout
            .map(|timeout| Instant::now() + timeout);
        let head = read_head_with(&mut connection.reader, before_head_read(deadline));
        // What follows the head (a body, a stream, a hijacked connection)
        // is never cut by the head's timeout.
        if deadline.is_some() && connection.stream().set_read_timeout(None).is_err() {
            return;
        }
        let request = match head {
            Ok(request) => request,
            Err(error) => {
                if matches!(error, HeadError::TimedOut) {
                    tracing::debug!("request head not read in time; connection closed");
                }
                if let Some(status) = error.status() {
                    let message = match error {
                        HeadError::Malformed(message) => message,
                        other => other.to_string(),
                    };
                    let response = ApiError::new(status, message).response();
                    if write_response(&mut connection.stream(), &response, false, false).is_ok() {
                        linger(connection.stream());
                    }
                }
                return;
            }
        };
        let _open = server.activity.begin();
        let close = request.close;
        let head_only = request.method == "HEAD";
        tracing::debug!(method = %request.method, path = %request.target, "request");
        match crate::router::route(server, request, &mut connection) {
            Outcome::Reply {
                response,
                body_read,
            } => {
                let keep_alive = !close && body_read;
                if write_response(&mut connection.stream(), &response, keep_alive, head_only)
                    .is_err()
                {
                    return;
                }
                if !keep_alive {
                    if !body_read {
                        linger(connection.stream());
                    }
                    return;
                }
            }
            Outcome::Streamed { keep_alive } => {
                if close || !keep_alive {
                    return;
                }
            }
        }
    }
}

/// Closes a connection whose client may still be sending (a refused
/// head, a body not read): our side is shut first, then what the client
/// sends is read and dropped for a moment. Closing a socket with unread
/// input resets the connection, and a client still writing its request
/// would see that error instead of our answer (Go's net/http server does
/// the same, `closeWriteAndWait`). Bounded: 256 KiB or one second.
fn linger(stream: &UnixStream) {
    const LIMIT: usize = 256 * 1024;
    let deadline = Instant::now() + Duration::from_secs(1);
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut buffer = [0u8; 8192];
    let mut drained = 0;
    while drained < LIMIT {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            return;
        };
        if stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .is_err()
        {
            return;
        }
        match std::io::Read::read(&mut &*stream, &mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(read) => drained += read,
        }
    }
}

/// What a handler did.
pub enum Outcome {
    /// A response to write; `body_read` says whether the connection can
    /// take another request.
    Reply { response: Response, body_read: bool },
    /// The handler wrote the response itself (a stream or a hijack).
    Streamed { keep_alive: bool },
}

/// True once the client closed the connection: long waits stop then. A
/// client that only shut down its sending side (the docker CLI does that
/// on an attach without stdin) is still there: a unix socket reports
/// POLLHUP only when both directions are shut.
pub fn client_gone(stream: &UnixStream) -> bool {
    let mut fds = [PollFd::new(stream.as_fd(), PollFlags::empty())];
    match poll(&mut fds, PollTimeout::ZERO) {
        Ok(0) => false,
        Ok(_) => fds[0]
            .revents()
            .is_some_and(|events| events.intersects(PollFlags::POLLHUP | PollFlags::POLLERR)),
        Err(_) => false,
    }
}
