//! Pull and push progress as the docker CLI shows it (docker/cli
//! `jsonmessage.DisplayJSONMessagesStream`): on a terminal, one line per
//! layer redrawn in place with a progress bar; elsewhere each status once,
//! without the byte counts.

use std::io::Write;
use std::sync::Mutex;

use berth_engine::images::pull::{PullEvent, PushEvent};

use crate::format::units::human_size_with_precision;

/// Width of the bar between the brackets (Docker's).
const BAR_WIDTH: u64 = 50;

pub struct ProgressDisplay {
    state: Mutex<State>,
}

struct State {
    out: Box<dyn Write + Send>,
    terminal: bool,
    /// Ids of the lines printed so far, top first (`None`: a plain line).
    lines: Vec<Option<String>>,
    /// What was last printed for each id, to print each status once.
    last: Vec<(String, String)>,
}

impl ProgressDisplay {
    pub fn new(out: Box<dyn Write + Send>, terminal: bool) -> Self {
        Self {
            state: Mutex::new(State {
                out,
                terminal,
                lines: Vec::new(),
                last: Vec::new(),
            }),
        }
    }

    pub fn pull(&self, event: PullEvent) {
        match event {
            PullEvent::PullingFrom {
                reference,
                repository,
            } => self.line(
                Some(&reference),
                &format!("Pulling from {repository}"),
                None,
            ),
            PullEvent::Layer { id, status } => {
                self.line(Some(&id), status.text(), status.progress())
            }
            PullEvent::Digest(digest) => self.line(None, &format!("Digest: {digest}"), None),
            PullEvent::Status(text) => self.line(None, &format!("Status: {text}"), None),
        }
    }

    pub fn push(&self, event: PushEvent) {
        match event {
            PushEvent::Repository(name) => self.line(
                None,
                &format!("The push refers to repository [{name}]"),
                None,
            ),
            PushEvent::Layer { id, status } => {
                self.line(Some(&id), &status.text(), status.progress())
            }
            PushEvent::Pushed { tag, digest, size } => {
                self.line(None, &format!("{tag}: digest: {digest} size: {size}"), None)
            }
        }
    }

    /// A line of its own (`Using default tag: latest`).
    pub fn note(&self, text: &str) {
        self.line(None, text, None);
    }

    fn line(&self, id: Option<&str>, status: &str, progress: Option<(u64, u64)>) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        // A closed pipe must not stop the pull; the result is what matters.
        let _ = state.show(id, status, progress);
    }
}

impl State {
    fn show(
        &mut self,
        id: Option<&str>,
        status: &str,
        progress: Option<(u64, u64)>,
    ) -> std::io::Result<()> {
        let text = match id {
            Some(id) => format!("{id}: {status}"),
            None => status.to_owned(),
        };
        if !self.terminal {
            // Piped: statuses with a progress bar are left out, the others
            // printed once each (Docker's non-terminal output).
            if progress.is_some() || status == "Extracting" {
                return Ok(());
            }
            if let Some(id) = id {
                if self
                    .last
                    .iter()
                    .any(|(seen, last)| seen == id && last == status)
                {
                    return Ok(());
                }
                self.remember(id, status);
            }
            writeln!(self.out, "{text}")?;
            return self.out.flush();
        }
        let line = match progress {
            Some((current, total)) => format!("{text} {}", bar(current, total)),
            None => text,
        };
        let position = id.and_then(|id| {
            self.lines
                .iter()
                .position(|line| line.as_deref() == Some(id))
        });
        match position {
            Some(position) => {
                let up = self.lines.len() - position;
                write!(self.out, "\x1b[{up}A\r\x1b[2K{line}\x1b[{up}B\r")?;
            }
            None => {
                writeln!(self.out, "\x1b[2K{line}")?;
                self.lines.push(id.map(str::to_owned));
            }
        }
        self.out.flush()
    }

    fn remember(&mut self, id: &str, status: &str) {
        match self.last.iter_mut().find(|(seen, _)| seen == id) {
            Some(entry) => entry.1 = status.to_owned(),
            None => self.last.push((id.to_owned(), status.to_owned())),
        }
    }
}

/// `[=====>     ]    1.2MB/3.4MB`, as Docker's `JSONProgress.String`:
/// one `=` per 2%, the current size right-aligned in 8 columns.
pub fn bar(current: u64, total: u64) -> String {
    let current_text = human_size_with_precision(current, 4);
    if total == 0 || current > total {
        return format!("{current_text:>8}");
    }
    let filled = (current.saturating_mul(100) / total / 2).min(BAR_WIDTH);
    let filled = usize::try_from(filled).unwrap_or(0);
    let blank = usize::try_from(BAR_WIDTH).unwrap_or(0) - filled;
    format!(
        "[{}>{}] {current_text:>8}/{}",
        "=".repeat(filled),
        " ".repeat(blank),
        human_size_with_precision(total, 4)
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use berth_engine::images::pull::LayerStatus;

    use super::*;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buffer: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buffer);
            Ok(buffer.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn layer(status: LayerStatus) -> PullEvent {
        PullEvent::Layer {
            id: "0123456789ab".into(),
            status,
        }
    }

    #[test]
    fn bars_look_like_dockers() {
        assert_eq!(
            bar(1_200_000, 3_400_000),
            format!("[{}>{}]    1.2MB/3.4MB", "=".repeat(17), " ".repeat(33))
        );
        assert_eq!(
            bar(772_800, 772_800),
            format!("[{}>]  772.8kB/772.8kB", "=".repeat(50))
        );
        assert_eq!(bar(0, 10), format!("[>{}]       0B/10B", " ".repeat(50)));
    }

    #[test]
    fn piped_output_prints_each_status_once_without_bars() {
        let out = Shared::default();
        let display = ProgressDisplay::new(Box::new(out.clone()), false);
        display.pull(PullEvent::PullingFrom {
            reference: "1".into(),
            repository: "x".into(),
        });
        display.pull(layer(LayerStatus::PullingFsLayer));
        display.pull(layer(LayerStatus::Downloading {
            current: 1,
            total: 2,
        }));
        display.pull(layer(LayerStatus::DownloadComplete));
        display.pull(layer(LayerStatus::DownloadComplete));
        display.pull(layer(LayerStatus::Extracting));
        display.pull(layer(LayerStatus::PullComplete));
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text,
            "1: Pulling from x\n0123456789ab: Pulling fs layer\n0123456789ab: Download complete\n0123456789ab: Pull complete\n"
        );
    }

    #[test]
    fn terminal_output_redraws_a_layers_line() {
        let out = Shared::default();
        let display = ProgressDisplay::new(Box::new(out.clone()), true);
        display.pull(layer(LayerStatus::PullingFsLayer));
        display.pull(PullEvent::Layer {
            id: "ba9876543210".into(),
            status: LayerStatus::PullingFsLayer,
        });
        display.pull(layer(LayerStatus::PullComplete));
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert!(
            text.ends_with("\x1b[2A\r\x1b[2K0123456789ab: Pull complete\x1b[2B\r"),
            "{text:?}"
        );
    }
}
