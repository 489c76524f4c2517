//! Range field types (`integer_range`, `long_range`, `float_range`, `double_range`,
//! `date_range`, `ip_range`), as ES's `RangeFieldMapper` defines them.
//!
//! Each range of a document is kept as one value of a bytes column: its inclusive lower
//! bound then its inclusive upper bound, each encoded so that byte order is the order of the
//! values (signed integers with the sign bit flipped, doubles as their order-preserving bits,
//! IPs as their 16 IPv6 bytes). Keeping both bounds in one value keeps a multi-valued
//! field's ranges paired; queries (`lode_query::range_field`) compare encoded bounds.

use crate::mapping::FieldDef;
use lode_dates::Tz;
use serde_json::Value;
use std::net::IpAddr;

/// The value type of a range field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeKind {
    Integer,
    Long,
    Float,
    Double,
    Date,
    Ip,
}

/// How a document's range must relate to the query's range (ES's `ShapeRelation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    Intersects,
    /// The document's range contains the query's.
    Contains,
    /// The document's range lies within the query's.
    Within,
}

impl Relation {
    pub fn parse(s: &str) -> Option<Relation> {
        match s.to_ascii_lowercase().as_str() {
            "intersects" => Some(Relation::Intersects),
            "contains" => Some(Relation::Contains),
            "within" => Some(Relation::Within),
            _ => None,
        }
    }

    /// Whether the document range `[a, b]` matches the query range `[lo, hi]` (all
    /// encoded, inclusive).
    pub fn matches(self, a: &[u8], b: &[u8], lo: &[u8], hi: &[u8]) -> bool {
        match self {
            Relation::Intersects => a <= hi && b >= lo,
            Relation::Contains => a <= lo && b >= hi,
            Relation::Within => a >= lo && b <= hi,
        }
    }
}

impl RangeKind {
    pub fn parse(type_name: &str) -> Option<RangeKind> {
        Some(match type_name {
            "integer_range" => RangeKind::Integer,
            "long_range" => RangeKind::Long,
            "float_range" => RangeKind::Float,
            "double_range" => RangeKind::Double,
            "date_range" => RangeKind::Date,
            "ip_range" => RangeKind::Ip,
            _ => return None,
        })
    }

