//! What a build is asked (the CLI's flags, the API's query) and what it
//! reports as it goes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use berth_engine::images::pull::CredentialSource;
use berth_types::Digest;

/// Where the Dockerfile comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DockerfileSource {
    /// A path relative to the context (`-f sub/Dockerfile`; default
    /// `Dockerfile`), or absolute (`-f /elsewhere/Dockerfile` on the CLI).
    Path(PathBuf),
    /// `-f -`, or a Dockerfile that came in the request.
    Inline(String),
}

/// A build as the front end resolved it; bad values are refused before
/// anything runs.
#[derive(Clone, Debug)]
pub struct BuildRequest {
    /// The context directory, read where it lies.
    pub context: PathBuf,
    pub dockerfile: DockerfileSource,
    /// `-t` (several), as given (`name`, `name:tag`).
    pub tags: Vec<String>,
    /// `--build-arg NAME=VALUE`; `--build-arg NAME` alone takes the value
    /// from the front end's environment, or stays unset (None).
    pub build_args: BTreeMap<String, Option<String>>,
    /// `--target`.
    pub target: Option<String>,
    /// `--no-cache`.
    pub no_cache: bool,
    /// `--pull`: pull every base image even when the store has it.
    pub pull: bool,
    /// `--label` (on the final image).
    pub labels: BTreeMap<String, String>,
    /// `--network` for the RUN steps (`default`, `none`, `host`, a network).
    pub network: Option<String>,
    /// `--platform`.
    pub platform: Option<String>,
    /// `--add-host HOST:IP` for the RUN steps.
    pub extra_hosts: Vec<String>,
    /// `--shm-size` (bytes) for the RUN steps; None for the default.
    pub shm_size: Option<i64>,
    /// `--cache-from`: local images whose steps are the only cache this
    /// build may use (the classic builder's rule; a name that is not in
    /// the store gives no cache).
    pub cache_from: Vec<String>,
    /// `--secret id=ID,src=FILE`: what `RUN --mount=type=secret,id=ID`
    /// sees (read-only, never in a layer).
    pub secrets: BTreeMap<String, PathBuf>,
    /// The RUN steps' resources (`--memory`, `--cpu-shares`, cpusets,
    /// `--cgroup-parent`, `--ulimit`), as a container's.
    pub run_resources: berth_types::container::resources::Resources,
    /// Which step containers stay after their step (the classic
    /// builder's `rm`/`forcerm`); BuildKit's and the CLI's: none.
    pub keep_containers: KeepContainers,
    /// `--build-context NAME=VALUE`: what `FROM NAME`, `COPY --from=NAME`
    /// and `RUN --mount=from=NAME` read, before a stage or an image of
    /// that name (BuildKit's rule: a stage of the same name is replaced).
    pub build_contexts: BTreeMap<String, NamedContext>,
    /// Whose credentials the base images are pulled with: the user's
    /// Docker config for the CLI; for the API only what the client sent
    /// (`X-Registry-Config`), never the server's own.
    pub registry_credentials: CredentialSource,
    /// `SOURCE_DATE_EPOCH` (seconds): the steps' images are dated with it
    /// and their layers hold no later mtime, so the same inputs give the
    /// same image. The CLI takes it from its environment; a
    /// `--build-arg SOURCE_DATE_EPOCH=…` (BuildKit's way) sets it too.
    pub source_date_epoch: Option<i64>,
}

/// One `--build-context` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NamedContext {
    /// A local directory, read where it lies; its own `.dockerignore`
    /// applies (not the main context's), as BuildKit's named contexts.
    Directory(PathBuf),
    /// `docker-image://REF`: an image of the store, pulled if missing.
    Image(String),
}

/// The classic builder's intermediate containers: `forcerm=1` removes
/// every one, `rm=1` (its default) keeps the one of a failed step, `rm=0`
/// keeps them all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeepContainers {
    #[default]
    None,
    Failed,
    All,
}

