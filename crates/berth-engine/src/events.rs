//! The event log behind `berth events` and `GET /events`: the engine
//! appends one JSON line per event to `<root>/events.jsonl`, where it does
//! the action, so the CLI and the API server log the same events.
//!
//! Container events, with Docker's actions and attributes (every container
//! event also carries the container's labels, `name` and `image`):
//!
//! | action | logged by | own attributes |
//! |---|---|---|
//! | `create` | `create_container` | |
//! | `attach` | the monitor: a run started with streams attached, a client on its attach socket | |
//! | `start` | the monitor, each run | |
//! | `kill` | `kill`, `stop`, `restart`, `rm -f`, before the signal goes | `signal` (a number) |
//! | `oom` | the monitor, when the cgroup counted an OOM kill | |
//! | `die` | the monitor, each exit | `exitCode` |
//! | `stop` | `stop`, `restart` | |
//! | `restart` | `restart`, after the start | |
//! | `pause`, `unpause` | `pause`, `unpause` (and `commit`, `stop` and `rm -f` of a paused container) | |
//! | `rename` | `rename` | `oldName` (`/old`) |
//! | `update` | `update` | |
//! | `top` | `top` | |
//! | `export` | `export` | |
//! | `commit` | `commit` | `comment`, `imageID`, `imageRef` |
//! | `exec_create: CMD ARGS` | `exec` (the API: when the instance is made) | `execID` |
//! | `exec_start: CMD ARGS` | `exec`, before the process starts | `execID` |
//! | `exec_die` | whoever waits for the exec | `execID`, `exitCode` |
//! | `exec_create`, `exec_start`, `exec_die` of a health probe | the monitor, each probe | as above |
//! | `health_status: healthy` / `unhealthy` | the monitor, when a probe's result changes the status | |
//! | `destroy` | `rm`, `--rm` | |
//!
//! Then image pull/tag/untag/delete/load, network create/destroy/connect/
//! disconnect and volume create/destroy events.
//!
//! berth has no daemon to hold Docker's in-memory event ring, so the log is
//! a file every process appends to: one `write` of one line with
//! `O_APPEND`, which the kernel does not interleave with other appends. At
//! [`MAX_LOG_BYTES`] the file is renamed to `events.1.jsonl` (replacing the
//! older one) under an exclusive lock, so the log keeps between one and two
//! files' worth of events. Readers take past events from both files and
//! follow new ones by reading the open file to its end, across a rotation.
//!
//! Emitting never fails the action it reports: a log that cannot be
//! written is a warning.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use berth_store::Store;
use fs_err::os::unix::fs::OpenOptionsExt;
use fs_err::File;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::containers::record::ContainerRecord;
use crate::file_watch::FileWatcher;

/// The log is rotated past this size.
pub const MAX_LOG_BYTES: u64 = 1024 * 1024;

const LOG: &str = "events.jsonl";
const ROTATED: &str = "events.1.jsonl";

/// One event, as the log keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// `container`, `image`, `network` or `volume`.
    #[serde(rename = "type")]
    pub kind: String,
    pub action: String,
    /// The object: a container or network id, an image id or reference, a
    /// volume name.
    pub id: String,
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
    /// Nanoseconds since the Unix epoch.
    pub time_nano: i64,
}

impl Event {
    pub fn new(kind: &str, action: &str, id: &str) -> Self {
        let now = chrono::Utc::now();
        Self {
            kind: kind.to_owned(),
            action: action.to_owned(),
            id: id.to_owned(),
            attributes: BTreeMap::new(),
            time_nano: now
                .timestamp_nanos_opt()
                .unwrap_or_else(|| now.timestamp().saturating_mul(1_000_000_000)),
        }
    }

    pub fn with(mut self, key: &str, value: &str) -> Self {
        self.attributes.insert(key.to_owned(), value.to_owned());
        self
    }

