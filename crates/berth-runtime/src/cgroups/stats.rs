//! What `stats()` reports: the numbers `docker stats`, `docker inspect` (OOMKilled) and
//! `docker top` need, in one shape for v1 and v2. A field is `None` when its controller is
//! not there (v2 without the memory controller enabled, say).

use serde::{Deserialize, Serialize};

use super::Limit;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupStats {
    /// Memory charged to the cgroup, page cache included (v1 `memory.usage_in_bytes`,
    /// v2 `memory.current`).
    pub memory_usage: Option<u64>,
    /// The memory limit in force (v1 `memory.limit_in_bytes`, v2 `memory.max`).
    pub memory_limit: Option<Limit>,
    /// Inactive file cache, which `docker stats` subtracts from usage (v1 `memory.stat`
    /// `total_inactive_file`, v2 `inactive_file`).
    pub memory_inactive_file: Option<u64>,
    /// How many processes the kernel's OOM killer killed in this cgroup (v1
    /// `memory.oom_control`, v2 `memory.events`, both `oom_kill N`; kernels before 4.13 lack it
    /// on v1).
    pub oom_kills: Option<u64>,
    /// CPU time used, in nanoseconds (v1 `cpuacct.usage`, v2 `cpu.stat` `usage_usec` × 1000).
    pub cpu_usage_ns: Option<u64>,
    /// Processes and threads in the cgroup (`pids.current`).
    pub pids_current: Option<u64>,
    /// Bytes read from and written to block devices, over all devices (v1
    /// `blkio.throttle.io_service_bytes_recursive` Read/Write, v2 `io.stat` rbytes/wbytes):
    /// `docker stats`' BLOCK I/O.
    #[serde(default)]
    pub block_io: Option<BlockIo>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockIo {
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// v1 `blkio.throttle.io_service_bytes_recursive`: `MAJ:MIN Read N` / `MAJ:MIN Write N` per
/// device, then `Total N`.
pub(crate) fn v1_block_io(text: &str) -> BlockIo {
    let mut io = BlockIo::default();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let [_, operation, value] = fields.as_slice() {
            let value: u64 = value.parse().unwrap_or(0);
            match *operation {
                "Read" => io.read_bytes += value,
                "Write" => io.write_bytes += value,
                _ => {}
            }
        }
    }
    io
}

/// v2 `io.stat`: `MAJ:MIN rbytes=N wbytes=N rios=N …` per device.
pub(crate) fn v2_block_io(text: &str) -> BlockIo {
    let mut io = BlockIo::default();
    for field in text.split_whitespace() {
        if let Some((key, value)) = field.split_once('=') {
            let value: u64 = value.parse().unwrap_or(0);
            match key {
                "rbytes" => io.read_bytes += value,
                "wbytes" => io.write_bytes += value,
                _ => {}
            }
        }
    }
    io
}

/// v1 reports "no limit" as the largest page-aligned `i64` (9223372036854771712 with 4 KiB
/// pages); anything this large cannot be a real limit.
const V1_UNLIMITED_THRESHOLD: u64 = 1 << 62;

pub(crate) fn v1_limit(value: u64) -> Limit {
    if value >= V1_UNLIMITED_THRESHOLD {
        Limit::Unlimited
    } else {
        Limit::Value(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_io_sums_every_device() {
        let v1 = "8:0 Read 4096\n8:0 Write 100\n8:16 Read 10\n8:16 Write 1\n8:0 Total 4196\nTotal 4207\n";
        assert_eq!(
            v1_block_io(v1),
            BlockIo {
                read_bytes: 4106,
                write_bytes: 101
            }
        );
        let v2 = "8:0 rbytes=4096 wbytes=100 rios=1 wios=1 dbytes=0 dios=0\n8:16 rbytes=10 wbytes=1 rios=1 wios=1\n";
        assert_eq!(
            v2_block_io(v2),
            BlockIo {
                read_bytes: 4106,
                write_bytes: 101
            }
        );
    }

    #[test]
    fn v1_unlimited_is_recognised() {
        assert_eq!(v1_limit(9_223_372_036_854_771_712), Limit::Unlimited);
        assert_eq!(v1_limit(1 << 30), Limit::Value(1 << 30));
    }
}
