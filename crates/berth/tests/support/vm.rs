//! What the VM container tests (`vm_*.rs`) share: a root that runs VMs, the
//! guest kernel and cache they find or make, and looking at the processes
//! of a VM on the host.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The guest kernel package and the shared cache, or why the tests skip:
/// `BERTH_VM_KERNEL_DIR` (else berth's own kernel, built once by
/// scripts/vm-kernel-minimal.sh) and `BERTH_VM_CACHE` (else one beside it).
pub fn vm_environment() -> Option<(PathBuf, PathBuf)> {
    if Command::new("qemu-system-x86_64")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)");
        return None;
    }
    if std::env::var_os("BERTH_VM_VIRTIOFSD").is_none()
        && !Path::new("/var/lib/berth-tools/bin/virtiofsd").is_file()
    {
        eprintln!("skipped: no virtiofsd (scripts/vm-tools.sh installs it)");
        return None;
    }
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("vm-kernel");
    let package = match std::env::var_os("BERTH_VM_KERNEL_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let dir = base.join("minimal");
            let script = super::workspace_root().join("scripts/vm-kernel-minimal.sh");
            let status = Command::new("bash")
                .arg(&script)
                .arg(&dir)
                .status()
                .unwrap();
            assert!(status.success(), "{script:?} {dir:?} failed: {status}");
            dir
        }
    };
    let cache = match std::env::var_os("BERTH_VM_CACHE") {
        Some(dir) => PathBuf::from(dir),
        None => base.join("berth-cache"),
    };
    Some((package, cache))
}

/// The shim (a VM container's pid) and its descendants (QEMU, virtiofsd).
pub fn vm_processes(shim: i32) -> Vec<i32> {
    let mut pids = vec![shim];
    let mut index = 0;
    while index < pids.len() {
        pids.extend(children_of(pids[index]));
        index += 1;
    }
    pids
}

pub fn children_of(pid: i32) -> Vec<i32> {
    fs_err::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|pid| pid.parse::<i32>().ok())
        .collect()
}

pub fn command_of(pid: i32) -> String {
    fs_err::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " "))
        .unwrap_or_default()
}

pub fn kill9(pid: i32) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
}

/// A TCP port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The whole answer to `GET path` on 127.0.0.1:`port` (headers included,
/// lines ending in `\n`), or None while nothing answers with 200.
pub fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    answer
        .contains(" 200 ")
        .then(|| answer.replace("\r\n", "\n"))
}

/// A private root with busybox loaded whose commands find the guest kernel
/// and the shared cache. Each test file adds the runs it needs in an `impl`
/// of its own.
pub struct VmBerth {
    pub berth: super::Berth,
    /// The guest kernel package.
    pub kernel: PathBuf,
    cache: PathBuf,
}

impl VmBerth {
    /// None (the reason printed) where VMs cannot run.
    pub fn new() -> Option<VmBerth> {
        let (kernel, cache) = vm_environment()?;
        let berth = super::Berth::new();
        berth.load("busybox-docker.tar");
        Some(VmBerth {
            berth,
            kernel,
            cache,
        })
    }

    /// A berth command for this root, with the kernel, the cache and TCG
    /// asked for (so the runs' stderr is the container's alone:
    /// `tcg_is_warned_about_once_per_create` sees the warning).
    pub fn command(&self) -> Command {
        let mut command = self.berth.command();
        command
            .env("BERTH_VM_KERNEL_DIR", &self.kernel)
            .env("BERTH_VM_CACHE", &self.cache)
            .env("BERTH_VM_ACCEL", "tcg");
        command
    }

    pub fn run(&self, args: &[&str]) -> super::Run {
        self.run_with_stdin(args, None)
    }

    pub fn run_with_stdin(&self, args: &[&str], stdin: Option<&[u8]>) -> super::Run {
        let mut command = self.command();
        command.args(args);
        super::Run {
            output: super::output_with_stdin(command, stdin),
        }
    }

    /// `inspect -f FORMAT WHAT`, trimmed.
    pub fn inspect(&self, what: &str, format: &str) -> String {
        self.run(&["inspect", "-f", format, what])
            .ok()
            .trim()
            .to_owned()
    }
}

/// The links `ip -o link` (busybox's or iproute2's) shows up (`UP` among
/// their flags), by name: a VM's spare network cards are there but down.
#[allow(dead_code)] // not every test file asks
pub fn links_up(ip_o_link: &str) -> Vec<String> {
    ip_o_link
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(": ");
            let name = fields.nth(1)?;
            let flags = line.split('<').nth(1)?.split('>').next()?;
            flags
                .split(',')
                .any(|flag| flag == "UP")
                .then(|| name.split('@').next().unwrap_or(name).to_owned())
        })
        .collect()
}
