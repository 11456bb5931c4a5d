//! Template behaviour checked against what Go's text/template (with docker's functions)
//! prints for the same template and data.

use serde_json::{json, Value};

use super::*;

fn render(template: &str, data: &Value) -> String {
    Template::parse(template)
        .unwrap_or_else(|error| panic!("{template:?} failed to parse: {error}"))
        .render(data)
        .unwrap_or_else(|error| panic!("{template:?} failed to render: {error}"))
}

fn render_error(template: &str, data: &Value) -> String {
    match Template::parse(template) {
        Err(error) => error.to_string(),
        Ok(parsed) => parsed
            .render(data)
            .expect_err("expected an execution error")
            .to_string(),
    }
}

fn container() -> Value {
    json!({
        "Id": "4f3a2b1c",
        "Name": "/web",
        "State": {"Status": "running", "Running": true, "Pid": 4242, "ExitCode": 0},
        "Config": {
            "Env": ["PATH=/usr/bin", "TERM=xterm"],
            "Labels": {"com.example.team": "infra", "app": "web"},
            "Cmd": null,
            "Image": "busybox",
        },
        "NetworkSettings": {"Networks": {"bridge": {"IPAddress": "172.17.0.2"}}},
        "Mounts": [],
        "Cpu": 0.5,
    })
}

#[test]
fn prints_text_and_fields() {
    let data = container();
    assert_eq!(render("plain text", &data), "plain text");
    assert_eq!(render("{{.Name}}", &data), "/web");
    assert_eq!(
        render("{{.State.Status}} {{.State.Pid}}", &data),
        "running 4242"
    );
    assert_eq!(render("{{ .State.Running }}", &data), "true");
    assert_eq!(render("{{.Cpu}}", &data), "0.5");
    assert_eq!(render("{{.Config.Cmd}}", &data), "<nil>");
    assert_eq!(
        render("{{.Config.Env}}", &data),
        "[PATH=/usr/bin TERM=xterm]"
    );
    assert_eq!(
        render("{{.Config.Labels}}", &data),
        "map[app:web com.example.team:infra]"
    );
    assert_eq!(render("{{.Mounts}}", &data), "[]");
    assert_eq!(render("{{.State.ExitCode}}", &data), "0");
}

#[test]
fn missing_keys_print_no_value() {
    let data = container();
    assert_eq!(render("{{.Nope}}", &data), "<no value>");
    assert_eq!(render("{{.Nope.Deeper}}", &data), "<no value>");
    assert_eq!(render("{{.Config.Labels.missing}}", &data), "<no value>");
}

#[test]
fn field_errors_match_go() {
    let data = container();
    assert_eq!(
        render_error("{{.Config.Cmd.X}}", &data),
        "template parsing error: template: :1:9: executing \"\" at <.Config.Cmd.X>: \
         nil pointer evaluating interface {}.X"
    );
    assert_eq!(
        render_error("{{.Name.X}}", &data),
        "template parsing error: template: :1:7: executing \"\" at <.Name.X>: \
         can't evaluate field X in type string"
    );
    assert_eq!(
        render_error("{{.Name 1}}", &data),
        "template parsing error: template: :1:2: executing \"\" at <.Name>: \
         Name is not a method but has arguments"
    );
}

