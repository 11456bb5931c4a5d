//! Where a container's files live.

use std::path::{Path, PathBuf};

use berth_runtime::rootfs::RootfsPaths;

#[derive(Clone, Debug)]
pub struct ContainerPaths {
    /// `<root>/containers/<id>`: upper/work/merged, /etc files, the log.
    pub directory: PathBuf,
    /// `<run-root>/containers/<id>`: sockets and other runtime files.
    pub runtime: PathBuf,
}

impl ContainerPaths {
    pub fn new(root: &Path, run_root: &Path, id: &str) -> Self {
        Self {
            directory: root.join("containers").join(id),
            runtime: run_root.join("containers").join(id),
        }
    }

    pub fn rootfs(&self) -> RootfsPaths {
        RootfsPaths::under(&self.directory)
    }

    /// Docker's "init layer": the mount points berth itself needs (the /etc
    /// files, /dev, /proc, /sys), as a read-only layer between the image and
    /// the container's own changes, so `diff` and `commit` never show them.
    pub fn init_layer(&self) -> Result<PathBuf, crate::EngineError> {
        let init = self.directory.join("init");
        let create = |result: std::io::Result<()>, path: &Path| {
            result.map_err(|error| {
                crate::EngineError::Start(format!("failed to create {path:?}: {error}"))
            })
        };
        for directory in ["etc", "dev", "proc", "sys"] {
            let path = init.join(directory);
            create(std::fs::create_dir_all(&path), &path)?;
        }
        for file in ["etc/hostname", "etc/hosts", "etc/resolv.conf"] {
            let path = init.join(file);
            if !path.exists() {
                create(std::fs::write(&path, b""), &path)?;
            }
        }
        Ok(init)
    }

    /// Exists while a stop, kill or rm asked the container to stay down:
    /// the monitor checks it before any restart. A file rather than a field
    /// of the stored state, so no read-modify-write of the state can lose it.
    pub fn stop_marker(&self) -> PathBuf {
        self.runtime.join("stop-requested")
    }

    /// The monitor's socket for `berth attach`.
    pub fn attach_socket(&self) -> PathBuf {
        self.runtime.join("attach.sock")
    }

    /// Runs `action` with a short path to the attach socket: unix socket
    /// paths are limited to 107 bytes, so the directory is reached through
    /// an open descriptor (`/proc/self/fd/N/attach.sock`).
    pub fn with_short_attach_path<T>(
        &self,
        action: impl FnOnce(&Path) -> std::io::Result<T>,
    ) -> std::io::Result<T> {
        let directory = std::fs::File::open(&self.runtime)?;
        let short = PathBuf::from(format!(
            "/proc/self/fd/{}/attach.sock",
            std::os::fd::AsRawFd::as_raw_fd(&directory)
        ));
        action(&short)
    }

    pub fn log(&self, id: &str) -> PathBuf {
        self.directory.join(format!("{id}-json.log"))
    }

    pub fn hostname(&self) -> PathBuf {
        self.directory.join("hostname")
    }

    pub fn hosts(&self) -> PathBuf {
        self.directory.join("hosts")
    }

    pub fn resolv_conf(&self) -> PathBuf {
        self.directory.join("resolv.conf")
    }
}
