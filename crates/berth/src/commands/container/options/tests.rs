//! Flags in, request out. Expected values are what the docker CLI 28.2.2 sent to
//! Docker Engine 20.10 for the same flags (captured on the engine's socket) unless a
//! test says berth differs on purpose; error messages are the docker CLI's or the
//! engine's for the same input.

use std::error::Error;
use std::path::Path;

use clap::Parser;
use serde_json::{json, Value};

use super::resolve::{resolve, resolve_run};
use super::*;

mod conformance;
mod network_tests;
mod resource_tests;

#[derive(Debug, Parser)]
struct CreateCommand {
    #[command(flatten)]
    options: CreateOptions,
}

#[derive(Debug, Parser)]
struct RunCommand {
    #[command(flatten)]
    options: RunOptions,
}

fn fake_env(name: &str) -> Option<String> {
    match name {
        "FOO" => Some("fromenv".to_owned()),
        "EMPTY" => Some(String::new()),
        _ => None,
    }
}

const CWD: &str = "/work/dir";

fn parse_create(args: &[&str]) -> CreateOptions {
    let argv = std::iter::once("create").chain(args.iter().copied());
    CreateCommand::try_parse_from(argv)
        .unwrap_or_else(|error| panic!("{args:?}: {error}"))
        .options
}

fn create(
    args: &[&str],
) -> Result<(berth_types::container::CreateRequest, CreateExtras), OptionsError> {
    resolve(&parse_create(args), &fake_env, Some(Path::new(CWD)))
}

fn run(args: &[&str]) -> Result<(berth_types::container::CreateRequest, RunExtras), OptionsError> {
    let argv = std::iter::once("run").chain(args.iter().copied());
    let options = RunCommand::try_parse_from(argv)
        .unwrap_or_else(|error| panic!("{args:?}: {error}"))
        .options;
    resolve_run(&options, &fake_env, Some(Path::new(CWD)))
}

/// The request body for `create <args> busybox`.
fn body(args: &[&str]) -> Value {
    let mut full: Vec<&str> = args.to_vec();
    full.push("busybox");
    let (request, _) = create(&full).unwrap_or_else(|error| panic!("{args:?}: {}", chain(&error)));
    serde_json::to_value(request.to_body()).unwrap()
}

/// The error for `create <args> busybox`, with its causes, as `{:#}` prints it.
fn error(args: &[&str]) -> String {
    let mut full: Vec<&str> = args.to_vec();
    full.push("busybox");
    match create(&full) {
        Ok(_) => panic!("{args:?}: accepted"),
        Err(error) => chain(&error),
    }
}

