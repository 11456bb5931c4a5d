//! Printing records the way the docker CLI does: default tables, `table …`
//! templates with headers, plain templates, `json`, and inspect arrays.

use serde::Serialize;
use serde_json::Value;

use crate::format::Template;

/// Column headers Docker prints for row fields.
const HEADERS: &[(&str, &str)] = &[
    ("Repository", "REPOSITORY"),
    ("Tag", "TAG"),
    ("Digest", "DIGEST"),
    ("ID", "IMAGE ID"),
    ("CreatedSince", "CREATED"),
    ("CreatedAt", "CREATED AT"),
    ("CreatedBy", "CREATED BY"),
    ("Size", "SIZE"),
    ("Comment", "COMMENT"),
    ("Containers", "CONTAINERS"),
    ("SharedSize", "SHARED SIZE"),
    ("UniqueSize", "UNIQUE SIZE"),
    ("VirtualSize", "VIRTUAL SIZE"),
];

/// Renders `rows` with `format` (None or "table": the command's default
/// table; "json": one JSON object per line). `overrides` replace headers
/// (e.g. `ID` is "IMAGE" in `history`).
pub fn render_rows(
    format: Option<&str>,
    default_table: &str,
    rows: &[Value],
    overrides: &[(&str, &str)],
) -> anyhow::Result<String> {
    let headers: Vec<(&str, &str)> = HEADERS
        .iter()
        .filter(|(field, _)| !overrides.iter().any(|(over, _)| over == field))
        .chain(overrides)
        .copied()
        .collect();
    Ok(crate::format::render_rows(
        format,
        default_table,
        &headers,
        rows,
    )?)
}

/// One object through `--format`: "json" or a template. `inspect`, `info` and `version`
/// fail on a key the object lacks (docker/cli runs inspect templates with
/// `missingkey=error`, and info's and version's are typed); `events` keeps Go's default
/// (`<no value>`: an event's attributes are a map).
pub fn render_one(format: &str, value: &Value) -> anyhow::Result<String> {
    render_one_with(format, value, true)
}

/// [`render_one`] for an event (the API's message, whose JSON names differ from the Go
/// field names templates use: `timeNano` is `.TimeNano`): a missing attribute prints
/// `<no value>`, `{{json .}}` prints the API's message.
pub fn render_event(format: &str, value: &Value) -> anyhow::Result<String> {
    render_one_with_methods(format, value, false, EVENT_FIELDS)
}

/// The fields of Docker's `events.Message` whose JSON name is not the Go one. As methods
/// they are found before keys, so they read the Go name first (`.Actor.ID`) and fall back
/// to the JSON name, and an omitted field is Go's zero value as on Docker.
const EVENT_FIELDS: &[(&str, crate::format::template::Method)] = &[
    ("Status", |value, _| {
        Ok(go_field(value, "Status", "status", ""))
    }),
    ("ID", |value, _| Ok(go_field(value, "ID", "id", ""))),
    ("From", |value, _| Ok(go_field(value, "From", "from", ""))),
    ("Scope", |value, _| {
        Ok(go_field(value, "Scope", "scope", ""))
    }),
    ("Time", |value, _| Ok(go_field(value, "Time", "time", 0))),
    ("TimeNano", |value, _| {
        Ok(go_field(value, "TimeNano", "timeNano", 0))
    }),
];

fn go_field(value: &Value, go_name: &str, json_name: &str, zero: impl Into<Value>) -> Value {
    value
        .get(go_name)
        .or_else(|| value.get(json_name))
        .cloned()
        .unwrap_or_else(|| zero.into())
}

fn render_one_with(format: &str, value: &Value, missing_key_error: bool) -> anyhow::Result<String> {
    render_one_with_methods(format, value, missing_key_error, &[])
}

fn render_one_with_methods(
    format: &str,
    value: &Value,
    missing_key_error: bool,
    methods: &[(&str, crate::format::template::Method)],
) -> anyhow::Result<String> {
    let format = if format == "json" {
        "{{json .}}"
    } else {
        format
    };
    // Docker does not interpret `\t` escapes for inspect-style formats, and runs them with
    // `missingkey=error` (docker/cli `inspect.tryRawInspectFallback`).
    let options = crate::format::template::RenderOptions {
        missing_key_error,
        methods,
        ..Default::default()
    };
    Ok(Template::parse(format)?.render_with(value, &options)?)
}

/// `inspect` output: a JSON array indented with four spaces, as Docker's.
pub fn json_array<T: Serialize>(values: &[T]) -> String {
    let mut buffer = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut serializer = serde_json::Serializer::with_formatter(&mut buffer, formatter);
    values
        .serialize(&mut serializer)
        .expect("JSON values always serialize");
    String::from_utf8(buffer).expect("serde_json writes UTF-8")
}

/// `inspect`-style output: the objects as an indented JSON array, or each
/// through the `--format` template.
pub fn print_inspect(format: Option<&str>, found: &[Value]) -> anyhow::Result<()> {
    match format {
        None | Some("json") => println!("{}", json_array(found)),
        Some(format) => {
            for value in found {
                println!("{}", render_one(format, value)?);
            }
        }
    }
    Ok(())
}

/// A value as Go's `fmt.Print` shows it.
pub fn plain(value: &Value) -> String {
    crate::format::gofmt::sprint(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_inspect_is_an_empty_array() {
        assert_eq!(json_array::<Value>(&[]), "[]");
        assert_eq!(
            json_array(&[json!({"A": 1})]),
            "[\n    {\n        \"A\": 1\n    }\n]"
        );
    }

    #[test]
    fn event_templates_use_the_go_field_names_and_json_the_api_names() {
        // What docker 20.10 prints for these templates on the same two events.
        let container = json!({
            "status": "start", "id": "abc", "from": "busybox", "Type": "container",
            "Action": "start", "Actor": {"ID": "abc", "Attributes": {"name": "x"}},
            "scope": "local", "time": 1700000000, "timeNano": 1700000000123456789i64,
        });
        let volume = json!({
            "Type": "volume", "Action": "create", "Actor": {"ID": "data", "Attributes": {}},
            "scope": "local", "time": 1700000001, "timeNano": 1700000001000000000i64,
        });
        let format = "{{.Status}}|{{.ID}}|{{.From}}|{{.Scope}}|{{.Time}}|{{.TimeNano}}|{{.Actor.ID}}|{{.Actor.Attributes.name}}";
        assert_eq!(
            render_event(format, &container).unwrap(),
            "start|abc|busybox|local|1700000000|1700000000123456789|abc|x"
        );
        assert_eq!(
            render_event(format, &volume).unwrap(),
            "|||local|1700000001|1700000001000000000|data|<no value>"
        );
        assert_eq!(
            render_event("{{json .}}", &volume).unwrap(),
            serde_json::to_string(&volume).unwrap()
        );
    }
}
