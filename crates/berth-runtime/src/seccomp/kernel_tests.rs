//! The compiled default filter on the real kernel. Installing a filter cannot be undone,
//! so each test installs it in a forked child, which reports through its exit code (and
//! a pipe for text); the parent asserts.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};

use super::{compile, Filter, Profile};

/// Child exit codes: 0 is success, each failed step has its own.
const NO_NEW_PRIVS_FAILED: i32 = 10;
const INSTALL_FAILED: i32 = 11;
const SECCOMP_UNSUPPORTED: i32 = 12;
const GETPID_FAILED: i32 = 13;
const MOUNT_NOT_EPERM: i32 = 14;
const UNSHARE_NOT_EPERM: i32 = 15;
const CLONE3_NOT_ENOSYS: i32 = 16;
const VSOCK_NOT_EPERM: i32 = 17;
const INET_SOCKET_FAILED: i32 = 18;
const STATUS_UNREADABLE: i32 = 19;

fn docker_caps() -> Vec<String> {
    [
        "CAP_CHOWN",
        "CAP_DAC_OVERRIDE",
        "CAP_SETUID",
        "CAP_SETGID",
        "CAP_KILL",
        "CAP_SYS_CHROOT",
    ]
    .map(String::from)
    .to_vec()
}

/// How a child ended.
#[derive(Debug, PartialEq, Eq)]
enum End {
    Exited(i32),
    Signaled(i32),
}

/// Runs `child` in a forked process with its stdout-like output going to a pipe, and
/// returns how it ended and what it wrote.
fn in_child(child: impl FnOnce(&mut std::fs::File) -> i32) -> (End, String) {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a writable array of two ints, as pipe2 requires.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: pipe2 succeeded, so both fds are open and owned by nobody else.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: the child only runs `child` and then _exit()s; it never returns into the
    // test harness, and glibc's fork keeps malloc usable in the child.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed: {}", std::io::Error::last_os_error());
    if pid == 0 {
        drop(reader);
        let mut output = std::fs::File::from(writer);
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| child(&mut output)))
            .unwrap_or(99);
        drop(output);
        // SAFETY: _exit ends the child without running the parent's atexit handlers
        // or destructors, which belong to the parent.
        unsafe { libc::_exit(code) };
    }
    drop(writer);
    let mut text = String::new();
    std::fs::File::from(reader)
        .read_to_string(&mut text)
        .expect("read the child's output");
    let mut status = 0;
    // SAFETY: `pid` is our child and `status` is a valid int to write to.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    let end = if libc::WIFEXITED(status) {
        End::Exited(libc::WEXITSTATUS(status))
    } else {
        End::Signaled(libc::WTERMSIG(status))
    };
    (end, text)
}

