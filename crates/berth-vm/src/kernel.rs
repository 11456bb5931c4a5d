//! The guest kernel: a kernel package directory, made bootable quickly under
//! QEMU. Either berth's own kernel, built from Debian's `linux-source` with
//! the drivers built in (scripts/vm-kernel-minimal.sh: `lib/modules/<release>`
//! holds only `modules.builtin`), or Debian's kernel package, extracted (not
//! installed; scripts/vm-kernel.sh). Both are laid out alike:
//! `boot/vmlinuz-<release>`, `lib/modules/<release>/kernel/`.
//!
//! QEMU can boot the package's bzImage, but the bzImage decompresses itself
//! (xz) inside the guest first: ≈ 8 s under TCG on this machine kind. So the
//! host decompresses it once into the uncompressed ELF `vmlinux`, which
//! QEMU's microvm starts at its PVH entry point (CONFIG_PVH, the
//! `XEN_ELFNOTE_PHYS32_ENTRY` note) with nothing left to unpack: ≈ 2.5–3 s
//! to `/init` under TCG. The result is cached, keyed by the kernel's release
//! and a hash of its full version banner (Debian rebuilds keep the release
//! name, `6.1.0-57-amd64`, but change the banner's build number and date).

use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use fs_err as fs;

/// Where callers look for the kernel package directory when they are given
/// none.
pub const KERNEL_DIR_ENV: &str = "BERTH_VM_KERNEL_DIR";

/// A kernel ready to boot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestKernel {
    /// `6.1.0-57-amd64`: what `uname -r` says in the guest.
    pub release: String,
    /// The bzImage's full version string (release, builder, build, date).
    pub banner: String,
    /// The uncompressed ELF image, in the cache.
    pub vmlinux: PathBuf,
    /// `lib/modules/<release>` of the package.
    pub modules: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error(
        "no guest kernel configured: set {KERNEL_DIR_ENV} to a kernel package directory \
         (scripts/vm-kernel-minimal.sh DIR builds berth's; scripts/vm-kernel.sh DIR extracts \
         Debian's linux-image package)"
    )]
    NotConfigured,
    #[error(
        "guest kernel directory {dir:?} does not exist (it should hold boot/vmlinuz-* and \
         lib/modules/*: scripts/vm-kernel-minimal.sh builds berth's kernel there, \
         scripts/vm-kernel.sh extracts Debian's linux-image package)"
    )]
    MissingDir { dir: PathBuf },
    #[error("no kernel in {dir:?}: expected boot/vmlinuz-<release> (a kernel package directory)")]
    NoKernel { dir: PathBuf },
    #[error("{dir:?} holds several kernels ({releases:?}); give a directory with one")]
    SeveralKernels { dir: PathBuf, releases: Vec<String> },
    #[error("kernel {release} has no modules at {dir:?}")]
    MissingModules { release: String, dir: PathBuf },
    #[error("{path:?} is not an x86 bzImage (no \"HdrS\" setup header, or one without a payload)")]
    NotBzImage { path: PathBuf },
    #[error("the payload of {path:?} is compressed with {format}; berth decodes xz kernels only")]
    UnsupportedCompression { path: PathBuf, format: &'static str },
    #[error("failed to read {path:?}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to write the uncompressed kernel {path:?}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to decompress the kernel {path:?}")]
    Decompress {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the decompressed kernel of {path:?} is not an ELF image")]
    NotElf { path: PathBuf },
}

/// The package directory named by `BERTH_VM_KERNEL_DIR`.
pub fn kernel_dir_from_env() -> Result<PathBuf, KernelError> {
    match std::env::var_os(KERNEL_DIR_ENV) {
        Some(dir) if !dir.is_empty() => Ok(PathBuf::from(dir)),
        _ => Err(KernelError::NotConfigured),
    }
}

/// Finds the kernel in `package_dir` and returns it with its uncompressed
/// image under `cache_dir`, decompressing it first if the cache lacks it.
/// Safe to call from several processes at once: each writes a private
/// temporary file and renames it into place.
pub fn prepare(package_dir: &Path, cache_dir: &Path) -> Result<GuestKernel, KernelError> {
    if !package_dir.is_dir() {
        return Err(KernelError::MissingDir {
            dir: package_dir.to_path_buf(),
        });
    }
    let boot = package_dir.join("boot");
    let mut releases: Vec<String> = match fs::read_dir(&boot) {
        Ok(entries) => entries
            .filter_map(|entry| entry.ok())
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                name.strip_prefix("vmlinuz-").map(str::to_string)
            })
            .collect(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(source) => return Err(KernelError::Read { path: boot, source }),
    };
    releases.sort();
    let release = match releases.as_slice() {
        [] => {
            return Err(KernelError::NoKernel {
                dir: package_dir.to_path_buf(),
            })
        }
        [release] => release.clone(),
        _ => {
            return Err(KernelError::SeveralKernels {
                dir: package_dir.to_path_buf(),
                releases,
            })
        }
    };
    let modules = package_dir.join("lib/modules").join(&release);
    if !modules.join("kernel").is_dir() {
        return Err(KernelError::MissingModules {
            release,
            dir: modules,
        });
    }
    let bzimage = boot.join(format!("vmlinuz-{release}"));
    let image = BzImage::open(&bzimage)?;
    let key = format!("{release}-{:016x}", fnv1a(image.banner.as_bytes()));
    let vmlinux = cache_dir.join(key).join("vmlinux");
    if !vmlinux.is_file() {
        decompress(&bzimage, &image, &vmlinux)?;
    }
    Ok(GuestKernel {
        release,
        banner: image.banner,
        vmlinux,
        modules,
    })
}

