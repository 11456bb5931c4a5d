//! The reference grammar of `distribution/reference` (`regexp.go`), written as
//! small matchers instead of regular expressions.
//!
//! ```text
//! reference      := name [ ":" tag ] [ "@" digest ]
//! name           := [ domain "/" ] remote-name
//! domain         := host [ ":" port ]
//! host           := domain-name | "[" ipv6 "]"
//! domain-name    := domain-component ( "." domain-component )*
//! domain-component := [a-zA-Z0-9] | [a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]
//! port           := [0-9]+
//! ipv6           := [a-fA-F0-9:]+
//! remote-name    := path-component ( "/" path-component )*
//! path-component := [a-z0-9]+ ( separator [a-z0-9]+ )*
//! separator      := "." | "_" | "__" | "-"+
//! tag            := [\w][\w.-]{0,127}
//! digest         := algorithm ":" [0-9a-fA-F]{32,}
//! algorithm      := [A-Za-z][A-Za-z0-9]* ( [-_+.] [A-Za-z][A-Za-z0-9]* )*
//! ```
//!
//! Each matcher answers for the whole string (the regexes are anchored).

/// Longest tag: one leading character plus up to 127 more.
const TAG_MAX_LEN: usize = 128;

/// Shortest digest hex part the grammar accepts (128 bits); the real length
/// check belongs to the digest algorithm.
const DIGEST_HEX_MIN_LEN: usize = 32;

/// The pieces of a reference that matched the grammar, before any
/// normalisation. `domain` is empty when the name has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Parts<'a> {
    pub domain: &'a str,
    pub path: &'a str,
    pub tag: Option<&'a str>,
    pub digest: Option<&'a str>,
}

/// Matches `text` against the whole reference grammar, splitting it the way
/// Docker's anchored regex would.
pub(super) fn match_reference(text: &str) -> Option<Parts<'_>> {
    // No part of a name or tag may contain '@', and the digest may not either,
    // so the first '@' is the only possible digest separator.
    let (before_digest, digest) = match text.split_once('@') {
        Some((before, digest)) => (before, Some(digest)),
        None => (text, None),
    };
    if digest.is_some_and(|digest| !is_digest_shape(digest)) {
        return None;
    }
    // A ':' inside a name only ever sits in the domain, which is followed by a
    // '/'; so a last ':' with no '/' after it can only start the tag.
    let (name, tag) = match before_digest.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => (name, Some(tag)),
        _ => (before_digest, None),
    };
    if tag.is_some_and(|tag| !is_tag(tag)) {
        return None;
    }
    let (domain, path) = match_name(name)?;
    Some(Parts {
        domain,
        path,
        tag,
        digest,
    })
}

/// Splits a name into domain and remote name. A leading domain is preferred
/// when the text allows one, as the regex's greedy optional group does;
/// otherwise the whole name is a remote name with an empty domain.
fn match_name(name: &str) -> Option<(&str, &str)> {
    if let Some((domain, path)) = name.split_once('/') {
        if is_domain(domain) && is_remote_name(path) {
            return Some((domain, path));
        }
    }
    is_remote_name(name).then_some(("", name))
}

/// `tag := [\w][\w.-]{0,127}` where `\w` is ASCII `[0-9A-Za-z_]`.
pub(super) fn is_tag(text: &str) -> bool {
    let bytes = text.as_bytes();
    let Some((first, rest)) = bytes.split_first() else {
        return false;
    };
    bytes.len() <= TAG_MAX_LEN
        && is_word(*first)
        && rest
            .iter()
            .all(|byte| is_word(*byte) || matches!(byte, b'.' | b'-'))
}

fn is_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

fn is_lower_alphanumeric(byte: u8) -> bool {
    byte.is_ascii_lowercase() || byte.is_ascii_digit()
}

/// `remote-name := path-component ( "/" path-component )*`
pub(super) fn is_remote_name(text: &str) -> bool {
    text.split('/').all(is_path_component)
}

