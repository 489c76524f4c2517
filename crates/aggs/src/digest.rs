//! The percentile sketches of Elasticsearch's `percentiles`, `percentile_ranks`,
//! `median_absolute_deviation` and `boxplot`, computed as Elasticsearch computes them.
//!
//! - [`TDigest`]: ES 8's `TDigestState`. The default execution hint is ES's `HybridDigest`:
//!   every value is kept and sorted (ES's `SortingDigest`, exact, quantiles interpolated
//!   between neighbouring values as ES's `Dist`) until `20 * round(compression)` values,
//!   then a merging t-digest (Dunning's `MergingDigest` with the `K_2` scale function, the
//!   weight-limit merge, two-level compression and alternating merge directions, as ES's
//!   `libs/tdigest`). `high_accuracy` uses the merging digest from the first value (ES uses
//!   its AVL-tree digest there; both are within the t-digest's documented error).
//! - [`Hdr`]: ES's `DoubleHistogram` (HdrHistogram with `number_of_significant_value_digits`)
//!   on the `hdrhistogram` crate: doubles are recorded as integers scaled by a power of two
//!   chosen so that the smallest positive value falls in the top half of the first bucket
//!   (as the auto-ranging `DoubleHistogram` places its lowest value), quantiles are the
//!   highest equivalent value of the bucket holding the rank `round(p / 100 * n)`, and ranks
//!   count every bucket up to the value's own (Java HdrHistogram's `getValueAtPercentile` and
//!   `getPercentileAtOrBelowValue`).

use hdrhistogram::Histogram;

/// ES's default `tdigest.compression`.
pub(crate) const DEFAULT_COMPRESSION: f64 = 100.0;

/// A t-digest as ES's `TDigestState` builds it.
#[derive(Debug, Clone)]
pub(crate) struct TDigest {
    compression: f64,
    /// The exact phase (`SortingDigest`); `None` once the merging digest took over.
    sorting: Option<Vec<f64>>,
    sorted: bool,
    max_sorting: u64,
    merging: Option<MergingDigest>,
}

impl TDigest {
    /// `high_accuracy`: a merging digest from the first value; otherwise ES's hybrid.
    pub fn new(compression: f64, high_accuracy: bool) -> TDigest {
        let mut t = TDigest {
            compression,
            sorting: Some(Vec::new()),
            sorted: true,
            max_sorting: (compression.round().max(0.0) as u64) * 20,
            merging: None,
        };
        if high_accuracy {
            t.sorting = None;
            t.merging = Some(MergingDigest::new(compression));
        }
        t
    }

    /// Adds `x` `w` times (a centroid of another digest).
    pub fn add_weighted(&mut self, x: f64, w: u64) {
        if x.is_nan() || w == 0 {
            return;
        }
        if let Some(values) = &self.sorting {
            if (values.len() as u64) + w < self.max_sorting {
                for _ in 0..w {
                    self.add(x);
                }
                return;
            }
            let mut m = MergingDigest::new(self.compression);
            for &v in values.iter() {
                m.add(v, 1.0);
            }
            self.sorting = None;
            self.merging = Some(m);
        }
        if let Some(m) = &mut self.merging {
            m.add(x, w as f64);
        }
    }

    /// Adds every value of `other` (its centroids once it is no longer exact).
    pub fn merge(&mut self, mut other: TDigest) {
        if let Some(values) = other.sorting.take() {
            for x in values {
                self.add(x);
            }
            return;
        }
        for (x, w) in other.centroids() {
            self.add_weighted(x, w as u64);
        }
    }

    pub fn add(&mut self, x: f64) {
        if x.is_nan() {
            return;
        }
        if let Some(values) = &mut self.sorting {
            if values.len() as u64 + 1 >= self.max_sorting {
                let mut m = MergingDigest::new(self.compression);
                for &v in values.iter() {
                    m.add(v, 1.0);
                }
                self.sorting = None;
                m.add(x, 1.0);
                self.merging = Some(m);
                return;
            }
            self.sorted = self.sorted && values.last().is_none_or(|&l| l <= x);
            values.push(x);
        } else if let Some(m) = &mut self.merging {
            m.add(x, 1.0);
        }
    }

