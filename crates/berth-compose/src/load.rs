//! From options to a normalised project: which files (`-f`, `COMPOSE_FILE`, or a search for
//! `compose.yaml` and friends from the working directory up), the variables (`.env` or
//! `--env-file`, under the process environment), each file parsed and interpolated, its
//! `include`s and `extends` resolved, the files merged, profiles applied, the project named.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use crate::error::ComposeError;
use crate::interpolate::interpolate_tree;
use crate::merge::merge;
use crate::normalize::{self, ProjectContext};
use crate::yaml::{Location, Node, Value};

/// What the command line and the environment say about the project.
#[derive(Clone, Debug, Default)]
pub struct ProjectOptions {
    /// `-f` (in order); empty: `COMPOSE_FILE` or the default names.
    pub files: Vec<PathBuf>,
    /// `-p`.
    pub name: Option<String>,
    /// `--project-directory`.
    pub project_directory: Option<PathBuf>,
    /// `--env-file` (replaces `.env`).
    pub env_files: Vec<PathBuf>,
    /// `--profile`; empty: `COMPOSE_PROFILES`.
    pub profiles: Vec<String>,
    /// The process environment.
    pub environment: BTreeMap<String, String>,
    /// The current directory.
    pub working_dir: PathBuf,
}

/// A loaded project.
#[derive(Clone, Debug)]
pub struct Project {
    pub name: String,
    pub working_dir: PathBuf,
    pub config_files: Vec<PathBuf>,
    /// The normalised model (what `config` prints), profiles applied.
    pub model: Json,
    /// Every profile any service names, sorted.
    pub all_profiles: Vec<String>,
    /// Warnings in docker compose's words, for stderr.
    pub warnings: Vec<String>,
    /// The variables interpolation saw (the environment over `.env`).
    pub variables: BTreeMap<String, String>,
}

