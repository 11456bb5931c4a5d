//! Detach keys for the attached commands (`run`, `start -a`, `attach`,
//! `exec`): which sequence applies (`--detach-keys`, else `detachKeys` in
//! `$DOCKER_CONFIG/config.json`, else ctrl-p,ctrl-q), and the terminal
//! input of a `-it` run watched for it.
//!
//! As docker/cli, only a session with a terminal (`-t`) whose input comes
//! from the user (`-i`) can detach; the keys are watched here, in the CLI,
//! before anything reaches the container.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use berth_engine::containers::StartedContainer;
use berth_types::detach_keys::{self, DetachMatcher, Fed};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use crate::exit::PlainError;

/// What the keys are for: a container's attach (`run`, `start`, `attach`)
/// or an exec, whose refusals dockerd words differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeysFor {
    Attach,
    Exec,
}

/// docker/cli prints the engine's `term.EscapeError` when `attach` and
/// `exec` detach (exit status 1); `run` and `start` detach silently
/// (status 0).
pub(crate) const DETACHED: &str = "read escape sequence";

/// dockerd's refusal of keys it cannot parse: `Invalid detach keys (…)
/// provided` for an attach, `Invalid escape keys (…) provided` for an exec.
pub(crate) fn invalid_keys(keys: &str, what: KeysFor) -> String {
    match what {
        KeysFor::Attach => format!("Invalid detach keys ({keys}) provided"),
        KeysFor::Exec => format!("Invalid escape keys ({keys}) provided"),
    }
}

/// Checks `--detach-keys` alone (a command that will not attach still
/// refuses a bad value).
pub(crate) fn check_flag(flag: Option<&str>, what: KeysFor, status: i32) -> anyhow::Result<()> {
    match flag.filter(|keys| !keys.is_empty()) {
        Some(keys) => detach_keys::parse(keys).map(drop).map_err(|_| {
            crate::exit::StatusError {
                status,
                message: invalid_keys(keys, what),
            }
            .into()
        }),
        None => Ok(()),
    }
}

/// The sequence an attached session watches for: `--detach-keys`, else
/// config.json's `detachKeys` (docker/cli sets the flag's value over the
/// file's), else ctrl-p,ctrl-q. A value that does not parse is refused
/// with `status` and dockerd's words; a config.json that cannot be read
/// is warned about, as docker/cli does, and the default applies.
pub(crate) fn resolve(flag: Option<&str>, what: KeysFor, status: i32) -> anyhow::Result<Vec<u8>> {
    resolve_with(flag, configured, what, status)
}

/// [`resolve`] with config.json's value from `configured`, asked only
/// when the flag is not given.
fn resolve_with(
    flag: Option<&str>,
    configured: impl FnOnce() -> Option<String>,
    what: KeysFor,
    status: i32,
) -> anyhow::Result<Vec<u8>> {
    let keys = match flag.filter(|keys| !keys.is_empty()) {
        Some(keys) => Some(keys.to_owned()),
        None => configured(),
    };
    detach_keys::parse_or_default(keys.as_deref()).map_err(|_| {
        crate::exit::StatusError {
            status,
            message: invalid_keys(keys.as_deref().unwrap_or_default(), what),
        }
        .into()
    })
}

/// `detachKeys` from the client configuration, if set.
fn configured() -> Option<String> {
    let config = berth_registry::credentials::DockerConfig::from_env().ok()?;
    match config.detach_keys() {
        Ok(keys) => keys,
        Err(error) => {
            eprintln!(
                "WARNING: Error loading config file: {:#}",
                anyhow::Error::from(error)
            );
            None
        }
    }
}

/// How an attached session ended.
pub(crate) enum Ended {
    /// The monitor reported (the exit status, None: the monitor died).
    Reported(Option<i32>),
    /// The user typed the detach keys.
    Detached,
}

/// A `-it` run's terminal input: read here and written to `input`, the
/// container's attached stdin (a socket whose other end the monitor
/// holds), except the detach keys, until the monitor reports the exit or
/// the user detaches.
///
/// The CLI's input ending (its terminal hung up) does not end the
/// attachment: `input` stays open, so output goes on, as docker/cli's does.
pub(crate) fn feed_terminal(
    started: &mut StartedContainer,
    input: OwnedFd,
    keys: Vec<u8>,
) -> Ended {
    let mut matcher = DetachMatcher::new(keys);
    let stdin = std::io::stdin();
    let mut stdin_open = true;
    let mut buffer = vec![0u8; 32 * 1024];
    loop {
        if started.exit_report_buffered() {
            return Ended::Reported(started.wait_exit());
        }
        let mut fds = vec![PollFd::new(started.report_fd(), PollFlags::POLLIN)];
        if stdin_open {
            fds.push(PollFd::new(stdin.as_fd(), PollFlags::POLLIN));
        }
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {}
            // A signal (SIGWINCH, a proxied one) was handled.
            Err(nix::Error::EINTR) => continue,
            Err(_) => return Ended::Reported(started.wait_exit()),
        }
        let ready = |fd: &PollFd<'_>| fd.revents().is_some_and(|events| !events.is_empty());
        let report_ready = ready(&fds[0]);
        let stdin_ready = fds.get(1).is_some_and(ready);
        drop(fds);
        if report_ready {
            return Ended::Reported(started.wait_exit());
        }
        if !stdin_ready {
            continue;
        }
        match nix::unistd::read(stdin.as_raw_fd(), &mut buffer) {
            Err(nix::Error::EINTR | nix::Error::EAGAIN) => {}
            Ok(0) | Err(_) => {
                let held = matcher.take_held();
                let _ = write_all(&input, &held);
                stdin_open = false;
            }
            Ok(read) => match matcher.feed(&buffer[..read]) {
                // A container that stopped reading is no reason to stop:
                // its exit report follows.
                Fed::Pass(bytes) => {
                    let _ = write_all(&input, &bytes);
                }
                Fed::Detach(bytes) => {
                    let _ = write_all(&input, &bytes);
                    end_attachment(input);
                    return Ended::Detached;
                }
            },
        }
    }
}

