//! Multi-platform images: an OCI index and a Docker manifest list pushed
//! to a real registry, resolved per platform.

mod common;

use berth_registry::client::host_platform;
use berth_types::image::{media_type, Descriptor, Index};
use berth_types::Reference;
use common::{descriptor, linux, start_plain, TestImage};

/// Pushes one image per platform and an index of them under `tag`.
fn push_index(
    client: &berth_registry::client::RegistryClient,
    index_type: &str,
    manifest_type: &str,
    tag: &str,
) -> Vec<(berth_types::image::Platform, TestImage)> {
    let platforms = [
        linux("amd64", None),
        linux("arm64", Some("v8")),
        linux("arm", Some("v7")),
    ];
    let images: Vec<_> = platforms
        .into_iter()
        .enumerate()
        .map(|(seed, platform)| {
            let image = TestImage::new(20 + seed as u64, &[2000], &platform);
            image.push(client, "multi/app", &image.digest().to_string());
            (platform, image)
        })
        .collect();
    let mut manifests: Vec<Descriptor> = images
        .iter()
        .map(|(platform, image)| Descriptor {
            platform: Some(platform.clone()),
            ..descriptor(manifest_type, &image.manifest)
        })
        .collect();
    // A buildx attestation entry, which must never be picked.
    manifests.push(Descriptor {
        platform: Some(berth_types::image::Platform {
            architecture: "unknown".into(),
            os: "unknown".into(),
            variant: None,
        }),
        ..descriptor(manifest_type, &images[0].1.manifest)
    });
    let index = Index {
        schema_version: 2,
        media_type: Some(index_type.into()),
        manifests,
        annotations: None,
    };
    let bytes = serde_json::to_vec(&index).expect("serialize the index");
    client
        .put_manifest("multi/app", tag, index_type, &bytes)
        .expect("push the index");
    images
}

#[test]
fn oci_index_resolves_to_the_asked_platform() {
    let Some(registry) = start_plain() else {
        return;
    };
    let client = registry.client(None).unwrap();
    let images = push_index(
        &client,
        media_type::OCI_INDEX,
        media_type::OCI_MANIFEST,
        "v1",
    );
    let reference =
        Reference::parse_normalized(&format!("{}/multi/app:v1", registry.host())).unwrap();

    let top = client.get_manifest(&reference).unwrap();
    assert_eq!(top.media_type, media_type::OCI_INDEX);
    assert!(top.is_index());

    for (platform, image) in &images {
        let resolved = client.resolve_manifest(&reference, platform).unwrap();
        assert_eq!(resolved.manifest.bytes, image.manifest, "{platform:?}");
        assert_eq!(resolved.manifest.digest, image.digest());
        assert_eq!(resolved.index.as_ref().unwrap().digest, top.digest);
    }
    // The host's own platform by default (linux/amd64 on the CI machines).
    let host = host_platform();
    if host.architecture == "amd64" {
        let resolved = client.resolve_manifest(&reference, &host).unwrap();
        assert_eq!(resolved.manifest.bytes, images[0].1.manifest);
    }
    let error = client
        .resolve_manifest(&reference, &linux("s390x", None))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "no matching manifest for linux/s390x in the manifest list entries"
    );
}

#[test]
fn docker_manifest_list_resolves_too() {
    let Some(registry) = start_plain() else {
        return;
    };
    let client = registry.client(None).unwrap();
    // Docker schema 2 lists may only point at Docker manifests; the test
    // images are OCI manifests, which distribution 2.8 accepts in a list.
    let images = push_index(
        &client,
        media_type::DOCKER_MANIFEST_LIST,
        media_type::OCI_MANIFEST,
        "v2",
    );
    let reference =
        Reference::parse_normalized(&format!("{}/multi/app:v2", registry.host())).unwrap();
    let top = client.get_manifest(&reference).unwrap();
    assert_eq!(top.media_type, media_type::DOCKER_MANIFEST_LIST);
    let resolved = client
        .resolve_manifest(&reference, &linux("arm64", None))
        .unwrap();
    assert_eq!(resolved.manifest.bytes, images[1].1.manifest);
}
