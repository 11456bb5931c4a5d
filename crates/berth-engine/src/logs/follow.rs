//! `docker logs -f`: what the file holds, then what the container adds.

use std::path::Path;
use std::time::Duration;

use super::lines::read_lines;
use super::output::{Flow, Printer};
use super::reader::{initial_range, open_log, read_error};
use super::watch::FileWatcher;
use super::{LogError, LogOptions, Stream};

/// How often `is_running` is asked again while the file is quiet. The
/// writer closing the file (the monitor exiting) wakes the wait sooner.
const WAKE_INTERVAL: Duration = Duration::from_millis(200);

/// Prints the log at `path` like [`super::read_logs`], then keeps printing
/// records as they are appended, until `is_running` says the container has
/// stopped and everything written before that has been printed, or a record
/// after `--until` arrives. Only whole lines are read: a record the writer
/// is half way through is printed once its newline is there.
pub fn follow_logs(
    path: &Path,
    options: &LogOptions,
    is_running: impl FnMut() -> bool,
    sink: impl FnMut(Stream, &[u8]),
) -> Result<(), LogError> {
    follow_with(path, options, is_running, sink, FileWatcher::new)
}

fn follow_with(
    path: &Path,
    options: &LogOptions,
    mut is_running: impl FnMut() -> bool,
    sink: impl FnMut(Stream, &[u8]),
    watcher_for: impl Fn(&Path) -> FileWatcher,
) -> Result<(), LogError> {
    options.check()?;
    let file = loop {
        if let Some(file) = open_log(path)? {
            break file;
        }
        if !is_running() {
            // The log may have been created just before the container
            // stopped.
            match open_log(path)? {
                Some(file) => break file,
                None => return Ok(()),
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Watching starts before the first read: whatever is appended after
    // that read wakes the wait below.
    let mut watcher = watcher_for(path);
    let mut printer = Printer::new(options, sink);
    let mut buffer = Vec::new();
    let (start, end) = initial_range(&file, options.tail).map_err(read_error(path))?;
    let (mut offset, flow) = read_lines(&file, start, Some(end), &mut buffer, |line| {
        printer.line(line)
    })
    .map_err(read_error(path))?;
    if flow == Flow::Stop {
        return Ok(());
    }
    loop {
        // Asked before draining: what the container wrote before it stopped
        // is in the file by the time it reports stopped.
        let running = is_running();
        let size = file.metadata().map_err(read_error(path))?.len();
        if size < offset {
            tracing::debug!(path = %path.display(), "log file truncated, reading it from the start");
            offset = 0;
        }
        let (next, flow) = read_lines(&file, offset, None, &mut buffer, |line| printer.line(line))
            .map_err(read_error(path))?;
        offset = next;
        if flow == Flow::Stop || !running {
            return Ok(());
        }
        watcher.wait(WAKE_INTERVAL);
    }
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
                &path,
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
            &path,
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
            &path,
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
            &directory.path().join("absent"),
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
}
