//! Cases in the spirit of BuildKit's `envVarTest` and `wordsTest` (the
//! behaviour checked against `shell/lex.go`; the cases are ours).

use super::*;

fn env(name: &str) -> Option<String> {
    match name {
        "HOME" => Some("/root".into()),
        "SHELL" => Some("sh".into()),
        "EMPTY" => Some(String::new()),
        "SPACED" => Some("  a  b ".into()),
        "PATHS" => Some("/usr/local/bin/tool.tar.gz".into()),
        "GREEK" => Some("αβγ".into()),
        _ => None,
    }
}

fn word(s: &str) -> Result<String, ExpandError> {
    expand_word(s, '\\', &env)
}

fn ok(s: &str) -> String {
    word(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

fn words(s: &str) -> Vec<String> {
    expand_words(s, '\\', &env).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

#[test]
fn plain_references() {
    assert_eq!(ok("x$HOME/y"), "x/root/y");
    assert_eq!(ok("x${HOME}y"), "x/rooty");
    assert_eq!(ok("x$UNSET.y"), "x.y");
    assert_eq!(ok("$GREEK!"), "αβγ!");
    assert_eq!(ok("$"), "$");
    assert_eq!(ok("a$.b"), "a$.b");
    assert_eq!(ok("${x}}"), "}");
}

#[test]
fn positional_and_special_parameters_are_empty() {
    assert_eq!(ok("a$1b"), "ab");
    assert_eq!(ok("$123z"), "z");
    assert_eq!(ok("${12:-d}"), "d");
    assert_eq!(ok("$@@"), "@");
    assert_eq!(ok("${#:+x}y"), "y");
    assert_eq!(ok("$$"), "");
}

#[test]
fn quotes_and_escapes() {
    assert_eq!(ok("'$HOME'"), "$HOME");
    assert_eq!(ok("\"$HOME\""), "/root");
    assert_eq!(ok("\\$HOME"), "$HOME");
    assert_eq!(ok("\\\\$HOME"), "\\/root");
    assert_eq!(
        ok("\"a\\tb\""),
        "a\\tb",
        "unknown escapes stay inside double quotes"
    );
    assert_eq!(ok("a\\tb"), "atb", "outside quotes the escape goes");
    assert_eq!(ok("'a\\tb'"), "a\\tb");
    assert_eq!(ok("\"a\\\"b\""), "a\"b");
    assert_eq!(ok("tail\\"), "tail", "a final escape is dropped");
    assert_eq!(ok("\"'\""), "'");
    assert_eq!(ok("\\${}"), "${}");
}

#[test]
fn backtick_escape() {
    let expanded = expand_word("a`$HOME `\"b", '`', &env).unwrap();
    assert_eq!(expanded, "a$HOME \"b");
    assert_eq!(expand_word("C:\\dir", '`', &env).unwrap(), "C:\\dir");
}

#[test]
fn defaults_and_alternatives() {
    assert_eq!(ok("${UNSET:-d}"), "d");
    assert_eq!(ok("${EMPTY:-d}"), "d");
    assert_eq!(ok("${EMPTY-d}"), "");
    assert_eq!(ok("${UNSET-d}"), "d");
    assert_eq!(ok("${HOME:-d}"), "/root");
    assert_eq!(ok("${UNSET:-$HOME}"), "/root");
    assert_eq!(ok("${UNSET:-${NOPE:-deep}}"), "deep");
    assert_eq!(ok("${UNSET:-}"), "");
    assert_eq!(ok("${HOME:+x}"), "x");
    assert_eq!(ok("${EMPTY:+x}"), "");
    assert_eq!(ok("${EMPTY+x}"), "x");
    assert_eq!(ok("${UNSET+x}"), "");
    assert_eq!(ok("${HOME:+${SHELL}:}"), "sh:");
    assert_eq!(ok("${UNSET:-\\$HOME}"), "$HOME");
    assert_eq!(ok("${UNSET:-a {b}"), "a {b");
}

#[test]
fn required_variables() {
    assert_eq!(ok("${HOME?}"), "/root");
    assert_eq!(ok("${EMPTY?}"), "");
    let unset = word("${UNSET?}").unwrap_err();
    assert_eq!(
        unset.to_string(),
        "failed to process \"${UNSET?}\": UNSET: is not allowed to be unset"
    );
    let empty = word("${EMPTY:?}").unwrap_err();
    assert_eq!(empty.kind.to_string(), "EMPTY: is not allowed to be empty");
    let custom = word("${UNSET:?set it $SHELL}").unwrap_err();
    assert_eq!(custom.kind.to_string(), "UNSET: set it sh");
}

#[test]
fn pattern_removal_and_replacement() {
    assert_eq!(ok("${PATHS#*/}"), "usr/local/bin/tool.tar.gz");
    assert_eq!(ok("${PATHS##*/}"), "tool.tar.gz");
    assert_eq!(ok("${PATHS%.*}"), "/usr/local/bin/tool.tar");
    assert_eq!(ok("${PATHS%%.*}"), "/usr/local/bin/tool");
    assert_eq!(ok("${PATHS#nomatch}"), "/usr/local/bin/tool.tar.gz");
    assert_eq!(ok("${PATHS/\\//:}"), ":usr/local/bin/tool.tar.gz");
    assert_eq!(ok("${PATHS//\\//:}"), ":usr:local:bin:tool.tar.gz");
    assert_eq!(ok("${UNSET/a/b}"), "");
    assert_eq!(ok("${GREEK#?}"), "βγ");
    assert_eq!(ok("${GREEK%?}"), "αβ");
    assert!(matches!(
        word("${HOME:#x}").unwrap_err().kind,
        ExpandErrorKind::UnsupportedModifier { .. }
    ));
    assert!(matches!(
        word("${HOME#\\x}").unwrap_err().kind,
        ExpandErrorKind::InvalidPattern { .. }
    ));
}

#[test]
fn malformed_references() {
    let kind = |s: &str| word(s).unwrap_err().kind;
    assert_eq!(kind("${}"), ExpandErrorKind::BadSubstitution);
    assert_eq!(kind("${:}"), ExpandErrorKind::BadSubstitution);
    assert_eq!(kind("${{a}"), ExpandErrorKind::BadSubstitution);
    assert_eq!(kind("${"), ExpandErrorKind::MissingBrace);
    assert_eq!(kind("${a:-b"), ExpandErrorKind::MissingBrace);
    assert_eq!(kind("${a:-b ${c}"), ExpandErrorKind::MissingBrace);
    assert_eq!(kind("${a/b"), ExpandErrorKind::MissingSlash);
    assert_eq!(
        kind("${HOME:=x}"),
        ExpandErrorKind::UnsupportedModifier {
            modifier: ":=".into()
        }
    );
    assert_eq!(
        kind("${a"),
        ExpandErrorKind::UnsupportedModifier {
            modifier: "\u{fffd}".into()
        }
    );
    assert!(matches!(
        kind("${.}"),
        ExpandErrorKind::UnsupportedModifier { .. }
    ));
    assert_eq!(kind("'open"), ExpandErrorKind::UnterminatedSingleQuote);
    assert_eq!(kind("\"open"), ExpandErrorKind::UnterminatedDoubleQuote);
    assert_eq!(kind("\"open\\\""), ExpandErrorKind::UnterminatedDoubleQuote);
}

#[test]
fn word_splitting() {
    assert_eq!(words("a  b\tc"), ["a", "b", "c"]);
    assert_eq!(words("x${SPACED}y"), ["x", "a", "b", "y"]);
    assert_eq!(words("x\"${SPACED}\"y"), ["x  a  b y"]);
    assert_eq!(words("a\\ b c"), ["a b", "c"]);
    assert_eq!(words("'a b' \"c d\""), ["a b", "c d"]);
    assert_eq!(words("a\\\" b"), ["a\"", "b"]);
    assert!(words("").is_empty());
    assert!(
        words("\"\"").is_empty(),
        "an empty quoted word is dropped, as BuildKit does"
    );
    assert_eq!(
        words("${UNSET:-\"p q\"}"),
        ["p", "q"],
        "a default's value splits"
    );
    assert_eq!(words("<< EOF x"), ["<< EOF", "x"]);
}

#[test]
fn raw_options_keep_what_they_name() {
    let lookup = |_: &str| None;
    let options = LexOptions {
        raw_quotes: true,
        raw_escapes: true,
        skip_unset: true,
    };
    let (result, _) = Lexer::new("'a'\"$X\"\\n${Y:-z}", '\\', &lookup, options)
        .run()
        .unwrap();
    assert_eq!(result, "'a'\"$X\"\\n${Y:-z}");
}
