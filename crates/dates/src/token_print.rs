//! Printing: renders compiled tokens for an instant in a time zone.

use std::fmt::Write;

use chrono::TimeZone;

use crate::civil::{LocalDateTime, MS_PER_SECOND};
use crate::token_parse::{DAYS, MONTHS};
use crate::tokens::{Field, OffsetStyle, Sign, Tok};
use crate::tz::Tz;
use crate::Millis;

/// What the printer needs to know about one instant.
pub(crate) struct Instant<'a> {
    pub utc: Millis,
    pub local: LocalDateTime,
    /// Offset in effect, seconds east of UTC.
    pub offset_secs: i32,
    pub tz: &'a Tz,
    /// Nanoseconds below the millisecond (`date_nanos` values).
    pub sub_nanos: u32,
}

impl<'a> Instant<'a> {
    pub(crate) fn new(utc: Millis, tz: &'a Tz) -> Instant<'a> {
        let offset = tz.offset_millis_at(utc);
        Instant {
            utc,
            local: LocalDateTime::from_local_millis(utc + offset),
            offset_secs: (offset / MS_PER_SECOND) as i32,
            tz,
            sub_nanos: 0,
        }
    }
}

pub(crate) fn print(toks: &[Tok], at: &Instant<'_>, out: &mut String) {
    for tok in toks {
        print_tok(tok, at, out);
    }
}

fn print_tok(tok: &Tok, at: &Instant<'_>, out: &mut String) {
    let l = &at.local;
    match tok {
        Tok::Lit(text) => out.push_str(text),
        Tok::Char(byte) => out.push(char::from(*byte)),
        Tok::Num {
            field, min, sign, ..
        } => {
            let value: i64 = match field {
                Field::Year => l.year,
                Field::Month => l.month.into(),
                Field::Day => l.day.into(),
                Field::DayOfYear => l.day_of_year().into(),
                Field::Hour => l.hour.into(),
                Field::ClockHour => if l.hour == 0 { 24 } else { l.hour }.into(),
                Field::HourOfAmPm => (l.hour % 12).into(),
                Field::ClockHourOfAmPm => match l.hour % 12 {
                    0 => 12,
                    h => h,
                }
                .into(),
                Field::Minute => l.minute.into(),
                Field::Second => l.second.into(),
            };
            print_number(value, *min as usize, *sign, out);
        }
        Tok::YearTwoDigits => push_padded(l.year.rem_euclid(100) as u64, 2, out),
        // Width 0: `min` to 9 digits, trailing zeros dropped down to `min` (Java's
        // `appendFraction(NANO_OF_SECOND, min, 9, true)`, the nanosecond printers).
        Tok::Fraction { width: 0, min, .. } => {
            let nanos = l.milli * 1_000_000 + at.sub_nanos;
            let digits = format!("{nanos:09}");
            let keep = digits.trim_end_matches('0').len().max(*min as usize);
            out.push_str(&digits[..keep.min(9)]);
        }
        Tok::Fraction { width, .. } => {
            let mut nanos = l.milli * 1_000_000 + at.sub_nanos;
            for _ in 0..(*width).min(9) {
                out.push(char::from(b'0' + (nanos / 100_000_000) as u8));
                nanos = nanos % 100_000_000 * 10;
            }
        }
        Tok::MonthName { full } => {
            let name = MONTHS[l.month as usize - 1];
            out.push_str(if *full { name } else { &name[..3] });
        }
        Tok::DayName { full } => {
            let name = DAYS[l.weekday() as usize - 1];
            out.push_str(if *full { name } else { &name[..3] });
        }
        Tok::AmPm => out.push_str(if l.hour < 12 { "AM" } else { "PM" }),
        Tok::Offset { style, .. } => print_offset(at.offset_secs, *style, out),
        Tok::ZoneId => {
            let _ = write!(out, "{}", at.tz);
        }
        Tok::ZoneName => match at.tz {
            Tz::Named(tz) => {
                if let Some(dt) = chrono::DateTime::from_timestamp_millis(at.utc) {
                    let _ = write!(out, "{}", tz.offset_from_utc_datetime(&dt.naive_utc()));
                }
            }
            Tz::Fixed(_) if at.offset_secs == 0 => out.push_str("UTC"),
            Tz::Fixed(_) => print_offset(at.offset_secs, OffsetStyle::COLON_Z, out),
        },
        Tok::Optional(inner) => print(inner, at, out),
    }
}

fn print_number(value: i64, min: usize, sign: Sign, out: &mut String) {
    let abs = value.unsigned_abs();
    if value < 0 {
        out.push('-');
    } else if sign == Sign::ExceedsPad && abs >= 10u64.saturating_pow(min as u32) {
        out.push('+');
    }
    push_padded(abs, min, out);
}

/// Appends `value` in decimal, left-padded with zeros to `width` digits.
fn push_padded(value: u64, width: usize, out: &mut String) {
    let mut buf = [b'0'; 20];
    let mut i = buf.len();
    let mut v = value;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let start = i.min(buf.len().saturating_sub(width));
    for &b in &buf[start..] {
        out.push(char::from(b));
    }
}

fn print_offset(secs: i32, style: OffsetStyle, out: &mut String) {
    if style.gmt_prefix {
        out.push_str("GMT");
        if secs == 0 {
            return;
        }
    } else if secs == 0 && style.zero_as_z {
        out.push('Z');
        return;
    }
    let abs = secs.unsigned_abs();
    let (h, m, s) = (abs / 3600, abs / 60 % 60, abs % 60);
    out.push(if secs < 0 { '-' } else { '+' });
    push_padded(h.into(), 2, out);
    if style.minutes_if_nonzero && m == 0 && s == 0 {
        return;
    }
    if style.colon {
        out.push(':');
    }
    push_padded(m.into(), 2, out);
    if s != 0 {
        if style.colon {
            out.push(':');
        }
        push_padded(s.into(), 2, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offset(secs: i32, style: OffsetStyle) -> String {
        let mut out = String::new();
        print_offset(secs, style, &mut out);
        out
    }

    #[test]
    fn offset_styles() {
        let no_colon = OffsetStyle {
            colon: false,
            minutes_if_nonzero: false,
            zero_as_z: false,
            gmt_prefix: false,
        };
        assert_eq!(offset(28_800, no_colon), "+0800");
        assert_eq!(offset(0, no_colon), "+0000");
        assert_eq!(offset(-19_800, OffsetStyle::COLON_Z), "-05:30");
        assert_eq!(offset(0, OffsetStyle::COLON_Z), "Z");
        let x = OffsetStyle {
            minutes_if_nonzero: true,
            zero_as_z: true,
            ..no_colon
        };
        assert_eq!(offset(28_800, x), "+08");
        assert_eq!(offset(19_800, x), "+0530");
        let gmt = OffsetStyle {
            gmt_prefix: true,
            colon: true,
            ..no_colon
        };
        assert_eq!(offset(28_800, gmt), "GMT+08:00");
        assert_eq!(offset(0, gmt), "GMT");
    }

    #[test]
    fn numbers_pad_and_sign() {
        let mut out = String::new();
        print_number(7, 2, Sign::NotNegative, &mut out);
        print_number(2021, 4, Sign::ExceedsPad, &mut out);
        print_number(12021, 4, Sign::ExceedsPad, &mut out);
        print_number(-44, 4, Sign::ExceedsPad, &mut out);
        print_number(0, 1, Sign::Normal, &mut out);
        print_number(i64::MIN, 1, Sign::Normal, &mut out);
        assert_eq!(out, "072021+12021-00440-9223372036854775808");
    }
}
