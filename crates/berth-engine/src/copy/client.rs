//! The client side of `docker cp` (docker/cli `cli/command/container/cp.go`, go-archive
//! `copy.go`): which name a copy gets where, decided from the source and destination
//! paths as written (trailing `/`, final `/.`) and what exists.
//!
//! Docker runs this in the CLI and moves a tar stream through the daemon; berth makes the
//! same decisions, then copies in-process from a tree walk straight into the destination
//! (`copy_file_range` for file data), with no tar in between.

use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::archive::{self, ExtractOptions};
use super::error::{CopyError, IrregularKind};
use super::extract::{Extractor, Owner};
use super::paths::{self, Rebase};
use super::stat::{self, file_mode, PathStat};
use super::sys::{self, RootDir};
use super::walk::{walk, WalkSpec};
use super::ContainerFs;

/// What a copy moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyReport {
    /// Total size of the regular files copied (the CLI's "Successfully copied …").
    pub size: u64,
}

/// go-archive's `CopyInfo`.
#[derive(Debug, Clone, Default)]
struct CopyInfo {
    path: Vec<u8>,
    exists: bool,
    is_dir: bool,
    rebase_name: Option<Vec<u8>>,
}

/// `docker cp CONTAINER:SRC DEST`. Files are owned by the calling user, whatever the
/// owner inside the container — with or without `-a`, which Docker ignores in this
/// direction (checked against Docker 20.10 with CLI 28.2), hence `_copy_uid_gid`.
pub fn copy_container_to_host(
    container: &ContainerFs<'_>,
    source: &str,
    destination: &Path,
    follow_link: bool,
    _copy_uid_gid: bool,
) -> Result<CopyReport, CopyError> {
    let destination = resolve_local_path(destination)?;
    validate_output_path(&destination)?;
    let root = container.open_root()?;

    let mut source_path = source.as_bytes().to_vec();
    let mut rebase_name = None;
    if follow_link {
        if let Some(followed) = archive::follow_source_link(&root, container, source) {
            source_path = followed.path;
            rebase_name = followed.rebase_name;
        }
    }
    let shown = sys::display(&source_path);
    let archived = archive::archive_source(&root, container, &source_path, &shown)?;

    let source_info = CopyInfo {
        is_dir: archived.stat.is_dir(),
        exists: true,
        rebase_name,
        path: source_path,
    };
    let mut renames = Vec::new();
    if let Some(name) = &source_info.rebase_name {
        let (_, base) = paths::split_dir_entry(&source_info.path);
        renames.push(Rebase::new(&base, name));
    }
    let destination_info = copy_info_destination_path(&destination)?;
    let (directory, rename) = prepare_archive_copy(&source_info, &destination_info)?;
    renames.extend(rename);

    let host = host_root()?;
    let mut extractor = Extractor::new(&host, directory, Owner::Creator, true);
    let spec = WalkSpec {
        path: &archived.lookup,
        follow: archived.follow,
        top: archived.top,
        renames: &renames,
        shown_as: &archived.lookup,
    };
    let size = walk(&root, &spec, &mut extractor)?;
    extractor.finish()?;
    Ok(CopyReport { size })
}

/// `docker cp CONTAINER:SRC -`: the archive Docker's daemon sends, as is.
pub fn copy_container_to_stream(
    container: &ContainerFs<'_>,
    source: &str,
    follow_link: bool,
    out: impl Write,
) -> Result<PathStat, CopyError> {
    archive::archive_from_container(container, source, follow_link, out)
}

