//! `load` and `pull` killed (SIGKILL) at several moments: the next berth
//! command leaves no blob, layer or staging entry that no image references,
//! the store passes SQLite's integrity check and shows no image that is not
//! whole; a live load beside a killed one is not disturbed; `image prune`
//! reports the bytes `du` sees go, `system df` the bytes `du` sees used;
//! the metadata database shrinks after many rows go.
#![allow(clippy::unwrap_used)]

#[allow(dead_code)]
#[path = "registry_pull_push/proxy.rs"]
mod proxy;
mod support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use berth_registry::testing::TestRegistry;
use berth_types::Digest;
use proxy::ThrottlingProxy;
use serde_json::json;
use support::Berth;

/// Layers of the big test image, each one file of random bytes.
const LAYERS: usize = 4;
const LAYER_BYTES: usize = 24 * 1024 * 1024;

fn random_bytes(length: usize) -> Vec<u8> {
    let mut bytes = vec![0; length];
    fs_err::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut bytes)
        .unwrap();
    bytes
}

/// A `docker save` archive at `path` of an image `name` with `layers`
/// uncompressed layers of `bytes` random bytes each. Returns the image id.
fn write_archive(path: &Path, name: &str, layers: usize, bytes: usize) -> Digest {
    let mut diff_ids = Vec::new();
    let mut archive = tar::Builder::new(fs_err::File::create(path).unwrap());
    let mut layer_names = Vec::new();
    for index in 0..layers {
        let mut layer = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes as u64);
        header.set_mode(0o644);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(1_704_067_200);
        header.set_entry_type(tar::EntryType::Regular);
        layer
            .append_data(
                &mut header,
                format!("layer{index}.bin"),
                &random_bytes(bytes)[..],
            )
            .unwrap();
        let layer = layer.into_inner().unwrap();
        diff_ids.push(Digest::of_bytes(&layer).to_string());
        let member = format!("{index}/layer.tar");
        append(&mut archive, &member, &layer);
        layer_names.push(member);
    }
    let config = serde_json::to_vec(&json!({
        "architecture": "amd64",
        "os": "linux",
        "created": "2024-01-01T00:00:00Z",
        "config": { "Cmd": ["/layer0.bin"] },
        "rootfs": { "type": "layers", "diff_ids": diff_ids },
    }))
    .unwrap();
    let id = Digest::of_bytes(&config);
    let config_name = format!("{}.json", id.hex());
    append(&mut archive, &config_name, &config);
    let manifest = serde_json::to_vec(&json!([{
        "Config": config_name,
        "RepoTags": [name],
        "Layers": layer_names,
    }]))
    .unwrap();
    append(&mut archive, "manifest.json", &manifest);
    archive.into_inner().unwrap();
    id
}

fn append(archive: &mut tar::Builder<fs_err::File>, name: &str, data: &[u8]) {
    let mut header = tar::Header::new_gnu();
    header.set_size(data.len() as u64);
    header.set_mode(0o644);
    header.set_uid(0);
    header.set_gid(0);
    header.set_entry_type(tar::EntryType::Regular);
    archive.append_data(&mut header, name, data).unwrap();
}

