//! Calendar buckets for `date_histogram` `calendar_interval`, computed on
//! wall-clock time in a time zone.

use crate::civil::{
    add_months, civil_from_days, days_from_civil, iso_weekday, MS_PER_DAY, MS_PER_HOUR,
    MS_PER_MINUTE,
};
use crate::tz::Tz;
use crate::Millis;

/// A `calendar_interval` unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CalendarUnit {
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
}

impl CalendarUnit {
    /// Parses the ES spellings: `1m`/`minute`, `1h`/`hour`, `1d`/`day`,
    /// `1w`/`week`, `1M`/`month`, `1q`/`quarter`, `1y`/`year`.
    pub fn parse(s: &str) -> Option<CalendarUnit> {
        Some(match s {
            "1m" | "minute" => CalendarUnit::Minute,
            "1h" | "hour" => CalendarUnit::Hour,
            "1d" | "day" => CalendarUnit::Day,
            "1w" | "week" => CalendarUnit::Week,
            "1M" | "month" => CalendarUnit::Month,
            "1q" | "quarter" => CalendarUnit::Quarter,
            "1y" | "year" => CalendarUnit::Year,
            _ => return None,
        })
    }

    /// Length of a sub-day unit in milliseconds.
    fn fixed_millis(self) -> Option<i64> {
        match self {
            CalendarUnit::Minute => Some(MS_PER_MINUTE),
            CalendarUnit::Hour => Some(MS_PER_HOUR),
            _ => None,
        }
    }

    /// First day (day number) of the unit containing local day `days`.
    fn first_day(self, days: i64) -> i64 {
        let (y, m, _) = civil_from_days(days);
        match self {
            CalendarUnit::Week => days - (iso_weekday(days) as i64 - 1),
            CalendarUnit::Month => days_from_civil(y, m, 1),
            CalendarUnit::Quarter => days_from_civil(y, (m - 1) / 3 * 3 + 1, 1),
            CalendarUnit::Year => days_from_civil(y, 1, 1),
            _ => days,
        }
    }

    /// First day of the unit after the one starting on local day `first`.
    fn next_first_day(self, first: i64) -> i64 {
        let months = match self {
            CalendarUnit::Week => return first + 7,
            CalendarUnit::Month => 1,
            CalendarUnit::Quarter => 3,
            CalendarUnit::Year => 12,
            _ => return first + 1,
        };
        let (y, m, _) = civil_from_days(first);
        let (y, m) = add_months(y, m, months);
        days_from_civil(y, m, 1)
    }
}

/// Start of the bucket containing `ms`: the local start of its minute,
/// hour, day, week (Monday), month, quarter or year in `tz`. A midnight
/// skipped by DST starts the day at the end of the gap.
pub fn calendar_floor(ms: Millis, unit: CalendarUnit, tz: &Tz) -> Millis {
    let offset = tz.offset_millis_at(ms);
    let local = ms + offset;
    if let Some(len) = unit.fixed_millis() {
        // Keep the instant's own offset, so the repeated hour when clocks
        // go back forms its own bucket.
        return local - local.rem_euclid(len) - offset;
    }
    let first = unit.first_day(local.div_euclid(MS_PER_DAY));
    tz.from_local(first * MS_PER_DAY)
}

