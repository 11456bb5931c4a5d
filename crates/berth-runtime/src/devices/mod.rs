//! Which devices a container may use, as data: the rule type, Docker's
//! `--device-cgroup-rule` syntax, Docker's default list, and the device nodes
//! `--device` and `--privileged` put in the container's /dev.
//!
//! A rule list reads like OCI's `linux.resources.devices`: the last rule that
//! matches a request decides, and a request no rule matches is refused. An
//! allow rule matches when it covers every access asked for (the kernel's v1
//! rule, `Documentation/admin-guide/cgroup-v1/devices.rst`); a deny rule
//! matches when it covers any of them. From one list come the cgroup v1 writes
//! ([`v1_writes`], `devices.deny`/`devices.allow`) and the cgroup v2 BPF
//! program ([`bpf::device_program`]), so both versions enforce the same policy.

pub mod bpf;
mod host;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use host::{devices_from_path, host_devices, DeviceError, DeviceNode};

/// (name, major, minor): the character devices in every Docker container's
/// /dev, all mode 0666 — made by the namespace init and the microVM agent.
pub const DEFAULT_NODES: &[(&str, u64, u64)] = &[
    ("null", 1, 3),
    ("zero", 1, 5),
    ("full", 1, 7),
    ("random", 1, 8),
    ("urandom", 1, 9),
    ("tty", 5, 0),
];

/// (name, target): the symbolic links in every Docker container's /dev.
pub const DEFAULT_LINKS: &[(&str, &str)] = &[
    ("fd", "/proc/self/fd"),
    ("stdin", "/proc/self/fd/0"),
    ("stdout", "/proc/self/fd/1"),
    ("stderr", "/proc/self/fd/2"),
    ("ptmx", "pts/ptmx"),
    ("core", "/proc/kcore"),
];

/// Which kind of device file a rule is about (`a` matches both).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceKind {
    All,
    Block,
    Char,
}

impl DeviceKind {
    fn letter(self) -> char {
        match self {
            DeviceKind::All => 'a',
            DeviceKind::Block => 'b',
            DeviceKind::Char => 'c',
        }
    }

    fn from_letter(letter: &str) -> Option<Self> {
        match letter {
            "a" => Some(DeviceKind::All),
            "b" => Some(DeviceKind::Block),
            "c" => Some(DeviceKind::Char),
            _ => None,
        }
    }
}

/// A set of accesses, with the kernel's bits (v1 `ACC_*`, BPF `BPF_DEVCG_ACC_*`):
/// mknod 1, read 2, write 4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Access(u8);

impl Access {
    pub const MKNOD: Access = Access(1);
    pub const READ: Access = Access(2);
    pub const WRITE: Access = Access(4);
    pub const ALL: Access = Access(7);

    /// Docker's access letters (`r`, `w`, `m`, in any order, repeats allowed as
    /// Docker's `[rwm]{1,3}` allows them); empty or another letter is `None`.
    pub fn parse(letters: &str) -> Option<Self> {
        if letters.is_empty() {
            return None;
        }
        letters.chars().try_fold(Access(0), |access, letter| {
            let bit = match letter {
                'r' => Access::READ,
                'w' => Access::WRITE,
                'm' => Access::MKNOD,
                _ => return None,
            };
            Some(access.union(bit))
        })
    }

    pub fn bits(self) -> u8 {
        self.0
    }

    pub fn union(self, other: Access) -> Access {
        Access(self.0 | other.0)
    }

    /// Whether every access in `other` is in `self`.
    pub fn contains(self, other: Access) -> bool {
        other.0 & !self.0 == 0
    }

    pub fn intersects(self, other: Access) -> bool {
        self.0 & other.0 != 0
    }
}

impl fmt::Display for Access {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (bit, letter) in [
            (Access::READ, 'r'),
            (Access::WRITE, 'w'),
            (Access::MKNOD, 'm'),
        ] {
            if self.contains(bit) {
                write!(formatter, "{letter}")?;
            }
        }
        Ok(())
    }
}

/// One device rule. `None` for a number is `*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DeviceRule {
    pub allow: bool,
    pub kind: DeviceKind,
    pub major: Option<u32>,
    pub minor: Option<u32>,
    pub access: Access,
}

/// One access to a device, as the kernel asks: a block or char device (never
/// [`DeviceKind::All`]), its numbers, and what is done to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceRequest {
    pub kind: DeviceKind,
    pub major: u32,
    pub minor: u32,
    pub access: Access,
}

/// Why a `--device-cgroup-rule` was refused; the daemon's wording.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid device cgroup rule format: '{rule}'")]
pub struct RuleSyntaxError {
    pub rule: String,
}

