use std::net::IpAddr;

use super::*;

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

/// A resolver that knows a few names and nothing else.
fn lookup(name: &str) -> Vec<IpAddr> {
    let addresses: &[&str] = match name {
        "localhost" => &["127.0.0.1", "::1"],
        "lan-registry" => &["10.20.0.5"],
        "public.example" => &["93.184.216.34"],
        _ => &[],
    };
    addresses.iter().map(|text| text.parse().unwrap()).collect()
}

#[test]
fn defaults_are_dockers() {
    let config = RegistryConfig::from_json("{}").unwrap();
    assert_eq!(config, RegistryConfig::default());
    assert_eq!(config.mirrors(), [] as [String; 0]);
    assert_eq!(config.max_concurrent_downloads(), 3);
    assert_eq!(config.max_concurrent_uploads(), 5);
    assert_eq!(config.max_download_attempts(), 5);
}

#[test]
fn a_full_file_parses() {
    let config = RegistryConfig::from_json(
        r#"{
            "registry-mirrors": ["https://mirror.example", "https://mirror.example/", "http://10.0.0.9:5000"],
            "insecure-registries": ["lan.example:5000", "http://old.example", "10.20.0.0/16"],
            "max-concurrent-downloads": 6,
            "max-download-attempts": 2,
            "log-level": "debug",
            "some-other-section": {"a": 1}
        }"#,
    )
    .unwrap();
    // Normalised to one trailing slash, duplicates dropped, order kept.
    assert_eq!(
        config.mirrors(),
        ["https://mirror.example/", "http://10.0.0.9:5000/"]
    );
    assert_eq!(config.max_concurrent_downloads(), 6);
    assert_eq!(config.max_download_attempts(), 2);
    assert!(config.is_insecure_with("lan.example:5000", lookup));
    // Listed names match exactly, port included, as in moby.
    assert!(!config.is_insecure_with("lan.example", lookup));
    assert!(!config.is_insecure_with("lan.example:5001", lookup));
    // A scheme is dropped with a warning.
    assert!(config.is_insecure_with("old.example", lookup));
    // Networks match addresses, literal or resolved.
    assert!(config.is_insecure_with("10.20.3.4:443", lookup));
    assert!(config.is_insecure_with("lan-registry:5000", lookup));
    assert!(!config.is_insecure_with("public.example", lookup));
    assert!(!config.is_insecure_with("unresolvable.example", lookup));
}

#[test]
fn loopback_is_always_insecure_and_docker_hub_never() {
    let config = RegistryConfig::default();
    for host in [
        "127.0.0.1:5000",
        "127.8.9.10",
        "localhost:5000",
        "[::1]:5000",
        "::1",
    ] {
        assert!(config.is_insecure_with(host, lookup), "{host}");
    }
    let config = RegistryConfig::new(&[], &strings(&["docker.io", "0.0.0.0/0"])).unwrap();
    assert!(!config.is_insecure_with("docker.io", lookup));
    assert!(!config.is_insecure_with("index.docker.io", lookup));
    assert!(config.is_insecure_with("public.example", lookup));
}

#[test]
fn mirrors_serve_docker_hub_only() {
    let config = RegistryConfig::new(&strings(&["https://mirror.example"]), &[]).unwrap();
    assert_eq!(config.mirrors_for("docker.io"), ["https://mirror.example/"]);
    assert_eq!(
        config.mirrors_for("index.docker.io"),
        ["https://mirror.example/"]
    );
    assert!(config.mirrors_for("ghcr.io").is_empty());
    assert!(config.mirrors_for("localhost:5000").is_empty());
}

#[test]
fn bad_values_get_dockers_messages() {
    let message = |json: &str| RegistryConfig::from_json(json).unwrap_err().to_string();
    assert_eq!(
        message(r#"{"registry-mirrors": ["mirror.example"]}"#),
        "invalid mirror: unsupported scheme \"\" in \"mirror.example\""
    );
    assert_eq!(
        message(r#"{"insecure-registries": ["ftp://x.example"]}"#),
        "insecure registry ftp://x.example should not contain '://'"
    );
    assert_eq!(
        message(r#"{"insecure-registries": ["-x.example"]}"#),
        "invalid index name (-x.example). Cannot begin or end with a hyphen"
    );
    assert_eq!(
        message(r#"{"insecure-registries": ["bad_host:5000"]}"#),
        "insecure registry bad_host:5000 is not valid: invalid host \"bad_host\""
    );
    assert_eq!(
        message(r#"{"max-concurrent-downloads": -1}"#),
        "invalid max concurrent downloads: -1"
    );
    assert_eq!(
        message(r#"{"max-concurrent-uploads": -2}"#),
        "invalid max concurrent uploads: -2"
    );
    assert_eq!(
        message(r#"{"max-download-attempts": 0}"#),
        "invalid max download attempts: 0"
    );
    assert!(matches!(
        RegistryConfig::from_json(r#"{"registry-mirrors": "https://one.example"}"#),
        Err(ConfigError::Parse { .. })
    ));
}

#[test]
fn files_load_with_their_path_in_errors() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("config.json");
    assert_eq!(
        RegistryConfig::load_or_default(&path).unwrap(),
        RegistryConfig::default()
    );
    assert!(matches!(
        RegistryConfig::load(&path),
        Err(ConfigError::Read { .. })
    ));
    fs_err::write(&path, "{\"registry-mirrors\": [").unwrap();
    match RegistryConfig::load_or_default(&path) {
        Err(ConfigError::Parse { path: reported, .. }) => assert_eq!(reported, path),
        other => panic!("expected a parse error, got {other:?}"),
    }
    fs_err::write(&path, r#"{"max-concurrent-downloads": 0}"#).unwrap();
    // Docker accepts 0; berth reads it as 1 so a pull can make progress.
    assert_eq!(
        RegistryConfig::load(&path)
            .unwrap()
            .max_concurrent_downloads(),
        1
    );
}
