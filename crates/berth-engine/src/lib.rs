//! The services every berth front end (CLI, API server) calls. No clap, no
//! HTTP: inputs are plain values, outputs are records and Docker-shaped JSON.

pub mod containers;
pub mod copy;
mod error;
pub mod images;
pub mod logs;
pub mod volumes;

use std::path::{Path, PathBuf};

use berth_store::Store;

pub use error::EngineError;

/// Where berth keeps its state.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Persistent state (`--root`, default `/var/lib/berth`).
    pub root: PathBuf,
    /// Runtime state (`--run-root`, default `/run/berth`).
    pub run_root: PathBuf,
}

/// An open engine: the store plus configuration. Each CLI process opens one.
pub struct Engine {
    config: EngineConfig,
    store: Store,
}

impl Engine {
    pub fn open(config: EngineConfig) -> Result<Self, EngineError> {
        let store = Store::open(&config.root)?;
        Ok(Self { config, store })
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    pub fn root(&self) -> &Path {
        &self.config.root
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn store_mut(&mut self) -> &mut Store {
        &mut self.store
    }
}
