//! Docker image references (`busybox`, `myuser/app:1.0`,
//! `registry:5000/team/app@sha256:…`), parsed and printed exactly as Docker's
//! `github.com/distribution/reference` package (v0.6) does it, so that the
//! names berth stores, prints and rejects are the ones `docker` would.
//!
//! The grammar lives in [`grammar`]; this module adds Docker Hub
//! normalisation (`busybox` → `docker.io/library/busybox`), the "familiar"
//! short forms printed to users, and Docker's error messages.

mod grammar;
#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::digest::{is_sha256_hex, Digest, SHA256_HEX_LEN};

/// The registry a name without a domain belongs to (Docker Hub).
pub const DEFAULT_DOMAIN: &str = "docker.io";

/// Docker Hub's old "index" name, rewritten to [`DEFAULT_DOMAIN`] on parse.
pub const LEGACY_DEFAULT_DOMAIN: &str = "index.docker.io";

/// Namespace of Docker Hub's official images (`busybox` is `library/busybox`).
pub const OFFICIAL_REPO_PREFIX: &str = "library/";

/// Tag used when a reference names neither a tag nor a digest.
pub const DEFAULT_TAG: &str = "latest";

/// Longest repository path. Since distribution/reference v0.6 the domain is
/// not counted, only the path (including an added `library/`).
pub const REPOSITORY_PATH_MAX_LEN: usize = 255;

/// The one domain that is always a domain, even without `.` or `:`.
const LOCALHOST: &str = "localhost";

/// A parsed, normalised image reference: domain, path, optional tag and
/// optional digest.
///
/// The domain is empty in one corner that Docker also allows: a first
/// component that looks like a domain (it has a `.`) but is not a valid one,
/// while still being a valid path component, e.g. `a_b.c/app`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reference {
    domain: String,
    path: String,
    tag: Option<String>,
    digest: Option<Digest>,
}

/// Why a reference was rejected. The messages are Docker's, word for word,
/// because users and scripts match on them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    #[error("invalid reference format")]
    InvalidFormat,
    /// From the normalising parser; `name` is the path before any `:`, with
    /// `library/` already added, exactly as Docker prints it.
    #[error("invalid reference format: repository name ({name}) must be lowercase")]
    NotLowercase { name: String },
    /// From the strict grammar: the text only parses once lowercased.
    #[error("repository name must be lowercase")]
    ContainsUppercase,
    #[error("invalid repository name ({text}), cannot specify 64-byte hexadecimal strings")]
    HexIdentifier { text: String },
    #[error("repository name must have at least one component")]
    Empty,
    #[error("repository name must not be more than 255 characters")]
    NameTooLong { length: usize },
    #[error("invalid tag format")]
    InvalidTag { tag: String },
    /// The wording comes from go-digest, which Docker's parser calls.
    #[error("invalid checksum digest format")]
    InvalidDigestFormat { digest: String },
    #[error("invalid checksum digest length")]
    InvalidDigestLength { digest: String },
    #[error("unsupported digest algorithm")]
    UnsupportedDigestAlgorithm { digest: String },
}

/// Result of [`parse_any_reference`]: an image id, or a name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AnyReference {
    /// A bare 64-hex id or a full `sha256:<hex>` digest.
    Digest(Digest),
    Named(Reference),
}

impl Reference {
    /// Docker's `ParseNormalizedNamed`: `busybox` → `docker.io/library/busybox`.
    /// No tag is added; see [`Reference::with_default_tag`].
    pub fn parse_normalized(text: &str) -> Result<Self, ReferenceError> {
        // A bare id must not be taken for a repository name, or `rmi <id>`
        // could silently mean a repository called `<id>`.
        if is_sha256_hex(text) {
            return Err(ReferenceError::HexIdentifier {
                text: text.to_owned(),
            });
        }
        let (domain, remainder) = split_docker_domain(text);
        // Docker checks case only up to the first ':' of the remainder, so a
        // digest-only reference is checked including its `@algorithm`.
        let remote = remainder.split(':').next().unwrap_or_default();
        if remote.to_lowercase() != remote {
            return Err(ReferenceError::NotLowercase {
                name: remote.to_owned(),
            });
        }
        parse_strict(&format!("{domain}/{remainder}"))
    }

