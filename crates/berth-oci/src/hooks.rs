//! The bundle's hooks that run in the runtime's namespaces (prestart, createRuntime,
//! poststart, poststop): each gets the state JSON on its stdin, its own `args` (the first is
//! its argv[0]) and `env` only, and is killed at its `timeout`.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::config::Hook;
use crate::error::{OciError, Result};
use crate::state::State;

/// Runs `hooks` in order; the first that fails (or times out) stops the rest.
pub fn run(kind: &'static str, hooks: &[Hook], state: &State) -> Result<()> {
    let input = serde_json::to_vec(state).map_err(OciError::Encode)?;
    for (index, hook) in hooks.iter().enumerate() {
        run_one(hook, &input).map_err(|reason| OciError::Hook {
            kind,
            index,
            path: hook.path.clone(),
            reason,
        })?;
    }
    Ok(())
}

fn run_one(hook: &Hook, input: &[u8]) -> std::result::Result<(), String> {
    let mut command = Command::new(&hook.path);
    if let Some((first, rest)) = hook.args.split_first() {
        std::os::unix::process::CommandExt::arg0(&mut command, first);
        command.args(rest);
    }
    command.env_clear();
    for entry in &hook.env {
        if let Some((key, value)) = entry.split_once('=') {
            command.env(key, value);
        }
    }
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|error| error.to_string())?;
    if let Some(mut stdin) = child.stdin.take() {
        // A hook that does not read its input may close it early: that is not a failure.
        let _ = stdin.write_all(input);
    }
    let deadline = hook
        .timeout
        .and_then(|seconds| u64::try_from(seconds).ok())
        .map(|seconds| Instant::now() + Duration::from_secs(seconds));
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(error) => return Err(error.to_string()),
        }
        if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            let _ = child.kill();
            let _ = child.wait();
            return Err("timeout".to_owned());
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let output = child
        .wait_with_output()
        .map_err(|error| error.to_string())?;
    if status.success() {
        return Ok(());
    }
    let described = match status.code() {
        Some(code) => format!("exit status {code}"),
        None => format!("{status}"),
    };
    Err(format!(
        "{described}, stdout: {}, stderr: {}",
        String::from_utf8_lossy(&output.stdout).trim_end(),
        String::from_utf8_lossy(&output.stderr).trim_end()
    ))
}
