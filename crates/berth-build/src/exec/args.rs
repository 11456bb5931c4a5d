//! Build arguments: `--build-arg` values, `ARG` declarations and their
//! scope (global before the first `FROM`, then per stage), and the
//! predefined ones (proxies, platforms) as BuildKit defines them.

use std::collections::{BTreeMap, BTreeSet};

use berth_types::container::platform::format_platform;
use berth_types::image::Platform;

/// The proxy arguments any build may set without declaring them
/// (kept out of the image's history).
pub const PROXY_ARGS: [&str; 10] = [
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "FTP_PROXY",
    "ftp_proxy",
    "NO_PROXY",
    "no_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// The `--build-arg` values and which of them some `ARG` consumed.
#[derive(Debug, Default)]
pub struct BuildArgs {
    given: BTreeMap<String, Option<String>>,
    consumed: BTreeSet<String>,
}

impl BuildArgs {
    pub fn new(given: BTreeMap<String, Option<String>>) -> Self {
        Self {
            given,
            consumed: BTreeSet::new(),
        }
    }

    /// The value given for `name`, if any (a `--build-arg NAME` whose
    /// variable was unset gives none); marks it consumed.
    pub fn take(&mut self, name: &str) -> Option<String> {
        let value = self.given.get(name)?.clone();
        self.consumed.insert(name.to_owned());
        value
    }

    /// The proxy arguments given, which every RUN sees.
    pub fn proxies(&self) -> Vec<(String, String)> {
        PROXY_ARGS
            .iter()
            .filter_map(|name| {
                let value = self.given.get(*name)?.clone()?;
                Some(((*name).to_owned(), value))
            })
            .collect()
    }

    /// Given and never declared: Docker's warning names them.
    pub fn unconsumed(&self) -> Vec<String> {
        self.given
            .keys()
            .filter(|name| {
                !self.consumed.contains(*name)
                    && !PROXY_ARGS.contains(&name.as_str())
                    && name.as_str() != SOURCE_DATE_EPOCH
            })
            .cloned()
            .collect()
    }
}

/// The build arg BuildKit reads as the build's clock (reproducible builds).
pub const SOURCE_DATE_EPOCH: &str = "SOURCE_DATE_EPOCH";

/// The platform arguments BuildKit defines in the global scope: `BUILD*`
/// for the host that builds, `TARGET*` for the platform built for.
pub fn platform_args(build: &Platform, target: &Platform) -> Vec<(String, String)> {
    let mut args = Vec::new();
    for (prefix, platform) in [("BUILD", build), ("TARGET", target)] {
        args.push((format!("{prefix}PLATFORM"), format_platform(platform)));
        args.push((format!("{prefix}OS"), platform.os.clone()));
        args.push((format!("{prefix}ARCH"), platform.architecture.clone()));
        args.push((
            format!("{prefix}VARIANT"),
            platform.variant.clone().unwrap_or_default(),
        ));
    }
    args
}

/// The arguments in scope at a point of a stage, in declaration order.
#[derive(Clone, Debug, Default)]
pub struct ArgScope {
    values: Vec<(String, Option<String>)>,
}

impl ArgScope {
    pub fn declare(&mut self, name: &str, value: Option<String>) {
        match self.values.iter_mut().find(|(key, _)| key == name) {
            Some(existing) => existing.1 = value,
            None => self.values.push((name.to_owned(), value)),
        }
    }

    /// Declared, with a value or not.
    pub fn get(&self, name: &str) -> Option<&Option<String>> {
        self.values
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value)
    }

    /// The declared arguments that have a value.
    pub fn with_values(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values
            .iter()
            .filter_map(|(name, value)| Some((name.as_str(), value.as_deref()?)))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use berth_types::container::platform::parse_platform;

    #[test]
    fn given_args_are_consumed_by_their_declaration() {
        let mut args = BuildArgs::new(BTreeMap::from([
            ("A".to_owned(), Some("1".to_owned())),
            ("UNSET".to_owned(), None),
            ("LEFT".to_owned(), Some("x".to_owned())),
            ("http_proxy".to_owned(), Some("http://p".to_owned())),
        ]));
        assert_eq!(args.take("A").as_deref(), Some("1"));
        assert_eq!(args.take("UNSET"), None);
        assert_eq!(args.take("NEVER"), None);
        assert_eq!(args.unconsumed(), ["LEFT"]);
        assert_eq!(
            args.proxies(),
            [("http_proxy".to_owned(), "http://p".to_owned())]
        );
    }

    #[test]
    fn a_redeclared_arg_keeps_its_place_and_takes_the_new_value() {
        let mut scope = ArgScope::default();
        scope.declare("A", Some("1".to_owned()));
        scope.declare("B", None);
        scope.declare("A", Some("2".to_owned()));
        assert_eq!(scope.with_values().collect::<Vec<_>>(), [("A", "2")]);
        assert_eq!(scope.get("B"), Some(&None));
        assert_eq!(scope.get("C"), None);
    }

    #[test]
    fn platform_args_name_the_host_and_the_target() {
        let host = parse_platform("linux/amd64").unwrap();
        let target = parse_platform("linux/arm/v7").unwrap();
        let args = platform_args(&host, &target);
        assert!(args.contains(&("TARGETPLATFORM".to_owned(), "linux/arm/v7".to_owned())));
        assert!(args.contains(&("TARGETARCH".to_owned(), "arm".to_owned())));
        assert!(args.contains(&("TARGETVARIANT".to_owned(), "v7".to_owned())));
        assert!(args.contains(&("BUILDPLATFORM".to_owned(), "linux/amd64".to_owned())));
        assert!(args.contains(&("BUILDARCH".to_owned(), "amd64".to_owned())));
        assert!(args.contains(&("BUILDVARIANT".to_owned(), String::new())));
    }
}
