//! What the monitor tells the CLI that started it, one JSON line each, over
//! a pipe: started (or failed), then the exit status.

use std::io::{BufRead, Write};
use std::os::fd::OwnedFd;

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MonitorMessage {
    Started {
        pid: i32,
    },
    /// The container could not start; `status` is Docker's exit status for
    /// that (125, 126 or 127).
    Failed {
        message: String,
        status: i32,
    },
    /// The container exited (after `--rm` removal when asked).
    Exited {
        code: i32,
    },
}

pub struct MonitorSender {
    pipe: Option<std::fs::File>,
}

impl MonitorSender {
    pub fn new(pipe: OwnedFd) -> Self {
        Self {
            pipe: Some(std::fs::File::from(pipe)),
        }
    }

    /// Sends one message; a CLI that went away is not an error (the
    /// container lives on without it, as with Docker).
    pub fn send(&mut self, message: &MonitorMessage) {
        let Some(pipe) = self.pipe.as_mut() else {
            return;
        };
        let mut line = serde_json::to_vec(message).unwrap_or_default();
        line.push(b'\n');
        if pipe.write_all(&line).is_err() {
            self.pipe = None;
        }
    }

    pub fn close(&mut self) {
        self.pipe = None;
    }
}

pub struct MonitorReceiver {
    reader: std::io::BufReader<std::fs::File>,
}

impl MonitorReceiver {
    pub fn new(pipe: OwnedFd) -> Self {
        Self {
            reader: std::io::BufReader::new(std::fs::File::from(pipe)),
        }
    }

    /// The pipe, for `poll` (see [`Self::has_buffered`]).
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(self.reader.get_ref())
    }

    /// True when a read already took more than it returned: the next
    /// message may be here while the pipe itself has nothing to poll for.
    pub fn has_buffered(&self) -> bool {
        !self.reader.buffer().is_empty()
    }

    /// The next message, or None when the monitor closed the pipe (it exited
    /// or was killed).
    pub fn receive(&mut self) -> Option<MonitorMessage> {
        let mut line = String::new();
        loop {
            line.clear();
            match self.reader.read_line(&mut line) {
                Ok(0) => return None,
                Ok(_) => {
                    if let Ok(message) = serde_json::from_str(line.trim_end()) {
                        return Some(message);
                    }
                }
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return None,
            }
        }
    }
}
