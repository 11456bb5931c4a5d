//! Docker's login check, for `berth login` and the API's `POST /auth`:
//! moby 20.10's `DefaultService.Auth` and `loginV2`, with their texts.
//!
//! The server address names a registry host (`127.0.0.1:5000`,
//! `https://index.docker.io/v1/` for Docker Hub, whose API is
//! `registry-1.docker.io`). Its endpoints are tried in order, as moby's
//! `LookupPushEndpoints` gives them (mirrors never see credentials):
//! HTTPS, then, for an insecure registry (`insecure-registries` in
//! `/etc/berth/config.json`, loopback always), plain HTTP, whose HTTPS
//! certificate is not checked either. At each: `GET /v2/` without
//! credentials (the ping: which challenge, and is this a v2 registry), then
//! `GET /v2/` again with Basic credentials or a Bearer token fetched for
//! the challenge (an offline token: its refresh token is the identity
//! token docker stores instead of the password). An endpoint that failed
//! without proving to be a v2 registry (no `Docker-Distribution-Api-Version:
//! registry/2.0` header) gives way to the next.
//!
//! Requests go through the client's own pieces: the TLS trust of
//! `certs.d` (`tls`), the challenge parser, the token service code
//! (`auth`), with moby's 15 s client timeout and no retries.

use std::time::Duration;

use base64::Engine as _;

use super::auth::{fetch_login_token, LoginCredentials};
use super::challenge::{parse_challenges, Challenge};
use super::errcode::status_line;
use super::error::ClientError;
use super::settings::{ClientConfig, DOCKER_HUB_REGISTRY_HOST};
use super::transport::go_error_text;
use crate::config::RegistryConfig;

/// What a successful login says (moby's `loginV2`).
pub const LOGIN_SUCCEEDED: &str = "Login Succeeded";

/// moby's `http.Client` timeout for the ping, the token and the login.
const TIMEOUT: Duration = Duration::from_secs(15);

/// moby `IndexHostname` and `DefaultNamespace`: Docker Hub, whose API
/// is [`DOCKER_HUB_REGISTRY_HOST`].
const DOCKER_HUB_HOSTS: [&str; 2] = ["index.docker.io", "docker.io"];

/// A login as `POST /auth` carries it (moby's `types.AuthConfig`).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct LoginRequest {
    /// `host[:port]`, a URL (`https://index.docker.io/v1/`), or empty for
    /// Docker Hub.
    pub server_address: String,
    pub username: String,
    pub password: String,
    /// A refresh token from an earlier login; when set, a token service is
    /// asked with it (OAuth's refresh grant) instead of the password.
    pub identity_token: String,
}

impl std::fmt::Debug for LoginRequest {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("LoginRequest")
            .field("server_address", &self.server_address)
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .field("identity_token", &"<redacted>")
            .finish()
    }
}

/// A login the registry accepted.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct LoginSuccess {
    /// The token service's refresh token (or the request's own identity
    /// token): docker stores it in place of the password.
    pub identity_token: Option<String>,
}

impl std::fmt::Debug for LoginSuccess {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("LoginSuccess")
            .field(
                "identity_token",
                &self.identity_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// moby's text, Go's `url.Parse` reason included.
    #[error("unable to parse server address: {reason}")]
    InvalidServerAddress { reason: String },
    #[error("failed to read the TLS settings of {host}")]
    Tls {
        host: String,
        #[source]
        source: Box<ClientError>,
    },
    /// Go's `*url.Error`: `Get "https://host/v2/": …`, the rest in Go's or
    /// the registry's words (a transport failure, a token service's
    /// refusal).
    #[error("{method} {url:?}: {message}")]
    Request {
        method: &'static str,
        url: String,
        message: String,
        /// moby's `translateV2AuthError` made it `errdefs.Unauthorized`.
        unauthorized: bool,
    },
    /// `GET /v2/` with the credentials answered something other than 200.
    #[error("login attempt to {url} failed with status: {status}")]
    Status { url: String, status: String },
}

impl LoginError {
    /// Whether the registry refused the credentials, as docker tells it
    /// (`errdefs.IsUnauthorized`): only for a token service's own
    /// "unauthorized" answer. A registry answering 401 to Basic
    /// credentials is a [`LoginError::Status`], which docker does not count.
    pub fn is_unauthorized(&self) -> bool {
        matches!(
            self,
            Self::Request {
                unauthorized: true,
                ..
            }
        )
    }

