//! The files of one log, as a reader sees them: the rotated ones oldest first, then the one
//! being written, opened together while the writer (another process) may be rotating.
//!
//! dockerd's readers take the writer's lock; berth's run in other processes, so they check
//! instead: every name is opened, then looked up again, and the set is used only when no
//! name moved meanwhile and no file appears under two names (the writer links the full file
//! as `<log>.1` before it replaces `<log>`); otherwise it is opened again a moment later.
//! Compressed files (`<log>.N.gz`) are decompressed into an unnamed temporary file; one
//! whose last record (dockerd's gzip header extra) is before `--since` is not read at all.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use fs_err::os::unix::fs::OpenOptionsExt;

use super::rotate::rotated_name;
use super::LogError;

/// How a log's records are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// json-file: one JSON object per line.
    JsonLines,
    /// local: length-framed protobuf.
    Local,
}

/// Where a container's log is and how to read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLocation {
    /// The file being written; rotated ones are `<path>.N[.gz]`.
    pub path: PathBuf,
    pub format: LogFormat,
    /// `max-file`: readers look at `<path>.1` … `<path>.{max_files - 1}`, as dockerd's.
    pub max_files: u32,
}

impl LogLocation {
    /// A json-file log that never rotates.
    pub fn json_file(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            format: LogFormat::JsonLines,
            max_files: 1,
        }
    }

    /// Whether anything was ever written (the first start creates the file).
    pub fn exists(&self) -> bool {
        self.path.exists()
    }
}

/// How many times a set is opened again while a rotation is under way.
const ATTEMPTS: usize = 200;
const RETRY: Duration = Duration::from_millis(2);

/// A file's identity.
pub(crate) type Identity = (u64, u64);

pub(crate) fn identity(metadata: &std::fs::Metadata) -> Identity {
    (metadata.dev(), metadata.ino())
}

/// One opened file of the set.
pub(crate) struct SetFile {
    pub file: fs_err::File,
    /// The identity of the named file; None for a decompressed copy.
    pub identity: Option<Identity>,
    /// For a decompressed copy: the plain file it was compressed from, when berth wrote it.
    pub source: Option<Identity>,
}

/// The files, oldest first; the last is the one being written (never empty).
pub(crate) struct LogSet {
    pub files: Vec<SetFile>,
}

/// A name's state when it was opened.
enum Opened {
    Plain(fs_err::File, Identity),
    Compressed(fs_err::File, Identity),
    Missing,
}

/// Opens `location`'s files; None when the log does not exist (yet). A compressed file
/// whose last record is before `since` is left out.
pub(crate) fn open_set(
    location: &LogLocation,
    since: Option<DateTime<Utc>>,
) -> Result<Option<LogSet>, LogError> {
    let mut opened = None;
    for attempt in 0..ATTEMPTS {
        let Some((current, rotated)) = open_names(location)? else {
            // Missing while another file is there: a writer that renames (no hard links)
            // is between its two steps.
            let rotating = (1..location.max_files.max(2)).any(|index| {
                rotated_name(&location.path, index, false).exists()
                    || rotated_name(&location.path, index, true).exists()
            });
            if rotating && attempt + 1 < ATTEMPTS {
                std::thread::sleep(RETRY);
                continue;
            }
            return Ok(None);
        };
        let stable = still_named(location, &current, &rotated)?;
        opened = Some((current, rotated));
        if stable {
            break;
        }
        std::thread::sleep(RETRY);
    }
    let Some(((current, current_identity), rotated)) = opened else {
        return Ok(None);
    };
    let mut files = Vec::new();
    // `rotated` is `.1` first; the set is oldest first.
    for (index, opened) in rotated.into_iter().enumerate().rev() {
        match opened {
            Opened::Plain(file, identity) => files.push(SetFile {
                file,
                identity: Some(identity),
                source: None,
            }),
            Opened::Compressed(file, _) => {
                let path = rotated_name(&location.path, index as u32 + 1, true);
                if let Some((file, source)) = decompress(file, &path, since)? {
                    files.push(SetFile {
                        file,
                        identity: None,
                        source,
                    });
                }
            }
            Opened::Missing => {}
        }
    }
    files.push(SetFile {
        file: current,
        identity: Some(current_identity),
        source: None,
    });
    Ok(Some(LogSet { files }))
}

type Names = ((fs_err::File, Identity), Vec<Opened>);

