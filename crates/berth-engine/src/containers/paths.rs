//! Where a container's files live.

use std::path::{Path, PathBuf};

use berth_runtime::rootfs::RootfsPaths;

/// The shared init layer could not be made.
#[derive(Debug, thiserror::Error)]
#[error("failed to create {path:?}")]
pub struct InitLayerError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

#[derive(Clone, Debug)]
pub struct ContainerPaths {
    /// `<root>/containers/<id>`: upper/work/merged, /etc files, the log.
    pub directory: PathBuf,
    /// `<run-root>/containers/<id>`: sockets and other runtime files.
    pub runtime: PathBuf,
    /// `<run-root>/vm/<short id>`: where a VM container's shim makes its
    /// VM's directory (QEMU's and virtiofsd's logs, the console); short,
    /// for the sockets bound there.
    pub vm: PathBuf,
}

impl ContainerPaths {
    pub fn new(root: &Path, run_root: &Path, id: &str) -> Self {
        Self {
            directory: root.join("containers").join(id),
            runtime: run_root.join("containers").join(id),
            vm: run_root.join("vm").join(&id[..id.len().min(12)]),
        }
    }

    pub fn rootfs(&self) -> RootfsPaths {
        RootfsPaths::under(&self.directory)
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
        let directory = fs_err::File::open(&self.runtime)?;
        let short = PathBuf::from(format!(
            "/proc/self/fd/{}/attach.sock",
            std::os::fd::AsRawFd::as_raw_fd(&directory)
        ));
        action(&short)
    }

    /// Makes the container's root file system directories with Docker's
    /// modes before anything mounts them (which would make them with
    /// berth's umask, 077): `upper` is the container's `/`, so it and the
    /// mount point `merged` are 0755 (dockerd's `diff` and `merged`);
    /// overlayfs's `work` is 0700, as dockerd's.
    pub fn create_rootfs_directories(&self) -> Result<(), crate::EngineError> {
        let rootfs = self.rootfs();
        crate::permissions::create_shared_directory(&rootfs.upper)?;
        crate::permissions::create_shared_directory(&rootfs.merged)?;
        if !rootfs.work.is_dir() {
            berth_store::permissions::create_private_directory_all(&rootfs.work)?;
        }
        Ok(())
    }

    /// The json-file log.
    pub fn log(&self, id: &str) -> PathBuf {
        self.directory.join(format!("{id}-json.log"))
    }

    /// The local driver's log, where dockerd keeps it.
    pub fn local_log(&self) -> PathBuf {
        self.directory.join("local-logs").join("container.log")
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

/// Docker's "init layer": the mount points berth itself needs (the /etc
/// files, /dev, /proc, /sys), as a read-only layer between the image and
/// the container's own changes, so `diff` and `commit` never show them.
/// Its content is the same for every container, so one copy under the root
/// serves them all (`<root>/init-layer`): a start pays one `statx` rather
/// than making and later removing eight entries of its own.
pub fn init_layer(root: &Path) -> Result<PathBuf, InitLayerError> {
    let init = root.join("init-layer");
    // Made last: when it exists, so does everything before it.
    let complete = init.join(INIT_LAYER_FILES[INIT_LAYER_FILES.len() - 1]);
    if complete.exists() {
        return Ok(init);
    }
    let create = |result: std::io::Result<()>, path: &Path| {
        result.map_err(|source| InitLayerError {
            path: path.to_owned(),
            source,
        })
    };
    // A lower layer of every container: its directories are the merged
    // root's /etc, /dev, /proc and /sys where the image has none, so they
    // are 0755 (and its files 0644) whatever berth's umask, as dockerd's
    // `-init` layer. Each step is idempotent: concurrent first starts may
    // both build it.
    let shared = |path: &Path, mode: u32| {
        create(
            fs_err::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode)),
            path,
        )
    };
    create(fs_err::create_dir_all(&init), &init)?;
    shared(&init, crate::permissions::SHARED_DIRECTORY)?;
    for directory in ["etc", "dev", "proc", "sys"] {
        let path = init.join(directory);
        create(fs_err::create_dir_all(&path), &path)?;
        shared(&path, crate::permissions::SHARED_DIRECTORY)?;
    }
    for file in INIT_LAYER_FILES {
        let path = init.join(file);
        let made = fs_err::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map(drop);
        create(made, &path)?;
        shared(&path, crate::permissions::SHARED_FILE)?;
    }
    Ok(init)
}

/// The init layer's files, in the order they are made.
const INIT_LAYER_FILES: [&str; 3] = ["etc/hostname", "etc/hosts", "etc/resolv.conf"];

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(layer: &Path) -> Vec<String> {
        let mut found = Vec::new();
        for directory in ["", "etc"] {
            for entry in fs_err::read_dir(layer.join(directory)).unwrap() {
                let name = entry.unwrap().file_name().into_string().unwrap();
                found.push(Path::new(directory).join(name).display().to_string());
            }
        }
        found.sort();
        found
    }

    #[test]
    fn init_layer_holds_the_mount_points_and_is_shared() {
        let root = tempfile::tempdir().unwrap();
        let layer = init_layer(root.path()).unwrap();
        assert_eq!(layer, root.path().join("init-layer"));
        let expected = [
            "dev",
            "etc",
            "etc/hostname",
            "etc/hosts",
            "etc/resolv.conf",
            "proc",
            "sys",
        ];
        assert_eq!(entries(&layer), expected);
        assert!(layer.join("etc/hosts").is_file());
        assert_eq!(fs_err::metadata(layer.join("etc/hosts")).unwrap().len(), 0);
        // A second start reuses it as it is.
        assert_eq!(init_layer(root.path()).unwrap(), layer);
        assert_eq!(entries(&layer), expected);
    }

    #[test]
    fn an_init_layer_that_cannot_be_made_names_its_path() {
        let root = tempfile::tempdir().unwrap();
        // A file where the layer's directory goes.
        fs_err::write(root.path().join("init-layer"), b"").unwrap();
        let error = init_layer(root.path()).unwrap_err();
        assert_eq!(error.path, root.path().join("init-layer"));
        let error = crate::EngineError::from(error);
        assert_eq!(error.kind(), crate::ErrorKind::Internal);
        let chain = crate::ErrorChain(&error).to_string();
        assert!(
            chain.starts_with(&format!(
                "failed to create {:?}: ",
                root.path().join("init-layer")
            )),
            "{chain}"
        );
    }

    #[test]
    fn a_partly_made_init_layer_is_completed() {
        // As a start killed while making it would leave it.
        let root = tempfile::tempdir().unwrap();
        fs_err::create_dir_all(root.path().join("init-layer/etc")).unwrap();
        fs_err::write(root.path().join("init-layer/etc/hostname"), b"").unwrap();
        let layer = init_layer(root.path()).unwrap();
        for path in ["dev", "proc", "sys", "etc/hosts", "etc/resolv.conf"] {
            assert!(layer.join(path).exists(), "{path} missing");
        }
    }
}
