//! One instruction of a stage: its values expanded as BuildKit expands
//! them (ENV, ARG, LABEL, USER, WORKDIR, EXPOSE, VOLUME, STOPSIGNAL, COPY
//! and ADD do; RUN, CMD, ENTRYPOINT, SHELL and HEALTHCHECK leave that to
//! the shell), its cache key, and its image: from the cache, or made.

use berth_engine::containers::paths::ContainerPaths;
use berth_types::image::History;
use berth_types::Digest;

use super::args::ArgScope;
use super::cache::CacheKey;
use super::container::{
    commit_layer, commit_metadata, ensure_image, nop_command, run_container, with_image_roots,
    with_root, with_step_container, RunSettings,
};
use super::contexts::ContextSource;
use super::copy::{add_to_key, collect_sources, has_wildcard, parse_chmod, CopySpec, SourceRoot};
use super::fetch::{download, is_git_url, is_http_url, parse_checksum, url_file_name};
use super::image::StepImage;
use super::metadata;
use super::mounts::{parse_mount, prepare, remove_mount_points, MountSource, RunMount};
use super::owner::resolve_chown;
use super::place::{make_directory, place};
use super::stages::{expand_error, Source, StageRun};
use crate::dockerfile::{
    expand_heredoc, expand_word, expand_words, Command, Copy, Flag, Healthcheck, Instruction,
    InstructionKind, Run,
};
use crate::ignore::IgnoreMatcher;
use crate::{BuildError, StepEnd};

/// A stage being built.
pub struct StageState {
    pub index: usize,
    pub image: StepImage,
    /// This stage's ARGs.
    pub scope: ArgScope,
    /// CMD set in this stage (ENTRYPOINT keeps it then).
    pub cmd_set: bool,
}

impl StageState {
    pub fn new(index: usize, image: StepImage) -> Self {
        Self {
            index,
            image,
            scope: ArgScope::default(),
            cmd_set: false,
        }
    }

    /// A variable for expansion: ENV wins over ARG of the same name.
    fn variable(&self, name: &str) -> Option<String> {
        self.image
            .env_value(name)
            .or_else(|| self.scope.get(name).cloned().flatten())
    }
}

