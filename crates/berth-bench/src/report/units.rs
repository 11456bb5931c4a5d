//! Units of measurements and how their values read. Sizes use SI prefixes
//! (1 MB = 10⁶ bytes), as the targets in the issue do.

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Seconds,
    Bytes,
    BitsPerSecond,
    BytesPerSecond,
}

impl Unit {
    /// Whether a bigger value is better (throughput) or worse (time, size).
    pub fn higher_is_better(self) -> bool {
        matches!(self, Unit::BitsPerSecond | Unit::BytesPerSecond)
    }
}

/// `value` in `unit`, with a prefix and precision that fit its size.
pub fn format_value(unit: Unit, value: f64) -> String {
    if !value.is_finite() {
        return "n/a".to_owned();
    }
    match unit {
        Unit::Seconds => {
            let magnitude = value.abs();
            if magnitude == 0.0 {
                "0 s".to_owned()
            } else if magnitude < 1e-3 {
                format!("{:.1} µs", value * 1e6)
            } else if magnitude < 1.0 {
                format!("{} ms", three_digits(value * 1e3))
            } else {
                format!("{} s", three_digits(value))
            }
        }
        Unit::Bytes => scaled(value, &["B", "kB", "MB", "GB", "TB"], 1e3),
        Unit::BitsPerSecond => scaled(value, &["bit/s", "kbit/s", "Mbit/s", "Gbit/s"], 1e3),
        Unit::BytesPerSecond => scaled(value, &["B/s", "kB/s", "MB/s", "GB/s"], 1e3),
    }
}

/// At least three significant digits, never fewer than zero decimals:
/// 3.21, 42.1, 402, 1234.
fn three_digits(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude < 10.0 {
        format!("{value:.2}")
    } else if magnitude < 100.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.0}")
    }
}

fn scaled(value: f64, prefixes: &[&str], step: f64) -> String {
    if value == 0.0 {
        return format!("0 {}", prefixes[0]);
    }
    let mut scaled = value;
    let mut index = 0;
    while scaled.abs() >= step && index + 1 < prefixes.len() {
        scaled /= step;
        index += 1;
    }
    if index == 0 {
        format!("{scaled:.0} {}", prefixes[0])
    } else {
        format!("{} {}", three_digits(scaled), prefixes[index])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_with_a_fitting_prefix() {
        assert_eq!(format_value(Unit::Seconds, 0.0032149), "3.21 ms");
        assert_eq!(format_value(Unit::Seconds, 0.4029), "403 ms");
        assert_eq!(format_value(Unit::Seconds, 0.0000123), "12.3 µs");
        assert_eq!(format_value(Unit::Seconds, 3.456), "3.46 s");
        assert_eq!(format_value(Unit::Seconds, 0.0), "0 s");
        assert_eq!(format_value(Unit::Bytes, 0.0), "0 B");
        assert_eq!(format_value(Unit::Bytes, 2_200_000.0), "2.20 MB");
        assert_eq!(format_value(Unit::Bytes, 126_000_000.0), "126 MB");
        assert_eq!(format_value(Unit::Bytes, 512.0), "512 B");
        assert_eq!(format_value(Unit::Bytes, -1_500_000.0), "-1.50 MB");
        assert_eq!(format_value(Unit::BitsPerSecond, 12.5e9), "12.5 Gbit/s");
        assert_eq!(format_value(Unit::BytesPerSecond, 850e6), "850 MB/s");
        assert_eq!(format_value(Unit::Seconds, f64::NAN), "n/a");
    }

    #[test]
    fn throughput_is_the_only_higher_is_better_kind() {
        assert!(Unit::BitsPerSecond.higher_is_better());
        assert!(Unit::BytesPerSecond.higher_is_better());
        assert!(!Unit::Seconds.higher_is_better());
        assert!(!Unit::Bytes.higher_is_better());
    }
}
