//! The seccomp floor: a program run on the host under the smallest filter
//! there is, one instruction returning SECCOMP_RET_ALLOW. What it costs is
//! the kernel's seccomp entry path itself; no profile can be cheaper, so a
//! default profile is judged against it. The filter is installed with
//! SECCOMP_FILTER_FLAG_SPEC_ALLOW where the kernel has it (≥ 4.17), so on
//! kernels that tie the Speculative Store Bypass mitigation to seccomp the
//! floor does not pay for that either.

use std::os::unix::process::CommandExt;
use std::process::Command;

const BPF_RET_K: u16 = 0x06; // BPF_RET | BPF_K
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_SET_MODE_FILTER: libc::c_ulong = 1;
const SECCOMP_FILTER_FLAG_SPEC_ALLOW: libc::c_ulong = 1 << 2;

/// Makes `command` exec under the allow-all filter.
pub fn under_allow_all_filter(command: &mut Command) -> &mut Command {
    // SAFETY: the hook runs in the forked child before exec and only makes
    // the prctl(2) and seccomp(2) system calls on memory it owns (no
    // allocation, no locks), which is async-signal-safe.
    unsafe { command.pre_exec(install_allow_all) }
}

fn install_allow_all() -> std::io::Result<()> {
    let mut filter = [libc::sock_filter {
        code: BPF_RET_K,
        jt: 0,
        jf: 0,
        k: SECCOMP_RET_ALLOW,
    }];
    let program = libc::sock_fprog {
        len: 1,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: PR_SET_NO_NEW_PRIVS takes integer arguments only; it lets an
    // unprivileged process install a filter and changes nothing else here.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    for flags in [SECCOMP_FILTER_FLAG_SPEC_ALLOW, 0] {
        // SAFETY: `program` points at `filter`, one valid instruction, and
        // both live until the call returns; the kernel copies the program.
        let result = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                SECCOMP_SET_MODE_FILTER,
                flags,
                &program as *const libc::sock_fprog,
            )
        };
        if result == 0 {
            return Ok(());
        }
        let error = std::io::Error::last_os_error();
        // EINVAL: a kernel before 4.17 does not know SPEC_ALLOW.
        if error.raw_os_error() != Some(libc::EINVAL) || flags == 0 {
            return Err(error);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_is_in_place_and_everything_still_runs() {
        let output = under_allow_all_filter(
            Command::new("sh").args(["-c", "grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status"]),
        )
        .output()
        .unwrap();
        assert!(output.status.success(), "{output:?}");
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(text.contains("NoNewPrivs:\t1"), "{text}");
        assert!(text.contains("Seccomp:\t2"), "{text}");
    }
}
