//! `docker logs` without `-f`: what the file holds now.

use std::io;
use std::path::Path;

use super::lines::{read_lines, tail_range, TAIL_BLOCK};
use super::output::Printer;
use super::{LogError, LogOptions, Stream};

/// Prints the records of the json-file log at `path` as `docker logs` does:
/// `--tail` first (counted in records, read backwards from the end), then
/// the `--since`/`--until` window, then the stream choice; `sink` gets each
/// record's printed bytes. A log file that does not exist yet holds nothing.
pub fn read_logs(
    path: &Path,
    options: &LogOptions,
    sink: impl FnMut(Stream, &[u8]),
) -> Result<(), LogError> {
    options.check()?;
    let Some(file) = open_log(path)? else {
        return Ok(());
    };
    let mut printer = Printer::new(options, sink);
    let (start, end) = initial_range(&file, options.tail).map_err(read_error(path))?;
    read_lines(&file, start, Some(end), &mut Vec::new(), |line| {
        printer.line(line)
    })
    .map_err(read_error(path))?;
    Ok(())
}

/// Opens the log for reading; None when there is none yet.
pub(crate) fn open_log(path: &Path) -> Result<Option<fs_err::File>, LogError> {
    match fs_err::File::open(path) {
        Ok(file) => Ok(Some(file)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(LogError::Open {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Where printing starts and up to where the file is read for `tail`.
pub(crate) fn initial_range(file: &fs_err::File, tail: Option<usize>) -> io::Result<(u64, u64)> {
    let size = file.metadata()?.len();
    match tail {
        None => Ok((0, size)),
        Some(lines) => tail_range(file, size, lines, TAIL_BLOCK),
    }
}

pub(crate) fn read_error(path: &Path) -> impl Fn(io::Error) -> LogError + '_ {
    move |source| LogError::Read {
        path: path.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    use super::super::LogWriter;
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().to_utc()
    }

    /// A log of five records, one second apart, alternating streams, with
    /// an unfinished record at the end as if the writer were mid-write.
    fn sample() -> (tempfile::TempDir, std::path::PathBuf) {
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
        (directory, path)
    }

    fn read(path: &Path, options: &LogOptions) -> Vec<String> {
        let mut out = Vec::new();
        read_logs(path, options, |stream, bytes| {
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
        assert_eq!(read(&path, &since), ["stdout:new\n", "stdout:late\n"]);
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
        assert!(read(&directory.path().join("absent"), &LogOptions::default()).is_empty());
        let error = read_logs(
            &directory.path().join("absent"),
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
        assert_eq!(
            read(&path, &options(|o| o.tail = Some(3))),
            ["stdout:19997\n", "stdout:19998\n", "stdout:19999\n"]
        );
        let file = fs_err::File::open(&path).unwrap();
        let (start, end) = initial_range(&file, Some(3)).unwrap();
        assert!(
            end - start < 300,
            "three records span {} bytes",
            end - start
        );
    }
}
