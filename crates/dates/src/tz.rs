//! Time zones: fixed UTC offsets and IANA zones, with DST-aware conversion
//! between UTC instants and local wall-clock time.

use std::fmt;
use std::str::FromStr;

use chrono::{FixedOffset, LocalResult, Offset, TimeZone};

use crate::civil::{MS_PER_DAY, MS_PER_SECOND};
use crate::error::DateError;
use crate::Millis;

/// A time zone as accepted by ES `time_zone` parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tz {
    /// A constant offset from UTC (`Z`, `+08:00`, `-0500`, `UTC`).
    Fixed(FixedOffset),
    /// An IANA zone with its DST rules (`Europe/Paris`).
    Named(chrono_tz::Tz),
}

impl Default for Tz {
    fn default() -> Tz {
        Tz::utc()
    }
}

impl Tz {
    pub fn utc() -> Tz {
        Tz::Fixed(FixedOffset::east_opt(0).expect("zero offset"))
    }

    /// Parses `Z`, `UTC`, `GMT`, `+08:00`, `-0500`, `+8`, `UTC+01:00`, or an
    /// IANA name such as `Asia/Shanghai` (exact case first, then any case).
    pub fn parse(s: &str) -> Result<Tz, DateError> {
        if s == "Z" || s.eq_ignore_ascii_case("UTC") || s.eq_ignore_ascii_case("GMT") {
            return Ok(Tz::utc());
        }
        if s.starts_with(['+', '-']) {
            return parse_offset_id(s, s).map(fixed_seconds);
        }
        for prefix in ["UTC", "GMT", "UT"] {
            if s.len() > prefix.len()
                && s[..prefix.len()].eq_ignore_ascii_case(prefix)
                && s[prefix.len()..].starts_with(['+', '-'])
            {
                return parse_offset_id(&s[prefix.len()..], s).map(fixed_seconds);
            }
        }
        if let Ok(tz) = chrono_tz::Tz::from_str(s) {
            return Ok(Tz::Named(tz));
        }
        chrono_tz::TZ_VARIANTS
            .iter()
            .find(|tz| tz.name().eq_ignore_ascii_case(s))
            .map(|tz| Tz::Named(*tz))
            .ok_or_else(|| DateError::new(format!("Unknown time-zone ID: {s}")))
    }

    /// True for the zero fixed offset.
    pub fn is_utc(&self) -> bool {
        matches!(self, Tz::Fixed(o) if o.local_minus_utc() == 0)
    }

    /// Offset from UTC, in milliseconds, in effect at the UTC instant `utc`.
    #[inline]
    pub fn offset_millis_at(&self, utc: Millis) -> i64 {
        match self {
            Tz::Fixed(o) => o.local_minus_utc() as i64 * MS_PER_SECOND,
            Tz::Named(tz) => named_offset_millis(tz, utc),
        }
    }

    /// Local wall-clock milliseconds of a UTC instant.
    #[inline]
    pub fn to_local(&self, utc: Millis) -> i64 {
        utc + self.offset_millis_at(utc)
    }

    /// The UTC instant of a local wall-clock time. Like `java.time`: in an
    /// overlap (clocks turned back) the earlier instant wins; in a gap
    /// (clocks turned forward) the time is moved forward by the gap length.
    #[inline]
    pub fn from_local(&self, local: i64) -> Millis {
        self.from_local_preferring(local, None)
    }

    /// Like [`Tz::from_local`], but in an overlap keeps `preferred` (an
    /// offset in milliseconds) when it is one of the two valid offsets, as
    /// `ZonedDateTime.plusDays` does.
    pub fn from_local_preferring(&self, local: i64, preferred: Option<i64>) -> Millis {
        match self {
            Tz::Fixed(o) => local - o.local_minus_utc() as i64 * MS_PER_SECOND,
            Tz::Named(tz) => named_from_local(tz, local, preferred),
        }
    }
}

