//! cgroup v1: one directory per hierarchy (`<mount>/<path>` for cpu, memory, pids, …), each
//! controller with its own files and units.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::Signal;
use nix::unistd::Pid;

use super::signal::{signal_each, wait_for_state, FREEZE_TIMEOUT};
use super::stats::v1_limit;
use super::{files, CgroupError, CgroupManager, CgroupStats, Limit, Resources, V1Hierarchies};
use crate::devices::{self, DeviceRule};

/// Hierarchies to read `cgroup.procs` from, best first; every hierarchy holds the same
/// processes, but `name=systemd` or `devices` may be all there is.
const PROCS_PREFERENCE: [&str; 4] = ["freezer", "pids", "memory", "cpu"];

/// One container's cgroup in every mounted v1 hierarchy.
#[derive(Debug, Clone)]
pub struct V1Manager {
    hierarchies: V1Hierarchies,
    path: PathBuf,
}

impl V1Manager {
    /// `path` is relative to each hierarchy's root (see [`super::CgroupDriver`]).
    pub fn new(hierarchies: V1Hierarchies, path: PathBuf) -> Self {
        Self { hierarchies, path }
    }

    /// The cgroup's directory in a controller's hierarchy, if that hierarchy is mounted.
    pub fn dir(&self, controller: &str) -> Option<PathBuf> {
        self.hierarchies
            .mount_point(controller)
            .map(|point| point.join(&self.path))
    }

    fn require(&self, controller: &'static str) -> Result<PathBuf, CgroupError> {
        self.dir(controller)
            .ok_or_else(|| CgroupError::ControllerUnavailable {
                controller,
                path: self.path.clone(),
            })
    }

    fn dirs(&self) -> Vec<PathBuf> {
        self.hierarchies
            .mount_points()
            .into_iter()
            .map(|point| point.join(&self.path))
            .collect()
    }

    /// A new cpuset cgroup starts with empty `cpuset.cpus`/`cpuset.mems`, and no task may join
    /// it until both are set; fill each empty one from its parent, top down (runc does the
    /// same; setting the parent's `cgroup.clone_children` would too, but the parent may be
    /// the user's `--cgroup-parent`, whose flags berth leaves alone).
    fn inherit_cpuset(&self, mount_point: &Path) -> Result<(), CgroupError> {
        let mut parent = mount_point.to_owned();
        for component in self.path.components() {
            let dir = parent.join(component);
            for file in ["cpuset.cpus", "cpuset.mems"] {
                if files::read(&dir.join(file))?.is_empty() {
                    let inherited = files::read(&parent.join(file))?;
                    files::write(&dir.join(file), &inherited)?;
                }
            }
            parent = dir;
        }
        Ok(())
    }

    fn apply_memory(&self, resources: &Resources) -> Result<(), CgroupError> {
        let dir = self.require("memory")?;
        if let Some(reservation) = resources.memory_reservation {
            files::write(
                &dir.join("memory.soft_limit_in_bytes"),
                &reservation.v1_value(),
            )?;
        }
        let limit_file = dir.join("memory.limit_in_bytes");
        let swap_file = dir.join("memory.memsw.limit_in_bytes");
        let mut swap = resources.memory_swap;
        if let (Some(Limit::Value(memory)), Some(Limit::Value(memory_swap))) =
            (resources.memory, swap)
        {
            if memory_swap < memory {
                return Err(CgroupError::SwapBelowMemory {
                    memory,
                    memory_swap,
                });
            }
        }
        if swap.is_some() && !swap_file.exists() {
            // Docker's behaviour without swap accounting (`swapaccount=0`): warn, discard.
            tracing::warn!(path = %swap_file.display(), "no swap accounting; memory+swap limit discarded");
            swap = None;
        }
        // Lifting the memory limit must lift memory+swap too, or the kernel refuses a memory
        // limit above memory+swap (runc does the same).
        if resources.memory == Some(Limit::Unlimited) && swap.is_none() && swap_file.exists() {
            swap = Some(Limit::Unlimited);
        }
        match (resources.memory, swap) {
            (Some(memory), Some(swap)) => {
                // The kernel keeps memory ≤ memory+swap at every moment, so the order matters:
                // raise memory+swap first when it is not below the current memory limit,
                // otherwise lower the memory limit first.
                let current = v1_limit(files::parse_u64(&limit_file, &files::read(&limit_file)?)?);
                let swap_first = match (swap, current) {
                    (Limit::Unlimited, _) => true,
                    (Limit::Value(swap), Limit::Value(current)) => swap >= current,
                    (Limit::Value(_), Limit::Unlimited) => false,
                };
                if swap_first {
                    files::write(&swap_file, &swap.v1_value())?;
                    files::write(&limit_file, &memory.v1_value())?;
                } else {
                    files::write(&limit_file, &memory.v1_value())?;
                    files::write(&swap_file, &swap.v1_value())?;
                }
            }
            (Some(memory), None) => files::write(&limit_file, &memory.v1_value())?,
            (None, Some(swap)) => files::write(&swap_file, &swap.v1_value())?,
            (None, None) => {}
        }
        Ok(())
    }

