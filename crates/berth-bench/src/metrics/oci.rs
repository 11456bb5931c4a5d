//! 11. berth as an OCI runtime: `create` + `start` + `delete --force` of a bundle whose
//!     process is busybox `true`, through the `berth-runc` link (docs/OCI-RUNTIME.md), next
//!     to runc and crun on the same bundle, and the floor: `unshare` of the same namespaces
//!     running the same `true`. Rounds interleave the runtimes so a change in the machine's
//!     load reaches all alike; each runtime has a state root of its own.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::context::{reason, Context};
use crate::options::Metric;
use crate::process::{run as run_process, which};
use crate::report::{Measurement, MetricReport, Unit};

const NAME: &str = "create + start + delete of `true`";
const TIMEOUT: Duration = Duration::from_secs(60);
const CGROUP_PARENT: &str = "berth-bench-oci";

struct Runtime {
    label: &'static str,
    program: PathBuf,
    root: PathBuf,
    samples: Result<Vec<f64>, String>,
}

pub fn run(context: &mut Context) -> MetricReport {
    let plan = context.plan.clone();
    let mut report = MetricReport::new(
        Metric::Oci.id(),
        Metric::Oci.title(),
        format!(
            "A bundle with a read-only root holding only static busybox, process \
             `/bin/busybox true`, new pid, network, ipc, uts and mount namespaces, the standard \
             mounts, Docker's default device rules. One round: `RUNTIME --root DIR create \
             --bundle B ID`, `start ID`, `delete --force ID`, timed together. berth through \
             its `berth-runc` link; Debian's runc and crun when installed. The floor: `unshare \
             -m -n -p -f -i -u /bin/busybox true` on the same root's busybox. {} round(s) \
             after {} warm-up, interleaved.",
            plan.start_runs, plan.start_warmup
        ),
    );
    let Some(berth) = context.engines.iter().find(|engine| engine.is_berth()) else {
        report.skipped = Some("berth is not among the engines measured".to_owned());
        return report;
    };
    let busybox = match context.images.busybox_binary() {
        Ok(path) => path,
        Err(why) => {
            report.skipped = Some(why);
            return report;
        }
    };
    let work = context.scratch.join("oci");
    let bundle = match make_bundle(&work, &busybox) {
        Ok(bundle) => bundle,
        Err(why) => {
            report.skipped = Some(why);
            return report;
        }
    };
    let link = work.join("berth-runc");
    if let Err(error) = fs_err::os::unix::fs::symlink(&berth.program, &link) {
        report.skipped = Some(format!("failed to link berth-runc: {error}"));
        return report;
    }
    let mut runtimes = vec![Runtime {
        label: "berth",
        program: link,
        root: work.join("root-berth"),
        samples: Ok(Vec::new()),
    }];
    for (label, program) in [("runc", "runc"), ("crun", "crun")] {
        match which(program) {
            Some(path) => runtimes.push(Runtime {
                label,
                program: path,
                root: work.join(format!("root-{label}")),
                samples: Ok(Vec::new()),
            }),
            None => report.fact(
                label,
                "runtime",
                format!("{program} is not installed: not measured"),
            ),
        }
    }
    let unshare = which("unshare");
    let mut floor: Result<Vec<f64>, String> = match &unshare {
        Some(_) => Ok(Vec::new()),
        None => Err("unshare is not installed".to_owned()),
    };
    let rootfs_busybox = bundle.join("rootfs/bin/busybox");
    for round in 0..plan.start_warmup + plan.start_runs {
        let recorded = round >= plan.start_warmup;
        for runtime in &mut runtimes {
            let Ok(samples) = &mut runtime.samples else {
                continue;
            };
            let id = format!("bench-{round}");
            context.log(format!("oci: {} round {round}", runtime.label));
            match one_round(&runtime.program, &runtime.root, &bundle, &id) {
                Ok(seconds) if recorded => samples.push(seconds),
                Ok(_) => {}
                Err(why) => runtime.samples = Err(why),
            }
        }
        if let (Some(unshare), Ok(samples)) = (&unshare, &mut floor) {
            let mut command = Command::new(unshare);
            command
                .args(["-m", "-n", "-p", "-f", "-i", "-u"])
                .arg(&rootfs_busybox)
                .arg("true");
            match run_process(&mut command, TIMEOUT).and_then(|finished| finished.check()) {
                Ok(finished) if recorded => samples.push(finished.elapsed.as_secs_f64()),
                Ok(_) => {}
                Err(error) => floor = Err(reason(error)),
            }
        }
    }
    for runtime in runtimes {
        report.measurements.push(Measurement::from_result(
            NAME,
            runtime.label,
            Unit::Seconds,
            runtime.samples,
        ));
    }
    report.measurements.push(Measurement::from_result(
        NAME,
        "unshare (floor)",
        Unit::Seconds,
        floor,
    ));
    remove_cgroup_parent();
    report
}

/// One create + start + delete; the seconds it took.
fn one_round(program: &Path, root: &Path, bundle: &Path, id: &str) -> Result<f64, String> {
    let started = Instant::now();
    for args in [
        vec![
            "create",
            "--bundle",
            bundle.to_str().unwrap_or_default(),
            id,
        ],
        vec!["start", id],
        vec!["delete", "--force", id],
    ] {
        let mut command = Command::new(program);
        command.arg("--root").arg(root).args(&args);
        run_process(&mut command, TIMEOUT)
            .and_then(|finished| finished.check())
            .map_err(reason)?;
    }
    Ok(started.elapsed().as_secs_f64())
}

fn make_bundle(work: &Path, busybox: &Path) -> Result<PathBuf, String> {
    let text = |error: std::io::Error| error.to_string();
    let bundle = work.join("bundle");
    let rootfs = bundle.join("rootfs");
    for directory in ["bin", "proc", "dev", "sys", "tmp"] {
        fs_err::create_dir_all(rootfs.join(directory)).map_err(text)?;
    }
    fs_err::copy(busybox, rootfs.join("bin/busybox")).map_err(text)?;
    let config = serde_json::json!({
        "ociVersion": "1.0.2",
        "process": {
            "terminal": false,
            "user": {"uid": 0, "gid": 0},
            "args": ["/bin/busybox", "true"],
            "env": ["PATH=/bin"],
            "cwd": "/",
            "noNewPrivileges": true
        },
        "root": {"path": "rootfs", "readonly": true},
        "hostname": "bench",
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
            "cgroupsPath": format!("/{CGROUP_PARENT}/bench"),
            "resources": {"devices": [{"allow": false, "access": "rwm"}]},
            "namespaces": [
                {"type": "pid"}, {"type": "network"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}
            ]
        }
    });
    let bytes = serde_json::to_vec_pretty(&config).map_err(|error| error.to_string())?;
    fs_err::write(bundle.join("config.json"), bytes).map_err(text)?;
    Ok(bundle)
}

/// The runtimes remove their containers' cgroups; the parent is the bench's.
fn remove_cgroup_parent() {
    if let Ok(entries) = fs_err::read_dir("/sys/fs/cgroup") {
        for entry in entries.flatten() {
            let parent = entry.path().join(CGROUP_PARENT);
            let _ = fs_err::remove_dir(parent.join("bench"));
            let _ = fs_err::remove_dir(parent);
        }
    }
    let _ = fs_err::remove_dir(
        Path::new("/sys/fs/cgroup")
            .join(CGROUP_PARENT)
            .join("bench"),
    );
    let _ = fs_err::remove_dir(Path::new("/sys/fs/cgroup").join(CGROUP_PARENT));
}
