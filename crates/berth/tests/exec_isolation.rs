//! What a berth process shows a container while it is still berth (issue 14): an exec's helper,
//! between entering the container's pid namespace and its `execve`, and the berth binary
//! itself, which a container can reach through `/proc/<pid>/exe` (runc's CVE-2019-5736).
//!
//! The hostile side is `exec_isolation/probe.c`, built with `gcc -static` and bind-mounted into
//! the container: it watches the container's `/proc` for berth processes and tries to read
//! their environment and command line, open their executable and ptrace them.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::containers::parent_pid;
use support::Berth;

/// Set only in the environment of the `berth exec` commands, never passed to a container.
const SECRET: &str = "s3cr3t-only-in-the-callers-environment";

fn busybox() -> Berth {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth
}

/// The probe, compiled into `directory`; None (and why) without a static C toolchain.
fn build_probe(directory: &Path) -> Option<PathBuf> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/exec_isolation/probe.c");
    let probe = directory.join("probe");
    let output = Command::new("gcc")
        .args(["-static", "-O2", "-o"])
        .arg(&probe)
        .arg(&source)
        .output();
    match output {
        Ok(output) if output.status.success() => Some(probe),
        Ok(output) => {
            eprintln!(
                "skipped: gcc -static failed (apt-get install gcc libc6-dev): {}",
                String::from_utf8_lossy(&output.stderr)
            );
            None
        }
        Err(error) => {
            eprintln!("skipped: no gcc ({error})");
            None
        }
    }
}

