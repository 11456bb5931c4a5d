//! `--build-context NAME=VALUE`: named contexts, read before a stage or
//! an image of that name by `FROM NAME`, `COPY --from=NAME` and
//! `RUN --mount=…,from=NAME` (BuildKit's rule: a stage of the same name
//! is replaced, its steps never run).
//!
//! A directory's own `.dockerignore` (at its root) applies to it, the main
//! context's does not: BuildKit's dockerui frontend reads a named local
//! context's ignore file from that context (`namedcontext.go`). An image
//! (`docker-image://REF`) is taken from the store, or pulled, as `FROM`'s.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::ignore::IgnoreMatcher;
use crate::{BuildError, NamedContext};

/// A named context ready to be read.
pub enum ContextSource {
    Directory {
        path: PathBuf,
        ignore: IgnoreMatcher,
    },
    Image(String),
}

/// The request's named contexts, by name.
#[derive(Default)]
pub struct NamedContexts {
    contexts: BTreeMap<String, ContextSource>,
}

impl NamedContexts {
    /// Checks each context and reads a directory's `.dockerignore`.
    pub fn resolve(given: &BTreeMap<String, NamedContext>) -> Result<Self, BuildError> {
        let mut contexts = BTreeMap::new();
        for (name, context) in given {
            if name.is_empty() || name.eq_ignore_ascii_case("scratch") || name == "context" {
                return Err(BuildError::Invalid(format!(
                    "invalid --build-context name {name:?}: it cannot be empty, \"scratch\" or \"context\""
                )));
            }
            let source = match context {
                NamedContext::Image(reference) => ContextSource::Image(reference.clone()),
                NamedContext::Directory(path) => {
                    if !path.is_dir() {
                        return Err(BuildError::Invalid(format!(
                            "--build-context {name}={}: not a directory",
                            path.display()
                        )));
                    }
                    let ignore = read_ignore(path)?;
                    ContextSource::Directory {
                        path: path.clone(),
                        ignore,
                    }
                }
            };
            contexts.insert(name.clone(), source);
        }
        Ok(Self { contexts })
    }

    /// The context `name` (as written, else lowercased: stage names are).
    pub fn get(&self, name: &str) -> Option<&ContextSource> {
        self.contexts
            .get(name)
            .or_else(|| self.contexts.get(&name.to_ascii_lowercase()))
    }
}

fn read_ignore(directory: &std::path::Path) -> Result<IgnoreMatcher, BuildError> {
    let path = directory.join(".dockerignore");
    let text = match fs_err::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => return Err(BuildError::Context { path, source }),
    };
    IgnoreMatcher::parse(&text)
        .map_err(|error| BuildError::Invalid(format!("{}: {error}", path.display())))
}
