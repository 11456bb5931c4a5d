//! `docker logs -f`: what the files hold, then what the container adds,
//! across rotations.

use std::path::Path;
use std::time::Duration;

use super::files::{named, open_set, LogLocation, SetFile};
use super::lines::read_records;
use super::output::{Flow, Printer};
use super::reader::{initial_ranges, read_error};
use super::{LogError, LogOptions, Stream};
use crate::file_watch::FileWatcher;

/// How often `is_running` is asked again while the file is quiet. The
/// writer closing the file (the monitor exiting) wakes the wait sooner.
const WAKE_INTERVAL: Duration = Duration::from_millis(200);

/// Prints the log at `location` like [`super::read_logs`], then keeps printing
/// records as they are appended, until `is_running` says the container has
/// stopped and everything written before that has been printed, or a record
/// after `--until` arrives. Only whole records are read: one the writer is
/// half way through is printed once it is complete. When the writer rotates
/// the file, the rest of the old file is printed, then the files that came
/// after it (dockerd's follower reopens the log the same way).
pub fn follow_logs(
    location: &LogLocation,
    options: &LogOptions,
    is_running: impl FnMut() -> bool,
    sink: impl FnMut(Stream, &[u8]),
) -> Result<(), LogError> {
    follow_with(location, options, is_running, sink, FileWatcher::new)
}

