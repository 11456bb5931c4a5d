//! The host ↔ guest agent protocol, spoken over one virtio-serial port.
//!
//! A stream of frames, each `[u32 big-endian length][u8 kind][payload]`,
//! where the length counts the kind byte and the payload. Kind 1 carries a
//! JSON control message ([`HostMessage`] to the guest, [`GuestMessage`] to
//! the host); kinds 2 and 3 carry a process's stdout and stderr bytes as they
//! are, so output is never re-encoded, and kind 4 the bytes for its stdin
//! (an empty one closes it); each of these starts with the [`ProcessId`] it
//! is about (`[u32 BE process][bytes]`). Several processes run at once: the
//! `Run`'s (process 0, the container's first) and each `Exec`'s. A session:
//!
//! ```text
//! guest: Ready { protocol, kernel_release, init_started_ns, ready_ns }
//! host:  Run { args, env, cwd, root, mounts, container, stdin, networks, embedded_dns }
//! guest: SetupFailed { error }           (the root or a mount could not be made)
//!      | Started { process: 0, pid } ... Exited { process: 0, code, error }
//!        while it runs, host: Stdin / Signal / Resize for any process,
//!                             Exec { process: N, .. } → Started/Exited { process: N },
//!                             ListProcesses → Processes,
//!                             ConnectNetwork / DisconnectNetwork → NetworkChanged
//!        guest: Stdout / Stderr of any process
//!        host:  OutputCredit { process, stdout, stderr } as it writes them out
//!        guest: InputCredit { process, bytes } as it writes stdin to the process
//! host:  Run ... | Shutdown (or closes the channel)   → the guest powers off
//! ```
//!
//! When process 0 ends, the guest kernel ends the processes of its pid
//! namespace (the execs): each gets its `Exited` before process 0's.
//!
//! Flow control (see [`crate::flow`]): each process starts with
//! [`OUTPUT_WINDOW`] bytes of credit per output stream and [`INPUT_WINDOW`]
//! of stdin. The agent reads a process's pipe only while it has credit for
//! it, so a process whose host reader stops reading blocks on its own pipe
//! and nothing else waits; the host gives credit back (`OutputCredit`) as it
//! writes the bytes out. Likewise the host sends a process's stdin only
//! within the credit the agent gives back (`InputCredit`) as the process
//! takes it.

use serde::{Deserialize, Serialize};

/// The name of the virtio-serial port the agent looks for
/// (`/sys/class/virtio-ports/vport*/name`).
pub const PORT_NAME: &str = "org.berth.agent";

/// Bumped whenever a message changes shape; the host refuses another.
pub const PROTOCOL_VERSION: u32 = 9;

/// The largest frame either side accepts: a bound on what a confused or
/// hostile peer can make the other allocate.
pub const MAX_FRAME: usize = 16 << 20;

/// The bytes of one process's stdout (and as many of its stderr) the agent
/// may send before the host has written them out: four of the agent's 64 KiB
/// reads in flight, so a fast writer is never waiting on a credit's round
/// trip (measured under TCG: `dd` of 50 and 200 MiB as fast as without
/// flow control, docs/VM.md), and a
/// bound on what the host holds for a reader that stopped (256 KiB per
/// stream, against the 64 KiB of a Linux pipe a namespace container's
/// output waits in).
pub const OUTPUT_WINDOW: u32 = 256 << 10;

/// The bytes of one process's stdin the host may send before the agent has
/// written them to the process.
pub const INPUT_WINDOW: u32 = 256 << 10;

/// What the agent reads beyond a stream's credit from the pipes of a process
/// that has ended (what it left there, sent before its `Exited`): a pipe
/// holds at most `/proc/sys/fs/pipe-max-size` (1 MiB by default) unread.
pub const DRAIN_ALLOWANCE: u32 = 1 << 20;

