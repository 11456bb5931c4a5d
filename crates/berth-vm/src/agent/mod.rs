//! The guest agent: PID 1 in the guest. It mounts `/proc`, `/sys` and
//! `/dev`, loads the virtio modules, opens the virtio-serial port named in
//! its configuration, says `Ready`, runs what the host asks (see
//! [`crate::protocol`]) and powers the guest off when the host says
//! `Shutdown` or goes away.
//!
//! It is a function, not a program of its own, so that berth's own static
//! binary can be the initramfs's `/init`: berth's `main` calls [`main`] when
//! [`is_guest_init`] says it is PID 1 of a berth guest. For now the
//! `berth-vm-agent` binary of this crate does just that.

mod boot;
mod exec;
mod network;
mod processes;
mod root;

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::time::Duration;

use fs_err as fs;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use serde::{Deserialize, Serialize};

use crate::protocol::{
    encode_message, FrameDecoder, GuestMessage, HostMessage, ProtocolError, Ready, PROTOCOL_VERSION,
};

/// Where the initramfs puts the agent's configuration.
pub const AGENT_CONFIG_PATH: &str = "/berth/agent.json";

/// How long the agent waits for its port to appear and for the host to be
/// connected to it.
const PORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The agent's configuration, written by the host into the initramfs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentConfig {
    /// The virtio-serial port to talk to the host on.
    pub port: String,
    /// Modules to load, in order (guest paths).
    pub modules: Vec<String>,
    pub power_off: PowerOff,
}

