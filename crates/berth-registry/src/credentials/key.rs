//! The keys credentials are filed under in `config.json` and in credential
//! helpers: Docker Hub under its v1 index URL, every other registry under
//! `host[:port]` (docker/cli `ConvertToHostname`, moby `GetAuthConfigKey`).

/// Docker Hub's key (moby `registry.IndexServer`): what `docker login` with
/// no server stores, and what pulls from `docker.io` look up.
pub const INDEX_SERVER: &str = "https://index.docker.io/v1/";

/// Names of Docker Hub that all share [`INDEX_SERVER`]'s credentials:
/// `docker.io` is the reference domain, `index.docker.io` its legacy name
/// (distribution `legacyDefaultDomain`), `registry-1.docker.io` the v2 API host.
const DOCKER_HUB_HOSTS: [&str; 3] = ["docker.io", "index.docker.io", "registry-1.docker.io"];

/// `host[:port]` of a server address that may carry a scheme and a path:
/// `https://host:5000/v2/` → `host:5000` (docker/cli 20.10 `ConvertToHostname`).
pub fn hostname(server: &str) -> &str {
    let stripped = server
        .strip_prefix("http://")
        .or_else(|| server.strip_prefix("https://"))
        .unwrap_or(server);
    stripped.split('/').next().unwrap_or(stripped)
}

/// Whether `server` (a host, or a URL) names Docker Hub.
pub fn is_docker_hub(server: &str) -> bool {
    let host = hostname(server.trim());
    DOCKER_HUB_HOSTS
        .iter()
        .any(|hub| host.eq_ignore_ascii_case(hub))
}

/// The key for `server`: [`INDEX_SERVER`] for Docker Hub (and for an empty
/// server, as `docker login` with no argument), else `host[:port]`.
pub fn server_key(server: &str) -> String {
    let server = server.trim();
    if server.is_empty() || is_docker_hub(server) {
        INDEX_SERVER.to_owned()
    } else {
        hostname(server).to_owned()
    }
}

/// Every key a `logout` from `server` removes, in docker/cli 20.10's
/// order: the address as typed, its host, and the `http://`/`https://`
/// forms older clients saved. Like docker, no duplicate is dropped (a
/// helper sees a second `erase` of `host` when `host` was typed).
pub fn logout_keys(server: &str) -> Vec<String> {
    let server = server.trim();
    let key = server_key(server);
    if key == INDEX_SERVER {
        return vec![key];
    }
    vec![
        server.to_owned(),
        key.clone(),
        format!("http://{key}"),
        format!("https://{key}"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostnames_drop_scheme_and_path() {
        assert_eq!(
            hostname("https://registry.example:5000/v2/"),
            "registry.example:5000"
        );
        assert_eq!(hostname("http://127.0.0.1:5000"), "127.0.0.1:5000");
        assert_eq!(hostname("localhost:5000/foo"), "localhost:5000");
        assert_eq!(hostname("ghcr.io"), "ghcr.io");
    }

    #[test]
    fn docker_hub_names_share_one_key() {
        for name in [
            "",
            "docker.io",
            "index.docker.io",
            "registry-1.docker.io",
            "https://index.docker.io/v1/",
            "https://registry-1.docker.io/v2/",
            "Docker.IO",
        ] {
            assert_eq!(server_key(name), INDEX_SERVER, "{name:?}");
        }
        assert_eq!(server_key("https://ghcr.io/v2/"), "ghcr.io");
        assert_eq!(server_key("127.0.0.1:5000"), "127.0.0.1:5000");
    }

    #[test]
    fn logout_tries_the_legacy_forms() {
        assert_eq!(
            logout_keys("http://127.0.0.1:5000/x"),
            [
                "http://127.0.0.1:5000/x",
                "127.0.0.1:5000",
                "http://127.0.0.1:5000",
                "https://127.0.0.1:5000"
            ]
        );
        assert_eq!(
            logout_keys("127.0.0.1:5000"),
            [
                "127.0.0.1:5000",
                "127.0.0.1:5000",
                "http://127.0.0.1:5000",
                "https://127.0.0.1:5000"
            ]
        );
        assert_eq!(logout_keys("docker.io"), [INDEX_SERVER]);
    }
}
