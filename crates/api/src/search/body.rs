//! The search body's top level, described once: which keys exist, which JSON tokens each
//! accepts (ES's `SearchSourceBuilder` dispatches on the token, so `"query": 5` is an unknown
//! key for a VALUE_NUMBER), and whether Lode implements it. Everything else is refused with
//! the error Elasticsearch gives, so no key is ever silently ignored; the typed readers below
//! give ES's errors for values of the wrong type.

use lode_engine::{EsError, EsResult};
use serde_json::{Map, Value};

pub use lode_engine::object_parser::Token;
use lode_engine::object_parser::{ignore, At, Field, ObjectParser, Style};

type K = Field<()>;

/// Declared in Elasticsearch and implemented by Lode.
fn yes(_: &mut (), _: &At<'_>, _: &Value) -> EsResult<()> {
    Ok(())
}

/// Declared in Elasticsearch and refused by Lode.
fn no(_: &mut (), at: &At<'_>, _: &Value) -> EsResult<()> {
    Err(not_supported(at.key))
}

/// `SearchSourceBuilder#parseXContent` words an unknown key and a known key with a token it
/// does not take alike (as do `FetchSourceContext` and a `script_fields` entry).
pub fn unknown_key(at: &At<'_>, token: Token) -> EsError {
    EsError::parsing(format!(
        "Unknown key for a {} in [{}].",
        token.es_name(),
        at.key
    ))
}

/// Elasticsearch 8's search body keys with the tokens each accepts: `v` a value, `n` null,
/// `o` an object, `a` an array (from `SearchSourceBuilder#parseXContent`; its scalar branch
/// takes null too).
pub static SEARCH_KEYS: ObjectParser<()> = ObjectParser {
    name: "search",
    style: Style::Custom {
        unknown: |at, token, _| unknown_key(at, token),
        wrong_token: unknown_key,
    },
    fields: &[&[
        K::new("query", "o", yes),
        K::new("post_filter", "o", yes),
        K::new("from", "vn", yes),
        K::new("size", "vn", yes),
        K::new("timeout", "vn", yes),
        K::new("terminate_after", "vn", yes),
        K::new("min_score", "vn", yes),
        K::new("version", "vn", yes),
        K::new("seq_no_primary_term", "vn", yes),
        K::new("explain", "vn", yes),
        K::new("track_scores", "vn", yes),
        K::new("track_total_hits", "vn", yes),
        K::new("_source", "vnoa", yes),
        K::new("stored_fields", "vna", yes),
        K::new("sort", "vnoa", yes),
        K::new("profile", "vn", yes),
        K::new("search_after", "a", yes),
        K::new("aggregations", "o", yes),
        K::new("aggs", "o", yes),
        K::new("docvalue_fields", "a", yes),
        K::new("fields", "a", yes),
        K::new("indices_boost", "a", yes),
        K::new("stats", "a", yes),
        K::new("ext", "o", yes),
        K::new("script_fields", "o", yes),
        K::new("rescore", "oa", yes),
        K::new("highlight", "o", yes),
        K::new("suggest", "o", yes),
        K::new("collapse", "o", yes),
        K::new("slice", "o", yes),
        K::new("pit", "o", no),
        K::new("runtime_mappings", "o", yes),
        K::new("knn", "oa", no),
        K::new("retriever", "o", no),
        K::new("rank", "o", no),
        K::new("sub_searches", "a", no),
    ]],
};

/// Checks every top-level key of a search body.
pub fn check_keys(body: &Map<String, Value>) -> EsResult<()> {
    SEARCH_KEYS.parse_into(&mut (), body)
}

pub fn not_supported(key: &str) -> EsError {
    EsError::parsing(format!("[{key}] is not supported by Lode"))
}

/// An integer as `XContentParser#intValue` reads it: numbers (fractions truncated) and
/// numeric strings; anything else is ES's `number_format_exception`.
pub fn read_int(v: &Value) -> EsResult<i64> {
    let n = match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f.trunc() as i64)),
        Value::String(s) => s
            .trim()
            .parse::<i64>()
            .ok()
            .or_else(|| s.trim().parse::<f64>().ok().map(|f| f.trunc() as i64)),
        _ => None,
    };
    n.ok_or_else(|| number_format(v))
}

/// A float as `XContentParser#floatValue` reads it.
pub fn read_float(v: &Value) -> EsResult<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
        _ => None,
    }
    .ok_or_else(|| number_format(v))
}

