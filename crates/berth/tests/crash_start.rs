//! What a `run` holds is free when it returns (its host port, its fixed
//! address, its name), and a monitor killed (kill -9) while its container
//! starts leaves nothing the next command does not repair: no cgroup,
//! address, veth, nftables element, port, mount or process, and no state
//! that is not true.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use support::containers::{cgroup_dirs, mounts_under, pid_alive, wait_child, wait_until};
use support::Berth;

fn busybox() -> Berth {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth
}

/// A TCP port on 127.0.0.1 that nobody holds right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A user-defined network, removed (with every container of the root)
/// when the test ends, passed or not.
struct TestNetwork<'a> {
    berth: &'a Berth,
    name: String,
}

impl<'a> TestNetwork<'a> {
    fn create(berth: &'a Berth, name: &str, options: &[&str]) -> Self {
        let mut args = vec!["network", "create"];
        args.extend_from_slice(options);
        args.push(name);
        berth.run(&args).ok();
        Self {
            berth,
            name: name.to_owned(),
        }
    }

    /// The network's bridge (`berth-<id prefix>`).
    fn bridge(&self) -> String {
        let id = self
            .berth
            .run(&["network", "inspect", "-f", "{{.Id}}", &self.name])
            .ok();
        format!("berth-{}", &id.trim()[..9])
    }

    /// The containers with an address on it (`network inspect`).
    fn endpoints(&self) -> String {
        let format = "{{range $id, $c := .Containers}}{{$id}} {{$c.IPv4Address}}\n{{end}}";
        self.berth
            .run(&["network", "inspect", "-f", format, &self.name])
            .ok()
            .trim()
            .to_owned()
    }
}

impl Drop for TestNetwork<'_> {
    fn drop(&mut self) {
        remove_all_containers(self.berth);
        self.berth.run(&["network", "rm", &self.name]);
    }
}

fn remove_all_containers(berth: &Berth) {
    let listed = berth.run(&["ps", "-aq", "--no-trunc"]).stdout();
    let ids: Vec<&str> = listed.split_whitespace().collect();
    if !ids.is_empty() {
        let mut args = vec!["rm", "-f"];
        args.extend(&ids);
        berth.run(&args);
    }
    for id in ids {
        support::containers::kill_cgroup(id);
    }
}

/// The veths enslaved to `bridge`.
fn veths_on(bridge: &str) -> Vec<String> {
    let output = Command::new("ip")
        .args(["-o", "link", "show", "master", bridge])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The elements of this root's published-ports map that name `port`
/// (none when the map or the table is gone).
fn published_elements(berth: &Berth, port: u16) -> Vec<String> {
    let table = berth_net::instance::Instance::for_root(berth.root()).table;
    let output = Command::new("nft")
        .args(["list", "map", "ip", &table, "published"])
        .output()
        .unwrap();
    let needle = format!(" . {port} ");
    String::from_utf8_lossy(&output.stdout)
        .split([',', '{', '}', '\n'])
        .filter(|element| element.contains(&needle))
        .map(|element| element.trim().to_owned())
        .collect()
}

/// Live processes whose command line is exactly `words`.
fn processes_running(words: &[&str]) -> Vec<i32> {
    let wanted: Vec<u8> = words
        .iter()
        .flat_map(|word| [word.as_bytes(), b"\0"].concat())
        .collect();
    fs_err::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| fs_err::read(format!("/proc/{pid}/cmdline")).is_ok_and(|line| line == wanted))
        .filter(|pid| pid_alive(*pid))
        .collect()
}

