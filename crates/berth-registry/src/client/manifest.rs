//! Manifests: fetched with every media type berth understands in `Accept`,
//! checked against their digest, resolved through a list/index to the
//! platform asked for, and pushed.

use berth_types::image::{media_type, Index, Manifest, Platform};
use berth_types::{Digest, Reference};
use serde::Deserialize;
use ureq::http::{Method, Response};
use ureq::Body;

use super::error::ClientError;
use super::platform::select_manifest;
use super::transport::{Call, Payload};
use super::{pull_scope, push_scope, ClientInner, RegistryClient};

/// The media types asked for, lists and indexes first as Docker does.
pub const MANIFEST_ACCEPT: [&str; 4] = [
    media_type::OCI_INDEX,
    media_type::DOCKER_MANIFEST_LIST,
    media_type::OCI_MANIFEST,
    media_type::DOCKER_MANIFEST,
];

/// Registries cap manifests at 4 MiB; twice that is surely not one.
const MANIFEST_LIMIT: u64 = 8 * 1024 * 1024;

/// A manifest as the registry sent it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchedManifest {
    pub bytes: Vec<u8>,
    pub media_type: String,
    /// The sha256 of `bytes`, checked against what was asked for and
    /// against `Docker-Content-Digest`.
    pub digest: Digest,
}

/// A parsed manifest.
#[derive(Clone, Debug, PartialEq)]
pub enum ManifestKind {
    Image(Manifest),
    Index(Index),
}

/// What a pull needs: the image manifest for one platform, and the
/// list/index it was picked from (its digest is the image's repo digest).
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedManifest {
    pub index: Option<FetchedManifest>,
    pub manifest: FetchedManifest,
    pub image: Manifest,
}

impl FetchedManifest {
    pub fn is_index(&self) -> bool {
        is_index_type(&self.media_type)
    }

    pub fn parse(&self) -> Result<ManifestKind, ClientError> {
        let invalid = |source| ClientError::InvalidManifest {
            digest: self.digest.clone(),
            source,
        };
        if self.is_index() {
            serde_json::from_slice(&self.bytes)
                .map(ManifestKind::Index)
                .map_err(invalid)
        } else {
            serde_json::from_slice(&self.bytes)
                .map(ManifestKind::Image)
                .map_err(invalid)
        }
    }
}

fn is_index_type(media_type: &str) -> bool {
    media_type == media_type::OCI_INDEX || media_type == media_type::DOCKER_MANIFEST_LIST
}

impl RegistryClient {
    /// The manifest `image` names (its digest if it has one, else its tag,
    /// else `latest`), as stored: possibly a list or index.
    pub fn get_manifest(&self, image: &Reference) -> Result<FetchedManifest, ClientError> {
        let reference = match (image.digest(), image.tag()) {
            (Some(digest), _) => digest.to_string(),
            (None, Some(tag)) => tag.to_owned(),
            (None, None) => berth_types::reference::DEFAULT_TAG.to_owned(),
        };
        let shown = image.clone().with_default_tag().familiar_string();
        self.inner.fetch_manifest(image.path(), &reference, &shown)
    }

    /// The image manifest for `platform`: `image`'s manifest, or the entry
    /// of its list/index that matches.
    pub fn resolve_manifest(
        &self,
        image: &Reference,
        platform: &Platform,
    ) -> Result<ResolvedManifest, ClientError> {
        let top = self.get_manifest(image)?;
        let (index, manifest) = match top.parse()? {
            ManifestKind::Image(_) => (None, top),
            ManifestKind::Index(parsed) => {
                let entry = select_manifest(&parsed, platform)?;
                let shown = image.with_digest(entry.digest.clone()).familiar_string();
                let child =
                    self.inner
                        .fetch_manifest(image.path(), &entry.digest.to_string(), &shown)?;
                (Some(top), child)
            }
        };
        match manifest.parse()? {
            ManifestKind::Image(image) => Ok(ResolvedManifest {
                index,
                manifest,
                image,
            }),
            ManifestKind::Index(_) => Err(ClientError::UnsupportedManifest {
                media_type: manifest.media_type,
            }),
        }
    }

    /// Stores `bytes` as a manifest of `media_type` under `reference` (a tag,
    /// or its digest); returns its digest.
    pub fn put_manifest(
        &self,
        repository: &str,
        reference: &str,
        media_type: &str,
        bytes: &[u8],
    ) -> Result<Digest, ClientError> {
        let scopes = [push_scope(repository)];
        let url = self
            .inner
            .repository_url(repository, &format!("manifests/{reference}"));
        let call = Call::new(Method::PUT, url, &scopes)
            .header("Content-Type", media_type)
            .payload(Payload::Bytes(bytes));
        let response = self.inner.execute(call, |status| status == 201)?;
        let digest = Digest::of_bytes(bytes);
        if let Some(stored) = header(&response, "Docker-Content-Digest") {
            if stored != digest.to_string() {
                return Err(ClientError::PushedDigestMismatch {
                    expected: digest,
                    actual: stored.to_owned(),
                });
            }
        }
        Ok(digest)
    }

