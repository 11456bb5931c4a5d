//! The default profile, compiled and run through the test interpreter: the policy Docker
//! users expect, syscall by syscall, without touching the kernel.

use super::arch::{Arch, Host, KernelVersion, AUDIT_ARCH_I386, AUDIT_ARCH_X86_64, X32_SYSCALL_BIT};
use super::interpreter::{run, Outcome, SeccompData};
use super::{compile_for, Filter, Profile};

const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const EPERM: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
const ENOSYS: u32 = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;

/// Docker's 14 default capabilities.
const DOCKER_CAPS: &[&str] = crate::capabilities::DOCKER_DEFAULT;

const AF_ALG: u64 = 38;
const AF_NFC: u64 = 39;
const AF_VSOCK: u64 = 40;
/// AF_XDP, the highest family most kernels have: above AF_VSOCK, so allowed.
const AF_XDP: u64 = 44;

fn host(kernel: KernelVersion) -> Host {
    Host {
        arch: Arch::X86_64,
        kernel,
    }
}

fn compile_with(caps: &[&str], kernel: KernelVersion) -> Filter {
    let caps: Vec<String> = caps.iter().map(|cap| (*cap).to_owned()).collect();
    compile_for(&Profile::docker_default(), &caps, &host(kernel))
        .expect("the default profile compiles")
}

fn default_filter() -> Filter {
    compile_with(DOCKER_CAPS, KernelVersion::new(6, 1))
}

fn call(filter: &Filter, nr: libc::c_long, args: &[u64]) -> Outcome {
    call_arch(filter, AUDIT_ARCH_X86_64, nr as u32, args)
}

fn call_arch(filter: &Filter, arch: u32, nr: u32, args: &[u64]) -> Outcome {
    let mut data = SeccompData::new(nr, arch);
    for (index, &value) in args.iter().enumerate() {
        data = data.with_arg(index, value);
    }
    run(filter.instructions(), &data)
}

#[test]
fn default_profile_has_a_comment_on_every_rule() {
    let profile = Profile::docker_default();
    assert!(profile.syscalls.len() > 40);
    for rule in &profile.syscalls {
        let comment = rule.comment.as_deref().unwrap_or_default();
        assert!(
            comment.len() > 10,
            "rule for {:?} needs a comment",
            rule.names
        );
    }
}

#[test]
fn everyday_syscalls_are_allowed_and_cacheable() {
    let filter = default_filter();
    for nr in [
        libc::SYS_read,
        libc::SYS_write,
        libc::SYS_openat,
        libc::SYS_close,
        libc::SYS_mmap,
        libc::SYS_futex,
        libc::SYS_execve,
        libc::SYS_exit_group,
        libc::SYS_getpid,
        libc::SYS_arch_prctl,
        libc::SYS_rt_sigreturn,
        libc::SYS_statx,
        libc::SYS_epoll_wait,
        libc::SYS_chroot,
        libc::SYS_setuid,
        libc::SYS_fchmodat2,
        libc::SYS_mseal,
        455, // futex_wait, newer than libc
    ] {
        let outcome = call(&filter, nr, &[]);
        assert_eq!(outcome.action, ALLOW, "syscall {nr}");
        // No argument loads on the path: the kernel's action cache can precompute it.
        assert!(
            !outcome.read_args,
            "syscall {nr} should not inspect arguments"
        );
    }
}

#[test]
fn dangerous_syscalls_get_eperm() {
    let filter = default_filter();
    for nr in [
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_swapon,
        libc::SYS_reboot,
        libc::SYS_iopl,
        libc::SYS_settimeofday,
        libc::SYS_clock_settime,
        libc::SYS_io_uring_setup,
        libc::SYS_userfaultfd,
        libc::SYS_open_by_handle_at,
        libc::SYS_acct,
        libc::SYS_syslog,
        libc::SYS_kcmp,
        libc::SYS_mbind,
        libc::SYS_fsopen,
        libc::SYS_move_mount,
    ] {
        assert_eq!(call(&filter, nr, &[]).action, EPERM, "syscall {nr}");
    }
}

#[test]
fn ptrace_follows_the_kernel_version_and_cap_sys_ptrace() {
    let modern = compile_with(DOCKER_CAPS, KernelVersion::new(4, 8));
    assert_eq!(
        call(&modern, libc::SYS_ptrace, &[]).action,
        ALLOW,
        "Docker allows it from 4.8"
    );
    assert_eq!(call(&modern, libc::SYS_process_vm_readv, &[]).action, ALLOW);
    assert_eq!(
        call(&modern, libc::SYS_kcmp, &[]).action,
        EPERM,
        "kcmp needs CAP_SYS_PTRACE"
    );

    let old = compile_with(DOCKER_CAPS, KernelVersion::new(4, 4));
    assert_eq!(
        call(&old, libc::SYS_ptrace, &[]).action,
        EPERM,
        "4.4: seccomp bypass"
    );
    let mut caps = DOCKER_CAPS.to_vec();
    caps.push("CAP_SYS_PTRACE");
    let traced = compile_with(&caps, KernelVersion::new(4, 4));
    for nr in [
        libc::SYS_ptrace,
        libc::SYS_kcmp,
        libc::SYS_pidfd_getfd,
        libc::SYS_process_madvise,
    ] {
        assert_eq!(call(&traced, nr, &[]).action, ALLOW, "syscall {nr}");
    }
}

