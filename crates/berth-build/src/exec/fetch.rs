//! `ADD https://…`: the file a URL serves, downloaded for the step as
//! BuildKit's HTTP source does it (frontend/dockerfile/docs/reference.md,
//! "Adding files from a URL"): named from the URL's path (`__unnamed__`
//! when the path has no last part), mode 0600, its mtime from
//! `Last-Modified` when the server sends one, never extracted, and its
//! SHA-256 checked against `--checksum=sha256:…` when given.
//!
//! A download is a file under `ROOT/build-downloads/`, named
//! `PID-RANDOM`, removed when the step is done; one a killed builder left
//! is removed by the next download (its PID is gone).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest as _, Sha256};

use super::copy::{Entry, Source};
use crate::BuildError;

const DOWNLOADS_DIRECTORY: &str = "build-downloads";

/// Whether a source word is a URL berth downloads (`http://`, `https://`,
/// and not a git repository).
pub fn is_http_url(source: &str) -> bool {
    (source.starts_with("http://") || source.starts_with("https://")) && !is_git_url(source)
}

/// A git repository as BuildKit recognises one: `git@…`, `git://…`,
/// `ssh://…`, or an HTTP(S) URL whose path ends in `.git` (a `#ref` after
/// it allowed).
pub fn is_git_url(source: &str) -> bool {
    if source.starts_with("git@") || source.starts_with("git://") || source.starts_with("ssh://") {
        return true;
    }
    if !(source.starts_with("http://") || source.starts_with("https://")) {
        return false;
    }
    let without_fragment = source.split('#').next().unwrap_or(source);
    let path = without_fragment
        .split('?')
        .next()
        .unwrap_or(without_fragment);
    path.trim_end_matches('/').ends_with(".git")
}

/// The file name BuildKit's Dockerfile frontend gives a URL's download:
/// the last part of its path, or `__unnamed__`.
pub fn url_file_name(url: &str) -> String {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let without_fragment = after_scheme.split('#').next().unwrap_or(after_scheme);
    let without_query = without_fragment
        .split('?')
        .next()
        .unwrap_or(without_fragment);
    let path = without_query
        .find('/')
        .map_or("", |at| &without_query[at..]);
    match path.rsplit('/').next() {
        Some(name) if !name.is_empty() && name != "." && name != ".." => name.to_owned(),
        _ => "__unnamed__".to_owned(),
    }
}

/// `--checksum`'s value: `sha256:` and 64 hex digits (the only algorithm
/// BuildKit takes for HTTP sources), lowercased.
pub fn parse_checksum(text: &str) -> Result<String, BuildError> {
    let invalid = || {
        BuildError::Invalid(format!(
            "invalid checksum digest format: {text:?} (expected sha256:<64 hex digits>)"
        ))
    };
    let (algorithm, hex) = text.split_once(':').ok_or_else(invalid)?;
    if algorithm != "sha256" {
        return Err(BuildError::Unsupported(format!(
            "unsupported digest algorithm {algorithm:?} in --checksum: sha256 is the only one"
        )));
    }
    if hex.len() != 64 || !hex.chars().all(|character| character.is_ascii_hexdigit()) {
        return Err(invalid());
    }
    Ok(format!("sha256:{}", hex.to_ascii_lowercase()))
}

/// A downloaded file, removed when dropped.
pub struct Download {
    pub url: String,
    /// `sha256:…` of its content.
    pub digest: String,
    path: PathBuf,
}

impl Download {
    /// The download as a COPY/ADD source: one file, never an archive.
    pub fn source(&self) -> Result<Source, BuildError> {
        let metadata = fs_err::symlink_metadata(&self.path).map_err(BuildError::Layer)?;
        let name = url_file_name(&self.url);
        Ok(Source::Tree {
            name: OsString::from(&name),
            is_dir: false,
            entries: vec![Entry {
                relative: PathBuf::new(),
                host: self.path.clone(),
                metadata,
            }],
            archive: false,
            relative: PathBuf::from(name),
        })
    }
}

impl Drop for Download {
    fn drop(&mut self) {
        if let Err(error) = fs_err::remove_file(&self.path) {
            tracing::warn!(%error, "failed to remove a download");
        }
    }
}

/// A directory under the downloads directory (a git checkout), named as
/// downloads are and removed with its contents when dropped; one a killed
/// builder left is removed by the next download.
pub struct DownloadDirectory {
    path: PathBuf,
}

