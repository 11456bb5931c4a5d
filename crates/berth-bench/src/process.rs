//! Running the programs the suite drives (engine CLIs, cp, gcc, iperf3):
//! with a deadline, stdout and stderr captured in anonymous files (no reader
//! threads competing with a timed run), and the wall time from spawn to exit
//! measured as hyperfine does without a shell.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("failed to run {command}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to wait for {command}")]
    Wait {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{command} did not finish within {seconds} s")]
    TimedOut { command: String, seconds: u64 },
    #[error("{command} failed ({status}): {output}")]
    Failed {
        command: String,
        status: ExitStatus,
        output: String,
    },
}

/// A program that ran to its end.
#[derive(Debug)]
pub struct Finished {
    pub command: String,
    pub status: ExitStatus,
    /// From just before spawn to the moment the kernel reported the exit.
    pub elapsed: Duration,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Finished {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Fails unless the program exited with status 0.
    pub fn check(self) -> Result<Self, ProcessError> {
        if self.status.success() {
            return Ok(self);
        }
        Err(ProcessError::Failed {
            output: tail(&self.stderr, &self.stdout),
            command: self.command,
            status: self.status,
        })
    }
}

/// The last lines of stderr (or stdout when stderr is empty), for an error.
fn tail(stderr: &[u8], stdout: &[u8]) -> String {
    let text = if stderr.iter().any(|byte| !byte.is_ascii_whitespace()) {
        String::from_utf8_lossy(stderr)
    } else {
        String::from_utf8_lossy(stdout)
    };
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    let start = lines.len().saturating_sub(3);
    let joined = lines[start..].join(" / ");
    if joined.chars().count() > 400 {
        let cut: String = joined.chars().take(400).collect();
        format!("{cut}…")
    } else if joined.is_empty() {
        "no output".to_owned()
    } else {
        joined
    }
}

/// `program arg…` for messages: the program's file name, arguments cut
/// after 160 characters.
pub fn describe(command: &Command) -> String {
    let program = std::path::Path::new(command.get_program())
        .file_name()
        .unwrap_or(command.get_program())
        .to_string_lossy()
        .into_owned();
    let mut text = program;
    for argument in command.get_args() {
        text.push(' ');
        text.push_str(&argument.to_string_lossy());
        if text.chars().count() > 160 {
            text = text.chars().take(160).collect();
            text.push('…');
            break;
        }
    }
    text
}

/// Runs `command` with no stdin to its end (killed after `timeout`).
pub fn run(command: &mut Command, timeout: Duration) -> Result<Finished, ProcessError> {
    let description = describe(command);
    let spawn_error = |source| ProcessError::Spawn {
        command: description.clone(),
        source,
    };
    let mut stdout = tempfile::tempfile().map_err(spawn_error)?;
    let mut stderr = tempfile::tempfile().map_err(spawn_error)?;
    command
        .stdin(Stdio::null())
        .stdout(stdout.try_clone().map_err(spawn_error)?)
        .stderr(stderr.try_clone().map_err(spawn_error)?);
    let started = Instant::now();
    let mut child = command.spawn().map_err(spawn_error)?;
    let wait_error = |source| ProcessError::Wait {
        command: description.clone(),
        source,
    };
    let exited = wait_for_exit(&mut child, timeout).map_err(wait_error)?;
    let elapsed = started.elapsed();
    if !exited {
        let _ = child.kill();
        let _ = child.wait();
        return Err(ProcessError::TimedOut {
            command: description,
            seconds: timeout.as_secs(),
        });
    }
    let status = child.wait().map_err(wait_error)?;
    Ok(Finished {
        stdout: read_all(&mut stdout),
        stderr: read_all(&mut stderr),
        command: description,
        status,
        elapsed,
    })
}

/// Runs `command` and fails unless it exits with status 0.
pub fn run_ok(command: &mut Command, timeout: Duration) -> Result<Finished, ProcessError> {
    run(command, timeout)?.check()
}

fn read_all(file: &mut File) -> Vec<u8> {
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(0)).is_ok() {
        let _ = file.read_to_end(&mut bytes);
    }
    bytes
}

/// Waits until `child` has exited (without reaping it, so its pid cannot be
/// reused before a kill) or `timeout` passed; true if it exited. A pidfd
/// wakes the caller at the exit itself: no polling interval adds to the
/// measured time.
fn wait_for_exit(child: &mut Child, timeout: Duration) -> std::io::Result<bool> {
    let deadline = Instant::now() + timeout;
    let pid = child.id() as libc::pid_t;
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new file
    // descriptor or -1; no memory is passed.
    let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if raw < 0 {
        // Kernels before 5.3: poll the child.
        loop {
            if child.try_wait()?.is_some() {
                return Ok(true);
            }
            if Instant::now() >= deadline {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    // SAFETY: `raw` is a descriptor pidfd_open just returned; nothing else
    // owns it.
    let pidfd = unsafe { OwnedFd::from_raw_fd(raw as RawFd) };
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let milliseconds = i32::try_from(left.as_millis().max(1)).unwrap_or(i32::MAX);
        let mut poll = libc::pollfd {
            fd: pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `poll` is one valid pollfd that lives across the call.
        let ready = unsafe { libc::poll(&mut poll, 1, milliseconds) };
        if ready > 0 {
            return Ok(true);
        }
        if ready < 0 {
            let error = std::io::Error::last_os_error();
            if error.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
        }
        if left.is_zero() || Instant::now() >= deadline {
            return Ok(false);
        }
    }
}

/// Where `program` is found on PATH (or `program` itself when it has a slash).
pub fn which(program: &str) -> Option<std::path::PathBuf> {
    if program.contains('/') {
        let path = std::path::PathBuf::from(program);
        return path.is_file().then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|directory| directory.join(program))
        .find(|candidate| {
            use std::os::unix::fs::PermissionsExt;
            candidate.metadata().is_ok_and(|metadata| {
                metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_status_and_time_are_captured() {
        let finished = run(
            Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]),
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(finished.stdout(), "out\n");
        assert_eq!(finished.stderr, b"err\n");
        assert_eq!(finished.status.code(), Some(3));
        let error = finished.check().unwrap_err().to_string();
        assert!(
            error.starts_with("sh -c echo out; echo err >&2; exit 3 failed"),
            "{error}"
        );
        assert!(error.ends_with(": err"), "{error}");
    }

    #[test]
    fn elapsed_time_covers_the_run() {
        let finished = run_ok(Command::new("sleep").arg("0.2"), Duration::from_secs(10)).unwrap();
        assert!(finished.elapsed >= Duration::from_millis(200));
        assert!(finished.elapsed < Duration::from_secs(5));
    }

    #[test]
    fn a_hung_program_is_killed_at_the_deadline() {
        let started = Instant::now();
        let error = run(Command::new("sleep").arg("30"), Duration::from_millis(300)).unwrap_err();
        assert!(matches!(error, ProcessError::TimedOut { .. }), "{error}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn failures_name_the_last_lines() {
        assert_eq!(tail(b"a\nb\n\nc\nd\n", b""), "b / c / d");
        assert_eq!(tail(b"  \n", b"from stdout\n"), "from stdout");
        assert_eq!(tail(b"", b""), "no output");
    }

    #[test]
    fn which_finds_programs_on_path() {
        assert!(which("sh").is_some());
        assert!(which("no-such-program-berth-bench").is_none());
    }
}
