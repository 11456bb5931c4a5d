//! The local driver's options (`volume create -o type=… -o device=… -o o=…`):
//! mount(8)'s `-t`, device and `-o`, as moby's `volume/local` takes them.
//! Checked at create (which keys, which go together); mounted by
//! [`super::mounts`] when the first container that uses the volume starts.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs};

use nix::mount::MsFlags;

/// The keys the local driver knows. `size` (an xfs project quota in
/// Docker) is known but refused: berth has no quota support, as Docker
/// without a quota-capable backing file system.
const KNOWN_KEYS: [&str; 4] = ["type", "device", "o", "size"];

/// What a known key needs beside it (moby's `mandatoryOpts`, checked in
/// this order).
const REQUIRED_WITH: [(&str, &[&str]); 3] = [
    ("type", &["device"]),
    ("device", &["type"]),
    ("o", &["device", "type"]),
];

/// Why a set of options is refused at create, in Docker's words (the
/// caller adds `create NAME: `).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    #[error("invalid option: {0:?}")]
    Unknown(String),
    #[error("missing required option: {0:?}")]
    Missing(String),
    #[error("quota size requested but no quota support")]
    NoQuota,
}

/// A volume's options as stored: Docker's `Options` map (`type`, `device`,
/// `o`), which is also what `volume inspect` shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LocalOptions {
    pub mount_type: String,
    pub device: String,
    pub options: String,
}

impl LocalOptions {
    /// Checks `options` as moby's `validateOpts` does; `None` for none (a
    /// plain directory volume).
    pub fn from_map(options: &BTreeMap<String, String>) -> Result<Option<Self>, OptionsError> {
        if options.is_empty() {
            return Ok(None);
        }
        if let Some(unknown) = options
            .keys()
            .find(|key| !KNOWN_KEYS.contains(&key.as_str()))
        {
            return Err(OptionsError::Unknown(unknown.clone()));
        }
        if options.contains_key("size") {
            return Err(OptionsError::NoQuota);
        }
        for (key, required) in REQUIRED_WITH {
            if !options.contains_key(key) {
                continue;
            }
            if let Some(missing) = required.iter().find(|other| !options.contains_key(**other)) {
                return Err(OptionsError::Missing((*missing).to_owned()));
            }
        }
        let value = |key: &str| options.get(key).cloned().unwrap_or_default();
        Ok(Some(Self {
            mount_type: value("type"),
            device: value("device"),
            options: value("o"),
        }))
    }

    /// Whether a container's start mounts something (moby `needsMount`).
    pub fn needs_mount(&self) -> bool {
        !self.device.is_empty() || !self.mount_type.is_empty()
    }

    /// The mount(2) call these options make: `o` split into flags and file
    /// system data as mount(8) (moby `mount.ParseOptions`), an nfs or cifs
    /// `addr=` host name resolved first (the kernel takes addresses only).
    pub fn plan(
        &self,
        resolve: &dyn Fn(&str) -> std::io::Result<IpAddr>,
    ) -> Result<MountPlan, PlanError> {
        if self.device.is_empty() {
            return Err(PlanError::NoDevice);
        }
        let mut options = self.options.clone();
        if matches!(self.mount_type.as_str(), "nfs" | "cifs") {
            if let Some(host) = address_option(&self.options) {
                if host.parse::<Ipv4Addr>().is_err() {
                    let address = resolve(host).map_err(|source| PlanError::Resolve {
                        lookup: LookupFailure {
                            host: host.to_owned(),
                            source,
                        },
                    })?;
                    options =
                        options.replacen(&format!("addr={host}"), &format!("addr={address}"), 1);
                }
            }
        }
        let (flags, propagation, data) = parse_mount_options(&options);
        Ok(MountPlan {
            device: self.device.clone(),
            mount_type: self.mount_type.clone(),
            flags,
            propagation,
            data,
            password: password_option(&self.options).map(str::to_owned),
        })
    }
}

/// A host name as the system resolver sees it (`getaddrinfo`), first
/// address; moby resolves with Go's `net.ResolveIPAddr("ip", …)`.
pub fn resolve_host(host: &str) -> std::io::Result<IpAddr> {
    (host, 0)
        .to_socket_addrs()?
        .next()
        .map(|address| address.ip())
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such host"))
}

