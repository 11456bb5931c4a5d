//! What a registry says, read the way docker's client reads it (moby 20.10
//! vendors distribution 2.7): `WWW-Authenticate` challenges, error bodies
//! turned into Docker's error text, Go's status texts and query encoding.
//!
//! Temporary: the login check lives in the CLI until berth-registry's
//! client offers it; then this file goes.

use std::collections::BTreeMap;

/// One `WWW-Authenticate` challenge: a lowercased scheme and its
/// parameters (lowercased names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    pub scheme: String,
    pub parameters: BTreeMap<String, String>,
}

/// distribution's `parseValueAndParams`: `Scheme name="value", name=token`.
pub fn parse_challenge(header: &str) -> Option<Challenge> {
    let header = header.trim_start();
    let scheme_end = header
        .find(|character: char| !is_token(character))
        .unwrap_or(header.len());
    if scheme_end == 0 {
        return None;
    }
    let scheme = header[..scheme_end].to_ascii_lowercase();
    let mut rest = &header[scheme_end..];
    let mut parameters = BTreeMap::new();
    loop {
        rest = rest.trim_start_matches([' ', '\t']);
        let name_end = rest
            .find(|character: char| !is_token(character))
            .unwrap_or(rest.len());
        if name_end == 0 {
            break;
        }
        let name = rest[..name_end].to_ascii_lowercase();
        rest = rest[name_end..].trim_start_matches([' ', '\t']);
        let Some(after_equals) = rest.strip_prefix('=') else {
            break;
        };
        rest = after_equals.trim_start_matches([' ', '\t']);
        let value;
        if let Some(quoted) = rest.strip_prefix('"') {
            let (text, after) = quoted_string(quoted);
            value = text;
            rest = after;
        } else {
            let end = rest
                .find(|character: char| !is_token(character))
                .unwrap_or(rest.len());
            value = rest[..end].to_owned();
            rest = &rest[end..];
        }
        parameters.insert(name, value);
        rest = rest.trim_start_matches([' ', '\t']);
        match rest.strip_prefix(',') {
            Some(after_comma) => rest = after_comma,
            None => break,
        }
    }
    Some(Challenge { scheme, parameters })
}

/// RFC 7230 token characters.
fn is_token(character: char) -> bool {
    character.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(character)
}

/// The text of a quoted string (after its opening quote), and what follows
/// its closing quote.
fn quoted_string(text: &str) -> (String, &str) {
    let mut value = String::new();
    let mut characters = text.char_indices();
    while let Some((index, character)) = characters.next() {
        match character {
            '"' => return (value, &text[index + 1..]),
            '\\' => {
                if let Some((_, escaped)) = characters.next() {
                    value.push(escaped);
                }
            }
            other => value.push(other),
        }
    }
    (value, "")
}

/// distribution's error codes: (code, its text in errors, its default message).
const ERROR_CODES: [(&str, &str, &str); 6] = [
    ("UNKNOWN", "unknown", "unknown error"),
    (
        "UNSUPPORTED",
        "unsupported",
        "The operation is unsupported.",
    ),
    ("UNAUTHORIZED", "unauthorized", "authentication required"),
    (
        "DENIED",
        "denied",
        "requested access to the resource is denied",
    ),
    ("UNAVAILABLE", "unavailable", "service unavailable"),
    ("TOOMANYREQUESTS", "toomanyrequests", "too many requests"),
];

fn error_code(code: &str) -> (&'static str, &'static str) {
    let (_, text, message) = ERROR_CODES
        .iter()
        .find(|(name, _, _)| *name == code)
        .unwrap_or(&ERROR_CODES[0]);
    (text, message)
}

/// errcode's `Error()` of one error: the code alone when the message adds
/// nothing, else `code: message`.
fn error_text(code: &str, message: &str, has_detail: bool) -> String {
    let (text, default_message) = error_code(code);
    if !has_detail && (message.is_empty() || message == default_message) {
        text.to_owned()
    } else {
        format!("{text}: {message}")
    }
}

