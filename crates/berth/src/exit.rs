//! Exit statuses, as the docker CLI uses them: 0 success, 1 an operation
//! failed, 125 the command line itself was wrong (or `run` failed in the
//! engine), 126/127 for commands a container cannot invoke or find.

use berth_engine::{EngineError, ErrorKind};

pub const FAILURE: i32 = 1;
pub const USAGE: i32 = 125;
/// The container's command exists but cannot be run.
pub const CANNOT_INVOKE: i32 = 126;
/// The container's command was not found.
pub const COMMAND_NOT_FOUND: i32 = 127;

/// The one map from an engine error to the docker CLI's exit status: 126
/// and 127 for a command the container cannot invoke or find, else
/// `otherwise` (125 for `run`, where the engine failed; 1 for `exec`).
pub fn for_engine_error(error: &EngineError, otherwise: i32) -> i32 {
    if let EngineError::StartFailed(failure) = error {
        // dockerd's 128 (`exitUnknown`, a volume that could not be
        // mounted): the status is what the docker CLI reads off the message.
        if otherwise == USAGE && failure.status == 128 {
            return run_status_of_message(&failure.message);
        }
    }
    match error.kind() {
        ErrorKind::CannotInvoke => CANNOT_INVOKE,
        ErrorKind::CommandNotFound => COMMAND_NOT_FOUND,
        ErrorKind::NotFound
        | ErrorKind::Conflict
        | ErrorKind::InvalidArgument
        | ErrorKind::NotRunning
        | ErrorKind::Forbidden
        | ErrorKind::Unauthorized
        | ErrorKind::Unsupported
        | ErrorKind::Unavailable
        | ErrorKind::Internal => otherwise,
    }
}

/// `run`'s status for a start that failed in the engine, read off its
/// message as the docker CLI reads it (docker/cli `toStatusError`): a start
/// whose volume's device is missing is 127, one refused access 126.
fn run_status_of_message(message: &str) -> i32 {
    if message.contains("executable file not found")
        || message.contains("no such file or directory")
    {
        COMMAND_NOT_FOUND
    } else if message.contains("permission denied") || message.contains("is a directory") {
        CANNOT_INVOKE
    } else {
        USAGE
    }
}

/// An engine error as a [`StatusError`]: its exit status from
/// [`for_engine_error`], its whole chain as the message.
pub fn engine_status_error(error: &EngineError, otherwise: i32) -> StatusError {
    StatusError {
        status: for_engine_error(error, otherwise),
        message: berth_engine::ErrorChain(error).to_string(),
    }
}

/// An error that carries its own exit status (e.g. a silent failure whose
/// messages were already printed).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct StatusError {
    pub status: i32,
    pub message: String,
}

pub fn for_clap_error(error: &clap::Error) -> i32 {
    use clap::error::ErrorKind;
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => 0,
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => 0,
        // The docker CLI: an unknown command or a missing argument is a failed command (1),
        // a bad flag a bad command line (125).
        ErrorKind::InvalidSubcommand | ErrorKind::MissingRequiredArgument => FAILURE,
        _ => USAGE,
    }
}

/// The docker CLI's words for the command-line errors people meet most, or None to let clap
/// say it: `docker: 'x' is not a docker command.` and `unknown flag: --x` (docker/cli
/// `cli/cobra.go`, `FlagErrorFunc`).
pub fn docker_words_for_clap_error(error: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let text = |kind| match error.get(kind) {
        Some(ContextValue::String(value)) => Some(value.clone()),
        _ => None,
    };
    match error.kind() {
        ErrorKind::InvalidSubcommand => {
            let name = text(ContextKind::InvalidSubcommand)?;
            Some(format!(
                "berth: '{name}' is not a berth command.\nSee 'berth --help'"
            ))
        }
        ErrorKind::UnknownArgument => {
            let flag = text(ContextKind::InvalidArg)?;
            if !flag.starts_with('-') {
                return None;
            }
            let flag = flag.split('=').next().unwrap_or(&flag).to_owned();
            let command = match error.get(ContextKind::Usage) {
                Some(ContextValue::StyledStr(usage)) => command_path(&usage.to_string()),
                _ => "berth".to_owned(),
            };
            Some(format!("unknown flag: {flag}\nSee '{command} --help'."))
        }
        _ => None,
    }
}

