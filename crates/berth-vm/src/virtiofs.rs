//! Host directories in the guest over virtio-fs: one `virtiofsd` (the Rust
//! daemon from crates.io, installed by scripts/vm-tools.sh) per shared
//! directory, serving QEMU's `vhost-user-fs-device` of that share.
//!
//! The vhost-user socket is never left as a file: berth binds a listening
//! socket in the VM's private directory (0700), connects QEMU's end to it at
//! once, removes the name, and hands the listening descriptor to virtiofsd
//! (`--fd`), which accepts the one connection already queued. So no one else
//! can reach the daemon, and there is nothing to clean up: virtiofsd exits
//! when QEMU's end closes (`Client disconnected, shutting down`), and both
//! have `PR_SET_PDEATHSIG(SIGKILL)` from berth.
//!
//! virtiofsd runs as root with `--sandbox=namespace` (its default): new
//! mount, pid and network namespaces, `pivot_root` into the shared
//! directory, seccomp (`--seccomp=kill`), so a compromised daemon sees only
//! that directory. Its sandbox makes it fork: the process berth starts waits
//! for the real server (pid 1 of its pid namespace, with `PDEATHSIG`
//! SIGTERM, which virtiofsd handles by exiting), so killing the one berth
//! started ends both.

use std::ffi::OsString;
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use fs_err as fs;

use crate::child::ChildProcess;

/// The virtiofsd binary to use instead of the one scripts/vm-tools.sh installs.
pub const VIRTIOFSD_ENV: &str = "BERTH_VM_VIRTIOFSD";

/// Where scripts/vm-tools.sh installs virtiofsd.
pub const TOOLS_VIRTIOFSD: &str = "/var/lib/berth-tools/bin/virtiofsd";

/// The longest tag a virtio-fs device carries (`struct virtio_fs_config`).
pub const MAX_TAG_LEN: usize = 36;

/// A host directory shared with the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Share {
    /// The name the guest mounts it by.
    pub tag: String,
    pub dir: PathBuf,
    /// virtiofsd refuses every change (`--readonly`): the guest gets EROFS
    /// however it mounts it.
    pub read_only: bool,
    pub cache: CachePolicy,
}

impl Share {
    /// A share of the host's files (a bind mount, a volume): cached
    /// close-to-open ([`CachePolicy::Auto`]), so that what the host changes
    /// is seen at the next open.
    pub fn new(tag: &str, dir: impl Into<PathBuf>, read_only: bool) -> Share {
        Share {
            tag: tag.to_string(),
            dir: dir.into(),
            read_only,
            cache: CachePolicy::Auto,
        }
    }

    /// A container's root: only the guest changes it while the container
    /// runs, so the guest keeps what it read ([`CachePolicy::Always`]):
    /// measured under TCG, 50 runs of `/bin/true` take 0.45 s against 3.5 s
    /// with `auto`, which re-reads busybox from the host at every exec
    /// (docs/VM.md).
    pub fn root(tag: &str, dir: impl Into<PathBuf>, read_only: bool) -> Share {
        Share {
            cache: CachePolicy::Always,
            ..Share::new(tag, dir, read_only)
        }
    }

    pub fn with_cache(self, cache: CachePolicy) -> Share {
        Share { cache, ..self }
    }
}

/// virtiofsd's `--cache`: how long the guest may keep what it read.
/// Measured under TCG (docs/VM.md): `always` is 10× faster than `auto` for
/// exec and small reads; `never` is 2–5× faster for 1 MiB sequential I/O (no
/// copy through the guest's page cache) but 3× slower for metadata and, on
/// Debian 12's 6.1 guest kernel, refuses shared writable `mmap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CachePolicy {
    /// Close-to-open consistency: metadata for a second, file data until a
    /// file is opened again (virtiofsd's own default). A file changed on the
    /// host is seen at the next open.
    #[default]
    Auto,
    /// The guest keeps everything until it needs the memory: for a share only
    /// the guest changes (the container's root).
    Always,
    /// Nothing is cached: every read goes to the host (direct I/O).
    Never,
}

