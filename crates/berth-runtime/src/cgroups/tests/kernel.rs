//! Helpers for the tests on the real kernel: skips, unique names, child processes that are
//! always reaped, cgroups that are always removed.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicUsize, Ordering};

use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, pipe, ForkResult, Pid};

use crate::cgroups::files;

/// Whether real-kernel tests can run; prints why not.
pub(super) fn running_as_root(test: &str) -> bool {
    let root = nix::unistd::geteuid().is_root();
    if !root {
        eprintln!("skipping {test}: needs root to create cgroups");
    }
    root
}

/// `berth-test-<pid>-<n>`: unique across parallel test processes and within one.
pub(super) fn unique_name() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "berth-test-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Removes a test's parent cgroup (and anything left below it) from each root on drop.
pub(super) struct CgroupCleanup {
    pub dirs: Vec<PathBuf>,
}

impl Drop for CgroupCleanup {
    fn drop(&mut self) {
        for dir in &self.dirs {
            if let Err(error) = files::remove_dir(dir) {
                eprintln!("cleanup: {error}");
            }
        }
    }
}

/// A `sleep` process, killed and reaped on drop.
pub(super) struct Sleeper {
    pub child: Child,
}

impl Sleeper {
    pub fn spawn() -> Self {
        let child = Command::new("sleep")
            .arg("300")
            .spawn()
            .expect("spawn sleep");
        Self { child }
    }

    pub fn pid(&self) -> Pid {
        Pid::from_raw(i32::try_from(self.child.id()).expect("pid fits in i32"))
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A forked child that waits for [`Forked::release`] before running its body, so the test
/// can move it into a cgroup first. Killed and reaped on drop unless already waited for.
pub(super) struct Forked {
    pub pid: Pid,
    go: Option<OwnedFd>,
    reaped: bool,
}

/// Forks a child that blocks on a pipe, then runs `body`, which must only make
/// async-signal-safe calls (raw syscalls, no allocation): the test process has other
/// threads, whose locks the child inherits held.
pub(super) fn fork_waiting(body: fn() -> !) -> Forked {
    let (read_end, write_end) = pipe().expect("pipe");
    // SAFETY: the child only calls read(2), the body (async-signal-safe by contract) and
    // _exit(2); it never returns into the test harness.
    match unsafe { fork() }.expect("fork") {
        ForkResult::Child => {
            let mut byte = [0u8; 1];
            let _ = nix::unistd::read(read_end.as_raw_fd(), &mut byte);
            body()
        }
        ForkResult::Parent { child } => Forked {
            pid: child,
            go: Some(write_end),
            reaped: false,
        },
    }
}

impl Forked {
    pub fn release(&mut self) {
        if let Some(go) = self.go.take() {
            nix::unistd::write(&go, b"g").expect("release the child");
        }
    }

    pub fn wait(&mut self) -> WaitStatus {
        let status = waitpid(self.pid, None).expect("waitpid");
        self.reaped = true;
        status
    }
}

impl Drop for Forked {
    fn drop(&mut self) {
        if !self.reaped {
            let _ = kill(self.pid, Signal::SIGKILL);
            let _ = waitpid(self.pid, None);
        }
    }
}

/// Maps and touches `bytes` of anonymous memory with raw syscalls (no allocator).
pub(super) fn touch_memory(bytes: usize) {
    // SAFETY: an anonymous private mapping of fresh memory; nothing else refers to it.
    let memory = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if memory == libc::MAP_FAILED {
        // SAFETY: _exit is async-signal-safe and ends only this child.
        unsafe { libc::_exit(3) };
    }
    let memory = memory.cast::<u8>();
    for offset in (0..bytes).step_by(4096) {
        // SAFETY: offset < bytes, inside the mapping made above.
        unsafe { std::ptr::write_volatile(memory.add(offset), 1) };
    }
}

/// The body of a memory hog: touch far more than any test limit, then exit 0 (which the OOM
/// test treats as a failure).
pub(super) fn hog() -> ! {
    touch_memory(512 << 20);
    // SAFETY: _exit is async-signal-safe and ends only this child.
    unsafe { libc::_exit(0) }
}

/// The body of a process holding 16 MiB until killed.
pub(super) fn hold_memory() -> ! {
    touch_memory(16 << 20);
    loop {
        // SAFETY: pause(2) only waits for a signal.
        unsafe { libc::pause() };
    }
}

/// The cgroup of `pid` in one hierarchy, from `/proc/<pid>/cgroup` (`N:controllers:/path`).
pub(super) fn proc_cgroup(pid: Pid, controllers: &str) -> Option<String> {
    let text = fs_err::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    text.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let _id = fields.next()?;
        let names = fields.next()?;
        let path = fields.next()?;
        (names == controllers).then(|| path.to_owned())
    })
}

pub(super) fn read(path: &Path) -> String {
    fs_err::read_to_string(path)
        .unwrap_or_else(|error| panic!("reading {}: {error}", path.display()))
        .trim_end()
        .to_owned()
}
