//! `POST /containers/create`: the body (a `Config` with `HostConfig` and
//! `NetworkingConfig` beside its fields) and the `name`/`platform` query parameters.

use serde::{Deserialize, Serialize};

use super::config::ContainerConfig;
use super::host_config::HostConfig;
use super::network::NetworkingConfig;
use crate::image::Platform;

/// Everything needed to create a container, whether it came from `berth run`'s
/// flags or from the Docker API.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CreateRequest {
    /// `--name`, or the `name` query parameter.
    pub name: Option<String>,
    pub config: ContainerConfig,
    pub host_config: HostConfig,
    pub networking_config: NetworkingConfig,
    /// `--platform`, or the `platform` query parameter.
    pub platform: Option<Platform>,
}

/// The JSON body of `POST /containers/create`, field for field as Docker clients
/// send it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CreateBody {
    #[serde(flatten)]
    pub config: ContainerConfig,
    #[serde(
        rename = "HostConfig",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub host_config: Option<HostConfig>,
    #[serde(
        rename = "NetworkingConfig",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub networking_config: Option<NetworkingConfig>,
}

impl CreateRequest {
    /// Joins a decoded body with the query parameters; a missing `HostConfig` or
    /// `NetworkingConfig` counts as all defaults, as in Docker.
    pub fn from_body(body: CreateBody, name: Option<String>, platform: Option<Platform>) -> Self {
        CreateRequest {
            name,
            config: body.config,
            host_config: body.host_config.unwrap_or_default(),
            networking_config: body.networking_config.unwrap_or_default(),
            platform,
        }
    }

    /// The body a Docker client would send for this request.
    pub fn to_body(&self) -> CreateBody {
        CreateBody {
            config: self.config.clone(),
            host_config: Some(self.host_config.clone()),
            networking_config: Some(self.networking_config.clone()),
        }
    }
}