fn open_names(location: &LogLocation) -> Result<Option<Names>, LogError> {
    let Some(current) = open_identified(&location.path)? else {
        return Ok(None);
    };
    let mut rotated = Vec::new();
    for index in 1..location.max_files {
        let plain = rotated_name(&location.path, index, false);
        let opened = match open_identified(&plain)? {
            Some((file, identity)) => Opened::Plain(file, identity),
            None => match open_identified(&rotated_name(&location.path, index, true))? {
                Some((file, identity)) => Opened::Compressed(file, identity),
                None => Opened::Missing,
            },
        };
        rotated.push(opened);
    }
    Ok(Some((current, rotated)))
}

/// Whether each name still holds the file opened under it, and no file was opened twice.
fn still_named(
    location: &LogLocation,
    current: &(fs_err::File, Identity),
    rotated: &[Opened],
) -> Result<bool, LogError> {
    let mut seen = vec![current.1];
    if named(&location.path)? != Some(current.1) {
        return Ok(false);
    }
    for (index, opened) in rotated.iter().enumerate() {
        let index = index as u32 + 1;
        let plain = named(&rotated_name(&location.path, index, false))?;
        let compressed = named(&rotated_name(&location.path, index, true))?;
        let same = match opened {
            Opened::Plain(_, identity) => plain == Some(*identity),
            Opened::Compressed(_, identity) => plain.is_none() && compressed == Some(*identity),
            Opened::Missing => plain.is_none() && compressed.is_none(),
        };
        if !same {
            return Ok(false);
        }
        if let Opened::Plain(_, identity) | Opened::Compressed(_, identity) = opened {
            if seen.contains(identity) {
                return Ok(false);
            }
            seen.push(*identity);
        }
    }
    Ok(true)
}

fn open_identified(path: &Path) -> Result<Option<(fs_err::File, Identity)>, LogError> {
    let open_error = |source| LogError::Open {
        path: path.to_owned(),
        source,
    };
    let file = match fs_err::File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(open_error(source)),
    };
    let metadata = file.metadata().map_err(open_error)?;
    Ok(Some((file, identity(&metadata))))
}

