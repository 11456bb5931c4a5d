//! What a monitor does to stay small while it waits: it gives back the pages
//! of the binary's code it has stopped running (docs/BENCH.md, "Per-container
//! monitor memory").

/// Unmaps from this process the pages of read-only file mappings (code and
/// constants of berth and its libraries). They stay in the page cache and
/// fault back in when used; a monitor idling in its copy loop touches few of
/// them, which keeps its RSS small. Mappings holding any private (written)
/// page are left alone — the relocated RELRO segment is read-only yet
/// written by the loader, and MADV_DONTNEED would reset it to the file's
/// bytes.
pub fn release_read_only_pages() {
    ReadOnlyPages::find().release();
}

/// The read-only file mappings [`release_read_only_pages`] empties, found
/// once (reading smaps costs about a millisecond) so that work which
/// recurs — a health probe every second — can give its code pages back each
/// time for a few `madvise` calls.
pub(crate) struct ReadOnlyPages {
    ranges: Vec<(usize, usize)>,
}

impl ReadOnlyPages {
    pub(crate) fn find() -> Self {
        let mut ranges = Vec::new();
        let Ok(smaps) = fs_err::read_to_string("/proc/self/smaps") else {
            return Self { ranges };
        };
        let mut candidate: Option<(usize, usize)> = None;
        for line in smaps.lines() {
            let mut fields = line.split_whitespace();
            let first = fields.next().unwrap_or_default();
            if let Some((start, end)) = first
                .split_once('-')
                .filter(|_| line.len() > 20 && first.contains('-'))
            {
                // A new mapping header: "start-end perms offset dev inode path".
                let permissions = fields.next().unwrap_or_default();
                let path = fields.nth(3).unwrap_or_default();
                candidate = match (
                    usize::from_str_radix(start, 16),
                    usize::from_str_radix(end, 16),
                ) {
                    (Ok(start), Ok(end))
                        if path.starts_with('/') && matches!(permissions, "r-xp" | "r--p") =>
                    {
                        Some((start, end))
                    }
                    _ => None,
                };
            } else if first == "Anonymous:" {
                let private_pages = fields
                    .next()
                    .and_then(|kib| kib.parse::<u64>().ok())
                    .unwrap_or(1);
                if private_pages == 0 {
                    ranges.extend(candidate.take());
                } else {
                    candidate = None;
                }
            }
        }
        Self { ranges }
    }

    /// Drops the pages of the mappings found. Read-only mappings never gain
    /// private pages, so the list stays right for the process's life (berth
    /// loads nothing at run time).
    pub(crate) fn release(&self) {
        for (start, end) in &self.ranges {
            // SAFETY: the range is a whole read-only, private, file-backed
            // mapping of this process with no private pages; dropping its
            // pages only makes later accesses re-read the same file.
            unsafe {
                libc::madvise(
                    *start as *mut libc::c_void,
                    end - start,
                    libc::MADV_DONTNEED,
                )
            };
        }
    }
}
