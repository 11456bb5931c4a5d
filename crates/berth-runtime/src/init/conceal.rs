//! What a berth process inside a container must not show of the host while it is still berth
//! (between entering the container's namespaces and `execve`): the caller's environment and
//! command line, its memory, its descriptors, its executable.
//!
//! The process is a fork of the berth command that started it, so it carries that command's
//! whole environment (a user's secrets included) and memory. Two things hide them:
//! - it is not dumpable (`PR_SET_DUMPABLE 0`): `/proc/<pid>/{environ,mem,maps,fd,exe,cwd,root}`
//!   and `ptrace` then need `CAP_SYS_PTRACE`, which Docker's default set does not grant
//!   (`ptrace_may_access` in kernel/ptrace.c). `execve` makes the container's program dumpable
//!   again, as it should be;
//! - it is born with its argument and environment blocks zeroed ([`InheritedStrings`]):
//!   `/proc/<pid>/cmdline` shows them to everyone and `/proc/<pid>/environ` to whoever passes
//!   that check (a container granted CAP_SYS_PTRACE). `execve` hands the program its own
//!   environment, never these bytes.
//!
//! Descriptors are closed by [`close_descriptors_except`] before `execve`.

use std::os::fd::RawFd;

/// Makes this process (and what it forks from now on) undumpable; see the module comment.
pub(crate) fn forbid_inspection() -> std::io::Result<()> {
    // SAFETY: PR_SET_DUMPABLE takes integer arguments and touches no memory.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The argument and environment strings this process started with (the ranges the kernel
/// reads `/proc/<pid>/cmdline` and `/proc/<pid>/environ` from), zeroed around the fork or clone
/// of a child that enters a container: that child is visible in the container's `/proc` from
/// the moment it exists (on a busy machine, before it first runs), so it must be born without
/// them. The parent gets them back when this is dropped; the child calls [`Self::discard`].
pub(crate) struct InheritedStrings {
    saved: Vec<(usize, Vec<u8>)>,
}

impl InheritedStrings {
    /// Copies the strings aside and zeroes them in place.
    pub(crate) fn hide() -> Self {
        let mut saved = Vec::new();
        for (start, block) in inherited_blocks() {
            saved.push((start, block.to_vec()));
            block.fill(0);
        }
        Self { saved }
    }

    /// Zeroes them for good: for a process that will `execve` or exit and needs no copy.
    pub(crate) fn wipe() {
        for (_, block) in inherited_blocks() {
            block.fill(0);
        }
    }

    /// In the child: the strings stay zeroed, and the copy is zeroed too.
    pub(crate) fn discard(mut self) {
        for (_, copy) in &mut self.saved {
            copy.fill(0);
        }
        self.saved.clear();
    }
}

impl Drop for InheritedStrings {
    /// In the parent: puts the strings back.
    fn drop(&mut self) {
        for (start, copy) in &self.saved {
            // SAFETY: the same blocks as in `hide`, of the same length.
            let block = unsafe { std::slice::from_raw_parts_mut(*start as *mut u8, copy.len()) };
            block.copy_from_slice(copy);
        }
    }
}

/// The argument and environment blocks the kernel placed at the top of this process's
/// stack at execve, as `(start address, bytes)`; none when /proc/self/stat cannot say.
fn inherited_blocks() -> Vec<(usize, &'static mut [u8])> {
    let ranges = fs_err::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| start_ranges(&stat))
        .unwrap_or_default();
    ranges
        .into_iter()
        .filter(|(start, end)| end > start)
        .map(|(start, end)| {
            // SAFETY: [start, end) are the argument and environment blocks the kernel placed
            // at the top of this process's stack at execve (fields 48–51 of /proc/self/stat);
            // they stay mapped, readable and writable for the life of the process, and no Rust
            // value borrows them (std::env copies what it returns). The two ranges do not
            // overlap, so the slices do not alias.
            let block = unsafe { std::slice::from_raw_parts_mut(start as *mut u8, end - start) };
            (start, block)
        })
        .collect()
}

/// `(arg_start, arg_end)` and `(env_start, env_end)` from a `/proc/<pid>/stat` line
/// (proc(5): fields 48–51, counted from 1, the command name in parentheses being field 2).
fn start_ranges(stat: &str) -> Option<[(usize, usize); 2]> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    // Field 3 is the first after the name.
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |number: usize| fields.get(number - 3)?.parse::<usize>().ok();
    Some([(field(48)?, field(49)?), (field(50)?, field(51)?)])
}

