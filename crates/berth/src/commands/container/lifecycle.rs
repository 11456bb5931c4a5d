//! `start`, `stop`, `restart`, `kill`, `rm`, `wait`, `pause`, `unpause`,
//! `rename`, `container prune`: each prints what Docker prints and keeps
//! going over several containers, exiting 1 if any failed.

use berth_engine::containers::{
    kill_container, pause_container, prune_containers, rename_container, stop_container_with,
    unpause_container, wait_container, StopOptions,
};
use berth_engine::{Engine, EngineError};
use clap::Args;

use super::attach::{start_attached, AttachStreams, AttachedSession};

/// Applies `action` to each name, printing the name on success and the
/// error otherwise (Docker's behaviour for multi-container verbs).
fn for_each(
    names: &[String],
    mut action: impl FnMut(&str) -> Result<(), EngineError>,
) -> anyhow::Result<i32> {
    let mut status = 0;
    for name in names {
        match action(name) {
            Ok(()) => println!("{name}"),
            Err(error) => {
                eprintln!("Error: {:#}", anyhow::Error::from(error));
                status = crate::exit::FAILURE;
            }
        }
    }
    Ok(status)
}

#[derive(Debug, Args)]
pub struct StartArgs {
    /// Attach STDOUT/STDERR and forward signals
    #[arg(short, long)]
    pub attach: bool,
    /// Override the key sequence for detaching a container
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub detach_keys: Option<String>,
    /// Attach container's STDIN
    #[arg(short, long)]
    pub interactive: bool,
    /// CONTAINER
    #[arg(required = true)]
    pub containers: Vec<String>,
}

pub fn start(engine: &mut Engine, args: &StartArgs) -> anyhow::Result<i32> {
    if args.attach || args.interactive {
        anyhow::ensure!(
            args.containers.len() == 1,
            "you cannot start and attach multiple containers at once"
        );
        let config = engine.config().clone();
        let container =
            berth_engine::containers::find_container(engine.store(), &config, &args.containers[0])?;
        let tty = container.record.run.tty;
        let keys = args.detach_keys.as_deref();
        let keys_for = super::detach::KeysFor::Attach;
        let detach_keys = if tty && args.interactive {
            super::detach::resolve(keys, keys_for, crate::exit::FAILURE)?
        } else {
            super::detach::check_flag(keys, keys_for, crate::exit::FAILURE)?;
            Vec::new()
        };
        let session = AttachedSession {
            streams: AttachStreams {
                stdin: args.interactive,
                stdout: true,
                stderr: true,
            },
            tty,
            // docker/cli's `start -a` forwards signals without a tty.
            sig_proxy: !tty,
            detach_keys,
        };
        return start_attached(engine, &container.record.id, &session, None);
    }
    super::detach::check_flag(
        args.detach_keys.as_deref(),
        super::detach::KeysFor::Attach,
        crate::exit::FAILURE,
    )?;
    for_each(&args.containers, |name| {
        berth_engine::containers::start_container(engine, name, None).map(|_| ())
    })
}

#[derive(Debug, Args)]
pub struct StopArgs {
    /// Signal to send to the container
    #[arg(short, long)]
    pub signal: Option<String>,
    /// Seconds to wait before killing the container
    #[arg(short, long)]
    pub time: Option<i64>,
    /// CONTAINER
    #[arg(required = true)]
    pub containers: Vec<String>,
}

pub fn stop(engine: &mut Engine, args: &StopArgs) -> anyhow::Result<i32> {
    let options = StopOptions {
        timeout: args.time,
        signal: args.signal.clone(),
    };
    for_each(&args.containers, |name| {
        stop_container_with(engine, name, &options)
    })
}

pub fn restart(engine: &mut Engine, args: &StopArgs) -> anyhow::Result<i32> {
    for_each(&args.containers, |name| {
        berth_engine::containers::restart_container(engine, name, args.time).map(|_| ())
    })
}

#[derive(Debug, Args)]
pub struct KillArgs {
    /// Signal to send to the container
    #[arg(short, long, default_value = "KILL")]
    pub signal: String,
    /// CONTAINER
    #[arg(required = true)]
    pub containers: Vec<String>,
}

pub fn kill(engine: &mut Engine, args: &KillArgs) -> anyhow::Result<i32> {
    for_each(&args.containers, |name| {
        kill_container(engine, name, &args.signal)
    })
}

#[derive(Debug, Args)]
pub struct RmArgs {
    /// Force the removal of a running container (uses SIGKILL)
    #[arg(short, long)]
    pub force: bool,
    /// Remove anonymous volumes associated with the container
    #[arg(short, long)]
    pub volumes: bool,
    /// Remove the specified link
    #[arg(short, long)]
    pub link: bool,
    /// CONTAINER
    #[arg(required = true)]
    pub containers: Vec<String>,
}

pub fn remove(engine: &mut Engine, args: &RmArgs) -> anyhow::Result<i32> {
    for_each(&args.containers, |name| {
        if args.link {
            berth_engine::containers::remove_link(engine, name)
        } else {
            berth_engine::containers::remove_container_with(engine, name, args.force, args.volumes)
        }
    })
}

#[derive(Debug, Args)]
pub struct ContainersArgs {
    /// CONTAINER
    #[arg(required = true)]
    pub containers: Vec<String>,
}

pub fn wait(engine: &mut Engine, args: &ContainersArgs) -> anyhow::Result<i32> {
    let mut status = 0;
    for name in &args.containers {
        match wait_container(engine, name) {
            Ok(code) => println!("{code}"),
            Err(error) => {
                eprintln!("Error: {:#}", anyhow::Error::from(error));
                status = crate::exit::FAILURE;
            }
        }
    }
    Ok(status)
}

pub fn pause(engine: &mut Engine, args: &ContainersArgs) -> anyhow::Result<i32> {
    for_each(&args.containers, |name| pause_container(engine, name))
}

pub fn unpause(engine: &mut Engine, args: &ContainersArgs) -> anyhow::Result<i32> {
    for_each(&args.containers, |name| unpause_container(engine, name))
}

#[derive(Debug, Args)]
pub struct RenameArgs {
    /// CONTAINER
    pub container: String,
    /// NEW_NAME
    pub new_name: String,
}

pub fn rename(engine: &mut Engine, args: &RenameArgs) -> anyhow::Result<i32> {
    rename_container(engine, &args.container, &args.new_name)?;
    Ok(0)
}

#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Do not prompt for confirmation
    #[arg(short, long)]
    pub force: bool,
}

pub fn prune(engine: &mut Engine, args: &PruneArgs) -> anyhow::Result<i32> {
    if !args.force
        && !crate::commands::confirm("WARNING! This will remove all stopped containers.")?
    {
        return Ok(0);
    }
    let pruned = prune_containers(engine)?;
    if !pruned.ids.is_empty() {
        println!("Deleted Containers:");
        for id in &pruned.ids {
            println!("{id}");
        }
        println!();
    }
    println!(
        "Total reclaimed space: {}",
        crate::format::units::human_size(pruned.reclaimed)
    );
    Ok(0)
}
