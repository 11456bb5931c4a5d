//! A [`CgroupManager`] that touches no kernel: it records each call, for tests of the code
//! that drives a container's lifecycle (engine, monitor).

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use nix::sys::signal::Signal;
use nix::unistd::Pid;

use super::{CgroupError, CgroupManager, CgroupStats, Resources};

/// One call made on a [`RecordingCgroupManager`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupCall {
    Create(Resources),
    AddProcess(Pid),
    Apply(Resources),
    Freeze,
    Thaw,
    Stats,
    Processes,
    KillAll(Signal),
    Delete,
    OpenForCloneInto,
    OpenSelfJoin,
}

/// Records calls; `stats()` and `processes()` answer with what the test set.
#[derive(Debug, Default)]
pub struct RecordingCgroupManager {
    path: PathBuf,
    state: Mutex<FakeState>,
}

#[derive(Debug, Default)]
struct FakeState {
    calls: Vec<CgroupCall>,
    stats: CgroupStats,
    processes: Vec<Pid>,
}

impl RecordingCgroupManager {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            state: Mutex::default(),
        }
    }

    /// The calls made so far, in order.
    pub fn calls(&self) -> Vec<CgroupCall> {
        self.lock().calls.clone()
    }

    pub fn set_stats(&self, stats: CgroupStats) {
        self.lock().stats = stats;
    }

    pub fn set_processes(&self, processes: Vec<Pid>) {
        self.lock().processes = processes;
    }

    fn lock(&self) -> MutexGuard<'_, FakeState> {
        // A panicking test thread must not hide the calls from the assertion that follows.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn record(&self, call: CgroupCall) {
        self.lock().calls.push(call);
    }
}

impl CgroupManager for RecordingCgroupManager {
    fn path(&self) -> &Path {
        &self.path
    }

    fn create(&self, resources: &Resources) -> Result<(), CgroupError> {
        self.record(CgroupCall::Create(resources.clone()));
        Ok(())
    }

    fn add_process(&self, pid: Pid) -> Result<(), CgroupError> {
        self.record(CgroupCall::AddProcess(pid));
        let mut state = self.lock();
        if !state.processes.contains(&pid) {
            state.processes.push(pid);
        }
        Ok(())
    }

    fn apply(&self, resources: &Resources) -> Result<(), CgroupError> {
        self.record(CgroupCall::Apply(resources.clone()));
        Ok(())
    }

    fn freeze(&self) -> Result<(), CgroupError> {
        self.record(CgroupCall::Freeze);
        Ok(())
    }

    fn thaw(&self) -> Result<(), CgroupError> {
        self.record(CgroupCall::Thaw);
        Ok(())
    }

    fn stats(&self) -> Result<CgroupStats, CgroupError> {
        self.record(CgroupCall::Stats);
        Ok(self.lock().stats.clone())
    }

    fn processes(&self) -> Result<Vec<Pid>, CgroupError> {
        self.record(CgroupCall::Processes);
        Ok(self.lock().processes.clone())
    }

    fn kill_all(&self, signal: Signal) -> Result<(), CgroupError> {
        self.record(CgroupCall::KillAll(signal));
        Ok(())
    }

    fn delete(&self) -> Result<(), CgroupError> {
        self.record(CgroupCall::Delete);
        Ok(())
    }

    fn open_for_clone_into(&self) -> Result<Option<OwnedFd>, CgroupError> {
        self.record(CgroupCall::OpenForCloneInto);
        Ok(None)
    }

    /// Nothing to join: a fake has no cgroupfs, so launches with it place no process.
    fn open_self_join(&self) -> Result<Vec<OwnedFd>, CgroupError> {
        self.record(CgroupCall::OpenSelfJoin);
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_calls_in_order() {
        let fake = RecordingCgroupManager::new("berth/abc");
        let manager: &dyn CgroupManager = &fake;
        manager.create(&Resources::default()).unwrap();
        manager.add_process(Pid::from_raw(42)).unwrap();
        manager.kill_all(Signal::SIGTERM).unwrap();
        assert_eq!(manager.processes().unwrap(), vec![Pid::from_raw(42)]);
        assert_eq!(
            fake.calls(),
            vec![
                CgroupCall::Create(Resources::default()),
                CgroupCall::AddProcess(Pid::from_raw(42)),
                CgroupCall::KillAll(Signal::SIGTERM),
                CgroupCall::Processes,
            ]
        );
    }
}
