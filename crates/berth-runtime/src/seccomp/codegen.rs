//! Turns a resolved [`Policy`] into a BPF program.
//!
//! Shape:
//!
//! ```text
//!   load arch; one jeq per covered architecture; return default    (foreign arch)
//! section x86_64:
//!   load nr; nr >= X32_SYSCALL_BIT -> return default              (x32 ABI, see below)
//!   binary search over number ranges -> leaf
//! section i386: load nr; binary search -> leaf
//! leaf: return <action>, or for a syscall with argument rules:
//!   rule 1 conditions -> return action; rule 2 …; return fallback
//! ```
//!
//! Consecutive numbers with the same constant action form one range, so the search tree
//! is small and its depth is log2(ranges): older kernels without the seccomp action cache
//! pay O(log n). The path to a constant leaf reads only `arch` and `nr`, and uses only
//! the instructions the kernel's cache emulator understands (`seccomp_cache_prepare`,
//! 5.11+), so every syscall without argument rules is decided once at load time.
//!
//! x32 (x86_64 instructions with 32-bit pointers) arrives as AUDIT_ARCH_X86_64 with bit 30
//! set in the number. Docker lists it as a sub-architecture; berth gives it the default
//! action instead: distributions build it off or disabled at boot, no image ships x32
//! binaries, and its compat paths have had their own bugs (CVE-2014-0038 in x32
//! recvmmsg). Rejecting it explicitly also keeps x32 numbers out of the x86_64 search.

use super::arch::{Arch, X32_SYSCALL_BIT};
use super::bpf::{arg_offset, Assembler, Label, JEQ_K, JGE_K, JGT_K, OFFSET_ARCH, OFFSET_NR};
use super::profile::{ArgCondition, CompareOp};
use super::resolve::{ArchSection, Policy, SyscallPolicy};
use super::SeccompError;

/// What a range of syscall numbers leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leaf {
    Return(u32),
    /// A syscall with argument rules: its number.
    Rules(u32),
}

pub(crate) fn generate(policy: &Policy) -> Result<Vec<libc::sock_filter>, SeccompError> {
    let mut assembler = Assembler::default();
    let section_labels: Vec<Label> = policy.sections.iter().map(|_| assembler.label()).collect();

    assembler.load(OFFSET_ARCH);
    for (section, &label) in policy.sections.iter().zip(&section_labels) {
        let next = assembler.label();
        assembler.branch(JEQ_K, section.arch.audit_value(), label, next);
        assembler.bind(next);
    }
    assembler.ret(policy.default);

    for (section, &label) in policy.sections.iter().zip(&section_labels) {
        assembler.bind(label);
        assembler.load(OFFSET_NR);
        if section.arch == Arch::X86_64 {
            let (x32, native) = (assembler.label(), assembler.label());
            assembler.branch(JGE_K, X32_SYSCALL_BIT, x32, native);
            assembler.bind(x32);
            assembler.ret(policy.default);
            assembler.bind(native);
        }
        let ranges = ranges(section, policy.default);
        search(&mut assembler, &ranges, section, policy.default);
    }
    assembler.finish()
}

/// Splits the u32 number space into maximal ranges with one leaf each, as
/// `(first number, leaf)` sorted by first number; the first starts at 0.
fn ranges(section: &ArchSection, default: u32) -> Vec<(u32, Leaf)> {
    let mut ranges: Vec<(u32, Leaf)> = vec![(0, Leaf::Return(default))];
    let mut push = |start: u32, leaf: Leaf| {
        let last = ranges.last_mut().expect("ranges starts non-empty");
        if last.1 == leaf {
            return;
        }
        if last.0 == start {
            last.1 = leaf;
        } else {
            ranges.push((start, leaf));
        }
        // A range overwritten in place may now equal the one before it.
        let length = ranges.len();
        if length >= 2 && ranges[length - 1].1 == ranges[length - 2].1 {
            ranges.pop();
        }
    };
    for (&number, policy) in &section.syscalls {
        let leaf = if policy.conditional.is_empty() {
            Leaf::Return(policy.fallback(default))
        } else {
            Leaf::Rules(number)
        };
        push(number, leaf);
        if let Some(after) = number.checked_add(1) {
            push(after, Leaf::Return(default));
        }
    }
    if let Some(newer) = section.highest_known.checked_add(1) {
        push(newer, Leaf::Return(section.unknown));
    }
    ranges
}

/// A balanced binary search over `ranges` (A holds the syscall number).
fn search(assembler: &mut Assembler, ranges: &[(u32, Leaf)], section: &ArchSection, default: u32) {
    if let [(_, leaf)] = ranges {
        match *leaf {
            Leaf::Return(value) => assembler.ret(value),
            Leaf::Rules(number) => {
                if let Some(policy) = section.syscalls.get(&number) {
                    rules(assembler, policy, default);
                } else {
                    assembler.ret(default);
                }
            }
        }
        return;
    }
    let middle = ranges.len() / 2;
    let (low, high) = (assembler.label(), assembler.label());
    assembler.branch(JGE_K, ranges[middle].0, high, low);
    assembler.bind(low);
    search(assembler, &ranges[..middle], section, default);
    assembler.bind(high);
    search(assembler, &ranges[middle..], section, default);
}