impl Project {
    pub fn services(&self) -> BTreeMap<String, Json> {
        self.model
            .get("services")
            .and_then(Json::as_object)
            .map(|services| {
                services
                    .iter()
                    .map(|(name, service)| (name.clone(), service.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }
}

const DEFAULT_FILES: &[&str] = &[
    "compose.yaml",
    "compose.yml",
    "docker-compose.yml",
    "docker-compose.yaml",
];
const OVERRIDE_FILES: &[&str] = &[
    "compose.override.yaml",
    "compose.override.yml",
    "docker-compose.override.yml",
    "docker-compose.override.yaml",
];

fn absolute(base: &Path, path: &Path) -> PathBuf {
    normalize::values::clean(&base.join(path))
}

/// The default files: the first directory from `start` up holding one of them, with its
/// override file.
fn find_default_files(start: &Path) -> Option<Vec<PathBuf>> {
    let mut directory = Some(start);
    while let Some(current) = directory {
        if let Some(found) = DEFAULT_FILES
            .iter()
            .map(|name| current.join(name))
            .find(|path| path.is_file())
        {
            let mut files = vec![found];
            if let Some(over) = OVERRIDE_FILES
                .iter()
                .map(|name| current.join(name))
                .find(|path| path.is_file())
            {
                files.push(over);
            }
            return Some(files);
        }
        directory = current.parent();
    }
    None
}

fn read_env_files(
    files: &[PathBuf],
    environment: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, ComposeError> {
    let mut variables: BTreeMap<String, String> = BTreeMap::new();
    for file in files {
        let outer = |name: &str| {
            environment
                .get(name)
                .or_else(|| variables.get(name))
                .cloned()
        };
        let read = crate::dotenv::read(file, &outer)?;
        variables.extend(read);
    }
    Ok(variables)
}

/// Variables: the process environment over the env files.
fn variables_for(
    options: &ProjectOptions,
    directory: &Path,
) -> Result<BTreeMap<String, String>, ComposeError> {
    let env_files: Vec<PathBuf> = if options.env_files.is_empty() {
        let default = directory.join(".env");
        if default.is_file() {
            vec![default]
        } else {
            Vec::new()
        }
    } else {
        let mut files = Vec::new();
        for file in &options.env_files {
            let file = absolute(&options.working_dir, file);
            if !file.is_file() {
                return Err(ComposeError::Other(format!(
                    "couldn't find env file: {}",
                    file.display()
                )));
            }
            files.push(file);
        }
        files
    };
    let mut variables = read_env_files(&env_files, &options.environment)?;
    for (key, value) in &options.environment {
        variables.insert(key.clone(), value.clone());
    }
    Ok(variables)
}

/// compose's project name normalisation: lower case, only `a-z0-9_-`, starting with a letter
/// or digit.
pub fn normalize_project_name(name: &str) -> String {
    let lower: String = name
        .to_lowercase()
        .chars()
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_' || *c == '-')
        .collect();
    lower
        .trim_start_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_owned()
}

fn is_valid_project_name(name: &str) -> bool {
    !name.is_empty() && normalize_project_name(name) == name
}

pub fn load(options: &ProjectOptions) -> Result<Project, ComposeError> {
    let first_directory = options
        .project_directory
        .as_ref()
        .map(|directory| absolute(&options.working_dir, directory))
        .unwrap_or_else(|| options.working_dir.clone());
    let mut variables = variables_for(options, &first_directory)?;
    let files: Vec<PathBuf> = if !options.files.is_empty() {
        options.files.clone()
    } else if let Some(list) = variables
        .get("COMPOSE_FILE")
        .filter(|list| !list.is_empty())
    {
        let separator = variables
            .get("COMPOSE_PATH_SEPARATOR")
            .and_then(|separator| separator.chars().next())
            .unwrap_or(':');
        list.split(separator).map(PathBuf::from).collect()
    } else {
        find_default_files(&first_directory).ok_or(ComposeError::NoFile)?
    };
    let files: Vec<PathBuf> = files
        .iter()
        .map(|file| {
            if file.as_os_str() == "-" {
                file.clone()
            } else {
                absolute(&first_directory, file)
            }
        })
        .collect();
    let project_dir = match &options.project_directory {
        Some(directory) => absolute(&options.working_dir, directory),
        None => files
            .first()
            .filter(|file| file.as_os_str() != "-")
            .and_then(|file| file.parent())
            .map_or_else(|| first_directory.clone(), Path::to_path_buf),
    };
    if project_dir != first_directory && options.env_files.is_empty() {
        variables = variables_for(options, &project_dir)?;
    }
    let mut warnings = Vec::new();
    let mut service_dirs = BTreeMap::new();
    let mut stack = Vec::new();
    let mut root = load_files(
        &files,
        &project_dir,
        &variables,
        &mut warnings,
        &mut service_dirs,
        &mut stack,
    )?;
    let home = options.environment.get("HOME").cloned();
    let name = if let Some(name) = &options.name {
        if !is_valid_project_name(name) {
            return Err(ComposeError::ProjectName { name: name.clone() });
        }
        name.clone()
    } else if let Some(name) = variables
        .get("COMPOSE_PROJECT_NAME")
        .filter(|name| !name.is_empty())
    {
        if !is_valid_project_name(name) {
            return Err(ComposeError::ProjectName { name: name.clone() });
        }
        name.clone()
    } else if let Some(name) = root.get("name").and_then(Node::scalar_text) {
        normalize_project_name(&name)
    } else {
        let base = project_dir
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        normalize_project_name(&base)
    };
    if name.is_empty() {
        return Err(ComposeError::ProjectName { name });
    }
    let all_profiles = profiles_of(&root);
    let active: Vec<String> = if !options.profiles.is_empty() {
        options.profiles.clone()
    } else {
        variables
            .get("COMPOSE_PROFILES")
            .map(|list| {
                list.split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    apply_profiles(&mut root, &active);
    let lookup = |key: &str| variables.get(key).cloned();
    let model = normalize::project(
        &root,
        &ProjectContext {
            name: &name,
            home: home.as_deref(),
            variables: &lookup,
            service_dirs: &service_dirs,
            project_dir: &project_dir,
        },
    )?;
    warnings.extend(model_warnings(&model));
    Ok(Project {
        name,
        working_dir: project_dir,
        config_files: files,
        model,
        all_profiles,
        warnings,
        variables,
    })
}

/// One compose file's text loaded as a project named `name` in `directory`, with `variables`
/// for interpolation and no file system access (no `include`, no `extends.file`, no
/// `env_file`): what the fuzz target and the mutation test drive.
pub fn load_text(
    text: &str,
    name: &str,
    directory: &Path,
    variables: &BTreeMap<String, String>,
) -> Result<Project, ComposeError> {
    let file = directory.join("compose.yaml");
    let mut node = crate::yaml::parse(text, &file)?;
    if matches!(node.value, Value::Null) {
        node.value = Value::Map(Vec::new());
    }
    if !matches!(node.value, Value::Map(_)) {
        return Err(ComposeError::schema(&node.at, "(root)", "must be a object"));
    }
    let lookup = |key: &str| variables.get(key).cloned();
    interpolate_tree(&mut node, &mut Vec::new(), &lookup, &mut |_| {})?;
    node.remove("version");
    if let Some(include) = node.get("include") {
        return Err(ComposeError::unsupported(
            &include.at,
            "include",
            "include without files",
        ));
    }
    if let Some(services) = node.get("services").and_then(Node::as_map) {
        for (service_name, service) in services {
            if let Some(env_file) = service.get("env_file") {
                return Err(ComposeError::unsupported(
                    &env_file.at,
                    &format!("services.{service_name}.env_file"),
                    "env_file without files",
                ));
            }
            if let Some(extends) = service.get("extends") {
                if extends.get("file").is_some() {
                    return Err(ComposeError::unsupported(
                        &extends.at,
                        &format!("services.{service_name}.extends.file"),
                        "extends.file without files",
                    ));
                }
            }
        }
    }
    let mut warnings = Vec::new();
    resolve_extends(&mut node, &file, variables, &mut warnings)?;
    let all_profiles = profiles_of(&node);
    apply_profiles(&mut node, &[]);
    let model = normalize::project(
        &node,
        &ProjectContext {
            name,
            home: None,
            variables: &lookup,
            service_dirs: &BTreeMap::new(),
            project_dir: directory,
        },
    )?;
    Ok(Project {
        name: name.to_owned(),
        working_dir: directory.to_path_buf(),
        config_files: vec![file],
        model,
        all_profiles,
        warnings,
        variables: variables.clone(),
    })
}

/// What compose warns about in a valid model: a published port's `mode: host`.
fn model_warnings(model: &Json) -> Vec<String> {
    let mut warnings = Vec::new();
    for (name, service) in model
        .get("services")
        .and_then(Json::as_object)
        .into_iter()
        .flatten()
    {
        for port in service
            .get("ports")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
        {
            if port.get("mode").and_then(Json::as_str) == Some("host") {
                warnings.push(format!(
                    "service {name:?}: ports[{}/{}].mode: ports[].mode: host is only honored by the Swarm routing mesh",
                    port.get("target").and_then(Json::as_i64).unwrap_or(0),
                    port.get("protocol").and_then(Json::as_str).unwrap_or("tcp"),
                ));
            }
        }
    }
    warnings
}

fn profiles_of(root: &Node) -> Vec<String> {
    let mut all = BTreeSet::new();
    if let Some(services) = root.get("services").and_then(Node::as_map) {
        for (_, service) in services {
            if let Some(Value::Seq(items)) = service.get("profiles").map(|p| &p.value) {
                all.extend(items.iter().filter_map(Node::scalar_text));
            }
        }
    }
    all.into_iter().collect()
}

/// Drops the services whose profiles are all inactive (`*` activates every profile).
fn apply_profiles(root: &mut Node, active: &[String]) {
    let all = active.iter().any(|profile| profile == "*");
    if let Some(services) = root.get_mut("services").and_then(Node::as_map_mut) {
        services.retain(
            |(_, service)| match service.get("profiles").map(|p| &p.value) {
                Some(Value::Seq(items)) if !items.is_empty() => {
                    all || items
                        .iter()
                        .filter_map(Node::scalar_text)
                        .any(|profile| active.contains(&profile))
                }
                _ => true,
            },
        );
    }
}

fn read_file(path: &Path) -> Result<String, ComposeError> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(|source| {
            ComposeError::Read {
                path: path.to_path_buf(),
                source,
            }
        })?;
        return Ok(text);
    }
    fs_err::read_to_string(path).map_err(|source| ComposeError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// One file parsed and interpolated.
fn parse_file(
    path: &Path,
    variables: &BTreeMap<String, String>,
    warnings: &mut Vec<String>,
) -> Result<Node, ComposeError> {
    let text = read_file(path)?;
    let mut node = crate::yaml::parse(&text, path)?;
    if matches!(node.value, Value::Null) {
        node.value = Value::Map(Vec::new());
    }
    if !matches!(node.value, Value::Map(_)) {
        return Err(ComposeError::schema(&node.at, "(root)", "must be a object"));
    }
    let lookup = |key: &str| variables.get(key).cloned();
    let mut unset = |name: &str| {
        let warning = format!("The \"{name}\" variable is not set. Defaulting to a blank string.");
        if !warnings.contains(&warning) {
            warnings.push(warning);
        }
    };
    interpolate_tree(&mut node, &mut Vec::new(), &lookup, &mut unset)?;
    if node.remove("version").is_some() {
        warnings.push(format!(
            "{}: the attribute `version` is obsolete, it will be ignored, please remove it to avoid potential confusion",
            path.display()
        ));
    }
    Ok(node)
}

/// Loads `files` (merged in order) with their includes and extends resolved.
fn load_files(
    files: &[PathBuf],
    project_dir: &Path,
    variables: &BTreeMap<String, String>,
    warnings: &mut Vec<String>,
    service_dirs: &mut BTreeMap<String, PathBuf>,
    stack: &mut Vec<PathBuf>,
) -> Result<Node, ComposeError> {
    let mut merged: Option<Node> = None;
    for file in files {
        if stack.contains(file) {
            let mut cycle: Vec<String> = stack.iter().map(|p| p.display().to_string()).collect();
            cycle.push(file.display().to_string());
            return Err(ComposeError::IncludeCycle(cycle.join(" -> ")));
        }
        stack.push(file.clone());
        let mut node = parse_file(file, variables, warnings)?;
        let file_dir = file
            .parent()
            .map_or_else(|| project_dir.to_path_buf(), Path::to_path_buf);
        if let Some(include) = node.remove("include") {
            includes(
                &include,
                &file_dir,
                &mut node,
                variables,
                warnings,
                service_dirs,
                stack,
            )?;
        }
        resolve_extends(&mut node, file, variables, warnings)?;
        stack.pop();
        match &mut merged {
            None => merged = Some(node),
            Some(base) => merge(base, node, ""),
        }
    }
    Ok(merged.unwrap_or_else(|| Node::new(Value::Map(Vec::new()), Location::default())))
}

#[allow(clippy::too_many_arguments)]
fn includes(
    include: &Node,
    file_dir: &Path,
    node: &mut Node,
    variables: &BTreeMap<String, String>,
    warnings: &mut Vec<String>,
    service_dirs: &mut BTreeMap<String, PathBuf>,
    stack: &mut Vec<PathBuf>,
) -> Result<(), ComposeError> {
    let items = normalize::values::seq(include, "include")?;
    for (index, item) in items.iter().enumerate() {
        let path = format!("include.{index}");
        let (paths, directory, env_files) = match &item.value {
            Value::Map(_) => {
                normalize::values::check_keys(
                    item,
                    &path,
                    &["path", "project_directory", "env_file"],
                    &[],
                )?;
                let paths = item
                    .get("path")
                    .ok_or_else(|| ComposeError::schema(&item.at, &path, "path is required"))?;
                let paths = normalize::values::string_or_list(paths, &format!("{path}.path"))?;
                let directory = item
                    .get("project_directory")
                    .map(|d| normalize::values::string(d, &path))
                    .transpose()?;
                let env_files = item
                    .get("env_file")
                    .map(|e| normalize::values::string_or_list(e, &path))
                    .transpose()?
                    .unwrap_or_default();
                (paths, directory, env_files)
            }
            _ => (
                vec![normalize::values::string(item, &path)?],
                None,
                Vec::new(),
            ),
        };
        let files: Vec<PathBuf> = paths
            .iter()
            .map(|p| absolute(file_dir, Path::new(p)))
            .collect();
        let included_dir = match directory {
            Some(directory) => absolute(file_dir, Path::new(&directory)),
            None => files
                .first()
                .and_then(|f| f.parent())
                .map_or_else(|| file_dir.to_path_buf(), Path::to_path_buf),
        };
        // The included project's own `.env` (or its env_file) under the including variables.
        let env_paths: Vec<PathBuf> = if env_files.is_empty() {
            let default = included_dir.join(".env");
            if default.is_file() {
                vec![default]
            } else {
                Vec::new()
            }
        } else {
            env_files
                .iter()
                .map(|e| absolute(file_dir, Path::new(e)))
                .collect()
        };
        let mut included_variables = read_env_files(&env_paths, variables)?;
        for (key, value) in variables {
            included_variables.insert(key.clone(), value.clone());
        }
        let mut included_dirs = BTreeMap::new();
        let included = load_files(
            &files,
            &included_dir,
            &included_variables,
            warnings,
            &mut included_dirs,
            stack,
        )?;
        for section in ["services", "networks", "volumes"] {
            let Some(entries) = included.get(section).and_then(Node::as_map) else {
                continue;
            };
            if node.get(section).is_none() {
                node.set(
                    section,
                    Node::new(Value::Map(Vec::new()), included.at.clone()),
                );
            }
            let Some(target) = node.get_mut(section) else {
                continue;
            };
            if matches!(target.value, Value::Null) {
                target.value = Value::Map(Vec::new());
            }
            for (key, value) in entries {
                if target.get(key).is_some() {
                    return Err(ComposeError::Other(format!(
                        "imported compose file {} defines conflicting {section}.{key}",
                        files
                            .first()
                            .map(|f| f.display().to_string())
                            .unwrap_or_default()
                    )));
                }
                target.set(key, value.clone());
                if section == "services" {
                    let directory = included_dirs
                        .get(key)
                        .cloned()
                        .unwrap_or_else(|| included_dir.clone());
                    service_dirs.insert(key.clone(), directory);
                }
            }
        }
    }
    Ok(())
}

/// Replaces every `extends` of `node`'s services by the service it names, merged under it.
fn resolve_extends(
    node: &mut Node,
    file: &Path,
    variables: &BTreeMap<String, String>,
    warnings: &mut Vec<String>,
) -> Result<(), ComposeError> {
    let Some(services) = node.get("services").and_then(Node::as_map).cloned() else {
        return Ok(());
    };
    let mut resolved = Vec::new();
    for (name, service) in &services {
        let mut seen = vec![(file.to_path_buf(), name.clone())];
        let service = extend_service(service, file, &services, variables, warnings, &mut seen)?;
        resolved.push((name.clone(), service));
    }
    if let Some(target) = node.get_mut("services") {
        target.value = Value::Map(resolved);
    }
    Ok(())
}

fn extend_service(
    service: &Node,
    file: &Path,
    siblings: &[(String, Node)],
    variables: &BTreeMap<String, String>,
    warnings: &mut Vec<String>,
    seen: &mut Vec<(PathBuf, String)>,
) -> Result<Node, ComposeError> {
    let mut service = service.clone();
    let Some(extends) = service.remove("extends") else {
        return Ok(service);
    };
    let (base_name, base_file) = match &extends.value {
        Value::Map(_) => {
            normalize::values::check_keys(&extends, "extends", &["service", "file"], &[])?;
            let name = extends.get("service").ok_or_else(|| {
                ComposeError::schema(&extends.at, "extends", "service is required")
            })?;
            let name = normalize::values::string(name, "extends.service")?;
            let base_file = extends
                .get("file")
                .map(|f| normalize::values::string(f, "extends.file"))
                .transpose()?;
            (name, base_file)
        }
        _ => (normalize::values::string(&extends, "extends")?, None),
    };
    let file_dir = file.parent().unwrap_or(Path::new("/")).to_path_buf();
    let (base, base_path, base_siblings) = match base_file {
        Some(other) => {
            let other = absolute(&file_dir, Path::new(&other));
            let tree = parse_file(&other, variables, warnings)?;
            let siblings = tree
                .get("services")
                .and_then(Node::as_map)
                .cloned()
                .unwrap_or_default();
            let base = siblings
                .iter()
                .find(|(name, _)| *name == base_name)
                .map(|(_, node)| node.clone());
            (base, other, siblings)
        }
        None => (
            siblings
                .iter()
                .find(|(name, _)| *name == base_name)
                .map(|(_, node)| node.clone()),
            file.to_path_buf(),
            siblings.to_vec(),
        ),
    };
    let Some(base) = base else {
        return Err(ComposeError::Other(format!(
            "cannot extend service {base_name:?} in {}: service not found",
            base_path.display()
        )));
    };
    if seen.contains(&(base_path.clone(), base_name.clone())) {
        let mut chain: Vec<String> = seen.iter().map(|(_, name)| name.clone()).collect();
        chain.push(base_name);
        return Err(ComposeError::Cycle(chain.join(" -> ")));
    }
    seen.push((base_path.clone(), base_name.clone()));
    let mut base = extend_service(&base, &base_path, &base_siblings, variables, warnings, seen)?;
    let base_dir = base_path.parent().unwrap_or(Path::new("/")).to_path_buf();
    if base_dir != file_dir {
        rebase_paths(&mut base, &base_dir);
    }
    merge(&mut base, service, "");
    Ok(base)
}

/// A service taken from a file in another directory keeps its relative paths pointing where
/// they pointed: they are made absolute against that file's directory.
fn rebase_paths(service: &mut Node, directory: &Path) {
    let rebase = |node: &mut Node| {
        if let Value::String(text) = &mut node.value {
            if !Path::new(text.as_str()).is_absolute() && !text.starts_with('~') {
                *text = absolute(directory, Path::new(text.as_str()))
                    .display()
                    .to_string();
            }
        }
    };
    match service.get_mut("build") {
        Some(build) if matches!(build.value, Value::String(_)) => rebase(build),
        Some(build) => {
            if let Some(context) = build.get_mut("context") {
                rebase(context);
            } else {
                build.set(
                    "context",
                    Node::new(
                        Value::String(directory.display().to_string()),
                        Location::default(),
                    ),
                );
            }
        }
        None => {}
    }
    if let Some(env_file) = service.get_mut("env_file") {
        match &mut env_file.value {
            Value::Seq(items) => items.iter_mut().for_each(|item| {
                if let Some(path) = item.get_mut("path") {
                    rebase(path);
                } else {
                    rebase(item);
                }
            }),
            _ => rebase(env_file),
        }
    }
    if let Some(Value::Seq(volumes)) = service.get_mut("volumes").map(|v| &mut v.value) {
        for volume in volumes {
            if let Value::String(text) = &mut volume.value {
                if text.starts_with('.') {
                    if let Some((source, rest)) = text.split_once(':') {
                        let source = absolute(directory, Path::new(source));
                        *text = format!("{}:{rest}", source.display());
                    }
                }
            } else if volume.get("type").and_then(Node::as_str) == Some("bind") {
                if let Some(source) = volume.get_mut("source") {
                    rebase(source);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_names_normalise_as_compose_does() {
        assert_eq!(normalize_project_name("My_Proj"), "my_proj");
        assert_eq!(normalize_project_name("-a.b c"), "abc");
        assert_eq!(normalize_project_name("__x"), "x");
        assert!(is_valid_project_name("my-proj_1"));
        assert!(!is_valid_project_name("My"));
    }
}
