//! `kill [--all] ID [SIGNAL]`.

use super::cli::KillArgs;

pub fn run(store: &berth_oci::Store, args: &KillArgs) -> anyhow::Result<i32> {
    let signal = berth_oci::lifecycle::parse_signal(&args.signal)?;
    berth_oci::lifecycle::kill(store, &args.id, signal, args.all)?;
    Ok(0)
}
