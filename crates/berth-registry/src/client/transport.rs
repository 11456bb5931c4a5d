//! One registry request: authorization, a second try after a 401
//! challenge, retries with backoff on failures a retry may cure, and the
//! registry's error body turned into [`ClientError`].

use std::io::{self, Read};

use ureq::http::{Method, Request, Response};
use ureq::{Body, SendBody};

use super::error::{ClientError, RegistryErrors};
use super::ClientInner;

/// Error bodies are small; a larger one is cut here.
const ERROR_BODY_LIMIT: u64 = 64 * 1024;

/// What a request sends.
pub(super) enum Payload<'a> {
    Empty,
    /// In memory: can be sent again on a retry.
    Bytes(&'a [u8]),
    /// Streamed once from a reader: no retries, the caller retries the
    /// whole operation.
    Stream {
        reader: &'a mut dyn Read,
        length: u64,
    },
}

impl Payload<'_> {
    fn replayable(&self) -> bool {
        !matches!(self, Self::Stream { .. })
    }
}

pub(super) struct Call<'a> {
    pub method: Method,
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    pub payload: Payload<'a>,
    /// Token scopes: `repository:NAME:pull` or `repository:NAME:pull,push`.
    pub scopes: &'a [String],
    /// False when the caller retries itself (resuming a download).
    pub retry: bool,
}

impl<'a> Call<'a> {
    pub fn new(method: Method, url: String, scopes: &'a [String]) -> Self {
        Self {
            method,
            url,
            headers: Vec::new(),
            payload: Payload::Empty,
            scopes,
            retry: true,
        }
    }

    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    pub fn no_retry(mut self) -> Self {
        self.retry = false;
        self
    }

    pub fn payload(mut self, payload: Payload<'a>) -> Self {
        self.payload = payload;
        self
    }
}

/// Go's spelling of a method in `url.Error`: `Get`, `Head`, `Put`…
pub(super) fn method_name(method: &Method) -> &'static str {
    match method.as_str() {
        "GET" => "Get",
        "HEAD" => "Head",
        "PUT" => "Put",
        "POST" => "Post",
        "PATCH" => "Patch",
        "DELETE" => "Delete",
        _ => "Request",
    }
}

/// Go's words for a request that got no response, where the cause is a
/// common one (`dial tcp 127.0.0.1:5000: connect: connection refused`,
/// the client timeout of moby's login), else ureq's: the part of a Go
/// `url.Error` after `Get "URL": `.
pub(super) fn go_error_text(error: &ureq::Error, url: &str) -> String {
    let address = || {
        let (scheme, rest) = url.split_once("://").unwrap_or(("https", url));
        let host = rest.split(['/', '?', '#']).next().unwrap_or(rest);
        let has_port = match host.rfind(':') {
            Some(colon) => !host[colon..].contains(']'),
            None => false,
        };
        if has_port {
            host.to_owned()
        } else if scheme == "http" {
            format!("{host}:80")
        } else {
            format!("{host}:443")
        }
    };
    match error {
        ureq::Error::Io(io) if io.kind() == io::ErrorKind::ConnectionRefused => {
            format!("dial tcp {}: connect: connection refused", address())
        }
        ureq::Error::HostNotFound => {
            let host = address();
            let name = host
                .rsplit_once(':')
                .map_or(host.as_str(), |(name, _)| name);
            format!("dial tcp: lookup {name}: no such host")
        }
        // What Debian's dockerd 20.10 says when its 15 s client timeout
        // passes (seen against a registry that accepts and never answers).
        ureq::Error::Timeout(_) => {
            "net/http: request canceled (Client.Timeout exceeded while awaiting headers)".to_owned()
        }
        other => other.to_string(),
    }
}

