//! "did you mean …?" for unknown instructions and flags, chosen as
//! BuildKit's `util/suggest` chooses: the closest option within an edit
//! distance of 2, in the case the user wrote.

/// The Levenshtein distance of `a` and `b`, in characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

/// The option closest to `value`, if one is close enough and `value` is
/// not itself an option. Options are tried in the order given (BuildKit
/// walks a Go map; a fixed order makes the choice repeatable).
pub(crate) fn suggest(value: &str, options: &[&str], case_sensitive: bool) -> Option<String> {
    let wanted = if case_sensitive {
        value.to_string()
    } else {
        value.to_lowercase()
    };
    let mut best: Option<String> = None;
    let mut best_distance = 3;
    for option in options {
        let option = if case_sensitive {
            option.to_string()
        } else {
            option.to_lowercase()
        };
        if option == wanted {
            return None;
        }
        let d = distance(&wanted, &option);
        if d < best_distance {
            best_distance = d;
            best = Some(if case_sensitive {
                option
            } else {
                match_case(&option, value)
            });
        }
    }
    best
}

fn match_case(option: &str, original: &str) -> String {
    if original == original.to_lowercase() {
        option.to_lowercase()
    } else if original == original.to_uppercase() {
        option.to_uppercase()
    } else {
        option.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_within_two_edits() {
        assert_eq!(distance("kitten", "sitting"), 3);
        let options = ["FROM", "RUN", "COPY"];
        assert_eq!(suggest("FORM", &options, false).as_deref(), Some("FROM"));
        assert_eq!(suggest("cpy", &options, false).as_deref(), Some("copy"));
        assert_eq!(suggest("Rnu", &options, false).as_deref(), Some("run"));
        assert_eq!(suggest("WHATEVER", &options, false), None);
        assert_eq!(
            suggest("chmown", &["chown", "chmod"], true).as_deref(),
            Some("chown")
        );
    }
}
