//! berth's state is root's alone: the roots and everything berth makes in
//! them are 0700 directories and 0600 files from their creation, except what
//! containers must read (documented in berth-engine `permissions`); a root
//! an older berth left open is tightened on first use; another user can read
//! nothing and is told so in Docker's manner, without anything being written.
//!
//! The roots here are made by berth itself inside a base directory other
//! users can traverse (0755, or 1777 where they must be able to write), so
//! that only berth's own modes keep them out.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use support::fixture;

const NOBODY: &str = "65534";

/// Roots that do not exist until berth makes them.
struct Roots {
    base: tempfile::TempDir,
}

impl Roots {
    /// A base other users may traverse (`mode` 0755) or also write in (1777).
    fn new(mode: u32) -> Self {
        let base = tempfile::Builder::new()
            .prefix("berth-perm-")
            .tempdir()
            .unwrap();
        set_mode(base.path(), mode);
        Self { base }
    }

    fn root(&self) -> PathBuf {
        self.base.path().join("root")
    }

    fn run_root(&self) -> PathBuf {
        self.base.path().join("run")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_berth"));
        command
            .env("BERTH_ROOT", self.root())
            .env("BERTH_RUN_ROOT", self.run_root())
            .env_remove("BERTH_LOG")
            .args(args);
        command
    }