    /// [`Event::with`] for each pair.
    pub fn with_all(self, attributes: &[(&str, &str)]) -> Self {
        attributes
            .iter()
            .fold(self, |event, (key, value)| event.with(key, value))
    }

    /// A container event: Docker's attributes are the container's labels,
    /// its `name` and its `image`.
    pub fn container(action: &str, record: &ContainerRecord) -> Self {
        let mut event = Self::new("container", action, &record.id);
        event.attributes = record
            .run
            .labels
            .iter()
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        event
            .with("name", &record.name)
            .with("image", &record.image_name)
    }

    /// Docker's `events.Message` (the API's and `--format`'s shape), with
    /// the deprecated `status`/`id`/`from` of container and image events.
    pub fn message_json(&self) -> Value {
        let mut message = json!({
            "Type": self.kind,
            "Action": self.action,
            "Actor": { "ID": self.id, "Attributes": self.attributes },
            "scope": "local",
            "time": self.time_nano.div_euclid(1_000_000_000),
            "timeNano": self.time_nano,
        });
        if matches!(self.kind.as_str(), "container" | "image") {
            message["status"] = json!(self.action);
            message["id"] = json!(self.id);
            if let Some(image) = self
                .attributes
                .get("image")
                .filter(|_| self.kind == "container")
            {
                message["from"] = json!(image);
            }
        }
        message
    }
}

fn log_path(root: &Path) -> PathBuf {
    root.join(LOG)
}

fn rotated_path(root: &Path) -> PathBuf {
    root.join(ROTATED)
}

/// Appends `event` to the log of the berth root `root`.
pub fn emit_to(root: &Path, event: &Event) {
    if let Err(error) = append(root, event) {
        tracing::warn!(%error, action = %event.action, "failed to record an event");
    }
}

/// Appends `event` to the log of `store`'s root.
pub fn emit(store: &Store, event: Event) {
    emit_to(store.root(), &event);
}

/// A container event (see [`Event::container`]).
pub fn emit_container(store: &Store, action: &str, record: &ContainerRecord) {
    emit(store, Event::container(action, record));
}

/// A container event with attributes of its own besides the labels, name
/// and image (`signal` on kill, `oldName` on rename, `execID` and
/// `exitCode` on exec events), to the log of the berth root `root`.
pub fn emit_container_with(
    root: &Path,
    action: &str,
    record: &ContainerRecord,
    attributes: &[(&str, &str)],
) {
    emit_to(root, &Event::container(action, record).with_all(attributes));
}

/// Docker's action for `exec_create` and `exec_start` names the command:
/// the entrypoint, a space, the arguments joined by spaces (moby
/// `daemon/exec.go`), so `exec_start: true ` ends in a space.
pub fn exec_action(action: &str, command: &[String]) -> String {
    let entrypoint = command.first().map_or("", String::as_str);
    let arguments = command.get(1..).unwrap_or_default().join(" ");
    format!("{action}: {entrypoint} {arguments}")
}

/// An image event: `id` is the image id or reference, `name` its name.
pub fn emit_image(store: &Store, action: &str, id: &str, name: &str) {
    emit(store, Event::new("image", action, id).with("name", name));
}

/// `untag` for each name `rmi` removed and `delete` for the image.
pub fn emit_image_removal(store: &Store, image_id: &str, removed: &[crate::images::RemovalEvent]) {
    for event in removed {
        match event {
            crate::images::RemovalEvent::Untagged(name) => {
                emit_image(store, "untag", image_id, name);
            }
            crate::images::RemovalEvent::Deleted(digest) if digest.to_string() == image_id => {
                emit_image(store, "delete", image_id, image_id);
            }
            crate::images::RemovalEvent::Deleted(_) => {}
        }
    }
}

/// A network event; `container` for connect and disconnect.
pub fn emit_network(store: &Store, action: &str, id: &str, name: &str, container: Option<&str>) {
    let mut event = Event::new("network", action, id)
        .with("name", name)
        .with("type", "bridge");
    if let Some(container) = container {
        event = event.with("container", container);
    }
    emit(store, event);
}

