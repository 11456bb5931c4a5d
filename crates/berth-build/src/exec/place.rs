//! Puts resolved COPY/ADD sources at their destination in a step's root:
//! one tar stream (missing parents first, then the sources' entries, with
//! their owners and modes as the step wants them) extracted by the
//! engine's `cp` path, then ADD's archives extracted into the destination.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use berth_engine::copy::{extract_into_container, ContainerFs, ExtractOptions};

use super::copy::{entry_mode, CopySpec, Entry, Source};
use super::root_path::{bytes, resolve};
use crate::BuildError;

/// Docker's words for several sources and a destination that is not a
/// directory.
const NOT_A_DIRECTORY: &str =
    "When using COPY with more than one source file, the destination must be a directory and end with a /";

pub fn place(
    sources: &[Source],
    spec: &CopySpec,
    keeps_owners: bool,
    root: &Path,
    container: &str,
) -> Result<(), BuildError> {
    let resolved = resolve(root, &spec.destination, true).map_err(BuildError::Layer)?;
    let destination = resolved
        .strip_prefix(root)
        .expect("a resolved name stays in its root")
        .to_path_buf();
    let existing_dir = fs_err::metadata(&resolved).is_ok_and(|metadata| metadata.is_dir());
    let several = sources.len() > 1;
    if several && !(spec.destination_is_dir || existing_dir) {
        return Err(BuildError::Invalid(NOT_A_DIRECTORY.to_owned()));
    }
    let into_dir = spec.destination_is_dir || several || existing_dir || spec.parents;
    let owner = spec.chown.unwrap_or((0, 0));
    let now = chrono::Utc::now().timestamp().max(0).unsigned_abs();

    let mut plan = Plan::default();
    let anchor = if into_dir || sources.iter().any(is_dir_tree) {
        destination.clone()
    } else {
        destination
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    };
    // Missing parents, root's (or --chown's), 0755.
    let mut walked = PathBuf::new();
    for part in anchor.components() {
        walked.push(part);
        if fs_err::symlink_metadata(root.join(&walked)).is_err() {
            plan.items.push(Item::Directory {
                name: walked.clone(),
                mode: 0o755,
                owner,
                mtime: now,
            });
        }
    }
    for source in sources {
        match source {
            Source::Inline { name, content } => plan.items.push(Item::Inline {
                name: if into_dir {
                    destination.join(name)
                } else {
                    destination.clone()
                },
                content: content.clone(),
                mode: spec.chmod.unwrap_or(0o644),
                owner,
                mtime: now,
            }),
            Source::Tree {
                archive: true,
                entries,
                ..
            } => plan.archives.push(entries[0].host.clone()),
            Source::Tree {
                name,
                is_dir,
                entries,
                relative,
                ..
            } => {
                let top = if spec.parents {
                    // `--parents`: the source's own path below the
                    // destination, its missing directories made.
                    let top = destination.join(relative);
                    let mut walked = destination.clone();
                    for part in relative.parent().into_iter().flat_map(Path::components) {
                        walked.push(part);
                        let made = plan.items.iter().any(
                            |item| matches!(item, Item::Directory { name, .. } if *name == walked),
                        );
                        if !made && fs_err::symlink_metadata(root.join(&walked)).is_err() {
                            plan.items.push(Item::Directory {
                                name: walked.clone(),
                                mode: 0o755,
                                owner,
                                mtime: now,
                            });
                        }
                    }
                    top
                } else if *is_dir {
                    destination.clone()
                } else if into_dir {
                    destination.join(name)
                } else {
                    destination.clone()
                };
                for entry in entries {
                    // A copied directory's own entry is its destination,
                    // kept as it is when it exists.
                    if *is_dir && entry.relative.as_os_str().is_empty() && !spec.parents {
                        continue;
                    }
                    let owner = match spec.chown {
                        Some(owner) => owner,
                        None if keeps_owners => (entry.metadata.uid(), entry.metadata.gid()),
                        None => (0, 0),
                    };
                    plan.items.push(Item::Entry {
                        name: if entry.relative.as_os_str().is_empty() {
                            top.clone()
                        } else {
                            top.join(&entry.relative)
                        },
                        entry,
                        mode: entry_mode(&entry.metadata, spec.chmod),
                        owner,
                    });
                }
            }
        }
    }

    extract_items(root, container, &plan.items)?;
    let filesystem = ContainerFs::new(root, container);
    let options = ExtractOptions::default();
    for archive in &plan.archives {
        let stream = super::archive::open_archive(archive)?;
        let at = Path::new("/").join(&destination);
        extract_into_container(&filesystem, &at.to_string_lossy(), stream, &options).map_err(
            |error| {
                BuildError::Invalid(format!("failed to extract {}: {error}", archive.display()))
            },
        )?;
    }
    Ok(())
}

