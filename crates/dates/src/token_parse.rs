//! Parsing: walks compiled tokens over the input bytes, filling a
//! [`Parsed`]. Never allocates; `None` means "this format does not match".

use std::str::FromStr;

use crate::fields::{Parsed, ParsedZone, Slot};
use crate::tokens::{Field, Sign, Tok};

pub(crate) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Monday first, as ISO day-of-week numbers 1..=7.
pub(crate) const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// Parses the whole input with `toks`; trailing input is a mismatch.
pub(crate) fn parse_all(toks: &[Tok], input: &str) -> Option<Parsed> {
    let mut parsed = Parsed::default();
    let end = parse_seq(toks, input.as_bytes(), 0, &mut parsed)?;
    (end == input.len()).then_some(parsed)
}

fn parse_seq(toks: &[Tok], s: &[u8], mut pos: usize, p: &mut Parsed) -> Option<usize> {
    for tok in toks {
        pos = parse_tok(tok, s, pos, p)?;
    }
    Some(pos)
}

fn parse_tok(tok: &Tok, s: &[u8], pos: usize, p: &mut Parsed) -> Option<usize> {
    match tok {
        Tok::Char(byte) => (s.get(pos) == Some(byte)).then_some(pos + 1),
        Tok::Lit(text) => s[pos..]
            .starts_with(text.as_bytes())
            .then_some(pos + text.len()),
        Tok::Num {
            field,
            min,
            max,
            sign,
            reserve,
        } => parse_num(s, pos, *field, *min, *max, *sign, *reserve, p),
        Tok::YearTwoDigits => {
            let v = two_digits(s, pos)?;
            if s.get(pos + 2).is_some_and(u8::is_ascii_digit) {
                return None;
            }
            p.set_year(2000 + v as i64);
            Some(pos + 2)
        }
        Tok::Fraction { min, max, .. } => {
            let run = digit_run(s, pos, *max as usize);
            if run < *min as usize {
                return None;
            }
            let mut nanos = 0u32;
            for &b in &s[pos..pos + run] {
                nanos = nanos * 10 + (b - b'0') as u32;
            }
            for _ in run..9 {
                nanos *= 10;
            }
            p.set(Slot::Nanos, nanos);
            Some(pos + run)
        }
        Tok::MonthName { .. } => {
            let (idx, len) = match_name(s, pos, &MONTHS)?;
            p.set(Slot::Month, idx as u32 + 1);
            Some(pos + len)
        }
        Tok::DayName { .. } => {
            let (idx, len) = match_name(s, pos, &DAYS)?;
            p.set(Slot::Weekday, idx as u32 + 1);
            Some(pos + len)
        }
        Tok::AmPm => {
            let text = s.get(pos..pos + 2)?;
            let pm = if text.eq_ignore_ascii_case(b"AM") {
                false
            } else if text.eq_ignore_ascii_case(b"PM") {
                true
            } else {
                return None;
            };
            p.set(Slot::Pm, pm as u32);
            Some(pos + 2)
        }
        Tok::Offset { zone_ids, .. } => {
            let (zone, end) = parse_zone(s, pos, *zone_ids)?;
            p.set_zone(zone);
            Some(end)
        }
        Tok::ZoneId | Tok::ZoneName => {
            let (zone, end) = parse_zone(s, pos, true)?;
            p.set_zone(zone);
            Some(end)
        }
        Tok::Optional(inner) => {
            let mark = p.mark();
            match parse_seq(inner, s, pos, p) {
                Some(end) => Some(end),
                None => {
                    p.reset(mark);
                    Some(pos)
                }
            }
        }
    }
}

/// Number of ASCII digits at `pos`, at most `limit`.
#[inline]
fn digit_run(s: &[u8], pos: usize, limit: usize) -> usize {
    s.get(pos..)
        .unwrap_or_default()
        .iter()
        .take(limit)
        .take_while(|b| b.is_ascii_digit())
        .count()
}

#[inline]
fn two_digits(s: &[u8], pos: usize) -> Option<u32> {
    match s.get(pos..pos + 2)? {
        [a, b] if a.is_ascii_digit() && b.is_ascii_digit() => {
            Some((a - b'0') as u32 * 10 + (b - b'0') as u32)
        }
        _ => None,
    }
}

