//! The flags of `run` and `create`, with Docker's names, short forms and help, and
//! their resolution into the Docker API's create request ([`CreateRequest`]) plus
//! what the CLI itself needs ([`CreateExtras`], [`RunExtras`]).
//!
//! Values are kept as text here and read in [`resolve`], so that a bad value fails
//! with Docker's full wording (`invalid argument "x" for "-m, --memory" flag: …`).
//! Everything after IMAGE belongs to the command, flags included, as with Docker.

mod csv;
mod devices;
mod env;
mod error;
mod mount;
mod network;
mod ports;
mod resolve;
mod security;
mod values;
mod volumes;

#[cfg(test)]
mod tests;

use std::path::PathBuf;

use clap::{ArgAction, Args};

pub use error::OptionsError;

/// Flags shared by `berth create` and `berth run`, then IMAGE [COMMAND] [ARG...].
///
/// Boolean flags take an optional `=true|false` (`--rm=false`), as Docker's do.
#[derive(Debug, Clone, Default, Args)]
#[command(disable_help_flag = true)]
pub struct CreateOptions {
    /// Add a custom host-to-IP mapping (host:ip)
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub add_host: Vec<String>,
    /// Attach to STDIN, STDOUT or STDERR
    #[arg(short = 'a', long, value_name = "list", allow_hyphen_values = true)]
    pub attach: Vec<String>,
    /// Block IO (relative weight), between 10 and 1000, or 0 to disable (default 0)
    #[arg(long, value_name = "uint16", allow_hyphen_values = true)]
    pub blkio_weight: Option<String>,
    /// Block IO weight (relative device weight)
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub blkio_weight_device: Vec<String>,
    /// Add Linux capabilities
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub cap_add: Vec<String>,
    /// Drop Linux capabilities
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub cap_drop: Vec<String>,
    /// Optional parent cgroup for the container
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub cgroup_parent: Option<String>,
    /// Cgroup namespace to use (host|private)
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub cgroupns: Option<String>,
    /// Write the container ID to the file
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub cidfile: Option<String>,
    /// Limit CPU CFS (Completely Fair Scheduler) period
    #[arg(long, value_name = "int", allow_hyphen_values = true)]
    pub cpu_period: Option<String>,
    /// Limit CPU CFS (Completely Fair Scheduler) quota
    #[arg(long, value_name = "int", allow_hyphen_values = true)]
    pub cpu_quota: Option<String>,
    /// Limit CPU real-time period in microseconds
    #[arg(long, value_name = "int", allow_hyphen_values = true)]
    pub cpu_rt_period: Option<String>,
    /// Limit CPU real-time runtime in microseconds
    #[arg(long, value_name = "int", allow_hyphen_values = true)]
    pub cpu_rt_runtime: Option<String>,
    /// CPU shares (relative weight)
    #[arg(short = 'c', long, value_name = "int", allow_hyphen_values = true)]
    pub cpu_shares: Option<String>,
    /// Number of CPUs
    #[arg(long, value_name = "decimal", allow_hyphen_values = true)]
    pub cpus: Option<String>,
    /// CPUs in which to allow execution (0-3, 0,1)
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub cpuset_cpus: Option<String>,
    /// MEMs in which to allow execution (0-3, 0,1)
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub cpuset_mems: Option<String>,
    /// Add a host device to the container
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub device: Vec<String>,
    /// Add a rule to the cgroup allowed devices list
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub device_cgroup_rule: Vec<String>,
    /// Limit read rate (bytes per second) from a device
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub device_read_bps: Vec<String>,
    /// Limit read rate (IO per second) from a device
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub device_read_iops: Vec<String>,
    /// Limit write rate (bytes per second) to a device
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub device_write_bps: Vec<String>,
    /// Limit write rate (IO per second) to a device
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub device_write_iops: Vec<String>,
    /// Set custom DNS servers
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub dns: Vec<String>,
    /// Set DNS options
    #[arg(
        long,
        alias = "dns-opt",
        value_name = "list",
        allow_hyphen_values = true
    )]
    pub dns_option: Vec<String>,
    /// Set custom DNS search domains
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub dns_search: Vec<String>,
    /// Container NIS domain name
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub domainname: Option<String>,
    /// Overwrite the default ENTRYPOINT of the image
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub entrypoint: Option<String>,
    /// Set environment variables
    #[arg(short = 'e', long, value_name = "list", allow_hyphen_values = true)]
    pub env: Vec<String>,
    /// Read in a file of environment variables
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub env_file: Vec<PathBuf>,
    /// Expose a port or a range of ports
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub expose: Vec<String>,
    /// Add additional groups to join
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub group_add: Vec<String>,
    /// Command to run to check health
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub health_cmd: Option<String>,
    /// Time between running the check (ms|s|m|h) (default 0s)
    #[arg(long, value_name = "duration", allow_hyphen_values = true)]
    pub health_interval: Option<String>,
    /// Consecutive failures needed to report unhealthy
    #[arg(long, value_name = "int", allow_hyphen_values = true)]
    pub health_retries: Option<String>,
    /// Time between running the check during the start period (ms|s|m|h) (default 0s)
    #[arg(long, value_name = "duration", allow_hyphen_values = true)]
    pub health_start_interval: Option<String>,
    /// Start period for the container to initialize before starting health-retries
    /// countdown (ms|s|m|h) (default 0s)
    #[arg(long, value_name = "duration", allow_hyphen_values = true)]
    pub health_start_period: Option<String>,
    /// Maximum time to allow one check to run (ms|s|m|h) (default 0s)
    #[arg(long, value_name = "duration", allow_hyphen_values = true)]
    pub health_timeout: Option<String>,
    /// Print usage
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,
    /// Container host name
    #[arg(short = 'h', long, value_name = "string", allow_hyphen_values = true)]
    pub hostname: Option<String>,
    /// Run an init inside the container that forwards signals and reaps processes
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub init: Option<String>,
    /// Keep STDIN open even if not attached
    #[arg(short = 'i', long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub interactive: Option<String>,
    /// IPv4 address (e.g., 172.30.100.104)
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub ip: Option<String>,
    /// IPv6 address (e.g., 2001:db8::33)
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub ip6: Option<String>,
    /// IPC mode to use
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub ipc: Option<String>,
    /// Container isolation technology (default, or vm: a microVM of its own)
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub isolation: Option<String>,
    /// Set meta data on a container
    #[arg(short = 'l', long, value_name = "list", allow_hyphen_values = true)]
    pub label: Vec<String>,
    /// Read in a line delimited file of labels
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub label_file: Vec<PathBuf>,
    /// Add link to another container
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub link: Vec<String>,
    /// Container IPv4/IPv6 link-local addresses
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub link_local_ip: Vec<String>,
    /// Logging driver for the container
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub log_driver: Option<String>,
    /// Log driver options
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub log_opt: Vec<String>,
    /// Container MAC address (e.g., 92:d0:c6:0a:29:33)
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub mac_address: Option<String>,
    /// Memory limit
    #[arg(short = 'm', long, value_name = "bytes", allow_hyphen_values = true)]
    pub memory: Option<String>,
    /// Memory soft limit
    #[arg(long, value_name = "bytes", allow_hyphen_values = true)]
    pub memory_reservation: Option<String>,
    /// Swap limit equal to memory plus swap: '-1' to enable unlimited swap
    #[arg(long, value_name = "bytes", allow_hyphen_values = true)]
    pub memory_swap: Option<String>,
    /// Tune container memory swappiness (0 to 100) (default -1)
    #[arg(long, value_name = "int", allow_hyphen_values = true)]
    pub memory_swappiness: Option<String>,
    /// Attach a filesystem mount to the container
    #[arg(long, value_name = "mount", allow_hyphen_values = true)]
    pub mount: Vec<String>,
    /// Assign a name to the container
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub name: Option<String>,
    /// Connect a container to a network
    #[arg(
        long,
        alias = "net",
        value_name = "network",
        allow_hyphen_values = true
    )]
    pub network: Vec<String>,
    /// Add network-scoped alias for the container
    #[arg(
        long,
        alias = "net-alias",
        value_name = "list",
        allow_hyphen_values = true
    )]
    pub network_alias: Vec<String>,
    /// Disable any container-specified HEALTHCHECK
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub no_healthcheck: Option<String>,
    /// Disable OOM Killer
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub oom_kill_disable: Option<String>,
    /// Tune host's OOM preferences (-1000 to 1000)
    #[arg(long, value_name = "int", allow_hyphen_values = true)]
    pub oom_score_adj: Option<String>,
    /// PID namespace to use
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub pid: Option<String>,
    /// Tune container pids limit (set -1 for unlimited)
    #[arg(long, value_name = "int", allow_hyphen_values = true)]
    pub pids_limit: Option<String>,
    /// Set platform if server is multi-platform capable
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub platform: Option<String>,
    /// Give extended privileges to this container
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub privileged: Option<String>,
    /// Publish a container's port(s) to the host
    #[arg(short = 'p', long, value_name = "list", allow_hyphen_values = true)]
    pub publish: Vec<String>,
    /// Publish all exposed ports to random ports
    #[arg(short = 'P', long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub publish_all: Option<String>,
    /// Pull image before running ("always", "missing", "never") (default "missing")
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub pull: Option<String>,
    /// Suppress the pull output
    #[arg(short = 'q', long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub quiet: Option<String>,
    /// Mount the container's root filesystem as read only
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub read_only: Option<String>,
    /// Restart policy to apply when a container exits (default "no")
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub restart: Option<String>,
    /// Automatically remove the container and its associated anonymous volumes when it
    /// exits
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub rm: Option<String>,
    /// Runtime to use for this container (runc, or vm as --isolation=vm)
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub runtime: Option<String>,
    /// Security Options
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub security_opt: Vec<String>,
    /// Size of /dev/shm
    #[arg(long, value_name = "bytes", allow_hyphen_values = true)]
    pub shm_size: Option<String>,
    /// Signal to stop the container
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub stop_signal: Option<String>,
    /// Timeout (in seconds) to stop a container
    #[arg(long, value_name = "int", allow_hyphen_values = true)]
    pub stop_timeout: Option<String>,
    /// Storage driver options for the container
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub storage_opt: Vec<String>,
    /// Sysctl options
    #[arg(long, value_name = "map", allow_hyphen_values = true)]
    pub sysctl: Vec<String>,
    /// Mount a tmpfs directory
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub tmpfs: Vec<String>,
    /// Allocate a pseudo-TTY
    #[arg(short = 't', long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub tty: Option<String>,
    /// Ulimit options
    #[arg(long, value_name = "ulimit", allow_hyphen_values = true)]
    pub ulimit: Vec<String>,
    /// Username or UID (format: <name|uid>[:<group|gid>])
    #[arg(short = 'u', long, value_name = "string", allow_hyphen_values = true)]
    pub user: Option<String>,
    /// User namespace to use
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub userns: Option<String>,
    /// UTS namespace to use
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub uts: Option<String>,
    /// Bind mount a volume
    #[arg(short = 'v', long, value_name = "list", allow_hyphen_values = true)]
    pub volume: Vec<String>,
    /// Optional volume driver for the container
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub volume_driver: Option<String>,
    /// Mount volumes from the specified container(s)
    #[arg(long, value_name = "list", allow_hyphen_values = true)]
    pub volumes_from: Vec<String>,
    /// Working directory inside the container
    #[arg(short = 'w', long, value_name = "string", allow_hyphen_values = true)]
    pub workdir: Option<String>,
    /// The image to create the container from, then the command and its arguments
    // One positional so that nothing after IMAGE is read as a flag, as with Docker's
    // `SetInterspersed(false)`: `berth run busybox ls -la` runs `ls -la`.
    #[arg(
        required = true,
        num_args = 1..,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_names = ["IMAGE", "COMMAND"]
    )]
    pub image_and_command: Vec<String>,
}