    fn apply_cpu(&self, resources: &Resources) -> Result<(), CgroupError> {
        let dir = self.require("cpu")?;
        if let Some(shares) = resources.cpu_shares {
            files::write(&dir.join("cpu.shares"), &shares.to_string())?;
        }
        // A new period can be refused (EINVAL) while the old quota does not fit it; then the
        // quota goes first (runc retries the same way).
        let period_file = dir.join("cpu.cfs_period_us");
        let mut period_after_quota = None;
        if let Some(period) = resources.cpu_period {
            match files::write(&period_file, &period.to_string()) {
                Err(CgroupError::Write { source, .. })
                    if source.raw_os_error() == Some(Errno::EINVAL as i32)
                        && resources.cpu_quota.is_some() =>
                {
                    period_after_quota = Some(period);
                }
                result => result?,
            }
        }
        if let Some(quota) = resources.cpu_quota {
            files::write(&dir.join("cpu.cfs_quota_us"), &quota.v1_value())?;
        }
        if let Some(period) = period_after_quota {
            files::write(&period_file, &period.to_string())?;
        }
        if let Some(period) = resources.cpu_realtime_period {
            files::write(&dir.join("cpu.rt_period_us"), &period.to_string())?;
        }
        if let Some(runtime) = resources.cpu_realtime_runtime {
            files::write(&dir.join("cpu.rt_runtime_us"), &runtime.to_string())?;
        }
        Ok(())
    }

    /// The device rules, written as [`devices::v1_writes`] lays them out. Without a devices
    /// hierarchy only "allow everything" can be honoured; anything else fails rather than
    /// leave the container with every device.
    fn apply_devices(&self, rules: &[DeviceRule]) -> Result<(), CgroupError> {
        let Some(dir) = self.dir("devices") else {
            if devices::allows_everything(rules) {
                return Ok(());
            }
            return Err(CgroupError::ControllerUnavailable {
                controller: "devices",
                path: self.path.clone(),
            });
        };
        for (file, line) in devices::v1_writes(rules) {
            files::write(&dir.join(file.name()), &line)?;
        }
        Ok(())
    }

    fn freezer_state(dir: &Path) -> Result<Option<String>, CgroupError> {
        let state = files::read(&dir.join("freezer.state"))?;
        Ok((state != "FROZEN").then_some(state))
    }
}

impl CgroupManager for V1Manager {
    fn path(&self) -> &Path {
        &self.path
    }

    fn create(&self, resources: &Resources) -> Result<(), CgroupError> {
        for dir in self.dirs() {
            files::create_dir(&dir)?;
        }
        if let Some(point) = self.hierarchies.mount_point("cpuset") {
            self.inherit_cpuset(point)?;
        }
        self.apply(resources)
    }

    fn add_process(&self, pid: Pid) -> Result<(), CgroupError> {
        for dir in self.dirs() {
            files::write(&dir.join("cgroup.procs"), &pid.to_string())?;
        }
        Ok(())
    }

    fn apply(&self, resources: &Resources) -> Result<(), CgroupError> {
        if let Some(rules) = &resources.devices {
            self.apply_devices(rules)?;
        }
        if resources.wants_memory() {
            self.apply_memory(resources)?;
        }
        if resources.wants_cpu() {
            self.apply_cpu(resources)?;
        }
        if resources.wants_cpuset() {
            let dir = self.require("cpuset")?;
            if let Some(cpus) = &resources.cpuset_cpus {
                files::write(&dir.join("cpuset.cpus"), cpus)?;
            }
            if let Some(mems) = &resources.cpuset_mems {
                files::write(&dir.join("cpuset.mems"), mems)?;
            }
        }
        if let Some(limit) = resources.pids_limit {
            // pids.max takes "max", not -1, even on v1.
            files::write(&self.require("pids")?.join("pids.max"), &limit.v2_value())?;
        }
        if let Some(weight) = resources.blkio_weight {
            // CFQ's blkio.weight is gone from newer kernels; BFQ offers blkio.bfq.weight.
            let dir = self.require("blkio")?;
            let legacy = dir.join("blkio.weight");
            let file = if legacy.exists() {
                legacy
            } else {
                dir.join("blkio.bfq.weight")
            };
            files::write(&file, &weight.to_string())?;
        }
        Ok(())
    }

