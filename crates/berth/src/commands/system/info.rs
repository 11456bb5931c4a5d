//! `berth info`: where state lives and what the host offers.

use clap::Args;
use serde_json::json;

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
    let images = engine.store().image_count()?;
    let uname = nix::sys::utsname::uname()?;
    let info = json!({
        "Containers": 0,
        "ContainersRunning": 0,
        "ContainersPaused": 0,
        "ContainersStopped": 0,
        "Images": images,
        "Driver": "overlay",
        "CgroupDriver": "cgroupfs",
        "CgroupVersion": cgroup_version(),
        "KernelVersion": uname.release().to_string_lossy(),
        "OperatingSystem": operating_system(),
        "OSType": "linux",
        "Architecture": uname.machine().to_string_lossy(),
        "NCPU": std::thread::available_parallelism().map_or(1, |count| count.get()),
        "MemTotal": memory_total(),
        "DockerRootDir": global.root.display().to_string(),
        "RunRoot": global.run_root.display().to_string(),
        "ServerVersion": env!("CARGO_PKG_VERSION"),
        "Name": uname.nodename().to_string_lossy(),
    });
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

/// "2" when /sys/fs/cgroup is a cgroup2 mount (unified), else "1".
fn cgroup_version() -> &'static str {
    match nix::sys::statfs::statfs("/sys/fs/cgroup") {
        Ok(stat) if stat.filesystem_type() == nix::sys::statfs::CGROUP2_SUPER_MAGIC => "2",
        _ => "1",
    }
}

fn operating_system() -> String {
    std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("PRETTY_NAME="))
                .map(|name| name.trim_matches('"').to_owned())
        })
        .unwrap_or_else(|| "Linux".to_owned())
}

/// The host's memory in bytes (/proc/meminfo MemTotal).
pub(crate) fn memory_total() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("MemTotal:"))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
        })
        .map_or(0, |kib| kib * 1024)
}