    /// dockerd's status for `POST /auth` failing so: 400 for an address
    /// or TLS settings it cannot use, 401 for refused credentials, else 500.
    pub fn http_status(&self) -> u16 {
        match self {
            Self::InvalidServerAddress { .. } | Self::Tls { .. } => 400,
            error if error.is_unauthorized() => 401,
            _ => 500,
        }
    }
}

/// Checks `request`'s credentials against its registry, as dockerd does
/// for `docker login`. Blocks for up to 15 s per request while a registry
/// does not answer.
pub fn login(
    request: &LoginRequest,
    registry: &RegistryConfig,
    client: &ClientConfig,
) -> Result<LoginSuccess, LoginError> {
    let host = server_host(&request.server_address)?;
    let endpoints = endpoints(&host, registry);
    let mut last_error = None;
    for (index, endpoint) in endpoints.iter().enumerate() {
        match login_at(endpoint, request, client) {
            Ok(success) => return Ok(success),
            Err(Attempt::Fallback(error)) if index + 1 < endpoints.len() => {
                tracing::info!(%error, "Error logging in to endpoint, trying next endpoint");
                last_error = Some(error);
            }
            Err(Attempt::Fallback(error) | Attempt::Final(error)) => return Err(error),
        }
    }
    // Unreachable: there is always one endpoint.
    Err(
        last_error.unwrap_or_else(|| LoginError::InvalidServerAddress {
            reason: format!("no endpoint for {host:?}"),
        }),
    )
}

/// The host moby's `Auth` takes from a server address: `https://` is put
/// in front of one without a scheme, and the URL's host is kept (Docker
/// Hub's for an empty address).
fn server_host(address: &str) -> Result<String, LoginError> {
    if address.is_empty() {
        return Ok(DOCKER_HUB_HOSTS[0].to_owned());
    }
    let url = if address.starts_with("https://") || address.starts_with("http://") {
        address.to_owned()
    } else {
        format!("https://{address}")
    };
    let invalid = |reason: String| LoginError::InvalidServerAddress {
        reason: format!("parse {url:?}: {reason}"),
    };
    if url.bytes().any(|byte| byte < 0x20 || byte == 0x7f) {
        return Err(invalid(
            "net/url: invalid control character in URL".to_owned(),
        ));
    }
    let after_scheme = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
    let authority = after_scheme
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default();
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    // Go's `parseHost`: a port must be digits (or nothing).
    let port = if let Some(bracketed) = host.strip_prefix('[') {
        let Some((_, after)) = bracketed.split_once(']') else {
            return Err(invalid("missing ']' in host".to_owned()));
        };
        after
    } else {
        host.rfind(':').map_or("", |colon| &host[colon..])
    };
    let valid_port =
        port.is_empty() || (port.starts_with(':') && port[1..].bytes().all(|b| b.is_ascii_digit()));
    if !valid_port {
        return Err(invalid(format!("invalid port {port:?} after host")));
    }
    Ok(host.to_owned())
}

struct Endpoint {
    /// `https://host` or `http://host`.
    base: String,
    host: String,
    verify_tls: bool,
}

/// moby `lookupV2Endpoints` without mirrors.
fn endpoints(host: &str, registry: &RegistryConfig) -> Vec<Endpoint> {
    if DOCKER_HUB_HOSTS.contains(&host) {
        return vec![Endpoint {
            base: format!("https://{DOCKER_HUB_REGISTRY_HOST}"),
            host: DOCKER_HUB_REGISTRY_HOST.to_owned(),
            verify_tls: true,
        }];
    }
    let secure = !registry.is_insecure(host);
    let mut endpoints = vec![Endpoint {
        base: format!("https://{host}"),
        host: host.to_owned(),
        verify_tls: secure,
    }];
    if !secure {
        endpoints.push(Endpoint {
            base: format!("http://{host}"),
            host: host.to_owned(),
            verify_tls: true,
        });
    }
    endpoints
}

/// How one endpoint failed: `Fallback` where the next endpoint may still
/// work (nothing there proved to be a v2 registry), `Final` otherwise.
enum Attempt {
    Fallback(LoginError),
    Final(LoginError),
}

/// The challenges of a 401's `WWW-Authenticate` headers.
fn challenges(response: &ureq::http::Response<ureq::Body>) -> Vec<Challenge> {
    if response.status().as_u16() != 401 {
        return Vec::new();
    }
    response
        .headers()
        .get_all("WWW-Authenticate")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(parse_challenges)
        .collect()
}

fn login_at(
    endpoint: &Endpoint,
    request: &LoginRequest,
    client: &ClientConfig,
) -> Result<LoginSuccess, Attempt> {
    let url = format!("{}/v2/", endpoint.base);
    let failed = |message: String, unauthorized| LoginError::Request {
        method: "Get",
        url: url.clone(),
        message,
        unauthorized,
    };
    if endpoint.host.is_empty() {
        // Go refuses such a request before sending it.
        return Err(Attempt::Fallback(failed(
            "http: no Host in request URL".to_owned(),
            false,
        )));
    }
    let agent = super::new_agent(client, &endpoint.host, endpoint.verify_tls, Some(TIMEOUT))
        .map_err(|source| {
            Attempt::Final(LoginError::Tls {
                host: endpoint.host.clone(),
                source: Box::new(source),
            })
        })?;
    // The ping.
    let ping = agent
        .get(&url)
        .call()
        .map_err(|error| Attempt::Fallback(failed(go_error_text(&error, &url), false)))?;
    let found_v2 = ping
        .headers()
        .get_all("Docker-Distribution-Api-Version")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|version| version.trim() == "registry/2.0");
    let challenges = challenges(&ping);
    drop(ping);
    let fail = |error| {
        if found_v2 {
            Attempt::Final(error)
        } else {
            Attempt::Fallback(error)
        }
    };

