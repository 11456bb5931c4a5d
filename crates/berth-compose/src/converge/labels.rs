//! docker compose's labels and names, so that `docker compose ps` pointed at `berth serve` and
//! `berth compose ps` see the same project: containers `PROJECT-SERVICE-N`, the network
//! `PROJECT_default`, volumes `PROJECT_NAME`.

use serde_json::Value as Json;
use sha2::{Digest, Sha256};

pub const PROJECT: &str = "com.docker.compose.project";
pub const SERVICE: &str = "com.docker.compose.service";
pub const NUMBER: &str = "com.docker.compose.container-number";
pub const ONEOFF: &str = "com.docker.compose.oneoff";
pub const CONFIG_HASH: &str = "com.docker.compose.config-hash";
pub const WORKING_DIR: &str = "com.docker.compose.project.working_dir";
pub const CONFIG_FILES: &str = "com.docker.compose.project.config_files";
pub const ENVIRONMENT_FILE: &str = "com.docker.compose.project.environment_file";
pub const VERSION: &str = "com.docker.compose.version";
pub const IMAGE: &str = "com.docker.compose.image";
pub const DEPENDS_ON: &str = "com.docker.compose.depends_on";
pub const NETWORK: &str = "com.docker.compose.network";
pub const VOLUME: &str = "com.docker.compose.volume";

/// What berth writes as `com.docker.compose.version`.
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// A service's container name: `container_name`, else `PROJECT-SERVICE-N`.
pub fn container_name(project: &str, service: &str, service_config: &Json, number: u32) -> String {
    match service_config.get("container_name").and_then(Json::as_str) {
        Some(name) => name.to_owned(),
        None => format!("{project}-{service}-{number}"),
    }
}

/// The hash of a service's normalised configuration: a container whose hash differs was made
/// from another configuration and is recreated. `scale`/`deploy.replicas` change how many
/// containers there are, not what each is, and are left out.
pub fn config_hash(service_config: &Json) -> String {
    let mut config = service_config.clone();
    if let Some(map) = config.as_object_mut() {
        map.remove("scale");
        map.remove("deploy");
        map.remove("profiles");
    }
    let bytes = serde_json::to_vec(&config).unwrap_or_default();
    hex::encode(Sha256::digest(&bytes))
}

/// `com.docker.compose.depends_on`: `SERVICE:CONDITION:RESTART` for each dependency.
pub fn depends_on(service_config: &Json) -> String {
    service_config
        .get("depends_on")
        .and_then(Json::as_object)
        .map(|depends| {
            depends
                .iter()
                .map(|(name, condition)| {
                    format!(
                        "{name}:{}:{}",
                        condition
                            .get("condition")
                            .and_then(Json::as_str)
                            .unwrap_or("service_started"),
                        condition
                            .get("restart")
                            .and_then(Json::as_bool)
                            .unwrap_or(false)
                    )
                })
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_follow_compose() {
        let service = json!({"image": "x"});
        assert_eq!(container_name("p", "web", &service, 2), "p-web-2");
        let named = json!({"image": "x", "container_name": "mine"});
        assert_eq!(container_name("p", "web", &named, 1), "mine");
    }

    #[test]
    fn the_hash_follows_the_configuration_not_the_scale() {
        let one = json!({"image": "x", "scale": 1});
        let two = json!({"image": "x", "scale": 3});
        let other = json!({"image": "y"});
        assert_eq!(config_hash(&one), config_hash(&two));
        assert_ne!(config_hash(&one), config_hash(&other));
    }

    #[test]
    fn depends_on_label() {
        let service = json!({"depends_on": {"db": {"condition": "service_healthy", "restart": true}, "c": {"condition": "service_started"}}});
        assert_eq!(
            depends_on(&service),
            "db:service_healthy:true,c:service_started:false"
        );
    }
}
