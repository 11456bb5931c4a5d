//! `berth serve`: the Docker Engine API on a unix socket, or on TCP with
//! TLS client certificates (see `berth-api`), and the hidden
//! `berth api-helper` it runs for work that forks.

use std::path::{Path, PathBuf};
use std::time::Duration;

use berth_api::listen::Host;
use berth_api::tls::TlsFiles;
use berth_api::ConnectionLimits;
use clap::builder::BoolishValueParser;
use clap::Args;

use crate::cli::GlobalOptions;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Socket to listen on: unix:///path, fd:// for systemd's sockets, or
    /// tcp://IP:PORT (only with --tlsverify) (repeatable; default
    /// unix:///run/berth/docker.sock, or the sockets systemd passed)
    #[arg(short = 'H', long = "host", value_name = "HOST")]
    pub hosts: Vec<String>,
    /// Use TLS; berth serve takes it only with --tlsverify (client
    /// certificates), which implies it
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = BoolishValueParser::new())]
    pub tls: Option<bool>,
    /// Use TLS and require client certificates signed by --tlscacert;
    /// needed for tcp:// hosts
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = BoolishValueParser::new())]
    pub tlsverify: Option<bool>,
    /// Trust client certificates signed only by this CA (default
    /// ca.pem in $DOCKER_CERT_PATH, else $DOCKER_CONFIG, else ~/.docker)
    #[arg(long, value_name = "PATH")]
    pub tlscacert: Option<PathBuf>,
    /// Path to the server's TLS certificate (default cert.pem beside
    /// the CA's default)
    #[arg(long, value_name = "PATH")]
    pub tlscert: Option<PathBuf>,
    /// Path to the server's TLS key (default key.pem beside the CA's
    /// default)
    #[arg(long, value_name = "PATH")]
    pub tlskey: Option<PathBuf>,
    /// Group that owns the socket (mode 0660); default "docker" when that
    /// group exists, else root
    #[arg(short = 'G', long, value_name = "GROUP")]
    pub group: Option<String>,
    /// Exit after this long with no request or stream open (30s, 5m, 1h;
    /// 0 or unset: never)
    #[arg(long, value_name = "DURATION")]
    pub idle_timeout: Option<String>,
    /// Close a connection whose request head (request line and headers)
    /// has not all arrived this long after the connection opened, or after
    /// the first byte of its next request (0: no limit)
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub read_header_timeout: String,
    /// Close a keep-alive connection that sends no next request for this
    /// long (0: no limit); streams and attached connections are not idle
    #[arg(long, value_name = "DURATION", default_value = "2m")]
    pub idle_connection_timeout: String,
    /// Serve at most this many connections at once; more wait in the
    /// socket's backlog until one ends
    #[arg(long, value_name = "N", default_value_t = berth_api::limits::DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: usize,
}

/// A duration flag; `0` means no limit.
fn limit(flag: &str, text: &str) -> anyhow::Result<Option<Duration>> {
    let duration = berth_api::parse_duration(text)
        .map_err(|message| anyhow::anyhow!("invalid value for --{flag}: {message}"))?;
    Ok(Some(duration).filter(|duration| !duration.is_zero()))
}

pub fn run(global: &GlobalOptions, args: &ServeArgs) -> anyhow::Result<i32> {
    let idle_timeout = args
        .idle_timeout
        .as_deref()
        .map(berth_api::parse_duration)
        .transpose()
        .map_err(anyhow::Error::msg)?
        .filter(|timeout| !timeout.is_zero());
    if args.max_connections == 0 {
        anyhow::bail!(
            "invalid value for --max-connections: 0 (at least 1 connection must be served)"
        );
    }
    let limits = ConnectionLimits {
        read_header_timeout: limit("read-header-timeout", &args.read_header_timeout)?,
        idle_connection_timeout: limit("idle-connection-timeout", &args.idle_connection_timeout)?,
        max_connections: args.max_connections,
    };
    // The running binary through its magic link, not its path: berth serve runs from a sealed,
    // read-only copy of itself (berth_runtime::sealed_exe) that has no path, and its helpers
    // enter containers too.
    let helper = PathBuf::from(berth_runtime::sealed_exe::SELF_EXE);
    let config = berth_api::ServeConfig {
        engine: berth_engine::EngineConfig::new(global.root.clone(), global.run_root.clone()),
        hosts: args.hosts.clone(),
        group: args.group.clone(),
        idle_timeout,
        tls: tls_files(args)?,
        helper,
        limits,
    };
    berth_api::serve(config)?;
    Ok(0)
}

