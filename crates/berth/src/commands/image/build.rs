//! `build`: a Dockerfile to an image with berth's builder (berth-build),
//! the context read where it lies. Progress goes to stderr as BuildKit's
//! terminal block (`build_tty.rs`) or its plain lines (`build_plain.rs`);
//! `-q` prints only the image id on stdout.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

use anyhow::{bail, Context};
use berth_build::{BuildRequest, DockerfileSource, NamedContext, Progress};

use super::build_plain::PlainProgress;
use super::build_tty::TtyProgress;
use berth_engine::Engine;
use clap::Args;

#[derive(Debug, Args)]
pub struct BuildArgs {
    /// Name and optionally a tag (format: "name:tag")
    #[arg(short, long = "tag", value_name = "list")]
    pub tags: Vec<String>,
    /// Name of the Dockerfile (default: "PATH/Dockerfile"; "-" reads it from stdin)
    #[arg(short, long, value_name = "string")]
    pub file: Option<String>,
    /// Set build-time variables
    #[arg(long = "build-arg", value_name = "stringArray")]
    pub build_args: Vec<String>,
    /// Set the target build stage to build
    #[arg(long, value_name = "string")]
    pub target: Option<String>,
    /// Do not use cache when building the image
    #[arg(long)]
    pub no_cache: bool,
    /// Always attempt to pull all referenced images
    #[arg(long)]
    pub pull: bool,
    /// Suppress the build output and print image ID on success
    #[arg(short, long)]
    pub quiet: bool,
    /// Write the image ID to the file
    #[arg(long, value_name = "string")]
    pub iidfile: Option<PathBuf>,
    /// Set metadata for an image
    #[arg(long = "label", value_name = "stringArray")]
    pub labels: Vec<String>,
    /// Set target platform for build
    #[arg(long, value_name = "string")]
    pub platform: Option<String>,
    /// Set the networking mode for the "RUN" instructions during build
    #[arg(long, value_name = "string")]
    pub network: Option<String>,
    /// Set type of progress output ("auto", "plain", "tty", "quiet")
    #[arg(long, value_name = "string", default_value = "auto")]
    pub progress: String,
    /// Secret file to expose to the build: id=mysecret,src=/local/secret
    #[arg(long = "secret", value_name = "stringArray")]
    pub secrets: Vec<String>,
    /// Additional build contexts (e.g., name=path, name=docker-image://ref)
    #[arg(long = "build-context", value_name = "stringArray")]
    pub build_contexts: Vec<String>,
    /// Images to consider as cache sources (their steps are then the only cache)
    #[arg(long = "cache-from", value_name = "stringArray")]
    pub cache_from: Vec<String>,
    /// Add a custom host-to-IP mapping (format: "host:ip")
    #[arg(long = "add-host", value_name = "list")]
    pub add_hosts: Vec<String>,
    /// Size of /dev/shm (e.g. 64m)
    #[arg(long = "shm-size", value_name = "bytes")]
    pub shm_size: Option<String>,
    /// Output destination (format: "type=local,dest=path", "type=tar,dest=file", "-" for a tar on stdout)
    #[arg(short, long = "output", value_name = "stringArray")]
    pub outputs: Vec<String>,
    /// PATH | -
    pub path: String,
}

pub fn run(engine: &mut Engine, args: &BuildArgs) -> anyhow::Result<i32> {
    refuse_unsupported(args)?;
    let quiet = args.quiet || args.progress == "quiet";
    let output = match args.outputs.as_slice() {
        [] => None,
        [one] => Some(parse_output(one)?),
        _ => bail!("only one --output is supported"),
    };
    let (request, _stdin_context) = resolve_request(args)?;
    let mut progress = Display::choose(&args.progress, quiet);
    match berth_build::build(engine, &request, progress.as_progress()) {
        Ok(outcome) => {
            let id = outcome.image.to_string();
            if let Some(output) = &output {
                export(engine, &outcome.image, output)?;
                progress.export(&format!("exporting to {}", output.describe()));
            }
            if let Some(path) = &args.iidfile {
                fs_err::write(path, &id).with_context(|| "failed to write the image id file")?;
            }
            // A tar on stdout is all stdout carries.
            let print_id = quiet && output != Some(Output::Tar(None));
            if !print_id {
                progress.export(&format!("writing image {id}"));
                for tag in &outcome.tags {
                    progress.export(&format!("naming to {}", full_name(tag)));
                }
            }
            progress.succeed();
            if print_id {
                println!("{id}");
            }
            Ok(0)
        }
        Err(error) => {
            progress.fail();
            eprintln!(
                "ERROR: failed to solve: {}",
                berth_engine::ErrorChain(&error)
            );
            Ok(1)
        }
    }
}

