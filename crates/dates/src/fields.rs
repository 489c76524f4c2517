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

/// A parsed value other than the year and the zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    Month,
    Day,
    DayOfYear,
    /// ISO day of week, Monday = 1.
    Weekday,
    /// `H`, 0-23.
    Hour,
    /// `k`, 1-24.
    ClockHour,
    /// `K`, 0-11.
    HourOfAmPm,
    /// `h`, 1-12.
    ClockHourOfAmPm,
    /// 1 for PM, 0 for AM.
    Pm,
    Minute,
    Second,
    Nanos,
}

const SLOTS: usize = 12;
const YEAR_BIT: u16 = 1 << SLOTS;
const ZONE_BIT: u16 = 1 << (SLOTS + 1);

/// Everything a format can extract from its input. Presence is one bit per
/// value, so an optional section that fails is undone by restoring the
/// bits ([`Parsed::mark`] / [`Parsed::reset`]) instead of copying fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Parsed {
    present: u16,
    values: [u32; SLOTS],
    year: i64,
    zone: ParsedZone,
}

impl Default for ParsedZone {
    fn default() -> ParsedZone {
        ParsedZone::Offset(0)
    }
}

impl Parsed {
    #[inline]
    pub(crate) fn get(&self, slot: Slot) -> Option<u32> {
        (self.present & (1 << slot as u16) != 0).then_some(self.values[slot as usize])
    }

    #[inline]
    pub(crate) fn set(&mut self, slot: Slot, value: u32) {
        self.present |= 1 << slot as u16;
        self.values[slot as usize] = value;
    }

    #[inline]
    pub(crate) fn year(&self) -> Option<i64> {
        (self.present & YEAR_BIT != 0).then_some(self.year)
    }

    #[inline]
    pub(crate) fn set_year(&mut self, year: i64) {
        self.present |= YEAR_BIT;
        self.year = year;
    }

    #[inline]
    pub(crate) fn zone(&self) -> Option<ParsedZone> {
        (self.present & ZONE_BIT != 0).then_some(self.zone)
    }

    #[inline]
    pub(crate) fn set_zone(&mut self, zone: ParsedZone) {
        self.present |= ZONE_BIT;
        self.zone = zone;
    }

    /// What is present now; pass to [`Parsed::reset`] to forget anything
    /// set afterwards. (A value set both before and after the mark keeps
    /// its later content; no format sets the same field twice.)
    #[inline]
    pub(crate) fn mark(&self) -> u16 {
        self.present
    }

    #[inline]
    pub(crate) fn reset(&mut self, mark: u16) {
        self.present = mark;
    }

