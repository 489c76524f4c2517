//! Query values (JSON scalars or query-string text) converted to what a field indexes:
//! integers checked against the field type, floats rounded to the field's precision, IPs
//! (and CIDR blocks) as IPv6, booleans. Errors are the Java-style message Elasticsearch puts
//! in its `query_shard_exception`.

use lode_engine::mapping::{FieldDef, FieldType};
use serde_json::Value;
use std::net::{IpAddr, Ipv6Addr};

/// A number as the query spelled it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    Int(i128),
    Float(f64),
}

pub fn scalar_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn number_format(s: &str) -> String {
    format!("For input string: \"{s}\"")
}

pub fn parse_num(v: &Value) -> Result<Num, String> {
    match v {
        Value::Number(n) => Ok(if let Some(i) = n.as_i64() {
            Num::Int(i as i128)
        } else if let Some(u) = n.as_u64() {
            Num::Int(u as i128)
        } else {
            Num::Float(n.as_f64().unwrap_or(f64::NAN))
        }),
        Value::String(s) => {
            let t = s.trim();
            if let Ok(i) = t.parse::<i128>() {
                return Ok(Num::Int(i));
            }
            match t.parse::<f64>() {
                Ok(f) if f.is_finite() => Ok(Num::Float(f)),
                _ => Err(number_format(s)),
            }
        }
        other => Err(number_format(&scalar_string(other))),
    }
}

/// The values an integer field of this type can hold.
pub fn int_bounds(ty: FieldType) -> (i64, i64) {
    match ty {
        FieldType::Integer | FieldType::TokenCount => (i32::MIN as i64, i32::MAX as i64),
        FieldType::Short => (i16::MIN as i64, i16::MAX as i64),
        FieldType::Byte => (i8::MIN as i64, i8::MAX as i64),
        FieldType::UnsignedLong => (0, i64::MAX),
        _ => (i64::MIN, i64::MAX),
    }
}

/// The value an exact (`term`) query on an integer field looks for; `None` when no value
/// of the field can equal it (a decimal part, or out of the type's range), as ES answers
/// with a match-nothing query then.
pub fn int_term(ty: FieldType, v: &Value) -> Result<Option<i64>, String> {
    let (min, max) = int_bounds(ty);
    let n: i128 = match parse_num(v)? {
        Num::Int(i) => i,
        Num::Float(f) => {
            if f.fract() != 0.0 {
                return Ok(None);
            }
            f.clamp(-1e30, 1e30) as i128
        }
    };
    if n < min as i128 || n > max as i128 {
        return Ok(None);
    }
    Ok(Some(n as i64))
}

/// Inclusive integer bounds for a range on an integer field; `None` when the range is empty.
pub fn int_range(
    ty: FieldType,
    from: Option<&Value>,
    include_lower: bool,
    to: Option<&Value>,
    include_upper: bool,
) -> Result<Option<(i64, i64)>, String> {
    let (min, max) = int_bounds(ty);
    let lo: i128 = match from {
        None => min as i128,
        Some(v) => match parse_num(v)? {
            Num::Int(i) => {
                if include_lower {
                    i
                } else {
                    i + 1
                }
            }
            Num::Float(f) => {
                let f = f.clamp(-1e30, 1e30);
                if f.fract() == 0.0 && !include_lower {
                    f as i128 + 1
                } else {
                    f.ceil() as i128
                }
            }
        },
    };
    let hi: i128 = match to {
        None => max as i128,
        Some(v) => match parse_num(v)? {
            Num::Int(i) => {
                if include_upper {
                    i
                } else {
                    i - 1
                }
            }
            Num::Float(f) => {
                let f = f.clamp(-1e30, 1e30);
                if f.fract() == 0.0 && !include_upper {
                    f as i128 - 1
                } else {
                    f.floor() as i128
                }
            }
        },
    };
    let lo = lo.max(min as i128);
    let hi = hi.min(max as i128);
    if lo > hi {
        return Ok(None);
    }
    Ok(Some((lo as i64, hi as i64)))
}

/// A float value rounded the way the field stores it.
pub fn float_value(def: &FieldDef, v: &Value) -> Result<f64, String> {
    let x = match parse_num(v)? {
        Num::Int(i) => i as f64,
        Num::Float(f) => f,
    };
    Ok(round_to_field(def, x))
}

pub fn round_to_field(def: &FieldDef, x: f64) -> f64 {
    match def.ty {
        FieldType::Float => x as f32 as f64,
        FieldType::HalfFloat => half_round(x),
        FieldType::ScaledFloat => (x * def.scaling_factor).round() / def.scaling_factor,
        _ => x,
    }
}

/// Rounds to the nearest IEEE half-precision value (what a `half_float` field keeps; the
/// same rounding as the engine's document parser).
fn half_round(x: f64) -> f64 {
    let f = x as f32;
    if f == 0.0 || !f.is_finite() {
        return f as f64;
    }
    let exp = f.abs().log2().floor().clamp(-14.0, 15.0);
    let ulp = 2f32.powf(exp - 10.0);
    ((f / ulp).round() * ulp) as f64
}

/// A bound of a range on a float field, adjusted to the stored precision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FloatBound {
    Included(f64),
    Excluded(f64),
}

