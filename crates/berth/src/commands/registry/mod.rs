//! `berth login` and `berth logout`: the credentials in Docker's client
//! configuration (`$DOCKER_CONFIG/config.json`, else `~/.docker`), shared
//! with the docker CLI.

pub mod login;
pub mod logout;

use clap::Args;

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// Username
    #[arg(short, long)]
    pub username: Option<String>,
    /// Password
    #[arg(short, long)]
    pub password: Option<String>,
    /// Take the password from stdin
    #[arg(long)]
    pub password_stdin: bool,
    /// SERVER (Docker Hub when omitted)
    pub server: Option<String>,
}

#[derive(Debug, Args)]
pub struct LogoutArgs {
    /// SERVER (Docker Hub when omitted)
    pub server: Option<String>,
}
