//! Whole lines out of a file another process may be appending to: forwards
//! from an offset, and the start of the last N lines, found backwards.
//!
//! Only bytes up to a newline count as a line: the writer may be half way
//! through a record, and that record is read once its newline is there.

use std::io;

use fs_err::os::unix::fs::FileExt;

use super::output::Flow;

/// How much is read at a time going forwards.
const FORWARD_CHUNK: usize = 64 * 1024;

/// How much is read at a time going backwards for `--tail`.
pub(crate) const TAIL_BLOCK: usize = 16 * 1024;

/// Hands each whole line from `offset` to `limit` (or the end of the file)
/// to `each`, without its newline. Returns the offset just past the last
/// line handed out, where reading resumes, and whether `each` stopped.
pub(crate) fn read_lines(
    file: &fs_err::File,
    offset: u64,
    limit: Option<u64>,
    buffer: &mut Vec<u8>,
    mut each: impl FnMut(&[u8]) -> Flow,
) -> io::Result<(u64, Flow)> {
    buffer.clear();
    // `buffer` holds the bytes from `consumed` to `position`.
    let mut consumed = offset;
    let mut position = offset;
    loop {
        let wanted = match limit {
            Some(limit) => FORWARD_CHUNK
                .min(usize::try_from(limit.saturating_sub(position)).unwrap_or(usize::MAX)),
            None => FORWARD_CHUNK,
        };
        if wanted == 0 {
            break;
        }
        let filled = buffer.len();
        buffer.resize(filled + wanted, 0);
        let read = file.read_at(&mut buffer[filled..], position);
        buffer.truncate(filled + *read.as_ref().unwrap_or(&0));
        let read = match read {
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if read == 0 {
            break;
        }
        position += read as u64;
        let mut start = 0;
        // Only the new bytes can hold the next newline.
        let mut search_from = filled;
        while let Some(found) = buffer[search_from..].iter().position(|&byte| byte == b'\n') {
            let end = search_from + found;
            let flow = each(&buffer[start..end]);
            start = end + 1;
            search_from = start;
            if flow == Flow::Stop {
                return Ok((consumed + start as u64, Flow::Stop));
            }
        }
        buffer.drain(..start);
        consumed += start as u64;
    }
    Ok((consumed, Flow::Continue))
}

/// For `--tail lines` on a file of `size` bytes: the offset where the last
/// `lines` whole lines start and the offset just past the last newline. It
/// reads backwards from the end in blocks of `block` bytes, so the cost is
/// that of the lines asked for, not of the file.
pub(crate) fn tail_range(
    file: &fs_err::File,
    size: u64,
    lines: usize,
    block: usize,
) -> io::Result<(u64, u64)> {
    let mut buffer = vec![0; block];
    let mut end = None;
    let mut counted = 0;
    let mut position = size;
    while position > 0 {
        let length = block.min(usize::try_from(position).unwrap_or(usize::MAX));
        let from = position - length as u64;
        file.read_exact_at(&mut buffer[..length], from)?;
        let mut rest = &buffer[..length];
        while let Some(index) = rest.iter().rposition(|&byte| byte == b'\n') {
            let after = from + index as u64 + 1;
            match end {
                // The last newline ends the last line; a tail after it is
                // a record still being written.
                None => {
                    end = Some(after);
                    if lines == 0 {
                        return Ok((after, after));
                    }
                }
                Some(end) => {
                    counted += 1;
                    if counted == lines {
                        return Ok((after, end));
                    }
                }
            }
            rest = &rest[..index];
        }
        position = from;
    }
    let end = end.unwrap_or(0);
    Ok((if lines == 0 { end } else { 0 }, end))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn file_with(content: &[u8]) -> (tempfile::TempDir, fs_err::File) {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("log");
        fs_err::write(&path, content).unwrap();
        let file = fs_err::File::open(&path).unwrap();
        (directory, file)
    }

    fn lines_of(file: &fs_err::File, offset: u64, limit: Option<u64>) -> (Vec<String>, u64) {
        let mut seen = Vec::new();
        let (next, _) = read_lines(file, offset, limit, &mut Vec::new(), |line| {
            seen.push(String::from_utf8(line.to_vec()).unwrap());
            Flow::Continue
        })
        .unwrap();
        (seen, next)
    }

    #[test]
    fn reads_whole_lines_and_stops_before_an_unfinished_one() {
        let (_directory, file) = file_with(b"one\ntwo\n\nthr");
        assert_eq!(
            lines_of(&file, 0, None),
            (vec!["one".into(), "two".into(), String::new()], 9)
        );
        assert_eq!(
            lines_of(&file, 4, None),
            (vec!["two".into(), String::new()], 9)
        );
        assert_eq!(lines_of(&file, 0, Some(5)), (vec!["one".into()], 4));
    }

    #[test]
    fn an_unfinished_line_is_read_once_it_is_complete() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("log");
        let mut writer = fs_err::File::create(&path).unwrap();
        let reader = fs_err::File::open(&path).unwrap();
        writer.write_all(b"whole\nhal").unwrap();
        let (seen, offset) = lines_of(&reader, 0, None);
        assert_eq!((seen, offset), (vec!["whole".to_owned()], 6));
        writer.write_all(b"f\n").unwrap();
        assert_eq!(
            lines_of(&reader, offset, None),
            (vec!["half".to_owned()], 11)
        );
    }

    #[test]
    fn lines_longer_than_a_chunk_are_whole() {
        let long = "x".repeat(FORWARD_CHUNK * 2 + 17);
        let (_directory, file) = file_with(format!("{long}\nshort\n").as_bytes());
        let (seen, _) = lines_of(&file, 0, None);
        assert_eq!(seen, [long, "short".to_owned()]);
    }

    #[test]
    fn stop_reports_where_to_resume() {
        let (_directory, file) = file_with(b"a\nb\nc\n");
        let (next, flow) = read_lines(&file, 0, None, &mut Vec::new(), |line| {
            if line == b"b" {
                Flow::Stop
            } else {
                Flow::Continue
            }
        })
        .unwrap();
        assert_eq!((next, flow), (4, Flow::Stop));
    }

    /// The same answer as splitting the whole file, for every block size.
    #[test]
    fn tail_range_matches_a_naive_tail() {
        let contents: [&[u8]; 6] = [
            b"",
            b"\n",
            b"a\nbb\n\nccc\n",
            b"a\nbb\ncut",
            b"no newline",
            b"\n\n\nx\n",
        ];
        for content in contents {
            let (_directory, file) = file_with(content);
            let size = content.len() as u64;
            let end = content
                .iter()
                .rposition(|&byte| byte == b'\n')
                .map_or(0, |index| index + 1);
            let starts: Vec<usize> = std::iter::once(0)
                .chain(
                    (0..end)
                        .filter(|&index| content[index] == b'\n')
                        .map(|index| index + 1),
                )
                .filter(|&start| start < end)
                .collect();
            for lines in 0..6 {
                let expected_start = if lines == 0 {
                    end
                } else {
                    starts[starts.len().saturating_sub(lines)..]
                        .first()
                        .copied()
                        .unwrap_or(0)
                };
                for block in [1, 2, 3, 7, 1024] {
                    assert_eq!(
                        tail_range(&file, size, lines, block).unwrap(),
                        (expected_start as u64, end as u64),
                        "{content:?} lines={lines} block={block}"
                    );
                }
            }
        }
    }
}