/// `path-component := [a-z0-9]+ ( separator [a-z0-9]+ )*`
pub(super) fn is_path_component(text: &str) -> bool {
    let bytes = text.as_bytes();
    let starts_and_ends_alphanumeric = match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => is_lower_alphanumeric(*first) && is_lower_alphanumeric(*last),
        _ => false,
    };
    // With both ends alphanumeric, every run of other bytes sits between two
    // alphanumeric runs and must be exactly one separator.
    starts_and_ends_alphanumeric
        && bytes
            .chunk_by(|left, right| is_lower_alphanumeric(*left) == is_lower_alphanumeric(*right))
            .filter(|run| {
                run.first()
                    .is_some_and(|byte| !is_lower_alphanumeric(*byte))
            })
            .all(is_separator)
}

/// `separator := "." | "_" | "__" | "-"+` — repeated dashes are allowed so
/// that host names fit as components; repeated dots and mixed runs are not.
fn is_separator(run: &[u8]) -> bool {
    matches!(run, b"." | b"_" | b"__") || (!run.is_empty() && run.iter().all(|byte| *byte == b'-'))
}

/// `domain := host [ ":" port ]`
pub(super) fn is_domain(text: &str) -> bool {
    let after_host = if let Some(bracketed) = text.strip_prefix('[') {
        let Some((address, after)) = bracketed.split_once(']') else {
            return false;
        };
        if !is_ipv6_body(address) {
            return false;
        }
        after
    } else {
        // A domain name has no ':', so the first one starts the port.
        let (host, after) = text.split_at(text.find(':').unwrap_or(text.len()));
        if !is_domain_name(host) {
            return false;
        }
        after
    };
    match after_host.strip_prefix(':') {
        Some(port) => !port.is_empty() && port.bytes().all(|byte| byte.is_ascii_digit()),
        None => after_host.is_empty(),
    }
}

/// The grammar only asks for hex digits and colons between the brackets; zone
/// ids (`%eth0`) and dotted IPv4 tails are deliberately left out by Docker.
fn is_ipv6_body(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|byte| byte.is_ascii_hexdigit() || byte == b':')
}

/// `domain-name := domain-component ( "." domain-component )*`
fn is_domain_name(text: &str) -> bool {
    text.split('.').all(is_domain_component)
}

/// Letters of either case, digits and inner dashes (`[a-zA-Z0-9-]`, no dash
/// at either end).
fn is_domain_component(text: &str) -> bool {
    let bytes = text.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|byte| byte.is_ascii_alphanumeric() || *byte == b'-')
        }
        _ => false,
    }
}

/// The loose digest shape the reference grammar accepts before the digest
/// itself is validated: any well-formed algorithm name, 32 or more hex digits
/// of either case.
pub(super) fn is_digest_shape(text: &str) -> bool {
    let Some((algorithm, hex)) = text.split_once(':') else {
        return false;
    };
    algorithm
        .split(['-', '_', '+', '.'])
        .all(is_algorithm_component)
        && hex.len() >= DIGEST_HEX_MIN_LEN
        && hex.bytes().all(|byte| byte.is_ascii_hexdigit())
}

