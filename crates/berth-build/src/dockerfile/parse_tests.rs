//! `parse` end to end: each instruction, stages, and BuildKit's errors with
//! their lines and wording.

use super::*;

fn only_stage(source: &str) -> Stage {
    let mut dockerfile = parse(source).unwrap_or_else(|e| panic!("{source:?}: {e}"));
    assert_eq!(dockerfile.stages.len(), 1);
    dockerfile.stages.remove(0)
}

fn kinds(source: &str) -> Vec<InstructionKind> {
    only_stage(source)
        .instructions
        .into_iter()
        .map(|i| i.kind)
        .collect()
}

fn one(source: &str) -> InstructionKind {
    let mut all = kinds(&format!("FROM scratch\n{source}"));
    assert_eq!(all.len(), 1, "{all:?}");
    all.remove(0)
}

fn error(source: &str) -> ParseError {
    parse(source).expect_err(source)
}

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

#[test]
fn stages_names_platforms_and_global_args() {
    let dockerfile = parse(
        "# syntax=docker/dockerfile:1\nARG BASE=alpine VERSION\nfrom --platform=$BUILDPLATFORM ${BASE}:3 As Build\nRUN make\nFROM scratch\nCOPY --from=build /a /a\n",
    )
    .unwrap();
    assert_eq!(
        dockerfile.directives.syntax.as_deref(),
        Some("docker/dockerfile:1")
    );
    assert_eq!(dockerfile.directives.escape, '\\');
    assert_eq!(
        dockerfile.global_args,
        [
            ArgDeclaration {
                name: "BASE".into(),
                default: Some("alpine".into())
            },
            ArgDeclaration {
                name: "VERSION".into(),
                default: None
            },
        ]
    );
    let build = &dockerfile.stages[0];
    assert_eq!(build.base, "${BASE}:3");
    assert_eq!(build.name.as_deref(), Some("build"));
    assert_eq!(build.platform.as_deref(), Some("$BUILDPLATFORM"));
    assert_eq!(build.line, 3);
    assert_eq!(build.instructions[0].line, 4);
    assert_eq!(dockerfile.stages[1].name, None);
    assert_eq!(
        dockerfile.stages[1].instructions[0].original,
        "COPY --from=build /a /a"
    );
}

#[test]
fn run_shell_exec_and_flags() {
    assert_eq!(
        one("RUN --mount=type=cache,target=/root/.cache --network=none pip install x"),
        InstructionKind::Run(Run {
            command: Command::Shell("pip install x".into()),
            flags: vec![
                Flag {
                    name: "mount".into(),
                    value: Some("type=cache,target=/root/.cache".into())
                },
                Flag {
                    name: "network".into(),
                    value: Some("none".into())
                },
            ],
            heredocs: vec![],
        })
    );
    let InstructionKind::Run(run) = one("run [\"sh\", \"-c\", \"echo $HOME\"]") else {
        panic!()
    };
    assert_eq!(
        run.command,
        Command::Exec(strings(&["sh", "-c", "echo $HOME"]))
    );
    let InstructionKind::Run(run) = one("RUN [\"a\" not json") else {
        panic!()
    };
    assert_eq!(run.command, Command::Shell("[\"a\" not json".into()));
}

#[test]
fn cmd_entrypoint_shell() {
    assert_eq!(
        one("CMD [\"nginx\", \"-g\", \"daemon off;\"]"),
        InstructionKind::Cmd(Command::Exec(strings(&["nginx", "-g", "daemon off;"])))
    );
    assert_eq!(
        one("ENTRYPOINT exec  top -b"),
        InstructionKind::Entrypoint(Command::Shell("exec  top -b".into()))
    );
    assert_eq!(
        one("SHELL [\"powershell\", \"-command\"]"),
        InstructionKind::Shell(strings(&["powershell", "-command"]))
    );
}

#[test]
fn copy_and_add() {
    assert_eq!(
        one("COPY --chown=1:1 --link a b* /dst/"),
        InstructionKind::Copy(Copy {
            sources: strings(&["a", "b*"]),
            destination: "/dst/".into(),
            flags: vec![
                Flag {
                    name: "chown".into(),
                    value: Some("1:1".into())
                },
                Flag {
                    name: "link".into(),
                    value: None
                },
            ],
            heredocs: vec![],
        })
    );
    let InstructionKind::Add(add) = one("ADD [\"a b\", \"/c d/\"]") else {
        panic!()
    };
    assert_eq!(
        (add.sources, add.destination),
        (strings(&["a b"]), "/c d/".to_string())
    );
    let InstructionKind::Add(add) =
        one("ADD --checksum=sha256:00 --keep-git-dir=true https://x/y.git /src")
    else {
        panic!()
    };
    assert_eq!(add.flags.len(), 2);
}

