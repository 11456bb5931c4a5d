//! A service's `volumes:` (short `SOURCE:TARGET:MODE` and long syntax), `tmpfs:` and
//! `devices:`, in compose's long form: bind sources made absolute, one mount per target.

use std::path::Path;

use serde_json::{json, Map, Value as Json};

use super::values::{
    boolean, bytes, check_keys, clean_text, integer, must_be, resolve_path, string, Result,
};
use crate::error::ComposeError;
use crate::yaml::{Node, Value};

pub struct PathContext<'a> {
    pub base: &'a Path,
    pub home: Option<&'a str>,
}

pub fn volumes(node: &Node, path: &str, context: &PathContext<'_>) -> Result<Json> {
    let Value::Seq(items) = &node.value else {
        return Err(must_be(node, path, "array"));
    };
    let mut out: Vec<Json> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let item_path = format!("{path}.{index}");
        let mount = match &item.value {
            Value::Map(_) => long(item, &item_path, context)?,
            Value::String(text) => short(text, item, &item_path, context)?,
            _ => return Err(must_be(item, &item_path, "string")),
        };
        // A later mount of the same target replaces an earlier one in its place (merged files
        // do this).
        match out
            .iter_mut()
            .find(|existing| existing.get("target") == mount.get("target"))
        {
            Some(existing) => *existing = mount,
            None => out.push(mount),
        }
    }
    Ok(Json::Array(out))
}

fn is_path(source: &str) -> bool {
    source.starts_with('.') || source.starts_with('/') || source.starts_with('~')
}

fn short(text: &str, node: &Node, path: &str, context: &PathContext<'_>) -> Result<Json> {
    let parts: Vec<&str> = text.split(':').collect();
    let (source, target, mode) = match parts.as_slice() {
        [target] => (None, *target, None),
        [source, target] => (Some(*source), *target, None),
        [source, target, mode] => (Some(*source), *target, Some(*mode)),
        _ => {
            return Err(ComposeError::schema(
                &node.at,
                path,
                format!("invalid spec: {text}: too many colons"),
            ))
        }
    };
    if target.is_empty() {
        return Err(ComposeError::schema(
            &node.at,
            path,
            format!("invalid spec: {text}: empty section between colons"),
        ));
    }
    let mut out = Map::new();
    let bind = source.is_some_and(is_path);
    out.insert("type".into(), json!(if bind { "bind" } else { "volume" }));
    if let Some(source) = source {
        let source = if bind {
            resolve_path(context.base, source, context.home)
                .display()
                .to_string()
        } else {
            source.to_owned()
        };
        out.insert("source".into(), json!(source));
    }
    out.insert("target".into(), json!(clean_text(target)));
    let mut read_only = false;
    let mut options = Map::new();
    for option in mode.unwrap_or("").split(',').filter(|o| !o.is_empty()) {
        match option {
            "ro" => read_only = true,
            "rw" => {}
            "nocopy" if !bind => {
                options.insert("nocopy".into(), json!(true));
            }
            "z" | "Z" if bind => {
                options.insert("selinux".into(), json!(option));
            }
            "shared" | "rshared" | "slave" | "rslave" | "private" | "rprivate" if bind => {
                options.insert("propagation".into(), json!(option));
            }
            other => {
                return Err(ComposeError::schema(
                    &node.at,
                    path,
                    format!("invalid spec: {text}: unknown option {other:?}"),
                ))
            }
        }
    }
    if read_only {
        out.insert("read_only".into(), json!(true));
    }
    // An anonymous volume gets an empty `volume` too, except for a target of two characters
    // or fewer, which compose's parser takes for a Windows drive (`/v`, like `C:`).
    if bind {
        out.insert("bind".into(), Json::Object(options));
    } else if source.is_some() || target.len() > 2 {
        out.insert("volume".into(), Json::Object(options));
    }
    Ok(Json::Object(out))
}

