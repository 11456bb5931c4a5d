//! `--format` for list commands (`images`, `ps`, `volume ls`, …) as the docker CLI
//! handles it in `cli/command/formatter/formatter.go`:
//!
//! - no format, `""` or `table`: the command's default table;
//! - `json`: each row as one line of compact JSON (`{{json .}}`);
//! - `table TEMPLATE`: a header row, then one row per item, aligned with docker's
//!   tabwriter settings;
//! - anything else: the template once per item, one item per line, no header.
//!
//! Before parsing, docker drops the `table` prefix, trims spaces at both ends and turns
//! the two-character sequences `\t` and `\n` into a tab and a newline, so
//! `--format '{{.ID}}\t{{.Names}}'` works from a shell. (`inspect --format` does none of
//! this; it uses [`Template`] directly.)

use serde_json::{Map, Value};

use super::tabwriter::TabWriter;
use super::template::{Method, RenderOptions, Template, TemplateError};

const TABLE_PREFIX: &str = "table";

/// A list format, parsed once so bad templates fail before any work is done.
#[derive(Debug)]
pub struct ListFormat {
    template: Template,
    table: bool,
}

impl ListFormat {
    /// Chooses and parses the format: `format` as the user gave it, `default_table` the
    /// command's default (such as `table {{.ID}}\t{{.Image}}…`).
    pub fn parse(format: Option<&str>, default_table: &str) -> Result<ListFormat, TemplateError> {
        let format = match format {
            None | Some("") | Some(TABLE_PREFIX) => default_table,
            Some(format) => format,
        };
        let text = template_text(format);
        Ok(ListFormat {
            template: Template::parse(&text)?,
            table: format.starts_with(TABLE_PREFIX),
        })
    }

    /// Whether the output has a header row and aligned columns.
    #[cfg(test)]
    pub fn is_table(&self) -> bool {
        self.table
    }

    /// Renders every row, each followed by a newline. `headers` maps field names to
    /// column titles (`("ID", "IMAGE ID")`); a field it lacks is titled by splitting its
    /// name into upper-case words (`CreatedSince` → `CREATED SINCE`). `methods` are
    /// available to the row templates (see [`Method`]).
    pub fn render(
        &self,
        headers: &[(&str, &str)],
        rows: &[Value],
        methods: &[(&str, Method)],
    ) -> Result<String, TemplateError> {
        let options = RenderOptions {
            methods,
            header: false,
            missing_key_error: false,
        };
        let mut body = String::new();
        for row in rows {
            body.push_str(&self.template.render_with(&sorted_keys(row), &options)?);
            body.push('\n');
        }
        if !self.table {
            return Ok(body);
        }
        let header_data = header_values(headers, rows);
        let header_options = RenderOptions {
            methods: &[],
            header: true,
            missing_key_error: false,
        };
        // Docker ignores header errors and prints whatever was rendered before one.
        let (header, _) = self.template.render_partial(&header_data, &header_options);
        let mut writer = TabWriter::docker();
        writer.write_str(&header);
        writer.write_str("\n");
        writer.write_str(&body);
        Ok(writer.finish())
    }
}

/// Renders `rows` in the format the user asked for; see the module documentation.
pub fn render_rows(
    format: Option<&str>,
    default_table: &str,
    headers: &[(&str, &str)],
    rows: &[Value],
) -> Result<String, TemplateError> {
    ListFormat::parse(format, default_table)?.render(headers, rows, &[])
}

/// Docker's `Format.templateString`: the template text of a list format.
pub fn template_text(format: &str) -> String {
    if format == "json" {
        return "{{json .}}".to_owned();
    }
    let text = format.strip_prefix(TABLE_PREFIX).unwrap_or(format);
    text.trim_matches(' ')
        .replace("\\t", "\t")
        .replace("\\n", "\n")
}