#[test]
fn clone_may_not_create_namespaces_without_cap_sys_admin() {
    let filter = default_filter();
    let thread_flags = (libc::CLONE_VM
        | libc::CLONE_FS
        | libc::CLONE_FILES
        | libc::CLONE_SIGHAND
        | libc::CLONE_THREAD
        | libc::CLONE_SYSVSEM
        | libc::CLONE_SETTLS
        | libc::CLONE_PARENT_SETTID
        | libc::CLONE_CHILD_CLEARTID) as u64;
    assert_eq!(
        call(&filter, libc::SYS_clone, &[thread_flags]).action,
        ALLOW
    );
    assert_eq!(
        call(&filter, libc::SYS_clone, &[libc::SIGCHLD as u64]).action,
        ALLOW
    );
    for namespace in [
        libc::CLONE_NEWUSER,
        libc::CLONE_NEWNS,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWNET,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWCGROUP,
    ] {
        let flags = namespace as u64 | libc::SIGCHLD as u64;
        assert_eq!(
            call(&filter, libc::SYS_clone, &[flags]).action,
            EPERM,
            "{namespace:#x}"
        );
        // Setting high bits does not hide the low ones.
        assert_eq!(
            call(&filter, libc::SYS_clone, &[flags | 1 << 40]).action,
            EPERM
        );
    }
    assert_eq!(
        call(&filter, libc::SYS_clone3, &[]).action,
        ENOSYS,
        "so libc falls back to clone"
    );

    let mut caps = DOCKER_CAPS.to_vec();
    caps.push("CAP_SYS_ADMIN");
    let admin = compile_with(&caps, KernelVersion::new(6, 1));
    let user_namespace = (libc::CLONE_NEWUSER | libc::SIGCHLD) as u64;
    assert_eq!(
        call(&admin, libc::SYS_clone, &[user_namespace]).action,
        ALLOW
    );
    assert_eq!(call(&admin, libc::SYS_clone3, &[]).action, ALLOW);
    assert_eq!(call(&admin, libc::SYS_mount, &[]).action, ALLOW);
    assert_eq!(call(&admin, libc::SYS_unshare, &[]).action, ALLOW);
    assert_eq!(
        call(&admin, libc::SYS_kexec_load, &[]).action,
        EPERM,
        "never in Docker's profile"
    );
}

#[test]
fn personality_only_with_the_listed_values() {
    let filter = default_filter();
    for allowed in [0, 8, 0x20000, 0x20008, 0xffff_ffff] {
        assert_eq!(
            call(&filter, libc::SYS_personality, &[allowed]).action,
            ALLOW,
            "{allowed:#x}"
        );
    }
    // ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, MMAP_PAGE_ZERO, and values with high bits.
    for denied in [
        0x0040000,
        0x0400000,
        0x0100000,
        0x1_0000_0000,
        0x1_ffff_ffff,
    ] {
        assert_eq!(
            call(&filter, libc::SYS_personality, &[denied]).action,
            EPERM,
            "{denied:#x}"
        );
    }
}

#[test]
fn socket_families_follow_dockers_rules() {
    let filter = default_filter();
    for family in [
        libc::AF_UNIX as u64,
        libc::AF_INET as u64,
        libc::AF_INET6 as u64,
        16,
        AF_NFC,
        AF_XDP,
    ] {
        let outcome = call(
            &filter,
            libc::SYS_socket,
            &[family, libc::SOCK_STREAM as u64, 0],
        );
        assert_eq!(outcome.action, ALLOW, "family {family}");
        assert!(outcome.read_args);
    }
    for family in [AF_ALG, AF_VSOCK] {
        assert_eq!(
            call(&filter, libc::SYS_socket, &[family, 1, 0]).action,
            EPERM,
            "family {family}"
        );
    }
}

#[test]
fn foreign_architectures_and_x32_get_the_default_action() {
    let filter = default_filter();
    const AUDIT_ARCH_AARCH64: u32 = 183 | 0x8000_0000 | 0x4000_0000;
    for arch in [AUDIT_ARCH_AARCH64, 0, 0xffff_ffff] {
        let outcome = call_arch(&filter, arch, libc::SYS_read as u32, &[]);
        assert_eq!(outcome.action, EPERM, "arch {arch:#x}");
    }
    // x32's read is 0 | X32_SYSCALL_BIT; its own numbers start at 512.
    for nr in [0, 1, 512, 547] {
        let outcome = call_arch(&filter, AUDIT_ARCH_X86_64, nr | X32_SYSCALL_BIT, &[]);
        assert_eq!(outcome.action, EPERM, "x32 syscall {nr}");
    }
}

