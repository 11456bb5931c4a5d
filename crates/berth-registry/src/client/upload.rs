//! Blob pushes: skipped when the registry has the blob, mounted from
//! another repository when the caller knows one that holds it, else
//! uploaded in one PUT or, above a size threshold, in PATCH chunks.

use std::io::{self, Read, Seek, SeekFrom};

use berth_types::Digest;
use ureq::http::{Method, Response};
use ureq::Body;

use super::auth::with_query;
use super::error::ClientError;
use super::manifest::header;
use super::transport::{Call, Payload};
use super::{pull_scope, push_scope, ClientInner, RegistryClient};

/// Method, URL, headers and scopes of a request whose body is streamed.
type StreamRequest<'a> = (Method, String, Vec<(&'static str, String)>, &'a [String]);

/// A blob to push.
#[derive(Clone, Copy, Debug)]
pub struct BlobPush<'a> {
    pub digest: &'a Digest,
    pub size: u64,
    /// A repository of the same registry known to hold the blob (where the
    /// image was pulled from): the blob is mounted from there, not sent.
    pub mount_from: Option<&'a str>,
}

/// What a push did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushedBlob {
    /// The repository had it already (Docker's "Layer already exists").
    AlreadyExists,
    /// Mounted from another repository (Docker's "Mounted from …").
    Mounted,
    Uploaded,
}

/// The source, read exactly `remaining` bytes far; a shorter source is an
/// error of its own, kept aside since the HTTP client only sees an I/O error.
struct ExactReader<'a, R> {
    inner: &'a mut R,
    remaining: u64,
    failure: Option<io::Error>,
}

impl<R: Read> Read for ExactReader<'_, R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        if self.remaining == 0 {
            return Ok(0);
        }
        let limit = buffer
            .len()
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        let result = match self.inner.read(&mut buffer[..limit]) {
            Ok(0) => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the blob is shorter than its size",
            )),
            other => other,
        };
        match result {
            Ok(count) => {
                self.remaining -= count as u64;
                Ok(count)
            }
            Err(error) => {
                let kind = error.kind();
                self.failure = Some(error);
                Err(io::Error::new(kind, "failed to read the blob to push"))
            }
        }
    }
}

impl RegistryClient {
    /// Pushes one blob read from `source` (from its start; it is rewound for
    /// a retry). Connection failures and 5xx answers restart the upload.
    pub fn push_blob<R: Read + Seek>(
        &self,
        repository: &str,
        blob: &BlobPush<'_>,
        source: &mut R,
    ) -> Result<PushedBlob, ClientError> {
        let retry = self.inner.config.retry;
        let mut attempt = 1;
        loop {
            match self.inner.push_blob_once(repository, blob, source) {
                Err(error) if error.is_transient() && attempt < retry.attempts => {
                    let wait = retry.backoff(attempt);
                    tracing::debug!(digest = %blob.digest, %error, ?wait, "retrying blob push");
                    std::thread::sleep(wait);
                    attempt += 1;
                }
                other => return other,
            }
        }
    }
}

impl ClientInner {
    fn push_blob_once<R: Read + Seek>(
        &self,
        repository: &str,
        blob: &BlobPush<'_>,
        source: &mut R,
    ) -> Result<PushedBlob, ClientError> {
        let mut scopes = vec![push_scope(repository)];
        if let Some(from) = blob.mount_from.filter(|from| *from != repository) {
            scopes.push(pull_scope(from));
        }
        if self.blob_size(repository, blob.digest, &scopes)?.is_some() {
            return Ok(PushedBlob::AlreadyExists);
        }
        let mut url = self.repository_url(repository, "blobs/uploads/");
        if let Some(from) = blob.mount_from.filter(|from| *from != repository) {
            let digest = blob.digest.to_string();
            url = with_query(&url, &[("mount", digest.as_str()), ("from", from)]);
        }
        let started = self.execute(Call::new(Method::POST, url, &scopes).no_retry(), |status| {
            status == 201 || status == 202
        })?;
        if started.status().as_u16() == 201 {
            return Ok(PushedBlob::Mounted);
        }
        let location = self.location(&started, "Post")?;
        source
            .seek(SeekFrom::Start(0))
            .map_err(|source| ClientError::ReadSource {
                digest: blob.digest.clone(),
                source,
            })?;
        let finished = if blob.size > self.config.chunked_upload_threshold {
            self.upload_chunked(location, blob, source, &scopes)?
        } else {
            let url = with_query(&location, &[("digest", &blob.digest.to_string())]);
            let headers = vec![("Content-Type", "application/octet-stream".to_owned())];
            let request = (Method::PUT, url, headers, scopes.as_slice());
            self.send_stream(request, blob, source, blob.size, |status| status == 201)?
        };
        self.check_pushed_digest(&finished, blob.digest)?;
        Ok(PushedBlob::Uploaded)
    }