#[test]
fn env_label_arg() {
    assert_eq!(
        one("ENV A=1 B=\"two words\" C=${A}"),
        InstructionKind::Env(vec![
            KeyValue {
                key: "A".into(),
                value: "1".into()
            },
            KeyValue {
                key: "B".into(),
                value: "\"two words\"".into()
            },
            KeyValue {
                key: "C".into(),
                value: "${A}".into()
            },
        ])
    );
    assert_eq!(
        one("ENV PATH /usr/bin:$PATH  and more"),
        InstructionKind::Env(vec![KeyValue {
            key: "PATH".into(),
            value: "/usr/bin:$PATH  and more".into()
        }])
    );
    assert_eq!(
        one("LABEL \"com.example.vendor\"=\"ACME\" version=1.0"),
        InstructionKind::Label(vec![
            KeyValue {
                key: "\"com.example.vendor\"".into(),
                value: "\"ACME\"".into()
            },
            KeyValue {
                key: "version".into(),
                value: "1.0".into()
            },
        ])
    );
    assert_eq!(
        one("ARG a b=2 c=\"x y\" d="),
        InstructionKind::Arg(vec![
            ArgDeclaration {
                name: "a".into(),
                default: None
            },
            ArgDeclaration {
                name: "b".into(),
                default: Some("2".into())
            },
            ArgDeclaration {
                name: "c".into(),
                default: Some("\"x y\"".into())
            },
            ArgDeclaration {
                name: "d".into(),
                default: Some(String::new())
            },
        ])
    );
}

#[test]
fn simple_instructions() {
    assert_eq!(one("WORKDIR /a b"), InstructionKind::Workdir("/a b".into()));
    assert_eq!(one("USER app:app"), InstructionKind::User("app:app".into()));
    assert_eq!(
        one("STOPSIGNAL SIGTERM"),
        InstructionKind::StopSignal("SIGTERM".into())
    );
    assert_eq!(
        one("MAINTAINER Jane <j@x>"),
        InstructionKind::Maintainer("Jane <j@x>".into())
    );
    assert_eq!(
        one("EXPOSE 8080/tcp 443 $PORT"),
        InstructionKind::Expose(strings(&["$PORT", "443", "8080/tcp"]))
    );
    assert_eq!(
        one("VOLUME /a /b"),
        InstructionKind::Volume(strings(&["/a", "/b"]))
    );
    assert_eq!(
        one("VOLUME [\"/data\"]"),
        InstructionKind::Volume(strings(&["/data"]))
    );
}

#[test]
fn healthchecks() {
    assert_eq!(
        one("HEALTHCHECK NONE"),
        InstructionKind::Healthcheck(Healthcheck::None)
    );
    assert_eq!(
        one("HEALTHCHECK --interval=5s --retries=3 CMD curl -f http://localhost/"),
        InstructionKind::Healthcheck(Healthcheck::Check {
            test: Command::Shell("curl -f http://localhost/".into()),
            flags: vec![
                Flag {
                    name: "interval".into(),
                    value: Some("5s".into())
                },
                Flag {
                    name: "retries".into(),
                    value: Some("3".into())
                },
            ],
        })
    );
    assert_eq!(
        one("healthcheck cmd [\"/bin/check\"]"),
        InstructionKind::Healthcheck(Healthcheck::Check {
            test: Command::Exec(strings(&["/bin/check"])),
            flags: vec![]
        })
    );
}

#[test]
fn onbuild_keeps_the_trigger_text() {
    assert_eq!(
        one("ONBUILD  RUN  make  all"),
        InstructionKind::Onbuild("RUN  make  all".into())
    );
    assert_eq!(
        one("onbuild ADD . /app"),
        InstructionKind::Onbuild("ADD . /app".into())
    );
    assert_eq!(
        one("ONBUILD RUN <<EOF\necho hi\nEOF"),
        InstructionKind::Onbuild("RUN <<EOF\necho hi\nEOF".into())
    );
}

