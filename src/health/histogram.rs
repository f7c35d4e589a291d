//! A latency histogram with fixed, log-spaced buckets, each about 10 % wide: any two histograms
//! merge by adding counts, and a percentile read from one is within 5 % of the true value.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Each bucket's upper bound is this many times its lower bound.
const GROWTH: f64 = 1.1;
/// Buckets past this one fold into it: 1.1^300 ms is longer than any call can last.
const LAST_BUCKET: u16 = 300;

/// Latencies in milliseconds, counted per bucket. Bucket 0 holds 0 ms; bucket `i` ≥ 1 holds
/// [1.1^(i-1), 1.1^i) ms. Sparse (only buckets that were hit), so a tool called at one steady
/// speed costs a handful of entries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Histogram(BTreeMap<u16, u64>);

impl Histogram {
    pub fn bucket(ms: u64) -> u16 {
        if ms == 0 {
            return 0;
        }
        // `ln` of an integer ≥ 1 is finite and ≥ 0, so the cast neither wraps nor saturates below.
        let index = ((ms as f64).ln() / GROWTH.ln()).floor() as u64 + 1;
        index.min(u64::from(LAST_BUCKET)) as u16
    }

    /// The value a bucket stands for: the geometric middle of its bounds.
    fn middle(bucket: u16) -> f64 {
        if bucket == 0 {
            return 0.0;
        }
        GROWTH.powf(f64::from(bucket) - 0.5)
    }

    pub fn record(&mut self, ms: u64) {
        *self.0.entry(Self::bucket(ms)).or_default() += 1;
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (bucket, count) in &other.0 {
            *self.0.entry(*bucket).or_default() += count;
        }
    }

    pub fn count(&self) -> u64 {
        self.0.values().sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `q` quantile (0 < q ≤ 1) in whole milliseconds: the middle of the bucket that holds
    /// the ⌈q·n⌉-th smallest latency. `None` when nothing was recorded.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (bucket, count) in &self.0 {
            seen += count;
            if seen >= rank {
                return Some(Self::middle(*bucket).round() as u64);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_about_ten_percent_wide() {
        assert_eq!(Histogram::bucket(0), 0);
        assert_eq!(Histogram::bucket(1), 1);
        assert!(Histogram::bucket(2) > Histogram::bucket(1));
        // Neighbours in the same bucket differ by less than 10 %.
        for ms in [10u64, 100, 1_000, 10_000, 100_000] {
            let b = Histogram::bucket(ms);
            assert!(Histogram::bucket(ms * 109 / 100).abs_diff(b) <= 1, "{ms}");
            assert!(Histogram::bucket(ms * 12 / 10) > b, "{ms}");
        }
        assert_eq!(Histogram::bucket(u64::MAX), LAST_BUCKET);
    }

    #[test]
    fn percentiles_are_within_five_percent() {
        let mut h = Histogram::default();
        for ms in 1..=1000u64 {
            h.record(ms);
        }
        let p50 = h.quantile(0.5).unwrap() as f64;
        let p95 = h.quantile(0.95).unwrap() as f64;
        assert!((p50 - 500.0).abs() / 500.0 < 0.05, "{p50}");
        assert!((p95 - 950.0).abs() / 950.0 < 0.05, "{p95}");
        assert_eq!(Histogram::default().quantile(0.5), None);
    }

    #[test]
    fn small_whole_milliseconds_come_back_exactly() {
        for ms in [0u64, 1, 2, 3, 5, 7] {
            let mut h = Histogram::default();
            h.record(ms);
            assert_eq!(h.quantile(0.5), Some(ms));
            assert_eq!(h.quantile(0.95), Some(ms));
        }
    }

    #[test]
    fn merged_histograms_count_everything() {
        let (mut a, mut b) = (Histogram::default(), Histogram::default());
        for _ in 0..90 {
            a.record(10);
        }
        for _ in 0..10 {
            b.record(1000);
        }
        a.merge(&b);
        assert_eq!(a.count(), 100);
        assert_eq!(a.quantile(0.5), Some(10));
        assert!(a.quantile(0.95).unwrap().abs_diff(1000) < 50);
        // The wire form: bucket → count, keys as JSON strings.
        let text = serde_json::to_string(&b).unwrap();
        assert_eq!(serde_json::from_str::<Histogram>(&text).unwrap(), b);
        assert!(text.starts_with("{\"") && text.ends_with(":10}"), "{text}");
    }
}
