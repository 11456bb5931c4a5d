//! `--since`/`--until` values, read as the Docker CLI reads them
//! (`GetTimestamp` in moby's client) and as dockerd then interprets them.

use chrono::{DateTime, Offset, TimeZone, Utc};

use super::go_time::{
    parse, parse_duration, DATE_LOCAL, DATE_ZONE, HOUR_LOCAL, HOUR_ZONE, MINUTE_LOCAL, MINUTE_ZONE,
    NANO_LOCAL, RFC3339, RFC3339_NANO, SECOND_LOCAL,
};
use super::{LogError, TimeParseError};

/// Reads a `--since`/`--until` value the way `docker logs` does:
///
/// - a Go duration (`10m`, `1h30m`, `1.5h`, `-5m`, `300ms`) is `now` minus
///   it, truncated to the second as the CLI sends it;
/// - an RFC 3339 date or time, with or without seconds, fraction or zone
///   (`2024-01-02`, `2024-01-02T03:04`, `2024-01-02T03:04:05.5+01:00`); one
///   without a zone is in `now`'s offset (the CLI's local time zone);
/// - Unix seconds with an optional fraction (`1700000000.5`).
///
/// Bad input gets Docker's message (the CLI prints it after
/// `invalid value for "since": `). An empty value is an error here; the CLI
/// treats it as not given.
pub fn parse_docker_time<Tz: TimeZone>(
    value: &str,
    now: &DateTime<Tz>,
) -> Result<DateTime<Utc>, LogError> {
    let not_understood = || TimeParseError::NotTimeOrDuration {
        value: value.to_owned(),
    };
    if value != "0" {
        if let Some(nanos) = parse_duration(value) {
            let then = now
                .to_utc()
                .checked_sub_signed(chrono::Duration::nanoseconds(nanos));
            return then
                .and_then(|then| DateTime::from_timestamp(then.timestamp(), 0))
                .ok_or_else(|| not_understood().into());
        }
    }
    match parse(layout_for(value), value, now.offset().fix()) {
        Ok(time) => Ok(time),
        // A dash means a date was meant: Go's complaint is the useful one.
        Err(error) if value.contains('-') => Err(error.into()),
        Err(_) => unix_time(value).ok_or_else(|| not_understood().into()),
    }
}

/// The layout the CLI picks from the characters present.
fn layout_for(value: &str) -> &'static str {
    let local = !value.contains(['z', 'Z', '+']) && value.matches('-').count() != 3;
    if value.contains('.') {
        return if local { NANO_LOCAL } else { RFC3339_NANO };
    }
    if !value.contains('T') {
        return if local { DATE_LOCAL } else { DATE_ZONE };
    }
    let mut colons = value.matches(':').count();
    // A `±hh:mm` zone brings one more colon.
    if !local && !value.contains(['z', 'Z']) && colons > 0 {
        colons -= 1;
    }
    match (local, colons) {
        (true, 0) => HOUR_LOCAL,
        (true, 1) => MINUTE_LOCAL,
        (true, _) => SECOND_LOCAL,
        (false, 0) => HOUR_ZONE,
        (false, 1) => MINUTE_ZONE,
        (false, _) => RFC3339,
    }
}

/// `SECONDS[.FRACTION]`, as dockerd's `ParseTimestamps` reads what the CLI
/// passes through: the fraction is scaled to nanoseconds through a float.
fn unix_time(value: &str) -> Option<DateTime<Utc>> {
    let (seconds, fraction) = match value.split_once('.') {
        Some((seconds, fraction)) => (seconds, Some(fraction)),
        None => (value, None),
    };
    let mut seconds: i64 = seconds.parse().ok()?;
    let mut nanos: i64 = 0;
    if let Some(fraction) = fraction {
        let digits: i64 = fraction.parse().ok()?;
        let exponent = 9 - i32::try_from(fraction.len()).ok()?;
        nanos = (digits as f64 * 10f64.powi(exponent)) as i64;
        seconds = seconds.checked_add(nanos.div_euclid(1_000_000_000))?;
        nanos = nanos.rem_euclid(1_000_000_000);
    }
    DateTime::from_timestamp(seconds, u32::try_from(nanos).ok()?)
}

#[cfg(test)]
mod tests {
    use chrono::FixedOffset;

    use super::*;

    /// The CLI's clock for these tests: local time is UTC+01:00.
    fn now() -> DateTime<FixedOffset> {
        DateTime::parse_from_rfc3339("2024-06-01T12:00:00.75+01:00").unwrap()
    }

