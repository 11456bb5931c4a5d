//! `attach`: connect to a running container's monitor and take part in its
//! stdio, as `docker attach` does; exit with the container's status.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Context;
use berth_engine::containers::paths::ContainerPaths;
use berth_engine::containers::{find_container, wait_container};
use berth_engine::Engine;
use berth_types::detach_keys::{DetachMatcher, Fed};
use clap::Args;
use nix::sys::signal::Signal;

use super::detach::KeysFor;
use crate::exit::FAILURE;

#[derive(Debug, Args)]
pub struct AttachArgs {
    /// Do not attach STDIN
    #[arg(long)]
    pub no_stdin: bool,
    /// Proxy all received signals to the process
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    pub sig_proxy: bool,
    /// Override the key sequence for detaching a container
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub detach_keys: Option<String>,
    /// CONTAINER
    pub container: String,
}

pub fn run(engine: &mut Engine, args: &AttachArgs) -> anyhow::Result<i32> {
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, &args.container)?;
    anyhow::ensure!(
        container.state.is_running(),
        "You cannot attach to a stopped container, start it first"
    );
    let tty = container.record.run.tty;
    let send_stdin = !args.no_stdin && container.record.run.open_stdin;
    let terminal =
        tty && !args.no_stdin && nix::unistd::isatty(std::io::stdin().as_raw_fd()).unwrap_or(false);
    // Only a terminal's input is watched for the detach keys (docker/cli).
    let keys = args.detach_keys.as_deref();
    let watch = if terminal && send_stdin {
        Some(super::detach::resolve(keys, KeysFor::Attach, FAILURE)?)
    } else {
        super::detach::check_flag(keys, KeysFor::Attach, FAILURE)?;
        None
    };
    let paths = ContainerPaths::new(&config.root, &config.run_root, &container.record.id);
    let stream = paths
        .with_short_attach_path(|path| UnixStream::connect(path))
        .with_context(|| format!("failed to attach to container {}", args.container))?;
    let raw = if terminal {
        super::attach::RawMode::enter()
    } else {
        None
    };
    if args.sig_proxy && !tty {
        super::attach::proxy_signals(container.state.pid, tty);
    }
    if terminal {
        super::attach::forward_window_changes(container.state.monitor_pid);
        // The monitor sets the size at start; refresh it for this terminal.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(container.state.monitor_pid),
            Signal::SIGWINCH,
        );
    }
    let detached = Arc::new(AtomicBool::new(false));
    if send_stdin {
        let sender = stream.try_clone()?;
        let matcher = watch.map(DetachMatcher::new);
        let detached = Arc::clone(&detached);
        std::thread::spawn(move || send_input(sender, matcher, &detached));
    }
    read_frames(stream);
    drop(raw);
    if detached.load(Ordering::SeqCst) {
        return Err(super::detach::detached_error());
    }
    Ok(wait_container(engine, &container.record.id)?)
}

/// Our stdin to the container; with a terminal, until the detach keys,
/// which end the attachment (the socket is shut down both ways, so the
/// output copy ends too and the monitor lets this client go).
fn send_input(mut sender: UnixStream, matcher: Option<DetachMatcher>, detached: &AtomicBool) {
    let Some(mut matcher) = matcher else {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut sender);
        let _ = sender.shutdown(std::net::Shutdown::Write);
        return;
    };
    let mut stdin = std::io::stdin().lock();
    let mut buffer = vec![0u8; 32 * 1024];
    loop {
        let read = match stdin.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        match matcher.feed(&buffer[..read]) {
            Fed::Pass(bytes) => {
                if sender.write_all(&bytes).is_err() {
                    return;
                }
            }
            Fed::Detach(bytes) => {
                let _ = sender.write_all(&bytes);
                detached.store(true, Ordering::SeqCst);
                let _ = sender.shutdown(std::net::Shutdown::Both);
                return;
            }
        }
    }
    let _ = sender.write_all(&matcher.take_held());
    let _ = sender.shutdown(std::net::Shutdown::Write);
}

/// Docker's multiplexed frames to our stdout and stderr, until the monitor
/// closes the socket (the container exited).
fn read_frames(mut stream: UnixStream) {
    let mut header = [0u8; 8];
    let mut payload = Vec::new();
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    while stream.read_exact(&mut header).is_ok() {
        let length = u32::from_be_bytes([header[4], header[5], header[6], header[7]]) as usize;
        payload.resize(length, 0);
        if stream.read_exact(&mut payload).is_err() {
            return;
        }
        let _ = match header[0] {
            2 => stderr.lock().write_all(&payload),
            _ => {
                let mut out = stdout.lock();
                out.write_all(&payload).and_then(|()| out.flush())
            }
        };
    }
}
