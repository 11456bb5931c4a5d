//! Concurrent layer downloads: a pool of threads takes layers from a queue
//! in manifest order, streams each blob into its own staging file and hands
//! the file to the caller's thread, which unpacks layers in order while
//! later ones are still downloading.

use std::collections::VecDeque;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use berth_registry::client::RegistryClient;
use berth_types::Digest;

use super::error::PullError;
use super::events::{layer_id, LayerStatus, PullEvent};

/// Progress of one download is reported at most this often.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// Docker's default is 3 (`max-concurrent-downloads`); berth fetches more
/// at once since layers are unpacked by another thread meanwhile.
pub const DEFAULT_CONCURRENCY: usize = 8;
pub const MAX_CONCURRENCY: usize = 32;

/// How many layers download at once: the flag, else `BERTH_PULL_CONCURRENCY`
/// (its text), else 8; always within 1..=32.
pub fn resolve_concurrency(flag: Option<usize>, environment: Option<&str>) -> usize {
    flag.or_else(|| environment.and_then(|text| text.trim().parse().ok()))
        .unwrap_or(DEFAULT_CONCURRENCY)
        .clamp(1, MAX_CONCURRENCY)
}

/// A file under the store's staging directory, removed when dropped unless
/// it was moved away (a layer adopted into the blob store).
pub(super) struct StagedFile {
    path: PathBuf,
}

impl StagedFile {
    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        match fs_err::remove_file(&self.path) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => {
                tracing::warn!(path = %self.path.display(), %error, "failed to remove a staged download")
            }
        }
    }
}

/// One blob to fetch into `path`.
pub(super) struct DownloadJob {
    pub index: usize,
    pub digest: Digest,
    pub size: u64,
    pub path: PathBuf,
}

pub(super) type Progress<'a> = &'a (dyn Fn(PullEvent) + Sync);

/// Runs `jobs` on up to `concurrency` threads; `consume` sees each
/// finished download (or its failure) on this thread as it completes. The
/// first error `consume` returns stops the pool: downloads under way fail
/// at their next write and their files are removed.
pub(super) fn run_downloads(
    client: &RegistryClient,
    repository: &str,
    jobs: Vec<DownloadJob>,
    concurrency: usize,
    progress: Progress<'_>,
    mut consume: impl FnMut(usize, Result<StagedFile, PullError>) -> Result<(), PullError>,
) -> Result<(), PullError> {
    let workers = concurrency.clamp(1, MAX_CONCURRENCY).min(jobs.len());
    let queue = Mutex::new(jobs.into_iter().collect::<VecDeque<_>>());
    let abort = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let (sender, receiver) = mpsc::channel();
        for _ in 0..workers {
            let sender = sender.clone();
            let (queue, abort) = (&queue, &abort);
            scope.spawn(move || loop {
                if abort.load(Ordering::Relaxed) {
                    break;
                }
                let next = match queue.lock() {
                    Ok(mut queue) => queue.pop_front(),
                    Err(_) => None,
                };
                let Some(job) = next else { break };
                let index = job.index;
                let result = download(client, repository, job, abort, progress);
                if sender.send((index, result)).is_err() {
                    break;
                }
            });
        }
        drop(sender);
        let outcome = receiver
            .iter()
            .try_for_each(|(index, result)| consume(index, result));
        if outcome.is_err() {
            abort.store(true, Ordering::Relaxed);
        }
        outcome
    })
}

fn download(
    client: &RegistryClient,
    repository: &str,
    job: DownloadJob,
    abort: &AtomicBool,
    progress: Progress<'_>,
) -> Result<StagedFile, PullError> {
    let id = layer_id(&job.digest);
    let stage_error = |source| PullError::Stage {
        digest: job.digest.clone(),
        source,
    };
    let file = fs_err::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&job.path)
        .map_err(stage_error)?;
    let staged = StagedFile {
        path: job.path.clone(),
    };
    progress(PullEvent::Layer {
        id: id.clone(),
        status: LayerStatus::Downloading {
            current: 0,
            total: job.size,
        },
    });
    let mut writer = ProgressWriter {
        inner: BufWriter::with_capacity(1 << 20, file),
        id: &id,
        written: 0,
        total: job.size,
        last_report: Instant::now(),
        abort,
        progress,
    };
    client.get_blob(repository, &job.digest, Some(job.size), &mut writer)?;
    let file = writer
        .inner
        .into_inner()
        .map_err(|error| stage_error(error.into_error()))?;
    file.sync_data().map_err(stage_error)?;
    progress(PullEvent::Layer {
        id: id.clone(),
        status: LayerStatus::Downloading {
            current: job.size,
            total: job.size,
        },
    });
    progress(PullEvent::Layer {
        id: id.clone(),
        status: LayerStatus::VerifyingChecksum,
    });
    progress(PullEvent::Layer {
        id,
        status: LayerStatus::DownloadComplete,
    });
    Ok(staged)
}

/// Counts what reaches the file, reports it now and then, and stops the
/// download when the pull is abandoned.
struct ProgressWriter<'a> {
    inner: BufWriter<fs_err::File>,
    id: &'a str,
    written: u64,
    total: u64,
    last_report: Instant,
    abort: &'a AtomicBool,
    progress: Progress<'a>,
}

impl Write for ProgressWriter<'_> {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        if self.abort.load(Ordering::Relaxed) {
            return Err(io::Error::new(
                io::ErrorKind::Interrupted,
                "the pull was abandoned",
            ));
        }
        let written = self.inner.write(buffer)?;
        self.written += written as u64;
        if self.last_report.elapsed() >= PROGRESS_INTERVAL {
            self.last_report = Instant::now();
            (self.progress)(PullEvent::Layer {
                id: self.id.to_owned(),
                status: LayerStatus::Downloading {
                    current: self.written,
                    total: self.total,
                },
            });
        }
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrency_from_flag_environment_or_default() {
        assert_eq!(resolve_concurrency(None, None), 8);
        assert_eq!(resolve_concurrency(Some(3), Some("20")), 3);
        assert_eq!(resolve_concurrency(None, Some("20")), 20);
        assert_eq!(resolve_concurrency(None, Some("junk")), 8);
        assert_eq!(resolve_concurrency(Some(0), None), 1);
        assert_eq!(resolve_concurrency(None, Some("500")), 32);
    }

    #[test]
    fn staged_files_are_removed_when_dropped() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("blob");
        fs_err::write(&path, b"partial").unwrap();
        drop(StagedFile { path: path.clone() });
        assert!(!path.exists());
        // Already moved away: nothing to do, no error.
        drop(StagedFile { path });
    }
}