/// Start of the bucket after the one starting at `bucket_start`; calendar
/// units follow the wall clock, so a New York day can last 23 or 25 hours.
pub fn calendar_next(bucket_start: Millis, unit: CalendarUnit, tz: &Tz) -> Millis {
    if let Some(len) = unit.fixed_millis() {
        return calendar_floor(bucket_start, unit, tz) + len;
    }
    let local_day = tz.to_local(bucket_start).div_euclid(MS_PER_DAY);
    let next = unit.next_first_day(unit.first_day(local_day));
    tz.from_local(next * MS_PER_DAY)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEC27_PLUS8: Millis = 1_640_534_400_000; // 2021-12-27T00:00+08:00, Monday

    fn plus8() -> Tz {
        Tz::parse("+08:00").unwrap()
    }

    #[test]
    fn parses_units() {
        assert_eq!(CalendarUnit::parse("1d"), Some(CalendarUnit::Day));
        assert_eq!(CalendarUnit::parse("day"), Some(CalendarUnit::Day));
        assert_eq!(CalendarUnit::parse("1M"), Some(CalendarUnit::Month));
        assert_eq!(CalendarUnit::parse("1m"), Some(CalendarUnit::Minute));
        assert_eq!(CalendarUnit::parse("quarter"), Some(CalendarUnit::Quarter));
        assert_eq!(CalendarUnit::parse("1y"), Some(CalendarUnit::Year));
        assert_eq!(CalendarUnit::parse("1w"), Some(CalendarUnit::Week));
        assert_eq!(CalendarUnit::parse("hour"), Some(CalendarUnit::Hour));
        assert_eq!(CalendarUnit::parse("2d"), None);
        assert_eq!(CalendarUnit::parse("days"), None);
    }

    #[test]
    fn day_buckets_in_fixed_offset() {
        let tz = plus8();
        let d = CalendarUnit::Day;
        assert_eq!(calendar_floor(DEC27_PLUS8, d, &tz), DEC27_PLUS8);
        assert_eq!(calendar_floor(DEC27_PLUS8 + 1, d, &tz), DEC27_PLUS8);
        assert_eq!(
            calendar_floor(DEC27_PLUS8 + MS_PER_DAY - 1, d, &tz),
            DEC27_PLUS8
        );
        assert_eq!(
            calendar_floor(DEC27_PLUS8 - 1, d, &tz),
            DEC27_PLUS8 - MS_PER_DAY
        );
        assert_eq!(calendar_next(DEC27_PLUS8, d, &tz), DEC27_PLUS8 + MS_PER_DAY);
        // In UTC the same instant is 2021-12-26T16:00, inside the 26th.
        let utc_day = calendar_floor(DEC27_PLUS8, d, &Tz::utc());
        assert_eq!(utc_day, DEC27_PLUS8 - 16 * MS_PER_HOUR);
    }

    #[test]
    fn week_buckets_start_monday() {
        let tz = plus8();
        let w = CalendarUnit::Week;
        // Sunday 2022-01-02 23:00 +08:00 belongs to the week of Monday 27 Dec.
        let sunday_night = DEC27_PLUS8 + 6 * MS_PER_DAY + 23 * MS_PER_HOUR;
        assert_eq!(calendar_floor(sunday_night, w, &tz), DEC27_PLUS8);
        assert_eq!(
            calendar_next(DEC27_PLUS8, w, &tz),
            DEC27_PLUS8 + 7 * MS_PER_DAY
        );
        assert_eq!(
            calendar_floor(DEC27_PLUS8 + 7 * MS_PER_DAY, w, &tz),
            DEC27_PLUS8 + 7 * MS_PER_DAY
        );
        // 1970-01-01 was a Thursday: its week started 1969-12-29.
        assert_eq!(calendar_floor(0, w, &Tz::utc()), -3 * MS_PER_DAY);
    }

    #[test]
    fn month_quarter_year_buckets() {
        let utc = Tz::utc();
        let ms = 1_640_599_872_345; // 2021-12-27T10:11:12.345Z
        let dec1 = 1_638_316_800_000;
        let jan1_2022 = 1_640_995_200_000;
        assert_eq!(calendar_floor(ms, CalendarUnit::Month, &utc), dec1);
        assert_eq!(calendar_next(dec1, CalendarUnit::Month, &utc), jan1_2022);
        let oct1 = 1_633_046_400_000;
        assert_eq!(calendar_floor(ms, CalendarUnit::Quarter, &utc), oct1);
        assert_eq!(calendar_next(oct1, CalendarUnit::Quarter, &utc), jan1_2022);
        let jan1_2021 = 1_609_459_200_000;
        assert_eq!(calendar_floor(ms, CalendarUnit::Year, &utc), jan1_2021);
        assert_eq!(
            calendar_next(jan1_2021, CalendarUnit::Year, &utc),
            jan1_2022
        );
        // February 2020 has 29 days.
        let feb1_2020 = 1_580_515_200_000;
        assert_eq!(
            calendar_next(feb1_2020, CalendarUnit::Month, &utc) - feb1_2020,
            29 * MS_PER_DAY
        );
        // Month start in +08:00: 2021-12-01T00:00+08:00.
        assert_eq!(
            calendar_floor(DEC27_PLUS8, CalendarUnit::Month, &plus8()),
            dec1 - 8 * MS_PER_HOUR
        );
    }

    #[test]
    fn minute_and_hour_buckets() {
        let ms = 1_640_599_872_345; // 10:11:12.345Z
        let utc = Tz::utc();
        assert_eq!(
            calendar_floor(ms, CalendarUnit::Minute, &utc),
            1_640_599_860_000
        );
        assert_eq!(
            calendar_floor(ms, CalendarUnit::Hour, &utc),
            1_640_599_200_000
        );
        assert_eq!(
            calendar_next(1_640_599_200_000, CalendarUnit::Hour, &utc),
            1_640_602_800_000
        );
        // Half-hour offsets bucket on local hours.
        let kolkata = Tz::parse("Asia/Kolkata").unwrap();
        let h = calendar_floor(ms, CalendarUnit::Hour, &kolkata); // local 15:41 -> 15:00 = 09:30Z
        assert_eq!(h, 1_640_599_200_000 - 30 * MS_PER_MINUTE);
    }

    #[test]
    fn new_york_days_across_dst() {
        let ny = Tz::parse("America/New_York").unwrap();
        let d = CalendarUnit::Day;
        // 2021-03-14 (spring forward) is 23 hours long.
        let mar14 = 1_615_698_000_000; // 2021-03-14T00:00-05:00
        assert_eq!(calendar_floor(mar14 + 12 * MS_PER_HOUR, d, &ny), mar14);
        assert_eq!(calendar_next(mar14, d, &ny) - mar14, 23 * MS_PER_HOUR);
        // 2021-11-07 (fall back) is 25 hours long.
        let nov7 = 1_636_257_600_000; // 2021-11-07T00:00-04:00
        assert_eq!(calendar_floor(nov7 + 24 * MS_PER_HOUR, d, &ny), nov7);
        assert_eq!(calendar_next(nov7, d, &ny) - nov7, 25 * MS_PER_HOUR);
        // Every other day is 24 hours, and buckets tile without gaps.
        let mut start = mar14 - 3 * MS_PER_DAY;
        for _ in 0..300 {
            let next = calendar_next(start, d, &ny);
            assert_eq!(calendar_floor(next - 1, d, &ny), start);
            assert_eq!(calendar_floor(next, d, &ny), next);
            start = next;
        }
    }

    #[test]
    fn new_york_months_and_weeks_across_dst() {
        let ny = Tz::parse("America/New_York").unwrap();
        let mar1 = 1_614_574_800_000; // 2021-03-01T00:00-05:00
        let apr1 = 1_617_249_600_000; // 2021-04-01T00:00-04:00
        assert_eq!(calendar_next(mar1, CalendarUnit::Month, &ny), apr1);
        assert_eq!(calendar_floor(apr1 - 1, CalendarUnit::Month, &ny), mar1);
        let mon = 1_615_179_600_000; // 2021-03-08T00:00-05:00, a Monday
        let next = calendar_next(mon, CalendarUnit::Week, &ny);
        assert_eq!(next - mon, 7 * MS_PER_DAY - MS_PER_HOUR);
    }

    #[test]
    fn new_york_hours_when_clocks_go_back() {
        let ny = Tz::parse("America/New_York").unwrap();
        let h = CalendarUnit::Hour;
        let first_1am = 1_636_261_200_000; // 2021-11-07T01:00-04:00 = 05:00Z
        let second_1am = first_1am + MS_PER_HOUR; // 01:00-05:00 = 06:00Z
        assert_eq!(calendar_floor(first_1am + 1_800_000, h, &ny), first_1am);
        assert_eq!(calendar_floor(second_1am + 1_800_000, h, &ny), second_1am);
        assert_eq!(calendar_next(first_1am, h, &ny), second_1am);
    }

    #[test]
    fn midnight_in_a_dst_gap() {
        // Santiago skipped 2022-09-11T00:00 (clocks went from 00:00 to 01:00).
        let santiago = Tz::parse("America/Santiago").unwrap();
        let day_start = calendar_floor(1_662_915_600_000, CalendarUnit::Day, &santiago);
        // The day starts at the transition, 2022-09-11T04:00Z (01:00 -03:00).
        assert_eq!(day_start, 1_662_868_800_000);
        let prev = calendar_floor(day_start - 1, CalendarUnit::Day, &santiago);
        assert_eq!(calendar_next(prev, CalendarUnit::Day, &santiago), day_start);
    }
}
