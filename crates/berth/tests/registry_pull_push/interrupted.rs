//! The registry killed (SIGKILL) while a big layer is on its way: the
//! pull fails with an error that names the blob and the failure, leaves
//! nothing in the store, and a pull after the registry is back (same port,
//! same storage) succeeds.

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use berth_types::Digest;

use super::images::write_big_image;
use super::proxy::ThrottlingProxy;
use super::support::Berth;
use super::{assert_empty, image_id, registry};

/// The random layer: big enough to be caught in flight even after what the
/// sockets between registry, proxy and berth buffer (a few MB each way).
const RANDOM_SIZE: usize = 32 * 1024 * 1024;
/// 4 MB/s per connection: the layer takes 8 s through the proxy.
const RATE: u64 = 4 * 1024 * 1024;
/// Everything but the big layer is about 1 MB; the registry is killed once
/// this much went through, so several MB of the layer have.
const KILL_AFTER: u64 = 6 * 1024 * 1024;
/// Longest wait for the failed pull to end: berth must give up, not hang.
const PULL_TIMEOUT: Duration = Duration::from_secs(120);

fn random_bytes(length: usize) -> Vec<u8> {
    let mut bytes = vec![0; length];
    fs_err::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut bytes)
        .unwrap();
    bytes
}

#[test]
fn registry_killed_while_a_big_layer_streams() {
    let Some(mut registry) = registry() else {
        return;
    };
    let random = random_bytes(RANDOM_SIZE);
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("big.tar");
    let (layer, id) = write_big_image(&archive, "big:1", &random);
    let source = Berth::new();
    source.run(&["load", "-i", archive.to_str().unwrap()]).ok();
    let pushed = format!("{}/big:1", registry.host());
    source.run(&["tag", "big:1", &pushed]).ok();
    source.run(&["push", "-q", &pushed]).ok();

    let proxy = ThrottlingProxy::start(registry.host(), RATE);
    let name = format!("{}/big:1", proxy.host());
    let berth = Berth::new();
    let mut pull = berth.command();
    pull.args(["pull", &name])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = pull.spawn().unwrap();
    assert!(
        proxy.wait_relayed(KILL_AFTER, Duration::from_secs(60)),
        "the pull did not get going: {} bytes relayed",
        proxy.relayed()
    );
    registry.kill();
    let killed_at = proxy.relayed();
    let output = wait_with_timeout(child, PULL_TIMEOUT);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        proxy.relayed() < RANDOM_SIZE as u64,
        "the registry was killed after {killed_at} bytes; the proxy relayed {} in all",
        proxy.relayed()
    );
    // The error names the blob and what happened to the connection.
    let blob_url = format!("http://{}/v2/big/blobs/{layer}", proxy.host());
    assert!(
        stderr.starts_with(&format!(
            "Error: failed to read blob {layer} from the registry after 3 tries: "
        )),
        "{stderr}"
    );
    assert!(stderr.contains(&blob_url), "{stderr}");
    assert!(stderr.contains("reset by peer"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let layer_id = &layer.hex()[..12];
    assert!(
        stdout.contains(&format!("{layer_id}: Pulling fs layer\n")),
        "{stdout}"
    );
    assert!(
        !stdout.contains(&format!("{layer_id}: Download complete")),
        "{stdout}"
    );
    assert!(!stdout.contains("Status:"), "{stdout}");
    assert_empty(&berth);

    // Back on the same port and storage: the next pull gets it all.
    registry.restart().unwrap();
    proxy.set_rate(0);
    let again = berth.run(&["pull", &name]).ok();
    assert_eq!(again.matches(": Pull complete\n").count(), 2, "{again}");
    assert!(
        again.ends_with(&format!(
            "Status: Downloaded newer image for {name}\n{name}\n"
        )),
        "{again}"
    );
    assert_eq!(image_id(&berth, &name), id.to_string());
    let checked = berth
        .run(&["run", "--rm", &name, "sha256sum", "/big.bin"])
        .ok();
    assert_eq!(
        checked,
        format!("{}  /big.bin\n", Digest::of_bytes(&random).hex())
    );
}

/// Waits for `child` to exit, killing it (and failing) after `timeout`.
fn wait_with_timeout(mut child: std::process::Child, timeout: Duration) -> std::process::Output {
    let deadline = Instant::now() + timeout;
    // Read the pipes meanwhile, so a full pipe cannot block berth.
    let mut stdout_pipe = child.stdout.take().unwrap();
    let mut stderr_pipe = child.stderr.take().unwrap();
    let stdout = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout_pipe.read_to_end(&mut bytes);
        bytes
    });
    let stderr = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stderr_pipe.read_to_end(&mut bytes);
        bytes
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("berth pull still runs {timeout:?} after the registry died");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    std::process::Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}
