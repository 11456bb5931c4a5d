//! `bench-results.md`: the machine, the engines, berth's targets, and one
//! table per metric.

use std::fmt::Write;

use super::{format_value, Measurement, Report, Target, Unit};

/// The whole report as Markdown.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = write_report(&mut out, report);
    out
}

fn write_report(out: &mut String, report: &Report) -> std::fmt::Result {
    writeln!(out, "# berth bench results\n")?;
    writeln!(
        out,
        "Started {}, finished {}; {} run{}.\n",
        report.started,
        report.finished,
        report.mode,
        if report.mode == "quick" {
            " (each metric small and once: a smoke test, not a measurement)"
        } else {
            ""
        }
    )?;
    if !report.command.is_empty() {
        writeln!(out, "Command: `{}`\n", report.command)?;
    }
    let machine = &report.machine;
    writeln!(
        out,
        "**Machine:** {} CPU{} ({}), {} RAM, kernel {}, {}, work directory on {}. \
         Load average {} at the start, {} at the end. spec_store_bypass: {}.\n",
        machine.cpus,
        if machine.cpus == 1 { "" } else { "s" },
        cell(&machine.cpu_model),
        format_value(Unit::Bytes, machine.memory_bytes as f64),
        machine.kernel,
        machine.cgroup,
        machine.work_filesystem,
        machine.load_average_start,
        machine.load_average_end,
        machine.spec_store_bypass,
    )?;
    for note in &report.notes {
        writeln!(out, "> {note}\n")?;
    }
    writeln!(
        out,
        "Each measurement: runs, median, mean ± σ (sample standard deviation), \
         min … max, p95. Ratios divide medians. Measure engines in one run and \
         compare ratios: absolute numbers move with the machine.\n"
    )?;

    writeln!(out, "## Engines\n")?;
    writeln!(out, "| engine | version | program | endpoint | status |")?;
    writeln!(out, "|---|---|---|---|---|")?;
    for engine in &report.engines {
        let mut status = match &engine.skipped {
            Some(reason) => format!("skipped: {reason}"),
            None => "measured".to_owned(),
        };
        for note in &engine.notes {
            status.push_str("; ");
            status.push_str(note);
        }
        writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            cell(&engine.name),
            cell(engine.version.as_deref().unwrap_or("")),
            cell(&engine.program),
            cell(engine.endpoint.as_deref().unwrap_or("")),
            cell(&status)
        )?;
    }
    writeln!(out)?;

    write_targets(out, report)?;

    for (index, metric) in report.metrics.iter().enumerate() {
        writeln!(
            out,
            "## {}. {} (`{}`)\n",
            index + 1,
            metric.title,
            metric.id
        )?;
        if let Some(reason) = &metric.skipped {
            writeln!(out, "Skipped: {reason}\n")?;
            continue;
        }
        if !metric.method.is_empty() {
            writeln!(out, "{}\n", metric.method)?;
        }
        if !metric.measurements.is_empty() {
            writeln!(
                out,
                "| measurement | engine | runs | median | mean ± σ | min … max | p95 | compared | target |"
            )?;
            writeln!(out, "|---|---|---:|---:|---|---|---:|---|---|")?;
            for measurement in &metric.measurements {
                write_row(out, measurement)?;
            }
            writeln!(out)?;
        }
        if !metric.facts.is_empty() {
            for fact in &metric.facts {
                writeln!(
                    out,
                    "- {} — {}: {}",
                    fact.subject,
                    fact.name,
                    fact.value.trim()
                )?;
            }
            writeln!(out)?;
        }
        for note in &metric.notes {
            writeln!(out, "> {note}\n")?;
        }
    }
    Ok(())
}

