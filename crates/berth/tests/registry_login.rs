//! `berth login` / `berth logout` against real registries on 127.0.0.1
//! (Debian's docker-registry with htpasswd, and a token-auth registry),
//! each test with its own DOCKER_CONFIG directory, and the same steps run
//! with the docker CLI where it is installed: same output, same file.
#![allow(clippy::unwrap_used)]

#[path = "registry_login/harness.rs"]
mod harness;
mod support;

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use harness::{
    config_dir, error_words, BasicRegistry, DockerCli, HelperDir, TokenRegistry, PASSWORD, USER,
};
use support::{Berth, Run};

/// berth with DOCKER_CONFIG=`config` (and `PATH` when given).
fn berth(
    berth: &Berth,
    config: &Path,
    args: &[&str],
    stdin: Option<&[u8]>,
    path: Option<&OsStr>,
) -> Run {
    let mut command = berth.command();
    command.env("DOCKER_CONFIG", config).args(args);
    if let Some(path) = path {
        command.env("PATH", path);
    }
    Run {
        output: support::output_with_stdin(command, stdin),
    }
}

fn read(path: &Path) -> String {
    fs_err::read_to_string(path).unwrap_or_else(|error| panic!("read {path:?}: {error}"))
}

fn mode(path: &Path) -> u32 {
    fs_err::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&read(path)).unwrap()
}

fn unencrypted_warning(file: &Path) -> String {
    format!(
        "WARNING! Your password will be stored unencrypted in {}.\n\
         Configure a credential helper to remove this warning. See\n\
         https://docs.docker.com/engine/reference/commandline/login/#credentials-store\n\n",
        file.display()
    )
}

const CLI_PASSWORD_WARNING: &str =
    "WARNING! Using --password via the CLI is insecure. Use --password-stdin.\n";

#[test]
fn login_checks_the_password_then_writes_what_docker_writes() {
    let Some(registry) = BasicRegistry::start() else {
        return;
    };
    let address = registry.address();
    let (_keep, config) = config_dir();
    let berth_cli = Berth::new();

    let run = berth(
        &berth_cli,
        &config,
        &["login", "-u", USER, "-p", PASSWORD, &address],
        None,
        None,
    );
    assert_eq!(
        run.ok(),
        "Login Succeeded\n",
        "registry log:\n{}",
        registry.log()
    );
    let file = config.join("config.json");
    assert_eq!(
        run.stderr(),
        format!("{CLI_PASSWORD_WARNING}{}", unencrypted_warning(&file))
    );
    let expected = format!(
        "{{\n\t\"auths\": {{\n\t\t\"{address}\": {{\n\t\t\t\"auth\": \"YWxpY2U6czNjcmV0\"\n\t\t}}\n\t}}\n}}"
    );
    assert_eq!(read(&file), expected);
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(&config), 0o700);

    let Some(docker) = DockerCli::find() else {
        return;
    };
    let (_keep_docker, docker_config) = config_dir();
    let output = docker.run(
        &docker_config,
        &["login", "-u", USER, "-p", PASSWORD, &address],
        None,
        None,
    );
    assert!(output.status.success(), "docker login: {output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Login Succeeded\n");
    assert_eq!(read(&docker_config.join("config.json")), expected);
    assert_eq!(mode(&docker_config.join("config.json")), 0o600);
}

