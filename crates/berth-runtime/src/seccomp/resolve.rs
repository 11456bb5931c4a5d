//! Resolves a profile for one container: which rules apply to its capabilities and to
//! this host, on which architectures, with which syscall numbers and return values.

use std::collections::BTreeMap;

use tracing::debug;

use super::arch::{Arch, Host};
use super::profile::{Action, ArgCondition, Profile, RuleFilter, SyscallRule};
use super::syscalls::SyscallTable;
use super::SeccompError;

/// The kernel clamps SECCOMP_RET_ERRNO data to MAX_ERRNO; larger values are a typo.
const MAX_ERRNO: u32 = 4095;

/// A profile resolved into what the BPF generator needs. Return values are already
/// encoded as `SECCOMP_RET_*` words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Policy {
    /// For syscalls no rule matches, and for architectures the filter does not cover.
    pub default: u32,
    /// The native architecture first: it is checked first, so it is the cheapest.
    pub sections: Vec<ArchSection>,
}

/// The rules of one architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArchSection {
    pub arch: Arch,
    pub syscalls: BTreeMap<u32, SyscallPolicy>,
    /// Numbers above this are newer than berth's table.
    pub highest_known: u32,
    /// What those newer syscalls get: ENOSYS unless the default already lets them run.
    /// runc does the same, because EPERM for a syscall the program cannot know is
    /// filtered would stop it from falling back to an older one (glibc does on ENOSYS).
    pub unknown: u32,
}

/// The rules of one syscall: conditional ones in profile order, first match wins; then
/// the unconditional action, or the default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SyscallPolicy {
    pub conditional: Vec<(Vec<ArgCondition>, u32)>,
    pub unconditional: Option<u32>,
}

impl SyscallPolicy {
    /// The action when no conditional rule matches.
    pub fn fallback(&self, default: u32) -> u32 {
        self.unconditional.unwrap_or(default)
    }
}

/// Resolves `profile` for a container holding `capabilities` on `host`.
pub(crate) fn resolve(
    profile: &Profile,
    capabilities: &[String],
    host: &Host,
) -> Result<Policy, SeccompError> {
    let default_action = profile.default_action.ok_or(SeccompError::Unconfined)?;
    let default = encode(default_action, profile.default_errno_ret)?;
    let capabilities: Vec<String> = capabilities.iter().map(|cap| normalize_cap(cap)).collect();
    let unknown = match default_action {
        Action::Allow | Action::Log => default,
        _ => libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
    };

    let mut sections: Vec<ArchSection> = Vec::new();
    let mut tables: Vec<SyscallTable> = Vec::new();
    for arch in filter_arches(profile, host) {
        let Some(table) = SyscallTable::for_arch(arch) else {
            return Err(SeccompError::UnsupportedArchitecture {
                arch: arch.scmp_name(),
            });
        };
        sections.push(ArchSection {
            arch,
            syscalls: BTreeMap::new(),
            highest_known: table.highest(),
            unknown,
        });
        tables.push(table);
    }

    for rule in &profile.syscalls {
        if !rule_applies(rule, &capabilities, host) {
            continue;
        }
        let action = encode(rule.action, rule.errno_ret)?;
        let condition_sets = condition_sets(&rule.args);
        for name in rule.all_names() {
            for (section, table) in sections.iter_mut().zip(&tables) {
                // Docker skips names its libseccomp does not know; a name can also be
                // another architecture's only (arch_prctl has no i386 number here).
                let Some(number) = table.number(name) else {
                    debug!(
                        syscall = name,
                        arch = section.arch.scmp_name(),
                        "skipping unknown syscall"
                    );
                    continue;
                };
                let policy = section.syscalls.entry(number).or_default();
                add_rule(policy, name, &condition_sets, action);
            }
        }
    }

    for section in &mut sections {
        for policy in section.syscalls.values_mut() {
            drop_redundant_tail(policy, default);
        }
    }
    Ok(Policy { default, sections })
}

fn add_rule(
    policy: &mut SyscallPolicy,
    name: &str,
    condition_sets: &[Vec<ArgCondition>],
    action: u32,
) {
    if condition_sets.is_empty() {
        match policy.unconditional {
            None => policy.unconditional = Some(action),
            Some(first) if first != action => {
                debug!(
                    syscall = name,
                    "conflicting unconditional rules; the first one wins"
                );
            }
            Some(_) => {}
        }
        return;
    }
    for conditions in condition_sets {
        policy.conditional.push((conditions.clone(), action));
    }
}

/// The conjunctions a rule's `args` stand for. Normally one (all conditions must hold);
/// when an argument index repeats, runc adds each condition as its own rule (an OR), and
/// profiles written for Docker rely on that, so we do the same.
fn condition_sets(args: &[ArgCondition]) -> Vec<Vec<ArgCondition>> {
    if args.is_empty() {
        return Vec::new();
    }
    let mut indices: Vec<u32> = args.iter().map(|arg| arg.index).collect();
    indices.sort_unstable();
    indices.dedup();
    if indices.len() == args.len() {
        vec![args.to_vec()]
    } else {
        args.iter().map(|arg| vec![*arg]).collect()
    }
}

/// Conditional rules at the end whose action equals the fallback change nothing; dropping
/// them can leave a syscall with no argument checks, which the kernel's action cache can
/// then answer without running the filter.
fn drop_redundant_tail(policy: &mut SyscallPolicy, default: u32) {
    let fallback = policy.fallback(default);
    while policy
        .conditional
        .last()
        .is_some_and(|(_, action)| *action == fallback)
    {
        policy.conditional.pop();
    }
}

