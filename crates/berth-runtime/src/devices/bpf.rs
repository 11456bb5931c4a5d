//! The cgroup v2 device policy: a `BPF_PROG_TYPE_CGROUP_DEVICE` program made
//! from a rule list, and the `bpf(2)` calls that load it and attach it to a
//! cgroup. The program is data (a list of [`Instruction`]s) so that it can be
//! checked without a kernel; see the tests, which run it on a small interpreter.
//!
//! The kernel calls the program with a `struct bpf_cgroup_dev_ctx { u32
//! access_type; u32 major; u32 minor; }` (`include/uapi/linux/bpf.h`), where
//! `access_type` is `(access << 16) | type`, and a return of 1 allows, 0 denies
//! (`Documentation/bpf/prog_cgroup_device.rst` has no more than that; the
//! kernel's `tools/testing/selftests/bpf/progs/dev_cgroup.c` is an example).
//!
//! Shape: load the context into registers, then one block per rule from the
//! last to the first (the last matching rule decides), each falling through
//! to the next when its rule does not match, and a final "deny". A rule that
//! matches everything ends the program there: the kernel's verifier refuses
//! code that can never run.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use super::{Access, DeviceKind, DeviceRule};

/// One eBPF instruction, laid out as the kernel's `struct bpf_insn`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instruction {
    pub code: u8,
    /// Destination register in the low four bits, source in the high four.
    pub registers: u8,
    pub offset: i16,
    pub immediate: i32,
}

// Opcodes (include/uapi/linux/bpf_common.h, bpf.h): class | operation | source.
const BPF_LDX: u8 = 0x01;
const BPF_ALU: u8 = 0x04;
const BPF_JMP: u8 = 0x05;
const BPF_JMP32: u8 = 0x06;
const BPF_W: u8 = 0x00;
const BPF_MEM: u8 = 0x60;
const BPF_K: u8 = 0x00;
const BPF_X: u8 = 0x08;
const BPF_AND: u8 = 0x50;
const BPF_RSH: u8 = 0x70;
const BPF_MOV: u8 = 0xb0;
const BPF_JEQ: u8 = 0x10;
const BPF_JNE: u8 = 0x50;
const BPF_EXIT: u8 = 0x90;

/// `ldxw dst, [src + offset]`.
pub const LOAD_WORD: u8 = BPF_LDX | BPF_MEM | BPF_W;
/// `mov32 dst, src`.
pub const MOVE_REGISTER: u8 = BPF_ALU | BPF_MOV | BPF_X;
/// `mov32 dst, immediate`.
pub const MOVE_IMMEDIATE: u8 = BPF_ALU | BPF_MOV | BPF_K;
/// `and32 dst, immediate`.
pub const AND_IMMEDIATE: u8 = BPF_ALU | BPF_AND | BPF_K;
/// `rsh32 dst, immediate`.
pub const SHIFT_RIGHT_IMMEDIATE: u8 = BPF_ALU | BPF_RSH | BPF_K;
/// `if (u32)dst != immediate goto +offset` (32-bit compare: a `u32` device
/// number compares exactly, with no sign extension of the immediate).
pub const JUMP_NOT_EQUAL: u8 = BPF_JMP32 | BPF_JNE | BPF_K;
/// `if (u32)dst == immediate goto +offset`.
pub const JUMP_EQUAL: u8 = BPF_JMP32 | BPF_JEQ | BPF_K;
/// `exit` (return r0).
pub const EXIT: u8 = BPF_JMP | BPF_EXIT;

// The program's registers.
const RESULT: u8 = 0;
const CONTEXT: u8 = 1;
/// Also the scratch register once the context is read.
const SCRATCH: u8 = 1;
const ACCESS: u8 = 2;
const TYPE: u8 = 3;
const MAJOR: u8 = 4;
const MINOR: u8 = 5;

// `BPF_DEVCG_DEV_*`.
const DEV_BLOCK: i32 = 1;
const DEV_CHAR: i32 = 2;

impl Instruction {
    const fn new(code: u8, destination: u8, source: u8, offset: i16, immediate: i32) -> Self {
        Instruction {
            code,
            registers: (source << 4) | (destination & 0x0f),
            offset,
            immediate,
        }
    }

    pub fn destination(&self) -> u8 {
        self.registers & 0x0f
    }

    pub fn source(&self) -> u8 {
        self.registers >> 4
    }
}

fn load_word(destination: u8, offset: i16) -> Instruction {
    Instruction::new(LOAD_WORD, destination, CONTEXT, offset, 0)
}