    pub fn type_name(self) -> &'static str {
        match self {
            RangeKind::Integer => "integer_range",
            RangeKind::Long => "long_range",
            RangeKind::Float => "float_range",
            RangeKind::Double => "double_range",
            RangeKind::Date => "date_range",
            RangeKind::Ip => "ip_range",
        }
    }

    /// Bytes of one encoded bound.
    pub fn width(self) -> usize {
        match self {
            RangeKind::Ip => 16,
            _ => 8,
        }
    }

    /// The smallest and largest value, which an absent bound stands for.
    pub fn min(self) -> Vec<u8> {
        match self {
            RangeKind::Integer => enc_i64(i32::MIN as i64),
            RangeKind::Long | RangeKind::Date => enc_i64(i64::MIN),
            RangeKind::Float | RangeKind::Double => enc_f64(f64::NEG_INFINITY),
            RangeKind::Ip => vec![0; 16],
        }
    }

    pub fn max(self) -> Vec<u8> {
        match self {
            RangeKind::Integer => enc_i64(i32::MAX as i64),
            RangeKind::Long | RangeKind::Date => enc_i64(i64::MAX),
            RangeKind::Float | RangeKind::Double => enc_f64(f64::INFINITY),
            RangeKind::Ip => vec![0xff; 16],
        }
    }

    /// The next value above an encoded one (for an exclusive lower bound), `None` at the top.
    pub fn next_up(self, e: &[u8]) -> Option<Vec<u8>> {
        self.step(e, true)
    }

    /// The next value below an encoded one (for an exclusive upper bound).
    pub fn next_down(self, e: &[u8]) -> Option<Vec<u8>> {
        self.step(e, false)
    }

    fn step(self, e: &[u8], up: bool) -> Option<Vec<u8>> {
        match self {
            RangeKind::Integer | RangeKind::Long | RangeKind::Date => {
                let x = dec_i64(e);
                let y = if up {
                    x.checked_add(1)?
                } else {
                    x.checked_sub(1)?
                };
                if self == RangeKind::Integer && i32::try_from(y).is_err() {
                    return None;
                }
                Some(enc_i64(y))
            }
            RangeKind::Float => {
                let x = dec_f64(e) as f32;
                let y = if up {
                    next_f32(x, true)
                } else {
                    next_f32(x, false)
                };
                Some(enc_f64(y as f64))
            }
            RangeKind::Double => {
                let x = dec_f64(e);
                Some(enc_f64(next_f64(x, up)))
            }
            RangeKind::Ip => {
                let x = u128::from_be_bytes(e.try_into().ok()?);
                let y = if up {
                    x.checked_add(1)?
                } else {
                    x.checked_sub(1)?
                };
                Some(y.to_be_bytes().to_vec())
            }
        }
    }

    /// One bound value of a document or of a query, encoded. Dates are read with `parse_date`
    /// (the field's format, or a query's format, time zone and date math).
    pub fn encode(
        self,
        v: &Value,
        parse_date: &dyn Fn(&Value) -> Result<i64, String>,
    ) -> Result<Vec<u8>, String> {
        let number = || -> Result<f64, String> {
            match v {
                Value::Number(n) => n
                    .as_f64()
                    .ok_or_else(|| format!("For input string: \"{n}\"")),
                Value::String(s) => s
                    .trim()
                    .parse::<f64>()
                    .map_err(|_| format!("For input string: \"{s}\"")),
                other => Err(format!("For input string: \"{other}\"")),
            }
        };
        Ok(match self {
            RangeKind::Integer | RangeKind::Long => {
                let x = match v {
                    Value::Number(n) if n.as_i64().is_some() => n.as_i64().unwrap_or(0),
                    Value::String(s) if s.trim().parse::<i64>().is_ok() => {
                        s.trim().parse::<i64>().unwrap_or(0)
                    }
                    _ => {
                        let f = number()?;
                        if !f.is_finite() || f.abs() >= 9.3e18 {
                            return Err(format!("Value [{f}] is out of range for a long"));
                        }
                        f.trunc() as i64
                    }
                };
                if self == RangeKind::Integer && i32::try_from(x).is_err() {
                    return Err(format!("Value [{x}] is out of range for an integer"));
                }
                enc_i64(x)
            }
            RangeKind::Float => enc_f64(number()? as f32 as f64),
            RangeKind::Double => enc_f64(number()?),
            RangeKind::Date => enc_i64(parse_date(v)?),
            RangeKind::Ip => {
                let s = v
                    .as_str()
                    .ok_or_else(|| format!("'{v}' is not an IP string literal."))?;
                let ip: IpAddr = s
                    .parse()
                    .map_err(|_| format!("'{s}' is not an IP string literal."))?;
                crate::document::to_v6(ip).octets().to_vec()
            }
        })
    }

    /// Renders an encoded bound as ES shows range bounds (for messages).
    pub fn render(self, e: &[u8], def: &FieldDef) -> String {
        match self {
            RangeKind::Integer | RangeKind::Long => dec_i64(e).to_string(),
            RangeKind::Date => def.date_format.format_millis(dec_i64(e), &Tz::utc()),
            RangeKind::Float | RangeKind::Double => crate::document::java_float_string(dec_f64(e)),
            RangeKind::Ip => {
                let o: [u8; 16] = e.try_into().unwrap_or([0; 16]);
                let ip = std::net::Ipv6Addr::from(o);
                match ip.to_ipv4_mapped() {
                    Some(v4) => v4.to_string(),
                    None => ip.to_string(),
                }
            }
        }
    }
}

