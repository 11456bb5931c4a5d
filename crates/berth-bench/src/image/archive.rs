//! `docker save` archives (manifest.json, the config, one file per layer),
//! which `docker load`, `podman load` and `berth load` all read.

use std::io::Write;
use std::path::Path;

use sha2::{Digest, Sha256};
use tar::{EntryType, Header};

use super::layer::{LayerFile, EPOCH};

pub const PATH_ENV: &str = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The image config (linux, the host's architecture) for `layers`.
pub fn config(layers: &[LayerFile], cmd: &[&str], comment: &str) -> Vec<u8> {
    let architecture = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    let created = "2024-01-01T00:00:00Z";
    let mut history: Vec<serde_json::Value> = layers
        .iter()
        .map(|_| {
            serde_json::json!({
                "created": created,
                "created_by": format!("berth bench: {comment}"),
            })
        })
        .collect();
    history.push(serde_json::json!({
        "created": created,
        "created_by": format!("/bin/sh -c #(nop)  CMD {}", serde_json::json!(cmd)),
        "empty_layer": true,
    }));
    let value = serde_json::json!({
        "architecture": architecture,
        "os": "linux",
        "created": created,
        "config": {
            "Env": [PATH_ENV],
            "Cmd": cmd,
        },
        "rootfs": {
            "type": "layers",
            "diff_ids": layers.iter().map(|layer| layer.diff_id.clone()).collect::<Vec<_>>(),
        },
        "history": history,
    });
    // serde_json's to_vec of a Value cannot fail.
    serde_json::to_vec(&value).unwrap_or_default()
}

/// Writes the archive of one image tagged `reference` to `path` (through a
/// temporary file and a rename); returns the image id.
pub fn write(
    path: &Path,
    reference: &str,
    config: &[u8],
    layers: &[LayerFile],
) -> std::io::Result<String> {
    let config_hex = hex::encode(Sha256::digest(config));
    let layer_names: Vec<String> = layers
        .iter()
        .map(|layer| {
            let hex = layer.digest.trim_start_matches("sha256:");
            if layer.gzip {
                format!("{hex}.tar.gz")
            } else {
                format!("{hex}.tar")
            }
        })
        .collect();
    let manifest = serde_json::json!([{
        "Config": format!("{config_hex}.json"),
        "RepoTags": [reference],
        "Layers": layer_names,
    }]);
    let mut manifest = serde_json::to_vec(&manifest).map_err(std::io::Error::other)?;
    manifest.push(b'\n');

    let temporary = path.with_extension("tar.partial");
    let file = fs_err::File::create(&temporary)?;
    let mut builder = tar::Builder::new(std::io::BufWriter::with_capacity(1 << 20, file));
    let append =
        |builder: &mut tar::Builder<_>, name: &str, size: u64, data: &mut dyn std::io::Read| {
            let mut header = Header::new_gnu();
            header.set_entry_type(EntryType::Regular);
            header.set_mode(0o644);
            header.set_size(size);
            header.set_mtime(EPOCH);
            builder.append_data(&mut header, name, data)
        };
    append(
        &mut builder,
        &format!("{config_hex}.json"),
        config.len() as u64,
        &mut &config[..],
    )?;
    for (layer, name) in layers.iter().zip(&layer_names) {
        let mut file = fs_err::File::open(&layer.path)?;
        append(&mut builder, name, layer.size, &mut file)?;
    }
    append(
        &mut builder,
        "manifest.json",
        manifest.len() as u64,
        &mut &manifest[..],
    )?;
    let mut writer = builder.into_inner()?;
    writer.flush()?;
    writer
        .into_inner()
        .map_err(|error| error.into_error())?
        .sync_all()?;
    fs_err::rename(&temporary, path)?;
    Ok(format!("sha256:{config_hex}"))
}

#[cfg(test)]
mod tests {
    use super::super::layer::LayerWriter;
    use super::*;
    use std::io::Read;

    #[test]
    fn archives_hold_the_manifest_config_and_layers() {
        let directory = tempfile::tempdir().unwrap();
        let mut writer = LayerWriter::create(&directory.path().join("layer"), true).unwrap();
        writer.file("hello", 0o644, b"hi\n").unwrap();
        let layer = writer.finish().unwrap();
        let config = config(std::slice::from_ref(&layer), &["sh"], "test");
        let parsed: serde_json::Value = serde_json::from_slice(&config).unwrap();
        assert_eq!(parsed["rootfs"]["diff_ids"][0], layer.diff_id.as_str());
        assert_eq!(parsed["config"]["Cmd"][0], "sh");
        let archive = directory.path().join("image.tar");
        let id = write(
            &archive,
            "berth-bench/test:1",
            &config,
            std::slice::from_ref(&layer),
        )
        .unwrap();
        assert_eq!(
            id,
            format!("sha256:{}", hex::encode(Sha256::digest(&config)))
        );
        let bytes = fs_err::read(&archive).unwrap();
        let mut tar = tar::Archive::new(&bytes[..]);
        let mut manifest = None;
        let mut names = Vec::new();
        for entry in tar.entries().unwrap() {
            let mut entry = entry.unwrap();
            let name = entry.path().unwrap().display().to_string();
            if name == "manifest.json" {
                let mut text = String::new();
                entry.read_to_string(&mut text).unwrap();
                manifest = Some(text);
            }
            names.push(name);
        }
        let layer_name = format!("{}.tar.gz", layer.digest.trim_start_matches("sha256:"));
        assert_eq!(names[1], layer_name);
        let manifest: serde_json::Value = serde_json::from_str(&manifest.unwrap()).unwrap();
        assert_eq!(manifest[0]["RepoTags"][0], "berth-bench/test:1");
        assert_eq!(manifest[0]["Layers"][0], layer_name.as_str());
        assert!(!directory.path().join("image.tar.partial").exists());
    }
}
