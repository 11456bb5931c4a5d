//! `bench-results.json`: the whole report, every sample included.

use super::Report;

pub fn render(report: &Report) -> Result<String, serde_json::Error> {
    let mut text = serde_json::to_string_pretty(report)?;
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::sample_report;

    #[test]
    fn json_keeps_samples_summaries_and_skip_reasons() {
        let text = render(&sample_report()).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["format_version"], 1);
        assert_eq!(value["mode"], "quick");
        let start = &value["metrics"][0];
        assert_eq!(start["id"], "start");
        let berth = &start["measurements"][0];
        assert_eq!(berth["engine"], "berth");
        assert_eq!(berth["unit"], "seconds");
        assert_eq!(berth["samples"].as_array().unwrap().len(), 3);
        assert_eq!(berth["summary"]["runs"], 3);
        assert_eq!(berth["target"]["met"], true);
        assert_eq!(
            start["measurements"][1]["comparisons"][0]["against"],
            "berth"
        );
        assert_eq!(
            start["measurements"][2]["skipped"],
            "berth warm is not available"
        );
        assert!(start["measurements"][2]["summary"].is_null());
        assert_eq!(
            value["metrics"][2]["skipped"],
            "docker-registry not installed"
        );
        assert_eq!(value["engines"][1]["skipped"], "podman not found in PATH");
    }
}
