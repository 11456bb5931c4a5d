//! Inputs Docker accepts, and what each one parses to.

use super::*;

/// One valid input and everything a caller can observe about it.
struct Valid {
    input: String,
    domain: &'static str,
    path: String,
    tag: Option<String>,
    has_digest: bool,
    full: String,
    familiar: String,
    familiar_name: String,
}

fn valid(
    input: &str,
    domain: &'static str,
    path: &str,
    tag: Option<&str>,
    familiar: &str,
) -> Valid {
    let has_digest = input.contains('@');
    let name = if domain.is_empty() {
        path.to_owned()
    } else {
        format!("{domain}/{path}")
    };
    let mut full = name;
    if let Some(tag) = tag {
        full = format!("{full}:{tag}");
    }
    if has_digest {
        full = format!("{full}@{}", digest());
    }
    let familiar_name = familiar
        .split('@')
        .next()
        .map(|text| match text.rsplit_once(':') {
            Some((name, tag)) if !tag.contains('/') => name.to_owned(),
            _ => text.to_owned(),
        })
        .unwrap_or_default();
    Valid {
        input: input.to_owned(),
        domain,
        path: path.to_owned(),
        tag: tag.map(str::to_owned),
        has_digest,
        full,
        familiar: familiar.to_owned(),
        familiar_name,
    }
}

