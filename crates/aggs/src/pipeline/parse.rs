//! The pipeline aggregations' bodies, one declaration per type (`lode_engine::object_parser`)
//! with the keys ES's builder of that type declares, worded as that builder's parser words
//! its refusals:
//!
//! - `ObjectParser`s (`bucket_script`, `bucket_sort`, `cumulative_sum`, `moving_fn`,
//!   `normalize`, `cumulative_cardinality`, `moving_percentiles`): "[type] unknown field [k]"
//!   with did-you-mean, "[type] k doesn't support values of type: T", a missing constructor
//!   argument "Required [a, b]";
//! - the hand-written `parse` of `derivative`, `serial_diff` and `bucket_selector`: "Unknown
//!   key for a T in [name]: [k]." for the tokens the parser has a branch for, "Unexpected token
//!   T in [name]." for the others;
//! - `BucketMetricsParser` (`avg_bucket` ... `percentiles_bucket`): "Unexpected token T [k] in
//!   [name]." for every key or token it does not take.
//!
//! A key one pipeline type declares is still unknown to the others.

use super::{unit_millis, value_text, Gap, Pipeline, NORMALIZE_METHODS};
use lode_engine::object_parser::{ignore, At, Field, ObjectParser, Style, Token};
use lode_engine::{EsError, EsResult};
use lode_hits::docvalues::DecimalFormat;
use serde_json::{Map, Value};

/// A pipeline body under construction.
pub(super) struct Body {
    pub p: Pipeline,
    pub has_path: bool,
    pub script: Option<Value>,
    /// A `buckets_path` array of the single-path pipelines, checked after the walk.
    paths_given: usize,
}

type F = Field<Body>;

/// How a type's parser is reached: its declaration, and whether its messages name the
/// aggregation (the hand-written parsers) or the type (`ObjectParser`s).
struct Decl {
    parser: &'static ObjectParser<Body>,
    named: bool,
}

fn decl(kind: &str) -> Option<Decl> {
    let (parser, named) = match kind {
        "derivative" => (&DERIVATIVE, true),
        "serial_diff" => (&SERIAL_DIFF, true),
        "bucket_selector" => (&BUCKET_SELECTOR, true),
        "avg_bucket" | "sum_bucket" | "min_bucket" | "max_bucket" | "stats_bucket" => {
            (&BUCKET_METRICS, true)
        }
        "extended_stats_bucket" => (&EXTENDED_STATS_BUCKET, true),
        "percentiles_bucket" => (&PERCENTILES_BUCKET, true),
        "bucket_script" => (&BUCKET_SCRIPT, false),
        "bucket_sort" => (&BUCKET_SORT, false),
        "cumulative_sum" => (&CUMULATIVE_SUM, false),
        "moving_fn" => (&MOVING_FN, false),
        "normalize" => (&NORMALIZE, false),
        "cumulative_cardinality" => (&CUMULATIVE_CARDINALITY, false),
        "moving_percentiles" => (&MOVING_PERCENTILES, false),
        _ => return None,
    };
    Some(Decl { parser, named })
}

/// Reads a pipeline body of `kind` (a pipeline type Lode runs) into `p`.
pub(super) fn parse_body(p: Pipeline, o: &Map<String, Value>) -> EsResult<Body> {
    let kind = p.kind.clone();
    let name = p.name.clone();
    let d = decl(&kind).expect("every pipeline type Lode runs is declared");
    let mut b = Body {
        p,
        has_path: false,
        script: None,
        paths_given: 0,
    };
    let under = if d.named {
        name.as_str()
    } else {
        kind.as_str()
    };
    d.parser.parse_named(under, &mut b, o)?;
    required(&b, &kind, &name)?;
    if b.paths_given > 1 {
        return Err(EsError::parsing(format!(
            "[{kind}] buckets_path must be a single path for [{name}]"
        )));
    }
    Ok(b)
}

/// The declared names of `kind`'s body (did-you-mean candidates).
#[cfg(test)]
pub(super) fn names(kind: &str) -> Vec<&'static str> {
    decl(kind).map(|d| d.parser.names()).unwrap_or_default()
}

