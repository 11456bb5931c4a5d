//! `berth login [SERVER]`: docker/cli 20.10's `runLogin` — options, then
//! stored credentials if no user was given, else the prompts; the
//! credentials are checked against the registry before anything is stored
//! (`berth_registry::client::login`, the check `berth serve` makes for
//! `POST /auth` too).

use std::io::{BufRead, IsTerminal, Read, Write};
use std::os::fd::AsFd;

use anyhow::Context;
use berth_registry::client::{ClientConfig, LoginRequest, LoginSuccess};
use berth_registry::config::RegistryConfig;
use berth_registry::credentials::{server_key, CredentialStore, DockerConfig, INDEX_SERVER};

use super::LoginArgs;
use crate::exit;

const UNENCRYPTED_WARNING: &str = "WARNING! Your password will be stored unencrypted in {file}.
Configure a credential helper to remove this warning. See
https://docs.docker.com/engine/reference/commandline/login/#credentials-store
";

const DOCKER_HUB_PROMPT: &str = "Login with your Docker ID to push and pull images from Docker Hub. If you don't have a Docker ID, head over to https://hub.docker.com to create one.";

pub fn run(args: &LoginArgs) -> anyhow::Result<i32> {
    let username = args.username.clone().unwrap_or_default();
    let mut password = args.password.clone().unwrap_or_default();
    if !password.is_empty() {
        eprintln!("WARNING! Using --password via the CLI is insecure. Use --password-stdin.");
        if args.password_stdin {
            anyhow::bail!("--password and --password-stdin are mutually exclusive");
        }
    }
    if args.password_stdin {
        if username.is_empty() {
            anyhow::bail!("Must provide --username with --password-stdin");
        }
        let mut contents = String::new();
        std::io::stdin()
            .read_to_string(&mut contents)
            .context("failed to read the password from stdin")?;
        let contents = contents.strip_suffix('\n').unwrap_or(&contents);
        password = contents.strip_suffix('\r').unwrap_or(contents).to_owned();
    }

    // `docker.io` and no server both mean Docker Hub's index.
    let server = match args.server.as_deref() {
        Some(server) if !server.is_empty() && server != "docker.io" => server,
        _ => INDEX_SERVER,
    };
    let key = server_key(server);
    let is_docker_hub = key == INDEX_SERVER;
    let docker = DockerConfig::from_env()?;
    let registry_config = RegistryConfig::load_or_default(&berth_engine::config_file())?;
    let client_config = ClientConfig::default();
    // As the docker CLI sends it to dockerd: what it has, an identity
    // token from the stored entry included.
    let check = |username: &str, password: &str, identity_token: &str| {
        let request = LoginRequest {
            server_address: key.clone(),
            username: username.to_owned(),
            password: password.to_owned(),
            identity_token: identity_token.to_owned(),
        };
        berth_registry::client::login(&request, &registry_config, &client_config)
    };

    // With neither -u nor -p, stored credentials are tried first.
    let stored = if username.is_empty() && password.is_empty() {
        docker.lookup(&key).ok().flatten()
    } else {
        None
    };
    if let Some(entry) = stored
        .as_ref()
        .filter(|entry| !entry.username.is_empty() && !entry.password.is_empty())
    {
        println!("Authenticating with existing credentials...");
        match check(&entry.username, &entry.password, &entry.identity_token) {
            Ok(verified) => {
                store(&docker, &key, &entry.username, &entry.password, verified)?;
                println!("Login Succeeded");
                return Ok(0);
            }
            Err(error) if error.is_unauthorized() => {
                eprintln!("Stored credentials invalid or expired");
            }
            Err(error) => eprintln!("Login did not succeed, error: {error}"),
        }
    }

    let (default_username, identity_token) = stored
        .map(|entry| (entry.username, entry.identity_token))
        .unwrap_or_default();
    let Some((username, password)) =
        configure_auth(&username, &password, &default_username, is_docker_hub)?
    else {
        return Ok(exit::FAILURE);
    };
    let verified = check(&username, &password, &identity_token)?;
    store(&docker, &key, &username, &password, verified)?;
    println!("Login Succeeded");
    Ok(0)
}

