//! COPY and ADD: what the sources are (in the context, where
//! `.dockerignore` applies, or in another stage's or image's root), their
//! content's checksum for the cache, and the tar stream that puts them at
//! the destination in the step's container (extracted by the engine's
//! `cp` path, inside that root).
//!
//! The rules are BuildKit's: a directory source copies its contents; a
//! file goes into the destination when it names a directory (a trailing
//! `/`, several sources, a wildcard, or an existing directory), else it
//! becomes the destination; a symlink named as a source is followed (in
//! its root), one inside a copied directory is copied as a link; missing
//! parents are created; context files belong to root unless `--chown`,
//! files of another stage keep their owners.

use std::ffi::OsString;
use std::fs::Metadata;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use super::cache::CacheKey;
use super::root_path::{self, clean, resolve};
use crate::ignore::IgnoreMatcher;
use crate::BuildError;

/// Where the sources are read.
pub enum SourceRoot<'a> {
    Context {
        directory: &'a Path,
        ignore: &'a IgnoreMatcher,
    },
    /// Another stage's or an image's root (mounted on the host).
    Image { root: &'a Path },
}

impl SourceRoot<'_> {
    fn root(&self) -> &Path {
        match self {
            SourceRoot::Context { directory, .. } => directory,
            SourceRoot::Image { root } => root,
        }
    }

    fn excluded(&self, relative: &Path) -> bool {
        match self {
            SourceRoot::Context { ignore, .. } => ignore.is_excluded(&relative.to_string_lossy()),
            SourceRoot::Image { .. } => false,
        }
    }

    fn may_include_inside(&self, relative: &Path) -> bool {
        match self {
            SourceRoot::Context { ignore, .. } => {
                ignore.may_include_inside(&relative.to_string_lossy())
            }
            SourceRoot::Image { .. } => true,
        }
    }
}

/// One file, directory or link of a source, named relative to the
/// source's top (empty: the top itself).
pub struct Entry {
    pub relative: PathBuf,
    pub host: PathBuf,
    pub metadata: Metadata,
}

/// One resolved source.
pub enum Source {
    /// A file, link or directory tree.
    Tree {
        /// The source's base name (what a file is called in a directory).
        name: OsString,
        is_dir: bool,
        entries: Vec<Entry>,
        /// ADD of a local archive: extracted, not copied.
        archive: bool,
        /// Where it is in its root (`COPY --parents` keeps it).
        relative: PathBuf,
    },
    /// A heredoc (`COPY <<EOF /file`).
    Inline { name: String, content: Vec<u8> },
}

/// A COPY or ADD as it resolved.
#[derive(Clone, Debug)]
pub struct CopySpec {
    pub sources: Vec<String>,
    /// Absolute (WORKDIR applied).
    pub destination: String,
    /// True when the destination was written as a directory (`/` or `/.`
    /// at its end).
    pub destination_is_dir: bool,
    pub chown: Option<(u32, u32)>,
    pub chmod: Option<u32>,
    /// ADD: local archives are extracted.
    pub extract_archives: bool,
    /// `--parents`: each source keeps its path below the destination.
    pub parents: bool,
    pub inline: Vec<(String, Vec<u8>)>,
    /// `--exclude` patterns (`.dockerignore`'s syntax), on the paths in
    /// the source root.
    pub exclude: Option<std::sync::Arc<IgnoreMatcher>>,
}

impl CopySpec {
    /// This spec with the owner `--chown` resolved to in the destination.
    pub fn clone_for(&self, chown: Option<(u32, u32)>) -> Self {
        Self {
            chown,
            ..self.clone()
        }
    }
}

/// Whether a source word holds a wildcard.
pub fn has_wildcard(source: &str) -> bool {
    source.contains(['*', '?', '['])
}