/// `berth image ls` from clap's `Usage: berth image ls [OPTIONS] …`.
fn command_path(usage: &str) -> String {
    let words: Vec<&str> = usage
        .trim_start()
        .trim_start_matches("Usage:")
        .split_whitespace()
        .take_while(|word| {
            !word.starts_with(['[', '<', '-']) && !word.chars().any(|c| c.is_ascii_uppercase())
        })
        .collect();
    if words.is_empty() {
        "berth".to_owned()
    } else {
        words.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_errors_exit_as_the_docker_cli_exits() {
        let failed = |status| {
            EngineError::StartFailed(berth_engine::containers::StartFailure {
                message: "exec: \"nope\": executable file not found in $PATH".to_owned(),
                status,
            })
        };
        assert_eq!(for_engine_error(&failed(127), USAGE), 127);
        assert_eq!(for_engine_error(&failed(126), FAILURE), 126);
        assert_eq!(for_engine_error(&failed(125), USAGE), 125);
        let mount_failed = |errno: &str| {
            EngineError::StartFailed(berth_engine::containers::StartFailure {
                message: format!("error while mounting volume '/v/_data': failed to mount local volume: mount /x:/v/_data, flags: 0x1000: {errno}"),
                status: 128,
            })
        };
        assert_eq!(
            for_engine_error(&mount_failed("no such file or directory"), USAGE),
            127
        );
        assert_eq!(
            for_engine_error(&mount_failed("permission denied"), USAGE),
            126
        );
        assert_eq!(
            for_engine_error(&mount_failed("invalid argument"), USAGE),
            125
        );
        assert_eq!(
            for_engine_error(&mount_failed("no such file or directory"), FAILURE),
            1
        );
        let missing = EngineError::NoSuchImage("x".to_owned());
        assert_eq!(for_engine_error(&missing, USAGE), 125);
        assert_eq!(for_engine_error(&missing, FAILURE), 1);
        let error = engine_status_error(
            &EngineError::RemoveFiles {
                id: "abc".to_owned(),
                source: std::io::Error::from_raw_os_error(libc::EBUSY),
            },
            USAGE,
        );
        assert_eq!(error.status, 125);
        assert_eq!(
            error.message,
            "failed to remove the files of container abc: Device or resource busy (os error 16)"
        );
    }

    #[test]
    fn the_command_path_comes_from_the_usage_line() {
        assert_eq!(command_path("Usage: berth ps [OPTIONS]"), "berth ps");
        assert_eq!(
            command_path("Usage: berth image ls [OPTIONS] [REPOSITORY]"),
            "berth image ls"
        );
        assert_eq!(command_path("Usage: berth [OPTIONS] <COMMAND>"), "berth");
        assert_eq!(command_path(""), "berth");
    }
}

/// An error the docker CLI prints as it is, with no `Error: ` before it (its own checks of
/// the command line's context, such as `the input device is not a TTY`).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct PlainError {
    pub status: i32,
    pub message: String,
}

pub fn for_error(error: &anyhow::Error) -> i32 {
    if let Some(plain) = error.downcast_ref::<PlainError>() {
        return plain.status;
    }
    match error.downcast_ref::<StatusError>() {
        Some(status) => status.status,
        None => FAILURE,
    }
}

/// How `main` prints an error that ends the command.
pub fn message_for_error(error: &anyhow::Error) -> String {
    if let Some(plain) = error.downcast_ref::<PlainError>() {
        return plain.message.clone();
    }
    // The docker CLI prints a `--format` template's error as it is too.
    if let Some(template) = error
        .chain()
        .find_map(|cause| cause.downcast_ref::<crate::format::template::TemplateError>())
    {
        return template.to_string();
    }
    format!("Error: {error:#}")
}