    pub fn size(&self) -> u64 {
        match (&self.sorting, &self.merging) {
            (Some(v), _) => v.len() as u64,
            (None, Some(m)) => m.size(),
            _ => 0,
        }
    }

    fn sort(&mut self) {
        if let Some(v) = &mut self.sorting {
            if !self.sorted {
                v.sort_by(f64::total_cmp);
                self.sorted = true;
            }
        }
    }

    /// The value at quantile `q` (0 to 1); NaN when empty.
    pub fn quantile(&mut self, q: f64) -> f64 {
        self.sort();
        match (&self.sorting, &mut self.merging) {
            (Some(v), _) => sorted_quantile(q, v),
            (None, Some(m)) => m.quantile(q),
            _ => f64::NAN,
        }
    }

    /// The fraction of values at or below `x`, values equal to `x` counting half; NaN when
    /// empty.
    pub fn cdf(&mut self, x: f64) -> f64 {
        self.sort();
        match (&self.sorting, &mut self.merging) {
            (Some(v), _) if v.is_empty() => f64::NAN,
            (Some(v), _) => sorted_cdf(x, v),
            (None, Some(m)) => m.cdf(x),
            _ => f64::NAN,
        }
    }

    pub fn min(&self) -> f64 {
        match (&self.sorting, &self.merging) {
            (Some(v), _) => v.iter().copied().fold(f64::INFINITY, f64::min),
            (None, Some(m)) => m.min,
            _ => f64::INFINITY,
        }
    }

    pub fn max(&self) -> f64 {
        match (&self.sorting, &self.merging) {
            (Some(v), _) => v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            (None, Some(m)) => m.max,
            _ => f64::NEG_INFINITY,
        }
    }

    /// The digest's centroids as (mean, count), in order (every value is one while exact).
    pub fn centroids(&mut self) -> Vec<(f64, f64)> {
        self.sort();
        match (&self.sorting, &mut self.merging) {
            (Some(v), _) => v.iter().map(|&x| (x, 1.0)).collect(),
            (None, Some(m)) => {
                m.merge_new(true);
                (0..m.last_used).map(|i| (m.mean[i], m.weight[i])).collect()
            }
            _ => Vec::new(),
        }
    }
}

/// ES's `Dist.quantile`: linear interpolation at index `q * (n - 1)` of the sorted values.
fn sorted_quantile(q: f64, v: &[f64]) -> f64 {
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    let index = q * (n - 1) as f64;
    if index <= 0.0 {
        return v[0];
    }
    if index >= (n - 1) as f64 {
        return v[n - 1];
    }
    let lo = index.floor() as usize;
    let w = index - lo as f64;
    v[lo] + w * (v[lo + 1] - v[lo])
}

/// ES's `Dist.cdf` over sorted values: the values below `x`, half of those equal to it, and
/// between two values a linear share of the gap.
fn sorted_cdf(x: f64, v: &[f64]) -> f64 {
    let n = v.len() as f64;
    if x.total_cmp(&v[0]).is_lt() {
        return 0.0;
    }
    let mut below = 0.5;
    let mut equal = 0usize;
    for i in 1..v.len() {
        match v[i].total_cmp(&x) {
            std::cmp::Ordering::Greater => {
                if equal > 0 {
                    return (below + 0.5 * equal as f64) / n;
                }
                let prev = v[i - 1];
                let factor = (x - prev) / (v[i] - prev);
                return (below + factor) / n;
            }
            std::cmp::Ordering::Less => below += 1.0,
            std::cmp::Ordering::Equal => equal += 1,
        }
    }
    (n - 0.5 * equal as f64) / n
}

/// Dunning's merging t-digest with the `K_2` scale function, as ES's `MergingDigest`.
#[derive(Debug, Clone)]
struct MergingDigest {
    public_compression: f64,
    compression: f64,
    merge_count: u64,
    last_used: usize,
    total_weight: f64,
    weight: Vec<f64>,
    mean: Vec<f64>,
    unmerged_weight: f64,
    temp_used: usize,
    temp_weight: Vec<f64>,
    temp_mean: Vec<f64>,
    min: f64,
    max: f64,
}