/// A process to run in the guest.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRequest {
    /// argv; `args[0]` is looked up in the `PATH` of `env` when it has no `/`.
    pub args: Vec<String>,
    /// The whole environment, `KEY=value` each (nothing is inherited).
    pub env: Vec<String>,
    /// The working directory, absolute (inside `root`).
    pub cwd: String,
    /// The virtiofs share to run the process in, as its `/`. `None`: the
    /// initramfs itself (the agent's own world; tests of the boot only).
    #[serde(default)]
    pub root: Option<GuestRoot>,
    /// Further shares mounted inside the root (the `-v` binds and volumes).
    #[serde(default)]
    pub mounts: Vec<GuestMount>,
    /// A container's whole settings (berth-runtime's spec, its host paths
    /// unused here): the process runs as that container's would, in new pid
    /// and mount namespaces of the guest with its own `/proc`, its hostname,
    /// masked and read-only paths, user, capabilities, limits and seccomp
    /// (`berth_runtime::init::enter_guest_container`); `args`, `env` and
    /// `cwd` are then its process's. `None`: a plain process of the agent's.
    #[serde(default)]
    pub container: Option<Box<berth_runtime::ContainerSpec>>,
    /// Whether the host sends stdin frames; otherwise stdin is /dev/null.
    #[serde(default)]
    pub stdin: bool,
    /// The guest's network cards, one per network of the container in its
    /// order (the first is `eth0`), each found by its MAC and configured
    /// before the process starts (by the first run that names them; `lo`
    /// comes up in any case).
    #[serde(default)]
    pub networks: Vec<GuestNetwork>,
    /// One of the container's networks has berth's embedded DNS (a
    /// user-defined network): the agent answers on 127.0.0.11:53 in the
    /// guest by relaying each query to the host (`DnsQuery`/`DnsAnswer`
    /// frames), where the container's DNS server listens in the shim's
    /// namespace.
    #[serde(default)]
    pub embedded_dns: bool,
}

/// One guest network card: the container's address on one network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestNetwork {
    /// The card's MAC (QEMU's `virtio-net-device,mac=`): how the agent
    /// finds it, whatever order the guest kernel probed the cards in.
    pub mac: String,
    pub address: std::net::Ipv4Addr,
    pub prefix_len: u8,
    /// The default route's gateway: set on the one network that has the
    /// default route (the first, as for a namespace container's `eth0`).
    pub gateway: Option<std::net::Ipv4Addr>,
    /// The card's further addresses with their prefixes: its IPv6 one on a
    /// network with IPv6, its link-local ones (`--link-local-ip`).
    #[serde(default)]
    pub more_addresses: Vec<(std::net::IpAddr, u8)>,
    /// The default IPv6 route's gateway, on the network that has the
    /// default route when it has IPv6.
    #[serde(default)]
    pub ipv6_gateway: Option<std::net::Ipv6Addr>,
}

/// Where the embedded DNS answers, in the guest as in a namespace container.
pub const EMBEDDED_DNS: std::net::SocketAddrV4 =
    std::net::SocketAddrV4::new(std::net::Ipv4Addr::new(127, 0, 0, 11), 53);

/// The container's root: a virtiofs share the agent mounts at
/// [`GUEST_ROOT_DIR`] with `/proc`, `/sys` and a `/dev` of its own, and
/// `chroot`s the process into.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestRoot {
    /// The share's virtiofs tag.
    pub tag: String,
    pub read_only: bool,
    /// A directory of the share to use as the root instead of the share's
    /// own root (a warm pool member's share, on whose `root` directory the
    /// claimed container's root is mounted after virtiofsd started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subdir: Option<String>,
}

/// A share mounted at `target` inside the root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestMount {
    pub tag: String,
    /// An absolute path in the container, resolved inside its root (an
    /// image's symlinks cannot send it elsewhere) and made if missing.
    pub target: String,
    pub read_only: bool,
}

/// Where the agent mounts the container's root share.
pub const GUEST_ROOT_DIR: &str = "/mnt/root";

/// Which process a message or a stream frame is about: [`MAIN_PROCESS`]
/// for the `Run`'s, the number the host chose for an `Exec`'s.
pub type ProcessId = u32;

/// The `Run`'s process: the container's first.
pub const MAIN_PROCESS: ProcessId = 0;

/// A further process in the running container (`exec`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExecRequest {
    /// Its whole settings (args, env, cwd, user, capabilities, seccomp,
    /// `tty` and the terminal's first size), applied as the namespace
    /// runtime's exec applies them, in the container's pid and mount
    /// namespaces.
    pub process: berth_runtime::ProcessSpec,
    /// Whether the host sends stdin frames; otherwise stdin is /dev/null.
    pub stdin: bool,
}