/// Why the options cannot be mounted (before mount(2) is tried).
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("missing device in volume options")]
    NoDevice,
    #[error("error resolving passed in network volume address")]
    Resolve {
        #[source]
        lookup: LookupFailure,
    },
}

#[derive(Debug, thiserror::Error)]
#[error("lookup {host}")]
pub struct LookupFailure {
    host: String,
    #[source]
    source: std::io::Error,
}

/// One volume's mount(2): the first call with `flags` and `data`, then a
/// read-only remount for `bind,ro` and the propagation change, as moby's
/// `mount.Mount`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountPlan {
    pub device: String,
    pub mount_type: String,
    pub flags: MsFlags,
    pub propagation: MsFlags,
    pub data: String,
    /// Masked in error messages, as Docker masks it.
    pub password: Option<String>,
}

fn option_value<'a>(options: &'a str, key: &str) -> Option<&'a str> {
    options
        .split(',')
        .find_map(|option| option.strip_prefix(key)?.strip_prefix('='))
}

fn address_option(options: &str) -> Option<&str> {
    option_value(options, "addr").filter(|host| !host.is_empty())
}

fn password_option(options: &str) -> Option<&str> {
    option_value(options, "password").filter(|password| !password.is_empty())
}

/// mount(8)'s flag words: (word, clears the flag, flag).
const FLAG_WORDS: [(&str, bool, MsFlags); 27] = [
    ("defaults", false, MsFlags::empty()),
    ("ro", false, MsFlags::MS_RDONLY),
    ("rw", true, MsFlags::MS_RDONLY),
    ("suid", true, MsFlags::MS_NOSUID),
    ("nosuid", false, MsFlags::MS_NOSUID),
    ("dev", true, MsFlags::MS_NODEV),
    ("nodev", false, MsFlags::MS_NODEV),
    ("exec", true, MsFlags::MS_NOEXEC),
    ("noexec", false, MsFlags::MS_NOEXEC),
    ("sync", false, MsFlags::MS_SYNCHRONOUS),
    ("async", true, MsFlags::MS_SYNCHRONOUS),
    ("dirsync", false, MsFlags::MS_DIRSYNC),
    ("remount", false, MsFlags::MS_REMOUNT),
    ("mand", false, MsFlags::MS_MANDLOCK),
    ("nomand", true, MsFlags::MS_MANDLOCK),
    ("atime", true, MsFlags::MS_NOATIME),
    ("noatime", false, MsFlags::MS_NOATIME),
    ("diratime", true, MsFlags::MS_NODIRATIME),
    ("nodiratime", false, MsFlags::MS_NODIRATIME),
    ("bind", false, MsFlags::MS_BIND),
    ("rbind", false, MsFlags::MS_BIND.union(MsFlags::MS_REC)),
    ("relatime", false, MsFlags::MS_RELATIME),
    ("norelatime", true, MsFlags::MS_RELATIME),
    ("strictatime", false, MsFlags::MS_STRICTATIME),
    ("nostrictatime", true, MsFlags::MS_STRICTATIME),
    ("silent", false, MsFlags::MS_SILENT),
    ("loud", true, MsFlags::MS_SILENT),
];

/// The propagation words, applied by a second mount(2) after the mount.
const PROPAGATION_WORDS: [(&str, MsFlags); 8] = [
    ("private", MsFlags::MS_PRIVATE),
    ("rprivate", MsFlags::MS_PRIVATE.union(MsFlags::MS_REC)),
    ("shared", MsFlags::MS_SHARED),
    ("rshared", MsFlags::MS_SHARED.union(MsFlags::MS_REC)),
    ("slave", MsFlags::MS_SLAVE),
    ("rslave", MsFlags::MS_SLAVE.union(MsFlags::MS_REC)),
    ("unbindable", MsFlags::MS_UNBINDABLE),
    ("runbindable", MsFlags::MS_UNBINDABLE.union(MsFlags::MS_REC)),
];