/// Resolves every source of `spec` in `root`.
pub fn collect_sources(root: &SourceRoot<'_>, spec: &CopySpec) -> Result<Vec<Source>, BuildError> {
    let mut sources = Vec::new();
    for pattern in &spec.sources {
        if let Some((_, content)) = spec.inline.iter().find(|(name, _)| {
            pattern
                .strip_prefix("<<")
                .is_some_and(|word| word.trim_start_matches('-').trim_matches(['"', '\'']) == name)
        }) {
            let name = pattern
                .trim_start_matches('<')
                .trim_start_matches('-')
                .trim_matches(['"', '\'']);
            sources.push(Source::Inline {
                name: name.to_owned(),
                content: content.clone(),
            });
            continue;
        }
        let exclude = spec.exclude.as_deref();
        let matches = expand_pattern(root, pattern, exclude)?;
        if matches.is_empty() {
            if has_wildcard(pattern) {
                continue;
            }
            return Err(not_found(pattern));
        }
        for relative in matches {
            sources.push(tree(root, &relative, spec.extract_archives, exclude)?);
        }
    }
    if sources.is_empty() {
        return Err(BuildError::Invalid(
            "no source files were specified".to_owned(),
        ));
    }
    Ok(sources)
}

fn not_found(pattern: &str) -> BuildError {
    let shown: PathBuf = std::iter::once(OsString::from("/"))
        .chain(clean(pattern))
        .collect();
    BuildError::Invalid(format!("{:?}: not found", shown.display().to_string()))
}

/// The paths (relative to the root) a source word names: itself, or what
/// its wildcards match, in name order; excluded ones left out.
fn expand_pattern(
    root: &SourceRoot<'_>,
    pattern: &str,
    exclude: Option<&IgnoreMatcher>,
) -> Result<Vec<PathBuf>, BuildError> {
    let mut found = vec![PathBuf::new()];
    for part in clean(pattern) {
        let text = part.to_string_lossy().into_owned();
        let mut next = Vec::new();
        for parent in &found {
            if !has_wildcard(&text) {
                next.push(parent.join(&part));
                continue;
            }
            let directory = resolve(root.root(), &parent.to_string_lossy(), true)
                .map_err(|source| context_error(root.root(), parent, source))?;
            let Ok(listing) = fs_err::read_dir(&directory) else {
                continue;
            };
            let mut names: Vec<OsString> = listing
                .filter_map(Result::ok)
                .map(|entry| entry.file_name())
                .filter(|name| glob_match(&text, &name.to_string_lossy()))
                .collect();
            names.sort();
            next.extend(names.into_iter().map(|name| parent.join(name)));
        }
        found = next;
    }
    Ok(found
        .into_iter()
        .filter(|relative| {
            let host = resolve(root.root(), &relative.to_string_lossy(), true);
            host.is_ok_and(|host| fs_err::symlink_metadata(host).is_ok())
                && !root.excluded(relative)
                && !excluded_by(exclude, relative)
        })
        .collect())
}

fn context_error(root: &Path, relative: &Path, source: std::io::Error) -> BuildError {
    BuildError::Context {
        path: root.join(relative),
        source,
    }
}

/// The source at `relative` (followed if a link) and, for a directory,
/// everything under it that is not excluded.
fn excluded_by(exclude: Option<&IgnoreMatcher>, relative: &Path) -> bool {
    exclude.is_some_and(|exclude| exclude.is_excluded(&relative.to_string_lossy()))
}

fn tree(
    root: &SourceRoot<'_>,
    relative: &Path,
    extract: bool,
    exclude: Option<&IgnoreMatcher>,
) -> Result<Source, BuildError> {
    let host = resolve(root.root(), &relative.to_string_lossy(), true)
        .map_err(|source| context_error(root.root(), relative, source))?;
    let metadata = fs_err::symlink_metadata(&host)
        .map_err(|source| context_error(root.root(), relative, source))?;
    let name = relative
        .file_name()
        .map(ToOwned::to_owned)
        .unwrap_or_else(|| OsString::from("/"));
    let is_dir = metadata.is_dir();
    let archive = extract && metadata.is_file() && super::archive::is_archive(&host);
    let mut entries = vec![Entry {
        relative: PathBuf::new(),
        host: host.clone(),
        metadata,
    }];
    if is_dir {
        walk(root, relative, &host, Path::new(""), exclude, &mut entries)?;
    }
    Ok(Source::Tree {
        name,
        is_dir,
        entries,
        archive,
        relative: relative.to_path_buf(),
    })
}

