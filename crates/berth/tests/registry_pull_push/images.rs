//! Test images made from the busybox OCI fixture: a multi-platform OCI
//! layout (an index of linux/amd64 and linux/arm64/v8 sharing the busybox
//! layer, the arm64 one with its own config), one platform of it alone, and
//! busybox with a big layer of random bytes on top.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use berth_types::image::{media_type, Descriptor, Index, Manifest, Platform};
use berth_types::Digest;
use serde_json::{json, Value};

use super::support::fixture;

pub const BUSYBOX_OCI_ARCHIVE: &str = "busybox-oci.tar";

/// An image's pieces, as the registry and `berth image inspect` see them.
#[derive(Clone, Debug)]
pub struct PlatformImage {
    pub platform: Platform,
    pub config: Vec<u8>,
    pub manifest: Vec<u8>,
}

impl PlatformImage {
    /// The image id: the config's digest.
    pub fn id(&self) -> Digest {
        Digest::of_bytes(&self.config)
    }

    pub fn manifest_digest(&self) -> Digest {
        Digest::of_bytes(&self.manifest)
    }

    fn descriptor(&self) -> Descriptor {
        Descriptor {
            platform: Some(self.platform.clone()),
            ..descriptor(media_type::OCI_MANIFEST, &self.manifest)
        }
    }
}

/// busybox for linux/amd64 (the fixture as it is) and linux/arm64/v8 (the
/// same layer, a config saying arm64), and the OCI index of both.
pub struct MultiPlatform {
    pub amd64: PlatformImage,
    pub arm64: PlatformImage,
    pub index: Vec<u8>,
    /// The blobs of the fixture: the busybox layer among them.
    blobs: BTreeMap<Digest, Vec<u8>>,
}

impl MultiPlatform {
    pub fn new() -> Self {
        let blobs = fixture_blobs();
        let top: Index = serde_json::from_slice(&fixture_member("index.json")).unwrap();
        let manifest_bytes = blobs[&top.manifests[0].digest].clone();
        let manifest: Manifest = serde_json::from_slice(&manifest_bytes).unwrap();
        let config_bytes = blobs[&manifest.config.digest].clone();
        let mut config: Value = serde_json::from_slice(&config_bytes).unwrap();
        assert_eq!(config["architecture"], "amd64", "the fixture is amd64");
        let amd64 = PlatformImage {
            platform: linux("amd64", None),
            config: config_bytes,
            manifest: manifest_bytes,
        };
        config["architecture"] = json!("arm64");
        config["variant"] = json!("v8");
        let arm64_config = serde_json::to_vec(&config).unwrap();
        let arm64_manifest = Manifest {
            config: descriptor(media_type::OCI_CONFIG, &arm64_config),
            ..manifest
        };
        let arm64 = PlatformImage {
            platform: linux("arm64", Some("v8")),
            config: arm64_config,
            manifest: serde_json::to_vec(&arm64_manifest).unwrap(),
        };
        let index = Index {
            schema_version: 2,
            media_type: Some(media_type::OCI_INDEX.to_owned()),
            manifests: vec![amd64.descriptor(), arm64.descriptor()],
            annotations: None,
        };
        Self {
            index: serde_json::to_vec(&index).unwrap(),
            amd64,
            arm64,
            blobs,
        }
    }

    pub fn index_digest(&self) -> Digest {
        Digest::of_bytes(&self.index)
    }

    /// An OCI layout whose `index.json` names the index as `name`, as
    /// `docker buildx build --platform linux/amd64,linux/arm64 -o type=oci`
    /// writes one.
    pub fn write_layout(&self, path: &Path, name: &str) {
        let mut blobs = self.blobs.clone();
        for image in [&self.amd64, &self.arm64] {
            blobs.insert(image.id(), image.config.clone());
            blobs.insert(image.manifest_digest(), image.manifest.clone());
        }
        blobs.insert(self.index_digest(), self.index.clone());
        let entry = named(descriptor(media_type::OCI_INDEX, &self.index), name);
        write_oci_layout(path, entry, &blobs);
    }

    /// An OCI layout holding only `image` (one platform), named `name`.
    pub fn write_single(&self, image: &PlatformImage, path: &Path, name: &str) {
        let mut blobs = self.blobs.clone();
        blobs.insert(image.id(), image.config.clone());
        blobs.insert(image.manifest_digest(), image.manifest.clone());
        write_oci_layout(path, named(image.descriptor(), name), &blobs);
    }
}

