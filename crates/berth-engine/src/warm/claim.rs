//! Making members, and a run taking one.

use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use berth_types::container::CreateRequest;

use super::member::{members, monitor_alive, MemberDir, MemberInfo, Taker};
use super::{discard_member, wait_offered, ClaimMessage, WarmError, WarmMode, WarmSettings};
use crate::containers::create::{build_record, insert_record};
use crate::containers::monitor::protocol::MonitorReceiver;
use crate::containers::names::new_id;
use crate::containers::record::{ContainerRecord, MountSource, RestartPolicy};
use crate::containers::{Attachment, ContainerError, StartedContainer};
use crate::images::resolve_image;
use crate::{Engine, EngineError};

/// What a run must share with a member to use it: everything that shapes
/// the sandbox. The process (command, environment, user, working
/// directory, terminal, stdin), `--rm`, `--name` (not in the record's run
/// settings), labels, the stop settings and bind mounts (mounted after the
/// claim) may differ. None when the run can never use a member: a volume
/// or tmpfs mount, or its own devices (`--device`, `--device-cgroup-rule`,
/// `--privileged`): a member's /dev and device cgroup are made with Docker's
/// defaults before any run is known, so such a run starts cold.
pub(crate) fn sandbox_key(record: &ContainerRecord) -> Option<serde_json::Value> {
    let mut run = record.run.clone();
    let binds_only = run
        .mounts
        .iter()
        .all(|mount| matches!(mount.source, MountSource::Bind { .. }));
    let default_devices =
        run.devices.is_empty() && run.device_cgroup_rules.is_empty() && !run.privileged;
    if !binds_only || !default_devices {
        return None;
    }
    run.args.clear();
    run.env.clear();
    run.working_dir.clear();
    run.user.clear();
    run.tty = false;
    run.open_stdin = false;
    run.auto_remove = false;
    run.mounts.clear();
    run.labels.clear();
    run.stop_signal.clear();
    run.stop_timeout = None;
    // Only what a link to the container would see.
    run.exposed_ports.clear();
    // The claimed container's monitor opens its log, from the claimed record.
    run.log = Default::default();
    // A new cgroup has no pids limit: "unlimited" and unset are the same.
    if run.resources.pids_limit == Some(berth_runtime::cgroups::Limit::Unlimited) {
        run.resources.pids_limit = None;
    }
    // "no" and unset are the same policy.
    if run.restart.is_none() {
        run.restart = RestartPolicy::default();
    }
    Some(serde_json::json!({ "image": record.image_id, "run": run }))
}

/// Builds one member of `reference`'s pool and returns its id once it is
/// offered.
pub(super) fn spawn_member(
    engine: &mut Engine,
    pool: &super::PoolRequest,
    image_id: &str,
    depth: u32,
    ttl: Duration,
) -> Result<String, EngineError> {
    let reference = pool.request.config.image.as_str();
    let id = new_id();
    let record = build_record(engine, &pool.request, id.clone())?;
    let key = sandbox_key(&record).ok_or_else(|| WarmError::ImageVolumes {
        reference: reference.to_owned(),
    })?;
    let config = engine.config().clone();
    let dir = MemberDir::new(&config.run_root, &id);
    let directory = |source| WarmError::MemberDirectory {
        id: id.clone(),
        source,
    };
    fs_err::create_dir_all(&dir.path).map_err(directory)?;
    let paths = crate::containers::paths::ContainerPaths::new(&config.root, &config.run_root, &id);
    let prepared = fs_err::create_dir_all(&paths.directory)
        .map_err(|source| directory(source).into())
        .and_then(|()| crate::containers::start::prepare_record(engine, &record));
    if let Err(error) = prepared {
        crate::containers::remove::remove_files_and_row(engine.store(), &paths, &id);
        dir.remove();
        return Err(error);
    }
    let info = MemberInfo {
        id: id.clone(),
        image_id: image_id.to_owned(),
        reference: reference.to_owned(),
        created: chrono::Utc::now().timestamp(),
        monitor_pid: 0,
        monitor_start_time: 0,
        sandbox_pid: 0,
        ttl_seconds: ttl.as_secs().max(1),
        depth,
        key,
        flags: pool.flags.clone(),
    };
    // Forked, or (from a process with other threads) spawned: see
    // `monitor/launch.rs`.
    let monitor = crate::containers::monitor::launch::start_member_monitor(
        engine,
        record,
        dir.clone(),
        info,
    )?;
    let offered = wait_offered(&id, monitor.status);
    if offered.is_err() {
        if monitor.child {
            let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(monitor.pid), None);
        }
        // A monitor that failed before it built anything (its ports taken,
        // say) leaves the container's files and the member's directory; one
        // killed while it built (a VM's boot) leaves its cgroup and what
        // runs there too.
        crate::containers::manage::delete_runtime_leftovers(&config, &id);
        crate::containers::remove::remove_files_and_row(engine.store(), &paths, &id);
        dir.remove();
    }
    Ok(offered.map(|()| id)?)
}

