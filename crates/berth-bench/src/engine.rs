//! The engines the suite drives, each through its own CLI: berth (with the
//! bench's own root options on every command), docker (DOCKER_HOST) and
//! podman. An engine that is not found or does not answer is skipped with
//! the reason in the report.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::options::{BenchOptions, EngineName};
use crate::process::{run, run_ok, which, Finished, ProcessError};
use crate::procfs::process_table;
use crate::report::EngineStatus;
use crate::resident::{select, unix_socket, Residents};

/// How long an engine CLI command other than a benchmark step may take.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Clone, Debug)]
pub struct Engine {
    pub name: EngineName,
    pub program: PathBuf,
    global_args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    env_remove: Vec<OsString>,
    pub version: String,
    pub endpoint: String,
    /// Whether containers can use the engine's default bridge network.
    pub has_bridge: bool,
    pub residents: Residents,
    pub notes: Vec<String>,
}

impl Engine {
    pub fn label(&self) -> &'static str {
        self.name.as_str()
    }

    pub fn is_berth(&self) -> bool {
        self.name == EngineName::Berth
    }

    /// `PROGRAM [global options] ARGS…` with the engine's environment.
    pub fn command<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command_with_program(&self.program, args)
    }

    /// [`Engine::command`] with another CLI binary for the same engine
    /// (Debian's docker.io CLI, which builds with BuildKit without buildx).
    pub fn command_with_program<I, S>(&self, program: impl AsRef<OsStr>, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = Command::new(program);
        command.args(&self.global_args).args(args);
        for name in &self.env_remove {
            command.env_remove(name);
        }
        for (name, value) in &self.env {
            command.env(name, value);
        }
        command
    }

    /// Runs a command that must succeed.
    pub fn run<I, S>(&self, args: I) -> Result<Finished, ProcessError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        run_ok(&mut self.command(args), COMMAND_TIMEOUT)
    }

    /// `rm -f` of the named containers; failures are ignored (cleanup).
    pub fn remove_containers(&self, names: &[String]) {
        if names.is_empty() {
            return;
        }
        let mut args = vec!["rm".to_owned(), "-f".to_owned()];
        args.extend(names.iter().cloned());
        let _ = run(&mut self.command(&args), COMMAND_TIMEOUT);
    }

    /// The pids of the engine's resident processes right now.
    pub fn resident_pids(&self) -> Vec<u32> {
        select(
            &process_table(),
            &self.residents,
            std::process::id(),
            &|path| fs_err::read_to_string(path).ok(),
        )
    }

    /// The ids of every container the engine has running.
    pub fn running_containers(&self) -> Vec<String> {
        self.run(["ps", "-q"])
            .map(|finished| {
                finished
                    .stdout()
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn status(&self) -> EngineStatus {
        EngineStatus {
            name: self.label().to_owned(),
            program: self.program.display().to_string(),
            version: Some(self.version.clone()),
            endpoint: Some(self.endpoint.clone()),
            skipped: None,
            notes: self.notes.clone(),
        }
    }
}

fn skipped(name: EngineName, program: &str, reason: impl Into<String>) -> Box<EngineStatus> {
    Box::new(EngineStatus {
        name: name.as_str().to_owned(),
        program: program.to_owned(),
        version: None,
        endpoint: None,
        skipped: Some(reason.into()),
        notes: Vec::new(),
    })
}

/// The engines to measure (berth first) and the status of every engine
/// asked for or looked for.
pub fn discover(options: &BenchOptions) -> (Vec<Engine>, Vec<EngineStatus>) {
    let wanted = options
        .engines
        .clone()
        .unwrap_or_else(|| EngineName::ALL.to_vec());
    let mut engines = Vec::new();
    let mut statuses = Vec::new();
    for name in wanted {
        let found = match name {
            EngineName::Berth => berth(options),
            EngineName::Docker => docker(options),
            EngineName::Podman => podman(),
        };
        match found {
            Ok(engine) => {
                statuses.push(engine.status());
                engines.push(engine);
            }
            Err(status) => statuses.push(*status),
        }
    }
    (engines, statuses)
}

fn short_error(error: &ProcessError) -> String {
    let text = error.to_string();
    if text.chars().count() > 300 {
        format!("{}…", text.chars().take(300).collect::<String>())
    } else {
        text
    }
}

fn berth(options: &BenchOptions) -> Result<Engine, Box<EngineStatus>> {
    let binary = &options.berth;
    let program_text = binary.program.display().to_string();
    let mut engine = Engine {
        name: EngineName::Berth,
        program: binary.program.clone(),
        global_args: vec![
            "--root".into(),
            binary.root.clone().into_os_string(),
            "--run-root".into(),
            binary.run_root.clone().into_os_string(),
        ],
        // No warm pool unless a measurement asks for one: a pool left by
        // an earlier run must not serve the cold runs or hold memory.
        env: vec![("BERTH_WARM".into(), "off".into())],
        env_remove: vec!["BERTH_LOG".into()],
        version: String::new(),
        endpoint: format!(
            "root {}, run root {}",
            binary.root.display(),
            binary.run_root.display()
        ),
        has_bridge: true,
        residents: Residents::Berth {
            program: binary.program.clone(),
            root: binary.root.clone(),
        },
        notes: Vec::new(),
    };
    let version = engine
        .run(["version"])
        .map_err(|error| skipped(EngineName::Berth, &program_text, short_error(&error)))?;
    engine.version = version
        .stdout()
        .lines()
        .find_map(|line| line.trim().strip_prefix("Version:"))
        .map(|version| version.trim().to_owned())
        .unwrap_or_else(|| "unknown".to_owned());
    if cfg!(debug_assertions) {
        engine.version.push_str(" (debug build)");
        engine
            .notes
            .push("debug build: timings are not representative, use a release build".to_owned());
    } else {
        engine.version.push_str(" (release build)");
    }
    Ok(engine)
}

fn docker(options: &BenchOptions) -> Result<Engine, Box<EngineStatus>> {
    let Some(program) = which("docker") else {
        return Err(skipped(
            EngineName::Docker,
            "docker",
            "docker CLI not found in PATH",
        ));
    };
    let program_text = program.display().to_string();
    let host = options
        .docker_host
        .clone()
        .or_else(|| {
            std::env::var("DOCKER_HOST")
                .ok()
                .filter(|host| !host.is_empty())
        })
        .unwrap_or_else(|| "unix:///var/run/docker.sock".to_owned());
    if let Some(socket) = unix_socket(&host) {
        if !socket.exists() {
            return Err(skipped(
                EngineName::Docker,
                &program_text,
                format!("no docker daemon at {host} (socket missing)"),
            ));
        }
    }
    let mut engine = Engine {
        name: EngineName::Docker,
        program,
        global_args: Vec::new(),
        env: vec![("DOCKER_HOST".into(), host.clone().into())],
        env_remove: vec!["DOCKER_CONTEXT".into()],
        version: String::new(),
        endpoint: host.clone(),
        has_bridge: false,
        residents: Residents::Docker { host: host.clone() },
        notes: Vec::new(),
    };
    let version = run_ok(
        &mut engine.command([
            "version",
            "--format",
            "{{.Server.Version}} (client {{.Client.Version}})",
        ]),
        Duration::from_secs(20),
    )
    .map_err(|error| {
        skipped(
            EngineName::Docker,
            &program_text,
            format!(
                "the daemon at {host} does not answer: {}",
                short_error(&error)
            ),
        )
    })?;
    engine.version = version.stdout().trim().to_owned();
    engine.has_bridge = engine.run(["network", "inspect", "bridge"]).is_ok();
    if !engine.has_bridge {
        engine
            .notes
            .push("no default bridge network (containers use --network none)".to_owned());
    }
    Ok(engine)
}

fn podman() -> Result<Engine, Box<EngineStatus>> {
    let Some(program) = which("podman") else {
        return Err(skipped(
            EngineName::Podman,
            "podman",
            "podman not found in PATH",
        ));
    };
    let program_text = program.display().to_string();
    let mut engine = Engine {
        name: EngineName::Podman,
        program,
        global_args: Vec::new(),
        env: Vec::new(),
        env_remove: Vec::new(),
        version: String::new(),
        endpoint: "local".to_owned(),
        has_bridge: false,
        residents: Residents::Podman,
        notes: Vec::new(),
    };
    let version = run_ok(
        &mut engine.command(["version", "--format", "{{.Client.Version}}"]),
        Duration::from_secs(20),
    )
    .map_err(|error| skipped(EngineName::Podman, &program_text, short_error(&error)))?;
    engine.version = version.stdout().trim().to_owned();
    engine.has_bridge = engine.run(["network", "inspect", "podman"]).is_ok();
    Ok(engine)
}