    /// The instant the fields describe, or `None` when they are out of
    /// range (`2021-02-30`, hour 25). Missing fields default like ES:
    /// year 1970, month and day 1, time 00:00:00.000 — or, with `round_up`
    /// (the `gt`/`lte` bounds of a range), 23:59:59.999 for the time.
    /// Without a zone in the input, the local time is read in `tz`.
    pub(crate) fn resolve(&self, tz: &Tz, round_up: bool) -> Option<Millis> {
        let year = self.year().unwrap_or(1970);
        if year.abs() > MAX_ABS_YEAR {
            return None;
        }
        let (month, day) = match (
            self.get(Slot::DayOfYear),
            self.get(Slot::Month),
            self.get(Slot::Day),
        ) {
            (Some(doy), None, None) => {
                if doy == 0 || doy > days_in_year(year) {
                    return None;
                }
                let days = days_from_civil(year, 1, 1) + doy as i64 - 1;
                let (_, m, d) = crate::civil::civil_from_days(days);
                (m, d)
            }
            (_, month, day) => (month.unwrap_or(1), day.unwrap_or(1)),
        };
        if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
            return None;
        }
        let days = days_from_civil(year, month, day);
        if let Some(wd) = self.get(Slot::Weekday) {
            if wd != iso_weekday(days) {
                return None;
            }
        }
        let (max_or_zero, max_nanos) = if round_up { (59, 999_999_999) } else { (0, 0) };
        let hour = self.hour_of_day(round_up)?;
        let minute = self.get(Slot::Minute).unwrap_or(max_or_zero);
        let second = self.get(Slot::Second).unwrap_or(max_or_zero);
        let nanos = self.get(Slot::Nanos).unwrap_or(max_nanos);
        if minute > 59 || second > 59 {
            return None;
        }
        let local = days * MS_PER_DAY
            + hour as i64 * MS_PER_HOUR
            + minute as i64 * MS_PER_MINUTE
            + second as i64 * MS_PER_SECOND
            + (nanos / 1_000_000) as i64;
        Some(match self.zone() {
            Some(ParsedZone::Offset(secs)) => local - secs as i64 * MS_PER_SECOND,
            Some(ParsedZone::Region(region)) => Tz::Named(region).from_local(local),
            None => tz.from_local(local),
        })
    }

    fn hour_of_day(&self, round_up: bool) -> Option<u32> {
        if let Some(h) = self.get(Slot::Hour) {
            return (h <= 23).then_some(h);
        }
        if let Some(k) = self.get(Slot::ClockHour) {
            return (1..=24).contains(&k).then_some(k % 24);
        }
        let pm = self.get(Slot::Pm).map(|v| v == 1);
        let of_ampm = match (self.get(Slot::HourOfAmPm), self.get(Slot::ClockHourOfAmPm)) {
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
                if pm.is_none() {
                    return Some(h);
                }
                h % 12
            }
            (None, None) => return Some(if round_up { 23 } else { 0 }),
        };
        Some(of_ampm + if pm == Some(true) { 12 } else { 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(slots: &[(Slot, u32)], year: Option<i64>) -> Parsed {
        let mut p = Parsed::default();
        for &(slot, v) in slots {
            p.set(slot, v);
        }
        if let Some(y) = year {
            p.set_year(y);
        }
        p
    }

    #[test]
    fn defaults_missing_fields() {
        let p = with(&[], Some(2020));
        assert_eq!(p.resolve(&Tz::utc(), false), Some(1_577_836_800_000));
        assert_eq!(p.resolve(&Tz::utc(), true), Some(1_577_923_199_999));
        assert_eq!(Parsed::default().resolve(&Tz::utc(), false), Some(0));
    }

    #[test]
    fn rejects_invalid_dates() {
        let p = with(&[(Slot::Month, 2), (Slot::Day, 29)], Some(2021));
        assert_eq!(p.resolve(&Tz::utc(), false), None);
        let p = with(&[(Slot::Hour, 24)], None);
        assert_eq!(p.resolve(&Tz::utc(), false), None);
    }

    #[test]
    fn resolves_twelve_hour_clock() {
        let at = |h: u32, pm: Option<u32>| {
            let mut p = with(&[(Slot::ClockHourOfAmPm, h)], None);
            if let Some(pm) = pm {
                p.set(Slot::Pm, pm);
            }
            p.resolve(&Tz::utc(), false).map(|ms| ms / MS_PER_HOUR)
        };
        assert_eq!(at(12, Some(0)), Some(0));
        assert_eq!(at(12, Some(1)), Some(12));
        assert_eq!(at(3, Some(1)), Some(15));
        assert_eq!(at(3, None), Some(3));
        assert_eq!(at(13, Some(1)), None);
    }

    #[test]
    fn day_of_year() {
        let p = with(&[(Slot::DayOfYear, 60)], Some(2020));
        // 2020-02-29
        assert_eq!(p.resolve(&Tz::utc(), false), Some(1_582_934_400_000));
        let p = with(&[(Slot::DayOfYear, 366)], Some(2021));
        assert_eq!(p.resolve(&Tz::utc(), false), None);
    }

    #[test]
    fn mark_and_reset_forget_later_values() {
        let mut p = with(&[(Slot::Hour, 10)], Some(2021));
        let mark = p.mark();
        p.set(Slot::Minute, 30);
        p.set_zone(ParsedZone::Offset(3600));
        p.reset(mark);
        assert_eq!(p.get(Slot::Minute), None);
        assert_eq!(p.zone(), None);
        assert_eq!(p.get(Slot::Hour), Some(10));
        assert_eq!(p.year(), Some(2021));
    }
}
