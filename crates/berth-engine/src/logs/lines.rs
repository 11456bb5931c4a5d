//! Whole records out of a file another process may be appending to: forwards
//! from an offset, and the start of the last N records, found backwards.
//!
//! Only complete records count: the writer may be half way through one, and
//! that record is read once it is whole. A json-file record ends with its
//! newline; a local one is framed by its length before and after
//! (`local.rs`).

use std::io;

use fs_err::os::unix::fs::FileExt;

use super::files::LogFormat;
use super::local::{self, LENGTH_BYTES, MAX_RECORD};
use super::output::Flow;

/// How much is read at a time going forwards.
const FORWARD_CHUNK: usize = 64 * 1024;

/// How much is read at a time going backwards for `--tail`.
pub(crate) const TAIL_BLOCK: usize = 16 * 1024;

/// Hands each whole record from `offset` to `limit` (or the end of the file)
/// to `each`: a json-file line without its newline, a local record's payload.
/// Returns the offset just past the last record handed out, where reading
/// resumes, and whether `each` stopped. A corrupt local frame ends the
/// reading there.
pub(crate) fn read_records(
    file: &fs_err::File,
    format: LogFormat,
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
        match format {
            LogFormat::JsonLines => {
                // Only the new bytes can hold the next newline.
                let mut search_from = filled;
                while let Some(found) = buffer[search_from..].iter().position(|&byte| byte == b'\n')
                {
                    let end = search_from + found;
                    let flow = each(&buffer[start..end]);
                    start = end + 1;
                    search_from = start;
                    if flow == Flow::Stop {
                        return Ok((consumed + start as u64, Flow::Stop));
                    }
                }
            }
            LogFormat::Local => loop {
                match local::next_frame(&buffer[start..]) {
                    Ok(Some((payload, used))) => {
                        let flow = each(payload);
                        start += used;
                        if flow == Flow::Stop {
                            return Ok((consumed + start as u64, Flow::Stop));
                        }
                    }
                    Ok(None) => break,
                    Err(_) => {
                        tracing::debug!(
                            offset = consumed + start as u64,
                            "corrupt local log record, reading stops"
                        );
                        return Ok((consumed + start as u64, Flow::Continue));
                    }
                }
            },
        }
        buffer.drain(..start);
        consumed += start as u64;
    }
    Ok((consumed, Flow::Continue))
}

/// Where the last records of a file of `size` bytes are, for `--tail`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TailRange {
    /// Where the first of them starts.
    pub start: u64,
    /// Just past the last whole record.
    pub end: u64,
    /// How many there are: the number asked for, or all the file has.
    pub found: usize,
}

/// The range of the last `records` whole records of a file of `size` bytes.
pub(crate) fn tail_range(
    file: &fs_err::File,
    format: LogFormat,
    size: u64,
    records: usize,
) -> io::Result<TailRange> {
    match format {
        LogFormat::JsonLines => tail_lines(file, size, records, TAIL_BLOCK),
        LogFormat::Local => tail_frames(file, size, records),
    }
}

/// json-file: reads backwards from the end in blocks of `block` bytes, so the
/// cost is that of the lines asked for, not of the file.
fn tail_lines(file: &fs_err::File, size: u64, lines: usize, block: usize) -> io::Result<TailRange> {
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
                        return Ok(TailRange {
                            start: after,
                            end: after,
                            found: 0,
                        });
                    }
                }
                Some(end) => {
                    counted += 1;
                    if counted == lines {
                        return Ok(TailRange {
                            start: after,
                            end,
                            found: lines,
                        });
                    }
                }
            }
            rest = &rest[..index];
        }
        position = from;
    }
    let end = end.unwrap_or(0);
    Ok(TailRange {
        start: if lines == 0 { end } else { 0 },
        end,
        // The first line has no newline before it.
        found: if end > 0 && lines > 0 { counted + 1 } else { 0 },
    })
}

/// local: each record ends with its length, so the file is walked backwards a
/// record at a time. An end that is not a record's (the writer is half way
/// through one) or a frame that does not check out is found by reading the
/// file forwards instead.
fn tail_frames(file: &fs_err::File, size: u64, records: usize) -> io::Result<TailRange> {
    let frame_before = |end: u64| -> io::Result<Option<u64>> {
        if end < 2 * LENGTH_BYTES as u64 {
            return Ok(None);
        }
        let mut length = [0; LENGTH_BYTES];
        file.read_exact_at(&mut length, end - LENGTH_BYTES as u64)?;
        let payload = u32::from_be_bytes(length) as u64;
        if payload > MAX_RECORD as u64 || payload + 2 * LENGTH_BYTES as u64 > end {
            return Ok(None);
        }
        let start = end - payload - 2 * LENGTH_BYTES as u64;
        let mut leading = [0; LENGTH_BYTES];
        file.read_exact_at(&mut leading, start)?;
        Ok((leading == length).then_some(start))
    };
    // The end must be a record's end before anything is counted from it.
    if size > 0 && frame_before(size)?.is_none() {
        return tail_frames_forwards(file, size, records);
    }
    let mut position = size;
    let mut found = 0;
    while found < records && position > 0 {
        match frame_before(position)? {
            Some(start) => {
                position = start;
                found += 1;
            }
            None => return tail_frames_forwards(file, size, records),
        }
    }
    Ok(TailRange {
        start: position,
        end: size,
        found,
    })
}