/// `PRAGMA integrity_check` of the root's database, with the sqlite3 CLI.
fn assert_store_intact(root: &Path) {
    let database = root.join("metadata.db");
    match Command::new("sqlite3")
        .arg(&database)
        .arg("PRAGMA integrity_check;")
        .output()
    {
        Ok(output) => assert_eq!(
            String::from_utf8_lossy(&output.stdout).trim(),
            "ok",
            "integrity_check of {database:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        ),
        Err(error) => eprintln!("skipping the integrity check: no sqlite3 CLI ({error})"),
    }
}

/// The first child of `parent` (a `run`'s monitor is the CLI's fork): read
/// from /proc in a tight loop so that a kill can follow its fork at once.
fn first_child(parent: &mut Child) -> Option<i32> {
    let pid = parent.id();
    let children = format!("/proc/{pid}/task/{pid}/children");
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Some(child) = fs_err::read_to_string(&children)
            .ok()
            .and_then(|text| text.split_whitespace().next()?.parse().ok())
        {
            return Some(child);
        }
        if parent.try_wait().unwrap().is_some() {
            return None;
        }
    }
    None
}

fn kill9(pid: i32) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
}

/// The container ids `ps -a` shows, with their STATUS column.
fn listed(berth: &Berth) -> Vec<(String, String)> {
    berth
        .run(&["ps", "-a", "--no-trunc", "--format", "{{.ID}}\t{{.Status}}"])
        .ok()
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .map(|(id, status)| (id.to_owned(), status.to_owned()))
        .collect()
}

// ------------------------------------------------ what a run frees on return

/// The port of a `run --rm -p` was given back after the run returned,
/// up to milliseconds later: the next run failed about 1 time in 4 with
/// "port is already allocated".
#[test]
fn back_to_back_runs_publish_the_same_port() {
    let berth = busybox();
    let port = free_port();
    let publish = format!("127.0.0.1:{port}:80");
    for round in 0..30 {
        let run = berth.run(&["run", "--rm", "-p", &publish, "busybox", "true"]);
        assert_eq!(run.code(), 0, "run {round}: {}", run.stderr());
    }
    // Without --rm the container stays, and a new one takes the port.
    for round in 0..10 {
        let run = berth.run(&["run", "-p", &publish, "busybox", "true"]);
        assert_eq!(run.code(), 0, "run {round} without --rm: {}", run.stderr());
    }
    assert_eq!(listed(&berth).len(), 10);
    remove_all_containers(&berth);
    assert!(published_elements(&berth, port).is_empty());
    TcpListener::bind(("127.0.0.1", port)).expect("the port is free at the end");
}

#[test]
fn back_to_back_runs_take_the_same_fixed_address() {
    let berth = busybox();
    let network = TestNetwork::create(&berth, "fixed-ip", &["--subnet", "10.214.215.0/24"]);
    for round in 0..30 {
        let run = berth.run(&[
            "run",
            "--rm",
            "--network",
            "fixed-ip",
            "--ip",
            "10.214.215.77",
            "busybox",
            "true",
        ]);
        assert_eq!(run.code(), 0, "run {round}: {}", run.stderr());
    }
    assert_eq!(network.endpoints(), "");
}

#[test]
fn back_to_back_runs_take_the_same_name() {
    let berth = busybox();
    for round in 0..30 {
        let run = berth.run(&["run", "--rm", "--name", "again", "busybox", "true"]);
        assert_eq!(run.code(), 0, "run {round}: {}", run.stderr());
    }
    assert!(listed(&berth).is_empty());
}

// ------------------------------------------------ a monitor killed mid-start

/// Delays between the monitor's fork and its kill -9, in microseconds:
/// before and while it builds the container, and after it reported.
const DELAYS_US: [u64; 10] = [
    0, 300, 1_000, 2_000, 4_000, 7_000, 12_000, 20_000, 40_000, 150_000,
];

