//! Deterministic pseudo-random input: no panics, and whatever parses
//! prints back to itself.

use super::*;

/// xorshift64*: a tiny deterministic generator so the test needs no crates
/// and fails the same way every run.
struct Pseudorandom(u64);

impl Pseudorandom {
    fn below(&mut self, bound: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let value = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32;
        usize::try_from(value).expect("32 bits fit in usize") % bound
    }
}

#[test]
fn never_panics_on_pseudorandom_input() {
    // Pieces chosen to reach every branch: separators, domain markers,
    // digest and id material, uppercase, Unicode that lowercases oddly.
    let pieces = [
        "a",
        "b",
        "z",
        "0",
        "9",
        "A",
        "Z",
        ".",
        "..",
        "_",
        "__",
        "-",
        "--",
        ":",
        "/",
        "//",
        "@",
        "[",
        "]",
        "::1",
        "%",
        " ",
        "é",
        "\u{212A}",
        "\u{130}",
        "localhost",
        "docker.io",
        "index.docker.io",
        "library/",
        "5000",
        "sha256",
        "sha256:",
        "SHA256:",
        HEX,
        &HEX[..32],
        "latest",
    ];
    let mut random = Pseudorandom(0x9e37_79b9_7f4a_7c15);
    let mut parsed = 0;
    for _ in 0..5000 {
        let mut text = String::new();
        for _ in 0..random.below(12) {
            text.push_str(pieces[random.below(pieces.len())]);
        }
        let _ = parse_any_reference(&text);
        let _ = looks_like_image_id_prefix(&text);
        match Reference::parse_normalized(&text) {
            Ok(reference) => {
                parsed += 1;
                assert!(
                    reference.path().len() <= REPOSITORY_PATH_MAX_LEN,
                    "{text:?}"
                );
                assert!(reference.tag().is_none_or(grammar::is_tag), "{text:?}");
                assert_eq!(
                    Reference::parse_normalized(&reference.to_string()).as_ref(),
                    Ok(&reference),
                    "full form of {text:?} must reparse"
                );
                assert!(!reference.familiar_string().is_empty());
                let _ = reference.with_default_tag();
            }
            Err(error) => assert!(!error.to_string().is_empty()),
        }
    }
    // Guard against a generator that only ever produces garbage.
    assert!(parsed > 100, "only {parsed} inputs parsed");
}
