//! A terminal berth relays itself (`run` or `exec` in the foreground with
//! `process.terminal` and no `--console-socket`): the container's side sends the pty master
//! over a socket pair; berth copies its stdin to the master and the master to its stdout.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};

use berth_oci::lifecycle::StdioSource;

/// The source for the container's side, and berth's end of the socket.
pub fn pair() -> anyhow::Result<(StdioSource, OwnedFd)> {
    let (ours, theirs) = berth_runtime::console::console_socket_pair()?;
    Ok((StdioSource::Console(theirs), ours))
}

/// Relays between this process's stdio and the master received on `ours` while `wait`
/// waits for the process; returns what `wait` returns.
pub fn relay(ours: OwnedFd, wait: impl FnOnce() -> i32) -> anyhow::Result<i32> {
    let master = berth_runtime::console::receive_fd(ours.as_raw_fd())?;
    // As runc does: the container's terminal gets berth's size, and berth's own terminal goes
    // raw (the container's pty does the line discipline), restored at the end.
    let stdin = std::io::stdin();
    if let Some(size) = berth_runtime::console::window_size(&stdin) {
        berth_runtime::console::set_window_size(&master, &size);
    }
    let saved = nix::sys::termios::tcgetattr(&stdin).ok();
    if let Some(saved) = &saved {
        let mut raw = saved.clone();
        nix::sys::termios::cfmakeraw(&mut raw);
        let _ = nix::sys::termios::tcsetattr(&stdin, nix::sys::termios::SetArg::TCSANOW, &raw);
    }
    let mut output = std::fs::File::from(master.try_clone()?);
    let mut input = std::fs::File::from(master);
    // Not joined: it ends with the process (berth exits) or at the end of stdin.
    std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        let mut stdin = std::io::stdin().lock();
        while let Ok(count) = stdin.read(&mut buffer) {
            if count == 0 || input.write_all(&buffer[..count]).is_err() {
                break;
            }
        }
    });
    let copier = std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        let mut stdout = std::io::stdout();
        // EIO once the last slave closes: the process is gone.
        while let Ok(count) = output.read(&mut buffer) {
            if count == 0 || stdout.write_all(&buffer[..count]).is_err() {
                break;
            }
            let _ = stdout.flush();
        }
    });
    let code = wait();
    let _ = copier.join();
    if let Some(saved) = &saved {
        let _ = nix::sys::termios::tcsetattr(&stdin, nix::sys::termios::SetArg::TCSANOW, saved);
    }
    Ok(code)
}