fn number_format(v: &Value) -> EsError {
    let text = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    EsError::bad_request(
        "number_format_exception",
        format!("For input string: \"{text}\""),
    )
}

/// A boolean as `XContentParser#booleanValue` reads it: `true`/`false`, also as strings.
pub fn read_bool(v: &Value, name: &str) -> EsResult<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" => Ok(true),
        Value::String(s) if s == "false" => Ok(false),
        Value::String(s) => Err(EsError::x_content_parse(format!(
            "[{name}] Failed to parse value [{s}] as only [true] or [false] are allowed."
        ))),
        other => Err(EsError::x_content_parse(format!(
            "[{name}] Failed to parse value [{other}] as only [true] or [false] are allowed."
        ))),
    }
}

/// A time value (`timeout`): `-1`, `0` or a number with a unit, as `TimeValue#parseTimeValue`.
pub fn read_time(v: &Value, name: &str) -> EsResult<Option<u64>> {
    let text = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let bare_number = text.trim().parse::<f64>().is_ok();
    match lode_dates::parse_time_value_setting(&text, name) {
        Ok(-1) => Ok(None),
        // A unit is required, except for 0 and -1.
        Ok(ms) if !bare_number || ms == 0 => Ok(Some(ms as u64)),
        Ok(_) => Err(EsError::bad_request(
            "parse_exception",
            format!(
                "failed to parse setting [{name}] with value [{text}] as a time value: unit is missing or unrecognized"
            ),
        )),
        Err(e) => Err(EsError::bad_request("parse_exception", e.reason)),
    }
}

/// `_source` as `FetchSourceContext#fromXContent` accepts it: a boolean, a pattern, an
/// array of patterns, or an object of `includes`/`excludes` (each a pattern or an array).
/// Field patterns: a string or an array of strings.
fn source_patterns(_: &mut (), at: &At<'_>, v: &Value) -> EsResult<()> {
    match v {
        Value::Array(a) => a.iter().try_for_each(|p| match p {
            Value::String(_) => Ok(()),
            other => Err(unknown_key(at, Token::of(other))),
        }),
        _ => Ok(()),
    }
}

/// The object form of `_source` (ES's `FetchSourceContext#fromXContent`).
static SOURCE: ObjectParser<()> = ObjectParser {
    name: "_source",
    style: Style::Custom {
        unknown: |at, t, _| unknown_key(at, t),
        wrong_token: unknown_key,
    },
    fields: &[&[
        Field::new("includes", "sa", source_patterns).aliases(&["include"]),
        Field::new("excludes", "sa", source_patterns).aliases(&["exclude"]),
    ]],
};

pub fn check_source(v: &Value) -> EsResult<()> {
    match v {
        Value::Bool(_) | Value::String(_) => Ok(()),
        Value::Array(_) => source_patterns(
            &mut (),
            &At {
                parser: "_source",
                key: "_source",
            },
            v,
        ),
        Value::Object(o) => SOURCE.parse_into(&mut (), o),
        other => Err(EsError::parsing(format!(
            "Expected one of [VALUE_BOOLEAN, START_OBJECT] but found [{}]",
            Token::of(other).es_name()
        ))),
    }
}

/// A `fields` / `docvalue_fields` entry (ES's `FieldAndFormat`): a field pattern, or an
/// object of `field`, `format` and `include_unmapped`.
pub struct FieldAndFormat {
    pub field: String,
    pub format: Option<String>,
    pub include_unmapped: bool,
}

pub fn read_field_and_format(v: &Value) -> EsResult<FieldAndFormat> {
    type F = Field<FieldAndFormat>;
    static P: ObjectParser<FieldAndFormat> = ObjectParser {
        name: "field_and_format",
        style: Style::Object,
        fields: &[&[
            F::new("field", "s", |f, _, v| {
                f.field = v.as_str().unwrap_or_default().to_string();
                Ok(())
            }),
            F::new("format", "sn", |f, _, v| {
                if let Some(s) = v.as_str() {
                    f.format = Some(s.to_string());
                }
                Ok(())
            }),
            F::new("include_unmapped", "*", |f, at, v| {
                f.include_unmapped = read_bool(v, at.key)?;
                Ok(())
            }),
        ]],
    };
    match v {
        Value::String(s) => Ok(FieldAndFormat {
            field: s.clone(),
            format: None,
            include_unmapped: false,
        }),
        Value::Object(o) => {
            let mut out = FieldAndFormat {
                field: String::new(),
                format: None,
                include_unmapped: false,
            };
            P.parse_into(&mut out, o)?;
            if out.field.is_empty() {
                return Err(EsError::x_content_parse("Required [field]".to_string()));
            }
            Ok(out)
        }
        other => Err(EsError::x_content_parse(format!(
            "[field_and_format] expected a string or an object, found [{}]",
            Token::of(other).es_name()
        ))),
    }
}

