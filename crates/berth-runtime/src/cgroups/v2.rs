//! cgroup v2: one directory in the unified hierarchy. Controllers are switched on for
//! children through each ancestor's `cgroup.subtree_control`, and freezing and killing are
//! part of the core (`cgroup.freeze`, `cgroup.kill`) rather than controllers.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use fs_err::os::unix::fs::OpenOptionsExt;
use nix::sys::signal::Signal;
use nix::unistd::Pid;

use super::signal::{signal_each, wait_for_state, FREEZE_TIMEOUT};
use super::{
    blkio_weight_to_io_weight, cpu_shares_to_weight, files, CgroupError, CgroupManager,
    CgroupStats, Limit, Resources,
};
use crate::devices::{self, bpf, DeviceRule};

/// Controllers enabled down to the container, when the parent offers them: the ones
/// `Resources` and `CgroupStats` use. Others (hugetlb, rdma, misc) are left as they are, so
/// that creating a container changes no more of the hierarchy than it needs.
const CONTROLLERS: [&str; 5] = ["cpu", "cpuset", "io", "memory", "pids"];

/// One container's cgroup in the unified hierarchy.
#[derive(Debug, Clone)]
pub struct V2Manager {
    root: PathBuf,
    path: PathBuf,
}

impl V2Manager {
    /// `root` is the unified hierarchy's mount point; `path` is relative to it.
    pub fn new(root: PathBuf, path: PathBuf) -> Self {
        Self { root, path }
    }

    /// The cgroup's directory.
    pub fn dir(&self) -> PathBuf {
        self.root.join(&self.path)
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir().join(name)
    }

    /// Fails unless `controller` is enabled for this cgroup (listed in its
    /// `cgroup.controllers`), so a missing controller reads as such and not as a missing file.
    fn require(&self, controller: &'static str) -> Result<(), CgroupError> {
        let enabled = files::read(&self.file("cgroup.controllers"))?;
        if enabled.split_whitespace().any(|name| name == controller) {
            Ok(())
        } else {
            Err(CgroupError::ControllerUnavailable {
                controller,
                path: self.dir(),
            })
        }
    }

    /// Enables in `dir`'s `cgroup.subtree_control` every wanted controller that `dir` has and
    /// has not yet passed down. One write for all; if the kernel refuses the batch (one
    /// controller can be busy, e.g. cpu with realtime tasks in the parent), each on its own,
    /// keeping what works: a resource that then needs a missing controller fails in `apply`.
    fn enable_controllers(dir: &Path) -> Result<(), CgroupError> {
        let available = files::read(&dir.join("cgroup.controllers"))?;
        let subtree_file = dir.join("cgroup.subtree_control");
        let enabled = files::read(&subtree_file)?;
        let missing: Vec<String> = available
            .split_whitespace()
            .filter(|name| CONTROLLERS.contains(name))
            .filter(|name| !enabled.split_whitespace().any(|done| done == *name))
            .map(|name| format!("+{name}"))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        if files::write(&subtree_file, &missing.join(" ")).is_ok() {
            return Ok(());
        }
        for controller in &missing {
            if let Err(error) = files::write(&subtree_file, controller) {
                tracing::warn!(%error, "controller left disabled");
            }
        }
        Ok(())
    }

    fn apply_memory(&self, resources: &Resources) -> Result<(), CgroupError> {
        self.require("memory")?;
        if let Some(reservation) = resources.memory_reservation {
            files::write(&self.file("memory.low"), &reservation.v2_value())?;
        }
        if let Some(memory) = resources.memory {
            files::write(&self.file("memory.max"), &memory.v2_value())?;
        }
        if let Some(memory_swap) = resources.memory_swap {
            let swap_file = self.file("memory.swap.max");
            if !swap_file.exists() {
                tracing::warn!(path = %swap_file.display(), "no swap accounting; memory+swap limit discarded");
                return Ok(());
            }
            let swap = swap_only(resources.memory, memory_swap)?;
            files::write(&swap_file, &swap.v2_value())?;
        }
        Ok(())
    }

    fn apply_cpu(&self, resources: &Resources) -> Result<(), CgroupError> {
        if resources.cpu_realtime_period.is_some() || resources.cpu_realtime_runtime.is_some() {
            return Err(CgroupError::UnsupportedOnV2 {
                resource: "realtime cpu scheduling (--cpu-rt-period, --cpu-rt-runtime)",
            });
        }
        self.require("cpu")?;
        if let Some(shares) = resources.cpu_shares {
            let weight = cpu_shares_to_weight(shares);
            files::write(&self.file("cpu.weight"), &weight.to_string())?;
        }
        let max_file = self.file("cpu.max");
        let value = match (resources.cpu_quota, resources.cpu_period) {
            (Some(quota), Some(period)) => Some(format!("{} {period}", quota.v2_value())),
            // The kernel accepts the quota alone and keeps the period.
            (Some(quota), None) => Some(quota.v2_value()),
            // The period alone must come with the current quota.
            (None, Some(period)) => {
                let current = files::read(&max_file)?;
                let quota = current.split_whitespace().next().unwrap_or("max");
                Some(format!("{quota} {period}"))
            }
            (None, None) => None,
        };
        if let Some(value) = value {
            files::write(&max_file, &value)?;
        }
        Ok(())
    }

