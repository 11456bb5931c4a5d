//! Keys and certificates for test registries, made with the `openssl` CLI:
//! a CA and a server certificate for 127.0.0.1/localhost, and an RSA key
//! with a self-signed certificate for signing registry tokens.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::TestRegistryError;

/// OpenSSL extensions for a CA, a server certificate (127.0.0.1 and
/// localhost) and a client certificate: the test registries' and `berth
/// serve`'s TLS tests.
pub const OPENSSL_CONFIG: &str = "\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = berth test
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
";

pub(super) struct TlsFiles {
    pub ca_certificate: PathBuf,
    pub server_certificate: PathBuf,
    pub server_key: PathBuf,
}

pub(super) fn run_openssl(
    arguments: &[&str],
    directory: &Path,
) -> Result<Vec<u8>, TestRegistryError> {
    let output = Command::new("openssl")
        .args(arguments)
        .current_dir(directory)
        .output()
        .map_err(|source| TestRegistryError::Spawn {
            program: "openssl",
            source,
        })?;
    if !output.status.success() {
        return Err(TestRegistryError::Tool {
            command: format!("openssl {}", arguments.join(" ")),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(output.stdout)
}

fn write_config(directory: &Path) -> Result<(), TestRegistryError> {
    let path = directory.join("openssl.cnf");
    fs_err::write(&path, OPENSSL_CONFIG).map_err(TestRegistryError::Io)
}

/// A CA (P-256) and a server certificate it signed, in `directory`.
pub(super) fn make_tls_files(directory: &Path) -> Result<TlsFiles, TestRegistryError> {
    write_config(directory)?;
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec![
        "req",
        "-x509",
        "-config",
        "openssl.cnf",
        "-extensions",
        "ca",
    ];
    ca.extend(ec);
    ca.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=berth test CA",
    ]);
    run_openssl(&ca, directory)?;
    let mut request = vec!["req", "-new", "-config", "openssl.cnf"];
    request.extend(ec);
    request.extend([
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    run_openssl(&request, directory)?;
    run_openssl(
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "openssl.cnf",
            "-extensions",
            "server",
        ],
        directory,
    )?;
    Ok(TlsFiles {
        ca_certificate: directory.join("ca.crt"),
        server_certificate: directory.join("server.crt"),
        server_key: directory.join("server.key"),
    })
}

/// The token signer: an RSA key (tokens are RS256) and its self-signed
/// certificate, which the registry trusts as `rootcertbundle`.
pub(super) struct TokenSigner {
    pub key: PathBuf,
    pub certificate: PathBuf,
    /// The certificate's DER, for the JWT `x5c` header.
    pub certificate_der: Vec<u8>,
}

pub(super) fn make_token_signer(directory: &Path) -> Result<TokenSigner, TestRegistryError> {
    write_config(directory)?;
    run_openssl(
        &[
            "req",
            "-x509",
            "-config",
            "openssl.cnf",
            "-extensions",
            "ca",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "token.key",
            "-out",
            "token.crt",
            "-days",
            "2",
            "-subj",
            "/CN=berth test token issuer",
        ],
        directory,
    )?;
    let certificate_der = run_openssl(&["x509", "-in", "token.crt", "-outform", "DER"], directory)?;
    Ok(TokenSigner {
        key: directory.join("token.key"),
        certificate: directory.join("token.crt"),
        certificate_der,
    })
}