#[test]
fn a_wrong_password_is_refused_and_nothing_is_stored() {
    let Some(registry) = BasicRegistry::start() else {
        return;
    };
    let address = registry.address();
    let (_keep, config) = config_dir();
    let berth_cli = Berth::new();
    let args = ["login", "-u", USER, "-p", "wrong", address.as_str()];

    let run = berth(&berth_cli, &config, &args, None, None);
    let stderr = run.fails(1);
    let expected =
        format!("login attempt to http://{address}/v2/ failed with status: 401 Unauthorized");
    assert_eq!(stderr, format!("{CLI_PASSWORD_WARNING}Error: {expected}\n"));
    assert!(!config.exists(), "nothing may be written on failure");

    // An existing file is left exactly as it was.
    fs_err::create_dir_all(&config).unwrap();
    let original = "{\"auths\": {}, \"psFormat\": \"{{.ID}}\"}";
    fs_err::write(config.join("config.json"), original).unwrap();
    berth(&berth_cli, &config, &args, None, None).fails(1);
    assert_eq!(read(&config.join("config.json")), original);

    // Nothing listening: the error of the last endpoint tried, plain HTTP.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let closed = format!("127.0.0.1:{closed}");
    let run = berth(
        &berth_cli,
        &config,
        &["login", "-u", USER, "-p", PASSWORD, &closed],
        None,
        None,
    );
    let refused =
        format!("Get \"http://{closed}/v2/\": dial tcp {closed}: connect: connection refused");
    assert_eq!(error_words(&run.output.stderr), refused);
    assert_eq!(run.code(), 1);

    let Some(docker) = DockerCli::find() else {
        return;
    };
    let (_keep_docker, docker_config) = config_dir();
    let output = docker.run(&docker_config, &args, None, None);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(error_words(&output.stderr), expected);
    assert!(!docker_config.join("config.json").exists());
    let output = docker.run(
        &docker_config,
        &["login", "-u", USER, "-p", PASSWORD, &closed],
        None,
        None,
    );
    assert_eq!(error_words(&output.stderr), refused);
}

#[test]
fn password_stdin_and_the_option_errors_match_docker() {
    let Some(registry) = BasicRegistry::start() else {
        return;
    };
    let address = registry.address();
    let (_keep, config) = config_dir();
    let berth_cli = Berth::new();

    let stdin = format!("{PASSWORD}\r\n");
    let run = berth(
        &berth_cli,
        &config,
        &["login", "-u", USER, "--password-stdin", &address],
        Some(stdin.as_bytes()),
        None,
    );
    assert_eq!(run.ok(), "Login Succeeded\n");
    assert!(
        !run.stderr().contains("--password via the CLI"),
        "{}",
        run.stderr()
    );
    assert_eq!(
        json(&config.join("config.json"))["auths"][&address]["auth"],
        "YWxpY2U6czNjcmV0"
    );

    // The errors, from an empty configuration (with stored credentials,
    // `login SERVER` would use them instead of prompting).
    let (_keep_empty, config) = config_dir();
    let docker = DockerCli::find();
    let (_keep_docker, docker_config) = config_dir();
    let cases: [(&[&str], &str); 3] = [
        (
            &["login", "--password-stdin", &address],
            "Must provide --username with --password-stdin",
        ),
        (
            &["login", "-u", USER, "-p", "x", "--password-stdin", &address],
            "--password and --password-stdin are mutually exclusive",
        ),
        (
            &["login", &address],
            // docker's own words start with "Error: ", which berth prints anyway.
            "Cannot perform an interactive login from a non TTY device",
        ),
    ];
    for (args, message) in cases {
        let run = berth(&berth_cli, &config, args, Some(b""), None);
        assert_eq!(run.code(), 1, "{args:?}: {}", run.stderr());
        assert_eq!(error_words(&run.output.stderr), message, "{args:?}");
        if let Some(docker) = &docker {
            let output = docker.run(&docker_config, args, Some(b""), None);
            assert_eq!(output.status.code(), Some(1), "docker {args:?}");
            assert_eq!(error_words(&output.stderr), message, "docker {args:?}");
        }
    }
}

#[test]
fn logout_removes_the_credentials_as_docker_does() {
    let Some(registry) = BasicRegistry::start() else {
        return;
    };
    let address = registry.address();
    let (_keep, config) = config_dir();
    let berth_cli = Berth::new();
    let login = ["login", "-u", USER, "-p", PASSWORD, address.as_str()];
    berth(&berth_cli, &config, &login, None, None).ok();
    // A form an older client saved goes too.
    let mut document = json(&config.join("config.json"));
    document["auths"][format!("http://{address}")] = serde_json::json!({"auth": "YTpi"});
    fs_err::write(config.join("config.json"), document.to_string()).unwrap();

    let removing = format!("Removing login credentials for {address}\n");
    let run = berth(&berth_cli, &config, &["logout", &address], None, None);
    assert_eq!(run.ok(), removing);
    assert_eq!(run.stderr(), "");
    let empty = "{\n\t\"auths\": {}\n}";
    assert_eq!(read(&config.join("config.json")), empty);
    // Docker 20.10 says the same and succeeds when there is nothing left.
    let run = berth(
        &berth_cli,
        &config,
        &["logout", &format!("http://{address}/v2/")],
        None,
        None,
    );
    assert_eq!(run.ok(), removing);
    assert_eq!(read(&config.join("config.json")), empty);

    let Some(docker) = DockerCli::find() else {
        return;
    };
    let (_keep_docker, docker_config) = config_dir();
    assert!(docker
        .run(&docker_config, &login, None, None)
        .status
        .success());
    for _ in 0..2 {
        let output = docker.run(&docker_config, &["logout", &address], None, None);
        assert!(output.status.success());
        assert_eq!(String::from_utf8_lossy(&output.stdout), removing);
        assert_eq!(read(&docker_config.join("config.json")), empty);
    }
}

