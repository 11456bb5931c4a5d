//! The host's processes as /proc shows them, and their memory (RSS and PSS
//! from `smaps_rollup`).

use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProcessInfo {
    pub pid: u32,
    pub ppid: u32,
    /// `comm` from /proc/PID/stat (the kernel's 15-character name).
    pub comm: String,
    /// The executable, with a " (deleted)" suffix removed.
    pub exe: Option<PathBuf>,
    pub cmdline: Vec<String>,
    pub environ: Vec<String>,
}

impl ProcessInfo {
    /// The value of `--name VALUE` or `--name=VALUE` (also a short `-n VALUE`
    /// when `short` is given), first occurrence.
    pub fn flag(&self, long: &str, short: Option<&str>) -> Option<&str> {
        let mut arguments = self.cmdline.iter().skip(1);
        while let Some(argument) = arguments.next() {
            if argument == long || Some(argument.as_str()) == short {
                return arguments.next().map(String::as_str);
            }
            for name in std::iter::once(long).chain(short) {
                if let Some(value) = argument
                    .strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix('='))
                {
                    return Some(value);
                }
            }
        }
        None
    }

    /// Every value of a repeatable flag (`-H a -H b`, `--host=c`).
    pub fn flag_values(&self, long: &str, short: Option<&str>) -> Vec<&str> {
        let mut values = Vec::new();
        let mut arguments = self.cmdline.iter().skip(1);
        while let Some(argument) = arguments.next() {
            if argument == long || Some(argument.as_str()) == short {
                if let Some(value) = arguments.next() {
                    values.push(value.as_str());
                }
                continue;
            }
            for name in std::iter::once(long).chain(short) {
                if let Some(value) = argument
                    .strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix('='))
                {
                    values.push(value);
                }
            }
        }
        values
    }

    pub fn env(&self, name: &str) -> Option<&str> {
        self.environ.iter().find_map(|item| {
            item.strip_prefix(name)
                .and_then(|rest| rest.strip_prefix('='))
        })
    }
}

/// Every process that can be read now (kernel threads included; they have no
/// cmdline).
pub fn process_table() -> Vec<ProcessInfo> {
    let Ok(entries) = fs_err::read_dir("/proc") else {
        return Vec::new();
    };
    let mut table = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        let directory = entry.path();
        let Some((comm, ppid)) = fs_err::read_to_string(directory.join("stat"))
            .ok()
            .and_then(|text| parse_stat(&text))
        else {
            continue;
        };
        table.push(ProcessInfo {
            pid,
            ppid,
            comm,
            exe: fs_err::read_link(directory.join("exe"))
                .ok()
                .map(|path| strip_deleted(&path)),
            cmdline: nul_separated(&fs_err::read(directory.join("cmdline")).unwrap_or_default()),
            environ: nul_separated(&fs_err::read(directory.join("environ")).unwrap_or_default()),
        });
    }
    table.sort_by_key(|process| process.pid);
    table
}

fn strip_deleted(path: &Path) -> PathBuf {
    let text = path.to_string_lossy();
    match text.strip_suffix(" (deleted)") {
        Some(stripped) => PathBuf::from(stripped),
        None => path.to_owned(),
    }
}

fn nul_separated(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|byte| *byte == 0)
        .filter(|item| !item.is_empty())
        .map(|item| String::from_utf8_lossy(item).into_owned())
        .collect()
}

/// `comm` and the parent pid from /proc/PID/stat. The name is between the
/// first '(' and the last ')' (it may hold spaces and parentheses).
pub fn parse_stat(text: &str) -> Option<(String, u32)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_owned();
    let mut rest = text.get(close + 1..)?.split_whitespace();
    let _state = rest.next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some((comm, ppid))
}

