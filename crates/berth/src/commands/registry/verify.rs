//! The check `login` makes before it stores anything: `GET /v2/` with the
//! credentials, answering the registry's Basic or Bearer challenge, as
//! moby 20.10's `loginV2` does (its texts on failure included).
//!
//! Temporary: this belongs to berth-registry's client, which has no login
//! entry point yet; login.rs calls only [`login`], so switching is one line.

use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use berth_registry::config::RegistryConfig;
use berth_registry::credentials::INDEX_SERVER;

use super::wire::{self, Challenge};

/// moby's client timeout for the ping and the login request.
const TIMEOUT: Duration = Duration::from_secs(15);

/// Docker Hub's v2 API host (moby `DefaultV2Registry`).
const DOCKER_HUB_API: &str = "https://registry-1.docker.io";

/// What docker's token handler sends as `client_id`.
const CLIENT_ID: &str = "docker";

/// Error bodies and token answers are small; anything past this is noise.
const BODY_LIMIT: u64 = 1 << 20;

/// A successful login.
#[derive(Debug, Default)]
pub struct Verified {
    /// The token server's `refresh_token`, stored in place of the password.
    pub identity_token: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// Go's `*url.Error`: `Get "https://host/v2/": cause`.
    #[error("Get {url:?}: {message}")]
    Request {
        url: String,
        message: String,
        unauthorized: bool,
    },
    #[error("login attempt to {url} failed with status: {status}")]
    Status {
        url: String,
        status: String,
        unauthorized: bool,
    },
}

impl VerifyError {
    /// Whether the registry refused the credentials (docker's
    /// `IsErrUnauthorized`), rather than not answering.
    pub fn is_unauthorized(&self) -> bool {
        match self {
            Self::Request { unauthorized, .. } | Self::Status { unauthorized, .. } => *unauthorized,
        }
    }
}

struct Endpoint {
    base: String,
    verify_tls: bool,
}

/// moby `LookupPushEndpoints`: HTTPS, then plain HTTP for an insecure
/// registry (whose HTTPS certificate is not checked either).
fn endpoints(key: &str, config: &RegistryConfig) -> Vec<Endpoint> {
    if key == INDEX_SERVER {
        return vec![Endpoint {
            base: DOCKER_HUB_API.to_owned(),
            verify_tls: true,
        }];
    }
    if config.is_insecure(key) {
        vec![
            Endpoint {
                base: format!("https://{key}"),
                verify_tls: false,
            },
            Endpoint {
                base: format!("http://{key}"),
                verify_tls: true,
            },
        ]
    } else {
        vec![Endpoint {
            base: format!("https://{key}"),
            verify_tls: true,
        }]
    }
}

/// Logs in to the registry filed under `key` (a credentials key:
/// `host[:port]`, or Docker Hub's index URL).
pub fn login(
    key: &str,
    username: &str,
    password: &str,
    config: &RegistryConfig,
) -> Result<Verified, VerifyError> {
    let endpoints = endpoints(key, config);
    let mut last_error = None;
    for (index, endpoint) in endpoints.iter().enumerate() {
        match login_at(endpoint, username, password) {
            Ok(verified) => return Ok(verified),
            Err(Attempt::Fallback(error)) if index + 1 < endpoints.len() => {
                tracing::info!(error = %error, "Error logging in to endpoint, trying next endpoint");
                last_error = Some(error);
            }
            Err(Attempt::Fallback(error) | Attempt::Final(error)) => return Err(error),
        }
    }
    Err(last_error.unwrap_or_else(|| VerifyError::Request {
        url: key.to_owned(),
        message: "no endpoint to log in to".to_owned(),
        unauthorized: false,
    }))
}

/// How one endpoint failed: `Fallback` where the next endpoint may still
/// work (nothing there proved to be a v2 registry), `Final` otherwise.
enum Attempt {
    Fallback(VerifyError),
    Final(VerifyError),
}

fn login_at(endpoint: &Endpoint, username: &str, password: &str) -> Result<Verified, Attempt> {
    let agent = agent(endpoint.verify_tls);
    let url = format!("{}/v2/", endpoint.base);
    let request_error = |message: String, unauthorized| VerifyError::Request {
        url: url.clone(),
        message,
        unauthorized,
    };
    // The ping: which challenge, and is this a v2 registry at all?
    let ping = agent
        .get(&url)
        .call()
        .map_err(|error| Attempt::Fallback(request_error(transport_text(&error, &url), false)))?;
    let found_v2 = ping
        .headers()
        .get_all("docker-distribution-api-version")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|version| version.trim() == "registry/2.0");
    let fail = |error| {
        if found_v2 {
            Attempt::Final(error)
        } else {
            Attempt::Fallback(error)
        }
    };
    let challenges = if ping.status().as_u16() == 401 {
        challenges(ping.headers())
    } else {
        Vec::new()
    };
    let mut verified = Verified::default();
    let authorization = if let Some(bearer) = challenges.iter().find(|c| c.scheme == "bearer") {
        let token = fetch_token(&agent, bearer, username, password)
            .map_err(|(message, unauthorized)| fail(request_error(message, unauthorized)))?;
        verified.identity_token = token.refresh_token;
        Some(format!("Bearer {}", token.token))
    } else if challenges.iter().any(|c| c.scheme == "basic") {
        Some(format!(
            "Basic {}",
            BASE64.encode(format!("{username}:{password}"))
        ))
    } else {
        None
    };
    let mut request = agent.get(&url);
    if let Some(authorization) = authorization {
        request = request.header("Authorization", authorization);
    }
    let response = request
        .call()
        .map_err(|error| fail(request_error(transport_text(&error, &url), false)))?;
    let status = response.status().as_u16();
    if status == 200 {
        return Ok(verified);
    }
    Err(fail(VerifyError::Status {
        url: url.clone(),
        status: wire::status_line(status),
        unauthorized: status == 401,
    }))
}

