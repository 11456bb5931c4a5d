//! The warm pool: pre-built, single-use sandboxes per image, so that an
//! eligible `run` skips namespace, cgroup, root and network setup.
//!
//! ```text
//! fill(engine, &pool, depth)       forks member monitors (monitor/member.rs), each builds one
//!                                  sandbox (runtime Sandbox: root mounted, network connected,
//!                                  first process waiting) and offers it on a socket
//! offered(engine, &request)       the offered members of the run's image, looked up once
//! claim(engine, &request, offered) a run whose settings match a member's takes it (rename of
//!                                  the offer socket: one winner), stores its container row with
//!                                  the member's id, and hands over its streams (Claimed::start);
//!                                  the member's monitor is from then on the container's monitor
//! list / remove / retire_reference `warm ls`, `warm rm`, and pull/load/tag of an image
//! ```
//!
//! A VM member (`berth warm --isolation vm`) is the same monitor whose
//! sandbox is a VM shim with its microVM booted and an empty root share
//! (`containers/vm/launch.rs`'s `MemberShim`); the claim builds the
//! container's root on the share and runs its process in the guest. The
//! sandbox key holds the isolation, so the two kinds never stand in for
//! each other.
//!
//! A member is never reused: the claimed sandbox becomes the container, and
//! a replacement is built in the background. Members end themselves after
//! their TTL or when their sandbox dies; a member whose monitor was killed
//! is found and removed by the next pool operation.

mod claim;
mod error;
pub mod member;

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use claim::{claim, offered, Claimed, Offered, Refill, RefillGuard};
pub use error::WarmError;
use member::{members, monitor_alive, MemberDir, MemberInfo, Taker};

use berth_types::container::CreateRequest;

use crate::containers::monitor::protocol::{MonitorMessage, MonitorReceiver};
use crate::images::{parse_reference, resolve_image};
use crate::{Engine, EngineError};

/// Messages to a member monitor over its socket.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "lowercase")]
pub(crate) enum ClaimMessage {
    /// Descriptors: the status pipe, then the streams flagged here.
    Claim {
        stdin: bool,
        stdout: bool,
        stderr: bool,
    },
    Retire,
    /// The claimant stored the container's row but will not start it now
    /// (a created container whose start may never come): the member tears
    /// its sandbox down and leaves an ordinary `created` container, row and
    /// directory, which a later `start` starts cold. No descriptors.
    Release,
}

/// `BERTH_WARM`: whether runs use the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarmMode {
    /// Never.
    Off,
    /// When `berth warm IMAGE` made a pool for the run's image (the default).
    Auto,
    /// Also: a run of an image with no pool starts one in the background.
    On,
}

/// The pool's settings from the environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WarmSettings {
    pub mode: WarmMode,
    /// `BERTH_WARM_DEPTH`: members kept per image (default 2).
    pub depth: u32,
    /// `BERTH_WARM_TTL`: an unclaimed member ends after this (default 10m).
    pub ttl: Duration,
}

pub const DEFAULT_DEPTH: u32 = 2;
pub const DEFAULT_TTL: Duration = Duration::from_secs(600);
pub const MAX_DEPTH: u32 = 64;

impl WarmSettings {
    pub fn from_env() -> Result<Self, EngineError> {
        let variable = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        let mode = match variable("BERTH_WARM").as_deref() {
            None | Some("auto") => WarmMode::Auto,
            Some("on") => WarmMode::On,
            Some("off") => WarmMode::Off,
            Some(other) => {
                return Err(EngineError::InvalidArgument(format!(
                    "invalid BERTH_WARM {other:?}: use auto, on or off"
                )))
            }
        };
        let depth = match variable("BERTH_WARM_DEPTH") {
            None => DEFAULT_DEPTH,
            Some(text) => parse_depth(&text)?,
        };
        let ttl = match variable("BERTH_WARM_TTL") {
            None => DEFAULT_TTL,
            Some(text) => parse_duration(&text)?,
        };
        Ok(Self { mode, depth, ttl })
    }
}

