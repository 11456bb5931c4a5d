//! runc's command line, as containerd's runc shim and dockerd call it: global flags before
//! the verb, the verb's flags, the container id.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// berth as an OCI runtime (runc's command line)
#[derive(Debug, Parser)]
#[command(name = "berth-runc", version = env!("CARGO_PKG_VERSION"))]
pub struct RuntimeCli {
    #[command(flatten)]
    pub global: RuntimeGlobal,
    #[command(subcommand)]
    pub verb: Verb,
}

#[derive(Debug, Args)]
pub struct RuntimeGlobal {
    /// Root directory for the containers' state
    #[arg(long, global = true, default_value = berth_oci::DEFAULT_ROOT)]
    pub root: PathBuf,
    /// Where to write errors and, with --debug, diagnostics (default: stderr)
    #[arg(long, global = true)]
    pub log: Option<PathBuf>,
    /// The log's format: text or json
    #[arg(long = "log-format", global = true, default_value = "text")]
    pub log_format: String,
    /// Debug output in the log
    #[arg(long, global = true)]
    pub debug: bool,
    /// Use systemd for cgroups (not supported by berth: refused)
    #[arg(long = "systemd-cgroup", global = true)]
    pub systemd_cgroup: bool,
    /// runc's rootless mode: only "false" or "auto" (berth runs as root); `spec --rootless`
    #[arg(long, global = true, num_args = 0..=1, default_missing_value = "true")]
    pub rootless: Option<String>,
    /// runc's CRIU path (checkpoint/restore are not supported by berth: refused)
    #[arg(long, global = true)]
    pub criu: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Verb {
    /// Create a container; its process waits for `start`
    Create(CreateArgs),
    /// Start the process of a created container
    Start(IdArgs),
    /// Print a container's state as JSON
    State(IdArgs),
    /// Send a signal to a container's init (or, with --all, every process)
    Kill(KillArgs),
    /// Delete a stopped container (--force: any)
    Delete(DeleteArgs),
    /// Run another process in a container
    Exec(ExecArgs),
    /// List a container's processes
    Ps(PsArgs),
    /// Freeze a container's processes
    Pause(IdArgs),
    /// Thaw a paused container
    Resume(IdArgs),
    /// Print what this runtime supports, as JSON
    Features,
    /// Write a starting config.json
    Spec(SpecArgs),
    /// Create and start a container, and wait for it
    Run(RunArgs),
    /// List containers
    #[command(alias = "ls")]
    List(ListArgs),
    /// Change a running container's resource limits
    Update(UpdateArgs),
    /// A container's resource usage and events
    Events(EventsArgs),
    /// Not supported by berth
    Checkpoint(RefusedArgs),
    /// Not supported by berth
    Restore(RefusedArgs),
}

#[derive(Debug, Args)]
pub struct IdArgs {
    pub id: String,
}

#[derive(Debug, Args)]
pub struct CreateFlags {
    /// The bundle directory (default: the current directory)
    #[arg(short = 'b', long, default_value = ".")]
    pub bundle: PathBuf,
    /// A unix socket to which the terminal's master is sent
    #[arg(long = "console-socket")]
    pub console_socket: Option<PathBuf>,
    /// Write the init's pid here
    #[arg(long = "pid-file")]
    pub pid_file: Option<PathBuf>,
    /// Use MS_MOVE + chroot rather than pivot_root (not supported by berth: refused)
    #[arg(long = "no-pivot")]
    pub no_pivot: bool,
    /// Do not create a session keyring (berth never creates one)
    #[arg(long = "no-new-keyring")]
    pub no_new_keyring: bool,
    /// Pass this many descriptors after stderr (3, 4, …) on to the process
    #[arg(long = "preserve-fds", default_value_t = 0)]
    pub preserve_fds: u32,
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    #[command(flatten)]
    pub flags: CreateFlags,
    pub id: String,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub flags: CreateFlags,
    /// Return once the process runs
    #[arg(short = 'd', long)]
    pub detach: bool,
    /// Keep the container's state after it exits
    #[arg(long)]
    pub keep: bool,
    /// runc's subreaper switch (berth waits for its own child either way)
    #[arg(long = "no-subreaper")]
    pub no_subreaper: bool,
    pub id: String,
}

#[derive(Debug, Args)]
pub struct KillArgs {
    /// Send the signal to every process of the container
    #[arg(short = 'a', long)]
    pub all: bool,
    pub id: String,
    /// A name (KILL, SIGKILL) or number; SIGTERM by default
    #[arg(default_value = "SIGTERM")]
    pub signal: String,
}

#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// Kill a running container first; a missing one is no error
    #[arg(short = 'f', long)]
    pub force: bool,
    pub id: String,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// A unix socket to which the terminal's master is sent
    #[arg(long = "console-socket")]
    pub console_socket: Option<PathBuf>,
    /// Working directory
    #[arg(long)]
    pub cwd: Option<String>,
    /// Set an environment variable (KEY=VALUE)
    #[arg(short = 'e', long = "env")]
    pub env: Vec<String>,
    /// Give the process a terminal
    #[arg(short = 't', long)]
    pub tty: bool,
    /// UID[:GID]
    #[arg(short = 'u', long)]
    pub user: Option<String>,
    /// Supplementary group ids
    #[arg(short = 'g', long = "additional-gids")]
    pub additional_gids: Vec<u32>,
    /// The process, as config.json's "process" (instead of the command line)
    #[arg(short = 'p', long)]
    pub process: Option<PathBuf>,
    /// Return once the process runs
    #[arg(short = 'd', long)]
    pub detach: bool,
    /// Write the process's pid here
    #[arg(long = "pid-file")]
    pub pid_file: Option<PathBuf>,
    /// SELinux label (not supported by berth: refused)
    #[arg(long = "process-label")]
    pub process_label: Option<String>,
    /// AppArmor profile (not supported by berth: refused)
    #[arg(long)]
    pub apparmor: Option<String>,
    /// Set no_new_privs
    #[arg(long = "no-new-privs")]
    pub no_new_privs: bool,
    /// Add a capability to the process's set
    #[arg(short = 'c', long = "cap")]
    pub cap: Vec<String>,
    /// Pass this many descriptors after stderr on (not supported for exec: refused)
    #[arg(long = "preserve-fds", default_value_t = 0)]
    pub preserve_fds: u32,
    pub id: String,
    /// The command and its arguments
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct PsArgs {
    /// table or json
    #[arg(short = 'f', long, default_value = "table")]
    pub format: String,
    pub id: String,
    /// Options for ps(1) (table format)
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub ps_options: Vec<String>,
}

#[derive(Debug, Args)]
pub struct SpecArgs {
    /// Where to write config.json
    #[arg(short = 'b', long, default_value = ".")]
    pub bundle: PathBuf,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// table or json
    #[arg(short = 'f', long, default_value = "table")]
    pub format: String,
    /// Only the ids
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// linux.resources as JSON, from a file or - for stdin
    #[arg(short = 'r', long)]
    pub resources: Option<PathBuf>,
    /// Memory limit in bytes
    #[arg(long)]
    pub memory: Option<i64>,
    /// Maximum number of processes
    #[arg(long = "pids-limit")]
    pub pids_limit: Option<i64>,
    /// CPU shares
    #[arg(long = "cpu-shares")]
    pub cpu_shares: Option<u64>,
    /// CFS quota in microseconds
    #[arg(long = "cpu-quota")]
    pub cpu_quota: Option<i64>,
    /// CFS period in microseconds
    #[arg(long = "cpu-period")]
    pub cpu_period: Option<u64>,
    pub id: String,
}

#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Print one stats event and exit
    #[arg(long)]
    pub stats: bool,
    /// The stats interval (e.g. 5s, 500ms)
    #[arg(long, default_value = "5s")]
    pub interval: String,
    pub id: String,
}

#[derive(Debug, Args)]
pub struct RefusedArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub rest: Vec<String>,
}
