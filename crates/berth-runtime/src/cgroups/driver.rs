//! Where a container's cgroup lives: Docker's "cgroupfs" driver layout, `<parent>/<id>` below
//! the root of every hierarchy, with `berth` as the default parent (Docker uses `docker`).

use std::path::{Component, Path, PathBuf};

use super::CgroupError;

/// The parent below which container cgroups are made unless `--cgroup-parent` says otherwise.
pub const DEFAULT_PARENT: &str = "berth";

/// The cgroupfs driver's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupDriver {
    parent: PathBuf,
}

impl Default for CgroupDriver {
    fn default() -> Self {
        Self {
            parent: PathBuf::from(DEFAULT_PARENT),
        }
    }
}

impl CgroupDriver {
    /// A driver with another default parent (the engine's configuration).
    pub fn with_parent(parent: &str) -> Result<Self, CgroupError> {
        Ok(Self {
            parent: validate_parent(parent)?,
        })
    }

    /// The cgroup path of a container, relative to each hierarchy's root:
    /// `<cgroup_parent or default parent>/<id>`.
    ///
    /// `cgroup_parent` is docker's `--cgroup-parent`; as with docker's cgroupfs driver, a
    /// leading `/` is allowed and means the same as none (always below the hierarchy root).
    pub fn container_path(
        &self,
        cgroup_parent: Option<&str>,
        container_id: &str,
    ) -> Result<PathBuf, CgroupError> {
        let parent = match cgroup_parent {
            Some(parent) => validate_parent(parent)?,
            None => self.parent.clone(),
        };
        let id = validate_parent(container_id)?;
        if id.components().count() != 1 {
            return Err(CgroupError::InvalidParent {
                parent: container_id.to_owned(),
                reason: "a container id must be a single path component",
            });
        }
        Ok(parent.join(id))
    }
}

/// A parent must stay below the hierarchy root: no `..`, no empty result.
fn validate_parent(parent: &str) -> Result<PathBuf, CgroupError> {
    let invalid = |reason| CgroupError::InvalidParent {
        parent: parent.to_owned(),
        reason,
    };
    let mut path = PathBuf::new();
    for component in Path::new(parent).components() {
        match component {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(part) => path.push(part),
            Component::ParentDir => return Err(invalid("it must not contain \"..\"")),
            Component::Prefix(_) => return Err(invalid("it is not a unix path")),
        }
    }
    if path.as_os_str().is_empty() {
        return Err(invalid("it must name a cgroup below the root"));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_parent_is_berth() {
        let driver = CgroupDriver::default();
        assert_eq!(
            driver.container_path(None, "abc123").unwrap(),
            Path::new("berth/abc123")
        );
    }

    #[test]
    fn cgroup_parent_overrides_and_may_be_absolute() {
        let driver = CgroupDriver::default();
        assert_eq!(
            driver.container_path(Some("/my/parent"), "abc").unwrap(),
            Path::new("my/parent/abc")
        );
        let custom = CgroupDriver::with_parent("engine").unwrap();
        assert_eq!(
            custom.container_path(None, "abc").unwrap(),
            Path::new("engine/abc")
        );
    }

    #[test]
    fn escaping_paths_are_refused() {
        let driver = CgroupDriver::default();
        assert!(driver.container_path(Some("../up"), "abc").is_err());
        assert!(driver.container_path(Some("/"), "abc").is_err());
        assert!(driver.container_path(None, "a/b").is_err());
        assert!(driver.container_path(None, "..").is_err());
        assert!(CgroupDriver::with_parent("").is_err());
    }
}