pub fn parse_depth(text: &str) -> Result<u32, EngineError> {
    match text.parse::<u32>() {
        Ok(depth) if (1..=MAX_DEPTH).contains(&depth) => Ok(depth),
        _ => Err(EngineError::InvalidArgument(format!(
            "invalid pool depth {text:?}: a number from 1 to {MAX_DEPTH}"
        ))),
    }
}

/// Go-style durations as Docker's flags take them: `90s`, `10m`, `1h30m`,
/// `500ms`; a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, EngineError> {
    let invalid =
        || EngineError::InvalidArgument(format!("invalid duration {text:?} (e.g. 30s, 10m, 1h)"));
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .ok_or_else(invalid)?;
        let number: f64 = rest[..digits].parse().map_err(|_| invalid())?;
        rest = &rest[digits..];
        let unit_length = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_length] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(invalid()),
        };
        total += Duration::from_secs_f64(number * unit);
        rest = &rest[unit_length..];
    }
    Ok(total)
}

/// A member as `warm ls` shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolMember {
    pub id: String,
    pub image_id: String,
    pub reference: String,
    pub created: i64,
    /// Resident memory of its monitor and waiting first process, bytes.
    pub memory: u64,
    pub ttl: Duration,
    /// `default` (namespaces) or `vm`.
    pub isolation: &'static str,
}

/// The pool's name for `reference` (`busybox` → `busybox:latest`).
fn pool_reference(reference: &str) -> Result<String, EngineError> {
    Ok(parse_reference(reference)?.familiar_string())
}

/// Removes members whose monitor died (killed, or the machine rebooted
/// under a persistent run root), offered or still being built: their
/// sandbox went with it, but their cgroup, files and network address may
/// remain.
pub fn reap_leaked(engine: &mut Engine) {
    let run_root = engine.config().run_root.clone();
    // Members whose monitor was killed while it built them go too.
    for (dir, info) in members(&run_root)
        .into_iter()
        .chain(member::building(&run_root))
    {
        if !monitor_alive(&info) {
            tracing::debug!(member = %info.id, "removing a leaked pool member");
            discard_member(engine, &dir, &info);
        }
    }
}

fn discard_member(engine: &mut Engine, dir: &MemberDir, info: &MemberInfo) {
    if info.sandbox_pid > 0 {
        // Its first process waits on a socket the dead monitor held; it
        // has ended or ends now.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(info.sandbox_pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let config = engine.config().clone();
    let paths =
        crate::containers::paths::ContainerPaths::new(&config.root, &config.run_root, &info.id);
    crate::containers::manage::delete_runtime_leftovers(&config, &info.id);
    // The row is absent unless a claim got as far as storing it.
    if engine.store().container(&info.id).ok().flatten().is_none() {
        crate::containers::remove::remove_files_and_row(engine.store(), &paths, &info.id);
    }
    dir.remove();
}

/// What a pool's members are made from: the image and the settings that
/// shape their sandboxes (`berth warm --isolation vm --network none -p …
/// IMAGE`), everything else Docker's defaults.
#[derive(Clone, Debug, Default)]
pub struct PoolRequest {
    /// The members' create request, its image included.
    pub request: CreateRequest,
    /// The `berth warm` flags that ask for this request again: the refill
    /// after a claim runs `berth warm` with them, and a pool is the members
    /// of one image made with the same flags.
    pub flags: Vec<String>,
}

impl PoolRequest {
    /// The image with every default (a namespace pool).
    pub fn image(reference: &str) -> Self {
        let mut request = CreateRequest::default();
        request.config.image = reference.to_owned();
        Self {
            request,
            flags: Vec::new(),
        }
    }
}

/// Fills the pool of `pool` up to `depth` members; returns the new
/// members' ids. Members of an older image under that name are retired.
pub fn fill(
    engine: &mut Engine,
    pool: &PoolRequest,
    depth: u32,
    ttl: Duration,
) -> Result<Vec<String>, EngineError> {
    let reference = pool.request.config.image.as_str();
    let run_root = engine.config().run_root.clone();
    fs_err::create_dir_all(member::pool_dir(&run_root)).map_err(WarmError::PoolDirectory)?;
    let _lock = lock_pool(&run_root)?;
    reap_leaked(engine);
    let name = pool_reference(reference)?;
    let image = resolve_image(engine.store(), reference)?;
    let image_id = image.id.to_string();
    let mut current = 0u32;
    for (dir, info) in members(&run_root) {
        if info.reference != name || !dir.is_offered() {
            continue;
        }
        if info.image_id != image_id {
            retire(&dir);
        } else if info.flags == pool.flags {
            current += 1;
        }
    }
    let mut made = Vec::new();
    let mut named = pool.clone();
    named.request.config.image = name.clone();
    while current + (made.len() as u32) < depth {
        made.push(claim::spawn_member(engine, &named, &image_id, depth, ttl)?);
    }
    Ok(made)
}

/// One fill at a time per run root: concurrent refills would overshoot.
fn lock_pool(run_root: &Path) -> Result<nix::fcntl::Flock<std::fs::File>, EngineError> {
    let path = member::pool_dir(run_root).join(".lock");
    let file = fs_err::File::create(&path)
        .map_err(WarmError::OpenLock)?
        .into_file();
    Ok(
        nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, source)| WarmError::Lock { path, source })?,
    )
}

