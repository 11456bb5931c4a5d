//! The monitor's copy loop: container output to the container's log and to
//! the attached CLI, the CLI's stdin to the container, until the container's
//! first process exits.

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use berth_runtime::console::{set_window_size, window_size};

use crate::logs::{LogWriter, Stream};

/// The monitor's ends of the container's standard streams.
pub struct ContainerIo {
    /// stdout, or the pty master with a tty (which carries both streams).
    pub output: OwnedFd,
    /// stderr without a tty.
    pub errors: Option<OwnedFd>,
    /// Where the CLI's stdin goes (the stdin pipe, or the pty master).
    pub input: Option<OwnedFd>,
}

/// The attached CLI's streams (dups the CLI handed over).
#[derive(Default)]
pub struct Attachment {
    pub stdin: Option<OwnedFd>,
    pub stdout: Option<OwnedFd>,
    pub stderr: Option<OwnedFd>,
}

impl Attachment {
    /// True when some stream of the run goes to a client.
    pub fn is_attached(&self) -> bool {
        self.stdin.is_some() || self.stdout.is_some() || self.stderr.is_some()
    }
}

/// The monitor's attach socket, where `attach` clients connect, and what
/// to do when one does (log Docker's `attach` event).
pub struct AttachSocket<'a> {
    pub listener: &'a std::os::unix::net::UnixListener,
    pub attached: &'a dyn Fn(),
}

const BUFFER: usize = 64 * 1024;

/// Work the copy loop does once, after the container has run for a while.
/// The monitor's memory trim reads its own smaps (about a millisecond of
/// CPU): done at once, it sat between a short container's exit and the
/// monitor noticing it.
pub struct Deferred<'a> {
    due: std::time::Instant,
    task: Option<Box<dyn FnOnce() + 'a>>,
}

impl<'a> Deferred<'a> {
    pub fn after(delay: std::time::Duration, task: impl FnOnce() + 'a) -> Self {
        Self {
            due: std::time::Instant::now() + delay,
            task: Some(Box::new(task)),
        }
    }

    /// How long poll may sleep before the task is due (none once it ran).
    fn wait(&self) -> Option<std::time::Duration> {
        self.task.as_ref().map(|_| {
            self.due
                .saturating_duration_since(std::time::Instant::now())
        })
    }

    fn run_if_due(&mut self) {
        if self.due <= std::time::Instant::now() {
            if let Some(task) = self.task.take() {
                task();
            }
        }
    }
}

fn poll_timeout(wait: Option<std::time::Duration>) -> PollTimeout {
    wait.map_or(PollTimeout::NONE, |wait| {
        PollTimeout::from(u16::try_from(wait.as_millis().saturating_add(1)).unwrap_or(u16::MAX))
    })
}

