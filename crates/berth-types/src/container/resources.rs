//! The resource limits of a container (moby `container.Resources`), embedded in
//! `HostConfig` and used on their own by `docker update`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::serde_util::{is_zero, nullable};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Resources {
    /// Relative CPU weight (`--cpu-shares`).
    #[serde(default, deserialize_with = "nullable")]
    pub cpu_shares: i64,
    /// Bytes (`--memory`).
    #[serde(default, deserialize_with = "nullable")]
    pub memory: i64,
    /// CPUs in units of 10⁻⁹ (`--cpus`).
    #[serde(default, deserialize_with = "nullable")]
    pub nano_cpus: i64,
    #[serde(default, deserialize_with = "nullable")]
    pub cgroup_parent: String,
    #[serde(default, deserialize_with = "nullable")]
    pub blkio_weight: u16,
    #[serde(default)]
    pub blkio_weight_device: Option<Vec<WeightDevice>>,
    #[serde(default)]
    pub blkio_device_read_bps: Option<Vec<ThrottleDevice>>,
    #[serde(default)]
    pub blkio_device_write_bps: Option<Vec<ThrottleDevice>>,
    #[serde(default, rename = "BlkioDeviceReadIOps")]
    pub blkio_device_read_iops: Option<Vec<ThrottleDevice>>,
    #[serde(default, rename = "BlkioDeviceWriteIOps")]
    pub blkio_device_write_iops: Option<Vec<ThrottleDevice>>,
    /// Microseconds (CFS period).
    #[serde(default, deserialize_with = "nullable")]
    pub cpu_period: i64,
    /// Microseconds per period (CFS quota); `-1` is unlimited.
    #[serde(default, deserialize_with = "nullable")]
    pub cpu_quota: i64,
    /// docker-py spells it `CPURealtimePeriod`, which dockerd takes (Go's
    /// JSON matches names without case).
    #[serde(default, deserialize_with = "nullable", alias = "CPURealtimePeriod")]
    pub cpu_realtime_period: i64,
    #[serde(default, deserialize_with = "nullable", alias = "CPURealtimeRuntime")]
    pub cpu_realtime_runtime: i64,
    /// e.g. `0-3` or `0,1`.
    #[serde(default, deserialize_with = "nullable")]
    pub cpuset_cpus: String,
    #[serde(default, deserialize_with = "nullable")]
    pub cpuset_mems: String,
    #[serde(default)]
    pub devices: Option<Vec<DeviceMapping>>,
    /// e.g. `c 1:3 mr`.
    #[serde(default)]
    pub device_cgroup_rules: Option<Vec<String>>,
    #[serde(default)]
    pub device_requests: Option<Vec<DeviceRequest>>,
    /// Deprecated (kernel 5.4 removed `kmem.limit_in_bytes`); written only when set.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero"
    )]
    pub kernel_memory: i64,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero",
        rename = "KernelMemoryTCP"
    )]
    pub kernel_memory_tcp: i64,
    /// Bytes (soft limit).
    #[serde(default, deserialize_with = "nullable")]
    pub memory_reservation: i64,
    /// Memory plus swap in bytes; `-1` is unlimited swap.
    #[serde(default, deserialize_with = "nullable")]
    pub memory_swap: i64,
    /// 0–100; `-1` (what the docker CLI sends by default) and `None` mean unset.
    #[serde(default)]
    pub memory_swappiness: Option<i64>,
    #[serde(default)]
    pub oom_kill_disable: Option<bool>,
    /// `0` and `-1` are unlimited, `None` leaves the default.
    #[serde(default)]
    pub pids_limit: Option<i64>,
    #[serde(default)]
    pub ulimits: Option<Vec<Ulimit>>,
    /// Windows only.
    #[serde(default, deserialize_with = "nullable")]
    pub cpu_count: i64,
    /// Windows only.
    #[serde(default, deserialize_with = "nullable")]
    pub cpu_percent: i64,
    /// Windows only.
    #[serde(default, deserialize_with = "nullable", rename = "IOMaximumIOps")]
    pub io_maximum_iops: u64,
    /// Windows only.
    #[serde(default, deserialize_with = "nullable", rename = "IOMaximumBandwidth")]
    pub io_maximum_bandwidth: u64,
}

/// `--blkio-weight-device /dev/sda:200`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct WeightDevice {
    #[serde(default, deserialize_with = "nullable")]
    pub path: String,
    #[serde(default, deserialize_with = "nullable")]
    pub weight: u16,
}

/// `--device-read-bps /dev/sda:1mb` and the other throttles (bytes or IO per second).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ThrottleDevice {
    #[serde(default, deserialize_with = "nullable")]
    pub path: String,
    #[serde(default, deserialize_with = "nullable")]
    pub rate: u64,
}

/// `--device /dev/fuse[:/dev/fuse[:rwm]]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct DeviceMapping {
    #[serde(default, deserialize_with = "nullable")]
    pub path_on_host: String,
    #[serde(default, deserialize_with = "nullable")]
    pub path_in_container: String,
    /// Some of `r`, `w`, `m`.
    #[serde(default, deserialize_with = "nullable")]
    pub cgroup_permissions: String,
}

/// A request for devices from a driver (`--gpus`, CDI devices).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct DeviceRequest {
    #[serde(default, deserialize_with = "nullable")]
    pub driver: String,
    /// `-1` is all devices.
    #[serde(default, deserialize_with = "nullable")]
    pub count: i64,
    #[serde(default, rename = "DeviceIDs")]
    pub device_ids: Option<Vec<String>>,
    /// An OR list of AND lists of capabilities, e.g. `[["gpu"]]`.
    #[serde(default)]
    pub capabilities: Option<Vec<Vec<String>>>,
    #[serde(default)]
    pub options: Option<BTreeMap<String, String>>,
}

/// An rlimit (`--ulimit nofile=1024:2048`); `-1` is unlimited. Field order is
/// go-units', which puts `Hard` before `Soft`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Ulimit {
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    #[serde(default, deserialize_with = "nullable")]
    pub hard: i64,
    #[serde(default, deserialize_with = "nullable")]
    pub soft: i64,
}

/// The rlimit names Docker accepts (go-units `ulimitNameMapping`; `as` is left out
/// there on purpose, as it breaks container init).
pub const ULIMIT_NAMES: &[&str] = &[
    "core",
    "cpu",
    "data",
    "fsize",
    "locks",
    "memlock",
    "msgqueue",
    "nice",
    "nofile",
    "nproc",
    "rss",
    "rtprio",
    "rttime",
    "sigpending",
    "stack",
];
