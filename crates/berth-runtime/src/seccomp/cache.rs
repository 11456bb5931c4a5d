//! Compile once per (profile, capabilities, host), then reuse the filter from disk.
//!
//! The cache is only a speed-up: a file that cannot be read or parsed is replaced, and a
//! failure to write one is logged and otherwise ignored.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use tracing::{debug, warn};

use super::arch::Host;
use super::filter::Filter;
use super::profile::{Profile, DEFAULT_PROFILE_JSON};
use super::resolve::normalize_cap;
use super::{compile_for, SeccompError};

/// Bump when the generated code changes for the same inputs, so old files are not used.
const COMPILER_VERSION: u32 = 1;

/// What a filter is compiled from.
#[derive(Clone, Copy, Debug)]
pub enum ProfileSource<'a> {
    /// berth's default profile: known by its embedded text, and parsed only
    /// when no cached filter exists (the parse and the key of a parsed
    /// profile cost ≈ 0.4 ms, on every container start).
    Default,
    /// A profile given by the user (`--security-opt seccomp=FILE`).
    Parsed(&'a Profile),
}

impl ProfileSource<'_> {
    /// The bytes that identify the profile in the cache key.
    fn identity(&self) -> Result<Vec<u8>, SeccompError> {
        match self {
            ProfileSource::Default => {
                Ok([b"default:".as_slice(), DEFAULT_PROFILE_JSON.as_bytes()].concat())
            }
            // Serialized from its typed form, so field order and whitespace of
            // the source do not matter.
            ProfileSource::Parsed(profile) => serde_json::to_vec(profile)
                .map_err(|source| SeccompError::SerializeProfile { source }),
        }
    }

    fn profile(&self) -> Profile {
        match self {
            ProfileSource::Default => Profile::docker_default(),
            ProfileSource::Parsed(profile) => (*profile).clone(),
        }
    }
}

/// [`super::compile`] with an on-disk cache under `cache_dir`: one `<sha256>.bpf` file per
/// key (see [`cache_key`]), read instead of compiling when present and intact.
///
/// Whoever can write `cache_dir` can replace a container's filter (the checksum only
/// catches damage), so it must be writable by root only, like the rest of berth's root.
pub fn compile_cached(
    source: ProfileSource<'_>,
    capabilities: &[String],
    cache_dir: &Path,
) -> Result<Filter, SeccompError> {
    compile_cached_for(source, capabilities, &Host::current()?, cache_dir)
}

/// [`compile_cached`] for an explicit host.
pub fn compile_cached_for(
    source: ProfileSource<'_>,
    capabilities: &[String],
    host: &Host,
    cache_dir: &Path,
) -> Result<Filter, SeccompError> {
    let path = cache_dir.join(format!("{}.bpf", cache_key(source, capabilities, host)?));
    match fs_err::read(&path) {
        Ok(bytes) => match Filter::from_bytes(&bytes) {
            Ok(filter) => {
                debug!(path = %path.display(), "seccomp filter from cache");
                return Ok(filter);
            }
            Err(error) => {
                warn!(path = %path.display(), %error, "replacing damaged seccomp cache file")
            }
        },
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => warn!(%error, "failed to read seccomp cache file; compiling"),
    }
    let filter = compile_for(&source.profile(), capabilities, host)?;
    if let Err(error) = store(cache_dir, &path, &filter) {
        warn!(%error, "failed to write seccomp cache file");
    }
    Ok(filter)
}