pub fn run_step(
    run: &mut StageRun<'_>,
    state: &mut StageState,
    instruction: &Instruction,
) -> Result<(), BuildError> {
    let escape = run.escape();
    let expand = |state: &StageState, word: &str| {
        expand_word(word, escape, &|name| state.variable(name)).map_err(expand_error)
    };
    let history = History {
        created_by: Some(instruction.original.clone()),
        ..History::default()
    };
    match &instruction.kind {
        InstructionKind::Run(step) => return run_command(run, state, step, history),
        InstructionKind::Copy(copy) => return copy_files(run, state, copy, false, history),
        InstructionKind::Add(copy) => return copy_files(run, state, copy, true, history),
        InstructionKind::Workdir(path) => {
            let path = expand(state, path)?;
            return workdir(run, state, &path, history);
        }
        InstructionKind::Env(pairs) => {
            let expanded = pairs
                .iter()
                .map(|pair| Ok((expand(state, &pair.key)?, expand(state, &pair.value)?)))
                .collect::<Result<Vec<_>, BuildError>>()?;
            for (key, value) in expanded {
                state.image.set_env(&key, &value);
            }
        }
        InstructionKind::Arg(declarations) => {
            for declaration in declarations {
                let value = match run.build.take_arg(&declaration.name) {
                    Some(value) => Some(value),
                    None => match &declaration.default {
                        Some(default) => Some(expand(state, default)?),
                        None => run.global.get(&declaration.name).cloned().flatten(),
                    },
                };
                state.scope.declare(&declaration.name, value);
            }
        }
        InstructionKind::Label(pairs) => {
            let labels = pairs
                .iter()
                .map(|pair| Ok((expand(state, &pair.key)?, expand(state, &pair.value)?)))
                .collect::<Result<Vec<_>, BuildError>>()?;
            metadata::labels(&mut state.image, &labels);
        }
        InstructionKind::User(user) => {
            let user = expand(state, user)?;
            state.image.config.user = Some(user).filter(|user| !user.is_empty());
        }
        InstructionKind::StopSignal(signal) => {
            state.image.config.stop_signal = Some(expand(state, signal)?);
        }
        InstructionKind::Expose(ports) => {
            let mut expanded = Vec::new();
            for port in ports {
                expanded.extend(
                    expand_words(port, escape, &|name| state.variable(name))
                        .map_err(expand_error)?,
                );
            }
            metadata::expose(&mut state.image, &expanded)?;
        }
        InstructionKind::Volume(paths) => {
            let paths = paths
                .iter()
                .map(|path| expand(state, path))
                .collect::<Result<Vec<_>, _>>()?;
            metadata::volumes(&mut state.image, &paths)?;
        }
        InstructionKind::Cmd(command) => {
            metadata::set_cmd(&mut state.image, command);
            state.cmd_set = true;
        }
        InstructionKind::Entrypoint(command) => {
            metadata::set_entrypoint(&mut state.image, command, state.cmd_set);
        }
        InstructionKind::Healthcheck(Healthcheck::None) => {
            metadata::healthcheck(&mut state.image, None)?;
        }
        InstructionKind::Healthcheck(Healthcheck::Check { test, flags }) => {
            metadata::healthcheck(&mut state.image, Some((test, flags)))?;
        }
        InstructionKind::Shell(shell) => metadata::shell(&mut state.image, shell),
        InstructionKind::Onbuild(trigger) => metadata::onbuild(&mut state.image, trigger),
        InstructionKind::Maintainer(name) => state.image.author = Some(name.clone()),
    }
    metadata_step(run, state, instruction, history)
}

/// A step that changes only the config: cached by its parent and the
/// config it gives (so a rebuild gets the same image).
fn metadata_step(
    run: &mut StageRun<'_>,
    state: &mut StageState,
    instruction: &Instruction,
    history: History,
) -> Result<(), BuildError> {
    let mut key = CacheKey::of(&state.image);
    key.add(b"metadata")
        .add(instruction.original.as_bytes())
        .add(&serde_json::to_vec(&state.image.config).expect("a config always serializes"))
        .add(state.image.author.as_deref().unwrap_or_default().as_bytes());
    let image = state.image.clone();
    let saved = nop_command(&image, &instruction.original);
    cached_or_made(run, state, key, |run| {
        commit_metadata(run.engine, &image, (history, saved))
    })
}

