//! `berth version`: the client's and the engine's versions, as `docker version` shows them
//! (berth has no daemon: its engine is in every command, so the Server is this binary too).

use clap::Args;
use serde_json::{json, Value};

use crate::commands::output;

#[derive(Debug, Args)]
pub struct VersionArgs {
    /// Format output using a custom template ('json' or a Go template)
    #[arg(short, long)]
    pub format: Option<String>,
}

/// The `docker version` document: `Client` and `Server`.
fn document() -> Value {
    let engine = berth_api::version::engine_version();
    json!({
        "Client": {
            "Platform": { "Name": "berth" },
            "Version": engine["Version"],
            "ApiVersion": engine["ApiVersion"],
            "DefaultAPIVersion": engine["ApiVersion"],
            "GitCommit": engine["GitCommit"],
            "GoVersion": engine["GoVersion"],
            "Os": engine["Os"],
            "Arch": engine["Arch"],
            "BuildTime": engine["BuildTime"],
            "Context": "default",
            "Experimental": true,
        },
        "Server": engine,
    })
}

pub fn run(args: &VersionArgs) -> anyhow::Result<i32> {
    if let Some(format) = &args.format {
        println!("{}", output::render_one(format, &document())?);
        return Ok(0);
    }
    let (os, arch) = (std::env::consts::OS, berth_image::host_architecture());
    println!("berth:");
    println!(" Version:           {}", env!("CARGO_PKG_VERSION"));
    println!(" Git commit:        {}", berth_api::version::GIT_COMMIT);
    println!(" OS/Arch:           {os}/{arch}");
    println!(" Storage driver:    overlay");
    println!(" Daemon:            none (each command runs on its own)");
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_has_dockers_client_and_server_fields() {
        let document = document();
        for path in [
            "/Client/Version",
            "/Client/ApiVersion",
            "/Server/Version",
            "/Server/ApiVersion",
            "/Server/Os",
        ] {
            assert!(
                document
                    .pointer(path)
                    .is_some_and(|value| value.is_string()),
                "{path}"
            );
        }
    }
}
