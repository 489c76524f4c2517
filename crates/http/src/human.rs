//! `?human=true`: Elasticsearch writes a readable twin before each raw size or time field
//! (`"size": "1.2mb"` before `"size_in_bytes": 1258291`). Lode's APIs always write the raw field
//! with ES's `_in_bytes` / `_in_millis` / `_in_nanos` suffix, so one pass over the response adds
//! the twins for every API at once, as ES's `humanReadableField` does field by field.

use serde_json::{Map, Value};

pub fn add_readable_fields(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for child in map.values_mut() {
                add_readable_fields(child);
            }
            let mut out = Map::with_capacity(map.len());
            for (k, val) in std::mem::take(map) {
                if let Some((name, readable)) = readable(&k, &val) {
                    if !out.contains_key(&name) {
                        out.insert(name, Value::String(readable));
                    }
                }
                out.insert(k, val);
            }
            *map = out;
        }
        Value::Array(items) => items.iter_mut().for_each(add_readable_fields),
        _ => {}
    }
}

/// The readable twin of a raw field, if it is one.
fn readable(key: &str, v: &Value) -> Option<(String, String)> {
    let n = v.as_f64()?;
    if let Some(base) = key.strip_suffix("_in_bytes") {
        return Some((base.to_string(), byte_size(n)));
    }
    if let Some(base) = key.strip_suffix("_in_millis") {
        if base.ends_with("start_time") || base.ends_with("timestamp") {
            // ES's `timeField`: a point in time reads as a date.
            let date = lode_dates::DateFormat::default_es()
                .format_millis(n as i64, &lode_dates::Tz::utc());
            return Some((base.to_string(), date));
        }
        return Some((base.to_string(), time_value(n * 1e6)));
    }
    if let Some(base) = key.strip_suffix("_in_nanos") {
        return Some((base.to_string(), time_value(n)));
    }
    None
}

/// ES's `ByteSizeValue#toString`: the largest unit the value reaches, one decimal truncated.
fn byte_size(bytes: f64) -> String {
    const UNITS: [(&str, f64); 5] = [
        ("pb", 1125899906842624.0),
        ("tb", 1099511627776.0),
        ("gb", 1073741824.0),
        ("mb", 1048576.0),
        ("kb", 1024.0),
    ];
    for (suffix, size) in UNITS {
        if bytes >= size {
            return format!("{}{suffix}", one_decimal(bytes / size));
        }
    }
    format!("{}b", one_decimal(bytes))
}

/// ES's `TimeValue#toString` from nanoseconds.
fn time_value(nanos: f64) -> String {
    if nanos < 0.0 {
        return format!("{}", nanos as i64);
    }
    if nanos == 0.0 {
        return "0s".into();
    }
    const UNITS: [(&str, f64); 6] = [
        ("d", 86_400e9),
        ("h", 3_600e9),
        ("m", 60e9),
        ("s", 1e9),
        ("ms", 1e6),
        ("micros", 1e3),
    ];
    for (suffix, size) in UNITS {
        if nanos >= size {
            return format!("{}{suffix}", one_decimal(nanos / size));
        }
    }
    format!("{}nanos", one_decimal(nanos))
}

/// Java's `String.valueOf(double)` cut to one fractional digit, the digit dropped when it is 0
/// (ES's `format1Decimals`: truncated, not rounded).
fn one_decimal(v: f64) -> String {
    let s = format!("{v:?}");
    match s.split_once('.') {
        Some((int, frac)) => match frac.chars().next() {
            Some(d) if d != '0' && d.is_ascii_digit() => format!("{int}.{d}"),
            _ => int.to_string(),
        },
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sizes_read_as_elasticsearch_prints_them() {
        assert_eq!(byte_size(0.0), "0b");
        assert_eq!(byte_size(512.0), "512b");
        assert_eq!(byte_size(1024.0), "1kb");
        assert_eq!(byte_size(1536.0), "1.5kb");
        assert_eq!(byte_size(2047.0), "1.9kb");
        assert_eq!(byte_size(252.0 * 1048576.0 + 400_000.0), "252.3mb");
    }

    #[test]
    fn times_read_as_elasticsearch_prints_them() {
        assert_eq!(time_value(0.0), "0s");
        assert_eq!(time_value(5e6), "5ms");
        assert_eq!(time_value(1_250e6), "1.2s");
        assert_eq!(time_value(90e9), "1.5m");
        assert_eq!(time_value(750.0), "750nanos");
    }

    #[test]
    fn twins_come_before_their_raw_fields() {
        let mut v = json!({"store": {"size_in_bytes": 2048, "reserved_in_bytes": 0},
                           "indexing": {"index_time_in_millis": 1500, "index_total": 3},
                           "list": [{"took_in_nanos": 2000}]});
        add_readable_fields(&mut v);
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"store":{"size":"2kb","size_in_bytes":2048,"reserved":"0b","reserved_in_bytes":0},"indexing":{"index_time":"1.5s","index_time_in_millis":1500,"index_total":3},"list":[{"took":"2micros","took_in_nanos":2000}]}"#
        );
    }
}
