//! Picking one image out of a manifest list / image index by platform, as
//! containerd's default matcher (which Docker uses) does for the common
//! cases: same OS, same architecture, and the variant when one is asked for.

use berth_types::image::{Descriptor, Index, Platform};

use super::error::ClientError;

/// The platform of this machine in OCI terms (`linux/amd64`,
/// `linux/arm64/v8`…).
pub fn host_platform() -> Platform {
    let (architecture, variant) = match std::env::consts::ARCH {
        "x86_64" => ("amd64", None),
        "x86" => ("386", None),
        "aarch64" => ("arm64", Some("v8")),
        "arm" => ("arm", Some("v7")),
        "powerpc64" if cfg!(target_endian = "little") => ("ppc64le", None),
        "loongarch64" => ("loong64", None),
        other => (other, None),
    };
    Platform {
        architecture: architecture.to_owned(),
        os: std::env::consts::OS.to_owned(),
        variant: variant.map(str::to_owned),
    }
}

/// `os/architecture[/variant]`, as Docker prints a platform.
pub fn platform_string(platform: &Platform) -> String {
    match &platform.variant {
        Some(variant) => format!("{}/{}/{variant}", platform.os, platform.architecture),
        None => format!("{}/{}", platform.os, platform.architecture),
    }
}

/// The variant an entry without one means: arm64 is v8, arm is v7.
fn normalized_variant(platform: &Platform) -> Option<&str> {
    match (platform.architecture.as_str(), platform.variant.as_deref()) {
        (_, Some("")) | (_, None) => match platform.architecture.as_str() {
            "arm64" => Some("v8"),
            "arm" => Some("v7"),
            _ => None,
        },
        (_, variant) => variant,
    }
}

/// True when an entry for `candidate` can run where `wanted` is asked for.
pub fn platform_matches(wanted: &Platform, candidate: &Platform) -> bool {
    if wanted.os != candidate.os || wanted.architecture != candidate.architecture {
        return false;
    }
    match wanted.variant.as_deref() {
        // No variant asked for: any variant of that architecture does.
        None | Some("") => true,
        Some(_) => normalized_variant(wanted) == normalized_variant(candidate),
    }
}

/// The index entry for `wanted`: the first exact variant match, else the
/// first entry that matches; Docker's error when there is none.
pub fn select_manifest<'a>(
    index: &'a Index,
    wanted: &Platform,
) -> Result<&'a Descriptor, ClientError> {
    let candidates: Vec<&Descriptor> = index
        .manifests
        .iter()
        .filter(|descriptor| {
            descriptor
                .platform
                .as_ref()
                .is_some_and(|platform| platform_matches(wanted, platform))
        })
        .collect();
    let exact = candidates.iter().find(|descriptor| {
        descriptor
            .platform
            .as_ref()
            .is_some_and(|platform| normalized_variant(platform) == normalized_variant(wanted))
    });
    exact
        .or(candidates.first())
        .copied()
        .ok_or_else(|| ClientError::NoMatchingPlatform {
            platform: platform_string(wanted),
        })
}

#[cfg(test)]
mod tests {
    use berth_types::Digest;

    use super::*;

    fn platform(os: &str, architecture: &str, variant: Option<&str>) -> Platform {
        Platform {
            architecture: architecture.into(),
            os: os.into(),
            variant: variant.map(Into::into),
        }
    }

    fn entry(name: &str, platform: Option<Platform>) -> Descriptor {
        Descriptor {
            media_type: berth_types::image::media_type::OCI_MANIFEST.into(),
            digest: Digest::of_bytes(name.as_bytes()),
            size: 1,
            annotations: None,
            platform,
        }
    }

    fn index() -> Index {
        Index {
            schema_version: 2,
            media_type: None,
            manifests: vec![
                entry("attestation", Some(platform("unknown", "unknown", None))),
                entry("arm-v6", Some(platform("linux", "arm", Some("v6")))),
                entry("arm-v7", Some(platform("linux", "arm", Some("v7")))),
                entry("arm64", Some(platform("linux", "arm64", None))),
                entry("amd64", Some(platform("linux", "amd64", None))),
                entry("no-platform", None),
            ],
            annotations: None,
        }
    }

    fn selected(wanted: Platform) -> Result<Digest, String> {
        let index = index();
        select_manifest(&index, &wanted)
            .map(|descriptor| descriptor.digest.clone())
            .map_err(|error| error.to_string())
    }

    #[test]
    fn picks_by_os_architecture_and_variant() {
        let digest = |name: &str| Ok(Digest::of_bytes(name.as_bytes()));
        assert_eq!(selected(platform("linux", "amd64", None)), digest("amd64"));
        assert_eq!(
            selected(platform("linux", "arm64", Some("v8"))),
            digest("arm64")
        );
        assert_eq!(
            selected(platform("linux", "arm", Some("v7"))),
            digest("arm-v7")
        );
        assert_eq!(selected(platform("linux", "arm", None)), digest("arm-v7"));
        assert_eq!(
            selected(platform("linux", "arm", Some("v6"))),
            digest("arm-v6")
        );
    }

    #[test]
    fn no_match_is_dockers_error() {
        assert_eq!(
            selected(platform("linux", "s390x", None)),
            Err("no matching manifest for linux/s390x in the manifest list entries".into())
        );
        assert_eq!(
            selected(platform("windows", "amd64", None)).unwrap_err(),
            "no matching manifest for windows/amd64 in the manifest list entries"
        );
    }

    #[test]
    fn host_platform_here() {
        let host = host_platform();
        assert_eq!(host.os, "linux");
        if cfg!(target_arch = "x86_64") {
            assert_eq!(platform_string(&host), "linux/amd64");
        }
    }
}