/// `docker cp SRC CONTAINER:DEST`. Files keep their owner ids from the host, unless `-a`
/// and the container has a configured user (see [`ExtractOptions::copy_uid_gid`]).
pub fn copy_host_to_container(
    container: &ContainerFs<'_>,
    source: &Path,
    destination: &str,
    follow_link: bool,
    copy_uid_gid: bool,
) -> Result<CopyReport, CopyError> {
    let source = resolve_local_path(source)?;
    let root = container.open_root()?;
    let destination_info = container_destination_info(&root, container, destination)?;
    let source_info = copy_info_source_path(&source, follow_link)?;
    let (directory, rename) = prepare_archive_copy(&source_info, &destination_info)?;

    // TarResourceRebase: the source is its directory's entry `base` ("." for `dir/.`),
    // named `rebase_name` instead when the user's spelling asked for another name.
    let (source_directory, base) = paths::split_dir_entry(&source_info.path);
    let (walked, follow) = if base == b"." {
        (source_directory, true)
    } else {
        (paths::join(&source_directory, &base), false)
    };
    let mut top = source_info.rebase_name.clone().unwrap_or(base);
    if top == b"/" {
        top.clear();
    }

    let directory = String::from_utf8_lossy(&directory).into_owned();
    let extraction = archive::extraction_point(&root, container, &directory)?;
    let owner = archive::owner(&root, container, copy_uid_gid)?;
    let mut extractor =
        Extractor::new(&root, extraction, owner, true).with_journal(container.open_journal()?);
    let host = host_root()?;
    let renames: Vec<Rebase> = rename.into_iter().collect();
    let spec = WalkSpec {
        path: &walked,
        follow,
        top,
        renames: &renames,
        shown_as: &walked,
    };
    let size = walk(&host, &spec, &mut extractor)?;
    extractor.finish()?;
    Ok(CopyReport { size })
}

/// `docker cp - CONTAINER:DEST`: extracts a tar stream into DEST, which must be a
/// directory (a symlink to one is followed).
pub fn copy_stream_to_container(
    container: &ContainerFs<'_>,
    input: impl Read,
    destination: &str,
    copy_uid_gid: bool,
) -> Result<(), CopyError> {
    let root = container.open_root()?;
    let destination_info = container_destination_info(&root, container, destination)?;
    if !destination_info.is_dir {
        return Err(CopyError::DestinationMustBeDirectory {
            container: container.name.to_owned(),
            path: destination.to_owned(),
        });
    }
    drop(root);
    let options = ExtractOptions {
        copy_uid_gid,
        no_overwrite_dir_non_dir: true,
    };
    let path = String::from_utf8_lossy(&destination_info.path).into_owned();
    archive::extract_into_container(container, &path, input, &options)
}

/// What the destination in the container is, from its stat (`copyToContainer`): a
/// symlink is replaced by what it resolves to; a path that cannot be stat'ed is taken
/// not to exist (the extraction reports what is really wrong).
fn container_destination_info(
    root: &RootDir,
    container: &ContainerFs<'_>,
    destination: &str,
) -> Result<CopyInfo, CopyError> {
    let mut info = CopyInfo {
        path: destination.as_bytes().to_vec(),
        ..CopyInfo::default()
    };
    let Ok(mut found) = stat::stat_in(root, container, destination.as_bytes(), destination) else {
        return Ok(info);
    };
    if found.is_symlink() {
        let mut target = found.link_target.clone().into_bytes();
        if target.first() != Some(&b'/') {
            let (parent, _) = paths::split_dir_entry(destination.as_bytes());
            target = paths::join(&parent, &target);
        }
        let shown = sys::display(&target);
        info.path = target;
        match stat::stat_in(root, container, &info.path, &shown) {
            Ok(resolved) => found = resolved,
            Err(_) => return Ok(info),
        }
    }
    if let Some(kind) = irregular_kind(found.mode) {
        return Err(CopyError::DestinationNotFileOrDirectory {
            container: container.name.to_owned(),
            path: destination.to_owned(),
            kind,
        });
    }
    info.exists = true;
    info.is_dir = found.is_dir();
    Ok(info)
}

