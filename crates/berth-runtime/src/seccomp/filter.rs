//! A compiled filter: its bytes for the cache, and loading it into the kernel.

use std::fmt;
use std::io;

use sha2::{Digest, Sha256};

use super::bpf;
use super::SeccompError;

/// Cache file layout: magic, format version, flags, instruction count, the instructions
/// (code u16, jt u8, jf u8, k u32; little-endian), then a SHA-256 of all of that.
const MAGIC: &[u8; 8] = b"BERTHBPF";
const FORMAT_VERSION: u32 = 1;
const HEADER_LENGTH: usize = 8 + 4 + 4 + 4;
const INSTRUCTION_LENGTH: usize = 8;
const CHECKSUM_LENGTH: usize = 32;

const SPEC_ALLOW: u32 = libc::SECCOMP_FILTER_FLAG_SPEC_ALLOW as u32;

/// A BPF program ready for seccomp(2), with the flags to load it with. Always valid:
/// 1..=4096 instructions, only opcodes berth emits, every jump inside the program.
#[derive(Clone)]
pub struct Filter {
    instructions: Vec<libc::sock_filter>,
    flags: u32,
}

/// Filters cross into a pooled container's first process as JSON (see
/// `launch::Sandbox`): the same checked bytes as the on-disk cache.
impl serde::Serialize for Filter {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(&self.to_bytes())
    }
}

impl<'de> serde::Deserialize<'de> for Filter {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let bytes = <Vec<u8>>::deserialize(deserializer)?;
        Filter::from_bytes(&bytes).map_err(serde::de::Error::custom)
    }
}

impl Filter {
    pub(crate) fn new(
        instructions: Vec<libc::sock_filter>,
        flags: u32,
    ) -> Result<Filter, SeccompError> {
        bpf::validate(&instructions).map_err(|reason| SeccompError::Internal { reason })?;
        Ok(Filter {
            instructions,
            flags,
        })
    }

    pub fn instructions(&self) -> &[libc::sock_filter] {
        &self.instructions
    }

    /// `SECCOMP_FILTER_FLAG_*` bits passed to seccomp(2).
    pub fn flags(&self) -> u32 {
        self.flags
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(
            HEADER_LENGTH + self.instructions.len() * INSTRUCTION_LENGTH + CHECKSUM_LENGTH,
        );
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        bytes.extend_from_slice(&self.flags.to_le_bytes());
        // At most 4096 instructions (checked at construction), so this fits.
        bytes.extend_from_slice(&(self.instructions.len() as u32).to_le_bytes());
        for insn in &self.instructions {
            bytes.extend_from_slice(&insn.code.to_le_bytes());
            bytes.push(insn.jt);
            bytes.push(insn.jf);
            bytes.extend_from_slice(&insn.k.to_le_bytes());
        }
        let checksum = Sha256::digest(&bytes);
        bytes.extend_from_slice(&checksum);
        bytes
    }

    /// Reads what [`Filter::to_bytes`] wrote; anything damaged or foreign is an error.
    pub fn from_bytes(bytes: &[u8]) -> Result<Filter, SeccompError> {
        let invalid = |reason: &'static str| SeccompError::InvalidFilterBytes { reason };
        if bytes.len() < HEADER_LENGTH + CHECKSUM_LENGTH {
            return Err(invalid("too short"));
        }
        let (content, checksum) = bytes.split_at(bytes.len() - CHECKSUM_LENGTH);
        if Sha256::digest(content).as_slice() != checksum {
            return Err(invalid("checksum mismatch"));
        }
        if &content[..8] != MAGIC {
            return Err(invalid("not a berth filter"));
        }
        let word = |at: usize| {
            u32::from_le_bytes([
                content[at],
                content[at + 1],
                content[at + 2],
                content[at + 3],
            ])
        };
        if word(8) != FORMAT_VERSION {
            return Err(invalid("unknown format version"));
        }
        let flags = word(12);
        let count = word(16) as usize;
        let body = &content[HEADER_LENGTH..];
        if body.len() != count.saturating_mul(INSTRUCTION_LENGTH) {
            return Err(invalid("length does not match the instruction count"));
        }
        let instructions: Vec<libc::sock_filter> = body
            .chunks_exact(INSTRUCTION_LENGTH)
            .map(|chunk| {
                bpf::instruction(
                    u16::from_le_bytes([chunk[0], chunk[1]]),
                    u32::from_le_bytes([chunk[4], chunk[5], chunk[6], chunk[7]]),
                    chunk[2],
                    chunk[3],
                )
            })
            .collect();
        bpf::validate(&instructions).map_err(invalid)?;
        Ok(Filter {
            instructions,
            flags,
        })
    }

