//! One record of either format, decoded.

use std::borrow::Cow;
use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Deserialize;

/// A decoded record. `stream` is kept as text: a record of a stream Docker
/// does not know is read but never printed, as dockerd does.
#[derive(Debug)]
pub(crate) struct Record<'a> {
    /// What `docker logs` prints, its newline included when it has one.
    pub log: Cow<'a, [u8]>,
    pub stream: Cow<'a, str>,
    pub time: DateTime<Utc>,
    /// Extra attributes dockerd adds for `--log-opt labels/env/tag`; sorted
    /// by key, which is the order `docker logs --details` prints them in.
    pub attrs: BTreeMap<String, String>,
}

/// A json-file line as it is stored.
#[derive(Debug, Deserialize)]
struct JsonRecord<'a> {
    #[serde(default, borrow)]
    log: Cow<'a, str>,
    #[serde(default, borrow)]
    stream: Cow<'a, str>,
    time: DateTime<Utc>,
    #[serde(default)]
    attrs: BTreeMap<String, String>,
}

impl<'a> Record<'a> {
    /// Decodes one json-file line (without its newline).
    pub fn parse(line: &'a [u8]) -> Result<Self, serde_json::Error> {
        let record: JsonRecord<'a> = serde_json::from_slice(line)?;
        Ok(Self {
            log: match record.log {
                Cow::Borrowed(text) => Cow::Borrowed(text.as_bytes()),
                Cow::Owned(text) => Cow::Owned(text.into_bytes()),
            },
            stream: record.stream,
            time: record.time,
            attrs: record.attrs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_escapes_back_to_the_bytes_written() {
        let record = Record::parse(
            br#"{"log":"\u003c\u003e\u0026 \ufffd \u2028\n","stream":"stderr","time":"2026-11-30T03:14:37.80586131Z"}"#,
        )
        .unwrap();
        assert_eq!(record.log.as_ref(), "<>& \u{fffd} \u{2028}\n".as_bytes());
        assert_eq!(record.stream, "stderr");
        assert_eq!(record.time.timestamp_subsec_nanos(), 805_861_310);
        assert!(record.attrs.is_empty());
    }

    #[test]
    fn reads_dockerd_attributes() {
        // dockerd 20.10 with --log-opt labels=ab,z --log-opt tag=mytag.
        let record = Record::parse(
            r#"{"log":"hi\n","stream":"stdout","attrs":{"ab":"x\u0026y é","tag":"mytag","z":"1"},"time":"2026-11-30T03:16:34.621530336Z"}"#.as_bytes(),
        )
        .unwrap();
        let keys: Vec<&str> = record.attrs.keys().map(String::as_str).collect();
        assert_eq!(keys, ["ab", "tag", "z"]);
        assert_eq!(record.attrs["ab"], "x&y é");
    }

    #[test]
    fn rejects_a_cut_line() {
        assert!(Record::parse(br#"{"log":"hi\n","stream":"std"#).is_err());
        assert!(Record::parse(b"").is_err());
    }
}
