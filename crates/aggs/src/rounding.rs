//! Date bucket rounding for `date_histogram`: which instants share a bucket and what the
//! bucket's key is, in a time zone and with an offset, as Elasticsearch's `Rounding` does.
//!
//! Two shapes come out of planning:
//! - [`DateRounding::Native`]: a fixed bucket width at a fixed phase in UTC. tantivy's own
//!   `histogram` computes these directly on the `i64` millisecond column (fixed intervals and,
//!   in fixed-offset zones, calendar minutes to weeks).
//! - [`DateRounding::Indexed`]: buckets whose width varies (months, quarters, years, and days or
//!   hours in zones with daylight saving time). A computed column maps every instant to a dense
//!   bucket *index* (consecutive buckets have consecutive indices), tantivy histograms the index
//!   with an interval of 1, and rendering maps each index back to its bucket's start instant.

use lode_dates::{calendar_floor, calendar_next, CalendarUnit, Millis, Tz};

pub const MS_PER_MINUTE: i64 = 60_000;
pub const MS_PER_HOUR: i64 = 3_600_000;
pub const MS_PER_DAY: i64 = 86_400_000;
/// 1970-01-05, the first Monday after the epoch, as a day number.
const FIRST_MONDAY: i64 = 4;

/// How a `date_histogram` rounds instants to bucket keys.
#[derive(Debug, Clone)]
pub enum DateRounding {
    /// `key = floor((t - offset) / interval) * interval + offset`, all in UTC milliseconds.
    Native { interval: i64, offset: i64 },
    /// Variable-width buckets addressed by a dense index.
    Indexed(IndexedRounding),
}

/// Variable-width buckets in a time zone, shifted by `offset` milliseconds.
#[derive(Debug, Clone)]
pub struct IndexedRounding {
    pub unit: IndexedUnit,
    pub tz: Tz,
    pub offset: i64,
    /// Buckets of `multiple` consecutive units, the first starting at unit index `anchor`
    /// (`auto_date_histogram`'s merged buckets); 1 and 0 otherwise.
    pub multiple: i64,
    pub anchor: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexedUnit {
    /// A calendar unit (wall-clock aligned, DST aware).
    Calendar(CalendarUnit),
    /// A fixed width in milliseconds, aligned on local wall-clock time.
    LocalFixed(i64),
}

impl DateRounding {
    /// The rounding for a calendar interval in `tz`.
    pub fn calendar(unit: CalendarUnit, tz: &Tz, offset: i64) -> DateRounding {
        if let Tz::Fixed(_) = tz {
            let tz_offset = tz.offset_millis_at(0);
            let (interval, phase) = match unit {
                CalendarUnit::Minute => (MS_PER_MINUTE, 0),
                CalendarUnit::Hour => (MS_PER_HOUR, 0),
                CalendarUnit::Day => (MS_PER_DAY, 0),
                CalendarUnit::Week => (7 * MS_PER_DAY, FIRST_MONDAY * MS_PER_DAY),
                _ => return DateRounding::indexed(IndexedUnit::Calendar(unit), tz, offset),
            };
            return DateRounding::Native {
                interval,
                offset: (offset + phase - tz_offset).rem_euclid(interval),
            };
        }
        if unit == CalendarUnit::Minute {
            // Every zone offset in use is a whole number of minutes.
            return DateRounding::Native {
                interval: MS_PER_MINUTE,
                offset: offset.rem_euclid(MS_PER_MINUTE),
            };
        }
        DateRounding::indexed(IndexedUnit::Calendar(unit), tz, offset)
    }

    /// The rounding for a `fixed_interval` of `interval` milliseconds in `tz`.
    pub fn fixed(interval: i64, tz: &Tz, offset: i64) -> DateRounding {
        match tz {
            Tz::Fixed(_) => DateRounding::Native {
                interval,
                offset: (offset - tz.offset_millis_at(0)).rem_euclid(interval),
            },
            // Zone offsets are whole quarter hours: local and UTC alignment agree.
            Tz::Named(_) if (15 * MS_PER_MINUTE) % interval == 0 => DateRounding::Native {
                interval,
                offset: offset.rem_euclid(interval),
            },
            Tz::Named(_) => DateRounding::indexed(IndexedUnit::LocalFixed(interval), tz, offset),
        }
    }

