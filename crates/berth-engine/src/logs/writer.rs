//! The monitor's side: container output bytes in, records out, in the
//! driver's format (json-file or local), to a file that rotates.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, Utc};
use rand::Rng;

use super::format::{push_go_json_string, push_json_string, push_rfc3339_nano};
use super::local::{self, Partial};
use super::rotate::{RotatingFile, Rotation};
use super::settings::{LogDriver, LogSettings};
use super::{LogError, Stream};

/// dockerd's copier buffer (`daemon/logger/copier.go`): a line longer than
/// this, newline included, is stored as records of exactly this many bytes
/// without a trailing `\n`, then the rest.
pub const MAX_RECORD_BYTES: usize = 16 * 1024;

/// Encoded records are written once this much has accumulated, so one
/// `write` call with a huge input does not hold it all in memory.
const WRITE_THRESHOLD: usize = 64 * 1024;

/// How records are laid out.
enum Encoding {
    /// json-file, with the `"attrs":{…}` member each record carries (`labels`, `env`,
    /// `tag`), encoded once.
    Json {
        attrs: Option<Vec<u8>>,
    },
    Local,
}

/// Appends a container's output to its log, record for record as
/// dockerd does.
///
/// Each stream keeps its own pending line. A line becomes a record when its
/// newline arrives, stamped with that moment. A line that reaches
/// [`MAX_RECORD_BYTES`] without a newline is written as a partial record
/// (no trailing `\n` in `log`); its continuation records, up to and
/// including the one that ends with the newline, carry the first partial's
/// time, as dockerd's partial-message metadata does (the local format also
/// stores that metadata: the line's random id, each piece's ordinal, and which
/// is the last). [`LogWriter::flush`] writes what is pending as partial records
/// (dockerd does this at EOF).
///
/// Before each record the file is rotated when it is full (see `rotate.rs`); a
/// writer without `max-size` pays one comparison per record for it.
pub struct LogWriter {
    file: RotatingFile,
    encoding: Encoding,
    stdout: PendingLine,
    stderr: PendingLine,
    encoded: Vec<u8>,
    /// The time of the last record in `encoded`.
    last_time: DateTime<Utc>,
}

#[derive(Default)]
struct PendingLine {
    bytes: Vec<u8>,
    /// The time of the first partial record of the line being written.
    partial_time: Option<DateTime<Utc>>,
    /// The local format's partial metadata: the line's id and its pieces so far.
    partial_id: Option<String>,
    pieces: u32,
}

/// What a piece of output is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Piece {
    /// It ends with the line's newline.
    LineEnd,
    /// A full buffer, or what is left at the end, without a newline.
    Partial,
}

impl LogWriter {
    /// Opens (creating it with mode 0640, like dockerd) the json-file log at
    /// `path` for appending, never rotated. The mode is set explicitly:
    /// berth's umask (077) would make it 0600. Group root may read it, as
    /// dockerd's; the container's private directory keeps everyone else out.
    pub fn open(path: &Path) -> Result<Self, LogError> {
        Self::open_with(path, &LogSettings::default(), None)
    }