impl ClientInner {
    /// Sends `call` and returns the response when `accept(status)`; any
    /// other status becomes an error with the registry's message.
    pub(super) fn execute(
        &self,
        mut call: Call<'_>,
        accept: impl Fn(u16) -> bool,
    ) -> Result<Response<Body>, ClientError> {
        let attempts = if call.retry && call.payload.replayable() {
            self.config.retry.attempts.max(1)
        } else {
            1
        };
        let mut attempt = 1;
        loop {
            let result = self
                .send_authorized(&mut call)
                .and_then(|response| self.check_status(&call, response, &accept));
            match result {
                Err(error) if error.is_transient() && attempt < attempts => {
                    let wait = self.config.retry.backoff(attempt);
                    tracing::debug!(url = %call.url, %error, ?wait, "retrying registry request");
                    std::thread::sleep(wait);
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    fn check_status(
        &self,
        call: &Call<'_>,
        mut response: Response<Body>,
        accept: impl Fn(u16) -> bool,
    ) -> Result<Response<Body>, ClientError> {
        let status = response.status().as_u16();
        if accept(status) {
            return Ok(response);
        }
        // A body that cannot be read still leaves the status to report.
        let body = response
            .body_mut()
            .with_config()
            .limit(ERROR_BODY_LIMIT)
            .read_to_vec()
            .unwrap_or_default();
        let error = ClientError::Registry {
            method: method_name(&call.method),
            url: call.url.clone(),
            status,
            errors: RegistryErrors::from_response(status, &body),
        };
        if status == 401 {
            return Err(self.unauthorized(call, error));
        }
        Err(error)
    }

    fn unauthorized(&self, call: &Call<'_>, source: ClientError) -> ClientError {
        ClientError::Unauthorized {
            method: method_name(&call.method),
            url: call.url.clone(),
            source: Box::new(source),
        }
    }

    /// One request with authorization, and one more after a 401 whose
    /// challenge gives something new to try.
    fn send_authorized(&self, call: &mut Call<'_>) -> Result<Response<Body>, ClientError> {
        let mut tries = 0;
        loop {
            tries += 1;
            let authorization =
                self.auth
                    .authorization(&self.agent, call.scopes)
                    .map_err(|error| match error {
                        // The token service's own failures name the request they
                        // were for, as Docker prints them.
                        ClientError::Registry { .. } | ClientError::TokenResponse { .. } => {
                            self.unauthorized(call, error)
                        }
                        other => other,
                    })?;
            let response = self.send_once(call, authorization.as_deref())?;
            if response.status().as_u16() != 401 || tries > 1 || !call.payload.replayable() {
                return Ok(response);
            }
            let challenges = response
                .headers()
                .get_all("WWW-Authenticate")
                .iter()
                .filter_map(|value| value.to_str().ok());
            if !self
                .auth
                .on_unauthorized(challenges, call.scopes, authorization.is_some())
            {
                return Ok(response);
            }
        }
    }

    fn send_once(
        &self,
        call: &mut Call<'_>,
        authorization: Option<&str>,
    ) -> Result<Response<Body>, ClientError> {
        let transport = |source| ClientError::Transport {
            method: method_name(&call.method),
            url: call.url.clone(),
            source,
        };
        let mut builder = Request::builder()
            .method(call.method.clone())
            .uri(call.url.as_str());
        for (name, value) in &call.headers {
            builder = builder.header(*name, value.as_str());
        }
        if let Some(authorization) = authorization {
            builder = builder.header("Authorization", authorization);
        }
        let (length, reader): (u64, &mut dyn Read) = match &mut call.payload {
            Payload::Empty if call.method == Method::GET || call.method == Method::HEAD => {
                let request = builder
                    .body(())
                    .map_err(|error| transport(ureq::Error::Http(error)))?;
                return self.agent.run(request).map_err(transport);
            }
            Payload::Empty => (0, &mut io::empty()),
            Payload::Bytes(bytes) => (bytes.len() as u64, bytes),
            Payload::Stream { reader, length } => (*length, &mut **reader),
        };
        // An explicit length: ureq would otherwise send a reader chunked.
        let request = builder
            .header("Content-Length", length.to_string())
            .body(SendBody::from_reader(reader))
            .map_err(|error| transport(ureq::Error::Http(error)))?;
        self.agent.run(request).map_err(transport)
    }
}