/// A document's range value (ES's `RangeFieldMapper#parseCreateField`): an object of
/// `gt`/`gte`/`lt`/`lte` (an absent or null bound is unbounded), or for `ip_range` a CIDR
/// string. Returns the encoded inclusive bounds, lower then upper, as one column value.
pub fn parse_document_range(kind: RangeKind, def: &FieldDef, v: &Value) -> Result<Vec<u8>, String> {
    let parse_date = |v: &Value| {
        def.date_format
            .parse_json(v, &Tz::utc())
            .map_err(|e| e.reason)
    };
    // Without `coerce`, a bound must be a number of the type, as ES's number parsers.
    let check_coerce = |b: &Value| -> Result<(), String> {
        let class = match kind {
            RangeKind::Integer => "Integer",
            RangeKind::Long => "Long",
            RangeKind::Float => "Float",
            RangeKind::Double => "Double",
            RangeKind::Date | RangeKind::Ip => return Ok(()),
        };
        if def.coerce {
            return Ok(());
        }
        match b {
            Value::String(_) => Err(format!("{class} value passed as String")),
            Value::Number(n)
                if matches!(kind, RangeKind::Integer | RangeKind::Long)
                    && n.as_i64().is_none()
                    && n.as_f64().is_some_and(|f| f.fract() != 0.0) =>
            {
                Err(format!(
                    "{} cannot be converted to {class} without data loss",
                    crate::document::java_float_string(n.as_f64().unwrap_or(0.0))
                ))
            }
            _ => Ok(()),
        }
    };
    let (lo, hi) = match v {
        Value::Object(m) => {
            for b in m.values() {
                check_coerce(b)?;
            }
            let mut lo = kind.min();
            let mut hi = kind.max();
            for (k, b) in m {
                if b.is_null() {
                    continue;
                }
                match k.as_str() {
                    "gte" | "from" => lo = kind.encode(b, &parse_date)?,
                    "gt" => {
                        let e = kind.encode(b, &parse_date)?;
                        lo = kind.next_up(&e).ok_or("empty range")?;
                    }
                    "lte" | "to" => hi = kind.encode(b, &parse_date)?,
                    "lt" => {
                        let e = kind.encode(b, &parse_date)?;
                        hi = kind.next_down(&e).ok_or("empty range")?;
                    }
                    other => {
                        return Err(format!(
                            "error parsing field [{}], with unknown parameter [{other}]",
                            def.path
                        ))
                    }
                }
            }
            (lo, hi)
        }
        Value::String(s) if kind == RangeKind::Ip && s.contains('/') => cidr(s)?,
        other => {
            return Err(format!(
                "error parsing field [{}], expected an object but got {}",
                def.path,
                match other {
                    Value::String(_) => "VALUE_STRING",
                    Value::Number(_) => "VALUE_NUMBER",
                    Value::Bool(_) => "VALUE_BOOLEAN",
                    _ => "START_ARRAY",
                }
            ))
        }
    };
    if lo > hi {
        return Err(format!(
            "min value ({}) is greater than max value ({})",
            kind.render(&lo, def),
            kind.render(&hi, def)
        ));
    }
    Ok([lo, hi].concat())
}

/// The first and last address of a CIDR block, as IPv6 bytes.
pub fn cidr(s: &str) -> Result<(Vec<u8>, Vec<u8>), String> {
    let bad = || format!("invalid IP address with prefix length: {s}");
    let (addr, len) = s.split_once('/').ok_or_else(bad)?;
    let ip: IpAddr = addr.parse().map_err(|_| bad())?;
    let len: u32 = len.parse().map_err(|_| bad())?;
    let (v6, len) = match ip {
        IpAddr::V4(_) if len <= 32 => (crate::document::to_v6(ip), len + 96),
        IpAddr::V6(v6) if len <= 128 => (v6, len),
        _ => return Err(bad()),
    };
    let x = u128::from_be_bytes(v6.octets());
    let mask = if len == 0 {
        0
    } else {
        u128::MAX << (128 - len)
    };
    let lo = x & mask;
    let hi = lo | !mask;
    Ok((lo.to_be_bytes().to_vec(), hi.to_be_bytes().to_vec()))
}

pub fn enc_i64(x: i64) -> Vec<u8> {
    ((x as u64) ^ (1 << 63)).to_be_bytes().to_vec()
}

pub fn dec_i64(e: &[u8]) -> i64 {
    let b: [u8; 8] = e.try_into().unwrap_or([0; 8]);
    (u64::from_be_bytes(b) ^ (1 << 63)) as i64
}

pub fn enc_f64(x: f64) -> Vec<u8> {
    let x = if x == 0.0 { 0.0 } else { x };
    let bits = x.to_bits();
    let k = if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    };
    k.to_be_bytes().to_vec()
}

