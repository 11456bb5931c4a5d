//! seccomp: Docker-format profiles compiled to classic BPF by berth itself (no
//! libseccomp), cached on disk, and loaded with `SECCOMP_FILTER_FLAG_SPEC_ALLOW`.
//!
//! ```text
//! Profile (JSON) --resolve(caps, host)--> Policy --codegen--> Filter --install--> kernel
//!                         \____________ compile_cached: sha256-keyed file ___________/
//! ```
//!
//! - [`Profile::docker_default`] is our `default.json`: Docker's default policy, grouped
//!   by purpose with a comment per group.
//! - [`compile`] keeps the rules whose `includes`/`excludes` match the container's
//!   capabilities and this host, then generates the program (see `codegen` for its shape,
//!   the x32 and foreign-architecture handling, and the kernel action cache).
//! - [`Filter::install`] loads it on the calling thread.

mod arch;
mod bpf;
mod cache;
mod codegen;
mod filter;
mod profile;
mod resolve;
mod syscalls;

#[cfg(all(test, target_arch = "x86_64"))]
mod default_profile_tests;
#[cfg(test)]
mod interpreter;
#[cfg(all(test, target_arch = "x86_64"))]
mod kernel_tests;

pub use arch::{Arch, Host, KernelVersion, AUDIT_ARCH_I386, AUDIT_ARCH_X86_64, X32_SYSCALL_BIT};
pub use cache::{cache_key, compile_cached, compile_cached_for, ProfileSource};
pub use filter::Filter;
pub use profile::{
    Action, ArchMapEntry, ArgCondition, CompareOp, FilterFlag, Profile, RuleFilter, SyscallRule,
};

/// Errors of profile parsing, compiling, caching and loading.
#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    #[error("failed to parse seccomp profile")]
    ParseProfile {
        #[source]
        source: serde_json::Error,
    },
    #[error("invalid seccomp profile: {reason}")]
    InvalidProfile { reason: String },
    #[error(
        "seccomp profile is unconfined (no defaultAction, no rules): there is no filter to compile"
    )]
    Unconfined,
    #[error("seccomp action {action} is not supported")]
    UnsupportedAction { action: &'static str },
    #[error("seccomp errno {errno} is out of range (at most 4095)")]
    ErrnoOutOfRange { errno: u32 },
    #[error("seccomp filters are not supported on architecture {arch}")]
    UnsupportedArchitecture { arch: &'static str },
    #[error("failed to compile seccomp filter: {instructions} instructions exceed the kernel's limit of 4096")]
    TooLong { instructions: usize },
    #[error("failed to compile seccomp filter: {reason}")]
    Internal { reason: &'static str },
    #[error("failed to parse kernel release {release:?}")]
    KernelVersion { release: String },
    #[error("failed to read the kernel release")]
    Uname {
        #[source]
        source: std::io::Error,
    },
    #[error("failed to serialize seccomp profile for its cache key")]
    SerializeProfile {
        #[source]
        source: serde_json::Error,
    },
    #[error("invalid cached seccomp filter: {reason}")]
    InvalidFilterBytes { reason: &'static str },
    #[error("failed to install seccomp filter: thread {thread} could not be synchronized (TSYNC)")]
    ThreadSync { thread: libc::c_long },
    #[error("failed to install seccomp filter with flags {flags:#x}")]
    Install {
        flags: u32,
        #[source]
        source: std::io::Error,
    },
}

/// Compiles `profile` for a container holding `capabilities` (e.g. "CAP_SYS_ADMIN"; the
/// bounding set, as Docker matches them) on this host.
pub fn compile(profile: &Profile, capabilities: &[String]) -> Result<Filter, SeccompError> {
    compile_for(profile, capabilities, &Host::current()?)
}

/// [`compile`] for an explicit host (architecture and kernel version), e.g. to check
/// what an older kernel would get.
pub fn compile_for(
    profile: &Profile,
    capabilities: &[String],
    host: &Host,
) -> Result<Filter, SeccompError> {
    let policy = resolve::resolve(profile, capabilities, host)?;
    let instructions = codegen::generate(&policy)?;
    Filter::new(instructions, filter_flags(profile))
}

/// The profile's flags, or SPEC_ALLOW when it sets none. Without SPEC_ALLOW, kernels
/// booted with `spec_store_bypass_disable=seccomp` (the default before 5.16) force the
/// SSBD mitigation on every seccomp'd task, slowing all of its code, not just syscalls;
/// Docker gives up that speed, berth does not (the mitigation still applies to tasks
/// that ask for it with prctl).
fn filter_flags(profile: &Profile) -> u32 {
    if profile.flags.is_empty() {
        FilterFlag::SpecAllow.bits()
    } else {
        profile
            .flags
            .iter()
            .fold(0, |bits, flag| bits | flag.bits())
    }
}
