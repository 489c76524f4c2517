//! Field values for `docvalue_fields` (from fast fields) and `fields` (from `_source`, per
//! the mapping), rendered as Elasticsearch renders them.

use lode_dates::{DateFormat, Tz};
use lode_engine::mapping::{FieldDef, Storage};
use lode_engine::{EsError, EsResult};
use serde_json::{json, Value};
use tantivy::{DocAddress, Searcher};

/// Values of one field of one document, read from its fast column.
pub fn read(
    searcher: &Searcher,
    addr: DocAddress,
    def: &FieldDef,
    format: Option<&str>,
) -> EsResult<Vec<Value>> {
    let seg = searcher.segment_reader(addr.segment_ord);
    let ff = seg.fast_fields();
    let doc = addr.doc_id;
    let name = def.path.as_str();
    let format = requested_format(def, format)?;
    let mut out = Vec::new();
    // Doc values come back as Lucene gives them: numbers, dates and booleans are
    // `SORTED_NUMERIC` (ascending, duplicates kept), keywords and ips `SORTED_SET` (ascending,
    // each once). A column keeps a document's values in the order they were indexed, and
    // segments written before keyword and ip columns became sets keep their duplicates.
    match def.storage() {
        // `date_nanos`: its nanosecond column, when the index has it.
        Storage::I64
            if def
                .nanos_path()
                .is_some_and(|p| ff.column_opt::<i64>(&p).ok().flatten().is_some()) =>
        {
            let path = def.nanos_path().unwrap_or_default();
            if let Some(col) = ff.column_opt::<i64>(&path)? {
                let mut values: Vec<i64> = col.values_for_doc(doc).collect();
                values.sort_unstable();
                out.extend(values.into_iter().map(|v| format.nanos(def, v)));
            }
        }
        Storage::I64 => {
            if let Some(col) = ff.column_opt::<i64>(name)? {
                let mut values: Vec<i64> = col.values_for_doc(doc).collect();
                values.sort_unstable();
                out.extend(values.into_iter().map(|v| format.long(def, v)));
            }
        }
        Storage::F64 => {
            if let Some(col) = ff.column_opt::<f64>(name)? {
                let mut values: Vec<f64> = col.values_for_doc(doc).collect();
                values.sort_unstable_by(f64::total_cmp);
                out.extend(values.into_iter().map(|v| format.double(v)));
            }
        }
        Storage::Bool => {
            if let Some(col) = ff.column_opt::<bool>(name)? {
                let mut values: Vec<bool> = col.values_for_doc(doc).collect();
                values.sort_unstable();
                out.extend(values.into_iter().map(|v| json!(v)));
            }
        }
        Storage::Keyword => {
            if let Some(col) = ff.str(name)? {
                let mut ords: Vec<u64> = col.term_ords(doc).collect();
                ords.sort_unstable();
                ords.dedup();
                for ord in ords {
                    let mut s = String::new();
                    let _ = col.ord_to_str(ord, &mut s);
                    out.push(json!(s));
                }
            }
        }
        Storage::Ip => {
            if let Some(col) = ff.column_opt::<std::net::Ipv6Addr>(name)? {
                let mut ips: Vec<std::net::Ipv6Addr> = col.values_for_doc(doc).collect();
                ips.sort_unstable();
                ips.dedup();
                for ip in ips {
                    out.push(json!(match ip.to_ipv4_mapped() {
                        Some(v4) => v4.to_string(),
                        None => ip.to_string(),
                    }));
                }
            }
        }
        // ES's `DocValueFormat.GEO`-less rendering of a geo point's doc value:
        // `GeoPoint#toString` of the quantized point ("lat, lon").
        Storage::GeoPoint => {
            if let Some(col) = ff.column_opt::<u64>(name)? {
                for v in col.values_for_doc(doc) {
                    let (lat, lon) = lode_engine::geo::decode(v);
                    out.push(json!(format!("{lat:?}, {lon:?}")));
                }
            }
        }
        _ => {}
    }
    Ok(out)
}

