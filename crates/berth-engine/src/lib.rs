//! The services every berth front end (CLI, API server) calls. No clap, no
//! HTTP: inputs are plain values, outputs are records and Docker-shaped JSON.

pub mod containers;
pub mod copy;
mod error;
pub mod events;
mod file_watch;
pub mod images;
pub mod logs;
pub mod networks;
pub mod permissions;
pub mod swarm;
pub mod system;
pub mod volumes;
pub mod warm;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use berth_net::kernel::{HostKernel, Kernel};
use berth_runtime::Runtime;
use berth_store::Store;

pub use error::{EngineError, ErrorChain, ErrorKind};
pub use networks::config_file;

/// Where berth keeps its state, and the isolation backend its containers
/// run on: the context every engine function gets, so unit tests can put a
/// recording fake runtime in.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Persistent state (`--root`, default `/var/lib/berth`).
    pub root: PathBuf,
    /// Runtime state (`--run-root`, default `/run/berth`).
    pub run_root: PathBuf,
    /// What a running container is asked through (stop, pause, exec, stats,
    /// the repair of a container whose monitor died).
    pub runtime: Arc<dyn Runtime>,
    /// The same for `--isolation=vm` containers (the microVM backend).
    pub vm_runtime: Arc<dyn Runtime>,
}

impl EngineConfig {
    /// The roots, with containers on the namespace backend.
    pub fn new(root: impl Into<PathBuf>, run_root: impl Into<PathBuf>) -> Self {
        let (root, run_root) = (root.into(), run_root.into());
        Self {
            vm_runtime: Arc::new(containers::vm::runtime::VmRuntime::new(
                root.clone(),
                run_root.clone(),
            )),
            root,
            run_root,
            runtime: Arc::new(berth_runtime::NamespaceRuntime),
        }
    }

    /// The backend of `container`'s isolation.
    pub fn runtime_of(&self, container: &containers::record::ContainerRecord) -> &dyn Runtime {
        self.shared_runtime_of(container).as_ref()
    }

    /// [`EngineConfig::runtime_of`] as a handle to keep.
    pub fn shared_runtime_of(
        &self,
        container: &containers::record::ContainerRecord,
    ) -> &Arc<dyn Runtime> {
        match container.run.isolation {
            containers::record::Isolation::Namespaces => &self.runtime,
            containers::record::Isolation::Vm => &self.vm_runtime,
        }
    }
}

/// An open engine: the store, the kernel's network edge, and configuration.
/// Each CLI process opens one.
pub struct Engine {
    config: EngineConfig,
    store: Store,
    kernel: Box<dyn Kernel>,
}

impl Engine {
    pub fn open(config: EngineConfig) -> Result<Self, EngineError> {
        Self::with_kernel(config, Box::new(HostKernel::new()))
    }

    /// An engine whose network changes go to `kernel` (a recording fake in
    /// unit tests).
    pub fn with_kernel(config: EngineConfig, kernel: Box<dyn Kernel>) -> Result<Self, EngineError> {
        let store = Store::open(&config.root)?;
        permissions::prepare_run_root(&config.run_root)?;
        Ok(Self {
            config,
            store,
            kernel,
        })
    }

    /// The store and the kernel together, for network work that needs both.
    pub fn network_parts(&mut self) -> (&mut Store, &mut dyn Kernel) {
        (&mut self.store, self.kernel.as_mut())
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

    /// `run` up to the start: the image as `plan` says, then a warm pool
    /// member or a new container ([`containers::prepare_run`]); start it with
    /// [`containers::PreparedRun::start`]. Callable from any thread.
    pub fn prepare_run<F: containers::RunFrontEnd>(
        &mut self,
        request: &berth_types::container::CreateRequest,
        plan: containers::RunPlan<'_>,
        front_end: &mut F,
    ) -> Result<containers::PreparedRun, F::Error> {
        containers::prepare_run(self, request, plan, front_end)
    }
}
