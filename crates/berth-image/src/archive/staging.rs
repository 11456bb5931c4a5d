//! Unpacks the outer archive into a private staging directory so that its
//! JSON files and layers can be read in any order (`docker save` may put
//! `manifest.json` last, and stdin cannot be re-read).

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use super::ArchiveError;

/// A staging directory, removed on drop.
pub(crate) struct StagedArchive {
    directory: PathBuf,
}

impl StagedArchive {
    /// Extracts regular files and directories of `input` under `directory`
    /// (which must not exist). Symlinks, used by old `docker save` for
    /// repeated layers, are resolved inside the archive and copied.
    pub(crate) fn extract(input: impl Read, directory: PathBuf) -> Result<Self, ArchiveError> {
        fs_err::create_dir(&directory).map_err(|source| ArchiveError::Write {
            path: directory.clone(),
            source,
        })?;
        let staged = Self { directory };
        let mut archive = tar::Archive::new(input);
        let mut links = Vec::new();
        for entry in archive.entries().map_err(ArchiveError::Read)? {
            let mut entry = entry.map_err(ArchiveError::Read)?;
            let raw_path = entry.path_bytes().into_owned();
            let name = String::from_utf8_lossy(&raw_path).into_owned();
            let relative = safe_relative(&name)?;
            if relative.as_os_str().is_empty() {
                continue;
            }
            let target = staged.directory.join(&relative);
            let kind = entry.header().entry_type();
            if kind.is_dir() {
                staged.create_dir(&target)?;
            } else if kind.is_file() || kind.is_contiguous() {
                if let Some(parent) = target.parent() {
                    staged.create_dir(parent)?;
                }
                let mut file =
                    fs_err::File::create(&target).map_err(|source| ArchiveError::Write {
                        path: target.clone(),
                        source,
                    })?;
                std::io::copy(&mut entry, &mut file).map_err(ArchiveError::Read)?;
            } else if kind.is_symlink() || kind.is_hard_link() {
                let link = entry
                    .link_name_bytes()
                    .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                    .unwrap_or_default();
                let base = if kind.is_symlink() {
                    relative.parent().map(Path::to_path_buf).unwrap_or_default()
                } else {
                    PathBuf::new()
                };
                links.push((relative, resolve_link(&base, &link)?));
            }
            // Other entry types carry nothing an image archive needs.
        }
        // Archives list a symlink before or after its target; copy at the end.
        for (link, source) in links {
            let from = staged.directory.join(&source);
            let to = staged.directory.join(&link);
            if let Some(parent) = to.parent() {
                staged.create_dir(parent)?;
            }
            fs_err::copy(&from, &to).map_err(|source| ArchiveError::Write { path: to, source })?;
        }
        Ok(staged)
    }

    fn create_dir(&self, path: &Path) -> Result<(), ArchiveError> {
        fs_err::create_dir_all(path).map_err(|source| ArchiveError::Write {
            path: path.to_owned(),
            source,
        })
    }

    /// The staged file for an archive-relative name, if it is there.
    pub(crate) fn file(&self, name: &str) -> Result<PathBuf, ArchiveError> {
        let path = self.directory.join(safe_relative(name)?);
        if path.is_file() {
            Ok(path)
        } else {
            Err(ArchiveError::Missing {
                file: name.to_owned(),
            })
        }
    }

    pub(crate) fn has(&self, name: &str) -> bool {
        self.directory.join(name).is_file()
    }

    pub(crate) fn read(&self, name: &str) -> Result<Vec<u8>, ArchiveError> {
        let path = self.file(name)?;
        fs_err::read(&path).map_err(ArchiveError::Read)
    }

    pub(crate) fn read_json<T: serde::de::DeserializeOwned>(
        &self,
        name: &str,
    ) -> Result<T, ArchiveError> {
        serde_json::from_slice(&self.read(name)?).map_err(|source| ArchiveError::BadJson {
            file: name.to_owned(),
            source,
        })
    }
}

impl Drop for StagedArchive {
    fn drop(&mut self) {
        if let Err(error) = fs_err::remove_dir_all(&self.directory) {
            tracing::warn!(path = %self.directory.display(), %error, "failed to remove archive staging");
        }
    }
}

/// An archive member name as a relative path without `..`; `/` and `./`
/// prefixes are tolerated (they mean the archive root) but nothing may climb.
fn safe_relative(name: &str) -> Result<PathBuf, ArchiveError> {
    let mut path = PathBuf::new();
    for component in Path::new(name).components() {
        match component {
            Component::Normal(part) => path.push(part),
            Component::CurDir | Component::RootDir => {}
            Component::ParentDir | Component::Prefix(_) => {
                return Err(ArchiveError::UnsafePath {
                    path: name.to_owned(),
                })
            }
        }
    }
    Ok(path)
}

/// Resolves a link target relative to `base`, refusing to leave the archive.
fn resolve_link(base: &Path, target: &str) -> Result<PathBuf, ArchiveError> {
    let mut path = if target.starts_with('/') {
        PathBuf::new()
    } else {
        base.to_path_buf()
    };
    for component in Path::new(target).components() {
        match component {
            Component::Normal(part) => path.push(part),
            Component::CurDir | Component::RootDir => {}
            Component::ParentDir => {
                if !path.pop() {
                    return Err(ArchiveError::UnsafePath {
                        path: target.to_owned(),
                    });
                }
            }
            Component::Prefix(_) => {
                return Err(ArchiveError::UnsafePath {
                    path: target.to_owned(),
                })
            }
        }
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_names() {
        assert_eq!(safe_relative("./a/b").unwrap(), PathBuf::from("a/b"));
        assert_eq!(safe_relative("/a").unwrap(), PathBuf::from("a"));
        assert!(safe_relative("a/../../b").is_err());
        assert_eq!(
            resolve_link(Path::new("x"), "../y/layer.tar").unwrap(),
            PathBuf::from("y/layer.tar")
        );
        assert!(resolve_link(Path::new("x"), "../../etc/passwd").is_err());
    }
}
