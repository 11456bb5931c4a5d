//! `features`: what this runtime supports (runtime-spec features.md).

pub fn run() -> anyhow::Result<i32> {
    super::print_json(&berth_oci::features::features(), true)?;
    Ok(0)
}
