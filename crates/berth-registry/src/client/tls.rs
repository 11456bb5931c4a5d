//! The TLS trust a registry host gets: the system CA bundle plus Docker's
//! per-registry directory (`certs.d/HOST/*.crt` CAs, `*.cert` + `*.key`
//! client certificates), as dockerd's `registry.ReadCertsDirectory` reads it.
//! For an insecure registry's HTTPS endpoint (login tries it before plain
//! HTTP, as dockerd does) the certificate is not verified.

use std::path::{Path, PathBuf};

use ureq::tls::{parse_pem, Certificate, ClientCert, PemItem, PrivateKey, RootCerts, TlsConfig};

use super::error::ClientError;
use super::settings::ClientConfig;

/// The TLS settings for `host`; `verify` false accepts any server
/// certificate (dockerd's `InsecureSkipVerify` for insecure registries).
pub(super) fn tls_config(
    config: &ClientConfig,
    host: &str,
    verify: bool,
) -> Result<TlsConfig, ClientError> {
    let host_dir = config.certs_root.join(host);
    let mut extra_roots = Vec::new();
    let mut client_cert = None;
    if host_dir.is_dir() {
        for path in sorted_entries(&host_dir)? {
            match path.extension().and_then(|extension| extension.to_str()) {
                Some("crt") => extra_roots.extend(read_certificates(&path)?),
                Some("cert") => client_cert = Some(read_client_cert(&path)?),
                _ => {}
            }
        }
    }
    let system_bundle = config
        .system_ca_bundle
        .as_deref()
        .filter(|path| path.exists());
    let roots = match system_bundle {
        None if extra_roots.is_empty() => RootCerts::WebPki,
        None => RootCerts::new_with_certs(&extra_roots),
        Some(bundle) => {
            let mut roots = read_certificates(bundle)?;
            roots.extend(extra_roots);
            RootCerts::new_with_certs(&roots)
        }
    };
    Ok(TlsConfig::builder()
        .root_certs(roots)
        .client_cert(client_cert)
        .disable_verification(!verify)
        .build())
}

fn sorted_entries(directory: &Path) -> Result<Vec<PathBuf>, ClientError> {
    let entries = fs_err::read_dir(directory).map_err(|source| ClientError::Certificates {
        path: directory.to_owned(),
        source,
    })?;
    let mut paths = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| ClientError::Certificates {
            path: directory.to_owned(),
            source,
        })?;
        paths.push(entry.path());
    }
    paths.sort();
    Ok(paths)
}

fn read_pem(path: &Path) -> Result<Vec<PemItem<'static>>, ClientError> {
    let bytes = fs_err::read(path).map_err(|source| ClientError::Certificates {
        path: path.to_owned(),
        source,
    })?;
    parse_pem(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| ClientError::Pem {
            path: path.to_owned(),
            source,
        })
}

fn read_certificates(path: &Path) -> Result<Vec<Certificate<'static>>, ClientError> {
    Ok(read_pem(path)?
        .into_iter()
        .filter_map(|item| match item {
            PemItem::Certificate(certificate) => Some(certificate),
            _ => None,
        })
        .collect())
}

/// `client.cert` needs `client.key` beside it, as in Docker.
fn read_client_cert(cert_path: &Path) -> Result<ClientCert, ClientError> {
    let key_path = cert_path.with_extension("key");
    if !key_path.exists() {
        return Err(ClientError::MissingClientKey {
            path: cert_path.to_owned(),
        });
    }
    let chain = read_certificates(cert_path)?;
    let key: Option<PrivateKey<'static>> =
        read_pem(&key_path)?
            .into_iter()
            .find_map(|item| match item {
                PemItem::PrivateKey(key) => Some(key),
                _ => None,
            });
    let key = key.ok_or_else(|| ClientError::MissingClientKey {
        path: cert_path.to_owned(),
    })?;
    Ok(ClientCert::new_with_certs(&chain, key))
}
