//! Containers: create, start (through a per-container monitor process),
//! run (`run.rs`: image, warm pool or create, start), stop, kill, wait,
//! remove, list, inspect — daemonless.

mod changes;
mod commit;
mod copy_mounts;
pub(crate) mod create;
mod error;
mod exec;
mod exec_terminal;
mod filter;
pub mod health;
mod inspect;
pub mod lifecycle;
#[cfg(test)]
mod lifecycle_tests;
pub(crate) mod links;
mod logging;
pub(crate) mod lookup;
pub(crate) mod manage;
pub mod merge;
pub mod monitor;
pub mod names;
mod orphans;
pub mod paths;
mod reconcile;
pub mod record;
pub(crate) mod remove;
mod repair;
mod restart;
mod run;
mod size;
pub(crate) mod spec;
pub(crate) mod start;
pub mod state;
mod stop;
mod top;
mod unsupported;
pub mod vm;

pub use changes::{
    container_copied, container_diff, export_container, with_container_root, with_copy_root,
    ChangesError, CopyDirection, CopyRoot,
};
pub use commit::{commit_container, CommitError, CommitOptions};
pub use copy_mounts::check_copy_destination;
pub use create::{
    create_container, create_warnings, local_platform_mismatch, runtime_resources, CreateError,
};
pub use error::ContainerError;
pub use exec::{exec_create, exec_detached, exec_in_container, ExecProcess, ExecRequest};
pub use exec_terminal::{exec_with_terminal, TerminalExec};
pub use filter::{ContainerFilters, CONTAINER_FILTERS};
pub use inspect::{inspect_container, list_containers, listed_image, published_ports, status_text};
pub use links::remove_link;
pub use logging::{default_log_config, log_location};
pub use lookup::{find_container, Container};
pub use manage::{
    container_network_io, container_processes, container_stats, pause_container, prune_containers,
    rename_container, unpause_container, update_container, PrunedContainers,
};
pub use monitor::Attachment;
pub use remove::{remove_container, remove_container_with};
pub use repair::{build_owner, BUILD_OWNER_LABEL};
pub use restart::{restart_container, restarted};
pub use run::{
    create_for_run, ensure_image, prepare_run, PreparedRun, PullPolicy, PullReason, RunFrontEnd,
    RunPlan, REFILL_DELAY,
};
pub use size::container_size;
pub use spec::SpecError;
pub use start::{start_container, StartFailure, StartedContainer};
pub use stop::{
    kill_container, parse_signal, stop_container, stop_container_with, wait_container, StopOptions,
};
pub use top::{container_top, ProcessTable};