/// A volume event (`local` driver).
pub fn emit_volume(store: &Store, action: &str, name: &str) {
    emit(
        store,
        Event::new("volume", action, name).with("driver", "local"),
    );
}

fn append(root: &Path, event: &Event) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(event).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let path = log_path(root);
    let mut file = fs_err::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&path)?;
    // One write: appends from other processes land before or after it.
    file.write_all(&line)?;
    if file.metadata()?.len() > MAX_LOG_BYTES {
        rotate(root)?;
    }
    Ok(())
}

fn rotate(root: &Path) -> std::io::Result<()> {
    let locks = root.join("locks");
    fs_err::create_dir_all(&locks)?;
    let lock = File::create(locks.join("events.lock"))?.into_file();
    let _guard = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, errno)| std::io::Error::from(errno))?;
    // Another process may have rotated it while this one waited.
    let path = log_path(root);
    if fs_err::metadata(&path)?.len() > MAX_LOG_BYTES {
        fs_err::rename(&path, rotated_path(root))?;
    }
    Ok(())
}

/// Complete lines of `bytes` as events; a line that does not parse (cut
/// short by a crash) is skipped.
fn parse_lines(bytes: &[u8]) -> Vec<Event> {
    bytes
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.is_empty())
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect()
}

/// Reads new events from the log as they are appended, across rotations.
pub struct EventFollower {
    root: PathBuf,
    file: Option<File>,
    /// Bytes of a line whose end has not been written yet.
    partial: Vec<u8>,
    /// The root directory: the log is appended to, rotated and created there.
    changes: FileWatcher,
}

impl EventFollower {
    /// Opens the log: the events it holds now (oldest first) and a follower
    /// that returns the ones appended after them.
    pub fn open(root: &Path) -> (Vec<Event>, Self) {
        // Watched before the log is read: nothing appended after the read
        // waits for a timeout.
        let changes = FileWatcher::directory(root);
        let mut follower = Self {
            root: root.to_owned(),
            file: File::open(log_path(root)).ok(),
            partial: Vec::new(),
            changes,
        };
        let current_inode = follower
            .file
            .as_ref()
            .and_then(|file| file.metadata().ok())
            .map(|metadata| metadata.ino());
        let mut past = Vec::new();
        // The rotated file, unless it is the one just opened (rotated in
        // between; it is read below through the open file).
        if let Ok(mut rotated) = File::open(rotated_path(root)) {
            let same = rotated
                .metadata()
                .ok()
                .is_some_and(|metadata| Some(metadata.ino()) == current_inode);
            let mut bytes = Vec::new();
            if !same && rotated.read_to_end(&mut bytes).is_ok() {
                past.extend(parse_lines(&bytes));
            }
        }
        past.extend(follower.read_new());
        (past, follower)
    }

    /// A follower of the events appended from now on, and the logged ones
    /// only when a window (`since`/`until`) asks for them. Without one the
    /// log is not read at all: reading and parsing its one to two MiB took
    /// long enough (debug build, a busy machine) for events that came after
    /// the request to be counted as past ones and dropped (compose's
    /// `events` tests, run right before `up`).
    pub fn open_for(root: &Path, since: Option<i64>, until: Option<i64>) -> (Vec<Event>, Self) {
        if since.is_some() || until.is_some() {
            return Self::open(root);
        }
        let changes = FileWatcher::directory(root);
        let file = File::open(log_path(root)).ok().and_then(|mut file| {
            std::io::Seek::seek(&mut file, std::io::SeekFrom::End(0)).ok()?;
            Some(file)
        });
        (
            Vec::new(),
            Self {
                root: root.to_owned(),
                file,
                partial: Vec::new(),
                changes,
            },
        )
    }

