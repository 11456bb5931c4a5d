//! `ADD <git repository>[#ref[:subdir]] DEST`: BuildKit's git source
//! (frontend/dockerfile/docs/reference.md, "Adding a git repository"). The
//! host's `git` does the work: `ls-remote` resolves the ref to a commit
//! (the step's cache key, so a rebuild asks the remote and clones nothing
//! when the commit is cached), then a shallow fetch of that commit into a
//! directory under `ROOT/build-downloads/`, its submodules, and the tree
//! (or the subdirectory) is what the ADD copies, without `.git` unless
//! `--keep-git-dir=true`.
//!
//! Only the remote transports BuildKit accepts reach git (`git@`, `git://`,
//! `ssh://`, `http(s)://…​.git`: [`super::fetch::is_git_url`]); git runs
//! with `protocol.file`/`ext` forbidden, no terminal prompt and no
//! credential helper of the host's user's configuration.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::BuildError;

/// A repository, a ref and a subdirectory, as an ADD source names them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitSource {
    pub url: String,
    /// Branch, tag or commit; None for the remote's HEAD.
    pub reference: Option<String>,
    /// The directory of the repository to take (`#ref:dir`).
    pub subdir: Option<String>,
}

impl GitSource {
    /// `URL#ref:subdir` (both parts optional).
    pub fn parse(source: &str) -> Result<Self, BuildError> {
        let (url, fragment) = match source.split_once('#') {
            Some((url, fragment)) => (url, Some(fragment)),
            None => (source, None),
        };
        let (reference, subdir) = match fragment {
            None => ("", None),
            Some(fragment) => match fragment.split_once(':') {
                Some((reference, subdir)) => (reference, Some(subdir)),
                None => (fragment, None),
            },
        };
        let subdir = subdir
            .map(|dir| dir.trim_matches('/'))
            .filter(|dir| !dir.is_empty() && *dir != ".");
        if let Some(dir) = subdir {
            if dir.split('/').any(|part| part == "..") {
                return Err(BuildError::Invalid(format!(
                    "invalid git subdirectory {dir:?} in {source}: it leaves the repository"
                )));
            }
        }
        let reference = Some(reference).filter(|reference| !reference.is_empty());
        if let Some(reference) = reference {
            if reference.starts_with('-') {
                return Err(BuildError::Invalid(format!(
                    "invalid git ref {reference:?} in {source}"
                )));
            }
        }
        Ok(Self {
            url: url.to_owned(),
            reference: reference.map(str::to_owned),
            subdir: subdir.map(str::to_owned),
        })
    }
}

/// `git` with what a build's clone must not inherit from the host's user.
fn git() -> Command {
    let mut command = Command::new("git");
    command
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_ASKPASS")
        .env_remove("SSH_ASKPASS")
        .args([
            "-c",
            "protocol.file.allow=never",
            "-c",
            "protocol.ext.allow=never",
            "-c",
            "credential.helper=",
        ])
        .stdin(Stdio::null());
    command
}