/// The cached image for `key`, or the one `make` makes (then recorded).
fn cached_or_made(
    run: &mut StageRun<'_>,
    state: &mut StageState,
    key: CacheKey,
    make: impl FnOnce(&mut StageRun<'_>) -> Result<Digest, BuildError>,
) -> Result<(), BuildError> {
    let end = run.cached_or_make(key, make)?;
    run.end_step(&end);
    let (StepEnd::Cached(id) | StepEnd::Done(id)) = end else {
        unreachable!("cached_or_make ends with an image")
    };
    state.image.id = Some(id);
    Ok(())
}

/// What `RUN` runs: the exec form as written, the shell form (with its
/// heredocs) after the stage's shell.
fn run_args(image: &StepImage, step: &Run) -> Vec<String> {
    match (&step.command, step.heredocs.as_slice()) {
        (Command::Shell(text), [only]) if is_only_heredoc(text, &only.name) => {
            let mut args = image.shell();
            args.push(only.chomped_content());
            args
        }
        (Command::Shell(text), heredocs) if !heredocs.is_empty() => {
            // The shell reads the documents itself: the text with them.
            let mut script = text.clone();
            for heredoc in heredocs {
                script.push('\n');
                script.push_str(&heredoc.content);
                script.push_str(&heredoc.name);
            }
            let mut args = image.shell();
            args.push(script);
            args
        }
        (command, _) => metadata::command_args(image, command),
    }
}

/// `RUN <<EOF` alone: the document is the script.
fn is_only_heredoc(text: &str, name: &str) -> bool {
    let word = text.trim().trim_start_matches("<<").trim_start_matches('-');
    word.trim_matches(['"', '\'']) == name
}

fn run_command(
    run: &mut StageRun<'_>,
    state: &mut StageState,
    step: &Run,
    history: History,
) -> Result<(), BuildError> {
    let mut network = run.request.network.clone();
    let mut mounts = Vec::new();
    for flag in &step.flags {
        match (flag.name.as_str(), flag.value.as_deref()) {
            ("mount", Some(value)) => {
                mounts.push(parse_mount(value, &state.image.working_dir())?);
            }
            ("network", Some(mode @ ("default" | "none" | "host"))) => {
                network = Some(mode.to_owned());
            }
            ("network", value) => {
                return Err(BuildError::Invalid(format!(
                    "unsupported network mode {:?}: RUN --network takes default, none or host",
                    value.unwrap_or_default()
                )))
            }
            (name, _) => {
                return Err(BuildError::Unsupported(format!(
                    "RUN --{name} is not supported by berth's builder yet"
                )))
            }
        }
    }
    let platform = &state.image.platform;
    if platform.architecture != berth_image::host_architecture() {
        super::emulator::check(
            std::path::Path::new(super::emulator::BINFMT_MISC),
            &platform.architecture,
            &berth_types::container::platform::format_platform(platform),
        )?;
    }
    let args = run_args(&state.image, step);
    // The RUN sees the stage's ARGs (ENV wins) and the proxy args.
    let mut env = state.image.config.env.clone().unwrap_or_default();
    let mut arg_env = Vec::new();
    for (name, value) in state.scope.with_values() {
        if state.image.env_value(name).is_none() {
            arg_env.push(format!("{name}={value}"));
        }
    }
    env.extend(arg_env.iter().cloned());
    for (name, value) in run.build.proxies() {
        if state.image.env_value(&name).is_none() && state.scope.get(&name).is_none() {
            env.push(format!("{name}={value}"));
        }
    }
    let mut key = CacheKey::of(&state.image);
    key.add(b"RUN")
        .add(&serde_json::to_vec(&args).expect("strings serialize"))
        .add(&serde_json::to_vec(&arg_env).expect("strings serialize"))
        .add(&serde_json::to_vec(&state.image.config).expect("a config always serializes"))
        .add(network.as_deref().unwrap_or_default().as_bytes())
        .add(run.request.extra_hosts.join(",").as_bytes())
        .add(format!("{mounts:?}").as_bytes());
    let froms = mount_froms(run, state, &mounts)?;
    for (mount, from) in mounts.iter().zip(&froms) {
        // A bind's content is part of the key (BuildKit's checksum of the
        // mounted files); an image's id says its content.
        let RunMount::Bind { source, .. } = mount else {
            continue;
        };
        match from {
            Some(MountFrom::Image(id)) => {
                key.add(id.to_string().as_bytes());
            }
            Some(MountFrom::Directory { path, ignore, .. }) => {
                add_bind_content(path, ignore, source, &mut key)?;
            }
            None => add_bind_content(&run.request.context, &run.build.ignore, source, &mut key)?,
        }
    }
    let shown = args.join(" ");
    let mut saved = args.clone();
    if !arg_env.is_empty() {
        let mut sorted = arg_env.clone();
        sorted.sort();
        saved = std::iter::once(format!("|{}", sorted.len()))
            .chain(sorted)
            .chain(args.iter().cloned())
            .collect();
    }
    let history = History {
        created_by: Some(saved.join(" ")),
        ..history
    };
    let settings = RunSettings {
        args,
        env,
        network,
        extra_hosts: run.request.extra_hosts.clone(),
        shm_size: run.request.shm_size.unwrap_or(0),
        keep: run.request.keep_containers,
        resources: run.request.run_resources.clone(),
        binds: Vec::new(),
        tmpfs: Default::default(),
    };
    let mut image = state.image.clone();
    cached_or_made(run, state, key, |run| {
        let parent = ensure_image(run.engine, &mut image)?;
        let root = run.engine.config().root.clone();
        let images: Vec<Digest> = froms
            .iter()
            .filter_map(|from| match from {
                Some(MountFrom::Image(id)) => Some(id.clone()),
                _ => None,
            })
            .collect();
        let progress = &mut *run.progress;
        let step = run.step;
        let request = run.request;
        let context_ignore = &run.build.ignore;
        // The images' roots stay mounted until the step is committed.
        with_image_roots(run.engine, &images, |engine, roots| {
            let mut image_roots = roots.iter();
            let sources: Vec<Option<MountSource>> = froms
                .iter()
                .map(|from| match from {
                    None => None,
                    Some(MountFrom::Image(id)) => Some(MountSource {
                        root: image_roots.next().expect("a root per image mount").clone(),
                        key: id.to_string(),
                        ignore: None,
                    }),
                    Some(MountFrom::Directory { path, name, ignore }) => Some(MountSource {
                        root: path.to_path_buf(),
                        key: format!("context:{name}"),
                        ignore: Some((*ignore).clone()),
                    }),
                })
                .collect();
            // Held (cache locks, rw copies) until the step is committed.
            let context = (request.context.as_path(), context_ignore);
            let prepared = prepare(&mounts, &sources, &root, context, &request.secrets)?;
            let settings = RunSettings {
                binds: prepared.binds.clone(),
                tmpfs: prepared.tmpfs.clone(),
                ..settings
            };
            with_step_container(engine, &parent, &image, Some(&settings), |engine, id| {
                let code = run_container(engine, id, progress, step)?;
                if code != 0 {
                    return Err(BuildError::StepFailed {
                        command: shown,
                        code,
                    });
                }
                let config = engine.config();
                let paths = ContainerPaths::new(&config.root, &config.run_root, id);
                remove_mount_points(&paths.rootfs().upper, &mounts);
                commit_layer(engine, id, &parent, &image, (history, saved))
            })
        })
    })
}

/// Where a mount's `from=` reads.
enum MountFrom<'b> {
    /// A named context's directory.
    Directory {
        path: &'b std::path::Path,
        ignore: &'b IgnoreMatcher,
        name: String,
    },
    /// A stage's image, or an image (pulled if missing).
    Image(Digest),
}

