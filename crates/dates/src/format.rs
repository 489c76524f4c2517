//! [`DateFormat`]: a compiled ES mapping `format` (one or more `||`-separated
//! alternatives) that parses and prints dates.

use std::fmt::{self, Write};

use crate::epoch;
use crate::error::DateError;
use crate::iso_fast::{self, Fast};
use crate::named::{self, EpochUnit, Named};
use crate::pattern;
use crate::token_parse::parse_all;
use crate::token_print::{self, Instant};
use crate::tokens::Tok;
use crate::tz::Tz;
use crate::Millis;

/// The ES default format of `date` fields.
const DEFAULT_SPEC: &str = "strict_date_optional_time||epoch_millis";

/// A compiled date format such as `strict_date_optional_time||epoch_millis`
/// or `yyyy-MM-dd HH:mm:ss`.
#[derive(Clone, Debug)]
pub struct DateFormat {
    spec: String,
    formats: Vec<Single>,
}

/// One alternative of a `||` list.
#[derive(Clone, Debug)]
enum Single {
    Epoch(EpochUnit),
    Tokens {
        /// Tried in order; the first whose fields resolve wins.
        parsers: Vec<Vec<Tok>>,
        printer: Vec<Tok>,
        /// Try the hand-written `strict_date_optional_time` parser first.
        fast_iso: bool,
    },
}

impl Single {
    fn compile(part: &str) -> Result<Single, DateError> {
        Ok(match named::lookup(part) {
            Some(Named::Epoch(unit)) => Single::Epoch(unit),
            Some(Named::Tokens {
                parsers,
                printer,
                fast_iso,
            }) => Single::Tokens {
                parsers,
                printer,
                fast_iso,
            },
            None => {
                let toks = pattern::compile(part)
                    .map_err(|msg| DateError::new(format!("Invalid format: [{part}]: {msg}")))?;
                Single::Tokens {
                    parsers: vec![toks.clone()],
                    printer: toks,
                    fast_iso: false,
                }
            }
        })
    }

    #[inline]
    fn parse(&self, input: &str, tz: &Tz, round_up: bool) -> Option<Millis> {
        match self {
            Single::Epoch(unit) => epoch::parse(input, *unit, round_up),
            Single::Tokens {
                parsers, fast_iso, ..
            } => {
                if *fast_iso {
                    match iso_fast::classify(input) {
                        Fast::Parsed(parsed) => return parsed.resolve(tz, round_up),
                        Fast::Rejected => return None,
                        Fast::Unknown => {}
                    }
                }
                parsers
                    .iter()
                    .find_map(|toks| parse_all(toks, input)?.resolve(tz, round_up))
            }
        }
    }

    fn print(&self, ms: Millis, tz: &Tz, out: &mut String) {
        self.print_nanos(ms, 0, tz, out)
    }

    /// Prints `ms` plus `sub_nanos` nanoseconds (epochs print the milliseconds).
    fn print_nanos(&self, ms: Millis, sub_nanos: u32, tz: &Tz, out: &mut String) {
        match self {
            Single::Epoch(unit) => epoch::print(ms, *unit, out),
            Single::Tokens { printer, .. } => {
                let mut at = Instant::new(ms, tz);
                at.sub_nanos = sub_nanos;
                token_print::print(printer, &at, out)
            }
        }
    }

    /// As [`Single::parse`], in epoch nanoseconds: the parsed fraction's digits below the
    /// millisecond are kept (an epoch's are not).
    fn parse_nanos(&self, input: &str, tz: &Tz, round_up: bool) -> Option<i64> {
        let with_sub = |p: crate::fields::Parsed| -> Option<i64> {
            let ms = p.resolve(tz, round_up)?;
            let max = if round_up { 999_999_999 } else { 0 };
            let sub = p.get(crate::fields::Slot::Nanos).unwrap_or(max) % 1_000_000;
            ms.checked_mul(1_000_000)?.checked_add(i64::from(sub))
        };
        match self {
            Single::Epoch(unit) => {
                let ms = epoch::parse(input, *unit, round_up)?;
                let sub = if round_up { 999_999 } else { 0 };
                ms.checked_mul(1_000_000)?.checked_add(sub)
            }
            Single::Tokens {
                parsers, fast_iso, ..
            } => {
                if *fast_iso {
                    match iso_fast::classify(input) {
                        Fast::Parsed(parsed) => return with_sub(parsed),
                        Fast::Rejected => return None,
                        Fast::Unknown => {}
                    }
                }
                parsers
                    .iter()
                    .find_map(|toks| with_sub(parse_all(toks, input)?))
            }
        }
    }
}

impl Default for DateFormat {
    fn default() -> DateFormat {
        DateFormat::default_es()
    }
}