impl fmt::Display for Tz {
    /// The zone id as `java.time` prints it: `Z`, `+08:00`, `Europe/Paris`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tz::Fixed(o) => {
                let secs = o.local_minus_utc();
                if secs == 0 {
                    return f.write_str("Z");
                }
                let sign = if secs < 0 { '-' } else { '+' };
                let abs = secs.unsigned_abs();
                write!(f, "{sign}{:02}:{:02}", abs / 3600, abs / 60 % 60)?;
                if abs % 60 != 0 {
                    write!(f, ":{:02}", abs % 60)?;
                }
                Ok(())
            }
            Tz::Named(tz) => f.write_str(tz.name()),
        }
    }
}

fn fixed_seconds(secs: i32) -> Tz {
    Tz::Fixed(FixedOffset::east_opt(secs).expect("offset validated to ±18h"))
}

fn named_from_local(tz: &chrono_tz::Tz, local: i64, preferred: Option<i64>) -> Millis {
    let Some(naive) = chrono::DateTime::from_timestamp_millis(local).map(|d| d.naive_utc()) else {
        return local;
    };
    let offset_of = |dt: &chrono::DateTime<chrono_tz::Tz>| {
        dt.offset().fix().local_minus_utc() as i64 * MS_PER_SECOND
    };
    match tz.from_local_datetime(&naive) {
        LocalResult::Single(dt) => local - offset_of(&dt),
        LocalResult::Ambiguous(earliest, latest) => {
            if preferred == Some(offset_of(&latest)) {
                local - offset_of(&latest)
            } else {
                local - offset_of(&earliest)
            }
        }
        // A gap: read the local time with the offset in force before it.
        // Offsets never exceed ±18h, so a day earlier is before the gap.
        LocalResult::None => local - named_offset_millis(tz, local - MS_PER_DAY),
    }
}

fn named_offset_millis(tz: &chrono_tz::Tz, utc: Millis) -> i64 {
    match chrono::DateTime::from_timestamp_millis(utc) {
        Some(dt) => {
            tz.offset_from_utc_datetime(&dt.naive_utc())
                .fix()
                .local_minus_utc() as i64
                * MS_PER_SECOND
        }
        None => 0,
    }
}