/// Exit status, stdout, stderr.
type Outcome = (i32, String, String);

#[test]
fn a_credential_helper_stores_gets_and_erases() {
    let Some(registry) = BasicRegistry::start() else {
        return;
    };
    let address = registry.address();
    let berth_cli = Berth::new();
    let docker = DockerCli::find();

    // The same steps for berth and for docker, each with its own helper
    // state; the helper calls and the files must come out the same.
    let steps = |run: &dyn Fn(&[&str]) -> Outcome| {
        let mut transcript = Vec::new();
        for args in [
            vec!["login", "-u", USER, "-p", PASSWORD, &address],
            vec!["login", &address],
            vec!["logout", &address],
        ] {
            transcript.push(run(&args));
        }
        transcript
    };
    let berth_helper = HelperDir::new();
    let (_keep, config) = config_dir();
    fs_err::create_dir_all(&config).unwrap();
    fs_err::write(config.join("config.json"), r#"{"credsStore": "test"}"#).unwrap();
    let path = berth_helper.path_variable();
    let after_login = std::cell::RefCell::new(None);
    let berth_transcript = steps(&|args| {
        let run = berth(&berth_cli, &config, args, None, Some(&path));
        if args.len() > 2 {
            *after_login.borrow_mut() = Some(read(&config.join("config.json")));
        }
        (run.code(), run.stdout(), run.stderr())
    });
    assert_eq!(
        berth_transcript,
        [
            (0, "Login Succeeded\n".into(), CLI_PASSWORD_WARNING.into()),
            (
                0,
                "Authenticating with existing credentials...\nLogin Succeeded\n".into(),
                String::new()
            ),
            (
                0,
                format!("Removing login credentials for {address}\n"),
                String::new()
            ),
        ]
    );
    assert_eq!(
        after_login.into_inner().unwrap(),
        format!(
            "{{\n\t\"auths\": {{\n\t\t\"{address}\": {{}}\n\t}},\n\t\"credsStore\": \"test\"\n}}"
        )
    );
    assert_eq!(
        berth_helper.log(),
        format!(
            "store {address}\nget {address}\nstore {address}\nerase {address}\n\
             erase {address}\nerase http://{address}\nerase https://{address}\n"
        )
    );
    assert_eq!(berth_helper.stored(&address), None, "erased");
    assert_eq!(
        read(&config.join("config.json")),
        "{\n\t\"auths\": {},\n\t\"credsStore\": \"test\"\n}"
    );

    let Some(docker) = docker else {
        return;
    };
    if !docker.has_engine() {
        // docker retries stored credentials through the engine only.
        eprintln!("SKIP: comparing with docker needs an engine (BERTH_TEST_DOCKER_HOST)");
        return;
    }
    let docker_helper = HelperDir::new();
    let (_keep_docker, docker_config) = config_dir();
    fs_err::create_dir_all(&docker_config).unwrap();
    fs_err::write(
        docker_config.join("config.json"),
        r#"{"credsStore": "test"}"#,
    )
    .unwrap();
    let path = docker_helper.path_variable();
    let docker_transcript = steps(&|args| {
        let output = docker.run(&docker_config, args, None, Some(&path));
        let stderr = String::from_utf8_lossy(&output.stderr)
            .lines()
            .filter(|line| !line.starts_with("time="))
            .map(|line| format!("{line}\n"))
            .collect();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr,
        )
    });
    assert_eq!(docker_transcript, berth_transcript);
    assert_eq!(docker_helper.log(), berth_helper.log());
    assert_eq!(
        read(&docker_config.join("config.json")),
        read(&config.join("config.json"))
    );
}