/// docker/cli `ValidateOutputPathFileMode`.
fn irregular_kind(mode: u32) -> Option<IrregularKind> {
    if mode & file_mode::DEVICE != 0 {
        Some(IrregularKind::Device)
    } else if mode & file_mode::IRREGULAR != 0 {
        Some(IrregularKind::Irregular)
    } else {
        None
    }
}

/// `PrepareArchiveCopy`: the directory to extract into, and how to rename the archive's
/// top entry so that the copy gets the name the user asked for.
fn prepare_archive_copy(
    source: &CopyInfo,
    destination: &CopyInfo,
) -> Result<(Vec<u8>, Option<Rebase>), CopyError> {
    let (destination_directory, destination_base) = paths::split_dir_entry(&destination.path);
    let (_, source_base) = paths::split_dir_entry(&source.path);
    let renamed = || {
        let old = source.rebase_name.as_deref().unwrap_or(&source_base);
        Some(Rebase::new(old, &destination_base))
    };
    if destination.exists && destination.is_dir {
        // Extract into the directory, names unchanged.
        Ok((destination.path.clone(), None))
    } else if destination.exists && source.is_dir {
        Err(CopyError::CannotCopyDirectory)
    } else if destination.exists || source.is_dir {
        // Replace the file, or create the directory, under the destination's name.
        Ok((destination_directory, renamed()))
    } else if paths::asserts_directory(&destination.path) {
        // A file cannot become a directory that does not exist.
        Err(CopyError::NoSuchDirectory)
    } else {
        Ok((destination_directory, renamed()))
    }
}

/// `CopyInfoDestinationPath` on the host: follows symlinks (a dangling one names the
/// file to create); a missing destination needs an existing parent directory.
fn copy_info_destination_path(path: &[u8]) -> Result<CopyInfo, CopyError> {
    const MAX_SYMLINKS: usize = 10;
    let original = path;
    let mut path = path.to_vec();
    let mut metadata = fs_err::symlink_metadata(sys::host_path(&path));
    let mut followed = 0;
    while let Ok(found) = &metadata {
        if !found.file_type().is_symlink() {
            break;
        }
        if followed >= MAX_SYMLINKS {
            return Err(CopyError::TooManySymlinks {
                path: sys::host_path(original),
            });
        }
        followed += 1;
        let target = fs_err::read_link(sys::host_path(&path))
            .map_err(host_error("readlink", &path))?
            .into_os_string()
            .into_encoded_bytes();
        path = if target.first() == Some(&b'/') {
            target
        } else {
            paths::join(&paths::split_dir_entry(&path).0, &target)
        };
        metadata = fs_err::symlink_metadata(sys::host_path(&path));
    }
    match metadata {
        Ok(found) => Ok(CopyInfo {
            path,
            exists: true,
            is_dir: found.is_dir(),
            rebase_name: None,
        }),
        Err(error) if sys::is_not_found(&error) => {
            let (parent, _) = paths::split_dir_entry(&path);
            let parent_metadata =
                fs_err::metadata(sys::host_path(&parent)).map_err(host_error("stat", &parent))?;
            if !parent_metadata.is_dir() {
                return Err(CopyError::NotADirectory);
            }
            Ok(CopyInfo {
                path,
                ..CopyInfo::default()
            })
        }
        Err(error) => Err(host_error("lstat", &path)(error)),
    }
}

/// `CopyInfoSourcePath` on the host.
fn copy_info_source_path(path: &[u8], follow_link: bool) -> Result<CopyInfo, CopyError> {
    let (resolved, rebase_name) = resolve_host_source_path(path, follow_link)?;
    let metadata = fs_err::symlink_metadata(sys::host_path(&resolved))
        .map_err(host_error("lstat", &resolved))?;
    Ok(CopyInfo {
        path: resolved,
        exists: true,
        is_dir: metadata.is_dir(),
        rebase_name,
    })
}

