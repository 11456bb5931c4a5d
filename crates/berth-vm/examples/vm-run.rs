//! Boots a microVM and runs one command in it, printing where the time went
//! (scripts/vm-bench.sh runs it five times for docs/VM.md).
//!
//! ```text
//! vm-run [--gzip] [--reboot] [--console] [--runs N] -- COMMAND...
//! ```
//!
//! Environment: BERTH_VM_KERNEL_DIR (the extracted kernel package),
//! BERTH_VM_CACHE (default /var/tmp/berth-vm-cache), BERTH_VM_AGENT (default:
//! berth-vm-agent beside this program's directory), BERTH_VM_BUSYBOX
//! (default /bin/busybox), BERTH_VM_CMDLINE (words added to the kernel's).

use std::path::PathBuf;
use std::time::Instant;

use berth_vm::agent::PowerOff;
use berth_vm::{initramfs, kernel, Compression, InitramfsConfig, RunRequest, Vm, VmConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let split = args
        .iter()
        .position(|arg| arg == "--")
        .unwrap_or(args.len());
    let command: Vec<String> = args.split_off(split).into_iter().skip(1).collect();
    let command = if command.is_empty() {
        vec!["uname".to_string(), "-r".to_string()]
    } else {
        command
    };
    let flag = |name: &str| args.iter().any(|arg| arg == name);
    let runs: usize = args
        .iter()
        .position(|arg| arg == "--runs")
        .and_then(|index| args.get(index + 1))
        .and_then(|value| value.parse().ok())
        .unwrap_or(1);

    let env_path =
        |name: &str, default: PathBuf| std::env::var_os(name).map(PathBuf::from).unwrap_or(default);
    let exe = std::env::current_exe()?;
    let agent = env_path(
        "BERTH_VM_AGENT",
        exe.parent()
            .and_then(|dir| dir.parent())
            .map(|dir| dir.join("berth-vm-agent"))
            .unwrap_or_default(),
    );
    let cache = env_path("BERTH_VM_CACHE", PathBuf::from("/var/tmp/berth-vm-cache"));

    let started = Instant::now();
    let kernel = kernel::prepare(&kernel::kernel_dir_from_env()?, &cache.join("kernels"))?;
    let prepared = started.elapsed();
    let mut config = InitramfsConfig::new(agent, kernel.clone());
    config.busybox = Some(env_path("BERTH_VM_BUSYBOX", PathBuf::from("/bin/busybox")));
    config.compression = if flag("--gzip") {
        Compression::Gzip
    } else {
        Compression::None
    };
    config.power_off = if flag("--reboot") {
        PowerOff::Reboot
    } else {
        PowerOff::Halt
    };
    let image = cache.join(format!("initramfs-{}.cpio", std::process::id()));
    let started = Instant::now();
    initramfs::write(&config, &image)?;
    let built = started.elapsed();
    let size = fs_err::metadata(&image)?.len();
    eprintln!(
        "kernel {} ready in {prepared:?}; initramfs {size} bytes in {built:?}",
        kernel.release
    );

    let mut vm_config = VmConfig::new(kernel.vmlinux.clone(), image.clone())?;
    if let Ok(extra) = std::env::var("BERTH_VM_CMDLINE") {
        vm_config.kernel_cmdline_extra = extra.split_whitespace().map(str::to_string).collect();
    }
    eprintln!("accelerator: {:?}", vm_config.accelerator);
    println!("run\tready_ms\tguest_init_ms\tguest_ready_ms\tfirst_output_ms\trun_ms\tshutdown_ms\ttotal_ms\tcode");
    for run in 0..runs {
        let started = Instant::now();
        let mut vm = Vm::boot(&vm_config)?;
        let times = vm.boot_times();
        let mut first_output = None;
        let run_started = Instant::now();
        let exit = vm.run_streaming(
            &RunRequest {
                args: command.clone(),
                env: vec![],
                cwd: "/".into(),
            },
            &mut |stream, data| {
                first_output.get_or_insert_with(|| started.elapsed());
                if runs == 1 {
                    use std::io::Write;
                    let _ = match stream {
                        berth_vm::OutputStream::Stdout => std::io::stderr().write_all(data),
                        berth_vm::OutputStream::Stderr => std::io::stderr().write_all(data),
                    };
                }
            },
        )?;
        let ran = run_started.elapsed();
        if flag("--console") {
            eprintln!("{}", vm.console());
        }
        let stop_started = Instant::now();
        let ended = vm.shutdown();
        let stopped = stop_started.elapsed();
        let ms = |duration: std::time::Duration| duration.as_secs_f64() * 1000.0;
        println!(
            "{run}\t{:.0}\t{:.0}\t{:.0}\t{:.0}\t{:.0}\t{:.0}\t{:.0}\t{}",
            ms(times.ready),
            ms(times.guest_init),
            ms(times.guest_ready),
            first_output.map(ms).unwrap_or(f64::NAN),
            ms(ran),
            ms(stopped),
            ms(started.elapsed()),
            exit.code
        );
        if let Some(error) = exit.error {
            eprintln!("error: {error}");
        }
        eprintln!("shutdown: {ended:?}");
    }
    fs_err::remove_file(&image)?;
    Ok(())
}