/// The TLS files for `tcp://` hosts, with dockerd's meaning of the flags
/// and its default paths (moby `cmd/dockerd/options.go`). What berth does
/// not take from dockerd, for the issue's "TCP only when asked explicitly,
/// and then only with TLS client certificates": `--tls` without
/// `--tlsverify` (server-only TLS) is refused; `--tlsverify` without a
/// `tcp://` host is refused rather than listening on tcp://localhost:2376
/// as dockerd does; `DOCKER_TLS_VERIFY` is not read. A `tcp://` host
/// without `--tlsverify` is refused by the server (`ListenError`).
fn tls_files(args: &ServeArgs) -> anyhow::Result<Option<TlsFiles>> {
    let verify = args.tlsverify.unwrap_or(false);
    if !verify && (args.tls == Some(true) || args.tlsverify == Some(false)) {
        anyhow::bail!(
            "TLS without --tlsverify would let in any client that reaches the port: \
             berth serve takes TCP only with client certificates; use --tlsverify with \
             --tlscacert (the CA that signs client certificates), --tlscert and --tlskey"
        );
    }
    if !verify {
        return Ok(None);
    }
    let has_tcp = args.hosts.iter().any(|host| {
        matches!(
            berth_api::listen::parse_host(host),
            Ok(Host::Tcp(_)) | Err(berth_api::listen::ListenError::TcpName(_))
        )
    });
    if !has_tcp {
        anyhow::bail!(
            "--tlsverify is for TCP, but no -H tcp://IP:PORT is given \
             (berth serve listens on TCP only where -H says)"
        );
    }
    let directory = default_certificate_directory();
    let path = |given: &Option<PathBuf>, name: &str| match given {
        Some(path) => path.clone(),
        None => directory.join(name),
    };
    Ok(Some(TlsFiles {
        ca_certificate: path(&args.tlscacert, "ca.pem"),
        certificate: path(&args.tlscert, "cert.pem"),
        key: path(&args.tlskey, "key.pem"),
    }))
}

/// dockerd's directory of default TLS files: `$DOCKER_CERT_PATH`, else
/// `$DOCKER_CONFIG`, else `~/.docker`.
fn default_certificate_directory() -> PathBuf {
    let set = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    if let Some(directory) = set("DOCKER_CERT_PATH").or_else(|| set("DOCKER_CONFIG")) {
        return PathBuf::from(directory);
    }
    let home = set("HOME").map(PathBuf::from).or_else(|| {
        nix::unistd::User::from_uid(nix::unistd::getuid())
            .ok()
            .flatten()
            .map(|user| user.dir)
    });
    home.as_deref().unwrap_or(Path::new("/")).join(".docker")
}

/// `berth api-helper KIND REQUEST`: run by `berth serve` only.
#[derive(Debug, Args)]
pub struct ApiHelperArgs {
    /// start or exec
    pub kind: String,
    /// The request, as JSON
    pub request: String,
}

pub fn helper(global: &GlobalOptions, args: &ApiHelperArgs) -> anyhow::Result<i32> {
    let config = berth_engine::EngineConfig::new(global.root.clone(), global.run_root.clone());
    Ok(berth_api::helper::run(config, &args.kind, &args.request))
}
