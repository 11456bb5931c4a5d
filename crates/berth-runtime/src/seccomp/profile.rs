//! Docker's seccomp profile JSON format (moby `profiles/seccomp`), used both for berth's
//! default profile and for `--security-opt seccomp=FILE`.

use std::sync::OnceLock;

use serde::{Deserialize, Deserializer, Serialize};

use super::arch::KernelVersion;
use super::SeccompError;

/// Our default profile: the same policy as Docker's default, grouped by purpose with a
/// comment per group saying why it is allowed or gated.
pub(super) const DEFAULT_PROFILE_JSON: &str = include_str!("default.json");

/// A seccomp profile in Docker's format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    /// Action for every syscall no rule matches. Absent (with no syscalls) means
    /// "unconfined", as in Docker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_action: Option<Action>,
    /// errno for a default action of `SCMP_ACT_ERRNO` (EPERM when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_errno_ret: Option<u32>,
    /// Flat list of architectures (the older format); exclusive with `archMap`.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub architectures: Vec<String>,
    /// Native architecture → the sub-architectures its filter also covers.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub arch_map: Vec<ArchMapEntry>,
    /// seccomp(2) filter flags; none means berth's default, SPEC_ALLOW.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub flags: Vec<FilterFlag>,
    /// Unix socket for `SCMP_ACT_NOTIFY` (not supported by berth yet; kept to round-trip).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listener_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listener_metadata: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub syscalls: Vec<SyscallRule>,
}

/// One `archMap` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArchMapEntry {
    pub architecture: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub sub_architectures: Vec<String>,
}

/// A rule: an action for some syscalls, optionally only for some arguments, only on some
/// hosts, or only for containers with (or without) some capabilities.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyscallRule {
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub names: Vec<String>,
    /// Deprecated single-name form, still accepted by Docker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub action: Action,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errno_ret: Option<u32>,
    /// All must hold (unless an index repeats: see `resolve`).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub args: Vec<ArgCondition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub includes: Option<RuleFilter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excludes: Option<RuleFilter>,
}

/// `includes`/`excludes`: a rule applies only when every `includes` test passes and no
/// `excludes` test does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleFilter {
    /// includes: all must be held; excludes: any held excludes.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub caps: Vec<String>,
    /// Docker's native arch names ("amd64", "arm64", "x32", …), matched to the host.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub arches: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_kernel: Option<KernelVersion>,
}

/// A comparison of one 64-bit syscall argument, as libseccomp does it (unsigned).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArgCondition {
    pub index: u32,
    pub value: u64,
    /// Only for `SCMP_CMP_MASKED_EQ`: `(arg & value) == valueTwo`.
    #[serde(default)]
    pub value_two: u64,
    pub op: CompareOp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CompareOp {
    #[serde(rename = "SCMP_CMP_NE")]
    NotEqual,
    #[serde(rename = "SCMP_CMP_LT")]
    Less,
    #[serde(rename = "SCMP_CMP_LE")]
    LessOrEqual,
    #[serde(rename = "SCMP_CMP_EQ")]
    Equal,
    #[serde(rename = "SCMP_CMP_GE")]
    GreaterOrEqual,
    #[serde(rename = "SCMP_CMP_GT")]
    Greater,
    #[serde(rename = "SCMP_CMP_MASKED_EQ")]
    MaskedEqual,
}

/// What the kernel does with a matching syscall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Action {
    #[serde(rename = "SCMP_ACT_ALLOW")]
    Allow,
    /// Fail with `errnoRet` (EPERM when absent).
    #[serde(rename = "SCMP_ACT_ERRNO")]
    Errno,
    /// libseccomp's KILL is KILL_THREAD.
    #[serde(rename = "SCMP_ACT_KILL")]
    Kill,
    #[serde(rename = "SCMP_ACT_KILL_THREAD")]
    KillThread,
    #[serde(rename = "SCMP_ACT_KILL_PROCESS")]
    KillProcess,
    #[serde(rename = "SCMP_ACT_TRAP")]
    Trap,
    /// Notify a ptrace tracer with `errnoRet` as the message (EPERM when absent, as runc).
    #[serde(rename = "SCMP_ACT_TRACE")]
    Trace,
    #[serde(rename = "SCMP_ACT_LOG")]
    Log,
    /// Hand the syscall to a user-space supervisor; berth has none yet, so compiling a
    /// profile that uses it fails.
    #[serde(rename = "SCMP_ACT_NOTIFY")]
    Notify,
}

/// `flags` of a profile, passed to seccomp(2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FilterFlag {
    #[serde(rename = "SECCOMP_FILTER_FLAG_TSYNC")]
    Tsync,
    #[serde(rename = "SECCOMP_FILTER_FLAG_LOG")]
    Log,
    #[serde(rename = "SECCOMP_FILTER_FLAG_SPEC_ALLOW")]
    SpecAllow,
    #[serde(rename = "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV")]
    WaitKillableRecv,
}

