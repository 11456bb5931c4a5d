//! The command line: Docker's commands, flags and defaults.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::commands::image::{
    HistoryArgs, ImagesArgs, ImportArgs, InspectArgs, LoadArgs, PruneArgs, RmiArgs, SaveArgs,
    TagArgs,
};
use crate::commands::system::InfoArgs;

/// A Docker-compatible container engine. No daemon: each command does its
/// work and exits.
#[derive(Debug, Parser)]
#[command(
    name = "berth",
    version,
    disable_version_flag = true,
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalOptions,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Args)]
pub struct GlobalOptions {
    /// Persistent state directory (images, containers, volumes)
    #[arg(
        long,
        global = true,
        env = "BERTH_ROOT",
        default_value = "/var/lib/berth",
        value_name = "DIR"
    )]
    pub root: PathBuf,
    /// Runtime state directory (sockets, pids)
    #[arg(
        long,
        global = true,
        env = "BERTH_RUN_ROOT",
        default_value = "/run/berth",
        value_name = "DIR"
    )]
    pub run_root: PathBuf,
    /// Enable debug output
    #[arg(short = 'D', long, global = true)]
    pub debug: bool,
    /// Set the logging level ("debug"|"info"|"warn"|"error"|"fatal")
    #[arg(short = 'l', long, global = true, default_value = "warn", value_name = "LEVEL",
          value_parser = ["trace", "debug", "info", "warn", "error", "fatal"])]
    pub log_level: String,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the berth version information
    Version,
    /// Display system-wide information
    Info(InfoArgs),
    /// List images
    Images(ImagesArgs),
    /// Manage images
    #[command(subcommand)]
    Image(ImageCommand),
    /// Load an image from a tar archive or STDIN
    Load(LoadArgs),
    /// Save one or more images to a tar archive (streamed to STDOUT by default)
    Save(SaveArgs),
    /// Import the contents from a tarball to create a filesystem image
    Import(ImportArgs),
    /// Create a tag TARGET_IMAGE that refers to SOURCE_IMAGE
    Tag(TagArgs),
    /// Remove one or more images
    Rmi(RmiArgs),
    /// Show the history of an image
    History(HistoryArgs),
    /// Return low-level information on berth objects
    Inspect(InspectArgs),
}

#[derive(Debug, Subcommand)]
pub enum ImageCommand {
    /// List images
    #[command(visible_alias = "list")]
    Ls(ImagesArgs),
    /// Remove one or more images
    #[command(visible_alias = "remove")]
    Rm(RmiArgs),
    /// Display detailed information on one or more images
    Inspect(InspectArgs),
    /// Load an image from a tar archive or STDIN
    Load(LoadArgs),
    /// Save one or more images to a tar archive (streamed to STDOUT by default)
    Save(SaveArgs),
    /// Import the contents from a tarball to create a filesystem image
    Import(ImportArgs),
    /// Create a tag TARGET_IMAGE that refers to SOURCE_IMAGE
    Tag(TagArgs),
    /// Show the history of an image
    History(HistoryArgs),
    /// Remove unused images
    Prune(PruneArgs),
}