/// What each type requires once the body is read, worded as its parser words it.
fn required(b: &Body, kind: &str, name: &str) -> EsResult<()> {
    let missing_field = |field: &str, what: &str| {
        EsError::parsing(format!(
            "Missing required field [{field}] for {what}aggregation [{name}]"
        ))
    };
    // ES's ConstructingObjectParser names every missing constructor argument, in the order
    // they are declared.
    let constructor = |args: &[(&str, bool)]| {
        let missing: Vec<&str> = args.iter().filter(|(_, p)| !p).map(|(f, _)| *f).collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(EsError::illegal_argument(format!(
                "Required [{}]",
                missing.join(", ")
            )))
        }
    };
    let path = ("buckets_path", b.has_path);
    let script = ("script", b.script.is_some());
    let window = ("window", b.p.window.is_some());
    match kind {
        "derivative" | "serial_diff" if !b.has_path => {
            Err(missing_field("buckets_path", "derivative "))
        }
        "bucket_selector" if !b.has_path => Err(missing_field("buckets_path", "bucket_selector ")),
        "bucket_selector" if b.script.is_none() => Err(missing_field("script", "bucket_selector ")),
        "avg_bucket"
        | "sum_bucket"
        | "min_bucket"
        | "max_bucket"
        | "stats_bucket"
        | "extended_stats_bucket"
        | "percentiles_bucket"
            if !b.has_path =>
        {
            Err(missing_field("buckets_path", ""))
        }
        "bucket_script" => constructor(&[path, script]),
        "cumulative_sum" | "cumulative_cardinality" => constructor(&[path]),
        "moving_fn" => constructor(&[path, script, window]),
        "moving_percentiles" => constructor(&[path, window]),
        "normalize" => constructor(&[("method", b.p.method.is_some()), path]),
        "bucket_sort" if b.p.sort.is_empty() && b.p.size.is_none() && b.p.from == 0 => {
            // ES's `BucketSortPipelineAggregationBuilder#validate`.
            Err(EsError::new(
                400,
                "action_request_validation_exception",
                format!(
                    "Validation Failed: 1: [{name}] is configured to perform nothing. Please set \
                     either of [sort, size, from] to use bucket_sort;"
                ),
            ))
        }
        _ => Ok(()),
    }
}

// ---------------------------------------------------------------------------------------------
// Wordings

fn unknown_key(at: &At<'_>, t: Token) -> EsError {
    EsError::parsing(format!(
        "Unknown key for a {} in [{}]: [{}].",
        t.es_name(),
        at.parser,
        at.key
    ))
}

fn unexpected(at: &At<'_>, t: Token) -> EsError {
    EsError::parsing(format!(
        "Unexpected token {} in [{}].",
        t.es_name(),
        at.parser
    ))
}

/// A hand-written parser with branches for strings and arrays (`derivative`).
const HAND_SA: Style = Style::Custom {
    unknown: |at, t, _| hand(at, t, &[Token::String, Token::Array]),
    wrong_token: |at, t| hand(at, t, &[Token::String, Token::Array]),
};

/// ... and numbers (`serial_diff`'s `lag`).
const HAND_SNA: Style = Style::Custom {
    unknown: |at, t, _| hand(at, t, &[Token::String, Token::Number, Token::Array]),
    wrong_token: |at, t| hand(at, t, &[Token::String, Token::Number, Token::Array]),
};

/// ... and objects (`bucket_selector`'s `script` and `buckets_path` map).
const HAND_SAO: Style = Style::Custom {
    unknown: |at, t, _| hand(at, t, &[Token::String, Token::Array, Token::Object]),
    wrong_token: |at, t| hand(at, t, &[Token::String, Token::Array, Token::Object]),
};

fn hand(at: &At<'_>, t: Token, branches: &[Token]) -> EsError {
    if branches.contains(&t) {
        unknown_key(at, t)
    } else {
        unexpected(at, t)
    }
}

/// `BucketMetricsParser#parseToken`: one wording for every refusal.
const METRICS: Style = Style::Custom {
    unknown: |at, t, _| metrics_refusal(at, t),
    wrong_token: metrics_refusal,
};

fn metrics_refusal(at: &At<'_>, t: Token) -> EsError {
    EsError::parsing(format!(
        "Unexpected token {} [{}] in [{}].",
        t.es_name(),
        at.key,
        at.parser
    ))
}

