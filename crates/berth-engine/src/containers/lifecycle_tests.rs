//! The engine's lifecycle on a recording fake runtime: what `pause`,
//! `stop` and the repair of half-done steps ask of the runtime, and the
//! states they leave, without a kernel.

use std::sync::{Arc, Mutex};

use berth_runtime::cgroups::{CgroupStats, Resources};
use berth_runtime::{ContainerRef, NetworkIo, ProcessSpec, Runtime, RuntimeError, Stdio};
use berth_store::ContainerRow;
use nix::sys::signal::Signal;
use nix::unistd::Pid;

use super::lookup::find_container;
use super::record::{ContainerRecord, RunSettings};
use super::state::{ContainerState, Status};
use crate::{Engine, EngineConfig};

/// Records every call as `verb id`.
#[derive(Debug, Default)]
struct RecordingRuntime {
    calls: Mutex<Vec<String>>,
}

impl RecordingRuntime {
    fn record(&self, verb: &str, container: ContainerRef<'_>) {
        let short = &container.id[..container.id.len().min(4)];
        self.calls.lock().unwrap().push(format!("{verb} {short}"));
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
}

impl Runtime for RecordingRuntime {
    fn name(&self) -> &'static str {
        "recording"
    }
    fn signal(&self, container: ContainerRef<'_>, signal: Signal) -> Result<(), RuntimeError> {
        self.record(&format!("signal {signal}"), container);
        Ok(())
    }
    fn pause(&self, container: ContainerRef<'_>) -> Result<(), RuntimeError> {
        self.record("pause", container);
        Ok(())
    }
    fn resume(&self, container: ContainerRef<'_>) -> Result<(), RuntimeError> {
        self.record("resume", container);
        Ok(())
    }
    fn processes(&self, container: ContainerRef<'_>) -> Result<Vec<i32>, RuntimeError> {
        self.record("processes", container);
        Ok(vec![container.pid])
    }
    fn stats(&self, container: ContainerRef<'_>) -> Result<CgroupStats, RuntimeError> {
        self.record("stats", container);
        Ok(CgroupStats::default())
    }
    fn network_io(&self, container: ContainerRef<'_>) -> NetworkIo {
        self.record("network_io", container);
        NetworkIo::default()
    }
    fn update(&self, container: ContainerRef<'_>, _: &Resources) -> Result<(), RuntimeError> {
        self.record("update", container);
        Ok(())
    }
    fn exec(
        &self,
        container: ContainerRef<'_>,
        _: &ProcessSpec,
        _: Stdio,
    ) -> Result<Pid, RuntimeError> {
        self.record("exec", container);
        Err(RuntimeError::NotRunning {
            id: container.id.to_owned(),
        })
    }
    fn root(&self, container: ContainerRef<'_>) -> std::path::PathBuf {
        self.record("root", container);
        std::path::PathBuf::from("/nonexistent")
    }
    fn delete(&self, container: ContainerRef<'_>) -> Result<(), RuntimeError> {
        self.record("delete", container);
        Ok(())
    }
}

/// A pid no process has (above the kernel's pid_max limit).
const NO_PROCESS: i32 = 1 << 30;

struct Fixture {
    engine: Engine,
    runtime: Arc<RecordingRuntime>,
    _root: tempfile::TempDir,
    _run_root: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let root = tempfile::tempdir().unwrap();
    let run_root = tempfile::tempdir().unwrap();
    let runtime = Arc::new(RecordingRuntime::default());
    let mut config = EngineConfig::new(root.path(), run_root.path());
    config.runtime = runtime.clone();
    let engine = Engine::with_kernel(
        config,
        Box::new(berth_net::kernel::RecordingKernel::default()),
    )
    .unwrap();
    Fixture {
        engine,
        runtime,
        _root: root,
        _run_root: run_root,
    }
}

