//! Shared pieces of berth's integration tests: the fixture images (built
//! once per target dir from Debian's busybox-static by
//! scripts/make-fixtures.sh), a private berth root per test, and the real
//! Docker engine when one is reachable.
#![allow(dead_code, clippy::unwrap_used)] // test support: a failed step is a failed test

pub mod containers;
pub mod terminal;
pub mod vm;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/berth lives two levels below the workspace")
        .to_owned()
}

/// The fixture directory: `$BERTH_FIXTURES`, or built on first use under the
/// target directory (guarded by a lock so parallel test processes build it
/// once).
pub fn fixtures() -> PathBuf {
    if let Some(directory) = std::env::var_os("BERTH_FIXTURES") {
        return PathBuf::from(directory);
    }
    let directory = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fixtures");
    let marker = directory.join("image-ids.txt");
    fs_err::create_dir_all(&directory).unwrap();
    let lock = fs_err::File::create(directory.with_extension("lock"))
        .unwrap()
        .into_file();
    let _guard = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive).unwrap();
    if !marker.exists() {
        let status = Command::new("bash")
            .arg(workspace_root().join("scripts/make-fixtures.sh"))
            .arg(&directory)
            .stdout(Stdio::null())
            .status()
            .expect("run scripts/make-fixtures.sh");
        assert!(status.success(), "scripts/make-fixtures.sh failed");
    }
    directory
}

pub fn fixture(name: &str) -> PathBuf {
    let path = fixtures().join(name);
    assert!(path.exists(), "missing fixture {path:?}");
    path
}

/// The busybox fixture as an image that says it is for linux/arm64/v8
/// (`busybox-arm64`): its config's platform changed, nothing else.
pub fn write_arm64_busybox(path: &Path) {
    let mut source = tar::Archive::new(fs_err::File::open(fixture("busybox-docker.tar")).unwrap());
    let mut out = tar::Builder::new(fs_err::File::create(path).unwrap());
    for entry in source.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        let mut header = entry.header().clone();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut bytes).unwrap();
        if name == "repositories" {
            continue;
        }
        if name == "manifest.json" {
            let mut manifest: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            manifest[0]["RepoTags"] = serde_json::json!(["busybox-arm64:latest"]);
            bytes = serde_json::to_vec(&manifest).unwrap();
        } else if name.ends_with(".json") && !name.contains('/') {
            let mut config: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            config["architecture"] = "arm64".into();
            config["variant"] = "v8".into();
            bytes = serde_json::to_vec(&config).unwrap();
        }
        header.set_size(bytes.len() as u64);
        header.set_cksum();
        out.append(&header, bytes.as_slice()).unwrap();
    }
    out.finish().unwrap();
}

/// The image id make-fixtures.sh recorded for `reference` in `archive`.
pub fn fixture_id(archive: &str, reference: &str) -> String {
    let ids = fs_err::read_to_string(fixtures().join("image-ids.txt")).unwrap();
    ids.lines()
        .map(|line| line.split('\t').collect::<Vec<_>>())
        .find(|fields| fields.len() == 3 && fields[0] == archive && fields[1] == reference)
        .map(|fields| fields[2].to_owned())
        .unwrap_or_else(|| panic!("no id for {archive} {reference} in image-ids.txt:\n{ids}"))
}

/// A private berth root for one test.
pub struct Berth {
    pub root: tempfile::TempDir,
    pub run_root: tempfile::TempDir,
}

pub struct Run {
    pub output: Output,
}

impl Run {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }
    pub fn code(&self) -> i32 {
        self.output.status.code().unwrap_or(-1)
    }
    /// Asserts success and returns stdout.
    #[track_caller]
    pub fn ok(&self) -> String {
        assert!(
            self.output.status.success(),
            "berth failed ({:?})\nstdout:\n{}\nstderr:\n{}",
            self.output.status,
            self.stdout(),
            self.stderr()
        );
        self.stdout()
    }
    /// Asserts failure with `code` and returns stderr.
    #[track_caller]
    pub fn fails(&self, code: i32) -> String {
        assert_eq!(
            self.code(),
            code,
            "expected exit {code}\nstdout:\n{}\nstderr:\n{}",
            self.stdout(),
            self.stderr()
        );
        self.stderr()
    }
}

impl Berth {
    pub fn new() -> Self {
        Self {
            root: tempfile::Builder::new()
                .prefix("berth-root-")
                .tempdir()
                .unwrap(),
            run_root: tempfile::Builder::new()
                .prefix("berth-run-")
                .tempdir()
                .unwrap(),
        }
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }

    pub fn run_root(&self) -> &Path {
        self.run_root.path()
    }

    pub fn command(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_berth"));
        command
            .env("BERTH_ROOT", self.root.path())
            .env("BERTH_RUN_ROOT", self.run_root.path())
            .env_remove("BERTH_LOG");
        command
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.run_with_stdin(args, None)
    }

    pub fn run_with_stdin(&self, args: &[&str], stdin: Option<&[u8]>) -> Run {
        let mut command = self.command();
        command.args(args);
        Run {
            output: output_with_stdin(command, stdin),
        }
    }

    /// Loads a fixture archive and returns stdout.
    pub fn load(&self, archive: &str) -> String {
        let path = fixture(archive);
        self.run(&["load", "-i", path.to_str().unwrap()]).ok()
    }

    /// Every file and directory under the root's content directories
    /// (`blobs`, `layers`, `tmp`), to prove that failures leave nothing.
    pub fn content(&self) -> Vec<PathBuf> {
        let mut found = Vec::new();
        for directory in ["blobs/sha256", "layers", "tmp"] {
            let path = self.root().join(directory);
            if let Ok(entries) = fs_err::read_dir(&path) {
                found.extend(entries.flatten().map(|entry| entry.path()));
            }
        }
        found.sort();
        found
    }
}

