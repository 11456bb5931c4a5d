//! A deterministic stand-in for the cargo-fuzz target (which needs
//! nightly): thousands of mutations of valid Dockerfiles through `parse`
//! and the expansions, which must return, never panic.

use super::*;

const CORPUS: &[&str] = &[
    "# syntax=docker/dockerfile:1\nARG BASE=alpine\nFROM ${BASE} AS build\nRUN --mount=type=cache,target=/c make \\\n  all\nCOPY --from=build /a /b\n",
    "# escape=`\nFROM scratch\nRUN dir `\n  c:\\\nENV A=1 B=\"x y\" C='z'\n",
    "FROM a\nRUN <<EOF cat - <<-'END'\nbody $X\nEOF\n\tmore\n\tEND\nCOPY <<F /f\ncontent\nF\n",
    "FROM a\nHEALTHCHECK --interval=5s CMD [\"curl\", \"-f\"]\nONBUILD RUN x\nLABEL a=b\nEXPOSE 80 443/udp\nVOLUME [\"/v\"]\nSHELL [\"sh\", \"-c\"]\nUSER u\nWORKDIR /w\nSTOPSIGNAL 9\nMAINTAINER m\nCMD x\nENTRYPOINT [\"e\"]\n",
    "FROM a\nENV P=${P:-/bin}:${Q:+x} R=${S#*/} T=${U%%.*} V=${W//a/b}\n",
];

/// xorshift64*: small, seeded, the same run every time.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Characters the grammar cares about, to mutate toward its edges.
const INTERESTING: &[char] = &[
    '\\', '`', '"', '\'', '$', '{', '}', ':', '-', '+', '?', '#', '%', '/', '<', '[', ']', '=',
    ',', ' ', '\t', '\n', '\r', '*', '!', '0', '3', 'é', '\u{feff}',
];

fn mutate(rng: &mut Rng, input: &str) -> String {
    let mut chars: Vec<char> = input.chars().collect();
    for _ in 0..1 + rng.below(6) {
        let at = rng.below(chars.len() + 1);
        match rng.below(5) {
            0 if at < chars.len() => {
                chars.remove(at);
            }
            1 => chars.insert(at, INTERESTING[rng.below(INTERESTING.len())]),
            2 if at < chars.len() => chars[at] = INTERESTING[rng.below(INTERESTING.len())],
            3 => {
                // Splice in a piece of another corpus entry.
                let other: Vec<char> = CORPUS[rng.below(CORPUS.len())].chars().collect();
                let start = rng.below(other.len());
                let len = rng.below(40).min(other.len() - start);
                chars.splice(at..at, other[start..start + len].iter().copied());
            }
            _ => {
                // Duplicate a run (repeats, long lines).
                let start = rng.below(chars.len());
                let len = rng.below(20).min(chars.len() - start);
                let run: Vec<char> = chars[start..start + len].to_vec();
                chars.splice(at..at, run);
            }
        }
    }
    chars.into_iter().collect()
}

fn exercise(input: &str) {
    let lookup = |name: &str| (!name.len().is_multiple_of(3)).then(|| format!("v{name}"));
    if let Ok(dockerfile) = parse(input) {
        for stage in &dockerfile.stages {
            let _ = expand_word(&stage.base, dockerfile.directives.escape, &lookup);
            for instruction in &stage.instructions {
                let _ = expand_words(&instruction.original, dockerfile.directives.escape, &lookup);
            }
        }
    }
    let _ = expand_word(input, '\\', &lookup);
    let _ = expand_words(input, '`', &lookup);
    let _ = split_words(input, '\\');
    let _ = crate::ignore::IgnoreMatcher::parse(input).map(|m| {
        m.is_excluded(input);
        m.may_include_inside("a/b")
    });
}

#[test]
fn mutated_dockerfiles_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for input in CORPUS {
        parse(input).unwrap_or_else(|e| panic!("corpus entry must parse: {e}\n{input}"));
        exercise(input);
    }
    for _ in 0..3000 {
        let seed = CORPUS[rng.below(CORPUS.len())];
        let mut input = mutate(&mut rng, seed);
        // Sometimes mutate again, further from valid.
        if rng.below(3) == 0 {
            input = mutate(&mut rng, &input);
        }
        exercise(&input);
    }
}
