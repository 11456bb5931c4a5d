//! `--log-opt tag=TEMPLATE`: the simple Go templates Docker's log tags are in practice —
//! text and `{{.Field}}` actions over moby's `logger.Info` — rendered as dockerd renders them.
//! Anything else a Go template can do (functions, pipelines, conditions) is refused by name
//! rather than guessed at.

/// What a tag may name about its container.
#[derive(Clone, Debug, Default)]
pub struct ContainerInfo<'a> {
    pub id: &'a str,
    /// Without Docker's leading `/`.
    pub name: &'a str,
    /// `Config.Image`, as the user named it.
    pub image_name: &'a str,
    /// `sha256:…`.
    pub image_id: &'a str,
    /// The process's path and arguments.
    pub command: &'a [String],
    /// The host's name (`{{.Hostname}}`).
    pub hostname: &'a str,
}

/// The fields berth renders: moby's `logger.Info` methods and its plain string fields.
const FIELDS: &[&str] = &[
    "ID",
    "FullID",
    "Name",
    "ImageID",
    "ImageFullID",
    "ImageName",
    "DaemonName",
    "Command",
    "Hostname",
    "ContainerID",
    "ContainerName",
    "ContainerEntrypoint",
    "ContainerImageID",
    "ContainerImageName",
];

/// Fields `logger.Info` has that are not text (lists, maps, times): Go would print its own
/// formatting of them.
const OTHER_INFO_FIELDS: &[&str] = &[
    "Config",
    "ContainerArgs",
    "ContainerCreated",
    "ContainerEnv",
    "ContainerLabels",
    "LogPath",
    "ExtraAttributes",
];

/// dockerd's name for itself in `{{.DaemonName}}`; berth answers to Docker's clients, so
/// it keeps the name they match on.
const DAEMON_NAME: &str = "docker";

#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Text(String),
    Field(&'static str),
}

/// Why a tag template is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TagError {
    /// Go's template package refuses it too; its words.
    Template(String),
    /// Go would take it; berth renders only text and fields (the reason).
    Unsupported(String),
}

/// A parsed tag template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TagTemplate {
    pieces: Vec<Piece>,
}

impl TagTemplate {
    /// Parses `template`. Errors are Docker's where Go's template package has one
    /// (`template: log-tag:1: unclosed action`, an unknown field), else berth's refusal.
    pub fn parse(template: &str) -> Result<Self, TagError> {
        let mut pieces = Vec::new();
        let mut rest = template;
        let mut offset = 0;
        while let Some(open) = rest.find("{{") {
            let mut text = rest[..open].to_owned();
            let mut inner_start = open + 2;
            let after_open = &rest[inner_start..];
            // `{{- ` trims the white space before the action.
            if after_open.starts_with("- ") || after_open.starts_with("-\t") {
                text.truncate(text.trim_end().len());
                inner_start += 2;
            }
            if !text.is_empty() {
                pieces.push(Piece::Text(text));
            }
            let Some(close) = rest[inner_start..].find("}}") else {
                let line = 1 + template[..offset + open].matches('\n').count();
                return Err(TagError::Template(format!(
                    "template: log-tag:{line}: unclosed action"
                )));
            };
            let mut inner = &rest[inner_start..inner_start + close];
            let mut trim_after = false;
            if inner.ends_with(" -") || inner.ends_with("\t-") {
                inner = &inner[..inner.len() - 2];
                trim_after = true;
            }
            let leading = inner.len() - inner.trim_start().len();
            let field_text = inner.trim();
            let field = field_text
                .strip_prefix('.')
                .filter(|name| {
                    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                })
                .ok_or_else(|| unsupported(field_text))?;
            let Some(known) = FIELDS.iter().find(|known| **known == field) else {
                if OTHER_INFO_FIELDS.contains(&field) {
                    return Err(unsupported(field_text));
                }
                // Go's position of the field: its line and its byte column in that line.
                let position = offset + inner_start + leading;
                let before = &template[..position];
                let line = 1 + before.matches('\n').count();
                let column = position - before.rfind('\n').map_or(0, |newline| newline + 1);
                return Err(TagError::Template(format!(
                    "template: log-tag:{line}:{column}: executing \"log-tag\" at <.{field}>: can't evaluate field {field} in type *logger.Info"
                )));
            };
            pieces.push(Piece::Field(known));
            let consumed = inner_start + close + 2;
            offset += consumed;
            rest = &rest[consumed..];
            if trim_after {
                let trimmed = rest.trim_start();
                offset += rest.len() - trimmed.len();
                rest = trimmed;
            }
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_owned()));
        }
        Ok(Self { pieces })
    }

    /// The tag for `info`.
    pub fn render(&self, info: &ContainerInfo<'_>) -> String {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Field(field) => out.push_str(&field_value(field, info)),
            }
        }
        out
    }
}