/// Runs `command` to the end with `stdin` fed to it (none: /dev/null),
/// capturing stdout and stderr.
pub fn output_with_stdin(mut command: Command, stdin: Option<&[u8]>) -> Output {
    command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn the command");
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        // A failing program may close stdin early; that is its business.
        let _ = pipe.write_all(bytes);
    }
    child.wait_with_output().unwrap()
}

impl Drop for Berth {
    /// Removes every container of this root (`rm -f $(ps -aq)`) so that no
    /// monitor, container process, mount or cgroup outlives the test, failed
    /// or not. Never panics: it also runs while a failed test unwinds.
    fn drop(&mut self) {
        // Warm pool members first (their monitors would refill otherwise).
        let _ = bounded(self.command().args(["warm", "rm"]));
        let mut members = warm_member_ids(self.run_root.path());
        let ids: Vec<String> = bounded(self.command().args(["ps", "-aq", "--no-trunc"]))
            .map(|output| {
                String::from_utf8_lossy(&output.stdout)
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        if !ids.is_empty() {
            let _ = bounded(self.command().args(["rm", "-f"]).args(&ids));
        }
        // What berth failed to clean up must not stay behind either: its own
        // processes (monitors), processes in a container's cgroup, its cgroup
        // directories, and mounts under
        // the roots (TempDir's removal must never walk into a bind-mounted
        // host directory or a live overlay).
        containers::kill_processes_of_root(self.root.path());
        members.extend(warm_member_ids(self.run_root.path()));
        for id in ids.iter().chain(&members) {
            containers::kill_cgroup(id);
        }
        for root in [self.root.path(), self.run_root.path()] {
            containers::detach_mounts_under(root);
        }
        remove_network_objects(self.root.path());
    }
}

/// The container ids of the warm pool members under `run_root`.
pub fn warm_member_ids(run_root: &Path) -> Vec<String> {
    let Ok(entries) = fs_err::read_dir(run_root.join("warm")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| fs_err::read(entry.path().join("member.json")).ok())
        .filter_map(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .filter_map(|info| info["id"].as_str().map(str::to_owned))
        .collect()
}

/// Bridges and the nftables table are host-wide: remove the ones this root
/// made (its networks' bridges, its default bridge, its table).
fn remove_network_objects(root: &Path) {
    let mut devices = Vec::new();
    if let Ok(store) = berth_store::Store::open(root) {
        for network in store.networks().unwrap_or_default() {
            let record: serde_json::Value =
                serde_json::from_str(&network.record).unwrap_or_default();
            if let Some(device) = record["device"]
                .as_str()
                .filter(|device| !device.is_empty())
            {
                devices.push(device.to_owned());
            }
        }
    }
    let instance = berth_net::instance::Instance::for_root(root);
    devices.push(instance.default_bridge);
    for device in devices {
        let _ = bounded(
            Command::new("ip")
                .args(["link", "delete", &device])
                .stderr(std::process::Stdio::null()),
        );
    }
    let _ = berth_net::nft::remove_table(&instance.table);
    let _ = berth_net::docker_user::sync_docker_user(&instance.table, &[]);
}

/// Runs `command` with no stdin, its stdout captured, and gives up (killing
/// it) after 30 s: cleanup must not hang a test on a berth bug.
fn bounded(command: &mut Command) -> Option<Output> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return child.wait_with_output().ok(),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                eprintln!("cleanup: {command:?} did not finish in 30 s, killing it");
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// Whether a network device of this name exists (in this namespace); an
/// empty name or one with a `/` names none (as `ip link show dev NAME`).
pub fn link_exists(device: &str) -> bool {
    !device.is_empty() && !device.contains('/') && Path::new("/sys/class/net").join(device).exists()
}

/// The Docker engine to compare with, or None with the reason printed.
pub fn docker_host() -> Option<String> {
    let Some(host) = std::env::var("BERTH_TEST_DOCKER_HOST")
        .ok()
        .filter(|host| !host.is_empty())
    else {
        eprintln!(
            "SKIP: no Docker engine (BERTH_TEST_DOCKER_HOST unset; scripts/test.sh starts one)"
        );
        return None;
    };
    let answered = Command::new("docker")
        .args(["-H", &host, "version", "--format", "{{.Server.Version}}"])
        .output()
        .map(|output| output.status.success())
        .unwrap_or(false);
    if !answered {
        eprintln!("SKIP: the Docker engine at {host} does not answer");
        return None;
    }
    Some(host)
}

pub fn docker(host: &str, args: &[&str]) -> Output {
    Command::new("docker")
        .arg("-H")
        .arg(host)
        .args(args)
        .output()
        .expect("run docker")
}

/// Splits a table printed by Docker's tabwriter into rows of cells, using
/// where each header starts (headers may contain single spaces).
pub fn table(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    let mut starts = Vec::new();
    let mut names = Vec::new();
    let bytes = header.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] != b' ' && (index == 0 || header[..index].ends_with("  ")) {
            starts.push(index);
            let end = header[index..]
                .find("  ")
                .map_or(header.len(), |offset| index + offset);
            names.push(header[index..end].to_owned());
            index = end;
        } else {
            index += 1;
        }
    }
    let rows = lines
        .map(|line| {
            starts
                .iter()
                .enumerate()
                .map(|(column, &start)| {
                    let end = starts.get(column + 1).copied().unwrap_or(line.len());
                    line.get(start.min(line.len())..end.min(line.len()))
                        .unwrap_or_default()
                        .trim()
                        .to_owned()
                })
                .collect()
        })
        .collect();
    (names, rows)
}