/// What the x86 boot protocol's setup header says about a bzImage
/// (Documentation/arch/x86/boot.rst).
struct BzImage {
    banner: String,
    payload_offset: u64,
    payload_length: u64,
}

impl BzImage {
    fn open(path: &Path) -> Result<BzImage, KernelError> {
        let read_error = |source| KernelError::Read {
            path: path.to_path_buf(),
            source,
        };
        let mut file = fs::File::open(path).map_err(read_error)?;
        let mut setup = vec![0u8; 64 * 1024];
        let length = read_up_to(&mut file, &mut setup).map_err(read_error)?;
        setup.truncate(length);
        let not_bzimage = || KernelError::NotBzImage {
            path: path.to_path_buf(),
        };
        let u16_at = |at: usize| {
            setup
                .get(at..at + 2)
                .map(|b| u16::from_le_bytes([b[0], b[1]]))
        };
        let u32_at = |at: usize| {
            setup
                .get(at..at + 4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        if setup.get(0x202..0x206) != Some(b"HdrS") {
            return Err(not_bzimage());
        }
        // setup_sects (0 means 4), then the 32-bit code whose payload_offset
        // (protocol 2.08+) points at the compressed kernel.
        let setup_sectors = match setup.get(0x1f1).copied().ok_or_else(not_bzimage)? {
            0 => 4,
            sectors => u64::from(sectors),
        };
        let payload_offset = u64::from(u32_at(0x248).ok_or_else(not_bzimage)?);
        let payload_length = u64::from(u32_at(0x24c).ok_or_else(not_bzimage)?);
        if payload_length == 0 {
            return Err(not_bzimage());
        }
        // kernel_version: an offset (minus 0x200) of a NUL-terminated string.
        let banner_at = usize::from(u16_at(0x20e).ok_or_else(not_bzimage)?) + 0x200;
        let banner = setup
            .get(banner_at..)
            .and_then(|rest| rest.split(|&byte| byte == 0).next())
            .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
            .ok_or_else(not_bzimage)?;
        Ok(BzImage {
            banner,
            payload_offset: (setup_sectors + 1) * 512 + payload_offset,
            payload_length,
        })
    }
}

fn decompress(bzimage: &Path, image: &BzImage, vmlinux: &Path) -> Result<(), KernelError> {
    let read_error = |source| KernelError::Read {
        path: bzimage.to_path_buf(),
        source,
    };
    let mut file = fs::File::open(bzimage).map_err(read_error)?;
    file.seek(SeekFrom::Start(image.payload_offset))
        .map_err(read_error)?;
    let mut magic = [0u8; 6];
    file.read_exact(&mut magic).map_err(read_error)?;
    if let Some(format) = other_compression(&magic) {
        return Err(KernelError::UnsupportedCompression {
            path: bzimage.to_path_buf(),
            format,
        });
    }
    file.seek(SeekFrom::Start(image.payload_offset))
        .map_err(read_error)?;

    let dir = vmlinux.parent().expect("the cache path has a parent");
    let write_error = |source| KernelError::Write {
        path: vmlinux.to_path_buf(),
        source,
    };
    fs::create_dir_all(dir).map_err(write_error)?;
    let temporary = dir.join(temporary_name("vmlinux"));
    let result = (|| {
        let out = fs::File::create(&temporary).map_err(write_error)?;
        let mut out = BufWriter::with_capacity(1 << 20, out);
        let mut reader = xz4rust::XzReader::new(file.take(image.payload_length));
        std::io::copy(&mut reader, &mut out).map_err(|source| KernelError::Decompress {
            path: bzimage.to_path_buf(),
            source,
        })?;
        let out = out
            .into_inner()
            .map_err(|error| write_error(error.into_error()))?;
        out.sync_all().map_err(write_error)?;
        drop(out);
        let mut head = [0u8; 4];
        let mut check = fs::File::open(&temporary).map_err(write_error)?;
        check.read_exact(&mut head).map_err(write_error)?;
        if &head != b"\x7fELF" {
            return Err(KernelError::NotElf {
                path: bzimage.to_path_buf(),
            });
        }
        fs::rename(&temporary, vmlinux).map_err(write_error)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    result
}

/// Names a compression the payload uses when it is not xz.
fn other_compression(magic: &[u8; 6]) -> Option<&'static str> {
    if magic == b"\xfd7zXZ\x00" {
        return None;
    }
    Some(match magic {
        [0x1f, 0x8b, ..] => "gzip",
        [0x28, 0xb5, 0x2f, 0xfd, ..] => "zstd",
        [0x02, 0x21, 0x4c, 0x18, ..] => "lz4",
        [b'B', b'Z', b'h', ..] => "bzip2",
        [0x89, b'L', b'Z', b'O', ..] => "lzo",
        [0x5d, 0x00, 0x00, ..] => "lzma",
        _ => "an unknown format",
    })
}

fn read_up_to(file: &mut impl Read, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..])? {
            0 => break,
            read => filled += read,
        }
    }
    Ok(filled)
}