/// How values are rendered: the mapping's way, or a requested `format`.
pub enum ValueFormat {
    Mapping,
    /// `epoch_millis` on a date: the milliseconds as a string.
    EpochMillis,
    Date(DateFormat),
    Decimal(DecimalFormat),
    /// `wkt` on a geo point (`geojson`, the default, is `Mapping`).
    Wkt,
}

impl ValueFormat {
    fn long(&self, def: &FieldDef, v: i64) -> Value {
        match self {
            ValueFormat::Date(f) => json!(f.format_millis(v, &Tz::utc())),
            ValueFormat::EpochMillis => json!(v.to_string()),
            ValueFormat::Decimal(d) => json!(d.format(v as f64)),
            ValueFormat::Mapping if def.ty.is_date() => {
                json!(def.date_format.format_millis(v, &Tz::utc()))
            }
            ValueFormat::Mapping | ValueFormat::Wkt => json!(v),
        }
    }

    /// A `date_nanos` value (epoch nanoseconds).
    fn nanos(&self, def: &FieldDef, v: i64) -> Value {
        match self {
            ValueFormat::Date(f) => json!(f.format_nanos(v, &Tz::utc())),
            ValueFormat::EpochMillis => json!(v.div_euclid(1_000_000).to_string()),
            ValueFormat::Decimal(d) => json!(d.format(v as f64)),
            ValueFormat::Mapping | ValueFormat::Wkt => {
                json!(def.date_format.format_nanos(v, &Tz::utc()))
            }
        }
    }

    fn double(&self, v: f64) -> Value {
        match self {
            ValueFormat::Decimal(d) => json!(d.format(v)),
            _ => json!(v),
        }
    }
}

/// A `format` asked for a field's values, checked as ES checks it: a date pattern for dates,
/// a `DecimalFormat` pattern for numbers, none for other types. `use_field_mapping` (ES 7's
/// name for the default) is the mapping's format.
pub fn requested_format(def: &FieldDef, format: Option<&str>) -> EsResult<ValueFormat> {
    let f = match format {
        None | Some("use_field_mapping") => return Ok(ValueFormat::Mapping),
        Some(f) => f,
    };
    if def.ty.is_date() {
        if f == "epoch_millis" {
            return Ok(ValueFormat::EpochMillis);
        }
        return DateFormat::parse(f)
            .map(ValueFormat::Date)
            .map_err(|_| EsError::illegal_argument(format!("Invalid format: [{f}]")));
    }
    if def.ty.is_numeric() {
        return DecimalFormat::parse(f).map(ValueFormat::Decimal);
    }
    if def.ty == lode_engine::mapping::FieldType::GeoPoint {
        return match f {
            "geojson" => Ok(ValueFormat::Mapping),
            "wkt" => Ok(ValueFormat::Wkt),
            _ => Err(EsError::illegal_argument(format!(
                "Unrecognized geometry format [{f}]."
            ))),
        };
    }
    Err(EsError::illegal_argument(format!(
        "Field [{}] of type [{}] doesn't support formats.",
        def.path,
        def.ty.name()
    )))
}

/// Java's `DecimalFormat` for the patterns formats use: `#`/`0` integer digits with optional
/// `,` grouping, and an optional `.` with `0` (required) and `#` (optional) fraction digits,
/// rounded half-even. Prefixes, suffixes, percent and exponent patterns are refused.
#[derive(Debug, Clone, PartialEq)]
pub struct DecimalFormat {
    min_int: usize,
    grouping: Option<usize>,
    min_frac: usize,
    max_frac: usize,
}

impl DecimalFormat {
    pub fn parse(pattern: &str) -> EsResult<DecimalFormat> {
        let refuse = || {
            EsError::parsing(format!(
                "[format] [{pattern}]: only DecimalFormat patterns of '#', '0', ',' and '.' are supported by Lode"
            ))
        };
        let (int, frac) = pattern.split_once('.').unwrap_or((pattern, ""));
        if int.is_empty() && frac.is_empty()
            || !int.chars().all(|c| matches!(c, '#' | '0' | ','))
            || !frac.chars().all(|c| matches!(c, '#' | '0'))
            || frac.trim_end_matches('#').contains('#')
        {
            return Err(refuse());
        }
        Ok(DecimalFormat {
            min_int: int.chars().filter(|c| *c == '0').count(),
            grouping: int.rfind(',').map(|i| int.len() - i - 1).filter(|g| *g > 0),
            min_frac: frac.chars().filter(|c| *c == '0').count(),
            max_frac: frac.len(),
        })
    }