/// Sent by the host.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostMessage {
    Run(RunRequest),
    /// A warm member, before its claim: mount this root share (whose
    /// `subdir` is still empty) and what every container root gets, and
    /// give the member's network cards their addresses, so that the claim's
    /// `Run` (which must name the same root and networks) only binds and
    /// moves them; `RootStaged` follows, or `SetupFailed`.
    StageRoot {
        root: GuestRoot,
        #[serde(default)]
        networks: Vec<GuestNetwork>,
    },
    /// `network connect` of the running container: the spare card with
    /// `network.mac` (down, without an address, since the boot) is named
    /// `name` (the name of its veth on the host, `ethN`; a spare that had
    /// that name takes another), gets the network's addresses, and comes
    /// up; no default route (the first network keeps it, as for a
    /// namespace container). `NetworkChanged` follows.
    ConnectNetwork {
        name: String,
        network: GuestNetwork,
    },
    /// `network disconnect`: the card `network.mac` goes down and loses
    /// `network`'s addresses (and the routes through it): a spare again.
    /// `NetworkChanged` follows.
    DisconnectNetwork {
        network: GuestNetwork,
    },
    /// Start a process in the running container (only while the `Run`'s
    /// process runs; a number no running process has).
    Exec {
        process: ProcessId,
        request: Box<ExecRequest>,
    },
    /// A signal for a running process (its number on x86-64 Linux).
    Signal {
        #[serde(default)]
        process: ProcessId,
        signal: i32,
    },
    /// A process's terminal has a new size.
    Resize {
        process: ProcessId,
        rows: u16,
        columns: u16,
    },
    /// `top`: the container's processes, as `ps -ef` shows them.
    ListProcesses,
    /// `stats`: the guest's counters ([`GuestStats`]).
    ReadStats,
    /// Files of the root changed behind the guest's back (`cp` into the
    /// running container): drop the guest's clean caches, so that it reads
    /// them anew; `CachesDropped` follows.
    DropCaches,
    /// The host has written out this many more bytes of the process's
    /// stdout and stderr: the agent may read and send as many more.
    OutputCredit {
        process: ProcessId,
        stdout: u32,
        stderr: u32,
    },
    /// Power the guest off now.
    Shutdown,
}

/// The agent's first message, once it has mounted, loaded its modules and
/// opened the port. Times are the guest's `CLOCK_BOOTTIME`, from the start of
/// the kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ready {
    pub protocol: u32,
    pub kernel_release: String,
    /// When `/init` began: the kernel's own boot time.
    pub init_started_ns: u64,
    /// When the port was open and this message about to be written.
    pub ready_ns: u64,
}

/// Sent by the guest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum GuestMessage {
    Ready(Ready),
    /// A process is running (its pid in the guest); a process that could
    /// not be started gets `Exited` without it.
    Started {
        #[serde(default)]
        process: ProcessId,
        pid: i32,
    },
    /// A process has ended: its exit code, or 128 + signal, or 126/127 when
    /// it could not be started, with `error` saying why (Docker's words
    /// where it has them). Its output frames all came before.
    Exited {
        #[serde(default)]
        process: ProcessId,
        code: i32,
        error: Option<String>,
    },
    /// The answer to `ListProcesses`.
    Processes(ProcessTable),
    /// The answer to `ReadStats`.
    Stats(GuestStats),
    /// The answer to `DropCaches`.
    CachesDropped,
    /// The answer to `StageRoot`.
    RootStaged,
    /// The answer to `ConnectNetwork` and `DisconnectNetwork`: done, or
    /// why not (nothing of the card changed then, or it is a spare again).
    NetworkChanged {
        #[serde(default)]
        error: Option<String>,
    },
    /// The process has taken this many more bytes of its stdin: the host
    /// may send as many more.
    InputCredit {
        process: ProcessId,
        bytes: u32,
    },
    /// The root or a mount of the last `Run` could not be set up; nothing
    /// was started. An engine failure (Docker's 125), not the process's.
    SetupFailed {
        error: String,
    },
}

/// `ps -ef`'s columns for the processes of the guest's container.
pub use berth_runtime::ProcessTable;

/// The guest's own counters, for `stats`: the whole guest is the container
/// (its kernel included), so its memory is the container's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestStats {
    /// `/proc/meminfo` `MemTotal`, bytes: the guest's RAM as its kernel sees it.
    pub memory_total: u64,
    /// `MemTotal - MemFree`, bytes (page cache included, as a cgroup's usage).
    pub memory_used: u64,
    /// `Inactive(file)`, bytes, which `docker stats` leaves out of the usage.
    pub memory_inactive_file: u64,
    /// CPU time the guest spent not idle, nanoseconds (`/proc/stat`).
    pub cpu_ns: u64,
    /// Tasks (threads) in the container's pid namespace.
    pub tasks: u64,
    /// `/proc/vmstat` `oom_kill`.
    pub oom_kills: u64,
}