impl BuildRequest {
    pub fn new(context: PathBuf) -> Self {
        Self {
            context,
            dockerfile: DockerfileSource::Path(PathBuf::from("Dockerfile")),
            tags: Vec::new(),
            build_args: BTreeMap::new(),
            target: None,
            no_cache: false,
            pull: false,
            labels: BTreeMap::new(),
            network: None,
            platform: None,
            extra_hosts: Vec::new(),
            shm_size: None,
            cache_from: Vec::new(),
            keep_containers: KeepContainers::None,
            run_resources: Default::default(),
            secrets: BTreeMap::new(),
            build_contexts: BTreeMap::new(),
            registry_credentials: CredentialSource::DockerConfig,
            source_date_epoch: None,
        }
    }
}

/// How a step ended, for the progress display.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepEnd {
    /// Found in the cache: the image the step would make.
    Cached(Digest),
    /// Run (or a metadata step applied): the image it made.
    Done(Digest),
    /// Done with no image of its own (`FROM scratch`).
    Empty,
}

/// Which stream of a RUN step some output came on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputStream {
    Stdout,
    Stderr,
}

/// A step of the build, as the events about it name it: unique in the
/// build (its number in the order steps started).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StepId(pub usize);

/// A step that starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepStart {
    pub id: StepId,
    /// Its place among the build's steps (1-based, in the order they
    /// started) and their count: the classic builder's `Step 3/7`.
    pub number: usize,
    pub total: usize,
    /// BuildKit's label: the stage's name (`stage-N` when it has none)
    /// when the Dockerfile has more than one stage…
    pub stage: Option<String>,
    /// …and the step's place in its stage (`FROM` is 1) and their count.
    pub stage_number: usize,
    pub stage_total: usize,
    /// `FROM busybox`, `RUN make`.
    pub instruction: String,
}

/// What a build reports as it goes; the CLI prints it BuildKit's way, the
/// API streams it as the classic builder's JSON lines. Every event after
/// [`Progress::step`] names its step: with [`Progress::concurrent`],
/// steps of independent stages run at the same time and their events
/// interleave.
pub trait Progress {
    /// A step starts.
    fn step(&mut self, step: &StepStart);
    /// A RUN step's container was created (the classic builder's
    /// "Running in ID").
    fn running_in(&mut self, _step: StepId, _container: &str) {}
    /// Output of the running step, as it comes.
    fn output(&mut self, step: StepId, stream: OutputStream, bytes: &[u8]);
    fn step_end(&mut self, step: StepId, end: &StepEnd);
    /// The step failed with `error` ([`BuildError::Cancelled`]: it was
    /// stopped because another stage failed, or the build was cancelled).
    fn step_failed(&mut self, _step: StepId, _error: &BuildError) {}
    /// A warning (an unused build arg, …).
    fn warning(&mut self, message: &str);
    /// A pull's last word (`Status: Image is up to date for busybox:1`),
    /// when `--pull` or a missing base image pulled one.
    fn status(&mut self, _message: &str) {}
    /// True once whoever asked for the build is gone (an API client that
    /// disconnected): the build stops at the next step, or kills the RUN
    /// it waits for.
    fn cancelled(&self) -> bool {
        false
    }
    /// Whether independent stages may be built at the same time, their
    /// steps' events interleaved (BuildKit's plain lines show that). The
    /// classic builder's stream tells one step after another, so by
    /// default stages are built one at a time, in Dockerfile order.
    fn concurrent(&self) -> bool {
        false
    }
}

/// A finished build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildOutcome {
    pub image: Digest,
    /// The tags given to it, in the request's order.
    pub tags: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// What berth's builder does not do (yet), named.
    #[error("{0}")]
    Unsupported(String),
    /// Bad input in the Dockerfile or the request, in Docker's words.
    #[error("{0}")]
    Invalid(String),
    /// A RUN step failed: Docker's "The command '…' returned a non-zero
    /// code: N" (classic) / BuildKit's "process … did not complete
    /// successfully: exit code: N".
    #[error("process \"{command}\" did not complete successfully: exit code: {code}")]
    StepFailed { command: String, code: i32 },
    #[error("the build was cancelled")]
    Cancelled,
    #[error("failed to read a step's output")]
    Pipe(#[source] std::io::Error),
    #[error("failed to write a step's layer")]
    Layer(#[source] std::io::Error),
    #[error("failed to read {path:?}")]
    Context {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Engine(#[from] berth_engine::EngineError),
}
