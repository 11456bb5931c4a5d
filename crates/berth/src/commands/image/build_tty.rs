//! BuildKit's terminal display of a build (`--progress tty`, and `auto`
//! on a terminal): a block headed `[+] Building 1.2s (3/5)` with one line
//! per step, its time at the right edge, done steps in blue, a failed one
//! in red, and the last lines of a running step's output under it,
//! redrawn in place every 100 ms. Once the build ends the block is drawn a
//! last time (`FINISHED`) and a failed step's output follows it, as
//! BuildKit prints it.
//!
//! [`Board`] holds what is shown and [`render`] turns it into lines; both
//! are plain data, so the layout is unit-tested without a terminal.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use berth_build::{BuildError, OutputStream, Progress, StepEnd, StepId, StepStart};

use super::build_plain::step_label;

/// How often the block is redrawn while the build runs.
const REFRESH: Duration = Duration::from_millis(100);
/// The lines of a running step's output shown under it (BuildKit's 6).
const LOG_LINES: usize = 6;

const BLUE: &str = "\x1b[34m";
const RED: &str = "\x1b[31m";
const RESET: &str = "\x1b[0m";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Running,
    Done,
    Cached,
    Failed,
    Cancelled,
}

/// One line of the block: a step, or an export step.
#[derive(Debug)]
struct Vertex {
    name: String,
    started: Instant,
    ended: Option<Instant>,
    state: State,
    /// Every line of its output with its time since the build's start
    /// (shown again under the block when the step fails).
    logs: Vec<(f64, String)>,
    /// Output not yet ended by a newline.
    partial: Vec<u8>,
    /// `=> => writing image …` lines under the export.
    children: Vec<String>,
}

/// What the display shows.
#[derive(Debug)]
pub struct Board {
    started: Instant,
    vertices: Vec<Vertex>,
    steps: BTreeMap<StepId, usize>,
    finished: Option<Instant>,
    warnings: Vec<String>,
}

impl Board {
    fn new(started: Instant) -> Self {
        Self {
            started,
            vertices: Vec::new(),
            steps: BTreeMap::new(),
            finished: None,
            warnings: Vec::new(),
        }
    }

    fn open(&mut self, name: String, now: Instant) -> usize {
        self.vertices.push(Vertex {
            name,
            started: now,
            ended: None,
            state: State::Running,
            logs: Vec::new(),
            partial: Vec::new(),
            children: Vec::new(),
        });
        self.vertices.len() - 1
    }

    fn step(&mut self, id: StepId, name: String, now: Instant) {
        let index = self.open(name, now);
        self.steps.insert(id, index);
    }

    fn output(&mut self, id: StepId, bytes: &[u8], now: Instant) {
        let since = now.duration_since(self.started).as_secs_f64();
        let Some(vertex) = self.steps.get(&id).map(|&index| &mut self.vertices[index]) else {
            return;
        };
        vertex.partial.extend_from_slice(bytes);
        while let Some(end) = vertex.partial.iter().position(|byte| *byte == b'\n') {
            let line: Vec<u8> = vertex.partial.drain(..=end).collect();
            let text = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
            vertex.logs.push((since, text));
        }
    }

    fn end(&mut self, id: StepId, state: State, now: Instant) {
        let since = now.duration_since(self.started).as_secs_f64();
        if let Some(vertex) = self.steps.get(&id).map(|&index| &mut self.vertices[index]) {
            if vertex.ended.is_none() {
                if !vertex.partial.is_empty() {
                    let text = String::from_utf8_lossy(&vertex.partial).into_owned();
                    vertex.logs.push((since, text));
                    vertex.partial.clear();
                }
                vertex.ended = Some(now);
                vertex.state = state;
            }
        }
    }