/// Sets no_new_privs and installs `filter`; a non-zero result is the exit code.
fn confine(filter: &Filter, output: &mut std::fs::File) -> Result<u32, i32> {
    use std::io::Write;
    // SAFETY: PR_SET_NO_NEW_PRIVS takes plain integer arguments and touches no memory.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(NO_NEW_PRIVS_FAILED);
    }
    match filter.install_reporting_flags() {
        Ok(flags) => Ok(flags),
        Err(error) => {
            let _ = writeln!(output, "install: {error:?}");
            let unsupported = matches!(
                &error,
                super::SeccompError::Install { source, .. } if source.raw_os_error() == Some(libc::EINVAL)
            );
            Err(if unsupported {
                SECCOMP_UNSUPPORTED
            } else {
                INSTALL_FAILED
            })
        }
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

#[test]
fn default_profile_confines_a_real_process() {
    let filter = compile(&Profile::docker_default(), &docker_caps()).unwrap();
    let (end, output) = in_child(|output| {
        use std::io::Write;
        let flags = match confine(&filter, output) {
            Ok(flags) => flags,
            Err(code) => return code,
        };
        let _ = writeln!(output, "flags={flags:#x}");
        // SAFETY: getpid has no arguments and no memory effects.
        if unsafe { libc::syscall(libc::SYS_getpid) } != i64::from(std::process::id()) {
            return GETPID_FAILED;
        }
        // SAFETY: mount is given valid NUL-terminated strings and a null data pointer; the
        // filter refuses it before the kernel reads them.
        let mounted = unsafe {
            libc::mount(
                c"none".as_ptr(),
                c"/tmp".as_ptr(),
                c"tmpfs".as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        if mounted != -1 || errno() != libc::EPERM {
            return MOUNT_NOT_EPERM;
        }
        // SAFETY: unshare takes a flag word only.
        if unsafe { libc::unshare(libc::CLONE_NEWUSER) } != -1 || errno() != libc::EPERM {
            return UNSHARE_NOT_EPERM;
        }
        // SAFETY: a null clone_args with size 0 is rejected without being dereferenced;
        // here the filter answers first.
        let cloned = unsafe { libc::syscall(libc::SYS_clone3, std::ptr::null::<u8>(), 0usize) };
        if cloned != -1 || errno() != libc::ENOSYS {
            return CLONE3_NOT_ENOSYS;
        }
        // SAFETY: socket takes integers; a returned descriptor is closed right away.
        let vsock = unsafe { libc::socket(libc::AF_VSOCK, libc::SOCK_STREAM, 0) };
        if vsock != -1 || errno() != libc::EPERM {
            return VSOCK_NOT_EPERM;
        }
        // SAFETY: as above.
        let inet = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) };
        if inet < 0 {
            return INET_SOCKET_FAILED;
        }
        // SAFETY: `inet` is a descriptor this child just opened and owns.
        unsafe { libc::close(inet) };
        let Ok(status) = fs_err::read_to_string("/proc/self/status") else {
            return STATUS_UNREADABLE;
        };
        for line in status.lines() {
            if line.starts_with("Seccomp:") || line.starts_with("Speculation_Store_Bypass:") {
                let _ = writeln!(output, "{line}");
            }
        }
        0
    });
    println!("child said:\n{output}");
    let End::Exited(code) = end else {
        panic!("child ended by {end:?}: {output}");
    };
    if code == SECCOMP_UNSUPPORTED {
        println!("skipped: this kernel refused the filter with EINVAL (no seccomp filter support)");
        return;
    }
    assert_eq!(code, 0, "child failed at step {code}: {output}");
    let seccomp = output
        .lines()
        .find(|line| line.starts_with("Seccomp:"))
        .expect("Seccomp line");
    assert_eq!(seccomp.split_whitespace().nth(1), Some("2"), "{seccomp}");

    let spec_allow = libc::SECCOMP_FILTER_FLAG_SPEC_ALLOW as u32;
    let flags = output
        .lines()
        .find_map(|line| line.strip_prefix("flags="))
        .and_then(|hex| u32::from_str_radix(hex.trim_start_matches("0x"), 16).ok())
        .expect("flags line");
    match output
        .lines()
        .find(|line| line.starts_with("Speculation_Store_Bypass:"))
    {
        Some(line) if flags & spec_allow != 0 => {
            println!("SPEC_ALLOW accepted; {line}");
            assert!(!line.contains("thread force mitigated"), "{line}");
        }
        Some(line) => println!("kernel refused SPEC_ALLOW (before 4.17); {line}"),
        None => println!("no Speculation_Store_Bypass line in /proc/self/status on this kernel"),
    }
}

/// A profile's own flags replace the SPEC_ALLOW default, and KILL_PROCESS really kills.
#[test]
fn profile_flags_and_kill_action_reach_the_kernel() {
    let profile = Profile::from_json(
        br#"{
            "defaultAction": "SCMP_ACT_ALLOW",
            "flags": ["SECCOMP_FILTER_FLAG_LOG"],
            "syscalls": [{"names": ["getppid"], "action": "SCMP_ACT_KILL_PROCESS"}]
        }"#,
    )
    .unwrap();
    let filter = compile(&profile, &[]).unwrap();
    assert_eq!(filter.flags(), libc::SECCOMP_FILTER_FLAG_LOG as u32);
    let (end, output) = in_child(|output| match confine(&filter, output) {
        Err(code) => code,
        Ok(_) => {
            // SAFETY: getppid has no arguments; the filter kills the process here.
            unsafe { libc::getppid() };
            0
        }
    });
    if end == End::Exited(SECCOMP_UNSUPPORTED) {
        println!("skipped: this kernel refused the filter with EINVAL: {output}");
        return;
    }
    assert_eq!(end, End::Signaled(libc::SIGSYS), "{output}");
}