/// Stores a container in `state` (no image: lookups never need one).
fn store_container(
    fixture: &mut Fixture,
    name: &str,
    state: ContainerState,
    auto_remove: bool,
) -> String {
    let id = format!(
        "{:0<64}",
        name.bytes().map(|b| format!("{b:02x}")).collect::<String>()
    );
    let record = ContainerRecord {
        id: id.clone(),
        name: name.to_owned(),
        image_id: String::new(),
        image_name: "busybox".to_owned(),
        created: super::state::now(),
        run: RunSettings {
            auto_remove,
            ..RunSettings::default()
        },
        config: serde_json::json!({}),
        host_config: serde_json::json!({}),
    };
    let store = fixture.engine.store_mut();
    store
        .add_image(&berth_store::NewImage {
            id: berth_types::Digest::of_bytes(name.as_bytes()),
            manifest_digest: None,
            created: None,
            layers: vec![],
            blobs: vec![],
            tags: vec![],
            repo_digests: vec![],
        })
        .unwrap();
    store
        .insert_container(&ContainerRow {
            id: id.clone(),
            name: name.to_owned(),
            image_id: berth_types::Digest::of_bytes(name.as_bytes()).to_string(),
            created: record.created.clone(),
            record: serde_json::to_string(&record).unwrap(),
            state: serde_json::to_string(&state).unwrap(),
        })
        .unwrap();
    id
}

fn running(pid: i32, monitor_pid: i32, monitor_start_time: u64) -> ContainerState {
    ContainerState {
        status: Status::Running,
        pid,
        monitor_pid,
        monitor_start_time,
        ..ContainerState::default()
    }
}

fn look_up(fixture: &Fixture, name: &str) -> Option<super::Container> {
    let config = fixture.engine.config().clone();
    find_container(fixture.engine.store(), &config, name).ok()
}

#[test]
fn a_container_whose_monitor_died_is_deleted_from_its_runtime_and_shown_exited() {
    let mut fixture = fixture();
    let id = store_container(
        &mut fixture,
        "crashed",
        running(NO_PROCESS, NO_PROCESS, 0),
        false,
    );
    let container = look_up(&fixture, "crashed").expect("kept without --rm");
    assert_eq!(
        fixture.runtime.calls(),
        vec![format!("delete {}", &id[..4])]
    );
    assert_eq!(container.state.status, Status::Exited);
    assert_eq!((container.state.exit_code, container.state.pid), (137, 0));
    assert_eq!(container.state.error, super::reconcile::MONITOR_DIED);
    // Repaired once: the next look leaves the runtime alone.
    look_up(&fixture, "crashed").unwrap();
    assert_eq!(fixture.runtime.calls().len(), 1);
}

#[test]
fn an_rm_container_whose_monitor_died_is_removed() {
    let mut fixture = fixture();
    store_container(
        &mut fixture,
        "gone",
        running(NO_PROCESS, NO_PROCESS, 0),
        true,
    );
    assert!(
        look_up(&fixture, "gone").is_none(),
        "--rm honoured by the repair"
    );
    assert_eq!(
        fixture.runtime.calls().len(),
        1,
        "{:?}",
        fixture.runtime.calls()
    );
    assert!(fixture.runtime.calls()[0].starts_with("delete"));
}

#[test]
fn a_container_with_a_live_monitor_is_left_alone() {
    let mut fixture = fixture();
    let me = std::process::id() as i32;
    let started = super::state::process_start_time(me).unwrap();
    store_container(&mut fixture, "alive", running(me, me, started), false);
    let container = look_up(&fixture, "alive").unwrap();
    assert_eq!(container.state.status, Status::Running);
    assert!(fixture.runtime.calls().is_empty());
}

