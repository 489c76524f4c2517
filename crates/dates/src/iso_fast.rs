//! A hand-written parser for the most common shapes of
//! `strict_date_optional_time` (the ES default): `2021-12-27`,
//! `2021-12-27T10:11:12`, with an optional `.fraction` and `Z`, `±HH:MM` or
//! `±HHMM`. Anything else returns `None` and goes to the general token
//! parser, so the accepted language is exactly the token parser's.

use crate::fields::{Parsed, ParsedZone, Slot};

#[inline]
fn d2(s: &[u8], i: usize) -> Option<u32> {
    let (a, b) = (s[i].wrapping_sub(b'0'), s[i + 1].wrapping_sub(b'0'));
    (a < 10 && b < 10).then_some(a as u32 * 10 + b as u32)
}

/// What the fast path knows about an input.
pub(crate) enum Fast {
    /// One of the handled shapes, with its fields.
    Parsed(Parsed),
    /// Certainly not `strict_date_optional_time` (e.g. epoch millis).
    Rejected,
    /// Ask the token parser.
    Unknown,
}

/// Classifies `input`; see [`Fast`].
#[inline]
pub(crate) fn classify(input: &str) -> Fast {
    let s = input.as_bytes();
    // Five leading digits: more than four year digits need a sign.
    if s.len() >= 5 && s[..5].iter().all(u8::is_ascii_digit) {
        return Fast::Rejected;
    }
    match parse(s) {
        Some(p) => Fast::Parsed(p),
        None => Fast::Unknown,
    }
}

/// Fields of `s`, or `None` when it is not one of the shapes handled here
/// (which does not mean it is invalid).
#[inline]
fn parse(s: &[u8]) -> Option<Parsed> {
    if s.len() < 10 || s[4] != b'-' || s[7] != b'-' {
        return None;
    }
    let mut p = Parsed::default();
    p.set_year((d2(s, 0)? * 100 + d2(s, 2)?) as i64);
    p.set(Slot::Month, d2(s, 5)?);
    p.set(Slot::Day, d2(s, 8)?);
    if s.len() == 10 {
        return Some(p);
    }
    if s.len() < 19 || s[10] != b'T' || s[13] != b':' || s[16] != b':' {
        return None;
    }
    p.set(Slot::Hour, d2(s, 11)?);
    p.set(Slot::Minute, d2(s, 14)?);
    p.set(Slot::Second, d2(s, 17)?);
    let mut i = 19;
    if s.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        let mut nanos = 0u32;
        while i < s.len() && i - start < 9 && s[i].is_ascii_digit() {
            nanos = nanos * 10 + (s[i] - b'0') as u32;
            i += 1;
        }
        let digits = i - start;
        if digits == 0 || s.get(i).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        p.set(Slot::Nanos, nanos * 10u32.pow(9 - digits as u32));
    }
    let zone = match &s[i..] {
        [] => return Some(p),
        [b'Z'] => 0,
        [sign @ (b'+' | b'-'), rest @ ..] => {
            let (h, m) = match rest {
                [_, _, b':', _, _] => (d2(rest, 0)?, d2(rest, 3)?),
                [_, _, _, _] => (d2(rest, 0)?, d2(rest, 2)?),
                _ => return None,
            };
            if h > 18 || m > 59 || (h == 18 && m > 0) {
                return None;
            }
            let secs = (h * 3600 + m * 60) as i32;
            if *sign == b'-' {
                -secs
            } else {
                secs
            }
        }
        _ => return None,
    };
    p.set_zone(ParsedZone::Offset(zone));
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::named::{lookup, Named};
    use crate::token_parse::parse_all;
    use crate::tz::Tz;

    fn general(input: &str) -> Option<Parsed> {
        let Some(Named::Tokens { parsers, .. }) = lookup("strict_date_optional_time") else {
            panic!("strict_date_optional_time is a token format");
        };
        parse_all(&parsers[0], input)
    }

    fn resolved(p: Option<Parsed>) -> (Option<i64>, Option<i64>) {
        match p {
            None => (None, None),
            Some(p) => (p.resolve(&Tz::utc(), false), p.resolve(&Tz::utc(), true)),
        }
    }

    /// Wherever the fast path answers, it agrees with the token parser.
    #[test]
    fn agrees_with_token_parser() {
        let dates = [
            "2021-12-27",
            "2020-02-29",
            "2021-02-29",
            "0000-01-01",
            "2021-13-01",
            "2021-1-01",
        ];
        let times = [
            "",
            "T",
            "T10",
            "T10:11",
            "T10:11:12",
            "T23:59:59",
            "T24:00:00",
            "T10:60:00",
            "T1:11:12",
        ];
        let fractions = [
            "",
            ".",
            ".1",
            ".12",
            ".123",
            ".123456",
            ".123456789",
            ".1234567890",
            ",5",
        ];
        let zones = [
            "",
            "Z",
            "z",
            "+08:00",
            "-05:30",
            "+0800",
            "-0530",
            "+08",
            "+18:00",
            "+18:01",
            "+19:00",
            "+08:0",
            "+8:00",
            "UTC",
            "Europe/Paris",
            " ",
            "x",
        ];
        let mut answered = 0;
        let mut total = 0;
        for d in dates {
            for t in times {
                for f in fractions {
                    for z in zones {
                        let input = format!("{d}{t}{f}{z}");
                        total += 1;
                        if let Some(fast) = parse(input.as_bytes()) {
                            answered += 1;
                            assert_eq!(resolved(Some(fast)), resolved(general(&input)), "{input}");
                        }
                    }
                }
            }
        }
        assert!(answered > total / 10, "{answered} of {total}");
    }

    #[test]
    fn falls_back_on_other_shapes() {
        for input in [
            "2021",
            "2021-12",
            "+12021-01-01",
            "2021-12-27T10",
            "2021-12-27T10:11:12Europe/Paris",
        ] {
            assert!(matches!(classify(input), Fast::Unknown), "{input}");
        }
        assert!(matches!(
            classify("2021-12-27T10:11:12.123+08:00"),
            Fast::Parsed(_)
        ));
    }

    #[test]
    fn rejects_long_numbers_like_the_token_parser() {
        for input in [
            "12345",
            "1640534400000",
            "20211227",
            "123456789012345678901",
            "12345-01-01",
        ] {
            assert!(matches!(classify(input), Fast::Rejected), "{input}");
            assert!(general(input).is_none(), "{input}");
        }
        assert!(matches!(classify("1234"), Fast::Unknown));
    }
}