/// The identity of the file named `path` now.
pub(crate) fn named(path: &Path) -> Result<Option<Identity>, LogError> {
    match fs_err::metadata(path) {
        Ok(metadata) => Ok(Some(identity(&metadata))),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(LogError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

/// dockerd's gzip header extra, and berth's `source`: the identity of the plain file the
/// compressed one was made from.
#[derive(serde::Deserialize)]
struct RotatedMetadata {
    #[serde(rename = "lastTime", default)]
    last_time: Option<DateTime<Utc>>,
    #[serde(default)]
    source: Option<Identity>,
}

/// The content of the compressed `file` (named `path`) in an unnamed temporary file with
/// the identity of the file it was made from, or None when its last record is before
/// `since`.
fn decompress(
    file: fs_err::File,
    path: &Path,
    since: Option<DateTime<Utc>>,
) -> Result<Option<(fs_err::File, Option<Identity>)>, LogError> {
    let read_error = |source| LogError::Read {
        path: path.to_owned(),
        source,
    };
    let mut decoder = flate2::read::GzDecoder::new(file);
    let metadata = decoder
        .header()
        .and_then(|header| header.extra())
        .and_then(|extra| serde_json::from_slice::<RotatedMetadata>(extra).ok());
    let last_time = metadata.as_ref().and_then(|metadata| metadata.last_time);
    let source = metadata.and_then(|metadata| metadata.source);
    if let (Some(since), Some(last_time)) = (since, last_time) {
        if last_time < since {
            return Ok(None);
        }
    }
    let directory = path.parent().unwrap_or(Path::new("."));
    let mut copy = temporary_file(directory).map_err(read_error)?;
    io::copy(&mut decoder, &mut copy).map_err(read_error)?;
    Ok(Some((copy, source)))
}

/// An unnamed file beside the log (the container's private directory), or in the system's
/// temporary directory where that file system has none.
fn temporary_file(directory: &Path) -> io::Result<fs_err::File> {
    let open = |directory: &Path| {
        fs_err::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_TMPFILE)
            .mode(0o600)
            .open(directory)
    };
    open(directory).or_else(|_| open(&std::env::temp_dir()))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn location(directory: &Path, max_files: u32) -> LogLocation {
        LogLocation {
            path: directory.join("c-json.log"),
            format: LogFormat::JsonLines,
            max_files,
        }
    }

    fn contents(set: &LogSet) -> Vec<String> {
        set.files
            .iter()
            .map(|file| {
                let mut text = String::new();
                let mut handle = file.file.file().try_clone().unwrap();
                io::Seek::seek(&mut handle, io::SeekFrom::Start(0)).unwrap();
                io::Read::read_to_string(&mut handle, &mut text).unwrap();
                text
            })
            .collect()
    }

    fn gzip(path: &Path, content: &str, last_time: Option<&str>) {
        let mut builder = flate2::GzBuilder::new();
        if let Some(time) = last_time {
            builder = builder.extra(format!("{{\"lastTime\":\"{time}\"}}").into_bytes());
        }
        let mut encoder = builder.write(
            fs_err::File::create(path).unwrap(),
            flate2::Compression::default(),
        );
        encoder.write_all(content.as_bytes()).unwrap();
        encoder.finish().unwrap();
    }

    #[test]
    fn opens_rotated_files_oldest_first_up_to_max_file() {
        let directory = tempfile::tempdir().unwrap();
        let location = location(directory.path(), 3);
        fs_err::write(&location.path, "current\n").unwrap();
        fs_err::write(rotated_name(&location.path, 1, false), "one\n").unwrap();
        gzip(&rotated_name(&location.path, 2, true), "two\n", None);
        // Past max-file: not read, as dockerd does not read it.
        fs_err::write(rotated_name(&location.path, 3, false), "three\n").unwrap();
        let set = open_set(&location, None).unwrap().unwrap();
        assert_eq!(contents(&set), ["two\n", "one\n", "current\n"]);
        assert!(set.files[0].identity.is_none());
        let single = open_set(
            &LogLocation {
                max_files: 1,
                ..location.clone()
            },
            None,
        )
        .unwrap()
        .unwrap();
        assert_eq!(contents(&single), ["current\n"]);
    }

    #[test]
    fn a_plain_file_is_preferred_while_its_compressed_copy_is_finished() {
        let directory = tempfile::tempdir().unwrap();
        let location = location(directory.path(), 2);
        fs_err::write(&location.path, "").unwrap();
        fs_err::write(rotated_name(&location.path, 1, false), "plain\n").unwrap();
        gzip(&rotated_name(&location.path, 1, true), "plain\n", None);
        let set = open_set(&location, None).unwrap().unwrap();
        assert_eq!(contents(&set), ["plain\n", ""]);
    }

    #[test]
    fn compressed_files_older_than_since_are_skipped() {
        let directory = tempfile::tempdir().unwrap();
        let location = location(directory.path(), 3);
        fs_err::write(&location.path, "current\n").unwrap();
        gzip(
            &rotated_name(&location.path, 2, true),
            "old\n",
            Some("2024-01-01T00:00:00Z"),
        );
        gzip(
            &rotated_name(&location.path, 1, true),
            "new\n",
            Some("2024-01-03T00:00:00Z"),
        );
        let since = DateTime::parse_from_rfc3339("2024-01-02T00:00:00Z")
            .unwrap()
            .to_utc();
        let set = open_set(&location, Some(since)).unwrap().unwrap();
        assert_eq!(contents(&set), ["new\n", "current\n"]);
    }

    #[test]
    fn a_set_caught_mid_rotation_is_opened_again() {
        // `.1` and the log are one file: the writer linked it and has not yet put the
        // new log in place. The reader waits for it.
        let directory = tempfile::tempdir().unwrap();
        let location = location(directory.path(), 2);
        fs_err::write(&location.path, "full\n").unwrap();
        fs_err::hard_link(&location.path, rotated_name(&location.path, 1, false)).unwrap();
        let path = location.path.clone();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            let new = directory.path().join("c-json.log.new");
            fs_err::write(&new, "fresh\n").unwrap();
            fs_err::rename(&new, &path).unwrap();
            directory
        });
        let set = open_set(&location, None).unwrap().unwrap();
        let _directory = writer.join().unwrap();
        assert_eq!(contents(&set), ["full\n", "fresh\n"]);
    }

    #[test]
    fn no_log_is_none() {
        let directory = tempfile::tempdir().unwrap();
        assert!(open_set(&location(directory.path(), 5), None)
            .unwrap()
            .is_none());
    }
}
