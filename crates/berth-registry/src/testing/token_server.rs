//! A token service for a test registry configured with `auth: token`: a
//! small HTTP/1.1 server on 127.0.0.1 answering `GET /token?service=…&scope=…`
//! with a real RS256 JWT (signed by the `openssl` CLI) that the registry
//! verifies against the signer's certificate. Only what the registry and the
//! client need of the token spec is here.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;

use super::certs::TokenSigner;
use super::TestRegistryError;

pub(super) const TOKEN_ISSUER: &str = "berth-test-issuer";
pub(super) const TOKEN_SERVICE: &str = "berth-test-registry";

/// One token request as the server saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenRequest {
    pub scopes: Vec<String>,
    pub service: Option<String>,
    /// The Basic user name, when credentials came.
    pub username: Option<String>,
}

pub(super) struct TokenServer {
    pub realm: String,
    pub requests: Arc<Mutex<Vec<TokenRequest>>>,
    stop: Arc<AtomicBool>,
    address: std::net::SocketAddr,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    key: PathBuf,
    certificate_base64: String,
    /// Required credentials (user, password); `None` lets anyone in.
    credentials: Option<(String, String)>,
    requests: Arc<Mutex<Vec<TokenRequest>>>,
}

impl TokenServer {
    pub(super) fn start(
        signer: &TokenSigner,
        credentials: Option<(String, String)>,
    ) -> Result<Self, TestRegistryError> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(TestRegistryError::Io)?;
        let address = listener.local_addr().map_err(TestRegistryError::Io)?;
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Shared {
            key: signer.key.clone(),
            certificate_base64: base64::engine::general_purpose::STANDARD
                .encode(&signer.certificate_der),
            credentials,
            requests: Arc::clone(&requests),
        };
        let stop_flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop_flag.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    // A broken test connection only fails that request.
                    let _ = serve(&shared, stream);
                }
            }
        });
        Ok(Self {
            realm: format!("http://{address}/token"),
            requests,
            stop,
            address,
            thread: Some(thread),
        })
    }
}

impl Drop for TokenServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.address);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(shared: &Shared, mut stream: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut authorization = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("authorization") {
                authorization = Some(value.trim().to_owned());
            }
        }
    }
    let target = request_line.split_whitespace().nth(1).unwrap_or("/");
    let query = target.split_once('?').map(|(_, query)| query).unwrap_or("");
    let mut request = TokenRequest {
        scopes: Vec::new(),
        service: None,
        username: None,
    };
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("scope", value)) => request.scopes.push(percent_decode(value)),
            Some(("service", value)) => request.service = Some(percent_decode(value)),
            _ => {}
        }
    }
    let given = authorization.as_deref().and_then(decode_basic);
    request.username = given.as_ref().map(|(user, _)| user.clone());
    if let Ok(mut requests) = shared.requests.lock() {
        requests.push(request.clone());
    }
    let allowed = match (&shared.credentials, &given) {
        (None, _) => true,
        (Some(wanted), Some(given)) => wanted == given,
        (Some(_), None) => false,
    };
    if !allowed {
        // Docker Hub's answer to a wrong password.
        let body = r#"{"details":"incorrect username or password"}"#;
        return respond(&mut stream, "401 Unauthorized", body);
    }
    let token = match sign_token(shared, &request) {
        Ok(token) => token,
        Err(error) => {
            let body = serde_json::json!({ "details": error.to_string() }).to_string();
            return respond(&mut stream, "500 Internal Server Error", &body);
        }
    };
    // `access_token` is what OAuth2 servers send; the client takes either.
    let body = serde_json::json!({ "access_token": token, "expires_in": 300 }).to_string();
    respond(&mut stream, "200 OK", &body)
}

fn respond(stream: &mut TcpStream, status: &str, body: &str) -> std::io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

fn decode_basic(header: &str) -> Option<(String, String)> {
    let encoded = header.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let hex = bytes.get(index + 1..index + 3).and_then(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
        });
        match (bytes[index], hex) {
            (b'%', Some(byte)) => {
                decoded.push(byte);
                index += 3;
            }
            (b'+', _) => {
                decoded.push(b' ');
                index += 1;
            }
            (byte, _) => {
                decoded.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

/// `repository:NAME:pull,push` → the claim granting those actions.
fn access_entry(scope: &str) -> Option<serde_json::Value> {
    let (kind, rest) = scope.split_once(':')?;
    let (name, actions) = rest.rsplit_once(':')?;
    Some(serde_json::json!({
        "type": kind,
        "name": name,
        "actions": actions.split(',').collect::<Vec<_>>(),
    }))
}

fn sign_token(shared: &Shared, request: &TokenRequest) -> Result<String, TestRegistryError> {
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or_default();
    let header = serde_json::json!({
        "typ": "JWT",
        "alg": "RS256",
        "x5c": [shared.certificate_base64],
    });
    let claims = serde_json::json!({
        "iss": TOKEN_ISSUER,
        "sub": request.username.clone().unwrap_or_default(),
        "aud": TOKEN_SERVICE,
        "exp": now + 300,
        "nbf": now.saturating_sub(10),
        "iat": now.saturating_sub(10),
        "jti": format!("{now}-{}", request.scopes.join(" ")),
        "access": request.scopes.iter().filter_map(|scope| access_entry(scope)).collect::<Vec<_>>(),
    });
    let signing_input = format!(
        "{}.{}",
        engine.encode(header.to_string()),
        engine.encode(claims.to_string())
    );
    let signature = openssl_sign(&shared.key, signing_input.as_bytes())?;
    Ok(format!("{signing_input}.{}", engine.encode(signature)))
}

/// RSASSA-PKCS1-v1_5 with SHA-256, which is RS256.
fn openssl_sign(key: &std::path::Path, data: &[u8]) -> Result<Vec<u8>, TestRegistryError> {
    let spawn_error = |source| TestRegistryError::Spawn {
        program: "openssl",
        source,
    };
    let mut child = Command::new("openssl")
        .arg("dgst")
        .arg("-sha256")
        .arg("-sign")
        .arg(key)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(spawn_error)?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(data).map_err(TestRegistryError::Io)?;
    }
    let output = child.wait_with_output().map_err(spawn_error)?;
    if !output.status.success() {
        return Err(TestRegistryError::Tool {
            command: "openssl dgst -sha256 -sign".into(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(output.stdout)
}
