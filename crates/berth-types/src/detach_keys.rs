//! Detach keys: the key sequence that leaves an attached terminal session
//! with the container still running (`--detach-keys`, config.json's
//! `detachKeys`, the attach API's `detachKeys`, an exec's `DetachKeys`),
//! parsed and matched as Docker does (moby/term `ascii.go` `ToBytes` and
//! `proxy.go` `escapeProxy`).

/// ctrl-p, ctrl-q: the sequence when none is given.
pub const DEFAULT: &[u8] = &[0x10, 0x11];

/// The names `ToBytes` knows besides single characters: `ctrl-@` is 0,
/// `ctrl-a` 1 … `ctrl-z` 26, then `ctrl-[`, `ctrl-\`, `ctrl-]`, `ctrl-^`,
/// `ctrl-_` (27 to 31), as the terminal sends them.
const CONTROL_NAMES: [&str; 32] = [
    "ctrl-@", "ctrl-a", "ctrl-b", "ctrl-c", "ctrl-d", "ctrl-e", "ctrl-f", "ctrl-g", "ctrl-h",
    "ctrl-i", "ctrl-j", "ctrl-k", "ctrl-l", "ctrl-m", "ctrl-n", "ctrl-o", "ctrl-p", "ctrl-q",
    "ctrl-r", "ctrl-s", "ctrl-t", "ctrl-u", "ctrl-v", "ctrl-w", "ctrl-x", "ctrl-y", "ctrl-z",
    "ctrl-[", "ctrl-\\", "ctrl-]", "ctrl-^", "ctrl-_",
];

/// A key `ToBytes` does not know, in its words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Unknown character: '{0}'")]
pub struct UnknownKey(pub String);

/// moby/term's `ToBytes`: comma-separated keys, each a single byte (taken
/// as it is), a `ctrl-…` name (lower case only, as Docker), or `DEL`.
/// The empty string is one empty key, which is unknown (callers treat an
/// empty setting as "not set" before they get here, as Docker does).
pub fn parse(keys: &str) -> Result<Vec<u8>, UnknownKey> {
    keys.split(',')
        .map(|key| match key.as_bytes() {
            [byte] => Ok(*byte),
            _ if key == "DEL" => Ok(0x7f),
            _ => CONTROL_NAMES
                .iter()
                .position(|name| *name == key)
                .map(|code| code as u8)
                .ok_or_else(|| UnknownKey(key.to_owned())),
        })
        .collect()
}

/// The sequence for a setting: its keys, or [`DEFAULT`] when it is empty.
pub fn parse_or_default(keys: Option<&str>) -> Result<Vec<u8>, UnknownKey> {
    match keys.filter(|keys| !keys.is_empty()) {
        Some(keys) => parse(keys),
        None => Ok(DEFAULT.to_vec()),
    }
}

/// What [`DetachMatcher::feed`] found in a piece of input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fed {
    /// These bytes go on to the container (maybe none: a sequence may be
    /// under way).
    Pass(Vec<u8>),
    /// The whole sequence was typed: these bytes, which came before it, go
    /// on; it and whatever followed it do not, and the session ends.
    Detach(Vec<u8>),
}

/// Watches a terminal's input for the detach sequence. The keys of a
/// sequence under way are held back; a key that breaks it lets them go on
/// with itself (ctrl-p then `a` sends both) and does not start a new
/// sequence (ctrl-p ctrl-p ctrl-q does not detach), as moby/term's
/// `escapeProxy` does. Unlike the proxy Docker 20.10's engine and CLI
/// vendor, a read of several bytes is scanned too: with one key per read
/// (someone typing) the two agree.
#[derive(Clone, Debug)]
pub struct DetachMatcher {
    keys: Vec<u8>,
    /// How many of `keys` have been typed and held back.
    matched: usize,
}

impl DetachMatcher {
    /// A matcher for `keys` (not empty: [`parse`] never returns an empty
    /// sequence).
    pub fn new(keys: Vec<u8>) -> Self {
        Self { keys, matched: 0 }
    }

    pub fn keys(&self) -> &[u8] {
        &self.keys
    }

    /// Looks at the next piece of input.
    pub fn feed(&mut self, input: &[u8]) -> Fed {
        let mut pass = Vec::with_capacity(input.len() + self.matched);
        for &byte in input {
            if self.keys.get(self.matched) == Some(&byte) {
                self.matched += 1;
                if self.matched == self.keys.len() {
                    self.matched = 0;
                    return Fed::Detach(pass);
                }
                continue;
            }
            pass.extend_from_slice(&self.keys[..self.matched]);
            self.matched = 0;
            pass.push(byte);
        }
        Fed::Pass(pass)
    }