impl FilterFlag {
    pub fn bits(self) -> u32 {
        let bits = match self {
            FilterFlag::Tsync => libc::SECCOMP_FILTER_FLAG_TSYNC,
            FilterFlag::Log => libc::SECCOMP_FILTER_FLAG_LOG,
            FilterFlag::SpecAllow => libc::SECCOMP_FILTER_FLAG_SPEC_ALLOW,
            FilterFlag::WaitKillableRecv => libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
        };
        // The flags are single low bits (1 << 0..=5); they always fit.
        bits as u32
    }
}

impl Profile {
    /// berth's default profile (our data file, Docker's effective policy), parsed once
    /// per process.
    pub fn docker_default() -> Profile {
        static DEFAULT: OnceLock<Profile> = OnceLock::new();
        DEFAULT
            .get_or_init(|| {
                Profile::from_json(DEFAULT_PROFILE_JSON.as_bytes())
                    .expect("the embedded default profile is valid: a unit test parses it")
            })
            .clone()
    }

    /// Parses a profile in Docker's JSON format.
    pub fn from_json(bytes: &[u8]) -> Result<Profile, SeccompError> {
        let profile: Profile = serde_json::from_slice(bytes)
            .map_err(|source| SeccompError::ParseProfile { source })?;
        profile.validate()?;
        Ok(profile)
    }

    /// Docker treats a profile with no default action and no rules as "no filter".
    pub fn is_unconfined(&self) -> bool {
        self.default_action.is_none() && self.syscalls.is_empty()
    }

    /// The checks Docker and runc make before building a filter, done at parse time so a
    /// bad `--security-opt seccomp=FILE` fails before anything runs.
    fn validate(&self) -> Result<(), SeccompError> {
        if !self.architectures.is_empty() && !self.arch_map.is_empty() {
            return Err(SeccompError::InvalidProfile {
                reason: "both 'architectures' and 'archMap' are set; use one".to_owned(),
            });
        }
        if self.default_action.is_none() && !self.syscalls.is_empty() {
            return Err(SeccompError::InvalidProfile {
                reason: "'syscalls' are set but 'defaultAction' is missing".to_owned(),
            });
        }
        for (position, rule) in self.syscalls.iter().enumerate() {
            rule.validate()
                .map_err(|reason| SeccompError::InvalidProfile {
                    reason: format!("syscalls[{position}]: {reason}"),
                })?;
        }
        Ok(())
    }
}

impl SyscallRule {
    /// The names this rule covers, whichever of `names`/`name` it used.
    pub fn all_names(&self) -> impl Iterator<Item = &str> {
        self.names
            .iter()
            .map(String::as_str)
            .chain(self.name.as_deref())
    }

    fn validate(&self) -> Result<(), String> {
        if self.name.is_some() && !self.names.is_empty() {
            return Err("both 'name' and 'names' are set; use one".to_owned());
        }
        if self.errno_ret.is_some() && !matches!(self.action, Action::Errno | Action::Trace) {
            return Err("'errnoRet' is only valid with SCMP_ACT_ERRNO and SCMP_ACT_TRACE".into());
        }
        for condition in &self.args {
            // seccomp_data carries six arguments.
            if condition.index > 5 {
                return Err(format!("argument index {} is above 5", condition.index));
            }
        }
        Ok(())
    }
}