pub fn float_bound(
    def: &FieldDef,
    v: &Value,
    inclusive: bool,
    lower: bool,
) -> Result<FloatBound, String> {
    let x = match parse_num(v)? {
        Num::Int(i) => i as f64,
        Num::Float(f) => f,
    };
    if def.ty == FieldType::ScaledFloat {
        // ES compares scaled longs: ceil/floor of value × factor (nextUp/nextDown when open).
        let sf = def.scaling_factor;
        let d = x * sf;
        let scaled = if lower {
            if !inclusive && d.fract() == 0.0 {
                d + 1.0
            } else {
                d.ceil()
            }
        } else if !inclusive && d.fract() == 0.0 {
            d - 1.0
        } else {
            d.floor()
        };
        return Ok(FloatBound::Included(scaled / sf));
    }
    let r = round_to_field(def, x);
    Ok(if inclusive {
        FloatBound::Included(r)
    } else {
        FloatBound::Excluded(r)
    })
}

pub fn bool_value(v: &Value) -> Result<bool, String> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" => Ok(true),
        Value::String(s) if s == "false" => Ok(false),
        other => Err(format!(
            "Failed to parse value [{}] as only [true] or [false] are allowed.",
            scalar_string(other)
        )),
    }
}

pub fn to_v6(ip: IpAddr) -> Ipv6Addr {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    }
}

pub fn ip_value(s: &str) -> Result<Ipv6Addr, String> {
    s.trim()
        .parse::<IpAddr>()
        .map(to_v6)
        .map_err(|_| format!("'{s}' is not an IP string literal."))
}

/// A CIDR block (`192.168.0.0/16`, `2001:db8::/32`) as an inclusive IPv6 range.
pub fn cidr_range(s: &str) -> Result<(Ipv6Addr, Ipv6Addr), String> {
    let (addr, len) = s
        .split_once('/')
        .ok_or_else(|| format!("Expected [ip/prefix] but was [{s}]"))?;
    let ip: IpAddr = addr
        .trim()
        .parse()
        .map_err(|_| format!("'{addr}' is not an IP string literal."))?;
    let len: u32 = len
        .trim()
        .parse()
        .map_err(|_| format!("Expected [ip/prefix] but was [{s}]"))?;
    let (bits, len) = match ip {
        IpAddr::V4(_) if len <= 32 => (u128::from(to_v6(ip)), 96 + len),
        IpAddr::V6(v6) if len <= 128 => (u128::from(v6), len),
        _ => {
            return Err(format!(
                "Illegal prefix length [{len}] in [{s}]. Must be 0-32 for IPv4 ranges, 0-128 for IPv6 ranges"
            ))
        }
    };
    let host_mask: u128 = if len == 128 { 0 } else { u128::MAX >> len };
    Ok((
        Ipv6Addr::from(bits & !host_mask),
        Ipv6Addr::from(bits | host_mask),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers() {
        assert_eq!(int_term(FieldType::Long, &json!(5)), Ok(Some(5)));
        assert_eq!(int_term(FieldType::Long, &json!("7")), Ok(Some(7)));
        assert_eq!(int_term(FieldType::Long, &json!(5.0)), Ok(Some(5)));
        assert_eq!(int_term(FieldType::Long, &json!(5.5)), Ok(None));
        assert_eq!(int_term(FieldType::Byte, &json!(300)), Ok(None));
        assert_eq!(
            int_term(FieldType::Long, &json!("abc")),
            Err("For input string: \"abc\"".into())
        );
        let r = |f: Option<Value>, il, t: Option<Value>, iu| {
            int_range(FieldType::Integer, f.as_ref(), il, t.as_ref(), iu)
        };
        assert_eq!(
            r(Some(json!(5)), false, Some(json!(10)), false),
            Ok(Some((6, 9)))
        );
        assert_eq!(
            r(Some(json!(5.5)), true, Some(json!(9.5)), true),
            Ok(Some((6, 9)))
        );
        assert_eq!(
            r(Some(json!(5.5)), false, Some(json!(9.5)), false),
            Ok(Some((6, 9)))
        );
        assert_eq!(
            r(Some(json!(5.0)), false, None, true),
            Ok(Some((6, i32::MAX as i64)))
        );
        assert_eq!(r(Some(json!(10)), true, Some(json!(5)), true), Ok(None));
        assert_eq!(
            r(None, true, Some(json!(1e20)), true),
            Ok(Some((i32::MIN as i64, i32::MAX as i64)))
        );
    }

    #[test]
    fn ips() {
        assert_eq!(
            ip_value("10.0.0.1").unwrap(),
            "::ffff:10.0.0.1".parse::<Ipv6Addr>().unwrap()
        );
        assert!(ip_value("nope").is_err());
        let (lo, hi) = cidr_range("192.168.0.0/16").unwrap();
        assert_eq!(lo, ip_value("192.168.0.0").unwrap());
        assert_eq!(hi, ip_value("192.168.255.255").unwrap());
        let (lo, hi) = cidr_range("2001:db8::/32").unwrap();
        assert_eq!(lo, "2001:db8::".parse::<Ipv6Addr>().unwrap());
        assert_eq!(
            hi,
            "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"
                .parse::<Ipv6Addr>()
                .unwrap()
        );
        assert!(cidr_range("10.0.0.0/40").is_err());
    }

    #[test]
    fn booleans() {
        assert_eq!(bool_value(&json!(true)), Ok(true));
        assert_eq!(bool_value(&json!("false")), Ok(false));
        assert!(bool_value(&json!("yes")).is_err());
    }
}
