//! The compiled form of a date format: a list of tokens that is walked to
//! parse (see `token_parse`) or to print (see `token_print`).

/// A numeric calendar field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Field {
    Year,
    Month,
    Day,
    DayOfYear,
    /// `H`, 0-23.
    Hour,
    /// `k`, 1-24.
    ClockHour,
    /// `K`, 0-11.
    HourOfAmPm,
    /// `h`, 1-12.
    ClockHourOfAmPm,
    Minute,
    Second,
}

/// How a leading sign is treated, after `java.time.format.SignStyle` in
/// strict parsing mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sign {
    /// `-` accepted, `+` rejected; printed only when negative.
    Normal,
    /// A sign is required exactly when more than `min` digits are given.
    ExceedsPad,
    /// No sign at all.
    NotNegative,
}

/// How an offset is printed (parsing accepts every style).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OffsetStyle {
    /// `+08:00` rather than `+0800`.
    pub colon: bool,
    /// Minutes are printed only when non-zero (`X`, `x`: `+08`).
    pub minutes_if_nonzero: bool,
    /// A zero offset prints as `Z` (otherwise as digits, `+0000`).
    pub zero_as_z: bool,
    /// Localized form: `GMT+08:00`, and `GMT` for zero (`ZZZZ`).
    pub gmt_prefix: bool,
}

impl OffsetStyle {
    /// `+HH:MM` with `Z` for zero: the ES default printer style.
    pub(crate) const COLON_Z: OffsetStyle = OffsetStyle {
        colon: true,
        minutes_if_nonzero: false,
        zero_as_z: true,
        gmt_prefix: false,
    };
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    /// Text that must appear verbatim (case-sensitive).
    Lit(String),
    /// A one-byte literal (`-`, `:`, `T`): the common case, without `memcmp`.
    Char(u8),
    /// A number of `min..=max` digits. `reserve` counts the digits that the
    /// following adjacent fixed-width fields need (`yyyyMMdd`).
    Num {
        field: Field,
        min: u8,
        max: u8,
        sign: Sign,
        reserve: u8,
    },
    /// `yy`: two digits, years 2000-2099.
    YearTwoDigits,
    /// Fraction of a second, `min..=max` digits; printed with `width` digits.
    Fraction { min: u8, max: u8, width: u8 },
    /// `MMM` (`Jan`) or `MMMM` (`January`); parsing accepts both.
    MonthName { full: bool },
    /// `EEE` (`Mon`) or `EEEE` (`Monday`); parsing accepts both.
    DayName { full: bool },
    /// `a`: `AM` / `PM`.
    AmPm,
    /// A UTC offset (`Z`, `+08`, `+0800`, `+08:00`); with `zone_ids`, also a
    /// zone id such as `UTC` or `Europe/Paris`.
    Offset { style: OffsetStyle, zone_ids: bool },
    /// `VV`: a zone id, printed as the zone's id (`Europe/Paris`, `+08:00`).
    ZoneId,
    /// `z`: a zone id when parsing; printed as the zone's abbreviation.
    ZoneName,
    /// `[...]`: parsed if possible, otherwise skipped; always printed.
    Optional(Vec<Tok>),
}

impl Tok {
    /// Width of a fixed-width numeric token, for adjacent value parsing.
    fn fixed_width(&self) -> Option<u8> {
        match self {
            Tok::Num { min, max, .. } if min == max => Some(*min),
            Tok::YearTwoDigits => Some(2),
            Tok::Fraction { width, .. } => Some(*width),
            _ => None,
        }
    }
}

/// Final pass over compiled tokens: turns one-byte literals into
/// [`Tok::Char`] and sets `reserve` on variable-width numbers that are
/// directly followed by fixed-width numbers, so that `yyyyMMdd` leaves four
/// digits for `MMdd`.
pub(crate) fn finish(toks: &mut [Tok]) {
    for tok in toks.iter_mut() {
        if let Tok::Lit(text) = tok {
            if let &[byte] = text.as_bytes() {
                *tok = Tok::Char(byte);
            }
        }
    }
    for i in 0..toks.len() {
        let following: u32 = toks[i + 1..]
            .iter()
            .map_while(Tok::fixed_width)
            .map(u32::from)
            .sum();
        match &mut toks[i] {
            Tok::Num {
                min, max, reserve, ..
            } if min != max => *reserve = following.min(u8::MAX as u32) as u8,
            Tok::Optional(inner) => finish(inner),
            _ => {}
        }
    }
}

/// Small constructors used by the named formats and the pattern compiler.
pub(crate) mod build {
    use super::*;

    pub(crate) fn lit(s: &str) -> Tok {
        Tok::Lit(s.to_string())
    }

    pub(crate) fn num(field: Field, min: u8, max: u8) -> Tok {
        Tok::Num {
            field,
            min,
            max,
            sign: Sign::NotNegative,
            reserve: 0,
        }
    }

    pub(crate) fn year(min: u8, max: u8, sign: Sign) -> Tok {
        Tok::Num {
            field: Field::Year,
            min,
            max,
            sign,
            reserve: 0,
        }
    }

    pub(crate) fn frac(min: u8, max: u8) -> Tok {
        Tok::Fraction { min, max, width: 3 }
    }

    pub(crate) fn opt(toks: Vec<Tok>) -> Tok {
        Tok::Optional(toks)
    }

    /// Offset or zone id on input, `+08:00`/`Z` on output.
    pub(crate) fn zone() -> Tok {
        Tok::Offset {
            style: OffsetStyle::COLON_Z,
            zone_ids: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::build::*;
    use super::*;

    #[test]
    fn reserves_digits_for_adjacent_fields() {
        let mut toks = vec![
            year(4, 10, Sign::ExceedsPad),
            num(Field::Month, 2, 2),
            num(Field::Day, 2, 2),
            lit("T"),
            num(Field::Hour, 1, 2),
        ];
        finish(&mut toks);
        assert!(matches!(toks[0], Tok::Num { reserve: 4, .. }));
        assert!(matches!(toks[4], Tok::Num { reserve: 0, .. }));
        assert_eq!(toks[3], Tok::Char(b'T'));
    }
}
