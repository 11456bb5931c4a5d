//! The command line's own errors in the docker CLI's words and exit statuses: an unknown
//! command (1), an unknown flag (125), `--version`, and `-t -i` without a terminal (1). Where
//! the docker CLI is installed, its first lines (with `docker` read as `berth`) must match.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::process::{Command, Stdio};

use support::Berth;

/// The docker CLI's stderr and status for `args`, with `docker` replaced by `berth`; None
/// without Debian's docker CLI (20.10, the reference engine's; newer CLIs word these
/// differently). These errors come before it talks to any daemon.
fn docker_cli(args: &[&str]) -> Option<(String, i32)> {
    let program = std::path::Path::new("/usr/bin/docker");
    if !program.exists() {
        eprintln!("docker CLI comparison skipped: no /usr/bin/docker");
        return None;
    }
    let output = Command::new(program)
        .args(args)
        .env("DOCKER_HOST", "unix:///nonexistent/berth-test.sock")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let stderr = String::from_utf8_lossy(&output.stderr).replace("docker", "berth");
    Some((stderr, output.status.code().unwrap()))
}

fn first_lines(text: &str, count: usize) -> Vec<&str> {
    text.lines().take(count).collect()
}

#[test]
fn unknown_commands_and_flags_are_dockers_errors() {
    let berth = Berth::new();
    let cases: &[(&[&str], i32, &[&str])] = &[
        (
            &["badcmd"],
            1,
            &[
                "berth: 'badcmd' is not a berth command.",
                "See 'berth --help'",
            ],
        ),
        (
            &["ps", "--badflag"],
            125,
            &["unknown flag: --badflag", "See 'berth ps --help'."],
        ),
        (
            &["image", "ls", "--nope=1"],
            125,
            &["unknown flag: --nope", "See 'berth image ls --help'."],
        ),
        (
            &["--badflag", "ps"],
            125,
            &["unknown flag: --badflag", "See 'berth --help'."],
        ),
    ];
    for (args, code, lines) in cases {
        let stderr = berth.run(args).fails(*code);
        assert_eq!(first_lines(&stderr, 2), *lines, "{args:?}");
        if let Some((reference, reference_code)) = docker_cli(args) {
            assert_eq!(reference_code, *code, "docker {args:?}: {reference}");
            assert_eq!(first_lines(&reference, 2), *lines, "docker {args:?}");
        }
    }
}

#[test]
fn version_flag_prints_one_line() {
    let berth = Berth::new();
    for flag in ["--version", "-v"] {
        let out = berth.run(&[flag]).ok();
        assert_eq!(
            out,
            format!(
                "berth version {}, build {}\n",
                env!("CARGO_PKG_VERSION"),
                option_env!("BERTH_GIT_COMMIT").unwrap_or("unknown")
            )
        );
    }
    // `version --format`, as `docker version --format '{{.Client.Version}}'`.
    let out = berth
        .run(&["version", "--format", "{{.Client.Version}} {{.Server.Os}}"])
        .ok();
    assert_eq!(out, format!("{} linux\n", env!("CARGO_PKG_VERSION")));
    // `-v` stays `--volume` for run.
    berth
        .run(&["run", "--help"])
        .ok()
        .lines()
        .find(|line| line.trim_start().starts_with("-v, --volume"))
        .expect("run -v is --volume");
}

#[test]
fn a_terminal_fed_from_stdin_needs_a_terminal() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    // stdin is a pipe here, as in `echo | berth run -it …`.
    let stderr = berth
        .run_with_stdin(&["run", "-it", "--rm", "busybox", "true"], Some(b"\n"))
        .fails(1);
    assert_eq!(stderr, "the input device is not a TTY\n");
    let id = berth.run_detached(&["--network", "none", "busybox", "sleep", "60"]);
    let stderr = berth
        .run_with_stdin(&["exec", "-it", &id, "true"], Some(b"\n"))
        .fails(1);
    assert_eq!(stderr, "the input device is not a TTY\n");
    // Without -i, or detached, there is nothing to read from the terminal.
    berth
        .run_with_stdin(&["exec", "-t", &id, "true"], Some(b"\n"))
        .ok();
    berth.run(&["rm", "-f", &id]).ok();
    assert_eq!(
        berth.run(&["ps", "-aq"]).ok(),
        "",
        "the refused run made nothing"
    );
}

#[test]
fn inspect_format_with_an_unknown_key_fails() {
    // docker 20.10 runs inspect templates with missingkey=error: exit 1 and these words (a
    // template's error is printed as it is, with no `Error: `).
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    let stderr = berth
        .run(&["inspect", "-f", "{{.Config.Foo}}", "busybox"])
        .fails(1);
    assert_eq!(
        stderr,
        "template parsing error: template: :1:9: executing \"\" at <.Config.Foo>: map has no entry for key \"Foo\"\n"
    );
    assert_eq!(
        berth
            .run(&["inspect", "-f", "{{.Config.Cmd}}", "busybox"])
            .ok(),
        "[sh]\n"
    );
}

#[test]
fn a_closed_output_pipe_ends_a_listing_quietly() {
    // `berth inspect … | head -0`: the reader is gone before berth writes.
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    let (read_end, write_end) = nix::unistd::pipe().unwrap();
    drop(read_end);
    let output = berth
        .command()
        .args(["image", "inspect", "busybox"])
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&output.status),
        Some(libc::SIGPIPE),
        "{output:?}"
    );
}
