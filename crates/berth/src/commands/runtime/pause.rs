//! `pause ID`: the container's cgroup frozen.

use super::cli::IdArgs;

pub fn run(store: &berth_oci::Store, args: &IdArgs) -> anyhow::Result<i32> {
    berth_oci::lifecycle::pause(store, &args.id)?;
    Ok(0)
}
