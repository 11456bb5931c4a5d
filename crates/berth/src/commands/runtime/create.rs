//! `create`: the container made, its process waiting for `start`.

use berth_oci::lifecycle::{self, CreateOptions, StdioSource};

use super::cli::CreateArgs;

pub fn run(store: &berth_oci::Store, args: &CreateArgs) -> anyhow::Result<i32> {
    super::check_create_flags(&args.flags)?;
    crate::commands::seal_before_entering_containers()?;
    let stdio = match &args.flags.console_socket {
        Some(path) => StdioSource::ConsoleSocket(path.clone()),
        None => StdioSource::Inherit,
    };
    lifecycle::create(
        store,
        &args.id,
        CreateOptions {
            bundle: args.flags.bundle.clone(),
            pid_file: args.flags.pid_file.clone(),
            stdio,
            preserve_fds: args.flags.preserve_fds,
        },
    )?;
    // The init outlives this process: it goes to the caller's subreaper (containerd's shim)
    // or to init, as runc's does.
    Ok(0)
}
