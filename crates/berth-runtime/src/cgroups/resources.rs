//! The resource limits of one container, as plain data from docker's flags, and the unit
//! conversions between docker's (cgroup v1) numbers and cgroup v2's.
//!
//! Every field is optional: `None` leaves the kernel's current value alone, which is what
//! `docker update` needs (it changes only the flags given). Docker's own defaulting happens
//! before this point, in the engine: for example `--memory` without `--memory-swap` means a
//! memory+swap limit of twice the memory limit, and the engine fills that in.

use serde::{Deserialize, Serialize};

use crate::devices::DeviceRule;

/// The default CFS period, in microseconds, that `--cpus` uses (docker, runc, crun).
pub const DEFAULT_CPU_PERIOD: u64 = 100_000;

/// A limit that may be lifted: written as `-1` on v1 and `max` on v2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    Unlimited,
    Value(u64),
}

impl Limit {
    /// Docker's `--pids-limit`: zero or a negative number means unlimited.
    pub fn from_docker_pids(limit: i64) -> Self {
        u64::try_from(limit)
            .ok()
            .filter(|&limit| limit > 0)
            .map_or(Limit::Unlimited, Limit::Value)
    }

    /// Docker's `--memory-swap`: `-1` means unlimited, `0` means not set.
    pub fn from_docker_swap(limit: i64) -> Option<Self> {
        match limit {
            0 => None,
            limit => Some(u64::try_from(limit).map_or(Limit::Unlimited, Limit::Value)),
        }
    }

    pub(crate) fn v1_value(self) -> String {
        match self {
            Limit::Unlimited => "-1".to_owned(),
            Limit::Value(value) => value.to_string(),
        }
    }

    pub(crate) fn v2_value(self) -> String {
        match self {
            Limit::Unlimited => "max".to_owned(),
            Limit::Value(value) => value.to_string(),
        }
    }
}

/// What one container may use. See the module comment for `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resources {
    /// `--memory`, in bytes.
    pub memory: Option<Limit>,
    /// `--memory-swap`: memory plus swap, in bytes (docker's meaning, v1's
    /// `memory.memsw.limit_in_bytes`; v2 stores only the swap part).
    pub memory_swap: Option<Limit>,
    /// `--memory-reservation`: the soft limit, in bytes.
    pub memory_reservation: Option<Limit>,
    /// `--cpu-shares`, in v1 units (2..=262144, default 1024).
    pub cpu_shares: Option<u64>,
    /// `--cpu-quota`, or `--cpus` through [`Resources::set_nano_cpus`]: microseconds per period.
    pub cpu_quota: Option<Limit>,
    /// `--cpu-period`, in microseconds.
    pub cpu_period: Option<u64>,
    /// `--cpu-rt-period`, in microseconds (v1 only).
    pub cpu_realtime_period: Option<u64>,
    /// `--cpu-rt-runtime`, in microseconds, `-1` for unlimited (v1 only).
    pub cpu_realtime_runtime: Option<i64>,
    /// `--cpuset-cpus`, kernel list syntax (`0-2,4`).
    pub cpuset_cpus: Option<String>,
    /// `--cpuset-mems`, kernel list syntax.
    pub cpuset_mems: Option<String>,
    /// `--pids-limit`; see [`Limit::from_docker_pids`].
    pub pids_limit: Option<Limit>,
    /// `--blkio-weight`, 10..=1000 in v1 units.
    pub blkio_weight: Option<u16>,
    /// The device rules ([`crate::devices`]): `devices.deny`/`devices.allow` on v1, a BPF
    /// device program on v2. The engine always sets them at create (Docker's defaults plus
    /// `--device` and `--device-cgroup-rule`, or allow-all with `--privileged`); `None`
    /// leaves the cgroup's rules as they are, which for a new cgroup is its parent's.
    #[serde(default)]
    pub devices: Option<Vec<DeviceRule>>,
}