fn chain(error: &dyn Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

type FieldCase<'a> = (&'a [&'a str], &'a [(&'a str, Value)]);

/// Checks `pointer → value` pairs in the body of `create <args> busybox`.
#[track_caller]
fn check_fields(cases: &[FieldCase<'_>]) {
    for (args, fields) in cases {
        let body = body(args);
        for (pointer, expected) in *fields {
            assert_eq!(body.pointer(pointer), Some(expected), "{args:?} {pointer}");
        }
    }
}

#[track_caller]
fn check_errors(cases: &[(&[&str], &str)]) {
    for (args, message) in cases {
        assert_eq!(error(args), *message, "{args:?}");
    }
}

#[test]
fn image_and_command_take_everything_after_the_image() {
    let options = parse_create(&["--rm", "busybox", "ls", "-la", "--rm"]);
    assert_eq!(options.image(), "busybox");
    assert_eq!(options.command(), ["ls", "-la", "--rm"]);
    assert_eq!(options.rm.as_deref(), Some("true"));
    let options = parse_create(&["busybox", "-la"]);
    assert_eq!(options.command(), ["-la"]);
    let options = parse_create(&[
        "-it",
        "-h",
        "web",
        "--memory-swap",
        "-1",
        "-e",
        "-x",
        "busybox",
    ]);
    assert_eq!(options.interactive.as_deref(), Some("true"));
    assert_eq!(options.tty.as_deref(), Some("true"));
    assert_eq!(options.hostname.as_deref(), Some("web"));
    assert_eq!(options.memory_swap.as_deref(), Some("-1"));
    assert_eq!(options.env, ["-x"]);
    let options = parse_create(&[
        "--net",
        "host",
        "--net-alias",
        "a",
        "--dns-opt",
        "ndots:1",
        "x",
    ]);
    assert_eq!(
        (options.network, options.network_alias),
        (vec!["host".to_owned()], vec!["a".to_owned()])
    );
    assert_eq!(options.dns_option, ["ndots:1"]);
    assert!(CreateCommand::try_parse_from(["create"]).is_err());
}

#[test]
fn booleans_take_go_values() {
    check_fields(&[
        (&["--rm=false"], &[("/HostConfig/AutoRemove", json!(false))]),
        (&["--rm=1"], &[("/HostConfig/AutoRemove", json!(true))]),
        (&["-i=false"], &[("/OpenStdin", json!(false))]),
        (&["--init"], &[("/HostConfig/Init", json!(true))]),
        (&["--init=false"], &[("/HostConfig/Init", json!(false))]),
        (
            &["--privileged", "--read-only", "-P"],
            &[
                ("/HostConfig/Privileged", json!(true)),
                ("/HostConfig/ReadonlyRootfs", json!(true)),
                ("/HostConfig/PublishAllPorts", json!(true)),
            ],
        ),
    ]);
    assert!(body(&[]).pointer("/HostConfig/Init").is_none());
    check_errors(&[(
        &["--rm=maybe"],
        r#"invalid argument "maybe" for "--rm" flag: strconv.ParseBool: parsing "maybe": invalid syntax"#,
    )]);
}

#[test]
fn environment_and_labels() {
    let dir = tempfile::tempdir().unwrap();
    let env_file = dir.path().join("env");
    fs_err::write(
        &env_file,
        "# comment\n\nA=1\n  B=two words \r\nFOO\nNOPE_UNSET\nQ=\"quoted\"\n",
    )
    .unwrap();
    let label_file = dir.path().join("labels");
    fs_err::write(&label_file, "\u{feff}l1=a\n#c\nl2\n").unwrap();
    let env_path = env_file.to_str().unwrap();
    let label_path = label_file.to_str().unwrap();
    check_fields(&[
        (
            &[
                "-e", "A=1", "-e", "FOO", "-e", "UNSET_X", "-e", "E=", "-e", "EMPTY",
            ],
            &[(
                "/Env",
                json!(["A=1", "FOO=fromenv", "UNSET_X", "E=", "EMPTY="]),
            )],
        ),
        (
            &["--env-file", env_path, "-e", "A=override"],
            &[(
                "/Env",
                json!([
                    "A=1",
                    "B=two words ",
                    "FOO=fromenv",
                    "Q=\"quoted\"",
                    "A=override"
                ]),
            )],
        ),
        (
            &["-l", "a=b", "-l", "c", "--label-file", label_path],
            &[("/Labels", json!({"a": "b", "c": "", "l1": "a"}))],
        ),
        (&[], &[("/Env", Value::Null), ("/Labels", json!({}))]),
    ]);
    let bad = dir.path().join("bad");
    fs_err::write(&bad, "A B=1\n").unwrap();
    let no_name = dir.path().join("no-name");
    fs_err::write(&no_name, "=x\n").unwrap();
    let not_utf8 = dir.path().join("latin1");
    fs_err::write(&not_utf8, b"\xff\n").unwrap();
    let path = |file: &Path| file.to_str().unwrap().to_owned();
    let (bad, no_name, not_utf8) = (path(&bad), path(&no_name), path(&not_utf8));
    check_errors(&[
        (
            &["-e", "=x"],
            r#"invalid argument "=x" for "-e, --env" flag: invalid environment variable: =x"#,
        ),
        (
            &["-l", "=x"],
            r#"invalid argument "=x" for "-l, --label" flag: invalid label '=x': empty name"#,
        ),
        (
            &["-l", "a b=1"],
            r#"invalid argument "a b=1" for "-l, --label" flag: label 'a b' contains whitespaces"#,
        ),
        (
            &["--env-file", &bad],
            &format!("invalid env file ({bad}): variable 'A B' contains whitespaces"),
        ),
        (
            &["--label-file", &bad],
            &format!("invalid env file ({bad}): variable 'A B' contains whitespaces"),
        ),
        (
            &["--env-file", &no_name],
            &format!("invalid env file ({no_name}): no variable name on line '=x'"),
        ),
        (
            &["--env-file", &not_utf8],
            &format!("invalid env file ({not_utf8}): invalid utf8 bytes at line 1: [255]"),
        ),
    ]);
    assert!(error(&["--env-file", "/nope"]).starts_with("open /nope: "));
}

#[test]
fn attach_interactive_and_tty() {
    check_fields(&[
        (
            &["-i"],
            &[
                ("/AttachStdin", json!(true)),
                ("/OpenStdin", json!(true)),
                ("/StdinOnce", json!(true)),
            ],
        ),
        (
            &["-t"],
            &[("/Tty", json!(true)), ("/AttachStdin", json!(false))],
        ),
        (
            &["-a", "stdin"],
            &[
                ("/AttachStdin", json!(true)),
                ("/AttachStdout", json!(false)),
                ("/AttachStderr", json!(false)),
                ("/OpenStdin", json!(false)),
            ],
        ),
        (
            &["-a", "STDOUT", "-a", "stderr"],
            &[
                ("/AttachStdin", json!(false)),
                ("/AttachStdout", json!(true)),
                ("/AttachStderr", json!(true)),
            ],
        ),
        (
            &["-i", "-a", "stdout"],
            &[
                ("/AttachStdin", json!(true)),
                ("/AttachStderr", json!(false)),
                ("/StdinOnce", json!(true)),
            ],
        ),
    ]);
    check_errors(&[(
        &["-a", "foo"],
        r#"invalid argument "foo" for "-a, --attach" flag: valid streams are STDIN, STDOUT and STDERR"#,
    )]);
}

#[test]
fn run_only_flags() {
    let (request, extras) = run(&["-it", "busybox", "sh"]).unwrap();
    assert_eq!(
        extras.attach,
        [Stream::Stdin, Stream::Stdout, Stream::Stderr]
    );
    assert!(extras.sig_proxy && !extras.detach && request.config.stdin_once);
    let (request, extras) = run(&[
        "-d",
        "-i",
        "--sig-proxy=false",
        "--detach-keys",
        "ctrl-x",
        "busybox",
    ])
    .unwrap();
    assert!(extras.detach && !extras.sig_proxy);
    assert_eq!(extras.attach, []);
    assert_eq!(extras.detach_keys.as_deref(), Some("ctrl-x"));
    let config = &request.config;
    assert!(!config.attach_stdin && !config.attach_stdout && !config.attach_stderr);
    assert!(config.open_stdin && !config.stdin_once);
    let (_, extras) = run(&[
        "--rm",
        "--pull",
        "never",
        "-q",
        "--cidfile",
        "/tmp/id",
        "busybox",
    ])
    .unwrap();
    assert!(extras.auto_remove && extras.create.quiet);
    assert_eq!(extras.create.pull, PullPolicy::Never);
    assert_eq!(
        extras.create.container_id_file.as_deref(),
        Some(Path::new("/tmp/id"))
    );
    let error = run(&["-d", "-a", "stdout", "busybox"]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "conflicting options: cannot specify both --attach and --detach"
    );
    let error = run(&["--sig-proxy=x", "busybox"]).unwrap_err();
    assert_eq!(
        chain(&error),
        r#"invalid argument "x" for "--sig-proxy" flag: strconv.ParseBool: parsing "x": invalid syntax"#
    );
}

#[test]
fn pull_name_platform_and_plain_strings() {
    let (request, extras) =
        create(&["--name", "web", "--platform", "linux/x86_64", "busybox"]).unwrap();
    assert_eq!(request.name.as_deref(), Some("web"));
    let platform = request.platform.unwrap();
    assert_eq!(
        (platform.os.as_str(), platform.architecture.as_str()),
        ("linux", "amd64")
    );
    assert_eq!(extras.pull, PullPolicy::Missing);
    check_fields(&[
        (
            &[
                "-u",
                "1000:1000",
                "-w",
                "/tmp",
                "-h",
                "myhost",
                "--domainname",
                "ex.com",
            ],
            &[
                ("/User", json!("1000:1000")),
                ("/WorkingDir", json!("/tmp")),
                ("/Hostname", json!("myhost")),
                ("/Domainname", json!("ex.com")),
            ],
        ),
        (&["--entrypoint", ""], &[("/Entrypoint", json!([""]))]),
        (
            &["--entrypoint", "/bin/sh"],
            &[("/Entrypoint", json!(["/bin/sh"]))],
        ),
        (
            &["--stop-timeout", "5", "--stop-signal", "SIGKILL"],
            &[
                ("/StopSignal", json!("SIGKILL")),
                ("/StopTimeout", json!(5)),
            ],
        ),
        (
            &["--no-healthcheck"],
            &[("/Healthcheck", json!({"Test": ["NONE"]}))],
        ),
        (
            &[
                "--health-cmd",
                "curl x",
                "--health-interval",
                "1m30s",
                "--health-retries",
                "3",
                "--health-timeout",
                "500ms",
                "--health-start-period",
                "1h",
            ],
            &[(
                "/Healthcheck",
                json!({"Test": ["CMD-SHELL", "curl x"], "Interval": 90_000_000_000_i64,
                "Timeout": 500_000_000, "StartPeriod": 3_600_000_000_000_i64, "Retries": 3}),
            )],
        ),
        (
            &["--cidfile", "/tmp/x.cid"],
            &[("/HostConfig/ContainerIDFile", json!("/tmp/x.cid"))],
        ),
        (
            &["--runtime", "runc", "--isolation", "default"],
            &[
                ("/HostConfig/Runtime", json!("runc")),
                ("/HostConfig/Isolation", json!("default")),
            ],
        ),
        (
            &["--volume-driver", "local", "--volumes-from", "other:ro"],
            &[
                ("/HostConfig/VolumeDriver", json!("local")),
                ("/HostConfig/VolumesFrom", json!(["other:ro"])),
            ],
        ),
        (
            &["--group-add", "10", "--cgroup-parent", "/foo"],
            &[
                ("/HostConfig/GroupAdd", json!(["10"])),
                ("/HostConfig/CgroupParent", json!("/foo")),
            ],
        ),
        (
            &[
                "--pid",
                "host",
                "--ipc",
                "host",
                "--uts",
                "host",
                "--cgroupns",
                "private",
                "--userns",
                "host",
            ],
            &[
                ("/HostConfig/PidMode", json!("host")),
                ("/HostConfig/IpcMode", json!("host")),
                ("/HostConfig/UTSMode", json!("host")),
                ("/HostConfig/CgroupnsMode", json!("private")),
                ("/HostConfig/UsernsMode", json!("host")),
            ],
        ),
    ]);
    let long = "a".repeat(65);
    check_errors(&[
        (
            &["--pull", "foo"],
            r#"invalid pull option: 'foo': must be one of "always", "missing" or "never""#,
        ),
        (
            &["--platform", "foo"],
            r#"error parsing specified platform: "foo": unknown operating system or architecture: invalid argument"#,
        ),
        (
            &["--name", "a b"],
            "Invalid container name (a b), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed",
        ),
        (
            &["--name", "a"],
            "Invalid container name (a), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed",
        ),
        (
            &["--hostname", &long],
            &format!("invalid hostname \"{long}\": longer than 64 characters"),
        ),
        (
            &["--stop-timeout", "x"],
            r#"invalid argument "x" for "--stop-timeout" flag: strconv.ParseInt: parsing "x": invalid syntax"#,
        ),
        (&["--stop-signal", "FOO"], "Invalid signal: FOO"),
        (
            &["-w", "rel"],
            "the working directory 'rel' is invalid, it needs to be an absolute path",
        ),
        (
            &["--health-interval", "5"],
            r#"invalid argument "5" for "--health-interval" flag: time: missing unit in duration "5""#,
        ),
        (
            &["--health-interval", "x"],
            r#"invalid argument "x" for "--health-interval" flag: time: invalid duration "x""#,
        ),
        (
            &["--health-cmd", "true", "--no-healthcheck"],
            "--no-healthcheck conflicts with --health-* options",
        ),
        (
            &["--health-interval", "-1s"],
            "--health-interval cannot be negative",
        ),
        (
            &["--health-retries", "-1"],
            "--health-retries cannot be negative",
        ),
        (&["--pid", "foo"], "--pid: invalid PID mode"),
        (&["--pid", "container:"], "--pid: invalid PID mode"),
        (&["--uts", "foo"], "--uts: invalid UTS mode"),
        (&["--userns", "foo"], "--userns: invalid USER mode"),
        (&["--cgroupns", "foo"], "--cgroupns: invalid CGROUP mode"),
        (&["--ipc", "bogus"], "invalid IPC mode: bogus"),
        (
            &["--isolation", "foo"],
            "Invalid isolation: \"foo\" - linux only supports 'default' or 'vm'",
        ),
        (
            &["--volumes-from", ""],
            "volumes-from specification cannot be an empty string",
        ),
    ]);
}

#[test]
fn restart_policies() {
    check_fields(&[
        (
            &[],
            &[(
                "/HostConfig/RestartPolicy",
                json!({"Name": "no", "MaximumRetryCount": 0}),
            )],
        ),
        (
            &["--restart", "on-failure:3"],
            &[(
                "/HostConfig/RestartPolicy",
                json!({"Name": "on-failure", "MaximumRetryCount": 3}),
            )],
        ),
        (
            &["--restart", "always"],
            &[(
                "/HostConfig/RestartPolicy",
                json!({"Name": "always", "MaximumRetryCount": 0}),
            )],
        ),
        (
            &["--restart", "unless-stopped"],
            &[(
                "/HostConfig/RestartPolicy",
                json!({"Name": "unless-stopped", "MaximumRetryCount": 0}),
            )],
        ),
        (
            &["--restart", "no", "--rm"],
            &[("/HostConfig/AutoRemove", json!(true))],
        ),
    ]);
    check_errors(&[
        (&["--restart", "foo"], "invalid restart policy 'foo'"),
        (
            &["--restart", "on-failure:x"],
            "invalid restart policy format: maximum retry count must be an integer",
        ),
        (
            &["--restart", ":3"],
            "invalid restart policy format: no policy provided before colon",
        ),
        (
            &["--restart", "always:3"],
            "maximum retry count cannot be used with restart policy 'always'",
        ),
        (
            &["--restart", "no:2"],
            "maximum retry count cannot be used with restart policy 'no'",
        ),
        (
            &["--restart", "always", "--rm"],
            "conflicting options: cannot specify both --restart and --rm",
        ),
        (
            &["--restart", "on-failure:3", "--rm"],
            "conflicting options: cannot specify both --restart and --rm",
        ),
    ]);
}
