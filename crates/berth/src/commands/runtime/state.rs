//! `state`: the OCI state JSON (runc prints it indented, without a final newline).

use super::cli::IdArgs;

pub fn run(store: &berth_oci::Store, args: &IdArgs) -> anyhow::Result<i32> {
    berth_oci::store::validate_id(&args.id)?;
    let record = store.load(&args.id)?;
    let state = record.state(store.status(&record));
    super::print_json(&state, false)?;
    Ok(0)
}
