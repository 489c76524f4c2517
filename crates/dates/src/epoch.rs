//! `epoch_millis` and `epoch_second`: optionally negative numbers with an
//! optional decimal fraction.

use std::fmt::Write;

use crate::named::EpochUnit;
use crate::Millis;

/// Parses `-?\d{1,19}(\.\d+)?`. The instant is floored to a millisecond,
/// as `Instant.toEpochMilli` does. With `round_up`, whole seconds of
/// `epoch_second` extend to their last millisecond (ES round-up parser).
pub(crate) fn parse(input: &str, unit: EpochUnit, round_up: bool) -> Option<Millis> {
    let s = input.as_bytes();
    let (negative, digits) = match s.first()? {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    let int_len = digits.iter().take_while(|b| b.is_ascii_digit()).count();
    if int_len == 0 || int_len > 19 {
        return None;
    }
    let mut whole: i128 = 0;
    for &b in &digits[..int_len] {
        whole = whole * 10 + (b - b'0') as i128;
    }
    // Fraction digits, as nanoseconds of the unit.
    let max_frac = match unit {
        EpochUnit::Millis => 6,
        EpochUnit::Seconds => 9,
    };
    let rest = &digits[int_len..];
    let (frac, frac_len) = match rest.split_first() {
        None => (0i128, 0),
        Some((b'.', frac)) => {
            if frac.is_empty() || frac.len() > max_frac || !frac.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let mut value: i128 = 0;
            for &b in frac {
                value = value * 10 + (b - b'0') as i128;
            }
            (value, frac.len())
        }
        Some(_) => return None,
    };
    let scale = 10i128.pow((max_frac - frac_len) as u32);
    let per_unit = 10i128.pow(max_frac as u32);
    // Total in units of 1e-6 ms (millis) or 1e-9 s (seconds).
    let mut total = whole * per_unit + frac * scale;
    if negative {
        total = -total;
    }
    // Both scales make one unit of `total` a millionth of a millisecond.
    let mut ms = total.div_euclid(1_000_000);
    if round_up && unit == EpochUnit::Seconds && frac_len == 0 {
        ms += 999;
    }
    i64::try_from(ms).ok()
}

/// Prints millis as `epoch_millis` (`1640534400000`) or `epoch_second`
/// (`1640534400`, or `1640534400.5` with a fraction).
pub(crate) fn print(ms: Millis, unit: EpochUnit, out: &mut String) {
    match unit {
        EpochUnit::Millis => {
            let _ = write!(out, "{ms}");
        }
        EpochUnit::Seconds => {
            let abs = ms.unsigned_abs();
            if ms < 0 {
                out.push('-');
            }
            let _ = write!(out, "{}", abs / 1000);
            let mut frac = abs % 1000;
            if frac != 0 {
                let mut width = 3;
                while frac % 10 == 0 {
                    frac /= 10;
                    width -= 1;
                }
                let _ = write!(out, ".{frac:0width$}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(s: &str) -> Option<Millis> {
        parse(s, EpochUnit::Millis, false)
    }

    fn seconds(s: &str) -> Option<Millis> {
        parse(s, EpochUnit::Seconds, false)
    }

    #[test]
    fn parses_epoch_millis() {
        assert_eq!(millis("1640534400000"), Some(1_640_534_400_000));
        assert_eq!(millis("0"), Some(0));
        assert_eq!(millis("-1000"), Some(-1000));
        assert_eq!(millis("1234.5678"), Some(1234));
        assert_eq!(millis("-1234.5"), Some(-1235));
        for bad in ["", "-", "abc", "12a", "1.", "1.1234567", "+5", " 5", "1e3"] {
            assert_eq!(millis(bad), None, "{bad}");
        }
    }

    #[test]
    fn parses_epoch_seconds() {
        assert_eq!(seconds("1640534400"), Some(1_640_534_400_000));
        assert_eq!(seconds("1.5"), Some(1500));
        assert_eq!(seconds("-1.5"), Some(-1500));
        assert_eq!(seconds("1.0005"), Some(1000));
        assert_eq!(seconds("-1.0005"), Some(-1001));
        assert_eq!(parse("10", EpochUnit::Seconds, true), Some(10_999));
        assert_eq!(parse("10.5", EpochUnit::Seconds, true), Some(10_500));
        assert_eq!(seconds("99999999999999999"), None);
    }

    #[test]
    fn prints_epochs() {
        let show = |ms, unit| {
            let mut out = String::new();
            print(ms, unit, &mut out);
            out
        };
        assert_eq!(show(1_640_534_400_000, EpochUnit::Millis), "1640534400000");
        assert_eq!(show(1_640_534_400_000, EpochUnit::Seconds), "1640534400");
        assert_eq!(show(1_500, EpochUnit::Seconds), "1.5");
        assert_eq!(show(1_050, EpochUnit::Seconds), "1.05");
        assert_eq!(show(-1_500, EpochUnit::Seconds), "-1.5");
    }
}
