//! Summary statistics of one measurement's samples, as hyperfine reports
//! them: runs, mean ± σ (sample standard deviation), median, min…max, p95.

use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub runs: usize,
    pub mean: f64,
    /// Sample standard deviation (n − 1 in the denominator, as hyperfine);
    /// 0 for a single run.
    pub stddev: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub p95: f64,
}

impl Summary {
    /// None for no samples or a sample that is not a finite number.
    pub fn of(samples: &[f64]) -> Option<Self> {
        if samples.is_empty() || samples.iter().any(|sample| !sample.is_finite()) {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let runs = sorted.len();
        let mean = sorted.iter().sum::<f64>() / runs as f64;
        let stddev = if runs > 1 {
            let squares: f64 = sorted.iter().map(|sample| (sample - mean).powi(2)).sum();
            (squares / (runs - 1) as f64).sqrt()
        } else {
            0.0
        };
        Some(Self {
            runs,
            mean,
            stddev,
            median: percentile(&sorted, 0.5),
            min: sorted[0],
            max: sorted[runs - 1],
            p95: percentile(&sorted, 0.95),
        })
    }
}

/// The `fraction` quantile of sorted samples, interpolating linearly
/// between the two nearest ranks (numpy's default; the median of an even
/// count is the mean of the middle two).
pub fn percentile(sorted: &[f64], fraction: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        count => {
            let position = fraction.clamp(0.0, 1.0) * (count - 1) as f64;
            let lower = position.floor() as usize;
            let upper = position.ceil() as usize;
            let weight = position - lower as f64;
            sorted[lower] + (sorted[upper] - sorted[lower]) * weight
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(left: f64, right: f64) -> bool {
        (left - right).abs() < 1e-9
    }

    #[test]
    fn summary_of_known_samples() {
        // Unsorted on purpose.
        let summary = Summary::of(&[4.0, 1.0, 3.0, 2.0, 5.0]).unwrap();
        assert_eq!(summary.runs, 5);
        assert!(close(summary.mean, 3.0));
        // Σ(x−3)² = 10, / (5−1) = 2.5
        assert!(close(summary.stddev, 2.5_f64.sqrt()));
        assert!(close(summary.median, 3.0));
        assert!(close(summary.min, 1.0));
        assert!(close(summary.max, 5.0));
        // position 0.95 × 4 = 3.8 → 4 + 0.8 × (5 − 4)
        assert!(close(summary.p95, 4.8));
    }

    #[test]
    fn even_count_median_is_the_mean_of_the_middle_two() {
        let summary = Summary::of(&[10.0, 2.0, 8.0, 4.0]).unwrap();
        assert!(close(summary.median, 6.0));
        assert!(close(summary.p95, 8.0 + 0.85 * 2.0));
    }

    #[test]
    fn one_sample_has_no_spread() {
        let summary = Summary::of(&[0.25]).unwrap();
        assert_eq!(summary.runs, 1);
        assert!(close(summary.stddev, 0.0));
        assert!(close(summary.median, 0.25));
        assert!(close(summary.p95, 0.25));
    }

    #[test]
    fn p95_of_a_hundred_runs() {
        let samples: Vec<f64> = (1..=100).map(f64::from).collect();
        let summary = Summary::of(&samples).unwrap();
        assert!(close(summary.p95, 95.05));
        assert!(close(summary.median, 50.5));
    }

    #[test]
    fn no_samples_or_nan_give_no_summary() {
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
        assert_eq!(Summary::of(&[f64::INFINITY]), None);
    }
}
