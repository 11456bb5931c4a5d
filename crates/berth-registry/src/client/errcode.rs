//! A failed registry or token-service answer read the way docker's login
//! reads it: distribution's `HandleErrorResponse` and its `errcode` texts
//! (distribution 2.8, which Debian's docker.io 20.10 is built with), and
//! whether moby's `translateV2AuthError` would call the failure
//! "unauthorized" (dockerd then answers `POST /auth` with 401, else 500).
//!
//! Pulls and pushes read error bodies with [`super::RegistryErrors`]; this
//! is the stricter reading login needs, where the exact Go type of the
//! error decides the HTTP status.

use super::challenge::Challenge;

/// errcode's registered codes: (code, its default message). A code not
/// listed reads as `UNKNOWN`, as Go's `ErrorCode.UnmarshalText` does.
const CODES: [(&str, &str); 19] = [
    ("UNKNOWN", "unknown error"),
    ("UNSUPPORTED", "The operation is unsupported."),
    ("UNAUTHORIZED", "authentication required"),
    ("DENIED", "requested access to the resource is denied"),
    ("UNAVAILABLE", "service unavailable"),
    ("TOOMANYREQUESTS", "too many requests"),
    // registry/api/v2's codes.
    (
        "DIGEST_INVALID",
        "provided digest did not match uploaded content",
    ),
    (
        "SIZE_INVALID",
        "provided length did not match content length",
    ),
    ("NAME_INVALID", "invalid repository name"),
    ("TAG_INVALID", "manifest tag did not match URI"),
    ("NAME_UNKNOWN", "repository name not known to registry"),
    ("MANIFEST_UNKNOWN", "manifest unknown"),
    ("MANIFEST_INVALID", "manifest invalid"),
    (
        "MANIFEST_UNVERIFIED",
        "manifest failed signature verification",
    ),
    ("MANIFEST_BLOB_UNKNOWN", "blob unknown to registry"),
    ("BLOB_UNKNOWN", "blob unknown to registry"),
    ("BLOB_UPLOAD_UNKNOWN", "blob upload unknown to registry"),
    ("BLOB_UPLOAD_INVALID", "blob upload invalid"),
    (
        "PAGINATION_NUMBER_INVALID",
        "invalid number of results requested",
    ),
];

/// The text of a failed answer, and whether docker takes it for refused
/// credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ErrorText {
    pub text: String,
    /// The Go error is one `errcode.Error` with code `UNAUTHORIZED`.
    pub unauthorized: bool,
}

/// A known code and its default message; `UNKNOWN`'s for others.
fn code(name: &str) -> (&'static str, &'static str) {
    CODES
        .iter()
        .find(|(code, _)| *code == name)
        .copied()
        .unwrap_or(CODES[0])
}

/// `ErrorCode.Error()`: `MANIFEST_UNKNOWN` → `manifest unknown`.
fn code_text(name: &str) -> String {
    code(name).0.replace('_', " ").to_lowercase()
}

/// `errcode.Error.Error()`: `code: message`.
fn with_message(name: &str, message: &str) -> String {
    format!("{}: {message}", code_text(name))
}

/// `errcode.Errors.Error()`.
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

