//! How values print in `key_as_string` and `*_as_string`: Elasticsearch's `DocValueFormat`.
//! Date fields print with their mapping format (or the request's `format`) in the request's
//! time zone; numbers print raw unless a `java.text.DecimalFormat` pattern is given.

use lode_dates::{DateFormat, Tz};
use lode_engine::EsError;

/// The `DocValueFormat` of a value source.
#[derive(Debug, Clone)]
pub enum ValueFormat {
    /// No `*_as_string` rendering.
    Raw,
    Date(DateFormat, Tz),
    Decimal(DecimalPattern),
    /// ES's `DocValueFormat.BOOLEAN`: `"true"` for any value but 0.
    Bool,
}

impl ValueFormat {
    pub fn is_raw(&self) -> bool {
        matches!(self, ValueFormat::Raw)
    }

    /// The string form of `v`, or `None` for the raw format.
    pub fn format(&self, v: f64) -> Option<String> {
        match self {
            ValueFormat::Raw => None,
            ValueFormat::Date(f, tz) => Some(f.format_millis(v as i64, tz)),
            ValueFormat::Decimal(p) => Some(p.format(v)),
            ValueFormat::Bool => Some((v != 0.0).to_string()),
        }
    }

    /// A numeric `format` parameter: a `DecimalFormat` pattern.
    pub fn decimal(pattern: &str) -> Result<ValueFormat, EsError> {
        DecimalPattern::parse(pattern).map(ValueFormat::Decimal)
    }

    /// A date `format` parameter (or the field's own format) in `tz`.
    pub fn date(spec: &str, tz: &Tz) -> Result<ValueFormat, EsError> {
        DateFormat::parse(spec)
            .map(|f| ValueFormat::Date(f, tz.clone()))
            .map_err(|e| {
                EsError::illegal_argument(format!("Invalid format: [{spec}]: {}", e.reason))
            })
    }
}

/// A subset of `java.text.DecimalFormat`: literal prefix and suffix (quotes allowed), `#`, `0`,
/// `,` grouping and `.` fraction digits, `%` and `‰`; rounding is HALF_EVEN like Java's.
#[derive(Debug, Clone)]
pub struct DecimalPattern {
    prefix: String,
    suffix: String,
    min_int: usize,
    min_frac: usize,
    max_frac: usize,
    grouping: usize,
    multiplier: f64,
}

impl DecimalPattern {
    pub fn parse(pattern: &str) -> Result<DecimalPattern, EsError> {
        let bad = || EsError::illegal_argument(format!("Malformed pattern \"{pattern}\""));
        // Only the positive sub-pattern is used.
        let positive = split_unquoted(pattern, ';');
        let chars: Vec<char> = positive.chars().collect();
        let is_num = |c: char| matches!(c, '#' | '0' | ',' | '.');
        let mut i = 0;
        let mut prefix = String::new();
        let mut multiplier = 1.0;
        while i < chars.len() && !is_num(chars[i]) {
            i = literal(&chars, i, &mut prefix, &mut multiplier);
        }
        let start = i;
        while i < chars.len() && is_num(chars[i]) {
            i += 1;
        }
        let number: String = chars[start..i].iter().collect();
        let mut suffix = String::new();
        while i < chars.len() {
            if is_num(chars[i]) {
                return Err(bad());
            }
            i = literal(&chars, i, &mut suffix, &mut multiplier);
        }
        if number.is_empty() {
            return Err(bad());
        }
        let (int_part, frac_part) = match number.split_once('.') {
            Some((a, b)) if !b.contains('.') && !b.contains(',') => (a, b),
            Some(_) => return Err(bad()),
            None => (number.as_str(), ""),
        };
        let grouping = match int_part.rfind(',') {
            Some(p) => int_part.len() - p - 1,
            None => 0,
        };
        let digits: String = int_part.chars().filter(|c| *c != ',').collect();
        Ok(DecimalPattern {
            prefix,
            suffix,
            min_int: digits.chars().filter(|c| *c == '0').count(),
            min_frac: frac_part.chars().take_while(|c| *c == '0').count(),
            max_frac: frac_part.len(),
            grouping,
            multiplier,
        })
    }

