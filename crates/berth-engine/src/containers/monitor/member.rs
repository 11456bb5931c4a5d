//! A warm pool member's monitor. It builds one sandbox for its image (the
//! container's cgroup, network and root, its first process waiting), offers
//! it on a socket, and then either hands it to the run that claims it — and
//! from there is that container's ordinary monitor — or, unclaimed after its
//! TTL, retired, or with its sandbox dead, removes everything and exits. A
//! claimant that stored the container's row and then releases the member
//! (or goes away) gets an ordinary `created` container back.

use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::{Duration, Instant};

use berth_store::Store;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::network::MonitorNetwork;
use super::protocol::{MonitorMessage, MonitorSender};
use super::{
    cleanup, container_cgroup, current_record, release_read_only_pages, run_monitor, supervise,
    Attachment, Prepared,
};
use crate::containers::paths::ContainerPaths;
use crate::containers::record::{ContainerRecord, Isolation};
use crate::containers::spec::{build_spec, cgroup_resources};
use crate::containers::state::process_start_time;
use crate::containers::vm;
use crate::containers::ContainerError;
use crate::warm::member::{MemberDir, MemberInfo, Taker};
use crate::warm::{ClaimMessage, WarmError};
use crate::{EngineConfig, EngineError};

/// A pool member's sandbox: a namespace container's first process waiting
/// on its socket, or a VM container's shim with its VM booted and waiting
/// for its claim. Dropped unclaimed, either is killed.
pub(crate) enum WarmSandbox {
    Namespace(berth_runtime::Sandbox),
    Vm(vm::launch::MemberShim),
}

impl WarmSandbox {
    /// The process that becomes the container's `State.Pid`.
    pub(super) fn pid(&self) -> Option<nix::unistd::Pid> {
        match self {
            WarmSandbox::Namespace(sandbox) => sandbox.pid(),
            WarmSandbox::Vm(shim) => shim.pid(),
        }
    }

    /// Readable once that process has died.
    pub(super) fn pidfd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        match self {
            WarmSandbox::Namespace(sandbox) => sandbox.pidfd(),
            WarmSandbox::Vm(shim) => shim.pidfd(),
        }
    }
}

/// Runs in the forked member monitor; never returns. `status` gets
/// `Started` once the member is offered (or `Failed`).
pub(crate) fn run_member(
    config: EngineConfig,
    record: ContainerRecord,
    dir: MemberDir,
    info: MemberInfo,
    status: OwnedFd,
) -> ! {
    run_monitor(status, &record.id, |sender| {
        // The member's start record, held while it lives (claimed or not):
        // a claimed member killed before it recorded the start leaves a
        // `created` row the next command repairs (see `reconcile`).
        let paths = ContainerPaths::new(&config.root, &config.run_root, &record.id);
        berth_store::permissions::create_private_directory_all(&paths.runtime)?;
        let lock = super::lock::MonitorLock::take_for_start(&paths)?.ok_or_else(|| {
            WarmError::StartedTwice {
                id: record.id.clone(),
            }
        })?;
        // Who is building the member, for the next pool operation should
        // this monitor be killed before the member is offered (a VM
        // member's boot takes seconds): see `warm::reap_leaked`.
        let mut info = info;
        info.monitor_pid = std::process::id() as i32;
        info.monitor_start_time = process_start_time(info.monitor_pid).unwrap_or(0);
        if let Err(source) = dir.write_building(&info) {
            lock.release();
            return Err(WarmError::Record {
                id: record.id.clone(),
                source,
            }
            .into());
        }
        let done = serve(&config, &record, &dir, info, sender);
        lock.release();
        done
    })
}

/// How long a claimed member waits for its claimant's connection.
const CLAIM_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything a member holds until it is claimed or ends.
struct Member<'a> {
    config: &'a EngineConfig,
    record: &'a ContainerRecord,
    dir: &'a MemberDir,
    paths: ContainerPaths,
    prepared: Prepared,
}

