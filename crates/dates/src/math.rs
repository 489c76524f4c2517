//! ES date math: `now-1d/d`, `2020-01-01||+1M/d`.

use crate::civil::{
    add_months, civil_from_days, days_from_civil, days_in_month, iso_weekday, MAX_ABS_YEAR,
    MS_PER_DAY, MS_PER_HOUR, MS_PER_MINUTE, MS_PER_SECOND,
};
use crate::error::DateError;
use crate::format::DateFormat;
use crate::tz::Tz;
use crate::Millis;

/// Evaluates an ES date math expression.
///
/// The anchor is `now` or a date followed by `||`; a date without `||` is
/// parsed on its own. Then come operations: `+N<unit>`, `-N<unit>` (N
/// defaults to 1) and `/<unit>` (rounding), with units `y M w d h H m s`.
/// Calendar steps and rounding work on wall-clock time in `tz`.
///
/// With `round_up` (the `gt` and `lte` bounds of a range), rounding goes to
/// the last millisecond of the unit, and a bare date without `||` fills its
/// missing time fields with 23:59:59.999; otherwise rounding goes to the
/// first millisecond (`gte`, `lt`).
pub fn parse_date_math(
    expr: &str,
    now: Millis,
    format: &DateFormat,
    tz: &Tz,
    round_up: bool,
) -> Result<Millis, DateError> {
    if expr.is_empty() {
        return Err(DateError::new("cannot parse empty date"));
    }
    let (anchor, math) = if let Some(math) = expr.strip_prefix("now") {
        (now, math)
    } else {
        match expr.find("||") {
            None => return format.parse_rounding(expr, tz, round_up),
            Some(idx) => (
                format.parse_rounding(&expr[..idx], tz, false)?,
                &expr[idx + 2..],
            ),
        }
    };
    apply_math(math, anchor, tz, round_up)
}

#[derive(Clone, Copy)]
enum Unit {
    Year,
    Month,
    Week,
    Day,
    Hour,
    Minute,
    Second,
}

