//! The layer byte stream: compression detection, decompression and the two digests.
//!
//! The raw input is hashed as it is read (the compressed digest); the decompressed bytes
//! are hashed as the tar reader consumes them (the diff id). For an uncompressed layer
//! both are the same stream, so it is hashed once.

use std::fmt;
use std::io::{self, BufReader, Chain, Cursor, Read};
use std::path::PathBuf;

use berth_types::Digest;
use sha2::{Digest as _, Sha256};

use super::error::UnpackError;

/// How a layer blob is compressed, detected from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

impl fmt::Display for Compression {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Self::None => "uncompressed",
            Self::Gzip => "gzip",
            Self::Zstd => "zstd",
        })
    }
}

const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];
const ZSTD_MAGIC: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];
const MAGIC_LEN: usize = 4;
/// Large reads of compressed input keep the decoders fed with few syscalls.
const INPUT_BUFFER: usize = 256 * 1024;

impl Compression {
    fn detect(prefix: &[u8]) -> Self {
        if prefix.starts_with(GZIP_MAGIC) {
            Self::Gzip
        } else if prefix.starts_with(ZSTD_MAGIC) {
            Self::Zstd
        } else {
            Self::None
        }
    }
}

/// Marks an `io::Error` with the layer it came from, so that an error surfacing from the
/// tar reader can be told apart from the tar reader's own complaints.
#[derive(Debug, thiserror::Error)]
enum StreamFault {
    #[error("layer input read failed")]
    Input(#[source] io::Error),
    #[error("decompression failed")]
    Decompress(#[source] io::Error),
}

/// Hashes and counts every byte read from the caller's input.
struct HashingReader<R> {
    inner: R,
    hasher: Sha256,
    reached_end: bool,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let count = self.inner.read(buffer).map_err(|error| {
            if error.kind() == io::ErrorKind::Interrupted {
                error
            } else {
                io::Error::new(error.kind(), StreamFault::Input(error))
            }
        })?;
        if count == 0 && !buffer.is_empty() {
            self.reached_end = true;
        }
        self.hasher.update(&buffer[..count]);
        Ok(count)
    }
}

type Raw<R> = BufReader<Chain<Cursor<Vec<u8>>, HashingReader<R>>>;

enum Decoder<R: Read> {
    Plain(Raw<R>),
    Gzip(Box<flate2::bufread::MultiGzDecoder<Raw<R>>>),
    Zstd(zstd::stream::read::Decoder<'static, Raw<R>>),
}

impl<R: Read> Decoder<R> {
    fn raw(&self) -> &Raw<R> {
        match self {
            Self::Plain(raw) => raw,
            Self::Gzip(decoder) => decoder.get_ref(),
            Self::Zstd(decoder) => decoder.get_ref(),
        }
    }

    fn into_raw(self) -> Raw<R> {
        match self {
            Self::Plain(raw) => raw,
            Self::Gzip(decoder) => decoder.into_inner(),
            Self::Zstd(decoder) => decoder.finish(),
        }
    }
}

/// The decompressed tar stream of one layer, hashing as it goes.
pub(super) struct LayerStream<R: Read> {
    compression: Compression,
    decoder: Decoder<R>,
    /// `None` for an uncompressed layer, whose diff id is its compressed digest.
    diff_hasher: Option<Sha256>,
    decoded_end: bool,
}

/// The two digests of a fully read layer.
pub(super) struct StreamDigests {
    pub compressed_digest: Digest,
    pub diff_id: Digest,
}

impl<R: Read> LayerStream<R> {
    /// Reads the first bytes to detect the compression and sets up the decoder.
    pub(super) fn open(input: R) -> Result<Self, UnpackError> {
        let mut raw = HashingReader {
            inner: input,
            hasher: Sha256::new(),
            reached_end: false,
        };
        let mut prefix = Vec::with_capacity(MAGIC_LEN);
        (&mut raw)
            .take(MAGIC_LEN as u64)
            .read_to_end(&mut prefix)
            .map_err(|error| Self::input_error(error))?;
        let compression = Compression::detect(&prefix);
        let raw = BufReader::with_capacity(INPUT_BUFFER, Cursor::new(prefix).chain(raw));
        let decoder = match compression {
            Compression::None => Decoder::Plain(raw),
            Compression::Gzip => Decoder::Gzip(Box::new(flate2::bufread::MultiGzDecoder::new(raw))),
            Compression::Zstd => Decoder::Zstd(
                zstd::stream::read::Decoder::with_buffer(raw).map_err(|source| {
                    UnpackError::Decompress {
                        compression,
                        source,
                    }
                })?,
            ),
        };
        Ok(Self {
            compression,
            decoder,
            diff_hasher: (compression != Compression::None).then(Sha256::new),
            decoded_end: false,
        })
    }