#[allow(clippy::too_many_arguments)]
#[inline]
fn parse_num(
    s: &[u8],
    pos: usize,
    field: Field,
    min: u8,
    max: u8,
    sign: Sign,
    reserve: u8,
    p: &mut Parsed,
) -> Option<usize> {
    let (min, max) = (min as usize, max as usize);
    let mut i = pos;
    let (mut plus, mut minus) = (false, false);
    if sign != Sign::NotNegative {
        match s.get(i) {
            Some(b'+') if sign == Sign::ExceedsPad => plus = true,
            Some(b'-') => minus = true,
            _ => {}
        }
        if plus || minus {
            i += 1;
        }
    }
    let take = if min == max {
        min
    } else {
        let run = digit_run(s, i, max + reserve as usize);
        run.saturating_sub(reserve as usize).min(max)
    };
    if take < min || take == 0 || digit_run(s, i, take) < take {
        return None;
    }
    let mut value: u64 = 0;
    for &b in &s[i..i + take] {
        value = value * 10 + (b - b'0') as u64;
    }
    if minus && value == 0 {
        return None;
    }
    if sign == Sign::ExceedsPad && !minus && (plus != (take > min)) {
        return None;
    }
    let end = i + take;
    if field == Field::Year {
        let v = value as i64;
        p.set_year(if minus { -v } else { v });
        return Some(end);
    }
    if minus {
        return None;
    }
    let slot = match field {
        Field::Year => unreachable!("handled above"),
        Field::Month => Slot::Month,
        Field::Day => Slot::Day,
        Field::DayOfYear => Slot::DayOfYear,
        Field::Hour => Slot::Hour,
        Field::ClockHour => Slot::ClockHour,
        Field::HourOfAmPm => Slot::HourOfAmPm,
        Field::ClockHourOfAmPm => Slot::ClockHourOfAmPm,
        Field::Minute => Slot::Minute,
        Field::Second => Slot::Second,
    };
    p.set(slot, u32::try_from(value).ok()?);
    Some(end)
}

/// Matches a full name or its three-letter abbreviation, any case; returns
/// the index and the matched length.
fn match_name(s: &[u8], pos: usize, names: &[&str]) -> Option<(usize, usize)> {
    let rest = s.get(pos..)?;
    names.iter().enumerate().find_map(|(i, name)| {
        let name = name.as_bytes();
        if rest.len() >= name.len() && rest[..name.len()].eq_ignore_ascii_case(name) {
            Some((i, name.len()))
        } else if rest.len() >= 3 && rest[..3].eq_ignore_ascii_case(&name[..3]) {
            Some((i, 3))
        } else {
            None
        }
    })
}

/// Parses `Z`, `±HH`, `±HHMM`, `±HH:MM` (optionally with seconds) and, when
/// `zone_ids`, `UTC`/`GMT`/`UT` (optionally followed by an offset) or an
/// IANA region id.
fn parse_zone(s: &[u8], pos: usize, zone_ids: bool) -> Option<(ParsedZone, usize)> {
    match s.get(pos)? {
        b'Z' => Some((ParsedZone::Offset(0), pos + 1)),
        b'+' | b'-' => parse_offset(s, pos).map(|(o, end)| (ParsedZone::Offset(o), end)),
        c if zone_ids && c.is_ascii_alphabetic() => parse_zone_id(s, pos),
        _ => None,
    }
}

fn parse_offset(s: &[u8], pos: usize) -> Option<(i32, usize)> {
    let negative = s[pos] == b'-';
    let hours = two_digits(s, pos + 1)?;
    let mut end = pos + 3;
    let (mut minutes, mut seconds) = (0, 0);
    // Minutes and seconds follow with a colon each, or with none at all.
    let step = if s.get(end) == Some(&b':') { 1 } else { 0 };
    if let Some(m) = two_digits(s, end + step).filter(|_| step == 0 || s[end] == b':') {
        minutes = m;
        end += step + 2;
        let colon_ok = step == 0 || s.get(end) == Some(&b':');
        if let Some(sec) = two_digits(s, end + step).filter(|_| colon_ok) {
            seconds = sec;
            end += step + 2;
        }
    }
    if hours > 18 || minutes > 59 || seconds > 59 {
        return None;
    }
    let total = (hours * 3600 + minutes * 60 + seconds) as i32;
    if total > 18 * 3600 {
        return None;
    }
    Some((if negative { -total } else { total }, end))
}

