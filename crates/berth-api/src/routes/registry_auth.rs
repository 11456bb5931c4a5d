//! The registry credentials a client sends with a request: `X-Registry-Auth`
//! (one set, for a pull or a push) and `X-Registry-Config` (one set per
//! registry, for a build's pulls). Both are base64 JSON in Docker's
//! `AuthConfig` shape. Without them a request is anonymous: the server
//! never lends its own stored credentials to a client.

use std::collections::BTreeMap;

use base64::Engine as _;
use berth_engine::images::pull::CredentialSource;
use berth_registry::Credentials;
use serde_json::Value;

use crate::error::ApiError;
use crate::http::Exchange;

/// `X-Registry-Auth`: `username` and `password`, or `auth` as base64
/// `user:password`, or an `identitytoken`.
pub fn auth_header(exchange: &Exchange<'_>) -> Result<CredentialSource, ApiError> {
    let Some(header) = header(exchange, "x-registry-auth") else {
        return Ok(CredentialSource::Anonymous);
    };
    let invalid = || ApiError::bad_request("invalid X-Registry-Auth header");
    let value = decode(header).ok_or_else(invalid)?;
    Ok(match auth_config(&value).map_err(|()| invalid())? {
        Some(credentials) => CredentialSource::Fixed(credentials),
        None => CredentialSource::Anonymous,
    })
}

/// `X-Registry-Config`: a map from registry (`host[:port]`, or Docker Hub's
/// `https://index.docker.io/v1/`) to an `AuthConfig`; entries without a
/// user are left out.
pub fn config_header(exchange: &Exchange<'_>) -> Result<CredentialSource, ApiError> {
    let Some(header) = header(exchange, "x-registry-config") else {
        return Ok(CredentialSource::Anonymous);
    };
    let invalid = || ApiError::bad_request("invalid X-Registry-Config header");
    let value = decode(header).ok_or_else(invalid)?;
    let entries = value.as_object().ok_or_else(invalid)?;
    let mut map = BTreeMap::new();
    for (registry, entry) in entries {
        if let Some(credentials) = auth_config(entry).map_err(|()| invalid())? {
            map.insert(registry.clone(), credentials);
        }
    }
    Ok(CredentialSource::PerRegistry(map))
}

fn header<'e>(exchange: &'e Exchange<'_>, name: &str) -> Option<&'e str> {
    exchange
        .request
        .header(name)
        .filter(|header| !header.is_empty())
}

/// The JSON in a header: base64url (padded or not, as the Go and Python
/// clients send it) or standard base64.
fn decode(header: &str) -> Option<Value> {
    let engines = [
        base64::engine::general_purpose::URL_SAFE,
        base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ];
    let decoded = engines
        .iter()
        .find_map(|engine| engine.decode(header.trim_end_matches('=')).ok())
        .or_else(|| {
            base64::engine::general_purpose::STANDARD
                .decode(header)
                .ok()
        })?;
    serde_json::from_slice(&decoded).ok()
}

/// One `AuthConfig`: None when it names no user and no token.
fn auth_config(value: &Value) -> Result<Option<Credentials>, ()> {
    let field = |name: &str| value[name].as_str().unwrap_or_default().to_owned();
    let (mut username, mut secret) = (field("username"), field("password"));
    if username.is_empty() && !field("auth").is_empty() {
        let pair = base64::engine::general_purpose::STANDARD
            .decode(field("auth"))
            .map_err(|_| ())?;
        let pair = String::from_utf8(pair).map_err(|_| ())?;
        if let Some((user, password)) = pair.split_once(':') {
            username = user.to_owned();
            secret = password.to_owned();
        }
    }
    if username.is_empty() {
        let token = field("identitytoken");
        if token.is_empty() {
            return Ok(None);
        }
        // An identity token is sent as the password of "<token>" (Docker's).
        username = "<token>".to_owned();
        secret = token;
    }
    Ok(Some(Credentials { username, secret }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(value: Value) -> Option<String> {
        auth_config(&value)
            .unwrap()
            .map(|credentials| credentials.username)
    }

    #[test]
    fn an_auth_config_takes_a_user_an_auth_pair_or_a_token() {
        let pair = base64::engine::general_purpose::STANDARD.encode("alice:pw");
        assert_eq!(
            user(serde_json::json!({"username": "bob", "password": "x"})).as_deref(),
            Some("bob")
        );
        assert_eq!(
            user(serde_json::json!({ "auth": pair })).as_deref(),
            Some("alice")
        );
        assert_eq!(
            user(serde_json::json!({"identitytoken": "t"})).as_deref(),
            Some("<token>")
        );
        assert_eq!(user(serde_json::json!({"serveraddress": "h"})), None);
        assert!(auth_config(&serde_json::json!({"auth": "%%%"})).is_err());
    }

    #[test]
    fn headers_decode_with_or_without_padding() {
        let json = br#"{"127.0.0.1:5000":{"username":"u","password":"p"}}"#;
        for engine in [
            base64::engine::general_purpose::URL_SAFE,
            base64::engine::general_purpose::URL_SAFE_NO_PAD,
            base64::engine::general_purpose::STANDARD,
        ] {
            let value = decode(&engine.encode(json)).unwrap();
            assert_eq!(value["127.0.0.1:5000"]["username"], "u");
        }
        assert_eq!(decode("not base64 !"), None);
    }
}