fn valid_cases() -> Vec<Valid> {
    let at = format!("@{}", digest());
    let max_official = "a".repeat(REPOSITORY_PATH_MAX_LEN - OFFICIAL_REPO_PREFIX.len());
    let max_path = "b".repeat(REPOSITORY_PATH_MAX_LEN);
    let long_tag = format!("T{}", "t".repeat(127));
    vec![
        // Docker Hub official images: domain and `library/` are added.
        valid("busybox", "docker.io", "library/busybox", None, "busybox"),
        valid(
            "busybox:latest",
            "docker.io",
            "library/busybox",
            Some("latest"),
            "busybox:latest",
        ),
        valid(
            "busybox:1.36.1",
            "docker.io",
            "library/busybox",
            Some("1.36.1"),
            "busybox:1.36.1",
        ),
        valid(
            "library/busybox",
            "docker.io",
            "library/busybox",
            None,
            "busybox",
        ),
        valid(
            "docker.io/busybox",
            "docker.io",
            "library/busybox",
            None,
            "busybox",
        ),
        valid(
            "docker.io/library/busybox",
            "docker.io",
            "library/busybox",
            None,
            "busybox",
        ),
        valid(
            "index.docker.io/busybox:1",
            "docker.io",
            "library/busybox",
            Some("1"),
            "busybox:1",
        ),
        valid(
            "index.docker.io/library/busybox",
            "docker.io",
            "library/busybox",
            None,
            "busybox",
        ),
        valid(
            "ubuntu-12.04-base",
            "docker.io",
            "library/ubuntu-12.04-base",
            None,
            "ubuntu-12.04-base",
        ),
        // Docker Hub user repositories: no `library/`.
        valid("myuser/app", "docker.io", "myuser/app", None, "myuser/app"),
        valid(
            "myuser/app:v2",
            "docker.io",
            "myuser/app",
            Some("v2"),
            "myuser/app:v2",
        ),
        valid(
            "docker.io/myuser/app",
            "docker.io",
            "myuser/app",
            None,
            "myuser/app",
        ),
        valid(
            "index.docker.io/myuser/app",
            "docker.io",
            "myuser/app",
            None,
            "myuser/app",
        ),
        valid(
            "store/foo/bar",
            "docker.io",
            "store/foo/bar",
            None,
            "store/foo/bar",
        ),
        valid(
            "other/library",
            "docker.io",
            "other/library",
            None,
            "other/library",
        ),
        // `library/` with more components keeps its prefix in familiar form.
        valid(
            "library/a/b",
            "docker.io",
            "library/a/b",
            None,
            "library/a/b",
        ),
        valid(
            "docker.io/library/a/b:t",
            "docker.io",
            "library/a/b",
            Some("t"),
            "library/a/b:t",
        ),
        // Separators inside path components.
        valid(
            "dock__er/docker",
            "docker.io",
            "dock__er/docker",
            None,
            "dock__er/docker",
        ),
        valid(
            "docker---rules/x",
            "docker.io",
            "docker---rules/x",
            None,
            "docker---rules/x",
        ),
        valid(
            "a_b/c.d_e__f-g",
            "docker.io",
            "a_b/c.d_e__f-g",
            None,
            "a_b/c.d_e__f-g",
        ),
        valid("d/t", "docker.io", "d/t", None, "d/t"),
        // Other registries: first component with '.', ':', or `localhost`.
        valid("localhost/foo", "localhost", "foo", None, "localhost/foo"),
        valid(
            "localhost/library/foo",
            "localhost",
            "library/foo",
            None,
            "localhost/library/foo",
        ),
        valid(
            "localhost:5000/foo:tag",
            "localhost:5000",
            "foo",
            Some("tag"),
            "localhost:5000/foo:tag",
        ),
        valid(
            "host:5000/a/b:tag",
            "host:5000",
            "a/b",
            Some("tag"),
            "host:5000/a/b:tag",
        ),
        valid(
            "example.com/foo",
            "example.com",
            "foo",
            None,
            "example.com/foo",
        ),
        valid(
            "example.com:8000/private/moonbase",
            "example.com:8000",
            "private/moonbase",
            None,
            "example.com:8000/private/moonbase",
        ),
        valid(
            "127.0.0.1:5000/debian",
            "127.0.0.1:5000",
            "debian",
            None,
            "127.0.0.1:5000/debian",
        ),
        valid(
            "192.168.0.1:8/debian",
            "192.168.0.1:8",
            "debian",
            None,
            "192.168.0.1:8/debian",
        ),
        valid(
            "ghcr.io/org/team/app:1",
            "ghcr.io",
            "org/team/app",
            Some("1"),
            "ghcr.io/org/team/app:1",
        ),
        // Domain names keep their case; only the path must be lowercase.
        valid(
            "Example.COM/foo",
            "Example.COM",
            "foo",
            None,
            "Example.COM/foo",
        ),
        // An uppercase first component is taken as a host name.
        valid("Foo/bar", "Foo", "bar", None, "Foo/bar"),
        valid(
            "LOCALDOMAIN/library/debian",
            "LOCALDOMAIN",
            "library/debian",
            None,
            "LOCALDOMAIN/library/debian",
        ),
        // IPv6 literals in brackets, with or without port.
        valid("[::1]:5000/a", "[::1]:5000", "a", None, "[::1]:5000/a"),
        valid(
            "[fc00::1]/a/b:t",
            "[fc00::1]",
            "a/b",
            Some("t"),
            "[fc00::1]/a/b:t",
        ),
        valid(
            "[FC00:1:2:3:4:5:6:7]:5000/library/debian",
            "[FC00:1:2:3:4:5:6:7]:5000",
            "library/debian",
            None,
            "[FC00:1:2:3:4:5:6:7]:5000/library/debian",
        ),
        // A single component is always a Docker Hub name: these are tags.
        valid(
            "localhost:5000",
            "docker.io",
            "library/localhost",
            Some("5000"),
            "localhost:5000",
        ),
        valid(
            "192.168.0.1:80",
            "docker.io",
            "library/192.168.0.1",
            Some("80"),
            "192.168.0.1:80",
        ),
        valid(
            "192.168.0.1",
            "docker.io",
            "library/192.168.0.1",
            None,
            "192.168.0.1",
        ),
        valid(
            "example.com",
            "docker.io",
            "library/example.com",
            None,
            "example.com",
        ),
        // `sha256:<hex>` is not an id here: it is image `sha256` with that tag.
        valid(
            &digest(),
            "docker.io",
            "library/sha256",
            Some(HEX),
            &format!("sha256:{HEX}"),
        ),
        // A hex name is fine once a domain removes the ambiguity.
        valid(
            &format!("docker.io/{HEX}"),
            "docker.io",
            &format!("library/{HEX}"),
            None,
            HEX,
        ),
        valid(
            &format!("{HEX}:tag"),
            "docker.io",
            &format!("library/{HEX}"),
            Some("tag"),
            &format!("{HEX}:tag"),
        ),
        // A '.' first component that is no valid domain but a valid path
        // component: Docker leaves the domain empty.
        valid("a_b.c/foo", "", "a_b.c/foo", None, "a_b.c/foo"),
        valid("a-b_c.d/e:t", "", "a-b_c.d/e", Some("t"), "a-b_c.d/e:t"),
        // Tags: word characters, dots and dashes, any case, up to 128.
        valid("foo:_x", "docker.io", "library/foo", Some("_x"), "foo:_x"),
        valid(
            "foo:X.Y-Z__1",
            "docker.io",
            "library/foo",
            Some("X.Y-Z__1"),
            "foo:X.Y-Z__1",
        ),
        valid(
            &format!("foo:{long_tag}"),
            "docker.io",
            "library/foo",
            Some(&long_tag),
            &format!("foo:{long_tag}"),
        ),
        // Digests, with and without a tag.
        valid(
            &format!("busybox{at}"),
            "docker.io",
            "library/busybox",
            None,
            &format!("busybox{at}"),
        ),
        valid(
            &format!("busybox:1{at}"),
            "docker.io",
            "library/busybox",
            Some("1"),
            &format!("busybox:1{at}"),
        ),
        valid(
            &format!("docker.io/library/busybox:latest{at}"),
            "docker.io",
            "library/busybox",
            Some("latest"),
            &format!("busybox:latest{at}"),
        ),
        valid(
            &format!("host:5000/a/b{at}"),
            "host:5000",
            "a/b",
            None,
            &format!("host:5000/a/b{at}"),
        ),
        valid(
            &format!("[::1]:5000/a:t{at}"),
            "[::1]:5000",
            "a",
            Some("t"),
            &format!("[::1]:5000/a:t{at}"),
        ),
        // Length limit: the path counts (with `library/`), the domain does not.
        valid(
            &max_official,
            "docker.io",
            &format!("library/{max_official}"),
            None,
            &max_official,
        ),
        valid(
            &format!("registry.example.com:5000/{max_path}"),
            "registry.example.com:5000",
            &max_path,
            None,
            &format!("registry.example.com:5000/{max_path}"),
        ),
    ]
}

