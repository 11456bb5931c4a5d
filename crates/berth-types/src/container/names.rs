//! Names users give to containers and volumes (moby `daemon/names`).

/// The characters a container or local volume name may use, as Docker prints them.
pub const RESTRICTED_NAME_CHARS: &str = "[a-zA-Z0-9][a-zA-Z0-9_.-]";

/// `[a-zA-Z0-9][a-zA-Z0-9_.-]+`: at least two characters, the first alphanumeric.
pub fn is_restricted_name(name: &str) -> bool {
    let mut characters = name.chars();
    let Some(first) = characters.next() else {
        return false;
    };
    let rest = characters.as_str();
    first.is_ascii_alphanumeric()
        && !rest.is_empty()
        && rest
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// A container name as the API accepts it: a restricted name, optionally with the
/// leading `/` Docker stores names with.
pub fn is_valid_container_name(name: &str) -> bool {
    is_restricted_name(name.strip_prefix('/').unwrap_or(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_names_follow_dockers_pattern() {
        for good in ["ab", "web-1", "a.b_c", "/web", "0x", "A9"] {
            assert!(is_valid_container_name(good), "{good}");
        }
        for bad in [
            "", "a", "/a", "-ab", "_ab", ".ab", "a b", "a/b", "ab!", "//ab", "é1",
        ] {
            assert!(!is_valid_container_name(bad), "{bad}");
        }
    }

    #[test]
    fn volume_names_have_no_slash_prefix() {
        assert!(is_restricted_name("data"));
        assert!(!is_restricted_name("/data"));
        assert!(!is_restricted_name("rel/path"));
        assert!(!is_restricted_name("~/x"));
    }
}