#[test]
fn a_freeze_left_by_a_killed_commit_is_thawed() {
    let mut fixture = fixture();
    let me = std::process::id() as i32;
    let started = super::state::process_start_time(me).unwrap();
    let paused = ContainerState {
        status: Status::Paused,
        ..running(me, me, started)
    };
    let id = store_container(&mut fixture, "frozen", paused, false);
    let config = fixture.engine.config().clone();
    let paths = super::paths::ContainerPaths::new(&config.root, &config.run_root, &id);
    fs_err::create_dir_all(&paths.runtime).unwrap();
    // The intent of a commit whose process (pid 0: none) is gone.
    fs_err::write(paths.runtime.join("commit-0-1-0"), br#"{"froze":true}"#).unwrap();
    let container = look_up(&fixture, "frozen").unwrap();
    assert_eq!(
        fixture.runtime.calls(),
        vec![format!("resume {}", &id[..4])]
    );
    assert_eq!(container.state.status, Status::Running);
    assert!(!paths.runtime.join("commit-0-1-0").exists());
}

#[test]
fn pause_and_unpause_go_through_the_runtime_and_follow_the_lifecycle() {
    let mut fixture = fixture();
    let me = std::process::id() as i32;
    let started = super::state::process_start_time(me).unwrap();
    let id = store_container(&mut fixture, "p", running(me, me, started), false);
    let short = &id[..4];
    super::pause_container(&mut fixture.engine, "p").unwrap();
    assert_eq!(look_up(&fixture, "p").unwrap().state.status, Status::Paused);
    let again = super::pause_container(&mut fixture.engine, "p").unwrap_err();
    assert_eq!(
        again.to_string(),
        format!("Container {id} is already paused")
    );
    super::unpause_container(&mut fixture.engine, "p").unwrap();
    assert_eq!(
        look_up(&fixture, "p").unwrap().state.status,
        Status::Running
    );
    assert_eq!(
        fixture.runtime.calls(),
        vec![format!("pause {short}"), format!("resume {short}")]
    );
}

#[test]
fn kill_signals_through_the_runtime() {
    let mut fixture = fixture();
    let me = std::process::id() as i32;
    let started = super::state::process_start_time(me).unwrap();
    let id = store_container(&mut fixture, "k", running(NO_PROCESS, me, started), false);
    super::kill_container(&mut fixture.engine, "k", "USR1").unwrap();
    assert_eq!(
        fixture.runtime.calls(),
        vec![format!("signal SIGUSR1 {}", &id[..4])]
    );
}

#[test]
fn a_stopped_container_is_not_asked_for_stats_or_processes() {
    let mut fixture = fixture();
    let stopped = ContainerState {
        status: Status::Exited,
        ..ContainerState::default()
    };
    let id = store_container(&mut fixture, "s", stopped, false);
    let error = super::container_processes(&fixture.engine, "s").unwrap_err();
    assert_eq!(error.to_string(), format!("Container {id} is not running"));
    let container = look_up(&fixture, "s").unwrap();
    assert_eq!(
        super::container_network_io(&fixture.engine, &container),
        NetworkIo::default()
    );
    assert!(fixture.runtime.calls().is_empty());
}

#[test]
fn a_start_record_nobody_holds_is_repaired_as_a_killed_start() {
    let mut fixture = fixture();
    let created = ContainerState::default();
    let id = store_container(&mut fixture, "halfstarted", created, false);
    let config = fixture.engine.config().clone();
    let paths = super::paths::ContainerPaths::new(&config.root, &config.run_root, &id);
    berth_store::permissions::create_private_directory_all(&paths.runtime).unwrap();
    // A start that took its record and was killed before its monitor
    // recorded anything: the file stays, its lock went with the process.
    let record = super::monitor::lock::MonitorLock::take_for_start(&paths)
        .unwrap()
        .expect("no other start");
    drop(record);
    let container = look_up(&fixture, "halfstarted").unwrap();
    assert_eq!(
        (container.state.status, container.state.exit_code),
        (Status::Exited, 137)
    );
    assert_eq!(
        fixture.runtime.calls(),
        vec![format!("delete {}", &id[..4])]
    );
    // The record is gone: the next look repairs nothing.
    look_up(&fixture, "halfstarted").unwrap();
    assert_eq!(fixture.runtime.calls().len(), 1);
}

#[test]
fn a_removal_whose_remover_died_is_finished() {
    let mut fixture = fixture();
    let removing = ContainerState {
        status: Status::Removing,
        ..ContainerState::default()
    };
    let id = store_container(&mut fixture, "halfremoved", removing, false);
    let config = fixture.engine.config().clone();
    let paths = super::paths::ContainerPaths::new(&config.root, &config.run_root, &id);
    fs_err::create_dir_all(&paths.directory).unwrap();
    assert!(
        look_up(&fixture, "halfremoved").is_none(),
        "removal finished"
    );
    assert!(fixture.engine.store().container(&id).unwrap().is_none());
    assert!(!paths.directory.exists());
}