    pub fn format(&self, v: f64) -> String {
        if !v.is_finite() {
            return if v.is_nan() {
                "NaN".into()
            } else if v > 0.0 {
                "∞".into()
            } else {
                "-∞".into()
            };
        }
        // Rust's fixed precision rounds half-even on the exact binary value, as Java's
        // `DecimalFormat` does since JDK 8 (`100.475`, stored as 100.47499…, gives `100.47`).
        let text = format!("{:.*}", self.max_frac, v.abs());
        let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
        let mut frac = frac.to_string();
        while frac.len() > self.min_frac && frac.ends_with('0') {
            frac.pop();
        }
        let int = int.trim_start_matches('0');
        let int = format!("{int:0>width$}", width = self.min_int);
        let int = match self.grouping {
            Some(g) => {
                let digits: Vec<char> = int.chars().collect();
                let mut out = String::new();
                for (i, c) in digits.iter().enumerate() {
                    if i > 0 && (digits.len() - i).is_multiple_of(g) {
                        out.push(',');
                    }
                    out.push(*c);
                }
                out
            }
            None => int,
        };
        let sign = if v < 0.0
            && (int.chars().any(|c| c != '0' && c != ',') || frac.chars().any(|c| c != '0'))
        {
            "-"
        } else {
            ""
        };
        let body = if frac.is_empty() {
            int
        } else {
            format!("{int}.{frac}")
        };
        if body.is_empty() {
            return "0".into();
        }
        format!("{sign}{body}")
    }
}

/// Values of one field taken from `_source` (the `fields` option), in `format` when given.
/// A value the field's type cannot parse is left out, as ES's `SourceValueFetcher` leaves it
/// (such a value was refused at index time, or skipped under `ignore_malformed`).
pub fn from_source(source: &Value, def: &FieldDef, format: Option<&str>) -> EsResult<Vec<Value>> {
    // `ConstantKeywordFieldType#valueFetcher`: the mapping's value, for every document.
    if def.ty == lode_engine::mapping::FieldType::ConstantKeyword {
        if format.is_some() {
            return Err(EsError::illegal_argument(format!(
                "Field [{}] of type [constant_keyword] doesn't support formats.",
                def.path
            )));
        }
        return Ok(def.value.iter().map(|v| json!(v)).collect());
    }
    let format = requested_format(def, format)?;
    if def.ty == lode_engine::mapping::FieldType::GeoPoint {
        return Ok(geo_from_source(source, def, &format));
    }
    let number = |v: &Value| match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
        _ => None,
    };
    Ok(source_raw(source, def)
        .into_iter()
        .filter(|v| !v.is_null())
        .filter_map(|v| match def.storage() {
            Storage::I64 if def.nanos_path().is_some() => def
                .date_format
                .parse_json_nanos(&v, &Tz::utc())
                .ok()
                .map(|n| format.nanos(def, n)),
            Storage::I64 if def.ty.is_date() => def
                .date_format
                .parse_json(&v, &Tz::utc())
                .ok()
                .map(|ms| format.long(def, ms)),
            Storage::I64 => number(&v).map(|f| format.long(def, f as i64)),
            Storage::F64 => number(&v).map(|f| format.double(f)),
            // A keyword value over `ignore_above` was not indexed: ES's fetcher leaves it out.
            Storage::Keyword | Storage::Text => Some(match v {
                Value::String(s) => {
                    if def.storage() == Storage::Keyword
                        && def.ignore_above.is_some_and(|l| s.chars().count() > l)
                    {
                        return None;
                    }
                    Value::String(s)
                }
                other => json!(other.to_string()),
            }),
            _ => Some(v),
        })
        .collect())
}