/// A setter's failure in an `ObjectParser`, wrapped as ES wraps it.
fn failed(at: &At<'_>, e: EsError) -> EsError {
    EsError::x_content_parse(format!(
        "[{}] failed to parse field [{}]",
        at.parser, at.key
    ))
    .caused_by(e)
}

// ---------------------------------------------------------------------------------------------
// Setters

/// `buckets_path` of a single-path pipeline: a string, or an array of paths (ES keeps the
/// first; more than one is refused after the walk).
fn set_path(b: &mut Body, _: &At<'_>, v: &Value) -> EsResult<()> {
    match v {
        Value::Array(a) => {
            b.paths_given = a.len();
            b.p.path = a.first().map(value_text).unwrap_or_default();
        }
        other => {
            b.paths_given = 1;
            b.p.path = value_text(other);
        }
    }
    b.has_path = true;
    Ok(())
}

/// `buckets_path` of the script pipelines: a string is the variable `_value`, an array
/// `_value0`, `_value1`, ..., an object names its variables.
fn set_script_paths(b: &mut Body, _: &At<'_>, v: &Value) -> EsResult<()> {
    b.p.paths = match v {
        Value::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, x)| (format!("_value{i}"), value_text(x)))
            .collect(),
        Value::Object(m) => m.iter().map(|(k, x)| (k.clone(), value_text(x))).collect(),
        other => vec![("_value".into(), value_text(other))],
    };
    b.has_path = true;
    Ok(())
}

fn set_script(b: &mut Body, _: &At<'_>, v: &Value) -> EsResult<()> {
    b.script = Some(v.clone());
    Ok(())
}

fn gap_policy(text: &str) -> EsResult<Gap> {
    match text {
        "skip" => Ok(Gap::Skip),
        "keep_values" => Ok(Gap::KeepValues),
        "insert_zeros" => Ok(Gap::InsertZeros),
        other => Err(EsError::parsing(format!(
            "Invalid gap policy: [{other}], accepted values: [skip, insert_zeros, keep_values]"
        ))),
    }
}

/// `gap_policy` read by a hand-written parser (`GapPolicy.parse`, exact names).
fn set_gap(b: &mut Body, _: &At<'_>, v: &Value) -> EsResult<()> {
    b.p.gap = gap_policy(v.as_str().unwrap_or_default())?;
    Ok(())
}

/// `gap_policy` declared on an `ObjectParser`: lower-cased first, a failure wrapped.
fn set_gap_lower(b: &mut Body, at: &At<'_>, v: &Value) -> EsResult<()> {
    let text = v.as_str().unwrap_or_default().to_lowercase();
    b.p.gap = gap_policy(&text).map_err(|e| failed(at, e))?;
    Ok(())
}

fn set_format(b: &mut Body, _: &At<'_>, v: &Value) -> EsResult<()> {
    let f = v.as_str().unwrap_or_default();
    b.p.format = Some(DecimalFormat::parse(f)?);
    b.p.format_text = Some(f.to_string());
    Ok(())
}

/// An `ObjectParser#declareInt` value: a number or a numeric string, within an int.
fn int(at: &At<'_>, v: &Value) -> EsResult<i64> {
    let n = match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f.trunc() as i64)),
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    };
    n.filter(|n| i32::try_from(*n).is_ok()).ok_or_else(|| {
        failed(
            at,
            EsError::new(
                400,
                "number_format_exception",
                format!("For input string: \"{}\"", value_text(v)),
            ),
        )
    })
}

fn set_window(b: &mut Body, at: &At<'_>, v: &Value) -> EsResult<()> {
    let w = int(at, v)?;
    if w <= 0 {
        return Err(EsError::illegal_argument(
            "[window] must be a positive, non-zero integer.",
        ));
    }
    b.p.window = Some(w as usize);
    Ok(())
}

