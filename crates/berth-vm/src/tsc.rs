//! The host's TSC rate, which a TCG guest's clock runs on. Under TCG the
//! guest's `rdtsc` reads the host's TSC, and the kernel cannot calibrate it
//! there (it hangs calibrating the LAPIC timer, docs/VM.md): it is told the
//! rate on its command line (`tsc_early_khz`). A wrong rate is a guest
//! clock that runs fast or slow — `sleep 4` taking 3.5 s — so the rate is
//! measured here, not assumed.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long the measurement counts ticks: the error of the two clock reads
/// (a microsecond or so) over this is a few parts in a hundred thousand.
const SAMPLE: Duration = Duration::from_millis(20);

/// The host TSC's rate in kHz, measured once per process; `None` where
/// there is no TSC to read.
pub fn host_tsc_khz() -> Option<u64> {
    static RATE: OnceLock<Option<u64>> = OnceLock::new();
    *RATE.get_or_init(measure)
}

#[cfg(target_arch = "x86_64")]
fn measure() -> Option<u64> {
    let (start_time, start_ticks) = paired_read();
    std::thread::sleep(SAMPLE);
    let (end_time, end_ticks) = paired_read();
    let nanos = u64::try_from(end_time.duration_since(start_time).as_nanos()).ok()?;
    let ticks = end_ticks.checked_sub(start_ticks)?;
    khz(ticks, nanos)
}

#[cfg(not(target_arch = "x86_64"))]
fn measure() -> Option<u64> {
    None
}

/// A TSC reading and the monotonic time it was taken at: of a few tries,
/// the one whose two clock reads are closest (not preempted between).
#[cfg(target_arch = "x86_64")]
fn paired_read() -> (Instant, u64) {
    let mut best: Option<(Duration, Instant, u64)> = None;
    for _ in 0..5 {
        let before = Instant::now();
        // SAFETY: rdtsc reads a counter; it has no memory effects.
        let ticks = unsafe { core::arch::x86_64::_rdtsc() };
        let after = Instant::now();
        let gap = after.duration_since(before);
        if best.is_none_or(|(best_gap, _, _)| gap < best_gap) {
            best = Some((gap, before + gap / 2, ticks));
        }
    }
    let (_, time, ticks) = best.expect("five tries");
    (time, ticks)
}

/// Ticks over nanoseconds as kHz; `None` for a rate no TSC has.
fn khz(ticks: u64, nanos: u64) -> Option<u64> {
    let khz = u128::from(ticks) * 1_000_000 / u128::from(nanos.max(1));
    u64::try_from(khz)
        .ok()
        .filter(|&khz| (100_000..=20_000_000).contains(&khz))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_is_ticks_over_time() {
        // 46 million ticks in 20 ms: 2.3 GHz.
        assert_eq!(khz(46_000_000, 20_000_000), Some(2_300_000));
        assert_eq!(khz(0, 20_000_000), None);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_host_has_a_plausible_rate() {
        let rate = host_tsc_khz().unwrap();
        assert!((100_000..=20_000_000).contains(&rate), "{rate}");
        // Measured twice, the same within 0.5 %.
        let again = measure().unwrap();
        assert!(rate.abs_diff(again) * 200 < rate, "{rate} then {again}");
    }
}
