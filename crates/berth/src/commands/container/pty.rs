//! `exec -t`: a pseudo-terminal between the user's terminal and the
//! process, in raw mode, with the window size copied over.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};

use berth_engine::containers::{exec_in_container, exec_with_terminal, ExecRequest};
use berth_engine::Engine;
use berth_runtime::Stdio;
use berth_types::detach_keys::{DetachMatcher, Fed};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::termios::{self, SetArg};

pub fn exec_with_pty(
    engine: &Engine,
    container: &str,
    request: &ExecRequest,
    interactive: bool,
) -> anyhow::Result<i32> {
    let size = berth_runtime::console::window_size(std::io::stdout());
    // The pty is made inside the container (its own devpts) and its master
    // sent back over this socket.
    let (ours, theirs) = berth_runtime::console::console_socket_pair()?;
    let null = || -> anyhow::Result<OwnedFd> { Ok(fs_err::File::open("/dev/null")?.into()) };
    let stdio = Stdio {
        stdin: null()?,
        stdout: null()?,
        stderr: null()?,
        console: Some(theirs),
    };
    let process =
        exec_in_container(engine, container, request, stdio).map_err(super::exec::exec_failure)?;
    let master = berth_runtime::console::receive_fd(ours.as_raw_fd())?;
    if let Some(size) = size {
        berth_runtime::console::set_window_size(&master, &size);
    }
    let stdin = std::io::stdin();
    let raw = if interactive && nix::unistd::isatty(stdin.as_raw_fd()).unwrap_or(false) {
        let saved = termios::tcgetattr(stdin.as_fd())?;
        let mut mode = saved.clone();
        termios::cfmakeraw(&mut mode);
        termios::tcsetattr(stdin.as_fd(), SetArg::TCSANOW, &mode)?;
        Some(saved)
    } else {
        None
    };
    let resizes = WindowChanges::follow(&master);
    copy(&master, interactive, None);
    drop(resizes);
    if let Some(saved) = raw {
        let _ = termios::tcsetattr(std::io::stdin().as_fd(), SetArg::TCSANOW, &saved);
    }
    Ok(process.wait())
}

/// `exec -it` from a terminal: as [`exec_with_pty`], watching the input for
/// the detach keys; the process's waiter (berth-engine `exec_terminal.rs`)
/// keeps it running when the user detaches, and this CLI ends as
/// docker/cli's does ("read escape sequence", status 1).
pub fn exec_with_pty_detachable(
    engine: &mut Engine,
    container: &str,
    request: &ExecRequest,
    keys: Vec<u8>,
) -> anyhow::Result<i32> {
    let size = berth_runtime::console::window_size(std::io::stdout());
    let exec = exec_with_terminal(engine, container, request).map_err(super::exec::exec_failure)?;
    if let Some(size) = size {
        berth_runtime::console::set_window_size(&exec.master, &size);
    }
    let raw = super::attach::RawMode::enter();
    let resizes = WindowChanges::follow(&exec.master);
    let detached = copy(&exec.master, true, Some(DetachMatcher::new(keys)));
    drop((resizes, raw));
    if detached {
        exec.detach();
        return Err(super::detach::detached_error());
    }
    Ok(exec.wait())
}

/// The pty master whose size follows the user's terminal, or -1.
static RESIZED_MASTER: AtomicI32 = AtomicI32::new(-1);

/// While it lives, SIGWINCH (the user's terminal was resized) copies the
/// terminal's new size to the process's (Docker's exec resize).
struct WindowChanges;

impl WindowChanges {
    fn follow(master: &OwnedFd) -> WindowChanges {
        RESIZED_MASTER.store(master.as_raw_fd(), Ordering::SeqCst);
        // SAFETY: an all-zero sigaction is a valid value to fill in (empty
        // mask, no flags) before the fields are set below.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = copy_window_size as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        // SAFETY: the handler only reads an atomic and makes two ioctls; the
        // action outlives the call.
        unsafe { libc::sigaction(libc::SIGWINCH, &action, std::ptr::null_mut()) };
        WindowChanges
    }
}

impl Drop for WindowChanges {
    fn drop(&mut self) {
        RESIZED_MASTER.store(-1, Ordering::SeqCst);
    }
}

/// The SIGWINCH handler: ioctl(2) is async-signal-safe.
extern "C" fn copy_window_size(_signal: libc::c_int) {
    let master = RESIZED_MASTER.load(Ordering::SeqCst);
    if master < 0 {
        return;
    }
    let mut size = std::mem::MaybeUninit::<libc::winsize>::zeroed();
    // SAFETY: TIOCGWINSZ fills one winsize struct, TIOCSWINSZ reads it; the
    // master stays open while the handler can see it (`WindowChanges`).
    unsafe {
        if libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, size.as_mut_ptr()) == 0 {
            libc::ioctl(master, libc::TIOCSWINSZ, size.as_ptr());
        }
    }
}

/// Copies between the terminal and `master` until the process's side
/// closes; true when the user typed the detach keys instead.
fn copy(master: &OwnedFd, interactive: bool, mut matcher: Option<DetachMatcher>) -> bool {
    let mut buffer = vec![0u8; 32 * 1024];
    let stdin = std::io::stdin();
    let mut stdin_open = interactive;
    loop {
        let mut fds = vec![PollFd::new(master.as_fd(), PollFlags::POLLIN)];
        if stdin_open {
            fds.push(PollFd::new(stdin.as_fd(), PollFlags::POLLIN));
        }
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {}
            Err(nix::Error::EINTR) => continue,
            Err(_) => return false,
        }
        let master_ready = fds[0].revents().is_some_and(|events| !events.is_empty());
        let stdin_ready = fds
            .get(1)
            .and_then(|fd| fd.revents())
            .is_some_and(|events| !events.is_empty());
        drop(fds);
        if master_ready {
            match nix::unistd::read(master.as_raw_fd(), &mut buffer) {
                Ok(0) | Err(_) => return false,
                Ok(read) => {
                    let _ = nix::unistd::write(std::io::stdout(), &buffer[..read]);
                }
            }
        }
        if stdin_ready {
            match nix::unistd::read(stdin.as_raw_fd(), &mut buffer) {
                Ok(0) | Err(_) => {
                    if let Some(matcher) = matcher.as_mut() {
                        let _ = super::detach::write_all(master, &matcher.take_held());
                    }
                    stdin_open = false;
                }
                Ok(read) => match matcher
                    .as_mut()
                    .map(|matcher| matcher.feed(&buffer[..read]))
                {
                    None => {
                        let _ = super::detach::write_all(master, &buffer[..read]);
                    }
                    Some(Fed::Pass(bytes)) => {
                        let _ = super::detach::write_all(master, &bytes);
                    }
                    Some(Fed::Detach(bytes)) => {
                        let _ = super::detach::write_all(master, &bytes);
                        return true;
                    }
                },
            }
        }
    }
}

/// docker/cli's `CheckTty`: a terminal for the container (`-t`) fed from the user's stdin
/// (`-i`) needs stdin to be a terminal; exit 1 with Docker's words otherwise.
pub(crate) fn check_tty(tty: bool, attach_stdin: bool) -> anyhow::Result<()> {
    if tty && attach_stdin && !nix::unistd::isatty(std::io::stdin().as_raw_fd()).unwrap_or(false) {
        return Err(crate::exit::PlainError {
            status: crate::exit::FAILURE,
            message: "the input device is not a TTY".to_owned(),
        }
        .into());
    }
    Ok(())
}