/// Parses an offset id as `ZoneOffset.of` does: `+h`, `+hh`, `+hh:mm`,
/// `+hhmm`, `+hh:mm:ss`, `+hhmmss`. Returns seconds east of UTC.
fn parse_offset_id(s: &str, whole: &str) -> Result<i32, DateError> {
    let invalid = || {
        DateError::new(format!(
            "Invalid ID for ZoneOffset, invalid format: {whole}"
        ))
    };
    let b = s.as_bytes();
    let negative = match b.first() {
        Some(b'+') => false,
        Some(b'-') => true,
        _ => return Err(invalid()),
    };
    let digits = &b[1..];
    let two = |i: usize| -> Option<i32> {
        let (a, c) = (*digits.get(i)?, *digits.get(i + 1)?);
        (a.is_ascii_digit() && c.is_ascii_digit()).then(|| ((a - b'0') * 10 + (c - b'0')) as i32)
    };
    let (h, m, sec) = match digits.len() {
        1 if digits[0].is_ascii_digit() => ((digits[0] - b'0') as i32, 0, 0),
        2 => (two(0).ok_or_else(invalid)?, 0, 0),
        4 => (two(0).ok_or_else(invalid)?, two(2).ok_or_else(invalid)?, 0),
        5 if digits[2] == b':' => (two(0).ok_or_else(invalid)?, two(3).ok_or_else(invalid)?, 0),
        6 => (
            two(0).ok_or_else(invalid)?,
            two(2).ok_or_else(invalid)?,
            two(4).ok_or_else(invalid)?,
        ),
        8 if digits[2] == b':' && digits[5] == b':' => (
            two(0).ok_or_else(invalid)?,
            two(3).ok_or_else(invalid)?,
            two(6).ok_or_else(invalid)?,
        ),
        _ => return Err(invalid()),
    };
    if h > 18 {
        return Err(DateError::new(format!(
            "Zone offset hours not in valid range: value {h} is not in the range -18 to 18"
        )));
    }
    if m > 59 || sec > 59 || (h == 18 && (m > 0 || sec > 0)) {
        return Err(DateError::new(format!(
            "Zone offset not in valid range: -18:00 to +18:00, was {whole}"
        )));
    }
    let total = h * 3600 + m * 60 + sec;
    Ok(if negative { -total } else { total })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::civil::MS_PER_HOUR;

    fn offset_secs(tz: &Tz) -> i32 {
        match tz {
            Tz::Fixed(o) => o.local_minus_utc(),
            Tz::Named(_) => panic!("expected a fixed offset"),
        }
    }

    #[test]
    fn parses_fixed_offsets() {
        assert_eq!(offset_secs(&Tz::parse("+08:00").unwrap()), 8 * 3600);
        assert_eq!(offset_secs(&Tz::parse("-05:00").unwrap()), -5 * 3600);
        assert_eq!(offset_secs(&Tz::parse("+0800").unwrap()), 8 * 3600);
        assert_eq!(offset_secs(&Tz::parse("+05:30").unwrap()), 5 * 3600 + 1800);
        assert_eq!(offset_secs(&Tz::parse("+8").unwrap()), 8 * 3600);
        assert_eq!(offset_secs(&Tz::parse("-03").unwrap()), -3 * 3600);
        assert_eq!(offset_secs(&Tz::parse("UTC+01:00").unwrap()), 3600);
        assert_eq!(offset_secs(&Tz::parse("GMT-2").unwrap()), -7200);
        for utc in ["Z", "UTC", "utc", "GMT", "+00:00"] {
            assert!(Tz::parse(utc).unwrap().is_utc(), "{utc}");
        }
    }

    #[test]
    fn parses_iana_names() {
        assert_eq!(
            Tz::parse("Asia/Shanghai").unwrap(),
            Tz::Named(chrono_tz::Asia::Shanghai)
        );
        assert_eq!(
            Tz::parse("america/new_york").unwrap(),
            Tz::Named(chrono_tz::America::New_York)
        );
    }

    #[test]
    fn rejects_bad_zones() {
        assert_eq!(
            Tz::parse("Mars/Olympus").unwrap_err().reason,
            "Unknown time-zone ID: Mars/Olympus"
        );
        assert!(Tz::parse("+25:00")
            .unwrap_err()
            .reason
            .contains("not in the range"));
        assert!(Tz::parse("+08:0")
            .unwrap_err()
            .reason
            .contains("invalid format"));
        assert!(Tz::parse("").is_err());
    }

    #[test]
    fn displays_ids() {
        assert_eq!(Tz::utc().to_string(), "Z");
        assert_eq!(Tz::parse("+0800").unwrap().to_string(), "+08:00");
        assert_eq!(Tz::parse("-09:30").unwrap().to_string(), "-09:30");
        assert_eq!(
            Tz::parse("Europe/Paris").unwrap().to_string(),
            "Europe/Paris"
        );
    }

    #[test]
    fn new_york_offsets_follow_dst() {
        let ny = Tz::parse("America/New_York").unwrap();
        // 2021-07-01T00:00Z is EDT (-4h), 2021-01-01T00:00Z is EST (-5h).
        assert_eq!(ny.offset_millis_at(1_625_097_600_000), -4 * MS_PER_HOUR);
        assert_eq!(ny.offset_millis_at(1_609_459_200_000), -5 * MS_PER_HOUR);
    }

    #[test]
    fn local_to_utc_in_gap_and_overlap() {
        let ny = Tz::parse("America/New_York").unwrap();
        // 2021-03-14 02:30 local does not exist: moved to 03:30 EDT = 07:30Z.
        let gap_local = 1_615_689_000_000; // 2021-03-14T02:30 as if UTC
        assert_eq!(ny.from_local(gap_local), 1_615_707_000_000);
        // 2021-11-07 01:30 local happens twice: EDT (05:30Z) first.
        let overlap_local = 1_636_248_600_000; // 2021-11-07T01:30 as if UTC
        assert_eq!(ny.from_local(overlap_local), 1_636_263_000_000);
        assert_eq!(
            ny.from_local_preferring(overlap_local, Some(-5 * MS_PER_HOUR)),
            1_636_266_600_000
        );
        // Ordinary times round-trip.
        let t = 1_640_534_400_000;
        assert_eq!(ny.from_local(ny.to_local(t)), t);
    }
}
