//! Who the client says it is: nothing, Basic credentials, or a Bearer
//! token fetched from the realm the registry's challenge names (Docker's
//! token flow, <https://distribution.github.io/distribution/spec/auth/token/>),
//! cached per scope until it expires; and the token docker's login asks
//! for ([`fetch_login_token`]).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde::Deserialize;

use super::challenge::{parse_challenges, Challenge};
use super::errcode::{self, ErrorText};
use super::error::{ClientError, RegistryErrors};
use super::transport::go_error_text;
use crate::Credentials;

/// Tokens without `expires_in` live 60 s (the token spec's default).
const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(60);
/// A token this close to its end is fetched anew.
const TOKEN_MARGIN: Duration = Duration::from_secs(10);
/// Token answers are small; anything larger is not one.
const TOKEN_BODY_LIMIT: u64 = 1024 * 1024;

/// How the registry wants to be spoken to, learnt from its first 401.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Scheme {
    /// No 401 seen yet (or none ever: an open registry).
    Unknown,
    Basic,
    Bearer {
        realm: String,
        service: Option<String>,
    },
}

struct CachedToken {
    value: String,
    valid_until: Instant,
}

struct AuthState {
    scheme: Scheme,
    /// Keyed by the scopes joined with spaces.
    tokens: HashMap<String, CachedToken>,
}

pub(super) struct Authenticator {
    credentials: Option<Credentials>,
    state: Mutex<AuthState>,
}

#[derive(Deserialize)]
struct TokenResponse {
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    access_token: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
    /// Given when an offline token was asked for (login).
    #[serde(default)]
    refresh_token: Option<String>,
}