/// Ends the attachment and waits (at most a moment) until the monitor has
/// closed its end, and with it its copies of this terminal: from then on
/// nothing the container writes reaches it.
fn end_attachment(input: OwnedFd) {
    let _ = nix::sys::socket::shutdown(input.as_raw_fd(), nix::sys::socket::Shutdown::Write);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    let mut byte = [0u8; 64];
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return;
        }
        let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
        let mut fds = [PollFd::new(input.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, timeout) {
            Ok(0) => return,
            Ok(_) => {}
            Err(nix::Error::EINTR) => continue,
            Err(_) => return,
        }
        // The monitor never writes here: a read returns 0 once it closed.
        match nix::unistd::read(input.as_raw_fd(), &mut byte) {
            Ok(0) => return,
            Ok(_) | Err(nix::Error::EINTR | nix::Error::EAGAIN) => {}
            Err(_) => return,
        }
    }
}

/// Writes all of `bytes` to `fd` (a socket or a pty master).
pub(super) fn write_all(fd: &OwnedFd, mut bytes: &[u8]) -> nix::Result<()> {
    while !bytes.is_empty() {
        match nix::unistd::write(fd, bytes) {
            Ok(written) => bytes = &bytes[written..],
            Err(nix::Error::EINTR) => continue,
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// A connected pair for a `-it` run's input: ours, and the monitor's.
pub(crate) fn input_pair() -> anyhow::Result<(OwnedFd, OwnedFd)> {
    use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
    socketpair(
        AddressFamily::Unix,
        SockType::Stream,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(|error| anyhow::anyhow!("failed to create a socket pair for the terminal: {error}"))
}

/// Ends a command that detached: `run` and `start` with status 0 and no
/// words, `attach` and `exec` as docker/cli does (the escape error, 1).
pub(crate) fn detached_error() -> anyhow::Error {
    PlainError {
        status: crate::exit::FAILURE,
        message: DETACHED.to_owned(),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(error: anyhow::Error) -> (i32, String) {
        let error = error.downcast::<crate::exit::StatusError>().unwrap();
        (error.status, error.message)
    }

    #[test]
    fn the_flag_comes_before_config_json_and_the_default() {
        let unused = || -> Option<String> { panic!("config.json read although the flag is set") };
        let keys = resolve_with(Some("ctrl-a,b"), unused, KeysFor::Attach, 125).unwrap();
        assert_eq!(keys, [1, b'b']);
        let configured = || Some("ctrl-x".to_owned());
        assert_eq!(
            resolve_with(None, configured, KeysFor::Attach, 125).unwrap(),
            [0x18]
        );
        // An empty flag is no flag (docker/cli).
        assert_eq!(
            resolve_with(Some(""), configured, KeysFor::Attach, 125).unwrap(),
            [0x18]
        );
        assert_eq!(
            resolve_with(None, || None, KeysFor::Attach, 125).unwrap(),
            [0x10, 0x11]
        );
    }

    #[test]
    fn bad_keys_are_refused_in_dockerds_words() {
        let error = resolve_with(Some("foo"), || None, KeysFor::Attach, 125).unwrap_err();
        assert_eq!(
            message(error),
            (125, "Invalid detach keys (foo) provided".to_owned())
        );
        let configured = || Some("ctrl-".to_owned());
        let error = resolve_with(None, configured, KeysFor::Exec, 1).unwrap_err();
        assert_eq!(
            message(error),
            (1, "Invalid escape keys (ctrl-) provided".to_owned())
        );
        let error = check_flag(Some("a,,b"), KeysFor::Attach, 1).unwrap_err();
        assert_eq!(
            message(error),
            (1, "Invalid detach keys (a,,b) provided".to_owned())
        );
        assert!(check_flag(None, KeysFor::Exec, 1).is_ok());
        assert!(check_flag(Some(""), KeysFor::Exec, 1).is_ok());
        assert!(check_flag(Some("ctrl-@,DEL"), KeysFor::Exec, 1).is_ok());
    }
}
