//! `tag`.

use berth_engine::images::tag_image;
use berth_engine::Engine;
use clap::Args;

#[derive(Debug, Args)]
pub struct TagArgs {
    /// SOURCE_IMAGE[:TAG]
    pub source: String,
    /// TARGET_IMAGE[:TAG]
    pub target: String,
}

pub fn run(engine: &mut Engine, args: &TagArgs) -> anyhow::Result<i32> {
    tag_image(engine.store_mut(), &args.source, &args.target)?;
    berth_engine::warm::retire_reference(engine, &args.target);
    Ok(0)
}