    /// POST done: PATCH each chunk at its `Content-Range`, following the
    /// `Location` each answer gives, then PUT with the digest.
    fn upload_chunked<R: Read>(
        &self,
        mut location: String,
        blob: &BlobPush<'_>,
        source: &mut R,
        scopes: &[String],
    ) -> Result<Response<Body>, ClientError> {
        let chunk_size = self.config.upload_chunk_size.max(1);
        let mut offset = 0;
        while offset < blob.size {
            let length = chunk_size.min(blob.size - offset);
            let headers = vec![
                ("Content-Type", "application/octet-stream".to_owned()),
                ("Content-Range", format!("{offset}-{}", offset + length - 1)),
            ];
            let request = (Method::PATCH, location.clone(), headers, scopes);
            let answer = self.send_stream(request, blob, source, length, |status| status == 202)?;
            location = self.location(&answer, "Patch")?;
            offset += length;
        }
        let url = with_query(&location, &[("digest", &blob.digest.to_string())]);
        self.execute(Call::new(Method::PUT, url, scopes).no_retry(), |status| {
            status == 201
        })
    }

    /// One request whose body is the next `length` bytes of `source`.
    fn send_stream<R: Read>(
        &self,
        (method, url, headers, scopes): StreamRequest<'_>,
        blob: &BlobPush<'_>,
        source: &mut R,
        length: u64,
        accept: impl Fn(u16) -> bool,
    ) -> Result<Response<Body>, ClientError> {
        let mut reader = ExactReader {
            inner: source,
            remaining: length,
            failure: None,
        };
        let mut call = Call::new(method, url, scopes)
            .payload(Payload::Stream {
                reader: &mut reader,
                length,
            })
            .no_retry();
        call.headers = headers;
        let result = self.execute(call, accept);
        match reader.failure {
            Some(source) => Err(ClientError::ReadSource {
                digest: blob.digest.clone(),
                source,
            }),
            None => result,
        }
    }

    fn location(
        &self,
        response: &Response<Body>,
        method: &'static str,
    ) -> Result<String, ClientError> {
        header(response, "Location")
            .map(|location| self.resolve_location(location))
            .ok_or_else(|| ClientError::MissingLocation {
                method,
                url: self.base_url.clone(),
                status: response.status().as_u16(),
            })
    }

    fn check_pushed_digest(
        &self,
        response: &Response<Body>,
        digest: &Digest,
    ) -> Result<(), ClientError> {
        match header(response, "Docker-Content-Digest") {
            Some(stored) if stored != digest.to_string() => {
                Err(ClientError::PushedDigestMismatch {
                    expected: digest.clone(),
                    actual: stored.to_owned(),
                })
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_reader_reports_a_short_source() {
        let mut source: &[u8] = b"abc";
        let mut reader = ExactReader {
            inner: &mut source,
            remaining: 5,
            failure: None,
        };
        let mut buffer = Vec::new();
        assert!(reader.read_to_end(&mut buffer).is_err());
        assert_eq!(buffer, b"abc");
        assert_eq!(
            reader.failure.map(|error| error.kind()),
            Some(io::ErrorKind::UnexpectedEof)
        );
    }
}
