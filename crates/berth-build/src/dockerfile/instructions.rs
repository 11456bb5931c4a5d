//! From nodes to instructions and stages, with BuildKit's
//! `instructions.Parse` rules: argument counts, flags, stage names,
//! `ONBUILD` triggers, `HEALTHCHECK` forms; `ARG`s before the first `FROM`
//! become global, anything else there is refused.

use super::ast::{
    ArgDeclaration, Command, Copy, Dockerfile, Healthcheck, Instruction, InstructionKind, KeyValue,
    Run, Stage,
};
use super::error::{ParseError, ParseErrorKind};
use super::flags::{self, check_flags};
use super::heredoc::parse_heredoc;
use super::lines::Lines;
use super::node::{Args, Node};
use super::suggest::suggest;
use crate::dockerfile::Directives;

/// Every instruction BuildKit knows, for "did you mean".
const INSTRUCTIONS: &[&str] = &[
    "ADD",
    "ARG",
    "CMD",
    "COPY",
    "ENTRYPOINT",
    "ENV",
    "EXPOSE",
    "FROM",
    "HEALTHCHECK",
    "LABEL",
    "MAINTAINER",
    "ONBUILD",
    "RUN",
    "SHELL",
    "STOPSIGNAL",
    "USER",
    "VOLUME",
    "WORKDIR",
];

/// The arguments as BuildKit's `nodeArgs` lists them.
fn arguments(args: &Args) -> Vec<String> {
    match args {
        Args::Empty => Vec::new(),
        Args::Json(words) | Args::Words(words) => words.clone(),
        Args::Text(text) => vec![text.clone()],
        Args::Pairs(pairs) => pairs
            .iter()
            .flat_map(|(key, value, equals)| {
                [
                    key.clone(),
                    value.clone(),
                    if *equals { "=" } else { "" }.to_string(),
                ]
            })
            .collect(),
        Args::Healthcheck { kind, command } => {
            let mut all = vec![kind.clone()];
            all.extend(arguments(command));
            all
        }
        Args::Onbuild(child) => {
            let mut all = vec![child.command.clone()];
            all.extend(arguments(&child.args));
            all
        }
    }
}

/// A shell-form or exec-form command (BuildKit's `handleJSONArgs`).
fn command(args: &Args) -> Command {
    match args {
        Args::Json(words) => Command::Exec(words.clone()),
        other => Command::Shell(arguments(other).join(" ")),
    }
}

fn pairs(node: &Node, instruction: &str) -> Result<Vec<KeyValue>, ParseErrorKind> {
    let Args::Pairs(pairs) = &node.args else {
        return Err(ParseErrorKind::AtLeastOneArgument {
            instruction: instruction.to_string(),
        });
    };
    pairs
        .iter()
        .map(|(key, value, _)| {
            if key.is_empty() {
                return Err(ParseErrorKind::BlankName {
                    instruction: instruction.to_string(),
                });
            }
            Ok(KeyValue {
                key: key.clone(),
                value: value.clone(),
            })
        })
        .collect()
}

fn exactly_one(args: &[String], instruction: &str) -> Result<String, ParseErrorKind> {
    match args {
        [one] => Ok(one.clone()),
        _ => Err(ParseErrorKind::ExactlyOneArgument {
            instruction: instruction.to_string(),
        }),
    }
}

fn at_least_one(args: &[String], instruction: &str) -> Result<(), ParseErrorKind> {
    if args.is_empty() {
        return Err(ParseErrorKind::AtLeastOneArgument {
            instruction: instruction.to_string(),
        });
    }
    Ok(())
}

fn copy(node: &Node, instruction: &str) -> Result<Copy, ParseErrorKind> {
    let args = arguments(&node.args);
    let Some((destination, sources)) = args.split_last().filter(|(_, s)| !s.is_empty()) else {
        return Err(ParseErrorKind::NoDestination {
            instruction: instruction.to_string(),
        });
    };
    let known = if instruction == "COPY" {
        flags::COPY
    } else {
        flags::ADD
    };
    let flags = check_flags(&node.flags, known)?;
    if parse_heredoc(destination).is_some() {
        return Err(ParseErrorKind::HeredocDestination {
            instruction: instruction.to_string(),
        });
    }
    Ok(Copy {
        sources: sources.to_vec(),
        destination: destination.clone(),
        flags,
        heredocs: node.heredocs.clone(),
    })
}