fn set_shift(b: &mut Body, at: &At<'_>, v: &Value) -> EsResult<()> {
    b.p.shift = int(at, v)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Declarations

const fn path() -> F {
    F::new("buckets_path", "sa", set_path)
}

const fn format() -> F {
    F::new("format", "s", set_format)
}

static DERIVATIVE: ObjectParser<Body> = ObjectParser {
    name: "derivative",
    style: HAND_SA,
    fields: &[&[
        format(),
        path(),
        F::new("gap_policy", "s", set_gap),
        F::new("unit", "s", |b, _, v| {
            let u = v.as_str().unwrap_or_default();
            b.p.unit_ms = Some(unit_millis(u).ok_or_else(|| {
                EsError::illegal_argument(format!("unknown unit [{u}] in [{}]", b.p.name))
            })?);
            Ok(())
        }),
    ]],
};

static SERIAL_DIFF: ObjectParser<Body> = ObjectParser {
    name: "serial_diff",
    style: HAND_SNA,
    fields: &[&[
        format(),
        path(),
        F::new("gap_policy", "s", set_gap),
        F::new("lag", "d", |b, at, v| {
            // `parser.intValue(true)`: a fraction is truncated
            let lag = v.as_f64().unwrap_or_default().trunc() as i64;
            if lag <= 0 {
                return Err(EsError::parsing(format!(
                    "Lag must be a positive, non-zero integer.  Value supplied was{lag} in [{}]: [{}].",
                    at.parser, at.key
                )));
            }
            b.p.lag = lag as usize;
            Ok(())
        }),
    ]],
};

static BUCKET_SELECTOR: ObjectParser<Body> = ObjectParser {
    name: "bucket_selector",
    style: HAND_SAO,
    fields: &[&[
        F::new("buckets_path", "sao", set_script_paths),
        F::new("gap_policy", "s", set_gap),
        F::new("script", "so", set_script),
    ]],
};

/// `BucketMetricsParser`'s own keys.
const METRIC_KEYS: [F; 3] = [format(), path(), F::new("gap_policy", "s", set_gap)];

static BUCKET_METRICS: ObjectParser<Body> = ObjectParser {
    name: "bucket_metrics",
    style: METRICS,
    fields: &[&METRIC_KEYS],
};

static EXTENDED_STATS_BUCKET: ObjectParser<Body> = ObjectParser {
    name: "extended_stats_bucket",
    style: METRICS,
    fields: &[
        &METRIC_KEYS,
        &[F::new("sigma", "d", |b, _, v| {
            let s = v.as_f64().unwrap_or_default();
            if s < 0.0 {
                return Err(EsError::illegal_argument(format!(
                    "[sigma] must be greater than or equal to 0. Found [{v}] in [{}]",
                    b.p.name
                )));
            }
            b.p.sigma = s;
            Ok(())
        })],
    ],
};

static PERCENTILES_BUCKET: ObjectParser<Body> = ObjectParser {
    name: "percentiles_bucket",
    style: METRICS,
    fields: &[
        &METRIC_KEYS,
        &[
            F::new("percents", "a", |b, _, v| {
                let a = v.as_array().map(Vec::as_slice).unwrap_or_default();
                b.p.percents = a
                    .iter()
                    .map(|x| x.as_f64().filter(|f| (0.0..=100.0).contains(f)))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| {
                        EsError::illegal_argument(format!(
                            "[percents] must only contain values between 0 and 100 in [{}]",
                            b.p.name
                        ))
                    })?;
                Ok(())
            }),
            F::new("keyed", "b", ignore),
        ],
    ],
};

static BUCKET_SCRIPT: ObjectParser<Body> = ObjectParser {
    name: "bucket_script",
    style: Style::Object,
    fields: &[&[
        F::new("buckets_path", "sao", set_script_paths),
        F::new("script", "so", set_script),
        format(),
        F::new("gap_policy", "s", set_gap_lower),
    ]],
};

static CUMULATIVE_SUM: ObjectParser<Body> = ObjectParser {
    name: "cumulative_sum",
    style: Style::Object,
    fields: &[&[path(), format()]],
};

static MOVING_FN: ObjectParser<Body> = ObjectParser {
    name: "moving_fn",
    style: Style::Object,
    fields: &[&[
        F::new("buckets_path", "s", set_path),
        F::new("script", "so", set_script),
        F::new("window", "ds", set_window),
        F::new("shift", "ds", set_shift),
        format(),
        F::new("gap_policy", "s", set_gap_lower),
    ]],
};

