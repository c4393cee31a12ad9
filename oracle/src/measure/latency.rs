//! Latencies in a fixed size: a histogram with logarithmic buckets 1% wide (bucket
//! `i > 0` holds the latencies `t`, in microseconds, with `1.01^(i-1) <= t < 1.01^i`;
//! bucket 0 holds `t = 0`), so a quantile is the nearest-rank quantile of the samples to
//! within 1%: it is reported as the upper end of its bucket, never above the largest
//! sample. A week-long query would land in bucket 2,600; the map holds only the buckets
//! that were hit. Campaigns (`campaign::answers`) and `tandem verify` (`smt::run`) keep
//! their validator latencies this way, so their memory does not grow with the number of
//! answers (issue 23).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// The growth factor from one bucket to the next.
const BUCKET_RATIO: f64 = 1.01;

/// Latencies in logarithmic buckets (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyHistogram {
    /// Bucket index to the number of samples in it.
    pub buckets: BTreeMap<u32, u64>,
    /// The largest sample, in microseconds.
    pub max_micros: u64,
}

impl LatencyHistogram {
    fn bucket(micros: u64) -> u32 {
        if micros == 0 {
            0
        } else {
            // The smallest i with micros < 1.01^i, computed in floating point and then
            // corrected, so that the bucket's bounds hold exactly.
            let mut i = ((micros as f64).ln() / BUCKET_RATIO.ln()).floor() as u32 + 1;
            while i > 1 && (micros as f64) < Self::lower(i) {
                i -= 1;
            }
            while (micros as f64) >= Self::lower(i + 1) {
                i += 1;
            }
            i
        }
    }

    /// The smallest latency bucket `i` holds (`1.01^(i-1)`; 0 for bucket 0).
    fn lower(i: u32) -> f64 {
        if i == 0 {
            0.0
        } else {
            BUCKET_RATIO.powi(i as i32 - 1)
        }
    }

    pub fn add(&mut self, micros: u64) {
        *self.buckets.entry(Self::bucket(micros)).or_insert(0) += 1;
        self.max_micros = self.max_micros.max(micros);
    }

    pub fn merge(&mut self, other: &LatencyHistogram) {
        for (&b, &n) in &other.buckets {
            *self.buckets.entry(b).or_insert(0) += n;
        }
        self.max_micros = self.max_micros.max(other.max_micros);
    }

    pub fn count(&self) -> u64 {
        self.buckets.values().sum()
    }

    /// The nearest-rank `q`-quantile to within 1% (the upper end of the bucket holding
    /// it, at most the largest sample); zero without samples.
    pub fn quantile(&self, q: f64) -> Duration {
        let n = self.count();
        if n == 0 {
            return Duration::ZERO;
        }
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0;
        for (&b, &k) in &self.buckets {
            seen += k;
            if seen >= rank {
                let upper = if b == 0 { 0.0 } else { Self::lower(b + 1) };
                return Duration::from_micros((upper.ceil() as u64).min(self.max_micros));
            }
        }
        Duration::from_micros(self.max_micros)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every latency lands in the bucket whose bounds hold it.
    #[test]
    fn buckets_hold_their_latencies() {
        for micros in (0..5_000).chain([999_999, 1_000_000, 86_400_000_000, u32::MAX as u64]) {
            let b = LatencyHistogram::bucket(micros);
            let t = micros as f64;
            assert!(LatencyHistogram::lower(b) <= t, "{micros} below bucket {b}");
            assert!(t < LatencyHistogram::lower(b + 1) || micros == 0, "{micros} above bucket {b}");
        }
    }

    /// The quantiles of 1..=10,000 µs and of a skewed sample are within 1% of the
    /// nearest-rank quantiles of the sorted samples.
    #[test]
    fn quantiles_are_within_one_percent() {
        let uniform: Vec<u64> = (1..=10_000).collect();
        let skewed: Vec<u64> = (0..3_000u64).map(|i| if i % 10 == 0 { 300_000 + i * 7 } else { 40 + i % 97 }).collect();
        for samples in [uniform, skewed] {
            let mut h = LatencyHistogram::default();
            for &s in &samples {
                h.add(s);
            }
            let mut sorted = samples.clone();
            sorted.sort();
            for q in [0.5, 0.9, 0.99, 1.0] {
                let exact = sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1] as f64;
                let got = h.quantile(q).as_micros() as f64;
                assert!(got >= exact && got <= exact * 1.01 + 1.0, "q {q}: {got} vs {exact}");
            }
            assert_eq!(h.quantile(1.0).as_micros() as u64, *sorted.last().unwrap());
        }
    }
}