    /// `exporting to image` (opened by the first export line), with `text`
    /// under it.
    fn export(&mut self, text: &str, now: Instant) {
        let index = match self
            .vertices
            .iter()
            .position(|v| v.name == "exporting to image")
        {
            Some(index) => index,
            None => self.open("exporting to image".to_owned(), now),
        };
        let vertex = &mut self.vertices[index];
        vertex.children.push(text.to_owned());
        vertex.ended = Some(now);
        vertex.state = State::Done;
    }

    /// Steps still running when the build ends were stopped with it.
    fn finish(&mut self, now: Instant) {
        for vertex in &mut self.vertices {
            if vertex.ended.is_none() {
                vertex.ended = Some(now);
                vertex.state = State::Cancelled;
            }
        }
        self.finished = Some(now);
    }
}

/// One line of the block and its colour.
#[derive(Debug, PartialEq, Eq)]
pub struct Line {
    pub color: Option<&'static str>,
    pub text: String,
}

/// The block for a terminal `width` columns wide and `height` rows high
/// at `now`: the header, then the steps (the newest ones when they do not
/// all fit), each exactly `width - 1` columns.
pub fn render(board: &Board, now: Instant, width: usize, height: usize) -> Vec<Line> {
    let columns = width.max(20) - 1;
    let end = board.finished.unwrap_or(now);
    let done = board
        .vertices
        .iter()
        .filter(|vertex| vertex.ended.is_some())
        .count();
    let mut header = format!(
        "[+] Building {:.1}s ({done}/{})",
        end.duration_since(board.started).as_secs_f64(),
        board.vertices.len()
    );
    if board.finished.is_some() {
        header.push_str(" FINISHED");
    }
    let mut lines = Vec::new();
    for vertex in &board.vertices {
        let elapsed = vertex.ended.unwrap_or(now).duration_since(vertex.started);
        let time = format!("{:.1}s", elapsed.as_secs_f64());
        let (color, word) = match vertex.state {
            State::Running => (None, ""),
            State::Done => (Some(BLUE), ""),
            State::Cached => (Some(BLUE), "CACHED "),
            State::Failed => (Some(RED), "ERROR "),
            State::Cancelled => (Some(RED), "CANCELED "),
        };
        lines.push(Line {
            color,
            text: with_time(&format!(" => {word}{}", vertex.name), &time, columns),
        });
        for child in &vertex.children {
            lines.push(Line {
                color,
                text: with_time(&format!(" => => {child}"), "0.0s", columns),
            });
        }
        if vertex.state == State::Running {
            let skip = vertex.logs.len().saturating_sub(LOG_LINES);
            for (_, log) in &vertex.logs[skip..] {
                lines.push(Line {
                    color: None,
                    text: padded(&format!(" => => # {log}"), columns),
                });
            }
        }
    }
    let room = height.max(2) - 1;
    let skip = lines.len().saturating_sub(room);
    let mut block = vec![Line {
        color: None,
        text: padded(&header, columns),
    }];
    block.extend(lines.into_iter().skip(skip));
    block
}

/// `text` cut to leave two spaces before `time`, which ends at `columns`.
fn with_time(text: &str, time: &str, columns: usize) -> String {
    let room = columns.saturating_sub(time.chars().count() + 2);
    let text: String = text.chars().take(room).collect();
    let gap = columns.saturating_sub(text.chars().count() + time.chars().count());
    format!("{text}{:gap$}{time}", "")
}

/// `text` cut or padded to exactly `columns`.
fn padded(text: &str, columns: usize) -> String {
    let text: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(columns)
        .collect();
    format!("{text:columns$}")
}

/// The escape codes that replace a block of `previous` lines with `block`:
/// up to its first line, each line over the old one, the old lines left
/// below cleared, the cursor hidden while drawing.
pub fn frame(block: &[Line], previous: usize) -> String {
    let mut out = String::new();
    out.push_str(&"\x1b[1A".repeat(previous));
    out.push_str("\x1b[0G\x1b[?25l");
    for line in block {
        if let Some(color) = line.color {
            out.push_str(color);
        }
        out.push_str(&line.text);
        out.push('\n');
        if line.color.is_some() {
            out.push_str(RESET);
        }
    }
    for _ in block.len()..previous {
        out.push_str("\x1b[2K\n");
    }
    let below = previous.saturating_sub(block.len());
    out.push_str(&"\x1b[1A".repeat(below));
    out.push_str("\x1b[?25h");
    out
}