/// How long [`Claimed::release`] waits for the member to end.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(10);

/// A member a run has taken: its container row is stored; `start` hands
/// over the run's streams.
pub struct Claimed {
    pub id: String,
    info: MemberInfo,
    socket: UnixStream,
    refill: Option<Refill>,
}

/// The replacement of a claimed member, built in the background. Callers
/// start it once the run no longer needs the CPU (after a short attached
/// run, or once a detached one started); dropped unstarted, it starts then.
pub struct Refill {
    config: crate::EngineConfig,
    reference: String,
    flags: Vec<String>,
    depth: u32,
    ttl: Duration,
    vm: bool,
}

impl Refill {
    /// Whether the replacement is a VM member (slower to build: see
    /// `containers::run::VM_REFILL_DELAY`).
    pub fn boots_a_vm(&self) -> bool {
        self.vm
    }

    /// Starts the refill after `delay`, or when the guard is dropped if
    /// that comes first: a short run finishes before its replacement is
    /// built, a long one does not keep the pool empty.
    pub fn start_after(self, delay: Duration) -> RefillGuard {
        let shared = Arc::new(Mutex::new(Some(self)));
        let timer = Arc::clone(&shared);
        std::thread::spawn(move || {
            std::thread::sleep(delay);
            take(&timer);
        });
        RefillGuard(shared)
    }
}

/// Starts the refill it holds, if the timer has not, when dropped.
pub struct RefillGuard(Arc<Mutex<Option<Refill>>>);

impl Drop for RefillGuard {
    fn drop(&mut self) {
        take(&self.0);
    }
}

/// Takes the refill out (dropping it starts it) unless already taken.
fn take(shared: &Mutex<Option<Refill>>) {
    let refill = shared
        .lock()
        .map(|mut refill| refill.take())
        .unwrap_or_default();
    drop(refill);
}

impl Drop for Refill {
    fn drop(&mut self) {
        super::spawn_refill(
            &self.config,
            &self.reference,
            &self.flags,
            self.depth,
            self.ttl,
        );
    }
}

/// The pool members offered for `request`'s image, looked up once: without side effects,
/// so a caller can decide whether it will start the container itself before [`claim`].
pub struct Offered {
    settings: WarmSettings,
    candidates: Vec<(MemberDir, MemberInfo)>,
}

impl Offered {
    /// Whether [`claim`] may find a member: the pool is on and holds an offered member of
    /// the image.
    pub fn is_empty(&self) -> bool {
        self.settings.mode == WarmMode::Off || self.candidates.is_empty()
    }
}

/// Looks up the offered members (the pool's directory and one image lookup).
pub fn offered(engine: &Engine, request: &CreateRequest) -> Result<Offered, EngineError> {
    let settings = WarmSettings::from_env()?;
    let image_id = match resolve_image(engine.store(), &request.config.image) {
        Ok(image) if settings.mode != WarmMode::Off => Some(image.id.to_string()),
        _ => None,
    };
    let candidates = match image_id {
        Some(image_id) => members(&engine.config().run_root)
            .into_iter()
            .filter(|(dir, info)| info.image_id == image_id && dir.is_offered())
            .collect(),
        None => Vec::new(),
    };
    Ok(Offered {
        settings,
        candidates,
    })
}

