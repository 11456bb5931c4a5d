//! Starting a VM container's shim (`berth __vm-shim`, [`super::shim`]) as
//! the monitor's child, in the container's cgroup, with the container's
//! stdio; returns once the shim reports the process running in the guest,
//! as `berth_runtime::launch` returns once a namespace container's process
//! has exec'd.

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::Command;

use berth_runtime::cgroups::{CgroupManager, Resources};
use berth_runtime::devices::{Access, DeviceKind, DeviceRule};
use berth_runtime::{Launched, Stdio};

use super::{CONSOLE_FD, REQUEST_FD, STATUS_FD};

use super::shim::{MemberBoot, ShimNetwork, ShimRequest, ShimStatus, MEMBER_FLAG, SHIM_COMMAND};

/// The cgroup a VM container's processes (shim, QEMU, virtiofsd) share:
/// CPU and I/O limits apply to the VM as a whole; memory is the guest's
/// size instead (a host limit would kill QEMU, whose own use comes on top
/// of the guest's RAM), and a pids limit would count QEMU's threads. The
/// devices are a container's defaults (`/dev/net/tun` for the tap, the pty
/// of a terminal among them) and `/dev/kvm`, which QEMU opens on a KVM host:
/// nothing else of the host's, should QEMU be broken into.
pub(crate) fn cgroup_resources(mut resources: Resources) -> Resources {
    resources.memory = None;
    resources.memory_swap = None;
    resources.memory_reservation = None;
    resources.pids_limit = None;
    resources.devices = Some(berth_runtime::devices::container_rules(false, &[KVM]));
    resources
}

/// `/dev/kvm`.
const KVM: DeviceRule = DeviceRule::allow(DeviceKind::Char, 10, 232, Access::ALL);

/// Starts the shim for `request` in a network namespace of its own, lets
/// `connect` put the container's networks into it (given the shim's pid;
/// what it returns are the guest's cards), and waits for the shim's
/// report. Errors carry the message and Docker's exit status for it.
pub(crate) fn launch(
    stdio: Stdio,
    cgroup: &dyn CgroupManager,
    mut request: ShimRequest,
    connect: &mut dyn FnMut(i32) -> Result<Vec<ShimNetwork>, String>,
) -> Result<Launched, (String, i32)> {
    let pipe = || nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC);
    let (request_read, request_write) = pipe().map_err(|error| failed("start", &error))?;
    let (status_read, status_write) = pipe().map_err(|error| failed("start", &error))?;
    let (pid, pidfd) = spawn(stdio, cgroup, request_read, status_write, false)?;
    match connect(pid.as_raw()) {
        Ok(networks) => request.networks = networks,
        Err(message) => {
            // The shim waits for its request: without one it ends.
            drop(request_write);
            berth_runtime::wait_exit_code(pid);
            return Err((message, 125));
        }
    }
    let bytes = serde_json::to_vec(&request).map_err(|error| failed("describe", &error))?;
    // A shim that died before reading: its report (or its absence) says why.
    let _ = std::fs::File::from(request_write).write_all(&bytes);
    await_start(pid, pidfd, std::fs::File::from(status_read))
}

fn failed(what: &str, error: &dyn std::fmt::Display) -> (String, i32) {
    (format!("failed to {what} the container's VM: {error}"), 125)
}

