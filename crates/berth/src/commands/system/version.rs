//! `berth version`.

pub fn run() -> anyhow::Result<i32> {
    let (os, arch) = (std::env::consts::OS, berth_image::host_architecture());
    println!("berth:");
    println!(" Version:           {}", env!("CARGO_PKG_VERSION"));
    println!(
        " Git commit:        {}",
        option_env!("BERTH_GIT_COMMIT").unwrap_or("unknown")
    );
    println!(" OS/Arch:           {os}/{arch}");
    println!(" Storage driver:    overlay");
    println!(" Daemon:            none (each command runs on its own)");
    Ok(0)
}
