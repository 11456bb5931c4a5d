//! Behaviour tests for reference parsing, written against the cases Docker's
//! `distribution/reference` documents and the quirks found reading it.

mod invalid;
mod never_panics;
mod valid;

use super::*;

const HEX: &str = "86e0e091d0da6bde2456dbb48306f3956bbeb2eae1b5b9a43045843f69fe4aaa";

fn digest() -> String {
    format!("sha256:{HEX}")
}

#[test]
fn strict_parser_rejects_empty_text() {
    assert_eq!(parse_strict(""), Err(ReferenceError::Empty));
    assert_eq!(
        ReferenceError::Empty.to_string(),
        "repository name must have at least one component"
    );
    // Without a prepended domain the strict parser still prefers one.
    let reference = parse_strict("a/b").expect("valid");
    assert_eq!((reference.domain(), reference.path()), ("a", "b"));
}

#[test]
fn error_variants_carry_context() {
    assert_eq!(
        Reference::parse_normalized("Busybox"),
        Err(ReferenceError::NotLowercase {
            name: "library/Busybox".into()
        })
    );
    assert_eq!(
        Reference::parse_normalized(HEX),
        Err(ReferenceError::HexIdentifier { text: HEX.into() })
    );
    assert_eq!(
        Reference::parse_normalized(&"a".repeat(300)),
        Err(ReferenceError::NameTooLong { length: 308 })
    );
}

#[test]
fn default_tag_is_added_only_to_bare_names() {
    let tagged = |text: &str| {
        Reference::parse_normalized(text)
            .expect("valid")
            .with_default_tag()
            .to_string()
    };
    assert_eq!(tagged("busybox"), "docker.io/library/busybox:latest");
    assert_eq!(tagged("host:5000/a"), "host:5000/a:latest");
    assert_eq!(tagged("busybox:1"), "docker.io/library/busybox:1");
    assert_eq!(
        tagged(&format!("busybox@{}", digest())),
        format!("docker.io/library/busybox@{}", digest())
    );
    assert_eq!(
        tagged(&format!("busybox:1@{}", digest())),
        format!("docker.io/library/busybox:1@{}", digest())
    );
}

#[test]
fn with_tag_replaces_tag_and_drops_digest() {
    let reference = Reference::parse_normalized(&format!("busybox:1@{}", digest())).expect("valid");
    for (tag, expected) in [
        ("v2", Ok("docker.io/library/busybox:v2")),
        ("V_2.0-rc", Ok("docker.io/library/busybox:V_2.0-rc")),
        ("", Err("invalid tag format")),
        ("-v2", Err("invalid tag format")),
        ("a:b", Err("invalid tag format")),
        ("a/b", Err("invalid tag format")),
        (&"t".repeat(129), Err("invalid tag format")),
    ] {
        let result = reference.with_tag(tag).map(|retagged| retagged.to_string());
        assert_eq!(
            result.as_deref().map_err(ToString::to_string),
            expected.map_err(str::to_owned),
            "with_tag({tag:?})"
        );
    }
    assert_eq!(
        reference.with_tag("x").expect("valid").digest(),
        None,
        "digest is dropped"
    );
}

#[test]
fn with_digest_keeps_tag() {
    let reference = Reference::parse_normalized("busybox:1").expect("valid");
    let pinned = reference.with_digest(Digest::from_hex(HEX).expect("hex"));
    assert_eq!(pinned.familiar_string(), format!("busybox:1@{}", digest()));
}

#[test]
fn equal_whichever_way_written() {
    let spellings = [
        "busybox",
        "library/busybox",
        "docker.io/busybox",
        "docker.io/library/busybox",
        "index.docker.io/busybox",
        "index.docker.io/library/busybox",
    ];
    let first = Reference::parse_normalized(spellings[0]).expect("valid");
    for spelling in spellings {
        assert_eq!(
            Reference::parse_normalized(spelling),
            Ok(first.clone()),
            "{spelling}"
        );
    }
    let mut set = std::collections::HashSet::new();
    set.extend(spellings.map(|text| Reference::parse_normalized(text).expect("valid")));
    assert_eq!(set.len(), 1);
    assert_ne!(
        Reference::parse_normalized("busybox:latest"),
        Ok(first),
        "a tag makes a different reference"
    );
}

#[test]
fn familiar_form_can_mean_another_registry() {
    // Docker's FamiliarString drops `docker.io/` even when what remains
    // starts with something domain-like; reparsing then names another
    // registry. Recorded so nobody relies on familiar forms round-tripping.
    let reference = Reference::parse_normalized("docker.io/localhost/x").expect("valid");
    assert_eq!(reference.familiar_string(), "localhost/x");
    let reparsed = Reference::parse_normalized(&reference.familiar_string()).expect("valid");
    assert_eq!(reparsed.domain(), "localhost");
}

#[test]
fn parse_any_reference_prefers_ids() {
    let id = Digest::from_hex(HEX).expect("hex");
    for (input, expected) in [
        (HEX.to_owned(), Ok(AnyReference::Digest(id.clone()))),
        (digest(), Ok(AnyReference::Digest(id))),
        (
            "busybox".to_owned(),
            Ok(AnyReference::Named(
                Reference::parse_normalized("busybox").expect("valid"),
            )),
        ),
        (
            "sha256:abc".to_owned(),
            Ok(AnyReference::Named(
                Reference::parse_normalized("docker.io/library/sha256:abc").expect("valid"),
            )),
        ),
        (
            "Busybox".to_owned(),
            Err(ReferenceError::NotLowercase {
                name: "library/Busybox".into(),
            }),
        ),
        // Docker would take this as a sha512 digest; berth knows only
        // sha256, so it is image `sha512` with a 128-character tag.
        (
            format!("sha512:{HEX}{HEX}"),
            Ok(AnyReference::Named(
                Reference::parse_normalized("sha512")
                    .expect("valid")
                    .with_tag(&format!("{HEX}{HEX}"))
                    .expect("valid tag"),
            )),
        ),
        (
            format!("sha512:{HEX}{HEX}0"),
            Err(ReferenceError::InvalidFormat),
        ),
    ] {
        assert_eq!(parse_any_reference(&input), expected, "{input:?}");
    }
}

#[test]
fn image_id_prefixes() {
    let too_long = format!("{HEX}0");
    let with_algorithm = digest();
    for (text, expected) in [
        ("a", true),
        ("0", true),
        ("86e0e091d0da", true),
        ("sha256:86e0", true),
        (HEX, true),
        (with_algorithm.as_str(), true),
        ("", false),
        ("sha256:", false),
        (too_long.as_str(), false),
        ("86E0", false),
        ("busybox", false),
        ("abcdefg", false),
        ("sha512:abc", false),
        ("sha256:xyz", false),
        ("abc:def", false),
        (" abc", false),
    ] {
        assert_eq!(looks_like_image_id_prefix(text), expected, "{text:?}");
    }
}

#[test]
fn serde_uses_the_full_string() {
    let reference = Reference::parse_normalized("busybox:1").expect("valid");
    let json = serde_json::to_string(&reference).expect("serialise");
    assert_eq!(json, "\"docker.io/library/busybox:1\"");
    assert_eq!(
        serde_json::from_str::<Reference>(&json).expect("deserialise"),
        reference
    );
    assert_eq!(
        serde_json::from_str::<Reference>("\"busybox:1\"").expect("deserialise"),
        reference
    );
    let error = serde_json::from_str::<Reference>("\"Busybox\"").expect_err("uppercase");
    assert!(error.to_string().contains("must be lowercase"), "{error}");
    assert!(serde_json::from_str::<Reference>("42").is_err());
}
