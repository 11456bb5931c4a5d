//! Push and pull against a real `docker-registry` over plain HTTP.

mod common;

use berth_registry::client::{ClientConfig, PushedBlob, RegistryClient};
use berth_types::image::media_type;
use berth_types::{Digest, Reference};
use common::{linux, pull_bytes, push_bytes, start_plain, TestImage};

#[test]
fn pushed_image_pulls_back_byte_for_byte() {
    let Some(registry) = start_plain() else {
        return;
    };
    let client = registry.client(None).unwrap();
    let image = TestImage::new(1, &[1000, 300_000], &linux("amd64", None));
    image.push(&client, "team/app", "1.0");

    let reference =
        Reference::parse_normalized(&format!("{}/team/app:1.0", registry.host())).unwrap();
    let fetched = client.get_manifest(&reference).unwrap();
    assert_eq!(fetched.bytes, image.manifest);
    assert_eq!(fetched.media_type, media_type::OCI_MANIFEST);
    assert_eq!(fetched.digest, image.digest());

    let resolved = client
        .resolve_manifest(&reference, &linux("amd64", None))
        .unwrap();
    assert!(resolved.index.is_none());
    assert_eq!(resolved.image.layers.len(), 2);
    let config = &resolved.image.config;
    assert_eq!(
        pull_bytes(&client, "team/app", &config.digest, config.size),
        image.config
    );
    for (descriptor, layer) in resolved.image.layers.iter().zip(&image.layers) {
        assert_eq!(
            &pull_bytes(&client, "team/app", &descriptor.digest, descriptor.size),
            layer
        );
    }
    // By digest too, and HEAD.
    let by_digest = client
        .get_manifest(&reference.with_digest(image.digest()))
        .unwrap();
    assert_eq!(by_digest.bytes, image.manifest);
    assert_eq!(
        client.manifest_digest("team/app", "1.0").unwrap(),
        Some(image.digest())
    );
    assert_eq!(client.manifest_digest("team/app", "2.0").unwrap(), None);
}

#[test]
fn chunked_and_monolithic_uploads_store_the_same_bytes() {
    let Some(registry) = start_plain() else {
        return;
    };
    let config = ClientConfig {
        chunked_upload_threshold: 64 * 1024,
        upload_chunk_size: 50_000,
        ..registry.client_config()
    };
    let chunked = RegistryClient::new(registry.host(), &config, None).unwrap();
    let monolithic = registry.client(None).unwrap();
    // Not a multiple of the chunk size, so the last chunk is short.
    let big = common::bytes(7, 230_001);
    let small = common::bytes(8, 60_000);
    assert_eq!(
        push_bytes(&chunked, "a/chunked", &big, None),
        PushedBlob::Uploaded
    );
    assert_eq!(
        push_bytes(&chunked, "a/chunked", &small, None),
        PushedBlob::Uploaded
    );
    assert_eq!(
        push_bytes(&monolithic, "a/mono", &big, None),
        PushedBlob::Uploaded
    );
    for (repository, blob) in [("a/chunked", &big), ("a/chunked", &small), ("a/mono", &big)] {
        let digest = Digest::of_bytes(blob);
        assert_eq!(
            monolithic.blob_size(repository, &digest).unwrap(),
            Some(blob.len() as u64)
        );
        assert_eq!(
            &pull_bytes(&monolithic, repository, &digest, blob.len() as u64),
            blob
        );
    }
}

#[test]
fn existing_blob_is_skipped_and_other_repositories_mount_it() {
    let Some(registry) = start_plain() else {
        return;
    };
    let client = registry.client(None).unwrap();
    let blob = common::bytes(3, 10_000);
    let digest = Digest::of_bytes(&blob);
    assert_eq!(
        push_bytes(&client, "src/repo", &blob, None),
        PushedBlob::Uploaded
    );
    assert_eq!(
        push_bytes(&client, "src/repo", &blob, None),
        PushedBlob::AlreadyExists
    );
    assert_eq!(client.blob_size("dst/repo", &digest).unwrap(), None);
    assert_eq!(
        push_bytes(&client, "dst/repo", &blob, Some("src/repo")),
        PushedBlob::Mounted
    );
    assert_eq!(pull_bytes(&client, "dst/repo", &digest, 10_000), blob);
    // A mount source without the blob: the registry opens an upload instead.
    let other = common::bytes(4, 5_000);
    assert_eq!(
        push_bytes(&client, "dst/repo", &other, Some("src/repo")),
        PushedBlob::Uploaded
    );
}

#[test]
fn unknown_manifest_reads_as_docker_says_it() {
    let Some(registry) = start_plain() else {
        return;
    };
    let client = registry.client(None).unwrap();
    let image = TestImage::new(2, &[10], &linux("amd64", None));
    image.push(&client, "library/busybox", "latest");
    let reference =
        Reference::parse_normalized(&format!("{}/library/busybox:nosuch", registry.host()))
            .unwrap();
    let error = client.get_manifest(&reference).unwrap_err();
    assert_eq!(
        format!("{error}: {}", std::error::Error::source(&error).unwrap()),
        format!(
            "manifest for {}/library/busybox:nosuch not found: manifest unknown: manifest unknown",
            registry.host()
        )
    );
    assert_eq!(error.registry_codes(), ["MANIFEST_UNKNOWN"]);
    let missing_repository =
        Reference::parse_normalized(&format!("{}/nobody/here", registry.host())).unwrap();
    let error = client.get_manifest(&missing_repository).unwrap_err();
    assert!(error.to_string().starts_with("manifest for"), "{error}");
    assert!(
        error.to_string().ends_with("/nobody/here:latest not found"),
        "{error}"
    );
}

#[test]
fn eight_threads_download_layers_at_once() {
    let Some(registry) = start_plain() else {
        return;
    };
    let client = registry.client(None).unwrap();
    let layers: Vec<Vec<u8>> = (0..8)
        .map(|seed| common::bytes(seed + 10, 400_000))
        .collect();
    for layer in &layers {
        push_bytes(&client, "par/allel", layer, None);
    }
    std::thread::scope(|scope| {
        for layer in &layers {
            let client = client.clone();
            scope.spawn(move || {
                let digest = Digest::of_bytes(layer);
                assert_eq!(
                    &pull_bytes(&client, "par/allel", &digest, layer.len() as u64),
                    layer
                );
            });
        }
    });
}
