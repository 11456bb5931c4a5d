//! `process`: arguments, environment, identity, capabilities (the five sets), rlimits,
//! noNewPrivileges, oomScoreAdj and the container's seccomp filter.

use std::collections::BTreeSet;

use berth_runtime::capabilities::{self, Capability};
use berth_runtime::spec::{rlimit_resource, Rlimit};
use berth_runtime::ProcessSpec;

use crate::config::{Capabilities, Linux, Process};
use crate::error::{OciError, Result};

/// Converts `process` (of `config.json`, or `exec --process`); the filter comes from the
/// container's `linux.seccomp`, as runc applies it to every process of a container.
pub fn convert_process(process: &Process, linux: &Linux) -> Result<ProcessSpec> {
    if process.args.is_empty() {
        return Err(OciError::invalid("process.args", "args must not be empty"));
    }
    if process.command_line.is_some() {
        return Err(OciError::unsupported("process.commandLine", "Windows only"));
    }
    if process.user.username.is_some() {
        return Err(OciError::unsupported(
            "process.user.username",
            "Windows only",
        ));
    }
    if !process.cwd.starts_with('/') {
        return Err(OciError::invalid(
            "process.cwd",
            "cwd must be an absolute path",
        ));
    }
    if let Some(umask) = process.user.umask {
        if umask != 0o022 {
            return Err(OciError::unsupported(
                "process.user.umask",
                format!("{umask:#o}: berth starts container processes with umask 0022"),
            ));
        }
    }
    for (field, value) in [
        (
            "process.apparmorProfile",
            process.apparmor_profile.as_deref(),
        ),
        ("process.selinuxLabel", process.selinux_label.as_deref()),
    ] {
        if value.is_some_and(|value| !value.is_empty()) {
            return Err(OciError::unsupported(field, "not supported by berth"));
        }
    }
    for (field, set) in [
        ("process.scheduler", process.scheduler.is_some()),
        ("process.ioPriority", process.io_priority.is_some()),
    ] {
        if set {
            return Err(OciError::unsupported(field, "not supported by berth"));
        }
    }
    let capabilities = capability_set(process.capabilities.as_ref())?;
    let mut rlimits = Vec::new();
    for (index, limit) in process.rlimits.iter().enumerate() {
        let name = limit
            .kind
            .strip_prefix("RLIMIT_")
            .unwrap_or(&limit.kind)
            .to_ascii_lowercase();
        let resource = rlimit_resource(&name).ok_or_else(|| {
            OciError::invalid(
                format!("process.rlimits[{index}].type"),
                format!("unknown rlimit {:?}", limit.kind),
            )
        })?;
        if limit.soft > limit.hard {
            return Err(OciError::invalid(
                format!("process.rlimits[{index}]"),
                "the soft limit is above the hard limit",
            ));
        }
        rlimits.push(Rlimit {
            resource,
            soft: limit.soft,
            hard: limit.hard,
        });
    }
    let names: Vec<String> = capabilities
        .iter()
        .map(|capability| capabilities::name(*capability).to_owned())
        .collect();
    let seccomp = match &linux.seccomp {
        Some(seccomp) => super::seccomp::compile(seccomp, &names)?,
        None => None,
    };
    Ok(ProcessSpec {
        args: process.args.clone(),
        env: process.env.clone(),
        cwd: process.cwd.clone(),
        uid: process.user.uid,
        gid: process.user.gid,
        additional_gids: process.user.additional_gids.clone(),
        capabilities,
        no_new_privileges: process.no_new_privileges,
        rlimits,
        seccomp,
        tty: process.terminal,
        console_size: process.console_size.map(|size| (size.height, size.width)),
        oom_score_adj: process.oom_score_adj,
    })
}

/// berth-runtime has one set for bounding, effective and permitted, with empty inheritable
/// and ambient sets: bundles whose sets differ are refused (containerd's and Docker's
/// defaults fit; runc's `spec` also fills `ambient`, which berth's `spec` does not).
fn capability_set(capabilities: Option<&Capabilities>) -> Result<BTreeSet<Capability>> {
    let Some(sets) = capabilities else {
        return Ok(BTreeSet::new());
    };
    let parse = |field: &str, names: &[String]| -> Result<BTreeSet<Capability>> {
        names
            .iter()
            .map(|name| {
                capabilities::parse(name).map_err(|error| {
                    OciError::invalid(format!("process.capabilities.{field}"), error.to_string())
                })
            })
            .collect()
    };
    let bounding = parse("bounding", &sets.bounding)?;
    let host = capabilities::host_bounding_set();
    if let Some(missing) = bounding.difference(&host).next() {
        return Err(OciError::invalid(
            "process.capabilities.bounding",
            format!(
                "{} is not in this host's bounding set",
                capabilities::name(*missing)
            ),
        ));
    }
    for (field, names) in [
        ("effective", &sets.effective),
        ("permitted", &sets.permitted),
    ] {
        if parse(field, names)? != bounding {
            return Err(OciError::unsupported(
                format!("process.capabilities.{field}"),
                "berth gives a process one capability set: effective and permitted must equal bounding",
            ));
        }
    }
    for (field, names) in [
        ("inheritable", &sets.inheritable),
        ("ambient", &sets.ambient),
    ] {
        if !parse(field, names)?.is_empty() {
            return Err(OciError::unsupported(
                format!("process.capabilities.{field}"),
                "berth keeps the inheritable and ambient sets empty (runc's choice since CVE-2022-24769)",
            ));
        }
    }
    Ok(bounding)
}