fn long(node: &Node, path: &str, context: &PathContext<'_>) -> Result<Json> {
    check_keys(
        node,
        path,
        &[
            "type",
            "source",
            "target",
            "read_only",
            "bind",
            "volume",
            "tmpfs",
        ],
        &["consistency", "image", "npipe", "cluster"],
    )?;
    let kind = match node.get("type") {
        Some(kind) => string(kind, &format!("{path}.type"))?,
        None => return Err(ComposeError::schema(&node.at, path, "type is required")),
    };
    if !matches!(kind.as_str(), "bind" | "volume" | "tmpfs") {
        return Err(ComposeError::unsupported(
            &node.at,
            &format!("{path}.type"),
            format!("volumes of type {kind:?}"),
        ));
    }
    let mut out = Map::new();
    out.insert("type".into(), json!(kind));
    if let Some(source) = node.get("source") {
        let source = string(source, &format!("{path}.source"))?;
        let source = if kind == "bind" {
            resolve_path(context.base, &source, context.home)
                .display()
                .to_string()
        } else {
            source
        };
        out.insert("source".into(), json!(source));
    } else if kind == "bind" {
        return Err(ComposeError::schema(
            &node.at,
            path,
            "a bind mount needs a source",
        ));
    }
    let target = node
        .get("target")
        .ok_or_else(|| ComposeError::schema(&node.at, path, "target is required"))?;
    out.insert(
        "target".into(),
        json!(clean_text(&string(target, &format!("{path}.target"))?)),
    );
    if let Some(read_only) = node.get("read_only") {
        if boolean(read_only, &format!("{path}.read_only"))? {
            out.insert("read_only".into(), json!(true));
        }
    }
    if let Some(bind) = node.get("bind") {
        let bind_path = format!("{path}.bind");
        check_keys(
            bind,
            &bind_path,
            &["propagation", "create_host_path", "selinux"],
            &["recursive"],
        )?;
        let mut options = Map::new();
        if let Some(propagation) = bind.get("propagation") {
            options.insert(
                "propagation".into(),
                json!(string(propagation, &bind_path)?),
            );
        }
        if let Some(create) = bind.get("create_host_path") {
            // Creating the host path is the default; only `false` is written out.
            if !boolean(create, &bind_path)? {
                options.insert("create_host_path".into(), json!(false));
            }
        }
        if let Some(selinux) = bind.get("selinux") {
            options.insert("selinux".into(), json!(string(selinux, &bind_path)?));
        }
        out.insert("bind".into(), Json::Object(options));
    }
    if let Some(volume) = node.get("volume") {
        let volume_path = format!("{path}.volume");
        check_keys(volume, &volume_path, &["nocopy", "subpath"], &[])?;
        let mut options = Map::new();
        if let Some(nocopy) = volume.get("nocopy") {
            if boolean(nocopy, &volume_path)? {
                options.insert("nocopy".into(), json!(true));
            }
        }
        if let Some(subpath) = volume.get("subpath") {
            options.insert("subpath".into(), json!(string(subpath, &volume_path)?));
        }
        out.insert("volume".into(), Json::Object(options));
    }
    if let Some(tmpfs) = node.get("tmpfs") {
        let tmpfs_path = format!("{path}.tmpfs");
        check_keys(tmpfs, &tmpfs_path, &["size", "mode"], &[])?;
        let mut options = Map::new();
        if let Some(size) = tmpfs.get("size") {
            options.insert("size".into(), json!(bytes(size, &tmpfs_path)?.to_string()));
        }
        if let Some(mode) = tmpfs.get("mode") {
            options.insert("mode".into(), json!(integer(mode, &tmpfs_path)?));
        }
        out.insert("tmpfs".into(), Json::Object(options));
    }
    Ok(Json::Object(out))
}

/// `devices: ["/dev/x", "/dev/x:/dev/y:rwm"]` in the long form.
pub fn devices(node: &Node, path: &str) -> Result<Json> {
    let Value::Seq(items) = &node.value else {
        return Err(must_be(node, path, "array"));
    };
    let mut out = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let item_path = format!("{path}.{index}");
        let text = string(item, &item_path)?;
        let parts: Vec<&str> = text.split(':').collect();
        let (source, target, permissions) = match parts.as_slice() {
            [source] => (*source, *source, "rwm"),
            [source, target] if target.starts_with('/') => (*source, *target, "rwm"),
            [source, permissions] => (*source, *source, *permissions),
            [source, target, permissions] => (*source, *target, *permissions),
            _ => {
                return Err(ComposeError::schema(
                    &item.at,
                    &item_path,
                    format!("invalid device {text:?}"),
                ))
            }
        };
        out.push(json!({"source": source, "target": target, "permissions": permissions}));
    }
    Ok(Json::Array(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(yaml: &str) -> Json {
        let node = crate::yaml::parse(yaml, Path::new("/c.yaml")).expect("yaml");
        let context = PathContext {
            base: Path::new("/p"),
            home: Some("/root"),
        };
        volumes(&node, "volumes", &context).expect("volumes")
    }

    #[test]
    fn short_syntax_becomes_long() {
        let out = run("- /data\n- ./cache:/tmp/cache:rw\n- ~/c:/etc/c/:ro\n- named:/n:ro,nocopy\n");
        assert_eq!(
            out,
            json!([
                {"type": "volume", "target": "/data", "volume": {}},
                {"type": "bind", "source": "/p/cache", "target": "/tmp/cache", "bind": {}},
                {"type": "bind", "source": "/root/c", "target": "/etc/c", "read_only": true, "bind": {}},
                {"type": "volume", "source": "named", "target": "/n", "read_only": true, "volume": {"nocopy": true}},
            ])
        );
    }

    #[test]
    fn a_later_mount_of_a_target_wins() {
        let out = run("- /data\n- /other\n- /host:/data\n");
        assert_eq!(
            out,
            json!([
                {"type": "bind", "source": "/host", "target": "/data", "bind": {}},
                {"type": "volume", "target": "/other", "volume": {}},
            ])
        );
    }
}