    /// Docker's `TagNameOnly`: adds tag `latest` when there is neither a tag
    /// nor a digest.
    pub fn with_default_tag(mut self) -> Self {
        if self.tag.is_none() && self.digest.is_none() {
            self.tag = Some(DEFAULT_TAG.to_owned());
        }
        self
    }

    /// The same repository with tag `tag` and no digest, as `docker tag`
    /// creates it.
    pub fn with_tag(&self, tag: &str) -> Result<Self, ReferenceError> {
        if !grammar::is_tag(tag) {
            return Err(ReferenceError::InvalidTag {
                tag: tag.to_owned(),
            });
        }
        Ok(Self {
            domain: self.domain.clone(),
            path: self.path.clone(),
            tag: Some(tag.to_owned()),
            digest: None,
        })
    }

    /// The same reference pinned to `digest`; a tag is kept, as Docker's
    /// `WithDigest` keeps it.
    pub fn with_digest(&self, digest: Digest) -> Self {
        Self {
            digest: Some(digest),
            ..self.clone()
        }
    }

    /// `docker.io`, `localhost:5000`, `[::1]:5000`; empty in the corner case
    /// described on [`Reference`].
    pub fn domain(&self) -> &str {
        &self.domain
    }

    /// The repository path within the registry: `library/busybox`.
    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    pub fn digest(&self) -> Option<&Digest> {
        self.digest.as_ref()
    }

    /// True when there is neither a tag nor a digest (Docker's `IsNameOnly`).
    pub fn is_name_only(&self) -> bool {
        self.tag.is_none() && self.digest.is_none()
    }

    /// Full name without tag or digest: `docker.io/library/busybox`.
    pub fn name(&self) -> String {
        join_name(&self.domain, &self.path)
    }

    /// Docker's `FamiliarName`: the name as users type it — `busybox`,
    /// `myuser/app`, `host:5000/a/b`.
    pub fn familiar_name(&self) -> String {
        if self.domain != DEFAULT_DOMAIN {
            return self.name();
        }
        // Only a single official component loses `library/`; Docker keeps
        // `library/a/b` whole so it cannot be mistaken for `a/b`.
        match self.path.strip_prefix(OFFICIAL_REPO_PREFIX) {
            Some(official) if !official.contains('/') => official.to_owned(),
            _ => self.path.clone(),
        }
    }

    /// Docker's `FamiliarString`: `busybox:latest`, `busybox@sha256:…`,
    /// `busybox:1@sha256:…`.
    pub fn familiar_string(&self) -> String {
        self.with_suffixes(self.familiar_name())
    }

    fn with_suffixes(&self, mut text: String) -> String {
        if let Some(tag) = &self.tag {
            text.push(':');
            text.push_str(tag);
        }
        if let Some(digest) = &self.digest {
            text.push('@');
            text.push_str(&digest.to_string());
        }
        text
    }
}

/// Docker's `ParseAnyReference`: a 64-hex id or a `sha256:` digest becomes
/// [`AnyReference::Digest`], anything else is parsed as a normalised name.
///
/// Unlike Docker only sha256 digests are recognised here; `sha512:<128 hex>`
/// is parsed as image `sha512` with the hex as its (maximum-length) tag.
pub fn parse_any_reference(text: &str) -> Result<AnyReference, ReferenceError> {
    if let Some(digest) = Digest::from_hex(text) {
        return Ok(AnyReference::Digest(digest));
    }
    if let Ok(digest) = Digest::parse(text) {
        return Ok(AnyReference::Digest(digest));
    }
    Reference::parse_normalized(text).map(AnyReference::Named)
}

/// True when `text` could be an image id prefix: 1 to 64 lowercase hex
/// digits, optionally after `sha256:`. Commands such as `rmi` and `inspect`
/// use it to try an id lookup before a name lookup.
pub fn looks_like_image_id_prefix(text: &str) -> bool {
    let hex = text.strip_prefix("sha256:").unwrap_or(text);
    (1..=SHA256_HEX_LEN).contains(&hex.len())
        && hex
            .bytes()
            .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
}

