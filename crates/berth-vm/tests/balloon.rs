//! Idle memory goes back to the host: a guest process touches 150 MiB and
//! exits, and within seconds QEMU's proportional set size (with its
//! virtiofsd's, when the guest's RAM is a shared memfd) is back near what it
//! was before, because the guest's free page reporting hands the freed pages
//! to the balloon device and QEMU discards them. Without the device they
//! stay resident: the control case.
//!
//! Real VMs under QEMU (TCG here); skipped, saying so, without QEMU.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod common;

use std::time::{Duration, Instant};

use berth_vm::{Share, Vm};
use common::{request, setup};

const MIB: u64 = 1 << 20;
/// What the guest process touches.
const TOUCHED: u64 = 150 * MIB;
/// How far above the idle figure "back near idle" may be.
const SLACK: u64 = 40 * MIB;
/// How long the freed memory may take to go back: page reporting waits
/// 2 s after a free, then works in batches; TCG on a loaded host is slow.
const RETURN_WITHIN: Duration = Duration::from_secs(45);

/// `Pss:` of /proc/PID/smaps_rollup, in bytes.
fn pss(pid: u32) -> u64 {
    let text = fs_err::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap();
    let line = text
        .lines()
        .find(|line| line.starts_with("Pss:"))
        .unwrap_or_else(|| panic!("no Pss in {text}"));
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 1024
}

/// QEMU's PSS and its virtiofsd daemons': the memfd they share counts once.
fn vm_pss(vm: &Vm) -> u64 {
    pss(vm.pid().unwrap()) + vm.virtiofsd_pids().into_iter().map(pss).sum::<u64>()
}

/// The lowest PSS over a few samples once the guest has settled (the
/// initramfs it freed after boot is reported too).
fn settled(vm: &Vm) -> u64 {
    std::thread::sleep(Duration::from_secs(4));
    (0..4)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(500));
            vm_pss(vm)
        })
        .min()
        .unwrap()
}

/// Touches [`TOUCHED`] in one guest process (dd's buffer, filled from
/// /dev/zero) that then exits; returns (idle, peak, after, how long it took
/// to get there or None).
fn touch_and_free(vm: &mut Vm) -> (u64, u64, u64, Option<Duration>) {
    let output = vm.run(&request(&["true"])).unwrap();
    assert_eq!(output.exit.code, 0);
    let idle = settled(vm);
    // The process holds the buffer while `sleep` runs, so the peak is
    // sampled with the memory in use; dd's read into it touches every page.
    let pid = vm.pid().unwrap();
    let sampler = std::thread::spawn(move || {
        let started = Instant::now();
        let mut peak = 0;
        while started.elapsed() < Duration::from_secs(60) {
            let Ok(text) = fs_err::read_to_string(format!("/proc/{pid}/smaps_rollup")) else {
                break;
            };
            let value = text
                .lines()
                .find(|line| line.starts_with("Pss:"))
                .and_then(|line| line.split_whitespace().nth(1)?.parse::<u64>().ok())
                .unwrap_or(0)
                * 1024;
            peak = peak.max(value);
            if peak > idle + TOUCHED - SLACK {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        peak
    });
    let script = format!(
        "dd if=/dev/zero of=/dev/null bs={}M count=1 2>/dev/null && echo done",
        TOUCHED / MIB
    );
    let output = vm.run(&request(&["sh", "-c", &script])).unwrap();
    assert_eq!(
        (
            output.exit.code,
            String::from_utf8_lossy(&output.stdout).trim()
        ),
        (0, "done"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let freed = Instant::now();
    let peak = sampler.join().unwrap().max(vm_pss(vm));
    let mut returned = None;
    let mut after = vm_pss(vm);
    while freed.elapsed() < RETURN_WITHIN {
        after = vm_pss(vm);
        if after <= idle + SLACK {
            returned = Some(freed.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    (idle, peak, after, returned)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB as f64
}

#[test]
fn freed_guest_memory_goes_back_to_the_host() {
    let Some(setup) = setup() else { return };
    let mut vm = Vm::boot(&setup.config).unwrap();
    let (idle, peak, after, returned) = touch_and_free(&mut vm);
    eprintln!(
        "free page reporting: idle {:.1} MiB, peak {:.1} MiB, after {:.1} MiB, back in {returned:?}",
        mib(idle),
        mib(peak),
        mib(after)
    );
    assert!(
        peak >= idle + TOUCHED - SLACK,
        "the guest's 150 MiB never showed in QEMU's PSS: idle {idle}, peak {peak}"
    );
    assert!(
        returned.is_some(),
        "QEMU still holds {:.1} MiB {RETURN_WITHIN:?} after the guest freed 150 MiB (idle {:.1})",
        mib(after),
        mib(idle)
    );
    drop(vm);

    // The control: without the balloon device the memory stays with QEMU.
    let mut config = setup.config.clone();
    config.free_page_reporting = false;
    let mut vm = Vm::boot(&config).unwrap();
    let output = vm.run(&request(&["true"])).unwrap();
    assert_eq!(output.exit.code, 0);
    let idle_without = settled(&vm);
    let output = vm
        .run(&request(&[
            "sh",
            "-c",
            "dd if=/dev/zero of=/dev/null bs=150M count=1 2>/dev/null",
        ]))
        .unwrap();
    assert_eq!(output.exit.code, 0);
    std::thread::sleep(Duration::from_secs(8));
    let after_without = vm_pss(&vm);
    eprintln!(
        "without the balloon: idle {:.1} MiB, 8 s after the free {:.1} MiB",
        mib(idle_without),
        mib(after_without)
    );
    assert!(
        after_without >= idle_without + TOUCHED - SLACK,
        "without free page reporting the freed memory should stay: idle {idle_without}, after {after_without}"
    );
}

#[test]
fn freed_memory_leaves_the_shared_memfd_too() {
    // A VM with a share has its RAM in a memfd mapped by QEMU and virtiofsd
    // (as every VM container's): QEMU punches the reported pages out of it.
    let Some(mut setup) = setup() else { return };
    let data = setup.dir.path().join("data");
    fs_err::create_dir(&data).unwrap();
    setup.config.shares = vec![Share::new("data", &data, false)];
    let mut vm = Vm::boot(&setup.config).unwrap();
    assert_eq!(vm.virtiofsd_pids().len(), 1);
    let (idle, peak, after, returned) = touch_and_free(&mut vm);
    eprintln!(
        "memfd RAM: idle {:.1} MiB, peak {:.1} MiB, after {:.1} MiB, back in {returned:?}",
        mib(idle),
        mib(peak),
        mib(after)
    );
    assert!(peak >= idle + TOUCHED - SLACK, "idle {idle}, peak {peak}");
    assert!(
        returned.is_some(),
        "QEMU and virtiofsd still hold {:.1} MiB {RETURN_WITHIN:?} after the guest freed 150 MiB (idle {:.1})",
        mib(after),
        mib(idle)
    );
}
