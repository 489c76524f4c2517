//! Fields collected while parsing, and their resolution into an instant
//! with the ES defaults for missing fields.

use crate::civil::{
    days_from_civil, days_in_month, days_in_year, iso_weekday, MAX_ABS_YEAR, MS_PER_DAY,
    MS_PER_HOUR, MS_PER_MINUTE, MS_PER_SECOND,
};
use crate::tz::Tz;
use crate::Millis;

/// A zone found in the input itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ParsedZone {
    /// Seconds east of UTC.
    Offset(i32),
    Region(chrono_tz::Tz),
}

/// Everything a format can extract from its input; `None` = not present.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub year: Option<i64>,
    pub month: Option<u32>,
    pub day: Option<u32>,
    pub day_of_year: Option<u32>,
    pub weekday: Option<u32>,
    pub hour: Option<u32>,
    pub clock_hour: Option<u32>,
    pub hour_of_ampm: Option<u32>,
    pub clock_hour_of_ampm: Option<u32>,
    pub pm: Option<bool>,
    pub minute: Option<u32>,
    pub second: Option<u32>,
    pub nanos: Option<u32>,
    pub zone: Option<ParsedZone>,
}

impl Parsed {
    /// The instant the fields describe, or `None` when they are out of
    /// range (`2021-02-30`, hour 25). Missing fields default like ES:
    /// year 1970, month and day 1, time 00:00:00.000 — or, with `round_up`
    /// (the `gt`/`lte` bounds of a range), 23:59:59.999 for the time.
    /// Without a zone in the input, the local time is read in `tz`.
    pub(crate) fn resolve(&self, tz: &Tz, round_up: bool) -> Option<Millis> {
        let year = self.year.unwrap_or(1970);
        if year.abs() > MAX_ABS_YEAR {
            return None;
        }
        let (month, day) = match self.day_of_year {
            Some(doy) if self.month.is_none() && self.day.is_none() => {
                if doy == 0 || doy > days_in_year(year) {
                    return None;
                }
                let days = days_from_civil(year, 1, 1) + doy as i64 - 1;
                let (_, m, d) = crate::civil::civil_from_days(days);
                (m, d)
            }
            _ => (self.month.unwrap_or(1), self.day.unwrap_or(1)),
        };
        if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
            return None;
        }
        let days = days_from_civil(year, month, day);
        if let Some(wd) = self.weekday {
            if wd != iso_weekday(days) {
                return None;
            }
        }
        let hour = self.hour_of_day(round_up)?;
        let minute = self.minute.unwrap_or(if round_up { 59 } else { 0 });
        let second = self.second.unwrap_or(if round_up { 59 } else { 0 });
        let nanos = self.nanos.unwrap_or(if round_up { 999_999_999 } else { 0 });
        if minute > 59 || second > 59 {
            return None;
        }
        let local = days * MS_PER_DAY
            + hour as i64 * MS_PER_HOUR
            + minute as i64 * MS_PER_MINUTE
            + second as i64 * MS_PER_SECOND
            + (nanos / 1_000_000) as i64;
        Some(match self.zone {
            Some(ParsedZone::Offset(secs)) => local - secs as i64 * MS_PER_SECOND,
            Some(ParsedZone::Region(region)) => Tz::Named(region).from_local(local),
            None => tz.from_local(local),
        })
    }

    fn hour_of_day(&self, round_up: bool) -> Option<u32> {
        if let Some(h) = self.hour {
            return (h <= 23).then_some(h);
        }
        if let Some(k) = self.clock_hour {
            return (1..=24).contains(&k).then_some(k % 24);
        }
        let of_ampm = match (self.hour_of_ampm, self.clock_hour_of_ampm) {
            (Some(h), _) => {
                if h > 11 {
                    return None;
                }
                h
            }
            (None, Some(h)) => {
                if !(1..=12).contains(&h) {
                    return None;
                }
                // Without an AM/PM marker, read `h` as the hour of the day.
                if self.pm.is_none() {
                    return Some(h);
                }
                h % 12
            }
            (None, None) => return Some(if round_up { 23 } else { 0 }),
        };
        Some(of_ampm + if self.pm == Some(true) { 12 } else { 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_missing_fields() {
        let p = Parsed {
            year: Some(2020),
            ..Parsed::default()
        };
        assert_eq!(p.resolve(&Tz::utc(), false), Some(1_577_836_800_000));
        assert_eq!(p.resolve(&Tz::utc(), true), Some(1_577_923_199_999));
        assert_eq!(Parsed::default().resolve(&Tz::utc(), false), Some(0));
    }

    #[test]
    fn rejects_invalid_dates() {
        let p = Parsed {
            year: Some(2021),
            month: Some(2),
            day: Some(29),
            ..Parsed::default()
        };
        assert_eq!(p.resolve(&Tz::utc(), false), None);
        let p = Parsed {
            hour: Some(24),
            ..Parsed::default()
        };
        assert_eq!(p.resolve(&Tz::utc(), false), None);
    }

    #[test]
    fn resolves_twelve_hour_clock() {
        let at = |h: u32, pm: Option<bool>| {
            Parsed {
                clock_hour_of_ampm: Some(h),
                pm,
                ..Parsed::default()
            }
            .resolve(&Tz::utc(), false)
            .map(|ms| ms / MS_PER_HOUR)
        };
        assert_eq!(at(12, Some(false)), Some(0));
        assert_eq!(at(12, Some(true)), Some(12));
        assert_eq!(at(3, Some(true)), Some(15));
        assert_eq!(at(13, Some(true)), None);
    }

    #[test]
    fn day_of_year() {
        let p = Parsed {
            year: Some(2020),
            day_of_year: Some(60),
            ..Parsed::default()
        };
        // 2020-02-29
        assert_eq!(p.resolve(&Tz::utc(), false), Some(1_582_934_400_000));
    }
}
