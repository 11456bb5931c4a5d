//! runc's error reporting: `time="…" level=error msg="…"` lines (or JSON objects with
//! `--log-format json`, which containerd's shim reads back from `--log` to explain a failed
//! command), on stderr and in the log file.

use std::io::Write;
use std::path::PathBuf;

use super::cli::RuntimeGlobal;

pub struct Logger {
    path: Option<PathBuf>,
    json: bool,
}

impl Logger {
    pub fn new(global: &RuntimeGlobal) -> Self {
        Logger {
            path: global.log.clone(),
            json: global.log_format == "json",
        }
    }

    /// Diagnostics (tracing) go to the log file when there is one, else to stderr.
    pub fn init_tracing(&self, debug: bool) {
        let filter =
            tracing_subscriber::EnvFilter::try_from_env("BERTH_LOG").unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new(if debug { "debug" } else { "warn" })
            });
        let builder = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_target(false)
            .with_ansi(false);
        let file = self.path.as_ref().and_then(|path| {
            fs_err::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .ok()
        });
        // The JSON log holds only the error lines below (what containerd parses); diagnostics
        // in a JSON log would have to be JSON too, so they go to stderr then.
        let _ = match file.filter(|_| !self.json) {
            Some(file) => builder
                .with_writer(std::sync::Mutex::new(file.into_parts().0))
                .try_init(),
            None => builder.with_writer(std::io::stderr).try_init(),
        };
    }

    pub fn error(&self, message: &str) {
        let time = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let text = format!("time={time:?} level=error msg={message:?}\n");
        let _ = std::io::stderr().write_all(text.as_bytes());
        let Some(path) = &self.path else { return };
        let line = if self.json {
            let mut line =
                serde_json::json!({"level": "error", "msg": message, "time": time}).to_string();
            line.push('\n');
            line
        } else {
            text
        };
        if let Ok(mut file) = fs_err::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = file.write_all(line.as_bytes());
        }
    }
}
