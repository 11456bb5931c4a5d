//! One CSV record, as Go's `encoding/csv` reads it for `--mount` and `--network`:
//! comma-separated fields, a field may be wrapped in double quotes, and `""` inside
//! quotes is one quote.

/// Go's wording for malformed CSV (columns count from 1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CsvError {
    #[error("parse error on line 1, column {0}: bare \" in non-quoted field")]
    BareQuote(usize),
    #[error("parse error on line 1, column {0}: extraneous or missing \" in quoted-field")]
    Quote(usize),
}

pub fn read_record(text: &str) -> Result<Vec<String>, CsvError> {
    let characters: Vec<char> = text.chars().collect();
    let mut fields = Vec::new();
    let mut index = 0;
    loop {
        let mut field = String::new();
        if characters.get(index) == Some(&'"') {
            index += 1;
            loop {
                match characters.get(index) {
                    None => return Err(CsvError::Quote(index + 1)),
                    Some('"') if characters.get(index + 1) == Some(&'"') => {
                        field.push('"');
                        index += 2;
                    }
                    Some('"') => {
                        index += 1;
                        match characters.get(index) {
                            None | Some(',') => break,
                            Some(_) => return Err(CsvError::Quote(index + 1)),
                        }
                    }
                    Some(character) => {
                        field.push(*character);
                        index += 1;
                    }
                }
            }
        } else {
            while let Some(character) = characters.get(index) {
                match character {
                    ',' => break,
                    '"' => return Err(CsvError::BareQuote(index + 1)),
                    _ => field.push(*character),
                }
                index += 1;
            }
        }
        fields.push(field);
        if characters.get(index) == Some(&',') {
            index += 1;
        } else {
            return Ok(fields);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_quoted_and_plain_fields() {
        assert_eq!(read_record("a,b=c").unwrap(), ["a", "b=c"]);
        assert_eq!(
            read_record(r#"type=bind,"src=/a,b",dst=/x"#).unwrap(),
            ["type=bind", "src=/a,b", "dst=/x"]
        );
        assert_eq!(read_record(r#""say ""hi""""#).unwrap(), [r#"say "hi""#]);
        assert_eq!(read_record("").unwrap(), [""]);
        assert_eq!(read_record("a,").unwrap(), ["a", ""]);
    }

    #[test]
    fn rejects_stray_quotes_like_go() {
        assert_eq!(
            read_record(r#"a"b"#).unwrap_err().to_string(),
            "parse error on line 1, column 2: bare \" in non-quoted field"
        );
        assert_eq!(
            read_record(r#""ab"c"#).unwrap_err().to_string(),
            "parse error on line 1, column 5: extraneous or missing \" in quoted-field"
        );
    }
}