/// Every live member, oldest first.
pub fn list(engine: &mut Engine) -> Result<Vec<PoolMember>, EngineError> {
    reap_leaked(engine);
    let run_root = engine.config().run_root.clone();
    Ok(members(&run_root)
        .into_iter()
        .filter(|(dir, _)| dir.is_offered())
        .map(|(_, info)| PoolMember {
            memory: resident_bytes(info.monitor_pid) + tree_resident_bytes(info.sandbox_pid),
            isolation: if info.key["run"]["isolation"] == "vm" {
                "vm"
            } else {
                "default"
            },
            id: info.id,
            image_id: info.image_id,
            reference: info.reference,
            created: info.created,
            ttl: Duration::from_secs(info.ttl_seconds),
        })
        .collect())
}

/// [`resident_bytes`] of `pid` and its descendants: a VM member's shim
/// holds its QEMU and virtiofsd (a namespace member's waiting process has
/// no children).
fn tree_resident_bytes(pid: i32) -> u64 {
    let mut total = resident_bytes(pid);
    if pid <= 0 {
        return total;
    }
    let children =
        fs_err::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    for child in children.split_whitespace() {
        if let Ok(child) = child.parse::<i32>() {
            total += tree_resident_bytes(child);
        }
    }
    total
}

/// Proportional set size: pages shared with other processes (the member's
/// monitor and its sandbox share most of theirs) count in part.
fn resident_bytes(pid: i32) -> u64 {
    let Ok(status) = fs_err::read_to_string(format!("/proc/{pid}/smaps_rollup")) else {
        return 0;
    };
    status
        .lines()
        .find_map(|line| line.strip_prefix("Pss:"))
        .and_then(|value| {
            value
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kib| kib * 1024)
}

/// Ends the members of `reference` (all with None); returns how many.
pub fn remove(engine: &mut Engine, reference: Option<&str>) -> Result<usize, EngineError> {
    let name = reference.map(pool_reference).transpose()?;
    let run_root = engine.config().run_root.clone();
    if !member::pool_dir(&run_root).exists() {
        return Ok(0);
    }
    // A fill under way (a refill after a claim) finishes first, so that
    // its members are removed too.
    let _lock = lock_pool(&run_root)?;
    reap_leaked(engine);
    let mut removed = 0;
    for (dir, info) in members(&run_root) {
        if name.as_ref().is_some_and(|name| *name != info.reference) {
            continue;
        }
        if retire(&dir) {
            removed += 1;
        }
    }
    Ok(removed)
}

/// After `pull`, `load` or `tag` changed what `reference` names: its
/// members hold the old image and are retired (members of the image it
/// names now stay). Returns how many.
pub fn retire_reference(engine: &mut Engine, reference: &str) -> usize {
    let Ok(name) = pool_reference(reference) else {
        return 0;
    };
    let current = resolve_image(engine.store(), reference)
        .ok()
        .map(|image| image.id.to_string());
    let run_root = engine.config().run_root.clone();
    members(&run_root)
        .into_iter()
        .filter(|(_, info)| info.reference == name && Some(&info.image_id) != current.as_ref())
        .filter(|(dir, _)| retire(dir))
        .count()
}

/// Takes the member away from claims and tells its monitor to end; waits
/// (briefly) until it has. False when a run claimed it first.
fn retire(dir: &MemberDir) -> bool {
    if !dir.take(Taker::Retire) {
        return false;
    }
    if let Ok(stream) = std::os::unix::net::UnixStream::connect(dir.taken_path(Taker::Retire)) {
        let body = serde_json::to_vec(&ClaimMessage::Retire).unwrap_or_default();
        let _ = berth_runtime::handoff::send_message(&stream, &body, &[]);
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while dir.path.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// Starts `berth warm FLAGS REFERENCE --depth N` in the background (its own
/// session, no terminal, output discarded): the refill after a claim.
pub fn spawn_refill(
    config: &crate::EngineConfig,
    reference: &str,
    flags: &[String],
    depth: u32,
    ttl: Duration,
) {
    // The running binary through its magic link: a berth that enters containers runs from a
    // sealed copy of itself with no path of its own (berth_runtime::sealed_exe).
    let mut command = std::process::Command::new(berth_runtime::sealed_exe::SELF_EXE);
    command
        .arg("--root")
        .arg(&config.root)
        .arg("--run-root")
        .arg(&config.run_root)
        .arg("warm")
        .args(flags)
        .args([reference, "--depth", &depth.to_string()])
        .env("BERTH_WARM_TTL", format!("{}s", ttl.as_secs().max(1)))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: setsid is async-signal-safe; the child runs nothing else
    // before exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, || {
            libc::setsid();
            Ok(())
        });
    }
    match command.spawn() {
        // Reaped once it is done (it exits as soon as its members are
        // offered): a long-lived caller, the API server, would collect a
        // zombie per refill otherwise.
        Ok(mut child) => {
            let reaper = std::thread::Builder::new()
                .name("berth-refill".to_owned())
                .stack_size(64 * 1024)
                .spawn(move || {
                    let _ = child.wait();
                });
            if let Err(error) = reaper {
                tracing::debug!(%error, "a pool refill is not reaped");
            }
        }
        Err(error) => tracing::debug!(%error, "no pool refill"),
    }
}

/// Reads the first report of member `id`'s monitor: offered, or why not.
fn wait_offered(id: &str, status: std::os::fd::OwnedFd) -> Result<(), WarmError> {
    match MonitorReceiver::new(status).receive() {
        Some(MonitorMessage::Started { .. }) => Ok(()),
        Some(MonitorMessage::Failed { message, .. }) => Err(WarmError::Member {
            id: id.to_owned(),
            message,
        }),
        _ => Err(WarmError::MonitorExited { id: id.to_owned() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_docker_flags_take_them() {
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert!(parse_duration("10 minutes").is_err());
        assert!(parse_duration("m").is_err());
    }

    #[test]
    fn depth_is_bounded() {
        assert_eq!(parse_depth("3").unwrap(), 3);
        assert!(parse_depth("0").is_err());
        assert!(parse_depth("65").is_err());
        assert!(parse_depth("two").is_err());
    }
}
