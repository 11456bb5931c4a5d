//! `docker logs` without `-f`: what the files hold now.

use std::io;

use super::files::{open_set, LogFormat, LogLocation, LogSet};
use super::lines::{read_records, tail_range};
use super::output::{Flow, Printer};
use super::{LogError, LogOptions, Stream};

/// Prints the records of the log at `location`, its rotated files first, as
/// `docker logs` does: `--tail` first (counted in records, read backwards from
/// the end of the newest file and on into older ones), then the
/// `--since`/`--until` window, then the stream choice; `sink` gets each
/// record's printed bytes. A log that does not exist yet holds nothing.
pub fn read_logs(
    location: &LogLocation,
    options: &LogOptions,
    sink: impl FnMut(Stream, &[u8]),
) -> Result<(), LogError> {
    options.check()?;
    let Some(set) = open_set(location, options.since)? else {
        return Ok(());
    };
    let mut printer = Printer::new(options, location.format, sink);
    let mut buffer = Vec::new();
    for range in initial_ranges(&set, location.format, options.tail)? {
        let file = &set.files[range.index].file;
        let (_, flow) = read_records(
            file,
            location.format,
            range.start,
            Some(range.end),
            &mut buffer,
            |line| printer.line(line),
        )
        .map_err(read_error(file))?;
        if flow == Flow::Stop {
            break;
        }
    }
    Ok(())
}

/// What is read of one file of a set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileRange {
    /// The file's place in the set.
    pub index: usize,
    pub start: u64,
    pub end: u64,
}

/// What is read of each file, oldest first: everything as it is now, or for
/// `tail` the last records counted back from the newest file. The newest file
/// is always in the list, so a follower knows where to go on from.
pub(crate) fn initial_ranges(
    set: &LogSet,
    format: LogFormat,
    tail: Option<usize>,
) -> Result<Vec<FileRange>, LogError> {
    let mut ranges = Vec::new();
    let newest = set.files.len() - 1;
    let mut wanted = tail;
    for (index, entry) in set.files.iter().enumerate().rev() {
        let file = &entry.file;
        let size = file.metadata().map_err(read_error(file))?.len();
        match wanted {
            None => ranges.push(FileRange {
                index,
                start: 0,
                end: size,
            }),
            Some(records) => {
                if records == 0 && index != newest {
                    break;
                }
                let range = tail_range(file, format, size, records).map_err(read_error(file))?;
                ranges.push(FileRange {
                    index,
                    start: range.start,
                    end: range.end,
                });
                wanted = Some(records - range.found);
                if range.found == records {
                    break;
                }
            }
        }
    }
    ranges.reverse();
    Ok(ranges)
}