/// The terminal's size on stderr, 80×24 when it does not say.
fn terminal_size() -> (usize, usize) {
    let mut size = std::mem::MaybeUninit::<libc::winsize>::zeroed();
    // SAFETY: TIOCGWINSZ writes one winsize struct into `size`, which is
    // that struct's size; nothing else is read or written.
    let answered =
        unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, size.as_mut_ptr()) == 0 };
    if answered {
        // SAFETY: the ioctl succeeded, so it filled the struct.
        let size = unsafe { size.assume_init() };
        if size.ws_col > 0 && size.ws_row > 0 {
            return (usize::from(size.ws_col), usize::from(size.ws_row));
        }
    }
    (80, 24)
}

/// The board and the number of lines last drawn, shared with the ticker.
struct Shared {
    board: Board,
    drawn: usize,
}

impl Shared {
    fn draw(&mut self) {
        let (width, height) = terminal_size();
        let block = render(&self.board, Instant::now(), width, height);
        let text = frame(&block, self.drawn);
        self.drawn = block.len();
        let mut stderr = std::io::stderr().lock();
        let _ = stderr.write_all(text.as_bytes());
        let _ = stderr.flush();
    }
}

/// The display on stderr, redrawn by a thread of its own.
pub struct TtyProgress {
    shared: Arc<Mutex<Shared>>,
    stop: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
}

impl TtyProgress {
    pub fn start() -> Self {
        let shared = Arc::new(Mutex::new(Shared {
            board: Board::new(Instant::now()),
            drawn: 0,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let ticker = {
            let (shared, stop) = (Arc::clone(&shared), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(REFRESH);
                    if let Ok(mut shared) = shared.lock() {
                        if shared.board.finished.is_none() {
                            shared.draw();
                        }
                    }
                }
            })
        };
        Self {
            shared,
            stop,
            ticker: Some(ticker),
        }
    }

    fn shared(&self) -> MutexGuard<'_, Shared> {
        self.shared
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// An export step (`writing image sha256:…`, `naming to …`).
    pub fn export(&mut self, text: &str) {
        self.shared().board.export(text, Instant::now());
    }

    /// The last frame; then a failed step's output and the warnings.
    pub fn finish(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(ticker) = self.ticker.take() {
            let _ = ticker.join();
        }
        let mut shared = self.shared();
        shared.board.finish(Instant::now());
        shared.draw();
        let mut after = String::new();
        for vertex in &shared.board.vertices {
            if vertex.state == State::Failed {
                after.push_str(&format!("------\n > {}:\n", vertex.name));
                for (since, log) in &vertex.logs {
                    after.push_str(&format!("{since:.3} {log}\n"));
                }
                after.push_str("------\n");
            }
        }
        for warning in &shared.board.warnings {
            after.push_str(warning);
            after.push('\n');
        }
        let mut stderr = std::io::stderr().lock();
        let _ = stderr.write_all(after.as_bytes());
    }
}

impl Drop for TtyProgress {
    fn drop(&mut self) {
        if self.ticker.is_some() {
            self.finish();
        }
    }
}

impl Progress for TtyProgress {
    fn step(&mut self, step: &StepStart) {
        let name = format!("{} {}", step_label(step), step.instruction);
        self.shared().board.step(step.id, name, Instant::now());
    }

    fn output(&mut self, step: StepId, _stream: OutputStream, bytes: &[u8]) {
        self.shared().board.output(step, bytes, Instant::now());
    }