fn tail_frames_forwards(file: &fs_err::File, size: u64, records: usize) -> io::Result<TailRange> {
    let mut starts = Vec::new();
    let mut offset = 0;
    let (end, _) = read_records(
        file,
        LogFormat::Local,
        0,
        Some(size),
        &mut Vec::new(),
        |payload| {
            starts.push(offset);
            offset += (payload.len() + 2 * LENGTH_BYTES) as u64;
            Flow::Continue
        },
    )?;
    let found = records.min(starts.len());
    let start = if found == 0 {
        end
    } else {
        starts[starts.len() - found]
    };
    Ok(TailRange { start, end, found })
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
        let (next, _) = read_records(
            file,
            LogFormat::JsonLines,
            offset,
            limit,
            &mut Vec::new(),
            |line| {
                seen.push(String::from_utf8(line.to_vec()).unwrap());
                Flow::Continue
            },
        )
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
        let (next, flow) = read_records(
            &file,
            LogFormat::JsonLines,
            0,
            None,
            &mut Vec::new(),
            |line| {
                if line == b"b" {
                    Flow::Stop
                } else {
                    Flow::Continue
                }
            },
        )
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
                let expected_found = if lines == 0 {
                    0
                } else {
                    lines.min(starts.len())
                };
                for block in [1, 2, 3, 7, 1024] {
                    assert_eq!(
                        tail_lines(&file, size, lines, block).unwrap(),
                        TailRange {
                            start: expected_start as u64,
                            end: end as u64,
                            found: expected_found,
                        },
                        "{content:?} lines={lines} block={block}"
                    );
                }
            }
        }
    }

    fn local_file(records: &[&[u8]], tail: &[u8]) -> (tempfile::TempDir, fs_err::File, u64) {
        let mut content = Vec::new();
        for record in records {
            local::encode(
                &mut content,
                super::super::Stream::Stdout,
                record,
                chrono::DateTime::UNIX_EPOCH,
                None,
            );
        }
        content.extend_from_slice(tail);
        let size = content.len() as u64;
        let (directory, file) = file_with(&content);
        (directory, file, size)
    }

    fn local_lines(file: &fs_err::File, start: u64, end: u64) -> Vec<Vec<u8>> {
        let mut seen = Vec::new();
        read_records(
            file,
            LogFormat::Local,
            start,
            Some(end),
            &mut Vec::new(),
            |payload| {
                seen.push(local::decode(payload).unwrap().log.into_owned());
                Flow::Continue
            },
        )
        .unwrap();
        seen
    }

    #[test]
    fn local_records_are_read_forwards_and_backwards() {
        let (_directory, file, size) = local_file(&[b"a", b"bb", b"", b"ccc"], b"");
        assert_eq!(
            local_lines(&file, 0, size),
            [
                b"a\n".to_vec(),
                b"bb\n".to_vec(),
                b"\n".to_vec(),
                b"ccc\n".to_vec()
            ]
        );
        for records in 0..6 {
            let range = tail_range(&file, LogFormat::Local, size, records).unwrap();
            assert_eq!(range.found, records.min(4));
            assert_eq!(range.end, size);
            assert_eq!(
                local_lines(&file, range.start, range.end).len(),
                records.min(4)
            );
        }
    }

    #[test]
    fn a_local_record_being_written_is_left_for_later() {
        let mut half = Vec::new();
        local::encode(
            &mut half,
            super::super::Stream::Stdout,
            b"half",
            chrono::DateTime::UNIX_EPOCH,
            None,
        );
        half.truncate(half.len() - 3);
        let (_directory, file, size) = local_file(&[b"one", b"two"], &half);
        let none = tail_range(&file, LogFormat::Local, size, 0).unwrap();
        assert_eq!((none.start, none.found), (none.end, 0));
        assert!(none.end < size);
        let range = tail_range(&file, LogFormat::Local, size, 1).unwrap();
        assert_eq!(range.found, 1);
        assert!(range.end < size);
        assert_eq!(
            local_lines(&file, range.start, range.end),
            [b"two\n".to_vec()]
        );
        assert_eq!(local_lines(&file, 0, size).len(), 2);
    }
}