fn parse_zone_id(s: &[u8], pos: usize) -> Option<(ParsedZone, usize)> {
    for prefix in [&b"UTC"[..], b"GMT", b"UT"] {
        if s[pos..].starts_with(prefix) {
            let end = pos + prefix.len();
            return match s.get(end) {
                Some(b'+' | b'-') => parse_offset(s, end).map(|(o, e)| (ParsedZone::Offset(o), e)),
                Some(c) if c.is_ascii_alphanumeric() || *c == b'/' => None,
                _ => Some((ParsedZone::Offset(0), end)),
            };
        }
    }
    let len = s[pos..]
        .iter()
        .take_while(|&&c| c.is_ascii_alphanumeric() || matches!(c, b'/' | b'_' | b'-' | b'+'))
        .count();
    // The run is ASCII, so it is valid UTF-8.
    let id = std::str::from_utf8(&s[pos..pos + len]).ok()?;
    let region = chrono_tz::Tz::from_str(id).ok()?;
    Some((ParsedZone::Region(region), pos + len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::build::*;
    use crate::tokens::finish;

    #[test]
    fn offsets_in_every_style() {
        let cases: [(&str, i32); 8] = [
            ("Z", 0),
            ("+08", 8 * 3600),
            ("+0800", 8 * 3600),
            ("+08:00", 8 * 3600),
            ("-05:30", -(5 * 3600 + 1800)),
            ("-0530", -(5 * 3600 + 1800)),
            ("+01:02:03", 3723),
            ("+010203", 3723),
        ];
        for (text, secs) in cases {
            let (zone, end) = parse_zone(text.as_bytes(), 0, false).unwrap();
            assert_eq!(zone, ParsedZone::Offset(secs), "{text}");
            assert_eq!(end, text.len(), "{text}");
        }
        assert!(parse_zone(b"+19:00", 0, false).is_none());
        assert!(parse_zone(b"+8", 0, false).is_none());
        assert!(parse_zone(b"UTC", 0, false).is_none());
    }

    #[test]
    fn zone_ids() {
        let (zone, end) = parse_zone(b"Europe/Paris", 0, true).unwrap();
        assert_eq!(zone, ParsedZone::Region(chrono_tz::Europe::Paris));
        assert_eq!(end, 12);
        assert_eq!(
            parse_zone(b"UTC", 0, true),
            Some((ParsedZone::Offset(0), 3))
        );
        assert_eq!(
            parse_zone(b"GMT+02:00", 0, true),
            Some((ParsedZone::Offset(7200), 9))
        );
        assert!(parse_zone(b"Nowhere/Land", 0, true).is_none());
    }

    #[test]
    fn adjacent_numbers_split_by_reserve() {
        let mut toks = vec![
            year(4, 10, Sign::ExceedsPad),
            num(Field::Month, 2, 2),
            num(Field::Day, 2, 2),
        ];
        finish(&mut toks);
        let p = parse_all(&toks, "20211227").unwrap();
        assert_eq!(
            (p.year(), p.get(Slot::Month), p.get(Slot::Day)),
            (Some(2021), Some(12), Some(27))
        );
        assert!(parse_all(&toks, "2021127").is_none());
    }

    #[test]
    fn exceeds_pad_sign_rules() {
        let toks = vec![year(4, 10, Sign::ExceedsPad)];
        assert_eq!(parse_all(&toks, "2021").unwrap().year(), Some(2021));
        assert_eq!(parse_all(&toks, "+12021").unwrap().year(), Some(12021));
        assert_eq!(parse_all(&toks, "-0044").unwrap().year(), Some(-44));
        assert!(parse_all(&toks, "12021").is_none());
        assert!(parse_all(&toks, "+2021").is_none());
        assert!(parse_all(&toks, "202").is_none());
    }

    #[test]
    fn optional_sections_backtrack() {
        let toks = vec![
            num(Field::Hour, 2, 2),
            opt(vec![lit(":"), num(Field::Minute, 2, 2)]),
            lit(":x"),
        ];
        let p = parse_all(&toks, "10:x").unwrap();
        assert_eq!((p.get(Slot::Hour), p.get(Slot::Minute)), (Some(10), None));
        let p = parse_all(&toks, "10:30:x").unwrap();
        assert_eq!(
            (p.get(Slot::Hour), p.get(Slot::Minute)),
            (Some(10), Some(30))
        );
    }

    #[test]
    fn fractions_scale_to_nanos() {
        let toks = vec![frac(1, 9)];
        assert_eq!(
            parse_all(&toks, "5").unwrap().get(Slot::Nanos),
            Some(500_000_000)
        );
        assert_eq!(
            parse_all(&toks, "123456789").unwrap().get(Slot::Nanos),
            Some(123_456_789)
        );
        assert!(parse_all(&toks, "1234567890").is_none());
        assert!(parse_all(&toks, "").is_none());
    }

    #[test]
    fn names() {
        let toks = vec![
            Tok::DayName { full: false },
            lit(" "),
            Tok::MonthName { full: false },
        ];
        let p = parse_all(&toks, "Mon Dec").unwrap();
        assert_eq!(
            (p.get(Slot::Weekday), p.get(Slot::Month)),
            (Some(1), Some(12))
        );
        let p = parse_all(&toks, "monday DECEMBER").unwrap();
        assert_eq!(
            (p.get(Slot::Weekday), p.get(Slot::Month)),
            (Some(1), Some(12))
        );
        assert!(parse_all(&toks, "Mo Dec").is_none());
    }
}