fn alu_immediate(code: u8, destination: u8, immediate: i32) -> Instruction {
    Instruction::new(code, destination, 0, 0, immediate)
}

/// A jump whose offset is set once the block's length is known.
fn jump(code: u8, register: u8, immediate: i32) -> Instruction {
    Instruction::new(code, register, 0, 0, immediate)
}

/// A `u32` as the instruction's immediate, bit for bit (32-bit compares use it so).
fn immediate(number: u32) -> i32 {
    i32::from_ne_bytes(number.to_ne_bytes())
}

/// The program for `rules` (see the module comment).
pub fn device_program(rules: &[DeviceRule]) -> Vec<Instruction> {
    let mut program = vec![
        load_word(ACCESS, 0),
        Instruction::new(MOVE_REGISTER, TYPE, ACCESS, 0, 0),
        alu_immediate(AND_IMMEDIATE, TYPE, 0xffff),
        alu_immediate(SHIFT_RIGHT_IMMEDIATE, ACCESS, 16),
        load_word(MAJOR, 4),
        load_word(MINOR, 8),
    ];
    for rule in rules.iter().rev() {
        let mut block = Vec::new();
        match rule.kind {
            DeviceKind::All => {}
            DeviceKind::Block => block.push(jump(JUMP_NOT_EQUAL, TYPE, DEV_BLOCK)),
            DeviceKind::Char => block.push(jump(JUMP_NOT_EQUAL, TYPE, DEV_CHAR)),
        }
        if let Some(major) = rule.major {
            block.push(jump(JUMP_NOT_EQUAL, MAJOR, immediate(major)));
        }
        if let Some(minor) = rule.minor {
            block.push(jump(JUMP_NOT_EQUAL, MINOR, immediate(minor)));
        }
        if rule.access != Access::ALL {
            block.push(Instruction::new(MOVE_REGISTER, SCRATCH, ACCESS, 0, 0));
            if rule.allow {
                // Matches when nothing outside the rule's access is asked for.
                let outside = i32::from(!rule.access.bits() & Access::ALL.bits());
                block.push(alu_immediate(AND_IMMEDIATE, SCRATCH, outside));
                block.push(jump(JUMP_NOT_EQUAL, SCRATCH, 0));
            } else {
                // Matches when any of the rule's access is asked for.
                let inside = i32::from(rule.access.bits());
                block.push(alu_immediate(AND_IMMEDIATE, SCRATCH, inside));
                block.push(jump(JUMP_EQUAL, SCRATCH, 0));
            }
        }
        block.push(alu_immediate(MOVE_IMMEDIATE, RESULT, i32::from(rule.allow)));
        block.push(Instruction::new(EXIT, 0, 0, 0, 0));
        let length = block.len();
        for (index, instruction) in block.iter_mut().enumerate() {
            if matches!(instruction.code, JUMP_NOT_EQUAL | JUMP_EQUAL) {
                // To the first instruction after the block; a block is a few
                // instructions, so this always fits.
                instruction.offset = i16::try_from(length - index - 1).unwrap_or(i16::MAX);
            }
        }
        program.extend(block);
        if rule.is_unconditional() {
            return program;
        }
    }
    program.push(alu_immediate(MOVE_IMMEDIATE, RESULT, 0));
    program.push(Instruction::new(EXIT, 0, 0, 0, 0));
    program
}

// bpf(2) commands and constants (include/uapi/linux/bpf.h).
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_PROG_ATTACH: libc::c_long = 8;
const BPF_PROG_DETACH: libc::c_long = 9;
const BPF_PROG_GET_FD_BY_ID: libc::c_long = 13;
const BPF_PROG_QUERY: libc::c_long = 16;
const BPF_PROG_TYPE_CGROUP_DEVICE: u32 = 15;
const BPF_CGROUP_DEVICE: u32 = 6;
/// Several programs on one cgroup, all of which must allow (runc and crun
/// attach so; a parent's programs keep applying to the container).
const BPF_F_ALLOW_MULTI: u32 = 2;

/// The head of `union bpf_attr` for `BPF_PROG_LOAD`; the kernel treats the
/// fields past `size` as zero.
#[repr(C)]
struct ProgramLoadAttributes {
    program_type: u32,
    instruction_count: u32,
    instructions: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buffer: u64,
    kernel_version: u32,
    program_flags: u32,
    program_name: [u8; 16],
    program_interface: u32,
    expected_attach_type: u32,
}