/// Every descendant of `ancestor` in `table` (not `ancestor` itself).
pub fn descendants(table: &[ProcessInfo], ancestor: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut frontier = vec![ancestor];
    while let Some(parent) = frontier.pop() {
        for process in table.iter().filter(|process| process.ppid == parent) {
            if process.pid != ancestor && !found.contains(&process.pid) {
                found.push(process.pid);
                frontier.push(process.pid);
            }
        }
    }
    found.sort_unstable();
    found
}

/// Resident memory of a set of processes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    /// Sum of RSS (shared pages counted in every process that maps them).
    pub rss: u64,
    /// Sum of PSS (shared pages divided among the processes sharing them).
    pub pss: u64,
}

/// The summed memory of `pids`; a process that is gone counts 0.
pub fn usage(pids: &[u32]) -> Usage {
    pids.iter()
        .filter_map(|pid| fs_err::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok())
        .map(|text| parse_smaps_rollup(&text))
        .fold(Usage::default(), |total, one| Usage {
            rss: total.rss + one.rss,
            pss: total.pss + one.pss,
        })
}

pub fn parse_smaps_rollup(text: &str) -> Usage {
    let mut usage = Usage::default();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let (Some(key), Some(value)) = (fields.next(), fields.next()) else {
            continue;
        };
        let Ok(kilobytes) = value.parse::<u64>() else {
            continue;
        };
        match key {
            "Rss:" => usage.rss = kilobytes * 1024,
            "Pss:" => usage.pss = kilobytes * 1024,
            _ => {}
        }
    }
    usage
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_names_may_hold_spaces_and_parentheses() {
        let text = "1234 (my (odd) name) S 77 1234 1234 0 -1 4194560 0 0";
        assert_eq!(parse_stat(text), Some(("my (odd) name".to_owned(), 77)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn smaps_rollup_gives_rss_and_pss_in_bytes() {
        let text = "55d0c0000000-7ffd00000000 ---p 00000000 00:00 0 [rollup]\n\
                    Rss:                2240 kB\n\
                    Pss:                1812 kB\n\
                    Pss_Anon:            870 kB\n\
                    Shared_Clean:        640 kB\n";
        assert_eq!(
            parse_smaps_rollup(text),
            Usage {
                rss: 2240 * 1024,
                pss: 1812 * 1024
            }
        );
    }

    #[test]
    fn flags_are_found_in_every_spelling() {
        let process = ProcessInfo {
            cmdline: [
                "dockerd",
                "-H",
                "unix:///a.sock",
                "--host=tcp://x",
                "--root",
                "/r",
            ]
            .map(String::from)
            .to_vec(),
            environ: vec!["BERTH_ROOT=/tmp/root".to_owned()],
            ..ProcessInfo::default()
        };
        assert_eq!(
            process.flag_values("--host", Some("-H")),
            vec!["unix:///a.sock", "tcp://x"]
        );
        assert_eq!(process.flag("--root", None), Some("/r"));
        assert_eq!(process.flag("--data-root", None), None);
        assert_eq!(process.env("BERTH_ROOT"), Some("/tmp/root"));
        assert_eq!(process.env("BERTH"), None);
    }

    #[test]
    fn descendants_follow_the_parent_links() {
        let table: Vec<ProcessInfo> = [(1, 0), (10, 1), (11, 10), (12, 11), (20, 1)]
            .map(|(pid, ppid)| ProcessInfo {
                pid,
                ppid,
                ..ProcessInfo::default()
            })
            .to_vec();
        assert_eq!(descendants(&table, 10), vec![11, 12]);
        assert_eq!(descendants(&table, 20), Vec::<u32>::new());
    }

    #[test]
    fn this_process_is_in_the_table_with_its_memory() {
        let own = std::process::id();
        let table = process_table();
        let me = table.iter().find(|process| process.pid == own).unwrap();
        assert!(me.exe.is_some());
        assert!(usage(&[own]).rss > 0);
        assert_eq!(
            strip_deleted(Path::new("/x/berth (deleted)")),
            PathBuf::from("/x/berth")
        );
    }
}
