//! Running one process in the guest and streaming its output to the host.

use std::ffi::CString;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, Signal};
use nix::sys::signalfd::SignalFd;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use crate::protocol::{
    encode_frame, encode_message, FrameDecoder, FrameKind, GuestMessage, HostMessage, RunRequest,
};

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

/// How a run ended.
#[derive(Debug)]
pub(super) enum Outcome {
    /// The process ended (or never started); `Exited` is still to be sent.
    Finished(Finished),
    /// The host said `Shutdown` while it ran: it was killed.
    Shutdown,
}

/// Runs `request`, sending its output to the host as it comes and taking
/// its stdin and signals from the host, and returns when the process has
/// exited (reaping any orphan on the way: the agent is PID 1). `Started` is
/// sent once the process runs. An `Err` is a failure of the channel, not of
/// the process.
pub(super) fn run(
    request: &RunRequest,
    root: Option<&Path>,
    children: &mut SignalFd,
    port: &mut fs_err::File,
    decoder: &mut FrameDecoder,
    mut dns: Option<&mut crate::dns_relay::GuestDns>,
) -> io::Result<Outcome> {
    let (stdin_read, mut stdin_write) = if request.stdin {
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        (
            Some(read),
            Some(fs_err::File::from_parts(
                std::fs::File::from(write),
                "stdin",
            )),
        )
    } else {
        (None, None)
    };
    let spawned = match (&request.container, root) {
        (Some(spec), Some(root)) => spawn_container(spec, root, stdin_read),
        (Some(_), None) => Err(Finished::failed(
            125,
            "a container needs a root share".to_string(),
        )),
        (None, _) => spawn(request, root, stdin_read),
    };
    let (pid, mut pipes) = match spawned {
        Ok(spawned) => spawned,
        Err(finished) => return Ok(Outcome::Finished(finished)),
    };
    send_message(port, &GuestMessage::Started { pid: pid.as_raw() })?;
    for (_, pipe) in pipes.iter().flatten() {
        fcntl(
            pipe.as_fd().as_raw_fd(),
            FcntlArg::F_SETFL(OFlag::O_NONBLOCK),
        )?;
    }
    let mut buffer = vec![0u8; 64 * 1024];
    let mut frame = Vec::new();
    let mut output = |port: &mut fs_err::File, kind: FrameKind, data: &[u8]| {
        frame.clear();
        encode_frame(kind, data, &mut frame);
        port.write_all(&frame)
    };
    let mut code = None;
    let mut shutdown = false;
    loop {
        if let Some(code) = code {
            // The process is gone: send what it left in the pipes and stop,
            // even if an orphan still holds them open.
            for slot in &mut pipes {
                while let Some((kind, pipe)) = slot {
                    match pipe.read(&mut buffer) {
                        Ok(0) => *slot = None,
                        Ok(read) => output(port, *kind, &buffer[..read])?,
                        Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
                        Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                        Err(_) => *slot = None,
                    }
                }
            }
            if shutdown {
                return Ok(Outcome::Shutdown);
            }
            return Ok(Outcome::Finished(Finished { code, error: None }));
        }
        let mut fds = vec![
            PollFd::new(children.as_fd(), PollFlags::POLLIN),
            PollFd::new(port.as_fd(), PollFlags::POLLIN),
        ];
        let dns_index = dns.as_ref().map(|dns| {
            fds.push(PollFd::new(dns.fd(), PollFlags::POLLIN));
            fds.len() - 1
        });
        let pipes_from = fds.len();
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
        let port_ready = ready(&fds[1]);
        let dns_ready = dns_index.is_some_and(|index| ready(&fds[index]));
        let pipes_ready: Vec<usize> = open
            .iter()
            .zip(&fds[pipes_from..])
            .filter(|(_, fd)| ready(fd))
            .map(|(&i, _)| i)
            .collect();
        drop(fds);
        for index in pipes_ready {
            let slot = &mut pipes[index];
            if let Some((kind, pipe)) = slot {
                match pipe.read(&mut buffer) {
                    Ok(0) => *slot = None,
                    Ok(read) => output(port, *kind, &buffer[..read])?,
                    Err(error)
                        if matches!(
                            error.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                        ) => {}
                    Err(_) => *slot = None,
                }
            }
        }
        if port_ready {
            let read = port.read(&mut buffer)?;
            if read == 0 {
                // The host is gone: so is the container.
                let _ = kill(pid, Signal::SIGKILL);
                return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
            }
            decoder.push(&buffer[..read]);
            while let Some(frame) = decoder.next_frame().map_err(io::Error::other)? {
                match frame.kind {
                    FrameKind::Stdin if frame.payload.is_empty() => stdin_write = None,
                    FrameKind::Stdin => {
                        if let Some(stdin) = &mut stdin_write {
                            // A process that closed its stdin loses the rest.
                            if stdin.write_all(&frame.payload).is_err() {
                                stdin_write = None;
                            }
                        }
                    }
                    FrameKind::Message => match frame.message::<HostMessage>() {
                        Ok(HostMessage::Signal { signal }) => {
                            if let Ok(signal) = Signal::try_from(signal) {
                                let _ = kill(pid, signal);
                            }
                        }
                        Ok(HostMessage::Shutdown) => {
                            shutdown = true;
                            let _ = kill(pid, Signal::SIGKILL);
                        }
                        Ok(HostMessage::Run(_)) | Err(_) => {
                            return Err(io::Error::other("unexpected message during a run"))
                        }
                    },
                    FrameKind::DnsAnswer => {
                        if let Some(dns) = dns.as_deref_mut() {
                            dns.answer(&frame.payload);
                        }
                    }
                    FrameKind::Stdout | FrameKind::Stderr | FrameKind::DnsQuery => {
                        return Err(io::Error::other("output frame from the host"))
                    }
                }
            }
        }
        if dns_ready {
            if let Some(dns) = dns.as_deref_mut() {
                let mut queries = Vec::new();
                dns.take_queries(&mut queries);
                port.write_all(&queries)?;
            }
        }
        if children_ready {
            while children.read_signal().ok().flatten().is_some() {}
            code = reap(pid).or(code);
        }
    }
}

