//! Elasticsearch's `MovingFunctions`, the static class `moving_fn` scripts call: each takes a
//! window of values (NaN entries are ignored where ES ignores them) and answers a double,
//! computed exactly as ES computes it (NaN where ES answers NaN, e.g. for an empty window).

/// The largest value; NaN for an empty window (`Arrays.stream(values).max()`, which also
/// answers NaN if any value is NaN).
pub fn max(values: &[f64]) -> f64 {
    if values.iter().any(|v| v.is_nan()) {
        return f64::NAN;
    }
    values.iter().cloned().reduce(f64::max).unwrap_or(f64::NAN)
}

/// The smallest value; NaN for an empty window.
pub fn min(values: &[f64]) -> f64 {
    if values.iter().any(|v| v.is_nan()) {
        return f64::NAN;
    }
    values.iter().cloned().reduce(f64::min).unwrap_or(f64::NAN)
}

/// The sum, NaN values counting as 0; 0 for an empty window.
pub fn sum(values: &[f64]) -> f64 {
    values
        .iter()
        .map(|v| if v.is_nan() { 0.0 } else { *v })
        .sum()
}

/// The arithmetic mean of the non-NaN values; NaN when there are none.
pub fn unweighted_avg(values: &[f64]) -> f64 {
    let (mut avg, mut count) = (0.0, 0u64);
    for v in values.iter().filter(|v| !v.is_nan()) {
        avg += v;
        count += 1;
    }
    if count == 0 {
        f64::NAN
    } else {
        avg / count as f64
    }
}

/// The population standard deviation of the non-NaN values around `avg`.
pub fn std_dev(values: &[f64], avg: f64) -> f64 {
    if avg.is_nan() {
        return f64::NAN;
    }
    let (mut squared_mean, mut count) = (0.0, 0u64);
    for v in values.iter().filter(|v| !v.is_nan()) {
        squared_mean += (v - avg).powi(2);
        count += 1;
    }
    (squared_mean / count as f64).sqrt()
}

/// Weights 1, 2, 3, ... from the oldest value; ES's total weight starts at 1.
pub fn linear_weighted_avg(values: &[f64]) -> f64 {
    let (mut avg, mut total_weight, mut current) = (0.0, 1u64, 1u64);
    for v in values.iter().filter(|v| !v.is_nan()) {
        avg += v * current as f64;
        total_weight += current;
        current += 1;
    }
    if total_weight == 1 {
        f64::NAN
    } else {
        avg / total_weight as f64
    }
}

/// Exponentially weighted moving average.
pub fn ewma(values: &[f64], alpha: f64) -> f64 {
    let mut avg = f64::NAN;
    let mut first = true;
    for v in values.iter().filter(|v| !v.is_nan()) {
        if first {
            avg = *v;
            first = false;
        } else {
            avg = (v * alpha) + (avg * (1.0 - alpha));
        }
    }
    avg
}

/// Double exponential smoothing (level and trend); the level is the answer.
pub fn holt(values: &[f64], alpha: f64, beta: f64) -> f64 {
    let (mut s, mut last_s, mut last_b) = (0.0, 0.0, 0.0);
    let mut counter = 0;
    for v in values.iter().cloned().filter(|v| !v.is_nan()) {
        // ES's first trend is `v - last` with `last = v`: 0.
        let b = if counter == 0 {
            s = v;
            0.0
        } else {
            s = alpha * v + (1.0 - alpha) * (last_s + last_b);
            beta * (s - last_s) + (1.0 - beta) * last_b
        };
        counter += 1;
        last_s = s;
        last_b = b;
    }
    if counter == 0 {
        f64::NAN
    } else {
        s
    }
}