/// Stores what the login proved: the identity token when the registry gave
/// one (no password kept then), else the password, with docker's warning
/// when it goes into the file unencrypted.
fn store(
    docker: &DockerConfig,
    key: &str,
    username: &str,
    password: &str,
    verified: LoginSuccess,
) -> anyhow::Result<()> {
    let result = match verified.identity_token {
        Some(token) => docker.store_identity_token(key, username, &token),
        None => {
            if let CredentialStore::File(file) = docker.store_for(key)? {
                eprintln!(
                    "{}",
                    UNENCRYPTED_WARNING.replace("{file}", &file.display().to_string())
                );
            }
            docker.store_credentials(
                key,
                &berth_registry::Credentials {
                    username: username.to_owned(),
                    secret: password.to_owned(),
                },
            )
        }
    };
    result.context("Error saving credentials")?;
    Ok(())
}

/// docker/cli `ConfigureAuth`: prompts for what the flags did not give.
/// `None` when stdin ended at a prompt (docker prints "EOF" and exits 1).
fn configure_auth(
    username: &str,
    password: &str,
    default_username: &str,
    is_docker_hub: bool,
) -> anyhow::Result<Option<(String, String)>> {
    if password.is_empty() && !std::io::stdin().is_terminal() {
        anyhow::bail!("Cannot perform an interactive login from a non TTY device");
    }
    let mut username = username.trim().to_owned();
    if username.is_empty() {
        if is_docker_hub {
            println!("{DOCKER_HUB_PROMPT}");
        }
        if default_username.is_empty() {
            print!("Username: ");
        } else {
            print!("Username ({default_username}): ");
        }
        std::io::stdout().flush()?;
        let Some(line) = read_line()? else {
            println!("EOF");
            return Ok(None);
        };
        username = line.trim().to_owned();
        if username.is_empty() {
            username = default_username.trim().to_owned();
        }
    }
    if username.is_empty() {
        anyhow::bail!("Non-null Username Required");
    }
    let mut password = password.to_owned();
    if password.is_empty() {
        print!("Password: ");
        std::io::stdout().flush()?;
        let line = {
            let _echo_off = EchoOff::new()?;
            read_line()?
        };
        let Some(line) = line else {
            println!("EOF");
            return Ok(None);
        };
        println!();
        password = line;
        if password.is_empty() {
            anyhow::bail!("Password Required");
        }
    }
    Ok(Some((username, password)))
}

/// One line of stdin without its line ending; `None` at end of input.
fn read_line() -> anyhow::Result<Option<String>> {
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let line = line.strip_suffix('\n').unwrap_or(&line);
    Ok(Some(line.strip_suffix('\r').unwrap_or(line).to_owned()))
}

/// The terminal on stdin stops echoing while this lives (moby/term
/// `DisableEcho`), so a typed password is not shown.
struct EchoOff {
    saved: nix::sys::termios::Termios,
}

impl EchoOff {
    fn new() -> anyhow::Result<Self> {
        use nix::sys::termios::{self, LocalFlags, SetArg};
        let stdin = std::io::stdin();
        let saved = termios::tcgetattr(stdin.as_fd()).context("failed to read terminal mode")?;
        let mut quiet = saved.clone();
        quiet.local_flags.remove(LocalFlags::ECHO);
        termios::tcsetattr(stdin.as_fd(), SetArg::TCSANOW, &quiet)
            .context("failed to turn terminal echo off")?;
        Ok(Self { saved })
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        use nix::sys::termios::{self, SetArg};
        let _ = termios::tcsetattr(std::io::stdin().as_fd(), SetArg::TCSANOW, &self.saved);
    }
}