static NORMALIZE: ObjectParser<Body> = ObjectParser {
    name: "normalize",
    style: Style::Object,
    fields: &[&[
        format(),
        F::new("method", "s", |b, _, v| {
            let m = v.as_str().unwrap_or_default();
            if !NORMALIZE_METHODS.contains(&m) {
                return Err(EsError::illegal_argument(format!("invalid method [{m}]")));
            }
            b.p.method = Some(m.to_string());
            Ok(())
        }),
        path(),
    ]],
};

static CUMULATIVE_CARDINALITY: ObjectParser<Body> = ObjectParser {
    name: "cumulative_cardinality",
    style: Style::Object,
    fields: &[&[format(), path()]],
};

static MOVING_PERCENTILES: ObjectParser<Body> = ObjectParser {
    name: "moving_percentiles",
    style: Style::Object,
    fields: &[&[
        F::new("buckets_path", "s", set_path),
        F::new("window", "ds", set_window),
        F::new("shift", "ds", set_shift),
    ]],
};

static BUCKET_SORT: ObjectParser<Body> = ObjectParser {
    name: "bucket_sort",
    style: Style::Object,
    fields: &[&[
        F::new("sort", "oa", |b, _, v| {
            b.p.sort = sorts(v)?;
            Ok(())
        }),
        F::new("from", "ds", |b, at, v| {
            let from = int(at, v)?;
            if from < 0 {
                return Err(failed(
                    at,
                    EsError::illegal_argument(format!(
                        "[from] must be a non-negative integer: [{from}]"
                    )),
                ));
            }
            b.p.from = from as usize;
            Ok(())
        }),
        F::new("size", "ds", |b, at, v| {
            let size = int(at, v)?;
            if size <= 0 {
                return Err(failed(
                    at,
                    EsError::illegal_argument(format!(
                        "[size] must be a positive integer: [{size}]"
                    )),
                ));
            }
            b.p.size = Some(size as usize);
            Ok(())
        }),
        F::new("gap_policy", "s", set_gap_lower),
    ]],
};

// ---------------------------------------------------------------------------------------------
// bucket_sort's `sort` (ES's `SortBuilder.fromXContent`, field sorts only)

/// The sort keys, each `(field, descending)`.
fn sorts(v: &Value) -> EsResult<Vec<(String, bool)>> {
    let malformed = || {
        EsError::illegal_argument(
            "malformed sort format, within the sort array, an object, or an actual string are allowed",
        )
    };
    let mut out = Vec::new();
    let items = match v {
        Value::Array(a) => a.as_slice(),
        other => std::slice::from_ref(other),
    };
    for item in items {
        match item {
            Value::String(f) => out.push((f.clone(), f == "_score")),
            // every key of an object is a sort of its own
            Value::Object(o) => {
                for (f, spec) in o {
                    let desc = match spec {
                        Value::String(s) => sort_order(s)?,
                        Value::Object(opts) => {
                            let mut s = FieldSort::default();
                            FIELD_SORT.parse_into(&mut s, opts)?;
                            s.desc.unwrap_or(f == "_score")
                        }
                        other => {
                            return Err(EsError::x_content_parse(format!(
                                "[field_sort] Expected START_OBJECT but was: {}",
                                Token::of(other).es_name()
                            )))
                        }
                    };
                    out.push((f.clone(), desc));
                }
            }
            _ => return Err(malformed()),
        }
    }
    Ok(out)
}

/// ES's `SortOrder.fromString`: `asc` or `desc`, in any case.
fn sort_order(o: &str) -> EsResult<bool> {
    match o.to_lowercase().as_str() {
        "asc" => Ok(false),
        "desc" => Ok(true),
        _ => Err(EsError::illegal_argument(format!(
            "Unknown SortOrder [{o}]"
        ))),
    }
}

#[derive(Default)]
struct FieldSort {
    desc: Option<bool>,
}

/// ES's `FieldSortBuilder` parser. `BucketSortPipelineAggregator` reads only a sort's field
/// and order, so the options about reading a document field's values are accepted and have
/// no effect, as in ES.
static FIELD_SORT: ObjectParser<FieldSort> = ObjectParser {
    name: "field_sort",
    style: Style::Object,
    fields: &[&[
        Field::new("order", "s", |s, _, v| {
            s.desc = Some(sort_order(v.as_str().unwrap_or_default())?);
            Ok(())
        }),
        Field::new("missing", "*", ignore),
        Field::new("unmapped_type", "s", ignore),
        Field::new("mode", "s", ignore),
        Field::new("numeric_type", "s", ignore),
        Field::new("format", "s", ignore),
        Field::new("nested", "o", ignore),
    ]],
};

