//! The `berth` command line: parse, set up logging, dispatch, map errors to
//! Docker's exit codes.

mod cli;
mod commands;
mod exit;
mod format;

use clap::Parser;

fn main() {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let code = exit::for_clap_error(&error);
            let _ = error.print();
            std::process::exit(code);
        }
    };
    init_tracing(&cli.global);
    tracing::debug!("command line parsed");
    let code = match commands::run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("Error: {error:#}");
            exit::for_error(&error)
        }
    };
    std::process::exit(code);
}

fn init_tracing(global: &cli::GlobalOptions) {
    let level = if global.debug {
        "debug"
    } else if global.log_level == "fatal" {
        "error"
    } else {
        global.log_level.as_str()
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("BERTH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}