/// Where `--output` puts the image's files.
#[derive(Debug, PartialEq, Eq)]
enum Output {
    /// `type=local,dest=DIR` (or `-o DIR`): the files in a directory.
    Local(PathBuf),
    /// `type=tar,dest=FILE` (`-` or `-o -`: stdout).
    Tar(Option<PathBuf>),
}

impl Output {
    fn describe(&self) -> String {
        match self {
            Output::Local(directory) => format!("directory {}", directory.display()),
            Output::Tar(Some(file)) => format!("tar {}", file.display()),
            Output::Tar(None) => "tar on stdout".to_owned(),
        }
    }
}

/// `--output`: BuildKit's CSV form, or a bare destination (`-` for a tar
/// on stdout, else a directory).
fn parse_output(text: &str) -> anyhow::Result<Output> {
    if !text.contains('=') {
        return Ok(if text == "-" {
            Output::Tar(None)
        } else {
            Output::Local(PathBuf::from(text))
        });
    }
    let mut kind = None;
    let mut dest = None;
    for field in text.split(',') {
        match field.split_once('=') {
            Some(("type", value)) => kind = Some(value.to_owned()),
            Some(("dest", value)) => dest = Some(value.to_owned()),
            _ => bail!("--output {text}: berth takes type= and dest= only"),
        }
    }
    let dest = dest.ok_or_else(|| anyhow::anyhow!("--output {text}: dest= is required"))?;
    match kind.as_deref().unwrap_or("local") {
        "local" => Ok(Output::Local(PathBuf::from(dest))),
        "tar" if dest == "-" => Ok(Output::Tar(None)),
        "tar" => Ok(Output::Tar(Some(PathBuf::from(dest)))),
        other => bail!("--output type={other} is not supported by berth yet (local and tar are)"),
    }
}

fn export(engine: &Engine, image: &berth_types::Digest, output: &Output) -> anyhow::Result<()> {
    match output {
        Output::Tar(None) => {
            let mut stdout = std::io::stdout();
            berth_build::export_image(engine, image, &mut stdout)?;
            stdout.flush()?;
        }
        Output::Tar(Some(file)) => {
            let mut out = std::io::BufWriter::new(fs_err::File::create(file)?);
            berth_build::export_image(engine, image, &mut out)?;
            out.flush()?;
        }
        Output::Local(directory) => {
            fs_err::create_dir_all(directory)?;
            let mut tar = Vec::new();
            berth_build::export_image(engine, image, &mut tar)?;
            let mut archive = tar::Archive::new(&tar[..]);
            archive.set_preserve_permissions(true);
            archive
                .unpack(directory)
                .with_context(|| format!("failed to write the files to {}", directory.display()))?;
        }
    }
    Ok(())
}

fn refuse_unsupported(args: &BuildArgs) -> anyhow::Result<()> {
    match args.progress.as_str() {
        "auto" | "plain" | "tty" | "quiet" => Ok(()),
        other => bail!("invalid progress mode {other:?}: expected auto, plain, tty or quiet"),
    }
}

/// Where the build's progress goes: BuildKit's redrawn block on a
/// terminal (`auto` or `tty`), its plain lines elsewhere (as the docker
/// CLI's builder does with `tty` when stderr is not a terminal) or with
/// `plain`, nothing with `-q`.
enum Display {
    Plain(PlainProgress),
    Tty(TtyProgress),
}

impl Display {
    fn choose(mode: &str, quiet: bool) -> Self {
        let terminal = std::io::stderr().is_terminal();
        if !quiet && terminal && matches!(mode, "auto" | "tty") {
            Display::Tty(TtyProgress::start())
        } else {
            Display::Plain(PlainProgress::new(quiet))
        }
    }

    fn as_progress(&mut self) -> &mut dyn Progress {
        match self {
            Display::Plain(plain) => plain,
            Display::Tty(tty) => tty,
        }
    }

    /// The build is done: its steps end (plain) before the exports.
    fn export(&mut self, text: &str) {
        match self {
            Display::Plain(plain) => {
                plain.finish_step();
                plain.line(&format!("{text} done"));
            }
            Display::Tty(tty) => tty.export(text),
        }
    }

    fn succeed(&mut self) {
        match self {
            Display::Plain(plain) => plain.finish_step(),
            Display::Tty(tty) => tty.finish(),
        }
    }

    fn fail(&mut self) {
        match self {
            Display::Plain(plain) => plain.fail_step(),
            Display::Tty(tty) => tty.finish(),
        }
    }
}