/// The architectures the filter covers: the profile's list for this host (from
/// `architectures`, or the `archMap` entry of the native architecture), native first.
/// x32 is left out on purpose: its syscalls get the default action (see `codegen`).
fn filter_arches(profile: &Profile, host: &Host) -> Vec<Arch> {
    let listed: Vec<&str> = if !profile.architectures.is_empty() {
        profile.architectures.iter().map(String::as_str).collect()
    } else {
        profile
            .arch_map
            .iter()
            .find(|entry| entry.architecture == host.arch.scmp_name())
            .map(|entry| {
                std::iter::once(entry.architecture.as_str())
                    .chain(entry.sub_architectures.iter().map(String::as_str))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut arches = vec![host.arch];
    for name in listed {
        match Arch::from_scmp_name(name) {
            Some(arch) if compatible(host.arch, arch) => {
                if !arches.contains(&arch) {
                    arches.push(arch);
                }
            }
            _ => debug!(
                arch = name,
                "no filter section for this architecture; it gets the default action"
            ),
        }
    }
    arches
}

/// Only architectures this host's CPU can actually present.
fn compatible(native: Arch, other: Arch) -> bool {
    matches!((native, other), (Arch::X86_64, Arch::X86_64 | Arch::X86))
}

/// Docker's `includes`/`excludes` logic (moby `profiles/seccomp/seccomp_linux.go`).
fn rule_applies(rule: &SyscallRule, capabilities: &[String], host: &Host) -> bool {
    let arch = host.arch.docker_name();
    let holds = |cap: &String| capabilities.contains(&normalize_cap(cap));
    if let Some(RuleFilter {
        caps,
        arches,
        min_kernel,
    }) = &rule.excludes
    {
        if arches.iter().any(|name| name == arch)
            || caps.iter().any(holds)
            || min_kernel.is_some_and(|min| host.kernel >= min)
        {
            return false;
        }
    }
    if let Some(RuleFilter {
        caps,
        arches,
        min_kernel,
    }) = &rule.includes
    {
        if (!arches.is_empty() && !arches.iter().any(|name| name == arch))
            || !caps.iter().all(holds)
            || min_kernel.is_some_and(|min| host.kernel < min)
        {
            return false;
        }
    }
    true
}

/// "sys_admin", "SYS_ADMIN" and "CAP_SYS_ADMIN" all name one capability.
pub(crate) fn normalize_cap(cap: &str) -> String {
    let upper = cap.trim().to_ascii_uppercase();
    if upper.starts_with("CAP_") {
        upper
    } else {
        format!("CAP_{upper}")
    }
}

/// The `SECCOMP_RET_*` word for an action (`<linux/seccomp.h>`).
pub(crate) fn encode(action: Action, errno_ret: Option<u32>) -> Result<u32, SeccompError> {
    let data = |value: Option<u32>| -> Result<u32, SeccompError> {
        let value = value.unwrap_or(libc::EPERM as u32);
        if value > MAX_ERRNO {
            return Err(SeccompError::ErrnoOutOfRange { errno: value });
        }
        Ok(value)
    };
    Ok(match action {
        Action::Allow => libc::SECCOMP_RET_ALLOW,
        Action::Errno => libc::SECCOMP_RET_ERRNO | data(errno_ret)?,
        Action::Kill | Action::KillThread => libc::SECCOMP_RET_KILL_THREAD,
        Action::KillProcess => libc::SECCOMP_RET_KILL_PROCESS,
        Action::Trap => libc::SECCOMP_RET_TRAP,
        Action::Trace => libc::SECCOMP_RET_TRACE | data(errno_ret)?,
        Action::Log => libc::SECCOMP_RET_LOG,
        Action::Notify => {
            return Err(SeccompError::UnsupportedAction {
                action: "SCMP_ACT_NOTIFY",
            })
        }
    })
}

#[cfg(test)]
#[cfg(target_arch = "x86_64")]
mod tests {
    use super::*;
    use crate::seccomp::arch::KernelVersion;
    use crate::seccomp::profile::CompareOp;

    fn host() -> Host {
        Host {
            arch: Arch::X86_64,
            kernel: KernelVersion::new(6, 1),
        }
    }

    fn condition(index: u32, value: u64) -> ArgCondition {
        ArgCondition {
            index,
            value,
            value_two: 0,
            op: CompareOp::Equal,
        }
    }

    #[test]
    fn repeated_index_becomes_an_or_like_runc() {
        let same = [condition(0, 1), condition(0, 2)];
        assert_eq!(condition_sets(&same), vec![vec![same[0]], vec![same[1]]]);
        let different = [condition(0, 1), condition(1, 2)];
        assert_eq!(condition_sets(&different), vec![different.to_vec()]);
    }

    #[test]
    fn capability_names_are_normalized() {
        assert_eq!(normalize_cap("sys_admin"), "CAP_SYS_ADMIN");
        assert_eq!(normalize_cap("CAP_NET_RAW"), "CAP_NET_RAW");
    }

    #[test]
    fn default_profile_covers_x86_64_and_i386_only() {
        let policy = resolve(&Profile::docker_default(), &[], &host()).unwrap();
        let arches: Vec<Arch> = policy.sections.iter().map(|section| section.arch).collect();
        assert_eq!(arches, [Arch::X86_64, Arch::X86]);
        assert_eq!(policy.default, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32);
    }

    #[test]
    fn errno_is_range_checked_and_notify_refused() {
        assert!(encode(Action::Errno, Some(4096)).is_err());
        assert_eq!(
            encode(Action::Trace, None).unwrap(),
            libc::SECCOMP_RET_TRACE | 1
        );
        assert!(matches!(
            encode(Action::Notify, None),
            Err(SeccompError::UnsupportedAction { .. })
        ));
    }
}