/// A geo point's values from `_source`, as ES's `GeoPointFieldMapper` fetcher: each point
/// parsed (normalized under `ignore_malformed`, left out when malformed) and rendered as
/// GeoJSON, or WKT with `format: wkt`.
fn geo_from_source(source: &Value, def: &FieldDef, format: &ValueFormat) -> Vec<Value> {
    let path = def.parent.as_deref().unwrap_or(&def.path);
    let mut raw = Vec::new();
    collect_geo(source, &path.split('.').collect::<Vec<_>>(), &mut raw);
    raw.iter()
        .map(|v| match v {
            Value::Null => def.null_value.as_ref().unwrap_or(v),
            other => other,
        })
        .filter_map(|v| {
            let (lat, lon) = lode_engine::geo::parse_point(v, def.ignore_z_value).ok()?;
            let (lat, lon) = if def.ignore_malformed {
                lode_engine::geo::normalize(lat, lon)
            } else {
                lode_engine::geo::check_range(lat, lon, &def.path).ok()?;
                (lat, lon)
            };
            Some(match format {
                ValueFormat::Wkt => json!(format!("POINT ({lon:?} {lat:?})")),
                _ => json!({"type": "Point", "coordinates": [lon, lat]}),
            })
        })
        .collect()
}

/// [`collect`] for geo points: an array of numbers is one point (`[lon, lat]`).
fn collect_geo(v: &Value, path: &[&str], out: &mut Vec<Value>) {
    match v {
        Value::Array(_) if path.is_empty() && lode_engine::geo::is_coordinate_array(v) => {
            out.push(v.clone())
        }
        Value::Array(items) => {
            for i in items {
                collect_geo(i, path, out);
            }
        }
        Value::Object(m) if !path.is_empty() => {
            if let Some(child) = m.get(path[0]) {
                collect_geo(child, &path[1..], out);
            }
            for n in 2..=path.len() {
                let key = path[..n].join(".");
                if let Some(child) = m.get(&key) {
                    collect_geo(child, &path[n..], out);
                }
            }
        }
        other if path.is_empty() => out.push(other.clone()),
        _ => {}
    }
}

/// A field's values as `_source` holds them (a multi-field's are its parent's), arrays
/// flattened.
pub fn source_raw(source: &Value, def: &FieldDef) -> Vec<Value> {
    let path = def.parent.as_deref().unwrap_or(&def.path);
    let mut raw = Vec::new();
    collect(source, &path.split('.').collect::<Vec<_>>(), &mut raw);
    raw
}

fn collect(v: &Value, path: &[&str], out: &mut Vec<Value>) {
    match v {
        Value::Array(items) => {
            for i in items {
                collect(i, path, out);
            }
        }
        Value::Object(m) if !path.is_empty() => {
            if let Some(child) = m.get(path[0]) {
                collect(child, &path[1..], out);
            }
            // dotted keys in the source, e.g. {"a.b": 1}
            for n in 2..=path.len() {
                let key = path[..n].join(".");
                if let Some(child) = m.get(&key) {
                    collect(child, &path[n..], out);
                }
            }
        }
        other if path.is_empty() => out.push(other.clone()),
        _ => {}
    }
}

#[cfg(test)]
mod format_tests {
    use super::DecimalFormat;

    fn f(p: &str, v: f64) -> String {
        DecimalFormat::parse(p).unwrap().format(v)
    }

    #[test]
    fn decimal_formats_as_java() {
        assert_eq!(f("#.0", 1.0), "1.0");
        assert_eq!(f("#.0", 0.5), ".5");
        assert_eq!(f("0.00", 12.34567), "12.35");
        assert_eq!(f("#,##0.##", 1234567.891), "1,234,567.89");
        assert_eq!(f("#", 2.5), "2");
        assert_eq!(f("#", 3.5), "4");
        assert_eq!(f("#", 0.3), "0");
        assert_eq!(f("0.0", -1.25), "-1.2");
        assert_eq!(f("000", 7.0), "007");
        assert!(DecimalFormat::parse("#%").is_err());
        assert!(DecimalFormat::parse("0.#0").is_err());
    }
}