fn write_targets(out: &mut String, report: &Report) -> std::fmt::Result {
    let targets: Vec<(&str, &Measurement, &Target)> = report
        .metrics
        .iter()
        .flat_map(|metric| {
            metric.measurements.iter().filter_map(move |measurement| {
                measurement
                    .target
                    .as_ref()
                    .map(|target| (metric.id.as_str(), measurement, target))
            })
        })
        .collect();
    if targets.is_empty() {
        return Ok(());
    }
    writeln!(out, "## berth's targets\n")?;
    writeln!(out, "| metric | measurement | target | measured | result |")?;
    writeln!(out, "|---|---|---|---|---|")?;
    for (metric, measurement, target) in targets {
        let measured = match (&measurement.summary, &measurement.skipped) {
            (Some(summary), _) => {
                let mut text = format!("{} median", format_value(measurement.unit, summary.median));
                for comparison in &measurement.comparisons {
                    let _ = write!(text, ", {:.3}× {}", comparison.ratio, comparison.against);
                }
                text
            }
            (None, Some(reason)) => format!("not measured: {reason}"),
            (None, None) => "not measured".to_owned(),
        };
        writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            metric,
            cell(&measurement.name),
            cell(&target.text),
            cell(&measured),
            verdict(target.met)
        )?;
    }
    writeln!(out)
}

fn write_row(out: &mut String, measurement: &Measurement) -> std::fmt::Result {
    let unit = measurement.unit;
    let target = measurement
        .target
        .as_ref()
        .map(|target| format!("{}: {}", target.text, verdict(target.met)))
        .unwrap_or_default();
    let Some(summary) = &measurement.summary else {
        let reason = measurement.skipped.as_deref().unwrap_or("no samples");
        return writeln!(
            out,
            "| {} | {} | 0 | skipped: {} | | | | | {} |",
            cell(&measurement.name),
            cell(&measurement.engine),
            cell(reason),
            cell(&target)
        );
    };
    let compared = measurement
        .comparisons
        .iter()
        .map(|comparison| format!("{:.3}× {}", comparison.ratio, comparison.against))
        .collect::<Vec<_>>()
        .join(", ");
    writeln!(
        out,
        "| {} | {} | {} | {} | {} ± {} | {} … {} | {} | {} | {} |",
        cell(&measurement.name),
        cell(&measurement.engine),
        summary.runs,
        format_value(unit, summary.median),
        format_value(unit, summary.mean),
        format_value(unit, summary.stddev),
        format_value(unit, summary.min),
        format_value(unit, summary.max),
        format_value(unit, summary.p95),
        cell(&compared),
        cell(&target)
    )
}

fn verdict(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "met",
        Some(false) => "**missed**",
        None => "not measured",
    }
}

/// Text safe inside a table cell: no pipes, no line breaks.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::sample_report;

    #[test]
    fn markdown_has_every_section_and_row() {
        let text = render(&sample_report());
        assert!(text.starts_with("# berth bench results\n"));
        assert!(text.contains("Command: `berth bench --quick`\n"));
        assert!(text.contains("> the machine was busy\n"));
        assert!(text.contains("| podman |  | podman |  | skipped: podman not found in PATH |"));
        assert!(text.contains("## berth's targets"));
        assert!(text
            .contains("| start | run --rm echo, cold | ≤ 10 ms median | 5.00 ms median | met |"));
        assert!(text.contains(
            "| run --rm echo, cold | berth | 3 | 5.00 ms | 5.00 ms ± 1.00 ms | 4.00 ms … 6.00 ms | 5.90 ms |  | ≤ 10 ms median: met |"
        ));
        assert!(text.contains("| run --rm echo, cold | docker | 2 | 450 ms |"));
        assert!(text.contains("90.000× berth"));
        assert!(text.contains(
            "| run --rm echo, warm pool | berth | 0 | skipped: berth warm is not available |"
        ));
        assert!(text.contains("- berth — warm pool: not available"));
        assert!(text.contains("> a note | with a pipe"));
        assert!(text.contains("| container→container | berth | 1 | 12.5 Gbit/s |"));
        assert!(text.contains("## 3. Cold pull (`pull`)\n\nSkipped: docker-registry not installed"));
    }

    #[test]
    fn cells_never_break_the_table() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
    }
}
