//! ES time values (`30s`, `1d`, `500ms`), as used by `fixed_interval`,
//! `refresh_interval` and `sync_interval`.

use crate::civil::{MS_PER_DAY, MS_PER_HOUR, MS_PER_MINUTE, MS_PER_SECOND};
use crate::error::DateError;

/// Parses a time value into milliseconds: `1d`, `12h`, `30m`, `10s`,
/// `500ms`, `100micros`, `100nanos` (rounded down to milliseconds), or a
/// plain number of milliseconds. `-1` (disabled) is kept as `-1`.
pub fn parse_time_value(s: &str) -> Result<i64, DateError> {
    parse_time_value_setting(s, "time_value")
}

/// [`parse_time_value`], naming `setting` in error messages as ES does:
/// `failed to parse setting [index.refresh_interval] with value [x] as a
/// time value: unit is missing or unrecognized`.
pub fn parse_time_value_setting(s: &str, setting: &str) -> Result<i64, DateError> {
    let normalized = s.trim().to_ascii_lowercase();
    // Longest suffixes first: `ms` before `s`, `nanos` before `s`.
    const UNITS: [(&str, Scale); 7] = [
        ("nanos", Scale::Divide(1_000_000)),
        ("micros", Scale::Divide(1_000)),
        ("ms", Scale::Multiply(1)),
        ("s", Scale::Multiply(MS_PER_SECOND)),
        ("m", Scale::Multiply(MS_PER_MINUTE)),
        ("h", Scale::Multiply(MS_PER_HOUR)),
        ("d", Scale::Multiply(MS_PER_DAY)),
    ];
    let (number, scale) = UNITS
        .iter()
        .find_map(|(suffix, scale)| normalized.strip_suffix(suffix).map(|n| (n.trim(), *scale)))
        .unwrap_or((normalized.as_str(), Scale::Multiply(1)));
    let missing_unit = || {
        DateError::new(format!(
            "failed to parse setting [{setting}] with value [{s}] as a time value: unit is missing or unrecognized"
        ))
    };
    let value: i64 = match number.parse() {
        Ok(v) => v,
        Err(_) if number.parse::<f64>().is_ok() && !number.is_empty() => {
            return Err(DateError::new(format!(
                "failed to parse [{s}], fractional time values are not supported"
            )))
        }
        Err(_) => return Err(missing_unit()),
    };
    if value < -1 {
        return Err(DateError::new(format!(
            "failed to parse setting [{setting}] with value [{s}] as a time value: negative durations are not supported"
        )));
    }
    if value == -1 && number == normalized.as_str() {
        return Ok(-1);
    }
    match scale {
        Scale::Multiply(factor) => value.checked_mul(factor).ok_or_else(|| {
            DateError::new(format!(
                "failed to parse setting [{setting}] with value [{s}] as a time value: value is too large"
            ))
        }),
        Scale::Divide(divisor) => Ok(value / divisor),
    }
}

#[derive(Clone, Copy)]
enum Scale {
    Multiply(i64),
    Divide(i64),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_time_value("1d").unwrap(), 86_400_000);
        assert_eq!(parse_time_value("12h").unwrap(), 43_200_000);
        assert_eq!(parse_time_value("30m").unwrap(), 1_800_000);
        assert_eq!(parse_time_value("10s").unwrap(), 10_000);
        assert_eq!(parse_time_value("500ms").unwrap(), 500);
        assert_eq!(parse_time_value("1500micros").unwrap(), 1);
        assert_eq!(parse_time_value("100micros").unwrap(), 0);
        assert_eq!(parse_time_value("2000000nanos").unwrap(), 2);
        assert_eq!(parse_time_value("250").unwrap(), 250);
        assert_eq!(parse_time_value("0").unwrap(), 0);
        assert_eq!(parse_time_value("-1").unwrap(), -1);
        assert_eq!(parse_time_value("-1s").unwrap(), -1_000);
        assert_eq!(parse_time_value(" 5S ").unwrap(), 5_000);
        assert_eq!(parse_time_value("1 h").unwrap(), 3_600_000);
    }

    #[test]
    fn rejects_bad_values() {
        assert_eq!(
            parse_time_value_setting("abc", "index.refresh_interval")
                .unwrap_err()
                .reason,
            "failed to parse setting [index.refresh_interval] with value [abc] as a time value: unit is missing or unrecognized"
        );
        assert!(parse_time_value("1w")
            .unwrap_err()
            .reason
            .contains("unit is missing"));
        assert!(parse_time_value("").is_err());
        assert!(parse_time_value("ms").is_err());
        assert!(parse_time_value("1.5h")
            .unwrap_err()
            .reason
            .contains("fractional time values are not supported"));
        assert!(parse_time_value("-5s")
            .unwrap_err()
            .reason
            .contains("negative durations"));
        assert!(parse_time_value("99999999999999999d").is_err());
    }
}
