//! Running one process in the guest and streaming its output to the host.

use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use fs_err as fs;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signalfd::SignalFd;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use crate::protocol::{FrameKind, RunRequest};

/// Docker's default `PATH` (the one runc and Docker put in a container with
/// none).
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Finished {
    pub code: i32,
    pub error: Option<String>,
}

impl Finished {
    fn failed(code: i32, error: String) -> Finished {
        Finished {
            code,
            error: Some(error),
        }
    }
}

/// Runs `request`, handing each piece of output to `output` as it comes, and
/// returns when the process has exited (reaping any orphan on the way: the
/// agent is PID 1). An `Err` is a failure of `output` (the channel), not of
/// the process.
pub(super) fn run(
    request: &RunRequest,
    children: &mut SignalFd,
    output: &mut dyn FnMut(FrameKind, &[u8]) -> io::Result<()>,
) -> io::Result<Finished> {
    let mut child = match spawn(request) {
        Ok(child) => child,
        Err(finished) => return Ok(finished),
    };
    let pid = Pid::from_raw(child.id() as i32);
    let mut pipes = [
        child
            .stdout
            .take()
            .map(|pipe| (FrameKind::Stdout, Box::new(pipe) as Box<dyn Pipe>)),
        child
            .stderr
            .take()
            .map(|pipe| (FrameKind::Stderr, Box::new(pipe) as Box<dyn Pipe>)),
    ];
    for (_, pipe) in pipes.iter().flatten() {
        fcntl(
            pipe.as_fd().as_raw_fd(),
            FcntlArg::F_SETFL(OFlag::O_NONBLOCK),
        )?;
    }
    let mut buffer = vec![0u8; 64 * 1024];
    let mut code = None;
    loop {
        if let Some(code) = code {
            // The process is gone: send what it left in the pipes and stop,
            // even if an orphan still holds them open.
            for slot in &mut pipes {
                while let Some((kind, pipe)) = slot {
                    match pipe.read(&mut buffer) {
                        Ok(0) => *slot = None,
                        Ok(read) => output(*kind, &buffer[..read])?,
                        Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
                        Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                        Err(_) => *slot = None,
                    }
                }
            }
            return Ok(Finished { code, error: None });
        }
        let mut fds = vec![PollFd::new(children.as_fd(), PollFlags::POLLIN)];
        let open: Vec<usize> = (0..pipes.len())
            .filter(|&index| pipes[index].is_some())
            .collect();
        for &index in &open {
            let (_, pipe) = pipes[index].as_ref().expect("only open pipes are listed");
            fds.push(PollFd::new(pipe.as_fd(), PollFlags::POLLIN));
        }
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {}
            Err(nix::Error::EINTR) => continue,
            Err(error) => return Err(error.into()),
        }
        let ready = |fd: &PollFd| !fd.revents().unwrap_or(PollFlags::empty()).is_empty();
        let children_ready = ready(&fds[0]);
        let pipes_ready: Vec<usize> = open
            .iter()
            .zip(&fds[1..])
            .filter(|(_, fd)| ready(fd))
            .map(|(&i, _)| i)
            .collect();
        drop(fds);
        for index in pipes_ready {
            let slot = &mut pipes[index];
            if let Some((kind, pipe)) = slot {
                match pipe.read(&mut buffer) {
                    Ok(0) => *slot = None,
                    Ok(read) => output(*kind, &buffer[..read])?,
                    Err(error)
                        if matches!(
                            error.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                        ) => {}
                    Err(_) => *slot = None,
                }
            }
        }
        if children_ready {
            while children.read_signal().ok().flatten().is_some() {}
            code = reap(pid).or(code);
        }
    }
}

trait Pipe: Read + AsFd {}
impl<T: Read + AsFd> Pipe for T {}

/// Reaps every child that has exited; the exit code of `pid` if it is one.
fn reap(pid: Pid) -> Option<i32> {
    let mut code = None;
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(exited, status)) if exited == pid => code = Some(status),
            Ok(WaitStatus::Signaled(exited, signal, _)) if exited == pid => {
                code = Some(128 + signal as i32)
            }
            Ok(WaitStatus::StillAlive) | Err(_) => return code,
            Ok(_) => {}
        }
    }
}

/// Starts the process, or says why it cannot be: 127 when the program is not
/// there, 126 when it cannot be run, with Docker's (runc's) words.
fn spawn(request: &RunRequest) -> Result<std::process::Child, Finished> {
    let Some(program) = request.args.first() else {
        return Err(Finished::failed(126, "no command specified".to_string()));
    };
    let path_variable = request
        .env
        .iter()
        .find_map(|entry| entry.strip_prefix("PATH="))
        .unwrap_or(DEFAULT_PATH);
    let executable = resolve(program, path_variable)?;
    let cwd = if request.cwd.is_empty() {
        "/"
    } else {
        request.cwd.as_str()
    };
    // Docker creates a missing working directory rather than failing.
    if let Err(error) = fs::create_dir_all(cwd) {
        return Err(Finished::failed(
            126,
            format!("chdir to cwd ({cwd:?}) failed: {error}"),
        ));
    }
    let mut command = Command::new(&executable);
    command
        .arg0(program)
        .args(&request.args[1..])
        .env_clear()
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if !request.env.iter().any(|entry| entry.starts_with("PATH=")) {
        command.env("PATH", DEFAULT_PATH);
    }
    for entry in &request.env {
        match entry.split_once('=') {
            Some((key, value)) if !key.is_empty() => command.env(key, value),
            _ => continue,
        };
    }
    command.spawn().map_err(|error| {
        let code = if error.kind() == io::ErrorKind::NotFound {
            127
        } else {
            126
        };
        let reason = match error.kind() {
            io::ErrorKind::PermissionDenied => "permission denied".to_string(),
            io::ErrorKind::NotFound => "no such file or directory".to_string(),
            _ => error.to_string(),
        };
        Finished::failed(code, format!("exec: {program:?}: {reason}"))
    })
}

/// `PATH` lookup as Go's `exec.LookPath`, whose errors runc (and so Docker)
/// prints.
fn resolve(program: &str, path_variable: &str) -> Result<PathBuf, Finished> {
    if program.contains('/') {
        return match fs::metadata(program) {
            Ok(_) => Ok(PathBuf::from(program)),
            Err(_) => Err(Finished::failed(
                127,
                format!("exec: {program:?}: stat {program}: no such file or directory"),
            )),
        };
    }
    path_variable
        .split(':')
        .map(|dir| Path::new(if dir.is_empty() { "." } else { dir }).join(program))
        .find(|candidate| {
            fs::metadata(candidate)
                .map(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
        .ok_or_else(|| {
            Finished::failed(
                127,
                format!("exec: {program:?}: executable file not found in $PATH"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_programs_up_as_docker_does() {
        assert_eq!(
            resolve("sh", "/nonexistent:/bin").unwrap(),
            PathBuf::from("/bin/sh")
        );
        assert_eq!(
            resolve("no-such-program", "/bin").unwrap_err(),
            Finished::failed(
                127,
                r#"exec: "no-such-program": executable file not found in $PATH"#.into()
            )
        );
        assert_eq!(
            resolve("/no/such", "/bin").unwrap_err(),
            Finished::failed(
                127,
                r#"exec: "/no/such": stat /no/such: no such file or directory"#.into()
            )
        );
        // Not executable: skipped in PATH, as LookPath does.
        assert!(resolve("passwd", "/etc").is_err());
    }
}
