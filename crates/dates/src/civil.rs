//! Proleptic Gregorian calendar arithmetic on plain integers.
//!
//! Days are counted from 1970-01-01 (day 0); algorithms after Howard
//! Hinnant's `days_from_civil` / `civil_from_days`.

pub(crate) const MS_PER_SECOND: i64 = 1_000;
pub(crate) const MS_PER_MINUTE: i64 = 60 * MS_PER_SECOND;
pub(crate) const MS_PER_HOUR: i64 = 60 * MS_PER_MINUTE;
pub(crate) const MS_PER_DAY: i64 = 24 * MS_PER_HOUR;

/// Years outside this range are rejected so that epoch millis never overflow.
pub(crate) const MAX_ABS_YEAR: i64 = 200_000_000;

pub(crate) fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

pub(crate) fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(year) => 29,
        _ => 28,
    }
}

pub(crate) fn days_in_year(year: i64) -> u32 {
    if is_leap(year) {
        366
    } else {
        365
    }
}

/// Day number (1970-01-01 = 0) of a valid civil date.
pub(crate) fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = month as i64;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + day as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Civil date `(year, month, day)` of a day number.
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// ISO day of week of a day number: Monday = 1 … Sunday = 7.
pub(crate) fn iso_weekday(days: i64) -> u32 {
    // 1970-01-01 was a Thursday.
    ((days + 3).rem_euclid(7) + 1) as u32
}

/// Adds `months` to a civil year/month, returning the new year/month.
pub(crate) fn add_months(year: i64, month: u32, months: i64) -> (i64, u32) {
    let total = year * 12 + (month as i64 - 1) + months;
    (total.div_euclid(12), (total.rem_euclid(12) + 1) as u32)
}

/// Local wall-clock time broken into calendar fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LocalDateTime {
    pub days: i64,
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub milli: u32,
}

impl LocalDateTime {
    /// Breaks local milliseconds (UTC millis shifted by the zone offset).
    pub(crate) fn from_local_millis(local: i64) -> LocalDateTime {
        let days = local.div_euclid(MS_PER_DAY);
        let ms_of_day = local.rem_euclid(MS_PER_DAY);
        let (year, month, day) = civil_from_days(days);
        LocalDateTime {
            days,
            year,
            month,
            day,
            hour: (ms_of_day / MS_PER_HOUR) as u32,
            minute: (ms_of_day / MS_PER_MINUTE % 60) as u32,
            second: (ms_of_day / MS_PER_SECOND % 60) as u32,
            milli: (ms_of_day % MS_PER_SECOND) as u32,
        }
    }

    pub(crate) fn day_of_year(&self) -> u32 {
        (self.days - days_from_civil(self.year, 1, 1)) as u32 + 1
    }

    pub(crate) fn weekday(&self) -> u32 {
        iso_weekday(self.days)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_days() {
        for days in (-800_000..800_000).step_by(37) {
            let (y, m, d) = civil_from_days(days);
            assert!((1..=12).contains(&m));
            assert!(d >= 1 && d <= days_in_month(y, m));
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    #[test]
    fn known_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(civil_from_days(18_993), (2022, 1, 1));
        assert_eq!(iso_weekday(0), 4); // Thursday
        assert_eq!(iso_weekday(days_from_civil(2021, 12, 27)), 1); // Monday
    }

    #[test]
    fn leap_years_and_months() {
        assert!(is_leap(2000) && is_leap(2024) && !is_leap(1900) && !is_leap(2021));
        assert_eq!(days_in_month(2020, 2), 29);
        assert_eq!(days_in_month(2021, 2), 28);
        assert_eq!(add_months(2021, 11, 3), (2022, 2));
        assert_eq!(add_months(2021, 1, -1), (2020, 12));
        assert_eq!(add_months(2021, 1, -13), (2019, 12));
    }

    #[test]
    fn breaks_local_millis() {
        let l = LocalDateTime::from_local_millis(1_634_046_021_659);
        assert_eq!(
            (l.year, l.month, l.day, l.hour, l.minute, l.second, l.milli),
            (2021, 10, 12, 13, 40, 21, 659)
        );
        assert_eq!(l.day_of_year(), 285);
        let l = LocalDateTime::from_local_millis(-1);
        assert_eq!(
            (l.year, l.month, l.day, l.hour, l.milli),
            (1969, 12, 31, 23, 999)
        );
    }
}