/// Adds what is under `host` (the source's `under`) to `entries`, in name
/// order, parents before children.
fn walk(
    root: &SourceRoot<'_>,
    top: &Path,
    host: &Path,
    under: &Path,
    exclude: Option<&IgnoreMatcher>,
    entries: &mut Vec<Entry>,
) -> Result<(), BuildError> {
    let directory = host.join(under);
    let listing =
        fs_err::read_dir(&directory).map_err(|source| context_error(root.root(), top, source))?;
    let mut names: Vec<OsString> = listing
        .filter_map(Result::ok)
        .map(|entry| entry.file_name())
        .collect();
    names.sort();
    for name in names {
        let relative = under.join(&name);
        let path = directory.join(&name);
        let metadata = fs_err::symlink_metadata(&path)
            .map_err(|source| context_error(root.root(), &top.join(&relative), source))?;
        let in_root = top.join(&relative);
        if excluded_by(exclude, &in_root) {
            continue;
        }
        if root.excluded(&in_root) {
            // An exception may bring back something inside it.
            if metadata.is_dir() && root.may_include_inside(&in_root) {
                let before = entries.len();
                walk(root, top, host, &relative, exclude, entries)?;
                if entries.len() > before {
                    entries.insert(
                        before,
                        Entry {
                            relative,
                            host: path,
                            metadata,
                        },
                    );
                }
            }
            continue;
        }
        let is_dir = metadata.is_dir();
        entries.push(Entry {
            relative: relative.clone(),
            host: path,
            metadata,
        });
        if is_dir {
            walk(root, top, host, &relative, exclude, entries)?;
        }
    }
    Ok(())
}

/// Adds the sources' names, metadata and content to `key` (mtimes left
/// out, as BuildKit's content checksums leave them).
pub fn add_to_key(
    sources: &[Source],
    keeps_owners: bool,
    key: &mut CacheKey,
) -> Result<(), BuildError> {
    for source in sources {
        match source {
            Source::Inline { name, content } => {
                key.add(b"inline").add(name.as_bytes()).add(content);
            }
            Source::Tree {
                name,
                is_dir,
                entries,
                archive,
                ..
            } => {
                key.add(b"tree")
                    .add(name.as_bytes())
                    .add(&[u8::from(*is_dir), u8::from(*archive)]);
                for entry in entries {
                    key.add(&root_path::bytes(&entry.relative));
                    let metadata = &entry.metadata;
                    key.add(&metadata.mode().to_le_bytes());
                    if keeps_owners {
                        key.add(&metadata.uid().to_le_bytes())
                            .add(&metadata.gid().to_le_bytes());
                    }
                    if metadata.file_type().is_symlink() {
                        let target = fs_err::read_link(&entry.host).map_err(BuildError::Layer)?;
                        key.add(target.as_os_str().as_bytes());
                    } else if metadata.is_file() {
                        key.add(&file_digest(&entry.host)?);
                    }
                }
            }
        }
    }
    Ok(())
}

fn file_digest(path: &Path) -> Result<[u8; 32], BuildError> {
    let mut file = fs_err::File::open(path).map_err(|source| BuildError::Context {
        path: path.to_owned(),
        source,
    })?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        let count = file
            .read(&mut buffer)
            .map_err(|source| BuildError::Context {
                path: path.to_owned(),
                source,
            })?;
        if count == 0 {
            break;
        }
        hasher.update(&buffer[..count]);
    }
    Ok(hasher.finalize().into())
}

