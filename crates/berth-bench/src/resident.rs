//! Which processes make up an engine's resident memory: what stays behind
//! while no command runs.
//!
//! - berth: its monitor processes (one per running container; forks of the
//!   CLI, so their executable is the berth binary and their command line
//!   names the root), and an API server if one runs. Nothing when no
//!   container runs.
//! - docker: the dockerd that serves the socket, its children (a containerd
//!   it manages, docker-proxy), the containerd it uses when that runs on its
//!   own, and the containerd shims registered with that containerd.
//! - podman: conmon per container, and `podman system service` if it runs.

use std::path::{Path, PathBuf};

use crate::procfs::{descendants, ProcessInfo};

const BERTH_DEFAULT_ROOT: &str = "/var/lib/berth";
const DOCKER_DEFAULT_SOCKET: &str = "/var/run/docker.sock";
const CONTAINERD_DEFAULT_SOCKET: &str = "/run/containerd/containerd.sock";

#[derive(Clone, Debug)]
pub enum Residents {
    Berth { program: PathBuf, root: PathBuf },
    Docker { host: String },
    Podman,
}

/// The pids of the engine's resident processes in `table`, never `own_pid`.
/// `read` reads a file (a containerd config), injectable for tests.
pub fn select(
    table: &[ProcessInfo],
    residents: &Residents,
    own_pid: u32,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Vec<u32> {
    let mut pids = match residents {
        Residents::Berth { program, root } => berth(table, program, root),
        Residents::Docker { host } => docker(table, host, read),
        Residents::Podman => podman(table),
    };
    pids.retain(|pid| *pid != own_pid);
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Paths compared after resolving symlinks (/var/run → /run) where they exist.
fn same_path(left: &Path, right: &Path) -> bool {
    let resolve = |path: &Path| fs_err::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    left == right || resolve(left) == resolve(right)
}

fn berth(table: &[ProcessInfo], program: &Path, root: &Path) -> Vec<u32> {
    table
        .iter()
        .filter(|process| {
            let by_exe = process
                .exe
                .as_deref()
                .is_some_and(|exe| same_path(exe, program));
            let by_command = process
                .cmdline
                .first()
                .is_some_and(|first| same_path(Path::new(first), program));
            by_exe || by_command
        })
        .filter(|process| {
            let process_root = process
                .flag("--root", None)
                .or_else(|| process.env("BERTH_ROOT"))
                .unwrap_or(BERTH_DEFAULT_ROOT);
            same_path(Path::new(process_root), root)
        })
        .map(|process| process.pid)
        .collect()
}

/// The socket path of a `unix://` docker host; None for tcp:// or ssh://.
pub fn unix_socket(host: &str) -> Option<PathBuf> {
    if let Some(path) = host.strip_prefix("unix://") {
        return Some(PathBuf::from(path));
    }
    host.starts_with('/').then(|| PathBuf::from(host))
}

fn docker(table: &[ProcessInfo], host: &str, read: &dyn Fn(&Path) -> Option<String>) -> Vec<u32> {
    let Some(socket) = unix_socket(host) else {
        return Vec::new();
    };
    let serves_socket = |process: &ProcessInfo| {
        let hosts = process.flag_values("--host", Some("-H"));
        if hosts.is_empty() {
            return same_path(&socket, Path::new(DOCKER_DEFAULT_SOCKET));
        }
        hosts.iter().any(|host| {
            // fd:// is systemd's socket activation of the default socket.
            let path = if host.starts_with("fd://") {
                Some(PathBuf::from(DOCKER_DEFAULT_SOCKET))
            } else {
                unix_socket(host)
            };
            path.is_some_and(|path| same_path(&path, &socket))
        })
    };
    let Some(dockerd) = table
        .iter()
        .find(|process| process.comm == "dockerd" && serves_socket(process))
    else {
        return Vec::new();
    };
    let is_shim = |process: &ProcessInfo| process.comm.starts_with("containerd-shim");
    let mut pids = vec![dockerd.pid];
    pids.extend(descendants(table, dockerd.pid));

    // The containerd sockets this dockerd uses.
    let mut sockets: Vec<PathBuf> = Vec::new();
    if let Some(address) = dockerd.flag("--containerd", None) {
        let address = PathBuf::from(address.trim_start_matches("unix://"));
        for process in table.iter().filter(|process| process.comm == "containerd") {
            if same_path(&containerd_address(process, read), &address) {
                pids.push(process.pid);
            }
        }
        sockets.push(address);
    }
    for process in table.iter().filter(|process| process.comm == "containerd") {
        if pids.contains(&process.pid) {
            sockets.push(containerd_address(process, read));
        }
    }
    let shims: Vec<u32> = table
        .iter()
        .filter(|process| is_shim(process))
        .filter(|process| {
            process
                .flag("-address", Some("--address"))
                .is_some_and(|address| {
                    sockets
                        .iter()
                        .any(|socket| same_path(Path::new(address), socket))
                })
        })
        .map(|process| process.pid)
        .collect();
    // What runs under a shim is the container's workload, not the engine.
    let workload: Vec<u32> = table
        .iter()
        .filter(|process| is_shim(process))
        .flat_map(|shim| descendants(table, shim.pid))
        .collect();
    pids.extend(shims);
    pids.retain(|pid| !workload.contains(pid));
    pids
}

/// A containerd's gRPC socket: `--address`, else its config file's
/// `[grpc] address`, else the default.
fn containerd_address(process: &ProcessInfo, read: &dyn Fn(&Path) -> Option<String>) -> PathBuf {
    if let Some(address) = process.flag("--address", Some("-a")) {
        return PathBuf::from(address);
    }
    process
        .flag("--config", Some("-c"))
        .and_then(|config| read(Path::new(config)))
        .and_then(|text| grpc_address(&text))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(CONTAINERD_DEFAULT_SOCKET))
}

/// `address` in the `[grpc]` table of a containerd config.toml.
fn grpc_address(config: &str) -> Option<String> {
    let mut in_grpc = false;
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_grpc = line == "[grpc]";
            continue;
        }
        if !in_grpc {
            continue;
        }
        if let Some((key, value)) = line.split_once('=') {
            if key.trim() == "address" {
                let value = value.trim().trim_matches('"');
                return (!value.is_empty()).then(|| value.to_owned());
            }
        }
    }
    None
}

