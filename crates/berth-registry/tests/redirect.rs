//! Blobs served from elsewhere: the registry answers a blob GET with a
//! redirect (distribution's `redirect` middleware, as on S3 or a CDN) to
//! a small file server over its storage directory.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use berth_registry::testing::{TestAuth, TestRegistryOptions};
use berth_registry::Credentials;
use berth_types::Digest;
use common::{pull_bytes, push_bytes, start};

/// Serves files under `root` by path, one request per connection; returns
/// each request's path and whether it carried an Authorization header.
fn serve_files(listener: TcpListener, root: PathBuf, seen: Arc<Mutex<Vec<(String, bool)>>>) {
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
            let mut request_line = String::new();
            let _ = reader.read_line(&mut request_line);
            let mut authorized = false;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                authorized |= line.to_ascii_lowercase().starts_with("authorization:");
            }
            let path = request_line
                .split_whitespace()
                .nth(1)
                .unwrap_or("/")
                .to_owned();
            seen.lock().expect("lock").push((path.clone(), authorized));
            let file = root.join(path.trim_start_matches('/'));
            let (status, body) = match fs_err::read(&file) {
                Ok(body) => ("200 OK", body),
                Err(_) => ("404 Not Found", Vec::new()),
            };
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
}

#[test]
fn blob_redirects_are_followed_without_credentials() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/", listener.local_addr().unwrap());
    let options = TestRegistryOptions {
        auth: TestAuth::Htpasswd {
            username: "carol".into(),
            password: "pw".into(),
        },
        redirect_blobs_to: Some(base_url),
        ..TestRegistryOptions::default()
    };
    let Some(registry) = start(options) else {
        return;
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    serve_files(listener, registry.storage_root(), Arc::clone(&seen));

    let client = registry
        .client(Some(Credentials {
            username: "carol".into(),
            secret: "pw".into(),
        }))
        .unwrap();
    let blob = common::bytes(90, 150_000);
    let digest = Digest::of_bytes(&blob);
    push_bytes(&client, "redirected/app", &blob, None);
    assert_eq!(
        pull_bytes(&client, "redirected/app", &digest, 150_000),
        blob
    );

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(
        seen[0].0.ends_with(&format!("/{}/data", digest.hex())),
        "{seen:?}"
    );
    assert!(!seen[0].1, "credentials went along with the redirect");
}