#[test]
fn heredocs_in_run_and_copy() {
    let stage = only_stage("FROM a\nRUN <<EOF\nset -e\necho $X\nEOF\nCOPY <<-\"CONF\" 3<<X /etc/app.conf\n\tkey=1\n\tCONF\nx\nX\nRUN ok\n");
    let InstructionKind::Run(run) = &stage.instructions[0].kind else {
        panic!()
    };
    assert_eq!(run.command, Command::Shell("<<EOF".into()));
    assert_eq!(
        run.heredocs,
        [Heredoc {
            name: "EOF".into(),
            content: "set -e\necho $X\n".into(),
            expand: true,
            chomp: false,
            file_descriptor: None
        }]
    );
    assert_eq!(stage.instructions[0].original, "RUN <<EOF");
    let InstructionKind::Copy(copy) = &stage.instructions[1].kind else {
        panic!()
    };
    assert_eq!(copy.sources, strings(&["<<-\"CONF\"", "3<<X"]));
    assert_eq!(copy.heredocs[0].name, "CONF");
    assert!(!copy.heredocs[0].expand && copy.heredocs[0].chomp);
    assert_eq!(copy.heredocs[0].chomped_content(), "key=1\n");
    assert_eq!(copy.heredocs[1].file_descriptor, Some(3));
    assert_eq!(stage.instructions[1].line, 6);
    assert_eq!(stage.instructions[2].line, 11);
    // Exec form has no heredocs.
    let InstructionKind::Run(run) = one("RUN [\"cat\", \"<<EOF\"]") else {
        panic!()
    };
    assert!(run.heredocs.is_empty());
}

#[test]
fn escape_directive_backtick() {
    let dockerfile =
        parse("# escape=`\n\nFROM mcr/windows\nRUN dir c:\\ `\n  /s\nCOPY a` b c:\\dst\\\n")
            .unwrap();
    assert_eq!(dockerfile.directives.escape, '`');
    let stage = &dockerfile.stages[0];
    assert_eq!(
        stage.instructions[0].kind,
        InstructionKind::Run(Run {
            command: Command::Shell("dir c:\\   /s".into()),
            flags: vec![],
            heredocs: vec![]
        })
    );
    let InstructionKind::Copy(copy) = &stage.instructions[1].kind else {
        panic!()
    };
    assert_eq!(copy.destination, "c:\\dst\\");
}

#[test]
fn original_is_the_joined_line() {
    let stage =
        only_stage("FROM a\nRUN apt-get update && \\\n    apt-get install -y \\\n      curl\n");
    assert_eq!(
        stage.instructions[0].original,
        "RUN apt-get update &&     apt-get install -y       curl"
    );
    assert_eq!(stage.instructions[0].line, 2);
}

#[test]
fn unknown_instruction_with_suggestion() {
    let e = error("FROM a\nRUN x\nFOO bar\n");
    assert_eq!(
        (e.line, e.to_string().as_str()),
        (
            3,
            "dockerfile parse error on line 3: unknown instruction: FOO (did you mean FROM?)"
        )
    );
    assert_eq!(
        error("FROM a\nWHATEVER x").to_string(),
        "dockerfile parse error on line 2: unknown instruction: WHATEVER"
    );
    assert_eq!(
        error("FROM a\nCOPPY a b").to_string(),
        "dockerfile parse error on line 2: unknown instruction: COPPY (did you mean COPY?)"
    );
    assert_eq!(
        error("FROM a\nrn x").to_string(),
        "dockerfile parse error on line 2: unknown instruction: rn (did you mean run?)"
    );
}

#[test]
fn instructions_before_from() {
    let e = error("ARG A\nRUN echo\nFROM a");
    assert_eq!(
        (e.line, e.to_string().as_str()),
        (2, "no build stage in current context")
    );
    assert_eq!(
        error("ARG A=1\n").to_string(),
        "dockerfile contains no stages to build"
    );
    assert_eq!(
        error("\n# nothing\n").to_string(),
        "file with no instructions"
    );
}

#[test]
fn from_errors() {
    assert_eq!(
        error("FROM").to_string(),
        "dockerfile parse error on line 1: FROM requires either one or three arguments"
    );
    assert_eq!(error("FROM a b").kind, ParseErrorKind::FromArguments);
    assert_eq!(error("FROM a AS b c").kind, ParseErrorKind::FromArguments);
    assert_eq!(
        error("FROM a AS 1st").to_string(),
        "dockerfile parse error on line 1: invalid name for build stage: \"1st\", name can't start with a number or contain symbols"
    );
    assert_eq!(
        error("FROM --plaform=x a").to_string(),
        "dockerfile parse error on line 1: unknown flag: --plaform (did you mean platform?)"
    );
}