/// `indices_boost`: an array of `{"index-or-pattern": boost}` objects, each with one entry.
pub fn read_indices_boost(v: &Value) -> EsResult<Vec<(String, f32)>> {
    let Value::Array(a) = v else {
        return Err(EsError::parsing("[indices_boost] must be an array"));
    };
    a.iter()
        .map(|e| match e {
            Value::Object(o) if o.len() == 1 => {
                let (name, boost) = o.iter().next().expect("one entry");
                match boost {
                    Value::Number(n) => Ok((name.clone(), n.as_f64().unwrap_or(1.0) as f32)),
                    other => Err(EsError::parsing(format!(
                        "Unknown key for a {} in [{name}].",
                        Token::of(other).es_name()
                    ))),
                }
            }
            Value::Object(_) => Err(EsError::parsing(
                "Expected [END_OBJECT] in [indices_boost] but found [FIELD_NAME]",
            )),
            other => Err(EsError::parsing(format!(
                "Expected [START_OBJECT] in [indices_boost] but found [{}]",
                Token::of(other).es_name()
            ))),
        })
        .collect()
}

/// `collapse`: the field whose values group the hits (one hit per value).
/// `collapse`: the field, and the `inner_hits` that expand each collapsed hit.
pub struct Collapse {
    pub field: String,
    pub inner_hits: Vec<InnerHits>,
}

/// One `inner_hits` of `collapse`: its name and the search body of a group's documents
/// (`from`, `size`, `sort`, `_source`, a second-level `collapse`, ...), ES's `InnerHitBuilder`.
pub struct InnerHits {
    pub name: String,
    pub body: Map<String, Value>,
}

/// Keeps a key of a group's search body, read when the group is searched.
fn keep(h: &mut InnerHits, at: &At<'_>, v: &Value) -> EsResult<()> {
    h.body.insert(at.key.to_string(), v.clone());
    Ok(())
}

type IhField = Field<InnerHits>;

/// `InnerHitBuilder` as `collapse` reads it.
static INNER_HITS: ObjectParser<InnerHits> = ObjectParser {
    name: "inner_hits",
    style: Style::Object,
    fields: &[&[
        IhField::new("name", "*", |h, _, v| match v {
            Value::String(n) => {
                h.name = n.clone();
                Ok(())
            }
            _ => Err(EsError::x_content_parse(
                "[inner_hits] name doesn't support values of this type",
            )),
        }),
        // Only nested and parent-child inner hits read it: for a collapse group ES accepts
        // and ignores it.
        IhField::new("ignore_unmapped", "*", |_, at, v| {
            read_bool(v, at.key).map(drop)
        }),
        IhField::new("from", "*", keep),
        IhField::new("size", "*", keep),
        IhField::new("sort", "*", keep),
        IhField::new("_source", "*", keep),
        IhField::new("collapse", "*", |h, at, v| {
            // a group's own collapse: checked as a search body's
            read_collapse(v)?;
            keep(h, at, v)
        }),
        IhField::new("version", "*", keep),
        IhField::new("seq_no_primary_term", "*", keep),
        IhField::new("explain", "*", keep),
        IhField::new("track_scores", "*", keep),
        IhField::new("docvalue_fields", "*", keep),
        IhField::new("fields", "*", keep),
        IhField::new("stored_fields", "*", keep),
        IhField::new("highlight", "*", keep),
        IhField::new("script_fields", "*", keep),
    ]],
};

fn read_inner_hits(v: &Value, field: &str) -> EsResult<InnerHits> {
    let Value::Object(o) = v else {
        return Err(EsError::x_content_parse(
            "[inner_hits] inner_hits doesn't support values of type: VALUE",
        ));
    };
    let mut h = InnerHits {
        name: field.to_string(),
        body: Map::new(),
    };
    INNER_HITS.parse_into(&mut h, o)?;
    for (k, default) in [("from", 0), ("size", 3)] {
        let n = match h.body.get(k) {
            Some(v) => read_int(v)?,
            None => default,
        };
        if n < 0 {
            return Err(EsError::illegal_argument(format!(
                "illegal {k} value, at least 0 or higher"
            )));
        }
        h.body.insert(k.to_string(), Value::from(n));
    }
    Ok(h)
}

