//! A classic-BPF interpreter for tests: runs a filter on a synthetic `seccomp_data`, the
//! way the kernel would, so whole profiles can be checked without installing them.

use super::bpf::{AND_K, JA, JEQ_K, JGE_K, JGT_K, LD_ABS, RET_K};

/// `struct seccomp_data` as the filter sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SeccompData {
    pub nr: u32,
    pub arch: u32,
    pub instruction_pointer: u64,
    pub args: [u64; 6],
}

impl SeccompData {
    pub(crate) fn new(nr: u32, arch: u32) -> SeccompData {
        SeccompData {
            nr,
            arch,
            instruction_pointer: 0,
            args: [0; 6],
        }
    }

    pub(crate) fn with_arg(mut self, index: usize, value: u64) -> SeccompData {
        self.args[index] = value;
        self
    }

    /// The 32-bit word at `offset`, little-endian as on x86.
    fn word(&self, offset: u32) -> u32 {
        let mut bytes = Vec::with_capacity(64);
        bytes.extend_from_slice(&self.nr.to_le_bytes());
        bytes.extend_from_slice(&self.arch.to_le_bytes());
        bytes.extend_from_slice(&self.instruction_pointer.to_le_bytes());
        for arg in self.args {
            bytes.extend_from_slice(&arg.to_le_bytes());
        }
        let start = offset as usize;
        u32::from_le_bytes(bytes[start..start + 4].try_into().expect("4 bytes"))
    }
}

/// What a run returned, and whether it looked at anything but `nr` and `arch`: a path
/// that does not is one the kernel's action cache can precompute.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outcome {
    pub action: u32,
    pub read_args: bool,
    pub executed: usize,
}

pub(crate) fn run(program: &[libc::sock_filter], data: &SeccompData) -> Outcome {
    let mut accumulator: u32 = 0;
    let mut pc = 0;
    let mut read_args = false;
    let mut executed = 0;
    loop {
        let insn = program[pc];
        executed += 1;
        let next = pc + 1;
        pc = match insn.code {
            LD_ABS => {
                read_args |= insn.k >= 8;
                accumulator = data.word(insn.k);
                next
            }
            AND_K => {
                accumulator &= insn.k;
                next
            }
            JA => next + insn.k as usize,
            JEQ_K | JGT_K | JGE_K => {
                let taken = match insn.code {
                    JEQ_K => accumulator == insn.k,
                    JGT_K => accumulator > insn.k,
                    _ => accumulator >= insn.k,
                };
                next + usize::from(if taken { insn.jt } else { insn.jf })
            }
            RET_K => {
                return Outcome {
                    action: insn.k,
                    read_args,
                    executed,
                }
            }
            other => panic!("unexpected opcode {other:#x} at {pc}"),
        };
    }
}