fn podman(table: &[ProcessInfo]) -> Vec<u32> {
    table
        .iter()
        .filter(|process| {
            process.comm == "conmon"
                || (process.comm == "podman"
                    && process.cmdline.get(1).map(String::as_str) == Some("system")
                    && process.cmdline.get(2).map(String::as_str) == Some("service"))
        })
        .map(|process| process.pid)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(pid: u32, ppid: u32, comm: &str, cmdline: &[&str]) -> ProcessInfo {
        ProcessInfo {
            pid,
            ppid,
            comm: comm.to_owned(),
            exe: None,
            cmdline: cmdline.iter().map(|item| item.to_string()).collect(),
            environ: Vec::new(),
        }
    }

    fn no_files(_: &Path) -> Option<String> {
        None
    }

    #[test]
    fn berth_monitors_of_one_root_only() {
        let mut table = vec![
            process(
                100,
                1,
                "berth",
                &["/opt/berth", "--root", "/tmp/a", "run", "-d", "x"],
            ),
            process(101, 100, "sleep", &["sleep", "100"]),
            process(
                102,
                1,
                "berth",
                &["/opt/berth", "--root=/tmp/b", "run", "-d", "x"],
            ),
            process(103, 1, "berth", &["/opt/berth", "run", "-d", "x"]),
            process(104, 1, "berth", &["/opt/berth", "bench"]),
            process(
                105,
                1,
                "berth",
                &["/other/berth", "--root", "/tmp/a", "run"],
            ),
        ];
        table[3].environ = vec!["BERTH_ROOT=/tmp/a".to_owned()];
        table[4].environ = vec!["BERTH_ROOT=/tmp/a".to_owned()];
        table[4].exe = Some(PathBuf::from("/opt/berth"));
        let residents = Residents::Berth {
            program: PathBuf::from("/opt/berth"),
            root: PathBuf::from("/tmp/a"),
        };
        // 104 is the bench itself; 105 is another binary.
        assert_eq!(select(&table, &residents, 104, &no_files), vec![100, 103]);
        let default_root = Residents::Berth {
            program: PathBuf::from("/opt/berth"),
            root: PathBuf::from(BERTH_DEFAULT_ROOT),
        };
        assert_eq!(
            select(&table, &default_root, 1, &no_files),
            Vec::<u32>::new()
        );
    }

    #[test]
    fn docker_is_dockerd_its_containerd_and_the_shims_of_that_containerd() {
        let table = vec![
            process(
                10,
                1,
                "dockerd",
                &[
                    "/usr/sbin/dockerd",
                    "--exec-root",
                    "/run/t",
                    "--host",
                    "unix:///run/t.sock",
                ],
            ),
            process(
                11,
                10,
                "containerd",
                &[
                    "containerd",
                    "--config",
                    "/run/t/containerd/containerd.toml",
                ],
            ),
            process(12, 10, "docker-proxy", &["docker-proxy", "-proto", "tcp"]),
            process(
                13,
                1,
                "containerd-shim",
                &[
                    "/usr/bin/containerd-shim-runc-v2",
                    "-namespace",
                    "moby",
                    "-address",
                    "/run/t/containerd/containerd.sock",
                ],
            ),
            process(14, 13, "sleep", &["sleep", "3600"]),
            // Another engine's dockerd and shim.
            process(
                20,
                1,
                "dockerd",
                &["/usr/sbin/dockerd", "-H", "unix:///run/other.sock"],
            ),
            process(
                21,
                20,
                "containerd",
                &["containerd", "--address", "/run/other/c.sock"],
            ),
            process(
                22,
                1,
                "containerd-shim",
                &["containerd-shim-runc-v2", "-address", "/run/other/c.sock"],
            ),
        ];
        let read = |path: &Path| {
            (path == Path::new("/run/t/containerd/containerd.toml")).then(|| {
                "version = 0\n[grpc]\n  address = \"/run/t/containerd/containerd.sock\"\n\
                 [debug]\n  address = \"/run/t/debug.sock\"\n"
                    .to_owned()
            })
        };
        let residents = Residents::Docker {
            host: "unix:///run/t.sock".to_owned(),
        };
        assert_eq!(select(&table, &residents, 0, &read), vec![10, 11, 12, 13]);
        let other = Residents::Docker {
            host: "unix:///run/other.sock".to_owned(),
        };
        assert_eq!(select(&table, &other, 0, &read), vec![20, 21, 22]);
        let remote = Residents::Docker {
            host: "tcp://10.0.0.1:2375".to_owned(),
        };
        assert_eq!(select(&table, &remote, 0, &read), Vec::<u32>::new());
    }

    #[test]
    fn system_docker_uses_the_default_socket_and_a_separate_containerd() {
        let table = vec![
            process(
                30,
                1,
                "dockerd",
                &[
                    "/usr/bin/dockerd",
                    "-H",
                    "fd://",
                    "--containerd=/run/containerd/containerd.sock",
                ],
            ),
            process(31, 1, "containerd", &["/usr/bin/containerd"]),
            process(
                32,
                1,
                "containerd-shim",
                &[
                    "containerd-shim-runc-v2",
                    "-namespace",
                    "moby",
                    "-address",
                    "/run/containerd/containerd.sock",
                ],
            ),
        ];
        let residents = Residents::Docker {
            host: "unix:///var/run/docker.sock".to_owned(),
        };
        assert_eq!(select(&table, &residents, 0, &no_files), vec![30, 31, 32]);
    }

    #[test]
    fn grpc_address_is_read_from_its_own_table() {
        assert_eq!(
            grpc_address("[debug]\naddress = \"/d\"\n[grpc]\naddress = \"/g\"\n"),
            Some("/g".to_owned())
        );
        assert_eq!(grpc_address("[grpc]\n  address = \"\"\n"), None);
        assert_eq!(grpc_address("version = 2\n"), None);
    }

    #[test]
    fn podman_residents_are_conmon_and_the_service() {
        let table = vec![
            process(40, 1, "conmon", &["/usr/bin/conmon", "--api-version", "1"]),
            process(41, 1, "podman", &["podman", "system", "service"]),
            process(42, 1, "podman", &["podman", "ps"]),
        ];
        assert_eq!(
            select(&table, &Residents::Podman, 0, &no_files),
            vec![40, 41]
        );
    }
}
