//! `berth logout [SERVER]`: docker/cli 20.10's `runLogout`. It always
//! says it removes the credentials and succeeds; only when every form of
//! the server's key failed to erase does it warn.

use berth_registry::credentials::{
    hostname, server_key, CredentialsError, DockerConfig, INDEX_SERVER,
};

use super::LogoutArgs;

pub fn run(args: &LogoutArgs) -> anyhow::Result<i32> {
    let server = args
        .server
        .as_deref()
        .filter(|server| !server.is_empty())
        .unwrap_or(INDEX_SERVER);
    // Docker names the server as typed, less any scheme and path; Docker
    // Hub by its index URL only when no server was given.
    let shown = if args
        .server
        .as_deref()
        .is_some_and(|server| !server.is_empty())
    {
        hostname(server)
    } else {
        INDEX_SERVER
    };
    let docker = DockerConfig::from_env()?;
    println!("Removing login credentials for {shown}");
    match docker.erase_credentials(server) {
        Ok(removed) => {
            tracing::debug!(server = %server_key(server), removed, "logged out");
        }
        Err(CredentialsError::Erase { failures }) => {
            eprintln!("WARNING: could not erase credentials:");
            for (key, error) in failures {
                eprintln!("{key}: {error}");
            }
        }
        Err(error) => return Err(error.into()),
    }
    Ok(0)
}
