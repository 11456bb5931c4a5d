//! The container's cgroup through berth-runtime's managers (cgroupfs layout, v1 or v2).

use std::path::Path;

use berth_runtime::cgroups::{new_manager, CgroupManager, CgroupVersion};

use crate::error::{OciError, Result};

pub fn version() -> Result<CgroupVersion> {
    CgroupVersion::detect().map_err(OciError::Cgroup)
}

pub fn manager(path: &Path) -> Result<Box<dyn CgroupManager>> {
    Ok(new_manager(&version()?, path.to_owned()))
}

/// Whether the cgroup is frozen (`pause`): v1 `freezer.state`, v2 `cgroup.freeze`.
pub fn is_frozen(path: &Path) -> bool {
    match CgroupVersion::detect() {
        Ok(CgroupVersion::V1(hierarchies)) => hierarchies
            .mount_point("freezer")
            .and_then(|freezer| {
                fs_err::read_to_string(freezer.join(path).join("freezer.state")).ok()
            })
            .is_some_and(|state| state.trim() != "THAWED"),
        Ok(CgroupVersion::V2(unified)) => {
            fs_err::read_to_string(unified.root.join(path).join("cgroup.freeze"))
                .is_ok_and(|state| state.trim() == "1")
        }
        Err(_) => false,
    }
}

/// Removes the cgroup and then the parents berth made by default when they are empty.
pub fn remove(path: &Path) -> Result<()> {
    manager(path)?.delete().map_err(OciError::Cgroup)?;
    if path.starts_with(crate::convert::DEFAULT_CGROUP_PARENT) {
        if let Ok(version) = version() {
            let parent = Path::new(crate::convert::DEFAULT_CGROUP_PARENT);
            let directories = match version {
                CgroupVersion::V1(hierarchies) => hierarchies
                    .mount_points()
                    .iter()
                    .map(|mount| mount.join(parent))
                    .collect::<Vec<_>>(),
                CgroupVersion::V2(unified) => vec![unified.root.join(parent)],
            };
            for directory in directories {
                // Fails while another container is still below it: that is fine.
                let _ = fs_err::remove_dir(&directory);
            }
        }
    }
    Ok(())
}
