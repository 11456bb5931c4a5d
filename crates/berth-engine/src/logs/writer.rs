//! The monitor's side: container output bytes in, json-file records out.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use chrono::{DateTime, Utc};
use fs_err::os::unix::fs::OpenOptionsExt;

use super::format::{push_json_string, push_rfc3339_nano};
use super::{LogError, Stream};

/// dockerd's copier buffer (`daemon/logger/copier.go`): a line longer than
/// this, newline included, is stored as records of exactly this many bytes
/// without a trailing `\n`, then the rest.
pub const MAX_RECORD_BYTES: usize = 16 * 1024;

/// Encoded records are written once this much has accumulated, so one
/// `write` call with a huge input does not hold it all in memory.
const WRITE_THRESHOLD: usize = 64 * 1024;

/// dockerd's mode for `<id>-json.log`.
const LOG_MODE: u32 = 0o640;

/// Appends a container's output to its json-file log, record for record as
/// dockerd does.
///
/// Each stream keeps its own pending line. A line becomes a record when its
/// newline arrives, stamped with that moment. A line that reaches
/// [`MAX_RECORD_BYTES`] without a newline is written as a partial record
/// (no trailing `\n` in `log`); its continuation records, up to and
/// including the one that ends with the newline, carry the first partial's
/// time, as dockerd's partial-message metadata does. [`LogWriter::flush`]
/// writes what is pending as partial records (dockerd does this at EOF).
pub struct LogWriter {
    file: fs_err::File,
    stdout: PendingLine,
    stderr: PendingLine,
    encoded: Vec<u8>,
}

#[derive(Default)]
struct PendingLine {
    bytes: Vec<u8>,
    /// The time of the first partial record of the line being written.
    partial_time: Option<DateTime<Utc>>,
}

impl LogWriter {
    /// Opens (creating it with mode 0640, like dockerd) the log at `path`
    /// for appending. The mode is set explicitly: berth's umask (077) would
    /// make it 0600. Group root may read it, as dockerd's; the container's
    /// private directory keeps everyone else out.
    pub fn open(path: &Path) -> Result<Self, LogError> {
        let open_error = |source| LogError::Open {
            path: path.to_owned(),
            source,
        };
        let file = fs_err::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(LOG_MODE)
            .open(path)
            .map_err(open_error)?;
        file.set_permissions(std::fs::Permissions::from_mode(LOG_MODE))
            .map_err(open_error)?;
        Ok(Self {
            file,
            stdout: PendingLine::default(),
            stderr: PendingLine::default(),
            encoded: Vec::new(),
        })
    }

    /// Takes the next `bytes` the container wrote on `stream`, read at `now`.
    pub fn write(
        &mut self,
        stream: Stream,
        bytes: &[u8],
        now: DateTime<Utc>,
    ) -> Result<(), LogError> {
        let mut input = bytes;
        while !input.is_empty() {
            let pending = match stream {
                Stream::Stdout => &mut self.stdout,
                Stream::Stderr => &mut self.stderr,
            };
            let room = MAX_RECORD_BYTES - pending.bytes.len();
            let window = &input[..room.min(input.len())];
            let (taken, time) = if let Some(newline) = window.iter().position(|&b| b == b'\n') {
                (newline + 1, pending.partial_time.take().unwrap_or(now))
            } else if window.len() == room {
                (room, *pending.partial_time.get_or_insert(now))
            } else {
                pending.bytes.extend_from_slice(window);
                break;
            };
            // A record is whole bytes of dockerd's buffer: encode the pending
            // part and the new part together, so a character split between
            // two reads is still one character.
            if pending.bytes.is_empty() {
                encode_record(&mut self.encoded, stream, &window[..taken], time);
            } else {
                pending.bytes.extend_from_slice(&window[..taken]);
                encode_record(&mut self.encoded, stream, &pending.bytes, time);
                pending.bytes.clear();
            }
            input = &input[taken..];
            if self.encoded.len() >= WRITE_THRESHOLD {
                self.write_encoded()?;
            }
        }
        self.write_encoded()
    }