    /// Opens the log at `path` for `settings` (json-file or local; `none` has no
    /// writer), `attributes` going into each json-file record.
    pub fn open_with(
        path: &Path,
        settings: &LogSettings,
        attributes: Option<&BTreeMap<String, String>>,
    ) -> Result<Self, LogError> {
        let encoding = match settings.driver {
            LogDriver::Local => Encoding::Local,
            LogDriver::JsonFile | LogDriver::None => Encoding::Json {
                attrs: attributes.map(encode_attributes),
            },
        };
        let rotation = Rotation {
            max_size: settings.max_size,
            max_files: settings.max_files.max(1),
            compress: settings.compress,
        };
        Ok(Self {
            file: RotatingFile::open(path, rotation)?,
            encoding,
            stdout: PendingLine::default(),
            stderr: PendingLine::default(),
            encoded: Vec::new(),
            last_time: DateTime::UNIX_EPOCH,
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
            let pending = self.pending(stream);
            let room = MAX_RECORD_BYTES - pending.bytes.len();
            let window = &input[..room.min(input.len())];
            let (taken, piece) = if let Some(newline) = window.iter().position(|&b| b == b'\n') {
                (newline + 1, Piece::LineEnd)
            } else if window.len() == room {
                (room, Piece::Partial)
            } else {
                pending.bytes.extend_from_slice(window);
                break;
            };
            // A record is whole bytes of dockerd's buffer: encode the pending
            // part and the new part together, so a character split between
            // two reads is still one character.
            if pending.bytes.is_empty() {
                self.record(stream, Some(&window[..taken]), piece, now)?;
            } else {
                pending.bytes.extend_from_slice(&window[..taken]);
                self.record(stream, None, piece, now)?;
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
        for stream in [Stream::Stdout, Stream::Stderr] {
            if !self.pending(stream).bytes.is_empty() {
                self.record(stream, None, Piece::Partial, now)?;
            }
        }
        self.write_encoded()
    }

    /// Flushes pending lines and closes the file.
    pub fn close(mut self, now: DateTime<Utc>) -> Result<(), LogError> {
        self.flush(now)
    }

    /// Whether [`Self::do_background_work`] has something to do: a rotated
    /// file is being compressed. The monitor's loop then does not sleep.
    pub fn has_background_work(&self) -> bool {
        self.file.has_background_work()
    }

    /// Compresses the next piece of a rotated file.
    pub fn do_background_work(&mut self) {
        self.file.do_background_work();
    }

    fn pending(&mut self, stream: Stream) -> &mut PendingLine {
        match stream {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        }
    }

    /// Encodes one record: `bytes`, or the stream's pending line (then cleared) when None.
    fn record(
        &mut self,
        stream: Stream,
        bytes: Option<&[u8]>,
        piece: Piece,
        now: DateTime<Utc>,
    ) -> Result<(), LogError> {
        if self.file.is_full(self.encoded.len()) {
            self.write_encoded()?;
            self.file.rotate()?;
        }
        let pending = match stream {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        };
        let time = match piece {
            Piece::LineEnd => pending.partial_time.take().unwrap_or(now),
            Piece::Partial => *pending.partial_time.get_or_insert(now),
        };
        let line = bytes.unwrap_or(&pending.bytes);
        match &self.encoding {
            Encoding::Json { attrs } => {
                encode_json(&mut self.encoded, stream, line, attrs.as_deref(), time);
            }
            Encoding::Local => {
                let partial_id = match piece {
                    Piece::LineEnd => pending.partial_id.take(),
                    Piece::Partial => Some(
                        pending
                            .partial_id
                            .get_or_insert_with(random_partial_id)
                            .clone(),
                    ),
                };
                let partial = partial_id.as_deref().map(|id| {
                    pending.pieces += 1;
                    Partial {
                        id,
                        ordinal: pending.pieces,
                        last: piece == Piece::LineEnd,
                    }
                });
                if piece == Piece::LineEnd {
                    pending.pieces = 0;
                }
                let line = match piece {
                    Piece::LineEnd => &line[..line.len() - 1],
                    Piece::Partial => line,
                };
                local::encode(&mut self.encoded, stream, line, time, partial.as_ref());
            }
        }
        if bytes.is_none() {
            pending.bytes.clear();
        }
        self.last_time = time;
        Ok(())
    }

    fn write_encoded(&mut self) -> Result<(), LogError> {
        if self.encoded.is_empty() {
            return Ok(());
        }
        let result = self.file.write(&self.encoded, self.last_time);
        self.encoded.clear();
        result
    }
}

impl Drop for LogWriter {
    /// Output still pending when the writer goes away is not lost, and a
    /// rotated file being compressed is finished.
    fn drop(&mut self) {
        if !self.stdout.bytes.is_empty() || !self.stderr.bytes.is_empty() {
            if let Err(error) = self.flush(Utc::now()) {
                tracing::warn!(%error, "failed to write the last partial log lines");
            }
        }
        self.file.finish_background_work();
    }
}

/// moby's `stringid.GenerateRandomID`: 32 random bytes in hex, drawn again in the
/// unlikely case its short form would read as a number.
fn random_partial_id() -> String {
    let mut random = rand::thread_rng();
    loop {
        let bytes: [u8; 32] = random.gen();
        let id: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        if !id[..12].bytes().all(|byte| byte.is_ascii_digit()) {
            return id;
        }
    }
}

/// `{"a":"1",…}` as Go's `json.Marshal` of a `map[string]string` (sorted keys, HTML
/// characters escaped), which dockerd puts in each record's `attrs`.
fn encode_attributes(attributes: &BTreeMap<String, String>) -> Vec<u8> {
    let mut out = b"{".to_vec();
    for (index, (key, value)) in attributes.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        push_go_json_string(&mut out, key);
        out.push(b':');
        push_go_json_string(&mut out, value);
    }
    out.push(b'}');
    out
}

/// `{"log":…,"stream":"stdout","attrs":{…},"time":"…"}` and a newline, as
/// dockerd's `jsonlog.JSONLogs.MarshalJSONBuf` lays it out.
fn encode_json(
    out: &mut Vec<u8>,
    stream: Stream,
    line: &[u8],
    attrs: Option<&[u8]>,
    time: DateTime<Utc>,
) {
    out.extend_from_slice(b"{\"log\":");
    push_json_string(out, line);
    out.extend_from_slice(b",\"stream\":\"");
    out.extend_from_slice(stream.as_str().as_bytes());
    out.push(b'"');
    if let Some(attrs) = attrs {
        out.extend_from_slice(b",\"attrs\":");
        out.extend_from_slice(attrs);
    }
    out.extend_from_slice(b",\"time\":\"");
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
