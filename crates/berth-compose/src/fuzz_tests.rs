//! Mutations of valid compose files through the whole loader and both renderers: each must
//! give a project or an error, never panic. The cargo-fuzz target (fuzz/) does the same with
//! coverage guidance on nightly; this runs on stable with every `cargo test`.

use std::collections::BTreeMap;
use std::path::Path;

use crate::load::load_text;
use crate::render;

const CORPUS: &[&str] = &[
    "services:\n  web:\n    image: busybox\n    ports: ['8080:80', '127.0.0.1::90/udp']\n    environment: [A=1, B]\n",
    "services:\n  db:\n    image: x\n    healthcheck:\n      test: [CMD, 'true']\n      interval: 1s\n  app:\n    image: x\n    depends_on:\n      db: {condition: service_healthy}\n",
    "x-a: &a\n  image: busybox\n  restart: always\nservices:\n  one:\n    <<: *a\n    command: echo \"$${HOME}\" ${VAR:-d}\n",
    "services:\n  v:\n    image: x\n    volumes: [/a, ./b:/b:ro, named:/n:nocopy, {type: tmpfs, target: /t, tmpfs: {size: 1m}}]\nvolumes:\n  named: {}\n",
    "services:\n  n:\n    image: x\n    networks:\n      front: {aliases: [a]}\nnetworks:\n  front:\n    ipam: {config: [{subnet: 10.0.0.0/24}]}\n",
    "services:\n  b:\n    extends: a\n    labels: [x=y]\n  a:\n    image: x\n    ulimits: {nofile: {soft: 1, hard: 2}, nproc: 3}\n    extra_hosts: {h: 1.2.3.4}\n",
];

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const PIECES: &[&str] = &[
    ":",
    " ",
    "\n",
    "-",
    "[",
    "]",
    "{",
    "}",
    "${",
    "}",
    "$$",
    "&x",
    "*x",
    "<<:",
    "'",
    "\"",
    "~",
    "0x",
    "1e9",
    "#",
    "\t",
    "services:",
    "  ",
    "?",
    "|",
    ">",
    "null",
    "!!str ",
    ":-",
    ":?",
];

fn mutate(rng: &mut Rng, input: &str) -> String {
    let mut chars: Vec<char> = input.chars().collect();
    for _ in 0..=rng.below(4) {
        let at = rng.below(chars.len() + 1);
        match rng.below(4) {
            0 if !chars.is_empty() => {
                let end = (at + rng.below(8)).min(chars.len());
                chars.drain(at.min(end)..end);
            }
            1 => {
                let piece = PIECES[rng.below(PIECES.len())];
                for (offset, c) in piece.chars().enumerate() {
                    chars.insert((at + offset).min(chars.len()), c);
                }
            }
            2 if !chars.is_empty() => {
                let from = rng.below(chars.len());
                let end = (from + rng.below(16)).min(chars.len());
                let copied: Vec<char> = chars[from..end].to_vec();
                for (offset, c) in copied.into_iter().enumerate() {
                    chars.insert((at + offset).min(chars.len()), c);
                }
            }
            _ => {
                if at < chars.len() {
                    chars[at] = char::from(b' ' + (rng.below(95) as u8));
                }
            }
        }
    }
    chars.into_iter().collect()
}

/// The loader and both renderers on `text`.
pub fn exercise(text: &str) {
    let variables: BTreeMap<String, String> = [("VAR".to_owned(), "value".to_owned())]
        .into_iter()
        .collect();
    if let Ok(project) = load_text(text, "fuzz", Path::new("/fuzz"), &variables) {
        let _ = render::yaml(&project.model);
        let _ = render::json(&project.model);
        let _ = crate::graph::levels(&project.services());
    }
}

#[test]
fn mutated_compose_files_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let variables: BTreeMap<String, String> = BTreeMap::new();
    for input in CORPUS {
        load_text(input, "fuzz", Path::new("/fuzz"), &variables)
            .unwrap_or_else(|e| panic!("corpus entry must load: {e}\n{input}"));
        exercise(input);
    }
    for _ in 0..3000 {
        let seed = CORPUS[rng.below(CORPUS.len())];
        let mut input = mutate(&mut rng, seed);
        if rng.below(3) == 0 {
            input = mutate(&mut rng, &input);
        }
        exercise(&input);
    }
}