fn serve(
    config: &EngineConfig,
    record: &ContainerRecord,
    dir: &MemberDir,
    mut info: MemberInfo,
    sender: &mut MonitorSender,
) -> Result<(), EngineError> {
    let mut store = Store::open(&config.root)?;
    let paths = ContainerPaths::new(&config.root, &config.run_root, &record.id);
    let (cgroups, cgroup) = container_cgroup(record)?;
    let mut network = MonitorNetwork::new(record).map_err(|reason| WarmError::Network {
        id: record.id.clone(),
        reason,
    })?;
    let discard = |store: &Store| {
        cleanup(cgroup.as_ref(), &paths);
        crate::containers::remove::remove_files_and_row(store, &paths, &record.id);
        dir.remove();
    };
    let built = build_sandbox(
        config,
        &mut store,
        &mut network,
        record,
        &paths,
        &cgroups,
        cgroup.as_ref(),
    );
    let sandbox = match built {
        Ok(sandbox) => sandbox,
        Err(error) => {
            discard(&store);
            return Err(error);
        }
    };
    let listener = match UnixListener::bind(dir.offer_path()) {
        Ok(listener) => listener,
        Err(source) => {
            end_sandbox(sandbox, cgroup.as_ref());
            network.release(&mut store, record);
            discard(&store);
            return Err(WarmError::Offer {
                id: record.id.clone(),
                source,
            }
            .into());
        }
    };
    info.monitor_pid = std::process::id() as i32;
    info.monitor_start_time = process_start_time(info.monitor_pid).unwrap_or(0);
    info.sandbox_pid = sandbox.pid().map_or(0, |pid| pid.as_raw());
    if let Err(source) = dir.write_info(&info) {
        end_sandbox(sandbox, cgroup.as_ref());
        network.release(&mut store, record);
        discard(&store);
        return Err(WarmError::Record {
            id: record.id.clone(),
            source,
        }
        .into());
    }
    sender.send(&MonitorMessage::Started {
        pid: info.sandbox_pid,
    });
    sender.close();
    let member = Member {
        config,
        record,
        dir,
        paths,
        prepared: Prepared {
            store,
            network,
            cgroups,
            cgroup,
            sandbox,
        },
    };
    release_read_only_pages();
    member.wait(&listener, Duration::from_secs(info.ttl_seconds));
    Ok(())
}

fn build_sandbox(
    config: &EngineConfig,
    store: &mut Store,
    network: &mut MonitorNetwork,
    record: &ContainerRecord,
    paths: &ContainerPaths,
    cgroups: &berth_runtime::cgroups::CgroupVersion,
    cgroup: &dyn berth_runtime::cgroups::CgroupManager,
) -> Result<WarmSandbox, EngineError> {
    let layers = crate::containers::start::container_layers(store, record)?;
    paths.create_rootfs_directories()?;
    let spec = build_spec(
        record,
        paths,
        &layers,
        &config.root,
        &config.root.join("volumes"),
        cgroups,
    )?;
    let in_vm = record.run.isolation == Isolation::Vm;
    let mut resources = cgroup_resources(record, &spec);
    if in_vm {
        resources = vm::launch::cgroup_resources(resources);
    }
    cgroup
        .create(&resources)
        .map_err(|source| ContainerError::CreateCgroup {
            id: record.id.clone(),
            source: Box::new(source),
        })?;
    if in_vm {
        return build_vm_sandbox(config, store, network, record, paths, &spec, cgroup);
    }
    let sandbox = berth_runtime::Sandbox::prepare(&spec, cgroup, &mut |pid| {
        network.connect(store, record, paths, pid.as_raw())
    });
    sandbox.map(WarmSandbox::Namespace).map_err(|source| {
        network.disconnect(store, record);
        WarmError::Sandbox {
            id: record.id.clone(),
            source: Box::new(source),
        }
        .into()
    })
}

