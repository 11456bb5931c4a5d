//! `start`: the created container's process runs.

use super::cli::IdArgs;

pub fn run(store: &berth_oci::Store, args: &IdArgs) -> anyhow::Result<i32> {
    berth_oci::lifecycle::start(store, &args.id)?;
    Ok(0)
}
