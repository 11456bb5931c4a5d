//! `top` of a VM container: the guest's processes in the container's pid
//! namespace, in the columns of `ps -ef` (what Docker runs on the host for a
//! namespace container), read from the guest's `/proc`.

use std::path::Path;

use nix::unistd::Pid;

use crate::protocol::{GuestStats, ProcessTable};

/// `ps -ef`'s header.
const TITLES: [&str; 8] = ["UID", "PID", "PPID", "C", "STIME", "TTY", "TIME", "CMD"];

/// The processes whose pid namespace is `main`'s (the container's), by pid.
/// User names come from the container's own `/etc/passwd` under `root`.
pub(super) fn table(main: Pid, root: Option<&Path>) -> ProcessTable {
    let users = root
        .and_then(|root| fs_err::read_to_string(root.join("etc/passwd")).ok())
        .unwrap_or_default();
    let clock = Clock::read();
    let processes = container_pids(main)
        .into_iter()
        .filter_map(|pid| row(pid, &users, &clock))
        .collect();
    ProcessTable {
        titles: TITLES.iter().map(|title| (*title).to_owned()).collect(),
        processes,
    }
}

/// The pids in `main`'s pid namespace, in order; none without `main`.
fn container_pids(main: Pid) -> Vec<i32> {
    let namespace = |pid: &str| fs_err::read_link(format!("/proc/{pid}/ns/pid")).ok();
    let Some(container) = namespace(&main.as_raw().to_string()) else {
        return Vec::new();
    };
    let mut pids: Vec<i32> = fs_err::read_dir("/proc")
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    pids.sort_unstable();
    pids.retain(|pid| namespace(&pid.to_string()).as_ref() == Some(&container));
    pids
}

/// The guest's counters for `stats` (see [`GuestStats`]).
pub(super) fn stats(main: Pid) -> GuestStats {
    let meminfo = fs_err::read_to_string("/proc/meminfo").unwrap_or_default();
    let kib = |key: &str| {
        meminfo
            .lines()
            .find_map(|line| line.strip_prefix(key)?.strip_prefix(':'))
            .and_then(|value| value.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    };
    let clock = Clock::read();
    let busy_ticks = fs_err::read_to_string("/proc/stat")
        .ok()
        .and_then(|text| text.lines().next().map(busy_cpu_ticks))
        .unwrap_or(0);
    let tasks = container_pids(main)
        .into_iter()
        .filter_map(|pid| {
            fs_err::read_to_string(format!("/proc/{pid}/status"))
                .ok()?
                .lines()
                .find_map(|line| line.strip_prefix("Threads:")?.trim().parse::<u64>().ok())
        })
        .sum();
    let oom_kills = fs_err::read_to_string("/proc/vmstat")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("oom_kill ")?.trim().parse().ok())
        })
        .unwrap_or(0);
    GuestStats {
        memory_total: kib("MemTotal"),
        memory_used: kib("MemTotal").saturating_sub(kib("MemFree")),
        memory_inactive_file: kib("Inactive(file)"),
        cpu_ns: busy_ticks * (1_000_000_000 / clock.ticks_per_second.max(1)),
        tasks,
        oom_kills,
    }
}

/// `/proc/stat`'s `cpu` line: the ticks not spent idle or waiting (user,
/// nice, system, irq, softirq, steal; guest time is already in user).
fn busy_cpu_ticks(line: &str) -> u64 {
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|field| field.parse().unwrap_or(0))
        .collect();
    [0, 1, 2, 5, 6, 7]
        .iter()
        .filter_map(|&index| fields.get(index))
        .sum()
}

/// What turns `/proc/PID/stat`'s clock ticks into times.
struct Clock {
    ticks_per_second: u64,
    /// The guest's uptime, in ticks.
    now: u64,
    /// When the guest booted, seconds since the epoch (`/proc/stat` btime).
    boot_time: i64,
}

impl Clock {
    fn read() -> Clock {
        // SAFETY: sysconf takes a constant and returns a number.
        let ticks_per_second = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
            .ok()
            .filter(|&ticks| ticks > 0)
            .unwrap_or(100);
        let uptime: f64 = fs_err::read_to_string("/proc/uptime")
            .ok()
            .and_then(|text| text.split_whitespace().next()?.parse().ok())
            .unwrap_or(0.0);
        let boot_time = fs_err::read_to_string("/proc/stat")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find_map(|line| line.strip_prefix("btime ")?.trim().parse().ok())
            })
            .unwrap_or(0);
        Clock {
            ticks_per_second,
            now: (uptime * ticks_per_second as f64) as u64,
            boot_time,
        }
    }
}

/// One process's row, or `None` if it ended while being read.
fn row(pid: i32, users: &str, clock: &Clock) -> Option<Vec<String>> {
    let stat = fs_err::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields = StatFields::parse(&stat)?;
    let uid = fs_err::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|line| {
            line.strip_prefix("Uid:")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })?;
    let cmdline = fs_err::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let command = if cmdline.is_empty() {
        format!("[{}]", fields.comm)
    } else {
        String::from_utf8_lossy(&cmdline)
            .trim_end_matches('\0')
            .replace('\0', " ")
    };
    let cpu_ticks = fields.utime + fields.stime;
    let elapsed = clock.now.saturating_sub(fields.start);
    let percent = (cpu_ticks * 100).checked_div(elapsed).unwrap_or(0);
    let started = clock.boot_time + (fields.start / clock.ticks_per_second) as i64;
    Some(vec![
        user_name(users, uid),
        pid.to_string(),
        fields.ppid.to_string(),
        percent.to_string(),
        start_time(
            started,
            clock.boot_time + (clock.now / clock.ticks_per_second) as i64,
        ),
        terminal_name(fields.tty),
        cpu_time(cpu_ticks / clock.ticks_per_second),
        command,
    ])
}