/// The request from the flags; a context read from stdin is kept in a
/// temporary directory while the build runs (the second value).
fn resolve_request(args: &BuildArgs) -> anyhow::Result<(BuildRequest, Option<tempfile::TempDir>)> {
    if args.path.contains("://") || args.path.starts_with("git@") {
        bail!(
            "building from a URL or git repository ({}) is not supported by berth yet",
            args.path
        );
    }
    let mut stdin_context = None;
    let (context, mut dockerfile) = if args.path == "-" {
        // `build - < Dockerfile`: a Dockerfile and no context.
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("failed to read the Dockerfile from stdin")?;
        if text.len() > 262 && text.as_bytes()[257..262] == *b"ustar" {
            bail!("a build context as a tar on stdin is not supported by berth yet: give its directory");
        }
        let directory = tempfile::Builder::new().prefix("berth-build-").tempdir()?;
        let path = directory.path().to_path_buf();
        stdin_context = Some(directory);
        (path, DockerfileSource::Inline(text))
    } else {
        let context = PathBuf::from(&args.path);
        if !context.is_dir() {
            bail!("unable to prepare context: path {:?} not found", args.path);
        }
        (context, DockerfileSource::Path(PathBuf::from("Dockerfile")))
    };
    match args.file.as_deref() {
        None => {}
        Some("-") => {
            if args.path == "-" {
                bail!("invalid argument: can't use stdin for both build context and dockerfile");
            }
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("failed to read the Dockerfile from stdin")?;
            dockerfile = DockerfileSource::Inline(text);
        }
        Some(file) => {
            // Relative to the working directory, as the docker CLI takes it.
            let path = PathBuf::from(file);
            dockerfile = DockerfileSource::Path(if path.is_absolute() {
                path
            } else {
                std::env::current_dir()?.join(path)
            });
        }
    }
    let mut request = BuildRequest::new(context);
    request.dockerfile = dockerfile;
    request.tags = args.tags.clone();
    request.build_args = build_args(&args.build_args);
    // buildx passes its SOURCE_DATE_EPOCH on to the build; so does berth.
    if let Some(text) = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .filter(|text| !text.is_empty())
    {
        let epoch = text.parse::<i64>().with_context(|| {
            format!("invalid SOURCE_DATE_EPOCH {text:?}: expected seconds since 1970-01-01")
        })?;
        request.source_date_epoch = Some(epoch);
    }
    request.target = args.target.clone();
    request.no_cache = args.no_cache;
    request.pull = args.pull;
    request.labels = labels(&args.labels);
    request.network = args.network.clone();
    request.platform = args.platform.clone();
    request.extra_hosts = args.add_hosts.clone();
    request.secrets = secrets(&args.secrets)?;
    request.cache_from = args.cache_from.clone();
    request.build_contexts = build_contexts(&args.build_contexts, &std::env::current_dir()?)?;
    request.shm_size = args
        .shm_size
        .as_deref()
        .map(|size| {
            crate::format::units::parse_size(size).map_err(|error| {
                anyhow::anyhow!("invalid argument {size:?} for \"--shm-size\" flag: {error}")
            })
        })
        .transpose()?
        .map(|size| size as i64);
    Ok((request, stdin_context))
}

/// `--build-arg NAME=VALUE`, or `NAME` for the variable's value here.
fn build_args(given: &[String]) -> BTreeMap<String, Option<String>> {
    given
        .iter()
        .map(|arg| match arg.split_once('=') {
            Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
            None => (arg.clone(), std::env::var(arg).ok()),
        })
        .collect()
}