fn field_value(field: &str, info: &ContainerInfo<'_>) -> String {
    let prefix = |text: &str, length: usize| text.get(..length).unwrap_or(text).to_owned();
    match field {
        "ID" => prefix(info.id, 12),
        "FullID" | "ContainerID" => info.id.to_owned(),
        "Name" => info.name.to_owned(),
        "ContainerName" => format!("/{}", info.name),
        // moby cuts the first 12 bytes of `sha256:…`, so the tag is `sha256:9a439`.
        "ImageID" => prefix(info.image_id, 12),
        "ImageFullID" | "ContainerImageID" => info.image_id.to_owned(),
        "ImageName" | "ContainerImageName" => info.image_name.to_owned(),
        "DaemonName" => DAEMON_NAME.to_owned(),
        "Command" => info.command.join(" "),
        "ContainerEntrypoint" => info.command.first().cloned().unwrap_or_default(),
        "Hostname" => info.hostname.to_owned(),
        _ => String::new(),
    }
}

fn unsupported(action: &str) -> TagError {
    TagError::Unsupported(format!(
        "berth renders {{{{{action}}}}} in no tag: a tag is text and {} only",
        FIELDS
            .iter()
            .map(|field| format!("{{{{.{field}}}}}"))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> ContainerInfo<'static> {
        static COMMAND: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
        ContainerInfo {
            id: "c2a660466db1858f6a4523989434e869b438c6b0e6216b3ee1c7c77ae40363d9",
            name: "lg-tag",
            image_name: "busybox",
            image_id: "sha256:9a43934664deeedb015b682bbb354680b0335a719866d6d1083aaaa81bf5151b",
            command: COMMAND.get_or_init(|| vec!["echo".to_owned(), "hi".to_owned()]),
            hostname: "host",
        }
    }

    fn render(template: &str) -> String {
        TagTemplate::parse(template).unwrap().render(&info())
    }

    #[test]
    fn renders_what_dockerd_20_10_wrote_for_the_same_container() {
        assert_eq!(render("plain"), "plain");
        assert_eq!(render("{{.ID}}"), "c2a660466db1");
        assert_eq!(
            render("{{.Name}}/{{.ImageName}}/{{.FullID}}/{{.ImageID}}/{{.DaemonName}}"),
            "lg-tag/busybox/c2a660466db1858f6a4523989434e869b438c6b0e6216b3ee1c7c77ae40363d9/sha256:9a439/docker"
        );
        assert_eq!(render("{{.Command}}"), "echo hi");
        assert_eq!(
            render("{{.ImageFullID}}"),
            "sha256:9a43934664deeedb015b682bbb354680b0335a719866d6d1083aaaa81bf5151b"
        );
        assert_eq!(render("{{ .ID }}"), "c2a660466db1");
        assert_eq!(render("a}}b"), "a}}b");
        assert_eq!(render("{{.ID}}{{.Name}}"), "c2a660466db1lg-tag");
        assert_eq!(render("x {{- .ID -}} y"), "xc2a660466db1y");
        assert_eq!(render("{{.ContainerName}}"), "/lg-tag");
    }

    #[test]
    fn errors_are_gos_where_go_has_them() {
        assert_eq!(
            TagTemplate::parse("{{.Nope}}").unwrap_err(),
            TagError::Template("template: log-tag:1:2: executing \"log-tag\" at <.Nope>: can't evaluate field Nope in type *logger.Info".to_owned())
        );
        assert_eq!(
            TagTemplate::parse("x\n {{ .Nope }}").unwrap_err(),
            TagError::Template("template: log-tag:2:4: executing \"log-tag\" at <.Nope>: can't evaluate field Nope in type *logger.Info".to_owned())
        );
        assert_eq!(
            TagTemplate::parse("{{").unwrap_err(),
            TagError::Template("template: log-tag:1: unclosed action".to_owned())
        );
        for (other, action) in [
            ("{{upper .Name}}", "{{upper .Name}}"),
            ("{{.ContainerLabels}}", "{{.ContainerLabels}}"),
            ("{{if .ID}}x{{end}}", "{{if .ID}}"),
        ] {
            let TagError::Unsupported(reason) = TagTemplate::parse(other).unwrap_err() else {
                panic!("{other} is Go's to refuse");
            };
            assert!(
                reason.starts_with(&format!("berth renders {action} in no tag"))
                    && reason.contains("{{.ID}}"),
                "{other}: {reason}"
            );
        }
    }
}