    fn indexed(unit: IndexedUnit, tz: &Tz, offset: i64) -> DateRounding {
        DateRounding::Indexed(IndexedRounding {
            unit,
            tz: tz.clone(),
            offset,
            multiple: 1,
            anchor: 0,
        })
    }

    /// The key of the bucket containing `t`.
    #[cfg(test)]
    pub fn round(&self, t: Millis) -> Millis {
        match self {
            DateRounding::Native { interval, offset } => {
                (t - offset).div_euclid(*interval) * interval + offset
            }
            DateRounding::Indexed(r) => r.key_of(r.bucket_of(t).0),
        }
    }

    /// The key of the bucket after the one with key `key`.
    #[cfg(test)]
    pub fn next_key(&self, key: Millis) -> Millis {
        match self {
            DateRounding::Native { interval, .. } => key + interval,
            DateRounding::Indexed(r) => r.key_of(r.bucket_of(key).0 + 1),
        }
    }
}

impl IndexedRounding {
    /// The index of the bucket containing `t`, with the bucket's `[start, end)` in UTC.
    pub fn bucket_of(&self, t: Millis) -> (i64, Millis, Millis) {
        let (index, start, end) = self.unit_of(t);
        if self.multiple <= 1 {
            return (index, start, end);
        }
        let group = (index - self.anchor).div_euclid(self.multiple);
        (group, self.key_of(group), self.key_of(group + 1))
    }

    /// [`Self::bucket_of`] for one unit.
    fn unit_of(&self, t: Millis) -> (i64, Millis, Millis) {
        let s = t.saturating_sub(self.offset);
        let (index, start, end) = match self.unit {
            IndexedUnit::Calendar(unit) => {
                let start = calendar_floor(s, unit, &self.tz);
                let end = calendar_next(start, unit, &self.tz);
                (self.calendar_index(unit, start), start, end)
            }
            IndexedUnit::LocalFixed(width) => {
                let index = self.tz.to_local(s).div_euclid(width);
                let start = self.tz.from_local(index * width);
                let end = self.tz.from_local((index + 1) * width).max(start + 1);
                (index, start, end)
            }
        };
        (index, start + self.offset, end + self.offset)
    }

    fn calendar_index(&self, unit: CalendarUnit, start: Millis) -> i64 {
        let fixed = |len: i64| start.div_euclid(len);
        let local_day = self.tz.to_local(start).div_euclid(MS_PER_DAY);
        match unit {
            CalendarUnit::Minute => fixed(MS_PER_MINUTE),
            CalendarUnit::Hour => fixed(MS_PER_HOUR),
            CalendarUnit::Day => local_day,
            CalendarUnit::Week => (local_day - FIRST_MONDAY).div_euclid(7),
            CalendarUnit::Month | CalendarUnit::Quarter | CalendarUnit::Year => {
                let (y, m, _) = civil_from_days(local_day);
                match unit {
                    CalendarUnit::Month => y * 12 + (m as i64 - 1),
                    CalendarUnit::Quarter => y * 4 + (m as i64 - 1) / 3,
                    _ => y,
                }
            }
        }
    }