    pub(super) fn compression(&self) -> Compression {
        self.compression
    }

    /// Reads whatever follows the end of the tar archive (padding, a second end block,
    /// trailing bytes) into both digests and returns them.
    pub(super) fn finish(mut self) -> Result<StreamDigests, UnpackError> {
        io::copy(&mut self, &mut io::sink()).map_err(|error| self.classify(error, None))?;
        let diff_hasher = self.diff_hasher.take();
        let mut raw = self.decoder.into_raw();
        // A decoder may stop at the end of its last frame; the compressed digest covers
        // every byte the caller gave us.
        io::copy(&mut raw, &mut io::sink()).map_err(|error| Self::input_error(error))?;
        let (_, hashing) = raw.into_inner().into_inner();
        let compressed_digest = Digest::from_sha256(hashing.hasher);
        let diff_id = match diff_hasher {
            Some(hasher) => Digest::from_sha256(hasher),
            None => compressed_digest.clone(),
        };
        Ok(StreamDigests {
            compressed_digest,
            diff_id,
        })
    }

    /// Turns an error that surfaced while reading the tar stream into the variant that
    /// says what went wrong: the input, the decompressor, an early end, or a bad archive.
    pub(super) fn classify(&self, error: io::Error, entry: Option<PathBuf>) -> UnpackError {
        let compression = self.compression;
        match into_fault(error) {
            Ok(StreamFault::Input(source)) => UnpackError::ReadInput { source },
            Ok(StreamFault::Decompress(source))
                if source.kind() == io::ErrorKind::UnexpectedEof || self.raw_reached_end() =>
            {
                UnpackError::Truncated {
                    compression,
                    entry,
                    source,
                }
            }
            Ok(StreamFault::Decompress(source)) => UnpackError::Decompress {
                compression,
                source,
            },
            // The tar reader's own complaint, or our check of an entry's data length.
            Err(source) if self.decoded_end || source.kind() == io::ErrorKind::UnexpectedEof => {
                UnpackError::Truncated {
                    compression,
                    entry,
                    source,
                }
            }
            Err(source) => UnpackError::MalformedArchive { entry, source },
        }
    }

    fn raw_reached_end(&self) -> bool {
        self.decoder.raw().get_ref().get_ref().1.reached_end
    }

    fn input_error(error: io::Error) -> UnpackError {
        let source = match into_fault(error) {
            Ok(StreamFault::Input(source) | StreamFault::Decompress(source)) | Err(source) => {
                source
            }
        };
        UnpackError::ReadInput { source }
    }
}

/// The `StreamFault` inside `error`, or `error` itself if it carries none.
fn into_fault(error: io::Error) -> Result<StreamFault, io::Error> {
    if !error
        .get_ref()
        .is_some_and(|inner| inner.is::<StreamFault>())
    {
        return Err(error);
    }
    let kind = error.kind();
    match error
        .into_inner()
        .map(|inner| inner.downcast::<StreamFault>())
    {
        Some(Ok(fault)) => Ok(*fault),
        // Checked just above; keep the kind if the impossible happens.
        _ => Err(io::Error::from(kind)),
    }
}

impl<R: Read> Read for LayerStream<R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let result = match &mut self.decoder {
            Decoder::Plain(raw) => raw.read(buffer),
            Decoder::Gzip(decoder) => decoder.read(buffer),
            Decoder::Zstd(decoder) => decoder.read(buffer),
        };
        let count = result.map_err(|error| {
            let is_marked = error
                .get_ref()
                .is_some_and(|inner| inner.is::<StreamFault>());
            if is_marked || error.kind() == io::ErrorKind::Interrupted {
                error
            } else {
                io::Error::new(error.kind(), StreamFault::Decompress(error))
            }
        })?;
        if count == 0 && !buffer.is_empty() {
            self.decoded_end = true;
        }
        if let Some(hasher) = &mut self.diff_hasher {
            hasher.update(&buffer[..count]);
        }
        Ok(count)
    }
}
