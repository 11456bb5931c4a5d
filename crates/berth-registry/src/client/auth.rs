//! Who the client says it is: nothing, Basic credentials, or a Bearer
//! token fetched from the realm the registry's challenge names (Docker's
//! token flow, <https://distribution.github.io/distribution/spec/auth/token/>),
//! cached per scope until it expires.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde::Deserialize;

use super::challenge::{parse_challenges, Challenge};
use super::error::{ClientError, RegistryErrors};
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