/// busybox plus a layer holding `/big.bin`: `random` (uncompressed, so the
/// layer blob is a little larger than `random`). Returns the layer's
/// digest and the image id.
pub fn write_big_image(path: &Path, name: &str, random: &[u8]) -> (Digest, Digest) {
    let mut blobs = fixture_blobs();
    let top: Index = serde_json::from_slice(&fixture_member("index.json")).unwrap();
    let mut manifest: Manifest = serde_json::from_slice(&blobs[&top.manifests[0].digest]).unwrap();
    let mut config: Value = serde_json::from_slice(&blobs[&manifest.config.digest]).unwrap();

    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(random.len() as u64);
    header.set_mode(0o644);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(1_704_067_200);
    header.set_entry_type(tar::EntryType::Regular);
    builder.append_data(&mut header, "big.bin", random).unwrap();
    let layer = builder.into_inner().unwrap();
    let layer_digest = Digest::of_bytes(&layer);

    config["rootfs"]["diff_ids"]
        .as_array_mut()
        .unwrap()
        .push(json!(layer_digest.to_string()));
    config["history"].as_array_mut().unwrap().push(json!({
        "created": "2024-01-01T00:00:00Z",
        "created_by": "/bin/sh -c #(nop) ADD file:big.bin in / "
    }));
    let config = serde_json::to_vec(&config).unwrap();
    manifest.config = descriptor(media_type::OCI_CONFIG, &config);
    manifest
        .layers
        .push(descriptor(media_type::OCI_LAYER, &layer));
    let manifest = serde_json::to_vec(&manifest).unwrap();
    let id = Digest::of_bytes(&config);
    blobs.insert(id.clone(), config);
    blobs.insert(layer_digest.clone(), layer);
    let entry = named(descriptor(media_type::OCI_MANIFEST, &manifest), name);
    blobs.insert(Digest::of_bytes(&manifest), manifest);
    write_oci_layout(path, entry, &blobs);
    (layer_digest, id)
}

pub fn linux(architecture: &str, variant: Option<&str>) -> Platform {
    Platform {
        architecture: architecture.to_owned(),
        os: "linux".to_owned(),
        variant: variant.map(str::to_owned),
    }
}

fn descriptor(media_type: &str, bytes: &[u8]) -> Descriptor {
    Descriptor {
        media_type: media_type.to_owned(),
        digest: Digest::of_bytes(bytes),
        size: bytes.len() as u64,
        annotations: None,
        platform: None,
    }
}

/// `descriptor` with the name annotations containerd and Docker write.
fn named(descriptor: Descriptor, name: &str) -> Descriptor {
    let tag = name.rsplit_once(':').map_or("latest", |(_, tag)| tag);
    Descriptor {
        annotations: Some(
            [
                ("io.containerd.image.name".to_owned(), name.to_owned()),
                (
                    "org.opencontainers.image.ref.name".to_owned(),
                    tag.to_owned(),
                ),
            ]
            .into_iter()
            .collect(),
        ),
        ..descriptor
    }
}

fn fixture_member(name: &str) -> Vec<u8> {
    let file = fs_err::File::open(fixture(BUSYBOX_OCI_ARCHIVE)).unwrap();
    let mut archive = tar::Archive::new(file);
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.path().unwrap().to_str() == Some(name) {
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap();
            return bytes;
        }
    }
    panic!("{BUSYBOX_OCI_ARCHIVE} has no {name}");
}

/// Every blob of the busybox OCI fixture, by digest.
fn fixture_blobs() -> BTreeMap<Digest, Vec<u8>> {
    let file = fs_err::File::open(fixture(BUSYBOX_OCI_ARCHIVE)).unwrap();
    let mut archive = tar::Archive::new(file);
    let mut blobs = BTreeMap::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        if let Some(hex) = path
            .strip_prefix("blobs/sha256/")
            .filter(|hex| !hex.is_empty())
        {
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap();
            let digest = Digest::of_bytes(&bytes);
            assert_eq!(digest.hex(), hex, "fixture blob {path}");
            blobs.insert(digest, bytes);
        }
    }
    blobs
}

fn write_oci_layout(path: &Path, entry: Descriptor, blobs: &BTreeMap<Digest, Vec<u8>>) {
    let index = Index {
        schema_version: 2,
        media_type: Some(media_type::OCI_INDEX.to_owned()),
        manifests: vec![entry],
        annotations: None,
    };
    let file = fs_err::File::create(path).unwrap();
    let mut builder = tar::Builder::new(file);
    let mut append = |name: &str, bytes: &[u8]| {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(1_704_067_200);
        header.set_entry_type(tar::EntryType::Regular);
        builder.append_data(&mut header, name, bytes).unwrap();
    };
    append("oci-layout", br#"{"imageLayoutVersion":"1.0.0"}"#);
    append("index.json", &serde_json::to_vec(&index).unwrap());
    for (digest, bytes) in blobs {
        append(&format!("blobs/sha256/{}", digest.hex()), bytes);
    }
    builder.into_inner().unwrap();
}