impl MergingDigest {
    fn new(compression: f64) -> MergingDigest {
        let compression = compression.max(10.0);
        let mut fudge = 10.0;
        if compression < 30.0 {
            fudge += 20.0;
        }
        let mut size = (2.0 * compression + fudge) as usize;
        let mut buffer = 5 * size;
        if buffer <= 2 * size {
            buffer = 2 * size;
        }
        // Two-level compression: a finer digest while building, the public one on output.
        let scale = ((buffer / size) as f64 - 1.0).max(1.0);
        let internal = scale.sqrt() * compression;
        if (size as f64) < internal + fudge {
            size = (internal + fudge).ceil() as usize;
        }
        if buffer <= 2 * size {
            buffer = 2 * size;
        }
        MergingDigest {
            public_compression: compression,
            compression: internal,
            merge_count: 0,
            last_used: 0,
            total_weight: 0.0,
            weight: vec![0.0; size],
            mean: vec![0.0; size],
            unmerged_weight: 0.0,
            temp_used: 0,
            temp_weight: vec![0.0; buffer],
            temp_mean: vec![0.0; buffer],
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    fn size(&self) -> u64 {
        (self.total_weight + self.unmerged_weight) as u64
    }

    fn add(&mut self, x: f64, w: f64) {
        if self.temp_used >= self.temp_weight.len() - self.last_used - 1 {
            self.merge_new(false);
        }
        self.temp_weight[self.temp_used] = w;
        self.temp_mean[self.temp_used] = x;
        self.temp_used += 1;
        self.unmerged_weight += w;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
    }

    /// Merges the buffered values into the centroids (`force`: also when nothing is
    /// buffered, at the public compression, as ES's `compress`).
    fn merge_new(&mut self, force: bool) {
        if self.total_weight == 0.0 && self.unmerged_weight == 0.0 {
            return;
        }
        if force || self.unmerged_weight > 0.0 {
            let compression = if force {
                self.public_compression
            } else {
                self.compression
            };
            let backwards = self.merge_count % 2 == 1;
            self.merge(compression, backwards);
            self.merge_count += 1;
            self.temp_used = 0;
            self.unmerged_weight = 0.0;
        }
    }

    fn merge(&mut self, compression: f64, backwards: bool) {
        // The live centroids join the incoming values, all sorted by mean (stable).
        let mut incoming: Vec<(f64, f64)> = (0..self.temp_used)
            .map(|i| (self.temp_mean[i], self.temp_weight[i]))
            .collect();
        incoming.extend((0..self.last_used).map(|i| (self.mean[i], self.weight[i])));
        incoming.sort_by(|a, b| a.0.total_cmp(&b.0));
        if backwards {
            incoming.reverse();
        }
        self.total_weight += self.unmerged_weight;
        let total = self.total_weight;
        let count = incoming.len();
        let normalizer = compression / (4.0 * (total / compression).ln() + 24.0);
        let max_weight = |q: f64| q * (1.0 - q) / normalizer;
        self.last_used = 0;
        self.mean[0] = incoming[0].0;
        self.weight[0] = incoming[0].1;
        let mut so_far = 0.0;
        for (i, &(m, w)) in incoming.iter().enumerate().skip(1) {
            let proposed = self.weight[self.last_used] + w;
            let q0 = so_far / total;
            let q2 = (so_far + proposed) / total;
            // The first and last values always stay centroids of their own.
            let fits =
                i != 1 && i != count - 1 && proposed <= total * max_weight(q0).min(max_weight(q2));
            if fits {
                let c = self.last_used;
                self.weight[c] += w;
                self.mean[c] += (m - self.mean[c]) * w / self.weight[c];
            } else {
                so_far += self.weight[self.last_used];
                self.last_used += 1;
                if self.last_used >= self.mean.len() {
                    self.mean.push(0.0);
                    self.weight.push(0.0);
                }
                self.mean[self.last_used] = m;
                self.weight[self.last_used] = w;
            }
        }
        self.last_used += 1;
        if backwards {
            self.mean[..self.last_used].reverse();
            self.weight[..self.last_used].reverse();
        }
        if self.last_used + self.temp_used + 1 > self.temp_weight.len() {
            let n = self.last_used * 2 + 2;
            self.temp_weight.resize(n, 0.0);
            self.temp_mean.resize(n, 0.0);
        }
        if total > 0.0 {
            self.min = self.min.min(self.mean[0]);
            self.max = self.max.max(self.mean[self.last_used - 1]);
        }
    }

    fn quantile(&mut self, q: f64) -> f64 {
        self.merge_new(false);
        let n = self.last_used;
        if n == 0 {
            return f64::NAN;
        }
        if n == 1 {
            return self.mean[0];
        }
        let (mean, weight, total) = (&self.mean, &self.weight, self.total_weight);
        let index = q * (total - 1.0);
        if index < 0.0 {
            return self.min;
        }
        if index >= total {
            return self.max;
        }
        let mut so_far = if weight[0] == 1.0 {
            0.0
        } else {
            weight[0] / 2.0
        };
        // A singleton at the left edge: interpolate from the minimum to the next centroid.
        if weight[0] == 1.0 && index <= weight[0] {
            return self.min + index * (mean[1] - self.min);
        }
        // One sample of the first centroid sits at the minimum.
        if weight[0] > 1.0 && index < so_far {
            return self.min + (index - 1.0) / (so_far - 1.0) * (mean[0] - self.min);
        }
        // Likewise one sample of the last centroid sits at the maximum.
        if weight[n - 1] > 1.0 && total - index <= weight[n - 1] / 2.0 {
            return self.max
                - (total - index - 1.0) / (weight[n - 1] / 2.0 - 1.0) * (self.max - mean[n - 1]);
        }
        for i in 0..n - 1 {
            let dw = (weight[i] + weight[i + 1]) / 2.0;
            if so_far + dw > index {
                let z1 = index - so_far;
                let z2 = so_far + dw - index;
                return weighted_average(mean[i], z2, mean[i + 1], z1);
            }
            so_far += dw;
        }
        let z1 = index - total - weight[n - 1] / 2.0;
        let z2 = weight[n - 1] / 2.0 - z1;
        weighted_average(mean[n - 1], z1, self.max, z2)
    }

    fn cdf(&mut self, x: f64) -> f64 {
        self.merge_new(false);
        let n = self.last_used;
        let (mean, weight, total) = (&self.mean, &self.weight, self.total_weight);
        if n == 0 {
            return f64::NAN;
        }
        if n == 1 {
            return if x < self.min {
                0.0
            } else if x > self.max {
                1.0
            } else {
                0.5
            };
        }
        if x < self.min {
            return 0.0;
        }
        if x > self.max {
            return 1.0;
        }
        if x < mean[0] {
            if mean[0] - self.min > 0.0 {
                if x == self.min {
                    return 0.5 / total;
                }
                return (1.0 + (x - self.min) / (mean[0] - self.min) * (weight[0] / 2.0 - 1.0))
                    / total;
            }
            return 0.0;
        }
        if x > mean[n - 1] {
            if self.max - mean[n - 1] > 0.0 {
                if x == self.max {
                    return 1.0 - 0.5 / total;
                }
                let dq = (1.0
                    + (self.max - x) / (self.max - mean[n - 1]) * (weight[n - 1] / 2.0 - 1.0))
                    / total;
                return 1.0 - dq;
            }
            return 1.0;
        }
        let mut so_far = 0.0;
        let mut it = 0;
        while it < n - 1 {
            if mean[it] == x {
                let mut dw = 0.0;
                while it < n && mean[it] == x {
                    dw += weight[it];
                    it += 1;
                }
                return (so_far + dw / 2.0) / total;
            } else if mean[it] <= x && x < mean[it + 1] {
                if mean[it + 1] - mean[it] > 0.0 {
                    let (mut left_ex, mut right_ex) = (0.0, 0.0);
                    if weight[it] == 1.0 {
                        if weight[it + 1] == 1.0 {
                            return (so_far + 1.0) / total;
                        }
                        left_ex = 0.5;
                    } else if weight[it + 1] == 1.0 {
                        right_ex = 0.5;
                    }
                    let dw = (weight[it] + weight[it + 1]) / 2.0;
                    let dw_inner = dw - left_ex - right_ex;
                    let base = so_far + weight[it] / 2.0 + left_ex;
                    return (base + dw_inner * (x - mean[it]) / (mean[it + 1] - mean[it])) / total;
                }
                let dw = (weight[it] + weight[it + 1]) / 2.0;
                return (so_far + dw) / total;
            } else {
                so_far += weight[it];
            }
            it += 1;
        }
        1.0 - 0.5 / total
    }
}

/// A weighted average of two values, kept between them (floating point can stray).
fn weighted_average(x1: f64, w1: f64, x2: f64, w2: f64) -> f64 {
    let (a, wa, b, wb) = if x1 <= x2 {
        (x1, w1, x2, w2)
    } else {
        (x2, w2, x1, w1)
    };
    let x = (a * wa + b * wb) / (wa + wb);
    a.max(x.min(b))
}

/// How many values an [`Hdr`] keeps before it picks its scale and becomes a histogram.
const HDR_BUFFER: usize = 4096;

/// ES's HDR percentiles state (`DoubleHistogram`), see the module documentation.
#[derive(Debug, Clone)]
pub(crate) struct Hdr {
    digits: u8,
    /// Values before the scale is chosen.
    buffer: Vec<f64>,
    /// The histogram of `value * ratio` and the ratio (a power of two).
    hist: Option<(Histogram<u64>, f64)>,
    /// A negative value was recorded (ES fails the shard: `ArrayIndexOutOfBoundsException`).
    pub negative: Option<f64>,
    count: u64,
}

impl Hdr {
    pub fn new(digits: u8) -> Hdr {
        Hdr {
            digits,
            buffer: Vec::new(),
            hist: None,
            negative: None,
            count: 0,
        }
    }

    #[cfg(test)]
    fn count(&self) -> u64 {
        self.count
    }

    /// Half the sub-buckets of HdrHistogram's first bucket at this precision.
    fn half_count(&self) -> f64 {
        let largest_single_unit = 2.0 * 10f64.powi(self.digits as i32);
        let magnitude = largest_single_unit.log2().ceil() as i32;
        2f64.powi((magnitude - 1).max(0))
    }

    /// The power of two placing `min` (positive) in the top half of the first bucket.
    fn ratio_for(&self, min: f64) -> f64 {
        if !(min > 0.0 && min.is_finite()) {
            return 1.0;
        }
        let half = self.half_count();
        let k = (half.log2() - min.log2().floor()) as i32;
        2f64.powi(k.clamp(-1000, 1000))
    }

    pub fn add(&mut self, x: f64) {
        if x.is_nan() {
            return;
        }
        if x < 0.0 {
            self.negative.get_or_insert(x);
            return;
        }
        self.count += 1;
        match &mut self.hist {
            None => {
                self.buffer.push(x);
                if self.buffer.len() >= HDR_BUFFER {
                    self.build();
                }
            }
            Some(_) => self.record(x),
        }
    }

    /// Adds every value of `other` (a histogram's values at their buckets' lowest value).
    pub fn merge(&mut self, mut other: Hdr) {
        if let Some(x) = other.negative {
            self.negative.get_or_insert(x);
        }
        for x in std::mem::take(&mut other.buffer) {
            self.add(x);
        }
        if let Some((h, ratio)) = other.hist {
            for v in h.iter_recorded() {
                let x = h.lowest_equivalent(v.value_iterated_to()) as f64 / ratio;
                let n = v.count_at_value();
                if self.hist.is_none() && self.buffer.len() as u64 + n < HDR_BUFFER as u64 {
                    for _ in 0..n {
                        self.add(x);
                    }
                    continue;
                }
                if self.hist.is_none() {
                    self.build();
                }
                self.count += n;
                self.record_n(x, n);
            }
        }
    }

    fn build(&mut self) {
        let min = self
            .buffer
            .iter()
            .copied()
            .filter(|&v| v > 0.0)
            .fold(f64::INFINITY, f64::min);
        let max = self.buffer.iter().copied().fold(0.0, f64::max);
        let mut ratio = self.ratio_for(min);
        // Keep the largest value representable (HdrHistogram tracks up to 2^63).
        while max * ratio > 4.0e18 && ratio > f64::MIN_POSITIVE {
            ratio /= 2.0;
        }
        let mut h = Histogram::<u64>::new(self.digits).expect("valid precision");
        h.auto(true);
        self.hist = Some((h, ratio));
        for x in std::mem::take(&mut self.buffer) {
            self.record(x);
        }
    }

    fn record(&mut self, x: f64) {
        self.record_n(x, 1);
    }

    fn record_n(&mut self, x: f64, count: u64) {
        let half = self.half_count();
        let want = self.ratio_for(x);
        let digits = self.digits;
        let Some((h, ratio)) = &mut self.hist else {
            return;
        };
        if x > 0.0 && x * *ratio < half && want > *ratio {
            // A smaller value than the scale was chosen for: rescale by a power of two, as
            // the auto-ranging DoubleHistogram shifts its buckets.
            let shift = want / *ratio;
            let mut n = Histogram::<u64>::new(digits).expect("valid precision");
            n.auto(true);
            for v in h.iter_recorded() {
                let low = h.lowest_equivalent(v.value_iterated_to());
                let _ = n.record_n((low as f64 * shift) as u64, v.count_at_value());
            }
            *h = n;
            *ratio = want;
        }
        let _ = h.record_n((x * *ratio) as u64, count);
    }

    fn finish(&mut self) {
        if self.hist.is_none() && !self.buffer.is_empty() {
            self.build();
        }
    }

    /// Java HdrHistogram's `getValueAtPercentile` on the scaled histogram; NaN when empty.
    pub fn quantile(&mut self, percent: f64) -> f64 {
        self.finish();
        let Some((h, ratio)) = &self.hist else {
            return f64::NAN;
        };
        let total = h.len();
        if total == 0 {
            return f64::NAN;
        }
        let p = percent.min(100.0);
        let want = (((p / 100.0) * total as f64) + 0.5) as u64;
        let want = want.max(1);
        let mut seen = 0u64;
        for v in h.iter_recorded() {
            seen += v.count_at_value();
            if seen >= want {
                let at = v.value_iterated_to();
                let value = if percent == 0.0 {
                    h.lowest_equivalent(at)
                } else {
                    h.highest_equivalent(at)
                };
                return value as f64 / *ratio;
            }
        }
        0.0
    }

    /// Java HdrHistogram's `getPercentileAtOrBelowValue`: the share of values in the buckets
    /// up to the one holding `x`, in percent; NaN when empty.
    pub fn rank(&mut self, x: f64) -> f64 {
        self.finish();
        let Some((h, ratio)) = &self.hist else {
            return f64::NAN;
        };
        let total = h.len();
        if total == 0 {
            return f64::NAN;
        }
        if x < 0.0 {
            return 0.0;
        }
        let target = h.highest_equivalent((x * *ratio) as u64);
        let below: u64 = h
            .iter_recorded()
            .filter(|v| v.value_iterated_to() <= target)
            .map(|v| v.count_at_value())
            .sum();
        100.0 * below as f64 / total as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorting_phase_is_exact_interpolation() {
        let mut t = TDigest::new(DEFAULT_COMPRESSION, false);
        for x in [5.0, 1.0, 3.0, 2.0, 4.0] {
            t.add(x);
        }
        assert_eq!(t.quantile(0.5), 3.0);
        assert_eq!(t.quantile(0.25), 2.0);
        assert_eq!(t.quantile(0.1), 1.4);
        assert_eq!(t.quantile(0.0), 1.0);
        assert_eq!(t.quantile(1.0), 5.0);
        // Values equal to x count half; between values, a linear share.
        assert_eq!(t.cdf(3.0), 0.4);
        assert_eq!(t.cdf(0.0), 0.0);
        assert_eq!(t.cdf(9.0), 1.0);
        assert!((t.cdf(3.5) - 3.0 / 5.0).abs() < 1e-12);
        let mut e = TDigest::new(DEFAULT_COMPRESSION, false);
        assert!(e.quantile(0.5).is_nan());
        assert!(e.cdf(1.0).is_nan());
    }

    #[test]
    fn merging_phase_within_documented_error() {
        // 100k values, uniform: t-digest keeps quantiles within a fraction of a percent.
        let n = 100_000u64;
        for high_accuracy in [false, true] {
            let mut t = TDigest::new(DEFAULT_COMPRESSION, high_accuracy);
            let mut x = 12345u64;
            for _ in 0..n {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                t.add((x >> 11) as f64 / (1u64 << 53) as f64 * 1000.0);
            }
            assert_eq!(t.size(), n);
            for q in [0.01, 0.25, 0.5, 0.75, 0.99] {
                let v = t.quantile(q);
                assert!((v - q * 1000.0).abs() < 5.0, "q {q}: {v}");
                let c = t.cdf(q * 1000.0);
                assert!((c - q).abs() < 0.005, "cdf {q}: {c}");
            }
            assert!(t.min() >= 0.0 && t.max() <= 1000.0);
            let sum: f64 = t.centroids().iter().map(|c| c.1).sum();
            assert_eq!(sum as u64, n);
        }
    }

    #[test]
    fn switches_to_merging_at_twenty_times_compression() {
        let mut t = TDigest::new(10.0, false);
        for i in 0..199 {
            t.add(i as f64);
        }
        assert!(t.sorting.is_some());
        t.add(199.0);
        assert!(t.sorting.is_none());
        assert_eq!(t.size(), 200);
    }

    #[test]
    fn hdr_matches_elasticsearch() {
        // ES's 190_percentiles_hdr_metric.yml "Basic test" and "Filtered test".
        let mut h = Hdr::new(3);
        for x in [1.0, 51.0, 101.0, 151.0] {
            h.add(x);
        }
        let got: Vec<f64> = [1.0, 5.0, 25.0, 50.0, 75.0, 95.0, 99.0]
            .iter()
            .map(|&p| h.quantile(p))
            .collect();
        assert_eq!(
            got,
            [
                1.0,
                1.0,
                1.0,
                51.0302734375,
                101.0615234375,
                151.1240234375,
                151.1240234375
            ]
        );
        let mut h = Hdr::new(3);
        for x in [151.0, 51.0, 101.0] {
            h.add(x);
        }
        assert_eq!(h.quantile(1.0), 51.0);
        assert_eq!(h.quantile(50.0), 101.03125);
        assert_eq!(h.quantile(99.0), 151.09375);
        assert_eq!(h.rank(101.0), 100.0 * 2.0 / 3.0);
        assert_eq!(h.rank(50.0), 0.0);
        assert!(Hdr::new(3).quantile(50.0).is_nan());
    }

    #[test]
    fn merged_states_answer_as_one() {
        let mut a = TDigest::new(DEFAULT_COMPRESSION, false);
        let mut b = TDigest::new(DEFAULT_COMPRESSION, false);
        for i in 0..10 {
            a.add(i as f64);
            b.add((i + 10) as f64);
        }
        a.merge(b);
        assert_eq!(a.quantile(0.5), 9.5);
        let mut big = TDigest::new(DEFAULT_COMPRESSION, false);
        let mut other = TDigest::new(DEFAULT_COMPRESSION, false);
        for i in 0..3000 {
            big.add(i as f64);
            other.add((i + 3000) as f64);
        }
        big.merge(other);
        assert_eq!(big.size(), 6000);
        assert!((big.quantile(0.5) - 3000.0).abs() < 30.0);
        let mut h = Hdr::new(3);
        let mut g = Hdr::new(3);
        for x in [1.0, 51.0] {
            h.add(x);
        }
        for x in [101.0, 151.0] {
            g.add(x);
        }
        h.merge(g);
        assert_eq!(h.quantile(50.0), 51.0302734375);
        let mut h = Hdr::new(2);
        let mut g = Hdr::new(2);
        for i in 0..5000 {
            g.add(i as f64);
        }
        h.add(1.0);
        h.merge(g);
        assert_eq!(h.count(), 5001);
    }

    #[test]
    fn hdr_rescales_for_smaller_values() {
        let mut h = Hdr::new(2);
        for i in 0..5000 {
            h.add(1000.0 + i as f64);
        }
        h.add(0.5);
        assert_eq!(h.count(), 5001);
        let q = h.quantile(0.0);
        assert!((q - 0.5).abs() < 0.01, "{q}");
        let m = h.quantile(50.0);
        assert!((m - 3499.0).abs() / 3499.0 < 0.01, "{m}");
    }
}