impl DeviceRule {
    /// An allow rule for one device node (`--device`).
    pub const fn allow(kind: DeviceKind, major: u32, minor: u32, access: Access) -> Self {
        DeviceRule {
            allow: true,
            kind,
            major: Some(major),
            minor: Some(minor),
            access,
        }
    }

    /// `a *:* rwm`, allowed or denied.
    pub const fn everything(allow: bool) -> Self {
        DeviceRule {
            allow,
            kind: DeviceKind::All,
            major: None,
            minor: None,
            access: Access::ALL,
        }
    }

    /// Docker's `--device-cgroup-rule` syntax, `TYPE MAJOR:MINOR ACCESS`: `a`, `b`
    /// or `c`; a number or `*` each; one to three of `rwm` (moby's
    /// `^([acb]) ([0-9]+|\*):([0-9]+|\*) ([rwm]{1,3})$`). The rule allows.
    pub fn parse(text: &str) -> Result<Self, RuleSyntaxError> {
        let invalid = || RuleSyntaxError {
            rule: text.to_owned(),
        };
        let fields: Vec<&str> = text.split(' ').collect();
        let [kind, numbers, access] = fields.as_slice() else {
            return Err(invalid());
        };
        let kind = DeviceKind::from_letter(kind).ok_or_else(invalid)?;
        let (major, minor) = numbers.split_once(':').ok_or_else(invalid)?;
        let number = |text: &str| -> Result<Option<u32>, RuleSyntaxError> {
            if text == "*" {
                return Ok(None);
            }
            if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
                return Err(invalid());
            }
            text.parse().map(Some).map_err(|_| invalid())
        };
        if !(1..=3).contains(&access.len()) {
            return Err(invalid());
        }
        Ok(DeviceRule {
            allow: true,
            kind,
            major: number(major)?,
            minor: number(minor)?,
            access: Access::parse(access).ok_or_else(invalid)?,
        })
    }

    /// Whether the rule is about `request` (see the module comment).
    pub fn matches(&self, request: &DeviceRequest) -> bool {
        let kind = self.kind == DeviceKind::All || self.kind == request.kind;
        let major = self.major.is_none_or(|major| major == request.major);
        let minor = self.minor.is_none_or(|minor| minor == request.minor);
        let access = if self.allow {
            self.access.contains(request.access)
        } else {
            self.access.intersects(request.access)
        };
        kind && major && minor && access
    }

    /// Whether the rule matches every request: nothing before it matters.
    pub fn is_unconditional(&self) -> bool {
        self.kind == DeviceKind::All
            && self.major.is_none()
            && self.minor.is_none()
            && self.access == Access::ALL
    }
}

/// The kernel's v1 syntax, `c 1:3 rwm` (also Docker's).
impl fmt::Display for DeviceRule {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let number = |number: Option<u32>| number.map_or("*".to_owned(), |n| n.to_string());
        write!(
            formatter,
            "{} {}:{} {}",
            self.kind.letter(),
            number(self.major),
            number(self.minor),
            self.access
        )
    }
}

/// Whether `rules` allow `request`: the last matching rule decides; none is a no.
pub fn allows(rules: &[DeviceRule], request: &DeviceRequest) -> bool {
    rules
        .iter()
        .rev()
        .find(|rule| rule.matches(request))
        .is_some_and(|rule| rule.allow)
}

/// Whether `rules` allow every access to every device (`--privileged`).
pub fn allows_everything(rules: &[DeviceRule]) -> bool {
    rules
        .last()
        .is_some_and(|rule| rule.allow && rule.is_unconditional())
}

/// A char device everyone may read, write and mknod.
const fn char_rwm(major: u32, minor: Option<u32>) -> DeviceRule {
    DeviceRule {
        allow: true,
        kind: DeviceKind::Char,
        major: Some(major),
        minor,
        access: Access::ALL,
    }
}

/// Docker's default device rules (Docker 20.10 with runc 1.1, read back from
/// `devices.list` of a default container): everything denied, then moby's
/// `oci/defaults.go` list and runc's `specconv.AllowedDevices` allowed.
/// moby's list also denies `c 10:229` (fuse) before runc's, which allow nothing
/// there, so that deny changes nothing and is left out.
pub const DEFAULT_RULES: [DeviceRule; 13] = [
    DeviceRule::everything(false),
    // mknod of any node is allowed: opening it is what the rules below decide.
    DeviceRule {
        allow: true,
        kind: DeviceKind::Char,
        major: None,
        minor: None,
        access: Access::MKNOD,
    },
    DeviceRule {
        allow: true,
        kind: DeviceKind::Block,
        major: None,
        minor: None,
        access: Access::MKNOD,
    },
    char_rwm(1, Some(3)), // /dev/null
    char_rwm(1, Some(5)), // /dev/zero
    char_rwm(1, Some(7)), // /dev/full
    char_rwm(1, Some(8)), // /dev/random
    char_rwm(1, Some(9)), // /dev/urandom
    char_rwm(5, Some(0)), // /dev/tty
    char_rwm(5, Some(1)), // /dev/console
    char_rwm(5, Some(2)), // /dev/ptmx
    // /dev/net/tun: runc allows it though no node is made (a container may mknod it).
    char_rwm(10, Some(200)),
    char_rwm(136, None), // /dev/pts/*
];

