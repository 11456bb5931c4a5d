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