    fn freeze(&self) -> Result<(), CgroupError> {
        let dir = self.require("freezer")?;
        let state_file = dir.join("freezer.state");
        files::write(&state_file, "FROZEN")?;
        // A freeze can stall on a task that keeps another from freezing (a vfork parent, say);
        // thawing briefly and freezing again gets it unstuck, as runc does.
        let result = wait_for_state(
            &dir,
            "freeze",
            FREEZE_TIMEOUT,
            || Self::freezer_state(&dir),
            || {
                files::write(&state_file, "THAWED")?;
                thread::sleep(Duration::from_millis(10));
                files::write(&state_file, "FROZEN")
            },
        );
        if result.is_err() {
            // Leave the container running rather than half frozen.
            if let Err(error) = files::write(&state_file, "THAWED") {
                tracing::warn!(%error, "failed to thaw after a stuck freeze");
            }
        }
        result
    }

    fn thaw(&self) -> Result<(), CgroupError> {
        let dir = self.require("freezer")?;
        files::write(&dir.join("freezer.state"), "THAWED")?;
        wait_for_state(
            &dir,
            "thaw",
            FREEZE_TIMEOUT,
            || {
                let state = files::read(&dir.join("freezer.state"))?;
                Ok((state != "THAWED").then_some(state))
            },
            || Ok(()),
        )
    }

    fn oom_kills(&self) -> Result<Option<u64>, CgroupError> {
        let Some(dir) = self.dir("memory") else {
            return Ok(None);
        };
        let oom_file = dir.join("memory.oom_control");
        match files::read_optional(&oom_file)? {
            Some(text) => files::keyed_value(&oom_file, &text, "oom_kill"),
            None => Ok(None),
        }
    }

    fn stats(&self) -> Result<CgroupStats, CgroupError> {
        let mut stats = CgroupStats::default();
        if let Some(dir) = self.dir("memory") {
            stats.memory_usage = files::read_u64_optional(&dir.join("memory.usage_in_bytes"))?;
            stats.memory_limit =
                files::read_u64_optional(&dir.join("memory.limit_in_bytes"))?.map(v1_limit);
            let stat_file = dir.join("memory.stat");
            if let Some(text) = files::read_optional(&stat_file)? {
                stats.memory_inactive_file =
                    files::keyed_value(&stat_file, &text, "total_inactive_file")?;
            }
            let oom_file = dir.join("memory.oom_control");
            if let Some(text) = files::read_optional(&oom_file)? {
                stats.oom_kills = files::keyed_value(&oom_file, &text, "oom_kill")?;
            }
        }
        if let Some(dir) = self.dir("cpuacct") {
            stats.cpu_usage_ns = files::read_u64_optional(&dir.join("cpuacct.usage"))?;
        }
        if let Some(dir) = self.dir("pids") {
            stats.pids_current = files::read_u64_optional(&dir.join("pids.current"))?;
        }
        if let Some(dir) = self.dir("blkio") {
            let file = dir.join("blkio.throttle.io_service_bytes_recursive");
            stats.block_io = files::read_optional(&file)?
                .as_deref()
                .map(super::stats::v1_block_io);
        }
        Ok(stats)
    }

    fn processes(&self) -> Result<Vec<Pid>, CgroupError> {
        let dir = PROCS_PREFERENCE
            .iter()
            .find_map(|controller| self.dir(controller))
            .or_else(|| self.dirs().into_iter().next());
        let Some(dir) = dir else {
            return Ok(Vec::new());
        };
        if !dir.exists() {
            return Ok(Vec::new());
        }
        files::read_pids(&dir.join("cgroup.procs"))
    }

    fn kill_all(&self, signal: Signal) -> Result<(), CgroupError> {
        // v1 has no cgroup.kill. For SIGKILL, freeze first so nothing forks between listing
        // and signalling, then thaw so the frozen tasks can die (runc does the same).
        let freezer = self.dir("freezer").filter(|dir| dir.exists());
        if signal != Signal::SIGKILL || freezer.is_none() {
            return signal_each(&self.processes()?, signal);
        }
        if let Err(error) = self.freeze() {
            tracing::warn!(%error, "killing without freezing first");
        }
        let killed = self.processes().and_then(|pids| signal_each(&pids, signal));
        let thawed = self.thaw();
        killed.and(thawed)
    }

    fn delete(&self) -> Result<(), CgroupError> {
        for dir in self.dirs() {
            files::remove_dir(&dir)?;
        }
        Ok(())
    }

    fn open_for_clone_into(&self) -> Result<Option<OwnedFd>, CgroupError> {
        // CLONE_INTO_CGROUP takes a v2 cgroup only.
        Ok(None)
    }

    fn open_self_join(&self) -> Result<Vec<OwnedFd>, CgroupError> {
        self.dirs()
            .iter()
            .map(|dir| files::open_for_write(&dir.join("tasks")))
            .collect()
    }
}