impl DownloadDirectory {
    pub fn create(root: &Path) -> Result<Self, BuildError> {
        let directory = root.join(DOWNLOADS_DIRECTORY);
        fs_err::create_dir_all(&directory).map_err(BuildError::Layer)?;
        remove_stale(&directory);
        let path = directory.join(format!("{}-{}", std::process::id(), random_suffix()));
        fs_err::create_dir(&path).map_err(BuildError::Layer)?;
        Ok(Self { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for DownloadDirectory {
    fn drop(&mut self) {
        if let Err(error) = fs_err::remove_dir_all(&self.path) {
            tracing::warn!(%error, "failed to remove a checkout");
        }
    }
}

/// Downloads `url` under `root`'s downloads directory; with `expected`
/// (`--checksum`), a content of another digest fails the step.
pub fn download(root: &Path, url: &str, expected: Option<&str>) -> Result<Download, BuildError> {
    let directory = root.join(DOWNLOADS_DIRECTORY);
    fs_err::create_dir_all(&directory).map_err(BuildError::Layer)?;
    remove_stale(&directory);
    let failed =
        |reason: String| BuildError::Invalid(format!("failed to download {url}: {reason}"));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .user_agent(format!("berth/{}", env!("CARGO_PKG_VERSION")))
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_per_read(Some(Duration::from_secs(60)))
        .max_redirects(10)
        .build()
        .new_agent();
    let response = agent
        .get(url)
        .call()
        .map_err(|error| failed(error.to_string()))?;
    let status = response.status();
    if !status.is_success() {
        // BuildKit's words for a status other than 2xx.
        return Err(failed(format!(
            "invalid response status {}",
            status.as_u16()
        )));
    }
    let modified = response
        .headers()
        .get("last-modified")
        .and_then(|value| value.to_str().ok())
        .and_then(parse_http_date);

    let mut download = Download {
        url: url.to_owned(),
        digest: String::new(),
        path: directory.join(format!("{}-{}", std::process::id(), random_suffix())),
    };
    let mut file = fs_err::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&download.path)
        .map_err(BuildError::Layer)?;
    let mut body = response.into_body().into_reader();
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        let count = body
            .read(&mut buffer)
            .map_err(|error| failed(error.to_string()))?;
        if count == 0 {
            break;
        }
        hasher.update(&buffer[..count]);
        file.write_all(&buffer[..count])
            .map_err(BuildError::Layer)?;
    }
    let digest = format!("sha256:{}", hex::encode(hasher.finalize()));
    if let Some(expected) = expected {
        if digest != expected {
            return Err(failed(format!(
                "digest mismatch: the content is {digest}, --checksum expects {expected}"
            )));
        }
    }
    file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .map_err(BuildError::Layer)?;
    if let Some(modified) = modified {
        file.file()
            .set_modified(modified)
            .map_err(BuildError::Layer)?;
    }
    drop(file);
    download.digest = digest;
    Ok(download)
}

/// An HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110 5.6.7).
fn parse_http_date(text: &str) -> Option<SystemTime> {
    let parsed = chrono::DateTime::parse_from_rfc2822(text.trim()).ok()?;
    let seconds = u64::try_from(parsed.timestamp()).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(seconds))
}

fn random_suffix() -> String {
    let mut bytes = [0u8; 8];
    if fs_err::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .is_err()
    {
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        bytes = (nanos as u64).to_le_bytes();
    }
    hex::encode(bytes)
}

/// Removes the downloads of builders that are gone.
fn remove_stale(directory: &Path) {
    let Ok(entries) = fs_err::read_dir(directory) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let path = entry.path();
            let _ = if path.is_dir() {
                fs_err::remove_dir_all(path)
            } else {
                fs_err::remove_file(path)
            };
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_download_is_named_from_the_urls_path() {
        assert_eq!(url_file_name("https://example.com/a/b.tar.gz"), "b.tar.gz");
        assert_eq!(url_file_name("http://example.com/foo?x=1#y"), "foo");
        assert_eq!(url_file_name("http://example.com"), "__unnamed__");
        assert_eq!(url_file_name("http://example.com/"), "__unnamed__");
        assert_eq!(url_file_name("http://example.com/dir/"), "__unnamed__");
    }

    #[test]
    fn git_urls_are_told_from_files() {
        for git in [
            "git@github.com:moby/buildkit.git",
            "git://example.com/repo",
            "ssh://git@example.com/repo",
            "https://github.com/moby/buildkit.git",
            "https://github.com/moby/buildkit.git#v0.10.1:docs",
        ] {
            assert!(is_git_url(git), "{git}");
            assert!(!is_http_url(git), "{git}");
        }
        for file in ["https://example.com/a.tar.gz", "http://127.0.0.1:8080/x"] {
            assert!(is_http_url(file), "{file}");
        }
        assert!(!is_http_url("local/file"));
    }

    #[test]
    fn checksums_are_sha256_digests() {
        let hex = "AB".repeat(32);
        assert_eq!(
            parse_checksum(&format!("sha256:{hex}")).unwrap(),
            format!("sha256:{}", "ab".repeat(32))
        );
        assert!(parse_checksum("sha256:abc").is_err());
        assert!(parse_checksum("abc").is_err());
        assert!(parse_checksum(&format!("sha512:{hex}"))
            .unwrap_err()
            .to_string()
            .contains("sha256 is the only one"));
    }

    #[test]
    fn http_dates_parse() {
        let time = parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(
            time.duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_secs(),
            784_111_777
        );
        assert!(parse_http_date("yesterday").is_none());
    }
}