/// What a killed start must not leave, checked after the next command.
fn assert_nothing_left(
    berth: &Berth,
    network: &TestNetwork<'_>,
    id: Option<&str>,
    port: u16,
    sleep: &str,
    what: &str,
) {
    if let Some(id) = id {
        let cgroups = cgroup_dirs(id);
        assert!(cgroups.is_empty(), "{what}: cgroups left: {cgroups:?}");
    }
    assert_eq!(network.endpoints(), "", "{what}: an address is still taken");
    let bridge = network.bridge();
    wait_until(5.0, &format!("{what}: the veths on {bridge} to go"), || {
        veths_on(&bridge).is_empty()
    });
    let elements = published_elements(berth, port);
    assert!(
        elements.is_empty(),
        "{what}: nft elements left: {elements:?}"
    );
    TcpListener::bind(("127.0.0.1", port))
        .unwrap_or_else(|error| panic!("{what}: port {port} is still held: {error}"));
    let left = processes_running(&["sleep", sleep]);
    assert!(
        left.is_empty(),
        "{what}: container processes left: {left:?}"
    );
    let mounts = mounts_under(berth.root());
    assert!(mounts.is_empty(), "{what}: mounts left: {mounts:?}");
}

/// `run -d` (with `--rm` or not) whose monitor is killed `delay` after its
/// fork; returns the container id and whether `run` had reported the start.
fn run_and_kill_monitor(berth: &Berth, args: &[&str], delay: Duration) -> (String, bool) {
    let mut cli = berth.spawn(args);
    let monitor = first_child(&mut cli).expect("run forks a monitor");
    std::thread::sleep(delay);
    kill9(monitor);
    // kill(2) returns before the process is gone; the next command must
    // come after its death.
    wait_until(10.0, "the monitor to die", || !pid_alive(monitor));
    let status = wait_child(&mut cli, 30.0, "the run whose monitor was killed");
    let output = cli.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if status.success() {
        return (stdout, true);
    }
    assert_eq!(status.code(), Some(125), "{stderr}");
    assert!(stderr.contains("monitor"), "{stderr}");
    (String::new(), false)
}

/// The one container of the root, read from the store (no berth command,
/// which would repair it).
fn stored_ids(berth: &Berth) -> Vec<String> {
    berth_store::Store::open(berth.root())
        .unwrap()
        .container_ids_with_prefix("")
        .unwrap()
}

#[test]
fn a_monitor_killed_while_its_container_starts_is_repaired() {
    let berth = busybox();
    let network = TestNetwork::create(&berth, "killed-start", &[]);
    let port = free_port();
    let publish = format!("127.0.0.1:{port}:80");
    let mut cut_short = 0;
    for delay in DELAYS_US.map(Duration::from_micros) {
        let what = format!("monitor killed {delay:?} after its fork");
        let args = [
            "run",
            "-d",
            "--network",
            "killed-start",
            "-p",
            &publish,
            "busybox",
            "sleep",
            "4321",
        ];
        let (reported, started) = run_and_kill_monitor(&berth, &args, delay);
        let ids = stored_ids(&berth);
        assert_eq!(ids.len(), 1, "{what}: {ids:?}");
        let id = ids[0].clone();
        if started {
            assert_eq!(reported, id);
        } else {
            cut_short += 1;
            // The failed run repaired what its monitor left before it
            // returned.
            assert!(
                cgroup_dirs(&id).is_empty(),
                "{what}: {:?}",
                cgroup_dirs(&id)
            );
        }
        // The next command shows it exited, as killed.
        let shown = listed(&berth);
        assert_eq!(shown.len(), 1, "{what}: {shown:?}");
        assert!(shown[0].1.starts_with("Exited (137)"), "{what}: {shown:?}");
        assert_eq!(berth.status(&id), "exited");
        assert_nothing_left(&berth, &network, Some(&id), port, "4321", &what);
        let record = berth
            .run_root
            .path()
            .join("containers")
            .join(&id)
            .join("monitor.lock");
        assert!(!record.exists(), "{what}: the start record is left");
        // It starts again (and takes its port and address again), and
        // `rm -f` removes everything.
        berth.run(&["start", &id]).ok();
        assert_eq!(berth.status(&id), "running");
        berth.run(&["rm", "-f", &id]).ok();
        assert!(listed(&berth).is_empty());
        berth.assert_no_leftovers(&id);
        assert_nothing_left(&berth, &network, Some(&id), port, "4321", &what);
    }
    assert!(
        cut_short > 0,
        "no kill landed before the start was reported"
    );
    assert_store_intact(berth.root());
}