/// i386 numbers: read 3, mount 21, socketcall 102, clone 120, socket 359, clone3 435.
#[test]
fn i386_section_applies_the_same_policy() {
    let filter = default_filter();
    let i386 = |nr: u32, args: &[u64]| call_arch(&filter, AUDIT_ARCH_I386, nr, args).action;
    assert_eq!(i386(3, &[]), ALLOW);
    assert_eq!(i386(21, &[]), EPERM);
    assert_eq!(
        i386(102, &[]),
        ALLOW,
        "socketcall: arguments in memory, as Docker"
    );
    assert_eq!(i386(359, &[libc::AF_INET as u64]), ALLOW);
    assert_eq!(i386(359, &[AF_VSOCK]), EPERM);
    assert_eq!(i386(120, &[libc::SIGCHLD as u64]), ALLOW);
    assert_eq!(
        i386(120, &[(libc::CLONE_NEWUSER | libc::SIGCHLD) as u64]),
        EPERM
    );
    assert_eq!(i386(435, &[]), ENOSYS);
    // Rules are picked by the host's arch (amd64), then apply to every section that has
    // the syscall, as libseccomp does: i386 has arch_prctl too.
    assert_eq!(i386(384, &[]), ALLOW);
}

#[test]
fn syscalls_newer_than_berth_get_enosys() {
    let filter = default_filter();
    for nr in [470, 500, 1000, X32_SYSCALL_BIT - 1] {
        let outcome = call_arch(&filter, AUDIT_ARCH_X86_64, nr, &[]);
        assert_eq!(outcome.action, ENOSYS, "syscall {nr}");
    }
    // A number inside the table's range that no rule names keeps the default.
    assert_eq!(call(&filter, 400, &[]).action, EPERM);
}

#[test]
fn capability_groups_open_their_syscalls() {
    let gated: &[(&str, &[libc::c_long])] = &[
        ("CAP_DAC_READ_SEARCH", &[libc::SYS_open_by_handle_at]),
        ("CAP_SYS_BOOT", &[libc::SYS_reboot]),
        (
            "CAP_SYS_MODULE",
            &[
                libc::SYS_init_module,
                libc::SYS_finit_module,
                libc::SYS_delete_module,
            ],
        ),
        ("CAP_SYS_PACCT", &[libc::SYS_acct]),
        ("CAP_SYS_RAWIO", &[libc::SYS_iopl, libc::SYS_ioperm]),
        (
            "CAP_SYS_TIME",
            &[libc::SYS_settimeofday, libc::SYS_clock_settime],
        ),
        ("CAP_SYS_TTY_CONFIG", &[libc::SYS_vhangup]),
        (
            "CAP_SYS_NICE",
            &[
                libc::SYS_mbind,
                libc::SYS_set_mempolicy,
                libc::SYS_get_mempolicy,
            ],
        ),
        ("CAP_SYSLOG", &[libc::SYS_syslog]),
        ("CAP_BPF", &[libc::SYS_bpf]),
        ("CAP_PERFMON", &[libc::SYS_perf_event_open]),
    ];
    let without_chroot: Vec<&str> = DOCKER_CAPS
        .iter()
        .copied()
        .filter(|&cap| cap != "CAP_SYS_CHROOT")
        .collect();
    let plain = compile_with(&without_chroot, KernelVersion::new(6, 1));
    assert_eq!(call(&plain, libc::SYS_chroot, &[]).action, EPERM);
    for &(cap, syscalls) in gated {
        let mut caps = DOCKER_CAPS.to_vec();
        caps.push(cap);
        let filter = compile_with(&caps, KernelVersion::new(6, 1));
        for &nr in syscalls {
            assert_eq!(call(&plain, nr, &[]).action, EPERM, "{nr} without {cap}");
            assert_eq!(call(&filter, nr, &[]).action, ALLOW, "{nr} with {cap}");
        }
    }
}

/// Every x86_64 and i386 number: the program never runs off its end, only syscalls
/// with argument rules read arguments, and the search stays shallow.
#[test]
fn whole_number_space_is_well_formed() {
    let filter = default_filter();
    println!(
        "default filter: {} instructions",
        filter.instructions().len()
    );
    // 69 x86_64 ranges + 124 i386 ranges, one jge and one ret each, plus three argument
    // checked syscalls per section: about 480. Far below the kernel's 4096.
    assert!(
        filter.instructions().len() < 600,
        "{}",
        filter.instructions().len()
    );
    let with_args = [libc::SYS_socket, libc::SYS_personality, libc::SYS_clone].map(|nr| nr as u32);
    let i386_with_args = [359, 136, 120];
    for nr in 0..600 {
        let native = call_arch(&filter, AUDIT_ARCH_X86_64, nr, &[]);
        assert_eq!(native.read_args, with_args.contains(&nr), "x86_64 {nr}");
        let compat = call_arch(&filter, AUDIT_ARCH_I386, nr, &[]);
        assert_eq!(compat.read_args, i386_with_args.contains(&nr), "i386 {nr}");
        if !native.read_args {
            assert!(
                native.executed <= 16,
                "x86_64 {nr}: {} instructions",
                native.executed
            );
        }
    }
}

#[test]
fn compiling_is_deterministic() {
    assert_eq!(default_filter().to_bytes(), default_filter().to_bytes());
}