impl Resources {
    /// Docker's `--cpus` (the API's `NanoCpus`: `--cpus 1.5` is 1 500 000 000): a quota of
    /// `cpus * 100000` per period of 100000 µs. Zero clears nothing and sets nothing.
    pub fn set_nano_cpus(&mut self, nano_cpus: u64) {
        if nano_cpus == 0 {
            return;
        }
        let quota = u128::from(nano_cpus) * u128::from(DEFAULT_CPU_PERIOD) / 1_000_000_000;
        self.cpu_quota = Some(Limit::Value(u64::try_from(quota).unwrap_or(u64::MAX)));
        self.cpu_period = Some(DEFAULT_CPU_PERIOD);
    }

    /// Whether any memory limit is set (the memory controller is needed).
    pub(crate) fn wants_memory(&self) -> bool {
        self.memory.is_some() || self.memory_swap.is_some() || self.memory_reservation.is_some()
    }

    pub(crate) fn wants_cpu(&self) -> bool {
        self.cpu_shares.is_some()
            || self.cpu_quota.is_some()
            || self.cpu_period.is_some()
            || self.cpu_realtime_period.is_some()
            || self.cpu_realtime_runtime.is_some()
    }

    pub(crate) fn wants_cpuset(&self) -> bool {
        self.cpuset_cpus.is_some() || self.cpuset_mems.is_some()
    }
}

/// v1 `cpu.shares` → v2 `cpu.weight`, with the formula runc and crun use, which maps the
/// shares range 2..=262144 linearly onto the weight range 1..=10000 (1024 → 39).
pub fn cpu_shares_to_weight(shares: u64) -> u64 {
    let shares = shares.clamp(2, 262_144);
    1 + ((shares - 2) * 9999) / 262_142
}

/// v1 `blkio.weight` (10..=1000) → v2 `io.weight` (1..=10000), as runc converts it.
pub fn blkio_weight_to_io_weight(weight: u16) -> u64 {
    let weight = u64::from(weight.clamp(10, 1000));
    1 + ((weight - 10) * 9999) / 990
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_convert_to_weight_like_runc() {
        assert_eq!(cpu_shares_to_weight(2), 1);
        assert_eq!(cpu_shares_to_weight(1024), 39);
        assert_eq!(cpu_shares_to_weight(512), 20);
        assert_eq!(cpu_shares_to_weight(262_144), 10_000);
        // Out-of-range shares are clamped as the kernel clamps them.
        assert_eq!(cpu_shares_to_weight(0), 1);
        assert_eq!(cpu_shares_to_weight(1_000_000), 10_000);
    }

    #[test]
    fn blkio_weight_converts_to_io_weight() {
        assert_eq!(blkio_weight_to_io_weight(10), 1);
        assert_eq!(blkio_weight_to_io_weight(500), 4950);
        assert_eq!(blkio_weight_to_io_weight(1000), 10_000);
    }

    #[test]
    fn cpus_become_quota_over_the_default_period() {
        let mut resources = Resources::default();
        resources.set_nano_cpus(1_500_000_000);
        assert_eq!(resources.cpu_quota, Some(Limit::Value(150_000)));
        assert_eq!(resources.cpu_period, Some(100_000));

        resources.set_nano_cpus(10_000_000); // --cpus 0.01
        assert_eq!(resources.cpu_quota, Some(Limit::Value(1_000)));

        let mut untouched = Resources::default();
        untouched.set_nano_cpus(0);
        assert_eq!(untouched, Resources::default());
    }

    #[test]
    fn docker_limits_map_to_limit() {
        assert_eq!(Limit::from_docker_pids(0), Limit::Unlimited);
        assert_eq!(Limit::from_docker_pids(-1), Limit::Unlimited);
        assert_eq!(Limit::from_docker_pids(100), Limit::Value(100));
        assert_eq!(Limit::from_docker_swap(0), None);
        assert_eq!(Limit::from_docker_swap(-1), Some(Limit::Unlimited));
        assert_eq!(
            Limit::from_docker_swap(1 << 30),
            Some(Limit::Value(1 << 30))
        );
        assert_eq!(Limit::Unlimited.v1_value(), "-1");
        assert_eq!(Limit::Unlimited.v2_value(), "max");
    }
}