#[cfg(test)]
mod tests {
    use super::super::split;
    use super::names;
    use serde_json::{json, Value};

    /// The error of a pipeline `p` declared in a histogram beside a `sum` named `s`.
    fn err(kind: &str, body: Value) -> (String, String) {
        let aggs = json!({"h": {"histogram": {"field": "x", "interval": 1},
                                "aggs": {"s": {"sum": {"field": "y"}}, "p": {kind: body}}}});
        let e = split(&aggs).unwrap_err();
        (e.kind, e.reason)
    }

    fn parsing(reason: &str) -> (String, String) {
        ("parsing_exception".into(), reason.into())
    }

    fn x_content(reason: &str) -> (String, String) {
        ("x_content_parse_exception".into(), reason.into())
    }

    #[test]
    fn object_parser_types_suggest_their_own_keys() {
        assert_eq!(
            err("bucket_sort", json!({"sizes": 2})),
            x_content("[bucket_sort] unknown field [sizes] did you mean [size]?")
        );
        assert_eq!(
            err("bucket_sort", json!({"from": true})),
            x_content("[bucket_sort] from doesn't support values of type: VALUE_BOOLEAN")
        );
        // `unit` is derivative's, not moving_fn's
        assert_eq!(
            err("moving_fn", json!({"buckets_path": "s", "unit": "1d"})),
            x_content("[moving_fn] unknown field [unit]")
        );
        assert_eq!(
            err("moving_fn", json!({"buckets_path": ["s"]})),
            x_content("[moving_fn] buckets_path doesn't support values of type: START_ARRAY")
        );
        assert_eq!(
            err("bucket_script", json!({"buckets_path": "s", "scrpit": "1"})),
            x_content("[bucket_script] unknown field [scrpit] did you mean [script]?")
        );
        assert_eq!(
            err(
                "cumulative_sum",
                json!({"buckets_path": "s", "gap_policy": "skip"})
            ),
            x_content("[cumulative_sum] unknown field [gap_policy]")
        );
        assert_eq!(
            err(
                "normalize",
                json!({"buckets_path": "s", "method": "mean", "methods": 1})
            ),
            x_content("[normalize] unknown field [methods] did you mean [method]?")
        );
        assert_eq!(
            err(
                "cumulative_cardinality",
                json!({"buckets_path": "s", "format": 1})
            ),
            x_content(
                "[cumulative_cardinality] format doesn't support values of type: VALUE_NUMBER"
            )
        );
        assert_eq!(
            err(
                "moving_percentiles",
                json!({"buckets_path": "s", "window": 2, "format": "0"})
            ),
            x_content("[moving_percentiles] unknown field [format]")
        );
        assert_eq!(names("cumulative_sum"), ["buckets_path", "format"]);
    }

    #[test]
    fn object_parser_types_name_missing_constructor_arguments() {
        assert_eq!(
            err("bucket_script", json!({})).1,
            "Required [buckets_path, script]"
        );
        assert_eq!(
            err("cumulative_sum", json!({})).1,
            "Required [buckets_path]"
        );
        assert_eq!(
            err("moving_percentiles", json!({"window": 1})).1,
            "Required [buckets_path]"
        );
        let (kind, reason) = err("bucket_sort", json!({"gap_policy": "skip"}));
        assert_eq!(kind, "action_request_validation_exception");
        assert!(reason.contains("[p] is configured to perform nothing"));
        let (kind, reason) = err("bucket_sort", json!({"size": 0}));
        assert_eq!(
            (kind.as_str(), reason.as_str()),
            (
                "x_content_parse_exception",
                "[bucket_sort] failed to parse field [size]"
            )
        );
        let (kind, _) = err(
            "bucket_script",
            json!({"buckets_path": "s", "script": "1", "gap_policy": "nope"}),
        );
        assert_eq!(kind, "x_content_parse_exception");
    }

