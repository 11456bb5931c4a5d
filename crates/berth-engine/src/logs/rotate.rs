//! The log file the monitor appends to, rotated as dockerd's `loggerutils.LogFile` rotates
//! it (`--log-opt max-size`/`max-file`/`compress`, and the `local` driver's defaults).
//!
//! Before each record, a file that already holds `max-size` bytes or more is rotated (so a
//! file may pass `max-size` by one record, as dockerd's do): `<log>.{N-2}` → `<log>.{N-1}` …
//! `<log>.1` → `<log>.2`, the oldest dropped, then the file itself becomes `<log>.1` and a new
//! empty `<log>` takes its place. dockerd renames the file and then creates the new one; berth
//! links it as `<log>.1` first and renames a new file over `<log>`, so a reader in another
//! process never finds `<log>` missing (readers check that the names they opened did not
//! move meanwhile, `files.rs`). With `max-file=1` the old file is still kept as `<log>.1`, as
//! dockerd keeps it, and never read.
//!
//! With `compress`, `<log>.1` is then gzipped to `<log>.1.gz` (with dockerd's header extra,
//! `{"lastTime":…}`, the time of its last record) a piece at a time between the container's
//! writes and while the monitor waits, never all at once in the copy loop: dockerd does it
//! on a goroutine, and a monitor must not have threads (it forks). The gzip stream goes to
//! `<log>.1.gz.tmp`, renamed into place when whole; then `<log>.1` is removed. Until then
//! readers read `<log>.1` itself.

use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use fs_err::os::unix::fs::OpenOptionsExt;

use super::format::push_rfc3339_nano;
use super::LogError;

/// dockerd's mode for log files, rotated and compressed ones included.
pub(crate) const LOG_MODE: u32 = 0o640;

/// How much of a rotated file one step of its compression reads.
const COMPRESS_STEP: usize = 256 * 1024;

/// When and how a log file rotates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rotation {
    /// Rotate before a record once the file holds this many bytes; None never.
    pub max_size: Option<u64>,
    /// Files kept, the one being written included.
    pub max_files: u32,
    pub compress: bool,
}

/// `<log>.N`, or `<log>.N.gz`.
pub(crate) fn rotated_name(path: &Path, index: u32, compressed: bool) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{index}"));
    if compressed {
        name.push(".gz");
    }
    PathBuf::from(name)
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// A log file being appended to, with its rotation.
pub(crate) struct RotatingFile {
    path: PathBuf,
    file: fs_err::File,
    /// What the file holds, as written (dockerd's `currentSize`).
    size: u64,
    /// `max-size`, u64::MAX when the file never rotates.
    capacity: u64,
    rotation: Rotation,
    /// The time of the last record in the file, for the compressed copy's header.
    last_time: Option<DateTime<Utc>>,
    compression: Option<Compression>,
}

impl RotatingFile {
    /// Opens (creating it with mode 0640, as dockerd) the log at `path` for appending and
    /// finishes what a monitor killed mid-rotation left: a new file not yet in place, a
    /// rotated file not yet (or not wholly) compressed.
    pub fn open(path: &Path, rotation: Rotation) -> Result<Self, LogError> {
        if rotation.max_size.is_some() {
            let _ = fs_err::remove_file(with_suffix(path, ".new"));
        }
        let file = open_append(path, false)?;
        let size = file
            .metadata()
            .map_err(|source| LogError::Open {
                path: path.to_owned(),
                source,
            })?
            .len();
        let mut opened = Self {
            path: path.to_owned(),
            file,
            size,
            capacity: rotation.max_size.unwrap_or(u64::MAX),
            rotation,
            last_time: None,
            compression: None,
        };
        if rotation.compress {
            let first = rotated_name(path, 1, false);
            let _ = fs_err::remove_file(with_suffix(&rotated_name(path, 1, true), ".tmp"));
            if rotated_name(path, 1, true).exists() {
                // The copy was complete: only the removal of the original was left.
                let _ = fs_err::remove_file(&first);
            } else if first.exists() {
                opened.compression = Compression::start(&first, None);
            }
        }
        Ok(opened)
    }

    /// Whether the next record must go to a new file, `pending` bytes not written yet.
    pub fn is_full(&self, pending: usize) -> bool {
        self.size.saturating_add(pending as u64) >= self.capacity
    }