pub(crate) fn read_error(file: &fs_err::File) -> impl Fn(io::Error) -> LogError + '_ {
    move |source| LogError::Read {
        path: file.path().to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use chrono::{DateTime, Utc};

    use super::super::{LogDriver, LogSettings, LogWriter};
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().to_utc()
    }

    /// A log of five records, one second apart, alternating streams, with
    /// an unfinished record at the end as if the writer were mid-write.
    fn sample() -> (tempfile::TempDir, LogLocation) {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("c-json.log");
        let mut writer = LogWriter::open(&path).unwrap();
        for (index, stream) in [
            Stream::Stdout,
            Stream::Stderr,
            Stream::Stdout,
            Stream::Stderr,
            Stream::Stdout,
        ]
        .into_iter()
        .enumerate()
        {
            let line = format!("line{index}\n");
            let time = at(&format!("2024-01-01T00:00:0{index}.5Z"));
            writer.write(stream, line.as_bytes(), time).unwrap();
        }
        writer.close(Utc::now()).unwrap();
        let mut file = fs_err::OpenOptions::new().append(true).open(&path).unwrap();
        std::io::Write::write_all(&mut file, br#"{"log":"cut"#).unwrap();
        (directory, LogLocation::json_file(path))
    }

    fn read(location: &LogLocation, options: &LogOptions) -> Vec<String> {
        let mut out = Vec::new();
        read_logs(location, options, |stream, bytes| {
            out.push(format!(
                "{}:{}",
                stream.as_str(),
                String::from_utf8_lossy(bytes)
            ));
        })
        .unwrap();
        out
    }

    fn options(change: impl FnOnce(&mut LogOptions)) -> LogOptions {
        let mut options = LogOptions::default();
        change(&mut options);
        options
    }

    #[test]
    fn prints_every_record_and_skips_the_unfinished_one() {
        let (_directory, path) = sample();
        assert_eq!(
            read(&path, &LogOptions::default()),
            [
                "stdout:line0\n",
                "stderr:line1\n",
                "stdout:line2\n",
                "stderr:line3\n",
                "stdout:line4\n"
            ]
        );
    }

    #[test]
    fn tail_counts_records_from_the_end() {
        let (_directory, path) = sample();
        assert_eq!(
            read(&path, &options(|o| o.tail = Some(2))),
            ["stderr:line3\n", "stdout:line4\n"]
        );
        assert_eq!(read(&path, &options(|o| o.tail = Some(50))).len(), 5);
        assert!(read(&path, &options(|o| o.tail = Some(0))).is_empty());
    }

    #[test]
    fn tail_is_applied_before_the_stream_choice() {
        // dockerd tails the file, then drops the unwanted stream.
        let (_directory, path) = sample();
        let stderr_only = options(|o| {
            o.tail = Some(2);
            o.stdout = false;
        });
        assert_eq!(read(&path, &stderr_only), ["stderr:line3\n"]);
        let stdout_only = options(|o| o.stderr = false);
        assert_eq!(
            read(&path, &stdout_only),
            ["stdout:line0\n", "stdout:line2\n", "stdout:line4\n"]
        );
    }

    #[test]
    fn since_and_until_bound_the_window_inclusively() {
        let (_directory, path) = sample();
        let window = options(|o| {
            o.since = Some(at("2024-01-01T00:00:01.5Z"));
            o.until = Some(at("2024-01-01T00:00:03.5Z"));
        });
        assert_eq!(
            read(&path, &window),
            ["stderr:line1\n", "stdout:line2\n", "stderr:line3\n"]
        );
        let after_all = options(|o| o.since = Some(at("2024-01-02T00:00:00Z")));
        assert!(read(&path, &after_all).is_empty());
    }

    #[test]
    fn since_stops_filtering_after_the_first_match() {
        // Record times need not be in order; dockerd only skips the records
        // before the first one inside the window.
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("c-json.log");
        let mut writer = LogWriter::open(&path).unwrap();
        for (line, time) in [
            ("old\n", "2024-01-01T00:00:00Z"),
            ("new\n", "2024-01-01T00:00:10Z"),
            ("late\n", "2024-01-01T00:00:01Z"),
        ] {
            writer
                .write(Stream::Stdout, line.as_bytes(), at(time))
                .unwrap();
        }
        drop(writer);
        let since = options(|o| o.since = Some(at("2024-01-01T00:00:05Z")));
        assert_eq!(
            read(&LogLocation::json_file(path), &since),
            ["stdout:new\n", "stdout:late\n"]
        );
    }

    #[test]
    fn timestamps_prefix_the_fixed_width_time() {
        let (_directory, path) = sample();
        let printed = read(
            &path,
            &options(|o| {
                o.timestamps = true;
                o.tail = Some(1);
            }),
        );
        assert_eq!(printed, ["stdout:2024-01-01T00:00:04.500000000Z line4\n"]);
    }

    #[test]
    fn a_missing_file_holds_nothing_and_no_stream_is_an_error() {
        let directory = tempfile::tempdir().unwrap();
        let absent = LogLocation::json_file(directory.path().join("absent"));
        assert!(read(&absent, &LogOptions::default()).is_empty());
        let error = read_logs(
            &absent,
            &options(|o| {
                o.stdout = false;
                o.stderr = false;
            }),
            |_, _| {},
        )
        .unwrap_err();
        assert!(matches!(error, LogError::NoStream));
    }

    #[test]
    fn tail_of_a_large_file_reads_only_its_end() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("c-json.log");
        let mut writer = LogWriter::open(&path).unwrap();
        let time = at("2024-01-01T00:00:00Z");
        for index in 0..20_000 {
            writer
                .write(Stream::Stdout, format!("{index}\n").as_bytes(), time)
                .unwrap();
        }
        drop(writer);
        let location = LogLocation::json_file(path);
        assert_eq!(
            read(&location, &options(|o| o.tail = Some(3))),
            ["stdout:19997\n", "stdout:19998\n", "stdout:19999\n"]
        );
        let set = super::super::files::open_set(&location, None)
            .unwrap()
            .unwrap();
        let [range] = initial_ranges(&set, LogFormat::JsonLines, Some(3)).unwrap()[..] else {
            panic!("one file");
        };
        assert!(
            range.end - range.start < 300,
            "three records span {} bytes",
            range.end - range.start
        );
    }

    /// Writes `count` records of one second each to a log rotated by `settings`.
    fn rotated(settings: &LogSettings, count: usize) -> (tempfile::TempDir, LogLocation) {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("c.log");
        let mut writer = LogWriter::open_with(&path, settings, None).unwrap();
        for index in 0..count {
            let time = DateTime::from_timestamp(1_700_000_000 + index as i64, 0).unwrap();
            let stream = if index % 3 == 2 {
                Stream::Stderr
            } else {
                Stream::Stdout
            };
            writer
                .write(stream, format!("line {index:03}\n").as_bytes(), time)
                .unwrap();
        }
        drop(writer);
        let location = LogLocation {
            path,
            format: match settings.driver {
                LogDriver::Local => LogFormat::Local,
                _ => LogFormat::JsonLines,
            },
            max_files: settings.max_files,
        };
        (directory, location)
    }

    fn rotation(driver: LogDriver, max_size: u64, max_files: u32, compress: bool) -> LogSettings {
        LogSettings {
            driver,
            max_size: Some(max_size),
            max_files,
            compress,
            ..LogSettings::default()
        }
    }

    fn numbers(lines: &[String]) -> Vec<usize> {
        lines
            .iter()
            .map(|line| line.trim_end().rsplit(' ').next().unwrap().parse().unwrap())
            .collect()
    }

    #[test]
    fn reads_across_rotated_files_in_order_with_tail_since_and_until() {
        for driver in [LogDriver::JsonFile, LogDriver::Local] {
            for compress in [false, true] {
                // About 5 records a file; 4 files kept of the 8 written.
                let settings = rotation(driver, 200, 4, compress);
                let (directory, location) = rotated(&settings, 40);
                let files = fs_err::read_dir(directory.path()).unwrap().count();
                assert_eq!(files, 4, "{driver:?} compress={compress}");
                let all = numbers(&read(&location, &LogOptions::default()));
                let first = all[0];
                assert!(first > 0, "the oldest records were dropped");
                assert_eq!(
                    all,
                    (first..40).collect::<Vec<_>>(),
                    "{driver:?} compress={compress}"
                );
                // --tail reaches back into older files.
                for tail in [0, 1, 3, 7, 12, all.len(), 100] {
                    let printed = numbers(&read(&location, &options(|o| o.tail = Some(tail))));
                    let expected: Vec<usize> = all[all.len() - tail.min(all.len())..].to_vec();
                    assert_eq!(
                        printed, expected,
                        "{driver:?} compress={compress} tail={tail}"
                    );
                }
                let window = options(|o| {
                    o.since = Some(DateTime::from_timestamp(1_700_000_030, 0).unwrap());
                    o.until = Some(DateTime::from_timestamp(1_700_000_033, 0).unwrap());
                    o.stderr = false;
                });
                assert_eq!(numbers(&read(&location, &window)), [30, 31, 33]);
            }
        }
    }

    #[test]
    fn a_json_file_with_attributes_is_read_with_details() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("c-json.log");
        let attributes = BTreeMap::from([("tag".to_owned(), "x&y".to_owned())]);
        let mut writer =
            LogWriter::open_with(&path, &LogSettings::default(), Some(&attributes)).unwrap();
        writer
            .write(
                Stream::Stdout,
                b"hi\n",
                at("2026-12-01T14:53:45.268762439Z"),
            )
            .unwrap();
        drop(writer);
        assert_eq!(
            fs_err::read_to_string(&path).unwrap(),
            "{\"log\":\"hi\\n\",\"stream\":\"stdout\",\"attrs\":{\"tag\":\"x\\u0026y\"},\"time\":\"2026-12-01T14:53:45.268762439Z\"}\n"
        );
        let details = options(|o| o.details = true);
        assert_eq!(
            read(&LogLocation::json_file(path), &details),
            ["stdout:tag=x%26y hi\n"]
        );
    }
}