/// FNV-1a, 64 bits: a cache key, not a security boundary.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `.NAME.<pid>-<n>.tmp`: unique to this process and call, so concurrent
/// writers (processes or threads) never share one.
fn temporary_name(name: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!(".{name}.{}-{n}.tmp", std::process::id())
}

/// Writes `bytes` to `path` through a temporary file and a rename.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().expect("the path has a parent");
    fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or("file");
    let temporary = dir.join(temporary_name(name));
    let result = (|| {
        let mut file = fs::File::create(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&temporary, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_or_empty_dirs_get_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let error = prepare(&dir.path().join("nope"), &cache).unwrap_err();
        assert!(matches!(error, KernelError::MissingDir { .. }), "{error}");
        assert!(
            error.to_string().contains("scripts/vm-kernel.sh"),
            "{error}"
        );
        let error = prepare(dir.path(), &cache).unwrap_err();
        assert!(matches!(error, KernelError::NoKernel { .. }), "{error}");

        fs::create_dir_all(dir.path().join("boot")).unwrap();
        fs::write(dir.path().join("boot/vmlinuz-1.0-test"), b"not a kernel").unwrap();
        let error = prepare(dir.path(), &cache).unwrap_err();
        assert!(
            matches!(error, KernelError::MissingModules { .. }),
            "{error}"
        );
        fs::create_dir_all(dir.path().join("lib/modules/1.0-test/kernel")).unwrap();
        let error = prepare(dir.path(), &cache).unwrap_err();
        assert!(matches!(error, KernelError::NotBzImage { .. }), "{error}");
        fs::write(dir.path().join("boot/vmlinuz-2.0-test"), b"").unwrap();
        let error = prepare(dir.path(), &cache).unwrap_err();
        assert!(
            matches!(error, KernelError::SeveralKernels { .. }),
            "{error}"
        );
    }

    #[test]
    fn names_a_payload_that_is_not_xz() {
        assert_eq!(other_compression(b"\xfd7zXZ\x00"), None);
        assert_eq!(other_compression(&[0x1f, 0x8b, 8, 0, 0, 0]), Some("gzip"));
        assert_eq!(
            other_compression(&[0x28, 0xb5, 0x2f, 0xfd, 0, 0]),
            Some("zstd")
        );
    }
}