#[test]
fn env_label_arg_errors() {
    let e = error("FROM a\n\nENV ONLYKEY\n");
    assert_eq!(
        (e.line, e.to_string().as_str()),
        (3, "ENV must have two arguments")
    );
    assert_eq!(
        error("FROM a\nLABEL a=b c").to_string(),
        "Syntax error - can't find = in \"c\". Must be of the form: name=value"
    );
    assert_eq!(
        error("FROM a\nENV =x").to_string(),
        "dockerfile parse error on line 2: ENV names can not be blank"
    );
    assert_eq!(
        error("FROM a\nENV").to_string(),
        "dockerfile parse error on line 2: ENV requires at least one argument"
    );
    assert_eq!(
        error("FROM a\nARG =x").to_string(),
        "dockerfile parse error on line 2: ARG names can not be blank"
    );
    assert_eq!(
        error("FROM a\nARG").to_string(),
        "dockerfile parse error on line 2: ARG requires at least one argument"
    );
}

#[test]
fn argument_count_errors() {
    let message = |s: &str| error(&format!("FROM a\n{s}")).kind.to_string();
    assert_eq!(message("COPY onlyone"), "COPY requires at least two arguments, but only one was provided. Destination could not be determined");
    assert_eq!(message("ADD"), "ADD requires at least two arguments, but only one was provided. Destination could not be determined");
    assert_eq!(
        message("COPY a <<EOF\nx\nEOF"),
        "COPY cannot accept a heredoc as a destination"
    );
    assert_eq!(message("WORKDIR"), "WORKDIR requires exactly one argument");
    assert_eq!(message("USER"), "USER requires exactly one argument");
    assert_eq!(message("EXPOSE"), "EXPOSE requires at least one argument");
    assert_eq!(
        message("VOLUME [\"\"]"),
        "VOLUME specified can not be an empty string"
    );
    assert_eq!(
        message("SHELL sh -c"),
        "SHELL requires the arguments to be in JSON form"
    );
    assert_eq!(message("SHELL []"), "SHELL requires at least one argument");
    assert_eq!(
        message("CMD [\"a\", 1]"),
        "when using JSON array syntax, arrays must be comprised of strings only"
    );
}

#[test]
fn onbuild_and_healthcheck_errors() {
    let message = |s: &str| error(&format!("FROM a\n{s}")).kind.to_string();
    assert_eq!(
        message("ONBUILD ONBUILD RUN x"),
        "Chaining ONBUILD via `ONBUILD ONBUILD` isn't allowed"
    );
    assert_eq!(
        message("ONBUILD from x"),
        "FROM isn't allowed as an ONBUILD trigger"
    );
    assert_eq!(
        message("ONBUILD MAINTAINER me"),
        "MAINTAINER isn't allowed as an ONBUILD trigger"
    );
    assert_eq!(message("ONBUILD"), "ONBUILD requires at least one argument");
    assert_eq!(
        message("HEALTHCHECK NONE x"),
        "HEALTHCHECK NONE takes no arguments"
    );
    assert_eq!(
        message("HEALTHCHECK CMD"),
        "Missing command after HEALTHCHECK CMD"
    );
    assert_eq!(
        message("HEALTHCHECK TEST x"),
        "Unknown type \"TEST\" in HEALTHCHECK (try CMD)"
    );
    assert_eq!(
        message("HEALTHCHECK --interva=1s CMD x"),
        "unknown flag: --interva (did you mean interval?)"
    );
}

#[test]
fn flag_errors() {
    let message = |s: &str| error(&format!("FROM a\n{s}")).to_string();
    assert_eq!(
        message("COPY --chmown=1 a b"),
        "dockerfile parse error on line 2: unknown flag: --chmown (did you mean chown?)"
    );
    assert_eq!(
        message("COPY --link=maybe a b"),
        "dockerfile parse error on line 2: expecting boolean value for flag --link, not: maybe"
    );
    assert_eq!(
        message("RUN --network=a --network=b x"),
        "dockerfile parse error on line 2: duplicate flag specified: --network"
    );
    assert_eq!(
        message("WORKDIR --x /a"),
        "dockerfile parse error on line 2: unknown flag: --x"
    );
    // BuildKit does not check ARG's and STOPSIGNAL's flags.
    assert!(parse("FROM a\nSTOPSIGNAL --x 9\nARG --y z").is_ok());
}

#[test]
fn directive_errors() {
    let e = error("# escape=`\n# escape=\\\nFROM a");
    assert_eq!(
        (e.line, e.to_string().as_str()),
        (2, "only one escape parser directive can be used")
    );
    assert_eq!(
        error("# escape=$\nFROM a").to_string(),
        "invalid escape token '$' does not match ` or \\"
    );
}

#[test]
fn parser_errors_win_over_instruction_errors() {
    // BuildKit splits the whole file before it checks any instruction.
    let e = error("FROM a\nFOO\nRUN <<EOF\n");
    assert_eq!(e.kind, ParseErrorKind::UnterminatedHeredoc);
    assert_eq!(e.line, 3);
}
