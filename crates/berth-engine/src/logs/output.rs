//! What `docker logs` prints for each record: the since/until window, the
//! stream choice, and the `-t`/`--details` prefixes.

use chrono::{DateTime, Utc};

use super::files::LogFormat;
use super::format::push_rfc3339_nano_fixed;
use super::local;
use super::record::Record;
use super::{LogError, Stream};

/// `docker logs` options. The default is the CLI's: everything, both streams,
/// no prefixes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogOptions {
    /// Only the last N records (`--tail N`); None is `--tail all`.
    pub tail: Option<usize>,
    /// Skip records before this time (`--since`), see [`super::parse_docker_time`].
    pub since: Option<DateTime<Utc>>,
    /// Stop at the first record after this time (`--until`).
    pub until: Option<DateTime<Utc>>,
    /// Prefix each record with its time (`-t`).
    pub timestamps: bool,
    pub stdout: bool,
    pub stderr: bool,
    /// Prefix each record with its extra attributes (`--details`).
    pub details: bool,
}

impl Default for LogOptions {
    fn default() -> Self {
        Self {
            tail: None,
            since: None,
            until: None,
            timestamps: false,
            stdout: true,
            stderr: true,
            details: false,
        }
    }
}

impl LogOptions {
    pub(crate) fn check(&self) -> Result<(), LogError> {
        if self.stdout || self.stderr {
            Ok(())
        } else {
            Err(LogError::NoStream)
        }
    }
}

/// Whether reading goes on after a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    /// A record after `until`: nothing more is printed, even when following.
    Stop,
}

/// Turns stored records into the bytes `docker logs` prints.
pub(crate) struct Printer<'o, Sink> {
    options: &'o LogOptions,
    format: LogFormat,
    /// Cleared at the first record at or after `since`: dockerd does not
    /// filter later records, whose times need not be in order.
    since: Option<DateTime<Utc>>,
    buffer: Vec<u8>,
    sink: Sink,
}

impl<'o, Sink: FnMut(Stream, &[u8])> Printer<'o, Sink> {
    pub fn new(options: &'o LogOptions, format: LogFormat, sink: Sink) -> Self {
        Self {
            options,
            format,
            since: options.since,
            buffer: Vec::new(),
            sink,
        }
    }

    /// Handles one record of the file (a json-file line without its newline,
    /// a local record's payload). One that does not decode, such as a line
    /// cut by a crash, is skipped.
    pub fn line(&mut self, line: &[u8]) -> Flow {
        let decoded = match self.format {
            LogFormat::JsonLines => Record::parse(line).map_err(|error| error.to_string()),
            LogFormat::Local => local::decode(line).ok_or_else(|| "bad protobuf".to_owned()),
        };
        let record = match decoded {
            Ok(record) => record,
            Err(error) => {
                tracing::debug!(%error, "skipping a corrupt log record");
                return Flow::Continue;
            }
        };
        if let Some(since) = self.since {
            if record.time < since {
                return Flow::Continue;
            }
            self.since = None;
        }
        if self.options.until.is_some_and(|until| record.time > until) {
            return Flow::Stop;
        }
        let Some(stream) = Stream::from_name(&record.stream) else {
            return Flow::Continue;
        };
        let wanted = match stream {
            Stream::Stdout => self.options.stdout,
            Stream::Stderr => self.options.stderr,
        };
        if wanted {
            self.print(stream, &record);
        }
        Flow::Continue
    }

    fn print(&mut self, stream: Stream, record: &Record<'_>) {
        self.buffer.clear();
        if self.options.timestamps {
            push_rfc3339_nano_fixed(&mut self.buffer, record.time);
            self.buffer.push(b' ');
        }
        if self.options.details {
            for (index, (key, value)) in record.attrs.iter().enumerate() {
                if index > 0 {
                    self.buffer.push(b',');
                }
                push_query_escaped(&mut self.buffer, key);
                self.buffer.push(b'=');
                push_query_escaped(&mut self.buffer, value);
            }
            self.buffer.push(b' ');
        }
        self.buffer.extend_from_slice(&record.log);
        (self.sink)(stream, &self.buffer);
    }
}

/// Go's `url.QueryEscape`, which `--details` applies to keys and values.
fn push_query_escaped(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &byte in text.as_bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(byte),
            b' ' => out.push(b'+'),
            _ => out.extend_from_slice(&[
                b'%',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn printed(options: &LogOptions, lines: &[&str]) -> (Vec<String>, Flow) {
        let mut out = Vec::new();
        let mut printer = Printer::new(
            options,
            LogFormat::JsonLines,
            |stream: Stream, bytes: &[u8]| {
                out.push(format!(
                    "{}:{}",
                    stream.as_str(),
                    String::from_utf8_lossy(bytes)
                ));
            },
        );
        let mut flow = Flow::Continue;
        for line in lines {
            flow = printer.line(line.as_bytes());
            if flow == Flow::Stop {
                break;
            }
        }
        (out, flow)
    }

    #[test]
    fn details_are_sorted_query_escaped_attributes_then_a_space() {
        // dockerd 20.10 printed `ab=x%26y+%C3%A9,tag=mytag,z=1 hi` for it.
        let line = r#"{"log":"hi\n","stream":"stdout","attrs":{"z":"1","tag":"mytag","ab":"x\u0026y é"},"time":"2026-11-30T03:16:34.621530336Z"}"#;
        let options = LogOptions {
            details: true,
            ..LogOptions::default()
        };
        let (out, _) = printed(&options, &[line]);
        assert_eq!(out, ["stdout:ab=x%26y+%C3%A9,tag=mytag,z=1 hi\n"]);
    }

    #[test]
    fn timestamps_come_before_details() {
        // `docker logs -t --details` of a record without attributes.
        let line = r#"{"log":"hi\n","stream":"stdout","time":"2026-11-30T03:15:46.1323123Z"}"#;
        let options = LogOptions {
            timestamps: true,
            details: true,
            ..LogOptions::default()
        };
        let (out, _) = printed(&options, &[line]);
        assert_eq!(out, ["stdout:2026-11-30T03:15:46.132312300Z  hi\n"]);
    }

    #[test]
    fn unknown_streams_and_corrupt_lines_are_skipped() {
        let lines = [
            r#"{"log":"a\n","stream":"stdin","time":"2024-01-01T00:00:00Z"}"#,
            r#"{"log":"b\n","stream":"stdo"#,
            "not json",
            r#"{"log":"c\n","stream":"stderr","time":"2024-01-01T00:00:01Z"}"#,
        ];
        let (out, flow) = printed(&LogOptions::default(), &lines);
        assert_eq!(out, ["stderr:c\n"]);
        assert_eq!(flow, Flow::Continue);
    }

    #[test]
    fn no_stream_chosen_is_dockers_error() {
        let options = LogOptions {
            stdout: false,
            stderr: false,
            ..LogOptions::default()
        };
        assert_eq!(
            options.check().unwrap_err().to_string(),
            "You must choose at least one stream"
        );
    }
}