    /// Events appended since the last call (or since `open`).
    pub fn poll(&mut self) -> Vec<Event> {
        let mut events = self.read_new();
        // Rotated away (or created since)? Finish the old file, then
        // start on the new one.
        let current = fs_err::metadata(log_path(&self.root))
            .ok()
            .map(|metadata| metadata.ino());
        let open = self
            .file
            .as_ref()
            .and_then(|file| file.metadata().ok())
            .map(|metadata| metadata.ino());
        if current.is_some() && current != open {
            events.extend(self.read_new());
            self.partial.clear();
            self.file = File::open(log_path(&self.root)).ok();
            events.extend(self.read_new());
        }
        events
    }

    /// Returns once the log may have new events (the root changed), or
    /// after `timeout`.
    pub fn wait(&mut self, timeout: std::time::Duration) {
        self.changes.wait(timeout);
    }

    fn read_new(&mut self) -> Vec<Event> {
        let Some(file) = self.file.as_mut() else {
            return Vec::new();
        };
        let mut bytes = std::mem::take(&mut self.partial);
        if file.read_to_end(&mut bytes).is_err() {
            return Vec::new();
        }
        // Keep an unfinished last line for the next call.
        let complete = bytes
            .iter()
            .rposition(|byte| *byte == b'\n')
            .map_or(0, |index| index + 1);
        self.partial = bytes.split_off(complete);
        parse_lines(&bytes)
    }
}

/// The longest [`watch`] waits for an event before it asks whether the
/// reader still wants them. Events themselves are delivered as they are
/// logged: the wait ends when the log changes.
pub const LIVENESS_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// What `docker events` shows, for the API server and the CLI alike: with
/// `since` or `until` (nanoseconds since the epoch), the logged events in
/// that window first (as dockerd replays its buffer); then events as they
/// are logged, until `until` passes. Each event `filter` passes goes to
/// `deliver`, which returns false to stop (the reader left);
/// `still_wanted` is asked between polls. True when `until` ended it.
pub fn watch(
    root: &Path,
    since: Option<i64>,
    until: Option<i64>,
    filter: &EventFilter,
    deliver: impl FnMut(&Event) -> bool,
    still_wanted: impl FnMut() -> bool,
) -> bool {
    let opened = EventFollower::open_for(root, since, until);
    watch_opened(opened, since, until, filter, deliver, still_wanted)
}

/// [`watch`] on a log opened before: a server opens it before it answers,
/// so that nothing the client does after the answer can be missed.
pub fn watch_opened(
    (past, mut follower): (Vec<Event>, EventFollower),
    since: Option<i64>,
    until: Option<i64>,
    filter: &EventFilter,
    mut deliver: impl FnMut(&Event) -> bool,
    mut still_wanted: impl FnMut() -> bool,
) -> bool {
    let mut send = |events: Vec<Event>| {
        events
            .iter()
            .filter(|event| {
                since.is_none_or(|since| event.time_nano >= since)
                    && until.is_none_or(|until| event.time_nano <= until)
                    && filter.matches(event)
            })
            .all(&mut deliver)
    };
    if (since.is_some() || until.is_some()) && !send(past) {
        return false;
    }
    loop {
        let now = chrono::Utc::now().timestamp_nanos_opt().unwrap_or(i64::MAX);
        let passed = until.is_some_and(|until| now > until);
        // Events logged up to `until` may still be unread: one last poll.
        if !send(follower.poll()) {
            return false;
        }
        if passed {
            return true;
        }
        if !still_wanted() {
            return false;
        }
        let wait = until.map_or(LIVENESS_INTERVAL, |until| {
            let left = u64::try_from(until.saturating_sub(now)).unwrap_or(0);
            LIVENESS_INTERVAL.min(std::time::Duration::from_nanos(left))
        });
        follower.wait(wait);
    }
}

/// Docker's event filters (`--filter`, the API's `filters`): values of
/// one key ORed, keys ANDed, every `label` must hold.
#[derive(Clone, Debug, Default)]
pub struct EventFilter {
    pairs: Vec<(String, String)>,
}