fn apply_math(math: &str, mut time: Millis, tz: &Tz, round_up: bool) -> Result<Millis, DateError> {
    let s = math.as_bytes();
    let overflow = || DateError::new(format!("failed to parse date math [{math}]"));
    let mut i = 0;
    while i < s.len() {
        let op = s[i];
        i += 1;
        let (round, sign) = match op {
            b'/' => (true, 1),
            b'+' => (false, 1),
            b'-' => (false, -1),
            _ => {
                return Err(DateError::new(format!(
                    "operator not supported for date math [{math}]"
                )))
            }
        };
        if i >= s.len() {
            return Err(DateError::new(format!("truncated date math [{math}]")));
        }
        let digits = s[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        let num: i64 = if digits == 0 {
            1
        } else {
            let n = math[i..i + digits].parse::<i32>().map_err(|_| overflow())?;
            i += digits;
            if i >= s.len() {
                return Err(DateError::new(format!("truncated date math [{math}]")));
            }
            n.into()
        };
        if round && num != 1 {
            return Err(DateError::new(format!(
                "rounding `/` can only be used on single unit types [{math}]"
            )));
        }
        let unit = match s[i] {
            b'y' => Unit::Year,
            b'M' => Unit::Month,
            b'w' => Unit::Week,
            b'd' => Unit::Day,
            b'h' | b'H' => Unit::Hour,
            b'm' => Unit::Minute,
            b's' => Unit::Second,
            _ => {
                let unit = math[i..].chars().next().unwrap_or_default();
                return Err(DateError::new(format!(
                    "unit [{unit}] not supported for date math [{math}]"
                )));
            }
        };
        i += 1;
        time = if round {
            let floored = round_down(time, unit, tz);
            if round_up {
                add(floored, unit, 1, tz).ok_or_else(overflow)? - 1
            } else {
                floored
            }
        } else {
            add(time, unit, sign * num, tz).ok_or_else(overflow)?
        };
    }
    Ok(time)
}

/// Applies `f` to the local wall-clock time of `time` and converts back,
/// keeping the original offset when the result is ambiguous.
fn with_local(time: Millis, tz: &Tz, f: impl FnOnce(i64) -> Option<i64>) -> Option<Millis> {
    let offset = tz.offset_millis_at(time);
    let local = f(time.checked_add(offset)?)?;
    Some(tz.from_local_preferring(local, Some(offset)))
}

fn add(time: Millis, unit: Unit, n: i64, tz: &Tz) -> Option<Millis> {
    let add_months_local = |months: i64| {
        with_local(time, tz, |local| {
            let days = local.div_euclid(MS_PER_DAY);
            let ms_of_day = local.rem_euclid(MS_PER_DAY);
            let (y, m, d) = civil_from_days(days);
            let (y, m) = add_months(y, m, months);
            if y.abs() > MAX_ABS_YEAR {
                return None;
            }
            let d = d.min(days_in_month(y, m));
            Some(days_from_civil(y, m, d) * MS_PER_DAY + ms_of_day)
        })
    };
    let fixed = |unit_ms: i64| time.checked_add(n.checked_mul(unit_ms)?);
    match unit {
        Unit::Year => add_months_local(n.checked_mul(12)?),
        Unit::Month => add_months_local(n),
        Unit::Week => with_local(time, tz, |l| l.checked_add(n.checked_mul(7 * MS_PER_DAY)?)),
        Unit::Day => with_local(time, tz, |l| l.checked_add(n.checked_mul(MS_PER_DAY)?)),
        Unit::Hour => fixed(MS_PER_HOUR),
        Unit::Minute => fixed(MS_PER_MINUTE),
        Unit::Second => fixed(MS_PER_SECOND),
    }
}

fn round_down(time: Millis, unit: Unit, tz: &Tz) -> Millis {
    let truncate = |local: i64| -> i64 {
        let days = local.div_euclid(MS_PER_DAY);
        match unit {
            Unit::Year => {
                let (y, _, _) = civil_from_days(days);
                days_from_civil(y, 1, 1) * MS_PER_DAY
            }
            Unit::Month => {
                let (y, m, _) = civil_from_days(days);
                days_from_civil(y, m, 1) * MS_PER_DAY
            }
            Unit::Week => (days - (iso_weekday(days) as i64 - 1)) * MS_PER_DAY,
            Unit::Day => days * MS_PER_DAY,
            Unit::Hour => local - local.rem_euclid(MS_PER_HOUR),
            Unit::Minute => local - local.rem_euclid(MS_PER_MINUTE),
            Unit::Second => local - local.rem_euclid(MS_PER_SECOND),
        }
    };
    with_local(time, tz, |local| Some(truncate(local))).unwrap_or(time)
}

#[cfg(test)]
mod tests {
    use super::*;

    // 2021-12-27T15:30:45.123Z
    const NOW: Millis = 1_640_619_045_123;

    fn math(expr: &str, round_up: bool) -> Millis {
        parse_date_math(expr, NOW, &DateFormat::default_es(), &Tz::utc(), round_up)
            .unwrap_or_else(|e| panic!("{expr}: {e}"))
    }

    fn math_err(expr: &str) -> String {
        parse_date_math(expr, NOW, &DateFormat::default_es(), &Tz::utc(), false)
            .unwrap_err()
            .reason
    }

    #[test]
    fn now_with_arithmetic() {
        assert_eq!(math("now", false), NOW);
        assert_eq!(math("now", true), NOW);
        assert_eq!(math("now+1h", false), NOW + MS_PER_HOUR);
        assert_eq!(math("now-30m", false), NOW - 30 * MS_PER_MINUTE);
        assert_eq!(math("now+10s", false), NOW + 10_000);
        assert_eq!(math("now-1d", false), NOW - MS_PER_DAY);
        assert_eq!(math("now-2w", false), NOW - 14 * MS_PER_DAY);
        assert_eq!(math("now+d", false), NOW + MS_PER_DAY);
        assert_eq!(math("now-1H", false), NOW - MS_PER_HOUR);
    }

    #[test]
    fn now_minus_five_days_rounded_to_day() {
        // 2021-12-22T00:00:00.000Z and 2021-12-22T23:59:59.999Z
        assert_eq!(math("now-5d/d", false), 1_640_131_200_000);
        assert_eq!(math("now-5d/d", true), 1_640_217_599_999);
    }

    #[test]
    fn rounding_each_unit() {
        // now = 2021-12-27T15:30:45.123Z, a Monday
        assert_eq!(math("now/y", false), 1_609_459_200_000);
        assert_eq!(math("now/y", true), 1_640_995_199_999);
        assert_eq!(math("now/M", false), 1_638_316_800_000);
        assert_eq!(math("now/M", true), 1_640_995_199_999);
        assert_eq!(math("now/w", false), 1_640_563_200_000);
        assert_eq!(math("now/w", true), 1_640_563_200_000 + 7 * MS_PER_DAY - 1);
        assert_eq!(math("now/h", false), 1_640_617_200_000);
        assert_eq!(math("now/h", true), 1_640_620_799_999);
        assert_eq!(math("now/m", false), 1_640_619_000_000);
        assert_eq!(math("now/s", false), 1_640_619_045_000);
        assert_eq!(math("now/s", true), 1_640_619_045_999);
    }

    #[test]
    fn anchored_date_math() {
        // 2020-01-01 + 1 month = 2020-02-01
        assert_eq!(math("2020-01-01||+1M/d", false), 1_580_515_200_000);
        assert_eq!(math("2020-01-01||+1M/d", true), 1_580_601_599_999);
        assert_eq!(math("2021-12-31T23:59:59||/M", false), 1_638_316_800_000);
        assert_eq!(math("2021-12-31T23:59:59||/M", true), 1_640_995_199_999);
        // ES docs: 2014-11-18||/M rounds to 2014-11-01 / 2014-11-30T23:59:59.999
        assert_eq!(math("2014-11-18||/M", false), 1_414_800_000_000);
        assert_eq!(math("2014-11-18||/M", true), 1_417_391_999_999);
        // Month arithmetic clamps to the end of the month.
        assert_eq!(math("2020-01-31||+1M", false), 1_582_934_400_000);
        assert_eq!(math("2020-02-29||+1y", false), 1_614_470_400_000);
        assert_eq!(math("2020-01-31||+13M", false), 1_614_470_400_000);
        // An anchor with `||` is not rounded up even for `lte`.
        assert_eq!(math("2020-01-01||", true), 1_577_836_800_000);
        assert_eq!(
            math("1640534400000||+1d", false),
            1_640_534_400_000 + MS_PER_DAY
        );
    }

    #[test]
    fn bare_dates_round_up_missing_fields() {
        assert_eq!(math("2020-01-01", false), 1_577_836_800_000);
        assert_eq!(math("2020-01-01", true), 1_577_923_199_999);
        assert_eq!(math("2020-01-01T10:00", true), 1_577_872_859_999);
        assert_eq!(math("2020-01-01T10:00:00.000Z", true), 1_577_872_800_000);
        // ES docs: with yyyy-MM, `gt: 2099-12` becomes 2099-12-01T23:59:59.999
        assert_eq!(math("2099-12", true), 4_099_852_799_999);
        assert_eq!(math("1640534400000", true), 1_640_534_400_000);
        let seconds = DateFormat::parse("epoch_second").unwrap();
        assert_eq!(
            parse_date_math("1640534400", NOW, &seconds, &Tz::utc(), true).unwrap(),
            1_640_534_400_999
        );
    }

    #[test]
    fn math_in_a_time_zone() {
        let plus8 = Tz::parse("+08:00").unwrap();
        let f = DateFormat::default_es();
        // NOW is 2021-12-27T23:30:45.123+08:00
        let day = parse_date_math("now/d", NOW, &f, &plus8, false).unwrap();
        assert_eq!(day, 1_640_534_400_000);
        // The anchor is read in the zone, too.
        let d = parse_date_math("2021-12-27||/d", NOW, &f, &plus8, true).unwrap();
        assert_eq!(d, 1_640_534_400_000 + MS_PER_DAY - 1);
        // Days follow the wall clock across DST: 2021-03-13 noon + 1d in New York
        // is 23 hours later.
        let ny = Tz::parse("America/New_York").unwrap();
        let start = parse_date_math("2021-03-13T12:00:00", NOW, &f, &ny, false).unwrap();
        let next = parse_date_math("2021-03-13T12:00:00||+1d", NOW, &f, &ny, false).unwrap();
        assert_eq!(next - start, 23 * MS_PER_HOUR);
        let hour = parse_date_math("2021-03-13T12:00:00||+24h", NOW, &f, &ny, false).unwrap();
        assert_eq!(hour - start, 24 * MS_PER_HOUR);
    }

    #[test]
    fn math_errors() {
        assert_eq!(math_err(""), "cannot parse empty date");
        assert_eq!(
            math_err("now*1d"),
            "operator not supported for date math [*1d]"
        );
        assert_eq!(math_err("now-"), "truncated date math [-]");
        assert_eq!(math_err("now-5"), "truncated date math [-5]");
        assert_eq!(
            math_err("now-5x"),
            "unit [x] not supported for date math [-5x]"
        );
        assert_eq!(
            math_err("now/2d"),
            "rounding `/` can only be used on single unit types [/2d]"
        );
        assert_eq!(
            math_err("garbage"),
            "failed to parse date field [garbage] with format [strict_date_optional_time||epoch_millis]"
        );
        assert_eq!(
            math_err("garbage||+1d"),
            "failed to parse date field [garbage] with format [strict_date_optional_time||epoch_millis]"
        );
        assert!(parse_date_math(
            "now+99999999999y",
            NOW,
            &DateFormat::default_es(),
            &Tz::utc(),
            false
        )
        .is_err());
        assert!(parse_date_math(
            "now+2000000000y",
            NOW,
            &DateFormat::default_es(),
            &Tz::utc(),
            false
        )
        .is_err());
    }
}
