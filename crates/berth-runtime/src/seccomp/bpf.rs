//! A tiny classic-BPF assembler with forward labels.
//!
//! Conditional jumps in classic BPF have 8-bit offsets. Code is written with labels; when
//! a conditional jump's target ends up more than 255 instructions ahead, that side goes
//! through a trampoline placed right after it: `jcond 0,N; ja far_true` (`ja` has a
//! 32-bit offset), likewise for the false side. A trampoline moves later code, which can
//! push other jumps out of range, so layout repeats until stable; a side never goes back
//! from far to near, so this ends.

use super::SeccompError;

/// Offsets into `struct seccomp_data` (`<linux/seccomp.h>`).
pub(crate) const OFFSET_NR: u32 = 0;
pub(crate) const OFFSET_ARCH: u32 = 4;
const OFFSET_ARGS: u32 = 16;

/// The kernel's limit on one filter's length (BPF_MAXINSNS).
pub(crate) const MAX_INSTRUCTIONS: usize = 4096;
const MAX_SHORT_JUMP: usize = u8::MAX as usize;

/// The low (`false`) and high (`true`) 32-bit halves of argument `index`. seccomp_data
/// holds each argument as a native-endian u64; berth only targets little-endian CPUs.
pub(crate) fn arg_offset(index: u32, high: bool) -> u32 {
    const _: () = assert!(
        cfg!(target_endian = "little"),
        "argument offsets assume little endian"
    );
    OFFSET_ARGS + 8 * index + if high { 4 } else { 0 }
}

/// Opcodes, composed from `<linux/filter.h>` parts.
pub(crate) const LD_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
pub(crate) const AND_K: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
pub(crate) const JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
pub(crate) const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
pub(crate) const JGT_K: u16 = (libc::BPF_JMP | libc::BPF_JGT | libc::BPF_K) as u16;
pub(crate) const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
pub(crate) const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Label(usize);

#[derive(Debug, Clone, Copy)]
enum Item {
    /// A non-jump instruction.
    Statement {
        code: u16,
        k: u32,
    },
    Conditional {
        code: u16,
        k: u32,
        jt: Label,
        jf: Label,
    },
    Here(Label),
}

/// Collects code with symbolic jumps; `finish` lays it out.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    items: Vec<Item>,
    labels: usize,
}

impl Assembler {
    pub(crate) fn label(&mut self) -> Label {
        self.labels += 1;
        Label(self.labels - 1)
    }

    /// Places `label` at the next instruction.
    pub(crate) fn bind(&mut self, label: Label) {
        self.items.push(Item::Here(label));
    }

    pub(crate) fn load(&mut self, offset: u32) {
        self.items.push(Item::Statement {
            code: LD_ABS,
            k: offset,
        });
    }

    pub(crate) fn and(&mut self, mask: u32) {
        self.items.push(Item::Statement {
            code: AND_K,
            k: mask,
        });
    }

    pub(crate) fn ret(&mut self, value: u32) {
        self.items.push(Item::Statement {
            code: RET_K,
            k: value,
        });
    }

    /// `if A <op> k goto jt else goto jf`, `code` one of the `J*_K` opcodes.
    pub(crate) fn branch(&mut self, code: u16, k: u32, jt: Label, jf: Label) {
        self.items.push(Item::Conditional { code, k, jt, jf });
    }

    /// Lays the code out, adding trampolines for far jumps, and checks the length.
    pub(crate) fn finish(self) -> Result<Vec<libc::sock_filter>, SeccompError> {
        let mut far = vec![Far::default(); self.items.len()];
        let (positions, labels) = loop {
            let (positions, labels) = self.layout(&far);
            let mut grew = false;
            for (index, item) in self.items.iter().enumerate() {
                let Item::Conditional { jt, jf, .. } = *item else {
                    continue;
                };
                let next = positions[index] + 1;
                let out_of_reach =
                    |label: Label| target(&labels, label).saturating_sub(next) > MAX_SHORT_JUMP;
                let side = &mut far[index];
                if !side.when_true && out_of_reach(jt) {
                    side.when_true = true;
                    grew = true;
                }
                if !side.when_false && out_of_reach(jf) {
                    side.when_false = true;
                    grew = true;
                }
            }
            if !grew {
                break (positions, labels);
            }
        };
        self.emit(&far, &positions, &labels)
    }

