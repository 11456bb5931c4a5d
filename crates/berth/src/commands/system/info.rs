//! `berth info`: where state lives and what the host offers.

use clap::Args;

use crate::cli::GlobalOptions;
use crate::commands::output;

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Format output using a custom template ('json' or a Go template)
    #[arg(short, long)]
    pub format: Option<String>,
}

pub fn run(global: &GlobalOptions, args: &InfoArgs) -> anyhow::Result<i32> {
    let engine = crate::commands::open(global)?;
    let info = berth_engine::system::system_info(&engine)?;
    if let Some(format) = &args.format {
        println!("{}", output::render_one(format, &info)?);
        return Ok(0);
    }
    let field = |key: &str| output::plain(&info[key]);
    println!("Containers: {}", field("Containers"));
    println!(" Running: {}", field("ContainersRunning"));
    println!(" Paused: {}", field("ContainersPaused"));
    println!(" Stopped: {}", field("ContainersStopped"));
    println!("Images: {}", field("Images"));
    println!("Server Version: {}", field("ServerVersion"));
    println!("Storage Driver: {}", field("Driver"));
    println!("Cgroup Driver: {}", field("CgroupDriver"));
    println!("Cgroup Version: {}", field("CgroupVersion"));
    let runtimes = info["Runtimes"]
        .as_object()
        .map(|runtimes| runtimes.keys().cloned().collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    println!("Runtimes: {runtimes}");
    println!("Default Runtime: {}", field("DefaultRuntime"));
    let accelerator = &info["BerthVmAccelerator"];
    println!(
        "VM Accelerator: {} ({})",
        output::plain(&accelerator["Name"]),
        output::plain(&accelerator["Reason"])
    );
    println!("Kernel Version: {}", field("KernelVersion"));
    println!("Operating System: {}", field("OperatingSystem"));
    println!("OSType: {}", field("OSType"));
    println!("Architecture: {}", field("Architecture"));
    println!("CPUs: {}", field("NCPU"));
    println!(
        "Total Memory: {}",
        crate::format::units::bytes_size(info["MemTotal"].as_u64().unwrap_or(0))
    );
    println!("Name: {}", field("Name"));
    println!("Berth Root Dir: {}", field("DockerRootDir"));
    println!("Berth Run Root: {}", field("RunRoot"));
    Ok(0)
}

/// The host's memory in bytes (`top`/`stats` use it too).
pub(crate) use berth_engine::system::memory_total;