    /// Writes each stream's pending partial line as a partial record, as
    /// dockerd does when the container's output ends (a line that continues
    /// afterwards keeps the partial's time).
    pub fn flush(&mut self, now: DateTime<Utc>) -> Result<(), LogError> {
        for (stream, pending) in [
            (Stream::Stdout, &mut self.stdout),
            (Stream::Stderr, &mut self.stderr),
        ] {
            if !pending.bytes.is_empty() {
                let time = *pending.partial_time.get_or_insert(now);
                encode_record(&mut self.encoded, stream, &pending.bytes, time);
                pending.bytes.clear();
            }
        }
        self.write_encoded()
    }

    /// Flushes pending lines and closes the file.
    pub fn close(mut self, now: DateTime<Utc>) -> Result<(), LogError> {
        self.flush(now)
    }

    fn write_encoded(&mut self) -> Result<(), LogError> {
        if self.encoded.is_empty() {
            return Ok(());
        }
        let result = self.file.write_all(&self.encoded);
        self.encoded.clear();
        result.map_err(|source| LogError::Write {
            path: self.file.path().to_owned(),
            source,
        })
    }
}

impl Drop for LogWriter {
    /// Output still pending when the writer goes away is not lost.
    fn drop(&mut self) {
        if self.stdout.bytes.is_empty() && self.stderr.bytes.is_empty() {
            return;
        }
        if let Err(error) = self.flush(Utc::now()) {
            tracing::warn!(%error, "failed to write the last partial log lines");
        }
    }
}

/// `{"log":…,"stream":"stdout","time":"…"}` and a newline, as dockerd's
/// `jsonlog.JSONLogs.MarshalJSONBuf` lays it out.
fn encode_record(out: &mut Vec<u8>, stream: Stream, line: &[u8], time: DateTime<Utc>) {
    out.extend_from_slice(b"{\"log\":");
    push_json_string(out, line);
    out.extend_from_slice(b",\"stream\":\"");
    out.extend_from_slice(stream.as_str().as_bytes());
    out.extend_from_slice(b"\",\"time\":\"");
    push_rfc3339_nano(out, time);
    out.extend_from_slice(b"\"}\n");
}