    /// Appends `bytes`, whose last record has `last_time`.
    pub fn write(&mut self, bytes: &[u8], last_time: DateTime<Utc>) -> Result<(), LogError> {
        let result = self.file.write_all(bytes);
        // What was written counts, as dockerd counts `n` even on error.
        self.size += bytes.len() as u64;
        self.last_time = Some(last_time);
        result.map_err(|source| LogError::Write {
            path: self.path.clone(),
            source,
        })
    }

    /// Moves the file to `<log>.1` (shifting older ones) and starts a new one.
    pub fn rotate(&mut self) -> Result<(), LogError> {
        if let Some(compression) = self.compression.take() {
            compression.finish();
        }
        let path = self.path.clone();
        let max_files = self.rotation.max_files;
        if max_files >= 2 {
            for compressed in [false, true] {
                remove_if_present(&rotated_name(&path, max_files - 1, compressed));
            }
            for index in (2..max_files).rev() {
                for compressed in [false, true] {
                    let from = rotated_name(&path, index - 1, compressed);
                    let to = rotated_name(&path, index, compressed);
                    if let Err(error) = fs_err::rename(&from, &to) {
                        if error.kind() != io::ErrorKind::NotFound {
                            tracing::warn!(%error, "failed to shift a rotated log file");
                        }
                    }
                }
            }
        }
        let first = rotated_name(&path, 1, false);
        remove_if_present(&first);
        let replacement = with_suffix(&path, ".new");
        let file = match fs_err::hard_link(&path, &first) {
            Ok(()) => {
                let file = open_append(&replacement, true)?;
                fs_err::rename(&replacement, &path).map_err(|source| LogError::Write {
                    path: path.clone(),
                    source,
                })?;
                file
            }
            // A file system without hard links: dockerd's order, with a moment when the
            // log is missing (readers retry).
            Err(error) => {
                tracing::debug!(%error, "no hard link for the rotated log, renaming it");
                fs_err::rename(&path, &first).map_err(|source| LogError::Write {
                    path: path.clone(),
                    source,
                })?;
                open_append(&path, true)?
            }
        };
        self.file = file;
        self.size = 0;
        if self.rotation.compress && max_files >= 2 {
            self.compression = Compression::start(&first, self.last_time);
        }
        Ok(())
    }

    /// Whether a rotated file is still being compressed.
    pub fn has_background_work(&self) -> bool {
        self.compression.is_some()
    }

    /// Compresses the next piece of the rotated file.
    pub fn do_background_work(&mut self) {
        if let Some(compression) = self.compression.as_mut() {
            if compression.step(COMPRESS_STEP) {
                if let Some(done) = self.compression.take() {
                    done.complete();
                }
            }
        }
    }

    /// Finishes a compression under way (the monitor is ending).
    pub fn finish_background_work(&mut self) {
        if let Some(compression) = self.compression.take() {
            compression.finish();
        }
    }
}

fn remove_if_present(path: &Path) {
    if let Err(error) = fs_err::remove_file(path) {
        if error.kind() != io::ErrorKind::NotFound {
            tracing::warn!(%error, "failed to remove a rotated log file");
        }
    }
}

/// Opens `path` for appending with dockerd's mode; `new` makes an empty file in place of
/// whatever is there.
fn open_append(path: &Path, new: bool) -> Result<fs_err::File, LogError> {
    let open_error = |source| LogError::Open {
        path: path.to_owned(),
        source,
    };
    let mut options = fs_err::OpenOptions::new();
    options.append(true).mode(LOG_MODE);
    if new {
        remove_if_present(path);
        options.create_new(true);
    } else {
        options.create(true);
    }
    let file = options.open(path).map_err(open_error)?;
    // Set explicitly: berth's umask (077) would make it 0600.
    file.set_permissions(std::fs::Permissions::from_mode(LOG_MODE))
        .map_err(open_error)?;
    Ok(file)
}

/// `<log>.1` being gzipped into `<log>.1.gz.tmp`.
struct Compression {
    source: fs_err::File,
    source_path: PathBuf,
    temporary: PathBuf,
    target: PathBuf,
    encoder: flate2::write::GzEncoder<fs_err::File>,
    buffer: Vec<u8>,
}

