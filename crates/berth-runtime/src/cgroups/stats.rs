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
    fn v1_unlimited_is_recognised() {
        assert_eq!(v1_limit(9_223_372_036_854_771_712), Limit::Unlimited);
        assert_eq!(v1_limit(1 << 30), Limit::Value(1 << 30));
    }
}