/// `--secret id=ID,src=FILE` (`source=`, `type=file` too), as BuildKit's
/// CLI takes it; a secret from the environment (`env=`) is refused.
fn secrets(given: &[String]) -> anyhow::Result<BTreeMap<String, PathBuf>> {
    let mut secrets = BTreeMap::new();
    for secret in given {
        let mut id = None;
        let mut source = None;
        for field in secret.split(',') {
            match field.split_once('=') {
                Some(("id", value)) => id = Some(value.to_owned()),
                Some(("src" | "source", value)) => source = Some(PathBuf::from(value)),
                Some(("type", "file")) => {}
                Some(("env", _)) | Some(("type", "env")) => {
                    bail!("--secret {secret}: a secret from the environment is not supported by berth yet: give a file (src=)")
                }
                _ => bail!("invalid --secret {secret:?}: expected id=ID,src=FILE"),
            }
        }
        let source =
            source.ok_or_else(|| anyhow::anyhow!("invalid --secret {secret:?}: no src=FILE"))?;
        let id = id.unwrap_or_else(|| {
            source
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        let source = fs_err::canonicalize(&source)
            .with_context(|| format!("failed to read the secret file {}", source.display()))?;
        secrets.insert(id, source);
    }
    Ok(secrets)
}

/// `--build-context NAME=VALUE`: a directory (absolute, or relative to
/// `cwd`) or `docker-image://REF`; BuildKit's other forms (a URL, git,
/// `oci-layout://`, bake's `target:`) are refused by name.
fn build_contexts(
    given: &[String],
    cwd: &std::path::Path,
) -> anyhow::Result<BTreeMap<String, NamedContext>> {
    let mut contexts = BTreeMap::new();
    for context in given {
        let Some((name, value)) = context
            .split_once('=')
            .filter(|(name, value)| !name.is_empty() && !value.is_empty())
        else {
            bail!("invalid --build-context {context:?}: expected NAME=VALUE (a directory or docker-image://REF)");
        };
        let named = if let Some(reference) = value.strip_prefix("docker-image://") {
            if reference.is_empty() {
                bail!(
                    "invalid --build-context {context:?}: docker-image:// needs an image reference"
                );
            }
            NamedContext::Image(reference.to_owned())
        } else if value.contains("://") || value.starts_with("git@") || value.starts_with("target:")
        {
            let form = value
                .split_once("://")
                .map(|(scheme, _)| format!("{scheme}://"))
                .unwrap_or_else(|| {
                    if value.starts_with("git@") {
                        "git@".to_owned()
                    } else {
                        "target:".to_owned()
                    }
                });
            bail!(
                "--build-context {name}={value}: a {form} context is not supported by berth yet (give a directory or docker-image://REF)"
            );
        } else {
            let path = cwd.join(value);
            if !path.is_dir() {
                bail!(
                    "--build-context {name}={value}: {} is not a directory",
                    path.display()
                );
            }
            NamedContext::Directory(path)
        };
        if contexts.insert(name.to_owned(), named).is_some() {
            bail!("--build-context {name} is given more than once");
        }
    }
    Ok(contexts)
}

fn labels(given: &[String]) -> BTreeMap<String, String> {
    given
        .iter()
        .map(|label| match label.split_once('=') {
            Some((key, value)) => (key.to_owned(), value.to_owned()),
            None => (label.clone(), String::new()),
        })
        .collect()
}

fn full_name(tag: &str) -> String {
    berth_types::Reference::parse_normalized(tag)
        .map(|reference| reference.with_default_tag().to_string())
        .unwrap_or_else(|_| tag.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_args_without_a_value_take_the_environment() {
        let args = build_args(&[
            "A=1".to_owned(),
            "B=".to_owned(),
            "BERTH_SURELY_UNSET_VARIABLE".to_owned(),
        ]);
        assert_eq!(args["A"].as_deref(), Some("1"));
        assert_eq!(args["B"].as_deref(), Some(""));
        assert_eq!(args["BERTH_SURELY_UNSET_VARIABLE"], None);
    }

    #[test]
    fn outputs_parse_as_buildkit_spells_them() {
        assert_eq!(
            parse_output("out").unwrap(),
            Output::Local(PathBuf::from("out"))
        );
        assert_eq!(parse_output("-").unwrap(), Output::Tar(None));
        assert_eq!(
            parse_output("type=tar,dest=img.tar").unwrap(),
            Output::Tar(Some(PathBuf::from("img.tar")))
        );
        assert_eq!(
            parse_output("type=local,dest=d").unwrap(),
            Output::Local(PathBuf::from("d"))
        );
        assert!(parse_output("type=registry,dest=x")
            .unwrap_err()
            .to_string()
            .contains("type=registry is not supported"));
        assert!(parse_output("type=tar").is_err());
    }

    #[test]
    fn build_contexts_are_directories_or_images() {
        let cwd = tempfile::tempdir().unwrap();
        fs_err::create_dir(cwd.path().join("docs")).unwrap();
        let contexts = build_contexts(
            &[
                "docs=docs".to_owned(),
                "base=docker-image://busybox:1".to_owned(),
            ],
            cwd.path(),
        )
        .unwrap();
        assert_eq!(
            contexts["docs"],
            NamedContext::Directory(cwd.path().join("docs"))
        );
        assert_eq!(
            contexts["base"],
            NamedContext::Image("busybox:1".to_owned())
        );
        for (bad, words) in [
            (
                "x=https://example.com/x.git",
                "a https:// context is not supported",
            ),
            (
                "x=git@github.com:a/b.git",
                "a git@ context is not supported",
            ),
            (
                "x=oci-layout:///tmp/layout",
                "a oci-layout:// context is not supported",
            ),
            ("x=target:base", "a target: context is not supported"),
            ("x", "expected NAME=VALUE"),
            ("x=missing", "is not a directory"),
            ("x=docker-image://", "needs an image reference"),
        ] {
            let error = build_contexts(&[bad.to_owned()], cwd.path())
                .unwrap_err()
                .to_string();
            assert!(error.contains(words), "{bad}: {error}");
        }
        let twice = build_contexts(&["a=docs".to_owned(), "a=docs".to_owned()], cwd.path());
        assert!(twice.unwrap_err().to_string().contains("more than once"));
    }

    #[test]
    fn tags_are_named_in_full() {
        assert_eq!(full_name("app"), "docker.io/library/app:latest");
        assert_eq!(full_name("reg:5000/x:1"), "reg:5000/x:1");
    }
}