impl Authenticator {
    pub(super) fn new(credentials: Option<Credentials>) -> Self {
        Self {
            credentials,
            state: Mutex::new(AuthState {
                scheme: Scheme::Unknown,
                tokens: HashMap::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, AuthState> {
        // A panic while holding the lock leaves only a cache behind, which
        // stays usable.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The `Authorization` value for a request needing `scopes`, fetching
    /// a token when the registry wants one and none is cached.
    pub(super) fn authorization(
        &self,
        agent: &ureq::Agent,
        scopes: &[String],
    ) -> Result<Option<String>, ClientError> {
        let key = scopes.join(" ");
        let scheme = {
            let state = self.lock();
            if let Some(token) = state.tokens.get(&key) {
                if token.valid_until > Instant::now() {
                    return Ok(Some(format!("Bearer {}", token.value)));
                }
            }
            state.scheme.clone()
        };
        match scheme {
            Scheme::Unknown => Ok(None),
            Scheme::Basic => Ok(self.basic()),
            Scheme::Bearer { realm, service } => {
                let token = self.fetch_token(agent, &realm, service.as_deref(), scopes)?;
                let header = format!("Bearer {}", token.value);
                self.lock().tokens.insert(key, token);
                Ok(Some(header))
            }
        }
    }

    fn basic(&self) -> Option<String> {
        self.credentials.as_ref().map(|credentials| {
            let pair = format!("{}:{}", credentials.username, credentials.secret);
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            )
        })
    }

    /// Takes in a 401's challenges. True when a new try with fresh
    /// authorization can succeed where the last one failed.
    pub(super) fn on_unauthorized<'a>(
        &self,
        headers: impl Iterator<Item = &'a str>,
        scopes: &[String],
        sent_authorization: bool,
    ) -> bool {
        let challenges: Vec<Challenge> = headers.flat_map(parse_challenges).collect();
        let bearer = challenges.iter().find(|c| c.scheme == "bearer");
        let basic = challenges.iter().any(|c| c.scheme == "basic");
        let scheme = match bearer.and_then(|c| c.parameters.get("realm").map(|r| (c, r))) {
            Some((challenge, realm)) => Scheme::Bearer {
                realm: realm.clone(),
                service: challenge.parameters.get("service").cloned(),
            },
            None if basic => Scheme::Basic,
            None => return false,
        };
        let mut state = self.lock();
        let changed = state.scheme != scheme;
        state.scheme = scheme.clone();
        let had_token = state.tokens.remove(&scopes.join(" ")).is_some();
        match scheme {
            // Basic credentials are the same on a second try: only worth it
            // when none were sent, and there are some.
            Scheme::Basic => (changed || !sent_authorization) && self.credentials.is_some(),
            // A Bearer registry always gets one token round; an expired or
            // revoked token one more.
            Scheme::Bearer { .. } => changed || had_token || !sent_authorization,
            Scheme::Unknown => false,
        }
    }

    /// GET realm?service=…&scope=…, with Basic credentials when there are
    /// some (Docker's `fetchTokenWithBasicAuth`).
    fn fetch_token(
        &self,
        agent: &ureq::Agent,
        realm: &str,
        service: Option<&str>,
        scopes: &[String],
    ) -> Result<CachedToken, ClientError> {
        let mut query = Vec::new();
        if let Some(service) = service {
            query.push(("service", service));
        }
        for scope in scopes {
            query.push(("scope", scope.as_str()));
        }
        if let Some(credentials) = &self.credentials {
            query.push(("account", credentials.username.as_str()));
        }
        let url = with_query(realm, &query);
        let mut request = agent.get(&url);
        if let Some(basic) = self.basic() {
            request = request.header("Authorization", basic);
        }
        let started = Instant::now();
        let mut response = request.call().map_err(|source| ClientError::Transport {
            method: "Get",
            url: url.clone(),
            source,
        })?;
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .with_config()
            .limit(TOKEN_BODY_LIMIT)
            .read_to_vec()
            .map_err(|source| ClientError::Transport {
                method: "Get",
                url: url.clone(),
                source,
            })?;
        if status != 200 {
            return Err(ClientError::Registry {
                method: "Get",
                url,
                status,
                errors: RegistryErrors::from_response(status, &body),
            });
        }
        let parsed: TokenResponse =
            serde_json::from_slice(&body).map_err(|source| ClientError::TokenResponse {
                realm: realm.to_owned(),
                source,
            })?;
        let value = parsed
            .token
            .filter(|token| !token.is_empty())
            .or(parsed.access_token)
            .unwrap_or_default();
        let lifetime = parsed
            .expires_in
            .map(Duration::from_secs)
            .unwrap_or(DEFAULT_TOKEN_LIFETIME);
        Ok(CachedToken {
            value,
            valid_until: started + lifetime.saturating_sub(TOKEN_MARGIN),
        })
    }
}

/// What docker's login presents to a token service.
pub(super) struct LoginCredentials<'a> {
    pub username: &'a str,
    pub password: &'a str,
    /// A refresh token from an earlier login (docker's identity token).
    pub identity_token: &'a str,
}

/// A login's token, and the refresh token the service gave with it.
pub(super) struct LoginToken {
    pub token: String,
    pub refresh_token: Option<String>,
}

/// The client id docker's token requests carry (moby `AuthClientID`).
const LOGIN_CLIENT_ID: &str = "docker";

/// The token docker's login asks for after a Bearer challenge
/// (distribution's token handler as moby's `loginV2` sets it up: no scope,
/// `offline_token=true`, `client_id=docker`): with an identity token,
/// OAuth's refresh grant (`fetchTokenWithOAuth`, a form POST), else a GET
/// with the Basic credentials (`fetchTokenWithBasicAuth`). A failure is
/// the text after the login's `Get "…/v2/": `.
pub(super) fn fetch_login_token(
    agent: &ureq::Agent,
    challenge: &Challenge,
    credentials: &LoginCredentials<'_>,
) -> Result<LoginToken, ErrorText> {
    let plain = |text: String| ErrorText {
        text,
        unauthorized: false,
    };
    let Some(realm) = challenge.parameters.get("realm") else {
        return Err(plain(
            "no realm specified for token auth challenge".to_owned(),
        ));
    };
    let service = challenge
        .parameters
        .get("service")
        .map(String::as_str)
        .unwrap_or_default();
    let (method, result) = if credentials.identity_token.is_empty() {
        let mut query = Vec::new();
        if !service.is_empty() {
            query.push(("service", service));
        }
        query.push(("offline_token", "true"));
        query.push(("client_id", LOGIN_CLIENT_ID));
        let mut request = None;
        if !credentials.username.is_empty() && !credentials.password.is_empty() {
            query.push(("account", credentials.username));
            let pair = format!("{}:{}", credentials.username, credentials.password);
            request = Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            ));
        }
        let url = with_query(realm, &query);
        let mut get = agent.get(&url);
        if let Some(authorization) = request {
            get = get.header("Authorization", authorization);
        }
        (("Get", url), get.call())
    } else {
        // Go's url.Values.Encode: sorted by name, empty values kept.
        let form = [
            ("client_id", LOGIN_CLIENT_ID),
            ("grant_type", "refresh_token"),
            ("refresh_token", credentials.identity_token),
            ("scope", ""),
            ("service", service),
        ];
        (("Post", realm.clone()), agent.post(realm).send_form(form))
    };
    let (method, url) = method;
    let mut response = result
        .map_err(|error| plain(format!("{method} {url:?}: {}", go_error_text(&error, &url))))?;
    let status = response.status().as_u16();
    let challenges: Vec<Challenge> = response
        .headers()
        .get_all("WWW-Authenticate")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(parse_challenges)
        .collect();
    let body = response
        .body_mut()
        .with_config()
        .limit(TOKEN_BODY_LIMIT)
        .read_to_vec()
        .map_err(|error| plain(error.to_string()))?;
    // distribution's `SuccessStatus`: 2xx and 3xx.
    if !(200..400).contains(&status) {
        return Err(errcode::error_response(status, &challenges, &body));
    }
    let answer: TokenResponse = serde_json::from_slice(&body)
        .map_err(|error| plain(format!("unable to decode token response: {error}")))?;
    let refresh_token = answer
        .refresh_token
        .filter(|token| !token.is_empty() && token != credentials.identity_token);
    let access_token = answer.access_token.filter(|token| !token.is_empty());
    let token = if credentials.identity_token.is_empty() {
        // `access_token` wins over `token`; one of them must be there.
        match access_token
            .or(answer.token)
            .filter(|token| !token.is_empty())
        {
            Some(token) => token,
            None => {
                return Err(plain(
                    "authorization server did not include a token in the response".to_owned(),
                ))
            }
        }
    } else {
        // The OAuth answer's token is `access_token` only.
        access_token.unwrap_or_default()
    };
    Ok(LoginToken {
        token,
        refresh_token,
    })
}

