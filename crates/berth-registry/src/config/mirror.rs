//! `registry-mirrors` entries, checked as moby 20.10's `ValidateMirror`
//! checks them (with its messages), and normalised to end in one `/`.

use super::ConfigError;

/// The parts of a URI that `ValidateMirror` looks at, split the way Go's
/// `net/url.Parse` splits them.
struct Uri<'a> {
    /// Lowercased, as Go stores it.
    scheme: String,
    /// `user` or `user:password`, when there is an `@` in the authority.
    user: Option<&'a str>,
    /// Everything after the scheme but the user info: `//host/path?query#fragment`.
    after_user: String,
    path: &'a str,
    has_query: bool,
    has_fragment: bool,
}

impl Uri<'_> {
    /// The URI as Go prints it, with the password (if any) masked.
    fn masked(&self) -> String {
        let prefix = if self.scheme.is_empty() {
            String::new()
        } else {
            format!("{}:", self.scheme)
        };
        match self.user {
            Some(user) => {
                let name = user.split_once(':').map_or(user, |(name, _)| name);
                format!("{prefix}//{name}:xxxxx@{}", &self.after_user[2..])
            }
            None => format!("{prefix}{}", self.after_user),
        }
    }
}

fn parse(text: &str) -> Option<Uri<'_>> {
    if text.bytes().any(|byte| byte < 0x20 || byte == 0x7f) {
        return None; // Go: "invalid control character in URL"
    }
    let (before_fragment, fragment) = match text.split_once('#') {
        Some((before, fragment)) => (before, Some(fragment)),
        None => (text, None),
    };
    // Go: a scheme is [A-Za-z][A-Za-z0-9+.-]* before the first ':'; a ':'
    // first is "missing protocol scheme"; anything else makes it a path.
    let (scheme, rest) = match before_fragment.find(':') {
        Some(0) => return None,
        Some(colon)
            if before_fragment[..colon]
                .bytes()
                .enumerate()
                .all(|(index, byte)| {
                    byte.is_ascii_alphabetic()
                        || (index > 0 && (byte.is_ascii_digit() || b"+-.".contains(&byte)))
                }) =>
        {
            (&before_fragment[..colon], &before_fragment[colon + 1..])
        }
        _ => ("", before_fragment),
    };
    let (rest, has_query) = match rest.split_once('?') {
        Some((rest, _)) => (rest, true),
        None => (rest, false),
    };
    let (user, path) = match rest.strip_prefix("//") {
        Some(authority_and_path) => {
            let split = authority_and_path
                .find('/')
                .unwrap_or(authority_and_path.len());
            let (authority, path) = authority_and_path.split_at(split);
            let user = authority.rfind('@').map(|at| &authority[..at]);
            let host = authority
                .rfind('@')
                .map_or(authority, |at| &authority[at + 1..]);
            if host.starts_with('[') && !host.contains(']') {
                return None; // Go: "missing ']' in host"
            }
            (user, path)
        }
        None => (None, rest),
    };
    let after_scheme = &text[scheme.len() + usize::from(!scheme.is_empty())..];
    let after_user = match user {
        Some(user) => format!("//{}", &after_scheme[2 + user.len() + 1..]),
        None => after_scheme.to_owned(),
    };
    Some(Uri {
        scheme: scheme.to_ascii_lowercase(),
        user,
        after_user,
        path,
        has_query,
        has_fragment: fragment.is_some(),
    })
}

/// The mirror as berth uses it (`scheme://host[:port]/`), or Docker's error.
pub(super) fn validate(text: &str) -> Result<String, ConfigError> {
    let invalid = |message: String| ConfigError::InvalidMirror { message };
    let Some(uri) = parse(text) else {
        return Err(invalid(format!("{text:?} is not a valid URI")));
    };
    if uri.scheme != "http" && uri.scheme != "https" {
        return Err(invalid(format!(
            "unsupported scheme {:?} in {:?}",
            uri.scheme,
            uri.masked()
        )));
    }
    if (!uri.path.is_empty() && uri.path != "/") || uri.has_query || uri.has_fragment {
        return Err(invalid(format!(
            "path, query, or fragment at end of the URI {:?}",
            uri.masked()
        )));
    }
    if uri.user.is_some() {
        return Err(invalid(format!(
            "username/password not allowed in URI {:?}",
            uri.masked()
        )));
    }
    Ok(format!("{}/", text.strip_suffix('/').unwrap_or(text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(text: &str) -> String {
        validate(text).unwrap_err().to_string()
    }

    #[test]
    fn good_mirrors_end_in_one_slash() {
        assert_eq!(
            validate("https://mirror.example").unwrap(),
            "https://mirror.example/"
        );
        assert_eq!(
            validate("http://127.0.0.1:5000/").unwrap(),
            "http://127.0.0.1:5000/"
        );
        assert_eq!(validate("https://[::1]:443").unwrap(), "https://[::1]:443/");
    }

    /// The messages moby 20.10's TestValidateMirror cases produce.
    #[test]
    fn bad_mirrors_get_dockers_messages() {
        assert_eq!(
            message("mirror-1.example.com"),
            "invalid mirror: unsupported scheme \"\" in \"mirror-1.example.com\""
        );
        assert_eq!(
            message("ftp://mirror-1.example.com"),
            "invalid mirror: unsupported scheme \"ftp\" in \"ftp://mirror-1.example.com\""
        );
        assert_eq!(
            message("https://mirror-1.example.com/v1/"),
            "invalid mirror: path, query, or fragment at end of the URI \"https://mirror-1.example.com/v1/\""
        );
        assert_eq!(
            message("https://mirror-1.example.com?q=c"),
            "invalid mirror: path, query, or fragment at end of the URI \"https://mirror-1.example.com?q=c\""
        );
        assert_eq!(
            message("https://mirror-1.example.com#frag"),
            "invalid mirror: path, query, or fragment at end of the URI \"https://mirror-1.example.com#frag\""
        );
        assert_eq!(
            message("https://user:secret@mirror-1.example.com"),
            "invalid mirror: username/password not allowed in URI \"https://user:xxxxx@mirror-1.example.com\""
        );
        assert_eq!(
            message(":not-a-uri"),
            "invalid mirror: \":not-a-uri\" is not a valid URI"
        );
        assert_eq!(
            message("https://[::1"),
            "invalid mirror: \"https://[::1\" is not a valid URI"
        );
    }
}
