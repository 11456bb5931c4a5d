//! `--platform os/arch[/variant]`, read as containerd's `platforms.Parse`
//! reads the common forms (which is what dockerd does with it).

use berth_types::image::Platform;

use super::error::PullError;

const KNOWN_OS: [&str; 6] = ["linux", "windows", "darwin", "freebsd", "netbsd", "openbsd"];

/// The platform `text` names, with architecture aliases normalised
/// (`x86_64` → `amd64`, `aarch64` → `arm64`).
pub fn parse_platform(text: &str) -> Result<Platform, PullError> {
    let invalid = || PullError::InvalidPlatform {
        platform: text.to_owned(),
    };
    let lower = text.to_ascii_lowercase();
    let parts: Vec<&str> = lower.split('/').collect();
    if parts.iter().any(|part| part.is_empty()) {
        return Err(invalid());
    }
    let host = berth_registry::client::host_platform();
    let (os, architecture, variant) = match parts.as_slice() {
        [only] if KNOWN_OS.contains(only) => ((*only).to_owned(), host.architecture, None),
        [only] => ("linux".to_owned(), normalize_arch(only).to_owned(), None),
        [os, architecture] => (
            (*os).to_owned(),
            normalize_arch(architecture).to_owned(),
            None,
        ),
        [os, architecture, variant] => (
            (*os).to_owned(),
            normalize_arch(architecture).to_owned(),
            Some((*variant).to_owned()),
        ),
        _ => return Err(invalid()),
    };
    if !KNOWN_OS.contains(&os.as_str()) {
        return Err(invalid());
    }
    Ok(Platform {
        architecture,
        os,
        variant,
    })
}

fn normalize_arch(architecture: &str) -> &str {
    match architecture {
        "x86_64" | "x86-64" => "amd64",
        "aarch64" => "arm64",
        "i386" | "i686" => "386",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_arch_and_variant() {
        let parsed = parse_platform("linux/arm/v7").unwrap();
        assert_eq!(
            (parsed.os.as_str(), parsed.architecture.as_str()),
            ("linux", "arm")
        );
        assert_eq!(parsed.variant.as_deref(), Some("v7"));
        assert_eq!(
            parse_platform("linux/x86_64").unwrap().architecture,
            "amd64"
        );
        assert_eq!(parse_platform("arm64").unwrap().os, "linux");
    }

    #[test]
    fn nonsense_is_dockers_error() {
        assert_eq!(
            parse_platform("foo/bar").unwrap_err().to_string(),
            "\"foo/bar\": unknown operating system or architecture: invalid argument"
        );
        assert!(parse_platform("linux//").is_err());
    }
}