/// Takes one of the `offered` members for `request` when the run is eligible; otherwise
/// None (the caller starts cold). The container's row is stored here, with the member's id:
/// a taken `--name` is Docker's error, as a cold run gives.
pub fn claim(
    engine: &mut Engine,
    request: &CreateRequest,
    offered: Offered,
) -> Result<Option<Claimed>, EngineError> {
    let Offered {
        settings,
        candidates,
    } = offered;
    if settings.mode == WarmMode::Off {
        return Ok(None);
    }
    if candidates.is_empty() {
        if settings.mode == WarmMode::On {
            if let Ok(reference) = super::pool_reference(&request.config.image) {
                let flags = auto_pool_flags(request);
                super::spawn_refill(
                    engine.config(),
                    &reference,
                    &flags,
                    settings.depth,
                    settings.ttl,
                );
            }
        }
        return Ok(None);
    }
    let mut checked: Option<ContainerRecord> = None;
    for (dir, info) in candidates {
        if !monitor_alive(&info) {
            if dir.take(Taker::Retire) {
                discard_member(engine, &dir, &info);
            }
            continue;
        }
        // The record is built once and given each candidate's id. Members
        // of one image differ in their keys when it has pools made with
        // other flags (`--isolation vm`, `--network`): each is compared.
        let record = match checked.take() {
            Some(mut record) => {
                rebase_record(&mut record, &info.id);
                record
            }
            None => build_record(engine, request, info.id.clone())?,
        };
        let Some(key) = sandbox_key(&record) else {
            tracing::debug!("run not eligible for the warm pool");
            return Ok(None);
        };
        if key != info.key {
            tracing::debug!(run = %key, member = %info.key, "run does not fit this member");
            checked = Some(record);
            continue;
        }
        if !dir.take(Taker::Claim) {
            checked = Some(record);
            continue;
        }
        let socket = match UnixStream::connect(dir.taken_path(Taker::Claim)) {
            Ok(socket) => socket,
            Err(_) => {
                discard_member(engine, &dir, &info);
                checked = Some(record);
                continue;
            }
        };
        // Dropping the socket unused (a taken name) ends the member.
        let id = insert_record(engine, record, request.name.is_some())?;
        let refill = Refill {
            config: engine.config().clone(),
            reference: info.reference.clone(),
            flags: info.flags.clone(),
            depth: info.depth,
            ttl: Duration::from_secs(info.ttl_seconds),
            vm: info.key["run"]["isolation"] == "vm",
        };
        return Ok(Some(Claimed {
            id,
            info,
            socket,
            refill: Some(refill),
        }));
    }
    Ok(None)
}

/// The `berth warm` flags of the pool `BERTH_WARM=on` starts for a run
/// with no pool: its isolation (a VM run needs VM members: a namespace
/// member never stands in for it) and its network, which are in the
/// sandbox key. (Published ports are not: a fixed host port could not be
/// held by more than one member.)
fn auto_pool_flags(request: &CreateRequest) -> Vec<String> {
    let host = &request.host_config;
    let mut flags = Vec::new();
    if crate::containers::record::Isolation::of_request(&host.isolation, &host.runtime)
        == crate::containers::record::Isolation::Vm
    {
        flags.extend(["--isolation".to_owned(), "vm".to_owned()]);
    }
    if !host.network_mode.is_empty() && host.network_mode != "default" {
        flags.extend(["--network".to_owned(), host.network_mode.clone()]);
    }
    flags
}

/// The same record for another member: only the id and the hostname
/// derived from it change.
fn rebase_record(record: &mut ContainerRecord, id: &str) {
    let old_short = record.id[..12].to_owned();
    if record.run.hostname == old_short {
        record.run.hostname = id[..12].to_owned();
        if let Some(hostname) = record.config.get_mut("Hostname") {
            *hostname = serde_json::Value::String(id[..12].to_owned());
        }
    }
    record.id = id.to_owned();
}

impl Claimed {
    /// The member's replacement, to start when the caller chooses (see
    /// [`Refill`]); a claim whose refill was not taken starts it on drop.
    pub fn take_refill(&mut self) -> Option<Refill> {
        self.refill.take()
    }

    /// Whether the container's stored settings still fit the member's
    /// sandbox. A claim held a while (the API's create, waiting for its
    /// start) may have seen an `update` or a `network connect` meanwhile;
    /// then it is released and the container starts cold.
    pub fn still_fits(&self, engine: &Engine) -> bool {
        let stored = crate::containers::lookup::find_row(engine.store(), &self.id)
            .and_then(|row| crate::containers::lookup::parse_row(&row));
        match stored {
            Ok(container) => sandbox_key(&container.record).as_ref() == Some(&self.info.key),
            Err(_) => false,
        }
    }

