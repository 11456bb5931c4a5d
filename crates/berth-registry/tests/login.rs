//! `client::login` (docker's login check) against real `docker-registry`
//! processes: htpasswd (Basic) and token (Bearer) auth, with the texts
//! and statuses Debian's dockerd 20.10 gives for the same cases.

mod common;

use berth_registry::client::{login, LoginError, LoginRequest};
use berth_registry::config::RegistryConfig;
use berth_registry::testing::{TestAuth, TestRegistryOptions};
use common::start;

fn request(server: &str, username: &str, password: &str) -> LoginRequest {
    LoginRequest {
        server_address: server.to_owned(),
        username: username.to_owned(),
        password: password.to_owned(),
        identity_token: String::new(),
    }
}

#[test]
fn basic_auth_login_accepts_the_password_and_refuses_others() {
    let Some(registry) = start(TestRegistryOptions {
        auth: TestAuth::Htpasswd {
            username: "alice".into(),
            password: "s3cret".into(),
        },
        ..TestRegistryOptions::default()
    }) else {
        return;
    };
    let host = registry.host().to_owned();
    let settings = RegistryConfig::default();
    let client = registry.client_config();

    let success = login(&request(&host, "alice", "s3cret"), &settings, &client).unwrap();
    assert_eq!(success.identity_token, None);
    // A URL names the same registry.
    let url = format!("http://{host}/v2/");
    login(&request(&url, "alice", "s3cret"), &settings, &client).unwrap();

    let error = login(&request(&host, "alice", "wrong"), &settings, &client).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("login attempt to http://{host}/v2/ failed with status: 401 Unauthorized")
    );
    // dockerd answers this one with 500, and docker does not call it
    // "unauthorized" (no "Stored credentials invalid or expired").
    assert!(!error.is_unauthorized());
    assert_eq!(error.http_status(), 500);

    let error = login(&request(&host, "", ""), &settings, &client).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("Get \"http://{host}/v2/\": no basic auth credentials")
    );
    let error = login(&request("::bad", "alice", "s3cret"), &settings, &client).unwrap_err();
    assert!(
        matches!(error, LoginError::InvalidServerAddress { .. }),
        "{error}"
    );
    assert_eq!(error.http_status(), 400);
}

#[test]
fn token_auth_login_returns_the_service_answer() {
    let Some(registry) = start(TestRegistryOptions {
        auth: TestAuth::Token {
            credentials: Some(("bob".into(), "hunter2".into())),
        },
        ..TestRegistryOptions::default()
    }) else {
        return;
    };
    let host = registry.host().to_owned();
    let settings = RegistryConfig::default();
    let client = registry.client_config();
    login(&request(&host, "bob", "hunter2"), &settings, &client).unwrap();
    let error = login(&request(&host, "bob", "nope"), &settings, &client).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with(&format!("Get \"http://{host}/v2/\": ")),
        "{error}"
    );
    let requests = registry.token_requests();
    assert!(
        requests
            .iter()
            .all(|request| request.scopes.is_empty() && request.username.as_deref() == Some("bob")),
        "{requests:?}"
    );
    assert_eq!(requests.len(), 2);
}
