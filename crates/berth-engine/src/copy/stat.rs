//! `HEAD /containers/{id}/archive`: Docker's `X-Docker-Container-Path-Stat` data.

use chrono::{DateTime, SecondsFormat, Utc};
use nix::sys::stat::{FileStat, SFlag};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::error::CopyError;
use super::paths;
use super::resolve::{self, Missing};
use super::sys::{self, RootDir};
use super::ContainerFs;

/// Go's `os.FileMode` bits, as Docker puts them in `PathStat.mode`.
pub mod file_mode {
    pub const DIR: u32 = 1 << 31;
    pub const SYMLINK: u32 = 1 << 27;
    pub const DEVICE: u32 = 1 << 26;
    pub const NAMED_PIPE: u32 = 1 << 25;
    pub const SOCKET: u32 = 1 << 24;
    pub const SETUID: u32 = 1 << 23;
    pub const SETGID: u32 = 1 << 22;
    pub const CHAR_DEVICE: u32 = 1 << 21;
    pub const STICKY: u32 = 1 << 20;
    pub const IRREGULAR: u32 = 1 << 19;
    pub const PERMISSIONS: u32 = 0o777;
    /// Bits that make a file not a regular one (`ModeType`).
    pub const TYPE: u32 = DIR | SYMLINK | NAMED_PIPE | SOCKET | DEVICE | CHAR_DEVICE | IRREGULAR;
}

/// What Docker says about a path in a container (`container.PathStat`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathStat {
    /// The last element of the path as asked for (`filepath.Base`).
    pub name: String,
    pub size: i64,
    /// Go `os.FileMode` bits (see [`file_mode`]).
    pub mode: u32,
    #[serde(serialize_with = "go_time", deserialize_with = "parse_time")]
    pub mtime: DateTime<Utc>,
    /// For a symlink, the absolute path it resolves to inside the container (following
    /// every link, as far as the path exists); empty otherwise.
    #[serde(rename = "linkTarget")]
    pub link_target: String,
}

impl PathStat {
    pub fn is_dir(&self) -> bool {
        self.mode & file_mode::DIR != 0
    }

    pub fn is_symlink(&self) -> bool {
        self.mode & file_mode::SYMLINK != 0
    }

    pub fn is_regular(&self) -> bool {
        self.mode & file_mode::TYPE == 0
    }
}

/// Stats `path` in the container without following a final symlink (unless the path
/// ends in `/` or `/.`, which the kernel follows, as Docker's `os.Lstat` does).
pub fn stat_path(container: &ContainerFs<'_>, path: &str) -> Result<PathStat, CopyError> {
    if path.is_empty() {
        // Go's `os.Lstat("")` fails with ENOENT.
        return Err(CopyError::NotFound {
            path: String::new(),
            container: container.name.to_owned(),
        });
    }
    let root = container.open_root()?;
    stat_in(&root, container, path.as_bytes(), path)
}

/// Stats `lookup` (a path inside the root); `asked` is the path as given, for errors.
pub(crate) fn stat_in(
    root: &RootDir,
    container: &ContainerFs<'_>,
    lookup: &[u8],
    asked: &str,
) -> Result<PathStat, CopyError> {
    let stat = lstat(root, lookup).map_err(|source| {
        if sys::is_not_found(&source) {
            CopyError::NotFound {
                path: asked.to_owned(),
                container: container.name.to_owned(),
            }
        } else {
            CopyError::StatInContainer {
                path: asked.to_owned(),
                source,
            }
        }
    })?;
    let mode = go_file_mode(&stat);
    let mut link_target = String::new();
    if mode & file_mode::SYMLINK != 0 {
        let resolved =
            resolve::resolve(root, &paths::clean(lookup), Missing::Keep).map_err(|source| {
                CopyError::StatInContainer {
                    path: asked.to_owned(),
                    source,
                }
            })?;
        link_target = sys::display(&resolved);
    }
    let mtime = DateTime::from_timestamp(
        stat.st_mtime,
        u32::try_from(stat.st_mtime_nsec).unwrap_or(0),
    )
    .unwrap_or_default();
    Ok(PathStat {
        name: sys::display(&paths::base(lookup)),
        size: stat.st_size,
        mode,
        mtime,
        link_target,
    })
}