#[test]
fn parses_valid_references() {
    for case in valid_cases() {
        let input = &case.input;
        let reference = Reference::parse_normalized(input)
            .unwrap_or_else(|error| panic!("{input:?} should parse, got {error}"));
        assert_eq!(reference.domain(), case.domain, "domain of {input:?}");
        assert_eq!(reference.path(), case.path, "path of {input:?}");
        assert_eq!(reference.tag(), case.tag.as_deref(), "tag of {input:?}");
        assert_eq!(
            reference.digest().map(Digest::to_string),
            case.has_digest.then(digest),
            "digest of {input:?}"
        );
        assert_eq!(reference.to_string(), case.full, "full form of {input:?}");
        assert_eq!(
            reference.familiar_string(),
            case.familiar,
            "familiar form of {input:?}"
        );
        assert_eq!(
            reference.familiar_name(),
            case.familiar_name,
            "familiar name of {input:?}"
        );
        let name = reference.name();
        assert!(case.full.starts_with(&name), "name {name:?} of {input:?}");
        assert_eq!(
            reference.is_name_only(),
            case.tag.is_none() && !case.has_digest
        );
        // The full form is canonical: it parses back to the same reference.
        assert_eq!(
            Reference::parse_normalized(&case.full),
            Ok(reference.clone()),
            "reparse of {input:?}"
        );
        assert_eq!(
            input.parse::<Reference>(),
            Ok(reference),
            "FromStr of {input:?}"
        );
    }
}