/// A VM member: its shim, in the member's cgroup, with the member's
/// network connected into its namespace as a cold VM container's is, boots
/// the VM with an empty root share (the member's `rootfs` directory, which
/// the claimed container's root is built on) and waits for its claim.
fn build_vm_sandbox(
    config: &EngineConfig,
    store: &mut Store,
    network: &mut MonitorNetwork,
    record: &ContainerRecord,
    paths: &ContainerPaths,
    spec: &berth_runtime::ContainerSpec,
    cgroup: &dyn berth_runtime::cgroups::CgroupManager,
) -> Result<WarmSandbox, EngineError> {
    let boot = vm::shim::MemberBoot {
        cache: vm::guest_cache(&config.root),
        run_dir: paths.vm.clone(),
        memory_mib: vm::guest_memory_mib(record),
        root: spec.rootfs.clone(),
        networks: Vec::new(),
    };
    let shim = vm::launch::launch_member(cgroup, boot, &mut |pid| {
        vm::network::loopback_up(pid)?;
        network.connect(store, record, paths, pid)?;
        vm::shim_networks(network.endpoints(), &record.run.networks)
    });
    shim.map(WarmSandbox::Vm).map_err(|(message, _)| {
        network.disconnect(store, record);
        vm::launch::reap_leftovers(cgroup);
        WarmError::VmSandbox {
            id: record.id.clone(),
            message,
        }
        .into()
    })
}

/// Kills an unclaimed sandbox; a VM's QEMU and virtiofsd, orphans then
/// (this monitor's: it is a subreaper), are reaped before the cgroup goes.
fn end_sandbox(sandbox: WarmSandbox, cgroup: &dyn berth_runtime::cgroups::CgroupManager) {
    let in_vm = matches!(sandbox, WarmSandbox::Vm(_));
    drop(sandbox);
    if in_vm {
        vm::launch::reap_leftovers(cgroup);
    }
}

impl<'a> Member<'a> {
    /// Waits for a claim until the TTL; ends the member if none comes, if
    /// it is retired, or if its sandbox dies.
    fn wait(self, listener: &UnixListener, ttl: Duration) {
        let deadline = Instant::now() + ttl;
        // Once a run took the member, only its connection matters, and it
        // comes at once: a claimant that died between its rename and its
        // connect must not keep the member forever.
        let mut taken_until: Option<Instant> = None;
        loop {
            let until = taken_until.unwrap_or(deadline);
            let remaining = until.saturating_duration_since(Instant::now());
            let timeout = PollTimeout::try_from(remaining.as_millis().min(i32::MAX as u128) as i32)
                .unwrap_or(PollTimeout::MAX);
            let Some(pidfd) = self.prepared.sandbox.pidfd() else {
                return self.end();
            };
            let mut fds = [
                PollFd::new(listener.as_fd(), PollFlags::POLLIN),
                PollFd::new(pidfd, PollFlags::POLLIN),
            ];
            match poll(&mut fds, timeout) {
                Err(nix::Error::EINTR) => continue,
                Err(_) => return self.end_if_untaken(taken_until.is_some()),
                Ok(_) => {}
            }
            let connection = fds[0].any().unwrap_or(false);
            let sandbox_died = fds[1].any().unwrap_or(false);
            if connection {
                if let Ok((stream, _)) = listener.accept() {
                    return self.answer(stream);
                }
                continue;
            }
            if let Some(until) = taken_until {
                if Instant::now() >= until {
                    return self.end();
                }
                continue;
            }
            if sandbox_died || Instant::now() >= deadline {
                if self.dir.take(Taker::Retire) {
                    tracing::debug!(member = %self.record.id, sandbox_died, "pool member ends");
                    return self.end();
                }
                if !self.dir.taken_path(Taker::Claim).exists() {
                    // Not claimed: its directory is gone (the run root was
                    // removed under it).
                    return self.end();
                }
                // A run claimed it first: its connection is on the way.
                taken_until = Some(Instant::now() + CLAIM_CONNECT_TIMEOUT);
            }
        }
    }

