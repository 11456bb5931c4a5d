//! The private Docker engine the tests compare berth with
//! (scripts/docker-engine.sh) leaves the host's networking alone: a host
//! `docker0` survives a full start/stop cycle of it. With `--bridge=none`
//! dockerd deletes `docker0` at start-up (moby `removeDefaultBridgeInterface`),
//! which broke the machine's real Docker; the script now gives its engine a
//! bridge of its own and removes it again on `stop`.
//!
//! dockerd runs in the host's network namespace, so the `docker0` checked here
//! is a host interface: when the host has none, the test makes one (down, on an
//! address nothing else uses) and deletes it afterwards; a real one is only
//! looked at. The engine started here has its own data root, exec root,
//! socket and bridge (the script's overrides), so an engine `scripts/test.sh`
//! started is not disturbed.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The engine's own bridge and address in this test (the script's default is
/// bertd0 on 10.232.0.1/24, which a running test engine may be using).
const BRIDGE: &str = "bertdh0";
const BRIDGE_ADDRESS: &str = "10.232.251.1/24";
/// The address given to a `docker0` this test makes: private, clashing with
/// nothing berth or the scripts use (berth's pools are 172.16/12 and
/// 192.168/16), and the bridge stays down so it routes nothing.
const DOCKER0_ADDRESS: &str = "10.232.250.1/24";

fn ip(args: &[&str]) -> Output {
    Command::new("ip").args(args).output().expect("run ip")
}

/// The IPv4 addresses (CIDR) of `interface`, or None when it does not exist.
fn addresses(interface: &str) -> Option<Vec<String>> {
    if !ip(&["link", "show", "dev", interface]).status.success() {
        return None;
    }
    let output = ip(&["-o", "-4", "addr", "show", "dev", interface]);
    let mut found: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            words.find(|word| *word == "inet")?;
            words.next().map(str::to_owned)
        })
        .collect();
    found.sort();
    Some(found)
}

fn dockerd() -> Option<PathBuf> {
    [
        "/usr/sbin/dockerd",
        "/usr/bin/dockerd",
        "/usr/local/bin/dockerd",
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|path| path.exists())
}

/// One private engine's paths, and what to undo when the test ends.
struct Engine {
    data: tempfile::TempDir,
    exec_root: PathBuf,
    made_docker0: bool,
}

impl Engine {
    fn socket(&self) -> PathBuf {
        self.exec_root.with_extension("sock")
    }

    fn script(&self, action: &str, bridge: &str) -> Output {
        Command::new("bash")
            .arg(support::workspace_root().join("scripts/docker-engine.sh"))
            .arg(action)
            .env("BERTH_TEST_DOCKER_ROOT", self.data.path().join("data"))
            .env("BERTH_TEST_DOCKER_EXEC_ROOT", &self.exec_root)
            .env("BERTH_TEST_DOCKER_SOCK", self.socket())
            .env(
                "BERTH_TEST_DOCKER_LOG",
                self.data.path().join("dockerd.log"),
            )
            .env("BERTH_TEST_DOCKER_BRIDGE", bridge)
            .env("BERTH_TEST_DOCKER_BRIDGE_ADDR", BRIDGE_ADDRESS)
            .env("BERTH_TEST_DOCKER_TIMEOUT", "90")
            .output()
            .expect("run scripts/docker-engine.sh")
    }

    fn log(&self) -> String {
        fs_err::read_to_string(self.data.path().join("dockerd.log")).unwrap_or_default()
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.script("stop", BRIDGE);
        // The script's files beside its exec root.
        for extension in ["pid", "lock", "daemon.json", "bridge", "sock"] {
            let _ = fs_err::remove_file(self.exec_root.with_extension(extension));
        }
        let _ = fs_err::remove_dir_all(&self.exec_root);
        if ip(&["link", "show", "dev", BRIDGE]).status.success() {
            let _ = ip(&["link", "delete", BRIDGE, "type", "bridge"]);
        }
        if self.made_docker0 {
            let _ = ip(&["link", "delete", "docker0", "type", "bridge"]);
        }
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

#[test]
fn host_docker0_survives_a_private_engine_start_and_stop() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("SKIP: needs root (bridges, dockerd)");
        return;
    }
    if dockerd().is_none() {
        eprintln!("SKIP: dockerd is not installed (apt-get install docker.io)");
        return;
    }
    // One run of this test at a time on the machine: it may own the host's
    // docker0 and it uses a fixed bridge name. The lock is the script's own
    // file, so nothing is left behind.
    let lock = fs_err::File::open(support::workspace_root().join("scripts/docker-engine.sh"))
        .unwrap()
        .into_file();
    let _serialised = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive).unwrap();

    let data = tempfile::Builder::new()
        .prefix("berth-hygiene-docker-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let mut engine = Engine {
        data,
        exec_root: PathBuf::from(format!("/run/berth-hygiene-{}", std::process::id())),
        made_docker0: false,
    };
    if addresses("docker0").is_none() {
        let made = ip(&["link", "add", "name", "docker0", "type", "bridge"]);
        assert!(made.status.success(), "{}", text(&made));
        engine.made_docker0 = true;
        let addressed = ip(&["addr", "add", DOCKER0_ADDRESS, "dev", "docker0"]);
        assert!(addressed.status.success(), "{}", text(&addressed));
    }
    let before = addresses("docker0").unwrap();
    assert!(
        addresses(BRIDGE).is_none(),
        "{BRIDGE} exists before the test"
    );

    // The name docker0 is refused before anything starts.
    let refused = engine.script("start", "docker0");
    assert!(!refused.status.success(), "{}", text(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("refusing bridge name 'docker0'"),
        "{}",
        text(&refused)
    );
    assert!(!engine.socket().exists(), "a refused start left a socket");
    assert_eq!(addresses("docker0").as_ref(), Some(&before));

    let started = engine.script("start", BRIDGE);
    assert!(
        started.status.success(),
        "{}\ndockerd log:\n{}",
        text(&started),
        engine.log()
    );
    let host = format!("unix://{}", engine.socket().display());
    assert_eq!(String::from_utf8_lossy(&started.stdout).trim(), host);
    assert_eq!(
        addresses("docker0").as_ref(),
        Some(&before),
        "docker0 changed while the private engine started\ndockerd log:\n{}",
        engine.log()
    );
    assert_eq!(
        addresses(BRIDGE),
        Some(vec![BRIDGE_ADDRESS.to_owned()]),
        "the engine's own bridge"
    );
    // The engine's default network is that bridge.
    let inspected = Command::new("docker")
        .args(["-H", &host, "network", "inspect", "bridge", "--format"])
        .arg("{{index .Options \"com.docker.network.bridge.name\"}}")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&inspected.stdout).trim(),
        BRIDGE,
        "{}",
        text(&inspected)
    );

    let stopped = engine.script("stop", BRIDGE);
    assert!(stopped.status.success(), "{}", text(&stopped));
    assert_eq!(
        addresses("docker0").as_ref(),
        Some(&before),
        "docker0 changed while the private engine stopped\ndockerd log:\n{}",
        engine.log()
    );
    assert!(
        addresses(BRIDGE).is_none(),
        "stop left the bridge it made: {}",
        text(&stopped)
    );
    assert!(!Path::new(&engine.exec_root.with_extension("pid")).exists());
}