    // distribution's authorizer: the token handler, then the Basic one,
    // each for the challenges of its scheme.
    let mut identity_token = Some(request.identity_token.clone()).filter(|token| !token.is_empty());
    let mut authorization = None;
    if let Some(bearer) = challenges.iter().find(|c| c.scheme == "bearer") {
        let credentials = LoginCredentials {
            username: &request.username,
            password: &request.password,
            identity_token: &request.identity_token,
        };
        let token = fetch_login_token(&agent, bearer, &credentials)
            .map_err(|error| fail(failed(error.text, error.unauthorized)))?;
        if token.refresh_token.is_some() {
            identity_token = token.refresh_token;
        }
        authorization = Some(format!("Bearer {}", token.token));
    }
    if challenges.iter().any(|c| c.scheme == "basic") {
        if request.username.is_empty() || request.password.is_empty() {
            return Err(fail(failed("no basic auth credentials".to_owned(), false)));
        }
        let pair = format!("{}:{}", request.username, request.password);
        authorization = Some(format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        ));
    }

    let mut login = agent.get(&url);
    if let Some(authorization) = authorization {
        login = login.header("Authorization", authorization);
    }
    let response = login
        .call()
        .map_err(|error| fail(failed(go_error_text(&error, &url), false)))?;
    let status = response.status().as_u16();
    if status == 200 {
        return Ok(LoginSuccess { identity_token });
    }
    Err(fail(LoginError::Status {
        url: url.clone(),
        status: status_line(status),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_addresses_are_read_as_moby_reads_them() {
        let host = |address: &str| server_host(address).map_err(|error| error.to_string());
        assert_eq!(host(""), Ok("index.docker.io".to_owned()));
        assert_eq!(
            host("https://index.docker.io/v1/"),
            Ok("index.docker.io".to_owned())
        );
        assert_eq!(host("127.0.0.1:5000"), Ok("127.0.0.1:5000".to_owned()));
        assert_eq!(
            host("http://127.0.0.1:5000/v2/"),
            Ok("127.0.0.1:5000".to_owned())
        );
        assert_eq!(host("[::1]:5000"), Ok("[::1]:5000".to_owned()));
        // dockerd 20.10's answer to `"serveraddress": "::bad"`.
        assert_eq!(
            host("::bad"),
            Err(
                "unable to parse server address: parse \"https://::bad\": invalid port \":bad\" after host"
                    .to_owned()
            )
        );
        assert!(host("[::1:5000").is_err());
    }

    #[test]
    fn docker_hub_and_insecure_registries_get_dockers_endpoints() {
        let config = RegistryConfig::default();
        let bases = |host: &str| -> Vec<(String, bool)> {
            endpoints(host, &config)
                .into_iter()
                .map(|endpoint| (endpoint.base, endpoint.verify_tls))
                .collect()
        };
        assert_eq!(
            bases("index.docker.io"),
            [("https://registry-1.docker.io".to_owned(), true)]
        );
        assert_eq!(
            bases("127.0.0.1:5000"),
            [
                ("https://127.0.0.1:5000".to_owned(), false),
                ("http://127.0.0.1:5000".to_owned(), true)
            ]
        );
        // A name that does not resolve is not in any insecure network.
        assert_eq!(
            bases("registry.invalid:5000"),
            [("https://registry.invalid:5000".to_owned(), true)]
        );
    }

    #[test]
    fn refused_connections_read_as_in_go() {
        // Port 1 on loopback: nothing listens there.
        let request = LoginRequest {
            server_address: "127.0.0.1:1".to_owned(),
            username: "a".to_owned(),
            password: "b".to_owned(),
            identity_token: String::new(),
        };
        let config = ClientConfig {
            certs_root: "/nonexistent/certs.d".into(),
            ..ClientConfig::default()
        };
        let error = login(&request, &RegistryConfig::default(), &config).unwrap_err();
        assert_eq!(
            error.to_string(),
            "Get \"http://127.0.0.1:1/v2/\": dial tcp 127.0.0.1:1: connect: connection refused"
        );
        assert!(!error.is_unauthorized());
        assert_eq!(error.http_status(), 500);
    }
}