    /// The position of every item and every label, given the trampolines.
    fn layout(&self, far: &[Far]) -> (Vec<usize>, Vec<usize>) {
        let mut positions = Vec::with_capacity(self.items.len());
        let mut labels = vec![usize::MAX; self.labels];
        let mut position = 0;
        for (index, item) in self.items.iter().enumerate() {
            positions.push(position);
            position += match item {
                Item::Here(label) => {
                    labels[label.0] = position;
                    0
                }
                Item::Conditional { .. } => {
                    1 + usize::from(far[index].when_true) + usize::from(far[index].when_false)
                }
                Item::Statement { .. } => 1,
            };
        }
        (positions, labels)
    }

    fn emit(
        &self,
        far: &[Far],
        positions: &[usize],
        labels: &[usize],
    ) -> Result<Vec<libc::sock_filter>, SeccompError> {
        let mut program = Vec::new();
        for (index, item) in self.items.iter().enumerate() {
            let offset = |label: Label, from: usize| -> Result<usize, SeccompError> {
                let target = target(labels, label);
                if target == usize::MAX || target < from {
                    return Err(SeccompError::Internal {
                        reason: "jump to an unbound or earlier label",
                    });
                }
                Ok(target - from)
            };
            match *item {
                Item::Here(_) => {}
                Item::Statement { code, k } => program.push(instruction(code, k, 0, 0)),
                Item::Conditional { code, k, jt, jf } => {
                    let next = positions[index] + 1;
                    let Far {
                        when_true,
                        when_false,
                    } = far[index];
                    // Trampolines sit at next (true side, if far) and after it (false side).
                    let true_trampoline = next;
                    let false_trampoline = next + usize::from(when_true);
                    let short = |distance: usize| -> Result<u8, SeccompError> {
                        u8::try_from(distance).map_err(|_| SeccompError::Internal {
                            reason: "short jump out of range after layout",
                        })
                    };
                    let jump_true = if when_true { 0 } else { offset(jt, next)? };
                    let jump_false = if when_false {
                        false_trampoline - next
                    } else {
                        offset(jf, next)?
                    };
                    program.push(instruction(code, k, short(jump_true)?, short(jump_false)?));
                    for (is_far, label, at) in [
                        (when_true, jt, true_trampoline),
                        (when_false, jf, false_trampoline),
                    ] {
                        if is_far {
                            let k = u32::try_from(offset(label, at + 1)?).map_err(|_| {
                                SeccompError::Internal {
                                    reason: "jump offset above u32",
                                }
                            })?;
                            program.push(instruction(JA, k, 0, 0));
                        }
                    }
                }
            }
        }
        if program.len() > MAX_INSTRUCTIONS {
            return Err(SeccompError::TooLong {
                instructions: program.len(),
            });
        }
        Ok(program)
    }
}

/// Where `label` was bound; usize::MAX for unbound (or foreign) labels.
fn target(labels: &[usize], label: Label) -> usize {
    labels.get(label.0).copied().unwrap_or(usize::MAX)
}

/// Which sides of a conditional jump go through a `ja` trampoline.
#[derive(Debug, Clone, Copy, Default)]
struct Far {
    when_true: bool,
    when_false: bool,
}

