//! Blob downloads: streamed into the caller's writer while hashed, resumed
//! with a `Range` request after a broken connection, and checked against
//! the digest and size at the end.

use std::io::{self, Read, Write};

use berth_types::Digest;
use sha2::{Digest as _, Sha256};
use ureq::http::Method;

use super::error::ClientError;
use super::manifest::header;
use super::transport::Call;
use super::{pull_scope, ClientInner, RegistryClient};

const COPY_BUFFER: usize = 64 * 1024;

/// A download under way: what has reached the writer so far.
struct Progress<'a> {
    digest: &'a Digest,
    expected_size: Option<u64>,
    hasher: Sha256,
    written: u64,
}

impl RegistryClient {
    /// Streams blob `digest` of `repository` into `out`; returns its size.
    ///
    /// When this fails, `out` may hold part of the blob, or (on
    /// [`ClientError::BlobDigestMismatch`] / [`ClientError::BlobSizeMismatch`])
    /// all of a wrong one: the caller discards what it staged.
    pub fn get_blob(
        &self,
        repository: &str,
        digest: &Digest,
        expected_size: Option<u64>,
        out: &mut dyn Write,
    ) -> Result<u64, ClientError> {
        let mut progress = Progress {
            digest,
            expected_size,
            hasher: Sha256::new(),
            written: 0,
        };
        let retry = self.inner.config.retry;
        let mut attempt = 1;
        loop {
            match self.inner.download(repository, &mut progress, out) {
                Ok(()) => break,
                Err(error) if error.is_transient() && attempt < retry.attempts => {
                    let wait = retry.backoff(attempt);
                    tracing::debug!(%digest, written = progress.written, %error, ?wait, "resuming blob download");
                    std::thread::sleep(wait);
                    attempt += 1;
                }
                // Retried to no avail: say so, and which blob it was (a
                // refused connection alone names only a URL).
                Err(error) if error.is_transient() && attempt > 1 => {
                    return Err(ClientError::BlobRetriesExhausted {
                        digest: digest.clone(),
                        attempts: attempt,
                        source: error.into_cause(),
                    })
                }
                Err(error) => return Err(error),
            }
        }
        if let Some(expected) = expected_size {
            if progress.written != expected {
                return Err(ClientError::BlobSizeMismatch {
                    digest: digest.clone(),
                    expected,
                    actual: progress.written,
                });
            }
        }
        let actual = Digest::from_sha256(progress.hasher);
        if &actual != digest {
            return Err(ClientError::BlobDigestMismatch {
                expected: digest.clone(),
                actual,
            });
        }
        Ok(progress.written)
    }

    /// The size of blob `digest` in `repository`, or `None` when the
    /// registry does not have it there.
    pub fn blob_size(&self, repository: &str, digest: &Digest) -> Result<Option<u64>, ClientError> {
        let scopes = [pull_scope(repository)];
        self.inner.blob_size(repository, digest, &scopes)
    }
}

impl ClientInner {
    pub(super) fn blob_size(
        &self,
        repository: &str,
        digest: &Digest,
        scopes: &[String],
    ) -> Result<Option<u64>, ClientError> {
        let url = self.repository_url(repository, &format!("blobs/{digest}"));
        let response = self.execute(Call::new(Method::HEAD, url, scopes), |status| {
            status == 200 || status == 404
        })?;
        if response.status().as_u16() == 404 {
            return Ok(None);
        }
        Ok(Some(
            header(&response, "Content-Length")
                .and_then(|text| text.parse().ok())
                .unwrap_or(0),
        ))
    }

    /// One GET of the rest of the blob (all of it, or from `written` on).
    fn download(
        &self,
        repository: &str,
        progress: &mut Progress<'_>,
        out: &mut dyn Write,
    ) -> Result<(), ClientError> {
        let scopes = [pull_scope(repository)];
        let url = self.repository_url(repository, &format!("blobs/{}", progress.digest));
        let mut call = Call::new(Method::GET, url, &scopes).no_retry();
        if progress.written > 0 {
            call = call.header("Range", format!("bytes={}-", progress.written));
        }
        let response = self.execute(call, |status| status == 200 || status == 206)?;
        let mut skip = 0;
        if progress.written > 0 {
            if response.status().as_u16() == 206 {
                let start = header(&response, "Content-Range").and_then(range_start);
                if start != Some(progress.written) {
                    return Err(self.broken(progress, "the registry resumed at the wrong offset"));
                }
            } else {
                // No range support: read again what was already written.
                skip = progress.written;
            }
        }
        let announced_end = header(&response, "Content-Length")
            .and_then(|text| text.parse::<u64>().ok())
            .map(|length| length + progress.written - skip);
        let mut reader = response.into_body().into_reader();
        discard(&mut reader, skip).map_err(|source| self.download_error(progress, source))?;
        let mut buffer = vec![0; COPY_BUFFER];
        loop {
            let count = match reader.read(&mut buffer) {
                Ok(0) => break,
                Ok(count) => count,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => return Err(self.download_error(progress, source)),
            };
            let chunk = &buffer[..count];
            let total = progress.written + count as u64;
            if let Some(expected) = progress.expected_size.filter(|expected| total > *expected) {
                return Err(ClientError::BlobSizeMismatch {
                    digest: progress.digest.clone(),
                    expected,
                    actual: total,
                });
            }
            out.write_all(chunk).map_err(|source| ClientError::Write {
                digest: progress.digest.clone(),
                source,
            })?;
            progress.hasher.update(chunk);
            progress.written = total;
        }
        match announced_end.or(progress.expected_size) {
            Some(end) if progress.written < end => {
                Err(self.broken(progress, "the connection closed before the end of the blob"))
            }
            _ => Ok(()),
        }
    }

    fn download_error(&self, progress: &Progress<'_>, source: io::Error) -> ClientError {
        ClientError::Download {
            digest: progress.digest.clone(),
            source,
        }
    }

    fn broken(&self, progress: &Progress<'_>, why: &'static str) -> ClientError {
        self.download_error(progress, io::Error::new(io::ErrorKind::UnexpectedEof, why))
    }
}

/// `bytes 100-199/200` → 100.
fn range_start(content_range: &str) -> Option<u64> {
    content_range
        .trim()
        .strip_prefix("bytes ")?
        .split('-')
        .next()?
        .trim()
        .parse()
        .ok()
}

fn discard(reader: &mut impl Read, count: u64) -> io::Result<()> {
    let copied = io::copy(&mut reader.take(count), &mut io::sink())?;
    if copied < count {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the connection closed before the end of the blob",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_range_start() {
        assert_eq!(range_start("bytes 100-199/200"), Some(100));
        assert_eq!(range_start("bytes */200"), None);
        assert_eq!(range_start("items 1-2/3"), None);
    }
}
