//! `delete [--force] ID`.

use super::cli::DeleteArgs;

pub fn run(store: &berth_oci::Store, args: &DeleteArgs) -> anyhow::Result<i32> {
    berth_oci::lifecycle::delete(store, &args.id, args.force)?;
    Ok(0)
}