#[test]
fn a_monitor_killed_while_its_rm_container_starts_is_repaired() {
    let berth = busybox();
    let network = TestNetwork::create(&berth, "killed-rm-start", &[]);
    let port = free_port();
    let publish = format!("127.0.0.1:{port}:80");
    let cidfiles = tempfile::tempdir().unwrap();
    for (round, delay) in DELAYS_US.map(Duration::from_micros).iter().enumerate() {
        let what = format!("--rm monitor killed {delay:?} after its fork");
        // The id is written after the create, before the start.
        let cidfile = cidfiles.path().join(round.to_string());
        let args = [
            "run",
            "--rm",
            "-d",
            "--cidfile",
            cidfile.to_str().unwrap(),
            "--network",
            "killed-rm-start",
            "-p",
            &publish,
            "busybox",
            "sleep",
            "4322",
        ];
        let (_, started) = run_and_kill_monitor(&berth, &args, *delay);
        let id = fs_err::read_to_string(&cidfile).unwrap();
        if !started {
            // Removed by the failed run itself.
            assert!(stored_ids(&berth).is_empty(), "{what}: the row is left");
            assert!(
                cgroup_dirs(&id).is_empty(),
                "{what}: {:?}",
                cgroup_dirs(&id)
            );
        }
        // The next command shows nothing: the container is gone.
        let shown = listed(&berth);
        assert!(shown.is_empty(), "{what}: ps -a shows {shown:?}");
        assert!(stored_ids(&berth).is_empty(), "{what}: the row is left");
        berth.assert_no_leftovers(&id);
        assert_nothing_left(&berth, &network, Some(&id), port, "4322", &what);
        let directories: Vec<_> = [berth.root(), berth.run_root.path()]
            .iter()
            .flat_map(|root| fs_err::read_dir(root.join("containers")).unwrap().flatten())
            .map(|entry| entry.path())
            .collect();
        assert!(directories.is_empty(), "{what}: {directories:?}");
    }
    assert_store_intact(berth.root());
}

/// An attached `run --rm` whose monitor is killed while the container runs:
/// the run fails, and has removed the container before it returns.
#[test]
fn an_attached_run_whose_monitor_is_killed_cleans_up_before_it_returns() {
    let berth = busybox();
    let port = free_port();
    let publish = format!("127.0.0.1:{port}:80");
    let mut cli = berth
        .command()
        .args(["run", "--rm", "-p", &publish, "busybox", "sleep", "4323"])
        .env("BERTH_LOG", "debug")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let monitor = first_child(&mut cli).expect("run forks a monitor");
    wait_until(20.0, "the container to run", || {
        !processes_running(&["sleep", "4323"]).is_empty()
    });
    let ids = stored_ids(&berth);
    assert_eq!(ids.len(), 1);
    kill9(monitor);
    let status = wait_child(&mut cli, 30.0, "the attached run");
    let output = cli.wait_with_output().unwrap();
    eprintln!("{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(status.code(), Some(125));
    // Before any other command: gone, and nothing left.
    assert!(stored_ids(&berth).is_empty(), "the row is left");
    assert!(
        cgroup_dirs(&ids[0]).is_empty(),
        "{:?}",
        cgroup_dirs(&ids[0])
    );
    assert!(processes_running(&["sleep", "4323"]).is_empty());
    TcpListener::bind(("127.0.0.1", port)).expect("the port is free");
    assert!(published_elements(&berth, port).is_empty());
    assert!(listed(&berth).is_empty());
    berth.assert_no_leftovers(&ids[0]);
    assert_store_intact(berth.root());
}