/// One syscall's argument rules, first match wins, then its fallback.
fn rules(assembler: &mut Assembler, policy: &SyscallPolicy, default: u32) {
    for (conditions, action) in &policy.conditional {
        let fail = assembler.label();
        for condition in conditions {
            compare(assembler, condition, fail);
        }
        assembler.ret(*action);
        assembler.bind(fail);
    }
    assembler.ret(policy.fallback(default));
}

/// Falls through when the 64-bit comparison holds and jumps to `fail` otherwise. BPF
/// registers are 32 bits, so the high halves decide unless they are equal, as in
/// libseccomp (all comparisons unsigned).
fn compare(assembler: &mut Assembler, condition: &ArgCondition, fail: Label) {
    let pass = assembler.label();
    let (high, low) = split(condition.value);
    let load_high = |assembler: &mut Assembler| assembler.load(arg_offset(condition.index, true));
    let load_low = |assembler: &mut Assembler| assembler.load(arg_offset(condition.index, false));
    match condition.op {
        CompareOp::Equal => {
            let next = assembler.label();
            load_high(assembler);
            assembler.branch(JEQ_K, high, next, fail);
            assembler.bind(next);
            load_low(assembler);
            assembler.branch(JEQ_K, low, pass, fail);
        }
        CompareOp::NotEqual => {
            let next = assembler.label();
            load_high(assembler);
            assembler.branch(JEQ_K, high, next, pass);
            assembler.bind(next);
            load_low(assembler);
            assembler.branch(JEQ_K, low, fail, pass);
        }
        CompareOp::Greater | CompareOp::GreaterOrEqual => {
            let (equal_high, next) = (assembler.label(), assembler.label());
            load_high(assembler);
            assembler.branch(JGT_K, high, pass, equal_high);
            assembler.bind(equal_high);
            assembler.branch(JEQ_K, high, next, fail);
            assembler.bind(next);
            load_low(assembler);
            let code = if condition.op == CompareOp::Greater {
                JGT_K
            } else {
                JGE_K
            };
            assembler.branch(code, low, pass, fail);
        }
        CompareOp::Less | CompareOp::LessOrEqual => {
            // hi < v.hi passes; hi > v.hi fails; equal: compare the low halves.
            let (not_below, next) = (assembler.label(), assembler.label());
            load_high(assembler);
            assembler.branch(JGE_K, high, not_below, pass);
            assembler.bind(not_below);
            assembler.branch(JEQ_K, high, next, fail);
            assembler.bind(next);
            load_low(assembler);
            // Less: low >= v.low fails; LessOrEqual: low > v.low fails.
            let code = if condition.op == CompareOp::Less {
                JGE_K
            } else {
                JGT_K
            };
            assembler.branch(code, low, fail, pass);
        }
        CompareOp::MaskedEqual => {
            let (mask_high, mask_low) = split(condition.value);
            let (want_high, want_low) = split(condition.value_two);
            // A zero high mask with a zero wanted high half always holds (Docker's clone
            // rule masks only low flag bits): skip the dead half.
            if mask_high != 0 || want_high != 0 {
                let next = assembler.label();
                load_high(assembler);
                assembler.and(mask_high);
                assembler.branch(JEQ_K, want_high, next, fail);
                assembler.bind(next);
            }
            load_low(assembler);
            assembler.and(mask_low);
            assembler.branch(JEQ_K, want_low, pass, fail);
        }
    }
    assembler.bind(pass);
}

/// `(high, low)` 32-bit halves; the truncations are the point.
fn split(value: u64) -> (u32, u32) {
    ((value >> 32) as u32, value as u32)
}