/// How the agent ends the guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PowerOff {
    /// `reboot(RB_POWER_OFF)`: ACPI power-off through microvm's GED device.
    #[default]
    Halt,
    /// `reboot(RB_AUTOBOOT)`, which QEMU's `-no-reboot` turns into an exit.
    Reboot,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("failed to read the agent configuration {path:?}")]
    ReadConfig {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("malformed agent configuration {path:?}")]
    ParseConfig {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("failed to mount {target:?}")]
    Mount {
        target: PathBuf,
        #[source]
        source: nix::Error,
    },
    #[error("failed to load module {path:?}")]
    LoadModule {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no virtio-serial port named {name:?} appeared within {waited:?}")]
    NoPort { name: String, waited: Duration },
    #[error("the host did not connect to port {name:?} within {waited:?}")]
    HostAbsent { name: String, waited: Duration },
    #[error("failed to open the port {path:?}")]
    OpenPort {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to talk to the host")]
    Channel {
        #[source]
        source: std::io::Error,
    },
    #[error("failed to watch for child processes")]
    SignalFd {
        #[source]
        source: nix::Error,
    },
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
}

/// Whether this process is PID 1 of a berth guest (and so should be the
/// agent rather than whatever its arguments say). The pid comes first: berth's
/// `main` asks this on every run, and anywhere but a guest's /init that is
/// one `getpid` and no file system access.
#[inline]
pub fn is_guest_init() -> bool {
    std::process::id() == 1 && std::path::Path::new(AGENT_CONFIG_PATH).exists()
}

/// Runs the agent and powers the guest off; never returns. Failures go to
/// the console (`/dev/console`, the serial port the host logs).
pub fn main() -> ! {
    let init_started_ns = boot::boottime_ns();
    let mut power_off = PowerOff::default();
    if let Err(error) = serve(init_started_ns, &mut power_off) {
        eprintln!("berth-agent: {}", error_chain(&error));
    }
    boot::power_off(power_off)
}

fn serve(init_started_ns: u64, power_off: &mut PowerOff) -> Result<(), AgentError> {
    boot::mount_basics()?;
    let path = PathBuf::from(AGENT_CONFIG_PATH);
    let text = fs::read(&path).map_err(|source| AgentError::ReadConfig {
        path: path.clone(),
        source,
    })?;
    let config: AgentConfig =
        serde_json::from_slice(&text).map_err(|source| AgentError::ParseConfig {
            path: path.clone(),
            source,
        })?;
    *power_off = config.power_off;
    boot::load_modules(&config.modules)?;

    // SIGCHLD is taken through a signalfd, so the exec loop can wait for
    // output and exits in one poll; std's Command clears the mask in the
    // children it starts.
    let mut mask = SigSet::empty();
    mask.add(Signal::SIGCHLD);
    mask.thread_block()
        .map_err(|source| AgentError::SignalFd { source })?;
    let mut children = SignalFd::with_flags(&mask, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        .map_err(|source| AgentError::SignalFd { source })?;

    let mut port = boot::open_port(&config.port, PORT_TIMEOUT)?;
    let channel_error = |source| AgentError::Channel { source };
    let ready = GuestMessage::Ready(Ready {
        protocol: PROTOCOL_VERSION,
        kernel_release: boot::kernel_release(),
        init_started_ns,
        ready_ns: boot::boottime_ns(),
    });
    port.write_all(&encode_message(&ready))
        .map_err(channel_error)?;

    let mut decoder = FrameDecoder::default();
    let mut buffer = vec![0u8; 64 * 1024];
    let mut filesystems = root::Filesystems::default();
    let mut links = network::GuestLinks::default();
    loop {
        while let Some(frame) = decoder.next_frame()? {
            if matches!(
                frame.kind,
                crate::protocol::FrameKind::Stdin | crate::protocol::FrameKind::DnsAnswer
            ) {
                continue; // for a process that has ended
            }
            match frame.message::<HostMessage>()? {
                HostMessage::Run(request) => {
                    if let Err(error) = links.prepare(&request.networks, request.embedded_dns) {
                        let failed = GuestMessage::SetupFailed {
                            error: error_chain(&error),
                        };
                        port.write_all(&encode_message(&failed))
                            .map_err(channel_error)?;
                        continue;
                    }
                    let root = match filesystems.prepare(&request) {
                        Ok(root) => root,
                        Err(error) => {
                            let failed = GuestMessage::SetupFailed {
                                error: error_chain(&error),
                            };
                            port.write_all(&encode_message(&failed))
                                .map_err(channel_error)?;
                            continue;
                        }
                    };
                    let outcome = exec::run(
                        &request,
                        root.as_deref(),
                        &mut children,
                        &mut port,
                        &mut decoder,
                        links.dns.as_mut(),
                    )
                    .map_err(channel_error)?;
                    let finished = match outcome {
                        exec::Outcome::Finished(finished) => finished,
                        exec::Outcome::Shutdown => return Ok(()),
                    };
                    let exited = GuestMessage::Exited {
                        process: crate::protocol::MAIN_PROCESS,
                        code: finished.code,
                        error: finished.error,
                    };
                    port.write_all(&encode_message(&exited))
                        .map_err(channel_error)?;
                }
                // Nothing runs: nothing to signal, resize, credit or list.
                HostMessage::Signal { .. }
                | HostMessage::Resize { .. }
                | HostMessage::OutputCredit { .. } => {}
                HostMessage::StageRoot { root, networks } => {
                    // `lo`, which every container has, and the member's
                    // cards up too; then a rehearsal of a process's start.
                    let staged = match links.prepare(&networks, false) {
                        Ok(()) => filesystems
                            .stage(&root)
                            .map_err(|error| error_chain(&error)),
                        Err(error) => Err(error_chain(&error)),
                    };
                    if staged.is_ok() {
                        exec::rehearse();
                    }
                    let answer = match staged {
                        Ok(()) => GuestMessage::RootStaged,
                        Err(error) => GuestMessage::SetupFailed { error },
                    };
                    port.write_all(&encode_message(&answer))
                        .map_err(channel_error)?;
                }
                HostMessage::DropCaches => {
                    boot::drop_caches();
                    port.write_all(&encode_message(&GuestMessage::CachesDropped))
                        .map_err(channel_error)?;
                }
                message @ (HostMessage::ConnectNetwork { .. }
                | HostMessage::DisconnectNetwork { .. }) => {
                    let answer = network::change(&message);
                    port.write_all(&encode_message(&answer))
                        .map_err(channel_error)?;
                }
                HostMessage::ReadStats => {
                    let stats =
                        GuestMessage::Stats(processes::stats(nix::unistd::Pid::from_raw(0)));
                    port.write_all(&encode_message(&stats))
                        .map_err(channel_error)?;
                }
                HostMessage::ListProcesses => {
                    let none = GuestMessage::Processes(processes::table(
                        nix::unistd::Pid::from_raw(0),
                        None,
                    ));
                    port.write_all(&encode_message(&none))
                        .map_err(channel_error)?;
                }
                HostMessage::Exec { process, .. } => {
                    let exited = GuestMessage::Exited {
                        process,
                        code: 126,
                        error: Some("the container is not running".to_owned()),
                    };
                    port.write_all(&encode_message(&exited))
                        .map_err(channel_error)?;
                }
                HostMessage::Shutdown => return Ok(()),
            }
        }
        // The port reads 0 bytes once the host has disconnected.
        let read = port.read(&mut buffer).map_err(channel_error)?;
        if read == 0 {
            return Ok(());
        }
        decoder.push(&buffer[..read]);
    }
}

/// Waits until `port` polls without POLLHUP: virtio_console reports the host
/// side as hung up (and reads as end of file) until QEMU has told the guest
/// that its chardev is connected, which can come a moment after the port's
/// name.
fn wait_host_connected(port: &fs::File, name: &str, timeout: Duration) -> Result<(), AgentError> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let mut fds = [PollFd::new(port.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::ZERO) {
            Ok(_) => {
                let events = fds[0].revents().unwrap_or(PollFlags::empty());
                if !events.contains(PollFlags::POLLHUP) || events.contains(PollFlags::POLLIN) {
                    return Ok(());
                }
            }
            Err(nix::Error::EINTR) => continue,
            Err(source) => {
                return Err(AgentError::Channel {
                    source: std::io::Error::from(source),
                })
            }
        }
        if std::time::Instant::now() >= deadline {
            return Err(AgentError::HostAbsent {
                name: name.to_string(),
                waited: timeout,
            });
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_round_trips() {
        let config = AgentConfig {
            port: "org.berth.agent".into(),
            modules: vec!["/berth/modules/virtio.ko".into()],
            power_off: PowerOff::Reboot,
        };
        let json = serde_json::to_string(&config).unwrap();
        assert!(json.contains(r#""power_off":"reboot""#), "{json}");
        assert_eq!(serde_json::from_str::<AgentConfig>(&json).unwrap(), config);
    }

    #[test]
    fn is_not_guest_init_on_the_host() {
        assert!(!is_guest_init());
    }
}