/// What a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    Message,
    Stdout,
    Stderr,
    /// Host to guest: the running process's input; empty: end of input.
    Stdin,
    /// Guest to host: a DNS query a process sent to 127.0.0.11:53, as
    /// `[u32 BE relay id][the datagram]`.
    DnsQuery,
    /// Host to guest: the answer to the query of that relay id, likewise.
    DnsAnswer,
}

impl FrameKind {
    fn byte(self) -> u8 {
        match self {
            FrameKind::Message => 1,
            FrameKind::Stdout => 2,
            FrameKind::Stderr => 3,
            FrameKind::Stdin => 4,
            FrameKind::DnsQuery => 5,
            FrameKind::DnsAnswer => 6,
        }
    }

    fn from_byte(byte: u8) -> Option<FrameKind> {
        match byte {
            1 => Some(FrameKind::Message),
            2 => Some(FrameKind::Stdout),
            3 => Some(FrameKind::Stderr),
            4 => Some(FrameKind::Stdin),
            5 => Some(FrameKind::DnsQuery),
            6 => Some(FrameKind::DnsAnswer),
            _ => None,
        }
    }
}

/// One decoded frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub kind: FrameKind,
    pub payload: Vec<u8>,
}

impl Frame {
    /// A stream frame's process and bytes.
    pub fn stream(&self) -> Result<(ProcessId, &[u8]), ProtocolError> {
        match self.payload.split_first_chunk::<4>() {
            Some((process, bytes)) => Ok((u32::from_be_bytes(*process), bytes)),
            None => Err(ProtocolError::ShortStream { kind: self.kind }),
        }
    }

    /// Decodes a control message frame as `T`.
    pub fn message<T: for<'de> Deserialize<'de>>(&self) -> Result<T, ProtocolError> {
        if self.kind != FrameKind::Message {
            return Err(ProtocolError::Unexpected { kind: self.kind });
        }
        serde_json::from_slice(&self.payload).map_err(|source| ProtocolError::Json { source })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("frame of {length} bytes is larger than the limit of {MAX_FRAME}")]
    TooLarge { length: usize },
    #[error("empty frame")]
    Empty,
    #[error("unknown frame kind {byte}")]
    UnknownKind { byte: u8 },
    #[error("expected a control message, got a {kind:?} frame")]
    Unexpected { kind: FrameKind },
    #[error("a {kind:?} frame without its process")]
    ShortStream { kind: FrameKind },
    #[error("malformed control message")]
    Json {
        #[source]
        source: serde_json::Error,
    },
}

/// Appends one frame to `out`.
pub fn encode_frame(kind: FrameKind, payload: &[u8], out: &mut Vec<u8>) {
    let length = u32::try_from(payload.len() + 1).expect("frames are far below 4 GiB");
    out.extend_from_slice(&length.to_be_bytes());
    out.push(kind.byte());
    out.extend_from_slice(payload);
}

/// Appends one stdout, stderr or stdin frame of `process` to `out`.
pub fn encode_stream(kind: FrameKind, process: ProcessId, bytes: &[u8], out: &mut Vec<u8>) {
    let length = u32::try_from(bytes.len() + 5).expect("frames are far below 4 GiB");
    out.extend_from_slice(&length.to_be_bytes());
    out.push(kind.byte());
    out.extend_from_slice(&process.to_be_bytes());
    out.extend_from_slice(bytes);
}

/// Encodes a control message as one frame.
pub fn encode_message<T: Serialize>(message: &T) -> Vec<u8> {
    let json = serde_json::to_vec(message).expect("protocol messages always serialize");
    let mut out = Vec::with_capacity(json.len() + 5);
    encode_frame(FrameKind::Message, &json, &mut out);
    out
}

/// Reassembles frames from bytes as they arrive, in pieces of any size.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    buffer: Vec<u8>,
}