impl CachePolicy {
    fn word(self) -> &'static str {
        match self {
            CachePolicy::Auto => "auto",
            CachePolicy::Always => "always",
            CachePolicy::Never => "never",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum VirtiofsError {
    #[error(
        "virtiofsd is not installed (scripts/vm-tools.sh puts it in {TOOLS_VIRTIOFSD}), or set {VIRTIOFSD_ENV}"
    )]
    NotInstalled,
    #[error(
        "invalid virtiofs tag {tag:?}: 1 to {MAX_TAG_LEN} bytes of letters, digits, '-', '_' or '.'"
    )]
    BadTag { tag: String },
    #[error("virtiofs tag {tag:?} is used twice")]
    DuplicateTag { tag: String },
    #[error("shared directory {dir:?} is not a directory")]
    NotADirectory { dir: PathBuf },
    #[error("failed to make the vhost-user socket {path:?}")]
    Socket {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to create virtiofsd's log {path:?}")]
    Log {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to start {virtiofsd:?} for {dir:?}")]
    Spawn {
        virtiofsd: PathBuf,
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Finds virtiofsd: `BERTH_VM_VIRTIOFSD`, else scripts/vm-tools.sh's, else
/// `virtiofsd` in `PATH`. Not Debian 12's `/usr/lib/qemu/virtiofsd`: that is
/// QEMU 7.2's C daemon (removed upstream in 8.0), whose options differ
/// (`-o source=` for `--shared-dir`, no `--readonly`).
pub fn find_virtiofsd() -> Result<PathBuf, VirtiofsError> {
    if let Some(path) = std::env::var_os(VIRTIOFSD_ENV).filter(|path| !path.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    [PathBuf::from(TOOLS_VIRTIOFSD)]
        .into_iter()
        .chain(std::env::split_paths(&path).map(|dir| dir.join("virtiofsd")))
        .find(|candidate| candidate.is_file())
        .ok_or(VirtiofsError::NotInstalled)
}

/// Checks the shares before anything starts: tags QEMU's option parser and
/// the guest's mount take as they are, each once; directories that exist.
pub fn validate(shares: &[Share]) -> Result<(), VirtiofsError> {
    let mut seen = std::collections::HashSet::new();
    for share in shares {
        let tag = &share.tag;
        let good = !tag.is_empty()
            && tag.len() <= MAX_TAG_LEN
            && tag
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || b"-_.".contains(&byte));
        if !good {
            return Err(VirtiofsError::BadTag { tag: tag.clone() });
        }
        if !seen.insert(tag.as_str()) {
            return Err(VirtiofsError::DuplicateTag { tag: tag.clone() });
        }
        if !share.dir.is_dir() {
            return Err(VirtiofsError::NotADirectory {
                dir: share.dir.clone(),
            });
        }
    }
    Ok(())
}

/// virtiofsd's command line for `share`, serving the listening socket `fd`.
///
/// - `--sandbox=namespace`: berth runs as root, so the daemon gets mount, pid
///   and network namespaces of its own and pivots into the shared directory.
/// - `--xattr`: images carry extended attributes (file capabilities,
///   `user.*`) that `diff`/`commit` must see as a namespace container would.
/// - `--inode-file-handles=prefer` (the default, root has
///   CAP_DAC_READ_SEARCH): fewer descriptors held open.
/// - `--log-level=warn` to its log file in the VM's directory.
pub fn arguments(share: &Share, fd: i32) -> Vec<OsString> {
    let mut shared_dir = OsString::from("--shared-dir=");
    shared_dir.push(share.dir.as_os_str());
    let mut out: Vec<OsString> = vec![
        format!("--fd={fd}").into(),
        shared_dir,
        format!("--cache={}", share.cache.word()).into(),
        "--sandbox=namespace".into(),
        "--seccomp=kill".into(),
        "--xattr".into(),
        "--log-level=warn".into(),
    ];
    if share.read_only {
        out.push("--readonly".into());
    }
    out
}

/// One running virtiofsd and QEMU's end of its socket.
#[derive(Debug)]
pub struct VirtiofsDaemon {
    pub tag: String,
    pub read_only: bool,
    process: ChildProcess,
    /// The connected vhost-user socket QEMU inherits (`-chardev socket,fd=`);
    /// dropped once QEMU holds it.
    qemu_end: Option<UnixStream>,
    log: PathBuf,
}

impl VirtiofsDaemon {
    /// Starts virtiofsd for `share`; `dir` is the VM's private directory
    /// (the socket's name lives there for an instant, the log for the VM's
    /// life), `index` tells this VM's shares apart.
    pub fn start(
        virtiofsd: &Path,
        share: &Share,
        dir: &Path,
        index: usize,
    ) -> Result<VirtiofsDaemon, VirtiofsError> {
        let socket = dir.join(format!("virtiofs-{index}.sock"));
        let socket_error = |source| VirtiofsError::Socket {
            path: socket.clone(),
            source,
        };
        let listener = UnixListener::bind(&socket).map_err(socket_error)?;
        let connected = UnixStream::connect(&socket);
        // The name is not needed once QEMU's end is queued on the listener.
        let removed = fs::remove_file(&socket);
        let qemu_end = connected.map_err(socket_error)?;
        removed.map_err(socket_error)?;

        let log = dir.join(format!("virtiofsd-{index}.log"));
        let stderr = fs::File::create(&log).map_err(|source| VirtiofsError::Log {
            path: log.clone(),
            source,
        })?;
        let mut command = Command::new(virtiofsd);
        command
            .args(arguments(share, listener.as_raw_fd()))
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(stderr.into_parts().0));
        let process =
            ChildProcess::spawn(&mut command, &[listener.as_raw_fd()]).map_err(|source| {
                if source.kind() == std::io::ErrorKind::NotFound {
                    VirtiofsError::NotInstalled
                } else {
                    VirtiofsError::Spawn {
                        virtiofsd: virtiofsd.to_path_buf(),
                        dir: share.dir.clone(),
                        source,
                    }
                }
            })?;
        // Only virtiofsd holds the listener now.
        drop(listener);
        tracing::debug!(pid = process.pid(), tag = %share.tag, dir = %share.dir.display(), "started virtiofsd");
        Ok(VirtiofsDaemon {
            tag: share.tag.clone(),
            read_only: share.read_only,
            process,
            qemu_end: Some(qemu_end),
            log,
        })
    }

    /// Polls readable once this virtiofsd has exited.
    pub fn exit_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.process.exit_fd()
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The descriptor QEMU inherits for this share's `-chardev`.
    pub fn qemu_fd(&self) -> Option<i32> {
        self.qemu_end.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// Closes berth's copy of QEMU's end once QEMU has it, so that QEMU's
    /// exit is what ends the daemon.
    pub fn release_qemu_end(&mut self) {
        self.qemu_end = None;
    }

    /// The end of its log.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = fs::read(&self.log)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Waits for the daemon to end by itself (QEMU gone), up to `wait`, then
    /// kills it; true if it ended by itself.
    pub fn stop(&mut self, wait: Duration) -> bool {
        self.qemu_end = None;
        if self.process.wait_timeout(wait).is_some() {
            return true;
        }
        self.process.kill();
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_and_directories_are_checked_before_anything_starts() {
        let dir = tempfile::tempdir().unwrap();
        let share = |tag: &str| Share::new(tag, dir.path(), false);
        assert!(validate(&[share("root"), share("v-1_a.b")]).is_ok());
        for bad in ["", "a,b", "a b", "x=y", &"t".repeat(MAX_TAG_LEN + 1)] {
            assert!(
                matches!(validate(&[share(bad)]), Err(VirtiofsError::BadTag { .. })),
                "{bad:?}"
            );
        }
        assert!(matches!(
            validate(&[share("root"), share("root")]),
            Err(VirtiofsError::DuplicateTag { .. })
        ));
        assert!(matches!(
            validate(&[Share::new("root", dir.path().join("missing"), false)]),
            Err(VirtiofsError::NotADirectory { .. })
        ));
    }

    #[test]
    fn read_only_shares_are_read_only_in_the_daemon() {
        let args = |read_only| {
            arguments(&Share::new("data", "/srv/data", read_only), 5)
                .into_iter()
                .map(|arg| arg.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        };
        let writable = args(false);
        assert_eq!(
            writable,
            [
                "--fd=5",
                "--shared-dir=/srv/data",
                "--cache=auto",
                "--sandbox=namespace",
                "--seccomp=kill",
                "--xattr",
                "--log-level=warn"
            ]
        );
        assert_eq!(args(true).last().map(String::as_str), Some("--readonly"));
        let root = arguments(&Share::root("root", "/c/rootfs", false), 5);
        assert!(root.contains(&"--cache=always".into()), "{root:?}");
    }

    #[test]
    fn a_missing_daemon_is_named_and_leaves_no_socket() {
        let dir = tempfile::tempdir().unwrap();
        let shared = tempfile::tempdir().unwrap();
        let error = VirtiofsDaemon::start(
            Path::new("/nonexistent/virtiofsd"),
            &Share::new("root", shared.path(), false),
            dir.path(),
            0,
        )
        .unwrap_err();
        assert!(matches!(error, VirtiofsError::NotInstalled), "{error}");
        assert!(error.to_string().contains("scripts/vm-tools.sh"), "{error}");
        let left: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .filter(|name| name.to_string_lossy().ends_with(".sock"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