/// Docker's default rules followed by `extra` (what `--device` and
/// `--device-cgroup-rule` add), or allow-everything with `privileged`.
pub fn container_rules(privileged: bool, extra: &[DeviceRule]) -> Vec<DeviceRule> {
    if privileged {
        return vec![DeviceRule::everything(true)];
    }
    DEFAULT_RULES.iter().chain(extra).copied().collect()
}

/// Which cgroup v1 file a line goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum V1File {
    Allow,
    Deny,
}

impl V1File {
    pub fn name(self) -> &'static str {
        match self {
            V1File::Allow => "devices.allow",
            V1File::Deny => "devices.deny",
        }
    }
}

/// The cgroup v1 writes that give a cgroup `rules`, in order.
///
/// First `a` goes to `devices.deny` (or `devices.allow` when the first rule
/// allows everything), which clears what the cgroup had: the start is "nothing
/// allowed" as in the BPF program, whatever the parent allows. When every later
/// rule allows, the order cannot matter, so the rules of one device are merged
/// and written sorted, as runc writes them: `devices.list` then reads exactly as
/// in a Docker container. Otherwise they are written in order. A rule of kind
/// `a` that is not unconditional is written as its `b` and `c` halves, since the
/// kernel reads any `a` line as "everything".
pub fn v1_writes(rules: &[DeviceRule]) -> Vec<(V1File, String)> {
    let (base, rest) = match rules.split_first() {
        Some((first, rest)) if first.is_unconditional() => (first.allow, rest),
        _ => (false, rules),
    };
    let base_file = if base { V1File::Allow } else { V1File::Deny };
    let mut writes = vec![(base_file, "a".to_owned())];
    let mut expanded: Vec<DeviceRule> = Vec::new();
    for rule in rest {
        if rule.is_unconditional() {
            expanded.clear();
            writes = vec![(
                if rule.allow {
                    V1File::Allow
                } else {
                    V1File::Deny
                },
                "a".to_owned(),
            )];
            continue;
        }
        if rule.kind == DeviceKind::All {
            for kind in [DeviceKind::Block, DeviceKind::Char] {
                expanded.push(DeviceRule { kind, ..*rule });
            }
        } else {
            expanded.push(*rule);
        }
    }
    if expanded.iter().all(|rule| rule.allow) {
        let mut merged: Vec<DeviceRule> = Vec::new();
        for rule in expanded {
            match merged.iter_mut().find(|known| {
                (known.kind, known.major, known.minor) == (rule.kind, rule.major, rule.minor)
            }) {
                Some(known) => known.access = known.access.union(rule.access),
                None => merged.push(rule),
            }
        }
        // `*` (None) sorts before any number, as in runc's output.
        merged.sort_by_key(|rule| (rule.kind, rule.major, rule.minor));
        writes.extend(
            merged
                .into_iter()
                .map(|rule| (V1File::Allow, rule.to_string())),
        );
    } else {
        writes.extend(expanded.into_iter().map(|rule| {
            let file = if rule.allow {
                V1File::Allow
            } else {
                V1File::Deny
            };
            (file, rule.to_string())
        }));
    }
    writes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(kind: DeviceKind, major: u32, minor: u32, access: &str) -> DeviceRequest {
        DeviceRequest {
            kind,
            major,
            minor,
            access: Access::parse(access).unwrap(),
        }
    }

    #[test]
    fn parses_docker_rule_syntax() {
        assert_eq!(
            DeviceRule::parse("c 1:3 mr").unwrap(),
            DeviceRule::allow(DeviceKind::Char, 1, 3, Access(3))
        );
        let wildcard = DeviceRule::parse("b *:* rwm").unwrap();
        assert_eq!((wildcard.major, wildcard.minor), (None, None));
        assert_eq!(wildcard.to_string(), "b *:* rwm");
        assert_eq!(DeviceRule::parse("c 1:3 rr").unwrap().access, Access::READ);
        assert_eq!(
            DeviceRule::parse("c 10:200 wrm").unwrap().to_string(),
            "c 10:200 rwm"
        );
        for bad in [
            "c 1:3",
            "x 1:3 r",
            "c 1 r",
            "c -1:3 r",
            "c 1:3 rwmr",
            "c 1:3 q",
            "c  1:3 r",
            "c 1:3 r ",
            "c 99999999999:3 r",
            "",
        ] {
            let error = DeviceRule::parse(bad).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!("invalid device cgroup rule format: '{bad}'")
            );
        }
    }

    #[test]
    fn default_rules_decide_like_docker() {
        let rules = container_rules(false, &[]);
        use DeviceKind::{Block, Char};
        let cases = [
            (request(Char, 1, 3, "rw"), true),
            (request(Char, 1, 9, "r"), true),
            (request(Char, 136, 7, "rw"), true),
            (request(Char, 10, 200, "rw"), true),
            (request(Char, 5, 1, "w"), true),
            // /dev/kmsg, /dev/kvm, /dev/hwrng, /dev/mem: mknod yes, open no.
            (request(Char, 1, 11, "m"), true),
            (request(Char, 1, 11, "w"), false),
            (request(Char, 10, 232, "rw"), false),
            (request(Char, 10, 183, "r"), false),
            (request(Char, 1, 1, "r"), false),
            (request(Char, 10, 229, "rw"), false),
            (request(Block, 8, 0, "m"), true),
            (request(Block, 8, 0, "r"), false),
            (request(Block, 7, 0, "rw"), false),
        ];
        for (request, expected) in cases {
            assert_eq!(allows(&rules, &request), expected, "{request:?}");
        }
        assert!(!allows_everything(&rules));
        let privileged = container_rules(true, &[]);
        assert!(allows_everything(&privileged));
        assert!(allows(&privileged, &request(Block, 8, 0, "rwm")));
    }

    #[test]
    fn extra_rules_add_to_the_defaults() {
        let rules = container_rules(
            false,
            &[
                DeviceRule::allow(DeviceKind::Char, 10, 229, Access::ALL),
                DeviceRule::parse("c 1:11 w").unwrap(),
            ],
        );
        assert!(allows(&rules, &request(DeviceKind::Char, 10, 229, "rw")));
        assert!(allows(&rules, &request(DeviceKind::Char, 1, 11, "w")));
        // The rule covers writes only: a read-write open is refused.
        assert!(!allows(&rules, &request(DeviceKind::Char, 1, 11, "rw")));
    }

    #[test]
    fn v1_writes_match_dockers_devices_list() {
        let lines = |rules: &[DeviceRule]| -> Vec<String> {
            v1_writes(rules)
                .into_iter()
                .map(|(file, line)| format!("{} {line}", file.name()))
                .collect()
        };
        let default = lines(&container_rules(false, &[]));
        assert_eq!(
            default,
            [
                "devices.deny a",
                "devices.allow b *:* m",
                "devices.allow c *:* m",
                "devices.allow c 1:3 rwm",
                "devices.allow c 1:5 rwm",
                "devices.allow c 1:7 rwm",
                "devices.allow c 1:8 rwm",
                "devices.allow c 1:9 rwm",
                "devices.allow c 5:0 rwm",
                "devices.allow c 5:1 rwm",
                "devices.allow c 5:2 rwm",
                "devices.allow c 10:200 rwm",
                "devices.allow c 136:* rwm",
            ]
        );
        // A rule for a device already listed merges into its line.
        let merged = lines(&container_rules(
            false,
            &[
                DeviceRule::parse("c 10:200 rwm").unwrap(),
                DeviceRule::parse("c 10:229 rwm").unwrap(),
                DeviceRule::parse("c 1:3 r").unwrap(),
            ],
        ));
        assert_eq!(merged.len(), default.len() + 1);
        assert_eq!(merged[11], "devices.allow c 10:200 rwm");
        assert_eq!(merged[12], "devices.allow c 10:229 rwm");
        assert_eq!(lines(&container_rules(true, &[])), ["devices.allow a"]);
        // `a` with numbers is its two halves, never "everything".
        let halves = lines(&[
            DeviceRule::everything(false),
            DeviceRule::parse("a 1:3 r").unwrap(),
        ]);
        assert_eq!(
            halves,
            [
                "devices.deny a",
                "devices.allow b 1:3 r",
                "devices.allow c 1:3 r"
            ]
        );
        // With a deny among them, the order is kept.
        let ordered = lines(&[
            DeviceRule::everything(true),
            DeviceRule {
                allow: false,
                ..DeviceRule::allow(DeviceKind::Char, 1, 11, Access::ALL)
            },
            DeviceRule::allow(DeviceKind::Char, 1, 3, Access::ALL),
        ]);
        assert_eq!(
            ordered,
            [
                "devices.allow a",
                "devices.deny c 1:11 rwm",
                "devices.allow c 1:3 rwm"
            ]
        );
    }
}
