//! Shared pieces of the OCI runtime tests: berth through its `berth-runc` link and Debian's
//! runc on the same bundles, each with a state root of its own; bundles made from the
//! busybox fixture's root file system (`rootfs.tar`), with their cgroups below
//! `berth-oci-test/` so that what is left behind can be checked (and removed).
#![allow(dead_code, clippy::unwrap_used)] // test support: a failed step is a failed test

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

pub const CGROUP_PARENT: &str = "berth-oci-test";

/// One runtime under test.
pub struct Runtime {
    pub name: &'static str,
    pub program: PathBuf,
    pub root: PathBuf,
}

#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Runtime {
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.program);
        command.arg("--root").arg(&self.root).args(args);
        command.stdin(Stdio::null());
        command
    }

    pub fn run(&self, args: &[&str]) -> Out {
        let output = self.command(args).output().unwrap();
        Out {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// `create`, with the container's stdio (inherited by its init) in files, so that no
    /// pipe is held open by the init after `create` returns.
    pub fn create(&self, bundle: &Path, id: &str, out: &Path) -> Out {
        let stdout = fs_err::File::create(out.with_extension("out")).unwrap();
        let stderr = fs_err::File::create(out.with_extension("err")).unwrap();
        let status = self
            .command(&["create", "--bundle", bundle.to_str().unwrap(), id])
            .stdout(stdout.into_file())
            .stderr(stderr.into_file())
            .status()
            .unwrap();
        Out {
            code: status.code().unwrap_or(-1),
            stdout: fs_err::read_to_string(out.with_extension("out")).unwrap(),
            stderr: fs_err::read_to_string(out.with_extension("err")).unwrap(),
        }
    }

    pub fn state(&self, id: &str) -> Option<Value> {
        let out = self.run(&["state", id]);
        (out.code == 0).then(|| serde_json::from_str(&out.stdout).unwrap())
    }

    pub fn status(&self, id: &str) -> String {
        self.state(id)
            .map(|state| state["status"].as_str().unwrap().to_owned())
            .unwrap_or_default()
    }

    pub fn wait_status(&self, id: &str, status: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while self.status(id) != status {
            assert!(
                std::time::Instant::now() < deadline,
                "{}: {id} never became {status}",
                self.name
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// The state root holds nothing (no container left behind).
    pub fn assert_empty(&self) {
        let left: Vec<_> = fs_err::read_dir(&self.root)
            .map(|entries| entries.flatten().map(|entry| entry.file_name()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{}: left in its root: {left:?}", self.name);
    }
}

/// A link named `berth-runc` to the berth under test, in `dir`.
pub fn berth_runc(dir: &Path) -> PathBuf {
    let link = dir.join("berth-runc");
    if !link.exists() {
        fs_err::os::unix::fs::symlink(env!("CARGO_BIN_EXE_berth"), &link).unwrap();
    }
    link
}

pub fn runc_available() -> bool {
    Command::new("runc")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
}

/// berth, and runc when it is installed (else the comparison is skipped, said so).
pub fn runtimes(dir: &Path) -> Vec<Runtime> {
    let mut runtimes = vec![Runtime {
        name: "berth",
        program: berth_runc(dir),
        root: dir.join("root-berth"),
    }];
    if runc_available() {
        runtimes.push(Runtime {
            name: "runc",
            program: PathBuf::from("runc"),
            root: dir.join("root-runc"),
        });
    } else {
        eprintln!("runc is not installed: berth's results are not compared with runc's");
    }
    runtimes
}

/// The fixture's root file system unpacked in `dir/rootfs`.
pub fn rootfs(dir: &Path) -> PathBuf {
    let rootfs = dir.join("rootfs");
    fs_err::create_dir_all(&rootfs).unwrap();
    let mut archive =
        tar::Archive::new(fs_err::File::open(crate::support::fixture("rootfs.tar")).unwrap());
    archive.set_preserve_permissions(true);
    archive.unpack(&rootfs).unwrap();
    rootfs
}

/// A config both runtimes run as is: `args`, no terminal, the shared root read-only, the
/// standard mounts, new pid/network/ipc/uts/mount namespaces, its cgroup at
/// `berth-oci-test/<cgroup>`.
pub fn base_config(rootfs: &Path, cgroup: &str, args: &[&str]) -> Value {
    let capabilities = json!([
        "CAP_CHOWN",
        "CAP_DAC_OVERRIDE",
        "CAP_FSETID",
        "CAP_FOWNER",
        "CAP_MKNOD",
        "CAP_NET_RAW",
        "CAP_SETGID",
        "CAP_SETUID",
        "CAP_SETFCAP",
        "CAP_SETPCAP",
        "CAP_NET_BIND_SERVICE",
        "CAP_SYS_CHROOT",
        "CAP_KILL",
        "CAP_AUDIT_WRITE"
    ]);
    json!({
        "ociVersion": "1.0.2",
        "process": {
            "terminal": false,
            "user": {"uid": 0, "gid": 0},
            "args": args,
            "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
            "cwd": "/",
            "capabilities": {"bounding": capabilities, "effective": capabilities, "permitted": capabilities},
            "noNewPrivileges": false
        },
        "root": {"path": rootfs, "readonly": true},
        "hostname": "oci",
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
            {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
             "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
            {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
             "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
            {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
             "options": ["nosuid", "noexec", "nodev"]},
            {"destination": "/sys", "type": "sysfs", "source": "sysfs",
             "options": ["nosuid", "noexec", "nodev", "ro"]}
        ],
        "linux": {
            "cgroupsPath": format!("/{CGROUP_PARENT}/{cgroup}"),
            "resources": {"devices": [{"allow": false, "access": "rwm"}]},
            "namespaces": [
                {"type": "pid"}, {"type": "network"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}
            ],
            "maskedPaths": [
                "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
                "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi"
            ],
            "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]
        }
    })
}

/// Writes `config` as `dir/<name>/config.json`; returns the bundle.
pub fn bundle(dir: &Path, name: &str, config: &Value) -> PathBuf {
    let bundle = dir.join(name);
    fs_err::create_dir_all(&bundle).unwrap();
    fs_err::write(
        bundle.join("config.json"),
        serde_json::to_vec_pretty(config).unwrap(),
    )
    .unwrap();
    bundle
}

/// The cgroup directories of `berth-oci-test/<cgroup>` that exist.
pub fn cgroup_dirs(cgroup: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    if let Ok(entries) = fs_err::read_dir("/sys/fs/cgroup") {
        for entry in entries.flatten() {
            let path = entry.path().join(CGROUP_PARENT).join(cgroup);
            if path.exists() {
                found.push(path);
            }
        }
    }
    let unified = Path::new("/sys/fs/cgroup").join(CGROUP_PARENT).join(cgroup);
    if unified.exists() {
        found.push(unified);
    }
    found
}

/// Removes what a failed test may have left: its containers (through each runtime's
/// `delete --force`) and their cgroups.
pub fn clean(runtimes: &[Runtime], ids: &[String]) {
    for runtime in runtimes {
        for id in ids {
            let _ = runtime
                .command(&["delete", "--force", id])
                .stderr(Stdio::null())
                .status();
        }
    }
    for id in ids {
        for dir in cgroup_dirs(id) {
            let _ = fs_err::remove_dir(dir);
        }
    }
    if let Ok(entries) = fs_err::read_dir("/sys/fs/cgroup") {
        for entry in entries.flatten() {
            // Only when empty: other tests may still have containers below it.
            let _ = fs_err::remove_dir(entry.path().join(CGROUP_PARENT));
        }
    }
    let _ = fs_err::remove_dir(Path::new("/sys/fs/cgroup").join(CGROUP_PARENT));
}

/// Runs the closure's body, then `clean`, even when the body panics.
pub struct Cleanup<'a> {
    pub runtimes: &'a [Runtime],
    pub ids: Vec<String>,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        clean(self.runtimes, &self.ids);
    }
}
