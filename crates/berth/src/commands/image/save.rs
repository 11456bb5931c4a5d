//! `save`.

use std::io::{IsTerminal, Write};

use anyhow::Context;
use berth_engine::images::save_images;
use berth_engine::Engine;
use clap::Args;

#[derive(Debug, Args)]
pub struct SaveArgs {
    /// Write to a file, instead of STDOUT
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// IMAGE
    #[arg(required = true)]
    pub images: Vec<String>,
}

pub fn run(engine: &Engine, args: &SaveArgs) -> anyhow::Result<i32> {
    match &args.output {
        Some(path) => {
            // Write beside the target and rename, so a failed save never
            // leaves a truncated archive under the name the user gave.
            let directory = path
                .parent()
                .filter(|parent| !parent.as_os_str().is_empty());
            let directory = directory.unwrap_or(std::path::Path::new("."));
            let mut staged = tempfile::Builder::new()
                .prefix(".berth-save-")
                .tempfile_in(directory)
                .with_context(|| format!("failed to create a file in {directory:?}"))?;
            {
                let mut writer = std::io::BufWriter::with_capacity(1 << 20, staged.as_file_mut());
                save_images(engine.store(), &args.images, &mut writer)?;
                writer.flush()?;
            }
            staged
                .persist(path)
                .with_context(|| format!("failed to write {path:?}"))?;
        }
        None => {
            let stdout = std::io::stdout();
            if stdout.is_terminal() {
                anyhow::bail!(
                    "cowardly refusing to save to a terminal. Use the -o flag or redirect"
                );
            }
            let mut writer = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
            save_images(engine.store(), &args.images, &mut writer)?;
            writer.flush()?;
        }
    }
    Ok(0)
}