/// `lstat` with Go's treatment of a trailing `/` or `/.`: the last element is then
/// followed and must be a directory.
pub(crate) fn lstat(root: &RootDir, path: &[u8]) -> std::io::Result<FileStat> {
    let cleaned = paths::clean(path);
    if paths::asserts_directory(path) {
        let fd = root.open_directory(&cleaned)?;
        return sys::fstat(std::os::fd::AsFd::as_fd(&fd));
    }
    root.lstat(&cleaned)
}

/// Go's `fillFileStatFromSys`: the Unix mode as an `os.FileMode`.
pub(crate) fn go_file_mode(stat: &FileStat) -> u32 {
    let mut mode = stat.st_mode & file_mode::PERMISSIONS;
    mode |= match sys::file_type(stat) {
        SFlag::S_IFBLK => file_mode::DEVICE,
        SFlag::S_IFCHR => file_mode::DEVICE | file_mode::CHAR_DEVICE,
        SFlag::S_IFDIR => file_mode::DIR,
        SFlag::S_IFIFO => file_mode::NAMED_PIPE,
        SFlag::S_IFLNK => file_mode::SYMLINK,
        SFlag::S_IFSOCK => file_mode::SOCKET,
        _ => 0,
    };
    if stat.st_mode & libc::S_ISUID != 0 {
        mode |= file_mode::SETUID;
    }
    if stat.st_mode & libc::S_ISGID != 0 {
        mode |= file_mode::SETGID;
    }
    if stat.st_mode & libc::S_ISVTX != 0 {
        mode |= file_mode::STICKY;
    }
    mode
}

/// Go's `time.Time` JSON form: RFC 3339 with as many fraction digits as needed.
fn go_time<S: Serializer>(time: &DateTime<Utc>, serializer: S) -> Result<S::Ok, S::Error> {
    let mut text = time.to_rfc3339_opts(SecondsFormat::Nanos, true);
    // "…:06.500000000Z" → "…:06.5Z"; "…:06.000000000Z" → "…:06Z".
    if let Some(dot) = text.rfind('.') {
        let fraction_end = text.len() - 1;
        let trimmed = text[dot + 1..fraction_end].trim_end_matches('0').len();
        let keep = if trimmed == 0 { dot } else { dot + 1 + trimmed };
        text.replace_range(keep..fraction_end, "");
    }
    serializer.serialize_str(&text)
}

fn parse_time<'de, D: Deserializer<'de>>(deserializer: D) -> Result<DateTime<Utc>, D::Error> {
    let text = String::deserialize(deserializer)?;
    DateTime::parse_from_rfc3339(&text)
        .map(|time| time.with_timezone(&Utc))
        .map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_matches_docker() {
        // Observed from Docker 20.10: HEAD /containers/x/archive?path=/src/dir
        let stat = PathStat {
            name: "dir".into(),
            size: 4096,
            mode: file_mode::DIR | 0o755,
            mtime: DateTime::from_timestamp(1_796_008_552, 782_842_514).unwrap(),
            link_target: String::new(),
        };
        let json = serde_json::to_string(&stat).unwrap();
        assert_eq!(
            json,
            r#"{"name":"dir","size":4096,"mode":2147484141,"mtime":"2026-11-30T03:15:52.782842514Z","linkTarget":""}"#
        );
        assert_eq!(serde_json::from_str::<PathStat>(&json).unwrap(), stat);
        let whole = PathStat {
            mtime: DateTime::from_timestamp(981_173_106, 0).unwrap(),
            ..stat.clone()
        };
        assert!(serde_json::to_string(&whole)
            .unwrap()
            .contains(r#""mtime":"2001-02-03T04:05:06Z""#));
        let half = PathStat {
            mtime: DateTime::from_timestamp(981_173_106, 500_000_000).unwrap(),
            ..stat
        };
        assert!(serde_json::to_string(&half)
            .unwrap()
            .contains(r#""mtime":"2001-02-03T04:05:06.5Z""#));
    }
}
