//! `network ls`: docker's filters (`daemon/network/filter.go`), then the
//! CLI's natural order by name and its `networkContext` fields.

use std::cmp::Ordering;

use berth_engine::networks::{all_networks, network_json, Network};
use berth_engine::Engine;
use clap::Args;
use serde_json::{json, Value};

use super::filters::{natural_less, Filters};
use crate::exit::{StatusError, USAGE};
use crate::format::table::ListFormat;
use crate::format::template::Method;

const DEFAULT_TABLE: &str = "table {{.ID}}\t{{.Name}}\t{{.Driver}}\t{{.Scope}}";

const HEADERS: &[(&str, &str)] = &[
    ("ID", "NETWORK ID"),
    ("Name", "NAME"),
    ("Driver", "DRIVER"),
    ("Scope", "SCOPE"),
    ("IPv6", "IPV6"),
    ("Internal", "INTERNAL"),
    ("Labels", "LABELS"),
    ("CreatedAt", "CREATED AT"),
];

/// The keys docker 20.10's daemon accepts for `network ls --filter`.
const ACCEPTED_FILTERS: &[&str] = &["dangling", "driver", "id", "label", "name", "scope", "type"];

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Provide filter values (e.g. 'driver=bridge')
    #[arg(short, long = "filter", value_name = "filter")]
    pub filters: Vec<String>,
    /// Pretty-print networks using a Go template
    #[arg(long, value_name = "string")]
    pub format: Option<String>,
    /// Do not truncate the output
    #[arg(long)]
    pub no_trunc: bool,
    /// Only display network IDs
    #[arg(short, long)]
    pub quiet: bool,
}

pub fn run(engine: &mut Engine, args: &ListArgs) -> anyhow::Result<i32> {
    let filters = Filters::parse(&args.filters, "-f, --filter").map_err(|message| StatusError {
        status: USAGE,
        message: format!("{message}\nSee 'berth network ls --help'."),
    })?;
    filters.validate(ACCEPTED_FILTERS)?;
    let dangling = dangling_filter(&filters)?;
    let types = filters.get("type");
    if let Some(bad) = types
        .iter()
        .find(|value| !matches!(value.as_str(), "custom" | "builtin"))
    {
        anyhow::bail!("invalid filter: 'type'='{bad}'");
    }
    // A bad template fails before anything is listed.
    let format = ListFormat::parse(args.format.as_deref(), DEFAULT_TABLE)?;

    let (store, kernel) = engine.network_parts();
    let mut networks = all_networks(store, kernel)?;
    let store = engine.store();
    networks.retain(|network| {
        let record = &network.record;
        filters.exact_match("driver", &record.driver)
            && filters.text_match("name", &network.name)
            && filters.text_match("id", &network.id)
            && filters.match_labels("label", &record.labels)
            && filters.exact_match("scope", network.scope())
            && (types.is_empty()
                || types
                    .iter()
                    .any(|wanted| (wanted == "builtin") == record.predefined))
            && dangling.is_none_or(|wanted| {
                let unused = !record.predefined && has_no_containers(store, network);
                unused == wanted
            })
    });
    networks.sort_by(|a, b| order(&a.name, &b.name));

    let id = |network: &Network| -> String {
        if args.no_trunc {
            network.id.clone()
        } else {
            network.id.chars().take(12).collect()
        }
    };
    if args.quiet && matches!(args.format.as_deref(), None | Some("") | Some("table")) {
        for network in &networks {
            println!("{}", id(network));
        }
        return Ok(0);
    }
    let rows: Vec<Value> = networks
        .iter()
        .map(|network| {
            let record = &network.record;
            let labels: Vec<String> = record
                .labels
                .iter()
                .map(|(key, value)| format!("{key}={value}"))
                .collect();
            json!({
                "CreatedAt": go_time_string(&network.created),
                "Driver": record.driver,
                "ID": id(network),
                "IPv6": record.enable_ipv6.to_string(),
                "Internal": record.internal.to_string(),
                "Labels": labels.join(","),
                "Name": network.name,
                "Scope": network.scope(),
            })
        })
        .collect();
    let methods: &[(&str, Method)] = &[("Label", label)];
    print!("{}", format.render(HEADERS, &rows, methods)?);
    Ok(0)
}

fn order(left: &str, right: &str) -> Ordering {
    if natural_less(left, right) {
        Ordering::Less
    } else if natural_less(right, left) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

/// `dangling=true|1|false|0`, one value at most (docker's words).
fn dangling_filter(filters: &Filters) -> anyhow::Result<Option<bool>> {
    match filters.get("dangling") {
        [] => Ok(None),
        [value] => match value.as_str() {
            "1" | "true" => Ok(Some(true)),
            "0" | "false" => Ok(Some(false)),
            _ => anyhow::bail!(
                "invalid value for filter 'dangling', must be \"true\" (or \"1\"), or \"false\" (or \"0\")"
            ),
        },
        _ => anyhow::bail!("got more than one value for filter key \"dangling\""),
    }
}

/// No container has an endpoint on it (docker's `len(nw.Containers) == 0`).
fn has_no_containers(store: &berth_store::Store, network: &Network) -> bool {
    network_json(store, network)["Containers"]
        .as_object()
        .is_none_or(serde_json::Map::is_empty)
}

/// `{{.Label "key"}}`: one label's value, "" when absent. The row carries
/// the labels joined as `k=v,…` (docker's `.Labels`), so a value holding a
/// comma reads short; the joined form is what docker prints, too.
fn label(row: &Value, args: &[Value]) -> Result<Value, String> {
    let [Value::String(key)] = args else {
        return Err(format!(
            "wrong number of args for Label: want 1 got {}",
            args.len()
        ));
    };
    let joined = row["Labels"].as_str().unwrap_or_default();
    let value = joined
        .split(',')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .find(|(name, _)| name == key)
        .map(|(_, value)| value.to_owned())
        .unwrap_or_default();
    Ok(Value::String(value))
}

/// Go's `time.Time.String()` in UTC, as docker prints `.CreatedAt`:
/// `2006-01-02 15:04:05.999999999 +0000 UTC` (the fraction without its
/// trailing zeros).
fn go_time_string(created: &str) -> String {
    let Ok(time) = chrono::DateTime::parse_from_rfc3339(created) else {
        return created.to_owned();
    };
    let time = time.with_timezone(&chrono::Utc);
    let nanos = format!("{:09}", time.timestamp_subsec_nanos());
    let fraction = nanos.trim_end_matches('0');
    let seconds = time.format("%Y-%m-%d %H:%M:%S");
    if fraction.is_empty() {
        format!("{seconds} +0000 UTC")
    } else {
        format!("{seconds}.{fraction} +0000 UTC")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_at_reads_as_go_prints_it() {
        assert_eq!(
            go_time_string("2026-11-30T05:34:25.339392390Z"),
            "2026-11-30 05:34:25.33939239 +0000 UTC"
        );
        assert_eq!(
            go_time_string("2026-11-30T05:34:25Z"),
            "2026-11-30 05:34:25 +0000 UTC"
        );
    }

    #[test]
    fn label_method_reads_the_joined_labels() {
        let row = json!({"Labels": "a=1,b=,c"});
        let get = |key: &str| label(&row, &[Value::String(key.to_owned())]).unwrap();
        assert_eq!(get("a"), "1");
        assert_eq!(get("b"), "");
        assert_eq!(get("c"), "");
        assert_eq!(get("missing"), "");
        assert!(label(&row, &[]).is_err());
    }
}