/// Docker's `splitDockerDomain`: decides whether the first component is a
/// registry domain and adds `docker.io` and `library/` where Docker does.
fn split_docker_domain(text: &str) -> (&str, String) {
    let Some((first, rest)) = text.split_once('/') else {
        // A single component is always a Docker Hub name, even `localhost`
        // or `example.com`, so that `name:tag` is never read as `host:port`.
        return (DEFAULT_DOMAIN, format!("{OFFICIAL_REPO_PREFIX}{text}"));
    };
    let (domain, remote) = if first == LEGACY_DEFAULT_DOMAIN {
        (DEFAULT_DOMAIN, rest)
    } else if first == LOCALHOST
        || first.contains(['.', ':'])
        // Namespaces on Docker Hub are lowercase, so an uppercase first
        // component can only be a (local) host name: `LOCALDOMAIN/app`.
        || first.to_lowercase() != first
    {
        (first, rest)
    } else {
        (DEFAULT_DOMAIN, text)
    };
    if domain == DEFAULT_DOMAIN && !remote.contains('/') {
        (domain, format!("{OFFICIAL_REPO_PREFIX}{remote}"))
    } else {
        (domain, remote.to_owned())
    }
}

/// Docker's `Parse`: the grammar alone, no normalisation. Only called with a
/// domain already in front, but kept faithful (including the empty case) so
/// that its errors are Docker's.
fn parse_strict(text: &str) -> Result<Reference, ReferenceError> {
    if text.is_empty() {
        return Err(ReferenceError::Empty);
    }
    let Some(parts) = grammar::match_reference(text) else {
        // Go's strings.ToLower is Unicode-aware, and so is this; the Kelvin
        // sign in a tag, for instance, lowercases to an ASCII 'k'.
        let lowered = text.to_lowercase();
        if lowered != text && grammar::match_reference(&lowered).is_some() {
            return Err(ReferenceError::ContainsUppercase);
        }
        return Err(ReferenceError::InvalidFormat);
    };
    if parts.path.len() > REPOSITORY_PATH_MAX_LEN {
        return Err(ReferenceError::NameTooLong {
            length: parts.path.len(),
        });
    }
    let digest = parts.digest.map(parse_digest).transpose()?;
    Ok(Reference {
        domain: parts.domain.to_owned(),
        path: parts.path.to_owned(),
        tag: parts.tag.map(str::to_owned),
        digest,
    })
}

/// Validates a digest that already has the grammar's shape, with go-digest's
/// checks and errors, narrowed to the one algorithm berth supports.
fn parse_digest(text: &str) -> Result<Digest, ReferenceError> {
    let digest = || text.to_owned();
    let (algorithm, hex) = text
        .split_once(':')
        .ok_or_else(|| ReferenceError::InvalidDigestFormat { digest: digest() })?;
    if algorithm != "sha256" {
        // go-digest calls an unknown algorithm "unsupported" only when it is
        // lowercase; `SHA256` is a format error.
        return Err(if algorithm.bytes().any(|byte| byte.is_ascii_uppercase()) {
            ReferenceError::InvalidDigestFormat { digest: digest() }
        } else {
            ReferenceError::UnsupportedDigestAlgorithm { digest: digest() }
        });
    }
    if hex.len() != SHA256_HEX_LEN {
        return Err(ReferenceError::InvalidDigestLength { digest: digest() });
    }
    Digest::from_hex(hex).ok_or_else(|| ReferenceError::InvalidDigestFormat { digest: digest() })
}

fn join_name(domain: &str, path: &str) -> String {
    if domain.is_empty() {
        path.to_owned()
    } else {
        format!("{domain}/{path}")
    }
}

/// The full form: `docker.io/library/busybox:latest`.
impl fmt::Display for Reference {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.with_suffixes(self.name()))
    }
}

impl FromStr for Reference {
    type Err = ReferenceError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse_normalized(text)
    }
}

impl Serialize for Reference {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Reference {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse_normalized(&text).map_err(serde::de::Error::custom)
    }
}
