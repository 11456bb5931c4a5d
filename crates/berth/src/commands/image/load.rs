//! `load`.

use std::io::IsTerminal;

use anyhow::Context;
use berth_engine::images::load_images;
use berth_engine::Engine;
use clap::Args;

#[derive(Debug, Args)]
pub struct LoadArgs {
    /// Read from tar archive file, instead of STDIN
    #[arg(short, long, value_name = "FILE")]
    pub input: Option<std::path::PathBuf>,
    /// Suppress the load output
    #[arg(short, long)]
    pub quiet: bool,
}

pub fn run(engine: &mut Engine, args: &LoadArgs) -> anyhow::Result<i32> {
    let loaded = match &args.input {
        Some(path) => {
            let file = fs_err::File::open(path)?;
            load_images(
                engine.store_mut(),
                std::io::BufReader::with_capacity(1 << 20, file),
            )?
        }
        None => {
            let stdin = std::io::stdin();
            if stdin.is_terminal() {
                anyhow::bail!("requested load from stdin, but stdin is empty");
            }
            load_images(engine.store_mut(), stdin.lock()).context("failed to load from stdin")?
        }
    };
    for image in loaded {
        for moved in &image.moved {
            let name = berth_engine::images::familiar(&moved.reference);
            println!(
                "The image {name} already exists, renaming the old one with ID {} to empty string",
                moved.previous
            );
        }
        if image.tags.is_empty() {
            println!("Loaded image ID: {}", image.id);
        }
        for tag in &image.tags {
            println!("Loaded image: {}", tag.familiar_string());
            berth_engine::warm::retire_reference(engine, &tag.to_string());
        }
    }
    Ok(0)
}
