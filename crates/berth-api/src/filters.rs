//! Docker's `filters` query parameter: a JSON object of key → list of
//! values (`{"status":["running"]}`), or, from older clients, key → map of
//! value → true (`{"status":{"running":true}}`).

use serde_json::Value;

use crate::error::ApiError;

/// (key, value) pairs, in order.
pub fn parse(text: &str) -> Result<Vec<(String, String)>, ApiError> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let invalid = || ApiError::bad_request(format!("invalid filter: {text:?}"));
    let value: Value = serde_json::from_str(text).map_err(|_| invalid())?;
    let object = value.as_object().ok_or_else(invalid)?;
    let mut pairs = Vec::new();
    for (key, values) in object {
        match values {
            Value::Array(list) => {
                for value in list {
                    pairs.push((key.clone(), value.as_str().ok_or_else(invalid)?.to_owned()));
                }
            }
            Value::Object(map) => {
                for (value, enabled) in map {
                    if enabled.as_bool().ok_or_else(invalid)? {
                        pairs.push((key.clone(), value.clone()));
                    }
                }
            }
            _ => return Err(invalid()),
        }
    }
    Ok(pairs)
}

/// Refuses keys not in `accepted`, with Docker's words.
pub fn check(pairs: &[(String, String)], accepted: &[&str]) -> Result<(), ApiError> {
    match pairs
        .iter()
        .find(|(key, _)| !accepted.contains(&key.as_str()))
    {
        // Docker 20.10's words.
        Some((key, _)) => Err(ApiError::bad_request(format!("Invalid filter '{key}'"))),
        None => Ok(()),
    }
}

pub use berth_types::glob::glob_match;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn both_shapes() {
        assert_eq!(
            parse(r#"{"status":["running","exited"],"name":{"web":true,"db":false}}"#).unwrap(),
            vec![
                ("status".to_owned(), "running".to_owned()),
                ("status".to_owned(), "exited".to_owned()),
                ("name".to_owned(), "web".to_owned()),
            ]
        );
        assert!(parse("").unwrap().is_empty());
        for bad in [
            "[",
            "[]",
            r#"{"a":1}"#,
            r#"{"a":[1]}"#,
            r#"{"a":{"b":"x"}}"#,
        ] {
            assert_eq!(parse(bad).unwrap_err().status, 400, "{bad}");
        }
        assert!(check(&parse(r#"{"bogus":["x"]}"#).unwrap(), &["status"]).is_err());
    }
}
