//! `linux.seccomp` in the runtime specification's form. Its fields are the ones of Docker's
//! profile format that berth-runtime compiles (`defaultAction`, `defaultErrnoRet`,
//! `architectures`, `flags`, `syscalls[].names/action/errnoRet/args`), so the section is
//! handed to that compiler as is; what berth cannot do is refused first.

use berth_runtime::seccomp::{self, Filter, Profile};

use crate::config::Seccomp;
use crate::error::{OciError, Result};

pub(super) fn compile(config: &Seccomp, capabilities: &[String]) -> Result<Option<Filter>> {
    if config
        .listener_path
        .as_deref()
        .is_some_and(|path| !path.is_empty())
    {
        return Err(OciError::unsupported(
            "linux.seccomp.listenerPath",
            "seccomp user notification (SCMP_ACT_NOTIFY) is not supported by berth",
        ));
    }
    if config.default_action.is_empty() {
        return Err(OciError::invalid(
            "linux.seccomp.defaultAction",
            "must be set",
        ));
    }
    let notify = |action: &str| action == "SCMP_ACT_NOTIFY";
    if notify(&config.default_action) {
        return Err(OciError::unsupported(
            "linux.seccomp.defaultAction",
            "SCMP_ACT_NOTIFY is not supported by berth",
        ));
    }
    for (index, rule) in config.syscalls.iter().enumerate() {
        if notify(&rule.action) {
            return Err(OciError::unsupported(
                format!("linux.seccomp.syscalls[{index}].action"),
                "SCMP_ACT_NOTIFY is not supported by berth",
            ));
        }
        if rule.names.is_empty() {
            return Err(OciError::invalid(
                format!("linux.seccomp.syscalls[{index}].names"),
                "must not be empty",
            ));
        }
    }
    let json = serde_json::to_vec(config).map_err(OciError::Encode)?;
    let profile = Profile::from_json(&json).map_err(OciError::Seccomp)?;
    seccomp::compile(&profile, capabilities)
        .map(Some)
        .map_err(OciError::Seccomp)
}