/// `(?i)^\s*ONBUILD\s*` removed from the line, heredoc bodies appended:
/// the trigger as the image's `OnBuild` stores it.
fn onbuild_expression(node: &Node) -> String {
    let is_space = |c: char| matches!(c, '\t' | '\n' | '\x0c' | '\r' | ' ');
    let text = node.original.trim_start_matches(is_space);
    let mut expression = match text.get(..7) {
        Some(word) if word.eq_ignore_ascii_case("onbuild") => {
            text[7..].trim_start_matches(is_space).to_string()
        }
        _ => node.original.clone(),
    };
    for heredoc in &node.heredocs {
        expression.push('\n');
        expression.push_str(&heredoc.content);
        expression.push_str(&heredoc.name);
    }
    expression
}

fn healthcheck(node: &Node) -> Result<Healthcheck, ParseErrorKind> {
    let args = arguments(&node.args);
    at_least_one(&args, "HEALTHCHECK")?;
    let kind = args[0].to_uppercase();
    let rest = &args[1..];
    if kind == "NONE" {
        if !rest.is_empty() {
            return Err(ParseErrorKind::HealthcheckNoneArguments);
        }
        return Ok(Healthcheck::None);
    }
    let flags = check_flags(&node.flags, flags::HEALTHCHECK)?;
    if kind != "CMD" {
        return Err(ParseErrorKind::HealthcheckType { kind });
    }
    if rest.is_empty() {
        return Err(ParseErrorKind::HealthcheckMissingCommand);
    }
    let test = if node.is_json() {
        Command::Exec(rest.to_vec())
    } else {
        Command::Shell(rest.join(" "))
    };
    Ok(Healthcheck::Check { test, flags })
}

/// What a node becomes: an instruction, or the `FROM` opening a stage.
enum Parsed {
    From(Stage),
    Instruction(InstructionKind),
}