/// What `parseHTTPErrorResponse` returns.
enum Parsed {
    /// One `errcode.Error` (the `{"details": …}` form).
    Single { code: &'static str, text: String },
    /// `errcode.Errors`, one text per entry.
    List(Vec<String>),
    /// `UnexpectedHTTPResponseError`: its text.
    Unexpected(String),
}

fn parse_body(status: u16, body: &[u8]) -> Parsed {
    let json: Result<serde_json::Value, _> = serde_json::from_slice(body);
    if let Ok(serde_json::Value::Object(object)) = &json {
        if let Some(details) = object
            .get("details")
            .and_then(serde_json::Value::as_str)
            .filter(|details| !details.is_empty())
        {
            let name = match status {
                401 => "UNAUTHORIZED",
                403 => "DENIED",
                429 => "TOOMANYREQUESTS",
                _ => "UNKNOWN",
            };
            return Parsed::Single {
                code: code(name).0,
                text: with_message(name, details),
            };
        }
    }
    let quoted_body = format!("{:?}", String::from_utf8_lossy(body));
    let object = match json {
        Ok(serde_json::Value::Object(object)) => object,
        Ok(_) => {
            return Parsed::Unexpected(format!(
                "error parsing HTTP {status} response body: json: cannot unmarshal into errors: {quoted_body}"
            ))
        }
        Err(error) => {
            return Parsed::Unexpected(format!(
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
                    let field = |name| {
                        error
                            .get(name)
                            .and_then(serde_json::Value::as_str)
                            .unwrap_or_default()
                    };
                    let name = field("code");
                    let message = field("message");
                    let has_detail = error.get("detail").is_some_and(|detail| !detail.is_null());
                    // `Errors.UnmarshalJSON`: an entry adding nothing to
                    // its code becomes the bare code.
                    if !has_detail && (message.is_empty() || message == code(name).1) {
                        code_text(name)
                    } else {
                        with_message(name, message)
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    if errors.is_empty() {
        return Parsed::Unexpected(format!(
            "error parsing HTTP {status} response body: no error details found in HTTP response body: {quoted_body}"
        ));
    }
    Parsed::List(errors)
}

/// distribution's `HandleErrorResponse` for an answer with `status`, the
/// challenges of its `WWW-Authenticate` headers, and `body`.
pub(super) fn error_response(status: u16, challenges: &[Challenge], body: &[u8]) -> ErrorText {
    if !(400..500).contains(&status) {
        return ErrorText {
            text: format!("received unexpected HTTP status: {}", status_line(status)),
            unauthorized: false,
        };
    }
    // OAuth errors in the challenge first (RFC 6750 section 3).
    for challenge in challenges.iter().filter(|c| c.scheme == "bearer") {
        let name = match challenge.parameters.get("error").map(String::as_str) {
            Some("invalid_token") => "UNAUTHORIZED",
            Some("insufficient_scope") => "DENIED",
            _ => continue,
        };
        let message = challenge
            .parameters
            .get("error_description")
            .filter(|description| !description.is_empty())
            .map_or(code(name).1, String::as_str);
        let mut errors = vec![with_message(name, message)];
        match parse_body(status, body) {
            Parsed::Single { text, .. } | Parsed::Unexpected(text) => errors.push(text),
            Parsed::List(more) => errors.extend(more),
        }
        // `mergeErrors` makes an `errcode.Errors`, never "unauthorized".
        return ErrorText {
            text: errors_text(&errors),
            unauthorized: false,
        };
    }
    match parse_body(status, body) {
        Parsed::Single { code, text } => ErrorText {
            text,
            unauthorized: code == "UNAUTHORIZED",
        },
        Parsed::List(errors) => ErrorText {
            text: errors_text(&errors),
            unauthorized: false,
        },
        // `ErrorCodeUnauthorized.WithDetail(body)`.
        Parsed::Unexpected(_) if status == 401 => ErrorText {
            text: with_message("UNAUTHORIZED", code("UNAUTHORIZED").1),
            unauthorized: true,
        },
        Parsed::Unexpected(text) => ErrorText {
            text,
            unauthorized: false,
        },
    }
}

/// Go's `resp.Status` for a status code: `401 Unauthorized`.
pub(super) fn status_line(status: u16) -> String {
    let text = ureq::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|code| code.canonical_reason())
        .unwrap_or_default();
    format!("{status} {text}")
}

#[cfg(test)]
mod tests {
    use super::super::challenge::parse_challenges;
    use super::*;

    /// Each case checked against Debian's docker.io 20.10.24 answering
    /// `POST /auth` for a token service giving that answer (the status
    /// dockerd answered with in the comment).
    #[test]
    fn error_bodies_read_as_docker_reads_them() {
        let read = |status, challenges: &[Challenge], body: &str| {
            let error = error_response(status, challenges, body.as_bytes());
            (error.text, error.unauthorized)
        };
        // 401
        assert_eq!(
            read(401, &[], r#"{"details":"incorrect username or password"}"#),
            ("unauthorized: incorrect username or password".into(), true)
        );
        // 500
        assert_eq!(
            read(
                401,
                &[],
                r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required","detail":null}]}"#
            ),
            ("unauthorized".into(), false)
        );
        // 401
        assert_eq!(
            read(401, &[], ""),
            ("unauthorized: authentication required".into(), true)
        );
        // 500
        assert_eq!(
            read(403, &[], r#"{"details":"go away"}"#),
            ("denied: go away".into(), false)
        );
        // 500
        let oauth =
            parse_challenges(r#"Bearer error="invalid_token",error_description="bad creds""#);
        assert_eq!(
            read(401, &oauth, "{}"),
            (
                "errors:\nunauthorized: bad creds\nerror parsing HTTP 401 response body: no error details found in HTTP response body: \"{}\"\n".into(),
                false
            )
        );
        // 500
        assert_eq!(
            read(500, &[], "oops"),
            (
                "received unexpected HTTP status: 500 Internal Server Error".into(),
                false
            )
        );
        assert_eq!(
            read(
                401,
                &[],
                r#"{"errors":[{"code":"DENIED","message":"no way"},{"code":"WHATEVER","message":""}]}"#
            ),
            ("errors:\ndenied: no way\nunknown\n".into(), false)
        );
        assert_eq!(
            read(403, &[], "{}"),
            (
                "error parsing HTTP 403 response body: no error details found in HTTP response body: \"{}\"".into(),
                false
            )
        );
    }

    #[test]
    fn status_lines_are_gos() {
        assert_eq!(status_line(401), "401 Unauthorized");
        assert_eq!(status_line(404), "404 Not Found");
    }
}
