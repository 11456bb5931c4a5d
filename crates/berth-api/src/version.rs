//! API versions: berth speaks 1.24 through 1.43 and reports 1.43, from
//! which the docker CLI negotiates down to its own.

pub const API_VERSION: &str = "1.43";
pub const MIN_API_VERSION: &str = "1.24";
const NEWEST: (u32, u32) = (1, 43);
const OLDEST: (u32, u32) = (1, 24);
pub const SERVER_HEADER: &str = concat!("berth/", env!("CARGO_PKG_VERSION"), " (linux)");

/// Splits `/v1.41/containers/json` into the version and the rest; an
/// unversioned path gets the newest version.
pub fn split_version(path: &str) -> Result<((u32, u32), &str), String> {
    let Some(rest) = path.strip_prefix("/v") else {
        return Ok((NEWEST, path));
    };
    let (number, tail) = match rest.find('/') {
        Some(index) => (&rest[..index], &rest[index..]),
        None => (rest, "/"),
    };
    let parsed = number
        .split_once('.')
        .and_then(|(major, minor)| Some((major.parse::<u32>().ok()?, minor.parse::<u32>().ok()?)));
    let Some(version) = parsed else {
        // Not a version prefix (`/volumes`): the path as is.
        return Ok((NEWEST, path));
    };
    if version > NEWEST {
        return Err(format!(
            "client version {number} is too new. Maximum supported API version is {API_VERSION}"
        ));
    }
    if version < OLDEST {
        return Err(format!(
            "client version {number} is too old. Minimum supported API version is {MIN_API_VERSION}, please upgrade your client to a newer version"
        ));
    }
    Ok((version, tail))
}

/// The commit berth was built from (`BERTH_GIT_COMMIT` at build time), or "unknown":
/// what `berth version`, `berth --version` and `GET /version` show.
pub const GIT_COMMIT: &str = match option_env!("BERTH_GIT_COMMIT") {
    Some(commit) => commit,
    None => "unknown",
};

/// `GET /version`'s document: the engine's version, as dockerd describes itself (also what
/// `berth version` shows as its Server, since berth's engine is in every command).
pub fn engine_version() -> serde_json::Value {
    let version = env!("CARGO_PKG_VERSION");
    let commit = GIT_COMMIT;
    let arch = berth_image::host_architecture();
    let kernel = nix::sys::utsname::uname()
        .map(|uname| uname.release().to_string_lossy().into_owned())
        .unwrap_or_default();
    serde_json::json!({
        "Platform": { "Name": "berth" },
        "Components": [{
            "Name": "Engine",
            "Version": version,
            "Details": {
                "ApiVersion": API_VERSION,
                "MinAPIVersion": MIN_API_VERSION,
                "GitCommit": commit,
                "GoVersion": "n/a (Rust)",
                "Os": "linux",
                "Arch": arch,
                "KernelVersion": kernel,
                "Experimental": "false",
            }
        }],
        "Version": version,
        "ApiVersion": API_VERSION,
        "MinAPIVersion": MIN_API_VERSION,
        "GitCommit": commit,
        "GoVersion": "n/a (Rust)",
        "Os": "linux",
        "Arch": arch,
        "KernelVersion": kernel,
        "BuildTime": "",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versioned_and_plain_paths() {
        assert_eq!(split_version("/_ping"), Ok(((1, 43), "/_ping")));
        assert_eq!(
            split_version("/v1.41/containers/json"),
            Ok(((1, 41), "/containers/json"))
        );
        assert_eq!(split_version("/v1.24/info"), Ok(((1, 24), "/info")));
        assert_eq!(split_version("/volumes"), Ok(((1, 43), "/volumes")));
        assert!(split_version("/v1.99/info")
            .unwrap_err()
            .contains("too new"));
        assert!(split_version("/v1.12/info")
            .unwrap_err()
            .contains("too old"));
    }
}
