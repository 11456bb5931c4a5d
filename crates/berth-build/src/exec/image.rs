//! The image a stage stands on after each step: an id in the store (none
//! before the first step of `FROM scratch`) and its runtime config.

use berth_engine::Engine;
use berth_types::image::{ContainerConfig, ImageConfig, Platform};
use berth_types::Digest;

use crate::BuildError;

/// Where a stage is: its image and the config the next step changes.
#[derive(Clone, Debug)]
pub struct StepImage {
    /// None for `FROM scratch` before any step.
    pub id: Option<Digest>,
    pub config: ContainerConfig,
    /// The image's `author` (`MAINTAINER`).
    pub author: Option<String>,
    /// The platform its programs are for: the base image's, or the
    /// stage's for `FROM scratch`.
    pub platform: Platform,
    /// The build's `SOURCE_DATE_EPOCH`: the time the images of its steps
    /// are dated with and the latest mtime their layers hold (none: now,
    /// and the files' own).
    pub source_date_epoch: Option<i64>,
}

/// `SOURCE_DATE_EPOCH` as an image's `created` (RFC 3339, UTC).
pub fn epoch_time(epoch: i64) -> Option<String> {
    chrono::DateTime::from_timestamp(epoch, 0)
        .map(|time| time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

/// The platform this host runs natively.
pub fn host_platform() -> Platform {
    Platform {
        os: "linux".to_owned(),
        architecture: berth_image::host_architecture().to_owned(),
        variant: None,
    }
}

impl StepImage {
    /// Nothing, for this host's platform.
    pub fn scratch() -> Self {
        Self::scratch_for(host_platform())
    }

    /// Nothing, for `platform`.
    pub fn scratch_for(platform: Platform) -> Self {
        Self {
            id: None,
            config: ContainerConfig {
                env: Some(vec![DEFAULT_PATH.to_owned()]),
                ..ContainerConfig::default()
            },
            author: None,
            platform,
            source_date_epoch: None,
        }
    }

    /// The image `id` in the store, with its config.
    pub fn load(engine: &Engine, id: &Digest) -> Result<Self, BuildError> {
        let bytes = engine
            .store()
            .blobs()
            .read(id)
            .map_err(berth_engine::EngineError::from)?;
        let config: ImageConfig = serde_json::from_slice(&bytes).map_err(|error| {
            BuildError::Invalid(format!("the config of image {id} is not valid: {error}"))
        })?;
        Ok(Self {
            id: Some(id.clone()),
            platform: Platform {
                os: config.os,
                architecture: config.architecture,
                variant: config.variant,
            },
            config: config.config.unwrap_or_default(),
            author: config.author,
            source_date_epoch: None,
        })
    }

    /// `Env` as (name, value) pairs, in order.
    pub fn env_pairs(&self) -> Vec<(String, String)> {
        self.config
            .env
            .iter()
            .flatten()
            .map(|entry| match entry.split_once('=') {
                Some((name, value)) => (name.to_owned(), value.to_owned()),
                None => (entry.clone(), String::new()),
            })
            .collect()
    }

    pub fn env_value(&self, name: &str) -> Option<String> {
        self.env_pairs()
            .into_iter()
            .rev()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value)
    }

    /// Sets `name=value` in `Env` (replacing an earlier value in place).
    pub fn set_env(&mut self, name: &str, value: &str) {
        let env = self.config.env.get_or_insert_with(Vec::new);
        let entry = format!("{name}={value}");
        match env.iter_mut().find(|existing| {
            existing
                .split_once('=')
                .map_or(existing.as_str(), |(key, _)| key)
                == name
        }) {
            Some(existing) => *existing = entry,
            None => env.push(entry),
        }
    }

    /// `WORKDIR`, `/` when unset.
    pub fn working_dir(&self) -> String {
        self.config
            .working_dir
            .clone()
            .filter(|directory| !directory.is_empty())
            .unwrap_or_else(|| "/".to_owned())
    }

    /// The shell of shell-form commands (`SHELL`, else `/bin/sh -c`).
    pub fn shell(&self) -> Vec<String> {
        self.config
            .extra
            .get("Shell")
            .and_then(|shell| serde_json::from_value::<Vec<String>>(shell.clone()).ok())
            .filter(|shell| !shell.is_empty())
            .unwrap_or_else(|| vec!["/bin/sh".to_owned(), "-c".to_owned()])
    }

    /// The base image's `OnBuild` triggers.
    pub fn onbuild_triggers(&self) -> Vec<String> {
        self.config
            .extra
            .get("OnBuild")
            .and_then(|triggers| serde_json::from_value::<Vec<String>>(triggers.clone()).ok())
            .unwrap_or_default()
    }
}

/// The `PATH` Docker gives an image without one (`FROM scratch`).
pub const DEFAULT_PATH: &str = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn env_is_set_in_place_and_read_back_last_first() {
        let mut image = StepImage::scratch();
        image.set_env("A", "1");
        image.set_env("PATH", "/bin");
        image.set_env("A", "2");
        assert_eq!(
            image.config.env.as_deref().unwrap(),
            ["PATH=/bin".to_owned(), "A=2".to_owned()]
        );
        assert_eq!(image.env_value("A").as_deref(), Some("2"));
        assert_eq!(image.env_value("B"), None);
    }

    #[test]
    fn defaults_of_a_scratch_stage() {
        let image = StepImage::scratch();
        assert_eq!(image.working_dir(), "/");
        assert_eq!(image.shell(), ["/bin/sh", "-c"]);
        assert!(image.onbuild_triggers().is_empty());
    }
}
