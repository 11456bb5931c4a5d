//! `resume ID`: a paused container's cgroup thawed.

use super::cli::IdArgs;

pub fn run(store: &berth_oci::Store, args: &IdArgs) -> anyhow::Result<i32> {
    berth_oci::lifecycle::resume(store, &args.id)?;
    Ok(0)
}