fn follow_with(
    location: &LogLocation,
    options: &LogOptions,
    mut is_running: impl FnMut() -> bool,
    sink: impl FnMut(Stream, &[u8]),
    watcher_for: impl Fn(&Path) -> FileWatcher,
) -> Result<(), LogError> {
    options.check()?;
    let format = location.format;
    let mut set = loop {
        if let Some(set) = open_set(location, options.since)? {
            break set;
        }
        if !is_running() {
            // The log may have been created just before the container
            // stopped.
            match open_set(location, options.since)? {
                Some(set) => break set,
                None => return Ok(()),
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Watching starts before the first read: whatever is appended after
    // that read wakes the wait below.
    let mut watcher = watcher_for(&location.path);
    let mut printer = Printer::new(options, format, sink);
    let mut buffer = Vec::new();
    let newest = set.files.len() - 1;
    let mut offset = 0;
    for range in initial_ranges(&set, format, options.tail)? {
        let file = &set.files[range.index].file;
        let (next, flow) = read_records(
            file,
            format,
            range.start,
            Some(range.end),
            &mut buffer,
            |line| printer.line(line),
        )
        .map_err(read_error(file))?;
        if flow == Flow::Stop {
            return Ok(());
        }
        if range.index == newest {
            offset = next;
        }
    }
    let Some(mut current) = set.files.pop() else {
        return Ok(());
    };
    drop(set);
    loop {
        // Asked before draining: what the container wrote before it stopped
        // is in the file by the time it reports stopped.
        let running = is_running();
        if named(&location.path)? != current.identity {
            // Rotated: the old file is complete, print the rest of it, then
            // the ones written after it.
            let (_, flow) =
                read_records(&current.file, format, offset, None, &mut buffer, |line| {
                    printer.line(line)
                })
                .map_err(read_error(&current.file))?;
            if flow == Flow::Stop {
                return Ok(());
            }
            let Some(after) = successors(location, &current)? else {
                // The log is gone (the container was removed).
                return Ok(());
            };
            tracing::debug!(files = after.len(), "log rotated, following the new file");
            let mut after = after.into_iter().peekable();
            while let Some(next) = after.next() {
                let (end, flow) = read_records(&next.file, format, 0, None, &mut buffer, |line| {
                    printer.line(line)
                })
                .map_err(read_error(&next.file))?;
                if flow == Flow::Stop {
                    return Ok(());
                }
                if after.peek().is_none() {
                    offset = end;
                    current = next;
                }
            }
            watcher = watcher_for(&location.path);
            continue;
        }
        let size = current
            .file
            .metadata()
            .map_err(read_error(&current.file))?
            .len();
        if size < offset {
            tracing::debug!(path = %location.path.display(), "log file truncated, reading it from the start");
            offset = 0;
        }
        let (next, flow) = read_records(&current.file, format, offset, None, &mut buffer, |line| {
            printer.line(line)
        })
        .map_err(read_error(&current.file))?;
        offset = next;
        if flow == Flow::Stop || !running {
            return Ok(());
        }
        watcher.wait(WAKE_INTERVAL);
    }
}

/// The files written after `old`, the new log last; None when there is no log any more.
/// `old` is found under its name or, compressed, by the identity berth's compressor wrote
/// in the gzip header; when it is no longer among them (dropped by more rotations than
/// there are files), only the new log.
fn successors(location: &LogLocation, old: &SetFile) -> Result<Option<Vec<SetFile>>, LogError> {
    // Every rotated name, even past max-file: `max-file=1` still keeps `<log>.1`.
    let search = LogLocation {
        max_files: location.max_files.max(2),
        ..location.clone()
    };
    let Some(mut set) = open_set(&search, None)? else {
        return Ok(None);
    };
    // By name, or (compressed since) by the file it was made from. The newest match: an
    // inode number is reused once its file is gone, so an older compressed file can name
    // the same identity as its source; the file `old` became is the latest to.
    let position = set.files.iter().rposition(|file| {
        old.identity.is_some() && (file.identity == old.identity || file.source == old.identity)
    });
    Ok(Some(match position {
        Some(position) => set.files.split_off(position + 1),
        None => set.files.split_off(set.files.len() - 1),
    }))
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Arc};
    use std::thread;
    use std::time::Instant;

    use chrono::{DateTime, Utc};

    use super::super::LogWriter;
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().to_utc()
    }

    fn record(text: &str, time: &str) -> String {
        format!("{{\"log\":\"{text}\\n\",\"stream\":\"stdout\",\"time\":\"{time}\"}}\n")
    }

    /// Follows `path` on a thread; printed records arrive on the channel.
    /// `asked` hears each time the follower asks whether the container
    /// runs, which it first does after printing what the file held.
    fn spawn_follower(
        path: std::path::PathBuf,
        options: LogOptions,
        running: Arc<AtomicBool>,
        polling: bool,
    ) -> (
        mpsc::Receiver<String>,
        mpsc::Receiver<()>,
        thread::JoinHandle<()>,
    ) {
        let (sender, receiver) = mpsc::channel();
        let (asked_sender, asked) = mpsc::channel();
        let handle = thread::spawn(move || {
            let watcher_for = move |path: &Path| {
                if polling {
                    FileWatcher::polling()
                } else {
                    FileWatcher::new(path)
                }
            };
            follow_with(
                &LogLocation::json_file(path),
                &options,
                || {
                    let _ = asked_sender.send(());
                    running.load(Ordering::SeqCst)
                },
                |_, bytes| {
                    sender
                        .send(String::from_utf8_lossy(bytes).into_owned())
                        .unwrap()
                },
                watcher_for,
            )
            .unwrap();
        });
        (receiver, asked, handle)
    }

    fn next(receiver: &mpsc::Receiver<String>) -> String {
        receiver
            .recv_timeout(Duration::from_secs(5))
            .expect("a record within 5 s")
    }

    fn writer_appends_then_stops(polling: bool) {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("c-json.log");
        let mut writer = LogWriter::open(&path).unwrap();
        let time = at("2024-01-01T00:00:00Z");
        writer.write(Stream::Stdout, b"old1\nold2\n", time).unwrap();
        let running = Arc::new(AtomicBool::new(true));
        let options = LogOptions {
            tail: Some(1),
            ..LogOptions::default()
        };
        let started = Instant::now();
        let (receiver, _asked, follower) =
            spawn_follower(path.clone(), options, running.clone(), polling);
        assert_eq!(next(&receiver), "old2\n");

        writer.write(Stream::Stdout, b"new1\n", time).unwrap();
        assert_eq!(next(&receiver), "new1\n");

        // A record cut in two by the writer is printed once, when whole.
        let mut raw = fs_err::OpenOptions::new().append(true).open(&path).unwrap();
        let whole = record("halves", "2024-01-01T00:00:01Z");
        let (first, second) = whole.split_at(20);
        raw.write_all(first.as_bytes()).unwrap();
        thread::sleep(Duration::from_millis(30));
        raw.write_all(second.as_bytes()).unwrap();
        assert_eq!(next(&receiver), "halves\n");

        // The container's last words, then it stops: they are printed and
        // the follower returns.
        writer.write(Stream::Stdout, b"last", time).unwrap();
        writer.flush(time).unwrap();
        running.store(false, Ordering::SeqCst);
        drop(writer);
        drop(raw);
        assert_eq!(next(&receiver), "last");
        follower.join().unwrap();
        assert!(receiver.try_recv().is_err());
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "took {:?}",
            started.elapsed()
        );
    }

    #[test]
    fn follows_a_writer_until_it_stops() {
        writer_appends_then_stops(false);
    }

    #[test]
    fn follows_by_polling_without_inotify() {
        writer_appends_then_stops(true);
    }

    #[test]
    fn a_cut_record_left_when_the_container_stops_is_not_printed() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("c-json.log");
        fs_err::write(
            &path,
            record("done", "2024-01-01T00:00:00Z") + r#"{"log":"cu"#,
        )
        .unwrap();
        let mut printed = Vec::new();
        follow_logs(
            &LogLocation::json_file(&path),
            &LogOptions::default(),
            || false,
            |_, bytes| printed.push(bytes.to_vec()),
        )
        .unwrap();
        assert_eq!(printed, [b"done\n".to_vec()]);
    }

    #[test]
    fn until_ends_following_while_the_container_runs() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("c-json.log");
        let content = record("in", "2024-01-01T00:00:00Z") + &record("out", "2024-01-01T00:00:09Z");
        fs_err::write(&path, content).unwrap();
        let options = LogOptions {
            until: Some(at("2024-01-01T00:00:05Z")),
            ..LogOptions::default()
        };
        let mut printed = Vec::new();
        follow_logs(
            &LogLocation::json_file(&path),
            &options,
            || true,
            |_, bytes| printed.push(bytes.to_vec()),
        )
        .unwrap();
        assert_eq!(printed, [b"in\n".to_vec()]);
    }

    #[test]
    fn tail_zero_prints_only_what_comes_next() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("c-json.log");
        let mut writer = LogWriter::open(&path).unwrap();
        let time = at("2024-01-01T00:00:00Z");
        writer.write(Stream::Stderr, b"before\n", time).unwrap();
        let running = Arc::new(AtomicBool::new(true));
        let options = LogOptions {
            tail: Some(0),
            ..LogOptions::default()
        };
        let (receiver, asked, follower) = spawn_follower(path, options, running.clone(), false);
        asked.recv_timeout(Duration::from_secs(5)).unwrap();
        writer.write(Stream::Stderr, b"after\n", time).unwrap();
        assert_eq!(next(&receiver), "after\n");
        running.store(false, Ordering::SeqCst);
        drop(writer);
        follower.join().unwrap();
        assert!(receiver.try_recv().is_err());
    }

    #[test]
    fn a_stopped_container_without_a_log_returns_at_once() {
        let directory = tempfile::tempdir().unwrap();
        let mut calls = 0;
        follow_logs(
            &LogLocation::json_file(directory.path().join("absent")),
            &LogOptions::default(),
            || {
                calls += 1;
                false
            },
            |_, _| panic!("nothing to print"),
        )
        .unwrap();
        assert_eq!(calls, 1);
    }

    #[test]
    fn follows_across_rotations() {
        use super::super::{LogDriver, LogSettings};
        for (driver, compress) in [
            (LogDriver::JsonFile, false),
            (LogDriver::JsonFile, true),
            (LogDriver::Local, false),
            (LogDriver::Local, true),
        ] {
            let directory = tempfile::tempdir().unwrap();
            let path = directory.path().join("c.log");
            let settings = LogSettings {
                driver,
                max_size: Some(300),
                max_files: 5,
                compress,
                ..LogSettings::default()
            };
            let mut writer = LogWriter::open_with(&path, &settings, None).unwrap();
            let time = at("2024-01-01T00:00:00Z");
            writer.write(Stream::Stdout, b"first\n", time).unwrap();
            let location = LogLocation {
                path: path.clone(),
                format: match driver {
                    LogDriver::Local => super::super::LogFormat::Local,
                    _ => super::super::LogFormat::JsonLines,
                },
                max_files: 5,
            };
            let running = Arc::new(AtomicBool::new(true));
            let (sender, receiver) = mpsc::channel();
            let follower = {
                let running = running.clone();
                thread::spawn(move || {
                    follow_logs(
                        &location,
                        &LogOptions::default(),
                        || running.load(Ordering::SeqCst),
                        |_, bytes| {
                            sender
                                .send(String::from_utf8_lossy(bytes).into_owned())
                                .unwrap()
                        },
                    )
                    .unwrap();
                })
            };
            assert_eq!(next(&receiver), "first\n");
            // Each batch fills about a file: the follower sees a rotation
            // at a time, or several at once (5 files are kept).
            let mut expected = Vec::new();
            for batch in 0..6 {
                for line in 0..5 {
                    let text = format!("batch {batch} line {line}\n");
                    writer.write(Stream::Stdout, text.as_bytes(), time).unwrap();
                    writer.do_background_work();
                    expected.push(text);
                }
                thread::sleep(Duration::from_millis(150));
            }
            let mut printed = Vec::new();
            // Only what the follower saw before it stopped counts; the
            // last batch is read once the writer is dropped at the latest.
            while printed.len() < expected.len() {
                printed.push(next(&receiver));
            }
            running.store(false, Ordering::SeqCst);
            drop(writer);
            follower.join().unwrap();
            assert_eq!(printed, expected, "{driver:?} compress={compress}");
        }
    }
}
