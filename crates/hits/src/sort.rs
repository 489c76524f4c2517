//! Sorting hits by fields: parsing ES `sort`, and a tantivy collector that keeps the top
//! `from + size` documents by a multi-key sort read from fast fields (with `missing`,
//! `search_after` and a stable tie-break on shard and doc id).

use crate::term_table::SegmentTerms;
use lode_engine::mapping::{Mapping, Storage};
use lode_engine::object_parser::{ignore, At, Field, ObjectParser, Style};
use lode_engine::{EsError, EsResult};
use lode_painless::{Scratch, SearchScript};
use lode_query::runtime::{RuntimeField, RuntimeFields, RuntimeType};
use lode_query::script::{Fields, ScriptErrors, SegmentDocs};
use lode_query::QueryContext;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::cmp::Ordering;
use std::sync::Arc;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{Column, MonotonicallyMappableToU64};
use tantivy::{DocAddress, DocId, Score, SegmentOrdinal, SegmentReader};

#[derive(Debug, Clone, PartialEq)]
pub enum SortKind {
    Score,
    Doc,
    /// A fast-field sort on a mapped field.
    Field {
        name: String,
        storage: Storage,
        is_date: bool,
    },
    /// A field this index does not map (`unmapped_type`): every doc is missing.
    Unmapped,
    /// `_script`: a Painless script run per matching document.
    Script(ScriptSort),
    /// `_geo_distance`: the distance of a `geo_point` field's points to the given ones.
    Geo(GeoSort),
}

/// A `_geo_distance` sort (ES's `GeoDistanceSortBuilder`): every distance between a
/// document's (quantized) points and the origins, in `unit`, reduced by the mode.
#[derive(Debug, Clone, PartialEq)]
pub struct GeoSort {
    /// The field; `None` when unmapped with `ignore_unmapped` (every document missing).
    pub field: Option<String>,
    /// `(lat, lon)` origins.
    pub points: Vec<(f64, f64)>,
    /// Meters per unit.
    pub unit: f64,
    pub distance_type: lode_engine::geo::DistanceType,
}

/// A `_script` sort: the compiled script, its type (`number` sorts as doubles, `string` as
/// strings), the mapping's fields for `doc[...]` and the request's error slot.
#[derive(Clone)]
pub struct ScriptSort {
    pub script: Arc<SearchScript>,
    /// A runtime field sorted by name: its values instead of the script's single value.
    pub runtime: Option<Arc<RuntimeField>>,
    pub string: bool,
    pub fields: Fields,
    /// The search's runtime fields, for `doc['name']`.
    pub runtime_fields: RuntimeFields,
    pub errors: ScriptErrors,
}

impl PartialEq for ScriptSort {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.script, &other.script) && self.string == other.string
    }
}

impl std::fmt::Debug for ScriptSort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ScriptSort({:?}, string: {})",
            self.script.source(),
            self.string
        )
    }
}

#[derive(Debug, Clone)]
pub struct SortKey {
    pub kind: SortKind,
    pub desc: bool,
    pub missing_first: bool,
    /// A `missing` value that replaces absent values.
    pub missing_value: Option<SortValue>,
    /// How a multi-valued field picks its sort value (`mode`); by default the minimum for
    /// ascending and the maximum for descending sorts, as in ES.
    pub mode: Option<SortMode>,
    /// `nested`: the value comes from the root's nested documents of a path (matching the
    /// optional filter), not from the root itself.
    pub nested: Option<NestedSort>,
}

/// A field sort's `nested` option, planned: the nested documents whose values count.
#[derive(Debug, Clone)]
pub struct NestedSort {
    /// The `_nested` field.
    pub field: tantivy::schema::Field,
    /// The path's nested documents, restricted by `filter` when given.
    pub docs: Arc<dyn tantivy::query::Query>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SortMode {
    Min,
    Max,
    Sum,
    Avg,
    Median,
}

impl SortMode {
    fn parse(v: &Value) -> EsResult<SortMode> {
        Ok(match v.as_str().unwrap_or_default() {
            "min" => SortMode::Min,
            "max" => SortMode::Max,
            "sum" => SortMode::Sum,
            "avg" => SortMode::Avg,
            "median" => SortMode::Median,
            other => {
                return Err(EsError::illegal_argument(format!(
                    "Unknown SortMode [{other}]"
                )))
            }
        })
    }

    /// Reduces numeric values (already non-empty) to the sort value.
    fn reduce(self, mut vals: Vec<f64>) -> f64 {
        match self {
            SortMode::Min => vals.iter().copied().fold(f64::INFINITY, f64::min),
            SortMode::Max => vals.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            SortMode::Sum => vals.iter().sum(),
            SortMode::Avg => vals.iter().sum::<f64>() / vals.len() as f64,
            SortMode::Median => {
                vals.sort_by(|a, b| a.partial_cmp(b).unwrap_or(Ordering::Equal));
                let n = vals.len();
                if n % 2 == 1 {
                    vals[n / 2]
                } else {
                    (vals[n / 2 - 1] + vals[n / 2]) / 2.0
                }
            }
        }
    }
}

/// One sort value of a hit.
#[derive(Debug, Clone, PartialEq)]
pub enum SortValue {
    Missing,
    I64(i64),
    F64(f64),
    Str(String),
    /// A term ordinal within one segment (resolved to `Str` at harvest).
    Ord(u64),
}

impl SortValue {
    pub fn to_json(&self, key: &SortKey) -> Value {
        match self {
            SortValue::Missing => match &key.kind {
                SortKind::Field {
                    storage: Storage::F64,
                    ..
                }
                | SortKind::Geo(_) => {
                    json!(if key.missing_first != key.desc {
                        f64::NEG_INFINITY
                    } else {
                        f64::INFINITY
                    }
                    .to_string()
                    .replace("inf", "Infinity"))
                }
                SortKind::Field {
                    storage: Storage::Keyword,
                    ..
                } => Value::Null,
                _ => json!(if key.missing_first != key.desc {
                    i64::MIN
                } else {
                    i64::MAX
                }),
            },
            SortValue::I64(i) => json!(i),
            // A score sorts as the float it is (ES renders a `_score` sort value so).
            SortValue::F64(f) if matches!(key.kind, SortKind::Score) => {
                lode_engine::float::float_value(*f as f32)
            }
            SortValue::F64(f) => json!(f),
            SortValue::Str(s) => json!(s),
            SortValue::Ord(o) => json!(o),
        }
    }

    /// The value in the `u64` mapping of a numeric column of `storage` (as the points index
    /// holds it); `None` for other values.
    pub fn to_point(&self, storage: Storage) -> Option<u64> {
        match (self, storage) {
            (SortValue::I64(i), Storage::I64) => Some(i.to_u64()),
            (SortValue::F64(f), Storage::F64) => Some(f.to_u64()),
            (SortValue::I64(i), Storage::F64) => Some((*i as f64).to_u64()),
            _ => None,
        }
    }

