//! The daemon side of `docker cp`: `GET` and `PUT /containers/{id}/archive` (moby
//! `daemon/archive_unix.go`).

use std::io::{Read, Write};

use super::error::CopyError;
use super::extract::{Extractor, Owner};
use super::paths;
use super::resolve::{self, Missing};
use super::stat::{self, PathStat};
use super::sys::{self, RootDir};
use super::tar_read::read_archive;
use super::tar_write::TarWriter;
use super::user;
use super::walk::{walk, WalkSpec};
use super::ContainerFs;

/// How `PUT /containers/{id}/archive` extracts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExtractOptions {
    /// `copyUIDGID` (`cp -a`): when the container has a configured user, files are
    /// owned by that user; otherwise — and always without `-a` — they keep the ids in
    /// the tar stream. (Checked against Docker 20.10: `docker cp` of a host file owned by
    /// 1234:5678 lands in the container owned by 1234:5678 with or without `-a`; with
    /// `-a` into a `--user nobody` container it is owned by 65534:65534.)
    pub copy_uid_gid: bool,
    /// `noOverwriteDirNonDir`: refuse to replace a directory with a non-directory or the
    /// reverse. The API defaults to false; `docker cp` always sends true.
    pub no_overwrite_dir_non_dir: bool,
}

/// Where a copy reads from, decided from the path and its stat as Docker's
/// `containerArchivePath` does.
pub(crate) struct ArchiveSource {
    pub stat: PathStat,
    /// The path to walk inside the root.
    pub lookup: Vec<u8>,
    pub follow: bool,
    /// The archive name of the source: its base name, `.` for `dir/.`, and empty for
    /// `/` (whose entries Docker names `/` and `/…`).
    pub top: Vec<u8>,
}

pub(crate) fn archive_source(
    root: &RootDir,
    container: &ContainerFs<'_>,
    path: &[u8],
    asked: &str,
) -> Result<ArchiveSource, CopyError> {
    let absolute = paths::preserve_trailing_dot_or_separator(&paths::join(b"/", path), path);
    let stat = stat::stat_in(root, container, &absolute, asked)?;
    let mut top = paths::base(&absolute);
    if top == b"/" {
        top.clear();
    }
    Ok(ArchiveSource {
        follow: stat.is_dir(),
        stat,
        lookup: absolute,
        top,
    })
}

/// `GET /containers/{id}/archive?path=…`, and `cp CONTAINER:PATH -`: writes a tar stream
/// of `path` to `out` and returns its stat (for `X-Docker-Container-Path-Stat`).
///
/// A directory is archived under its base name (`dir/…`), `dir/.` as its contents
/// (`./…`), a file or symlink as its base name. With `follow_link` (`cp -L`), a final
/// symlink is replaced by what it resolves to, which then names the archive — the
/// docker CLI does exactly this for `cp -L CONTAINER:LINK -`.
pub fn archive_from_container(
    container: &ContainerFs<'_>,
    path: &str,
    follow_link: bool,
    out: impl Write,
) -> Result<PathStat, CopyError> {
    let root = container.open_root()?;
    let mut source_path = path.as_bytes().to_vec();
    if follow_link {
        if let Some(followed) = follow_source_link(&root, container, path) {
            source_path = followed.path;
        }
    }
    let shown = sys::display(&source_path);
    let source = archive_source(&root, container, &source_path, &shown)?;
    let mut writer = TarWriter::new(out);
    let spec = WalkSpec {
        path: &source.lookup,
        follow: source.follow,
        top: source.top.clone(),
        renames: &[],
        shown_as: &source.lookup,
    };
    walk(&root, &spec, &mut writer)?;
    writer.finish()?;
    Ok(source.stat)
}

/// A source symlink followed for `cp -L`.
pub(crate) struct FollowedLink {
    /// What the link resolves to, with the trailing `/` or `/.` of the path as given.
    pub path: Vec<u8>,
    /// The link's own name, which the copy carries when it differs from the target's.
    pub rebase_name: Option<Vec<u8>>,
}

/// `cp -L`'s first step (docker/cli `copyFromContainer`). `None` when `path` is not a
/// symlink — or cannot be stat'ed, in which case the archive request reports the error.
pub(crate) fn follow_source_link(
    root: &RootDir,
    container: &ContainerFs<'_>,
    path: &str,
) -> Option<FollowedLink> {
    let stat = stat::stat_in(root, container, path.as_bytes(), path).ok()?;
    if !stat.is_symlink() {
        return None;
    }
    let mut target = stat.link_target.into_bytes();
    if target.first() != Some(&b'/') {
        let (parent, _) = paths::split_dir_entry(path.as_bytes());
        target = paths::join(&parent, &target);
    }
    let (path, rebase_name) = paths::rebase_name(path.as_bytes(), &target);
    Some(FollowedLink { path, rebase_name })
}

/// `PUT /containers/{id}/archive?path=…`, and `cp - CONTAINER:DIR`: extracts the tar
/// stream `input` into the directory `path` (symlinks in it followed inside the
/// container), which must exist.
pub fn extract_into_container(
    container: &ContainerFs<'_>,
    path: &str,
    input: impl Read,
    options: &ExtractOptions,
) -> Result<(), CopyError> {
    let root = container.open_root()?;
    let destination = extraction_point(&root, container, path)?;
    let owner = owner(&root, container, options.copy_uid_gid)?;
    let mut extractor = Extractor::new(&root, destination, owner, options.no_overwrite_dir_non_dir)
        .with_journal(container.open_journal()?);
    read_archive(input, &mut extractor)?;
    extractor.finish()
}

/// Resolves the extraction directory as Docker does (`EvalSymlinks` inside the
/// container, the final symlink included): it must exist and be a directory.
pub(crate) fn extraction_point(
    root: &RootDir,
    container: &ContainerFs<'_>,
    path: &str,
) -> Result<Vec<u8>, CopyError> {
    let joined = paths::join(b"/", path.as_bytes());
    let failed = |source: std::io::Error| {
        if sys::is_not_found(&source) {
            CopyError::NotFound {
                path: path.to_owned(),
                container: container.name.to_owned(),
            }
        } else {
            CopyError::StatInContainer {
                path: path.to_owned(),
                source,
            }
        }
    };
    let resolved = resolve::resolve(root, &joined, Missing::Fail).map_err(failed)?;
    let checked = paths::preserve_trailing_dot_or_separator(&resolved, path.as_bytes());
    let stat = stat::lstat(root, &checked).map_err(failed)?;
    if sys::file_type(&stat) != nix::sys::stat::SFlag::S_IFDIR {
        return Err(CopyError::ExtractionPointNotDirectory {
            path: path.to_owned(),
        });
    }
    Ok(resolved)
}

pub(crate) fn owner(
    root: &RootDir,
    container: &ContainerFs<'_>,
    copy_uid_gid: bool,
) -> Result<Owner, CopyError> {
    match container.user {
        Some(configured) if copy_uid_gid && !configured.is_empty() => {
            let (uid, gid) = user::lookup(root, configured)?;
            Ok(Owner::Fixed { uid, gid })
        }
        _ => Ok(Owner::FromEntries),
    }
}
