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
    let date_format = requested_format(def, format)?;
    let mut out = Vec::new();
    match def.storage() {
        Storage::I64 => {
            if let Some(col) = ff.column_opt::<i64>(name)? {
                for v in col.values_for_doc(doc) {
                    out.push(match &date_format {
                        Some(Some(f)) => json!(f.format_millis(v, &Tz::utc())),
                        Some(None) => json!(v.to_string()),
                        None if def.ty.is_date() => {
                            json!(def.date_format.format_millis(v, &Tz::utc()))
                        }
                        None => json!(v),
                    });
                }
            }
        }
        Storage::F64 => {
            if let Some(col) = ff.column_opt::<f64>(name)? {
                out.extend(col.values_for_doc(doc).map(|v| json!(v)));
            }
        }
        Storage::Bool => {
            if let Some(col) = ff.column_opt::<bool>(name)? {
                out.extend(col.values_for_doc(doc).map(|v| json!(v)));
            }
        }
        Storage::Keyword => {
            if let Some(col) = ff.str(name)? {
                for ord in col.term_ords(doc) {
                    let mut s = String::new();
                    let _ = col.ord_to_str(ord, &mut s);
                    out.push(json!(s));
                }
            }
        }
        Storage::Ip => {
            if let Some(col) = ff.column_opt::<std::net::Ipv6Addr>(name)? {
                for ip in col.values_for_doc(doc) {
                    out.push(json!(match ip.to_ipv4_mapped() {
                        Some(v4) => v4.to_string(),
                        None => ip.to_string(),
                    }));
                }
            }
        }
        _ => {}
    }
    Ok(out)
}

/// A `format` asked for a field's values: for dates a date format (`Some(None)` for
/// `epoch_millis`, rendered as a string of milliseconds), refused for other types as ES
/// refuses them (numbers take Java's DecimalFormat patterns in ES, not built in Lode).
pub fn requested_format(
    def: &FieldDef,
    format: Option<&str>,
) -> EsResult<Option<Option<DateFormat>>> {
    let Some(f) = format else {
        return Ok(None);
    };
    if def.ty.is_date() {
        if f == "epoch_millis" {
            return Ok(Some(None));
        }
        return DateFormat::parse(f)
            .map(|d| Some(Some(d)))
            .map_err(|_| EsError::illegal_argument(format!("Invalid format: [{f}]")));
    }
    if def.ty.is_numeric() {
        return Err(EsError::parsing(format!(
            "[format] [{f}] on the numeric field [{}] is not supported by Lode",
            def.path
        )));
    }
    Err(EsError::illegal_argument(format!(
        "Field [{}] of type [{}] doesn't support formats.",
        def.path,
        def.ty.name()
    )))
}

/// Values of one field taken from `_source` (the `fields` option), dates in `format` when
/// given.
pub fn from_source(source: &Value, def: &FieldDef, format: Option<&str>) -> EsResult<Vec<Value>> {
    let date_format = requested_format(def, format)?;
    Ok(source_raw(source, def)
        .into_iter()
        .filter(|v| !v.is_null())
        .map(|v| match def.storage() {
            Storage::I64 if def.ty.is_date() => match def.date_format.parse_json(&v, &Tz::utc()) {
                Ok(ms) => match &date_format {
                    Some(Some(f)) => json!(f.format_millis(ms, &Tz::utc())),
                    Some(None) => json!(ms.to_string()),
                    None => json!(def.date_format.format_millis(ms, &Tz::utc())),
                },
                Err(_) => v,
            },
            Storage::I64 => v.as_f64().map(|f| json!(f as i64)).unwrap_or(v),
            Storage::F64 => v.as_f64().map(|f| json!(f)).unwrap_or(v),
            Storage::Keyword | Storage::Text => match v {
                Value::String(_) => v,
                other => json!(other.to_string()),
            },
            _ => v,
        })
        .collect())
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