fn agent(verify_tls: bool) -> ureq::Agent {
    let tls = ureq::tls::TlsConfig::builder()
        .disable_verification(!verify_tls)
        .build();
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(TIMEOUT))
        .tls_config(tls)
        .build();
    ureq::Agent::new_with_config(config)
}

fn challenges(headers: &ureq::http::HeaderMap) -> Vec<Challenge> {
    headers
        .get_all("www-authenticate")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .filter_map(wire::parse_challenge)
        .collect()
}

struct Token {
    token: String,
    refresh_token: Option<String>,
}

/// distribution's `fetchTokenWithBasicAuth`, asking for an offline token
/// (a refresh token docker keeps as the identity token). On failure, the
/// error text and whether the credentials were refused.
fn fetch_token(
    agent: &ureq::Agent,
    challenge: &Challenge,
    username: &str,
    password: &str,
) -> Result<Token, (String, bool)> {
    let Some(realm) = challenge.parameters.get("realm") else {
        return Err((
            "no realm specified for token auth challenge".to_owned(),
            false,
        ));
    };
    let (base, query) = realm.split_once('?').unwrap_or((realm, ""));
    let mut pairs = wire::decode_query(query);
    if let Some(service) = challenge
        .parameters
        .get("service")
        .filter(|s| !s.is_empty())
    {
        pairs.push(("service".to_owned(), service.clone()));
    }
    pairs.push(("offline_token".to_owned(), "true".to_owned()));
    pairs.push(("client_id".to_owned(), CLIENT_ID.to_owned()));
    let mut request_authorization = None;
    if !username.is_empty() && !password.is_empty() {
        pairs.push(("account".to_owned(), username.to_owned()));
        request_authorization = Some(format!(
            "Basic {}",
            BASE64.encode(format!("{username}:{password}"))
        ));
    }
    let url = format!("{base}?{}", wire::encode_query(&mut pairs));
    let mut request = agent.get(&url);
    if let Some(authorization) = request_authorization {
        request = request.header("Authorization", authorization);
    }
    let mut response = request.call().map_err(|error| {
        (
            format!("Get {url:?}: {}", transport_text(&error, &url)),
            false,
        )
    })?;
    let status = response.status().as_u16();
    let token_challenges = challenges(response.headers());
    let body = response
        .body_mut()
        .with_config()
        .limit(BODY_LIMIT)
        .read_to_vec()
        .map_err(|error| (error.to_string(), false))?;
    if !(200..400).contains(&status) {
        let text = wire::error_response_text(status, &token_challenges, &body);
        return Err((text, status == 401));
    }
    #[derive(serde::Deserialize)]
    struct Answer {
        #[serde(default)]
        token: String,
        #[serde(default)]
        access_token: String,
        #[serde(default)]
        refresh_token: String,
    }
    let answer: Answer =
        serde_json::from_slice(&body).map_err(|error| (error.to_string(), false))?;
    let token = if answer.token.is_empty() {
        answer.access_token
    } else {
        answer.token
    };
    if token.is_empty() {
        return Err((
            "authorization server did not include a token in the response".to_owned(),
            false,
        ));
    }
    Ok(Token {
        token,
        refresh_token: Some(answer.refresh_token).filter(|token| !token.is_empty()),
    })
}

/// A transport failure in Go's words where the cause is a common one
/// (`dial tcp 127.0.0.1:5000: connect: connection refused`), else ureq's.
fn transport_text(error: &ureq::Error, url: &str) -> String {
    let address = || {
        let (scheme, rest) = url.split_once("://").unwrap_or(("https", url));
        let host = rest.split('/').next().unwrap_or(rest);
        let has_port = match host.rfind(':') {
            Some(colon) => !host[colon..].contains(']'),
            None => false,
        };
        if has_port {
            host.to_owned()
        } else if scheme == "http" {
            format!("{host}:80")
        } else {
            format!("{host}:443")
        }
    };
    match error {
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            format!("dial tcp {}: connect: connection refused", address())
        }
        ureq::Error::HostNotFound => {
            let host = address();
            let name = host
                .rsplit_once(':')
                .map_or(host.as_str(), |(name, _)| name);
            format!("dial tcp: lookup {name}: no such host")
        }
        ureq::Error::Timeout(_) => {
            "net/http: request canceled (Client.Timeout exceeded while awaiting headers)".to_owned()
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_hub_and_insecure_registries_get_dockers_endpoints() {
        let config = RegistryConfig::default();
        let bases = |key: &str| -> Vec<(String, bool)> {
            endpoints(key, &config)
                .into_iter()
                .map(|endpoint| (endpoint.base, endpoint.verify_tls))
                .collect()
        };
        assert_eq!(bases(INDEX_SERVER), [(DOCKER_HUB_API.to_owned(), true)]);
        assert_eq!(
            bases("127.0.0.1:5000"),
            [
                ("https://127.0.0.1:5000".to_owned(), false),
                ("http://127.0.0.1:5000".to_owned(), true)
            ]
        );
    }

    #[test]
    fn refused_connections_read_as_in_go() {
        // Port 1 on loopback: nothing listens there.
        let error = login("127.0.0.1:1", "a", "b", &RegistryConfig::default()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "Get \"http://127.0.0.1:1/v2/\": dial tcp 127.0.0.1:1: connect: connection refused"
        );
        assert!(!error.is_unauthorized());
    }
}