pub fn read_collapse(v: &Value) -> EsResult<Collapse> {
    type F = Field<Option<String>>;
    /// `CollapseBuilder`: the field; `inner_hits` is read once the field is known.
    static P: ObjectParser<Option<String>> = ObjectParser {
        name: "collapse",
        style: Style::Object,
        fields: &[&[
            F::new("field", "s", |f, _, v| {
                *f = v.as_str().map(str::to_string);
                Ok(())
            }),
            F::new("inner_hits", "*", ignore),
            F::new("max_concurrent_group_searches", "*", |_, _, v| {
                // Lode runs a hit's group searches one after the other: the bound holds.
                if read_int(v)? < 1 {
                    return Err(EsError::illegal_argument(
                        "maxConcurrentGroupRequests` must be positive",
                    ));
                }
                Ok(())
            }),
        ]],
    };
    let Value::Object(o) = v else {
        return Err(EsError::parsing("[collapse] must be an object"));
    };
    let field = P
        .parse(o)?
        .ok_or_else(|| EsError::x_content_parse("Required [field]"))?;
    let inner_hits = match o.get("inner_hits") {
        None => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| read_inner_hits(v, &field))
            .collect::<EsResult<_>>()?,
        Some(v) => vec![read_inner_hits(v, &field)?],
    };
    let mut names = std::collections::HashSet::new();
    for h in &inner_hits {
        if !names.insert(h.name.as_str()) {
            return Err(EsError::illegal_argument(format!(
                "[inner_hits] already contains an entry for key [{}]",
                h.name
            )));
        }
    }
    Ok(Collapse { field, inner_hits })
}

/// `slice`: slice `id` of `max` of a sliced scroll.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slice {
    pub id: u32,
    pub max: u32,
}

pub fn read_slice(v: &Value) -> EsResult<Slice> {
    type F = Field<(Option<i64>, Option<i64>)>;
    /// `SliceBuilder`: (id, max).
    static P: ObjectParser<(Option<i64>, Option<i64>)> = ObjectParser {
        name: "slice",
        style: Style::Object,
        fields: &[&[
            F::new("id", "*", |(id, _), _, v| {
                *id = Some(read_int(v)?);
                Ok(())
            }),
            F::new("max", "*", |(_, max), _, v| {
                *max = Some(read_int(v)?);
                Ok(())
            }),
            // Slicing on a doc-values field hashes its values; only `_id` slicing is built.
            F::new("field", "*", |_, _, v| match v.as_str() {
                Some("_id") => Ok(()),
                _ => Err(not_supported("slice.field")),
            }),
        ]],
    };
    let Value::Object(o) = v else {
        return Err(EsError::parsing("[slice] must be an object"));
    };
    let (id, max) = P.parse(o)?;
    let id =
        id.ok_or_else(|| EsError::illegal_argument("id must be greater than or equal to 0"))?;
    let max = max.ok_or_else(|| EsError::illegal_argument("max must be greater than 1"))?;
    if id < 0 {
        return Err(EsError::illegal_argument(
            "id must be greater than or equal to 0",
        ));
    }
    if max <= 1 {
        return Err(EsError::illegal_argument("max must be greater than 1"));
    }
    if id >= max {
        return Err(EsError::illegal_argument("max must be greater than id"));
    }
    Ok(Slice {
        id: id as u32,
        max: u32::try_from(max).map_err(|_| EsError::illegal_argument("max is too large"))?,
    })
}