fn parse_node_instruction(node: &Node) -> Result<Parsed, ParseErrorKind> {
    use InstructionKind as K;
    let args = arguments(&node.args);
    let none = |node: &Node| check_flags(&node.flags, flags::NONE).map(|_| ());
    let kind = match node.lowercase_command().as_str() {
        "from" => {
            let name = match args.as_slice() {
                [_, as_word, name] if as_word.eq_ignore_ascii_case("as") => {
                    let lower = name.to_lowercase();
                    let mut chars = lower.chars();
                    let valid = chars.next().is_some_and(|c| c.is_ascii_lowercase())
                        && chars.all(|c| {
                            c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c)
                        });
                    if !valid {
                        return Err(ParseErrorKind::InvalidStageName { name: name.clone() });
                    }
                    Some(lower)
                }
                [_] => None,
                _ => return Err(ParseErrorKind::FromArguments),
            };
            let flags = check_flags(&node.flags, flags::FROM)?;
            let platform = flags.into_iter().find_map(|f| f.value);
            return Ok(Parsed::From(Stage {
                base: args[0].clone(),
                name,
                platform,
                line: node.start_line,
                instructions: Vec::new(),
            }));
        }
        "env" => {
            none(node)?;
            K::Env(pairs(node, "ENV")?)
        }
        "maintainer" => {
            let maintainer = exactly_one(&args, "MAINTAINER")?;
            none(node)?;
            K::Maintainer(maintainer)
        }
        "label" => {
            none(node)?;
            K::Label(pairs(node, "LABEL")?)
        }
        "add" => K::Add(copy(node, "ADD")?),
        "copy" => K::Copy(copy(node, "COPY")?),
        "onbuild" => {
            at_least_one(&args, "ONBUILD")?;
            none(node)?;
            let trigger = args[0].trim().to_uppercase();
            match trigger.as_str() {
                "ONBUILD" => return Err(ParseErrorKind::OnbuildChained),
                "MAINTAINER" | "FROM" => return Err(ParseErrorKind::OnbuildTrigger { trigger }),
                _ => {}
            }
            K::Onbuild(onbuild_expression(node))
        }
        "workdir" => {
            let path = exactly_one(&args, "WORKDIR")?;
            none(node)?;
            K::Workdir(path)
        }
        "run" => {
            let flags = check_flags(&node.flags, flags::RUN)?;
            K::Run(Run {
                command: command(&node.args),
                flags,
                heredocs: node.heredocs.clone(),
            })
        }
        "cmd" => {
            none(node)?;
            K::Cmd(command(&node.args))
        }
        "entrypoint" => {
            none(node)?;
            K::Entrypoint(command(&node.args))
        }
        "healthcheck" => K::Healthcheck(healthcheck(node)?),
        "expose" => {
            at_least_one(&args, "EXPOSE")?;
            none(node)?;
            // BuildKit sorts the (unexpanded) ports.
            let mut ports = args;
            ports.sort();
            K::Expose(ports)
        }
        "user" => {
            let user = exactly_one(&args, "USER")?;
            none(node)?;
            K::User(user)
        }
        "volume" => {
            at_least_one(&args, "VOLUME")?;
            none(node)?;
            let volumes = args
                .iter()
                .map(|v| match v.trim() {
                    "" => Err(ParseErrorKind::EmptyVolume),
                    v => Ok(v.to_string()),
                })
                .collect::<Result<Vec<_>, _>>()?;
            K::Volume(volumes)
        }
        // BuildKit checks no flags for STOPSIGNAL and ARG.
        "stopsignal" => K::StopSignal(exactly_one(&args, "STOPSIGNAL")?),
        "arg" => {
            at_least_one(&args, "ARG")?;
            let declarations = args
                .iter()
                .map(|word| match word.split_once('=') {
                    Some(("", _)) => Err(ParseErrorKind::BlankName {
                        instruction: "ARG".to_string(),
                    }),
                    Some((name, default)) => Ok(ArgDeclaration {
                        name: name.to_string(),
                        default: Some(default.to_string()),
                    }),
                    None => Ok(ArgDeclaration {
                        name: word.clone(),
                        default: None,
                    }),
                })
                .collect::<Result<Vec<_>, _>>()?;
            K::Arg(declarations)
        }
        "shell" => {
            none(node)?;
            match &node.args {
                Args::Json(shell) if !shell.is_empty() => K::Shell(shell.clone()),
                Args::Json(_) | Args::Empty => {
                    return Err(ParseErrorKind::AtLeastOneArgument {
                        instruction: "SHELL".to_string(),
                    })
                }
                _ => {
                    return Err(ParseErrorKind::NotJson {
                        instruction: "SHELL".to_string(),
                    })
                }
            }
        }
        _ => {
            return Err(ParseErrorKind::UnknownInstruction {
                instruction: node.command.clone(),
                suggestion: suggest(&node.command, INSTRUCTIONS, false),
            })
        }
    };
    Ok(Parsed::Instruction(kind))
}

/// Assembles the stages (BuildKit's `instructions.Parse`).
pub(crate) fn build_dockerfile(lines: Lines) -> Result<Dockerfile, ParseError> {
    let mut global_args = Vec::new();
    let mut stages: Vec<Stage> = Vec::new();
    for node in &lines.nodes {
        let at = |kind| ParseError::new(node.start_line, node.end_line, kind);
        match parse_node_instruction(node).map_err(at)? {
            Parsed::From(stage) => stages.push(stage),
            Parsed::Instruction(InstructionKind::Arg(args)) if stages.is_empty() => {
                global_args.extend(args)
            }
            Parsed::Instruction(kind) => {
                let Some(stage) = stages.last_mut() else {
                    return Err(at(ParseErrorKind::NoBuildStage));
                };
                stage.instructions.push(Instruction {
                    line: node.start_line,
                    original: node.original.trim().to_string(),
                    kind,
                });
            }
        }
    }
    if stages.is_empty() {
        let line = lines.nodes.last().map_or(1, |n| n.end_line);
        return Err(ParseError::new(line, line, ParseErrorKind::NoStages));
    }
    Ok(Dockerfile {
        directives: Directives {
            escape: lines.escape,
            syntax: lines.syntax,
        },
        global_args,
        stages,
    })
}