    pub fn format(&self, v: f64) -> String {
        let v = v * self.multiplier;
        if v.is_nan() {
            return "NaN".into();
        }
        let negative = v < 0.0;
        let body = if v.is_infinite() {
            "∞".to_string()
        } else {
            let text = round_half_even(v.abs(), self.max_frac);
            let (int_digits, frac_digits) = match text.split_once('.') {
                Some((a, b)) => (a.to_string(), b.to_string()),
                None => (text.clone(), String::new()),
            };
            let mut frac = frac_digits.trim_end_matches('0').to_string();
            while frac.len() < self.min_frac {
                frac.push('0');
            }
            let mut int = int_digits.trim_start_matches('0').to_string();
            while int.len() < self.min_int {
                int.insert(0, '0');
            }
            if self.grouping > 0 && int.len() > self.grouping {
                let mut grouped = String::new();
                for (k, c) in int.chars().enumerate() {
                    if k > 0 && (int.len() - k) % self.grouping == 0 {
                        grouped.push(',');
                    }
                    grouped.push(c);
                }
                int = grouped;
            }
            if int.is_empty() && frac.is_empty() {
                int.push('0');
            }
            if frac.is_empty() {
                int
            } else {
                format!("{int}.{frac}")
            }
        };
        let is_zero = body.chars().all(|c| c == '0' || c == '.' || c == ',');
        let sign = if negative && !is_zero { "-" } else { "" };
        format!("{sign}{}{body}{}", self.prefix, self.suffix)
    }
}

/// Appends the literal at `chars[i]` (a quoted run or one character) and returns the next index.
fn literal(chars: &[char], mut i: usize, out: &mut String, multiplier: &mut f64) -> usize {
    match chars[i] {
        '\'' => {
            i += 1;
            if i < chars.len() && chars[i] == '\'' {
                out.push('\'');
                return i + 1;
            }
            while i < chars.len() && chars[i] != '\'' {
                out.push(chars[i]);
                i += 1;
            }
            i + 1
        }
        '%' => {
            *multiplier = 100.0;
            out.push('%');
            i + 1
        }
        '\u{2030}' => {
            *multiplier = 1000.0;
            out.push('\u{2030}');
            i + 1
        }
        c => {
            out.push(c);
            i + 1
        }
    }
}

fn split_unquoted(s: &str, sep: char) -> &str {
    let mut quoted = false;
    for (i, c) in s.char_indices() {
        if c == '\'' {
            quoted = !quoted;
        } else if c == sep && !quoted {
            return &s[..i];
        }
    }
    s
}

/// `v` (non-negative) with `digits` fraction digits, rounded half-even on its exact binary
/// value, as Java's `DecimalFormat` rounds since JDK 8 (`100.475`, stored as
/// 100.47499999…, gives `100.47`); Rust's fixed-precision formatting rounds exactly so.
fn round_half_even(v: f64, digits: usize) -> String {
    format!("{v:.digits$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(p: &str, v: f64) -> String {
        DecimalPattern::parse(p).unwrap().format(v)
    }

    #[test]
    fn rounds_half_even_on_the_binary_value() {
        assert_eq!(f("0.00", 100.475), "100.47");
        assert_eq!(f("0.00", 0.125), "0.12");
        assert_eq!(f("0.00", 0.375), "0.38");
        assert_eq!(f("0", 2.5), "2");
        assert_eq!(f("0", 3.5), "4");
        assert_eq!(f("#.##", 1.005), "1");
    }

    #[test]
    fn decimal_patterns() {
        assert_eq!(f("Value is ##0.0", 0.0), "Value is 0.0");
        assert_eq!(f("Value is ##0.0", 150.0), "Value is 150.0");
        assert_eq!(f("#,##0.00", 1234567.891), "1,234,567.89");
        assert_eq!(f("0.###", 2.5), "2.5");
        assert_eq!(f("0", 2.5), "2");
        assert_eq!(f("0", 3.5), "4");
        assert_eq!(f("000", 7.0), "007");
        assert_eq!(f("#.#", -1.25), "-1.2");
        assert_eq!(f("0.0'%'", 3.0), "3.0%");
        assert_eq!(f("0%", 0.25), "25%");
    }
}