/// What each mount's `from=` names (None: no `from=`).
fn mount_froms<'b>(
    run: &mut StageRun<'b>,
    state: &StageState,
    mounts: &[RunMount],
) -> Result<Vec<Option<MountFrom<'b>>>, BuildError> {
    let build = run.build;
    let mut froms = Vec::new();
    for mount in mounts {
        let Some(from) = mount.from() else {
            froms.push(None);
            continue;
        };
        let image = |name: &str, run: &mut StageRun<'_>| {
            super::base_image(
                run.engine,
                name,
                run.request,
                &run.platform,
                &mut *run.progress,
            )
            .map(MountFrom::Image)
        };
        froms.push(Some(match build.resolve_from(from, state.index) {
            Source::Stage(index) => {
                let mut stage = build.stage_result(index)?;
                MountFrom::Image(ensure_image(run.engine, &mut stage)?)
            }
            Source::Context(ContextSource::Directory { path, ignore }) => MountFrom::Directory {
                path,
                ignore,
                name: from.to_owned(),
            },
            Source::Context(ContextSource::Image(name)) => image(name, run)?,
            Source::Image(_) | Source::Scratch => image(from, run)?,
        }));
    }
    Ok(froms)
}

/// The names, modes and content of a bind's source (in a context, its
/// ignore file applied), for the step's key.
fn add_bind_content(
    directory: &std::path::Path,
    ignore: &IgnoreMatcher,
    source: &str,
    key: &mut CacheKey,
) -> Result<(), BuildError> {
    let spec = CopySpec {
        sources: vec![source.to_owned()],
        destination: "/".to_owned(),
        destination_is_dir: true,
        chown: None,
        chmod: None,
        extract_archives: false,
        parents: false,
        inline: Vec::new(),
        exclude: None,
    };
    let root = SourceRoot::Context { directory, ignore };
    let sources = collect_sources(&root, &spec).map_err(|error| match error {
        BuildError::Invalid(message) if message.ends_with(": not found") => {
            BuildError::Invalid(format!("failed to compute cache key: {message}"))
        }
        other => other,
    })?;
    add_to_key(&sources, false, key)
}