/// Closes every descriptor above stderr except `keep` (each must be above 2).
pub(crate) fn close_descriptors_except(keep: &[RawFd]) {
    let mut keep: Vec<u32> = keep
        .iter()
        .filter_map(|fd| u32::try_from(*fd).ok())
        .filter(|fd| *fd > 2)
        .collect();
    keep.sort_unstable();
    keep.dedup();
    let mut first = 3u32;
    for fd in keep.into_iter().chain(std::iter::once(u32::MAX)) {
        if fd > first {
            close_range(first, fd - 1);
        }
        if fd == u32::MAX {
            break;
        }
        first = fd + 1;
    }
}

fn close_range(first: u32, last: u32) {
    // SAFETY: close_range closes this process's descriptors first..=last; the caller owns
    // none of them any more (see close_descriptors_except's callers).
    let result = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0u32) };
    if result != 0 {
        // Kernels before 5.9: one by one, as /proc/self/fd lists them.
        let Ok(entries) = fs_err::read_dir("/proc/self/fd") else {
            return;
        };
        let open: Vec<u32> = entries
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
            .collect();
        for fd in open.into_iter().filter(|fd| (first..=last).contains(fd)) {
            // SAFETY: as above, for one descriptor.
            unsafe { libc::close(fd as RawFd) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_ranges_come_from_fields_48_to_51() {
        // A command name with a space and a parenthesis, as comm may have.
        let mut line = "1234 (a b) c) S".to_owned();
        for field in 4..=52 {
            line.push_str(&format!(" {field}"));
        }
        assert_eq!(start_ranges(&line), Some([(48, 49), (50, 51)]));
        assert_eq!(start_ranges("1234 (short) S 1 2"), None);
    }

    #[test]
    fn this_process_has_ranges_covering_its_environment() {
        let stat = fs_err::read_to_string("/proc/self/stat").unwrap();
        let [(arg_start, arg_end), (env_start, env_end)] = start_ranges(&stat).unwrap();
        assert!(arg_start < arg_end && arg_end <= env_start && env_start < env_end);
        let environ = fs_err::read("/proc/self/environ").unwrap();
        assert_eq!(environ.len(), env_end - env_start);
    }

    #[test]
    fn a_child_forked_while_hidden_shows_no_environment_or_command_line() {
        // As the runtime uses it: hide, fork, discard in the child, restore in the parent.
        let (ready_read, ready_write) = nix::unistd::pipe().unwrap();
        let (done_read, done_write) = nix::unistd::pipe().unwrap();
        let before = fs_err::read("/proc/self/environ").unwrap();
        let hidden = InheritedStrings::hide();
        // SAFETY: the child only writes a byte and waits for its parent, then _exits.
        match unsafe { nix::unistd::fork() }.unwrap() {
            nix::unistd::ForkResult::Child => {
                hidden.discard();
                drop(done_write);
                let _ = nix::unistd::write(&ready_write, b"r");
                let mut byte = [0u8];
                let _ = nix::unistd::read(std::os::fd::AsRawFd::as_raw_fd(&done_read), &mut byte);
                // SAFETY: leaves the forked test child without running the harness's code.
                unsafe { libc::_exit(0) }
            }
            nix::unistd::ForkResult::Parent { child } => {
                drop(hidden);
                drop(ready_write);
                let mut byte = [0u8];
                nix::unistd::read(std::os::fd::AsRawFd::as_raw_fd(&ready_read), &mut byte).unwrap();
                let environ = fs_err::read(format!("/proc/{child}/environ")).unwrap();
                let cmdline = fs_err::read(format!("/proc/{child}/cmdline")).unwrap();
                drop(done_write);
                nix::sys::wait::waitpid(child, None).unwrap();
                assert_eq!(fs_err::read("/proc/self/environ").unwrap(), before);
                assert!(before.iter().any(|byte| *byte != 0));
                assert!(environ.iter().all(|byte| *byte == 0), "{environ:?}");
                assert!(cmdline.iter().all(|byte| *byte == 0), "{cmdline:?}");
            }
        }
    }
}