/// WORKDIR's directory: made (root's, 0755, with its missing parents)
/// unless it exists; true when something was made.
pub fn make_directory(root: &Path, container: &str, path: &str) -> Result<bool, BuildError> {
    let resolved = resolve(root, path, true).map_err(BuildError::Layer)?;
    if fs_err::symlink_metadata(&resolved).is_ok() {
        return Ok(false);
    }
    let relative = resolved
        .strip_prefix(root)
        .expect("a resolved name stays in its root")
        .to_path_buf();
    let now = chrono::Utc::now().timestamp().max(0).unsigned_abs();
    let mut items = Vec::new();
    let mut walked = PathBuf::new();
    for part in relative.components() {
        walked.push(part);
        if fs_err::symlink_metadata(root.join(&walked)).is_err() {
            items.push(Item::Directory {
                name: walked.clone(),
                mode: 0o755,
                owner: (0, 0),
                mtime: now,
            });
        }
    }
    extract_items(root, container, &items)?;
    Ok(true)
}

fn extract_items(root: &Path, container: &str, items: &[Item<'_>]) -> Result<(), BuildError> {
    let filesystem = ContainerFs::new(root, container);
    let (reader, writer) = std::io::pipe().map_err(BuildError::Pipe)?;
    std::thread::scope(|scope| {
        let writing = scope.spawn(|| write_tar(items, writer));
        let extracted =
            extract_into_container(&filesystem, "/", reader, &ExtractOptions::default());
        let written = writing.join().expect("the tar writer does not panic");
        extracted.map_err(|error| BuildError::Invalid(format!("failed to copy files: {error}")))?;
        written
    })
}

fn is_dir_tree(source: &Source) -> bool {
    matches!(source, Source::Tree { is_dir: true, .. })
}

#[derive(Default)]
struct Plan<'a> {
    items: Vec<Item<'a>>,
    archives: Vec<PathBuf>,
}

enum Item<'a> {
    Directory {
        name: PathBuf,
        mode: u32,
        owner: (u32, u32),
        mtime: u64,
    },
    Inline {
        name: PathBuf,
        content: Vec<u8>,
        mode: u32,
        owner: (u32, u32),
        mtime: u64,
    },
    Entry {
        name: PathBuf,
        entry: &'a Entry,
        mode: u32,
        owner: (u32, u32),
    },
}

fn header(
    kind: tar::EntryType,
    mode: u32,
    owner: (u32, u32),
    mtime: u64,
    size: u64,
) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_uid(owner.0.into());
    header.set_gid(owner.1.into());
    header.set_mtime(mtime);
    header.set_size(size);
    header
}

fn write_tar(items: &[Item<'_>], writer: impl Write) -> Result<(), BuildError> {
    let mut builder = tar::Builder::new(writer);
    builder.follow_symlinks(false);
    for item in items {
        match item {
            Item::Directory {
                name,
                mode,
                owner,
                mtime,
            } => {
                let mut header = header(tar::EntryType::Directory, *mode, *owner, *mtime, 0);
                builder
                    .append_data(&mut header, directory_name(name), std::io::empty())
                    .map_err(BuildError::Layer)?;
            }
            Item::Inline {
                name,
                content,
                mode,
                owner,
                mtime,
            } => {
                let mut header = header(
                    tar::EntryType::Regular,
                    *mode,
                    *owner,
                    *mtime,
                    content.len() as u64,
                );
                builder
                    .append_data(&mut header, name, &content[..])
                    .map_err(BuildError::Layer)?;
            }
            Item::Entry {
                name,
                entry,
                mode,
                owner,
            } => append_entry(&mut builder, name, entry, *mode, *owner)?,
        }
    }
    builder.into_inner().map_err(BuildError::Layer)?;
    Ok(())
}

fn append_entry(
    builder: &mut tar::Builder<impl Write>,
    name: &Path,
    entry: &Entry,
    mode: u32,
    owner: (u32, u32),
) -> Result<(), BuildError> {
    let metadata = &entry.metadata;
    let mtime = metadata.mtime().max(0).unsigned_abs();
    let kind = metadata.file_type();
    if kind.is_dir() {
        let mut header = header(tar::EntryType::Directory, mode, owner, mtime, 0);
        builder
            .append_data(&mut header, directory_name(name), std::io::empty())
            .map_err(BuildError::Layer)
    } else if kind.is_symlink() {
        let target = fs_err::read_link(&entry.host).map_err(BuildError::Layer)?;
        let mut header = header(tar::EntryType::Symlink, 0o777, owner, mtime, 0);
        builder
            .append_link(&mut header, name, target)
            .map_err(BuildError::Layer)
    } else if kind.is_file() {
        let file = fs_err::File::open(&entry.host).map_err(|source| BuildError::Context {
            path: entry.host.clone(),
            source,
        })?;
        let mut header = header(tar::EntryType::Regular, mode, owner, mtime, metadata.len());
        builder
            .append_data(&mut header, name, file)
            .map_err(BuildError::Layer)
    } else {
        // Sockets, fifos and devices of a context are not copied.
        tracing::debug!(path = %entry.host.display(), "skipped a special file");
        Ok(())
    }
}

/// A directory's tar name ends in `/`.
fn directory_name(name: &Path) -> PathBuf {
    let mut text = bytes(name);
    text.push(b'/');
    PathBuf::from(<std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(text))
}