pub(crate) fn instruction(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// Checks that a program only uses what berth generates and that every jump lands
/// inside it, so a damaged cache file is rejected before the kernel sees it.
pub(crate) fn validate(program: &[libc::sock_filter]) -> Result<(), &'static str> {
    if program.is_empty() || program.len() > MAX_INSTRUCTIONS {
        return Err("program length out of range");
    }
    let length = program.len();
    for (position, insn) in program.iter().enumerate() {
        let next = position + 1;
        let lands = |offset: usize| {
            next.checked_add(offset)
                .is_some_and(|target| target < length)
        };
        match insn.code {
            LD_ABS => {
                if insn.k % 4 != 0 || insn.k >= OFFSET_ARGS + 8 * 6 {
                    return Err("load outside seccomp_data");
                }
            }
            AND_K | RET_K => {}
            JA => {
                if !lands(insn.k as usize) {
                    return Err("jump past the end");
                }
            }
            JEQ_K | JGT_K | JGE_K => {
                if !lands(usize::from(insn.jt)) || !lands(usize::from(insn.jf)) {
                    return Err("jump past the end");
                }
            }
            _ => return Err("unexpected opcode"),
        }
    }
    if program[length - 1].code != RET_K {
        return Err("program does not end with a return");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seccomp::interpreter::{run, SeccompData};

    /// A jump over 600 instructions must still reach its target.
    #[test]
    fn far_jumps_become_trampolines() {
        let mut assembler = Assembler::default();
        let (far, near) = (assembler.label(), assembler.label());
        assembler.load(OFFSET_NR);
        assembler.branch(JEQ_K, 7, far, near);
        assembler.bind(near);
        for value in 0..600 {
            assembler.ret(value);
        }
        assembler.bind(far);
        assembler.ret(4242);
        let program = assembler.finish().unwrap();
        validate(&program).unwrap();
        assert_eq!(
            program.len(),
            1 + 2 + 600 + 1,
            "only the far side gets a trampoline"
        );
        assert_eq!(run(&program, &SeccompData::new(7, 0)).action, 4242);
        assert_eq!(run(&program, &SeccompData::new(8, 0)).action, 0);
    }

    #[test]
    fn near_jumps_stay_single_instructions() {
        let mut assembler = Assembler::default();
        let (yes, no) = (assembler.label(), assembler.label());
        assembler.load(OFFSET_NR);
        assembler.branch(JGE_K, 10, yes, no);
        assembler.bind(no);
        assembler.ret(1);
        assembler.bind(yes);
        assembler.ret(2);
        let program = assembler.finish().unwrap();
        assert_eq!(program.len(), 4);
        assert_eq!(run(&program, &SeccompData::new(10, 0)).action, 2);
        assert_eq!(run(&program, &SeccompData::new(9, 0)).action, 1);
    }

    #[test]
    fn backward_or_unbound_labels_are_errors() {
        let mut assembler = Assembler::default();
        let start = assembler.label();
        assembler.bind(start);
        assembler.load(OFFSET_NR);
        assembler.branch(JEQ_K, 1, start, start);
        assembler.ret(0);
        assert!(assembler.finish().is_err(), "backward");

        let mut assembler = Assembler::default();
        let (here, unbound) = (assembler.label(), assembler.label());
        assembler.load(OFFSET_NR);
        assembler.branch(JEQ_K, 1, here, unbound);
        assembler.bind(here);
        assembler.ret(0);
        assert!(assembler.finish().is_err(), "unbound");
    }

    #[test]
    fn validate_rejects_bad_programs() {
        assert!(validate(&[]).is_err());
        assert!(
            validate(&[instruction(LD_ABS, 0, 0, 0)]).is_err(),
            "no return"
        );
        assert!(validate(&[instruction(JA, 5, 0, 0), instruction(RET_K, 0, 0, 0)]).is_err());
        assert!(validate(&[instruction(LD_ABS, 200, 0, 0), instruction(RET_K, 0, 0, 0)]).is_err());
        assert!(validate(&[instruction(0x07, 0, 0, 0), instruction(RET_K, 0, 0, 0)]).is_err());
        validate(&[
            instruction(LD_ABS, OFFSET_ARCH, 0, 0),
            instruction(RET_K, 0, 0, 0),
        ])
        .unwrap();
    }
}
