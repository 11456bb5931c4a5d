//! `ps ID`: the container's processes, `--format json` as a list of pids, else ps(1)'s
//! table (`-ef` unless options follow the id) filtered to the container's pids.

use super::cli::PsArgs;

pub fn run(store: &berth_oci::Store, args: &PsArgs) -> anyhow::Result<i32> {
    berth_oci::store::validate_id(&args.id)?;
    let record = store.load(&args.id)?;
    let manager = berth_oci::cgroup::manager(&record.cgroup_path)?;
    let pids: Vec<i32> = manager
        .processes()?
        .into_iter()
        .map(|pid| pid.as_raw())
        .collect();
    match args.format.as_str() {
        "json" => {
            println!("{}", serde_json::to_string(&pids)?);
            Ok(0)
        }
        "table" => {
            let options = if args.ps_options.is_empty() {
                vec!["-ef".to_owned()]
            } else {
                args.ps_options.clone()
            };
            let output = std::process::Command::new("ps").args(&options).output()?;
            if !output.status.success() {
                anyhow::bail!(
                    "ps {}: {}",
                    options.join(" "),
                    String::from_utf8_lossy(&output.stderr).trim()
                );
            }
            let text = String::from_utf8_lossy(&output.stdout);
            let mut lines = text.lines();
            let header = lines.next().unwrap_or_default();
            let column = header
                .split_whitespace()
                .position(|name| name == "PID")
                .ok_or_else(|| anyhow::anyhow!("couldn't find PID field in ps output"))?;
            println!("{header}");
            for line in lines {
                let pid = line
                    .split_whitespace()
                    .nth(column)
                    .and_then(|field| field.parse::<i32>().ok());
                if pid.is_some_and(|pid| pids.contains(&pid)) {
                    println!("{line}");
                }
            }
            Ok(0)
        }
        other => anyhow::bail!("invalid format option {other:?}: table or json"),
    }
}
