//! Signal names and numbers as Docker parses them (`--stop-signal`, `kill -s`):
//! moby `pkg/signal` on Linux.

/// First and last real-time signal numbers as glibc exposes them to programs.
const SIGRTMIN: i32 = 34;
const SIGRTMAX: i32 = 64;

const NAMED: &[(&str, i32)] = &[
    ("ABRT", 6),
    ("ALRM", 14),
    ("BUS", 7),
    ("CHLD", 17),
    ("CLD", 17),
    ("CONT", 18),
    ("FPE", 8),
    ("HUP", 1),
    ("ILL", 4),
    ("INT", 2),
    ("IO", 29),
    ("IOT", 6),
    ("KILL", 9),
    ("PIPE", 13),
    ("POLL", 29),
    ("PROF", 27),
    ("PWR", 30),
    ("QUIT", 3),
    ("SEGV", 11),
    ("STKFLT", 16),
    ("STOP", 19),
    ("SYS", 31),
    ("TERM", 15),
    ("TRAP", 5),
    ("TSTP", 20),
    ("TTIN", 21),
    ("TTOU", 22),
    ("URG", 23),
    ("USR1", 10),
    ("USR2", 12),
    ("VTALRM", 26),
    ("WINCH", 28),
    ("XCPU", 24),
    ("XFSZ", 25),
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid signal: {0}")]
pub struct InvalidSignal(pub String);

/// Parses `SIGTERM`, `term`, `RTMIN+3` or a number. Numbers other than 0 are taken
/// as they are, as Docker does.
pub fn parse_signal(text: &str) -> Result<i32, InvalidSignal> {
    let invalid = || InvalidSignal(text.to_owned());
    if let Ok(number) = text.parse::<i32>() {
        return if number == 0 {
            Err(invalid())
        } else {
            Ok(number)
        };
    }
    let upper = text.to_ascii_uppercase();
    let name = upper.strip_prefix("SIG").unwrap_or(&upper);
    if let Some((_, number)) = NAMED.iter().find(|(known, _)| *known == name) {
        return Ok(*number);
    }
    realtime(name).ok_or_else(invalid)
}

/// `RTMIN`, `RTMIN+1`…`RTMIN+15`, `RTMAX-14`…`RTMAX-1`, `RTMAX`.
fn realtime(name: &str) -> Option<i32> {
    let offset = |text: &str| -> Option<i32> {
        let number: i32 = text.parse().ok()?;
        // Only the spellings Docker lists: one or two digits, no sign or zero padding.
        ((1..=15).contains(&number) && text == number.to_string()).then_some(number)
    };
    match name {
        "RTMIN" => Some(SIGRTMIN),
        "RTMAX" => Some(SIGRTMAX),
        _ => {
            if let Some(rest) = name.strip_prefix("RTMIN+") {
                offset(rest).map(|n| SIGRTMIN + n)
            } else if let Some(rest) = name.strip_prefix("RTMAX-") {
                offset(rest).filter(|n| *n <= 14).map(|n| SIGRTMAX - n)
            } else {
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_numbers_and_realtime_signals() {
        let cases: &[(&str, i32)] = &[
            ("SIGTERM", 15),
            ("term", 15),
            ("KILL", 9),
            ("SIGkill", 9),
            ("9", 9),
            ("65", 65),
            ("RTMIN", 34),
            ("SIGRTMIN+3", 37),
            ("RTMAX-14", 50),
            ("rtmax", 64),
            ("CLD", 17),
        ];
        for (text, number) in cases {
            assert_eq!(parse_signal(text), Ok(*number), "{text}");
        }
    }

    #[test]
    fn rejects_what_docker_rejects() {
        for text in ["0", "SIGFOO", "", "RTMIN+16", "RTMAX-15", "RTMIN+01", "SIG"] {
            assert_eq!(
                parse_signal(text).unwrap_err().to_string(),
                format!("Invalid signal: {text}")
            );
        }
    }
}