/// `ResolveHostSourcePath`: symlinks in the parent directories are resolved; the last
/// element only with `follow_link`.
fn resolve_host_source_path(
    path: &[u8],
    follow_link: bool,
) -> Result<(Vec<u8>, Option<Vec<u8>>), CopyError> {
    if follow_link {
        let resolved = eval_symlinks(path)?;
        return Ok(paths::rebase_name(path, &resolved));
    }
    let (directory, base) = paths::split(path);
    let mut resolved = eval_symlinks(directory)?;
    if resolved.last() != Some(&b'/') {
        resolved.push(b'/');
    }
    resolved.extend_from_slice(base);
    let rebase_name = (paths::has_trailing_separator(path)
        && paths::base(path) != paths::base(&resolved))
    .then(|| paths::base(path));
    Ok((resolved, rebase_name))
}

/// `filepath.EvalSymlinks` of an absolute host path. Go reports a non-directory in the
/// middle of the path as a bare "not a directory".
fn eval_symlinks(path: &[u8]) -> Result<Vec<u8>, CopyError> {
    match fs_err::canonicalize(sys::host_path(path)) {
        Ok(resolved) => Ok(resolved.into_os_string().into_encoded_bytes()),
        Err(error) if error.kind() == std::io::ErrorKind::NotADirectory => {
            Err(CopyError::NotADirectory)
        }
        Err(error) => Err(host_error("lstat", &paths::clean(path))(error)),
    }
}

/// docker/cli `ValidateOutputPath`.
fn validate_output_path(path: &[u8]) -> Result<(), CopyError> {
    let directory = paths::dir(&paths::clean(path));
    if !directory.is_empty() && directory != b"." {
        if let Err(error) = fs_err::metadata(sys::host_path(&directory)) {
            if sys::is_not_found(&error) {
                return Err(CopyError::OutputDirectoryMissing {
                    dir: sys::host_path(&directory),
                });
            }
        }
    }
    match fs_err::metadata(sys::host_path(path)) {
        Err(error) if sys::is_not_found(&error) => Ok(()),
        Err(error) => Err(host_error("stat", path)(error)),
        Ok(found) if found.is_dir() || found.is_file() => Ok(()),
        Ok(found) => {
            use std::os::unix::fs::FileTypeExt;
            let file_type = found.file_type();
            if file_type.is_block_device() || file_type.is_char_device() {
                return Err(CopyError::OutputNotFileOrDirectory {
                    path: sys::host_path(path),
                    kind: IrregularKind::Device,
                });
            }
            Ok(())
        }
    }
}

/// `resolveLocalPath`: absolute, cleaned, with the trailing `/` or `/.` kept.
fn resolve_local_path(path: &Path) -> Result<Vec<u8>, CopyError> {
    let current =
        std::env::current_dir().map_err(|source| CopyError::CurrentDirectory { source })?;
    Ok(local_path(
        path.as_os_str().as_bytes(),
        current.as_os_str().as_bytes(),
    ))
}

fn local_path(path: &[u8], current_dir: &[u8]) -> Vec<u8> {
    paths::preserve_trailing_dot_or_separator(&paths::absolute(path, current_dir), path)
}

fn host_root() -> Result<RootDir, CopyError> {
    RootDir::open(Path::new("/")).map_err(|source| CopyError::OpenRoot {
        root: "/".into(),
        source,
    })
}

fn host_error(operation: &'static str, path: &[u8]) -> impl FnOnce(io::Error) -> CopyError {
    let path = Path::new(OsStr::from_bytes(path)).to_owned();
    move |source| CopyError::HostPath {
        operation,
        path,
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_paths_keep_their_spelling() {
        let local = |path: &str| String::from_utf8(local_path(path.as_bytes(), b"/work")).unwrap();
        assert_eq!(local("out"), "/work/out");
        assert_eq!(local("out/"), "/work/out/");
        assert_eq!(local("dir/."), "/work/dir/.");
        assert_eq!(local("."), "/work/.");
        assert_eq!(local("/abs//x/../y"), "/abs/y");
    }
}