    /// Installs the filter on the calling thread (and what it later execs or forks).
    ///
    /// The caller must have set no_new_privs or hold CAP_SYS_ADMIN. Meant for the
    /// container's single-threaded init between fork and exec: it neither allocates nor
    /// logs. SPEC_ALLOW is dropped and the load retried when the kernel rejects it
    /// (EINVAL before 4.17): it only relaxes a speculation mitigation, never the policy.
    pub fn install(&self) -> Result<(), SeccompError> {
        self.install_reporting_flags().map(|_| ())
    }

    /// [`Filter::install`], returning the flags the kernel accepted.
    pub fn install_reporting_flags(&self) -> Result<u32, SeccompError> {
        let mut flags = self.flags;
        loop {
            match self.load(flags) {
                Ok(0) => return Ok(flags),
                // With TSYNC, a positive result names a thread that could not be synced.
                Ok(thread) => return Err(SeccompError::ThreadSync { thread }),
                Err(error)
                    if error.raw_os_error() == Some(libc::EINVAL) && flags & SPEC_ALLOW != 0 =>
                {
                    flags &= !SPEC_ALLOW;
                }
                Err(source) => return Err(SeccompError::Install { flags, source }),
            }
        }
    }

    fn load(&self, flags: u32) -> io::Result<libc::c_long> {
        let program = libc::sock_fprog {
            // At most 4096 instructions (checked at construction), so this fits.
            len: self.instructions.len() as libc::c_ushort,
            // The kernel only reads through this pointer; the cast is what the C type wants.
            filter: self.instructions.as_ptr().cast_mut(),
        };
        // SAFETY: `program` points at `self.instructions`, which lives for the whole call
        // and holds exactly `len` valid sock_filter structs; the kernel copies the
        // program before returning and writes nothing through the pointer.
        let result = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                libc::c_ulong::from(flags),
                &program as *const libc::sock_fprog,
            )
        };
        if result < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(result)
        }
    }
}

impl PartialEq for Filter {
    fn eq(&self, other: &Filter) -> bool {
        self.flags == other.flags
            && self.instructions.len() == other.instructions.len()
            && self
                .instructions
                .iter()
                .zip(&other.instructions)
                .all(|(a, b)| (a.code, a.jt, a.jf, a.k) == (b.code, b.jt, b.jf, b.k))
    }
}

impl Eq for Filter {}

impl fmt::Debug for Filter {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Filter")
            .field("instructions", &self.instructions.len())
            .field("flags", &format_args!("{:#x}", self.flags))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seccomp::bpf::{instruction, LD_ABS, OFFSET_NR, RET_K};

    fn sample() -> Filter {
        let program = vec![
            instruction(LD_ABS, OFFSET_NR, 0, 0),
            instruction(RET_K, libc::SECCOMP_RET_ALLOW, 0, 0),
        ];
        Filter::new(program, SPEC_ALLOW).unwrap()
    }

    #[test]
    fn bytes_round_trip() {
        let filter = sample();
        assert_eq!(Filter::from_bytes(&filter.to_bytes()).unwrap(), filter);
    }

    #[test]
    fn damaged_bytes_are_rejected() {
        let bytes = sample().to_bytes();
        assert!(Filter::from_bytes(&bytes[..bytes.len() - 1]).is_err());
        assert!(Filter::from_bytes(&[]).is_err());
        for position in [0, 9, 13, 17, HEADER_LENGTH + 3, bytes.len() - 1] {
            let mut damaged = bytes.clone();
            damaged[position] ^= 0x40;
            assert!(Filter::from_bytes(&damaged).is_err(), "flip at {position}");
        }
    }

    /// A program with a good checksum but a jump out of bounds is still refused.
    #[test]
    fn well_formed_but_invalid_programs_are_rejected() {
        let mut bytes = sample().to_bytes();
        bytes.truncate(bytes.len() - CHECKSUM_LENGTH);
        // Turn the load into a jump past the end.
        bytes[HEADER_LENGTH] = crate::seccomp::bpf::JA as u8;
        bytes[HEADER_LENGTH + 4] = 9;
        let checksum = Sha256::digest(&bytes);
        bytes.extend_from_slice(&checksum);
        assert!(matches!(
            Filter::from_bytes(&bytes),
            Err(SeccompError::InvalidFilterBytes { .. })
        ));
    }
}
