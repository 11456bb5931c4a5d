//! The `--flags` each instruction takes, checked as BuildKit's `BFlags`
//! checks them (names, values present, booleans, duplicates). The values
//! stay raw in the AST: what they mean is the builder's business.

use super::ast::Flag;
use super::error::ParseErrorKind;
use super::suggest::suggest;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FlagKind {
    Bool,
    String,
    /// May be given more than once (`--mount`, `--exclude`).
    Strings,
}

use FlagKind::{Bool, String as Text, Strings};

pub(crate) const FROM: &[(&str, FlagKind)] = &[("platform", Text)];
pub(crate) const RUN: &[(&str, FlagKind)] = &[
    ("mount", Strings),
    ("network", Text),
    ("security", Text),
    ("device", Strings),
];
pub(crate) const COPY: &[(&str, FlagKind)] = &[
    ("chown", Text),
    ("from", Text),
    ("chmod", Text),
    ("link", Bool),
    ("exclude", Strings),
    ("parents", Bool),
];
pub(crate) const ADD: &[(&str, FlagKind)] = &[
    ("chown", Text),
    ("chmod", Text),
    ("link", Bool),
    ("keep-git-dir", Bool),
    ("checksum", Text),
    ("unpack", Bool),
    ("exclude", Strings),
];
pub(crate) const HEALTHCHECK: &[(&str, FlagKind)] = &[
    ("interval", Text),
    ("timeout", Text),
    ("start-period", Text),
    ("start-interval", Text),
    ("retries", Text),
];
pub(crate) const NONE: &[(&str, FlagKind)] = &[];

/// Checks `words` against the flags `known` and returns them split.
pub(crate) fn check_flags(
    words: &[String],
    known: &[(&str, FlagKind)],
) -> Result<Vec<Flag>, ParseErrorKind> {
    let mut flags: Vec<Flag> = Vec::new();
    for word in words {
        if word == "--" {
            break;
        }
        let (written, value) = match word.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (word.as_str(), None),
        };
        // extract_flags only hands over words starting with `--`.
        let name = written.strip_prefix("--").unwrap_or(written);
        let Some(&(_, kind)) = known.iter().find(|(n, _)| *n == name) else {
            let names: Vec<&str> = known.iter().map(|(n, _)| *n).collect();
            return Err(ParseErrorKind::UnknownFlag {
                flag: written.to_string(),
                suggestion: suggest(name, &names, true),
            });
        };
        if kind != Strings && flags.iter().any(|f| f.name == name) {
            return Err(ParseErrorKind::DuplicateFlag {
                flag: written.to_string(),
            });
        }
        let missing = || ParseErrorKind::MissingFlagValue {
            flag: written.to_string(),
        };
        match (kind, value) {
            (Bool, Some("")) => return Err(missing()),
            (Bool, Some(v)) if !matches!(v.to_lowercase().as_str(), "true" | "false") => {
                return Err(ParseErrorKind::NotBoolean {
                    flag: written.to_string(),
                    value: v.to_string(),
                })
            }
            (Text | Strings, None) => return Err(missing()),
            _ => {}
        }
        flags.push(Flag {
            name: name.to_string(),
            value: value.map(str::to_string),
        });
    }
    Ok(flags)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(words: &[&str], known: &[(&str, FlagKind)]) -> Result<Vec<Flag>, String> {
        let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        check_flags(&words, known).map_err(|e| e.to_string())
    }

    #[test]
    fn known_flags_pass_raw() {
        let flags = check(
            &["--from=build", "--link", "--exclude=a", "--exclude=b"],
            COPY,
        )
        .unwrap();
        assert_eq!(
            flags[0],
            Flag {
                name: "from".into(),
                value: Some("build".into())
            }
        );
        assert_eq!(
            flags[1],
            Flag {
                name: "link".into(),
                value: None
            }
        );
        assert_eq!(flags.len(), 4);
    }

    #[test]
    fn bflags_errors() {
        assert_eq!(
            check(&["--chmown=1"], COPY).unwrap_err(),
            "unknown flag: --chmown (did you mean chown?)"
        );
        assert_eq!(check(&["--x"], NONE).unwrap_err(), "unknown flag: --x");
        assert_eq!(
            check(&["--from=a", "--from=b"], COPY).unwrap_err(),
            "duplicate flag specified: --from"
        );
        assert_eq!(
            check(&["--from"], COPY).unwrap_err(),
            "missing a value on flag: --from"
        );
        assert_eq!(
            check(&["--link="], COPY).unwrap_err(),
            "missing a value on flag: --link"
        );
        assert_eq!(
            check(&["--link=yes"], COPY).unwrap_err(),
            "expecting boolean value for flag --link, not: yes"
        );
        assert!(check(&["--link=FALSE"], COPY).is_ok());
    }
}