impl Compression {
    /// Starts compressing `source`; None (with a warning) when it cannot.
    fn start(source_path: &Path, last_time: Option<DateTime<Utc>>) -> Option<Self> {
        let started = (|| -> io::Result<Self> {
            let source = fs_err::File::open(source_path)?;
            let target = with_suffix(source_path, ".gz");
            let temporary = with_suffix(&target, ".tmp");
            let output = fs_err::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(LOG_MODE)
                .open(&temporary)?;
            output.set_permissions(std::fs::Permissions::from_mode(LOG_MODE))?;
            // dockerd's `rotateFileMetadata`: readers skip a file whose last record is
            // before `--since` without decompressing it. A file left from a killed monitor
            // has no time known: its first record's time would be wrong, so none. berth
            // adds the plain file's identity (`source`): a follower that was reading it
            // finds where it went (dockerd's readers ignore the field).
            // dockerd's bytes first (`{"lastTime":"…"`), berth's field after them.
            let source_metadata = source.metadata()?;
            let mut extra = b"{".to_vec();
            if let Some(time) = last_time {
                extra.extend_from_slice(b"\"lastTime\":\"");
                push_rfc3339_nano(&mut extra, time);
                extra.extend_from_slice(b"\",");
            }
            extra.extend_from_slice(
                format!(
                    "\"source\":[{},{}]}}",
                    source_metadata.dev(),
                    source_metadata.ino()
                )
                .as_bytes(),
            );
            let builder = flate2::GzBuilder::new().extra(extra);
            let encoder = builder.write(output, flate2::Compression::default());
            Ok(Self {
                source,
                source_path: source_path.to_owned(),
                temporary,
                target,
                encoder,
                buffer: vec![0; 64 * 1024],
            })
        })();
        started
            .map_err(|error| tracing::warn!(%error, "failed to start compressing a rotated log"))
            .ok()
    }

    /// Compresses up to `budget` more bytes; true when the source is all read (or the
    /// compression failed and was given up, leaving the source as it is).
    fn step(&mut self, budget: usize) -> bool {
        let mut done = 0;
        while done < budget {
            let read = match self.source.read(&mut self.buffer) {
                Ok(0) => return true,
                Ok(read) => read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return self.abandon(&error),
            };
            if let Err(error) = self.encoder.write_all(&self.buffer[..read]) {
                return self.abandon(&error);
            }
            done += read;
        }
        false
    }

    fn abandon(&mut self, error: &io::Error) -> bool {
        tracing::warn!(%error, path = %self.source_path.display(), "failed to compress a rotated log; it stays uncompressed");
        let _ = fs_err::remove_file(&self.temporary);
        self.source_path = PathBuf::new();
        true
    }

    /// Runs the rest now.
    fn finish(mut self) {
        while !self.step(usize::MAX) {}
        self.complete();
    }

    /// Puts the finished copy in place and removes the original.
    fn complete(self) {
        if self.source_path.as_os_str().is_empty() {
            return;
        }
        let finished = self
            .encoder
            .finish()
            .and_then(|file| fs_err::rename(&self.temporary, &self.target).map(|()| drop(file)));
        match finished {
            Ok(()) => remove_if_present(&self.source_path),
            Err(error) => {
                tracing::warn!(%error, "failed to finish compressing a rotated log");
                let _ = fs_err::remove_file(&self.temporary);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: u32) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + i64::from(second), 0).unwrap()
    }