    fn unix(value: &str) -> String {
        let time =
            parse_docker_time(value, &now()).unwrap_or_else(|error| panic!("{value}: {error}"));
        format!("{}.{:09}", time.timestamp(), time.timestamp_subsec_nanos())
    }

    fn error(value: &str) -> String {
        parse_docker_time(value, &now()).unwrap_err().to_string()
    }

    /// Each expectation is the `since` the Docker CLI (28.2, TZ=Etc/GMT-1)
    /// sent to dockerd for the same value.
    #[test]
    fn dates_and_times_as_the_docker_cli_reads_them() {
        let cases = [
            ("2024-01-02", "1704150000.000000000"),
            ("2024-01-02Z", "1704153600.000000000"),
            ("2024-01-02+05:30", "1704133800.000000000"),
            ("2024-01-02T03", "1704160800.000000000"),
            ("2024-01-02T03Z", "1704164400.000000000"),
            ("2024-01-02T03-02:00", "1704171600.000000000"),
            ("2024-01-02T03:04", "1704161040.000000000"),
            ("2024-01-02T03:04Z", "1704164640.000000000"),
            ("2024-01-02T03:04:05", "1704161045.000000000"),
            ("2024-01-02T03:04:05Z", "1704164645.000000000"),
            ("2024-01-02T03:04:05+01:00", "1704161045.000000000"),
            ("2024-01-02T03:04:05.123456789", "1704161045.123456789"),
            ("2024-01-02T03:04:05.123456789Z", "1704164645.123456789"),
            ("2024-01-02T03:04:05.1234567891234Z", "1704164645.123456789"),
            ("2024-01-02T03:04:05,5", "1704161045.500000000"),
            ("2024-01-02T3:04:05", "1704161045.000000000"),
            ("2024-01-02T03:04:05.5-00:30", "1704166445.500000000"),
            ("2024-02-29", "1709161200.000000000"),
        ];
        for (value, expected) in cases {
            assert_eq!(unix(value), expected, "{value}");
        }
    }

    /// The CLI passes these through and dockerd reads them as Unix time.
    #[test]
    fn unix_timestamps_with_fractions() {
        assert_eq!(unix("1700000000"), "1700000000.000000000");
        assert_eq!(unix("1700000000.5"), "1700000000.500000000");
        assert_eq!(unix("1700000000.123456789123"), "1700000000.123456789");
        assert_eq!(unix("0"), "0.000000000");
        assert_eq!(unix("2024"), "2024.000000000");
        assert_eq!(unix("+5.+5"), "5.050000000");
    }

    #[test]
    fn durations_count_back_from_now_to_the_second() {
        let now = now().timestamp();
        let cases = [
            ("10m", now - 600),
            ("1h30m", now - 5400),
            ("1.5h", now - 5400),
            ("0s", now),
            ("-5m", now + 300),
            ("300ms", now),
            ("1500ms", now - 1),
            ("2µs", now),
            ("1h1m1s1ms1us1ns", now - 3661),
        ];
        for (value, expected) in cases {
            assert_eq!(unix(value), format!("{expected}.000000000"), "{value}");
        }
    }