    #[test]
    fn hand_written_types_word_refusals_by_token() {
        assert_eq!(
            err("derivative", json!({"buckets_path": "s", "units": "1d"})),
            parsing("Unknown key for a VALUE_STRING in [p]: [units].")
        );
        assert_eq!(
            err("derivative", json!({"buckets_path": "s", "unit": 1})),
            parsing("Unexpected token VALUE_NUMBER in [p].")
        );
        assert_eq!(
            err("derivative", json!({"buckets_path": "s", "lag": 1})),
            parsing("Unexpected token VALUE_NUMBER in [p].")
        );
        assert_eq!(
            err("serial_diff", json!({"buckets_path": "s", "window": 1})),
            parsing("Unknown key for a VALUE_NUMBER in [p]: [window].")
        );
        assert_eq!(
            err("serial_diff", json!({"buckets_path": "s", "lag": 0})),
            parsing(
                "Lag must be a positive, non-zero integer.  Value supplied was0 in [p]: [lag]."
            )
        );
        assert_eq!(
            err(
                "bucket_selector",
                json!({"buckets_path": "s", "script": "true", "format": "0"})
            ),
            parsing("Unknown key for a VALUE_STRING in [p]: [format].")
        );
        assert_eq!(
            err(
                "bucket_selector",
                json!({"buckets_path": "s", "script": true})
            ),
            parsing("Unexpected token VALUE_BOOLEAN in [p].")
        );
        assert_eq!(
            err("derivative", json!({"gap_policy": "skip"})),
            parsing("Missing required field [buckets_path] for derivative aggregation [p]")
        );
        assert_eq!(
            err("bucket_selector", json!({"buckets_path": "s"})),
            parsing("Missing required field [script] for bucket_selector aggregation [p]")
        );
    }

    #[test]
    fn bucket_metrics_refuse_every_other_key_one_way() {
        let sibling = |kind: &str, body: Value| {
            let aggs =
                json!({"h": {"histogram": {"field": "x", "interval": 1}}, "m": {kind: body}});
            let e = split(&aggs).unwrap_err();
            (e.kind, e.reason)
        };
        assert_eq!(
            sibling(
                "max_bucket",
                json!({"buckets_path": "h>_count", "sigma": 2})
            ),
            parsing("Unexpected token VALUE_NUMBER [sigma] in [m].")
        );
        assert_eq!(
            sibling(
                "extended_stats_bucket",
                json!({"buckets_path": "h>_count", "sigma": "2"})
            ),
            parsing("Unexpected token VALUE_STRING [sigma] in [m].")
        );
        assert_eq!(
            sibling(
                "percentiles_bucket",
                json!({"buckets_path": "h>_count", "keyed": "true"})
            ),
            parsing("Unexpected token VALUE_STRING [keyed] in [m].")
        );
        assert_eq!(
            sibling(
                "avg_bucket",
                json!({"buckets_path": "h>_count", "percents": [1]})
            ),
            parsing("Unexpected token START_ARRAY [percents] in [m].")
        );
        assert_eq!(
            sibling("sum_bucket", json!({"format": "0"})),
            parsing("Missing required field [buckets_path] for aggregation [m]")
        );
        assert!(split(&json!({"h": {"histogram": {"field": "x", "interval": 1}},
            "m": {"percentiles_bucket": {"buckets_path": "h>_count", "percents": [50], "keyed": false}}}))
        .is_ok());
    }

    #[test]
    fn bucket_sort_reads_sorts_as_es() {
        let sorts = |sort: Value| {
            let aggs = json!({"h": {"histogram": {"field": "x", "interval": 1},
                "aggs": {"p": {"bucket_sort": {"sort": sort}}}}});
            split(&aggs).map(|(_, t)| t.children["h"].1.here[0].sort.clone())
        };
        assert_eq!(
            sorts(json!([{"a": "desc", "b": {"order": "ASC"}}, "c"])).unwrap(),
            vec![("a".into(), true), ("b".into(), false), ("c".into(), false)]
        );
        assert_eq!(
            sorts(json!({"a": {"ordre": "asc"}})).unwrap_err().reason,
            "[field_sort] unknown field [ordre] did you mean [order]?"
        );
        assert_eq!(
            sorts(json!({"a": "up"})).unwrap_err().reason,
            "Unknown SortOrder [up]"
        );
        assert_eq!(
            sorts(json!("a")).unwrap_err().reason,
            "[bucket_sort] sort doesn't support values of type: VALUE_STRING"
        );
    }
}