/// The filter keys `events` accepts.
pub const EVENT_FILTERS: &[&str] = &[
    "container",
    "event",
    "image",
    "label",
    "network",
    "scope",
    "type",
    "volume",
];

/// What can be wrong with an events request.
#[derive(Debug, thiserror::Error)]
pub enum EventsError {
    /// Docker's words.
    #[error("invalid filter '{key}'")]
    InvalidFilter { key: String },
}

impl EventsError {
    pub fn kind(&self) -> crate::ErrorKind {
        match self {
            Self::InvalidFilter { .. } => crate::ErrorKind::InvalidArgument,
        }
    }
}

impl EventFilter {
    /// Refuses keys Docker does not know for events (or berth cannot have).
    pub fn new(pairs: Vec<(String, String)>) -> Result<Self, crate::EngineError> {
        if let Some((key, _)) = pairs
            .iter()
            .find(|(key, _)| !EVENT_FILTERS.contains(&key.as_str()))
        {
            return Err(EventsError::InvalidFilter { key: key.clone() }.into());
        }
        Ok(Self { pairs })
    }

    fn values(&self, key: &str) -> Vec<&str> {
        self.pairs
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, value)| value.as_str())
            .collect()
    }

    /// A key absent from the filter passes; else one of its values must.
    fn any(&self, key: &str, test: impl Fn(&str) -> bool) -> bool {
        let values = self.values(key);
        values.is_empty() || values.into_iter().any(test)
    }

    /// `event` values match exactly, unless one of them is `exec_create`,
    /// `exec_start` or `health_status`: then each is a prefix (those
    /// actions carry the command, `exec_start: sh -c …`; moby
    /// `daemon/events/filter.go`, issue #25798).
    fn matches_action(&self, action: &str) -> bool {
        let values = self.values("event");
        let prefixes = values
            .iter()
            .any(|value| matches!(*value, "exec_create" | "exec_start" | "health_status"));
        values.is_empty()
            || values
                .into_iter()
                .any(|value| value == action || prefixes && action.starts_with(value))
    }

    pub fn matches(&self, event: &Event) -> bool {
        let attribute = |name: &str| event.attributes.get(name).map(String::as_str);
        // Docker's FuzzyMatch: equal to, or a prefix of, the id or the name.
        let fuzzy_name = |wanted: &str| {
            event.id.starts_with(wanted)
                || attribute("name").is_some_and(|name| name.starts_with(wanted))
        };
        let of_kind = |kind: &str, wanted: &str| event.kind == kind && fuzzy_name(wanted);
        self.any("type", |wanted| event.kind == wanted)
            && self.matches_action(&event.action)
            && self.any("scope", |wanted| wanted == "local")
            && self.any("container", |wanted| of_kind("container", wanted))
            && self.any("network", |wanted| of_kind("network", wanted))
            && self.any("volume", |wanted| of_kind("volume", wanted))
            && self.any("image", |wanted| {
                let name = if event.kind == "image" {
                    attribute("name")
                } else {
                    attribute("image")
                };
                let without_tag = |text: &str| -> String {
                    match text.rsplit_once(':') {
                        Some((name, tag)) if !tag.contains('/') => name.to_owned(),
                        _ => text.to_owned(),
                    }
                };
                event.id == wanted
                    || name.is_some_and(|name| {
                        name == wanted
                            || without_tag(name) == wanted
                            || without_tag(name) == without_tag(wanted) && !wanted.contains(':')
                    })
            })
            && self
                .values("label")
                .into_iter()
                .all(|wanted| match wanted.split_once('=') {
                    Some((key, value)) => attribute(key) == Some(value),
                    None => attribute(wanted).is_some(),
                })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect()
    }

    #[test]
    fn appends_follows_and_rotates() {
        let root = tempfile::tempdir().unwrap();
        let (past, mut follower) = EventFollower::open(root.path());
        assert!(past.is_empty());
        emit_to(root.path(), &Event::new("volume", "create", "data"));
        // The follower was opened before the log existed.
        let seen = follower.poll();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].action, "create");
        assert!(follower.poll().is_empty());

        // Enough events to rotate at least once; the follower sees each
        // exactly once, in order.
        let padding = "x".repeat(1000);
        let count = 2 * MAX_LOG_BYTES as usize / 1000 + 10;
        let mut seen = Vec::new();
        for index in 0..count {
            emit_to(
                root.path(),
                &Event::new("volume", "destroy", &index.to_string()).with("pad", &padding),
            );
            if index % 97 == 0 {
                seen.extend(follower.poll());
            }
        }
        seen.extend(follower.poll());
        let ids: Vec<usize> = seen.iter().map(|event| event.id.parse().unwrap()).collect();
        assert_eq!(ids, (0..count).collect::<Vec<_>>());
        assert!(rotated_path(root.path()).exists());
        let size = fs_err::metadata(log_path(root.path())).unwrap().len();
        assert!(size <= MAX_LOG_BYTES, "{size}");

        // A new reader gets what both files hold, oldest first.
        let (past, _) = EventFollower::open(root.path());
        let ids: Vec<usize> = past.iter().map(|event| event.id.parse().unwrap()).collect();
        assert!(ids.len() > 1000 && ids.len() < count, "{}", ids.len());
        assert!(ids.windows(2).all(|pair| pair[0] + 1 == pair[1]));
        assert_eq!(ids.last(), Some(&(count - 1)));
    }

    #[test]
    fn a_reader_without_a_window_skips_the_log_and_sees_what_comes_after() {
        let root = tempfile::tempdir().unwrap();
        emit_to(root.path(), &Event::new("volume", "create", "before"));
        let (past, mut follower) = EventFollower::open_for(root.path(), None, None);
        assert!(past.is_empty());
        assert!(follower.poll().is_empty());
        emit_to(root.path(), &Event::new("volume", "create", "after"));
        let seen: Vec<String> = follower.poll().into_iter().map(|event| event.id).collect();
        assert_eq!(seen, ["after"]);
        // With a window the logged ones are read.
        let (past, _) = EventFollower::open_for(root.path(), Some(0), None);
        assert_eq!(past.len(), 2);
    }

    #[test]
    fn a_waiting_reader_wakes_when_an_event_is_logged() {
        // Docker delivers an event as it happens; compose's `events` test
        // stops its reader right after `up` returns.
        let root = tempfile::tempdir().unwrap();
        let (_, mut follower) = EventFollower::open(root.path());
        let path = root.path().to_owned();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            emit_to(&path, &Event::new("volume", "create", "data"));
        });
        let started = std::time::Instant::now();
        follower.wait(std::time::Duration::from_secs(30));
        let waited = started.elapsed();
        writer.join().unwrap();
        // The log's creation ended the wait: not a timeout, not a poll.
        assert!(
            waited >= std::time::Duration::from_millis(250),
            "{waited:?}"
        );
        assert!(waited < std::time::Duration::from_secs(10), "{waited:?}");
        assert_eq!(follower.poll().len(), 1);
    }

    #[test]
    fn a_line_written_in_two_parts_is_read_once_whole() {
        let root = tempfile::tempdir().unwrap();
        emit_to(root.path(), &Event::new("volume", "create", "a"));
        let (past, mut follower) = EventFollower::open(root.path());
        assert_eq!(past.len(), 1);
        let line = serde_json::to_string(&Event::new("volume", "create", "b")).unwrap();
        let (first, second) = line.split_at(10);
        let mut file = fs_err::OpenOptions::new()
            .append(true)
            .open(log_path(root.path()))
            .unwrap();
        file.write_all(first.as_bytes()).unwrap();
        assert!(follower.poll().is_empty());
        file.write_all(format!("{second}\n").as_bytes()).unwrap();
        let seen = follower.poll();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].id, "b");
    }

    #[test]
    fn exec_actions_carry_the_command_as_dockers() {
        let command = |words: &[&str]| {
            words
                .iter()
                .map(|word| (*word).to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            exec_action("exec_start", &command(&["sh", "-c", "exit 3"])),
            "exec_start: sh -c exit 3"
        );
        // Docker joins the entrypoint and the (here empty) arguments with
        // a space.
        assert_eq!(
            exec_action("exec_create", &command(&["true"])),
            "exec_create: true "
        );

        let root = tempfile::tempdir().unwrap();
        let (_, mut follower) = EventFollower::open(root.path());
        let event = Event::new(
            "container",
            &exec_action("exec_start", &command(&["ls", "/"])),
            "c0ffee",
        )
        .with_all(&[("execID", "e1"), ("name", "web")]);
        emit_to(root.path(), &event);
        let seen = follower.poll();
        assert_eq!(seen, [event]);
        let message = seen[0].message_json();
        assert_eq!(message["Action"], "exec_start: ls /");
        assert_eq!(message["status"], "exec_start: ls /");
        assert_eq!(message["Actor"]["Attributes"]["execID"], "e1");
    }

    #[test]
    fn docker_filters() {
        let container = Event::new("container", "start", "0123abcd")
            .with("name", "web")
            .with("image", "busybox:latest")
            .with("tier", "front");
        let network = Event::new("network", "connect", "beef")
            .with("name", "app")
            .with("container", "0123abcd");
        let filter = |list: &[(&str, &str)]| EventFilter::new(pairs(list)).unwrap();
        assert!(filter(&[]).matches(&container));
        assert!(filter(&[("type", "container"), ("event", "start")]).matches(&container));
        assert!(filter(&[("event", "die"), ("event", "start")]).matches(&container));
        assert!(!filter(&[("type", "network")]).matches(&container));
        assert!(filter(&[("container", "web")]).matches(&container));
        assert!(filter(&[("container", "0123")]).matches(&container));
        // A prefix of the name, as Docker's FuzzyMatch.
        assert!(filter(&[("container", "we")]).matches(&container));
        assert!(!filter(&[("container", "eb")]).matches(&container));
        assert!(!filter(&[("container", "web")]).matches(&network));
        assert!(filter(&[("network", "app")]).matches(&network));
        assert!(filter(&[("image", "busybox")]).matches(&container));
        assert!(filter(&[("image", "busybox:latest")]).matches(&container));
        assert!(!filter(&[("image", "busybox:1")]).matches(&container));
        assert!(filter(&[("label", "tier=front"), ("label", "name")]).matches(&container));
        assert!(!filter(&[("label", "tier=front"), ("label", "other")]).matches(&container));
        let error = EventFilter::new(pairs(&[("bogus", "x")])).unwrap_err();
        assert_eq!(error.to_string(), "invalid filter 'bogus'");
        assert_eq!(error.kind(), crate::ErrorKind::InvalidArgument);

        // `exec_create`/`exec_start` among the values: each is a prefix
        // (the actions carry the command); otherwise actions match exactly.
        let exec_start = Event::new(
            "container",
            &exec_action("exec_start", &["true".into()]),
            "0123abcd",
        );
        assert!(filter(&[("event", "exec_start")]).matches(&exec_start));
        assert!(!filter(&[("event", "exec_")]).matches(&exec_start));
        assert!(filter(&[("event", "exec_"), ("event", "exec_create")]).matches(&exec_start));
        assert!(!filter(&[("event", "exec_create")]).matches(&exec_start));
        assert!(!filter(&[("event", "star")]).matches(&container));
        assert!(filter(&[("event", "star"), ("event", "exec_start")]).matches(&container));

        let message = container.message_json();
        assert_eq!(message["Type"], "container");
        assert_eq!(message["status"], "start");
        assert_eq!(message["from"], "busybox:latest");
        assert_eq!(message["Actor"]["Attributes"]["name"], "web");
        assert_eq!(message["time"], container.time_nano / 1_000_000_000);
        assert!(network.message_json().get("status").is_none());
    }
}
