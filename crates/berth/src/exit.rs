//! Exit statuses, as the docker CLI uses them: 0 success, 1 an operation
//! failed, 125 the command line itself was wrong (or `run` failed in the
//! engine), 126/127 for commands a container cannot invoke or find.

pub const FAILURE: i32 = 1;
pub const USAGE: i32 = 125;

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
        _ => USAGE,
    }
}

pub fn for_error(error: &anyhow::Error) -> i32 {
    match error.downcast_ref::<StatusError>() {
        Some(status) => status.status,
        None => FAILURE,
    }
}