/// Copies until `pidfd` says the process exited, then drains what is left.
#[allow(clippy::too_many_arguments)] // one caller per kind of monitor; each is a distinct stream or task
pub fn copy_until_exit(
    io: &mut ContainerIo,
    attachment: &mut Attachment,
    log: &mut Option<LogWriter>,
    pidfd: &OwnedFd,
    tty: bool,
    attach: Option<AttachSocket<'_>>,
    mut dns: Option<(&mut berth_net::dns::DnsServer, &dyn berth_net::dns::Names)>,
    mut health: Option<&mut super::health::HealthProber<'_>>,
    mut deferred: Deferred<'_>,
) {
    let mut clients: Vec<AttachClient> = Vec::new();
    let mut buffer = vec![0u8; BUFFER];
    let mut output_open = true;
    let mut errors_open = io.errors.is_some();
    let mut exited = false;
    // With a terminal, the attached CLI forwards SIGWINCH here; the new size
    // is read from the CLI's terminal and set on the container's.
    let resize = if tty { window_change_signal() } else { None };
    while !exited {
        let mut fds = Vec::with_capacity(5);
        fds.push(PollFd::new(pidfd.as_fd(), PollFlags::POLLIN));
        let resize_index = resize.as_ref().map(|signal_fd| {
            fds.push(PollFd::new(signal_fd.as_fd(), PollFlags::POLLIN));
            fds.len() - 1
        });
        let output_index = output_open.then(|| {
            fds.push(PollFd::new(io.output.as_fd(), PollFlags::POLLIN));
            fds.len() - 1
        });
        let errors_index = match (&io.errors, errors_open) {
            (Some(errors), true) => {
                fds.push(PollFd::new(errors.as_fd(), PollFlags::POLLIN));
                Some(fds.len() - 1)
            }
            _ => None,
        };
        let listener_index = attach.as_ref().map(|socket| {
            fds.push(PollFd::new(socket.listener.as_fd(), PollFlags::POLLIN));
            fds.len() - 1
        });
        let first_client_index = fds.len();
        for client in clients.iter().filter(|client| client.input_open) {
            fds.push(PollFd::new(client.stream.as_fd(), PollFlags::POLLIN));
        }
        let stdin_index = match (&attachment.stdin, &io.input) {
            (Some(stdin), Some(_)) => {
                fds.push(PollFd::new(stdin.as_fd(), PollFlags::POLLIN));
                Some(fds.len() - 1)
            }
            _ => None,
        };
        let first_dns_index = fds.len();
        let mut dns_wait = None;
        if let Some((server, _)) = &dns {
            for fd in server.poll_fds() {
                fds.push(PollFd::new(fd, PollFlags::POLLIN));
            }
            dns_wait = server.next_timeout();
        }
        // The health probe's pipe and pidfd are only woken for; what is
        // ready is found out by `advance` below.
        let first_health_index = fds.len();
        let mut health_wait = None;
        if let Some(prober) = &health {
            for fd in prober.poll_fds() {
                fds.push(PollFd::new(fd, PollFlags::POLLIN));
            }
            health_wait = prober.wait();
        }
        // A rotated log being compressed: a piece per turn, without sleeping.
        let log_wait = log
            .as_ref()
            .filter(|log| log.has_background_work())
            .map(|_| std::time::Duration::ZERO);
        let wait = [dns_wait, deferred.wait(), health_wait, log_wait]
            .into_iter()
            .flatten()
            .min();
        match poll(&mut fds, poll_timeout(wait)) {
            Ok(_) => {}
            Err(nix::Error::EINTR) => continue,
            Err(_) => break,
        }
        let ready = |index: Option<usize>| {
            index.is_some_and(|index| {
                fds[index].revents().is_some_and(|events| {
                    events.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR)
                })
            })
        };
        let pid_ready = ready(Some(0));
        let resize_ready = ready(resize_index);
        let output_ready = ready(output_index);
        let errors_ready = ready(errors_index);
        let stdin_ready = ready(stdin_index);
        let listener_ready = ready(listener_index);
        let dns_ready = (first_dns_index..first_health_index).any(|index| ready(Some(index)))
            || dns_wait.is_some();
        let client_ready: Vec<bool> = (first_client_index
            ..first_client_index + clients.iter().filter(|client| client.input_open).count())
            .map(|index| ready(Some(index)))
            .collect();
        drop(fds);
        if dns_ready {
            if let Some((server, names)) = dns.as_mut() {
                server.handle_ready(*names);
            }
        }
        if listener_ready {
            if let Some(socket) = &attach {
                if let Ok((stream, _)) = socket.listener.accept() {
                    (socket.attached)();
                    clients.push(AttachClient {
                        stream,
                        input_open: true,
                    });
                }
            }
        }
        let mut readiness = client_ready.into_iter();
        for client in clients.iter_mut().filter(|client| client.input_open) {
            if readiness.next() == Some(true) {
                client_input(client, io, &mut buffer, tty);
            }
        }
        if output_ready {
            output_open = pump(
                &io.output,
                &mut buffer,
                Stream::Stdout,
                log,
                attachment.stdout.as_ref(),
                &mut clients,
            );
        }
        if errors_ready {
            if let Some(errors) = &io.errors {
                errors_open = pump(
                    errors,
                    &mut buffer,
                    Stream::Stderr,
                    log,
                    attachment.stderr.as_ref(),
                    &mut clients,
                );
            }
        }
        if stdin_ready {
            forward_stdin(io, attachment, &mut buffer, tty);
        }
        if resize_ready {
            if let Some(signal_fd) = resize.as_ref() {
                let _ = signal_fd.read_signal();
            }
            if let Some(size) = attachment.stdout.as_ref().and_then(window_size) {
                set_window_size(&io.output, &size);
            }
        }
        if log_wait.is_some() {
            if let Some(log) = log.as_mut() {
                log.do_background_work();
            }
        }
        exited = pid_ready;
        if !exited {
            if let Some(prober) = health.as_mut() {
                prober.advance();
            }
            deferred.run_if_due();
        }
    }
    // The process is gone; take what it wrote last. Nothing in its pid
    // namespace survives it, so the pipes reach EOF (a pty gives EIO).
    drain(
        &io.output,
        &mut buffer,
        Stream::Stdout,
        log,
        attachment.stdout.as_ref(),
        &mut clients,
    );
    if let Some(errors) = &io.errors {
        drain(
            errors,
            &mut buffer,
            Stream::Stderr,
            log,
            attachment.stderr.as_ref(),
            &mut clients,
        );
    }
    if let Some(log) = log.as_mut() {
        let _ = log.flush(chrono::Utc::now());
    }
}

