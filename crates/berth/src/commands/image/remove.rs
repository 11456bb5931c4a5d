//! `rmi` / `image rm`.

use berth_engine::images::{remove_image, RemovalEvent};
use berth_engine::Engine;
use clap::Args;

#[derive(Debug, Args)]
pub struct RmiArgs {
    /// Force removal of the image
    #[arg(short, long)]
    pub force: bool,
    /// Do not delete untagged parents
    #[arg(long)]
    pub no_prune: bool,
    /// IMAGE
    #[arg(required = true)]
    pub images: Vec<String>,
}

pub fn run(engine: &mut Engine, args: &RmiArgs) -> anyhow::Result<i32> {
    let mut status = 0;
    for name in &args.images {
        match remove_image(engine.store_mut(), name, args.force) {
            Ok(events) => {
                for event in events {
                    match event {
                        RemovalEvent::Untagged(reference) => println!("Untagged: {reference}"),
                        RemovalEvent::Deleted(digest) => println!("Deleted: {digest}"),
                    }
                }
            }
            Err(error) => {
                eprintln!("Error: {:#}", anyhow::Error::from(error));
                status = crate::exit::FAILURE;
            }
        }
    }
    Ok(status)
}
