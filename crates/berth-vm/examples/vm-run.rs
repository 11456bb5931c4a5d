//! Boots a microVM and runs one command in it, printing where the time went
//! (scripts/vm-bench.sh runs it five times for docs/VM.md).
//!
//! ```text
//! vm-run [--gzip] [--reboot] [--console] [--runs N] [--slice1]
//!        [--root DIR] [--share DIR:TARGET[:ro]]... [--cache auto|always|never] [--root-cache POLICY]
//!        -- COMMAND...
//! ```
//!
//! - `--root DIR`: DIR over virtiofs is the command's root (and the
//!   initramfs carries no busybox); `--share`: more shares mounted inside it.
//! - `--cache`: the `--share` shares' virtiofsd cache policy (default auto);
//!   `--root-cache` the root's (default always, as `Share::root`).
//! - `--slice1`: the first slice's initramfs: only the agent's modules (no
//!   fuse/virtiofs).
//!
//! Environment: BERTH_VM_KERNEL_DIR (the extracted kernel package),
//! BERTH_VM_CACHE (default /var/tmp/berth-vm-cache), BERTH_VM_AGENT (a path;
//! default: berth-vm-agent beside this program's directory; berth's own
//! binary works too), BERTH_VM_BUSYBOX (default /bin/busybox), BERTH_VM_CMDLINE (words
//! added to the kernel's), BERTH_VM_VIRTIOFSD.

use std::path::PathBuf;
use std::time::Instant;

use berth_vm::agent::PowerOff;
use berth_vm::initramfs::AgentBinary;
use berth_vm::{
    initramfs, kernel, CachePolicy, Compression, GuestMount, GuestRoot, InitramfsConfig,
    RunRequest, Share, Vm, VmConfig,
};

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
    let values = |name: &str| -> Vec<String> {
        args.windows(2)
            .filter(|pair| pair[0] == name)
            .map(|pair| pair[1].clone())
            .collect()
    };
    let root_dir = values("--root").pop().map(PathBuf::from);
    let policy = |name: &str, default| match values(name).pop().as_deref() {
        None => Ok(default),
        Some("auto") => Ok(CachePolicy::Auto),
        Some("always") => Ok(CachePolicy::Always),
        Some("never") => Ok(CachePolicy::Never),
        Some(other) => Err(format!("{name} {other}: auto, always or never")),
    };
    let share_cache = policy("--cache", CachePolicy::Auto)?;
    let root_cache = policy("--root-cache", CachePolicy::Always)?;
    let mut shares = Vec::new();
    let mut mounts = Vec::new();
    if let Some(dir) = &root_dir {
        shares.push(Share::root("root", dir, false).with_cache(root_cache));
    }
    for (index, spec) in values("--share").iter().enumerate() {
        let mut parts = spec.split(':');
        let (Some(dir), Some(target)) = (parts.next(), parts.next()) else {
            return Err(format!("--share {spec}: DIR:TARGET[:ro]").into());
        };
        let read_only = parts.next() == Some("ro");
        let tag = format!("share{index}");
        shares.push(Share::new(&tag, dir, read_only).with_cache(share_cache));
        mounts.push(GuestMount {
            tag,
            target: target.to_string(),
            read_only,
        });
    }

    let env_path =
        |name: &str, default: PathBuf| std::env::var_os(name).map(PathBuf::from).unwrap_or(default);
    // BERTH_VM_AGENT: a path (`berth` would be this example, not berth).
    let agent = AgentBinary::from_env().path()?;
    let cache = env_path("BERTH_VM_CACHE", PathBuf::from("/var/tmp/berth-vm-cache"));

    let started = Instant::now();
    let kernel = kernel::prepare(&kernel::kernel_dir_from_env()?, &cache.join("kernels"))?;
    let prepared = started.elapsed();
    let mut config = InitramfsConfig::new(agent, kernel.clone());
    if root_dir.is_none() {
        config.busybox = Some(env_path("BERTH_VM_BUSYBOX", PathBuf::from("/bin/busybox")));
    }
    if flag("--slice1") {
        config.modules = initramfs::AGENT_MODULES
            .iter()
            .map(|name| name.to_string())
            .collect();
    }
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
    vm_config.shares = shares;
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
                root: root_dir.as_ref().map(|_| GuestRoot {
                    tag: "root".into(),
                    read_only: false,
                    subdir: None,
                }),
                mounts: mounts.clone(),
                container: None,
                stdin: false,
                networks: vec![],
                embedded_dns: false,
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
