//! The per-container monitor: a fork of the `berth` process that started
//! the container, or of a `berth __monitor` it ran (a caller with other
//! threads must not fork, see `launch.rs`). It is the parent of the
//! container's first process, copies its output, records its exit, applies
//! the restart policy, removes `--rm` containers, and exits when its
//! container is gone. No other berth process stays behind.

mod health;
mod io;
mod joined;
pub mod launch;
pub(crate) mod lock;
pub(crate) mod member;
mod memory;
mod network;
pub mod protocol;
mod volumes;

use std::os::fd::OwnedFd;
use std::time::Duration;

use berth_runtime::cgroups::{new_manager, CgroupDriver, CgroupManager, CgroupVersion};
use berth_runtime::rootfs::unmount_rootfs;
use berth_runtime::Stdio;
use berth_store::Store;

pub use io::{frame, Attachment, ContainerIo};
pub use memory::release_read_only_pages;
pub(crate) use memory::ReadOnlyPages;
use protocol::{MonitorMessage, MonitorSender};

use super::lifecycle::{self, EndStep};
use super::paths::ContainerPaths;
use super::record::ContainerRecord;
use super::spec::{build_spec, cgroup_resources};
use super::state::{now, process_start_time, ContainerState, Status};
use crate::{EngineConfig, EngineError};

/// Runs in the forked monitor; never returns. `lock` is the start record
/// the forking command took: held (inherited) while this monitor lives,
/// ended once the container is done and cleaned up.
pub(crate) fn run(
    config: EngineConfig,
    record: ContainerRecord,
    known: Known,
    attachment: Attachment,
    status: OwnedFd,
    lock: lock::MonitorLock,
) -> ! {
    run_monitor(status, &record.id, |sender| {
        let done = supervise(&config, &record, attachment, sender, Begin::Cold(known));
        lock.release();
        done
    })
}

/// What the forking CLI already read from the store for a cold start, so
/// that the monitor reaches the launch without opening the database: its
/// first query then overlaps the container's start (≈ 1 ms here).
pub(crate) struct Known {
    /// The container's lower layers, bottom first, its init layer last
    /// (None: the monitor looks them up, and reports a failure as a run's).
    pub layers: Option<Vec<std::path::PathBuf>>,
    pub restart_count: u32,
}

/// How a monitor's first run begins.
pub(super) enum Begin {
    Cold(Known),
    /// A warm pool member's sandbox, built before the claim.
    Warm(Box<Prepared>),
}

/// Becomes a monitor, does `work`, reports its failure over `status`, and
/// exits. Never returns.
pub(super) fn run_monitor(
    status: OwnedFd,
    id: &str,
    work: impl FnOnce(&mut MonitorSender) -> Result<(), EngineError>,
) -> ! {
    become_monitor();
    let mut sender = MonitorSender::new(status);
    let code = match work(&mut sender) {
        Ok(()) => 0,
        Err(error) => {
            tracing::error!(container = %id, error = %format!("{error:#}"), "monitor failed");
            sender.send(&MonitorMessage::Failed {
                message: crate::ErrorChain(&error).to_string(),
                status: 125,
            });
            1
        }
    };
    // SAFETY: _exit leaves without running destructors or atexit handlers
    // inherited from the CLI process this was forked from.
    unsafe { libc::_exit(code) }
}

/// Detaches from the CLI's session and terminal signals; becomes the
/// subreaper for anything the container leaves.
fn become_monitor() {
    let _ = nix::unistd::setsid();
    for signal in [
        nix::sys::signal::Signal::SIGINT,
        nix::sys::signal::Signal::SIGHUP,
        nix::sys::signal::Signal::SIGQUIT,
        nix::sys::signal::Signal::SIGPIPE,
        nix::sys::signal::Signal::SIGTSTP,
        nix::sys::signal::Signal::SIGTTOU,
        nix::sys::signal::Signal::SIGTTIN,
    ] {
        // SAFETY: SIG_IGN installs no handler code; it only changes the
        // disposition for this process.
        unsafe {
            let _ = nix::sys::signal::signal(signal, nix::sys::signal::SigHandler::SigIgn);
        }
    }
    // SAFETY: PR_SET_CHILD_SUBREAPER takes an integer flag only.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    // The monitor lives as long as its container: give back the heap the
    // CLI used before the fork (argument parsing, the image lookup).
    // SAFETY: malloc_trim only returns free heap pages to the kernel.
    unsafe { libc::malloc_trim(0) };
    // The monitor's own stdio must not keep the CLI's terminal or pipes open.
    if let Ok(null) = fs_err::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        for target in 0..=2 {
            // SAFETY: dup2 onto 0..2 replaces this process's standard
            // streams with /dev/null, which it owns.
            unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), target) };
        }
    }
    // Diagnostics go to /dev/null unless BERTH_MONITOR_LOG names a file
    // (for debugging a monitor; `--debug` output of the CLI stops here).
    if let Some(path) = std::env::var_os("BERTH_MONITOR_LOG") {
        if let Ok(file) = fs_err::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            // SAFETY: dup2 onto fd 2 replaces stderr with a file we own.
            unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&file), 2) };
        }
    }
}

