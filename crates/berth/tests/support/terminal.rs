//! A berth command whose stdio is a terminal of its own (a pty the test
//! holds the master of), as a user's shell would run it.

use std::process::Command;

use super::Berth;

/// `berth ARGS` running with its stdio on a terminal of its own.
pub struct TerminalRun {
    child: std::process::Child,
    master: std::os::fd::OwnedFd,
    /// What [`TerminalRun::wait_for`] read so far.
    seen: Vec<u8>,
}

impl TerminalRun {
    pub fn start(berth: &Berth, args: &[&str], size: libc::winsize) -> Self {
        let mut command = berth.command();
        command.args(args);
        Self::start_command(command, size)
    }

    /// `command` (a berth command with its arguments) on the terminal.
    pub fn start_command(mut command: Command, size: libc::winsize) -> Self {
        let pty = nix::pty::openpty(Some(&size), None).unwrap();
        let slave = || -> std::process::Stdio { pty.slave.try_clone().unwrap().into() };
        let child = command
            .stdin(slave())
            .stdout(slave())
            .stderr(slave())
            .spawn()
            .unwrap();
        Self {
            child,
            master: pty.master,
            seen: Vec::new(),
        }
    }

    /// The user resizes the terminal: its new size, and SIGWINCH to the CLI.
    pub fn resize(&self, size: libc::winsize) {
        berth_runtime::console::set_window_size(&self.master, &size);
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGWINCH,
        )
        .unwrap();
    }

    /// Reads the terminal until `text` has appeared (within `seconds`).
    #[track_caller]
    pub fn wait_for(&mut self, text: &str, seconds: u64) {
        use std::io::Read;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
        let mut buffer = [0u8; 1024];
        while !String::from_utf8_lossy(&self.seen).contains(text) {
            assert!(
                std::time::Instant::now() < deadline,
                "{text:?} not on the terminal within {seconds} s: {:?}",
                String::from_utf8_lossy(&self.seen)
            );
            let mut fds = [nix::poll::PollFd::new(
                std::os::fd::AsFd::as_fd(&self.master),
                nix::poll::PollFlags::POLLIN,
            )];
            if nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(100u8)).unwrap_or(0) == 0 {
                continue;
            }
            let mut master = std::fs::File::from(self.master.try_clone().unwrap());
            match master.read(&mut buffer) {
                Ok(read) if read > 0 => self.seen.extend_from_slice(&buffer[..read]),
                _ => panic!(
                    "the terminal closed before {text:?}: {:?}",
                    String::from_utf8_lossy(&self.seen)
                ),
            }
        }
    }

    /// What the run wrote on the terminal (without carriage returns), once
    /// the CLI has exited successfully.
    #[track_caller]
    pub fn output(self) -> String {
        let (output, code) = self.finish();
        assert_eq!(code, Some(0), "{output}");
        output
    }

    /// What the run wrote on the terminal (without carriage returns) and
    /// the CLI's exit code.
    pub fn finish(mut self) -> (String, Option<i32>) {
        use std::io::Read;
        let mut output = std::mem::take(&mut self.seen);
        let mut master = std::fs::File::from(self.master);
        let mut buffer = [0u8; 1024];
        // EIO once the last slave end is closed (the CLI exited).
        while let Ok(read) = master.read(&mut buffer) {
            if read == 0 {
                break;
            }
            output.extend_from_slice(&buffer[..read]);
        }
        let code = self.child.wait().unwrap().code();
        (String::from_utf8_lossy(&output).replace('\r', ""), code)
    }
}
