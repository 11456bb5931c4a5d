//! Docker's rules for combining the image config with what the user asked
//! for (moby `daemon/commit.go` `merge` and `create` defaults).

use std::collections::BTreeMap;

use berth_types::image::ContainerConfig as ImageDefaults;

use super::create::CreateError;

/// What the user set; `None` means "not given, use the image's".
#[derive(Clone, Debug, Default)]
pub struct UserProcess {
    /// `Some(vec![])` is `--entrypoint ""`: no entrypoint at all.
    pub entrypoint: Option<Vec<String>>,
    pub cmd: Option<Vec<String>>,
    pub env: Vec<String>,
    pub working_dir: Option<String>,
    pub user: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub stop_signal: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergedProcess {
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    pub env: Vec<String>,
    pub working_dir: String,
    pub user: String,
    pub labels: BTreeMap<String, String>,
    pub stop_signal: String,
}

impl MergedProcess {
    /// Entrypoint followed by Cmd: what runs.
    pub fn args(&self) -> Vec<String> {
        self.entrypoint.iter().chain(&self.cmd).cloned().collect()
    }
}

pub fn merge_process(
    image: Option<&ImageDefaults>,
    user: &UserProcess,
) -> Result<MergedProcess, CreateError> {
    let default = ImageDefaults::default();
    let image = image.unwrap_or(&default);
    // `--entrypoint ""` arrives as [""]: like any user entrypoint it drops
    // the image's Cmd, then it is removed (moby's create: a lone "" means
    // none). An explicit empty list keeps the image's Cmd.
    let empty_string_entrypoint = user.entrypoint.as_deref() == Some(&[String::new()][..]);
    let user_entrypoint_set = user
        .entrypoint
        .as_ref()
        .is_some_and(|entrypoint| !entrypoint.is_empty());
    let cmd = match &user.cmd {
        Some(cmd) if !cmd.is_empty() => cmd.clone(),
        // A user entrypoint drops the image's Cmd (it was written for the
        // image's entrypoint).
        _ if user_entrypoint_set => Vec::new(),
        _ => image.cmd.clone().unwrap_or_default(),
    };
    let entrypoint = match &user.entrypoint {
        Some(_) if empty_string_entrypoint => Vec::new(),
        Some(entrypoint) => entrypoint.clone(),
        None => image.entrypoint.clone().unwrap_or_default(),
    };
    if entrypoint.is_empty() && cmd.is_empty() {
        return Err(CreateError::NoCommand);
    }
    // The user's variables first, then the image's that they do not set
    // (moby `daemon/commit.go` merge order).
    let key_of = |entry: &str| entry.split('=').next().unwrap_or(entry).to_owned();
    let mut env = user.env.clone();
    for entry in image.env.clone().unwrap_or_default() {
        if !env
            .iter()
            .any(|existing| key_of(existing) == key_of(&entry))
        {
            env.push(entry);
        }
    }
    if !env.iter().any(|entry| entry.starts_with("PATH=")) {
        env.insert(0, berth_runtime::spec::DEFAULT_PATH.to_owned());
    }
    let mut labels = image.labels.clone().unwrap_or_default();
    labels.extend(user.labels.clone());
    Ok(MergedProcess {
        entrypoint,
        cmd,
        env,
        working_dir: user
            .working_dir
            .clone()
            .filter(|directory| !directory.is_empty())
            .or_else(|| image.working_dir.clone())
            .unwrap_or_default(),
        user: user
            .user
            .clone()
            .or_else(|| image.user.clone())
            .unwrap_or_default(),
        labels,
        stop_signal: user
            .stop_signal
            .clone()
            .or_else(|| image.stop_signal.clone())
            .unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| item.to_string()).collect()
    }

    fn image(entrypoint: Option<&[&str]>, cmd: Option<&[&str]>) -> ImageDefaults {
        ImageDefaults {
            entrypoint: entrypoint.map(strings),
            cmd: cmd.map(strings),
            env: Some(strings(&["PATH=/bin", "A=image"])),
            ..ImageDefaults::default()
        }
    }

    fn args(
        image: &ImageDefaults,
        entrypoint: Option<&[&str]>,
        cmd: Option<&[&str]>,
    ) -> Result<Vec<String>, CreateError> {
        let user = UserProcess {
            entrypoint: entrypoint.map(strings),
            cmd: cmd.map(strings),
            ..UserProcess::default()
        };
        merge_process(Some(image), &user).map(|merged| merged.args())
    }

    #[test]
    fn entrypoint_and_cmd_combinations_follow_docker() {
        let cmd_only = image(None, Some(&["sh"]));
        assert_eq!(args(&cmd_only, None, None).unwrap(), ["sh"]);
        assert_eq!(
            args(&cmd_only, None, Some(&["echo", "hi"])).unwrap(),
            ["echo", "hi"]
        );
        assert_eq!(args(&cmd_only, Some(&["ls"]), None).unwrap(), ["ls"]);

        let both = image(Some(&["/entry"]), Some(&["default"]));
        assert_eq!(args(&both, None, None).unwrap(), ["/entry", "default"]);
        assert_eq!(args(&both, None, Some(&["x"])).unwrap(), ["/entry", "x"]);
        // A new entrypoint drops the image's Cmd.
        assert_eq!(args(&both, Some(&["/other"]), None).unwrap(), ["/other"]);
        assert_eq!(
            args(&both, Some(&["/other"]), Some(&["y"])).unwrap(),
            ["/other", "y"]
        );
        // --entrypoint "" clears the entrypoint but keeps the image's Cmd.
        assert_eq!(args(&both, Some(&[]), None).unwrap(), ["default"]);
        assert_eq!(
            args(&both, Some(&[""]), None).unwrap_err().to_string(),
            "No command specified"
        );
        assert_eq!(
            args(&both, Some(&[""]), Some(&["echo", "hi"])).unwrap(),
            ["echo", "hi"]
        );

        let nothing = image(None, None);
        assert_eq!(
            args(&nothing, None, None).unwrap_err().to_string(),
            "No command specified"
        );
    }

    #[test]
    fn env_and_defaults_merge() {
        let user = UserProcess {
            env: strings(&["A=user", "B=2"]),
            working_dir: Some("/srv".into()),
            ..UserProcess::default()
        };
        let merged = merge_process(Some(&image(None, Some(&["sh"]))), &user).unwrap();
        assert_eq!(merged.env, strings(&["A=user", "B=2", "PATH=/bin"]));
        assert_eq!(merged.working_dir, "/srv");
        let bare = merge_process(
            None,
            &UserProcess {
                cmd: Some(strings(&["x"])),
                ..UserProcess::default()
            },
        )
        .unwrap();
        assert_eq!(bare.env[0], berth_runtime::spec::DEFAULT_PATH);
    }
}
