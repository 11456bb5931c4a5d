//! Flow control of a VM container's process streams: its processes share
//! one agent channel and one shim, and a reader that stops reading holds up
//! only its own process (it blocks on its pipe in the guest, as it would on
//! a namespace container's), never the container's other output, its other
//! execs, `top` or `stop`. Real VMs under TCG, found as in
//! `vm_isolation.rs`; without QEMU or virtiofsd the tests skip, saying so.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};

use support::containers::{wait_child, wait_until};
use support::vm::{vm_processes, VmBerth};

const VM: &[&str] = &["--isolation=vm", "--network", "none"];

/// Far more than the windows and pipes on the way hold (the guest's pipe,
/// the agent's window, the host pipe: ≈ 400 KiB): `seq 1 300000` writes
/// 2.0 MB.
const LINES: u32 = 300_000;

impl VmBerth {
    fn command_with(&self, args: &[&str]) -> Command {
        let mut command = self.command();
        command.args(args);
        command
    }

    /// `exec ID ARGS` with stdout piped to the test, which reads it only
    /// when it says so.
    fn exec_unread(&self, options: &[&str], id: &str, args: &[&str]) -> Child {
        let mut all = vec!["exec"];
        all.extend_from_slice(options);
        all.push(id);
        all.extend_from_slice(args);
        self.command_with(&all)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    fn ticks(&self, id: &str) -> usize {
        self.run(&["logs", id]).ok().matches("tick").count()
    }

    /// The run's own output goes on: five more lines (one per 0.2 s).
    #[track_caller]
    fn ticks_go_on(&self, id: &str, what: &str) {
        let before = self.ticks(id);
        wait_until(60.0, &format!("the run's output to go on {what}"), || {
            self.ticks(id) >= before + 5
        });
    }

    #[track_caller]
    fn top(&self, id: &str) -> String {
        self.run(&["top", id]).ok()
    }
}

/// Bytes waiting in a pipe.
fn unread(pipe: &impl AsRawFd) -> usize {
    let mut bytes: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int to the pointer, which is valid.
    let result = unsafe { libc::ioctl(pipe.as_raw_fd(), libc::FIONREAD, &mut bytes) };
    assert_eq!(result, 0, "{}", std::io::Error::last_os_error());
    bytes as usize
}

/// The pipe the test holds is full: the exec's output is backed up to the
/// guest.
#[track_caller]
fn wait_backed_up(exec: &Child) {
    let stdout = exec.stdout.as_ref().unwrap();
    wait_until(120.0, "the unread exec's pipe to fill", || {
        unread(stdout) >= 64 << 10
    });
}

#[test]
fn a_reader_that_stops_holds_up_only_its_own_process() {
    let Some(berth) = VmBerth::new() else { return };
    let mut args = vec!["run", "-d"];
    args.extend_from_slice(VM);
    args.extend_from_slice(&[
        "busybox",
        "sh",
        "-c",
        "trap 'echo stopped; exit 0' TERM; i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.2; done",
    ]);
    let id = berth.run(&args).ok().trim().to_owned();
    wait_until(120.0, "the run's first line", || berth.ticks(&id) > 0);

    // An exec writing fast to a reader that does not read, and one whose
    // process does not read the input it is sent.
    let lines = LINES.to_string();
    let mut fast = berth.exec_unread(&[], &id, &["seq", "1", &lines]);
    let mut deaf = berth.exec_unread(&["-i"], &id, &["sleep", "1000"]);
    let mut input = deaf.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        // Blocks once the guest's credit for it is spent; ends with EPIPE
        // when the container does.
        let chunk = vec![b'x'; 64 << 10];
        let mut sent = 0usize;
        while sent < 4 << 20 && input.write_all(&chunk).is_ok() {
            sent += chunk.len();
        }
        sent
    });
    wait_backed_up(&fast);
    wait_until(60.0, "both execs in top", || {
        let top = berth.top(&id);
        top.contains(&format!("seq 1 {LINES}")) && top.contains("sleep 1000")
    });

    // The rest of the container goes on meanwhile.
    berth.ticks_go_on(&id, "while an exec's reader has stopped");
    assert_eq!(berth.run(&["exec", &id, "echo", "second"]).ok(), "second\n");
    let top = berth.top(&id);
    assert!(
        top.contains(&format!("seq 1 {LINES}")),
        "still blocked: {top}"
    );
    assert!(!writer.is_finished(), "the input waits for the process");

    // Read again: the whole output, in order.
    let mut output = Vec::new();
    fast.stdout
        .take()
        .unwrap()
        .read_to_end(&mut output)
        .unwrap();
    let expected: String = (1..=LINES).map(|line| format!("{line}\n")).collect();
    assert_eq!(output.len(), expected.len());
    assert!(output == expected.as_bytes(), "the exec's output differs");
    assert_eq!(wait_child(&mut fast, 60.0, "the fast exec").code(), Some(0));

    // `stop` reaches the run's process (its trap answers, not the kill
    // after the timeout) while another exec's reader is stopped.
    let mut stuck = berth.exec_unread(&[], &id, &["seq", "1", &lines]);
    wait_backed_up(&stuck);
    berth.ticks_go_on(&id, "with a second stopped reader");
    let shim: i32 = berth
        .run(&["inspect", "-f", "{{.State.Pid}}", &id])
        .ok()
        .trim()
        .parse()
        .unwrap();
    let processes = vm_processes(shim);
    berth.run(&["stop", "-t", "60", &id]).ok();
    let state = berth
        .run(&["inspect", "-f", "{{.State.ExitCode}}", &id])
        .ok();
    assert_eq!(state.trim(), "0");
    let logs = berth.run(&["logs", &id]).ok();
    assert!(logs.ends_with("stopped\n"), "{logs}");
    // The execs end with the container (the relay's 137).
    assert_eq!(
        wait_child(&mut stuck, 60.0, "the stuck exec").code(),
        Some(137)
    );
    assert_eq!(
        wait_child(&mut deaf, 60.0, "the deaf exec").code(),
        Some(137)
    );
    let sent = writer.join().unwrap();
    assert!(
        sent < 4 << 20,
        "the input was taken without a reader: {sent}"
    );
    berth.run(&["rm", &id]).ok();
    wait_until(30.0, "the VM's processes to end", || {
        processes
            .iter()
            .all(|pid| !support::containers::pid_alive(*pid))
    });
    berth.berth.assert_no_leftovers(&id);
}