/// sha256 over everything the filter depends on: the profile (the default's embedded
/// text, or a parsed profile serialized from its typed form, so field order and whitespace
/// of the source do not matter), the sorted capabilities, the host's architecture and
/// kernel "version.major" (Docker's `minKernel` rules depend on it), berth's version and
/// the compiler version.
pub fn cache_key(
    source: ProfileSource<'_>,
    capabilities: &[String],
    host: &Host,
) -> Result<String, SeccompError> {
    let profile_identity = source.identity()?;
    let mut capabilities: Vec<String> = capabilities.iter().map(|cap| normalize_cap(cap)).collect();
    capabilities.sort();
    capabilities.dedup();

    let mut hasher = Sha256::new();
    let mut field = |bytes: &[u8]| {
        // Length-prefixed, so no two different inputs hash the same concatenation.
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    field(b"berth-seccomp");
    field(env!("CARGO_PKG_VERSION").as_bytes());
    field(&COMPILER_VERSION.to_le_bytes());
    field(&profile_identity);
    field(capabilities.join(",").as_bytes());
    field(host.arch.scmp_name().as_bytes());
    field(host.kernel.to_string().as_bytes());
    Ok(hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect())
}

/// Writes to a unique temporary name in the same directory, then renames, so readers
/// never see a partial file and concurrent writers of the same key do not clash.
fn store(cache_dir: &Path, path: &Path, filter: &Filter) -> io::Result<()> {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    fs_err::create_dir_all(cache_dir)?;
    let file_name = path
        .file_name()
        .map(|name| name.to_string_lossy())
        .unwrap_or_default();
    let temporary: PathBuf = cache_dir.join(format!(
        ".{file_name}.{}.{}.tmp",
        std::process::id(),
        SEQUENCE.fetch_add(1, Ordering::Relaxed)
    ));
    let result = fs_err::write(&temporary, filter.to_bytes())
        .and_then(|()| fs_err::rename(&temporary, path));
    if result.is_err() {
        let _ = fs_err::remove_file(&temporary);
    }
    result
}

#[cfg(test)]
#[cfg(target_arch = "x86_64")]
mod tests {
    use super::*;
    use crate::seccomp::arch::{Arch, KernelVersion};

    fn host() -> Host {
        Host {
            arch: Arch::X86_64,
            kernel: KernelVersion::new(6, 1),
        }
    }

    fn cache_files(directory: &Path) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = fs_err::read_dir(directory)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        files.sort();
        files
    }

    #[test]
    fn second_call_reads_the_file() {
        let directory = tempfile::tempdir().unwrap();
        let cache_dir = directory.path().join("seccomp");
        let profile = Profile::docker_default();
        let first =
            compile_cached_for(ProfileSource::Parsed(&profile), &[], &host(), &cache_dir).unwrap();
        let files = cache_files(&cache_dir);
        assert_eq!(files.len(), 1, "one file, no temporary left: {files:?}");
        assert_eq!(
            Filter::from_bytes(&fs_err::read(&files[0]).unwrap()).unwrap(),
            first
        );

        // Replace the file with a different valid filter: the next call must return it,
        // which proves it read the file rather than compiling.
        let other =
            crate::seccomp::compile_for(&profile, &["CAP_SYS_ADMIN".into()], &host()).unwrap();
        assert_ne!(other, first);
        fs_err::write(&files[0], other.to_bytes()).unwrap();
        assert_eq!(
            compile_cached_for(ProfileSource::Parsed(&profile), &[], &host(), &cache_dir).unwrap(),
            other
        );
    }

    #[test]
    fn damaged_file_is_recompiled_and_replaced() {
        let directory = tempfile::tempdir().unwrap();
        let profile = Profile::docker_default();
        let expected = compile_cached_for(
            ProfileSource::Parsed(&profile),
            &[],
            &host(),
            directory.path(),
        )
        .unwrap();
        let path = cache_files(directory.path()).remove(0);
        for damage in [b"garbage".to_vec(), Vec::new(), {
            let mut bytes = expected.to_bytes();
            bytes[40] ^= 1;
            bytes
        }] {
            fs_err::write(&path, damage).unwrap();
            assert_eq!(
                compile_cached_for(
                    ProfileSource::Parsed(&profile),
                    &[],
                    &host(),
                    directory.path()
                )
                .unwrap(),
                expected
            );
            assert_eq!(
                Filter::from_bytes(&fs_err::read(&path).unwrap()).unwrap(),
                expected
            );
        }
    }

    #[test]
    fn key_depends_on_what_changes_the_filter() {
        let key = |profile: &Profile, capabilities: &[&str], host: &Host| {
            let capabilities: Vec<String> = capabilities.iter().map(|&cap| cap.into()).collect();
            cache_key(ProfileSource::Parsed(profile), &capabilities, host).unwrap()
        };
        let profile = Profile::docker_default();
        let base = key(&profile, &["CAP_CHOWN", "CAP_KILL"], &host());
        let reordered = key(&profile, &["kill", "CAP_CHOWN"], &host());
        assert_eq!(
            base, reordered,
            "capability order and spelling do not matter"
        );
        let more = key(&profile, &["CAP_CHOWN"], &host());
        assert_ne!(base, more);
        let old_kernel = Host {
            kernel: KernelVersion::new(4, 4),
            ..host()
        };
        assert_ne!(base, key(&profile, &["CAP_CHOWN", "CAP_KILL"], &old_kernel));
        let mut changed = profile.clone();
        changed.default_errno_ret = Some(38);
        assert_ne!(base, key(&changed, &["CAP_CHOWN", "CAP_KILL"], &host()));
    }

    #[test]
    fn the_default_profile_is_known_by_its_text_and_compiles_the_same() {
        let directory = tempfile::tempdir().unwrap();
        let compiled =
            compile_cached_for(ProfileSource::Default, &[], &host(), directory.path()).unwrap();
        let parsed = Profile::docker_default();
        assert_eq!(
            compiled,
            crate::seccomp::compile_for(&parsed, &[], &host()).unwrap()
        );
        assert_eq!(
            compile_cached_for(ProfileSource::Default, &[], &host(), directory.path()).unwrap(),
            compiled
        );
        assert_eq!(cache_files(directory.path()).len(), 1);
        // The same profile given as a file has a key of its own.
        compile_cached_for(
            ProfileSource::Parsed(&parsed),
            &[],
            &host(),
            directory.path(),
        )
        .unwrap();
        assert_eq!(cache_files(directory.path()).len(), 2);
    }

    #[test]
    fn unwritable_cache_dir_still_compiles() {
        let directory = tempfile::tempdir().unwrap();
        let not_a_directory = directory.path().join("file");
        fs_err::write(&not_a_directory, b"x").unwrap();
        let profile = Profile::docker_default();
        assert!(compile_cached_for(
            ProfileSource::Parsed(&profile),
            &[],
            &host(),
            &not_a_directory
        )
        .is_ok());
    }
}