/// Triple exponential smoothing (level, trend, season of `period` values). ES requires at least
/// two full periods of values and fails otherwise with this message.
pub fn holt_winters(
    values: &[f64],
    alpha: f64,
    beta: f64,
    gamma: f64,
    period: i64,
    multiplicative: bool,
) -> Result<f64, String> {
    if values.is_empty() {
        return Ok(f64::NAN);
    }
    let padding = if multiplicative { 0.0000000001 } else { 0.0 };
    if (values.len() as i64) < period.saturating_mul(2) || period <= 0 {
        return Err(format!(
            "Holt-Winters aggregation requires at least (2 * period == 2 * {period} == {}) data-points to function.  Only [{}] were provided.",
            period.saturating_mul(2),
            values.len()
        ));
    }
    let period = period as usize;
    let mut vs = vec![0.0; values.len()];
    let mut counter = 0;
    for v in values.iter().filter(|v| !v.is_nan()) {
        vs[counter] = v + padding;
        counter += 1;
    }
    if counter == 0 {
        return Ok(f64::NAN);
    }
    let (mut s, mut b) = (0.0, 0.0);
    for i in 0..period {
        s += vs[i];
        b += (vs[i + period] - vs[i]) / period as f64;
    }
    s /= period as f64;
    b /= period as f64;
    let mut last_s = s;
    let mut last_b = 0.0;
    let mut seasonal = vec![0.0; values.len()];
    if s != 0.0 {
        for i in 0..period {
            seasonal[i] = vs[i] / s;
        }
    }
    for i in period..vs.len() {
        s = if multiplicative {
            alpha * (vs[i] / seasonal[i - period]) + (1.0 - alpha) * (last_s + last_b)
        } else {
            alpha * (vs[i] - seasonal[i - period]) + (1.0 - alpha) * (last_s + last_b)
        };
        b = beta * (s - last_s) + (1.0 - beta) * last_b;
        seasonal[i] = if multiplicative {
            gamma * (vs[i] / (last_s + last_b)) + (1.0 - gamma) * seasonal[i - period]
        } else {
            gamma * (vs[i] - (last_s - last_b)) + (1.0 - gamma) * seasonal[i - period]
        };
        last_s = s;
        last_b = b;
    }
    let idx = values.len() - period;
    Ok(if multiplicative {
        (s + b) * seasonal[idx]
    } else {
        s + b + seasonal[idx]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn empty_windows() {
        assert!(max(&[]).is_nan());
        assert!(min(&[]).is_nan());
        assert_eq!(sum(&[]), 0.0);
        assert!(unweighted_avg(&[]).is_nan());
        assert!(linear_weighted_avg(&[]).is_nan());
        assert!(ewma(&[], 0.3).is_nan());
        assert!(holt(&[], 0.3, 0.1).is_nan());
        assert!(std_dev(&[], f64::NAN).is_nan());
        assert!(holt_winters(&[], 0.3, 0.1, 0.2, 2, false).unwrap().is_nan());
    }

    #[test]
    fn simple_functions() {
        let v = [1.0, 4.0, 2.0, 8.0];
        assert_eq!(max(&v), 8.0);
        assert_eq!(min(&v), 1.0);
        assert_eq!(sum(&[1.0, f64::NAN, 2.0]), 3.0);
        assert_eq!(unweighted_avg(&v), 15.0 / 4.0);
        assert_eq!(unweighted_avg(&[f64::NAN, 3.0]), 3.0);
        // Weights 1..4, total weight 1 + (1+2+3+4) = 11 as ES counts it.
        assert!(close(
            linear_weighted_avg(&v),
            (1.0 + 8.0 + 6.0 + 32.0) / 11.0
        ));
        let avg = unweighted_avg(&v);
        let var = v.iter().map(|x| (x - avg).powi(2)).sum::<f64>() / 4.0;
        assert!(close(std_dev(&v, avg), var.sqrt()));
    }

    #[test]
    fn smoothing() {
        let v = [1.0, 4.0, 2.0];
        // ewma: 1 → 0.5*4 + 0.5*1 = 2.5 → 0.5*2 + 0.5*2.5 = 2.25
        assert!(close(ewma(&v, 0.5), 2.25));
        // holt: s0 = 1, b0 = 0; s1 = .5*4 + .5*(1+0) = 2.5, b1 = .5*(1.5) + 0 = .75;
        // s2 = .5*2 + .5*(2.5+.75) = 2.625
        assert!(close(holt(&v, 0.5, 0.5), 2.625));
        assert!(holt_winters(&v, 0.5, 0.5, 0.5, 2, false).is_err());
    }

    #[test]
    fn holt_winters_additive() {
        let v = [1.0, 2.0, 3.0, 4.0];
        // period 2: s = (1+2)/2 = 1.5; b = ((3-1)/2 + (4-2)/2)/2 = 1; seasonal = [1/1.5, 2/1.5]
        let a = 0.5;
        let (mut s, mut b, mut ls, mut lb) = (1.5, 1.0, 1.5, 0.0);
        let mut seas = [1.0 / 1.5, 2.0 / 1.5, 0.0, 0.0];
        for i in 2..4 {
            s = a * (v[i] - seas[i - 2]) + (1.0 - a) * (ls + lb);
            b = a * (s - ls) + (1.0 - a) * lb;
            seas[i] = a * (v[i] - (ls - lb)) + (1.0 - a) * seas[i - 2];
            ls = s;
            lb = b;
        }
        let want = s + b + seas[2];
        assert!(close(holt_winters(&v, a, a, a, 2, false).unwrap(), want));
    }
}