/// The row with its keys in sorted order: docker turns each list row into a Go map
/// before `{{json .}}` encodes it, and Go encodes map keys sorted.
fn sorted_keys(row: &Value) -> Value {
    match row {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

/// The object a table header renders from: each field name mapped to its column title.
fn header_values(headers: &[(&str, &str)], rows: &[Value]) -> Value {
    let mut values = Map::new();
    for row in rows {
        if let Value::Object(map) = row {
            for key in map.keys() {
                values
                    .entry(key.clone())
                    .or_insert_with(|| Value::String(title_from_field(key)));
            }
        }
    }
    for (field, header) in headers {
        values.insert((*field).to_owned(), Value::String((*header).to_owned()));
    }
    Value::Object(values)
}

/// `CreatedSince` → `CREATED SINCE`, `ID` → `ID`, `LocalVolumes` → `LOCAL VOLUMES`.
fn title_from_field(field: &str) -> String {
    let characters: Vec<char> = field.chars().collect();
    let mut title = String::new();
    for (index, &character) in characters.iter().enumerate() {
        let starts_word = index > 0
            && character.is_uppercase()
            && (characters[index - 1].is_lowercase()
                || characters
                    .get(index + 1)
                    .is_some_and(|next| next.is_lowercase()));
        if starts_word {
            title.push(' ');
        }
        title.extend(character.to_uppercase());
    }
    title
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const IMAGE_TABLE: &str = "table {{.Repository}}\t{{.Tag}}\t{{.ID}}\t{{if .CreatedSince }}{{.CreatedSince}}{{else}}N/A{{end}}\t{{.Size}}";
    const IMAGE_HEADERS: &[(&str, &str)] = &[
        ("ID", "IMAGE ID"),
        ("Repository", "REPOSITORY"),
        ("Tag", "TAG"),
        ("CreatedSince", "CREATED"),
        ("Size", "SIZE"),
    ];
    const PS_TABLE: &str = "table {{.ID}}\t{{.Image}}\t{{.Command}}\t{{.RunningFor}}\t{{.Status}}\t{{.Ports}}\t{{.Names}}";
    const PS_HEADERS: &[(&str, &str)] = &[
        ("ID", "CONTAINER ID"),
        ("Image", "IMAGE"),
        ("Command", "COMMAND"),
        ("RunningFor", "CREATED"),
        ("Status", "STATUS"),
        ("Ports", "PORTS"),
        ("Names", "NAMES"),
    ];

    fn images() -> Vec<Value> {
        vec![
            json!({"Repository": "busybox", "Tag": "latest", "ID": "6fd955f66c23",
                   "CreatedSince": "2 weeks ago", "Size": "4.26MB"}),
            json!({"Repository": "<none>", "Tag": "<none>", "ID": "abcdef012345",
                   "CreatedSince": "3 months ago", "Size": "77.8MB"}),
        ]
    }

    #[test]
    fn default_images_table_matches_docker() {
        let expected = "\
REPOSITORY   TAG       IMAGE ID       CREATED        SIZE
busybox      latest    6fd955f66c23   2 weeks ago    4.26MB
<none>       <none>    abcdef012345   3 months ago   77.8MB
";
        for format in [None, Some(""), Some("table")] {
            assert_eq!(
                render_rows(format, IMAGE_TABLE, IMAGE_HEADERS, &images()).unwrap(),
                expected
            );
        }
    }

    #[test]
    fn empty_ps_prints_the_familiar_header() {
        assert_eq!(
            render_rows(None, PS_TABLE, PS_HEADERS, &[]).unwrap(),
            "CONTAINER ID   IMAGE     COMMAND   CREATED   STATUS    PORTS     NAMES\n"
        );
    }

    #[test]
    fn custom_table_with_escaped_tabs() {
        let output = render_rows(
            Some(r"table {{.Repository}}\t{{.Size}}"),
            IMAGE_TABLE,
            IMAGE_HEADERS,
            &images(),
        )
        .unwrap();
        assert_eq!(
            output,
            "REPOSITORY   SIZE\nbusybox      4.26MB\n<none>       77.8MB\n"
        );
    }

    #[test]
    fn header_functions_leave_titles_alone() {
        let output = render_rows(
            Some(r"table {{upper .Repository}}\t{{truncate .ID 4}}"),
            IMAGE_TABLE,
            IMAGE_HEADERS,
            &images(),
        )
        .unwrap();
        assert_eq!(
            output,
            "REPOSITORY   IMAGE ID\nBUSYBOX      6fd9\n<NONE>       abcd\n"
        );
    }

    #[test]
    fn unknown_fields_get_generated_titles() {
        let rows = vec![json!({"LocalVolumes": "0", "ID": "x"})];
        let output = render_rows(
            Some(r"table {{.LocalVolumes}}\t{{.ID}}"),
            PS_TABLE,
            &[],
            &rows,
        )
        .unwrap();
        assert_eq!(output, "LOCAL VOLUMES   ID\n0               x\n");
        assert_eq!(title_from_field("CreatedSince"), "CREATED SINCE");
        assert_eq!(title_from_field("ID"), "ID");
        assert_eq!(title_from_field("IPAddress"), "IP ADDRESS");
    }

    #[test]
    fn plain_templates_have_no_header_and_interpret_escapes() {
        let output = render_rows(
            Some(r"  {{.Repository}}:{{.Tag}}\t{{.Size}}  "),
            IMAGE_TABLE,
            IMAGE_HEADERS,
            &images(),
        )
        .unwrap();
        assert_eq!(output, "busybox:latest\t4.26MB\n<none>:<none>\t77.8MB\n");
        assert_eq!(
            render_rows(Some("{{.ID}}"), IMAGE_TABLE, IMAGE_HEADERS, &[]).unwrap(),
            ""
        );
    }

    #[test]
    fn json_format_prints_sorted_objects() {
        let output = render_rows(Some("json"), IMAGE_TABLE, IMAGE_HEADERS, &images()[..1]).unwrap();
        assert_eq!(
            output,
            "{\"CreatedSince\":\"2 weeks ago\",\"ID\":\"6fd955f66c23\",\"Repository\":\"busybox\",\"Size\":\"4.26MB\",\"Tag\":\"latest\"}\n"
        );
    }

    #[test]
    fn label_method_in_rows_and_header() {
        fn label(receiver: &Value, args: &[Value]) -> Result<Value, String> {
            let key = args.first().and_then(Value::as_str).unwrap_or_default();
            Ok(receiver["LabelMap"]
                .get(key)
                .cloned()
                .unwrap_or(Value::String(String::new())))
        }
        let rows =
            vec![json!({"Names": "shop-web-1", "LabelMap": {"com.docker.compose.service": "web"}})];
        let format = ListFormat::parse(
            Some(r#"table {{.Names}}\t{{.Label "com.docker.compose.service"}}"#),
            PS_TABLE,
        )
        .unwrap();
        assert!(format.is_table());
        let output = format
            .render(PS_HEADERS, &rows, &[("Label", label)])
            .unwrap();
        assert_eq!(output, "NAMES        service\nshop-web-1   web\n");
    }

    #[test]
    fn errors_surface() {
        assert_eq!(
            ListFormat::parse(Some("{{.ID"), PS_TABLE)
                .unwrap_err()
                .to_string(),
            "template parsing error: template: :1: unclosed action"
        );
        let rows = vec![json!({"ID": "x"})];
        assert!(render_rows(Some("{{.ID.Sub}}"), PS_TABLE, PS_HEADERS, &rows).is_err());
    }

    #[test]
    fn template_text_follows_docker() {
        assert_eq!(template_text("json"), "{{json .}}");
        assert_eq!(template_text(r"table {{.A}}\t{{.B}}\n"), "{{.A}}\t{{.B}}\n");
        assert_eq!(template_text("\t{{.A}} "), "\t{{.A}}");
        assert_eq!(template_text("tablefoo"), "foo");
    }
}