    /// Puts the device program for `rules` on the cgroup and takes off the ones it had, so
    /// that a retried create or an update leaves exactly one (the kernel runs every program
    /// attached with `BPF_F_ALLOW_MULTI`, this cgroup's and its parents', and all must allow).
    /// "Allow everything" needs no program.
    fn apply_devices(&self, rules: &[DeviceRule]) -> Result<(), CgroupError> {
        let dir = self.dir();
        let failed = |action: &'static str| {
            let path = dir.clone();
            move |source| CgroupError::DeviceProgram {
                action,
                path,
                source,
            }
        };
        let cgroup = self
            .open_for_clone_into()?
            .ok_or_else(|| CgroupError::OpenDir {
                path: dir.clone(),
                source: std::io::Error::from_raw_os_error(libc::ENOTDIR),
            })?;
        let everything = devices::allows_everything(rules);
        let previous = match bpf::attached(cgroup.as_fd()) {
            Ok(previous) => previous,
            // A kernel without cgroup BPF has nothing attached and can restrict nothing.
            Err(_) if everything => return Ok(()),
            Err(source) => return Err(failed("query")(source)),
        };
        if !everything {
            let program = bpf::load(&bpf::device_program(rules)).map_err(failed("load"))?;
            bpf::attach(cgroup.as_fd(), program.as_fd()).map_err(failed("attach"))?;
        }
        for id in previous {
            let program = bpf::program_by_id(id).map_err(failed("find"))?;
            bpf::detach(cgroup.as_fd(), program.as_fd()).map_err(failed("detach"))?;
        }
        Ok(())
    }

    fn frozen_state(&self, want: &str) -> Result<Option<String>, CgroupError> {
        let events_file = self.file("cgroup.events");
        let events = files::read(&events_file)?;
        let frozen = events
            .lines()
            .find_map(|line| line.strip_prefix("frozen "))
            .unwrap_or("0")
            .trim();
        Ok((frozen != want).then(|| format!("frozen {frozen}")))
    }
}

/// Docker's `--memory-swap` is memory plus swap; v2's `memory.swap.max` is the swap part
/// alone (runc and crun convert the same way).
fn swap_only(memory: Option<Limit>, memory_swap: Limit) -> Result<Limit, CgroupError> {
    match (memory, memory_swap) {
        (_, Limit::Unlimited) => Ok(Limit::Unlimited),
        (Some(Limit::Value(memory)), Limit::Value(memory_swap)) => memory_swap
            .checked_sub(memory)
            .map(Limit::Value)
            .ok_or(CgroupError::SwapBelowMemory {
                memory,
                memory_swap,
            }),
        (None | Some(Limit::Unlimited), Limit::Value(_)) => Err(CgroupError::SwapWithoutMemory),
    }
}

impl CgroupManager for V2Manager {
    fn path(&self) -> &Path {
        &self.path
    }

    fn create(&self, resources: &Resources) -> Result<(), CgroupError> {
        let mut current = self.root.clone();
        for component in self.path.components() {
            Self::enable_controllers(&current)?;
            current.push(component);
            files::create_dir(&current)?;
        }
        self.apply(resources)
    }