/// One read from `source` to the log and the attached stream; false at EOF.
fn pump(
    source: &OwnedFd,
    buffer: &mut [u8],
    stream: Stream,
    log: &mut Option<LogWriter>,
    attached: Option<&OwnedFd>,
    clients: &mut Vec<AttachClient>,
) -> bool {
    let read = match nix::unistd::read(source.as_raw_fd(), buffer) {
        Ok(0) | Err(nix::Error::EIO) => return false,
        Ok(read) => read,
        Err(nix::Error::EINTR | nix::Error::EAGAIN) => return true,
        Err(_) => return false,
    };
    deliver(&buffer[..read], stream, log, attached, clients);
    true
}

fn deliver(
    bytes: &[u8],
    stream: Stream,
    log: &mut Option<LogWriter>,
    attached: Option<&OwnedFd>,
    clients: &mut Vec<AttachClient>,
) {
    if let Some(log) = log.as_mut() {
        if let Err(error) = log.write(stream, bytes, chrono::Utc::now()) {
            tracing::warn!(%error, "failed to write the container log");
        }
    }
    if let Some(fd) = attached {
        // A CLI that went away stops receiving; the container goes on.
        let _ = write_all(fd, bytes);
    }
    // `berth attach` clients get Docker's multiplexed frames; one that
    // cannot take them is dropped.
    let frame = frame(stream, bytes);
    clients.retain_mut(|client| std::io::Write::write_all(&mut client.stream, &frame).is_ok());
}