    /// The digest of the manifest `reference` names in `repository`, if
    /// there is one (HEAD, so nothing is downloaded).
    pub fn manifest_digest(
        &self,
        repository: &str,
        reference: &str,
    ) -> Result<Option<Digest>, ClientError> {
        let scopes = [pull_scope(repository)];
        let url = self
            .inner
            .repository_url(repository, &format!("manifests/{reference}"));
        let call =
            Call::new(Method::HEAD, url, &scopes).header("Accept", MANIFEST_ACCEPT.join(", "));
        let response = self
            .inner
            .execute(call, |status| status == 200 || status == 404)?;
        if response.status().as_u16() == 404 {
            return Ok(None);
        }
        Ok(header(&response, "Docker-Content-Digest").and_then(|text| Digest::parse(text).ok()))
    }
}

impl ClientInner {
    fn fetch_manifest(
        &self,
        repository: &str,
        reference: &str,
        shown: &str,
    ) -> Result<FetchedManifest, ClientError> {
        let scopes = [pull_scope(repository)];
        let url = self.repository_url(repository, &format!("manifests/{reference}"));
        let call =
            Call::new(Method::GET, url, &scopes).header("Accept", MANIFEST_ACCEPT.join(", "));
        let mut response = match self.execute(call, |status| status == 200) {
            Err(ClientError::Registry {
                status: 404,
                errors,
                ..
            }) => {
                return Err(ClientError::ManifestNotFound {
                    reference: shown.to_owned(),
                    errors,
                })
            }
            other => other?,
        };
        let content_type = header(&response, "Content-Type")
            .and_then(|value| value.split(';').next())
            .map(|value| value.trim().to_owned());
        let announced = header(&response, "Docker-Content-Digest").map(str::to_owned);
        let bytes = response
            .body_mut()
            .with_config()
            .limit(MANIFEST_LIMIT)
            .read_to_vec()
            .map_err(|source| ClientError::Transport {
                method: "Get",
                url: format!("{}/v2/{repository}/manifests/{reference}", self.base_url),
                source,
            })?;
        let digest = Digest::of_bytes(&bytes);
        // What was asked for by digest must hash to it; a tag's answer must
        // hash to what the registry says it is.
        let expected = Digest::parse(reference)
            .ok()
            .or_else(|| announced.and_then(|text| Digest::parse(&text).ok()));
        if let Some(expected) = expected {
            if expected != digest {
                return Err(ClientError::ManifestDigestMismatch {
                    expected,
                    actual: digest,
                });
            }
        }
        let media_type = media_type_of(content_type.as_deref(), &bytes)?;
        Ok(FetchedManifest {
            bytes,
            media_type,
            digest,
        })
    }
}

pub(super) fn header<'a>(response: &'a Response<Body>, name: &str) -> Option<&'a str> {
    response
        .headers()
        .get(name)
        .and_then(|value| value.to_str().ok())
}

/// The `Content-Type` when it is one berth knows, else what the JSON says
/// of itself (`mediaType`, or its shape: OCI allows leaving it out).
fn media_type_of(content_type: Option<&str>, bytes: &[u8]) -> Result<String, ClientError> {
    if let Some(known) = content_type.filter(|value| MANIFEST_ACCEPT.contains(value)) {
        return Ok(known.to_owned());
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Shape {
        #[serde(default)]
        schema_version: Option<u32>,
        #[serde(default)]
        media_type: Option<String>,
        #[serde(default)]
        manifests: Option<serde_json::Value>,
        #[serde(default)]
        layers: Option<serde_json::Value>,
    }
    let unsupported = || ClientError::UnsupportedManifest {
        media_type: content_type.unwrap_or_default().to_owned(),
    };
    let shape: Shape = serde_json::from_slice(bytes).map_err(|_| unsupported())?;
    match shape {
        Shape {
            media_type: Some(declared),
            ..
        } if MANIFEST_ACCEPT.contains(&declared.as_str()) => Ok(declared),
        Shape {
            schema_version: Some(2),
            media_type: None,
            manifests: Some(_),
            ..
        } => Ok(media_type::OCI_INDEX.to_owned()),
        Shape {
            schema_version: Some(2),
            media_type: None,
            layers: Some(_),
            ..
        } => Ok(media_type::OCI_MANIFEST.to_owned()),
        _ => Err(unsupported()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_type_from_header_or_body() {
        assert_eq!(
            media_type_of(Some(media_type::DOCKER_MANIFEST), b"{}").unwrap(),
            media_type::DOCKER_MANIFEST
        );
        assert_eq!(
            media_type_of(
                Some("application/json"),
                br#"{"schemaVersion":2,"manifests":[]}"#
            )
            .unwrap(),
            media_type::OCI_INDEX
        );
        assert_eq!(
            media_type_of(None, br#"{"schemaVersion":2,"config":{},"layers":[]}"#).unwrap(),
            media_type::OCI_MANIFEST
        );
        let schema1 = media_type_of(
            Some("application/vnd.docker.distribution.manifest.v1+prettyjws"),
            br#"{"schemaVersion":1,"fsLayers":[]}"#,
        );
        assert_eq!(
            schema1.unwrap_err().to_string(),
            "unsupported manifest media type \"application/vnd.docker.distribution.manifest.v1+prettyjws\""
        );
    }
}