/// Runs `command`, its stdout on success; its stderr in the error.
fn output(mut command: Command, what: &str) -> Result<String, BuildError> {
    let output = command.output().map_err(|error| {
        if error.kind() == std::io::ErrorKind::NotFound {
            BuildError::Invalid(format!(
                "failed to {what}: ADD of a git repository needs git on the host (apt-get install git)"
            ))
        } else {
            BuildError::Invalid(format!("failed to {what}: {error}"))
        }
    })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(BuildError::Invalid(format!(
            "failed to {what}: {}",
            stderr.trim()
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn is_commit_id(reference: &str) -> bool {
    reference.len() == 40 && reference.chars().all(|c| c.is_ascii_hexdigit())
}

/// The commit `source`'s ref names on the remote: a full commit id as
/// given; else an annotated tag's commit, a tag, a branch, or HEAD.
pub fn resolve(source: &GitSource) -> Result<String, BuildError> {
    if let Some(reference) = source.reference.as_deref().filter(|r| is_commit_id(r)) {
        return Ok(reference.to_ascii_lowercase());
    }
    let mut command = git();
    command.args(["ls-remote", "--", &source.url]);
    let listed = output(command, &format!("resolve {}", source.url))?;
    pick_commit(&listed, source.reference.as_deref()).ok_or_else(|| {
        BuildError::Invalid(format!(
            "failed to resolve {}: no ref {:?} in the repository",
            source.url,
            source.reference.as_deref().unwrap_or("HEAD")
        ))
    })
}

/// The commit of `reference` in `git ls-remote`'s lines (`id\tref`).
fn pick_commit(listed: &str, reference: Option<&str>) -> Option<String> {
    let refs: Vec<(&str, &str)> = listed
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .collect();
    let find = |name: &str| {
        refs.iter()
            .find(|(_, listed)| *listed == name)
            .map(|(id, _)| (*id).to_owned())
    };
    let Some(reference) = reference else {
        return find("HEAD");
    };
    let wanted = reference.strip_prefix("refs/").map_or_else(
        || {
            vec![
                format!("refs/tags/{reference}^{{}}"),
                format!("refs/tags/{reference}"),
                format!("refs/heads/{reference}"),
            ]
        },
        |_| vec![format!("{reference}^{{}}"), reference.to_owned()],
    );
    wanted.iter().find_map(|name| find(name))
}

/// The commit `commit` of `source` checked out in `directory` (which must
/// not exist): submodules included, `.git` removed unless `keep_git_dir`.
/// Returns the directory the ADD copies (the subdirectory, if named).
pub fn checkout(
    source: &GitSource,
    commit: &str,
    directory: &Path,
    keep_git_dir: bool,
) -> Result<PathBuf, BuildError> {
    let what = format!("fetch {} at {commit}", source.url);
    let in_directory = |args: &[&str]| {
        let mut command = git();
        command.arg("-C").arg(directory).args(args);
        command
    };
    let mut init = git();
    init.args(["init", "-q"]).arg(directory);
    output(init, &what)?;
    output(
        in_directory(&["remote", "add", "origin", "--", &source.url]),
        &what,
    )?;
    // A name is fetched by its name (servers need not serve a commit by
    // id); a commit id by its id, or, where the server refuses that, with
    // the whole history.
    if source.reference.as_deref().is_some_and(is_commit_id) {
        let shallow = in_directory(&["fetch", "-q", "--depth", "1", "--no-tags", "origin", commit]);
        if output(shallow, &what).is_err() {
            output(in_directory(&["fetch", "-q", "--no-tags", "origin"]), &what)?;
        }
        output(in_directory(&["checkout", "-q", commit]), &what)?;
    } else {
        let name = source.reference.as_deref().unwrap_or("HEAD");
        output(
            in_directory(&["fetch", "-q", "--depth", "1", "--no-tags", "origin", name]),
            &what,
        )?;
        output(in_directory(&["checkout", "-q", "FETCH_HEAD"]), &what)?;
    }
    if directory.join(".gitmodules").exists() {
        output(
            in_directory(&[
                "submodule",
                "update",
                "-q",
                "--init",
                "--recursive",
                "--depth",
                "1",
            ]),
            &format!("fetch the submodules of {}", source.url),
        )?;
    }
    if !keep_git_dir {
        fs_err::remove_dir_all(directory.join(".git")).map_err(|error| {
            BuildError::Invalid(format!("failed to remove the clone's .git: {error}"))
        })?;
    }
    git_modes(directory).map_err(|error| {
        BuildError::Invalid(format!("failed to set the checkout's modes: {error}"))
    })?;
    let Some(subdir) = &source.subdir else {
        return Ok(directory.to_owned());
    };
    let path = directory.join(subdir);
    // The subdirectory must be a directory of the checkout itself, not a
    // symlink out of it.
    let real = fs_err::canonicalize(&path).map_err(|_| {
        BuildError::Invalid(format!(
            "failed to read {}: no directory {subdir:?} at {commit}",
            source.url
        ))
    })?;
    let top = fs_err::canonicalize(directory)
        .map_err(|error| BuildError::Invalid(format!("failed to read the checkout: {error}")))?;
    if !real.starts_with(&top) || !real.is_dir() {
        return Err(BuildError::Invalid(format!(
            "failed to read {}: {subdir:?} is not a directory of the repository",
            source.url
        )));
    }
    Ok(real)
}

/// The modes git records (0755 for an executable file, else 0644;
/// directories 0755), whatever the builder's umask made of the checkout.
fn git_modes(directory: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for entry in fs_err::read_dir(directory)? {
        let entry = entry?;
        let metadata = fs_err::symlink_metadata(entry.path())?;
        let mode = if metadata.is_dir() {
            git_modes(&entry.path())?;
            0o755
        } else if metadata.is_file() {
            if metadata.permissions().mode() & 0o100 != 0 {
                0o755
            } else {
                0o644
            }
        } else {
            continue;
        };
        fs_err::set_permissions(entry.path(), std::fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn sources_split_into_url_ref_and_subdir() {
        let parse = |text: &str| GitSource::parse(text).unwrap();
        assert_eq!(
            parse("https://h/r.git#v1:docs/"),
            GitSource {
                url: "https://h/r.git".to_owned(),
                reference: Some("v1".to_owned()),
                subdir: Some("docs".to_owned()),
            }
        );
        assert_eq!(parse("git://h/r").reference, None);
        assert_eq!(parse("git://h/r#:sub").reference, None);
        assert_eq!(parse("git://h/r#:sub").subdir.as_deref(), Some("sub"));
        assert_eq!(parse("git@h:r.git#main").reference.as_deref(), Some("main"));
        assert!(GitSource::parse("git://h/r#main:../x").is_err());
        assert!(GitSource::parse("git://h/r#--upload-pack=x").is_err());
    }

    #[test]
    fn refs_resolve_tags_before_branches_and_annotated_tags_to_commits() {
        let listed = "aaa\tHEAD\nbbb\trefs/heads/main\nccc\trefs/tags/v1\nddd\trefs/tags/v1^{}\n\
                      eee\trefs/heads/v1\nfff\trefs/tags/light\n";
        assert_eq!(pick_commit(listed, None).as_deref(), Some("aaa"));
        assert_eq!(pick_commit(listed, Some("main")).as_deref(), Some("bbb"));
        assert_eq!(pick_commit(listed, Some("v1")).as_deref(), Some("ddd"));
        assert_eq!(pick_commit(listed, Some("light")).as_deref(), Some("fff"));
        assert_eq!(
            pick_commit(listed, Some("refs/heads/v1")).as_deref(),
            Some("eee")
        );
        assert_eq!(pick_commit(listed, Some("missing")), None);
    }
}
