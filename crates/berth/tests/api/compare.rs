//! The engines a case runs against: berth's `berth serve`, then the Docker
//! engine at `BERTH_TEST_DOCKER_HOST` when one is reachable, so that the
//! expectations are Docker's.
#![allow(dead_code, clippy::unwrap_used)] // test support: a failed step is a failed test

use std::path::PathBuf;

use crate::harness::{raw_request, Server};
use crate::support;
use crate::support::containers::wait_until;

/// The docker CLI pointed at one engine.
type DockerCli<'a> = Box<dyn Fn(&[&str]) -> support::Run + 'a>;

/// An engine to run a case against: berth's server, or Docker's.
pub struct Engine<'a> {
    pub name: &'static str,
    pub socket: PathBuf,
    docker: DockerCli<'a>,
    /// What the names the case makes start with; unique per test process
    /// on a shared Docker.
    prefix: String,
}

impl Engine<'_> {
    /// Berth's server; names start with `prefix`.
    pub fn berth<'s>(server: &'s Server, prefix: &str) -> Engine<'s> {
        Engine {
            name: "berth",
            socket: server.socket.clone(),
            docker: Box::new(|args| server.docker(args)),
            prefix: prefix.to_owned(),
        }
    }

    /// The Docker engine with busybox, or None (the reason printed); names
    /// start with `berth-{prefix}-{this process's id}`.
    pub fn reference(prefix: &str) -> Option<Engine<'static>> {
        let host = support::docker_host()?;
        let socket = PathBuf::from(host.strip_prefix("unix://")?);
        let present = support::docker(&host, &["image", "inspect", "busybox:latest"]);
        if !present.status.success() {
            let archive = support::fixture("busybox-docker.tar");
            let loaded = support::docker(&host, &["load", "-q", "-i", archive.to_str().unwrap()]);
            assert!(loaded.status.success(), "docker load: {loaded:?}");
        }
        Some(Engine {
            name: "docker",
            socket,
            docker: Box::new(move |args| support::Run {
                output: support::docker(&host, args),
            }),
            prefix: format!("berth-{prefix}-{}", std::process::id()),
        })
    }

    pub fn docker(&self, args: &[&str]) -> support::Run {
        (self.docker)(args)
    }

    pub fn name(&self, suffix: &str) -> String {
        format!("{}-{suffix}", self.prefix)
    }

    /// One raw request on a fresh connection; returns (status, head, body).
    pub fn raw(&self, request: &[u8]) -> (u16, String, Vec<u8>) {
        raw_request(&self.socket, request)
    }

    /// `docker run -d --network none OPTIONS… busybox COMMAND…` named
    /// `suffix`.
    pub fn run(&self, suffix: &str, options: &[&str], command: &[&str]) -> String {
        let name = self.name(suffix);
        let mut args = vec!["run", "-d", "--network", "none", "--name", &name];
        args.extend_from_slice(options);
        args.push("busybox");
        args.extend_from_slice(command);
        self.docker(&args).ok();
        name
    }

    /// Waits for `text` in the container's logs; returns them.
    #[track_caller]
    pub fn wait_logs(&self, container: &str, text: &str) -> String {
        let mut logs = String::new();
        wait_until(
            20.0,
            &format!("{text:?} in the logs of {container}"),
            || {
                logs = self.docker(&["logs", container]).all_output();
                logs.contains(text)
            },
        );
        logs
    }

    pub fn inspect(&self, what: &str, format: &str) -> String {
        self.docker(&["inspect", "--format", format, what])
            .ok()
            .trim()
            .to_owned()
    }
}

/// Removes the named containers, then the named images, when dropped
/// (Docker's; berth's go with the server's root anyway), whatever the
/// test's outcome.
pub struct Cleanup<'e, 'a> {
    engine: &'e Engine<'a>,
    pub containers: Vec<String>,
    pub images: Vec<String>,
}

impl<'e, 'a> Cleanup<'e, 'a> {
    pub fn new(engine: &'e Engine<'a>, containers: Vec<String>) -> Self {
        Self {
            engine,
            containers,
            images: Vec::new(),
        }
    }
}

impl Drop for Cleanup<'_, '_> {
    fn drop(&mut self) {
        for (command, names) in [("rm", &self.containers), ("rmi", &self.images)] {
            if !names.is_empty() {
                let mut args = vec![command, "-f"];
                args.extend(names.iter().map(String::as_str));
                let _ = self.engine.docker(&args);
            }
        }
    }
}

/// Runs `case` against berth's engine, then Docker's when it is reachable;
/// the names made start with `prefix`.
pub fn each_engine(server: &Server, prefix: &str, case: impl Fn(&Engine<'_>)) {
    case(&Engine::berth(server, prefix));
    if let Some(docker) = Engine::reference(prefix) {
        case(&docker);
    }
}