/// `union bpf_attr` for `BPF_PROG_ATTACH` and `BPF_PROG_DETACH`.
#[repr(C)]
struct AttachAttributes {
    target_fd: u32,
    attach_bpf_fd: u32,
    attach_type: u32,
    attach_flags: u32,
    replace_bpf_fd: u32,
}

/// `union bpf_attr` for `BPF_PROG_QUERY`, up to `prog_cnt`.
#[repr(C)]
struct QueryAttributes {
    target_fd: u32,
    attach_type: u32,
    query_flags: u32,
    attach_flags: u32,
    program_ids: u64,
    program_count: u32,
    padding: u32,
}

/// `union bpf_attr` for `BPF_PROG_GET_FD_BY_ID`.
#[repr(C)]
struct GetByIdAttributes {
    program_id: u32,
    next_id: u32,
    open_flags: u32,
}

/// bpf(2) with `attributes`; the result is a descriptor or 0.
///
/// # Safety
///
/// `T` must be the `union bpf_attr` layout of `command`, and every pointer in
/// it must be valid for what the kernel reads or writes there for the call.
unsafe fn bpf<T>(command: libc::c_long, attributes: &mut T) -> io::Result<libc::c_long> {
    let size = std::mem::size_of::<T>();
    // SAFETY: `attributes` is valid for `size` bytes of reads and writes, and
    // the caller vouches for the layout and the pointers inside.
    let result = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            command,
            std::ptr::from_mut(attributes).cast::<libc::c_void>(),
            size,
        )
    };
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