#[test]
fn token_auth_keeps_the_identity_token_instead_of_the_password() {
    let registry = TokenRegistry::start();
    let address = registry.address();
    let (_keep, config) = config_dir();
    let berth_cli = Berth::new();

    let wrong = ["login", "-u", USER, "-p", "wrong", address.as_str()];
    let run = berth(&berth_cli, &config, &wrong, None, None);
    run.fails(1);
    let refused =
        format!("Get \"http://{address}/v2/\": unauthorized: incorrect username or password");
    assert_eq!(error_words(&run.output.stderr), refused);
    assert!(!config.exists());

    let right = ["login", "-u", USER, "-p", PASSWORD, address.as_str()];
    let run = berth(&berth_cli, &config, &right, None, None);
    assert_eq!(run.ok(), "Login Succeeded\n");
    // No password is stored, so no warning about storing it.
    assert_eq!(run.stderr(), CLI_PASSWORD_WARNING);
    let expected = format!(
        "{{\n\t\"auths\": {{\n\t\t\"{address}\": {{\n\t\t\t\"auth\": \"YWxpY2U6\",\n\t\t\t\"identitytoken\": \"refresh-1\"\n\t\t}}\n\t}}\n}}"
    );
    assert_eq!(read(&config.join("config.json")), expected);

    let Some(docker) = DockerCli::find() else {
        return;
    };
    let (_keep_docker, docker_config) = config_dir();
    let output = docker.run(&docker_config, &wrong, None, None);
    assert_eq!(error_words(&output.stderr), refused);
    let output = docker.run(&docker_config, &right, None, None);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(read(&docker_config.join("config.json")), expected);
}

/// The prompts on a terminal: `Username: `, then `Password: ` with echo
/// off (the password never appears on the terminal).
#[test]
fn prompts_read_the_password_without_echo() {
    let Some(registry) = BasicRegistry::start() else {
        return;
    };
    let address = registry.address();
    let (_keep, config) = config_dir();
    let berth_cli = Berth::new();

    let pty = nix::pty::openpty(None, None).unwrap();
    let slave = || -> Stdio { pty.slave.try_clone().unwrap().into() };
    let mut command: Command = berth_cli.command();
    let mut child = command
        .env("DOCKER_CONFIG", &config)
        .args(["login", &address])
        .stdin(slave())
        .stdout(slave())
        .stderr(slave())
        .spawn()
        .unwrap();
    drop(pty.slave);
    let master = std::fs::File::from(pty.master);
    let (sender, receiver) = std::sync::mpsc::channel::<Vec<u8>>();
    let mut reader = master.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 1024];
        // EIO once the CLI exited and the last slave end closed.
        while let Ok(read) = reader.read(&mut buffer) {
            if read == 0 || sender.send(buffer[..read].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut screen = String::new();
    let wait_for = |text: &str, screen: &mut String| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !screen.contains(text) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match receiver.recv_timeout(left) {
                Ok(bytes) => screen.push_str(&String::from_utf8_lossy(&bytes)),
                Err(_) => panic!("no {text:?} on the terminal; it shows:\n{screen}"),
            }
        }
    };
    let mut writer = master;
    wait_for("Username: ", &mut screen);
    writer.write_all(format!("{USER}\n").as_bytes()).unwrap();
    wait_for("Password: ", &mut screen);
    // Type only once echo is off, as a person would be too slow to beat it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while nix::sys::termios::tcgetattr(&writer)
        .unwrap()
        .local_flags
        .contains(nix::sys::termios::LocalFlags::ECHO)
    {
        assert!(std::time::Instant::now() < deadline, "echo never went off");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    writer
        .write_all(format!("{PASSWORD}\n").as_bytes())
        .unwrap();
    wait_for("Login Succeeded", &mut screen);
    assert!(child.wait().unwrap().success(), "{screen}");
    let screen = screen.replace('\r', "");
    assert!(
        screen.starts_with(&format!("Username: {USER}\nPassword: \n")),
        "{screen}"
    );
    assert!(
        !screen.contains(PASSWORD),
        "the password was echoed:\n{screen}"
    );
    assert_eq!(
        json(&config.join("config.json"))["auths"][&address]["auth"],
        "YWxpY2U6czNjcmV0"
    );
}