/// What a warm pool member built before it was claimed: its first run
/// starts in `sandbox` instead of a new clone.
pub(super) struct Prepared {
    store: Store,
    network: network::MonitorNetwork,
    cgroups: CgroupVersion,
    cgroup: Box<dyn CgroupManager>,
    sandbox: member::WarmSandbox,
}

/// The container's cgroup on this machine's layout.
fn container_cgroup(
    record: &ContainerRecord,
) -> Result<(CgroupVersion, Box<dyn CgroupManager>), EngineError> {
    let cgroups = CgroupVersion::detect().map_err(super::ContainerError::CgroupLayout)?;
    let cgroup_path = CgroupDriver::default()
        .container_path(None, &record.id)
        .map_err(super::ContainerError::CgroupLayout)?;
    let cgroup = new_manager(&cgroups, cgroup_path);
    Ok((cgroups, cgroup))
}

fn supervise(
    config: &EngineConfig,
    record: &ContainerRecord,
    mut attachment: Attachment,
    sender: &mut MonitorSender,
    begin: Begin,
) -> Result<(), EngineError> {
    tracing::debug!(container = %record.id, "monitor started");
    let paths = ContainerPaths::new(&config.root, &config.run_root, &record.id);
    let (mut store, cgroups, cgroup, network, mut sandbox, mut known) = match begin {
        Begin::Warm(prepared) => (
            prepared.store,
            prepared.cgroups,
            prepared.cgroup,
            Ok(prepared.network),
            Some(prepared.sandbox),
            None,
        ),
        Begin::Cold(known) => {
            let store = Store::open_deferred(&config.root);
            let (cgroups, cgroup) = container_cgroup(record)?;
            tracing::debug!("cgroup layout read");
            (
                store,
                cgroups,
                cgroup,
                network::MonitorNetwork::new(record),
                None,
                Some(known),
            )
        }
    };
    let mut log = crate::containers::logging::open_log_writer(&paths, record);
    // `berth attach` connects here while the container runs.
    let attach_path = paths.attach_socket();
    let _ = fs_err::remove_file(&attach_path);
    let attach_listener = paths
        .with_short_attach_path(|path| std::os::unix::net::UnixListener::bind(path))
        .and_then(|listener| listener.set_nonblocking(true).map(|()| listener))
        .map_err(|error| tracing::warn!(%error, "no attach socket"))
        .ok();
    tracing::debug!("log and attach socket open");
    let monitor_pid = std::process::id() as i32;
    let mut restarts = match &known {
        Some(known) => known.restart_count,
        None => read_state(&store, &record.id).map_or(0, |state| state.restart_count),
    };
    let mut first = true;
    // The restart backoff's last delay, and when the current run began.
    let mut delay: Option<Duration> = None;
    let mut run_began: std::time::Instant;
    let mut network = match network {
        Ok(network) => network,
        Err(message) => {
            let mut state = read_state(&store, &record.id).unwrap_or_default();
            state.error = message.clone();
            state.exit_code = failed_start_exit_code(125);
            write_state(&store, &record.id, &state);
            cleanup(cgroup.as_ref(), &paths);
            if record.run.auto_remove {
                super::remove::remove_files_and_row(&store, &paths, &record.id);
            }
            sender.send(&MonitorMessage::Failed {
                message,
                status: 125,
            });
            return Ok(());
        }
    };

    // A reference to the running container's root (see below).
    let mut root_pin: Option<std::fs::File> = None;
    let mut held_volumes: Option<crate::volumes::mounts::HeldVolumes> = None;
    let exit_code = loop {
        // The overlay of the previous run must be gone before the next
        // mounts the same upper directory.
        drop(root_pin.take());
        // Each run takes the record as it is now: `network connect` and
        // `disconnect` change it between runs.
        // (The first run's record is the one the CLI just read.)
        let known_now = known.take();
        let current = match known_now {
            Some(_) => record.clone(),
            None => current_record(&store, record),
        };
        let first_layers = known_now.and_then(|known| known.layers);
        let record = &current;
        if first && attachment.is_attached() {
            // `run` and `start -a` attach before the start, as Docker's CLI.
            crate::events::emit_container(&store, "attach", record);
        }
        // The volumes with driver options are mounted on the host before
        // the run (a VM container's virtiofs shares them from there too),
        // and released after it (see `volumes::mounts`).
        let volumes =
            volumes::take_volumes(config, &store, record, &paths, first_layers.as_deref());
        let started = match (volumes, sandbox.take()) {
            (Err(failure), _) => Err(failure),
            (Ok(volumes), sandbox) => {
                held_volumes = Some(volumes);
                match sandbox {
                    Some(sandbox) => start_in_sandbox(
                        config,
                        &store,
                        record,
                        &paths,
                        &cgroups,
                        sandbox,
                        &mut attachment,
                    ),
                    None => start_once(
                        config,
                        &mut store,
                        &mut network,
                        record,
                        first_layers,
                        &paths,
                        &cgroups,
                        cgroup.as_ref(),
                        &mut attachment,
                    ),
                }
            }
        };
        tracing::debug!(container = %record.id, ok = started.is_ok(), "launch finished");
        let (launched, mut container_io, process) = match started {
            Ok(started) => started,
            Err((message, status)) => {
                drop(held_volumes.take());
                let mut state = read_state(&store, &record.id).unwrap_or_default();
                state.error = message.clone();
                state.exit_code = failed_start_exit_code(status);
                if !first {
                    state.status = Status::Exited;
                    state.finished_at = now();
                }
                write_state(&store, &record.id, &state);
                cleanup(cgroup.as_ref(), &paths);
                if record.run.auto_remove {
                    super::remove::remove_files_and_row(&store, &paths, &record.id);
                }
                // The host ports are free before `run` reports the failure.
                drop(network);
                sender.send(&MonitorMessage::Failed { message, status });
                return Ok(());
            }
        };
        // Held until the exit is reported: the last unmount of the
        // container's overlay syncs the whole upper file system (a syncfs of
        // the host's disk, milliseconds to seconds when other work has
        // dirtied it), and with this reference it happens after the report
        // instead of inside the container's exit.
        root_pin = fs_err::File::open(format!("/proc/{}/root", launched.pid))
            .map(fs_err::File::into_file)
            .ok();
        let mut state = read_state(&store, &record.id).unwrap_or_default();
        // Only a container that ran before can be linked to by one that runs.
        let ran_before = !state.started_at.is_empty();
        state.status = Status::Running;
        state.pid = launched.pid.as_raw();
        state.exit_code = 0;
        state.error.clear();
        state.oom_killed = false;
        state.started_at = now();
        state.monitor_pid = monitor_pid;
        state.monitor_start_time = process_start_time(monitor_pid).unwrap_or(0);
        state.restart_count = restarts;
        // Each run of a container with a health check starts over as
        // `starting` (moby `initHealthMonitor`), keeping the log.
        if super::health::HealthSettings::of_record(record).is_some() {
            state.health = Some(super::health::Health::restarted(state.health.take()));
        }
        write_state(&store, &record.id, &state);
        if ran_before {
            super::links::update_parents_hosts(&store, config, record);
        }
        run_began = std::time::Instant::now();
        crate::events::emit_container(&store, "start", record);
        if first {
            sender.send(&MonitorMessage::Started {
                pid: launched.pid.as_raw(),
            });
        }
        first = false;

        let mut dns = network.dns_server(record);
        let names = crate::networks::ContainerNames::new(&store, &record.id);
        // A client on the attach socket (`attach`) is Docker's `attach`.
        let attached = || crate::events::emit_container(&store, "attach", record);
        let attach_socket = attach_listener.as_ref().map(|listener| io::AttachSocket {
            listener,
            attached: &attached,
        });
        let mut prober = state.health.clone().and_then(|initial| {
            health::HealthProber::new(
                &store,
                config.runtime_of(record),
                record,
                launched.pid.as_raw(),
                process,
                initial,
                run_began,
            )
        });
        io::copy_until_exit(
            &mut container_io,
            &mut attachment,
            &mut log,
            &launched.pidfd,
            record.run.tty,
            attach_socket,
            dns.as_mut()
                .map(|server| (server, &names as &dyn berth_net::dns::Names)),
            prober.as_mut(),
            // Once the container has run a while the monitor mostly sleeps
            // in poll(): then give back SQLite's page cache and the free
            // heap, and drop the code it will not run again from its
            // resident set (see `release_read_only_pages`).
            io::Deferred::after(TRIM_DELAY, || {
                store.release_memory();
                // SAFETY: malloc_trim only returns free heap pages to the kernel.
                unsafe { libc::malloc_trim(0) };
                release_read_only_pages();
            }),
        );
        drop(dns);
        // A probe still running died with the container's pid namespace: reaped here.
        drop(prober);
        tracing::debug!(container = %record.id, "container process exited");
        let code = berth_runtime::wait_exit_code(launched.pid);
        if record.run.isolation == super::record::Isolation::Vm {
            super::vm::launch::reap_leftovers(cgroup.as_ref());
        }
        let oom_killed = cgroup.oom_kills().ok().flatten().unwrap_or(0) > 0;
        drop(container_io);
        // The run's processes are gone: its volumes' mounts may go.
        drop(held_volumes.take());
        network.release(&mut store, record);

        tracing::debug!("exit status collected");
        let mut state = read_state(&store, &record.id).unwrap_or_default();
        state.pid = 0;
        state.exit_code = code;
        state.oom_killed = oom_killed;
        state.finished_at = now();
        // dockerd leaves a stopped container's health unhealthy (moby
        // `CloseMonitorChannel`); readers show it so in any case.
        if let Some(health) = state.health.as_mut() {
            health.status = super::health::HealthStatus::Unhealthy;
        }
        let exit = lifecycle::Exit {
            code,
            stopped_by_user: paths.stop_marker().exists(),
            restarts,
            ran_for: run_began.elapsed(),
        };
        // The policy as stored now: `update --restart` applies at the next exit, as dockerd's.
        let policy = current_record(&store, record).run.restart;
        let next = lifecycle::after_exit(&policy, record.run.auto_remove, exit, delay);
        let restart = matches!(next, lifecycle::AfterExit::Restart { .. });
        state.status = if restart {
            Status::Restarting
        } else {
            Status::Exited
        };
        write_state(&store, &record.id, &state);
        // Under the name it has now (renamed while it ran?).
        let record = &current_record(&store, record);
        if oom_killed {
            crate::events::emit_container(&store, "oom", record);
        }
        let code_text = code.to_string();
        let root = store.root();
        crate::events::emit_container_with(root, "die", record, &[("exitCode", &code_text)]);
        tracing::debug!("exit recorded");
        let lifecycle::AfterExit::Restart { delay: next_delay } = next else {
            break code;
        };
        restarts += 1;
        delay = Some(next_delay);
        // The next run gets a fresh cgroup (its OOM counter included).
        let _ = cgroup.delete();
        if !wait_unless_stopped(&store, &paths, &record.id, next_delay) {
            if let Some(mut state) = read_state(&store, &record.id) {
                state.status = Status::Exited;
                write_state(&store, &record.id, &state);
            }
            break code;
        }
    };

    // The attached CLI's streams end with the container's output: a caller
    // reading them to EOF (`$(berth run …)`, a pipe) must not wait for the
    // cleanup and checkpoint below.
    drop(attachment);
    // The order is the lifecycle's (see `lifecycle::end_steps`): the host
    // ports (their addresses and rules went with `release` above) and, for
    // `--rm`, the row, name and volumes are free before the exit is reported.
    let mut network = Some(network);
    let mut attach_listener = attach_listener;
    for step in lifecycle::end_steps(record.run.auto_remove) {
        match step {
            EndStep::ReleasePorts => drop(network.take()),
            EndStep::RemoveRow => super::remove::remove_row(&store, &record.id),
            EndStep::RemoveAnonymousVolumes => {
                super::remove::remove_anonymous_volumes(&store, config, record)
            }
            EndStep::Report => {
                sender.send(&MonitorMessage::Exited { code: exit_code });
                sender.close();
            }
            EndStep::Cleanup => {
                cleanup(cgroup.as_ref(), &paths);
                drop(attach_listener.take());
                let _ = fs_err::remove_file(&attach_path);
            }
            EndStep::RemoveFiles => super::remove::remove_files(&store, &paths, &record.id),
        }
        tracing::debug!(container = %record.id, ?step, "done");
    }
    drop(root_pin);
    // Nobody waits for this monitor any more: a good moment to checkpoint.
    if let Err(error) = store.checkpoint() {
        tracing::debug!(%error, "no checkpoint");
    }
    Ok(())
}

