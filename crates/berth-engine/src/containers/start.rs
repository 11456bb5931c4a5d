//! `start`: write /etc files, start the monitor (`monitor/launch.rs`), and
//! wait until the container's program is running (or report why not).

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use berth_runtime::rootfs::mount_rootfs;

use super::error::ContainerError;
use super::lookup::{find_container, Container};
use super::monitor::lock::MonitorLock;
use super::monitor::protocol::{MonitorMessage, MonitorReceiver};
use super::monitor::{launch, Attachment};
use super::paths::ContainerPaths;
use super::spec::write_etc_files;
use crate::{Engine, EngineError};

/// A started container; with an attachment, `wait_exit` gives its status.
pub struct StartedContainer {
    pub id: String,
    pub pid: i32,
    pub monitor_pid: i32,
    receiver: MonitorReceiver,
    /// False for a container that was running already: no monitor talks
    /// to this one, and a closed pipe says nothing about its monitor.
    started_here: bool,
}

impl StartedContainer {
    /// Reads the monitor's first report: the container started, or why not.
    pub(crate) fn await_start(
        id: String,
        monitor_pid: i32,
        mut receiver: MonitorReceiver,
    ) -> Result<Self, EngineError> {
        let failure = |message: String, status| {
            Err(EngineError::StartFailed(StartFailure { message, status }))
        };
        match receiver.receive() {
            Some(MonitorMessage::Started { pid }) => Ok(Self {
                id,
                pid,
                monitor_pid,
                receiver,
                started_here: true,
            }),
            Some(MonitorMessage::Failed { message, status }) => failure(message, status),
            Some(MonitorMessage::Exited { code }) => failure(
                format!("container exited before it was reported started (status {code})"),
                125,
            ),
            None => failure(
                "the container's monitor exited before the container started".to_owned(),
                125,
            ),
        }
    }

    /// The pipe the monitor reports the exit on, for a caller that waits in
    /// `poll` on other things too; when it is readable, or when
    /// [`Self::exit_report_buffered`], [`Self::wait_exit`] does not block
    /// for long (the monitor writes each report in one piece).
    pub fn report_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.receiver.fd()
    }

    /// True when the report may already have been read off the pipe.
    pub fn exit_report_buffered(&self) -> bool {
        self.receiver.has_buffered()
    }

    /// Blocks until the monitor reports the exit (after `--rm` removal).
    /// None when the monitor died without saying (it was killed); it is
    /// gone by then, so that a reconcile that follows sees it dead.
    pub fn wait_exit(&mut self) -> Option<i32> {
        loop {
            let Some(message) = self.receiver.receive() else {
                self.wait_for_monitor_to_end();
                return None;
            };
            match message {
                MonitorMessage::Exited { code } => {
                    let _ = nix::sys::wait::waitpid(
                        nix::unistd::Pid::from_raw(self.monitor_pid),
                        Some(nix::sys::wait::WaitPidFlag::WNOHANG),
                    );
                    return Some(code);
                }
                MonitorMessage::Failed { status, .. } => return Some(status),
                MonitorMessage::Started { .. } => continue,
            }
        }
    }

    /// The status pipe closes while a killed process is still exiting
    /// (descriptors go first): waits until /proc shows it gone, reaping it
    /// when it is this process's child (a cold start's monitor).
    fn wait_for_monitor_to_end(&self) {
        let pid = nix::unistd::Pid::from_raw(self.monitor_pid);
        if !self.started_here || self.monitor_pid <= 0 || nix::sys::wait::waitpid(pid, None).is_ok()
        {
            return;
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        while super::state::process_alive(self.monitor_pid, 0) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Why `start` failed, with Docker's exit status for `run`.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct StartFailure {
    pub message: String,
    pub status: i32,
}

/// Starts `text` (id, name or prefix). `attachment` carries the CLI's
/// streams for an attached run; None starts detached.
pub fn start_container(
    engine: &mut Engine,
    text: &str,
    attachment: Option<Attachment>,
) -> Result<StartedContainer, EngineError> {
    let config = engine.config().clone();
    let (container, lock) = match take_start_record(engine, text)? {
        Claim::Running(container) => {
            return Ok(StartedContainer {
                id: container.record.id.clone(),
                pid: container.state.pid,
                monitor_pid: container.state.monitor_pid,
                receiver: MonitorReceiver::new(closed_pipe()?),
                started_here: false,
            })
        }
        Claim::Start(container, lock) => (container, lock),
    };
    let mut container = container;
    crate::volumes::mounts::repair_all(&config.root, &config.run_root);
    // Until the monitor runs, a failure undoes the start record: nothing
    // was done that a repair would have to undo.
    let prepared = crate::networks::bind_awaiting_networks(engine, &mut container.record)
        .and_then(|()| prepare(engine, &container));
    if let Err(error) = prepared {
        lock.release();
        return Err(error);
    }
    let paths = ContainerPaths::new(&config.root, &config.run_root, &container.record.id);
    // A new start clears an earlier stop request.
    let _ = fs_err::remove_file(paths.stop_marker());
    tracing::debug!(container = %container.record.id, "prepared");
    let id = container.record.id.clone();
    let monitor = launch::start_container_monitor(
        engine,
        launch::ContainerMonitor {
            record: container.record,
            restart_count: container.state.restart_count,
            attachment: attachment.unwrap_or_default(),
            lock,
        },
    )?;
    let started = StartedContainer::await_start(
        id.clone(),
        monitor.pid,
        MonitorReceiver::new(monitor.status),
    );
    if started.is_err() {
        if monitor.child {
            let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(monitor.pid), None);
        }
        // A killed monitor left its work half done: finish it before
        // reporting, so the container is shown as it is.
        super::reconcile::after_failed_start(engine.store(), &config, &id);
    }
    started
}