/// `base` with `pairs` appended as a percent-encoded query.
pub(super) fn with_query(base: &str, pairs: &[(&str, &str)]) -> String {
    let mut url = base.to_owned();
    for (key, value) in pairs {
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str(&percent_encode(key));
        url.push('=');
        url.push_str(&percent_encode(value));
    }
    url
}

fn percent_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_is_percent_encoded() {
        assert_eq!(
            with_query(
                "https://auth/token",
                &[("service", "reg"), ("scope", "repository:a/b:pull,push")]
            ),
            "https://auth/token?service=reg&scope=repository%3Aa%2Fb%3Apull%2Cpush"
        );
        assert_eq!(
            with_query("http://x/t?a=1", &[("b", "2")]),
            "http://x/t?a=1&b=2"
        );
    }

    fn credentials() -> Option<Credentials> {
        Some(Credentials {
            username: "user".into(),
            secret: "pass".into(),
        })
    }

    #[test]
    fn basic_challenge_retries_once_with_credentials() {
        let auth = Authenticator::new(credentials());
        let scopes = ["repository:a:pull".to_owned()];
        assert!(auth.on_unauthorized(["Basic realm=\"r\""].into_iter(), &scopes, false));
        let agent = ureq::Agent::new_with_defaults();
        assert_eq!(
            auth.authorization(&agent, &scopes).unwrap().as_deref(),
            Some("Basic dXNlcjpwYXNz")
        );
        // The same credentials refused again: no point in a third try.
        assert!(!auth.on_unauthorized(["Basic realm=\"r\""].into_iter(), &scopes, true));
        let anonymous = Authenticator::new(None);
        assert!(!anonymous.on_unauthorized(["Basic realm=\"r\""].into_iter(), &scopes, false));
    }

    #[test]
    fn unknown_challenges_are_not_retried() {
        let auth = Authenticator::new(credentials());
        assert!(!auth.on_unauthorized(["Negotiate"].into_iter(), &[], false));
        assert!(!auth.on_unauthorized(std::iter::empty(), &[], false));
    }
}