/// errcode's `Errors.Error()`.
fn errors_text(errors: &[String]) -> String {
    match errors {
        [] => "<nil>".to_owned(),
        [one] => one.clone(),
        many => {
            let mut text = "errors:\n".to_owned();
            for error in many {
                text.push_str(error);
                text.push('\n');
            }
            text
        }
    }
}

/// distribution's `parseHTTPErrorResponse`, as error texts; `Err` with
/// the `UnexpectedHTTPResponseError` text when the body holds no errors.
fn parse_error_body(status: u16, body: &[u8]) -> Result<Vec<String>, String> {
    let json: Result<serde_json::Value, _> = serde_json::from_slice(body);
    if let Ok(serde_json::Value::Object(object)) = &json {
        if let Some(details) = object
            .get("details")
            .and_then(serde_json::Value::as_str)
            .filter(|details| !details.is_empty())
        {
            let code = match status {
                401 => "UNAUTHORIZED",
                429 => "TOOMANYREQUESTS",
                _ => "UNKNOWN",
            };
            return Ok(vec![format!("{}: {details}", error_code(code).0)]);
        }
    }
    let quoted_body = format!("{:?}", String::from_utf8_lossy(body));
    let object = match json {
        Ok(serde_json::Value::Object(object)) => object,
        Ok(_) => {
            return Err(format!(
                "error parsing HTTP {status} response body: json: cannot unmarshal into errors: {quoted_body}"
            ))
        }
        Err(error) => {
            return Err(format!(
                "error parsing HTTP {status} response body: {error}: {quoted_body}"
            ))
        }
    };
    let errors: Vec<String> = object
        .get("errors")
        .and_then(serde_json::Value::as_array)
        .map(|errors| {
            errors
                .iter()
                .map(|error| {
                    let text = |name| {
                        error
                            .get(name)
                            .and_then(serde_json::Value::as_str)
                            .unwrap_or_default()
                    };
                    let has_detail = error.get("detail").is_some_and(|detail| !detail.is_null());
                    error_text(text("code"), text("message"), has_detail)
                })
                .collect()
        })
        .unwrap_or_default();
    if errors.is_empty() {
        return Err(format!(
            "error parsing HTTP {status} response body: no error details found in HTTP response body: {quoted_body}"
        ));
    }
    Ok(errors)
}

/// distribution's `HandleErrorResponse`: the text of the error a failed
/// registry or token server answer becomes.
pub fn error_response_text(status: u16, challenges: &[Challenge], body: &[u8]) -> String {
    if !(400..500).contains(&status) {
        return format!("received unexpected HTTP status: {}", status_line(status));
    }
    // OAuth errors in the challenge first (RFC 6750 section 3).
    for challenge in challenges.iter().filter(|c| c.scheme == "bearer") {
        let code = match challenge.parameters.get("error").map(String::as_str) {
            Some("invalid_token") => "UNAUTHORIZED",
            Some("insufficient_scope") => "DENIED",
            _ => continue,
        };
        let message = challenge
            .parameters
            .get("error_description")
            .filter(|description| !description.is_empty())
            .map_or(error_code(code).1, String::as_str);
        let mut errors = vec![format!("{}: {message}", error_code(code).0)];
        match parse_error_body(status, body) {
            Ok(more) => errors.extend(more),
            Err(text) => errors.push(text),
        }
        return errors_text(&errors);
    }
    match parse_error_body(status, body) {
        Ok(errors) => errors_text(&errors),
        // An unreadable 401 is "unauthorized" with the body as its detail.
        Err(_) if status == 401 => format!("unauthorized: {}", error_code("UNAUTHORIZED").1),
        Err(text) => text,
    }
}

/// Go's `resp.Status` for a status code: `401 Unauthorized`.
pub fn status_line(status: u16) -> String {
    let text = ureq::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|code| code.canonical_reason())
        .unwrap_or_default();
    format!("{status} {text}")
}

/// Go's `url.Values.Encode`: sorted by name, `QueryEscape`d.
pub fn encode_query(pairs: &mut [(String, String)]) -> String {
    pairs.sort_by(|left, right| left.0.cmp(&right.0));
    pairs
        .iter()
        .map(|(name, value)| format!("{}={}", query_escape(name), query_escape(value)))
        .collect::<Vec<_>>()
        .join("&")
}