/// A launched run: its first process, its streams, and the process
/// settings it was started with (which the health probes' execs reuse).
type Started = (
    berth_runtime::Launched,
    ContainerIo,
    berth_runtime::ProcessSpec,
);

/// A `-t` container's first terminal size: the attached CLI's terminal's
/// (rows, columns), set before its program starts. Later changes reach it
/// through SIGWINCH (see `io::copy_until_exit`).
fn console_size(record: &ContainerRecord, attachment: &Attachment) -> Option<(u16, u16)> {
    if !record.run.tty {
        return None;
    }
    let size = attachment
        .stdout
        .as_ref()
        .and_then(berth_runtime::console::window_size)?;
    Some((size.ws_row, size.ws_col))
}

/// Builds the spec and launches one run of the container. Errors carry the
/// message and Docker's exit status for it.
#[allow(clippy::too_many_arguments)] // one call site; a struct would only rename them
fn start_once(
    config: &EngineConfig,
    store: &mut Store,
    network: &mut network::MonitorNetwork,
    record: &ContainerRecord,
    layers: Option<Vec<std::path::PathBuf>>,
    paths: &ContainerPaths,
    cgroups: &CgroupVersion,
    cgroup: &dyn CgroupManager,
    attachment: &mut Attachment,
) -> Result<Started, (String, i32)> {
    let layers = match layers {
        Some(layers) => layers,
        None => super::start::container_layers(store, record)
            .map_err(|error| (crate::ErrorChain(&error).to_string(), 125))?,
    };
    tracing::debug!("image layers found");
    paths
        .create_rootfs_directories()
        .map_err(|error| (crate::ErrorChain(&error).to_string(), 125))?;
    let mut spec = build_spec(
        record,
        paths,
        &layers,
        &config.root,
        &config.root.join("volumes"),
        cgroups,
    )
    .map_err(|error| (crate::ErrorChain(&error).to_string(), 125))?;
    spec.process.console_size = console_size(record, attachment);
    // Each run's links see their containers as they run now.
    let linked = super::links::linked_containers(store, config, record)
        .map_err(|error| (crate::ErrorChain(&error).to_string(), 125))?;
    spec.process.env = super::links::environment(&record.name, &linked, &spec.process.env);
    network.set_link_hosts(super::links::hosts_lines(&linked));
    spec.joined_namespaces =
        joined::joined_namespaces(store, config, record).map_err(|message| (message, 125))?;
    if let Some(joined) =
        network::joined_network(store, config, record).map_err(|message| (message, 125))?
    {
        spec.network = joined.mode;
        spec.etc_files = joined.etc_files;
    }
    tracing::debug!(container = %record.id, "spec built");
    let in_vm = record.run.isolation == super::record::Isolation::Vm;
    let mut resources = cgroup_resources(record, &spec);
    if in_vm {
        resources = super::vm::launch::cgroup_resources(resources);
    }
    cgroup.create(&resources).map_err(|error| {
        (
            format!("failed to create the container's cgroup: {error}"),
            125,
        )
    })?;
    tracing::debug!(container = %record.id, "cgroup created");
    let (stdio, container_io) = make_stdio(record)?;
    if in_vm {
        if let Err(error) = store.open_now() {
            tracing::debug!(%error, "store not opened yet");
        }
        let request = shim_request(config, record, paths, &spec);
        // The container's networks go into the shim's namespace as for a
        // namespace container's; the guest takes over their addresses.
        let launched = super::vm::launch::launch(stdio, cgroup, request, &mut |pid| {
            super::vm::network::loopback_up(pid)?;
            network.connect(store, record, paths, pid)?;
            super::vm::shim_networks(network.endpoints(), &record.run.networks)
        });
        if launched.is_err() {
            network.disconnect(store, record);
        }
        let launched = launched?;
        let container_io = container_io.finish(attachment)?;
        return Ok((launched, container_io, spec.process));
    }
    let launched = berth_runtime::launch(&spec, stdio, cgroup, &mut |pid| {
        // This runs while the container builds its root and the monitor
        // would only wait: open the store (deferred since the fork) now, so
        // that recording the start does not wait for it.
        if let Err(error) = store.open_now() {
            tracing::debug!(%error, "store not opened yet");
        }
        network.connect(store, record, paths, pid.as_raw())
    });
    if launched.is_err() {
        network.disconnect(store, record);
    }
    match launched {
        Ok(launched) => {
            let container_io = container_io.finish(attachment)?;
            Ok((launched, container_io, spec.process))
        }
        Err(error) => Err((error.to_string(), error.exit_status())),
    }
}