/// The fields of `/proc/PID/stat` a row needs.
#[derive(Debug, PartialEq, Eq)]
struct StatFields {
    comm: String,
    ppid: i32,
    tty: u32,
    utime: u64,
    stime: u64,
    /// Ticks after boot.
    start: u64,
}

impl StatFields {
    /// `pid (comm) state ppid pgrp session tty_nr …`: the command name may
    /// hold spaces and parentheses, so it ends at the last `)`.
    fn parse(stat: &str) -> Option<StatFields> {
        let open = stat.find('(')?;
        let close = stat.rfind(')')?;
        let comm = stat.get(open + 1..close)?.to_owned();
        let rest: Vec<&str> = stat.get(close + 2..)?.split_whitespace().collect();
        // `rest[0]` is field 3 (state).
        let field = |number: usize| rest.get(number - 3).copied();
        Some(StatFields {
            comm,
            ppid: field(4)?.parse().ok()?,
            tty: field(7)?.parse().ok()?,
            utime: field(14)?.parse().ok()?,
            stime: field(15)?.parse().ok()?,
            start: field(22)?.parse().ok()?,
        })
    }
}

/// The name `/etc/passwd` gives `uid`, or the number.
fn user_name(passwd: &str, uid: u32) -> String {
    passwd
        .lines()
        .find_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            (fields.nth(1)?.parse::<u32>().ok()? == uid).then(|| name.to_owned())
        })
        .unwrap_or_else(|| uid.to_string())
}

/// `ps`'s STIME: the time of day for a process started today (UTC, the
/// guest's zone), else the month and day.
fn start_time(started: i64, now: i64) -> String {
    let day = |seconds: i64| seconds.div_euclid(86_400);
    if day(started) == day(now) {
        let seconds = started.rem_euclid(86_400);
        format!("{:02}:{:02}", seconds / 3600, seconds % 3600 / 60)
    } else {
        let (_, month, day_of_month) = civil_date(day(started));
        const MONTHS: [&str; 12] = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ];
        format!("{}{:02}", MONTHS[(month - 1) as usize], day_of_month)
    }
}

/// (year, month 1–12, day 1–31) of a day count since 1970-01-01 (Howard
/// Hinnant's civil-from-days).
fn civil_date(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `ps`'s TTY: `pts/N` for a pseudo-terminal, `?` for none.
fn terminal_name(tty: u32) -> String {
    let major = (tty >> 8) & 0xfff;
    let minor = (tty & 0xff) | ((tty >> 12) & 0xfff00);
    match (tty, major) {
        (0, _) => "?".to_owned(),
        (_, 136..=143) => format!("pts/{}", (major - 136) * 256 + minor),
        (_, 4) => format!("tty{minor}"),
        _ => "?".to_owned(),
    }
}

/// `ps`'s TIME: `[DD-]HH:MM:SS` of CPU time.
fn cpu_time(seconds: u64) -> String {
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    let clock = format!(
        "{:02}:{:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    );
    if days > 0 {
        format!("{days}-{clock}")
    } else {
        clock
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stat_with_awkward_command_names() {
        let stat = "42 (my (odd) prog) S 1 42 42 34816 42 4194560 100 0 0 0 7 3 0 0 20 0 1 0 \
                    1234 1000 100 18446744073709551615";
        assert_eq!(
            StatFields::parse(stat).unwrap(),
            StatFields {
                comm: "my (odd) prog".into(),
                ppid: 1,
                tty: 34816,
                utime: 7,
                stime: 3,
                start: 1234,
            }
        );
        assert_eq!(StatFields::parse("42 (cut"), None);
    }

    #[test]
    fn busy_cpu_time_leaves_out_idle_and_iowait() {
        // user nice system idle iowait irq softirq steal guest guest_nice
        assert_eq!(busy_cpu_ticks("cpu  10 1 5 1000 50 2 3 4 0 0"), 25);
        assert_eq!(busy_cpu_ticks("cpu"), 0);
    }

    #[test]
    fn formats_columns_as_ps_does() {
        assert_eq!(terminal_name(0), "?");
        assert_eq!(terminal_name(34816), "pts/0");
        assert_eq!(terminal_name(34817), "pts/1");
        assert_eq!(cpu_time(0), "00:00:00");
        assert_eq!(cpu_time(3_723), "01:02:03");
        assert_eq!(cpu_time(90_061), "1-01:01:01");
        // 2026-12-01 17:59 UTC and the day before.
        let now = 1_796_147_940;
        assert_eq!(start_time(now - 60, now), "17:58");
        assert_eq!(start_time(now - 86_400, now), "Nov30");
        assert_eq!(civil_date(0), (1970, 1, 1));
        let passwd = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534::/:/bin/false\n";
        assert_eq!(user_name(passwd, 0), "root");
        assert_eq!(user_name(passwd, 65534), "nobody");
        assert_eq!(user_name(passwd, 1000), "1000");
    }
}