/// `stats`: an array of group names.
pub fn read_strings(v: &Value, name: &str) -> EsResult<Vec<String>> {
    match v {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(a) => a
            .iter()
            .map(|s| match s {
                Value::String(s) => Ok(s.clone()),
                other => Err(EsError::parsing(format!(
                    "Unknown key for a {} in [{name}].",
                    Token::of(other).es_name()
                ))),
            })
            .collect(),
        other => Err(EsError::parsing(format!(
            "Unknown key for a {} in [{name}].",
            Token::of(other).es_name()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(v: Value) -> EsResult<()> {
        check_keys(v.as_object().unwrap())
    }

    #[test]
    fn unknown_keys_are_named_with_their_token() {
        let e = check(json!({"qurey": {}})).unwrap_err();
        assert_eq!(e.kind, "parsing_exception");
        assert_eq!(e.reason, "Unknown key for a START_OBJECT in [qurey].");
        let e = check(json!({"query": 5})).unwrap_err();
        assert_eq!(e.reason, "Unknown key for a VALUE_NUMBER in [query].");
        let e = check(json!({"size": [1]})).unwrap_err();
        assert_eq!(e.reason, "Unknown key for a START_ARRAY in [size].");
        assert!(check(json!({"query": {}, "size": 1, "sort": "a", "_source": false})).is_ok());
    }

    #[test]
    fn unimplemented_keys_are_refused_not_ignored() {
        for k in ["pit", "knn"] {
            let e = check(json!({ k: {} })).unwrap_err();
            assert_eq!(e.status, 400, "{k}");
            assert!(e.reason.contains(k), "{k}");
        }
        assert!(check(json!({"explain": false, "profile": false})).is_ok());
        assert!(check(json!({"profile": true})).is_ok());
        assert!(check(json!({"profile": {}})).is_err());
        assert!(check(json!({"script_fields": {}})).is_ok());
    }

    #[test]
    fn values_of_the_wrong_type() {
        assert_eq!(read_int(&json!("12")).unwrap(), 12);
        assert_eq!(read_int(&json!(3.7)).unwrap(), 3);
        let e = read_int(&json!("abc")).unwrap_err();
        assert_eq!(
            (e.kind.as_str(), e.reason.as_str()),
            ("number_format_exception", "For input string: \"abc\"")
        );
        assert!(read_float(&json!("x")).is_err());
        assert_eq!(read_float(&json!("0.5")).unwrap(), 0.5);
        assert!(read_bool(&json!("yes"), "version").is_err());
        assert!(read_bool(&json!("true"), "version").unwrap());
        assert_eq!(read_time(&json!("1s"), "timeout").unwrap(), Some(1000));
        assert_eq!(read_time(&json!("-1"), "timeout").unwrap(), None);
        let e = read_time(&json!("abc"), "timeout").unwrap_err();
        assert_eq!(e.kind, "parse_exception");
        let e = check_source(&json!(5)).unwrap_err();
        assert_eq!(
            e.reason,
            "Expected one of [VALUE_BOOLEAN, START_OBJECT] but found [VALUE_NUMBER]"
        );
        assert!(check_source(&json!({"includes": ["a"], "excludes": "b"})).is_ok());
        assert!(check_source(&json!({"include": 1})).is_err());
        assert!(check_source(&json!({"bogus": []})).is_err());
        assert!(read_field_and_format(&json!({"field": "a", "bogus": 1})).is_err());
        assert_eq!(
            read_indices_boost(&json!([{"a": 2}, {"b*": 1.5}])).unwrap(),
            vec![("a".to_string(), 2.0), ("b*".to_string(), 1.5)]
        );
        assert!(read_indices_boost(&json!([{"a": 2, "b": 1}])).is_err());
    }

    #[test]
    fn collapse_inner_hits_are_read_as_es_builds_them() {
        let c = read_collapse(&json!({"field": "g", "max_concurrent_group_searches": 2,
            "inner_hits": [{"name": "a", "size": 2, "sort": ["n"]}, {"from": 1}]}))
        .unwrap();
        assert_eq!(c.field, "g");
        assert_eq!(c.inner_hits.len(), 2);
        assert_eq!(c.inner_hits[0].name, "a");
        assert_eq!(c.inner_hits[0].body["size"], json!(2));
        assert_eq!(c.inner_hits[0].body["from"], json!(0));
        // unnamed: the collapse field; size defaults to 3
        assert_eq!(c.inner_hits[1].name, "g");
        assert_eq!(c.inner_hits[1].body["size"], json!(3));
        let single = read_collapse(&json!({"field": "g", "inner_hits": {"name": "x"}})).unwrap();
        assert_eq!(single.inner_hits.len(), 1);
        for bad in [
            json!({"field": "g", "max_concurrent_group_searches": 0}),
            json!({"field": "g", "inner_hits": {"nope": 1}}),
            json!({"field": "g", "inner_hits": [{"name": "x"}, {"name": "x"}]}),
            json!({"field": "g", "inner_hits": {"collapse": {"bogus": 1}}}),
        ] {
            assert!(read_collapse(&bad).is_err(), "{bad}");
        }
    }
}
