//! Tag lists (`GET /v2/<name>/tags/list`): from a real registry, with its
//! token auth, and page by page from a small server that paginates with
//! `Link` headers and wants Basic credentials on every page (Debian's
//! docker-registry 2.8 lists all tags on one page).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use berth_registry::client::{ClientConfig, RegistryClient, RetryPolicy};
use berth_registry::testing::{TestAuth, TestRegistryOptions};
use berth_registry::Credentials;
use berth_types::image::Platform;
use berth_types::Reference;
use common::{linux, start, start_plain, TestImage};

fn reference(text: &str) -> Reference {
    Reference::parse_normalized(text).expect("a valid reference")
}

fn sorted(mut tags: Vec<String>) -> Vec<String> {
    tags.sort();
    tags
}

#[test]
fn lists_every_tag_of_a_repository() {
    let Some(registry) = start_plain() else {
        return;
    };
    let client = registry.client(None).expect("client");
    let platform: Platform = linux("amd64", None);
    for (seed, tag) in ["1", "2", "latest"].into_iter().enumerate() {
        TestImage::new(seed as u64, &[300], &platform).push(&client, "team/app", tag);
    }
    TestImage::new(9, &[300], &platform).push(&client, "other", "x");
    let tags = client
        .list_tags(&reference(&format!("{}/team/app", registry.host())))
        .expect("list tags");
    assert_eq!(sorted(tags), ["1", "2", "latest"]);
}

#[test]
fn an_unknown_repository_is_dockers_error() {
    let Some(registry) = start_plain() else {
        return;
    };
    let client = registry.client(None).expect("client");
    let name = format!("{}/nothing/here", registry.host());
    let error = client.list_tags(&reference(&name)).unwrap_err();
    assert_eq!(
        anyhow_like(&error).to_string(),
        format!("repository {name} not found: name unknown: repository name not known to registry")
    );
    assert_eq!(error.registry_codes(), ["NAME_UNKNOWN"]);
}

#[test]
fn token_auth_asks_for_a_pull_token() {
    let Some(registry) = start(TestRegistryOptions {
        auth: TestAuth::Token {
            credentials: Some(("user".into(), "secret".into())),
        },
        ..TestRegistryOptions::default()
    }) else {
        return;
    };
    let credentials = Credentials {
        username: "user".into(),
        secret: "secret".into(),
    };
    let client = registry.client(Some(credentials)).expect("client");
    TestImage::new(1, &[100], &linux("amd64", None)).push(&client, "team/app", "v1");
    let tags = client
        .list_tags(&reference(&format!("{}/team/app", registry.host())))
        .expect("list tags");
    assert_eq!(tags, ["v1"]);
    let anonymous = registry.client(None).expect("client");
    let error = anonymous
        .list_tags(&reference(&format!("{}/team/app", registry.host())))
        .unwrap_err();
    assert_eq!(error.status(), Some(401), "{error:?}");
}

/// The request paths a paging server saw, with their Authorization header.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// A server for `team/app`'s tags: 401 with a Basic challenge without
/// credentials, else the page the path names, its `Link` as given.
fn paging_server(pages: Vec<(&'static str, &'static str, Option<String>)>) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let host = listener.local_addr().expect("address").to_string();
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
            let mut request_line = String::new();
            let _ = reader.read_line(&mut request_line);
            let mut authorization = None;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some((name, value)) = line.split_once(':') {
                    if name.eq_ignore_ascii_case("authorization") {
                        authorization = Some(value.trim().to_owned());
                    }
                }
            }
            let path = request_line
                .split_whitespace()
                .nth(1)
                .unwrap_or("/")
                .to_owned();
            log.lock()
                .expect("lock")
                .push((path.clone(), authorization.clone()));
            let page = pages.iter().find(|(page_path, _, _)| *page_path == path);
            let (status, headers, body) = match (authorization, page) {
                (None, _) => (
                    "401 Unauthorized",
                    "WWW-Authenticate: Basic realm=\"paging\"\r\n".to_owned(),
                    r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#
                        .to_owned(),
                ),
                (Some(_), Some((_, body, link))) => (
                    "200 OK",
                    link.as_ref()
                        .map(|link| format!("Link: {link}\r\n"))
                        .unwrap_or_default(),
                    (*body).to_owned(),
                ),
                (Some(_), None) => ("404 Not Found", String::new(), "{}".to_owned()),
            };
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
    });
    (host, seen)
}

fn basic_client(host: &str) -> RegistryClient {
    let config = ClientConfig {
        retry: RetryPolicy {
            attempts: 1,
            initial_backoff: std::time::Duration::from_millis(10),
        },
        certs_root: "/nonexistent/certs.d".into(),
        ..ClientConfig::default()
    };
    let credentials = Credentials {
        username: "pager".into(),
        secret: "pages".into(),
    };
    RegistryClient::new(host, &config, Some(credentials)).expect("client")
}

#[test]
fn pages_are_followed_by_their_link_header_with_credentials() {
    let base = "/v2/team/app/tags/list";
    let (host, seen) = paging_server(vec![
        (
            base,
            r#"{"name":"team/app","tags":["a","b"]}"#,
            Some(format!("<{base}?last=b&n=2>; rel=\"next\"")),
        ),
        (
            "/v2/team/app/tags/list?last=b&n=2",
            r#"{"name":"team/app","tags":["c","d"]}"#,
            // Relative to the page, and among other links.
            Some(r#"</v2/other>; rel="prev", <?last=d&n=2>; rel="next""#.to_owned()),
        ),
        (
            "/v2/team/app/tags/list?last=d&n=2",
            r#"{"name":"team/app","tags":["e"]}"#,
            None,
        ),
    ]);
    let tags = basic_client(&host)
        .list_tags(&reference(&format!("{host}/team/app")))
        .expect("list tags");
    assert_eq!(tags, ["a", "b", "c", "d", "e"]);
    let seen = seen.lock().expect("lock").clone();
    let paths: Vec<&str> = seen.iter().map(|(path, _)| path.as_str()).collect();
    assert_eq!(
        paths,
        [
            base,
            base,
            "/v2/team/app/tags/list?last=b&n=2",
            "/v2/team/app/tags/list?last=d&n=2"
        ],
        "one challenge, then three pages"
    );
    // "pager:pages" in base64.
    for (path, authorization) in &seen[1..] {
        assert_eq!(
            authorization.as_deref(),
            Some("Basic cGFnZXI6cGFnZXM="),
            "{path}"
        );
    }
}

#[test]
fn a_link_back_to_a_page_seen_is_an_error_not_a_loop() {
    let base = "/v2/team/app/tags/list";
    let (host, _seen) = paging_server(vec![
        (
            base,
            r#"{"tags":["a"]}"#,
            Some(format!("<{base}?last=a>; rel=\"next\"")),
        ),
        (
            "/v2/team/app/tags/list?last=a",
            r#"{"tags":null}"#,
            Some(format!("<{base}>; rel=\"next\"")),
        ),
    ]);
    let error = basic_client(&host)
        .list_tags(&reference(&format!("{host}/team/app")))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("the registry's tag list does not end (page \"http://{host}{base}\" came again)")
    );
}

/// An error with its causes, as the CLI prints it (`{:#}` of anyhow).
fn anyhow_like(error: &dyn std::error::Error) -> Chain<'_> {
    Chain(error)
}

struct Chain<'a>(&'a dyn std::error::Error);

impl std::fmt::Display for Chain<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(cause) = source {
            write!(formatter, ": {cause}")?;
            source = cause.source();
        }
        Ok(())
    }
}