    fn names(directory: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs_err::read_dir(directory)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn write_records(file: &mut RotatingFile, count: u32, width: usize) {
        for index in 0..count {
            let record = format!("{index:0width$}\n");
            if file.is_full(0) {
                file.rotate().unwrap();
            }
            file.write(record.as_bytes(), at(index)).unwrap();
        }
    }

    #[test]
    fn rotates_once_full_keeping_max_files() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("c-json.log");
        let rotation = Rotation {
            max_size: Some(10),
            max_files: 3,
            compress: false,
        };
        let mut file = RotatingFile::open(&path, rotation).unwrap();
        // Records of 4 bytes: three fill a file past 10 bytes, the fourth starts a new one.
        write_records(&mut file, 10, 3);
        assert_eq!(
            names(directory.path()),
            ["c-json.log", "c-json.log.1", "c-json.log.2"]
        );
        let read = |name: &str| fs_err::read_to_string(directory.path().join(name)).unwrap();
        assert_eq!(read("c-json.log.2"), "003\n004\n005\n");
        assert_eq!(read("c-json.log.1"), "006\n007\n008\n");
        assert_eq!(read("c-json.log"), "009\n");
        let mode = fs_err::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, LOG_MODE);
    }

    #[test]
    fn one_file_keeps_the_last_as_dot_one_like_dockerd() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("c-json.log");
        let rotation = Rotation {
            max_size: Some(4),
            max_files: 1,
            compress: false,
        };
        let mut file = RotatingFile::open(&path, rotation).unwrap();
        write_records(&mut file, 3, 3);
        assert_eq!(names(directory.path()), ["c-json.log", "c-json.log.1"]);
        assert_eq!(fs_err::read_to_string(&path).unwrap(), "002\n");
    }

    #[test]
    fn a_reopened_file_keeps_its_size_and_rotates_when_full() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("c-json.log");
        fs_err::write(&path, "old record\n").unwrap();
        let rotation = Rotation {
            max_size: Some(10),
            max_files: 2,
            compress: false,
        };
        let mut file = RotatingFile::open(&path, rotation).unwrap();
        assert!(file.is_full(0));
        write_records(&mut file, 1, 3);
        assert_eq!(
            fs_err::read_to_string(rotated_name(&path, 1, false)).unwrap(),
            "old record\n"
        );
    }

    #[test]
    fn compression_runs_in_steps_and_keeps_dockerds_header() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("c-json.log");
        let rotation = Rotation {
            max_size: Some(COMPRESS_STEP as u64 * 3),
            max_files: 3,
            compress: true,
        };
        let mut file = RotatingFile::open(&path, rotation).unwrap();
        let line = format!("{}\n", "x".repeat(1023));
        for _ in 0..(COMPRESS_STEP * 3 / 1024) {
            file.write(line.as_bytes(), at(7)).unwrap();
        }
        assert!(file.is_full(0));
        file.rotate().unwrap();
        assert!(file.has_background_work());
        // Until the copy is whole, readers read `.1`.
        assert!(rotated_name(&path, 1, false).exists());
        assert!(!rotated_name(&path, 1, true).exists());
        let mut steps = 0;
        while file.has_background_work() {
            file.do_background_work();
            steps += 1;
        }
        assert!(steps >= 3, "{steps} steps");
        assert_eq!(names(directory.path()), ["c-json.log", "c-json.log.1.gz"]);
        let compressed = fs_err::File::open(rotated_name(&path, 1, true)).unwrap();
        let mut decoder = flate2::read::GzDecoder::new(compressed);
        let mut content = String::new();
        decoder.read_to_string(&mut content).unwrap();
        assert_eq!(content.len(), COMPRESS_STEP * 3);
        // dockerd's lastTime, and the identity of the file compressed (berth's).
        let extra: serde_json::Value =
            serde_json::from_slice(decoder.header().unwrap().extra().unwrap()).unwrap();
        assert!(
            decoder
                .header()
                .unwrap()
                .extra()
                .unwrap()
                .starts_with(br#"{"lastTime":"2023-11-14T22:13:27Z","#),
            "dockerd's bytes first"
        );
        assert_eq!(extra["lastTime"], "2023-11-14T22:13:27Z");
        assert_eq!(extra["source"].as_array().map(Vec::len), Some(2), "{extra}");
        // The next rotation shifts it.
        file.write(b"y\n", at(8)).unwrap();
        file.rotate().unwrap();
        file.finish_background_work();
        assert_eq!(
            names(directory.path()),
            ["c-json.log", "c-json.log.1.gz", "c-json.log.2.gz"]
        );
    }

    #[test]
    fn a_monitor_killed_mid_compression_is_finished_by_the_next() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("c-json.log");
        fs_err::write(&path, "").unwrap();
        fs_err::write(rotated_name(&path, 1, false), "rotated\n").unwrap();
        fs_err::write(with_suffix(&rotated_name(&path, 1, true), ".tmp"), "cut").unwrap();
        fs_err::write(with_suffix(&path, ".new"), "").unwrap();
        let rotation = Rotation {
            max_size: Some(100),
            max_files: 2,
            compress: true,
        };
        let mut file = RotatingFile::open(&path, rotation).unwrap();
        file.finish_background_work();
        assert_eq!(names(directory.path()), ["c-json.log", "c-json.log.1.gz"]);
    }
}