fn send_message(port: &mut fs_err::File, message: &GuestMessage) -> io::Result<()> {
    port.write_all(&encode_message(message))
}

/// The process's output pipes, as the run loop reads them.
type Pipes = [Option<(FrameKind, Box<dyn Pipe>)>; 2];

/// Starts a container's process (see `RunRequest::container`): cloned into
/// new pid and mount namespaces, where berth-runtime's guest half enters the
/// root and execs; its failure comes back over a close-on-exec pipe, and the
/// pipe closing empty means the program runs.
fn spawn_container(
    spec: &berth_runtime::ContainerSpec,
    root: &Path,
    stdin: Option<OwnedFd>,
) -> Result<(Pid, Pipes), Finished> {
    let failed = |error: nix::Error| Finished::failed(125, format!("start the process: {error}"));
    let stdin = match stdin {
        Some(stdin) => stdin,
        None => OwnedFd::from(
            fs_err::File::open("/dev/null")
                .map_err(|error| Finished::failed(125, error.to_string()))?
                .into_parts()
                .0,
        ),
    };
    let (out_read, out_write) = nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(failed)?;
    let (err_read, err_write) = nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(failed)?;
    let (report_read, report_write) = nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(failed)?;
    let forked = berth_runtime::clone::clone3(libc::CLONE_NEWPID | libc::CLONE_NEWNS, None)
        .map_err(failed)?;
    let pid = match forked {
        berth_runtime::clone::Forked::Child => {
            for (fd, target) in [(&stdin, 0), (&out_write, 1), (&err_write, 2)] {
                // SAFETY: dup2 onto 0..2 in the child, which owns `fd`.
                unsafe { libc::dup2(fd.as_raw_fd(), target) };
            }
            let failure = berth_runtime::init::enter_guest_container(spec, root);
            let bytes = serde_json::to_vec(&failure).unwrap_or_default();
            let mut report = std::fs::File::from(report_write);
            let _ = report.write_all(&bytes);
            // SAFETY: _exit ends the cloned child without the agent's destructors.
            unsafe { libc::_exit(125) }
        }
        berth_runtime::clone::Forked::Parent { child, .. } => child,
    };
    drop((stdin, out_write, err_write, report_write));
    let mut report = Vec::new();
    let _ = std::fs::File::from(report_read).read_to_end(&mut report);
    if !report.is_empty() {
        let _ = waitpid(pid, None);
        return Err(
            match serde_json::from_slice::<berth_runtime::init::InitFailure>(&report) {
                Ok(failure) => Finished::failed(failure.exit_status(), failure.to_string()),
                Err(_) => Finished::failed(125, "the process failed to start".to_string()),
            },
        );
    }
    let out = std::fs::File::from(out_read);
    let err = std::fs::File::from(err_read);
    Ok((
        pid,
        [
            Some((FrameKind::Stdout, Box::new(out) as Box<dyn Pipe>)),
            Some((FrameKind::Stderr, Box::new(err) as Box<dyn Pipe>)),
        ],
    ))
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

/// Starts the process, `chroot`ed into `root` when there is one, or says why
/// it cannot be: 127 when the program is not there, 126 when it cannot be
/// run, with Docker's (runc's) words.
fn spawn(
    request: &RunRequest,
    root: Option<&Path>,
    stdin: Option<OwnedFd>,
) -> Result<(Pid, Pipes), Finished> {
    let Some(program) = request.args.first() else {
        return Err(Finished::failed(126, "no command specified".to_string()));
    };
    let path_variable = request
        .env
        .iter()
        .find_map(|entry| entry.strip_prefix("PATH="))
        .unwrap_or(DEFAULT_PATH);
    let base = root.unwrap_or(Path::new("/"));
    let executable = resolve(base, program, path_variable)?;
    let cwd = if request.cwd.is_empty() {
        "/"
    } else {
        request.cwd.as_str()
    };
    // Docker creates a missing working directory rather than failing; inside
    // the root, where an image's symlinks cannot lead it out.
    if let Err(error) = super::root::in_root(base, Path::new(cwd)) {
        return Err(Finished::failed(
            126,
            format!(
                "chdir to cwd ({cwd:?}) failed: {}",
                super::error_chain(&error)
            ),
        ));
    }
    let mut command = Command::new(&executable);
    command
        .arg0(program)
        .args(&request.args[1..])
        .env_clear()
        .stdin(stdin.map_or_else(Stdio::null, Stdio::from))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let cwd_c = CString::new(cwd).map_err(|_| Finished::failed(126, "cwd holds NUL".into()))?;
    let root_c = match root {
        Some(root) => Some(
            CString::new(root.as_os_str().as_bytes())
                .map_err(|_| Finished::failed(126, "root holds NUL".into()))?,
        ),
        None => None,
    };
    // SAFETY: the closure runs in the forked child before exec and calls only
    // chroot and chdir (async-signal-safe) on strings made before the fork.
    unsafe {
        command.pre_exec(move || {
            if let Some(root) = &root_c {
                if libc::chroot(root.as_ptr()) == -1 {
                    return Err(io::Error::last_os_error());
                }
            }
            if libc::chdir(cwd_c.as_ptr()) == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    if !request.env.iter().any(|entry| entry.starts_with("PATH=")) {
        command.env("PATH", DEFAULT_PATH);
    }
    for entry in &request.env {
        match entry.split_once('=') {
            Some((key, value)) if !key.is_empty() => command.env(key, value),
            _ => continue,
        };
    }
    let mut child = command.spawn().map_err(|error| {
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
    })?;
    let pid = Pid::from_raw(child.id() as i32);
    let pipes = [
        child
            .stdout
            .take()
            .map(|pipe| (FrameKind::Stdout, Box::new(pipe) as Box<dyn Pipe>)),
        child
            .stderr
            .take()
            .map(|pipe| (FrameKind::Stderr, Box::new(pipe) as Box<dyn Pipe>)),
    ];
    Ok((pid, pipes))
}

/// `PATH` lookup as Go's `exec.LookPath`, whose errors runc (and so Docker)
/// prints, inside `root` (symlinks resolved there): the path the program has
/// once `chroot`ed.
fn resolve(root: &Path, program: &str, path_variable: &str) -> Result<PathBuf, Finished> {
    let stat = |path: &Path| {
        berth_runtime::in_root::open_in_root(root, path, libc::O_PATH, 0)
            .ok()
            .and_then(|fd| nix::sys::stat::fstat(fd.as_raw_fd()).ok())
    };
    if program.contains('/') {
        return match stat(Path::new(program)) {
            Some(_) => Ok(PathBuf::from(program)),
            None => Err(Finished::failed(
                127,
                format!("exec: {program:?}: stat {program}: no such file or directory"),
            )),
        };
    }
    path_variable
        .split(':')
        .map(|dir| Path::new(if dir.is_empty() { "." } else { dir }).join(program))
        .find(|candidate| {
            stat(candidate)
                .map(|meta| {
                    meta.st_mode & libc::S_IFMT == libc::S_IFREG && meta.st_mode & 0o111 != 0
                })
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
        let host = Path::new("/");
        assert_eq!(
            resolve(host, "sh", "/nonexistent:/bin").unwrap(),
            PathBuf::from("/bin/sh")
        );
        assert_eq!(
            resolve(host, "no-such-program", "/bin").unwrap_err(),
            Finished::failed(
                127,
                r#"exec: "no-such-program": executable file not found in $PATH"#.into()
            )
        );
        assert_eq!(
            resolve(host, "/no/such", "/bin").unwrap_err(),
            Finished::failed(
                127,
                r#"exec: "/no/such": stat /no/such: no such file or directory"#.into()
            )
        );
        // Not executable: skipped in PATH, as LookPath does.
        assert!(resolve(host, "passwd", "/etc").is_err());
    }

    #[test]
    fn looks_programs_up_inside_the_root() {
        let root = tempfile::tempdir().unwrap();
        fs_err::create_dir_all(root.path().join("bin")).unwrap();
        fs_err::create_dir_all(root.path().join("opt")).unwrap();
        let tool = root.path().join("opt/tool");
        fs_err::write(&tool, "#!/bin/sh\n").unwrap();
        fs_err::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        // An absolute link inside the image means that path in the image.
        fs_err::os::unix::fs::symlink("/opt/tool", root.path().join("bin/tool")).unwrap();
        assert_eq!(
            resolve(root.path(), "tool", "/bin").unwrap(),
            PathBuf::from("/bin/tool")
        );
        // The host's /bin/sh is not the root's.
        assert!(resolve(root.path(), "sh", "/bin").is_err());
        assert!(resolve(root.path(), "/bin/sh", "/bin").is_err());
    }
}
