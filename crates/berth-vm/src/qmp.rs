//! A small QMP client (QEMU Machine Protocol, docs/interop/qmp-spec.rst):
//! one JSON object per line; the server greets, the client negotiates
//! capabilities, then each `{"execute": …}` gets a `return` or an `error`,
//! with asynchronous `event`s in between (skipped here).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use serde_json::{json, Value};

#[derive(Debug, thiserror::Error)]
pub enum QmpError {
    #[error("failed to talk to QEMU's monitor")]
    Io {
        #[source]
        source: std::io::Error,
    },
    #[error("QEMU's monitor closed")]
    Closed,
    #[error("QEMU's monitor sent something that is not JSON: {line:?}")]
    Json { line: String },
    #[error("QEMU's monitor did not greet with QMP: {line:?}")]
    Greeting { line: String },
    #[error("QMP command {command:?} failed: {class}: {description}")]
    Command {
        command: String,
        class: String,
        description: String,
    },
}

pub struct Qmp {
    stream: UnixStream,
    reader: BufReader<UnixStream>,
}

impl Qmp {
    /// Reads the greeting and negotiates capabilities. Every later read
    /// waits at most `timeout`.
    pub fn handshake(stream: UnixStream, timeout: Duration) -> Result<Qmp, QmpError> {
        let io = |source| QmpError::Io { source };
        stream.set_read_timeout(Some(timeout)).map_err(io)?;
        let reader = BufReader::new(stream.try_clone().map_err(io)?);
        let mut qmp = Qmp { stream, reader };
        let greeting = qmp.read_object()?;
        if greeting.get("QMP").is_none() {
            return Err(QmpError::Greeting {
                line: greeting.to_string(),
            });
        }
        qmp.execute("qmp_capabilities", None)?;
        Ok(qmp)
    }

    /// Runs `command` and returns its `return` value.
    pub fn execute(&mut self, command: &str, arguments: Option<Value>) -> Result<Value, QmpError> {
        let mut request = json!({ "execute": command });
        if let Some(arguments) = arguments {
            request["arguments"] = arguments;
        }
        let mut line = request.to_string();
        line.push('\n');
        self.stream
            .write_all(line.as_bytes())
            .map_err(|source| QmpError::Io { source })?;
        loop {
            let mut object = self.read_object()?;
            if let Some(value) = object.get_mut("return") {
                return Ok(value.take());
            }
            if let Some(error) = object.get("error") {
                let text = |key: &str| {
                    error
                        .get(key)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                };
                return Err(QmpError::Command {
                    command: command.to_string(),
                    class: text("class"),
                    description: text("desc"),
                });
            }
            // An event: not the answer.
        }
    }

    /// `query-status`'s `status`: `running`, `paused`, `shutdown`, …
    pub fn status(&mut self) -> Result<String, QmpError> {
        let value = self.execute("query-status", None)?;
        Ok(value
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_string())
    }

    /// Asks QEMU to exit. It may close the connection before answering.
    pub fn quit(&mut self) -> Result<(), QmpError> {
        match self.execute("quit", None) {
            Ok(_) | Err(QmpError::Closed) => Ok(()),
            Err(QmpError::Io { source })
                if source.kind() == std::io::ErrorKind::ConnectionReset =>
            {
                Ok(())
            }
            Err(error) => Err(error),
        }
    }

    fn read_object(&mut self) -> Result<Value, QmpError> {
        let mut line = String::new();
        let read = self
            .reader
            .read_line(&mut line)
            .map_err(|source| QmpError::Io { source })?;
        if read == 0 {
            return Err(QmpError::Closed);
        }
        serde_json::from_str(line.trim()).map_err(|_| QmpError::Json { line })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scripted monitor on the other end of a socket pair.
    fn server(script: &'static [(&'static str, &'static str)]) -> UnixStream {
        let (client, mut server) = UnixStream::pair().unwrap();
        std::thread::spawn(move || {
            server
                .write_all(b"{\"QMP\": {\"version\": {}, \"capabilities\": [\"oob\"]}}\r\n")
                .unwrap();
            let mut reader = BufReader::new(server.try_clone().unwrap());
            for (expect, answer) in script {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                assert!(line.contains(expect), "{line} lacks {expect}");
                server.write_all(answer.as_bytes()).unwrap();
            }
            // Dropping both ends closes the monitor, as QEMU does on quit.
        });
        client
    }

    #[test]
    fn negotiates_skips_events_and_reports_errors() {
        let client = server(&[
            ("qmp_capabilities", "{\"return\": {}}\r\n"),
            (
                "query-status",
                "{\"event\": \"STOP\", \"timestamp\": {}}\r\n{\"return\": {\"status\": \"paused\", \"running\": false}}\r\n",
            ),
            ("bogus", "{\"error\": {\"class\": \"CommandNotFound\", \"desc\": \"The command bogus has not been found\"}}\r\n"),
        ]);
        let mut qmp = Qmp::handshake(client, Duration::from_secs(5)).unwrap();
        assert_eq!(qmp.status().unwrap(), "paused");
        let error = qmp.execute("bogus", None).unwrap_err();
        assert!(
            matches!(&error, QmpError::Command { class, .. } if class == "CommandNotFound"),
            "{error}"
        );
    }

    #[test]
    fn quit_accepts_a_closed_monitor() {
        let client = server(&[("qmp_capabilities", "{\"return\": {}}\r\n"), ("quit", "")]);
        let mut qmp = Qmp::handshake(client, Duration::from_secs(5)).unwrap();
        qmp.quit().unwrap();
    }
}
