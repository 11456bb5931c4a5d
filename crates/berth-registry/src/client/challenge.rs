//! `WWW-Authenticate` challenges (RFC 7235) as registries send them:
//! `Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="…"`
//! or `Basic realm="Registry Realm"`.

use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Challenge {
    /// Lowercased: `bearer`, `basic`.
    pub scheme: String,
    /// Parameter names lowercased, values unquoted.
    pub parameters: BTreeMap<String, String>,
}

/// Every challenge in one header value (a value may hold several,
/// separated by commas like the parameters themselves).
pub fn parse_challenges(header: &str) -> Vec<Challenge> {
    let mut challenges: Vec<Challenge> = Vec::new();
    let mut rest = header.trim_start();
    while !rest.is_empty() {
        let (token, after) = split_token(rest);
        if token.is_empty() {
            // Not a token: skip one character (a stray comma or space).
            rest = after.get(1..).unwrap_or("").trim_start();
            continue;
        }
        let after_token = after.trim_start();
        match (after_token.strip_prefix('='), challenges.last_mut()) {
            (Some(value_text), Some(current)) if !value_text.starts_with('=') => {
                let (value, remainder) = split_value(value_text.trim_start());
                current.parameters.insert(token.to_ascii_lowercase(), value);
                rest = remainder;
            }
            _ => {
                challenges.push(Challenge {
                    scheme: token.to_ascii_lowercase(),
                    parameters: BTreeMap::new(),
                });
                rest = after_token;
            }
        }
        rest = rest.trim_start().trim_start_matches(',').trim_start();
    }
    challenges
}

fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

fn split_token(text: &str) -> (&str, &str) {
    let end = text
        .bytes()
        .position(|byte| !is_token_byte(byte))
        .unwrap_or(text.len());
    text.split_at(end)
}

/// A bare value or a quoted string (with `\` escapes), and what follows it.
fn split_value(text: &str) -> (String, &str) {
    let Some(quoted) = text.strip_prefix('"') else {
        // Unquoted: up to the next separator (more lenient than a strict
        // token, so `realm=https://x/token` still reads whole).
        let end = text
            .find(|character: char| character == ',' || character.is_whitespace())
            .unwrap_or(text.len());
        let (value, rest) = text.split_at(end);
        return (value.to_owned(), rest);
    };
    let mut value = String::new();
    let mut characters = quoted.char_indices();
    while let Some((index, character)) = characters.next() {
        match character {
            '\\' => {
                if let Some((_, escaped)) = characters.next() {
                    value.push(escaped);
                }
            }
            '"' => return (value, &quoted[index + 1..]),
            other => value.push(other),
        }
    }
    (value, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parameters(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect()
    }

    #[test]
    fn docker_hub_bearer_challenge() {
        let header = r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/busybox:pull""#;
        assert_eq!(
            parse_challenges(header),
            [Challenge {
                scheme: "bearer".into(),
                parameters: parameters(&[
                    ("realm", "https://auth.docker.io/token"),
                    ("service", "registry.docker.io"),
                    ("scope", "repository:library/busybox:pull"),
                ]),
            }]
        );
    }

    #[test]
    fn basic_and_several_challenges() {
        let header = r#"Basic realm="Registry Realm", Bearer realm=https://x/token,error="insufficient_scope",scope="a:b\"c""#;
        let challenges = parse_challenges(header);
        assert_eq!(challenges.len(), 2);
        assert_eq!(challenges[0].scheme, "basic");
        assert_eq!(challenges[0].parameters["realm"], "Registry Realm");
        assert_eq!(challenges[1].scheme, "bearer");
        assert_eq!(challenges[1].parameters["realm"], "https://x/token");
        assert_eq!(challenges[1].parameters["error"], "insufficient_scope");
        assert_eq!(challenges[1].parameters["scope"], "a:b\"c");
    }

    #[test]
    fn garbage_does_not_panic() {
        for header in [
            "",
            ",,,",
            "=",
            "Bearer realm=\"unterminated",
            "Bearer ==x",
            "\"x\"",
        ] {
            let _ = parse_challenges(header);
        }
        assert_eq!(parse_challenges("Basic")[0].scheme, "basic");
    }
}