    fn berth(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    #[track_caller]
    fn ok(&self, args: &[&str]) -> String {
        let output = self.berth(args);
        assert!(output.status.success(), "{args:?}: {}", text(&output));
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    /// `berth ARGS` as uid/gid 65534 with no groups.
    fn as_nobody(&self, args: &[&str]) -> Output {
        let mut command = Command::new("setpriv");
        command
            .args(["--reuid", NOBODY, "--regid", NOBODY, "--clear-groups", "--"])
            .arg(env!("CARGO_BIN_EXE_berth"))
            .args(args)
            .env("BERTH_ROOT", self.root())
            .env("BERTH_RUN_ROOT", self.run_root())
            .env_remove("BERTH_LOG");
        command.output().unwrap()
    }
}

impl Drop for Roots {
    fn drop(&mut self) {
        // Containers first (their mounts), then the files.
        let ids = self.berth(&["ps", "-aq"]);
        for id in String::from_utf8_lossy(&ids.stdout).split_whitespace() {
            let _ = self.berth(&["rm", "-f", id]);
        }
        let _ = self.berth(&["volume", "rm", "-f", "permvolume"]);
    }
}

fn text(output: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn set_mode(path: &Path, mode: u32) {
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn mode(path: &Path) -> u32 {
    fs_err::symlink_metadata(path).unwrap().mode() & 0o7777
}

/// `cat PATH` as nobody.
fn nobody_reads(path: &Path) -> Output {
    Command::new("setpriv")
        .args([
            "--reuid",
            NOBODY,
            "--regid",
            NOBODY,
            "--clear-groups",
            "cat",
        ])
        .arg(path)
        .output()
        .unwrap()
}

fn refused_message(root: &Path) -> String {
    format!(
        "permission denied while trying to connect to berth's state at {}: are you root?\n",
        root.display()
    )
}

/// A root with busybox, a finished `run`, a running detached container with
/// a secret in its environment and a volume, its logs read and an exec run.
/// Returns the detached container's id.
fn populated(roots: &Roots) -> String {
    roots.ok(&[
        "load",
        "-i",
        fixture("busybox-docker.tar").to_str().unwrap(),
    ]);
    roots.ok(&["run", "--rm", "--network", "none", "busybox", "true"]);
    let id = roots.ok(&[
        "run",
        "-d",
        "--network",
        "none",
        "-e",
        "SECRET=berth-perm-secret",
        "-v",
        "permvolume:/data",
        "busybox",
        "sh",
        "-c",
        "echo logged-line; exec sleep 300",
    ]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !roots.ok(&["logs", &id]).contains("logged-line") {
        assert!(Instant::now() < deadline, "the container logged nothing");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(roots.ok(&["exec", &id, "true"]), "");
    id
}

#[test]
fn another_user_can_read_nothing() {
    let roots = Roots::new(0o755);
    let id = populated(&roots);
    let root = roots.root();
    let message = refused_message(&root);
    for args in [
        vec!["ps"],
        vec!["inspect", id.as_str()],
        vec!["logs", id.as_str()],
    ] {
        let output = roots.as_nobody(&args);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {}", text(&output));
        assert_eq!(String::from_utf8_lossy(&output.stderr), message, "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}: {}", text(&output));
    }
    let container = root.join("containers").join(&id);
    for path in [
        root.join("metadata.db"),
        root.join("metadata.db-wal"),
        container.join(format!("{id}-json.log")),
        container.join("hosts"),
    ] {
        assert!(path.exists(), "{path:?} missing");
        let output = nobody_reads(&path);
        assert!(!output.status.success(), "nobody read {path:?}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("Permission denied"),
            "{path:?}: {}",
            text(&output)
        );
    }
    // The secret is in the store, where root finds it.
    let inspect = roots.ok(&["inspect", &id]);
    assert!(inspect.contains("SECRET=berth-perm-secret"));
}

/// Everything under the roots that is neither a 0700 directory, a 0600 file
/// nor a private socket, minus the documented exceptions (berth-engine
/// `permissions`): what containers read, and the run root (0711).
fn violations(roots: &Roots) -> Vec<String> {
    let root = roots.root();
    let run_root = roots.run_root();
    let mut found = Vec::new();
    let mut pending = vec![root.clone(), run_root.clone()];
    while let Some(path) = pending.pop() {
        let metadata = fs_err::symlink_metadata(&path).unwrap();
        let mode = metadata.mode() & 0o7777;
        let kind = metadata.file_type();
        let relative = |base: &Path| path.strip_prefix(base).ok().map(Path::to_owned);
        let (in_root, name) = match relative(&root) {
            Some(relative) => (true, relative),
            None => (false, relative(&run_root).unwrap()),
        };
        let parts: Vec<String> = name
            .components()
            .map(|part| part.as_os_str().to_string_lossy().into_owned())
            .collect();
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        let exception = if in_root {
            match parts.as_slice() {
                // Layer contents: overlayfs lower dirs (the top one 0755 as
                // dockerd's `diff`; below it, the image's own modes).
                ["layers", _, ..] => Some(None),
                // The init layer: 0755 directories, 0644 files.
                ["init-layer", ..] => Some(Some(if kind.is_dir() { 0o755 } else { 0o644 })),
                // A container's root file system: upper and merged are its
                // `/` (0755), work is overlayfs's (0700); below, the
                // container's own files.
                ["containers", _, "upper" | "merged", _, ..] => Some(None),
                ["containers", _, "upper" | "merged"] => Some(Some(0o755)),
                ["containers", _, "work", _, ..] => Some(None),
                // Its /etc files, bind-mounted in: 0644 as dockerd's.
                ["containers", _, "hosts" | "hostname" | "resolv.conf"] => Some(Some(0o644)),
                // Its log, as dockerd's: 0640.
                ["containers", _, log] if log.ends_with("-json.log") => Some(Some(0o640)),
                // A volume's data, 0755 as dockerd's; below, the container's.
                ["volumes", _, "_data"] => Some(Some(0o755)),
                ["volumes", _, "_data", _, ..] => Some(None),
                _ => None,
            }
        } else if parts.is_empty() {
            // The run root: traversable to reach berth serve's socket.
            Some(Some(0o711))
        } else {
            None
        };
        match exception {
            Some(None) => {}
            Some(Some(expected)) if expected == mode => {}
            Some(Some(expected)) => found.push(format!(
                "{:o} {} (documented exception: {expected:o})",
                mode,
                path.display()
            )),
            None => {
                let private = if kind.is_dir() {
                    mode == 0o700
                } else if kind.is_file() {
                    mode == 0o600
                } else if kind.is_symlink() {
                    true
                } else {
                    mode & 0o077 == 0
                };
                if !private {
                    found.push(format!("{:o} {}", mode, path.display()));
                }
            }
        }
        let pruned = exception == Some(None);
        if kind.is_dir() && !pruned {
            for entry in fs_err::read_dir(&path).unwrap() {
                pending.push(entry.unwrap().path());
            }
        }
    }
    found.sort();
    found
}

#[test]
fn new_roots_are_private_from_the_start() {
    let roots = Roots::new(0o755);
    let id = populated(&roots);
    assert_eq!(mode(&roots.root()), 0o700);
    assert_eq!(mode(&roots.root().join("metadata.db")), 0o600);
    assert_eq!(mode(&roots.root().join("metadata.db-wal")), 0o600);
    assert_eq!(mode(&roots.run_root()), 0o711);
    let found = violations(&roots);
    assert!(
        found.is_empty(),
        "not private and not a documented exception:\n{}",
        found.join("\n")
    );

    // What containers read still works for a non-root container user, and
    // its processes get Docker's umask (022), not berth's (077).
    let probe = roots.ok(&[
        "run",
        "--rm",
        "--network",
        "none",
        "-u",
        "1000",
        "-v",
        "permvolume:/data",
        "busybox",
        "sh",
        "-c",
        "umask; cat /etc/hosts /etc/hostname /etc/resolv.conf >/dev/null && ls / /data >/dev/null && echo readable",
    ]);
    assert_eq!(probe, "0022\nreadable");
    assert_eq!(
        roots.ok(&["exec", "-u", "1000", &id, "sh", "-c", "umask"]),
        "0022"
    );
    let found = violations(&roots);
    assert!(found.is_empty(), "after more runs:\n{}", found.join("\n"));
}

#[test]
fn an_old_open_root_is_tightened_on_first_use() {
    let roots = Roots::new(0o755);
    let id = populated(&roots);
    roots.ok(&["stop", "-t", "0", &id]);
    let root = roots.root();
    let container = root.join("containers").join(&id);
    // As a berth before this change left it (umask 022).
    let old_directories = [
        root.clone(),
        root.join("blobs"),
        root.join("blobs/sha256"),
        root.join("locks"),
        root.join("tmp"),
        root.join("containers"),
        container.clone(),
        root.join("volumes"),
        root.join("volumes/permvolume"),
        roots.run_root(),
        roots.run_root().join("containers"),
    ];
    for directory in &old_directories {
        set_mode(directory, 0o755);
    }
    let mut old_files = vec![root.join("metadata.db"), root.join("metadata.db-wal")];
    for entry in fs_err::read_dir(root.join("blobs/sha256")).unwrap() {
        old_files.push(entry.unwrap().path());
    }
    for file in &old_files {
        set_mode(file, 0o644);
    }

    roots.ok(&["ps", "-a"]);

    for directory in &old_directories[..old_directories.len() - 2] {
        assert_eq!(mode(directory), 0o700, "{directory:?}");
    }
    assert_eq!(mode(&roots.run_root()), 0o711);
    assert_eq!(mode(&roots.run_root().join("containers")), 0o700);
    for file in &old_files {
        assert_eq!(mode(file), 0o600, "{file:?}");
    }
    // What containers read is left as it was.
    assert_eq!(mode(&container.join("hosts")), 0o644);
    assert_eq!(mode(&root.join("volumes/permvolume/_data")), 0o755);
    let found = violations(&roots);
    assert!(found.is_empty(), "after tightening:\n{}", found.join("\n"));
}

#[test]
fn a_non_root_user_is_refused_and_nothing_is_written() {
    // A base nobody may write in: only berth's refusal keeps it empty.
    let roots = Roots::new(0o1777);
    let message = refused_message(&roots.root());
    let archive = fixture("busybox-docker.tar");
    for args in [
        vec!["ps"],
        vec!["images"],
        vec!["info"],
        vec!["volume", "create", "nobodys"],
        vec!["load", "-i", archive.to_str().unwrap()],
        vec!["run", "--rm", "busybox", "true"],
        vec!["serve", "-H", "unix:///nonexistent-berth-dir/api.sock"],
    ] {
        let output = roots.as_nobody(&args);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {}", text(&output));
        assert_eq!(String::from_utf8_lossy(&output.stderr), message, "{args:?}");
        let left: Vec<_> = fs_err::read_dir(roots.base.path())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        assert!(left.is_empty(), "{args:?} wrote {left:?}");
    }
    // Commands that touch no state still work.
    let version = roots.as_nobody(&["version"]);
    assert!(version.status.success(), "{}", text(&version));

    // An existing root gains nothing either (no -wal, no -shm).
    roots.ok(&["ps"]);
    let names = || {
        let mut names: Vec<_> = fs_err::read_dir(roots.root())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        names.sort();
        names
    };
    let before = names();
    let output = roots.as_nobody(&["ps"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert_eq!(names(), before);
}

/// `berth serve`'s socket stays 0660 root:<group>, and members of the group
/// reach it through the private run root (0711), others do not.
#[test]
fn the_api_socket_is_0660_for_its_group_through_the_run_root() {
    let Some(curl) = ["/usr/bin/curl", "/bin/curl"]
        .into_iter()
        .find(|path| Path::new(path).exists())
    else {
        eprintln!("SKIP: curl is not installed (apt-get install curl)");
        return;
    };
    let roots = Roots::new(0o755);
    roots.ok(&["ps"]);
    let socket = roots.run_root().join("docker.sock");
    // A group of its own so the check does not depend on the host's
    // `docker` group; the default (docker when it exists) is covered by
    // berth-api's tests.
    let group = "4242";
    let mut server = roots
        .command(&[
            "serve",
            "-H",
            &format!("unix://{}", socket.display()),
            "--group",
            group,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !socket.exists() {
        if Instant::now() > deadline || server.try_wait().unwrap().is_some() {
            let _ = server.kill();
            let output = server.wait_with_output().unwrap();
            panic!("berth serve did not listen: {}", text(&output));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let metadata = fs_err::metadata(&socket).unwrap();
    let request = |groups: &[&str]| {
        let mut command = Command::new("setpriv");
        command.args(["--reuid", NOBODY, "--regid", NOBODY]);
        if groups.is_empty() {
            command.arg("--clear-groups");
        } else {
            command.args(["--groups", &groups.join(",")]);
        }
        command
            .arg(curl)
            .args(["-sS", "--max-time", "10", "--unix-socket"])
            .arg(&socket)
            .arg("http://localhost/_ping")
            .output()
            .unwrap()
    };
    let member = request(&[group]);
    let stranger = request(&[]);
    let _ = server.kill();
    let _ = server.wait();

    assert_eq!(metadata.mode() & 0o7777, 0o660);
    assert_eq!(metadata.uid(), 0);
    assert_eq!(metadata.gid().to_string(), group);
    assert!(member.status.success(), "group member: {}", text(&member));
    assert_eq!(String::from_utf8_lossy(&member.stdout), "OK");
    assert!(!stranger.status.success(), "others: {}", text(&stranger));
}
