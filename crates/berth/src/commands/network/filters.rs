//! `--filter` values as docker reads them (`api/types/filters`): `key=value`
//! pairs, values of one key ORed (or, for label lists, ANDed), keys ANDed.

use std::collections::BTreeMap;

/// Parsed `--filter` flags: each key with its values, in the order given.
#[derive(Debug, Default)]
pub struct Filters {
    fields: BTreeMap<String, Vec<String>>,
}

impl Filters {
    /// Splits each `key=value`; a flag without `=` is docker's flag parsing
    /// error (`opts.FilterOpt`) for `flag_name` (`-f, --filter`), which the
    /// caller reports as a usage error.
    pub fn parse(flags: &[String], flag_name: &str) -> Result<Self, String> {
        let mut fields: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for flag in flags {
            let Some((key, value)) = flag.split_once('=') else {
                return Err(format!(
                    "invalid argument {flag:?} for \"{flag_name}\" flag: bad format of filter (expected name=value)"
                ));
            };
            fields
                .entry(key.trim().to_lowercase())
                .or_default()
                .push(value.trim().to_owned());
        }
        Ok(Self { fields })
    }

    /// Docker's `Validate`: "Invalid filter 'KEY'" for a key not in `accepted`.
    pub fn validate(&self, accepted: &[&str]) -> anyhow::Result<()> {
        match self
            .fields
            .keys()
            .find(|key| !accepted.contains(&key.as_str()))
        {
            Some(key) => anyhow::bail!("Invalid filter '{key}'"),
            None => Ok(()),
        }
    }

    pub fn get(&self, key: &str) -> &[String] {
        self.fields.get(key).map_or(&[], Vec::as_slice)
    }

    pub fn contains(&self, key: &str) -> bool {
        self.fields.contains_key(key)
    }

    /// `ExactMatch`: no values, or one equal to `source`.
    pub fn exact_match(&self, key: &str, source: &str) -> bool {
        let values = self.get(key);
        values.is_empty() || values.iter().any(|value| value == source)
    }

    /// `Match`: no values, or one that is found in `source`. (Docker tries
    /// each value as a regular expression; berth matches it as text, which
    /// agrees for the names and ids people filter by.)
    pub fn text_match(&self, key: &str, source: &str) -> bool {
        let values = self.get(key);
        values.is_empty() || values.iter().any(|value| source.contains(value.as_str()))
    }

    /// `MatchKVList`: every `k` / `k=v` value is among `labels`; true when
    /// the key has no values.
    pub fn match_labels(&self, key: &str, labels: &BTreeMap<String, String>) -> bool {
        let values = self.get(key);
        if values.is_empty() {
            return true;
        }
        values.iter().all(|value| match value.split_once('=') {
            Some((label, wanted)) => labels.get(label).is_some_and(|actual| actual == wanted),
            None => labels.contains_key(value.as_str()),
        })
    }
}

/// `sortorder.NaturalLess`, the order `docker network ls` lists names in:
/// byte order, except that runs of digits compare as numbers (and digits
/// sort before other bytes).
pub fn natural_less(left: &str, right: &str) -> bool {
    let (left, right) = (left.as_bytes(), right.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < left.len() && j < right.len() {
        let (a, b) = (left[i], right[j]);
        let (digit_a, digit_b) = (a.is_ascii_digit(), b.is_ascii_digit());
        if digit_a != digit_b {
            return digit_a;
        }
        if !digit_a {
            if a != b {
                return a < b;
            }
            i += 1;
            j += 1;
            continue;
        }
        while i < left.len() && left[i] == b'0' {
            i += 1;
        }
        while j < right.len() && right[j] == b'0' {
            j += 1;
        }
        let (start_i, start_j) = (i, j);
        while i < left.len() && left[i].is_ascii_digit() {
            i += 1;
        }
        while j < right.len() && right[j].is_ascii_digit() {
            j += 1;
        }
        let (number_a, number_b) = (&left[start_i..i], &right[start_j..j]);
        if number_a.len() != number_b.len() {
            return number_a.len() < number_b.len();
        }
        if number_a != number_b {
            return number_a < number_b;
        }
        // Equal numbers: fewer leading zeros first.
        if start_i != start_j {
            return start_i < start_j;
        }
    }
    left.len() < right.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(names: &[&str]) -> Vec<String> {
        let mut names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
        names.sort_by(|a, b| {
            if natural_less(a, b) {
                std::cmp::Ordering::Less
            } else if natural_less(b, a) {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        });
        names
    }

    #[test]
    fn names_sort_as_docker_network_ls() {
        // What `docker network ls` printed for these names.
        assert_eq!(
            sorted(&["none", "net10", "host", "net9", "Net-x"]),
            ["Net-x", "host", "net9", "net10", "none"]
        );
        assert_eq!(
            sorted(&["a01", "a1", "a001", "a"]),
            ["a", "a1", "a01", "a001"]
        );
        assert_eq!(sorted(&["x1y", "x1", "1x"]), ["1x", "x1", "x1y"]);
    }

    #[test]
    fn filters_parse_and_match_like_docker() {
        let flags = |values: &[&str]| values.iter().map(|v| v.to_string()).collect::<Vec<_>>();
        assert_eq!(
            Filters::parse(&flags(&["name"]), "--filter").unwrap_err(),
            "invalid argument \"name\" for \"--filter\" flag: bad format of filter (expected name=value)"
        );
        let filters = Filters::parse(
            &flags(&["label=a=1", "label=b", "name=net"]),
            "-f, --filter",
        )
        .unwrap();
        assert_eq!(
            filters.validate(&["label"]).unwrap_err().to_string(),
            "Invalid filter 'name'"
        );
        let labels: BTreeMap<String, String> = [("a", "1"), ("b", "")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert!(filters.match_labels("label", &labels));
        assert!(filters.match_labels("label!", &labels));
        assert!(!filters.match_labels("label", &BTreeMap::new()));
        assert!(filters.text_match("name", "net9"));
        assert!(!filters.text_match("name", "host"));
        assert!(filters.exact_match("driver", "anything"));
    }
}