/// `berth run`: the `create` flags plus those that only make sense when the CLI
/// starts and attaches to the container.
#[derive(Debug, Clone, Default, Args)]
pub struct RunOptions {
    /// Run container in background and print container ID
    #[arg(short = 'd', long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub detach: Option<String>,
    /// Override the key sequence for detaching a container
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub detach_keys: Option<String>,
    /// Proxy received signals to the process (default true)
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub sig_proxy: Option<String>,
    #[command(flatten)]
    pub create: CreateOptions,
}

/// `--pull`: when to pull the image before creating the container.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PullPolicy {
    /// Pull only when the image is not in the store (Docker's default).
    #[default]
    Missing,
    Always,
    Never,
}

/// A standard stream the CLI attaches to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stream {
    Stdin,
    Stdout,
    Stderr,
}

/// What `create` needs besides the API request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreateExtras {
    pub pull: PullPolicy,
    /// `-q`: no pull progress.
    pub quiet: bool,
    /// `--cidfile`: the CLI writes the new container's ID here (and must refuse to
    /// start when the file already exists, as Docker does). Also kept in
    /// `HostConfig.ContainerIDFile`.
    pub container_id_file: Option<PathBuf>,
}

/// What `run` needs besides the API request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunExtras {
    pub create: CreateExtras,
    /// `-d`: print the ID and return; nothing is attached.
    pub detach: bool,
    /// `--sig-proxy`: forward signals the CLI receives to the container.
    pub sig_proxy: bool,
    /// `--detach-keys`, as given (the CLI's default applies when `None`).
    pub detach_keys: Option<String>,
    /// The streams to attach, in stdin, stdout, stderr order; empty when detached.
    /// `-a` values, `-i` (stdin) and the stdout+stderr default end up here.
    pub attach: Vec<Stream>,
    /// `--rm`: the container removes itself on exit (also `HostConfig.AutoRemove`).
    pub auto_remove: bool,
}