    fn end_if_untaken(self, taken: bool) {
        if taken || self.dir.take(Taker::Retire) {
            self.end();
        }
    }

    /// Removes the sandbox and everything built for it.
    fn end(self) {
        let (store, paths, record, dir) = self.tear_down();
        crate::containers::remove::remove_files_and_row(&store, &paths, &record.id);
        // Last: a pool listing that no longer shows the member finds its
        // files gone too.
        dir.remove();
    }

    /// Tears the sandbox down (its process, network address, cgroup) but
    /// keeps the container's row and directory, which its claimant stored:
    /// what is left is an ordinary `created` container, which a later
    /// `start` starts cold. (The start record goes when this monitor ends.)
    fn release(self) {
        let (_, _, record, dir) = self.tear_down();
        dir.remove();
        tracing::debug!(container = %record.id, "pool member released");
    }

    /// The sandbox's process, its network address and cgroup go; the store
    /// and the member's directory are the caller's to finish with.
    fn tear_down(self) -> (Store, ContainerPaths, &'a ContainerRecord, &'a MemberDir) {
        let Member {
            record,
            dir,
            paths,
            prepared,
            ..
        } = self;
        let Prepared {
            mut store,
            mut network,
            cgroup,
            sandbox,
            ..
        } = prepared;
        end_sandbox(sandbox, cgroup.as_ref());
        network.release(&mut store, record);
        cleanup(cgroup.as_ref(), &paths);
        (store, paths, record, dir)
    }

    /// The claimant went without starting the container. Before it stored
    /// the container's row (its name was taken, say) the member ends; after
    /// (a `run` killed between its claim and its start, an API server that
    /// went away) the container is the claimant's: released, not removed.
    fn release_or_end(self) {
        match self.prepared.store.container(&self.record.id) {
            Ok(None) => self.end(),
            _ => self.release(),
        }
    }

    /// A connection to the member: a claim (with the run's streams), a
    /// release, or a retirement.
    fn answer(self, stream: UnixStream) {
        let message = match berth_runtime::handoff::receive_message(&stream) {
            Ok(Some(message)) => message,
            _ => return self.release_or_end(),
        };
        let (body, mut fds) = message;
        let claim: ClaimMessage = match serde_json::from_slice(&body) {
            Ok(claim) => claim,
            Err(_) => return self.release_or_end(),
        };
        let ClaimMessage::Claim {
            stdin,
            stdout,
            stderr,
        } = claim
        else {
            // A release; or a retirement, which only a member not taken by
            // a claim gets (the row is absent then, and the member ends).
            return self.release_or_end();
        };
        if fds.is_empty() {
            return self.release_or_end();
        }
        let status = fds.remove(0);
        let mut streams = fds.into_iter();
        let attachment = Attachment {
            stdin: stdin.then(|| streams.next()).flatten(),
            stdout: stdout.then(|| streams.next()).flatten(),
            stderr: stderr.then(|| streams.next()).flatten(),
        };
        let mut sender = MonitorSender::new(status);
        // The claimant stored the container's row (its name and settings)
        // before it connected.
        let Some(claimed) = self
            .prepared
            .store
            .container(&self.record.id)
            .ok()
            .flatten()
            .map(|_| current_record(&self.prepared.store, self.record))
        else {
            let error = WarmError::NoRecord {
                id: self.record.id.clone(),
            };
            sender.send(&MonitorMessage::Failed {
                message: crate::ErrorChain(&error).to_string(),
                status: 125,
            });
            return self.end();
        };
        self.dir.remove();
        tracing::debug!(container = %claimed.id, "pool member claimed");
        let config = self.config;
        if let Err(error) = supervise(
            config,
            &claimed,
            attachment,
            &mut sender,
            super::Begin::Warm(Box::new(self.prepared)),
        ) {
            sender.send(&MonitorMessage::Failed {
                message: crate::ErrorChain(&error).to_string(),
                status: 125,
            });
        }
    }
}