/// Spawns `berth __vm-shim` (`member`: with `--member`) with `stdio`, in
/// `cgroup` and a new network namespace, `request` and `status` at their
/// numbers; returns its pid and pidfd.
fn spawn(
    stdio: Stdio,
    cgroup: &dyn CgroupManager,
    request: OwnedFd,
    status: OwnedFd,
    member: bool,
) -> Result<(nix::unistd::Pid, OwnedFd), (String, i32)> {
    let high = |fd: &OwnedFd| {
        crate::containers::monitor::launch::above_fixed_numbers(fd.as_fd())
            .map_err(|error| failed("start", &error))
    };
    let request_source = high(&request)?;
    let status_source = high(&status)?;
    let console_source = stdio.console.as_ref().map(high).transpose()?;
    drop((request, status));
    let join = cgroup
        .open_self_join()
        .map_err(|error| failed("place", &error))?;
    let mut fixed = vec![
        (request_source.as_raw_fd(), REQUEST_FD),
        (status_source.as_raw_fd(), STATUS_FD),
    ];
    if let Some(console) = &console_source {
        fixed.push((console.as_raw_fd(), CONSOLE_FD));
    }
    let join_raw: Vec<i32> = join.iter().map(AsRawFd::as_raw_fd).collect();

    let mut command = Command::new(berth_runtime::sealed_exe::SELF_EXE);
    command
        .arg0("berth")
        .arg(SHIM_COMMAND)
        .stdin(std::process::Stdio::from(stdio.stdin))
        .stdout(std::process::Stdio::from(stdio.stdout))
        .stderr(std::process::Stdio::from(stdio.stderr));
    if member {
        command.arg(MEMBER_FLAG);
    }
    // SAFETY: the closure runs in the child between fork and exec and makes
    // only write(2) and dup2(2) calls (async-signal-safe) on descriptors
    // that stay open here until spawn returns; the sources are above the
    // fixed numbers (`above_fixed_numbers`), so neither dup2 overwrites the other.
    unsafe {
        command.pre_exec(move || {
            // Born in its own network namespace, which `connect` fills:
            // QEMU's tap and the container's veth meet there.
            if libc::unshare(libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            for &fd in &join_raw {
                if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for &(source, target) in &fixed {
                if libc::dup2(source, target) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let child = command.spawn().map_err(|error| failed("start", &error))?;
    // The container's stdio is the shim's alone now (the Command held it).
    drop(command);
    drop((request_source, status_source, console_source, join));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    // The monitor reaps the shim itself (`wait_exit_code`), as it reaps a
    // namespace container's first process: `Child` never waits.
    drop(child);
    // The shim is this process's unreaped child: its pid cannot be reused.
    match berth_runtime::clone::pidfd_open(pid.as_raw()) {
        Ok(pidfd) => Ok((pid, pidfd)),
        Err(error) => {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            berth_runtime::wait_exit_code(pid);
            Err(failed("watch", &error))
        }
    }
}

/// Reads the shim's start report to its end: the process runs, or why
/// not (the shim is reaped then).
fn await_start(
    pid: nix::unistd::Pid,
    pidfd: OwnedFd,
    mut status: std::fs::File,
) -> Result<Launched, (String, i32)> {
    let mut report = Vec::new();
    let _ = status.read_to_end(&mut report);
    match serde_json::from_slice::<ShimStatus>(&report) {
        Ok(ShimStatus::Started) => Ok(Launched { pid, pidfd }),
        Ok(ShimStatus::Failed { message, status }) => {
            berth_runtime::wait_exit_code(pid);
            Err((message, status))
        }
        Ok(ShimStatus::Booted) | Err(_) => {
            let code = berth_runtime::wait_exit_code(pid);
            Err((
                format!("the container's VM shim exited ({code}) before it started the process"),
                125,
            ))
        }
    }
}

/// A warm pool member's shim: its VM booted with an empty root share and
/// its agent ready, waiting for the claim ([`MemberShim::start`]).
/// Dropped unclaimed, it is killed (its QEMU and virtiofsd die with it).
pub(crate) struct MemberShim {
    process: Option<MemberProcess>,
}

struct MemberProcess {
    pid: nix::unistd::Pid,
    pidfd: OwnedFd,
    channel: UnixStream,
    status: std::fs::File,
    networks: Vec<ShimNetwork>,
}

/// Starts a member's shim (stdio: /dev/null until its claim), lets
/// `connect` put the member's network into its namespace as [`launch`]
/// does, and waits until its VM has booted.
pub(crate) fn launch_member(
    cgroup: &dyn CgroupManager,
    mut boot: MemberBoot,
    connect: &mut dyn FnMut(i32) -> Result<Vec<ShimNetwork>, String>,
) -> Result<MemberShim, (String, i32)> {
    let null = || {
        fs_err::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
            .map(OwnedFd::from)
            .map_err(|error| failed("start", &error))
    };
    let stdio = Stdio {
        stdin: null()?,
        stdout: null()?,
        stderr: null()?,
        console: None,
    };
    let (channel, shim_end) = UnixStream::pair().map_err(|error| failed("start", &error))?;
    let (status_read, status_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|error| failed("start", &error))?;
    let (pid, pidfd) = spawn(stdio, cgroup, OwnedFd::from(shim_end), status_write, true)?;
    let mut shim = MemberShim {
        process: Some(MemberProcess {
            pid,
            pidfd,
            channel,
            status: std::fs::File::from(status_read),
            networks: Vec::new(),
        }),
    };
    let process = shim.process.as_mut().expect("just made");
    boot.networks = connect(pid.as_raw()).map_err(|message| (message, 125))?;
    process.networks = boot.networks.clone();
    let bytes = serde_json::to_vec(&boot).map_err(|error| failed("describe", &error))?;
    berth_runtime::handoff::send_message(&process.channel, &bytes, &[])
        .map_err(|error| failed("start", &error))?;
    // One line: `Booted`, or the failure (then the end of the pipe).
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while matches!(process.status.read(&mut byte), Ok(1)) && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    match serde_json::from_slice::<ShimStatus>(&line) {
        Ok(ShimStatus::Booted) => Ok(shim),
        Ok(ShimStatus::Failed { message, status }) => Err((message, status)),
        _ => Err((
            "the pool member's VM shim exited before its VM booted".to_owned(),
            125,
        )),
    }
}

impl MemberShim {
    /// The shim's pid (the container's `State.Pid` once claimed).
    pub(crate) fn pid(&self) -> Option<nix::unistd::Pid> {
        self.process.as_ref().map(|process| process.pid)
    }

    /// Readable once the shim has exited (its VM died, say).
    pub(crate) fn pidfd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.process.as_ref().map(|process| process.pidfd.as_fd())
    }

    /// The claim: the shim builds `request`'s root on its share and runs
    /// its process in the booted guest with `stdio`; returns once it runs,
    /// as [`launch`] does. The request's networks are the member's own.
    pub(crate) fn start(
        mut self,
        mut request: ShimRequest,
        stdio: Stdio,
    ) -> Result<Launched, (String, i32)> {
        let MemberProcess {
            pid,
            pidfd,
            channel,
            status,
            networks,
        } = self
            .process
            .take()
            .expect("a member is started at most once (start takes it by value)");
        request.networks = networks;
        let bytes = serde_json::to_vec(&request).map_err(|error| {
            kill_and_reap(pid);
            failed("describe", &error)
        })?;
        // With `-t`, the console socket as a fourth.
        let fds: Vec<i32> = [&stdio.stdin, &stdio.stdout, &stdio.stderr]
            .into_iter()
            .chain(stdio.console.as_ref())
            .map(AsRawFd::as_raw_fd)
            .collect();
        let sent = berth_runtime::handoff::send_message(&channel, &bytes, &fds);
        drop(stdio);
        if let Err(error) = sent {
            kill_and_reap(pid);
            return Err(failed("hand over", &error));
        }
        // The channel's end must not end the shim now: it runs the
        // container until its process exits.
        let started = await_start(pid, pidfd, status);
        drop(channel);
        started
    }
}

impl Drop for MemberShim {
    fn drop(&mut self) {
        if let Some(process) = self.process.take() {
            kill_and_reap(process.pid);
        }
    }
}

fn kill_and_reap(pid: nix::unistd::Pid) {
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    berth_runtime::wait_exit_code(pid);
}

/// After the shim's exit: its QEMU and virtiofsd die with it
/// (PR_SET_PDEATHSIG) but a moment later, and as orphans they are this
/// monitor's (a subreaper) to reap; the cgroup can only go once they have.
pub(crate) fn reap_leftovers(cgroup: &dyn CgroupManager) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let _ = cgroup.kill_all(nix::sys::signal::Signal::SIGKILL);
        while let Ok(status) =
            nix::sys::wait::waitpid(None, Some(nix::sys::wait::WaitPidFlag::WNOHANG))
        {
            if status == nix::sys::wait::WaitStatus::StillAlive {
                break;
            }
        }
        let left = cgroup.processes().map(|pids| pids.len()).unwrap_or(0);
        if left == 0 || std::time::Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_runtime::devices::{allows, DeviceRequest};

    #[test]
    fn the_vm_may_open_kvm_and_tun_but_no_other_host_device() {
        let resources = cgroup_resources(Resources {
            devices: Some(berth_runtime::devices::container_rules(true, &[])),
            ..Resources::default()
        });
        let rules = resources.devices.unwrap();
        let open = |major, minor| {
            allows(
                &rules,
                &DeviceRequest {
                    kind: DeviceKind::Char,
                    major,
                    minor,
                    access: Access::READ,
                },
            )
        };
        assert!(open(10, 232), "/dev/kvm");
        assert!(open(10, 200), "/dev/net/tun");
        assert!(open(1, 3), "/dev/null");
        assert!(!open(10, 229), "/dev/fuse");
        assert!(!open(4, 1), "a host tty");
    }
}