fn query_escape(text: &str) -> String {
    let mut escaped = String::new();
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                escaped.push(char::from(byte))
            }
            b' ' => escaped.push('+'),
            other => escaped.push_str(&format!("%{other:02X}")),
        }
    }
    escaped
}

/// The pairs of a query string, undone from `QueryEscape`.
pub fn decode_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (query_unescape(name), query_unescape(value))
        })
        .collect()
}

fn query_unescape(text: &str) -> String {
    let bytes = text.as_bytes();
    let hex = |byte: u8| char::from(byte).to_digit(16);
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'+' => decoded.push(b' '),
            b'%' if index + 2 < bytes.len() => {
                match (hex(bytes[index + 1]), hex(bytes[index + 2])) {
                    (Some(high), Some(low)) => {
                        decoded.push(u8::try_from(high * 16 + low).unwrap_or(b'?'));
                        index += 2;
                    }
                    _ => decoded.push(b'%'),
                }
            }
            other => decoded.push(other),
        }
        index += 1;
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_parse_like_distribution() {
        let challenge = parse_challenge(
            r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull""#,
        )
        .unwrap();
        assert_eq!(challenge.scheme, "bearer");
        assert_eq!(challenge.parameters["realm"], "https://auth.example/token");
        assert_eq!(challenge.parameters["service"], "registry.example");
        assert_eq!(challenge.parameters["scope"], "repository:a/b:pull");
        let basic = parse_challenge(r#"Basic Realm="with \"quotes\"", charset=UTF-8"#).unwrap();
        assert_eq!(basic.scheme, "basic");
        assert_eq!(basic.parameters["realm"], "with \"quotes\"");
        assert_eq!(basic.parameters["charset"], "UTF-8");
        assert_eq!(parse_challenge(""), None);
    }

    /// Each case checked against docker 20.10 logging in to a fake token
    /// server giving that answer.
    #[test]
    fn error_bodies_read_as_docker_reads_them() {
        let text = |status, challenges: &[Challenge], body: &str| {
            error_response_text(status, challenges, body.as_bytes())
        };
        assert_eq!(
            text(401, &[], r#"{"details":"incorrect username or password"}"#),
            "unauthorized: incorrect username or password"
        );
        assert_eq!(
            text(
                401,
                &[],
                r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required","detail":null}]}"#
            ),
            "unauthorized"
        );
        assert_eq!(
            text(
                401,
                &[],
                r#"{"errors":[{"code":"DENIED","message":"no way"},{"code":"WHATEVER","message":""}]}"#
            ),
            "errors:\ndenied: no way\nunknown\n"
        );
        assert_eq!(
            text(401, &[], "nope"),
            "unauthorized: authentication required"
        );
        assert_eq!(
            text(500, &[], "{}"),
            "received unexpected HTTP status: 500 Internal Server Error"
        );
        let oauth =
            parse_challenge(r#"Bearer error="invalid_token",error_description="bad creds""#)
                .unwrap();
        assert_eq!(
            text(401, &[oauth], "{}"),
            "errors:\nunauthorized: bad creds\nerror parsing HTTP 401 response body: no error details found in HTTP response body: \"{}\"\n"
        );
        assert_eq!(
            text(403, &[], "{}"),
            "error parsing HTTP 403 response body: no error details found in HTTP response body: \"{}\""
        );
    }

    #[test]
    fn queries_encode_as_go_does() {
        let mut pairs = vec![
            ("service".to_owned(), "registry example".to_owned()),
            ("account".to_owned(), "a@b".to_owned()),
            ("client_id".to_owned(), "docker".to_owned()),
        ];
        assert_eq!(
            encode_query(&mut pairs),
            "account=a%40b&client_id=docker&service=registry+example"
        );
        assert_eq!(
            decode_query("a=1&b=x+y%2Fz&c"),
            [
                ("a".to_owned(), "1".to_owned()),
                ("b".to_owned(), "x y/z".to_owned()),
                ("c".to_owned(), String::new())
            ]
        );
        assert_eq!(status_line(401), "401 Unauthorized");
    }
}