/// What a VM container's shim is asked to run (its network is filled in
/// by the launch: the endpoint is known once the shim's namespace is).
fn shim_request(
    config: &EngineConfig,
    record: &ContainerRecord,
    paths: &ContainerPaths,
    spec: &berth_runtime::ContainerSpec,
) -> super::vm::shim::ShimRequest {
    super::vm::shim::ShimRequest {
        spec: spec.clone(),
        cache: super::vm::guest_cache(&config.root),
        run_dir: paths.vm.clone(),
        memory_mib: super::vm::guest_memory_mib(record),
        networks: Vec::new(),
        embedded_dns: super::spec::uses_embedded_dns(&record.run),
    }
}

/// The first run of a claimed warm pool member: its cgroup and network
/// are in place; the sandbox gets the claiming run's spec and streams.
fn start_in_sandbox(
    config: &EngineConfig,
    store: &Store,
    record: &ContainerRecord,
    paths: &ContainerPaths,
    cgroups: &CgroupVersion,
    sandbox: member::WarmSandbox,
    attachment: &mut Attachment,
) -> Result<Started, (String, i32)> {
    let layers = super::start::container_layers(store, record)
        .map_err(|error| (crate::ErrorChain(&error).to_string(), 125))?;
    let mut spec = build_spec(
        record,
        paths,
        &layers,
        &config.root,
        &config.root.join("volumes"),
        cgroups,
    )
    .map_err(|error| (crate::ErrorChain(&error).to_string(), 125))?;
    spec.process.console_size = console_size(record, attachment);
    let (stdio, container_io) = make_stdio(record)?;
    let launched = match sandbox {
        member::WarmSandbox::Namespace(sandbox) => sandbox
            .start(&spec, stdio)
            .map_err(|error| (error.to_string(), error.exit_status()))?,
        // The shim builds the root (with the run's binds) on its share and
        // the agent runs the process: the cold shim's code from there on.
        member::WarmSandbox::Vm(shim) => {
            shim.start(shim_request(config, record, paths, &spec), stdio)?
        }
    };
    let container_io = container_io.finish(attachment)?;
    Ok((launched, container_io, spec.process))
}