    /// The messages the Docker CLI printed (after `invalid value for
    /// "since": `) for the same values.
    #[test]
    fn bad_values_get_dockers_messages() {
        let cases = [
            (
                "2024-13-01",
                r#"parsing time "2024-13-01": month out of range"#,
            ),
            (
                "2024-00-01",
                r#"parsing time "2024-00-01": month out of range"#,
            ),
            (
                "2024-01-00",
                r#"parsing time "2024-01-00": day out of range"#,
            ),
            (
                "2024-01-32",
                r#"parsing time "2024-01-32": day out of range"#,
            ),
            (
                "2023-02-29",
                r#"parsing time "2023-02-29": day out of range"#,
            ),
            (
                "2024-02-30",
                r#"parsing time "2024-02-30": day out of range"#,
            ),
            (
                "2024-01-01T25:00:00",
                r#"parsing time "2024-01-01T25:00:00": hour out of range"#,
            ),
            (
                "2024-01-01T10:61",
                r#"parsing time "2024-01-01T10:61": minute out of range"#,
            ),
            (
                "2024-01-02T03:04:60",
                r#"parsing time "2024-01-02T03:04:60": second out of range"#,
            ),
            (
                "2024-01-02T03:04:05+25:00",
                r#"parsing time "2024-01-02T03:04:05+25:00": time zone offset hour out of range"#,
            ),
            (
                "2024-01-02T03:04:05+01:61",
                r#"parsing time "2024-01-02T03:04:05+01:61": time zone offset minute out of range"#,
            ),
            ("abc", r#"failed to parse value as time or duration: "abc""#),
            (
                "1h30",
                r#"failed to parse value as time or duration: "1h30""#,
            ),
            ("10x", r#"failed to parse value as time or duration: "10x""#),
            ("1e5", r#"failed to parse value as time or duration: "1e5""#),
            (
                "0x10",
                r#"failed to parse value as time or duration: "0x10""#,
            ),
            (
                "1.5.5",
                r#"failed to parse value as time or duration: "1.5.5""#,
            ),
            (
                "1700000000.x",
                r#"failed to parse value as time or duration: "1700000000.x""#,
            ),
            (
                "T10:00",
                r#"failed to parse value as time or duration: "T10:00""#,
            ),
            (
                "10:00",
                r#"failed to parse value as time or duration: "10:00""#,
            ),
            (
                "\"q\"",
                r#"failed to parse value as time or duration: "\"q\"""#,
            ),
            ("", r#"failed to parse value as time or duration: """#),
            (
                "2024-01-01Tfoo",
                r#"parsing time "2024-01-01Tfoo" as "2006-01-02T15": cannot parse "foo" as "15""#,
            ),
            (
                "2024-1-01",
                r#"parsing time "2024-1-01" as "2006-01-02": cannot parse "1-01" as "01""#,
            ),
            (
                "2024-01",
                r#"parsing time "2024-01" as "2006-01-02": cannot parse "" as "-""#,
            ),
            (
                "20244-01-01",
                r#"parsing time "20244-01-01" as "2006-01-02": cannot parse "4-01-01" as "-""#,
            ),
            (
                "-",
                r#"parsing time "-" as "2006-01-02": cannot parse "-" as "2006""#,
            ),
            (
                "1h-",
                r#"parsing time "1h-" as "2006-01-02": cannot parse "1h-" as "2006""#,
            ),
            (
                "-1700000000",
                r#"parsing time "-1700000000" as "2006-01-02": cannot parse "-1700000000" as "2006""#,
            ),
            (
                "é-x",
                r#"parsing time "\xc3\xa9-x" as "2006-01-02": cannot parse "\xc3\xa9-x" as "2006""#,
            ),
            (
                "2024-01-02T03:04:05z",
                r#"parsing time "2024-01-02T03:04:05z" as "2006-01-02T15:04:05Z07:00": cannot parse "z" as "Z07:00""#,
            ),
            (
                "2024-01-02T03:04:05+0100",
                r#"parsing time "2024-01-02T03:04:05+0100" as "2006-01-02T15:04Z07:00": cannot parse ":05+0100" as "Z07:00""#,
            ),
            (
                "2024-01-02T03:04:05.Z",
                r#"parsing time "2024-01-02T03:04:05.Z" as "2006-01-02T15:04:05.999999999Z07:00": cannot parse ".Z" as "Z07:00""#,
            ),
            (
                "2024-01-01T10:00:00.123abc",
                r#"parsing time "2024-01-01T10:00:00.123abc": extra text: "abc""#,
            ),
            (
                "2024-01-01T10:00:00+01:00:00",
                r#"parsing time "2024-01-01T10:00:00+01:00:00": extra text: ":00""#,
            ),
            (
                "2024-01-02T03:04:05*01:00",
                r#"parsing time "2024-01-02T03:04:05*01:00": extra text: "*01:00""#,
            ),
            (
                "2024-01-02 03:04:05",
                r#"parsing time "2024-01-02 03:04:05": extra text: " 03:04:05""#,
            ),
        ];
        for (value, expected) in cases {
            assert_eq!(error(value), expected, "{value}");
        }
    }

    #[test]
    fn go_durations_accept_and_reject_like_go() {
        let accepted = [
            ("0", 0),
            ("-0", 0),
            ("+1s", 1_000_000_000),
            (".5s", 500_000_000),
            ("1.s", 1_000_000_000),
            ("1μs", 1_000),
            ("1µs", 1_000),
            ("-2h", -7_200_000_000_000),
            ("2562047h47m16.854775807s", i64::MAX),
            ("-2562047h47m16.854775808s", i64::MIN),
        ];
        for (text, nanos) in accepted {
            assert_eq!(parse_duration(text), Some(nanos), "{text}");
        }
        for text in [
            "",
            "-",
            "s",
            ".s",
            "1",
            "1d",
            "1h-1m",
            "2562047h47m16.854775808s",
            "1.5.5h",
        ] {
            assert_eq!(parse_duration(text), None, "{text}");
        }
    }
}