fn spawn(mut command: Command) -> Child {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Kills `child` with SIGKILL (if it still runs) and reaps it; whether it
/// had ended on its own first.
fn kill9(child: &mut Child) -> bool {
    let ended = child.try_wait().unwrap().is_some();
    if !ended {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
    }
    child.wait().unwrap();
    ended
}

/// Waits until `ready` holds or `child` ends (false then), for at most a
/// minute.
fn wait_for(child: &mut Child, ready: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if ready() {
            return true;
        }
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            if let Some(pipe) = child.stderr.as_mut() {
                let _ = pipe.read_to_string(&mut stderr);
            }
            eprintln!("the command ended first ({status}): {stderr}");
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("neither the moment waited for came nor did the command end");
}

fn entries(path: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = fs_err::read_dir(path)
        .map(|entries| entries.flatten().map(|entry| entry.path()).collect())
        .unwrap_or_default();
    found.sort();
    found
}

/// Whether `tmp/` holds a staging entry with data in it (a load's archive
/// being extracted, a download under way).
fn staging_has_data(root: &Path) -> bool {
    entries(&root.join("tmp"))
        .iter()
        .any(|entry| berth_store::disk_usage(entry).unwrap_or(0) > 1024 * 1024)
}

/// The blobs and layers every image in the root references, from the
/// store itself (opened after the command that was to clean up).
fn referenced(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let store = berth_store::Store::open(root).unwrap();
    let (layers, blobs) = store.referenced_content().unwrap();
    let mut layers: Vec<PathBuf> = layers.iter().map(|id| store.layers().path(id)).collect();
    let mut blobs: Vec<PathBuf> = blobs.iter().map(|id| store.blobs().path(id)).collect();
    layers.sort();
    blobs.sort();
    (layers, blobs)
}

/// What a killed command may leave after the next command ran: nothing
/// unreferenced, no staging, a sound database, and every image listed
/// whole (its layers and blobs on disk).
#[track_caller]
fn assert_clean(berth: &Berth) {
    let root = berth.root();
    assert_eq!(
        entries(&root.join("tmp")),
        Vec::<PathBuf>::new(),
        "staging left"
    );
    let (layers, blobs) = referenced(root);
    assert_eq!(
        entries(&root.join("layers")),
        layers,
        "unreferenced layers left"
    );
    assert_eq!(
        entries(&root.join("blobs/sha256")),
        blobs,
        "unreferenced blobs left"
    );
    let store = berth_store::Store::open(root).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok");
    for image in store.images().unwrap() {
        for layer in &image.layers {
            assert!(
                store.layers().exists(layer),
                "image {} misses {layer}",
                image.id
            );
        }
    }
}

/// `du -sB1` of the root's content directories: what `du` says they use.
fn du(root: &Path) -> u64 {
    let output = Command::new("du")
        .args(["-scB1"])
        .args(["blobs/sha256", "layers", "tmp"].map(|directory| root.join(directory)))
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let total = text.lines().last().unwrap();
    total.split_whitespace().next().unwrap().parse().unwrap()
}

/// A go-units size (`4.346MB`, `512B`) back into bytes, and the rounding
/// its four significant digits allow.
fn parse_size(text: &str) -> (f64, f64) {
    let split = text
        .find(|character: char| character.is_ascii_alphabetic())
        .unwrap();
    let (number, unit) = text.split_at(split);
    let scale = match unit {
        "B" => 1.0,
        "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        other => panic!("unit {other}"),
    };
    let value: f64 = number.parse().unwrap();
    let decimals = number
        .split_once('.')
        .map_or(0, |(_, fraction)| fraction.len());
    (value * scale, 0.5 * scale / 10f64.powi(decimals as i32))
}

#[test]
fn killed_loads_leave_nothing_after_the_next_command() {
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("big.tar");
    let id = write_archive(&archive, "big:1", LAYERS, LAYER_BYTES);
    let archive = archive.to_str().unwrap().to_owned();

    // Moments chosen by what is on disk, then plain delays after start.
    type Moment = (&'static str, Box<dyn Fn(&Path) -> bool>);
    let moments: Vec<Moment> = vec![
        ("archive being staged", Box::new(staging_has_data)),
        (
            "first layer committed",
            Box::new(|root: &Path| !entries(&root.join("layers")).is_empty()),
        ),
        (
            "last layer being unpacked",
            Box::new(|root: &Path| entries(&root.join("layers")).len() >= LAYERS - 1),
        ),
    ];
    let delays = [0u64, 20, 100, 300, 700, 1500];
    let mut killed = 0;
    let mut check = |berth: &Berth, mut child: Child, what: &str| {
        let ended = kill9(&mut child);
        // The next command: any command that opens the root.
        berth.run(&["images", "-q"]).ok();
        assert_clean(berth);
        let listed = berth.run(&["images", "-q", "--no-trunc"]).ok();
        if ended {
            assert_eq!(listed.trim(), id.to_string(), "{what}");
        } else {
            killed += 1;
            // Killed before or after recording the image: both are true.
            assert!(
                listed.is_empty() || listed.trim() == id.to_string(),
                "{what}: {listed}"
            );
        }
        eprintln!("{what}: {}", if ended { "had ended" } else { "killed" });
    };
    for (what, ready) in &moments {
        let berth = Berth::new();
        let mut command = berth.command();
        command.args(["load", "-i", &archive]);
        let mut child = spawn(command);
        let root = berth.root().to_owned();
        assert!(
            wait_for(&mut child, || ready(&root)),
            "the load ended before: {what}"
        );
        check(&berth, child, what);
    }
    for delay in delays {
        let berth = Berth::new();
        let mut command = berth.command();
        command.args(["load", "-i", &archive]);
        let child = spawn(command);
        std::thread::sleep(Duration::from_millis(delay));
        check(&berth, child, &format!("after {delay} ms"));
    }
    assert!(killed >= 5, "only {killed} loads were caught running");
}

#[test]
fn a_live_load_beside_a_killed_one_is_not_disturbed() {
    let work = tempfile::tempdir().unwrap();
    let live_archive = work.path().join("live.tar");
    let killed_archive = work.path().join("killed.tar");
    let live_id = write_archive(&live_archive, "live:1", LAYERS, LAYER_BYTES);
    write_archive(&killed_archive, "killed:1", LAYERS, LAYER_BYTES);
    let berth = Berth::new();
    let root = berth.root().to_owned();

    // The load to kill commits a layer, then the live load starts and
    // stages its archive; the killed one dies with layers committed and
    // its archive staged.
    let mut command = berth.command();
    command.args(["load", "-i", killed_archive.to_str().unwrap()]);
    let mut doomed = spawn(command);
    assert!(wait_for(&mut doomed, || entries(&root.join("layers"))
        .len()
        >= 2));
    let mut command = berth.command();
    command.args(["load", "-i", live_archive.to_str().unwrap()]);
    let mut live = spawn(command);
    let doomed_pid = doomed.id();
    let live_pid = live.id();
    let live_staging = move |root: &Path| {
        entries(&root.join("tmp")).iter().any(|entry| {
            let name = entry.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with(&format!("load-{live_pid}-"))
                && berth_store::disk_usage(entry).unwrap() > 1024 * 1024
        })
    };
    assert!(wait_for(&mut live, || live_staging(&root)));
    assert!(!kill9(&mut doomed), "the load to kill had ended");

    // A command while the live load runs: the dead load's staging goes,
    // the live one's stays, and the live load goes on.
    berth.run(&["images", "-q"]).ok();
    let names: Vec<String> = entries(&root.join("tmp"))
        .iter()
        .map(|entry| entry.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names
            .iter()
            .any(|name| !name.starts_with("intent-") && name.contains(&format!("-{doomed_pid}-"))),
        "the killed load's staging is still there: {names:?}"
    );
    let output = live.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    // Once nobody writes, the next command removes the rest of it.
    berth.run(&["images", "-q"]).ok();
    assert_clean(&berth);
    let listed = berth.run(&["images", "-q", "--no-trunc"]).ok();
    assert_eq!(listed.trim(), live_id.to_string());
    // The live image is whole: its layers' files are all there.
    let store = berth_store::Store::open(&root).unwrap();
    let image = store.image(&live_id).unwrap().unwrap();
    assert_eq!(image.layers.len(), LAYERS);
    for (index, layer) in image.layers.iter().enumerate() {
        let file = store.layers().path(layer).join(format!("layer{index}.bin"));
        assert_eq!(fs_err::metadata(&file).unwrap().len(), LAYER_BYTES as u64);
    }
}

#[test]
fn prune_reports_what_du_sees_go_and_df_what_du_sees_used() {
    let work = tempfile::tempdir().unwrap();
    let kept = work.path().join("kept.tar");
    let pruned = work.path().join("pruned.tar");
    let orphan = work.path().join("orphan.tar");
    write_archive(&kept, "kept:1", 2, 4 * 1024 * 1024);
    write_archive(&pruned, "pruned:1", 2, 4 * 1024 * 1024);
    write_archive(&orphan, "orphan:1", LAYERS, LAYER_BYTES);
    let berth = Berth::new();
    let root = berth.root().to_owned();
    for archive in [&kept, &pruned] {
        berth.run(&["load", "-i", archive.to_str().unwrap()]).ok();
    }
    // `system df`: everything is unused, and its size is what du sees.
    let df = berth
        .run(&["system", "df", "--format", "{{.Size}} {{.Reclaimable}}"])
        .ok();
    let images_row = df.lines().next().unwrap();
    let (size, reclaimable) = images_row.split_once(' ').unwrap();
    let (bytes, rounding) = parse_size(size);
    let used = du(&root) - du_directories(&root);
    assert!(
        (bytes - used as f64).abs() <= rounding,
        "df {size}, du {used}"
    );
    assert_eq!(reclaimable, format!("{size} (100%)"));

    // A load killed with layers committed: orphans the prune must count.
    let mut command = berth.command();
    command.args(["load", "-i", orphan.to_str().unwrap()]);
    let mut doomed = spawn(command);
    assert!(wait_for(&mut doomed, || entries(&root.join("layers"))
        .len()
        >= 4 + 2));
    assert!(!kill9(&mut doomed), "the load ended before it was killed");

    let before = du(&root);
    let output = berth.run(&["image", "prune", "-a", "-f"]).ok();
    let after = du(&root);
    let reported = output
        .lines()
        .find_map(|line| line.strip_prefix("Total reclaimed space: "))
        .unwrap();
    let (bytes, rounding) = parse_size(reported);
    let gone = before - after;
    assert!(
        (bytes - gone as f64).abs() <= rounding,
        "prune reported {reported}, du saw {gone} bytes go\n{output}"
    );
    assert!(gone > (LAYER_BYTES as u64) * 2, "{gone}");
    assert_clean(&berth);
    assert_eq!(berth.run(&["images", "-q"]).ok(), "");
    let df = berth
        .run(&["system", "df", "--format", "{{.Type}}: {{.Size}}"])
        .ok();
    assert_eq!(df.lines().next().unwrap(), "Images: 0B");
}

/// The blocks the three content directories themselves hold, which no
/// image's content includes.
fn du_directories(root: &Path) -> u64 {
    ["blobs/sha256", "layers", "tmp"]
        .iter()
        .map(|directory| {
            use std::os::unix::fs::MetadataExt;
            fs_err::metadata(root.join(directory)).unwrap().blocks() * 512
        })
        .sum()
}

/// The big image pushed to a registry, pulled through a throttling proxy
/// and killed at several moments: while the first bytes arrive, in the
/// middle of the layers, with some layers unpacked and committed.
#[test]
fn killed_pulls_leave_nothing_after_the_next_command() {
    if let Some(reason) = TestRegistry::unavailable_reason() {
        eprintln!("SKIP: {reason}");
        return;
    }
    let registry = TestRegistry::plain().unwrap();
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("big.tar");
    let layer_bytes = 8 * 1024 * 1024;
    let id = write_archive(&archive, "big:1", LAYERS, layer_bytes);
    let source = Berth::new();
    source.run(&["load", "-i", archive.to_str().unwrap()]).ok();
    let pushed = format!("{}/big:1", registry.host());
    source.run(&["tag", "big:1", &pushed]).ok();
    source.run(&["push", "-q", &pushed]).ok();

    // 16 MB/s per connection, one layer at a time: a layer takes 0.5 s.
    let proxy = ThrottlingProxy::start(registry.host(), 16 * 1024 * 1024);
    let name = format!("{}/big:1", proxy.host());
    /// Given the root, the bytes relayed to this pull and the time since
    /// it started.
    type Moment = (String, Box<dyn Fn(&Path, u64, Duration) -> bool>);
    let mut moments: Vec<Moment> = Vec::new();
    for relayed in [64 * 1024, 3 * 1024 * 1024, 12 * 1024 * 1024] {
        moments.push((
            format!("{relayed} bytes relayed"),
            Box::new(move |_: &Path, seen, _| seen >= relayed),
        ));
    }
    for committed in [1, LAYERS - 1] {
        moments.push((
            format!("{committed} layers committed"),
            Box::new(move |root: &Path, _, _| entries(&root.join("layers")).len() >= committed),
        ));
    }
    for delay in [0u64, 50, 400] {
        moments.push((
            format!("after {delay} ms"),
            Box::new(move |_: &Path, _, elapsed| elapsed >= Duration::from_millis(delay)),
        ));
    }
    let mut killed = 0;
    for (what, ready) in &moments {
        let berth = Berth::new();
        let root = berth.root().to_owned();
        let mut command = berth.command();
        command
            .env("BERTH_PULL_CONCURRENCY", "1")
            .args(["pull", &name]);
        let start = proxy.relayed();
        let started = Instant::now();
        let mut child = spawn(command);
        let caught = wait_for(&mut child, || {
            ready(&root, proxy.relayed() - start, started.elapsed())
        });
        let ended = kill9(&mut child);
        berth.run(&["images", "-q"]).ok();
        assert_clean(&berth);
        let listed = berth.run(&["images", "-q", "--no-trunc"]).ok();
        if !ended {
            killed += 1;
        }
        assert!(
            listed.is_empty() || listed.trim() == id.to_string(),
            "{what}: {listed}"
        );
        eprintln!("{what}: caught {caught}, ended {ended}");
    }
    assert!(killed >= 6, "only {killed} pulls were caught running");
}

/// Many rows written and removed leave the database mostly free pages;
/// the next removal (here `image prune`) vacuums it back down.
#[test]
fn the_store_is_vacuumed_when_mostly_free() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    let root = berth.root().to_owned();
    {
        // Thousands of tags: rows enough for a few MB of pages.
        let mut store = berth_store::Store::open(&root).unwrap();
        let id = store
            .image_by_tag("docker.io/library/busybox:latest")
            .unwrap()
            .unwrap();
        for index in 0..20_000 {
            store
                .set_tag(
                    &format!("docker.io/library/many{index}-{}:latest", "x".repeat(100)),
                    &id,
                )
                .unwrap();
        }
        for index in 0..20_000 {
            store
                .remove_tag(&format!(
                    "docker.io/library/many{index}-{}:latest",
                    "x".repeat(100)
                ))
                .unwrap();
        }
    }
    let size = || fs_err::metadata(root.join("metadata.db")).unwrap().len();
    let grown = size();
    assert!(grown > 2 * 1024 * 1024, "{grown}");
    berth.run(&["image", "prune", "-f"]).ok();
    let shrunk = size();
    assert!(shrunk < grown / 4, "{grown} -> {shrunk}");
    let store = berth_store::Store::open(&root).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok");
    assert_eq!(
        berth.run(&["images", "--format", "{{.Repository}}"]).ok(),
        "busybox\n"
    );
}

/// The event log does not grow forever: past 1 MiB it is rotated to
/// `events.1.jsonl` (one older file kept), and `events` still reads both.
#[test]
fn the_event_log_rotates_by_size() {
    let berth = Berth::new();
    let root = berth.root().to_owned();
    berth.run(&["volume", "create", "first"]).ok();
    let log = root.join("events.jsonl");
    let line = fs_err::read_to_string(&log).unwrap();
    // Two megabytes of old events, as a long-lived root collects them
    // (another action, so that the listing below stays short).
    let line = line.replace("\"create\"", "\"update\"");
    let old = line.repeat(2 * 1024 * 1024 / line.len() + 1);
    fs_err::write(&log, old).unwrap();
    // The write that crosses the limit rotates the file it went to.
    berth.run(&["volume", "create", "second"]).ok();
    assert!(!log.exists());
    let rotated = fs_err::metadata(root.join("events.1.jsonl")).unwrap().len();
    assert!(rotated > 2 * 1024 * 1024, "{rotated}");
    berth.run(&["volume", "create", "third"]).ok();
    let current = fs_err::metadata(&log).unwrap().len();
    assert!(current < 1024, "{current}");
    // Until a second from now: past events, then the command ends.
    let until = (std::time::SystemTime::now() + Duration::from_secs(1))
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .to_string();
    let events = berth
        .run(&[
            "events",
            "--since",
            "0",
            "--until",
            &until,
            "--filter",
            "event=create",
            "--format",
            "{{.Actor.ID}}",
        ])
        .ok();
    // `second` went to the rotated file, `third` to the new one.
    assert_eq!(events, "second\nthird\n");
    for name in ["first", "second", "third"] {
        berth.run(&["volume", "rm", name]).ok();
    }
}