fn descriptor(result: libc::c_long) -> io::Result<OwnedFd> {
    let raw = i32::try_from(result).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: bpf(2) returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

fn fd_number(fd: BorrowedFd<'_>) -> u32 {
    u32::try_from(fd.as_raw_fd()).unwrap_or(u32::MAX)
}

/// A loaded program; on refusal the error carries the verifier's log.
pub fn load(program: &[Instruction]) -> io::Result<OwnedFd> {
    let license = c"Apache-2.0";
    let count =
        u32::try_from(program.len()).map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?;
    let mut name = [0u8; 16];
    name[..7].copy_from_slice(b"berthdv");
    let attributes = |log: &mut [u8]| ProgramLoadAttributes {
        program_type: BPF_PROG_TYPE_CGROUP_DEVICE,
        instruction_count: count,
        instructions: program.as_ptr() as u64,
        license: license.as_ptr() as u64,
        log_level: u32::from(!log.is_empty()),
        log_size: u32::try_from(log.len()).unwrap_or(0),
        log_buffer: if log.is_empty() {
            0
        } else {
            log.as_mut_ptr() as u64
        },
        kernel_version: 0,
        program_flags: 0,
        program_name: name,
        program_interface: 0,
        expected_attach_type: BPF_CGROUP_DEVICE,
    };
    let mut first = attributes(&mut []);
    // SAFETY: the layout is BPF_PROG_LOAD's; `instructions` points at
    // `program.len()` instructions and `license` at a NUL-terminated string,
    // both alive for the call; no log buffer is given.
    match unsafe { bpf(BPF_PROG_LOAD, &mut first) } {
        Ok(result) => descriptor(result),
        Err(error) => {
            // Again with the verifier's log, so the error says why.
            let mut log = vec![0u8; 64 * 1024];
            let mut second = attributes(&mut log);
            // SAFETY: as above, and `log_buffer` points at `log_size` writable
            // bytes that outlive the call.
            if let Ok(result) = unsafe { bpf(BPF_PROG_LOAD, &mut second) } {
                return descriptor(result);
            }
            let end = log.iter().position(|byte| *byte == 0).unwrap_or(log.len());
            let text = String::from_utf8_lossy(&log[..end]).trim().to_owned();
            if text.is_empty() {
                Err(error)
            } else {
                Err(io::Error::new(error.kind(), format!("{error}: {text}")))
            }
        }
    }
}

/// Attaches `program` to the cgroup directory `cgroup` (multi mode).
pub fn attach(cgroup: BorrowedFd<'_>, program: BorrowedFd<'_>) -> io::Result<()> {
    let mut attributes = AttachAttributes {
        target_fd: fd_number(cgroup),
        attach_bpf_fd: fd_number(program),
        attach_type: BPF_CGROUP_DEVICE,
        attach_flags: BPF_F_ALLOW_MULTI,
        replace_bpf_fd: 0,
    };
    // SAFETY: the layout is BPF_PROG_ATTACH's and it holds no pointers.
    unsafe { bpf(BPF_PROG_ATTACH, &mut attributes) }.map(drop)
}

/// Detaches `program` from the cgroup directory `cgroup`.
pub fn detach(cgroup: BorrowedFd<'_>, program: BorrowedFd<'_>) -> io::Result<()> {
    let mut attributes = AttachAttributes {
        target_fd: fd_number(cgroup),
        attach_bpf_fd: fd_number(program),
        attach_type: BPF_CGROUP_DEVICE,
        attach_flags: 0,
        replace_bpf_fd: 0,
    };
    // SAFETY: the layout is BPF_PROG_DETACH's and it holds no pointers.
    unsafe { bpf(BPF_PROG_DETACH, &mut attributes) }.map(drop)
}

/// The ids of the device programs attached to the cgroup itself (not its
/// parents'), at most 64: more than berth ever attaches.
pub fn attached(cgroup: BorrowedFd<'_>) -> io::Result<Vec<u32>> {
    let mut ids = [0u32; 64];
    let mut attributes = QueryAttributes {
        target_fd: fd_number(cgroup),
        attach_type: BPF_CGROUP_DEVICE,
        query_flags: 0,
        attach_flags: 0,
        program_ids: ids.as_mut_ptr() as u64,
        program_count: 64,
        padding: 0,
    };
    // SAFETY: the layout is BPF_PROG_QUERY's; `program_ids` points at
    // `program_count` writable u32s that outlive the call.
    unsafe { bpf(BPF_PROG_QUERY, &mut attributes) }?;
    let count = usize::try_from(attributes.program_count)
        .unwrap_or(0)
        .min(ids.len());
    Ok(ids[..count].to_vec())
}

/// A descriptor of the loaded program with `id`.
pub fn program_by_id(id: u32) -> io::Result<OwnedFd> {
    let mut attributes = GetByIdAttributes {
        program_id: id,
        next_id: 0,
        open_flags: 0,
    };
    // SAFETY: the layout is BPF_PROG_GET_FD_BY_ID's and it holds no pointers.
    unsafe { bpf(BPF_PROG_GET_FD_BY_ID, &mut attributes) }.and_then(descriptor)
}

#[cfg(test)]
mod tests {
    use super::super::{allows, container_rules, DeviceRequest, DEFAULT_RULES};
    use super::*;

    /// Runs `program` on a `bpf_cgroup_dev_ctx` for `request`: the few
    /// instructions [`device_program`] uses, and nothing else.
    fn run(program: &[Instruction], request: &DeviceRequest) -> bool {
        let kind = match request.kind {
            DeviceKind::Block => 1u32,
            DeviceKind::Char => 2,
            DeviceKind::All => panic!("a request is for a block or char device"),
        };
        let context = [
            (u32::from(request.access.bits()) << 16) | kind,
            request.major,
            request.minor,
        ];
        let mut registers = [0u64; 11];
        let mut pc = 0usize;
        let mut steps = 0;
        loop {
            steps += 1;
            assert!(steps < 10_000, "the program loops");
            let instruction = program.get(pc).expect("pc stays in the program");
            let destination = usize::from(instruction.destination());
            let source = usize::from(instruction.source());
            let immediate32 = instruction.immediate as u32;
            let low = |value: u64| value as u32;
            let mut next = pc + 1;
            match instruction.code {
                LOAD_WORD => {
                    assert_eq!(source, usize::from(CONTEXT), "loads read the context");
                    let index = usize::try_from(instruction.offset).unwrap() / 4;
                    assert_eq!(instruction.offset % 4, 0);
                    registers[destination] = u64::from(context[index]);
                }
                MOVE_REGISTER => registers[destination] = u64::from(low(registers[source])),
                MOVE_IMMEDIATE => registers[destination] = u64::from(immediate32),
                AND_IMMEDIATE => {
                    registers[destination] = u64::from(low(registers[destination]) & immediate32)
                }
                SHIFT_RIGHT_IMMEDIATE => {
                    registers[destination] = u64::from(low(registers[destination]) >> immediate32)
                }
                JUMP_NOT_EQUAL | JUMP_EQUAL => {
                    let equal = low(registers[destination]) == immediate32;
                    if equal == (instruction.code == JUMP_EQUAL) {
                        next = pc + 1 + usize::try_from(instruction.offset).unwrap();
                    }
                }
                EXIT => return registers[0] == 1,
                other => panic!("unexpected opcode {other:#x}"),
            }
            pc = next;
        }
    }

    /// Requests over every kind, some numbers each rule names and some none
    /// does, and every access set.
    fn requests() -> Vec<DeviceRequest> {
        let mut requests = Vec::new();
        for kind in [DeviceKind::Block, DeviceKind::Char] {
            for (major, minor) in [
                (1, 3),
                (1, 11),
                (1, 1),
                (5, 1),
                (10, 200),
                (10, 229),
                (10, 232),
                (136, 0),
                (136, 9999),
                (8, 0),
                (0, 0),
                (u32::MAX, u32::MAX),
            ] {
                for bits in 1..=7 {
                    requests.push(DeviceRequest {
                        kind,
                        major,
                        minor,
                        access: Access(bits),
                    });
                }
            }
        }
        requests
    }

    fn rule(text: &str) -> DeviceRule {
        DeviceRule::parse(text).unwrap()
    }

    #[test]
    fn program_decides_as_the_rules_do() {
        let deny = |text: &str| DeviceRule {
            allow: false,
            ..rule(text)
        };
        let lists: Vec<Vec<DeviceRule>> = vec![
            container_rules(false, &[]),
            container_rules(true, &[]),
            container_rules(false, &[rule("c 10:229 rwm"), rule("c 1:11 w")]),
            container_rules(false, &[rule("a 1:1 r"), rule("b 8:* rw")]),
            vec![
                DeviceRule::everything(true),
                deny("c 1:11 w"),
                deny("b *:* rwm"),
                rule("b 8:0 r"),
            ],
            vec![rule("c 1:3 rw")],
            Vec::new(),
        ];
        for rules in lists {
            let program = device_program(&rules);
            for request in requests() {
                assert_eq!(
                    run(&program, &request),
                    allows(&rules, &request),
                    "{request:?} with {rules:?}"
                );
            }
        }
    }

    #[test]
    fn program_has_the_expected_instructions() {
        let program = device_program(&[DeviceRule::everything(false), rule("c 1:3 rw")]);
        let expected = [
            (LOAD_WORD, ACCESS, CONTEXT, 0, 0),
            (MOVE_REGISTER, TYPE, ACCESS, 0, 0),
            (AND_IMMEDIATE, TYPE, 0, 0, 0xffff),
            (SHIFT_RIGHT_IMMEDIATE, ACCESS, 0, 0, 16),
            (LOAD_WORD, MAJOR, CONTEXT, 4, 0),
            (LOAD_WORD, MINOR, CONTEXT, 8, 0),
            // c 1:3 rw: type, major, minor, then "nothing but read and write".
            (JUMP_NOT_EQUAL, TYPE, 0, 7, DEV_CHAR),
            (JUMP_NOT_EQUAL, MAJOR, 0, 6, 1),
            (JUMP_NOT_EQUAL, MINOR, 0, 5, 3),
            (MOVE_REGISTER, SCRATCH, ACCESS, 0, 0),
            (AND_IMMEDIATE, SCRATCH, 0, 0, 1),
            (JUMP_NOT_EQUAL, SCRATCH, 0, 2, 0),
            (MOVE_IMMEDIATE, RESULT, 0, 0, 1),
            (EXIT, 0, 0, 0, 0),
            // a *:* rwm denied: unconditional, and the end of the program.
            (MOVE_IMMEDIATE, RESULT, 0, 0, 0),
            (EXIT, 0, 0, 0, 0),
        ];
        let actual: Vec<(u8, u8, u8, i16, i32)> = program
            .iter()
            .map(|instruction| {
                (
                    instruction.code,
                    instruction.destination(),
                    instruction.source(),
                    instruction.offset,
                    instruction.immediate,
                )
            })
            .collect();
        assert_eq!(actual, expected);
        assert_eq!(std::mem::size_of::<Instruction>(), 8, "struct bpf_insn");
    }

    #[test]
    fn nothing_follows_an_unconditional_rule() {
        // The verifier refuses unreachable instructions.
        let program = device_program(&DEFAULT_RULES);
        let exits = program.iter().filter(|i| i.code == EXIT).count();
        assert_eq!(exits, DEFAULT_RULES.len());
        assert_eq!(program.last().map(|i| i.code), Some(EXIT));
        let privileged = device_program(&[DeviceRule::everything(true)]);
        assert_eq!(privileged.len(), 8);
    }

    #[test]
    fn attribute_layouts_match_the_kernel() {
        use std::mem::{offset_of, size_of};
        assert_eq!(offset_of!(ProgramLoadAttributes, program_name), 48);
        assert_eq!(offset_of!(ProgramLoadAttributes, expected_attach_type), 68);
        assert_eq!(size_of::<AttachAttributes>(), 20);
        assert_eq!(offset_of!(QueryAttributes, program_ids), 16);
        assert_eq!(offset_of!(QueryAttributes, program_count), 24);
    }
}
