//! `bench-results.svg`: one horizontal bar per measured engine, grouped by
//! measurement, each group scaled to its own largest median. Hand-written
//! SVG: no chart library.

use std::fmt::Write;

use super::{format_value, Report};

const WIDTH: f64 = 980.0;
const LABEL_X: f64 = 16.0;
const BAR_X: f64 = 150.0;
const BAR_WIDTH: f64 = 600.0;
const ROW: f64 = 18.0;

/// The chart of every measurement that has a median.
pub fn render(report: &Report) -> String {
    let mut body = String::new();
    let mut y = 40.0;
    for metric in &report.metrics {
        let mut names: Vec<&str> = Vec::new();
        for measurement in &metric.measurements {
            if measurement.summary.is_some() && !names.contains(&measurement.name.as_str()) {
                names.push(&measurement.name);
            }
        }
        if names.is_empty() {
            continue;
        }
        y += 14.0;
        let _ = writeln!(
            body,
            r#"<text x="{LABEL_X}" y="{y}" class="metric">{}</text>"#,
            escape(&metric.title)
        );
        y += 8.0;
        for name in names {
            let rows: Vec<_> = metric
                .measurements
                .iter()
                .filter(|measurement| measurement.name == name)
                .filter_map(|measurement| {
                    measurement
                        .summary
                        .as_ref()
                        .map(|summary| (measurement, summary.median))
                })
                .collect();
            let largest = rows
                .iter()
                .map(|(_, median)| median.abs())
                .fold(0.0_f64, f64::max);
            y += ROW;
            let _ = writeln!(
                body,
                r#"<text x="{LABEL_X}" y="{y}" class="name">{}</text>"#,
                escape(name)
            );
            for (measurement, median) in rows {
                y += ROW;
                let length = if largest > 0.0 {
                    (median.abs() / largest * BAR_WIDTH).max(1.0)
                } else {
                    1.0
                };
                let _ = writeln!(
                    body,
                    r#"<text x="{x}" y="{text_y}" class="engine">{engine}</text><rect x="{BAR_X}" y="{bar_y}" width="{length:.1}" height="{height}" fill="{color}"/><text x="{value_x:.1}" y="{text_y}" class="value">{value}</text>"#,
                    x = LABEL_X + 12.0,
                    text_y = y - 4.0,
                    engine = escape(&measurement.engine),
                    bar_y = y - ROW + 4.0,
                    height = ROW - 6.0,
                    color = color(&measurement.engine),
                    value_x = BAR_X + length + 6.0,
                    value = escape(&format_value(measurement.unit, median)),
                );
            }
        }
        y += 10.0;
    }
    let height = y + 20.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}">"#
    );
    out.push_str(
        "<style>text{font-family:sans-serif;font-size:12px;fill:#222}\
         .title{font-size:16px;font-weight:bold}.metric{font-size:14px;font-weight:bold}\
         .name{font-style:italic}.value{fill:#444}</style>\n",
    );
    let _ = writeln!(
        out,
        r##"<rect width="100%" height="100%" fill="#fff"/><text x="{LABEL_X}" y="24" class="title">berth bench ({}, {}): medians, bars scaled per measurement</text>"##,
        escape(&report.mode),
        escape(&report.started)
    );
    out.push_str(&body);
    out.push_str("</svg>\n");
    out
}

fn color(engine: &str) -> &'static str {
    match engine.split_whitespace().next().unwrap_or("") {
        "berth" => "#e0701f",
        "berth-vm" => "#9c3d0f",
        "docker" => "#2496ed",
        "podman" => "#892ca0",
        "host" => "#7f7f7f",
        _ => "#4a9a4a",
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::sample_report;

    #[test]
    fn one_bar_per_measured_engine_and_nothing_for_skips() {
        let svg = render(&sample_report());
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.ends_with("</svg>\n"));
        // The background plus three measured rows (berth, docker, network).
        assert_eq!(svg.matches("<rect").count(), 4);
        assert!(!svg.contains("warm pool"));
        // The largest median of a group gets the full width.
        assert!(svg.contains(r##"width="600.0" height="12" fill="#2496ed""##));
        assert!(svg.contains(r##"width="6.7" height="12" fill="#e0701f""##));
        assert!(svg.contains(">12.5 Gbit/s<"));
    }

    #[test]
    fn vm_rows_have_a_colour_of_their_own() {
        assert_eq!(color("berth"), "#e0701f");
        assert_eq!(color("berth-vm (TCG)"), "#9c3d0f");
        assert_eq!(color("berth-vm (TCG), BERTH_VM_BALLOON=off"), "#9c3d0f");
        assert_eq!(color("host"), "#7f7f7f");
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(escape(r#"a<b>&"c""#), "a&lt;b&gt;&amp;&quot;c&quot;");
    }
}
