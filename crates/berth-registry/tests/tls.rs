//! HTTPS to a registry whose certificate comes from a test CA, trusted only
//! through the host's `certs.d` directory, as with Docker.

mod common;

use berth_registry::client::{ClientConfig, ClientError, RegistryClient};
use berth_registry::testing::TestRegistryOptions;
use berth_types::{Digest, Reference};
use common::{linux, pull_bytes, start, TestImage};

fn tls() -> TestRegistryOptions {
    TestRegistryOptions {
        tls: true,
        ..TestRegistryOptions::default()
    }
}

#[test]
fn ca_from_certs_d_is_trusted() {
    let Some(registry) = start(tls()) else { return };
    let client = registry.client(None).unwrap();
    assert_eq!(client.base_url(), format!("https://{}", registry.host()));
    client.check_login().unwrap();
    let image = TestImage::new(60, &[70_000], &linux("amd64", None));
    image.push(&client, "secure/app", "1");
    let reference =
        Reference::parse_normalized(&format!("{}/secure/app:1", registry.host())).unwrap();
    assert_eq!(
        client.get_manifest(&reference).unwrap().bytes,
        image.manifest
    );
    let layer = &image.layers[0];
    assert_eq!(
        pull_bytes(
            &client,
            "secure/app",
            &Digest::of_bytes(layer),
            layer.len() as u64
        ),
        *layer
    );
}

#[test]
fn unknown_ca_is_refused() {
    let Some(registry) = start(tls()) else { return };
    // A certs.d entry for the host without the CA: HTTPS, system roots only.
    let certs_root = tempfile::tempdir().unwrap();
    fs_err::create_dir(certs_root.path().join(registry.host())).unwrap();
    let config = ClientConfig {
        certs_root: certs_root.path().to_owned(),
        ..registry.client_config()
    };
    let client = RegistryClient::new(registry.host(), &config, None).unwrap();
    let error = client.check_login().unwrap_err();
    let ClientError::Transport { url, source, .. } = &error else {
        panic!("expected a transport error, got {error:?}");
    };
    assert_eq!(url, &format!("https://{}/v2/", registry.host()));
    assert!(source.to_string().contains("UnknownIssuer"), "{source}");
    assert!(!error.is_transient(), "{source:?}");
}