    /// Parses a `search_after` value against a key. The value `to_json` gives a missing
    /// field (e.g. `Infinity`, `9223372036854775807`) reads back as missing, so paging through
    /// documents without the field continues instead of repeating them.
    pub fn from_json(v: &Value, key: &SortKey) -> EsResult<SortValue> {
        if key.missing_value.is_none()
            && matches!(key.kind, SortKind::Field { .. })
            && !v.is_null()
            && *v == SortValue::Missing.to_json(key)
        {
            return Ok(SortValue::Missing);
        }
        Ok(match (&key.kind, v) {
            (_, Value::Null) => SortValue::Missing,
            (SortKind::Score, v) => SortValue::F64(v.as_f64().ok_or_else(|| bad_after(v))?),
            (SortKind::Script(s), Value::String(t)) if s.string => SortValue::Str(t.clone()),
            (SortKind::Script(s), v) if s.string => SortValue::Str(v.to_string()),
            (SortKind::Script(_), v) => SortValue::F64(
                v.as_f64()
                    .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                    .ok_or_else(|| bad_after(v))?,
            ),
            (SortKind::Doc, v) => SortValue::I64(v.as_i64().ok_or_else(|| bad_after(v))?),
            (SortKind::Geo(_), v) => SortValue::F64(
                v.as_f64()
                    .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                    .ok_or_else(|| bad_after(v))?,
            ),
            (
                SortKind::Field {
                    storage: Storage::F64,
                    ..
                },
                v,
            ) => SortValue::F64(
                v.as_f64()
                    .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                    .ok_or_else(|| bad_after(v))?,
            ),
            (
                SortKind::Field {
                    storage: Storage::Keyword,
                    ..
                },
                Value::String(s),
            ) => SortValue::Str(s.clone()),
            (
                SortKind::Field {
                    storage: Storage::Keyword,
                    ..
                },
                v,
            ) => SortValue::Str(v.to_string()),
            (
                SortKind::Field {
                    storage: Storage::Bool,
                    ..
                },
                Value::Bool(b),
            ) => SortValue::I64(*b as i64),
            (_, v) => {
                if let Some(i) = v.as_i64() {
                    SortValue::I64(i)
                } else if let Some(f) = v.as_f64() {
                    SortValue::I64(f as i64)
                } else if let Some(i) = v.as_str().and_then(|s| s.parse::<i64>().ok()) {
                    SortValue::I64(i)
                } else {
                    return Err(bad_after(v));
                }
            }
        })
    }
}

fn bad_after(v: &Value) -> EsError {
    EsError::illegal_argument(format!(
        "Failed to parse search_after value for field: [{v}]"
    ))
}

fn cmp_values(a: &SortValue, b: &SortValue, key: &SortKey) -> Ordering {
    use SortValue::*;
    let missing = |is_a_missing: bool| {
        // missing sorts last by default regardless of direction
        let a_first = key.missing_first;
        if is_a_missing == a_first {
            Ordering::Less
        } else {
            Ordering::Greater
        }
    };
    let natural = match (a, b) {
        (Missing, Missing) => return Ordering::Equal,
        (Missing, _) => return missing(true),
        (_, Missing) => return missing(false),
        (I64(x), I64(y)) => x.cmp(y),
        (F64(x), F64(y)) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        (I64(x), F64(y)) => (*x as f64).partial_cmp(y).unwrap_or(Ordering::Equal),
        (F64(x), I64(y)) => x.partial_cmp(&(*y as f64)).unwrap_or(Ordering::Equal),
        (Str(x), Str(y)) => x.cmp(y),
        (Ord(x), Ord(y)) => x.cmp(y),
        _ => Ordering::Equal,
    };
    if key.desc {
        natural.reverse()
    } else {
        natural
    }
}

/// Compares two sort-value rows under the keys (`Less` = comes first).
pub fn cmp_rows(a: &[SortValue], b: &[SortValue], keys: &[SortKey]) -> Ordering {
    for ((x, y), k) in a.iter().zip(b.iter()).zip(keys) {
        let o = cmp_values(x, y, k);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// A field sort's options as read (ES's `FieldSortBuilder`); the key is built from them and
/// the mapping once the walk is done.
#[derive(Default)]
struct FieldSortOpts {
    /// `Some(true)` for `desc`; `None` is the field's default order.
    desc: Option<bool>,
    missing: Option<Value>,
    unmapped_type: bool,
    mode: Option<SortMode>,
    nested: Option<NestedSortOpts>,
}

/// ES's `SortOrder.fromString`: `asc` or `desc`, in any case.
fn sort_order(v: &Value) -> EsResult<bool> {
    let o = v.as_str().unwrap_or_default();
    match o.to_lowercase().as_str() {
        "asc" => Ok(false),
        "desc" => Ok(true),
        _ => Err(EsError::illegal_argument(format!(
            "Unknown SortOrder [{o}]"
        ))),
    }
}

/// ES's `FieldSortBuilder` parser; the options Lode lacks are refused.
static FIELD_SORT: ObjectParser<FieldSortOpts> = ObjectParser {
    name: "field_sort",
    style: Style::Object,
    fields: &[&[
        Field::new("missing", "*", |o, _, v| {
            o.missing = Some(v.clone());
            Ok(())
        }),
        Field::new("order", "*", |o, _, v| {
            o.desc = Some(sort_order(v)?);
            Ok(())
        }),
        Field::new("unmapped_type", "*", |o, _, _| {
            o.unmapped_type = true;
            Ok(())
        }),
        Field::new("numeric_type", "*", sort_option_not_supported),
        Field::new("format", "*", sort_option_not_supported),
        Field::new("nested", "*", |o, _, v| {
            let n = v
                .as_object()
                .ok_or_else(|| EsError::parsing("[nested] must be an object"))?;
            o.nested = Some(NESTED_SORT.parse(n)?);
            Ok(())
        }),
        Field::new("mode", "*", |o, _, v| {
            o.mode = Some(SortMode::parse(v)?);
            Ok(())
        }),
    ]],
};

fn sort_option_not_supported<T>(_: &mut T, at: &At<'_>, _: &Value) -> EsResult<()> {
    Err(EsError::parsing(format!(
        "[sort] option [{}] is not supported by Lode",
        at.key
    )))
}

/// The sort entries as (field, options): `"field"`, `"field:order"` (the URL form),
/// `{"field": "order"}` or `{"field": {options}}`.
fn sort_items(v: &Value) -> EsResult<Vec<(String, Value)>> {
    let items: &[Value] = match v {
        Value::Array(a) => a,
        other => std::slice::from_ref(other),
    };
    items
        .iter()
        .map(|item| match item {
            Value::String(s) => Ok(match s.split_once(':') {
                Some((f, o)) => (f.to_string(), json!({ "order": o })),
                None => (s.clone(), json!({})),
            }),
            Value::Object(o) if o.len() == 1 => {
                let (f, spec) = o.iter().next().expect("one entry");
                match spec {
                    Value::String(order) => Ok((f.clone(), json!({ "order": order }))),
                    Value::Object(_) => Ok((f.clone(), spec.clone())),
                    _ => Err(EsError::parsing(format!(
                        "[sort] unexpected value for [{f}]"
                    ))),
                }
            }
            _ => Err(EsError::parsing("[sort] malformed sort specification")),
        })
        .collect()
}

/// The request-level reading of `sort` (ES's `SortBuilder#fromXContent`, run when the search
/// body is parsed, so its errors are the request's own): the entries' shape and every
/// option's value. What needs a mapping (the field and its type, `missing` and `mode` for
/// it, `nested` paths, a script's compilation) is [`parse_sort`]'s, per index on the shards.
pub fn check_sort(v: &Value) -> EsResult<()> {
    for (field, opts) in sort_items(v)? {
        match field.as_str() {
            "_script" => {
                read_script_sort(&opts)?;
            }
            "_geo_distance" => {
                read_geo_sort(&opts)?;
            }
            _ => {
                if let Some(o) = opts.as_object() {
                    FIELD_SORT.parse(o)?;
                }
            }
        }
    }
    Ok(())
}

/// Parses ES `sort` into keys for one index's mapping.
/// `errors` is the request's script error slot (`_script` sorts record their first runtime
/// error there, as the `script` query does).
pub fn parse_sort(
    v: &Value,
    mapping: &Mapping,
    errors: &ScriptErrors,
    runtime: &RuntimeFields,
    ctx: Option<&QueryContext>,
) -> EsResult<Vec<SortKey>> {
    let mut keys = Vec::new();
    for (field, opts) in sort_items(v)? {
        if field == "_script" {
            keys.push(parse_script_sort(&opts, mapping, errors, runtime)?);
            continue;
        }
        if field == "_geo_distance" {
            keys.push(parse_geo_sort(&opts, mapping)?);
            continue;
        }
        let opts = match opts.as_object() {
            Some(o) => FIELD_SORT.parse(o)?,
            None => FieldSortOpts::default(),
        };
        let desc = opts.desc.unwrap_or(field == "_score");
        let missing = opts.missing.as_ref();
        let missing_first = matches!(missing.and_then(|m| m.as_str()), Some("_first"));
        let kind = match field.as_str() {
            _ if runtime.contains_key(&field) => {
                let f = runtime[&field].clone();
                SortKind::Script(ScriptSort {
                    script: Arc::new(SearchScript::compile(&json!("0"), None)?),
                    string: f.ty == RuntimeType::Keyword,
                    runtime: Some(f),
                    fields: lode_query::script::fields_of(mapping),
                    runtime_fields: runtime.clone(),
                    errors: errors.clone(),
                })
            }
            "_score" => SortKind::Score,
            "_doc" | "_shard_doc" => SortKind::Doc,
            _ => match mapping.field(&field) {
                Some(def) => {
                    let storage = def.storage();
                    // ES's `MappedFieldType#fielddataBuilder` (not overridden by it).
                    if def.ty == lode_engine::mapping::FieldType::SearchAsYouType {
                        return Err(EsError::illegal_argument(format!(
                            "Fielddata is not supported on field [{field}] of type [search_as_you_type]"
                        )));
                    }
                    // `MatchOnlyTextFieldType#fielddataBuilder`.
                    if def.ty == lode_engine::mapping::FieldType::MatchOnlyText {
                        return Err(EsError::illegal_argument(
                            "match_only_text fields do not support sorting and aggregations",
                        ));
                    }
                    if storage == Storage::Text {
                        return Err(EsError::illegal_argument(format!(
                            "Text fields are not optimised for operations that require per-document field data like aggregations and sorting, so these operations are disabled by default. Please use a keyword field instead. Alternatively, set fielddata=true on [{field}] in order to load field data by uninverting the inverted index. Note that this can use significant memory."
                        )));
                    }
                    if !def.doc_values {
                        return Err(EsError::illegal_argument(format!(
                            "Can't load fielddata on [{field}] because fielddata is unsupported on fields of type [{}]. Use doc values instead.",
                            def.ty.name()
                        )));
                    }
                    // Types kept in `_source` only have no values to sort by.
                    if let lode_engine::mapping::FieldType::SourceOnly(ty) = def.ty {
                        return Err(EsError::illegal_argument(format!(
                            "Sorting on field [{field}] of type [{ty}] is not supported by Lode"
                        )));
                    }
                    if storage == Storage::GeoPoint {
                        return Err(EsError::illegal_argument(
                            "can't sort on geo_point field without using specific sorting feature, like geo_distance",
                        ));
                    }
                    if storage == Storage::Range {
                        let ty = def.ty.name();
                        return Err(EsError::illegal_argument(format!(
                            "Sorting on field [{field}] of type [{ty}] is not supported by Lode"
                        )));
                    }
                    SortKind::Field {
                        // `date_nanos` sorts by its nanosecond column (sort values in
                        // epoch nanoseconds, as ES).
                        name: def.nanos_path().unwrap_or_else(|| field.clone()),
                        storage,
                        is_date: def.ty.is_date(),
                    }
                }
                None if field == "_id" => return Err(lode_engine::schema::id_fielddata_error()),
                None => {
                    if opts.unmapped_type {
                        SortKind::Unmapped
                    } else {
                        return Err(EsError::bad_request(
                            "query_shard_exception",
                            format!("No mapping found for [{field}] in order to sort on"),
                        ));
                    }
                }
            },
        };
        let mode = opts.mode;
        if let (
            Some(m),
            SortKind::Field {
                storage: Storage::Keyword,
                ..
            },
        ) = (mode, &kind)
        {
            if !matches!(m, SortMode::Min | SortMode::Max) {
                return Err(EsError::illegal_argument(
                    "only [min] and [max] sort modes are supported on string fields",
                ));
            }
        }
        let mut key = SortKey {
            kind,
            desc,
            missing_first,
            missing_value: None,
            mode,
            nested: None,
        };
        if let Some(n) = opts.nested {
            key.nested = Some(parse_nested_sort(n, &field, ctx)?);
        }
        if let Some(m) = missing.filter(|m| m.as_str().map(|s| !s.starts_with('_')).unwrap_or(true))
        {
            key.missing_value = Some(SortValue::from_json(m, &key)?);
        }
        keys.push(key);
    }
    Ok(keys)
}

/// A `_geo_distance` sort as read.
struct GeoSortOpts {
    field: Option<(String, Vec<(f64, f64)>)>,
    desc: bool,
    unit: f64,
    mode: Option<SortMode>,
    distance_type: lode_engine::geo::DistanceType,
    ignore_unmapped: bool,
    coerce: bool,
}

/// ES's `GeoDistanceSortBuilder#fromXContent`: its options, and any other key is the field
/// with its origin points.
static GEO_SORT: ObjectParser<GeoSortOpts> = ObjectParser {
    name: "_geo_distance",
    style: Style::Object,
    fields: &[&[
        Field::new("order", "*", |o, _, v| {
            o.desc = sort_order(v)?;
            Ok(())
        }),
        Field::new("unit", "*", |o, _, v| {
            o.unit = v
                .as_str()
                .and_then(lode_engine::geo::unit_meters)
                .ok_or_else(|| {
                    EsError::illegal_argument(format!(
                        "No distance unit match [{}]",
                        v.as_str().unwrap_or_default()
                    ))
                })?;
            Ok(())
        }),
        Field::new("mode", "*", |o, _, v| {
            let m = SortMode::parse(v)?;
            if m == SortMode::Sum {
                return Err(EsError::illegal_argument(
                    "sort_mode [sum] isn't supported for sorting by geo distance",
                ));
            }
            o.mode = Some(m);
            Ok(())
        }),
        Field::new("distance_type", "*", |o, _, v| {
            o.distance_type = v
                .as_str()
                .and_then(lode_engine::geo::DistanceType::parse)
                .ok_or_else(|| {
                    EsError::illegal_argument(format!(
                        "No geo distance for [{}]",
                        v.as_str().unwrap_or_default()
                    ))
                })?;
            Ok(())
        }),
        Field::new("ignore_unmapped", "*", |o, _, v| {
            o.ignore_unmapped = v.as_bool().unwrap_or(false);
            Ok(())
        }),
        Field::new("validation_method", "*", |o, _, v| {
            o.coerce = match v.as_str().map(str::to_ascii_uppercase).as_deref() {
                Some("STRICT") => false,
                Some("COERCE" | "IGNORE_MALFORMED") => true,
                _ => {
                    return Err(EsError::illegal_argument(format!(
                        "No enum constant org.elasticsearch.index.query.GeoValidationMethod.{}",
                        v.as_str().unwrap_or_default().to_ascii_uppercase()
                    )))
                }
            };
            Ok(())
        }),
        Field::new("nested", "*", sort_option_not_supported_at),
        Field::new("_name", "*", ignore),
        Field::other("*", |o, at, v| {
            use lode_engine::geo;
            if let Some((first, _)) = &o.field {
                return Err(EsError::parsing(format!(
                    "[{}] does not support multiple fields, found [{first}] and [{}]",
                    at.parser, at.key
                )));
            }
            let point = |v: &Value| -> EsResult<(f64, f64)> {
                geo::parse_point(v, true)
                    .map_err(|e| EsError::parsing(format!("[{}] {e}", at.parser)))
            };
            let points = match v {
                Value::Array(items) if !geo::is_coordinate_array(v) => {
                    items.iter().map(point).collect::<EsResult<Vec<_>>>()?
                }
                other => vec![point(other)?],
            };
            o.field = Some((at.key.to_string(), points));
            Ok(())
        }),
    ]],
};

/// `{"_geo_distance": {"<field>": points, "order", "unit", "mode", "distance_type",
/// "ignore_unmapped", "validation_method"}}` (ES's `GeoDistanceSortBuilder#fromXContent`).
/// A `_geo_distance` sort's options as written.
fn read_geo_sort(opts: &Value) -> EsResult<GeoSortOpts> {
    const S: &str = "_geo_distance";
    let o = opts
        .as_object()
        .ok_or_else(|| EsError::parsing(format!("[{S}] malformed sort specification")))?;
    let mut g = GeoSortOpts {
        field: None,
        desc: false,
        unit: 1.0,
        mode: None,
        distance_type: lode_engine::geo::DistanceType::Arc,
        ignore_unmapped: false,
        coerce: false,
    };
    GEO_SORT.parse_into(&mut g, o)?;
    Ok(g)
}

fn parse_geo_sort(opts: &Value, mapping: &Mapping) -> EsResult<SortKey> {
    use lode_engine::geo;
    let g = read_geo_sort(opts)?;
    let GeoSortOpts {
        field,
        desc,
        unit,
        mode,
        distance_type,
        ignore_unmapped,
        coerce,
    } = g;
    let (name, mut points) =
        field.ok_or_else(|| EsError::illegal_argument("No geo points specified"))?;
    for p in &mut points {
        if coerce {
            *p = geo::normalize(p.0, p.1);
        } else if !(-90.0..=90.0).contains(&p.0) {
            return Err(EsError::illegal_argument(format!(
                "illegal latitude value [{:?}] for [GeoDistanceSort] for field [{name}].",
                p.0
            )));
        } else if !(-180.0..=180.0).contains(&p.1) {
            return Err(EsError::illegal_argument(format!(
                "illegal longitude value [{:?}] for [GeoDistanceSort] for field [{name}].",
                p.1
            )));
        }
    }
    let field = match mapping.field(&name) {
        Some(def) if def.ty == lode_engine::mapping::FieldType::GeoPoint => Some(name),
        Some(def) => {
            return Err(EsError::illegal_argument(format!(
                "unable to apply geo distance sort to field [{name}] of type [{}]",
                def.ty.name()
            )))
        }
        None if ignore_unmapped => None,
        None => {
            return Err(EsError::illegal_argument(format!(
                "failed to find mapper for [{name}] for geo distance based sort"
            )))
        }
    };
    Ok(SortKey {
        kind: SortKind::Geo(GeoSort {
            field,
            points,
            unit,
            distance_type,
        }),
        desc,
        missing_first: false,
        missing_value: None,
        mode,
        nested: None,
    })
}

/// A `_script` sort as read: the script (compiled once the walk is done), its type (`true` for
/// `string`) and order.
#[derive(Default)]
struct ScriptSortOpts {
    script: Option<Value>,
    string: Option<bool>,
    desc: bool,
}

/// ES's `ScriptSortBuilder` parser (`script` and `type` required).
static SCRIPT_SORT: ObjectParser<ScriptSortOpts> = ObjectParser {
    name: "_script",
    style: Style::Object,
    fields: &[&[
        Field::new("script", "*", |o, _, v| {
            o.script = Some(v.clone());
            Ok(())
        }),
        Field::new("type", "*", |o, _, v| {
            o.string = Some(match v.as_str().map(|t| t.to_lowercase()).as_deref() {
                Some("number") => false,
                Some("string") => true,
                Some("version") => {
                    return Err(EsError::parsing(
                        "[_script] sort type [version] is not supported by Lode",
                    ))
                }
                _ => {
                    let t = v
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| v.to_string());
                    return Err(EsError::illegal_argument(format!(
                        "Unknown ScriptSortType [{t}]"
                    )));
                }
            });
            Ok(())
        }),
        Field::new("order", "*", |o, _, v| {
            o.desc = sort_order(v)?;
            Ok(())
        }),
        Field::new("mode", "*", sort_option_not_supported_at),
        Field::new("nested", "*", sort_option_not_supported_at),
    ]],
};

/// "[parser] option [key] is not supported by Lode".
fn sort_option_not_supported_at<T>(_: &mut T, at: &At<'_>, _: &Value) -> EsResult<()> {
    Err(EsError::parsing(format!(
        "[{}] option [{}] is not supported by Lode",
        at.parser, at.key
    )))
}

/// A `_script` sort's options as written: the script, whether it sorts strings, `desc`.
fn read_script_sort(opts: &Value) -> EsResult<(Value, bool, bool)> {
    let o = opts
        .as_object()
        .ok_or_else(|| EsError::parsing("[_script] malformed sort specification"))?;
    let ScriptSortOpts {
        script,
        string,
        desc,
    } = SCRIPT_SORT.parse(o)?;
    match (script, string) {
        (Some(s), Some(t)) => Ok((s, t, desc)),
        (None, None) => Err(EsError::x_content_parse("Required [script, type]")),
        (None, _) => Err(EsError::x_content_parse("Required [script]")),
        (_, None) => Err(EsError::x_content_parse("Required [type]")),
    }
}

/// `{"_script": {"type": ..., "script": ..., "order": ...}}` (ES's `ScriptSortBuilder`).
fn parse_script_sort(
    opts: &Value,
    mapping: &Mapping,
    errors: &ScriptErrors,
    runtime: &RuntimeFields,
) -> EsResult<SortKey> {
    let (script, string, desc) = read_script_sort(opts)?;
    let script = SearchScript::compile(&script, None)?;
    Ok(SortKey {
        kind: SortKind::Script(ScriptSort {
            script: Arc::new(script),
            string,
            runtime: None,
            fields: lode_query::script::fields_of(mapping),
            runtime_fields: runtime.clone(),
            errors: errors.clone(),
        }),
        desc,
        missing_first: false,
        missing_value: None,
        mode: None,
        nested: None,
    })
}

/// A field sort's `nested` option as read.
#[derive(Default)]
struct NestedSortOpts {
    path: Option<String>,
    filter: Option<lode_query::Query>,
}

/// ES's `NestedSortBuilder` parser; `max_children` and a `nested` within are refused.
static NESTED_SORT: ObjectParser<NestedSortOpts> = ObjectParser {
    name: "nested",
    style: Style::Object,
    fields: &[&[
        Field::new("path", "*", |o, _, v| {
            o.path = v.as_str().map(str::to_string);
            Ok(())
        }),
        Field::new("filter", "*", |o, _, v| {
            o.filter = Some(lode_query::parse_query(v)?);
            Ok(())
        }),
        Field::new("max_children", "*", nested_option_not_supported),
        Field::new("nested", "*", nested_option_not_supported),
    ]],
};

fn nested_option_not_supported(_: &mut NestedSortOpts, at: &At<'_>, _: &Value) -> EsResult<()> {
    Err(EsError::parsing(format!(
        "[sort] option [nested.{}] is not supported by Lode",
        at.key
    )))
}

/// A field sort's `nested` option (`path`, `filter`) planned, for a nested path at the root
/// level.
fn parse_nested_sort(
    opts: NestedSortOpts,
    field: &str,
    ctx: Option<&QueryContext>,
) -> EsResult<NestedSort> {
    let NestedSortOpts { path, filter } = opts;
    let ctx =
        ctx.ok_or_else(|| EsError::parsing("[sort] option [nested] is not supported here"))?;
    let path = path.ok_or_else(|| EsError::illegal_argument("[nested] requires 'path' field"))?;
    match ctx.mapping.objects.get(path.as_str()) {
        Some(o) if o.nested => {}
        Some(_) => {
            return Err(EsError::bad_request(
                "query_shard_exception",
                format!("[nested] nested object under path [{path}] is not of nested type"),
            ))
        }
        None => {
            return Err(EsError::bad_request(
                "query_shard_exception",
                format!("[nested] failed to find nested object under path [{path}]"),
            ))
        }
    }
    if !ctx.mapping.nested_parent(&path).is_empty() {
        return Err(EsError::parsing(
            "[sort] option [nested] on a path inside another nested path is not supported by Lode",
        ));
    }
    if !field.starts_with(&format!("{path}.")) {
        return Err(EsError::bad_request(
            "query_shard_exception",
            format!("[nested] nested path [{path}] is not a parent of sort field [{field}]"),
        ));
    }
    let nested_field = ctx
        .meta
        .nested
        .ok_or_else(|| EsError::internal("a nested mapping without the _nested field"))?;
    let query = filter.unwrap_or(lode_query::Query::MatchAll { boost: 1.0 });
    let docs = lode_query::build_nested_children(&path, &query, ctx)?
        .ok_or_else(|| EsError::internal("a nested mapping without the _nested field"))?;
    Ok(NestedSort {
        field: nested_field,
        docs: Arc::from(docs),
    })
}

/// The segment's root documents and its live nested documents matching `n`.
fn segment_nested(
    n: &NestedSort,
    reader: &SegmentReader,
) -> tantivy::Result<(Vec<DocId>, Vec<DocId>)> {
    use tantivy::DocSet;
    let parents = lode_query::nested::parent_docs(reader, n.field, &[])?;
    let weight = n
        .docs
        .weight(tantivy::query::EnableScoring::disabled_from_schema(
            reader.schema(),
        ))?;
    let mut scorer = weight.scorer(reader, 1.0)?;
    let mut children = Vec::new();
    let mut d = scorer.doc();
    while d != tantivy::TERMINATED {
        if !reader.is_deleted(d) {
            children.push(d);
        }
        d = scorer.advance();
    }
    Ok((parents, children))
}

/// A hit found by the collector.
#[derive(Debug, Clone)]
pub struct SortedHit {
    pub values: Vec<SortValue>,
    pub score: Score,
    pub addr: DocAddress,
}

pub struct FieldSortCollector {
    pub keys: Vec<SortKey>,
    pub limit: usize,
    pub after: Option<Vec<SortValue>>,
    pub shard_id: usize,
    /// Compute scores even though no key sorts by them (`track_scores`, `min_score`).
    pub track_scores: bool,
}

enum ColumnReader {
    I64(Option<Column<i64>>),
    F64(Option<Column<f64>>),
    Bool(Option<Column<bool>>),
    Str(Option<SegmentTerms>),
    Score,
    Doc,
    /// A `_script` key: the segment's `doc` lookup and the script's reused buffers (values
    /// are computed through `&self`).
    Script(Box<(RefCell<(SegmentDocs, Scratch)>, ScriptSort)>),
    /// A `_geo_distance` key: the field's packed points.
    Geo(Option<Column<u64>>, GeoSort),
    None,
}

pub struct FieldSortSegment {
    keys: Vec<SortKey>,
    /// Per key with `nested`: the segment's root documents and the nested documents whose
    /// values count.
    nested: Vec<Option<(Vec<DocId>, Vec<DocId>)>>,
    columns: Vec<ColumnReader>,
    limit: usize,
    after: Option<Vec<SortValue>>,
    segment_ord: SegmentOrdinal,
    shard_id: usize,
    buf: Vec<SortedHit>,
    has_str: bool,
    /// The worst row still in the top `limit` after the last compaction: a later doc that
    /// does not sort before it cannot enter (docs arrive in doc-id order, the tie-break).
    threshold: Option<Vec<SortValue>>,
    /// The worst hit other segments hold already ([`FieldSortSegment::bar_with`]), in this
    /// segment's terms: a document sorting after it cannot enter the merged top `limit`.
    bar: Option<Bar>,
    /// A lead value (in the column's `u64` mapping) every entering document must reach: a
    /// document whose lead value is worse is rejected on that one read, before its row is
    /// built (Lucene's `compareBottom`). Only for a numeric or keyword lead key (a keyword's
    /// bound is its term ordinal in this segment).
    lead_bound: Option<u64>,
    scratch: Vec<SortValue>,
}

impl Collector for FieldSortCollector {
    type Fruit = Vec<SortedHit>;
    type Child = FieldSortSegment;

    fn for_segment(
        &self,
        segment_ord: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<FieldSortSegment> {
        let ff = reader.fast_fields();
        let mut columns = Vec::new();
        let mut has_str = false;
        for k in &self.keys {
            columns.push(match &k.kind {
                SortKind::Score => ColumnReader::Score,
                SortKind::Doc => ColumnReader::Doc,
                SortKind::Unmapped => ColumnReader::None,
                SortKind::Geo(g) => ColumnReader::Geo(
                    match &g.field {
                        Some(f) => ff.column_opt::<u64>(f)?,
                        None => None,
                    },
                    g.clone(),
                ),
                SortKind::Script(spec) => ColumnReader::Script(Box::new((
                    RefCell::new((
                        SegmentDocs::new(reader, spec.fields.clone())
                            .with_runtime(spec.runtime_fields.clone()),
                        Scratch::default(),
                    )),
                    spec.clone(),
                ))),
                SortKind::Field { name, storage, .. } => match storage {
                    Storage::I64 => ColumnReader::I64(ff.column_opt::<i64>(name)?),
                    Storage::F64 => ColumnReader::F64(ff.column_opt::<f64>(name)?),
                    Storage::Bool => ColumnReader::Bool(ff.column_opt::<bool>(name)?),
                    Storage::Keyword => {
                        has_str = true;
                        ColumnReader::Str(
                            ff.str(name)?
                                .map(|c| SegmentTerms::new(c, reader.segment_id(), name)),
                        )
                    }
                    _ => ColumnReader::None,
                },
            });
        }
        let mut nested = Vec::with_capacity(self.keys.len());
        for k in &self.keys {
            nested.push(match &k.nested {
                None => None,
                Some(n) => Some(segment_nested(n, reader)?),
            });
        }
        Ok(FieldSortSegment {
            keys: self.keys.clone(),
            nested,
            columns,
            limit: self.limit,
            after: self.after.clone(),
            segment_ord,
            shard_id: self.shard_id,
            buf: Vec::new(),
            has_str,
            threshold: None,
            bar: None,
            lead_bound: None,
            scratch: Vec::with_capacity(self.keys.len()),
        })
    }

    fn requires_scoring(&self) -> bool {
        self.track_scores
            || self
                .keys
                .iter()
                .any(|k| matches!(k.kind, SortKind::Score | SortKind::Script(_)))
    }

    fn merge_fruits(&self, fruits: Vec<Vec<SortedHit>>) -> tantivy::Result<Vec<SortedHit>> {
        // Every fruit is sorted already (`harvest`): merge them pairwise.
        let mut merged: Vec<SortedHit> = Vec::new();
        for fruit in fruits {
            merged = merge_sorted(merged, fruit, &self.keys, self.limit);
        }
        Ok(merged)
    }
}

/// The first `limit` hits of two sorted runs, in order (linear: the runs are not re-sorted).
pub fn merge_sorted(
    a: Vec<SortedHit>,
    b: Vec<SortedHit>,
    keys: &[SortKey],
    limit: usize,
) -> Vec<SortedHit> {
    if b.is_empty() || a.is_empty() {
        let mut out = if a.is_empty() { b } else { a };
        out.truncate(limit);
        return out;
    }
    let mut out = Vec::with_capacity((a.len() + b.len()).min(limit));
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    while out.len() < limit {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => {
                if cmp_hits(x, y, keys) != Ordering::Greater {
                    a.next()
                } else {
                    b.next()
                }
            }
            (Some(_), None) => a.next(),
            (None, Some(_)) => b.next(),
            (None, None) => None,
        };
        match next {
            Some(h) => out.push(h),
            None => break,
        }
    }
    out
}

/// Hit order: by sort values, ties by segment and doc id.
fn cmp_hits(a: &SortedHit, b: &SortedHit, keys: &[SortKey]) -> Ordering {
    cmp_rows(&a.values, &b.values, keys)
        .then(a.addr.segment_ord.cmp(&b.addr.segment_ord))
        .then(a.addr.doc_id.cmp(&b.addr.doc_id))
}

/// Sorts hits by their values, ties by shard, segment and doc id.
pub fn sort_hits(hits: &mut [SortedHit], keys: &[SortKey]) {
    hits.sort_unstable_by(|a, b| cmp_hits(a, b, keys));
}

impl FieldSortSegment {
    /// `values` (a keyword's as ordinals) against `search_after`'s row. A keyword's term is
    /// read only when every key before it ties: most documents differ on the lead.
    fn cmp_after(&self, values: &[SortValue], after: &[SortValue]) -> Ordering {
        for (i, ((v, a), k)) in values.iter().zip(after).zip(&self.keys).enumerate() {
            let o = match (v, &self.columns[i]) {
                (SortValue::Ord(ord), ColumnReader::Str(Some(terms))) => {
                    let mut term = String::new();
                    terms.term_into(*ord, &mut term);
                    cmp_values(&SortValue::Str(term), a, k)
                }
                _ => cmp_values(v, a, k),
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }

    fn values_into(&self, doc: DocId, score: Score, out: &mut Vec<SortValue>) {
        let own = [doc];
        for ((c, k), n) in self.columns.iter().zip(&self.keys).zip(&self.nested) {
            let docs: &[DocId] = match n {
                None => &own,
                Some((parents, children)) => {
                    let range = lode_query::nested::children_of(parents, doc);
                    let from = children.partition_point(|&c| c < range.start);
                    let to = children.partition_point(|&c| c < range.end);
                    &children[from..to]
                }
            };
            let v = match c {
                ColumnReader::Score => SortValue::F64(score as f64),
                ColumnReader::Script(s) => script_value(&s.0, &s.1, doc, score, desc_pick(k)),
                ColumnReader::Doc => SortValue::I64(
                    ((self.shard_id as i64) << 48) | ((self.segment_ord as i64) << 32) | doc as i64,
                ),
                ColumnReader::I64(Some(col)) => match k.mode {
                    Some(m @ (SortMode::Sum | SortMode::Avg | SortMode::Median)) => reduce_f(
                        docs.iter()
                            .flat_map(|&d| col.values_for_doc(d))
                            .map(|v| v as f64),
                        m,
                    )
                    .map(|v| SortValue::I64(java_round(v)))
                    .unwrap_or(SortValue::Missing),
                    _ => pick(
                        docs.iter().flat_map(|&d| col.values_for_doc(d)),
                        desc_pick(k),
                    )
                    .map(SortValue::I64)
                    .unwrap_or(SortValue::Missing),
                },
                ColumnReader::F64(Some(col)) => match k.mode {
                    Some(m @ (SortMode::Sum | SortMode::Avg | SortMode::Median)) => {
                        reduce_f(docs.iter().flat_map(|&d| col.values_for_doc(d)), m)
                            .map(SortValue::F64)
                            .unwrap_or(SortValue::Missing)
                    }
                    _ => pick_f(
                        docs.iter().flat_map(|&d| col.values_for_doc(d)),
                        desc_pick(k),
                    )
                    .map(SortValue::F64)
                    .unwrap_or(SortValue::Missing),
                },
                ColumnReader::Geo(Some(col), g) => {
                    let dists = docs
                        .iter()
                        .flat_map(|&d| col.values_for_doc(d))
                        .flat_map(|v| {
                            let (lat, lon) = lode_engine::geo::decode(v);
                            g.points.iter().map(move |&(plat, plon)| {
                                g.distance_type.meters(plat, plon, lat, lon) / g.unit
                            })
                        });
                    match k.mode {
                        Some(m @ (SortMode::Avg | SortMode::Median)) => reduce_f(dists, m),
                        _ => pick_f(dists, desc_pick(k)),
                    }
                    .map(SortValue::F64)
                    .unwrap_or(SortValue::Missing)
                }
                ColumnReader::Bool(Some(col)) => pick(
                    docs.iter()
                        .flat_map(|&d| col.values_for_doc(d))
                        .map(|b| b as i64),
                    desc_pick(k),
                )
                .map(SortValue::I64)
                .unwrap_or(SortValue::Missing),
                ColumnReader::Str(Some(terms)) => {
                    let col = &terms.column;
                    match pick(docs.iter().flat_map(|&d| col.term_ords(d)), desc_pick(k)) {
                        // A `missing` term has no ordinal here: the key's values are all
                        // terms, so that they compare with it.
                        Some(ord) if k.missing_value.is_some() => {
                            let mut s = String::new();
                            terms.term_into(ord, &mut s);
                            SortValue::Str(s)
                        }
                        Some(ord) => SortValue::Ord(ord),
                        None => SortValue::Missing,
                    }
                }
                _ => SortValue::Missing,
            };
            let v = match (v, &k.missing_value) {
                (SortValue::Missing, Some(m)) => m.clone(),
                (v, _) => v,
            };
            out.push(v);
        }
    }

    /// Keeps the best `limit` of the buffer (unordered: selection, not a sort) and raises
    /// the threshold to the worst of them.
    fn compact(&mut self) {
        let keys = &self.keys;
        if self.buf.len() > self.limit {
            let nth = self.limit - 1;
            self.buf
                .select_nth_unstable_by(nth, |a, b| cmp_hits(a, b, keys));
            self.buf.truncate(self.limit);
            self.threshold = Some(self.buf[nth].values.clone());
            let lead = match (self.buf[nth].values.first(), self.keys.first()) {
                // A keyword lead held as the segment's ordinal bounds by ordinal.
                (Some(SortValue::Ord(o)), _) => Some(*o),
                (
                    Some(v),
                    Some(SortKey {
                        kind: SortKind::Field { storage, .. },
                        ..
                    }),
                ) => v.to_point(*storage),
                _ => None,
            };
            if let Some(point) = lead {
                self.bound_lead(point);
            }
        }
    }

    /// Rejects every document sorting after `held`, the worst of `limit` hits other segments
    /// hold (a keyword's values as terms): Lucene's `compareBottom` against the merged queue,
    /// where each segment otherwise harvests its own `limit` hits, compared, sorted and
    /// resolved to terms only to be dropped in the merge. A keyword term is placed among
    /// this segment's ordinals; one the segment lacks bounds the row there.
    pub fn bar_with(&mut self, held: &[SortValue]) -> std::io::Result<()> {
        let mut row = Vec::with_capacity(held.len());
        let mut equal_passes = true;
        for ((v, key), column) in held.iter().zip(&self.keys).zip(&self.columns) {
            match (v, column) {
                (SortValue::Str(term), ColumnReader::Str(Some(terms)))
                    if key.missing_value.is_none() =>
                {
                    let col = &terms.column;
                    if let Some(ord) = col.dictionary().term_ord(term)? {
                        row.push(SortValue::Ord(ord));
                        continue;
                    }
                    // The term falls between two ordinals: the row ends at the first that
                    // sorts after it (a document there, or past it, sorts after `held`).
                    let next = match crate::ords::bound_ord(col, term, key.desc)? {
                        Some(b) if key.desc => match b.checked_sub(1) {
                            Some(n) => n,
                            // Every term sorts before `held`'s: no bar to place.
                            None => return Ok(()),
                        },
                        Some(b) => b + 1,
                        // Every term sorts after `held`'s (only missing values may not).
                        None if key.desc => u64::MAX,
                        None => 0,
                    };
                    row.push(SortValue::Ord(next));
                    equal_passes = false;
                    break;
                }
                (v, _) => row.push(v.clone()),
            }
        }
        self.bar = Some(Bar { row, equal_passes });
        Ok(())
    }

    /// Rejects from now on every document whose lead value is worse than `point` (in the
    /// lead column's `u64` mapping: a keyword's term ordinal in this segment), when the lead
    /// key is numeric or a keyword.
    pub fn bound_lead(&mut self, point: u64) {
        let Some(key) = self.keys.first() else {
            return;
        };
        let numeric = matches!(
            self.columns.first(),
            Some(
                ColumnReader::I64(Some(_))
                    | ColumnReader::F64(Some(_))
                    | ColumnReader::Str(Some(_))
            )
        );
        let mode_fits = matches!(key.mode, None | Some(SortMode::Min) | Some(SortMode::Max));
        if !numeric
            || !mode_fits
            || key.missing_first
            || key.missing_value.is_some()
            || key.nested.is_some()
        {
            return;
        }
        self.lead_bound = Some(match self.lead_bound {
            Some(b) if key.desc => b.max(point),
            Some(b) => b.min(point),
            None => point,
        });
    }

    /// Whether `doc`'s lead value is worse than `bound` (a missing value sorts last).
    fn lead_is_worse(&self, doc: DocId, bound: u64) -> bool {
        let key = &self.keys[0];
        let v = match &self.columns[0] {
            ColumnReader::I64(Some(col)) => {
                pick(col.values_for_doc(doc), desc_pick(key)).map(|v| v.to_u64())
            }
            ColumnReader::F64(Some(col)) => {
                pick_f(col.values_for_doc(doc), desc_pick(key)).map(|v| v.to_u64())
            }
            ColumnReader::Str(Some(terms)) => pick(terms.column.term_ords(doc), desc_pick(key)),
            _ => return false,
        };
        match v {
            None => true,
            Some(v) if key.desc => v < bound,
            Some(v) => v > bound,
        }
    }
}

/// A row documents must sort before (or, when `equal_passes`, with) to enter.
struct Bar {
    row: Vec<SortValue>,
    /// Whether a document equal to `row` may still enter: a full row held by another
    /// segment (ties go by segment); not a row cut at a term this segment lacks.
    equal_passes: bool,
}

impl Bar {
    fn rejects(&self, values: &[SortValue], keys: &[SortKey]) -> bool {
        match cmp_rows(values, &self.row, keys) {
            Ordering::Less => false,
            Ordering::Equal => !self.equal_passes,
            Ordering::Greater => true,
        }
    }
}

/// A `_script` key's value for `doc`; a runtime error is recorded in the request's slot (the
/// caller fails the search with it) and the document sorts as missing meanwhile.
fn script_value(
    docs: &RefCell<(SegmentDocs, Scratch)>,
    spec: &ScriptSort,
    doc: DocId,
    score: Score,
    max: bool,
) -> SortValue {
    if spec.errors.lock().is_some() {
        return SortValue::Missing;
    }
    let mut held = docs.borrow_mut();
    let (docs, scratch) = &mut *held;
    docs.doc = doc;
    if let Some(f) = &spec.runtime {
        // the values are compared where the field's buffer holds them; only the chosen
        // string is copied out
        return f.with_values_or_record(docs, &spec.errors, |vals| {
            let number = |v: &Value| match v {
                Value::Bool(b) => Some(SortValue::I64(*b as i64)),
                Value::Number(n) if f.ty == RuntimeType::Double => {
                    Some(SortValue::F64(n.as_f64().unwrap_or(0.0)))
                }
                Value::Number(n) => Some(SortValue::I64(n.as_i64().unwrap_or(0))),
                _ => None,
            };
            let mut best_str: Option<&str> = None;
            let mut best: Option<SortValue> = None;
            for v in vals {
                if let Value::String(s) = v {
                    let better = match best_str {
                        None => true,
                        Some(b) => {
                            let natural = s.as_str().cmp(b);
                            natural != Ordering::Equal && (natural == Ordering::Greater) == max
                        }
                    };
                    if better {
                        best_str = Some(s);
                    }
                    continue;
                }
                let Some(v) = number(v) else { continue };
                let better = match &best {
                    None => true,
                    Some(b) => {
                        let natural = cmp_values(&v, b, &ASC);
                        natural != Ordering::Equal && (natural == Ordering::Greater) == max
                    }
                };
                if better {
                    best = Some(v);
                }
            }
            match (best_str, best) {
                (Some(s), _) => SortValue::Str(s.to_string()),
                (None, Some(v)) => v,
                (None, None) => SortValue::Missing,
            }
        });
    }
    let v = if spec.string {
        spec.script
            .string_in(scratch, docs, score as f64)
            .map(SortValue::Str)
    } else {
        spec.script
            .score_in(scratch, docs, score as f64)
            .map(SortValue::F64)
    };
    v.unwrap_or_else(|e| {
        spec.errors.lock().get_or_insert(e);
        SortValue::Missing
    })
}

const ASC: SortKey = SortKey {
    kind: SortKind::Doc,
    desc: false,
    missing_first: false,
    missing_value: None,
    mode: None,
    nested: None,
};

/// Whether a multi-valued field contributes its maximum (else its minimum).
fn desc_pick(k: &SortKey) -> bool {
    match k.mode {
        Some(SortMode::Max) => true,
        Some(SortMode::Min) => false,
        _ => k.desc,
    }
}

/// Java's `Math.round`, as ES's `MultiValueMode` rounds an average or median of longs.
fn java_round(v: f64) -> i64 {
    (v + 0.5).floor() as i64
}

fn reduce_f(it: impl Iterator<Item = f64>, mode: SortMode) -> Option<f64> {
    let vals: Vec<f64> = it.collect();
    (!vals.is_empty()).then(|| mode.reduce(vals))
}

fn pick<T: Ord>(it: impl Iterator<Item = T>, desc: bool) -> Option<T> {
    if desc {
        it.max()
    } else {
        it.min()
    }
}

fn pick_f(it: impl Iterator<Item = f64>, desc: bool) -> Option<f64> {
    it.fold(None, |acc: Option<f64>, x| match acc {
        None => Some(x),
        Some(a) => Some(if (x > a) == desc { x } else { a }),
    })
}

impl SegmentCollector for FieldSortSegment {
    type Fruit = Vec<SortedHit>;

    fn collect(&mut self, doc: DocId, score: Score) {
        if self.limit == 0 {
            return;
        }
        if let Some(bound) = self.lead_bound {
            if self.lead_is_worse(doc, bound) {
                return;
            }
        }
        let mut values = std::mem::take(&mut self.scratch);
        values.clear();
        self.values_into(doc, score, &mut values);
        if let Some(t) = &self.threshold {
            if cmp_rows(&values, t, &self.keys) != Ordering::Less {
                self.scratch = values;
                return;
            }
        }
        if let Some(bar) = &self.bar {
            if bar.rejects(&values, &self.keys) {
                self.scratch = values;
                return;
            }
        }
        if let Some(after) = &self.after {
            if self.cmp_after(&values, after) != Ordering::Greater {
                self.scratch = values;
                return;
            }
        }
        self.buf.push(SortedHit {
            values,
            score,
            addr: DocAddress::new(self.segment_ord, doc),
        });
        if self.buf.len() >= self.limit.saturating_mul(2).max(1024) {
            self.compact();
        }
    }

    fn harvest(mut self) -> Vec<SortedHit> {
        self.compact();
        let keys = &self.keys;
        self.buf.sort_unstable_by(|a, b| cmp_hits(a, b, keys));
        if self.has_str {
            for (key, c) in self.columns.iter().enumerate() {
                if let ColumnReader::Str(Some(terms)) = c {
                    crate::ords::resolve(terms, &mut self.buf, key);
                }
            }
        }
        self.buf
    }
}

#[cfg(test)]
mod parse_tests {
    use super::{check_sort, parse_sort};
    use lode_engine::mapping::Mapping;
    use serde_json::json;

    fn err(spec: serde_json::Value) -> (String, String) {
        let e = parse_sort(
            &spec,
            &Mapping::empty(),
            &lode_query::ScriptErrors::default(),
            &Default::default(),
            None,
        )
        .unwrap_err();
        (e.kind, e.reason)
    }

    #[test]
    fn the_request_level_check_needs_no_mapping() {
        // what the mapping decides is left to the shards
        assert!(
            check_sort(&json!([{"missing": {"order": "desc", "mode": "sum"}}, "_doc"])).is_ok()
        );
        assert!(check_sort(&json!("n:desc")).is_ok());
        let e = check_sort(&json!([{"n": {"order": "up"}}])).unwrap_err();
        assert_eq!(
            (e.kind.as_str(), e.reason.as_str()),
            ("illegal_argument_exception", "Unknown SortOrder [up]")
        );
        let e = check_sort(&json!([{"n": {"ordr": "asc"}}])).unwrap_err();
        assert_eq!(e.kind, "x_content_parse_exception");
        let e = check_sort(&json!([{"_script": {"script": "1"}}])).unwrap_err();
        assert_eq!(e.reason, "Required [type]");
        let e = check_sort(&json!([{"_geo_distance": {"loc": [0, 0], "unit": "x"}}])).unwrap_err();
        assert_eq!(e.reason, "No distance unit match [x]");
        let e = check_sort(&json!([5])).unwrap_err();
        assert_eq!(e.reason, "[sort] malformed sort specification");
    }

    #[test]
    fn declared_sort_options_check_values_in_body_order() {
        // a value is checked as its key is read: the first bad key answers
        assert_eq!(
            err(json!([{"_score": {"mode": "nope", "order": "sideways"}}])).1,
            "Unknown SortMode [nope]"
        );
        assert_eq!(
            err(json!([{"_score": {"order": "sideways", "mode": "nope"}}])).1,
            "Unknown SortOrder [sideways]"
        );
        // an order that is not a string is refused, not taken as the default
        assert_eq!(
            err(json!([{"_score": {"order": 1}}])).1,
            "Unknown SortOrder []"
        );
        assert_eq!(
            err(json!([{"_geo_distance": {"a": [0, 0], "b": [1, 1]}}])).1,
            "[_geo_distance] does not support multiple fields, found [a] and [b]"
        );
        assert_eq!(
            err(json!([{"_geo_distance": {"a": [0, 0], "nested": {}}}])).1,
            "[_geo_distance] option [nested] is not supported by Lode"
        );
        assert_eq!(
            err(json!([{"_script": {"script": "1", "type": "number", "nested": {}}}])).1,
            "[_script] option [nested] is not supported by Lode"
        );
        assert_eq!(
            err(json!([{"_script": {"scrpt": "1"}}])),
            (
                "x_content_parse_exception".to_string(),
                "[_script] unknown field [scrpt] did you mean [script]?".to_string()
            )
        );
        assert_eq!(
            err(json!([{"n.x": {"nested": {"pth": "n"}}}])),
            (
                "x_content_parse_exception".to_string(),
                "[nested] unknown field [pth] did you mean [path]?".to_string()
            )
        );
        assert_eq!(
            err(json!([{"n.x": {"nested": {"max_children": 1}}}])).1,
            "[sort] option [nested.max_children] is not supported by Lode"
        );
    }

    #[test]
    fn unknown_sort_options_are_refused() {
        let m = Mapping::empty();
        let errors = lode_query::ScriptErrors::default();
        let e = parse_sort(
            &json!([{"_score": {"order": "asc", "bogus": 1}}]),
            &m,
            &errors,
            &Default::default(),
            None,
        )
        .unwrap_err();
        assert_eq!(
            (e.status, e.kind.as_str(), e.reason.as_str()),
            (
                400,
                "x_content_parse_exception",
                "[field_sort] unknown field [bogus]"
            )
        );
        let e = parse_sort(
            &json!([{"_score": {"numeric_type": "long"}}]),
            &m,
            &errors,
            &Default::default(),
            None,
        )
        .unwrap_err();
        assert_eq!((e.status, e.kind.as_str()), (400, "parsing_exception"));
        assert_eq!(
            parse_sort(
                &json!([{"_score": {"order": "asc"}}, "_doc"]),
                &m,
                &errors,
                &Default::default(),
                None,
            )
            .unwrap()
            .len(),
            2
        );
    }

    #[test]
    fn script_sorts_parse_and_refuse_as_es() {
        let m = Mapping::empty();
        let errors = lode_query::ScriptErrors::default();
        let keys = parse_sort(
            &json!([{"_script": {"type": "string", "script": "'x'", "order": "desc"}}]),
            &m,
            &errors,
            &Default::default(),
            None,
        )
        .unwrap();
        assert!(keys[0].desc);
        assert!(matches!(&keys[0].kind, super::SortKind::Script(s) if s.string));
        for (spec, kind) in [
            (json!({"type": "number"}), "x_content_parse_exception"),
            (
                json!({"type": "x", "script": "1"}),
                "illegal_argument_exception",
            ),
            (
                json!({"type": "number", "script": "1", "k": 1}),
                "x_content_parse_exception",
            ),
            (
                json!({"type": "number", "script": "1", "mode": "min"}),
                "parsing_exception",
            ),
        ] {
            let e = parse_sort(
                &json!([{ "_script": spec }]),
                &m,
                &errors,
                &Default::default(),
                None,
            )
            .unwrap_err();
            assert_eq!((e.status, e.kind.as_str()), (400, kind), "{spec}");
        }
        let v = super::SortValue::from_json(&json!(2), &keys[0]).unwrap();
        assert_eq!(v, super::SortValue::Str("2".into()));
    }
}
