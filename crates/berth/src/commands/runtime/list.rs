//! `list`: runc's table (`ID PID STATUS BUNDLE CREATED OWNER`), `--format json`, `-q`.

use super::cli::ListArgs;

pub fn run(store: &berth_oci::Store, args: &ListArgs) -> anyhow::Result<i32> {
    let records = store.list()?;
    if args.quiet {
        for record in &records {
            println!("{}", record.id);
        }
        return Ok(0);
    }
    let states: Vec<_> = records
        .iter()
        .map(|record| record.state(store.status(record)))
        .collect();
    match args.format.as_str() {
        "json" => {
            println!("{}", serde_json::to_string(&states)?);
        }
        "table" => {
            let mut rows =
                vec![["ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER"].map(str::to_owned)];
            for state in &states {
                rows.push([
                    state.id.clone(),
                    state.pid.to_string(),
                    state.status.to_string(),
                    state.bundle.display().to_string(),
                    state.created.clone(),
                    // runc's table shows the owner's name, root here.
                    "root".to_owned(),
                ]);
            }
            let widths: Vec<usize> = (0..6)
                .map(|column| rows.iter().map(|row| row[column].len()).max().unwrap_or(0))
                .collect();
            for row in rows {
                let mut line = String::new();
                for (column, cell) in row.iter().enumerate() {
                    if column == 5 {
                        line.push_str(cell);
                    } else {
                        line.push_str(&format!(
                            "{cell:<width$}",
                            width = (widths[column] + 3).max(12)
                        ));
                    }
                }
                println!("{}", line.trim_end());
            }
        }
        other => anyhow::bail!("invalid format option {other:?}: table or json"),
    }
    Ok(0)
}
