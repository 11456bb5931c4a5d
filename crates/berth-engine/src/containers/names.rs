//! Container ids (64 hex, as Docker) and generated names
//! (`adjective_noun`, berth's own word lists).

use rand::Rng;

/// A new random container id: 32 random bytes as 64 lowercase hex.
pub fn new_id() -> String {
    let bytes: [u8; 32] = rand::thread_rng().gen();
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

const ADJECTIVES: &[&str] = &[
    "agile", "amber", "ample", "bold", "brave", "brisk", "calm", "clever", "cosy", "crisp",
    "daring", "deft", "eager", "early", "epic", "fair", "fearless", "fond", "gentle", "glad",
    "golden", "grand", "happy", "hardy", "humble", "jolly", "keen", "kind", "lively", "loyal",
    "lucid", "merry", "mighty", "modest", "nimble", "noble", "patient", "plucky", "proud", "quick",
    "quiet", "rapid", "sharp", "shiny", "silent", "sleek", "steady", "stoic", "sunny", "swift",
    "tidy", "trusty", "vivid", "warm", "wise", "witty", "zealous",
];

const NOUNS: &[&str] = &[
    "anchor",
    "atoll",
    "bay",
    "beacon",
    "bollard",
    "bow",
    "breeze",
    "buoy",
    "cabin",
    "cape",
    "capstan",
    "cove",
    "current",
    "deck",
    "delta",
    "dinghy",
    "dock",
    "estuary",
    "ferry",
    "fjord",
    "galley",
    "gull",
    "harbor",
    "haven",
    "helm",
    "inlet",
    "isle",
    "jetty",
    "keel",
    "kelp",
    "lagoon",
    "lantern",
    "lighthouse",
    "mast",
    "mooring",
    "narrows",
    "oar",
    "pier",
    "port",
    "quay",
    "reef",
    "rudder",
    "sail",
    "shoal",
    "skiff",
    "sound",
    "spray",
    "stern",
    "strait",
    "tide",
    "wake",
    "wave",
    "wharf",
];

/// A random `adjective_noun` name; `attempt` > 0 appends a digit, as Docker
/// does when a generated name is taken.
pub fn generate_name(attempt: u32) -> String {
    let mut random = rand::thread_rng();
    let adjective = ADJECTIVES[random.gen_range(0..ADJECTIVES.len())];
    let noun = NOUNS[random.gen_range(0..NOUNS.len())];
    if attempt == 0 {
        format!("{adjective}_{noun}")
    } else {
        format!("{adjective}_{noun}{}", random.gen_range(0..10))
    }
}

/// A user-given name that breaks Docker's rule, in Docker's words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "Invalid container name ({name}), only {} are allowed",
    berth_types::container::names::RESTRICTED_NAME_CHARS
)]
pub struct InvalidName {
    pub name: String,
}

impl InvalidName {
    pub fn kind(&self) -> crate::ErrorKind {
        crate::ErrorKind::InvalidArgument
    }
}

/// Docker's rule for user-given names (one definition, in `berth-types`).
pub fn check_name(name: &str) -> Result<(), InvalidName> {
    let name = name.strip_prefix('/').unwrap_or(name);
    if berth_types::container::names::is_restricted_name(name) {
        Ok(())
    } else {
        Err(InvalidName {
            name: name.to_owned(),
        })
    }
}

/// [`check_name`] with the message as text, for `rename`
/// (`containers/manage.rs`) until it takes [`InvalidName`].
pub fn validate_name(name: &str) -> Result<(), String> {
    check_name(name).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_64_hex() {
        let id = new_id();
        assert_eq!(id.len(), 64);
        assert!(berth_types::digest::is_sha256_hex(&id));
        assert_ne!(id, new_id());
    }

    #[test]
    fn generated_names_are_valid() {
        for attempt in 0..50 {
            let name = generate_name(attempt % 3);
            assert!(validate_name(&name).is_ok(), "{name}");
            assert!(name.contains('_'));
        }
    }

    #[test]
    fn docker_name_rules() {
        assert!(validate_name("web-1.prod_a").is_ok());
        assert!(validate_name("/web").is_ok());
        assert!(validate_name("a").is_err());
        assert!(validate_name("-a").is_err());
        assert_eq!(
            validate_name("bad name").unwrap_err(),
            "Invalid container name (bad name), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed"
        );
        let error = check_name("/bad name").unwrap_err();
        assert_eq!(error.name, "bad name");
        assert_eq!(error.kind(), crate::ErrorKind::InvalidArgument);
        assert_eq!(
            crate::EngineError::from(super::super::create::CreateError::from(error)).kind(),
            crate::ErrorKind::InvalidArgument
        );
    }
}
