//! Platform specifiers (`linux/arm64/v8`, `amd64`, `linux`), parsed and normalised
//! the way containerd's `platforms.Parse` does for `--platform`.

use crate::image::Platform;

const KNOWN_OS: &[&str] = &[
    "aix",
    "android",
    "darwin",
    "dragonfly",
    "freebsd",
    "hurd",
    "illumos",
    "ios",
    "js",
    "linux",
    "nacl",
    "netbsd",
    "openbsd",
    "plan9",
    "solaris",
    "windows",
    "zos",
];

const KNOWN_ARCHITECTURES: &[&str] = &[
    "386",
    "amd64",
    "amd64p32",
    "arm",
    "armbe",
    "arm64",
    "arm64be",
    "ppc64",
    "ppc64le",
    "loong64",
    "mips",
    "mipsle",
    "mips64",
    "mips64le",
    "mips64p32",
    "mips64p32le",
    "ppc",
    "riscv",
    "riscv64",
    "s390",
    "s390x",
    "sparc",
    "sparc64",
    "wasm",
];

/// containerd's wording; the trailing "invalid argument" is its error class.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlatformError {
    #[error("{component:?} is an invalid component of {specifier:?}: platform specifier component must match \"^[A-Za-z0-9_-]+$\": invalid argument")]
    InvalidComponent {
        component: String,
        specifier: String,
    },
    #[error("{0:?}: unknown operating system or architecture: invalid argument")]
    Unknown(String),
    #[error("{0:?}: cannot parse platform specifier: invalid argument")]
    TooManyParts(String),
}

/// Parses `os[/arch[/variant]]`, or a lone architecture; a lone OS gets this
/// machine's architecture and a lone architecture gets `linux`.
pub fn parse_platform(specifier: &str) -> Result<Platform, PlatformError> {
    let parts: Vec<&str> = specifier.split('/').collect();
    for part in &parts {
        let valid = !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            return Err(PlatformError::InvalidComponent {
                component: (*part).to_owned(),
                specifier: specifier.to_owned(),
            });
        }
    }
    let platform = |os: String, (architecture, variant): (String, String)| Platform {
        architecture,
        os,
        variant: (!variant.is_empty()).then_some(variant),
    };
    match parts.as_slice() {
        [only] => {
            let os = normalize_os(only);
            if KNOWN_OS.contains(&os.as_str()) {
                return Ok(platform(
                    os,
                    (host_architecture().to_owned(), String::new()),
                ));
            }
            let (architecture, mut variant) = normalize_architecture(only, "");
            if architecture == "arm" && variant == "v7" {
                variant.clear();
            }
            if KNOWN_ARCHITECTURES.contains(&architecture.as_str()) {
                return Ok(platform("linux".to_owned(), (architecture, variant)));
            }
            Err(PlatformError::Unknown(specifier.to_owned()))
        }
        [os, architecture] => {
            let (architecture, mut variant) = normalize_architecture(architecture, "");
            if architecture == "arm" && variant == "v7" {
                variant.clear();
            }
            Ok(platform(normalize_os(os), (architecture, variant)))
        }
        [os, architecture, variant] => {
            let (architecture, mut variant) = normalize_architecture(architecture, variant);
            if architecture == "arm64" && variant.is_empty() {
                variant = "v8".to_owned();
            }
            Ok(platform(normalize_os(os), (architecture, variant)))
        }
        _ => Err(PlatformError::TooManyParts(specifier.to_owned())),
    }
}

/// `os/arch[/variant]`, as the Docker client sends the `platform` parameter.
pub fn format_platform(platform: &Platform) -> String {
    match &platform.variant {
        Some(variant) => format!("{}/{}/{variant}", platform.os, platform.architecture),
        None => format!("{}/{}", platform.os, platform.architecture),
    }
}

fn normalize_os(os: &str) -> String {
    let os = os.to_ascii_lowercase();
    if os == "macos" {
        "darwin".to_owned()
    } else {
        os
    }
}

fn normalize_architecture(architecture: &str, variant: &str) -> (String, String) {
    let architecture = architecture.to_ascii_lowercase();
    let variant = variant.to_ascii_lowercase();
    let owned = |a: &str, v: &str| (a.to_owned(), v.to_owned());
    match architecture.as_str() {
        "i386" => owned("386", ""),
        "x86_64" | "x86-64" | "amd64" => {
            owned("amd64", if variant == "v1" { "" } else { &variant })
        }
        "aarch64" | "arm64" => match variant.as_str() {
            "8" | "v8" | "v8.0" => owned("arm64", ""),
            "9" | "9.0" | "v9.0" => owned("arm64", "v9"),
            _ => owned("arm64", &variant),
        },
        "armhf" => owned("arm", "v7"),
        "armel" => owned("arm", "v6"),
        "arm" => match variant.as_str() {
            "" | "7" => owned("arm", "v7"),
            "5" | "6" | "8" => ("arm".to_owned(), format!("v{variant}")),
            _ => owned("arm", &variant),
        },
        _ => (architecture.clone(), variant),
    }
}

/// This machine's architecture in Go's spelling.
pub fn host_architecture() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "x86" => "386",
        "aarch64" => "arm64",
        "powerpc64" if cfg!(target_endian = "little") => "ppc64le",
        "powerpc64" => "ppc64",
        "loongarch64" => "loong64",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(specifier: &str) -> String {
        format_platform(&parse_platform(specifier).unwrap())
    }

    #[test]
    fn normalizes_like_containerd() {
        assert_eq!(parsed("linux/amd64"), "linux/amd64");
        assert_eq!(parsed("linux/x86_64"), "linux/amd64");
        assert_eq!(parsed("Linux/AMD64"), "linux/amd64");
        assert_eq!(parsed("linux/aarch64"), "linux/arm64");
        assert_eq!(parsed("linux/arm64/v8"), "linux/arm64/v8");
        assert_eq!(parsed("linux/arm/v7"), "linux/arm/v7");
        assert_eq!(parsed("linux/arm"), "linux/arm");
        assert_eq!(parsed("linux/armhf"), "linux/arm");
        assert_eq!(parsed("linux/armel"), "linux/arm/v6");
        assert_eq!(parsed("arm64"), "linux/arm64");
        assert_eq!(parsed("i386"), "linux/386");
        assert_eq!(parsed("macos/arm64"), "darwin/arm64");
        assert_eq!(parsed("linux"), format!("linux/{}", host_architecture()));
    }

    #[test]
    fn rejects_with_containerds_words() {
        let cases = [
            (
                "foo",
                r#""foo": unknown operating system or architecture: invalid argument"#,
            ),
            (
                "a/b/c/d",
                r#""a/b/c/d": cannot parse platform specifier: invalid argument"#,
            ),
            (
                "linux/",
                r#""" is an invalid component of "linux/": platform specifier component must match "^[A-Za-z0-9_-]+$": invalid argument"#,
            ),
        ];
        for (specifier, message) in cases {
            assert_eq!(parse_platform(specifier).unwrap_err().to_string(), message);
        }
    }
}
