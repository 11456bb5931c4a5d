//! Content digests (`sha256:<64 hex>`), the names of blobs, layers and images.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest as _, Sha256};

/// Length of the hex part of a sha256 digest.
pub const SHA256_HEX_LEN: usize = 64;

/// A validated `sha256:<hex>` content digest. Only sha256 is supported, as in
/// every image berth meets in practice.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest {
    hex: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DigestError {
    #[error("invalid digest format: {0:?}")]
    Format(String),
    #[error("unsupported digest algorithm: {0:?}")]
    Algorithm(String),
}

impl Digest {
    /// Parses `sha256:<64 lowercase hex>`.
    pub fn parse(text: &str) -> Result<Self, DigestError> {
        let Some((algorithm, hex)) = text.split_once(':') else {
            return Err(DigestError::Format(text.to_owned()));
        };
        if algorithm != "sha256" {
            return Err(DigestError::Algorithm(algorithm.to_owned()));
        }
        Self::from_hex(hex).ok_or_else(|| DigestError::Format(text.to_owned()))
    }

    /// Builds a digest from its 64 lowercase hex characters.
    pub fn from_hex(hex: &str) -> Option<Self> {
        is_sha256_hex(hex).then(|| Self {
            hex: hex.to_owned(),
        })
    }

    /// The digest of a finished sha256 hash.
    pub fn from_sha256(hash: Sha256) -> Self {
        Self {
            hex: hex::encode(hash.finalize()),
        }
    }

    /// The sha256 digest of `bytes`.
    pub fn of_bytes(bytes: &[u8]) -> Self {
        Self::from_sha256(Sha256::new_with_prefix(bytes))
    }

    /// The 64 hex characters.
    pub fn hex(&self) -> &str {
        &self.hex
    }

    /// The 12-character short form used in `images` and `ps` output.
    pub fn short(&self) -> &str {
        &self.hex[..12]
    }

    pub fn algorithm(&self) -> &'static str {
        "sha256"
    }
}

/// True when `text` is exactly 64 lowercase hex characters.
pub fn is_sha256_hex(text: &str) -> bool {
    text.len() == SHA256_HEX_LEN && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

impl fmt::Display for Digest {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "sha256:{}", self.hex)
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "sha256:{}", self.hex)
    }
}

impl FromStr for Digest {
    type Err = DigestError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl Serialize for Digest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// The chain id of a layer stack (OCI image spec, "Layer ChainID"):
/// `chain(L0) = diff(L0)`, `chain(Ln) = sha256(chain(Ln-1) + " " + diff(Ln))`.
pub fn chain_ids(diff_ids: &[Digest]) -> Vec<Digest> {
    let mut chain: Vec<Digest> = Vec::with_capacity(diff_ids.len());
    for diff_id in diff_ids {
        let next = match chain.last() {
            None => diff_id.clone(),
            Some(parent) => Digest::of_bytes(format!("{parent} {diff_id}").as_bytes()),
        };
        chain.push(next);
    }
    chain
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn parses_and_prints_sha256() {
        let digest = Digest::parse(&format!("sha256:{EMPTY}")).unwrap();
        assert_eq!(digest.hex(), EMPTY);
        assert_eq!(digest.to_string(), format!("sha256:{EMPTY}"));
        assert_eq!(digest.short(), "e3b0c44298fc");
        assert_eq!(Digest::of_bytes(b""), digest);
    }

    #[test]
    fn rejects_bad_digests() {
        assert!(matches!(Digest::parse(EMPTY), Err(DigestError::Format(_))));
        assert!(matches!(
            Digest::parse("sha512:abc"),
            Err(DigestError::Algorithm(_))
        ));
        assert!(Digest::parse("sha256:ABC").is_err());
        assert!(Digest::parse(&format!("sha256:{}", EMPTY.to_uppercase())).is_err());
        assert!(Digest::parse(&format!("sha256:{EMPTY}0")).is_err());
    }

    #[test]
    fn chain_ids_follow_the_oci_rule() {
        let a = Digest::of_bytes(b"a");
        let b = Digest::of_bytes(b"b");
        let chain = chain_ids(&[a.clone(), b.clone()]);
        assert_eq!(chain[0], a);
        assert_eq!(chain[1], Digest::of_bytes(format!("{a} {b}").as_bytes()));
        assert!(chain_ids(&[]).is_empty());
    }

    #[test]
    fn serde_round_trip() {
        let digest = Digest::of_bytes(b"x");
        let json = serde_json::to_string(&digest).unwrap();
        assert_eq!(serde_json::from_str::<Digest>(&json).unwrap(), digest);
        assert!(serde_json::from_str::<Digest>("\"md5:00\"").is_err());
    }
}