fn workdir(
    run: &mut StageRun<'_>,
    state: &mut StageState,
    path: &str,
    history: History,
) -> Result<(), BuildError> {
    let joined = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("{}/{path}", state.image.working_dir())
    };
    let cleaned: std::path::PathBuf = std::iter::once(std::ffi::OsString::from("/"))
        .chain(super::root_path::clean(&joined))
        .collect();
    let directory = cleaned.to_string_lossy().into_owned();
    state.image.config.working_dir = Some(directory.clone());
    let mut key = CacheKey::of(&state.image);
    key.add(b"WORKDIR")
        .add(directory.as_bytes())
        .add(&serde_json::to_vec(&state.image.config).expect("a config always serializes"));
    let mut image = state.image.clone();
    cached_or_made(run, state, key, |run| {
        let parent = ensure_image(run.engine, &mut image)?;
        with_step_container(run.engine, &parent, &image, None, |engine, id| {
            let made = with_root(engine, id, |root| make_directory(root, id, &directory))?;
            let saved = nop_command(&image, &format!("WORKDIR {directory}"));
            if made {
                commit_layer(engine, id, &parent, &image, (history, saved))
            } else {
                commit_metadata(engine, &image, (history, saved))
            }
        })
    })
}

/// The flags COPY and ADD take, as given.
#[derive(Default)]
struct CopyFlags {
    from: Option<String>,
    chown: Option<String>,
    chmod: Option<u32>,
    exclude: Vec<String>,
    parents: bool,
    /// ADD `--checksum=sha256:…` of its one URL source.
    checksum: Option<String>,
    /// ADD `--keep-git-dir`: a git source's `.git` stays.
    keep_git_dir: bool,
}

fn copy_flags(
    flags: &[Flag],
    add: bool,
    expand: &dyn Fn(&str) -> Result<String, BuildError>,
) -> Result<CopyFlags, BuildError> {
    let instruction = if add { "ADD" } else { "COPY" };
    let mut parsed = CopyFlags::default();
    for flag in flags {
        let value = flag.value.clone().unwrap_or_default();
        match flag.name.as_str() {
            "from" if !add => parsed.from = Some(expand(&value)?),
            "chown" => parsed.chown = Some(expand(&value)?).filter(|chown| !chown.is_empty()),
            "chmod" => parsed.chmod = Some(parse_chmod(&expand(&value)?)?),
            "exclude" => parsed.exclude.push(expand(&value)?),
            "parents" => parsed.parents = value.is_empty() || value == "true",
            "keep-git-dir" => parsed.keep_git_dir = value.is_empty() || value == "true",
            // The parser takes it on ADD only, as BuildKit's.
            "checksum" => parsed.checksum = Some(parse_checksum(&expand(&value)?)?),
            // The same files either way; berth's layers are always diffs
            // on their parent, which --link only lets BuildKit rebase.
            "link" if value.is_empty() || value == "true" => {}
            "link" if value == "false" => {}
            name => {
                return Err(BuildError::Unsupported(format!(
                    "{instruction} --{name} is not supported by berth's builder yet"
                )))
            }
        }
    }
    Ok(parsed)
}