impl DateFormat {
    /// Compiles an ES `format`: built-in names (`epoch_millis`,
    /// `strict_date_optional_time`, `basic_date`, … also in camelCase),
    /// Java patterns (`yyyy-MM-dd'T'HH:mm:ss.SSSZ`), and `||`-separated
    /// alternatives of both, tried in order when parsing.
    pub fn parse(spec: &str) -> Result<DateFormat, DateError> {
        let formats = spec
            .split("||")
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(Single::compile)
            .collect::<Result<Vec<_>, _>>()?;
        if formats.is_empty() {
            return Err(DateError::new("No date pattern provided"));
        }
        Ok(DateFormat {
            spec: spec.to_string(),
            formats,
        })
    }

    /// `strict_date_optional_time||epoch_millis`, the ES default.
    pub fn default_es() -> DateFormat {
        DateFormat::parse(DEFAULT_SPEC).expect("the default format compiles")
    }

    /// The format string this was compiled from.
    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// Parses a date string with the first alternative that accepts it.
    /// Dates without an offset or zone are read in `tz`.
    pub fn parse_millis(&self, input: &str, tz: &Tz) -> Result<Millis, DateError> {
        self.parse_rounding(input, tz, false)
    }

    /// Like [`DateFormat::parse_millis`]; with `round_up`, missing time
    /// fields default to their maximum (23:59:59.999) as ES does for the
    /// `gt`/`lte` bounds of range queries.
    pub(crate) fn parse_rounding(
        &self,
        input: &str,
        tz: &Tz,
        round_up: bool,
    ) -> Result<Millis, DateError> {
        self.formats
            .iter()
            .find_map(|f| f.parse(input, tz, round_up))
            .ok_or_else(|| DateError::unparsable(input, &self.spec))
    }

    /// Parses a JSON value: strings as dates; numbers through their string
    /// form (so `epoch_millis` accepts them and `yyyy-MM-dd` rejects them,
    /// while a four-digit number is a year for `strict_date_optional_time`,
    /// as in ES). `null`, booleans, arrays and objects are errors; skipping
    /// `null` (or applying `null_value`) is up to the caller.
    pub fn parse_json(&self, v: &serde_json::Value, tz: &Tz) -> Result<Millis, DateError> {
        match v {
            serde_json::Value::String(s) => self.parse_millis(s, tz),
            serde_json::Value::Number(n) => {
                let mut buf = StackStr::new();
                let written = if let Some(i) = n.as_i64() {
                    write!(buf, "{i}")
                } else if let Some(u) = n.as_u64() {
                    write!(buf, "{u}")
                } else {
                    write!(buf, "{}", n.as_f64().unwrap_or(f64::NAN))
                };
                match written {
                    Ok(()) => self.parse_millis(buf.as_str(), tz),
                    Err(_) => {
                        let text = match n.as_f64() {
                            Some(f) => format!("{f}"),
                            None => n.to_string(),
                        };
                        self.parse_millis(&text, tz)
                    }
                }
            }
            other => Err(DateError::unparsable(&other.to_string(), &self.spec)),
        }
    }

    /// Parses a date string into epoch nanoseconds (`date_nanos`), keeping the fraction's
    /// digits below the millisecond; with `round_up`, missing fields default to their maximum.
    pub fn parse_nanos(&self, input: &str, tz: &Tz, round_up: bool) -> Result<i64, DateError> {
        self.formats
            .iter()
            .find_map(|f| f.parse_nanos(input, tz, round_up))
            .ok_or_else(|| DateError::unparsable(input, &self.spec))
    }

    /// [`DateFormat::parse_json`] in epoch nanoseconds.
    pub fn parse_json_nanos(&self, v: &serde_json::Value, tz: &Tz) -> Result<i64, DateError> {
        match v {
            serde_json::Value::String(s) => self.parse_nanos(s, tz, false),
            serde_json::Value::Number(n) => self.parse_nanos(&n.to_string(), tz, false),
            other => Err(DateError::unparsable(&other.to_string(), &self.spec)),
        }
    }

    /// Renders epoch nanoseconds in `tz` with the first alternative of the format.
    pub fn format_nanos(&self, nanos: i64, tz: &Tz) -> String {
        let mut out = String::with_capacity(40);
        let ms = nanos.div_euclid(1_000_000);
        let sub = nanos.rem_euclid(1_000_000) as u32;
        self.formats[0].print_nanos(ms, sub, tz, &mut out);
        out
    }

    /// Renders `ms` in `tz` with the first alternative of the format.
    pub fn format_millis(&self, ms: Millis, tz: &Tz) -> String {
        let mut out = String::with_capacity(32);
        self.formats[0].print(ms, tz, &mut out);
        out
    }
}

/// A fixed-capacity string for rendering JSON numbers without allocating.
struct StackStr {
    buf: [u8; 48],
    len: usize,
}

impl StackStr {
    fn new() -> StackStr {
        StackStr {
            buf: [0; 48],
            len: 0,
        }
    }

    fn as_str(&self) -> &str {
        // Only whole `&str`s are ever copied in, so this is valid UTF-8.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default()
    }
}

impl Write for StackStr {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