/// How long `start` waits while another process starts the same container
/// or its last monitor finishes (the container exited moments ago).
const START_RECORD_WAIT: Duration = Duration::from_secs(30);

enum Claim {
    /// Running already (or started by another process meanwhile).
    Running(Container),
    /// Ours to start, with its start record.
    Start(Container, MonitorLock),
}

/// Finds the container and takes its start record, before anything is
/// done for the start: a kill -9 from here on leaves a record the next
/// command repairs from (see `reconcile`).
fn take_start_record(engine: &mut Engine, text: &str) -> Result<Claim, EngineError> {
    let config = engine.config().clone();
    let deadline = Instant::now() + START_RECORD_WAIT;
    loop {
        let container = find_container(engine.store(), &config, text)?;
        super::repair::refuse_start(&container)?;
        if container.state.is_running() {
            return Ok(Claim::Running(container));
        }
        let paths = ContainerPaths::new(&config.root, &config.run_root, &container.record.id);
        berth_store::permissions::create_private_directory_all(&paths.runtime)?;
        match MonitorLock::take_for_start(&paths)? {
            Some(mut lock) if lock.leftover => {
                // Left by a start that died after the lookup above looked.
                let auto_remove = container.record.run.auto_remove;
                super::reconcile::repair(engine.store(), &config, container, &paths);
                if auto_remove {
                    lock.release();
                    return Err(EngineError::NoSuchContainer(text.to_owned()));
                }
                lock.repaired();
                let container = find_container(engine.store(), &config, text)?;
                return Ok(Claim::Start(container, lock));
            }
            Some(lock) => return Ok(Claim::Start(container, lock)),
            None if Instant::now() >= deadline => {
                return Err(ContainerError::StartInProgress {
                    id: container.record.id,
                }
                .into())
            }
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    }
}

fn closed_pipe() -> Result<OwnedFd, EngineError> {
    let (read, write) = nix::unistd::pipe().map_err(ContainerError::Pipe)?;
    drop(write);
    Ok(read)
}

/// The container's layers, bottom first: the image's, then its init layer.
pub(crate) fn container_layers(
    store: &berth_store::Store,
    container: &super::record::ContainerRecord,
) -> Result<Vec<std::path::PathBuf>, EngineError> {
    let image_id = berth_types::Digest::parse(&container.image_id).map_err(|source| {
        ContainerError::ImageId {
            id: container.id.clone(),
            source,
        }
    })?;
    let image = store
        .image_of_containers(&image_id)?
        .ok_or_else(|| EngineError::NoSuchImage(container.image_name.clone()))?;
    let mut layers: Vec<_> = image
        .layers
        .iter()
        .map(|chain_id| store.layers().path(chain_id))
        .collect();
    layers.push(super::paths::init_layer(store.root())?);
    Ok(layers)
}

/// Writes the /etc files and fills new volumes. The root itself is mounted
/// by the container's first process, inside its own mount namespace.
fn prepare(engine: &Engine, container: &Container) -> Result<(), EngineError> {
    prepare_record(engine, &container.record)
}

/// [`prepare`] for a record (a warm pool member's has no stored row).
pub(crate) fn prepare_record(
    engine: &Engine,
    record: &super::record::ContainerRecord,
) -> Result<(), EngineError> {
    let config = engine.config();
    let paths = ContainerPaths::new(&config.root, &config.run_root, &record.id);
    let layers = container_layers(engine.store(), record)?;
    // dockerd's start refuses a link to a container that is not running.
    super::links::linked_containers(engine.store(), config, record)?;
    // A volume with driver options is empty until mounted: its monitor
    // fills it once it is (`monitor::volumes::take_volumes`).
    populate_new_volumes(&config.root, record, &paths, &layers, &|name| {
        !has_driver_options(&config.root, name)
    })?;
    berth_store::permissions::create_private_directory_all(&paths.runtime)?;
    write_etc_files(record, &paths)
}

/// Whether volume `name` is mounted from its driver options when used.
pub(crate) fn has_driver_options(root: &std::path::Path, name: &str) -> bool {
    !matches!(crate::volumes::read_options(root, name), Ok(None))
}

/// Docker copies the image's content at a volume's mount point into the
/// volume the first time an empty volume is mounted. Only then is the root
/// mounted on the host, briefly. `selected` says which volumes (by name)
/// to look at.
pub(crate) fn populate_new_volumes(
    root: &std::path::Path,
    record: &super::record::ContainerRecord,
    paths: &ContainerPaths,
    layers: &[std::path::PathBuf],
    selected: &dyn Fn(&str) -> bool,
) -> Result<(), EngineError> {
    let empty_volumes: Vec<(std::path::PathBuf, &str)> = record
        .run
        .mounts
        .iter()
        .filter_map(|mount| match &mount.source {
            super::record::MountSource::Volume { name } if selected(name) => Some((
                crate::volumes::volume_data(root, name),
                mount.destination.as_str(),
            )),
            _ => None,
        })
        .filter(|(data, _)| {
            fs_err::read_dir(data)
                .map(|mut entries| entries.next().is_none())
                .unwrap_or(true)
        })
        .collect();
    if empty_volumes.is_empty() {
        return Ok(());
    }
    let rootfs = paths.rootfs();
    let mounted_here = !berth_runtime::rootfs::is_mounted(&rootfs.merged);
    if mounted_here {
        paths.create_rootfs_directories()?;
        mount_rootfs(layers, &rootfs).map_err(|source| ContainerError::MountRootfs {
            id: record.id.clone(),
            source,
        })?;
    }
    let result = empty_volumes.iter().try_for_each(|(data, destination)| {
        crate::permissions::create_shared_directory(data)?;
        // Resolved inside the container root: image symlinks cannot point
        // the copy at host files.
        match berth_runtime::in_root::resolve_in_root(
            &rootfs.merged,
            std::path::Path::new(destination),
        ) {
            Ok(image_path) => crate::volumes::populate_from_image(data, &image_path),
            Err(_) => Ok(()),
        }
    });
    if mounted_here {
        let _ = berth_runtime::rootfs::unmount_rootfs(&rootfs);
    }
    result
}