fn copy_files(
    run: &mut StageRun<'_>,
    state: &mut StageState,
    copy: &Copy,
    add: bool,
    history: History,
) -> Result<(), BuildError> {
    let escape = run.escape();
    let expand =
        |word: &str| expand_word(word, escape, &|name| state.variable(name)).map_err(expand_error);
    let flags = copy_flags(&copy.flags, add, &expand)?;
    let mut sources = Vec::new();
    // ADD's http(s) sources, downloaded (see `fetch`).
    let mut urls = Vec::new();
    for source in &copy.sources {
        if source.starts_with("<<") {
            sources.push(source.clone());
            continue;
        }
        let expanded = expand(source)?;
        if !add && (expanded.starts_with("http://") || expanded.starts_with("https://")) {
            // BuildKit's words.
            return Err(BuildError::Invalid(
                "source can't be a URL for COPY".to_owned(),
            ));
        }
        if add && is_git_url(&expanded) {
            if copy.sources.len() != 1 {
                return Err(BuildError::Unsupported(format!(
                    "ADD of a git repository ({expanded}) takes no other source in berth's builder"
                )));
            }
            return add_git(run, state, copy, &flags, &expanded, history);
        }
        if is_http_url(&expanded) {
            urls.push(expanded);
            continue;
        }
        sources.push(expanded);
    }
    if flags.keep_git_dir {
        return Err(BuildError::Invalid(
            "ADD --keep-git-dir applies to a git repository source only".to_owned(),
        ));
    }
    if flags.checksum.is_some() {
        if copy.sources.len() != 1 {
            return Err(BuildError::Invalid(
                "checksum can't be specified for multiple sources".to_owned(),
            ));
        }
        if urls.is_empty() {
            return Err(BuildError::Invalid(
                "checksum can't be specified for non-HTTP(S) sources".to_owned(),
            ));
        }
    }
    let destination = expand(&copy.destination)?;
    let destination_is_dir = destination.ends_with('/')
        || destination.ends_with("/.")
        || destination == "."
        || sources.iter().any(|source| has_wildcard(source)) && sources.len() + urls.len() > 1;
    let absolute = absolute_destination(state, &destination);
    let mut inline = Vec::new();
    for heredoc in &copy.heredocs {
        let content = if heredoc.expand {
            expand_heredoc(&heredoc.chomped_content(), escape, &|name| {
                state.variable(name)
            })
            .map_err(expand_error)?
        } else {
            heredoc.chomped_content()
        };
        inline.push((heredoc.name.clone(), content.into_bytes()));
    }
    let spec = CopySpec {
        sources,
        destination: absolute,
        destination_is_dir,
        chown: None,
        chmod: flags.chmod,
        extract_archives: add,
        parents: flags.parents,
        exclude: exclude_matcher(&flags)?,
        inline,
    };

    // Another stage or an image to read from, else the context (or a
    // named one).
    let build = run.build;
    let (from_image, context_root) = match flags.from.as_deref() {
        None => (None, Some((run.request.context.as_path(), &build.ignore))),
        Some(from) => match build.resolve_from(from, state.index) {
            Source::Stage(index) => {
                let mut stage = build.stage_result(index)?;
                (Some(ensure_image(run.engine, &mut stage)?), None)
            }
            Source::Context(ContextSource::Directory { path, ignore }) => {
                (None, Some((path.as_path(), ignore)))
            }
            Source::Context(ContextSource::Image(name)) => (
                Some(super::base_image(
                    run.engine,
                    name,
                    run.request,
                    &run.platform,
                    &mut *run.progress,
                )?),
                None,
            ),
            Source::Image(name) => (
                Some(super::base_image(
                    run.engine,
                    &name,
                    run.request,
                    &run.platform,
                    &mut *run.progress,
                )?),
                None,
            ),
            Source::Scratch => (
                Some(super::base_image(
                    run.engine,
                    from,
                    run.request,
                    &run.platform,
                    &mut *run.progress,
                )?),
                None,
            ),
        },
    };
    let mut key = CacheKey::of(&state.image);
    key.add(if add { b"ADD" } else { b"COPY" })
        .add(spec.destination.as_bytes())
        .add(&[u8::from(spec.destination_is_dir)])
        .add(flags.chown.as_deref().unwrap_or_default().as_bytes())
        .add(&spec.chmod.unwrap_or(u32::MAX).to_le_bytes())
        .add(&serde_json::to_vec(&spec.sources).expect("strings serialize"))
        .add(flags.exclude.join("\n").as_bytes())
        .add(&[u8::from(flags.parents)]);
    for (name, content) in &spec.inline {
        key.add(name.as_bytes()).add(content);
    }
    let context_sources = match (&from_image, context_root) {
        (Some(from), _) => {
            key.add(from.to_string().as_bytes());
            Vec::new()
        }
        (None, _) if spec.sources.is_empty() => Vec::new(),
        (None, Some((directory, ignore))) => {
            let root = SourceRoot::Context { directory, ignore };
            let sources = collect_sources(&root, &spec)?;
            add_to_key(&sources, false, &mut key)?;
            sources
        }
        (None, None) => unreachable!("a COPY reads an image or a context"),
    };
    // A URL's part of the key is its file name and its content's digest
    // (not the URL, as BuildKit's): `--checksum`'s, known before any
    // download, else the content's, downloaded again each build.
    let downloads_root = run.engine.config().root.clone();
    let mut downloads = Vec::new();
    for url in &urls {
        let digest = match &flags.checksum {
            Some(checksum) => checksum.clone(),
            None => {
                let downloaded = download(&downloads_root, url, None)?;
                let digest = downloaded.digest.clone();
                downloads.push(downloaded);
                digest
            }
        };
        key.add(b"url")
            .add(url_file_name(url).as_bytes())
            .add(digest.as_bytes());
    }
    let mut image = state.image.clone();
    let chown = flags.chown.clone();
    let original = history.created_by.clone().unwrap_or_default();
    let checksum = flags.checksum.clone();
    cached_or_made(run, state, key, |run| {
        let parent = ensure_image(run.engine, &mut image)?;
        if let Some(checksum) = &checksum {
            for url in &urls {
                downloads.push(download(&downloads_root, url, Some(checksum))?);
            }
        }
        let mut context_sources = context_sources;
        for downloaded in &downloads {
            context_sources.push(downloaded.source()?);
        }
        with_step_container(run.engine, &parent, &image, None, |engine, id| {
            let put = |engine: &berth_engine::Engine, source_root: Option<&std::path::Path>| {
                with_root(engine, id, |root| {
                    let spec = spec.clone_for(
                        chown
                            .as_deref()
                            .map(|chown| resolve_chown(root, chown))
                            .transpose()?,
                    );
                    match source_root {
                        Some(source_root) => {
                            let root_source = SourceRoot::Image { root: source_root };
                            let sources = collect_sources(&root_source, &spec)?;
                            place(&sources, &spec, true, root, id)
                        }
                        // The context's sources were read for the key.
                        None => place(&context_sources, &spec, false, root, id),
                    }
                })
            };
            match &from_image {
                Some(from) => {
                    let scratch = StepImage::scratch();
                    with_step_container(engine, from, &scratch, None, |engine, from_id| {
                        with_root(engine, from_id, |source_root| {
                            put(engine, Some(source_root))
                        })
                    })?;
                }
                None => put(engine, None)?,
            }
            let saved = nop_command(&image, &original);
            commit_layer(engine, id, &parent, &image, (history, saved))
        })
    })
}