fn write_all(fd: &OwnedFd, mut bytes: &[u8]) -> nix::Result<()> {
    while !bytes.is_empty() {
        match nix::unistd::write(fd, bytes) {
            Ok(written) => bytes = &bytes[written..],
            Err(nix::Error::EINTR) => continue,
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

fn drain(
    source: &OwnedFd,
    buffer: &mut [u8],
    stream: Stream,
    log: &mut Option<LogWriter>,
    attached: Option<&OwnedFd>,
    clients: &mut Vec<AttachClient>,
) {
    let flags = nix::fcntl::fcntl(source.as_raw_fd(), nix::fcntl::FcntlArg::F_GETFL).unwrap_or(0);
    let _ = nix::fcntl::fcntl(
        source.as_raw_fd(),
        nix::fcntl::FcntlArg::F_SETFL(
            nix::fcntl::OFlag::from_bits_truncate(flags) | nix::fcntl::OFlag::O_NONBLOCK,
        ),
    );
    loop {
        match nix::unistd::read(source.as_raw_fd(), buffer) {
            Ok(0) => break,
            Ok(read) => deliver(&buffer[..read], stream, log, attached, clients),
            Err(nix::Error::EINTR) => continue,
            Err(_) => break,
        }
    }
}

fn forward_stdin(io: &mut ContainerIo, attachment: &mut Attachment, buffer: &mut [u8], tty: bool) {
    let (Some(stdin), Some(input)) = (attachment.stdin.as_ref(), io.input.as_ref()) else {
        return;
    };
    let mut stdin_file = std::mem::ManuallyDrop::new(
        // SAFETY: the descriptor stays owned by `attachment`; ManuallyDrop
        // keeps this temporary File from closing it.
        unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(stdin.as_raw_fd()) },
    );
    match stdin_file.read(buffer) {
        Ok(0) | Err(_) => {
            // EOF on the CLI's stdin: close the container's stdin (with a
            // pipe); a tty keeps its line open, as Docker does.
            attachment.stdin = None;
            if tty {
                // With a terminal, the end of the attached stdin is the end
                // of the attachment, as in dockerd (moby
                // `container/stream/attach.go` closes the attach's stdout
                // and stderr when its stdin copy ends): the client detached
                // (its detach keys) or went away. Nothing more goes to its
                // terminal; an attached CLI whose own input ends keeps this
                // stream open (`berth run -it`, see the CLI's `attach.rs`).
                attachment.stdout = None;
                attachment.stderr = None;
            } else {
                io.input = None;
            }
        }
        Ok(read) => {
            if write_all(input, &buffer[..read]).is_err() {
                io.input = None;
            }
        }
    }
    let _ = stdin_file.flush();
}

/// A signalfd for SIGWINCH (blocked, so it arrives only through the fd).
fn window_change_signal() -> Option<nix::sys::signalfd::SignalFd> {
    let mut set = nix::sys::signal::SigSet::empty();
    set.add(nix::sys::signal::Signal::SIGWINCH);
    set.thread_block().ok()?;
    nix::sys::signalfd::SignalFd::with_flags(
        &set,
        nix::sys::signalfd::SfdFlags::SFD_CLOEXEC | nix::sys::signalfd::SfdFlags::SFD_NONBLOCK,
    )
    .ok()
}

/// A `berth attach` connected over the container's attach socket.
pub struct AttachClient {
    stream: std::os::unix::net::UnixStream,
    /// False once the client closed its sending side (its stdin ended).
    input_open: bool,
}

/// Docker's multiplexed-stream frame (`stdcopy`): stream id (1 stdout,
/// 2 stderr), three zero bytes, the length as big-endian u32, the bytes.
pub fn frame(stream: Stream, bytes: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(8 + bytes.len());
    frame.push(match stream {
        Stream::Stdout => 1,
        Stream::Stderr => 2,
    });
    frame.extend_from_slice(&[0, 0, 0]);
    frame.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    frame.extend_from_slice(bytes);
    frame
}

/// Input from an attach client goes to the container's stdin (when it has
/// one open); the client's EOF closes a pipe stdin, as Docker's does.
fn client_input(client: &mut AttachClient, io: &mut ContainerIo, buffer: &mut [u8], tty: bool) {
    match std::io::Read::read(&mut client.stream, buffer) {
        Ok(0) | Err(_) => {
            client.input_open = false;
            if !tty {
                io.input = None;
            }
        }
        Ok(read) => {
            if let Some(input) = io.input.as_ref() {
                if write_all(input, &buffer[..read]).is_err() {
                    io.input = None;
                }
            }
        }
    }
}