    /// Gives the member back without starting the container, whose start
    /// may never come: the member tears its sandbox down (process, network
    /// address, cgroup) and leaves the stored row and the container's
    /// directory, an ordinary `created` container that a later `start`
    /// starts cold. Returns once the member's monitor has ended, so that the
    /// container is as it stays. (Dropping a claim does the same without
    /// waiting; an unstarted refill starts now.)
    pub fn release(self) {
        let body = serde_json::to_vec(&ClaimMessage::Release).unwrap_or_default();
        if berth_runtime::handoff::send_message(&self.socket, &body, &[]).is_ok() {
            // The member closes its end once the sandbox is gone.
            let _ = self.socket.set_read_timeout(Some(RELEASE_TIMEOUT));
            let mut buffer = [0u8; 64];
            while matches!((&self.socket).read(&mut buffer), Ok(read) if read > 0) {}
        }
        // Then it ends its start record and exits.
        let deadline = std::time::Instant::now() + RELEASE_TIMEOUT;
        while monitor_alive(&self.info) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        tracing::debug!(container = %self.id, "pool member released");
    }

    /// Hands the member the run's streams (None: detached) and returns once
    /// the container's program runs.
    pub fn start(self, attachment: Option<Attachment>) -> Result<StartedContainer, EngineError> {
        let attachment = attachment.unwrap_or_default();
        let (status_read, status_write) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(ContainerError::Pipe)?;
        let message = ClaimMessage::Claim {
            stdin: attachment.stdin.is_some(),
            stdout: attachment.stdout.is_some(),
            stderr: attachment.stderr.is_some(),
        };
        let streams: Vec<&OwnedFd> = [&attachment.stdin, &attachment.stdout, &attachment.stderr]
            .into_iter()
            .flatten()
            .collect();
        let mut fds: Vec<RawFd> = vec![status_write.as_raw_fd()];
        fds.extend(streams.iter().map(|fd| fd.as_raw_fd()));
        let body = serde_json::to_vec(&message).map_err(|source| WarmError::EncodeClaim {
            id: self.id.clone(),
            source,
        })?;
        berth_runtime::handoff::send_message(&self.socket, &body, &fds).map_err(|source| {
            WarmError::HandOver {
                id: self.id.clone(),
                source,
            }
        })?;
        drop((status_write, attachment));
        StartedContainer::await_start(
            self.id,
            self.info.monitor_pid,
            MonitorReceiver::new(status_read),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::containers::record::Isolation;

    fn record(isolation: Isolation) -> ContainerRecord {
        ContainerRecord {
            id: "a".repeat(64),
            name: "member".to_owned(),
            image_id: "sha256:abc".to_owned(),
            image_name: "busybox".to_owned(),
            created: String::new(),
            run: crate::containers::record::RunSettings {
                isolation,
                ..Default::default()
            },
            config: serde_json::json!({}),
            host_config: serde_json::json!({}),
        }
    }

    #[test]
    fn vm_and_namespace_members_never_stand_in_for_each_other() {
        let namespaces = sandbox_key(&record(Isolation::Namespaces)).unwrap();
        let vm = sandbox_key(&record(Isolation::Vm)).unwrap();
        assert_ne!(namespaces, vm);
        assert_eq!(vm["run"]["isolation"], "vm");
        // The process may differ: the key is the same.
        let mut other = record(Isolation::Vm);
        other.run.args = vec!["echo".to_owned(), "hi".to_owned()];
        assert_eq!(sandbox_key(&other).unwrap(), vm);
    }

    #[test]
    fn an_automatic_pool_has_the_runs_isolation_and_network() {
        let mut request = CreateRequest::default();
        assert!(auto_pool_flags(&request).is_empty());
        request.host_config.isolation = "vm".to_owned();
        request.host_config.network_mode = "none".to_owned();
        assert_eq!(
            auto_pool_flags(&request),
            ["--isolation", "vm", "--network", "none"]
        );
        request.host_config.isolation.clear();
        request.host_config.runtime = "vm".to_owned();
        request.host_config.network_mode = "default".to_owned();
        assert_eq!(auto_pool_flags(&request), ["--isolation", "vm"]);
    }
}