impl FrameDecoder {
    pub fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The next complete frame, or `None` until more bytes arrive.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, ProtocolError> {
        let Some(header) = self.buffer.first_chunk::<4>() else {
            return Ok(None);
        };
        let length = u32::from_be_bytes(*header) as usize;
        if length > MAX_FRAME {
            return Err(ProtocolError::TooLarge { length });
        }
        if length == 0 {
            return Err(ProtocolError::Empty);
        }
        if self.buffer.len() < 4 + length {
            return Ok(None);
        }
        let byte = self.buffer[4];
        let kind = FrameKind::from_byte(byte).ok_or(ProtocolError::UnknownKind { byte })?;
        let payload = self.buffer[5..4 + length].to_vec();
        self.buffer.drain(..4 + length);
        Ok(Some(Frame { kind, payload }))
    }

    /// Whether bytes of an incomplete frame are waiting.
    pub fn has_partial(&self) -> bool {
        !self.buffer.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Host messages compare by their JSON (a container spec has no `Eq`).
    fn json(message: &HostMessage) -> String {
        serde_json::to_string(message).unwrap()
    }

    #[test]
    fn frames_survive_any_split() {
        let mut bytes = encode_message(&HostMessage::Run(RunRequest {
            args: vec!["uname".into(), "-r".into()],
            env: vec!["PATH=/bin".into()],
            cwd: "/".into(),
            root: None,
            mounts: vec![],
            container: None,
            stdin: false,
            networks: vec![],
            embedded_dns: false,
        }));
        encode_stream(FrameKind::Stdout, 7, b"hello\n", &mut bytes);
        encode_stream(FrameKind::Stderr, 0, b"", &mut bytes);
        bytes.extend(encode_message(&HostMessage::Shutdown));
        for split in 0..bytes.len() {
            let mut decoder = FrameDecoder::default();
            let mut frames = Vec::new();
            for piece in [&bytes[..split], &bytes[split..]] {
                decoder.push(piece);
                while let Some(frame) = decoder.next_frame().unwrap() {
                    frames.push(frame);
                }
            }
            assert!(!decoder.has_partial());
            assert_eq!(frames.len(), 4, "split at {split}");
            assert_eq!(
                json(&frames[0].message::<HostMessage>().unwrap()),
                json(&HostMessage::Run(RunRequest {
                    args: vec!["uname".into(), "-r".into()],
                    env: vec!["PATH=/bin".into()],
                    cwd: "/".into(),
                    root: None,
                    mounts: vec![],
                    container: None,
                    stdin: false,
                    networks: vec![],
                    embedded_dns: false,
                }))
            );
            assert_eq!(frames[1].kind, FrameKind::Stdout);
            assert_eq!(frames[1].stream().unwrap(), (7, &b"hello\n"[..]));
            assert_eq!(frames[2].kind, FrameKind::Stderr);
            assert_eq!(frames[2].stream().unwrap(), (0, &b""[..]));
            assert_eq!(
                json(&frames[3].message::<HostMessage>().unwrap()),
                json(&HostMessage::Shutdown)
            );
        }
    }

    #[test]
    fn messages_have_a_stable_json_shape() {
        let exited = GuestMessage::Exited {
            process: 2,
            code: 127,
            error: Some("not found".into()),
        };
        assert_eq!(
            serde_json::to_string(&exited).unwrap(),
            r#"{"type":"exited","process":2,"code":127,"error":"not found"}"#
        );
        assert_eq!(
            serde_json::to_string(&HostMessage::Resize {
                process: 1,
                rows: 24,
                columns: 80
            })
            .unwrap(),
            r#"{"type":"resize","process":1,"rows":24,"columns":80}"#
        );
        assert_eq!(
            serde_json::to_string(&HostMessage::Shutdown).unwrap(),
            r#"{"type":"shutdown"}"#
        );
        assert_eq!(
            serde_json::to_string(&HostMessage::Signal {
                process: 0,
                signal: 15
            })
            .unwrap(),
            r#"{"type":"signal","process":0,"signal":15}"#
        );
        assert_eq!(
            serde_json::to_string(&GuestMessage::Started { process: 0, pid: 7 }).unwrap(),
            r#"{"type":"started","process":0,"pid":7}"#
        );
        assert_eq!(
            serde_json::to_string(&HostMessage::OutputCredit {
                process: 3,
                stdout: 65536,
                stderr: 0
            })
            .unwrap(),
            r#"{"type":"output_credit","process":3,"stdout":65536,"stderr":0}"#
        );
        assert_eq!(
            serde_json::to_string(&GuestMessage::InputCredit {
                process: 3,
                bytes: 12
            })
            .unwrap(),
            r#"{"type":"input_credit","process":3,"bytes":12}"#
        );
    }

    #[test]
    fn a_run_names_its_root_and_mounts() {
        let run = HostMessage::Run(RunRequest {
            args: vec!["true".into()],
            env: vec![],
            cwd: "/".into(),
            root: Some(GuestRoot {
                tag: "root".into(),
                read_only: false,
                subdir: None,
            }),
            mounts: vec![GuestMount {
                tag: "share0".into(),
                target: "/data".into(),
                read_only: true,
            }],
            container: None,
            stdin: true,
            networks: vec![GuestNetwork {
                mac: "06:42:0a:58:00:02".into(),
                address: std::net::Ipv4Addr::new(10, 88, 0, 2),
                prefix_len: 16,
                gateway: Some(std::net::Ipv4Addr::new(10, 88, 0, 1)),
                more_addresses: vec![("fd00:88::2".parse().unwrap(), 64)],
                ipv6_gateway: Some("fd00:88::1".parse().unwrap()),
            }],
            embedded_dns: true,
        });
        let json = serde_json::to_string(&run).unwrap();
        assert_eq!(
            json,
            r#"{"type":"run","args":["true"],"env":[],"cwd":"/","root":{"tag":"root","read_only":false},"mounts":[{"tag":"share0","target":"/data","read_only":true}],"container":null,"stdin":true,"networks":[{"mac":"06:42:0a:58:00:02","address":"10.88.0.2","prefix_len":16,"gateway":"10.88.0.1","more_addresses":[["fd00:88::2",64]],"ipv6_gateway":"fd00:88::1"}],"embedded_dns":true}"#
        );
        assert_eq!(
            serde_json::to_string(&serde_json::from_str::<HostMessage>(&json).unwrap()).unwrap(),
            json
        );
        // Without them: the initramfs as the root.
        let bare: HostMessage =
            serde_json::from_str(r#"{"type":"run","args":["true"],"env":[],"cwd":"/"}"#).unwrap();
        assert!(matches!(
            &bare,
            HostMessage::Run(RunRequest { root: None, networks, embedded_dns: false, .. })
                if networks.is_empty()
        ));
    }

    #[test]
    fn network_changes_have_their_own_messages() {
        let connect = HostMessage::ConnectNetwork {
            name: "eth1".into(),
            network: GuestNetwork {
                mac: "0a:12:34:56:78:01".into(),
                address: std::net::Ipv4Addr::new(10, 89, 0, 3),
                prefix_len: 24,
                gateway: None,
                more_addresses: vec![],
                ipv6_gateway: None,
            },
        };
        assert_eq!(
            json(&connect),
            r#"{"type":"connect_network","name":"eth1","network":{"mac":"0a:12:34:56:78:01","address":"10.89.0.3","prefix_len":24,"gateway":null,"more_addresses":[],"ipv6_gateway":null}}"#
        );
        let HostMessage::ConnectNetwork { network, .. } = connect else {
            unreachable!("made above")
        };
        assert!(json(&HostMessage::DisconnectNetwork { network })
            .starts_with(r#"{"type":"disconnect_network","network":{"mac":"0a:12:34:56:78:01","#));
        let done: GuestMessage = serde_json::from_str(r#"{"type":"network_changed"}"#).unwrap();
        assert_eq!(done, GuestMessage::NetworkChanged { error: None });
    }

    #[test]
    fn bad_frames_are_refused() {
        let mut decoder = FrameDecoder::default();
        decoder.push(&u32::MAX.to_be_bytes());
        assert!(matches!(
            decoder.next_frame(),
            Err(ProtocolError::TooLarge { .. })
        ));
        let mut decoder = FrameDecoder::default();
        decoder.push(&[0, 0, 0, 1, 9]);
        assert!(matches!(
            decoder.next_frame(),
            Err(ProtocolError::UnknownKind { byte: 9 })
        ));
        let stdout = Frame {
            kind: FrameKind::Stdout,
            payload: vec![],
        };
        assert!(matches!(
            stdout.message::<HostMessage>(),
            Err(ProtocolError::Unexpected { .. })
        ));
        // A stream frame names its process.
        assert!(matches!(
            stdout.stream(),
            Err(ProtocolError::ShortStream { .. })
        ));
    }
}
