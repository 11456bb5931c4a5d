//! Docker Engine API container models: what `POST /containers/create` carries
//! (`Config`, `HostConfig`, `NetworkingConfig`) with Docker's JSON field names, plus
//! the daemon's request-only validation. The CLI's `run`/`create` flags and the API
//! server both produce a [`CreateRequest`], so the engine sees one representation.

pub mod capabilities;
pub mod config;
pub mod host_config;
pub mod mount;
pub mod names;
pub mod network;
pub mod platform;
pub mod request;
pub mod resources;
mod serde_util;
pub mod signal;
pub mod validate;

pub use config::{ContainerConfig, EmptyObject, HealthConfig};
pub use host_config::{HostConfig, LogConfig, PortBinding, RestartPolicy};
pub use mount::{BindOptions, Mount, TmpfsOptions, VolumeDriver, VolumeOptions};
pub use network::{EndpointIpamConfig, EndpointSettings, NetworkingConfig};
pub use request::{CreateBody, CreateRequest};
pub use resources::{
    DeviceMapping, DeviceRequest, Resources, ThrottleDevice, Ulimit, WeightDevice,
};
pub use validate::ValidationError;

#[cfg(test)]
mod tests;