/// The monitor's side of the container's stdio before launch: ready pipes,
/// or (with a terminal) the socket the container will send its pty over.
enum PendingIo {
    Ready(ContainerIo),
    Terminal { socket: OwnedFd, wants_stdin: bool },
}

impl PendingIo {
    /// After launch: a terminal's master has arrived by now (sent before the
    /// container's exec, which `launch` waited for). The error is a failed
    /// start's (message, Docker's status).
    fn finish(self, attachment: &Attachment) -> Result<ContainerIo, (String, i32)> {
        self.receive(attachment).map_err(|error| {
            (
                format!("failed to receive the container's terminal: {error}"),
                125,
            )
        })
    }

    fn receive(self, attachment: &Attachment) -> nix::Result<ContainerIo> {
        match self {
            PendingIo::Ready(io) => Ok(io),
            PendingIo::Terminal {
                socket,
                wants_stdin,
            } => {
                let master =
                    berth_runtime::console::receive_fd(std::os::fd::AsRawFd::as_raw_fd(&socket))?;
                if let Some(size) = attachment
                    .stdout
                    .as_ref()
                    .and_then(berth_runtime::console::window_size)
                {
                    berth_runtime::console::set_window_size(&master, &size);
                }
                let input = if wants_stdin {
                    Some(master.try_clone().map_err(|_| nix::Error::EMFILE)?)
                } else {
                    None
                };
                Ok(ContainerIo {
                    output: master,
                    errors: None,
                    input,
                })
            }
        }
    }
}