#[cfg(test)]
#[cfg(target_arch = "x86_64")]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::seccomp::interpreter::{run, SeccompData};

    const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
    const DENY: u32 = libc::SECCOMP_RET_ERRNO | 1;

    fn one_rule_policy(conditions: Vec<ArgCondition>) -> Policy {
        let mut syscalls = BTreeMap::new();
        syscalls.insert(
            5,
            SyscallPolicy {
                conditional: vec![(conditions, ALLOW)],
                unconditional: None,
            },
        );
        Policy {
            default: DENY,
            sections: vec![ArchSection {
                arch: Arch::X86_64,
                syscalls,
                highest_known: 100,
                unknown: DENY,
            }],
        }
    }

    /// Each operator against a reference implementation, on values around both halves.
    #[test]
    fn comparisons_match_unsigned_64_bit_semantics() {
        let interesting = [
            0,
            1,
            0x7fff_ffff,
            0xffff_ffff,
            0x1_0000_0000,
            0x1_0000_0001,
            0x1_ffff_ffff,
            0xffff_ffff_0000_0000,
            u64::MAX,
        ];
        let ops = [
            CompareOp::Equal,
            CompareOp::NotEqual,
            CompareOp::Less,
            CompareOp::LessOrEqual,
            CompareOp::Greater,
            CompareOp::GreaterOrEqual,
            CompareOp::MaskedEqual,
        ];
        for op in ops {
            for &value in &interesting {
                for &value_two in &[0, 1, 0x1_0000_0000] {
                    let condition = ArgCondition {
                        index: 2,
                        value,
                        value_two,
                        op,
                    };
                    let program = generate(&one_rule_policy(vec![condition])).unwrap();
                    for &arg in &interesting {
                        let expected = match op {
                            CompareOp::Equal => arg == value,
                            CompareOp::NotEqual => arg != value,
                            CompareOp::Less => arg < value,
                            CompareOp::LessOrEqual => arg <= value,
                            CompareOp::Greater => arg > value,
                            CompareOp::GreaterOrEqual => arg >= value,
                            CompareOp::MaskedEqual => arg & value == value_two,
                        };
                        let data = SeccompData::new(5, crate::seccomp::arch::AUDIT_ARCH_X86_64)
                            .with_arg(2, arg);
                        let action = run(&program, &data).action;
                        assert_eq!(
                            action == ALLOW,
                            expected,
                            "{op:?} value={value:#x} value_two={value_two:#x} arg={arg:#x}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn conditions_of_one_rule_are_all_required() {
        let conditions = vec![
            ArgCondition {
                index: 0,
                value: 1,
                value_two: 0,
                op: CompareOp::Equal,
            },
            ArgCondition {
                index: 1,
                value: 10,
                value_two: 0,
                op: CompareOp::Greater,
            },
        ];
        let program = generate(&one_rule_policy(conditions)).unwrap();
        let arch = crate::seccomp::arch::AUDIT_ARCH_X86_64;
        let call = |a: u64, b: u64| {
            run(
                &program,
                &SeccompData::new(5, arch).with_arg(0, a).with_arg(1, b),
            )
            .action
        };
        assert_eq!(call(1, 11), ALLOW);
        assert_eq!(call(1, 10), DENY);
        assert_eq!(call(2, 11), DENY);
    }

    /// `count` syscalls 0, 2, 4, … each with an argument rule, odd numbers denied.
    fn alternating_policy(count: u32) -> Policy {
        let mut syscalls = BTreeMap::new();
        for number in (0..count * 2).step_by(2) {
            let condition = ArgCondition {
                index: 0,
                value: u64::from(number),
                value_two: 0,
                op: CompareOp::Equal,
            };
            let action = libc::SECCOMP_RET_ERRNO | (number % 4000);
            syscalls.insert(
                number,
                SyscallPolicy {
                    conditional: vec![(vec![condition], action)],
                    unconditional: Some(ALLOW),
                },
            );
        }
        Policy {
            default: DENY,
            sections: vec![ArchSection {
                arch: Arch::X86_64,
                syscalls,
                highest_known: count * 2 - 1,
                unknown: libc::SECCOMP_RET_ERRNO | 38,
            }],
        }
    }

    /// The search tree's early jumps cross far more than 255 instructions.
    #[test]
    fn large_profiles_jump_correctly() {
        let count = 300;
        let program = generate(&alternating_policy(count)).unwrap();
        assert!(
            program.len() > 4 * 256,
            "the test needs far jumps: {}",
            program.len()
        );
        crate::seccomp::bpf::validate(&program).unwrap();
        let arch = crate::seccomp::arch::AUDIT_ARCH_X86_64;
        for number in 0..count * 2 + 5 {
            let matching = SeccompData::new(number, arch).with_arg(0, u64::from(number));
            let other = SeccompData::new(number, arch).with_arg(0, u64::from(number) + 1);
            let (expected_matching, expected_other) = match number {
                n if n >= count * 2 => (libc::SECCOMP_RET_ERRNO | 38, libc::SECCOMP_RET_ERRNO | 38),
                n if n % 2 == 0 => (libc::SECCOMP_RET_ERRNO | n, ALLOW),
                _ => (DENY, DENY),
            };
            assert_eq!(
                run(&program, &matching).action,
                expected_matching,
                "nr {number}"
            );
            assert_eq!(run(&program, &other).action, expected_other, "nr {number}");
        }
    }

    #[test]
    fn programs_over_the_kernel_limit_are_refused() {
        assert!(matches!(
            generate(&alternating_policy(1500)),
            Err(SeccompError::TooLong { .. })
        ));
    }

    #[test]
    fn neighbouring_numbers_with_one_action_share_a_range() {
        let mut syscalls = BTreeMap::new();
        for number in [0, 1, 2, 3, 7] {
            syscalls.insert(
                number,
                SyscallPolicy {
                    conditional: Vec::new(),
                    unconditional: Some(ALLOW),
                },
            );
        }
        let section = ArchSection {
            arch: Arch::X86_64,
            syscalls,
            highest_known: 9,
            unknown: 38,
        };
        assert_eq!(
            ranges(&section, DENY),
            [
                (0, Leaf::Return(ALLOW)),
                (4, Leaf::Return(DENY)),
                (7, Leaf::Return(ALLOW)),
                (8, Leaf::Return(DENY)),
                (10, Leaf::Return(38)),
            ]
        );
    }
}
