//! Helpers for the container tests: polling with a deadline, `inspect`
//! fields, background `berth` processes, and what a container may leave on
//! the host (mounts, cgroup directories, processes).

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::{Berth, Run};

/// Polls `condition` every 20 ms until it holds; panics with `what` after
/// `seconds`.
#[track_caller]
pub fn wait_until(seconds: f64, what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    loop {
        if condition() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {seconds} s waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for `child` to exit, killing it and panicking after `seconds`.
#[track_caller]
pub fn wait_child(child: &mut Child, seconds: f64, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("timed out after {seconds} s waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for a spawned `berth` (stdout and stderr piped) that must succeed;
/// returns its stdout, trimmed.
#[track_caller]
pub fn succeeded(child: Child) -> String {
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{:?} failed: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

pub fn pid_alive(pid: i32) -> bool {
    // A zombie still answers kill(0); count it as gone.
    match fs_err::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// The parent pid of `pid`, from /proc.
pub fn parent_pid(pid: i32) -> i32 {
    let stat = fs_err::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = stat.rsplit(')').next().unwrap();
    after.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Mount points at or below `root`, from /proc/self/mountinfo.
pub fn mounts_under(root: &Path) -> Vec<PathBuf> {
    let mountinfo = fs_err::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut found: Vec<PathBuf> = mountinfo
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(unescape_mount_path)
        .filter(|path| path.starts_with(root))
        .collect();
    found.sort();
    found
}

fn unescape_mount_path(field: &str) -> PathBuf {
    // mountinfo escapes space, tab, newline and backslash as \\ooo.
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'\\' && index + 4 <= bytes.len() {
            let digits = std::str::from_utf8(&bytes[index + 1..index + 4]).ok();
            if let Some(value) = digits.and_then(|digits| u8::from_str_radix(digits, 8).ok()) {
                out.push(value);
                index += 4;
                continue;
            }
        }
        out.push(bytes[index]);
        index += 1;
    }
    PathBuf::from(<std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(out))
}

/// Lazily unmounts everything at or below `root`, deepest first.
pub fn detach_mounts_under(root: &Path) {
    let mut mounts = mounts_under(root);
    mounts.sort_by_key(|path| std::cmp::Reverse(path.as_os_str().len()));
    for mount in mounts {
        eprintln!("cleanup: berth left {mount:?} mounted; detaching it");
        let _ = nix::mount::umount2(&mount, nix::mount::MntFlags::MNT_DETACH);
    }
}

/// The cgroup directories berth made for container `id` (cgroup v1: one per
/// hierarchy, `/sys/fs/cgroup/<controller>/berth/<id>`; v2:
/// `/sys/fs/cgroup/berth/<id>`).
pub fn cgroup_dirs(id: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let base = Path::new("/sys/fs/cgroup");
    let direct = base.join("berth").join(id);
    if direct.is_dir() {
        found.push(direct);
    }
    if let Ok(entries) = fs_err::read_dir(base) {
        for entry in entries.flatten() {
            let path = entry.path().join("berth").join(id);
            if path.is_dir() {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Kills every process started with `BERTH_ROOT=root` (monitors are forks
/// of the CLI, so they carry its environment) other than this one.
pub fn kill_processes_of_root(root: &Path) {
    let wanted = format!("BERTH_ROOT={}", root.display());
    let own = std::process::id();
    let Ok(entries) = fs_err::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == own {
            continue;
        }
        let Ok(environ) = fs_err::read(entry.path().join("environ")) else {
            continue;
        };
        if environ
            .split(|byte| *byte == 0)
            .any(|item| item == wanted.as_bytes())
        {
            let command = fs_err::read(entry.path().join("cmdline")).unwrap_or_default();
            eprintln!(
                "cleanup: killing leftover berth process {pid}: {}",
                String::from_utf8_lossy(&command).replace('\0', " ")
            );
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// Kills whatever is left in container `id`'s cgroups and removes them.
pub fn kill_cgroup(id: &str) {
    let directories = cgroup_dirs(id);
    if directories.is_empty() {
        return;
    }
    eprintln!("cleanup: berth left cgroups of {id}: {directories:?}");
    for directory in &directories {
        // A frozen cgroup cannot die; thaw it first (v1 freezer, v2 cgroup.freeze).
        let _ = fs_err::write(directory.join("freezer.state"), "THAWED");
        let _ = fs_err::write(directory.join("cgroup.freeze"), "0");
        if let Ok(procs) = fs_err::read_to_string(directory.join("cgroup.procs")) {
            for pid in procs.split_whitespace().filter_map(|pid| pid.parse().ok()) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    for directory in &directories {
        while fs_err::remove_dir(directory).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Berth {
    /// `berth ARGS` in the background, stdin closed, stdout and stderr piped.
    pub fn spawn(&self, args: &[&str]) -> Child {
        self.command()
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn berth")
    }

    /// `run -d ARGS`, returning the full container id.
    #[track_caller]
    pub fn run_detached(&self, args: &[&str]) -> String {
        let mut full = vec!["run", "-d"];
        full.extend_from_slice(args);
        let id = self.run(&full).ok().trim().to_owned();
        assert_eq!(id.len(), 64, "run -d prints the full id: {id:?}");
        id
    }

    /// `inspect -f FORMAT CONTAINER`, trimmed.
    #[track_caller]
    pub fn inspect(&self, container: &str, format: &str) -> String {
        self.run(&["inspect", "-f", format, container])
            .ok()
            .trim()
            .to_owned()
    }

    /// `inspect` as JSON (the first and only object).
    #[track_caller]
    pub fn inspect_json(&self, container: &str) -> serde_json::Value {
        let text = self.run(&["container", "inspect", container]).ok();
        let mut all: serde_json::Value = serde_json::from_str(&text).unwrap();
        all[0].take()
    }

    pub fn status(&self, container: &str) -> String {
        let run = self.run(&["inspect", "-f", "{{.State.Status}}", container]);
        run.stdout().trim().to_owned()
    }

    /// Waits until the container's State.Status is `status`.
    #[track_caller]
    pub fn wait_status(&self, container: &str, status: &str, seconds: f64) {
        let what = format!("{container} to be {status}");
        let deadline = Instant::now() + Duration::from_secs_f64(seconds);
        loop {
            let last = self.status(container);
            if last == status {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "timed out after {seconds} s waiting for {what} (last status {last:?})"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until `logs CONTAINER` contains `text`, returning the logs.
    #[track_caller]
    pub fn wait_logs(&self, container: &str, text: &str, seconds: f64) -> String {
        let deadline = Instant::now() + Duration::from_secs_f64(seconds);
        loop {
            let run = self.run(&["logs", container]);
            let logs = run.stdout() + &run.stderr();
            if logs.contains(text) {
                return logs;
            }
            assert!(
                Instant::now() < deadline,
                "timed out after {seconds} s waiting for {text:?} in the logs of {container}:\n{logs}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `ps -aq --no-trunc`, as a list.
    pub fn all_ids(&self) -> Vec<String> {
        self.run(&["ps", "-aq", "--no-trunc"])
            .ok()
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    }

    /// Directories under `<root>/containers`.
    pub fn container_dirs(&self) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = fs_err::read_dir(self.root().join("containers"))
            .map(|entries| entries.flatten().map(|entry| entry.path()).collect())
            .unwrap_or_default();
        found.sort();
        found
    }

    /// Asserts that container `id` left nothing on the host: no mount under
    /// the root, no cgroup directory.
    #[track_caller]
    pub fn assert_no_leftovers(&self, id: &str) {
        let merged = self.root().join("containers").join(id);
        let mounts: Vec<_> = mounts_under(self.root())
            .into_iter()
            .filter(|mount| mount.starts_with(&merged))
            .collect();
        assert!(mounts.is_empty(), "{id} left mounts: {mounts:?}");
        let cgroups = cgroup_dirs(id);
        assert!(cgroups.is_empty(), "{id} left cgroups: {cgroups:?}");
    }
}

impl Run {
    /// stdout and stderr together (a container's two streams).
    pub fn all_output(&self) -> String {
        self.stdout() + &self.stderr()
    }
}