fn null() -> nix::Result<OwnedFd> {
    fs_err::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .map(OwnedFd::from)
        .map_err(|_| nix::Error::ENOENT)
}

/// The container's stdio and the monitor's side of it; the error is a failed
/// start's (message, Docker's status).
fn make_stdio(record: &ContainerRecord) -> Result<(Stdio, PendingIo), (String, i32)> {
    open_stdio(record).map_err(|error| {
        (
            format!("failed to set up the container's stdio: {error}"),
            125,
        )
    })
}

fn open_stdio(record: &ContainerRecord) -> nix::Result<(Stdio, PendingIo)> {
    // `-i` keeps stdin open even with nothing attached yet (`run -d -i`,
    // then `attach`), as Docker does.
    let wants_stdin = record.run.open_stdin;
    if record.run.tty {
        let (ours, theirs) = berth_runtime::console::console_socket_pair()?;
        let stdio = Stdio {
            stdin: null()?,
            stdout: null()?,
            stderr: null()?,
            console: Some(theirs),
        };
        return Ok((
            stdio,
            PendingIo::Terminal {
                socket: ours,
                wants_stdin,
            },
        ));
    }
    let (out_read, out_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    let (err_read, err_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    let (stdin, input) = if wants_stdin {
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        (read, Some(write))
    } else {
        (null()?, None)
    };
    Ok((
        Stdio {
            stdin,
            stdout: out_write,
            stderr: err_write,
            console: None,
        },
        PendingIo::Ready(ContainerIo {
            output: out_read,
            errors: Some(err_read),
            input,
        }),
    ))
}

/// Sleeps the restart backoff in short steps; false as soon as the user
/// stopped (or removed) the container.
fn wait_unless_stopped(store: &Store, paths: &ContainerPaths, id: &str, delay: Duration) -> bool {
    let deadline = std::time::Instant::now() + delay;
    loop {
        if paths.stop_marker().exists() || read_state(store, id).is_none() {
            return false;
        }
        let now = std::time::Instant::now();
        if now >= deadline {
            return true;
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(50)));
    }
}

/// How long a container runs before its monitor trims its own memory.
const TRIM_DELAY: Duration = Duration::from_millis(50);

/// Docker's restart rules.
pub(super) fn cleanup(cgroup: &dyn CgroupManager, paths: &ContainerPaths) {
    if let Err(error) = cgroup.delete() {
        tracing::warn!(%error, "failed to delete the container cgroup");
    }
    tracing::debug!("cgroup deleted");
    if let Err(error) = unmount_rootfs(&paths.rootfs()) {
        tracing::warn!(%error, "failed to unmount the container root");
    }
    // A VM container's: what a killed shim could not remove (its VM's
    // logs); nothing there is in use once the container's processes are gone.
    match fs_err::remove_dir_all(&paths.vm) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => tracing::warn!(%error, "failed to remove the VM directory"),
    }
}

