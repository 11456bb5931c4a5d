//! Basic (htpasswd) and Bearer (token service) auth against a real
//! `docker-registry`.

mod common;

use berth_registry::client::PushedBlob;
use berth_registry::testing::{TestAuth, TestRegistryOptions};
use berth_registry::Credentials;
use berth_types::{Digest, Reference};
use common::{linux, pull_bytes, push_bytes, start, TestImage};

fn credentials(username: &str, secret: &str) -> Option<Credentials> {
    Some(Credentials {
        username: username.into(),
        secret: secret.into(),
    })
}

/// `{error}: {source}: …`, as `{:#}` prints an error chain.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

fn htpasswd() -> TestRegistryOptions {
    TestRegistryOptions {
        auth: TestAuth::Htpasswd {
            username: "alice".into(),
            password: "s3cret".into(),
        },
        ..TestRegistryOptions::default()
    }
}

#[test]
fn basic_auth_push_and_pull() {
    let Some(registry) = start(htpasswd()) else {
        return;
    };
    let client = registry.client(credentials("alice", "s3cret")).unwrap();
    client.check_login().unwrap();
    let image = TestImage::new(30, &[5000], &linux("amd64", None));
    image.push(&client, "private/app", "1");
    let reference =
        Reference::parse_normalized(&format!("{}/private/app:1", registry.host())).unwrap();
    assert_eq!(
        client.get_manifest(&reference).unwrap().bytes,
        image.manifest
    );
    let layer = &image.layers[0];
    assert_eq!(
        pull_bytes(
            &client,
            "private/app",
            &Digest::of_bytes(layer),
            layer.len() as u64
        ),
        *layer
    );
}

#[test]
fn wrong_password_reads_as_docker_says_it() {
    let Some(registry) = start(htpasswd()) else {
        return;
    };
    let client = registry.client(credentials("alice", "wrong")).unwrap();
    let error = client.check_login().unwrap_err();
    assert_eq!(
        chain(&error),
        format!(
            "Get \"http://{}/v2/\": unauthorized: authentication required",
            registry.host()
        )
    );
    assert_eq!(error.status(), Some(401));

    let reference =
        Reference::parse_normalized(&format!("{}/private/app:1", registry.host())).unwrap();
    let error = client.get_manifest(&reference).unwrap_err();
    assert_eq!(
        chain(&error),
        format!(
            "Get \"http://{}/v2/private/app/manifests/1\": unauthorized: authentication required",
            registry.host()
        )
    );
    let anonymous = registry.client(None).unwrap();
    assert_eq!(
        anonymous
            .get_manifest(&reference)
            .unwrap_err()
            .registry_codes(),
        ["UNAUTHORIZED"]
    );
}

fn token(credentials: Option<(&str, &str)>) -> TestRegistryOptions {
    TestRegistryOptions {
        auth: TestAuth::Token {
            credentials: credentials.map(|(user, password)| (user.into(), password.into())),
        },
        ..TestRegistryOptions::default()
    }
}

#[test]
fn bearer_tokens_are_fetched_per_scope_and_cached() {
    let Some(registry) = start(token(Some(("bob", "hunter2")))) else {
        return;
    };
    let client = registry.client(credentials("bob", "hunter2")).unwrap();
    let image = TestImage::new(40, &[3000, 4000], &linux("amd64", None));
    image.push(&client, "team/app", "1");
    let reference =
        Reference::parse_normalized(&format!("{}/team/app:1", registry.host())).unwrap();
    let resolved = client
        .resolve_manifest(&reference, &linux("amd64", None))
        .unwrap();
    for descriptor in &resolved.image.layers {
        pull_bytes(&client, "team/app", &descriptor.digest, descriptor.size);
    }
    // Mounting asks for both repositories' scopes in one token.
    let blob = common::bytes(41, 1000);
    push_bytes(&client, "team/app", &blob, None);
    assert_eq!(
        push_bytes(&client, "team/other", &blob, Some("team/app")),
        PushedBlob::Mounted
    );

    // Login asks for a token without scope.
    client.check_login().unwrap();

    let requests = registry.token_requests();
    let scopes: Vec<String> = requests
        .iter()
        .map(|request| request.scopes.join(" "))
        .collect();
    assert!(requests
        .iter()
        .all(|request| request.username.as_deref() == Some("bob")));
    assert!(requests
        .iter()
        .all(|request| request.service.as_deref() == Some("berth-test-registry")));
    // One token per scope set, however many requests used it.
    assert_eq!(
        scopes,
        [
            "repository:team/app:pull,push",
            "repository:team/app:pull",
            "repository:team/other:pull,push repository:team/app:pull",
            "",
        ]
    );
}

#[test]
fn anonymous_bearer_pull_and_wrong_password() {
    let Some(registry) = start(token(Some(("bob", "hunter2")))) else {
        return;
    };
    let client = registry.client(credentials("bob", "nope")).unwrap();
    let reference =
        Reference::parse_normalized(&format!("{}/team/app:1", registry.host())).unwrap();
    let error = client.get_manifest(&reference).unwrap_err();
    assert_eq!(
        chain(&error),
        format!(
            "Get \"http://{}/v2/team/app/manifests/1\": unauthorized: incorrect username or password",
            registry.host()
        )
    );
    let error = client.check_login().unwrap_err();
    assert_eq!(
        chain(&error),
        format!(
            "Get \"http://{}/v2/\": unauthorized: incorrect username or password",
            registry.host()
        )
    );
}

#[test]
fn open_token_service_gives_anonymous_tokens() {
    let Some(registry) = start(token(None)) else {
        return;
    };
    let client = registry.client(None).unwrap();
    let image = TestImage::new(50, &[100], &linux("amd64", None));
    image.push(&client, "library/busybox", "latest");
    let reference =
        Reference::parse_normalized(&format!("{}/library/busybox", registry.host())).unwrap();
    assert_eq!(
        client.get_manifest(&reference).unwrap().bytes,
        image.manifest
    );
    assert!(registry
        .token_requests()
        .iter()
        .all(|request| request.username.is_none()));
}
