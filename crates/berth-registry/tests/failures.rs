//! What the client reports when the registry serves wrong bytes, goes away,
//! or refuses what is pushed.

mod common;

use std::io::{Cursor, Write};

use berth_registry::client::{BlobPush, ClientError};
use berth_registry::testing::TestRegistry;
use berth_types::{Digest, Reference};
use common::{linux, push_bytes, start_plain, TestImage};

#[test]
fn corrupt_blob_is_a_digest_mismatch() {
    let Some(registry) = start_plain() else {
        return;
    };
    let client = registry.client(None).unwrap();
    let blob = common::bytes(70, 100_000);
    let digest = Digest::of_bytes(&blob);
    push_bytes(&client, "bad/blob", &blob, None);
    // Same length, other bytes.
    fs_err::write(registry.blob_data_path(&digest), common::bytes(71, 100_000)).unwrap();
    let mut out = Vec::new();
    let error = client
        .get_blob("bad/blob", &digest, Some(100_000), &mut out)
        .unwrap_err();
    assert!(
        matches!(error, ClientError::BlobDigestMismatch { .. }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!("filesystem layer verification failed for digest {digest}")
    );
    // Longer than the descriptor says: stopped at the size.
    fs_err::write(registry.blob_data_path(&digest), common::bytes(72, 300_000)).unwrap();
    let error = client
        .get_blob("bad/blob", &digest, Some(100_000), &mut Vec::new())
        .unwrap_err();
    assert!(
        matches!(
            error,
            ClientError::BlobSizeMismatch {
                expected: 100_000,
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn corrupt_manifest_is_a_digest_mismatch() {
    let Some(registry) = start_plain() else {
        return;
    };
    let client = registry.client(None).unwrap();
    let image = TestImage::new(73, &[10], &linux("amd64", None));
    image.push(&client, "bad/manifest", "1");
    let mut tampered = image.manifest.clone();
    tampered.extend_from_slice(b"\n");
    fs_err::write(registry.blob_data_path(&image.digest()), tampered).unwrap();
    let reference =
        Reference::parse_normalized(&format!("{}/bad/manifest:1", registry.host())).unwrap();
    for reference in [reference.clone(), reference.with_digest(image.digest())] {
        let error = client.get_manifest(&reference).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("manifest verification failed for digest {}", image.digest())
        );
    }
}

/// Kills the registry once the first bytes arrived (and starts it again
/// when `restart`).
struct KillingWriter<'a> {
    registry: &'a mut TestRegistry,
    restart: bool,
    received: usize,
    data: Vec<u8>,
}

impl Write for KillingWriter<'_> {
    fn write(&mut self, buffer: &[u8]) -> std::io::Result<usize> {
        if self.received == 0 {
            self.registry.kill();
            if self.restart {
                self.registry.restart().expect("restart the registry");
            }
        }
        self.data.extend_from_slice(buffer);
        self.received += buffer.len();
        Ok(buffer.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn registry_killed_mid_download_is_a_clear_error() {
    let Some(mut registry) = start_plain() else {
        return;
    };
    let client = registry.client(None).unwrap();
    // Beyond what the kernel's socket buffers hold on loopback, so that the
    // kill cuts the stream.
    let size = 20 * 1024 * 1024;
    let blob = common::bytes(74, size);
    let digest = Digest::of_bytes(&blob);
    push_bytes(&client, "big/blob", &blob, None);
    let host = registry.host().to_owned();
    let mut writer = KillingWriter {
        registry: &mut registry,
        restart: false,
        received: 0,
        data: Vec::new(),
    };
    let error = client
        .get_blob("big/blob", &digest, Some(size as u64), &mut writer)
        .unwrap_err();
    assert!(
        writer.received > 0 && writer.received < size,
        "{}",
        writer.received
    );
    // Retried, then given up, naming the blob; the last try could not
    // even connect.
    assert_eq!(
        error.to_string(),
        format!("failed to read blob {digest} from the registry after 3 tries")
    );
    let last = std::error::Error::source(&error).expect("the last try's error");
    let Some(ClientError::Transport { url, source, .. }) = last.downcast_ref::<ClientError>()
    else {
        panic!("expected a transport error, got {last:?}");
    };
    assert_eq!(url, &format!("http://{host}/v2/big/blob/blobs/{digest}"));
    assert_eq!(last.to_string(), format!("Get \"{url}\""));
    assert!(
        source.to_string().contains("Connection refused"),
        "{source}"
    );
}

#[test]
fn download_resumes_after_the_registry_comes_back() {
    let Some(mut registry) = start_plain() else {
        return;
    };
    let client = registry.client(None).unwrap();
    // Beyond what the kernel's socket buffers hold on loopback, so that the
    // kill cuts the stream.
    let size = 20 * 1024 * 1024;
    let blob = common::bytes(76, size);
    let digest = Digest::of_bytes(&blob);
    push_bytes(&client, "big/blob", &blob, None);
    let mut writer = KillingWriter {
        registry: &mut registry,
        restart: true,
        received: 0,
        data: Vec::new(),
    };
    let received = client
        .get_blob("big/blob", &digest, Some(size as u64), &mut writer)
        .unwrap();
    assert_eq!(received, size as u64);
    assert!(writer.data == blob, "resumed bytes differ");
    // The second GET asked for the rest only.
    assert!(
        registry.log().contains("http.response.status=206"),
        "no ranged GET in the registry log"
    );
}

#[test]
fn registry_down_is_a_clear_error() {
    let Some(mut registry) = start_plain() else {
        return;
    };
    let client = registry.client(None).unwrap();
    registry.kill();
    let reference = Reference::parse_normalized(&format!("{}/x/y:1", registry.host())).unwrap();
    let error = client.get_manifest(&reference).unwrap_err();
    let chain = format!("{error}: {}", std::error::Error::source(&error).unwrap());
    assert_eq!(
        chain,
        format!(
            "Get \"http://{}/v2/x/y/manifests/1\": io: Connection refused (os error 111)",
            registry.host()
        )
    );
}

#[test]
fn pushes_of_wrong_or_short_content_fail() {
    let Some(registry) = start_plain() else {
        return;
    };
    let client = registry.client(None).unwrap();
    let blob = common::bytes(75, 1000);
    let claimed = Digest::of_bytes(b"something else");
    let push = BlobPush {
        digest: &claimed,
        size: 1000,
        mount_from: None,
    };
    let error = client
        .push_blob("wrong/digest", &push, &mut Cursor::new(&blob))
        .unwrap_err();
    assert_eq!(error.registry_codes(), ["DIGEST_INVALID"]);
    assert!(error.to_string().starts_with("digest invalid: "), "{error}");

    let digest = Digest::of_bytes(&blob);
    let short = BlobPush {
        digest: &digest,
        size: 2000,
        mount_from: None,
    };
    let error = client
        .push_blob("short/source", &short, &mut Cursor::new(&blob))
        .unwrap_err();
    assert!(matches!(error, ClientError::ReadSource { .. }), "{error:?}");
}