/// The record as stored now, under its current name (`rename` changes the
/// row's name only), so that events name the container as Docker does.
pub(super) fn current_record(store: &Store, started_with: &ContainerRecord) -> ContainerRecord {
    store
        .container(&started_with.id)
        .ok()
        .flatten()
        .and_then(|row| {
            let record: ContainerRecord = serde_json::from_str(&row.record).ok()?;
            Some(ContainerRecord {
                name: row.name,
                ..record
            })
        })
        .unwrap_or_else(|| started_with.clone())
}

pub(crate) fn read_state(store: &Store, id: &str) -> Option<ContainerState> {
    let row = store.container(id).ok()??;
    serde_json::from_str(&row.state).ok()
}

pub(crate) fn write_state(store: &Store, id: &str, state: &ContainerState) {
    let json = serde_json::to_string(state).unwrap_or_default();
    if let Err(error) = store.set_container_state(id, &json) {
        tracing::warn!(%error, "failed to record the container state");
    }
}

/// The `State.ExitCode` of a start that failed with the CLI exit `status`:
/// dockerd keeps 126 and 127 (the command cannot be run, or is not found)
/// and records 128 for every other failure before the process ran; the
/// CLI's `run` exits 125 for those all the same.
fn failed_start_exit_code(status: i32) -> i32 {
    match status {
        125 => 128,
        status => status,
    }
}