    fn add_process(&self, pid: Pid) -> Result<(), CgroupError> {
        files::write(&self.file("cgroup.procs"), &pid.to_string())
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
            self.require("cpuset")?;
            if let Some(cpus) = &resources.cpuset_cpus {
                files::write(&self.file("cpuset.cpus"), cpus)?;
            }
            if let Some(mems) = &resources.cpuset_mems {
                files::write(&self.file("cpuset.mems"), mems)?;
            }
        }
        if let Some(limit) = resources.pids_limit {
            self.require("pids")?;
            files::write(&self.file("pids.max"), &limit.v2_value())?;
        }
        if let Some(weight) = resources.blkio_weight {
            self.require("io")?;
            // BFQ takes v1's 1..=1000 scale as it is; io.weight needs converting.
            let bfq = self.file("io.bfq.weight");
            if bfq.exists() {
                files::write(&bfq, &weight.to_string())?;
            } else {
                let weight = blkio_weight_to_io_weight(weight);
                files::write(&self.file("io.weight"), &weight.to_string())?;
            }
        }
        Ok(())
    }

    fn freeze(&self) -> Result<(), CgroupError> {
        let freeze_file = self.file("cgroup.freeze");
        files::write(&freeze_file, "1")?;
        let result = wait_for_state(
            &self.dir(),
            "freeze",
            FREEZE_TIMEOUT,
            || self.frozen_state("1"),
            || Ok(()),
        );
        if result.is_err() {
            if let Err(error) = files::write(&freeze_file, "0") {
                tracing::warn!(%error, "failed to thaw after a stuck freeze");
            }
        }
        result
    }

    fn thaw(&self) -> Result<(), CgroupError> {
        files::write(&self.file("cgroup.freeze"), "0")?;
        wait_for_state(
            &self.dir(),
            "thaw",
            FREEZE_TIMEOUT,
            || self.frozen_state("0"),
            || Ok(()),
        )
    }

    fn oom_kills(&self) -> Result<Option<u64>, CgroupError> {
        let events_file = self.file("memory.events");
        match files::read_optional(&events_file)? {
            Some(text) => files::keyed_value(&events_file, &text, "oom_kill"),
            None => Ok(None),
        }
    }

    fn stats(&self) -> Result<CgroupStats, CgroupError> {
        let mut stats = CgroupStats {
            memory_usage: files::read_u64_optional(&self.file("memory.current"))?,
            pids_current: files::read_u64_optional(&self.file("pids.current"))?,
            ..CgroupStats::default()
        };
        let max_file = self.file("memory.max");
        stats.memory_limit = match files::read_optional(&max_file)?.as_deref() {
            None => None,
            Some("max") => Some(Limit::Unlimited),
            Some(value) => Some(Limit::Value(files::parse_u64(&max_file, value)?)),
        };
        let stat_file = self.file("memory.stat");
        if let Some(text) = files::read_optional(&stat_file)? {
            stats.memory_inactive_file = files::keyed_value(&stat_file, &text, "inactive_file")?;
        }
        let events_file = self.file("memory.events");
        if let Some(text) = files::read_optional(&events_file)? {
            stats.oom_kills = files::keyed_value(&events_file, &text, "oom_kill")?;
        }
        let cpu_file = self.file("cpu.stat");
        if let Some(text) = files::read_optional(&cpu_file)? {
            stats.cpu_usage_ns = files::keyed_value(&cpu_file, &text, "usage_usec")?
                .map(|usec| usec.saturating_mul(1000));
        }
        stats.block_io = files::read_optional(&self.file("io.stat"))?
            .as_deref()
            .map(super::stats::v2_block_io);
        Ok(stats)
    }

    fn processes(&self) -> Result<Vec<Pid>, CgroupError> {
        if !self.dir().exists() {
            return Ok(Vec::new());
        }
        files::read_pids(&self.file("cgroup.procs"))
    }

    fn kill_all(&self, signal: Signal) -> Result<(), CgroupError> {
        // cgroup.kill (Linux 5.14) kills every task atomically, forks included, but only
        // with SIGKILL; other signals and older kernels go process by process.
        let kill_file = self.file("cgroup.kill");
        if signal == Signal::SIGKILL && kill_file.exists() {
            return files::write(&kill_file, "1");
        }
        signal_each(&self.processes()?, signal)
    }

    fn delete(&self) -> Result<(), CgroupError> {
        files::remove_dir(&self.dir())
    }

    fn open_for_clone_into(&self) -> Result<Option<OwnedFd>, CgroupError> {
        let dir = self.dir();
        let file = fs_err::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(&dir)
            .map_err(|source| CgroupError::OpenDir { path: dir, source })?;
        Ok(Some(OwnedFd::from(file)))
    }

    fn open_self_join(&self) -> Result<Vec<OwnedFd>, CgroupError> {
        Ok(vec![files::open_for_write(
            &self.dir().join("cgroup.procs"),
        )?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swap_is_converted_to_the_swap_part_only() {
        let gib = 1 << 30;
        assert_eq!(
            swap_only(Some(Limit::Value(gib)), Limit::Value(3 * gib)).unwrap(),
            Limit::Value(2 * gib)
        );
        assert_eq!(
            swap_only(Some(Limit::Value(gib)), Limit::Value(gib)).unwrap(),
            Limit::Value(0)
        );
        assert_eq!(swap_only(None, Limit::Unlimited).unwrap(), Limit::Unlimited);
        assert!(matches!(
            swap_only(Some(Limit::Value(2 * gib)), Limit::Value(gib)),
            Err(CgroupError::SwapBelowMemory { .. })
        ));
        assert!(matches!(
            swap_only(None, Limit::Value(gib)),
            Err(CgroupError::SwapWithoutMemory)
        ));
    }
}