#[test]
fn json_function_is_compact() {
    let data = container();
    assert_eq!(
        render("{{json .State}}", &data),
        r#"{"Status":"running","Running":true,"Pid":4242,"ExitCode":0}"#
    );
    assert_eq!(
        render("{{json .Config.Env}}", &data),
        r#"["PATH=/usr/bin","TERM=xterm"]"#
    );
    assert_eq!(render("{{json .Name}}", &data), r#""/web""#);
    assert_eq!(render("{{json .Nope}}", &data), "null");
    assert_eq!(
        render("{{.State | json}}", &data),
        render("{{json .State}}", &data)
    );
}

#[test]
fn range_iterates_arrays_and_maps() {
    let data = container();
    assert_eq!(
        render("{{range .Config.Env}}[{{.}}]{{end}}", &data),
        "[PATH=/usr/bin][TERM=xterm]"
    );
    assert_eq!(
        render(
            "{{range $k, $v := .Config.Labels}}{{$k}}={{$v}};{{end}}",
            &data
        ),
        "app=web;com.example.team=infra;"
    );
    assert_eq!(
        render(
            "{{range $i, $e := .Config.Env}}{{$i}}:{{$e}} {{end}}",
            &data
        ),
        "0:PATH=/usr/bin 1:TERM=xterm "
    );
    assert_eq!(
        render(
            "{{range $net, $conf := .NetworkSettings.Networks}}{{$net}} {{$conf.IPAddress}}{{end}}",
            &data
        ),
        "bridge 172.17.0.2"
    );
    assert_eq!(
        render("{{range .Mounts}}x{{else}}none{{end}}", &data),
        "none"
    );
    assert_eq!(
        render("{{range .Config.Cmd}}x{{else}}nil{{end}}", &data),
        "nil"
    );
    assert_eq!(render("{{range .Nope}}x{{end}}", &data), "");
    assert_eq!(render("{{range 3}}{{.}}{{end}}", &data), "012");
    assert_eq!(
        render(
            "{{range .Config.Env}}{{if eq . \"TERM=xterm\"}}{{break}}{{end}}{{.}}{{end}}",
            &data
        ),
        "PATH=/usr/bin"
    );
    assert_eq!(
        render(
            "{{range .Config.Env}}{{if eq . \"PATH=/usr/bin\"}}{{continue}}{{end}}{{.}}{{end}}",
            &data
        ),
        "TERM=xterm"
    );
    assert_eq!(
        render_error("{{range .Name}}{{end}}", &data),
        "template parsing error: template: :1:8: executing \"\" at <.Name>: range can't iterate over /web"
    );
}

#[test]
fn if_with_and_truthiness() {
    let data = json!({
        "Empty": "", "Text": "x", "Zero": 0, "One": 1, "False": false, "True": true,
        "Null": null, "EmptyList": [], "List": [1], "EmptyMap": {}, "Map": {"a": 1},
    });
    for key in [
        "Empty",
        "Zero",
        "False",
        "Null",
        "EmptyList",
        "EmptyMap",
        "Missing",
    ] {
        assert_eq!(
            render(
                &format!("{{{{if .{key}}}}}yes{{{{else}}}}no{{{{end}}}}"),
                &data
            ),
            "no",
            "{key}"
        );
    }
    for key in ["Text", "One", "True", "List", "Map"] {
        assert_eq!(
            render(
                &format!("{{{{if .{key}}}}}yes{{{{else}}}}no{{{{end}}}}"),
                &data
            ),
            "yes",
            "{key}"
        );
    }
    assert_eq!(
        render("{{if .Zero}}a{{else if .Text}}b{{else}}c{{end}}", &data),
        "b"
    );
    assert_eq!(render("{{with .Map}}{{.a}}{{else}}none{{end}}", &data), "1");
    assert_eq!(
        render("{{with .Null}}x{{else with .Text}}{{.}}{{end}}", &data),
        "x"
    );
    assert_eq!(render("{{if and .Text .One}}both{{end}}", &data), "both");
    assert_eq!(
        render("{{if or .Zero .Empty}}any{{else}}neither{{end}}", &data),
        "neither"
    );
    assert_eq!(render("{{or .Empty \"default\"}}", &data), "default");
    assert_eq!(render("{{and .One .Text}}", &data), "x");
    assert_eq!(render("{{not .Null}}", &data), "true");
    // `and` stops early, so the nil .Null is never dereferenced.
    assert_eq!(
        render("{{if and .Null .Null.X}}y{{else}}n{{end}}", &data),
        "n"
    );
}

#[test]
fn docker_string_functions() {
    let data = json!({"Name": "hello world", "Names": ["b", "a"], "Id": "tupx5xzf6hvsrhnruz5cr8gwp", "Ports": "0.0.0.0:2->8/udp", "Num": 3});
    assert_eq!(render("{{upper .Name}}", &data), "HELLO WORLD");
    assert_eq!(render("{{lower \"ABC\"}}", &data), "abc");
    assert_eq!(render("{{title .Name}}", &data), "Hello World");
    assert_eq!(
        render("{{title \"hello_there-you 2nd\"}}", &data),
        "Hello_there-You 2nd"
    );
    assert_eq!(render("{{join .Names \", \"}}", &data), "b, a");
    assert_eq!(
        render("{{join (split .Ports \":\") \"/\"}}", &data),
        "0.0.0.0/2->8/udp"
    );
    assert_eq!(render("{{split \"a,b\" \",\"}}", &data), "[a b]");
    assert_eq!(render("{{truncate .Id 5}}", &data), "tupx5");
    assert_eq!(
        render("{{truncate .Id 25}}", &data),
        "tupx5xzf6hvsrhnruz5cr8gwp"
    );
    assert_eq!(
        render("{{truncate .Id 30}}", &data),
        "tupx5xzf6hvsrhnruz5cr8gwp"
    );
    assert_eq!(
        render("{{pad .Id 3 3}}", &data),
        "   tupx5xzf6hvsrhnruz5cr8gwp   "
    );
    assert_eq!(render("{{pad \"\" 3 3}}", &data), "");
    assert_eq!(
        render("{{.Name | upper | printf \"<%s>\"}}", &data),
        "<HELLO WORLD>"
    );
    assert_eq!(render("{{join .Nope \",\"}}", &data), "");
    assert_eq!(
        render_error("{{upper .Num}}", &data),
        "template parsing error: template: :1:8: executing \"\" at <.Num>: \
         wrong type for value; expected string; got int"
    );
    assert_eq!(
        render_error("{{truncate .Missing 5}}", &data),
        "template parsing error: template: :1:11: executing \"\" at <.Missing>: \
         invalid value; expected string"
    );
    assert_eq!(
        render_error("{{join .Name \",\"}}", &data),
        "template parsing error: template: :1:2: executing \"\" at <join .Name \",\">: \
         error calling join: expected slice, got string"
    );
}

#[test]
fn go_builtins() {
    let data = container();
    assert_eq!(render("{{index .Config.Labels \"app\"}}", &data), "web");
    assert_eq!(render("{{index .Config.Labels \"absent\"}}", &data), "");
    assert_eq!(render("{{index .Config.Env 1}}", &data), "TERM=xterm");
    assert_eq!(
        render(
            "{{(index .NetworkSettings.Networks \"bridge\").IPAddress}}",
            &data
        ),
        "172.17.0.2"
    );
    assert_eq!(
        render("{{index .NetworkSettings.Networks \"none\"}}", &data),
        "<nil>"
    );
    assert_eq!(
        render(
            "{{len .Config.Env}} {{len .Name}} {{len .Config.Labels}}",
            &data
        ),
        "2 4 2"
    );
    assert_eq!(render("{{slice .Name 1 3}}", &data), "we");
    assert_eq!(render("{{slice .Config.Env 1}}", &data), "[TERM=xterm]");
    assert_eq!(render("{{print 1 2 \"a\" \"b\" 3}}", &data), "1 2ab3");
    assert_eq!(render("{{println .Name 1}}", &data), "/web 1\n");
    assert_eq!(
        render("{{printf \"%s:%d\" .Name .State.Pid}}", &data),
        "/web:4242"
    );
    assert_eq!(render("{{eq .State.Status \"running\"}}", &data), "true");
    assert_eq!(
        render("{{eq .State.Status \"paused\" \"running\"}}", &data),
        "true"
    );
    assert_eq!(render("{{ne .State.Pid 4242}}", &data), "false");
    assert_eq!(
        render(
            "{{lt 1 2}} {{le 2 2}} {{gt 1 2}} {{ge 2 2}} {{lt 1.5 2}}",
            &data
        ),
        "true true false true true"
    );
    assert_eq!(render("{{lt \"a\" \"b\"}}", &data), "true");
    assert_eq!(render("{{eq .Nope nil}}", &data), "true");
    assert_eq!(
        render_error("{{eq .Name 1}}", &data),
        "template parsing error: template: :1:2: executing \"\" at <eq .Name 1>: \
         error calling eq: incompatible types for comparison"
    );
    assert_eq!(
        render_error("{{index .Config.Env 5}}", &data),
        "template parsing error: template: :1:2: executing \"\" at <index .Config.Env 5>: \
         error calling index: index out of range: 5"
    );
    assert_eq!(
        render_error("{{len}}", &data),
        "template parsing error: template: :1:2: executing \"\" at <len>: \
         wrong number of args for len: want 1 got 0"
    );
}

#[test]
fn constants_and_dot() {
    let data = json!("just a string");
    assert_eq!(render("{{.}}", &data), "just a string");
    assert_eq!(
        render("{{\"quoted\\t\"}}|{{`raw\\t`}}", &data),
        "quoted\t|raw\\t"
    );
    assert_eq!(
        render("{{1.5}} {{2.0}} {{7}} {{true}} {{'a'}} {{0x10}}", &data),
        "1.5 2 7 true 97 16"
    );
    assert_eq!(render("{{$}}", &data), "just a string");
    assert_eq!(
        render_error("{{nil}}", &data),
        "template parsing error: template: :1:2: executing \"\" at <nil>: nil is not a command"
    );
    assert_eq!(
        render_error("{{\"x\" 1}}", &data),
        "template parsing error: template: :1:2: executing \"\" at <\"x\">: \
         can't give argument to non-function \"x\""
    );
}

#[test]
fn variables_scope_and_assignment() {
    let data = json!({"A": "a", "List": [1, 2, 3]});
    assert_eq!(
        render("{{$x := .A}}{{$x}}{{$x = \"b\"}}{{$x}}", &data),
        "ab"
    );
    assert_eq!(
        render(
            "{{$sum := 0}}{{range .List}}{{$sum = .}}{{end}}{{$sum}}",
            &data
        ),
        "3"
    );
    assert_eq!(render("{{range .List}}{{$.A}}{{end}}", &data), "aaa");
    assert_eq!(render("{{with $v := .A}}{{$v}}{{.}}{{end}}", &data), "aa");
    // A variable declared inside {{if}} is gone after its {{end}}.
    assert!(Template::parse("{{if true}}{{$y := 1}}{{end}}{{$y}}").is_err());
}

#[test]
fn whitespace_trimming_and_comments() {
    let data = json!({"List": ["a", "b"]});
    let template = "{{- range .List }}\n  {{ . -}}\n{{ end -}}\n";
    assert_eq!(render(template, &data), "\n  a\n  b");
    assert_eq!(render("x  {{- /* comment */ -}}  y", &data), "xy");
    assert_eq!(render("a {{/* comment */}} b", &data), "a  b");
}

#[test]
fn escapes_are_not_interpreted_by_the_template() {
    // Only docker's list formatter turns a typed `\t` into a tab; inspect prints it as is.
    let data = json!({"A": "x", "B": "y"});
    assert_eq!(render(r"{{.A}}\t{{.B}}", &data), r"x\ty");
}

#[test]
fn parse_errors_carry_docker_prefix() {
    let data = json!({});
    assert_eq!(
        render_error("{{.Foo }", &data),
        "template parsing error: template: :1: unexpected \"}\" in operand"
    );
    assert_eq!(
        render_error("{{.Foo}", &data),
        "template parsing error: template: :1: bad character U+007D '}'"
    );
    assert_eq!(
        render_error("line1\n{{if .A}}", &data),
        "template parsing error: template: :2: unexpected EOF"
    );
    assert_eq!(
        render_error("{{foo}}", &data),
        "template parsing error: template: :1: function \"foo\" not defined"
    );
}

#[test]
fn methods_extend_objects() {
    fn label(receiver: &Value, args: &[Value]) -> Result<Value, String> {
        let [Value::String(key)] = args else {
            return Err(format!(
                "wrong number of args for Label: want 1 got {}",
                args.len()
            ));
        };
        Ok(receiver["Labels"]
            .get(key)
            .cloned()
            .unwrap_or(Value::String(String::new())))
    }
    let methods: &[(&str, Method)] = &[("Label", label)];
    let options = RenderOptions {
        methods,
        header: false,
        missing_key_error: false,
    };
    let data = json!({"Labels": {"com.docker.compose.project": "shop"}});
    let template = Template::parse("{{.Label \"com.docker.compose.project\"}}").unwrap();
    assert_eq!(template.render_with(&data, &options).unwrap(), "shop");
    let template = Template::parse("{{\"com.docker.compose.project\" | .Label}}").unwrap();
    assert_eq!(template.render_with(&data, &options).unwrap(), "shop");
    let template = Template::parse("{{.Label}}").unwrap();
    assert_eq!(
        template
            .render_with(&data, &options)
            .unwrap_err()
            .to_string(),
        "template parsing error: template: :1:2: executing \"\" at <.Label>: \
         error calling Label: wrong number of args for Label: want 1 got 0"
    );
}

#[test]
fn header_mode_keeps_column_names() {
    let headers = json!({"Names": "NAMES", "Size": "SIZE"});
    let options = RenderOptions {
        methods: &[],
        header: true,
        missing_key_error: false,
    };
    let template =
        Template::parse("{{upper .Names}}\t{{json .Size}}\t{{truncate .Names 2}}\t{{.Label \"com.docker.compose.project\"}}")
            .unwrap();
    assert_eq!(
        template.render_with(&headers, &options).unwrap(),
        "NAMES\tSIZE\tNAMES\tproject"
    );
}

#[test]
fn partial_output_survives_errors() {
    let template = Template::parse("a{{.X.Y}}b").unwrap();
    let (output, error) = template.render_partial(&json!({"X": "s"}), &RenderOptions::default());
    assert_eq!(output, "a");
    assert!(error.is_some());
}

#[test]
fn long_nodes_are_shortened_in_errors() {
    assert_eq!(
        render_error(
            "{{.Abcdefghij.Klmnopqrst.Uvw}}",
            &json!({"Abcdefghij": {"Klmnopqrst": 1}})
        ),
        "template parsing error: template: :1:13: executing \"\" at <.Abcdefghij.Klmnopqr...>: \
         can't evaluate field Uvw in type int"
    );
}

#[test]
fn missing_keys_are_errors_where_docker_inspect_makes_them_so() {
    // docker inspect -f '{{.Config.Foo}}' / '{{.Id}} {{.Foo}}': docker 20.10's exact words.
    let data = json!({"Id": "abc", "Config": {"Image": "busybox"}});
    let strict = RenderOptions {
        missing_key_error: true,
        ..Default::default()
    };
    let error = |source: &str| {
        Template::parse(source)
            .unwrap()
            .render_with(&data, &strict)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        error("{{.Config.Foo}}"),
        "template parsing error: template: :1:9: executing \"\" at <.Config.Foo>: map has no entry for key \"Foo\""
    );
    assert_eq!(
        error("{{.Id}} {{.Foo}}"),
        "template parsing error: template: :1:10: executing \"\" at <.Foo>: map has no entry for key \"Foo\""
    );
    let present = Template::parse("{{.Config.Image}}").unwrap();
    assert_eq!(present.render_with(&data, &strict).unwrap(), "busybox");
    // Lists keep Go's default.
    assert_eq!(
        Template::parse("{{.Foo}}").unwrap().render(&data).unwrap(),
        "<no value>"
    );
}