/// `[A-Za-z][A-Za-z0-9]*`
fn is_algorithm_component(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.first().is_some_and(u8::is_ascii_alphabetic)
        && bytes.iter().all(u8::is_ascii_alphanumeric)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags() {
        let long_valid = format!("a{}", "b".repeat(127));
        let too_long = format!("a{}", "b".repeat(128));
        for (tag, valid) in [
            ("latest", true),
            ("1", true),
            ("_", true),
            ("_private", true),
            ("V1.2-RC_3", true),
            ("a..--..b", true),
            (long_valid.as_str(), true),
            ("", false),
            ("-rc", false),
            (".hidden", false),
            ("a/b", false),
            ("a:b", false),
            ("a@b", false),
            ("a+b", false),
            ("é", false),
            (too_long.as_str(), false),
        ] {
            assert_eq!(is_tag(tag), valid, "tag {tag:?}");
        }
    }

    #[test]
    fn path_components() {
        for (component, valid) in [
            ("a", true),
            ("busybox", true),
            ("0", true),
            ("a.b", true),
            ("a_b", true),
            ("a__b", true),
            ("a-b", true),
            ("a---b", true),
            ("a.b_c__d-e--f", true),
            ("ubuntu-12.04-base", true),
            ("", false),
            ("A", false),
            ("aB", false),
            ("-a", false),
            ("a-", false),
            (".a", false),
            ("a.", false),
            ("_a", false),
            ("a_", false),
            ("a..b", false),
            ("a___b", false),
            ("a_.b", false),
            ("a-.b", false),
            ("a.-b", false),
            ("a-_b", false),
            ("a b", false),
            ("a:b", false),
            ("é", false),
        ] {
            assert_eq!(
                is_path_component(component),
                valid,
                "component {component:?}"
            );
        }
    }

    #[test]
    fn remote_names() {
        for (name, valid) in [
            ("a", true),
            ("a/b/c", true),
            ("library/busybox", true),
            ("", false),
            ("a/", false),
            ("/a", false),
            ("a//b", false),
        ] {
            assert_eq!(is_remote_name(name), valid, "remote name {name:?}");
        }
    }

    #[test]
    fn domains() {
        for (domain, valid) in [
            ("localhost", true),
            ("LOCALHOST", true),
            ("example.com", true),
            ("Example.COM", true),
            ("my-registry.example.com", true),
            ("a", true),
            ("127.0.0.1", true),
            ("127.0.0.1:5000", true),
            ("host:5000", true),
            ("host:0", true),
            ("[::1]", true),
            ("[::1]:5000", true),
            ("[fc00:1:2:3:4:5:6:7]:5000", true),
            ("[FC00::1]", true),
            ("", false),
            (":5000", false),
            ("host:", false),
            ("host:50a", false),
            ("host:5000:6000", false),
            ("-host", false),
            ("host-", false),
            ("a..b", false),
            (".a", false),
            ("a_b.c", false),
            ("[]", false),
            ("[::1", false),
            ("[::1]:", false),
            ("[::1]x", false),
            ("[fe80::1%eth0]", false),
            ("[2001:db8::192.0.2.33]", false),
            ("fc00::1", false),
        ] {
            assert_eq!(is_domain(domain), valid, "domain {domain:?}");
        }
    }

    #[test]
    fn digest_shapes() {
        let hex32 = "0123456789abcdef".repeat(2);
        let hex31 = &hex32[1..];
        for (digest, valid) in [
            (format!("sha256:{hex32}"), true),
            (format!("SHA256:{}", hex32.to_uppercase()), true),
            (format!("sha256+b64.x-y_z:{hex32}"), true),
            (format!("md5:{hex32}"), true),
            (format!("sha256:{hex31}"), false),
            (format!("256:{hex32}"), false),
            (format!("sha256:{hex32}g"), false),
            (format!(":{hex32}"), false),
            (format!("sha--256:{hex32}"), false),
            (format!("sha-2:{hex32}"), false),
            (hex32.clone(), false),
        ] {
            assert_eq!(is_digest_shape(&digest), valid, "digest {digest:?}");
        }
    }

    #[test]
    fn reference_splitting() {
        let parts = |domain, path, tag, digest| Parts {
            domain,
            path,
            tag,
            digest,
        };
        let digest = format!("sha256:{}", "a".repeat(64));
        let with_digest = format!("h:1/p:t@{digest}");
        for (text, expected) in [
            ("a", Some(parts("", "a", None, None))),
            ("a:t", Some(parts("", "a", Some("t"), None))),
            ("a/b", Some(parts("a", "b", None, None))),
            ("a_b/c", Some(parts("", "a_b/c", None, None))),
            ("h:1/p", Some(parts("h:1", "p", None, None))),
            ("[::1]:1/p:t", Some(parts("[::1]:1", "p", Some("t"), None))),
            (
                with_digest.as_str(),
                Some(parts("h:1", "p", Some("t"), Some(digest.as_str()))),
            ),
            ("h:1", Some(parts("", "h", Some("1"), None))),
            ("h:1:2", None),
            ("a:", None),
            ("a@", None),
            ("a:t:t", None),
            ("a/b:c/d", None),
            ("A/b", Some(parts("A", "b", None, None))),
            ("a/B", None),
            ("A_b/c", None),
        ] {
            assert_eq!(match_reference(text), expected, "reference {text:?}");
        }
    }
}