/// `*`, `?`, `[…]` (with `!`/`^` and ranges) and `\` escapes on one name,
/// as Go's `filepath.Match`.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let name: Vec<char> = name.chars().collect();
    glob_from(&pattern, &name)
}

fn glob_from(pattern: &[char], name: &[char]) -> bool {
    match pattern.first() {
        None => name.is_empty(),
        Some('*') => (0..=name.len()).any(|skip| glob_from(&pattern[1..], &name[skip..])),
        Some('?') => !name.is_empty() && glob_from(&pattern[1..], &name[1..]),
        Some('[') => {
            let Some(first) = name.first() else {
                return false;
            };
            match class_match(&pattern[1..], *first) {
                Some((matched, rest)) => matched && glob_from(rest, &name[1..]),
                None => false,
            }
        }
        Some('\\') if pattern.len() > 1 => {
            name.first() == Some(&pattern[1]) && glob_from(&pattern[2..], &name[1..])
        }
        Some(literal) => name.first() == Some(literal) && glob_from(&pattern[1..], &name[1..]),
    }
}

/// Matches `character` against a class whose `[` is behind; returns the
/// result and the pattern after the `]` (None for a malformed class).
fn class_match(pattern: &[char], character: char) -> Option<(bool, &[char])> {
    let (negated, mut rest) = match pattern.first() {
        Some('!' | '^') => (true, &pattern[1..]),
        _ => (false, pattern),
    };
    let mut matched = false;
    let mut first = true;
    loop {
        let current = *rest.first()?;
        if current == ']' && !first {
            return Some((matched != negated, &rest[1..]));
        }
        first = false;
        let low = if current == '\\' {
            rest = &rest[1..];
            *rest.first()?
        } else {
            current
        };
        rest = &rest[1..];
        let high = if rest.first() == Some(&'-') && rest.get(1).is_some_and(|next| *next != ']') {
            let high = rest[1];
            rest = &rest[2..];
            high
        } else {
            low
        };
        if (low..=high).contains(&character) {
            matched = true;
        }
    }
}

/// Parses `--chmod` (octal).
pub fn parse_chmod(text: &str) -> Result<u32, BuildError> {
    u32::from_str_radix(text, 8)
        .ok()
        .filter(|mode| *mode <= 0o7777)
        .ok_or_else(|| BuildError::Invalid(format!("invalid chmod parameter: {text}")))
}

/// The permission and type bits a tar header carries.
pub fn entry_mode(metadata: &Metadata, chmod: Option<u32>) -> u32 {
    chmod.unwrap_or(metadata.permissions().mode() & 0o7777)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn globs_match_as_go_filepath_match() {
        assert!(glob_match("*.txt", "a.txt"));
        assert!(!glob_match("*.txt", "a.txt.bak"));
        assert!(glob_match("a?c", "abc"));
        assert!(glob_match("[a-c]x", "bx"));
        assert!(!glob_match("[!a-c]x", "bx"));
        assert!(glob_match("[^a-c]x", "dx"));
        assert!(glob_match("\\*", "*"));
        assert!(!glob_match("\\*", "a"));
        assert!(!glob_match("[a", "a"));
        assert!(glob_match("*", ""));
    }

    #[test]
    fn chmod_is_octal_and_bounded() {
        assert_eq!(parse_chmod("755").unwrap(), 0o755);
        assert_eq!(parse_chmod("4755").unwrap(), 0o4755);
        for bad in ["u+x", "99", "17777"] {
            assert_eq!(
                parse_chmod(bad).unwrap_err().to_string(),
                format!("invalid chmod parameter: {bad}")
            );
        }
    }

    #[test]
    fn a_missing_source_is_named_from_the_root() {
        assert_eq!(not_found("./a/../b").to_string(), "\"/b\": not found");
    }
}