    fn step_end(&mut self, step: StepId, end: &StepEnd) {
        let state = match end {
            StepEnd::Cached(_) => State::Cached,
            StepEnd::Done(_) | StepEnd::Empty => State::Done,
        };
        self.shared().board.end(step, state, Instant::now());
    }

    fn step_failed(&mut self, step: StepId, error: &BuildError) {
        let state = match error {
            BuildError::Cancelled => State::Cancelled,
            _ => State::Failed,
        };
        self.shared().board.end(step, state, Instant::now());
    }

    fn warning(&mut self, message: &str) {
        self.shared().board.warnings.push(message.to_owned());
    }

    fn concurrent(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(block: &[Line]) -> Vec<String> {
        block
            .iter()
            .map(|line| line.text.trim_end().to_owned())
            .collect()
    }

    #[test]
    fn steps_show_their_state_colour_and_time_at_the_right_edge() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut board = Board::new(start);
        board.step(StepId(0), "[1/3] FROM busybox".to_owned(), at(0));
        board.end(StepId(0), State::Cached, at(0));
        board.step(StepId(1), "[2/3] RUN make".to_owned(), at(100));
        board.output(StepId(1), b"cc -c a.c\ncc -c b", at(200));
        let block = render(&board, at(1400), 80, 24);
        assert_eq!(
            texts(&block),
            [
                "[+] Building 1.4s (1/2)",
                " => CACHED [1/3] FROM busybox                                              0.0s",
                " => [2/3] RUN make                                                         1.3s",
                " => => # cc -c a.c",
            ]
        );
        assert!(block.iter().all(|line| line.text.chars().count() == 79));
        assert_eq!(block[1].color, Some(BLUE));
        assert_eq!(block[2].color, None);

        board.end(StepId(1), State::Failed, at(1500));
        board.export("writing image sha256:abc", at(1500));
        board.finish(at(1600));
        let block = render(&board, at(9000), 80, 24);
        assert_eq!(block[0].text.trim_end(), "[+] Building 1.6s (3/3) FINISHED");
        assert_eq!(block[2].color, Some(RED));
        assert!(block[2].text.starts_with(" => ERROR [2/3] RUN make "));
        // A failed step's output is printed after the block, not in it.
        assert_eq!(
            block[3].text.trim_end(),
            " => exporting to image                                                     0.0s"
        );
        assert_eq!(
            board.vertices[1].logs,
            [(0.2, "cc -c a.c".to_owned()), (1.5, "cc -c b".to_owned())]
        );
    }

    #[test]
    fn a_long_name_is_cut_before_the_time_and_only_the_newest_lines_fit() {
        let start = Instant::now();
        let mut board = Board::new(start);
        for id in 0..30 {
            board.step(
                StepId(id),
                format!("[{id}/30] RUN {}", "x".repeat(100)),
                start,
            );
        }
        let block = render(&board, start + Duration::from_secs(12), 60, 10);
        assert_eq!(block.len(), 10);
        assert!(
            block[9].text.starts_with(" => [29/30] RUN xxx"),
            "{:?}",
            block[9]
        );
        assert!(block[9].text.ends_with("xx  12.0s"), "{:?}", block[9]);
        assert!(block.iter().all(|line| line.text.chars().count() == 59));
    }

    #[test]
    fn a_frame_overwrites_the_last_one_and_clears_what_it_left() {
        let line = |text: &str, color| Line {
            color,
            text: text.to_owned(),
        };
        let first = frame(&[line("a", None), line("b", Some(BLUE))], 0);
        assert_eq!(first, "\x1b[0G\x1b[?25la\n\x1b[34mb\n\x1b[0m\x1b[?25h");
        let second = frame(&[line("c", None)], 2);
        assert_eq!(
            second,
            "\x1b[1A\x1b[1A\x1b[0G\x1b[?25lc\n\x1b[2K\n\x1b[1A\x1b[?25h"
        );
    }
}
