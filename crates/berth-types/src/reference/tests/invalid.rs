//! Inputs Docker rejects, with its exact messages.

use super::*;

#[test]
fn rejects_invalid_references_with_dockers_messages() {
    const INVALID: &str = "invalid reference format";
    let too_long_official = "a".repeat(REPOSITORY_PATH_MAX_LEN - OFFICIAL_REPO_PREFIX.len() + 1);
    let too_long_path = format!("example.com/{}", "b".repeat(REPOSITORY_PATH_MAX_LEN + 1));
    let too_long_tag = format!("foo:{}", "t".repeat(129));
    let hex_identifier_message =
        format!("invalid repository name ({HEX}), cannot specify 64-byte hexadecimal strings");
    let cases: Vec<(String, String)> = vec![
        // Plain grammar failures.
        ("".into(), INVALID.into()),
        (":".into(), INVALID.into()),
        ("/".into(), INVALID.into()),
        ("busybox:".into(), INVALID.into()),
        ("busybox@".into(), INVALID.into()),
        ("a//b".into(), INVALID.into()),
        ("docker///docker".into(), INVALID.into()),
        ("docker.io/docker///docker".into(), INVALID.into()),
        ("docker/".into(), INVALID.into()),
        ("/docker".into(), INVALID.into()),
        ("-a".into(), INVALID.into()),
        ("-docker/docker".into(), INVALID.into()),
        ("docker-/docker".into(), INVALID.into()),
        ("-docker.io/docker/docker".into(), INVALID.into()),
        ("_docker/_docker".into(), INVALID.into()),
        ("____/____".into(), INVALID.into()),
        ("dock..er/docker".into(), INVALID.into()),
        ("dock_.er/docker".into(), INVALID.into()),
        ("dock-.er/docker".into(), INVALID.into()),
        ("a___b".into(), INVALID.into()),
        ("a:tag:tag".into(), INVALID.into()),
        ("a/b:c/d".into(), INVALID.into()),
        ("foo bar".into(), INVALID.into()),
        ("foo\n".into(), INVALID.into()),
        ("café".into(), INVALID.into()),
        ("https://github.com/docker/docker".into(), INVALID.into()),
        // Tags.
        ("foo:-tag".into(), INVALID.into()),
        ("foo:.tag".into(), INVALID.into()),
        ("foo:t+t".into(), INVALID.into()),
        (too_long_tag, INVALID.into()),
        // Domains and IPv6.
        ("host:/foo".into(), INVALID.into()),
        ("host:port/foo".into(), INVALID.into()),
        ("[fc00::1]".into(), INVALID.into()),
        ("[fc00::1]:5000".into(), INVALID.into()),
        ("fc00::1:5000/debian".into(), INVALID.into()),
        ("[fe80::1%eth0]:5000/debian".into(), INVALID.into()),
        (
            "[2001:db8:3:4::192.0.2.33]:5000/debian".into(),
            INVALID.into(),
        ),
        ("[::1]:/a".into(), INVALID.into()),
        // Digests that do not even have the grammar's shape.
        ("foo@sha256:abc".into(), INVALID.into()),
        (format!("foo@{HEX}"), INVALID.into()),
        (format!("foo@@{}", digest()), INVALID.into()),
        (format!("foo@{}@{}", digest(), digest()), INVALID.into()),
        (format!("foo@{}:tag", digest()), INVALID.into()),
        // Case: the path up to the first ':' is checked first, with
        // `library/` already added.
        (
            "Busybox".into(),
            "invalid reference format: repository name (library/Busybox) must be lowercase".into(),
        ),
        (
            "Busybox:latest".into(),
            "invalid reference format: repository name (library/Busybox) must be lowercase".into(),
        ),
        (
            "docker/Docker".into(),
            "invalid reference format: repository name (docker/Docker) must be lowercase".into(),
        ),
        (
            "docker.io/docker/Docker".into(),
            "invalid reference format: repository name (docker/Docker) must be lowercase".into(),
        ),
        (
            "example.com/Foo:tag".into(),
            "invalid reference format: repository name (Foo) must be lowercase".into(),
        ),
        (
            "localhost:5000/a/B".into(),
            "invalid reference format: repository name (a/B) must be lowercase".into(),
        ),
        (
            "Foo/Bar".into(),
            "invalid reference format: repository name (Bar) must be lowercase".into(),
        ),
        // With no tag, Docker's case check runs into the digest's algorithm.
        (
            format!("Foo@{}", digest()),
            "invalid reference format: repository name (library/Foo@sha256) must be lowercase"
                .into(),
        ),
        (
            format!("foo@SHA256:{HEX}"),
            "invalid reference format: repository name (library/foo@SHA256) must be lowercase"
                .into(),
        ),
        // The strict parser's own case error: `A_b` is taken as a domain but
        // is none, and only the lowercased text is a valid path.
        ("A_b/c".into(), "repository name must be lowercase".into()),
        // Unicode lowercasing, as Go's: the Kelvin sign becomes 'k'.
        (
            "foo:\u{212A}".into(),
            "repository name must be lowercase".into(),
        ),
        // Bare ids.
        (HEX.into(), hex_identifier_message),
        // Length.
        (
            too_long_official,
            "repository name must not be more than 255 characters".into(),
        ),
        (
            too_long_path.clone(),
            "repository name must not be more than 255 characters".into(),
        ),
        (
            format!("{too_long_path}:t@sha512:{HEX}"),
            "repository name must not be more than 255 characters".into(),
        ),
        // Digests with the right shape but wrong content (go-digest's words).
        (
            format!("foo:t@sha256:{}", HEX.to_uppercase()),
            "invalid checksum digest format".into(),
        ),
        (
            format!("foo@sha256:{}", &HEX[..32]),
            "invalid checksum digest length".into(),
        ),
        (
            format!("foo@sha256:{HEX}00"),
            "invalid checksum digest length".into(),
        ),
        (
            format!("foo:t@Sha256:{HEX}"),
            "invalid checksum digest format".into(),
        ),
        (
            format!("foo@md5:{}", &HEX[..32]),
            "unsupported digest algorithm".into(),
        ),
        (
            format!("foo@sha512:{HEX}{HEX}"),
            "unsupported digest algorithm".into(),
        ),
    ];
    for (input, message) in cases {
        match Reference::parse_normalized(&input) {
            Ok(reference) => panic!("{input:?} should fail, parsed as {reference}"),
            Err(error) => assert_eq!(error.to_string(), message, "error for {input:?}"),
        }
    }
}