    /// The key (start instant, offset included) of the bucket with index `index`.
    pub fn key_of(&self, index: i64) -> Millis {
        let index = if self.multiple > 1 {
            index * self.multiple + self.anchor
        } else {
            index
        };
        let start = match self.unit {
            IndexedUnit::Calendar(unit) => {
                let local_day = match unit {
                    CalendarUnit::Minute | CalendarUnit::Hour => {
                        let len = if unit == CalendarUnit::Minute {
                            MS_PER_MINUTE
                        } else {
                            MS_PER_HOUR
                        };
                        // Bucket starts sit at `-offset` modulo the unit (see `calendar_floor`).
                        let base = index * len;
                        let phase = (-self.tz.offset_millis_at(base)).rem_euclid(len);
                        return base + phase + self.offset;
                    }
                    CalendarUnit::Day => index,
                    CalendarUnit::Week => index * 7 + FIRST_MONDAY,
                    CalendarUnit::Month => {
                        days_from_civil(index.div_euclid(12), (index.rem_euclid(12) + 1) as u32, 1)
                    }
                    CalendarUnit::Quarter => days_from_civil(
                        index.div_euclid(4),
                        (index.rem_euclid(4) * 3 + 1) as u32,
                        1,
                    ),
                    CalendarUnit::Year => days_from_civil(index, 1, 1),
                };
                self.tz.from_local(local_day * MS_PER_DAY)
            }
            IndexedUnit::LocalFixed(width) => self.tz.from_local(index * width),
        };
        start + self.offset
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date of a day number (inverse of [`days_from_civil`]).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(y: i64, m: u32, d: u32) -> Millis {
        days_from_civil(y, m, d) * MS_PER_DAY
    }

    #[test]
    fn civil_round_trip() {
        for z in [
            -800_000i64,
            -1,
            0,
            1,
            59,
            60,
            365,
            10_957,
            19_000,
            2_932_896,
        ] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }

    #[test]
    fn fixed_offset_day_is_native() {
        let tz = Tz::parse("+08:00").unwrap();
        let r = DateRounding::calendar(CalendarUnit::Day, &tz, 0);
        // 2021-12-27T00:00+08:00
        let day = 1_640_534_400_000;
        assert_eq!(r.round(day), day);
        assert_eq!(r.round(day + 5), day);
        assert_eq!(r.round(day - 1), day - MS_PER_DAY);
        assert!(matches!(r, DateRounding::Native { .. }));
    }

    #[test]
    fn weeks_start_on_monday() {
        let r = DateRounding::calendar(CalendarUnit::Week, &Tz::utc(), 0);
        // 2016-03-03 is a Thursday; its week starts Monday 2016-02-29.
        assert_eq!(r.round(utc(2016, 3, 3) + 7), utc(2016, 2, 29));
    }

    #[test]
    fn months_in_new_york() {
        let tz = Tz::parse("America/New_York").unwrap();
        let r = DateRounding::calendar(CalendarUnit::Month, &tz, 0);
        let DateRounding::Indexed(ix) = &r else {
            panic!("months are indexed")
        };
        // 2016-03-15T12:00Z is in March (EDT starts 03-13); March 1st is EST (-05:00).
        let t = utc(2016, 3, 15) + 12 * MS_PER_HOUR;
        let (index, start, end) = ix.bucket_of(t);
        assert_eq!(start, utc(2016, 3, 1) + 5 * MS_PER_HOUR);
        assert_eq!(end, utc(2016, 4, 1) + 4 * MS_PER_HOUR);
        assert_eq!(ix.key_of(index), start);
        assert_eq!(ix.key_of(index + 1), end);
        assert_eq!(r.next_key(start), end);
    }

    #[test]
    fn dst_days_have_local_midnights() {
        let tz = Tz::parse("America/New_York").unwrap();
        let r = DateRounding::calendar(CalendarUnit::Day, &tz, 0);
        // The spring-forward day 2016-03-13 lasts 23 hours.
        let start = r.round(utc(2016, 3, 13) + 12 * MS_PER_HOUR);
        assert_eq!(start, utc(2016, 3, 13) + 5 * MS_PER_HOUR);
        assert_eq!(r.next_key(start), utc(2016, 3, 14) + 4 * MS_PER_HOUR);
    }

    #[test]
    fn quarters_years_and_offsets() {
        let r = DateRounding::calendar(CalendarUnit::Quarter, &Tz::utc(), 0);
        assert_eq!(r.round(utc(2016, 5, 20)), utc(2016, 4, 1));
        let r = DateRounding::calendar(CalendarUnit::Year, &Tz::utc(), 0);
        assert_eq!(r.round(utc(1969, 5, 20)), utc(1969, 1, 1));
        let r = DateRounding::calendar(CalendarUnit::Month, &Tz::utc(), MS_PER_DAY);
        // Months shifted by one day: 2016-01-01 belongs to the bucket starting 2015-12-02.
        assert_eq!(r.round(utc(2016, 1, 1)), utc(2015, 12, 2));
        assert_eq!(r.round(utc(2016, 1, 2)), utc(2016, 1, 2));
    }

    #[test]
    fn fixed_intervals_in_zones() {
        let tz = Tz::parse("+05:30").unwrap();
        let r = DateRounding::fixed(MS_PER_HOUR, &tz, 0);
        // Hours in +05:30 start at half past in UTC.
        assert_eq!(
            r.round(utc(2020, 1, 1) + 10 * MS_PER_MINUTE),
            utc(2020, 1, 1) - 30 * MS_PER_MINUTE
        );
        let tz = Tz::parse("America/Phoenix").unwrap();
        let r = DateRounding::fixed(1, &tz, 0);
        assert_eq!(r.round(12345), 12345);
    }
}