/// Docker's files write `null` for empty lists (e.g. `"subArchitectures": null`).
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A profile that uses every field of Docker's format.
    const EVERY_FIELD: &str = r#"{
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": 38,
        "archMap": [
            {"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"]},
            {"architecture": "SCMP_ARCH_RISCV64", "subArchitectures": null}
        ],
        "flags": ["SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_SPEC_ALLOW"],
        "listenerPath": "/run/notify.sock",
        "listenerMetadata": "meta",
        "syscalls": [
            {"names": ["read", "write"], "action": "SCMP_ACT_ALLOW", "args": null,
             "comment": "io", "includes": {}, "excludes": {}},
            {"name": "personality", "action": "SCMP_ACT_ALLOW",
             "args": [{"index": 0, "value": 8, "valueTwo": 0, "op": "SCMP_CMP_EQ"}]},
            {"names": ["clone"], "action": "SCMP_ACT_ALLOW",
             "args": [{"index": 0, "value": 2114060288, "op": "SCMP_CMP_MASKED_EQ"}],
             "excludes": {"caps": ["CAP_SYS_ADMIN"], "arches": ["s390", "s390x"]}},
            {"names": ["ptrace"], "action": "SCMP_ACT_ALLOW",
             "includes": {"caps": ["CAP_SYS_PTRACE"], "arches": ["amd64"], "minKernel": "4.8"}},
            {"names": ["getpid"], "action": "SCMP_ACT_TRACE", "errnoRet": 7},
            {"names": ["kill"], "action": "SCMP_ACT_KILL_PROCESS"},
            {"names": ["a", "b", "c", "d", "e", "f"], "action": "SCMP_ACT_LOG",
             "args": [
                {"index": 1, "value": 1, "op": "SCMP_CMP_NE"},
                {"index": 2, "value": 2, "op": "SCMP_CMP_LT"},
                {"index": 3, "value": 3, "op": "SCMP_CMP_LE"},
                {"index": 4, "value": 4, "op": "SCMP_CMP_GE"},
                {"index": 5, "value": 5, "op": "SCMP_CMP_GT"}
             ]}
        ]
    }"#;

    #[test]
    fn parses_every_field_of_dockers_format() {
        let profile = Profile::from_json(EVERY_FIELD.as_bytes()).unwrap();
        assert_eq!(profile.default_action, Some(Action::Errno));
        assert_eq!(profile.default_errno_ret, Some(38));
        assert_eq!(profile.arch_map.len(), 2);
        assert_eq!(
            profile.arch_map[0].sub_architectures,
            ["SCMP_ARCH_X86", "SCMP_ARCH_X32"]
        );
        assert!(profile.arch_map[1].sub_architectures.is_empty());
        assert_eq!(profile.flags, [FilterFlag::Log, FilterFlag::SpecAllow]);
        assert_eq!(profile.listener_path.as_deref(), Some("/run/notify.sock"));
        assert_eq!(profile.listener_metadata.as_deref(), Some("meta"));
        let rules = &profile.syscalls;
        assert_eq!(rules.len(), 7);
        assert!(rules[0].args.is_empty());
        assert_eq!(rules[0].comment.as_deref(), Some("io"));
        assert_eq!(rules[0].includes, Some(RuleFilter::default()));
        assert_eq!(rules[1].all_names().collect::<Vec<_>>(), ["personality"]);
        assert_eq!(rules[2].args[0].op, CompareOp::MaskedEqual);
        assert_eq!(rules[2].args[0].value_two, 0);
        let excludes = rules[2].excludes.as_ref().unwrap();
        assert_eq!(excludes.caps, ["CAP_SYS_ADMIN"]);
        assert_eq!(excludes.arches, ["s390", "s390x"]);
        let includes = rules[3].includes.as_ref().unwrap();
        assert_eq!(includes.min_kernel, Some(KernelVersion::new(4, 8)));
        assert_eq!(rules[4].action, Action::Trace);
        assert_eq!(rules[4].errno_ret, Some(7));
        assert_eq!(rules[5].action, Action::KillProcess);
        let ops: Vec<CompareOp> = rules[6].args.iter().map(|arg| arg.op).collect();
        assert_eq!(
            ops,
            [
                CompareOp::NotEqual,
                CompareOp::Less,
                CompareOp::LessOrEqual,
                CompareOp::GreaterOrEqual,
                CompareOp::Greater
            ]
        );
    }

    #[test]
    fn serialization_round_trips() {
        let profile = Profile::from_json(EVERY_FIELD.as_bytes()).unwrap();
        let bytes = serde_json::to_vec(&profile).unwrap();
        assert_eq!(Profile::from_json(&bytes).unwrap(), profile);
    }

    #[test]
    fn rejects_what_docker_rejects() {
        for (json, needle) in [
            (
                r#"{"defaultAction":"SCMP_ACT_ERRNO","architectures":["SCMP_ARCH_X86_64"],
                   "archMap":[{"architecture":"SCMP_ARCH_X86_64"}]}"#,
                "archMap",
            ),
            (
                r#"{"defaultAction":"SCMP_ACT_ERRNO",
                    "syscalls":[{"name":"read","names":["write"],"action":"SCMP_ACT_ALLOW"}]}"#,
                "'name' and 'names'",
            ),
            (
                r#"{"defaultAction":"SCMP_ACT_ERRNO",
                    "syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW","errnoRet":1}]}"#,
                "errnoRet",
            ),
            (
                r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read"],
                    "action":"SCMP_ACT_ALLOW","args":[{"index":6,"value":0,"op":"SCMP_CMP_EQ"}]}]}"#,
                "index 6",
            ),
            (
                r#"{"syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW"}]}"#,
                "defaultAction",
            ),
        ] {
            let error = Profile::from_json(json.as_bytes()).unwrap_err().to_string();
            assert!(error.contains(needle), "{error} should mention {needle}");
        }
        let error = Profile::from_json(br#"{"defaultAction":"SCMP_ACT_NOPE"}"#).unwrap_err();
        assert!(matches!(error, SeccompError::ParseProfile { .. }));
        assert!(Profile::from_json(br#"{"flags":["SECCOMP_FILTER_FLAG_NOPE"]}"#).is_err());
    }

    #[test]
    fn empty_profile_is_unconfined() {
        assert!(Profile::from_json(b"{}").unwrap().is_unconfined());
        assert!(!Profile::docker_default().is_unconfined());
    }
}
