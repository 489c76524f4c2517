//! Field values for `docvalue_fields` (from fast fields) and `fields` (from `_source`, per
//! the mapping), rendered as Elasticsearch renders them.

use lode_dates::{DateFormat, Tz};
use lode_engine::mapping::{FieldDef, Storage};
use lode_engine::EsResult;
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
    let mut out = Vec::new();
    match def.storage() {
        Storage::I64 => {
            if let Some(col) = ff.column_opt::<i64>(name)? {
                for v in col.values_for_doc(doc) {
                    out.push(if def.ty.is_date() {
                        let fmt = match format {
                            Some(f) if f != "epoch_millis" => {
                                DateFormat::parse(f).unwrap_or_else(|_| def.date_format.clone())
                            }
                            Some(_) => {
                                return Ok(col
                                    .values_for_doc(doc)
                                    .map(|v| json!(v.to_string()))
                                    .collect())
                            }
                            None => def.date_format.clone(),
                        };
                        json!(fmt.format_millis(v, &Tz::utc()))
                    } else {
                        json!(v)
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

/// Values of one field taken from `_source` (the `fields` option).
pub fn from_source(source: &Value, def: &FieldDef) -> Vec<Value> {
    source_raw(source, def)
        .into_iter()
        .filter(|v| !v.is_null())
        .map(|v| match def.storage() {
            Storage::I64 if def.ty.is_date() => def
                .date_format
                .parse_json(&v, &Tz::utc())
                .map(|ms| json!(def.date_format.format_millis(ms, &Tz::utc())))
                .unwrap_or(v),
            Storage::I64 => v.as_f64().map(|f| json!(f as i64)).unwrap_or(v),
            Storage::F64 => v.as_f64().map(|f| json!(f)).unwrap_or(v),
            Storage::Keyword | Storage::Text => match v {
                Value::String(_) => v,
                other => json!(other.to_string()),
            },
            _ => v,
        })
        .collect()
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