#[cfg(test)]
mod tests {
    //! Every expected line below is a line dockerd 20.10 wrote to its
    //! json-file log for the same container output (`printf` in busybox),
    //! its time included: the writer is given dockerd's times as `now`.

    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().to_utc()
    }

    /// Runs `steps` on a fresh writer, closes it, returns the file.
    fn log_of(steps: impl FnOnce(&mut LogWriter)) -> String {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("c-json.log");
        let mut writer = LogWriter::open(&path).unwrap();
        steps(&mut writer);
        drop(writer);
        fs_err::read_to_string(&path).unwrap()
    }

    #[test]
    fn unterminated_last_line_is_written_at_exit_without_newline() {
        // printf 'a\nb'
        let log = log_of(|writer| {
            let now = at("2026-11-30T03:17:16.005407899Z");
            writer.write(Stream::Stdout, b"a\nb", now).unwrap();
            writer.flush(at("2026-11-30T03:17:16.068226211Z")).unwrap();
        });
        assert_eq!(
            log,
            concat!(
                r#"{"log":"a\n","stream":"stdout","time":"2026-11-30T03:17:16.005407899Z"}"#,
                "\n",
                r#"{"log":"b","stream":"stdout","time":"2026-11-30T03:17:16.068226211Z"}"#,
                "\n",
            )
        );
    }

    #[test]
    fn escapes_html_characters_controls_and_invalid_utf8() {
        let cases: [(&[u8], &str, &str); 6] = [
            (
                b"<>&\n",
                "2026-11-30T03:17:16.407185875Z",
                r#"{"log":"\u003c\u003e\u0026\n","stream":"stdout","time":"2026-11-30T03:17:16.407185875Z"}"#,
            ),
            (
                b"\xff\n",
                "2026-11-30T03:17:16.786685778Z",
                r#"{"log":"\ufffd\n","stream":"stdout","time":"2026-11-30T03:17:16.786685778Z"}"#,
            ),
            (
                b"x\xffy\xc0\x80z\xed\xa0\x80w\n",
                "2026-11-30T03:17:17.128834231Z",
                r#"{"log":"x\ufffdy\ufffd\ufffdz\ufffd\ufffd\ufffdw\n","stream":"stdout","time":"2026-11-30T03:17:17.128834231Z"}"#,
            ),
            (
                b"a\xe2\x82b\xf0\x9f\x98\n",
                "2026-11-30T03:17:17.516457687Z",
                r#"{"log":"a\ufffd\ufffdb\ufffd\ufffd\ufffd\n","stream":"stdout","time":"2026-11-30T03:17:17.516457687Z"}"#,
            ),
            (
                "tab\there \"q\" back\\ \u{1}\u{1f}\u{7f} \u{2028} \u{2029} é 😀 \u{fffd}\n".as_bytes(),
                "2026-11-30T03:17:17.924064844Z",
                "{\"log\":\"tab\\u0009here \\\"q\\\" back\\\\ \\u0001\\u001f\u{7f} \\u2028 \\u2029 é 😀 \u{fffd}\\n\",\"stream\":\"stdout\",\"time\":\"2026-11-30T03:17:17.924064844Z\"}",
            ),
            (
                b"\n",
                "2026-11-30T03:17:22.366253906Z",
                r#"{"log":"\n","stream":"stdout","time":"2026-11-30T03:17:22.366253906Z"}"#,
            ),
        ];
        for (output, time, expected) in cases {
            let log = log_of(|writer| writer.write(Stream::Stdout, output, at(time)).unwrap());
            assert_eq!(log, format!("{expected}\n"), "for {output:?}");
        }
    }

    #[test]
    fn streams_are_buffered_separately() {
        // printf par; printf 'e\n' >&2; sleep 0.2; printf 'tial\n'
        let log = log_of(|writer| {
            let first = at("2026-11-30T03:17:18.906406665Z");
            writer.write(Stream::Stdout, b"par", first).unwrap();
            writer.write(Stream::Stderr, b"e\n", first).unwrap();
            writer
                .write(
                    Stream::Stdout,
                    b"tial\n",
                    at("2026-11-30T03:17:19.103509168Z"),
                )
                .unwrap();
        });
        assert_eq!(
            log,
            concat!(
                r#"{"log":"e\n","stream":"stderr","time":"2026-11-30T03:17:18.906406665Z"}"#,
                "\n",
                r#"{"log":"partial\n","stream":"stdout","time":"2026-11-30T03:17:19.103509168Z"}"#,
                "\n",
            )
        );
    }

    fn record(log: &str, time: &str) -> String {
        format!("{{\"log\":\"{log}\",\"stream\":\"stdout\",\"time\":\"{time}\"}}\n")
    }

    #[test]
    fn long_line_is_split_at_16k_and_the_pieces_share_the_first_time() {
        // printf '%20000s\n' '' | tr ' ' x; echo next
        let first = "2026-11-30T03:17:19.531903184Z";
        let next = "2026-11-30T03:17:19.532368256Z";
        let line = format!("{}\n", "x".repeat(20_000));
        let log = log_of(|writer| {
            // Pieces of the size a pipe read returns; the split must not
            // depend on them.
            for piece in line.as_bytes().chunks(4096) {
                writer.write(Stream::Stdout, piece, at(first)).unwrap();
            }
            writer.write(Stream::Stdout, b"next\n", at(next)).unwrap();
        });
        let expected = record(&"x".repeat(16_384), first)
            + &record(&format!("{}\\n", "x".repeat(3_616)), first)
            + &record("next\\n", next);
        assert_eq!(log, expected);
    }

    #[test]
    fn long_unterminated_output_is_all_partial_records() {
        // printf '%40000s' '' | tr ' ' y
        let time = "2026-11-30T03:17:20.059381785Z";
        let log = log_of(|writer| {
            writer
                .write(Stream::Stdout, "y".repeat(40_000).as_bytes(), at(time))
                .unwrap();
            writer.flush(at("2026-11-30T03:17:21Z")).unwrap();
        });
        let expected = record(&"y".repeat(16_384), time)
            + &record(&"y".repeat(16_384), time)
            + &record(&"y".repeat(7_232), time);
        assert_eq!(log, expected);
    }

    #[test]
    fn a_full_buffer_then_a_newline_is_two_records() {
        // printf '%16384s\n' '' | tr ' ' z
        let time = "2026-11-30T03:17:20.652656013Z";
        let log = log_of(|writer| {
            let line = format!("{}\n", "z".repeat(16_384));
            writer
                .write(Stream::Stdout, line.as_bytes(), at(time))
                .unwrap();
        });
        assert_eq!(
            log,
            record(&"z".repeat(16_384), time) + &record("\\n", time)
        );
    }

    #[test]
    fn a_line_of_exactly_16k_with_its_newline_is_one_record() {
        // printf '%16383s\n' '' | tr ' ' w
        let time = "2026-11-30T03:17:21.197419026Z";
        let log = log_of(|writer| {
            let line = format!("{}\n", "w".repeat(16_383));
            writer
                .write(Stream::Stdout, line.as_bytes(), at(time))
                .unwrap();
        });
        assert_eq!(log, record(&format!("{}\\n", "w".repeat(16_383)), time));
    }

    #[test]
    fn a_character_cut_by_the_16k_split_becomes_replacements() {
        // printf '%16383s\303\251\n' '' | tr ' ' v
        let time = "2026-11-30T03:17:22.926895934Z";
        let log = log_of(|writer| {
            let mut line = "v".repeat(16_383).into_bytes();
            line.extend_from_slice("é\n".as_bytes());
            for byte in &line {
                writer
                    .write(Stream::Stdout, std::slice::from_ref(byte), at(time))
                    .unwrap();
            }
        });
        let expected =
            record(&format!("{}\\ufffd", "v".repeat(16_383)), time) + &record("\\ufffd\\n", time);
        assert_eq!(log, expected);
    }

    #[test]
    fn a_character_split_between_reads_stays_whole() {
        let time = "2024-01-01T00:00:00Z";
        let log = log_of(|writer| {
            for byte in "é😀\r\n".as_bytes() {
                writer
                    .write(Stream::Stderr, std::slice::from_ref(byte), at(time))
                    .unwrap();
            }
        });
        assert_eq!(
            log,
            format!("{{\"log\":\"é😀\\r\\n\",\"stream\":\"stderr\",\"time\":\"{time}\"}}\n")
        );
    }

    #[test]
    fn dropping_the_writer_keeps_pending_output() {
        let log = log_of(|writer| {
            writer
                .write(Stream::Stderr, b"no newline", at("2024-01-01T00:00:00Z"))
                .unwrap();
        });
        assert!(
            log.starts_with(r#"{"log":"no newline","stream":"stderr","time":""#),
            "{log}"
        );
    }

    #[test]
    fn appends_to_an_existing_file_created_0640() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("c-json.log");
        let time = at("2024-01-01T00:00:00Z");
        for text in ["one\n", "two\n"] {
            let writer = LogWriter::open(&path);
            let mut writer = writer.unwrap();
            writer.write(Stream::Stdout, text.as_bytes(), time).unwrap();
            writer.close(time).unwrap();
        }
        let log = fs_err::read_to_string(&path).unwrap();
        assert_eq!(log.lines().count(), 2);
        assert!(log.contains(r#""log":"one\n""#) && log.contains(r#""log":"two\n""#));
        let mode = fs_err::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o7027, 0, "mode {mode:o} must not exceed 0640");
    }

    #[test]
    fn open_names_the_path_on_failure() {
        let error = LogWriter::open(Path::new("/nonexistent-berth-dir/x-json.log"))
            .err()
            .unwrap();
        assert!(error
            .to_string()
            .contains("/nonexistent-berth-dir/x-json.log"));
    }
}