pub fn dec_f64(e: &[u8]) -> f64 {
    let b: [u8; 8] = e.try_into().unwrap_or([0; 8]);
    let k = u64::from_be_bytes(b);
    let bits = if k >> 63 == 1 { k & !(1 << 63) } else { !k };
    f64::from_bits(bits)
}

fn next_f64(x: f64, up: bool) -> f64 {
    if x.is_nan() || (up && x == f64::INFINITY) || (!up && x == f64::NEG_INFINITY) {
        return x;
    }
    if x == 0.0 {
        let tiny = f64::from_bits(1);
        return if up { tiny } else { -tiny };
    }
    let bits = x.to_bits();
    let next = if (x > 0.0) == up { bits + 1 } else { bits - 1 };
    f64::from_bits(next)
}

fn next_f32(x: f32, up: bool) -> f32 {
    if x.is_nan() || (up && x == f32::INFINITY) || (!up && x == f32::NEG_INFINITY) {
        return x;
    }
    if x == 0.0 {
        let tiny = f32::from_bits(1);
        return if up { tiny } else { -tiny };
    }
    let bits = x.to_bits();
    let next = if (x > 0.0) == up { bits + 1 } else { bits - 1 };
    f32::from_bits(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_keep_order() {
        let ints = [i64::MIN, -5, -1, 0, 1, 7, i64::MAX];
        for w in ints.windows(2) {
            assert!(enc_i64(w[0]) < enc_i64(w[1]));
            assert_eq!(dec_i64(&enc_i64(w[0])), w[0]);
        }
        let fl = [
            f64::NEG_INFINITY,
            -2.5,
            -0.1,
            0.0,
            1e-300,
            0.1,
            3.0,
            f64::INFINITY,
        ];
        for w in fl.windows(2) {
            assert!(enc_f64(w[0]) < enc_f64(w[1]), "{} {}", w[0], w[1]);
            assert_eq!(dec_f64(&enc_f64(w[0])), w[0]);
        }
        assert_eq!(next_f64(1.0, true), 1.0 + f64::EPSILON);
        assert!(next_f64(-0.0, false) < 0.0);
    }

    #[test]
    fn relations() {
        let e = |x: i64| enc_i64(x);
        // document [2, 8]
        let m = |r: Relation, lo, hi| r.matches(&e(2), &e(8), &e(lo), &e(hi));
        assert!(m(Relation::Intersects, 8, 20));
        assert!(!m(Relation::Intersects, 9, 20));
        assert!(m(Relation::Contains, 3, 8));
        assert!(!m(Relation::Contains, 1, 8));
        assert!(m(Relation::Within, 2, 8));
        assert!(!m(Relation::Within, 3, 9));
    }

    #[test]
    fn document_ranges_and_coerce() {
        let reg = lode_analysis::AnalysisRegistry::new(None).unwrap();
        let m = crate::mapping::compile(
            &serde_json::json!({"properties": {
                "r": {"type": "integer_range"},
                "s": {"type": "integer_range", "coerce": false}
            }}),
            &reg,
        )
        .unwrap();
        let parse = |f: &str, v: Value| parse_document_range(RangeKind::Integer, &m.fields[f], &v);
        let e = parse("r", serde_json::json!({"gt": 1, "lt": "5"})).unwrap();
        assert_eq!(e, [enc_i64(2), enc_i64(4)].concat());
        let e = parse("r", serde_json::json!({"lte": 1.7})).unwrap();
        assert_eq!(e, [enc_i64(i32::MIN as i64), enc_i64(1)].concat());
        assert_eq!(
            parse("s", serde_json::json!({"gte": "1"})).unwrap_err(),
            "Integer value passed as String"
        );
        assert_eq!(
            parse("s", serde_json::json!({"gte": 1.5})).unwrap_err(),
            "1.5 cannot be converted to Integer without data loss"
        );
        assert_eq!(
            parse("r", serde_json::json!({"gt": 3, "lt": 4})).unwrap_err(),
            "min value (4) is greater than max value (3)"
        );
    }

    #[test]
    fn cidr_blocks() {
        let (lo, hi) = cidr("192.168.0.0/16").unwrap();
        let v = |s: &str| crate::document::to_v6(s.parse().unwrap()).octets().to_vec();
        assert_eq!(lo, v("192.168.0.0"));
        assert_eq!(hi, v("192.168.255.255"));
    }
}
