//! Shared by the registry tests: test images made in memory, and the skip
//! when the machine lacks the registry tools.
#![allow(dead_code)]

use std::io::Cursor;

use berth_registry::client::{BlobPush, PushedBlob, RegistryClient};
use berth_registry::testing::{TestRegistry, TestRegistryOptions};
use berth_types::image::{media_type, Descriptor, Manifest, Platform};
use berth_types::Digest;

/// Starts a registry, or prints why it cannot and returns `None`.
pub fn start(options: TestRegistryOptions) -> Option<TestRegistry> {
    if let Some(reason) = TestRegistry::unavailable_reason() {
        eprintln!("skipped: {reason}");
        return None;
    }
    Some(TestRegistry::start(options).expect("start the test registry"))
}

pub fn start_plain() -> Option<TestRegistry> {
    start(TestRegistryOptions::default())
}

/// `length` pseudo-random bytes (xorshift), different per `seed`.
pub fn bytes(seed: u64, length: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(length + 8);
    while out.len() < length {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.extend_from_slice(&state.to_le_bytes());
    }
    out.truncate(length);
    out
}

pub struct TestImage {
    pub config: Vec<u8>,
    pub layers: Vec<Vec<u8>>,
    pub manifest: Vec<u8>,
    pub media_type: &'static str,
}

impl TestImage {
    pub fn new(seed: u64, layer_sizes: &[usize], platform: &Platform) -> Self {
        let layers: Vec<Vec<u8>> = layer_sizes
            .iter()
            .enumerate()
            .map(|(index, size)| bytes(seed * 100 + index as u64, *size))
            .collect();
        let config = serde_json::json!({
            "architecture": platform.architecture,
            "os": platform.os,
            "variant": platform.variant,
            "rootfs": {"type": "layers", "diff_ids": layers.iter().map(|l| Digest::of_bytes(l).to_string()).collect::<Vec<_>>()},
            "config": {"Cmd": ["sh"], "Env": [format!("SEED={seed}")]},
        })
        .to_string()
        .into_bytes();
        let manifest = Manifest {
            schema_version: 2,
            media_type: Some(media_type::OCI_MANIFEST.into()),
            config: descriptor(media_type::OCI_CONFIG, &config),
            layers: layers
                .iter()
                .map(|layer| descriptor(media_type::OCI_LAYER, layer))
                .collect(),
            annotations: None,
        };
        Self {
            config,
            layers,
            manifest: serde_json::to_vec(&manifest).expect("serialize manifest"),
            media_type: media_type::OCI_MANIFEST,
        }
    }

    pub fn digest(&self) -> Digest {
        Digest::of_bytes(&self.manifest)
    }

    pub fn blobs(&self) -> impl Iterator<Item = &Vec<u8>> {
        std::iter::once(&self.config).chain(self.layers.iter())
    }

    /// Pushes blobs then the manifest under `reference`.
    pub fn push(&self, client: &RegistryClient, repository: &str, reference: &str) {
        for blob in self.blobs() {
            push_bytes(client, repository, blob, None);
        }
        client
            .put_manifest(repository, reference, self.media_type, &self.manifest)
            .expect("push manifest");
    }
}

pub fn descriptor(media_type: &str, bytes: &[u8]) -> Descriptor {
    Descriptor {
        media_type: media_type.into(),
        digest: Digest::of_bytes(bytes),
        size: bytes.len() as u64,
        annotations: None,
        platform: None,
    }
}

pub fn push_bytes(
    client: &RegistryClient,
    repository: &str,
    bytes: &[u8],
    mount_from: Option<&str>,
) -> PushedBlob {
    let digest = Digest::of_bytes(bytes);
    let blob = BlobPush {
        digest: &digest,
        size: bytes.len() as u64,
        mount_from,
    };
    client
        .push_blob(repository, &blob, &mut Cursor::new(bytes))
        .expect("push blob")
}

pub fn pull_bytes(
    client: &RegistryClient,
    repository: &str,
    digest: &Digest,
    size: u64,
) -> Vec<u8> {
    let mut out = Vec::new();
    client
        .get_blob(repository, digest, Some(size), &mut out)
        .expect("pull blob");
    out
}

pub fn linux(architecture: &str, variant: Option<&str>) -> Platform {
    Platform {
        architecture: architecture.into(),
        os: "linux".into(),
        variant: variant.map(Into::into),
    }
}
