//! `diff`, `export`.

use std::io::{IsTerminal, Write};

use berth_engine::containers::{container_diff, export_container};
use berth_engine::Engine;
use clap::Args;

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// CONTAINER
    pub container: String,
}

pub fn diff(engine: &Engine, args: &DiffArgs) -> anyhow::Result<i32> {
    for change in container_diff(engine, &args.container)? {
        println!("{change}");
    }
    Ok(0)
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Write to a file, instead of STDOUT
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// CONTAINER
    pub container: String,
}

pub fn export(engine: &Engine, args: &ExportArgs) -> anyhow::Result<i32> {
    match &args.output {
        Some(path) => {
            let directory = path
                .parent()
                .filter(|parent| !parent.as_os_str().is_empty())
                .unwrap_or(std::path::Path::new("."));
            let mut staged = tempfile::Builder::new()
                .prefix(".berth-export-")
                .tempfile_in(directory)?;
            {
                let mut writer = std::io::BufWriter::with_capacity(1 << 20, staged.as_file_mut());
                export_container(engine, &args.container, &mut writer)?;
                writer.flush()?;
            }
            staged.persist(path)?;
        }
        None => {
            anyhow::ensure!(
                !std::io::stdout().is_terminal(),
                "cowardly refusing to save to a terminal. Use the -o flag or redirect"
            );
            let mut writer = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
            export_container(engine, &args.container, &mut writer)?;
            writer.flush()?;
        }
    }
    Ok(0)
}