/// `o` as (flags, propagation, data): flag words become bits, every other
/// option goes to the file system as data, in order.
fn parse_mount_options(options: &str) -> (MsFlags, MsFlags, String) {
    let mut flags = MsFlags::empty();
    let mut propagation = MsFlags::empty();
    let mut data = Vec::new();
    for option in options.split(',').filter(|option| !option.is_empty()) {
        if let Some((_, clear, flag)) = FLAG_WORDS.iter().find(|(word, ..)| *word == option) {
            if *clear {
                flags.remove(*flag);
            } else {
                flags.insert(*flag);
            }
        } else if let Some((_, flag)) = PROPAGATION_WORDS.iter().find(|(word, _)| *word == option) {
            propagation.insert(*flag);
        } else {
            data.push(option);
        }
    }
    (flags, propagation, data.join(","))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect()
    }

    #[test]
    fn options_are_checked_as_dockers_local_driver_checks_them() {
        assert_eq!(LocalOptions::from_map(&map(&[])), Ok(None));
        let refused =
            |pairs: &[(&str, &str)]| LocalOptions::from_map(&map(pairs)).unwrap_err().to_string();
        assert_eq!(refused(&[("foo", "bar")]), "invalid option: \"foo\"");
        assert_eq!(
            refused(&[("type", "none")]),
            "missing required option: \"device\""
        );
        assert_eq!(
            refused(&[("device", "/tmp")]),
            "missing required option: \"type\""
        );
        assert_eq!(
            refused(&[("o", "bind")]),
            "missing required option: \"device\""
        );
        assert_eq!(
            refused(&[("size", "10m")]),
            "quota size requested but no quota support"
        );
        // Present is enough, as in moby (an empty type is mount(2)'s NULL).
        let bind =
            LocalOptions::from_map(&map(&[("type", "none"), ("o", "bind"), ("device", "/d")]))
                .unwrap()
                .unwrap();
        assert_eq!(
            (
                bind.mount_type.as_str(),
                bind.device.as_str(),
                bind.options.as_str()
            ),
            ("none", "/d", "bind")
        );
        assert!(bind.needs_mount());
    }

    #[test]
    fn o_splits_into_flags_propagation_and_data_as_mount8() {
        let (flags, propagation, data) =
            parse_mount_options("bind,ro,nosuid,size=10m,uid=1000,rshared,rw,mode=0755");
        assert_eq!(flags, MsFlags::MS_BIND | MsFlags::MS_NOSUID);
        assert_eq!(propagation, MsFlags::MS_SHARED | MsFlags::MS_REC);
        assert_eq!(data, "size=10m,uid=1000,mode=0755");
        assert_eq!(
            parse_mount_options(""),
            (MsFlags::empty(), MsFlags::empty(), String::new())
        );
    }

    fn options(mount_type: &str, device: &str, o: &str) -> LocalOptions {
        LocalOptions {
            mount_type: mount_type.to_owned(),
            device: device.to_owned(),
            options: o.to_owned(),
        }
    }

    #[test]
    fn an_nfs_address_is_resolved_before_the_mount_and_an_ipv4_one_is_kept() {
        let resolve = |host: &str| -> std::io::Result<IpAddr> {
            match host {
                "files.test" => Ok(IpAddr::from([10, 0, 0, 7])),
                _ => Err(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no such host",
                )),
            }
        };
        let plan = options("nfs", ":/export", "addr=files.test,rw,nfsvers=4")
            .plan(&resolve)
            .unwrap();
        assert_eq!(plan.data, "addr=10.0.0.7,nfsvers=4");
        let plan = options("nfs4", ":/export", "addr=files.test")
            .plan(&resolve)
            .unwrap();
        assert_eq!(
            plan.data, "addr=files.test",
            "only nfs and cifs are resolved"
        );
        let plan = options("cifs", "//10.1.1.1/s", "addr=10.1.1.1,password=secret")
            .plan(&resolve)
            .unwrap();
        assert_eq!(plan.data, "addr=10.1.1.1,password=secret");
        assert_eq!(plan.password.as_deref(), Some("secret"));
        let error = options("nfs", ":/export", "addr=nowhere.invalid")
            .plan(&resolve)
            .unwrap_err();
        assert_eq!(
            crate::ErrorChain(&error).to_string(),
            "error resolving passed in network volume address: lookup nowhere.invalid: no such host"
        );
        let error = options("tmpfs", "", "size=1m").plan(&resolve).unwrap_err();
        assert_eq!(error.to_string(), "missing device in volume options");
    }

    #[test]
    fn the_system_resolver_answers_for_localhost() {
        assert!(resolve_host("localhost").unwrap().is_loopback());
        assert!(resolve_host("berth-no-such-host.invalid").is_err());
    }
}