impl CreateOptions {
    /// The image as given.
    pub fn image(&self) -> &str {
        self.image_and_command
            .first()
            .map(String::as_str)
            .unwrap_or_default()
    }

    /// The command and its arguments after the image.
    pub fn command(&self) -> &[String] {
        self.image_and_command.get(1..).unwrap_or_default()
    }

    /// Reads and checks every flag (Docker's CLI rules and the daemon's request
    /// checks), using the process environment for `-e KEY` and the working directory
    /// for `-v ./dir:…`.
    pub fn to_create_request(
        &self,
    ) -> Result<(berth_types::container::CreateRequest, CreateExtras), OptionsError> {
        let cwd = std::env::current_dir().ok();
        resolve::resolve(self, &process_env, cwd.as_deref())
    }
}

impl RunOptions {
    /// [`CreateOptions::to_create_request`] plus the run-only flags: with `-d`,
    /// nothing is attached (and `-a` is refused).
    pub fn to_run_request(
        &self,
    ) -> Result<(berth_types::container::CreateRequest, RunExtras), OptionsError> {
        let cwd = std::env::current_dir().ok();
        resolve::resolve_run(self, &process_env, cwd.as_deref())
    }
}

fn process_env(name: &str) -> Option<String> {
    std::env::var_os(name).map(|value| value.to_string_lossy().into_owned())
}