/// A COPY/ADD destination made absolute against the stage's WORKDIR.
fn absolute_destination(state: &StageState, destination: &str) -> String {
    if destination.starts_with('/') {
        destination.to_owned()
    } else {
        format!("{}/{destination}", state.image.working_dir())
    }
}

/// `--exclude` patterns as one matcher; None without any.
fn exclude_matcher(flags: &CopyFlags) -> Result<Option<std::sync::Arc<IgnoreMatcher>>, BuildError> {
    if flags.exclude.is_empty() {
        return Ok(None);
    }
    IgnoreMatcher::parse(&flags.exclude.join("\n"))
        .map(|matcher| Some(std::sync::Arc::new(matcher)))
        .map_err(|error| BuildError::Invalid(format!("invalid --exclude: {error}")))
}

/// `ADD <git repository> DEST` (`git.rs`): the step's key is the commit the
/// remote names (asked each build, as BuildKit does); on a miss the commit
/// is checked out and its tree copied as a directory's contents are, owned
/// by root unless `--chown`.
fn add_git(
    run: &mut StageRun<'_>,
    state: &mut StageState,
    copy: &Copy,
    flags: &CopyFlags,
    source: &str,
    history: History,
) -> Result<(), BuildError> {
    if flags.checksum.is_some() {
        return Err(BuildError::Invalid(
            "checksum can't be specified for non-HTTP(S) sources".to_owned(),
        ));
    }
    let escape = run.escape();
    let destination = expand_word(&copy.destination, escape, &|name| state.variable(name))
        .map_err(expand_error)?;
    let absolute = absolute_destination(state, &destination);
    let git = super::git::GitSource::parse(source)?;
    let commit = super::git::resolve(&git)?;
    let spec = CopySpec {
        sources: vec![".".to_owned()],
        destination: absolute,
        destination_is_dir: true,
        chown: None,
        chmod: flags.chmod,
        extract_archives: false,
        parents: false,
        exclude: exclude_matcher(flags)?,
        inline: Vec::new(),
    };
    let mut key = CacheKey::of(&state.image);
    key.add(b"ADD git")
        .add(git.url.as_bytes())
        .add(commit.as_bytes())
        .add(git.subdir.as_deref().unwrap_or_default().as_bytes())
        .add(&[u8::from(flags.keep_git_dir)])
        .add(spec.destination.as_bytes())
        .add(flags.chown.as_deref().unwrap_or_default().as_bytes())
        .add(&spec.chmod.unwrap_or(u32::MAX).to_le_bytes())
        .add(flags.exclude.join("\n").as_bytes());
    let mut image = state.image.clone();
    let chown = flags.chown.clone();
    let keep_git_dir = flags.keep_git_dir;
    let original = history.created_by.clone().unwrap_or_default();
    let root = run.engine.config().root.clone();
    cached_or_made(run, state, key, |run| {
        let parent = ensure_image(run.engine, &mut image)?;
        let checkout = super::fetch::DownloadDirectory::create(&root)?;
        let tree =
            super::git::checkout(&git, &commit, &checkout.path().join("tree"), keep_git_dir)?;
        let nothing_ignored = IgnoreMatcher::default();
        let source_root = SourceRoot::Context {
            directory: &tree,
            ignore: &nothing_ignored,
        };
        let sources = collect_sources(&source_root, &spec)?;
        with_step_container(run.engine, &parent, &image, None, |engine, id| {
            with_root(engine, id, |root| {
                let spec = spec.clone_for(
                    chown
                        .as_deref()
                        .map(|chown| resolve_chown(root, chown))
                        .transpose()?,
                );
                place(&sources, &spec, false, root, id)
            })?;
            let saved = nop_command(&image, &original);
            commit_layer(engine, id, &parent, &image, (history, saved))
        })
    })
}

/// `FROM NAME` of a `--build-context NAME=DIR`: the directory's files
/// copied onto scratch (as `COPY --from=NAME . /`, owned by root).
pub fn copy_context_root(
    run: &mut StageRun<'_>,
    state: &mut StageState,
    name: &str,
) -> Result<(), BuildError> {
    let copy = Copy {
        sources: vec![".".to_owned()],
        destination: "/".to_owned(),
        flags: vec![Flag {
            name: "from".to_owned(),
            value: Some(name.to_owned()),
        }],
        heredocs: Vec::new(),
    };
    let history = History {
        created_by: Some(format!("COPY --from={name} . /")),
        ..History::default()
    };
    copy_files(run, state, &copy, false, history)
}