/// Runs the probe in a fresh container made with `options`, makes `execs` execs into it from a
/// caller whose environment holds [`SECRET`], and returns the probe's counts.
fn probe_during_execs(berth: &Berth, options: &[&str], execs: usize) -> Option<Counts> {
    let directory = tempfile::tempdir().unwrap();
    fs_err::set_permissions(directory.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    build_probe(directory.path())?;
    let volume = format!("{}:/probe", directory.path().display());
    let mut args = vec!["-v", volume.as_str()];
    args.extend_from_slice(options);
    args.extend_from_slice(&["busybox", "sleep", "300"]);
    let id = berth.run_detached(&args);
    berth
        .run(&["exec", "-d", &id, "/probe/probe", "/probe", SECRET])
        .ok();
    let seen = || {
        berth
            .run(&["exec", &id, "pidof", "probe"])
            .stdout()
            .trim()
            .to_owned()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen().is_empty() {
        assert!(Instant::now() < deadline, "the probe did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    for _ in 0..execs {
        let output = berth
            .command()
            .env("BERTH_TEST_CALLER_SECRET", SECRET)
            .args(["exec", &id, "true"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
    }
    fs_err::write(directory.path().join("stop"), b"").unwrap();
    let result = directory.path().join("result");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !result.exists() {
        assert!(Instant::now() < deadline, "the probe wrote no result");
        std::thread::sleep(Duration::from_millis(20));
    }
    berth.run(&["rm", "-f", &id]).ok();
    Some(Counts::parse(&fs_err::read_to_string(result).unwrap()))
}

/// The probe's `name=N` counts.
#[derive(Debug)]
struct Counts(Vec<(String, u64)>);

impl Counts {
    fn parse(line: &str) -> Self {
        Self(
            line.split_whitespace()
                .filter_map(|field| field.split_once('='))
                .map(|(name, value)| (name.to_owned(), value.parse().unwrap()))
                .collect(),
        )
    }

    fn get(&self, name: &str) -> u64 {
        self.0
            .iter()
            .find(|(known, _)| known == name)
            .unwrap_or_else(|| panic!("no {name} in {self:?}"))
            .1
    }
}

#[test]
fn a_default_container_cannot_read_trace_or_open_an_execs_helper() {
    let berth = busybox();
    let Some(counts) = probe_during_execs(&berth, &[], 30) else {
        return;
    };
    // The probe must have caught helpers at work, or it proved nothing.
    assert!(counts.get("seen") >= 1, "{counts:?}");
    for what in ["environ", "secret", "cmdline", "exe", "ptrace"] {
        assert_eq!(counts.get(what), 0, "{what}: {counts:?}");
    }
}

#[test]
fn a_container_with_sys_ptrace_never_sees_the_callers_environment() {
    // CAP_SYS_PTRACE passes the kernel's check on undumpable processes, so this container may
    // read the helper's /proc/PID/environ: it must hold none of the caller's variables.
    let berth = busybox();
    let Some(counts) = probe_during_execs(&berth, &["--cap-add", "SYS_PTRACE"], 30) else {
        return;
    };
    assert!(counts.get("seen") >= 1, "{counts:?}");
    assert_eq!(counts.get("secret"), 0, "{counts:?}");
    assert_eq!(counts.get("cmdline"), 0, "{counts:?}");
}

/// `BINARY exec -it CONTAINER PROGRAM` on a terminal (`script` gives it one), its stdin held
/// open for two seconds, on `berth`'s roots. Its status is not checked: the program is berth
/// as an interpreter, which fails on its odd arguments.
fn exec_on_a_terminal(binary: &Path, berth: &Berth, container: &str, program: &str) {
    let exec = format!("{} exec -it {container} {program}", binary.display());
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!("sleep 2 | script -qfec '{exec}' /dev/null"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (key, value) in berth.command().get_envs() {
        if let Some(value) = value {
            command.env(key, value);
        }
    }
    command.status().unwrap();
}

#[test]
fn a_container_cannot_overwrite_berth_through_proc_pid_exe() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` (util-linux) to give exec a terminal");
        return;
    }
    let berth = busybox();
    // The exec runs from a copy of berth of its own, which nothing else runs: once it exits, the
    // copy is no longer busy and only its mount can refuse a write (before the fix, the write
    // went through and the copy began with "x").
    let copies = tempfile::tempdir().unwrap();
    let copy = copies.path().join("berth");
    fs_err::copy(env!("CARGO_BIN_EXE_berth"), &copy).unwrap();
    let original = fs_err::read(&copy).unwrap();

    let id = berth.run_detached(&["busybox", "sleep", "300"]);
    // The program is a script whose interpreter is /proc/self/exe: the berth that execs it runs
    // itself again, now as the container's process (`login` keeps it waiting at its prompt).
    let attack = r#"
printf '#!/proc/self/exe login\n' > /evil && chmod +x /evil
while :; do
  for d in /proc/[0-9]*; do [ "$(cat $d/comm 2>/dev/null)" = evil ] && pid=${d#/proc/} && break 2; done
done
exec 3</proc/$pid/exe && echo opened > /result
kill $pid
i=0
while [ $i -lt 100 ]; do
  if printf x 2>>/result 1<>/proc/self/fd/3; then echo WROTE >> /result; break; fi
  i=$((i+1)); sleep 0.05
done
echo done >> /result
"#;
    berth.run(&["exec", "-d", &id, "sh", "-c", attack]).ok();
    std::thread::sleep(Duration::from_millis(300));
    exec_on_a_terminal(&copy, &berth, &id, "/evil");

    let deadline = Instant::now() + Duration::from_secs(20);
    let result = loop {
        let result = berth.run(&["exec", &id, "cat", "/result"]).stdout();
        if result.contains("done") {
            break result;
        }
        assert!(
            Instant::now() < deadline,
            "the attack did not finish: {result:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    berth.run(&["rm", "-f", &id]).ok();
    assert!(result.contains("opened"), "{result}");
    assert!(!result.contains("WROTE"), "{result}");
    assert!(result.contains("Read-only file system"), "{result}");
    assert!(
        fs_err::read(&copy).unwrap() == original,
        "the copy of berth was changed"
    );
}

#[test]
fn a_containers_monitor_runs_from_a_read_only_berth() {
    let berth = busybox();
    let id = berth.run_detached(&["busybox", "sleep", "300"]);
    let pid: i32 = berth.inspect(&id, "{{.State.Pid}}").parse().unwrap();
    let monitor = parent_pid(pid);
    let path = std::ffi::CString::new(format!("/proc/{monitor}/exe")).unwrap();
    let mut stats = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: statvfs reads the path and fills `stats`.
    let result = unsafe { libc::statvfs(path.as_ptr(), stats.as_mut_ptr()) };
    berth.run(&["rm", "-f", &id]).ok();
    assert_eq!(result, 0, "{}", std::io::Error::last_os_error());
    // SAFETY: statvfs succeeded, so it filled `stats`.
    let flags = unsafe { stats.assume_init() }.f_flag;
    assert!(
        flags & libc::ST_RDONLY != 0,
        "the monitor's executable is on a writable mount"
    );
}
