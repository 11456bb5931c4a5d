//! Any text through `dockerfile::parse`, the expansions of what it parsed,
//! the expansions of the raw text, and `.dockerignore` matching: each must
//! return (a value or an error), never panic or hang.
#![no_main]

use berth_build::dockerfile::{expand_word, expand_words, parse, split_words};
use berth_build::ignore::IgnoreMatcher;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // Some names set, some not, so both branches of `${V:-…}` run.
    let lookup = |name: &str| (name.len() % 2 == 1).then(|| format!("<{name}>"));
    if let Ok(dockerfile) = parse(&text) {
        let escape = dockerfile.directives.escape;
        for stage in &dockerfile.stages {
            let _ = expand_word(&stage.base, escape, &lookup);
            for instruction in &stage.instructions {
                let _ = expand_words(&instruction.original, escape, &lookup);
            }
        }
    }
    let _ = expand_word(&text, '\\', &lookup);
    let _ = expand_words(&text, '`', &lookup);
    let _ = split_words(&text, '\\');
    if let Ok(matcher) = IgnoreMatcher::parse(&text) {
        matcher.is_excluded(&text);
        matcher.may_include_inside("a/b");
    }
});