    /// The keys held back, at the end of the input: they go on after all.
    pub fn take_held(&mut self) -> Vec<u8> {
        let held = self.keys[..self.matched].to_vec();
        self.matched = 0;
        held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_docker_key_names() {
        assert_eq!(parse("ctrl-p,ctrl-q"), Ok(vec![0x10, 0x11]));
        assert_eq!(parse("ctrl-@"), Ok(vec![0]));
        assert_eq!(parse("ctrl-a,ctrl-z"), Ok(vec![1, 26]));
        assert_eq!(
            parse("ctrl-[,ctrl-\\,ctrl-],ctrl-^,ctrl-_"),
            Ok(vec![27, 28, 29, 30, 31])
        );
        assert_eq!(parse("a,b,Z,1,,"), Err(UnknownKey(String::new())));
        assert_eq!(parse("a,b,Z,1"), Ok(b"abZ1".to_vec()));
        assert_eq!(parse("x"), Ok(b"x".to_vec()));
        assert_eq!(parse("DEL"), Ok(vec![0x7f]));
        // A comma is the separator, so it cannot be a key itself; a space can.
        assert_eq!(parse(" "), Ok(b" ".to_vec()));
    }

    #[test]
    fn refuses_what_docker_refuses_in_its_words() {
        for (keys, unknown) in [
            ("foo", "foo"),
            ("ctrl-1", "ctrl-1"),
            // Case matters, as in moby/term.
            ("CTRL-P", "CTRL-P"),
            ("ctrl-P", "ctrl-P"),
            ("del", "del"),
            ("a,,b", ""),
            (",", ""),
            ("", ""),
            ("ctrl-p, ctrl-q", " ctrl-q"),
            // One character but two bytes.
            ("é", "é"),
        ] {
            let error = parse(keys).unwrap_err();
            assert_eq!(error, UnknownKey(unknown.to_owned()), "{keys:?}");
            assert_eq!(error.to_string(), format!("Unknown character: '{unknown}'"));
        }
    }

    #[test]
    fn an_empty_setting_is_the_default() {
        assert_eq!(parse_or_default(None), Ok(DEFAULT.to_vec()));
        assert_eq!(parse_or_default(Some("")), Ok(DEFAULT.to_vec()));
        assert_eq!(parse_or_default(Some("ctrl-x")), Ok(vec![0x18]));
        assert!(parse_or_default(Some("nope")).is_err());
    }

    fn default_matcher() -> DetachMatcher {
        DetachMatcher::new(DEFAULT.to_vec())
    }

    #[test]
    fn the_sequence_typed_key_by_key_detaches() {
        let mut matcher = default_matcher();
        assert_eq!(matcher.feed(b"ls\r"), Fed::Pass(b"ls\r".to_vec()));
        assert_eq!(matcher.feed(&[0x10]), Fed::Pass(Vec::new()));
        assert_eq!(matcher.feed(&[0x11]), Fed::Detach(Vec::new()));
    }

    #[test]
    fn a_broken_sequence_passes_its_keys_on() {
        let mut matcher = default_matcher();
        assert_eq!(matcher.feed(&[0x10]), Fed::Pass(Vec::new()));
        assert_eq!(matcher.feed(b"a"), Fed::Pass(vec![0x10, b'a']));
        // ctrl-p ctrl-p ctrl-q: the second ctrl-p breaks the first sequence
        // and starts none (Docker passes all three on).
        assert_eq!(matcher.feed(&[0x10]), Fed::Pass(Vec::new()));
        assert_eq!(matcher.feed(&[0x10]), Fed::Pass(vec![0x10, 0x10]));
        assert_eq!(matcher.feed(&[0x11]), Fed::Pass(vec![0x11]));
        // ctrl-q alone is an ordinary key.
        assert_eq!(matcher.feed(&[0x11]), Fed::Pass(vec![0x11]));
    }

    #[test]
    fn input_read_in_one_piece_is_scanned() {
        let mut matcher = default_matcher();
        assert_eq!(matcher.feed(&[0x10, 0x11]), Fed::Detach(Vec::new()));
        assert_eq!(
            matcher.feed(&[b'e', b'c', 0x10, 0x11, b'x']),
            Fed::Detach(b"ec".to_vec())
        );
        assert_eq!(
            matcher.feed(&[b'a', 0x10, b'b', 0x10]),
            Fed::Pass(vec![b'a', 0x10, b'b'])
        );
        // The held ctrl-p completes with the next piece.
        assert_eq!(matcher.feed(&[0x11, b'z']), Fed::Detach(Vec::new()));
    }

    #[test]
    fn longer_and_single_key_sequences() {
        let mut matcher = DetachMatcher::new(parse("ctrl-a,x,y").unwrap());
        assert_eq!(matcher.feed(&[1]), Fed::Pass(Vec::new()));
        assert_eq!(matcher.feed(b"x"), Fed::Pass(Vec::new()));
        assert_eq!(matcher.feed(b"z"), Fed::Pass(vec![1, b'x', b'z']));
        assert_eq!(matcher.feed(&[1, b'x']), Fed::Pass(Vec::new()));
        assert_eq!(matcher.take_held(), vec![1, b'x']);
        assert_eq!(matcher.feed(b"y"), Fed::Pass(b"y".to_vec()));
        assert_eq!(matcher.feed(&[1, b'x', b'y']), Fed::Detach(Vec::new()));
        let mut single = DetachMatcher::new(parse("q").unwrap());
        assert_eq!(single.feed(b"abq"), Fed::Detach(b"ab".to_vec()));
    }
}
