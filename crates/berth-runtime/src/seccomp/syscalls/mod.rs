//! Syscall name → number tables, one per architecture a filter can have a section for.

use std::collections::HashMap;

use super::arch::Arch;

mod x86;
#[cfg(target_arch = "x86_64")]
mod x86_64;

/// Syscalls added since Linux 6.5 that libc 0.2.191 does not name yet. From 424 on,
/// every architecture but alpha uses the same number for a new syscall
/// (`include/uapi/asm-generic/unistd.h`), so one list serves x86_64 and i386.
const COMMON_NEWER: &[(&str, u32)] = &[
    ("cachestat", 451),
    ("futex_wake", 454),
    ("futex_wait", 455),
    ("futex_requeue", 456),
    ("statmount", 457),
    ("listmount", 458),
    ("lsm_get_self_attr", 459),
    ("lsm_set_self_attr", 460),
    ("lsm_list_modules", 461),
    ("setxattrat", 463),
    ("getxattrat", 464),
    ("listxattrat", 465),
    ("removexattrat", 466),
    ("open_tree_attr", 467),
    ("file_getattr", 468),
    ("file_setattr", 469),
];

/// The syscalls of one architecture, looked up by name.
#[derive(Debug, Clone)]
pub(crate) struct SyscallTable {
    by_name: HashMap<&'static str, u32>,
    highest: u32,
}

impl SyscallTable {
    /// The table for `arch`, or `None` when this build has no table for it (x86_64
    /// numbers come from libc, which only has them when built for x86_64).
    pub(crate) fn for_arch(arch: Arch) -> Option<SyscallTable> {
        let parts: [&[(&'static str, u32)]; 3] = match arch {
            #[cfg(target_arch = "x86_64")]
            Arch::X86_64 => [x86_64::FROM_LIBC, x86_64::NEWER, COMMON_NEWER],
            #[cfg(not(target_arch = "x86_64"))]
            Arch::X86_64 => return None,
            Arch::X86 => [x86::FROM_LIBC, x86::NEWER, COMMON_NEWER],
        };
        let by_name: HashMap<&'static str, u32> = parts.into_iter().flatten().copied().collect();
        let highest = by_name.values().copied().max().unwrap_or(0);
        Some(SyscallTable { by_name, highest })
    }

    /// The number of `name` on this architecture, if it has that syscall.
    pub(crate) fn number(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    /// The highest number this table knows. Numbers above it are syscalls newer than
    /// berth; they get ENOSYS (see `resolve`), as runc does, so that programs fall back.
    pub(crate) fn highest(&self) -> u32 {
        self.highest
    }
}

#[cfg(test)]
#[cfg(target_arch = "x86_64")]
mod tests {
    use super::*;

    #[test]
    fn x86_64_numbers_match_the_kernel_abi() {
        let table = SyscallTable::for_arch(Arch::X86_64).expect("x86_64 table");
        assert_eq!(table.number("read"), Some(0));
        assert_eq!(table.number("mount"), Some(165));
        assert_eq!(table.number("clone3"), Some(435));
        assert_eq!(table.number("io_pgetevents"), Some(333));
        assert_eq!(table.number("futex_wait"), Some(455));
        assert_eq!(table.number("mmap2"), None, "i386 only");
        assert_eq!(table.highest(), 469);
    }

    #[test]
    fn i386_numbers_match_the_kernel_abi() {
        let table = SyscallTable::for_arch(Arch::X86).expect("i386 table");
        assert_eq!(table.number("exit"), Some(1));
        assert_eq!(table.number("socketcall"), Some(102));
        assert_eq!(table.number("socket"), Some(359));
        assert_eq!(table.number("mount"), Some(21));
        assert_eq!(table.number("clone3"), Some(435));
        assert_eq!(table.number("futex_time64"), Some(422));
        assert_eq!(table.number("newfstatat"), None, "x86_64 only");
    }

    #[test]
    fn no_name_maps_to_two_numbers() {
        for arch in [Arch::X86_64, Arch::X86] {
            let parts: Vec<&[(&str, u32)]> = match arch {
                Arch::X86_64 => vec![x86_64::FROM_LIBC, x86_64::NEWER, COMMON_NEWER],
                Arch::X86 => vec![x86::FROM_LIBC, x86::NEWER, COMMON_NEWER],
            };
            let mut seen: HashMap<&str, u32> = HashMap::new();
            for &(name, number) in parts.into_iter().flatten() {
                if let Some(previous) = seen.insert(name, number) {
                    assert_eq!(previous, number, "{arch:?} {name}");
                }
            }
        }
    }
}
