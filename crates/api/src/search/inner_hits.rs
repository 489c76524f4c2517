//! `inner_hits` of `nested` queries: per search hit, the nested objects of the query's path
//! that its inner query matches, read from the hit's block (the documents between the
//! previous root and the hit), scored by the inner query, with `_nested: {field, offset}` and
//! the object's `_source` as Elasticsearch renders them.

use lode_engine::object_parser::{ignore, At, Field, ObjectParser, Style};
use lode_engine::shard::ShardSearcher;
use lode_engine::{EsError, EsResult};
use lode_hits::source::{objects_at, unwrap, wrap, SourceFilter};
use lode_query::{Query, QueryContext};
use serde_json::{json, Map, Value};
use tantivy::query::EnableScoring;
use tantivy::{DocAddress, DocSet, Score, TERMINATED};

/// ES's default `index.max_inner_result_window`.
const MAX_INNER_RESULT_WINDOW: usize = 100;

/// One `nested` query's `inner_hits`.
pub(super) struct InnerHitsSpec<'q> {
    name: String,
    path: String,
    query: &'q Query,
    from: usize,
    size: usize,
    source: SourceFilter,
    /// `sort`: field keys (full paths of the path's fields) and `_score`; empty = by score.
    sort: Vec<SortKey>,
    track_scores: bool,
    /// `version`, `seq_no_primary_term`: a nested object carries its root's (ES adds the
    /// root's version and sequence number fields to its nested documents).
    version: bool,
    seq_no_primary_term: bool,
    /// `docvalue_fields` (the nested document's own columns) and `fields` (the object's
    /// `_source`), each a field pattern with an optional `format`.
    docvalue_fields: Vec<(String, Option<String>)>,
    fields: Vec<(String, Option<String>)>,
    /// `highlight`: the object's `_source` highlighted for the inner query.
    highlight: Option<lode_hits::highlight::HighlightRequest>,
    /// `explain`: each object's score explained (the inner query's explanation).
    explain: bool,
    /// `stored_fields`: the `store: true` fields among the patterns, read from the object.
    stored_fields: Vec<String>,
    /// `script_fields`, run on each nested document (`doc[...]` reads its columns).
    script_fields: Vec<(String, std::sync::Arc<lode_painless::SearchScript>, bool)>,
    /// The named queries inside the `nested` query: each object's `matched_queries`.
    named: &'q [lode_query::named::NamedQuery],
}

/// A matching object: its document, score and offset in the hit's objects of the path.
type Match = (u32, Score, usize);

/// One `sort` key of an `inner_hits`: a field of the nested objects, or `_score` (`None`).
struct SortKey {
    field: Option<String>,
    asc: bool,
    missing_first: bool,
}

/// A nested object's sort value, read from its `_source` as the field's doc values hold it.
#[derive(Clone, Debug, PartialEq, PartialOrd)]
enum SortVal {
    Num(f64),
    Long(i64),
    Str(String),
}

impl SortVal {
    fn json(&self) -> Value {
        match self {
            SortVal::Num(x) => json!(x),
            SortVal::Long(x) => json!(x),
            SortVal::Str(s) => json!(s),
        }
    }
}

/// "Unknown SortOrder [o]" unless `asc` or `desc` (`true` ascending).
fn sort_asc(v: &Value) -> EsResult<bool> {
    match v.as_str() {
        Some("asc") => Ok(true),
        Some("desc") => Ok(false),
        _ => Err(EsError::illegal_argument(format!(
            "Unknown SortOrder [{}]",
            v.as_str().unwrap_or_default()
        ))),
    }
}

/// A sort key's options: `order` of any key, `missing` and `mode` of a field (as far as Lode
/// sorts nested objects); every other option is refused as not supported.
static SORT_OPTIONS: ObjectParser<SortKey> = ObjectParser {
    name: "sort",
    style: Style::Custom {
        unknown: |at, _, _| refuse(&format!("[sort] option [{}]", at.key)),
        wrong_token: |at, _| refuse(&format!("[sort] option [{}]", at.key)),
    },
    fields: &[&[
        Field::new("order", "*", |k, _, v| {
            k.asc = sort_asc(v)?;
            Ok(())
        }),
        Field::new("missing", "*", |k, at, v| {
            if k.field.is_none() {
                return Err(refuse(&format!("[sort] option [{}]", at.key)));
            }
            k.missing_first = match v.as_str() {
                Some("_last") => false,
                Some("_first") => true,
                _ => return Err(refuse("[sort] [missing] other than _first/_last")),
            };
            Ok(())
        }),
        Field::new("mode", "*", |k, at, v| {
            if k.field.is_none() {
                return Err(refuse(&format!("[sort] option [{}]", at.key)));
            }
            match v.as_str() {
                // ES's default modes: min ascending, max descending.
                Some("min") if k.asc => Ok(()),
                Some("max") if !k.asc => Ok(()),
                _ => Err(refuse("[sort] [mode] other than the order's default")),
            }
        }),
    ]],
};

fn parse_sort(spec: &Value) -> EsResult<Vec<SortKey>> {
    let items: Vec<&Value> = match spec {
        Value::Array(a) => a.iter().collect(),
        other => vec![other],
    };
    let mut out = Vec::new();
    for item in items {
        let (name, opts) = match item {
            Value::String(s) => (s.clone(), None),
            Value::Object(o) if o.len() == 1 => {
                let (k, v) = o.iter().next().expect("one key");
                (k.clone(), Some(v))
            }
            _ => return Err(EsError::parsing("[inner_hits] malformed [sort]")),
        };
        let score = name == "_score";
        let mut key = SortKey {
            field: (!score).then(|| name.clone()),
            asc: !score,
            missing_first: false,
        };
        match opts {
            None => {}
            Some(v @ Value::String(_)) => key.asc = sort_asc(v)?,
            Some(Value::Object(o)) => SORT_OPTIONS.parse_into(&mut key, o)?,
            Some(_) => return Err(EsError::parsing("[inner_hits] malformed [sort]")),
        }
        out.push(key);
    }
    Ok(out)
}

/// The sort value of the nested object `obj` (the object of `path`) for `field` (a full
/// path): its values read as the field's type, the least ascending and the greatest
/// descending (ES's default `mode`).
fn sort_value(
    ctx: &QueryContext,
    path: &str,
    obj: Option<&Value>,
    field: &str,
    asc: bool,
) -> EsResult<Option<SortVal>> {
    use lode_engine::mapping::{FieldType, Storage};
    let Some(def) = ctx.mapping.fields.get(field) else {
        return Err(EsError::bad_request(
            "query_shard_exception",
            format!("No mapping found for [{field}] in order to sort on"),
        ));
    };
    if def.ty == FieldType::Text {
        return Err(EsError::illegal_argument(format!(
            "Text fields are not optimised for operations that require per-document field data like aggregations and sorting, so these operations are disabled by default. Please use a keyword field instead. Alternatively, set fielddata=true on [{field}] in order to load field data by uninverting the inverted index. Note that this can use significant memory."
        )));
    }
    let Some(rel) = field.strip_prefix(&format!("{path}.")) else {
        return Err(refuse(&format!(
            "[sort] on [{field}], a field outside the nested path [{path}],"
        )));
    };
    let mut raw = Vec::new();
    if let Some(o) = obj {
        lode_query::runtime::source_values(o, rel, &mut raw);
    }
    let mut vals = Vec::new();
    for v in raw {
        let x = match def.storage() {
            Storage::Keyword => match v {
                Value::String(s) => Some(SortVal::Str(s.clone())),
                Value::Null => None,
                other => Some(SortVal::Str(other.to_string())),
            },
            Storage::Bool => match v {
                Value::Bool(b) => Some(SortVal::Long(*b as i64)),
                Value::String(s) if s == "true" => Some(SortVal::Long(1)),
                Value::String(s) if s == "false" => Some(SortVal::Long(0)),
                _ => None,
            },
            Storage::I64 if def.ty.is_date() => def
                .date_format
                .parse_json(v, &lode_dates::Tz::utc())
                .ok()
                .map(SortVal::Long),
            Storage::I64 => match v {
                Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
                Value::String(s) => s.trim().parse::<f64>().ok().map(|f| f as i64),
                _ => None,
            }
            .map(SortVal::Long),
            Storage::F64 => match v {
                Value::Number(n) => n.as_f64(),
                Value::String(s) => s.trim().parse().ok(),
                _ => None,
            }
            .map(SortVal::Num),
            _ => {
                return Err(refuse(&format!(
                    "[sort] on field [{field}] of type [{}]",
                    def.ty.name()
                )))
            }
        };
        vals.extend(x);
    }
    let pick = |a: SortVal, b: SortVal| {
        let less = a.partial_cmp(&b) == Some(std::cmp::Ordering::Less);
        if less == asc {
            a
        } else {
            b
        }
    };
    Ok(vals.into_iter().reduce(pick))
}

fn refuse(what: &str) -> EsError {
    EsError::parsing(format!("[inner_hits] {what} is not supported by Lode"))
}

fn count(v: &Value, key: &str) -> EsResult<usize> {
    v.as_u64()
        .map(|n| n as usize)
        .ok_or_else(|| EsError::parsing(format!("[inner_hits] failed to parse field [{key}]")))
}

/// The `inner_hits` of the `nested` queries in `q` (not those of a `nested` inside another).
pub(super) fn specs(q: &Query) -> EsResult<Vec<InnerHitsSpec<'_>>> {
    let mut out = Vec::new();
    walk(q, false, &mut out)?;
    let mut names = std::collections::HashSet::new();
    for s in &out {
        if !names.insert(s.name.clone()) {
            return Err(EsError::illegal_argument(format!(
                "[inner_hits] already contains an entry for key [{}]",
                s.name
            )));
        }
    }
    Ok(out)
}

fn walk<'q>(q: &'q Query, in_nested: bool, out: &mut Vec<InnerHitsSpec<'q>>) -> EsResult<()> {
    match q {
        Query::Bool(b) => {
            for c in b.must.iter().chain(&b.should).chain(&b.filter) {
                walk(c, in_nested, out)?;
            }
        }
        Query::ConstantScore { filter, .. } => walk(filter, in_nested, out)?,
        Query::DisMax { queries, .. } => {
            for c in queries {
                walk(c, in_nested, out)?;
            }
        }
        Query::Boosting { positive, .. } => walk(positive, in_nested, out)?,
        Query::FunctionScore(f) => walk(&f.query, in_nested, out)?,
        Query::Nested {
            path,
            query,
            inner_hits,
            named,
            ..
        } => {
            if let Some(spec) = inner_hits {
                if in_nested {
                    return Err(refuse("of a [nested] query inside another [nested] query"));
                }
                let mut spec = parse(path, query, spec)?;
                spec.named = named;
                out.push(spec);
            }
            walk(query, true, out)?;
        }
        _ => {}
    }
    Ok(())
}

/// What `parse` fills in before the query is known; `query` is set by the caller.
static NO_QUERY: Query = Query::MatchNone;

/// An `inner_hits` under construction, and its `stored_fields` (applied after `_source`).
type Ih = (InnerHitsSpec<'static>, Option<Vec<String>>);
type IhField = Field<Ih>;

fn flag(at: &At<'_>, v: &Value) -> EsResult<bool> {
    v.as_bool()
        .ok_or_else(|| EsError::parsing(format!("[inner_hits] failed to parse field [{}]", at.key)))
}

fn field_list(at: &At<'_>, v: &Value) -> EsResult<Vec<(String, Option<String>)>> {
    v.as_array()
        .ok_or_else(|| {
            EsError::parsing(format!("[inner_hits] failed to parse field [{}]", at.key))
        })?
        .iter()
        .map(|x| super::body::read_field_and_format(x).map(|f| (f.field, f.format)))
        .collect()
}

/// ES's `InnerHitBuilder` as a `nested` query reads it.
static INNER_HITS: ObjectParser<Ih> = ObjectParser {
    name: "inner_hits",
    style: Style::Object,
    fields: &[&[
        IhField::new("name", "*", |(s, _), _, v| {
            s.name = v
                .as_str()
                .ok_or_else(|| EsError::parsing("[inner_hits] failed to parse field [name]"))?
                .to_string();
            Ok(())
        }),
        IhField::new("ignore_unmapped", "*", ignore),
        IhField::new("from", "*", |(s, _), at, v| {
            s.from = count(v, at.key)?;
            Ok(())
        }),
        IhField::new("size", "*", |(s, _), at, v| {
            s.size = count(v, at.key)?;
            Ok(())
        }),
        IhField::new("_source", "*", |(s, _), _, v| {
            s.source = SourceFilter::from_json(Some(v));
            Ok(())
        }),
        IhField::new("sort", "*", |(s, _), _, v| {
            s.sort = parse_sort(v)?;
            Ok(())
        }),
        IhField::new("stored_fields", "*", |(_, stored), _, v| {
            *stored = Some(super::body::read_strings(v, "stored_fields")?);
            Ok(())
        }),
        IhField::new("script_fields", "*", |(s, _), _, v| {
            let o = v.as_object().ok_or_else(|| {
                EsError::parsing("[inner_hits] failed to parse field [script_fields]")
            })?;
            s.script_fields = o
                .iter()
                .map(|(name, spec)| super::script_field(name, spec))
                .collect::<EsResult<Vec<_>>>()?;
            Ok(())
        }),
        IhField::new("highlight", "*", |(s, _), _, v| {
            s.highlight = Some(lode_hits::highlight::HighlightRequest::parse(v)?);
            Ok(())
        }),
        IhField::new("docvalue_fields", "*", |(s, _), at, v| {
            s.docvalue_fields = field_list(at, v)?;
            Ok(())
        }),
        IhField::new("fields", "*", |(s, _), at, v| {
            s.fields = field_list(at, v)?;
            Ok(())
        }),
        IhField::new("track_scores", "*", |(s, _), at, v| {
            s.track_scores = flag(at, v)?;
            Ok(())
        }),
        IhField::new("version", "*", |(s, _), at, v| {
            s.version = flag(at, v)?;
            Ok(())
        }),
        IhField::new("seq_no_primary_term", "*", |(s, _), at, v| {
            s.seq_no_primary_term = flag(at, v)?;
            Ok(())
        }),
        IhField::new("explain", "*", |(s, _), at, v| {
            s.explain = flag(at, v)?;
            Ok(())
        }),
        IhField::new("collapse", "*", |_, _, _| Err(refuse("[collapse]"))),
    ]],
};

fn parse<'q>(path: &str, query: &'q Query, spec: &Value) -> EsResult<InnerHitsSpec<'q>> {
    let mut ih: Ih = (
        InnerHitsSpec {
            name: path.to_string(),
            path: path.to_string(),
            query: &NO_QUERY,
            from: 0,
            size: 3,
            source: SourceFilter::all(),
            sort: Vec::new(),
            track_scores: false,
            version: false,
            seq_no_primary_term: false,
            docvalue_fields: Vec::new(),
            fields: Vec::new(),
            highlight: None,
            explain: false,
            script_fields: Vec::new(),
            stored_fields: Vec::new(),
            named: &[],
        },
        None,
    );
    if let Some(o) = spec.as_object() {
        INNER_HITS.parse_into(&mut ih, o)?;
    }
    let (s, stored) = ih;
    let mut s: InnerHitsSpec<'q> = s;
    s.query = query;
    if let Some(list) = stored {
        // As a search's: `_none_` refuses a requested `_source`; stored fields replace
        // `_source` unless it is requested or named among them.
        let explicit_source = spec.get("_source").is_some();
        if matches!(list.as_slice(), [one] if one == "_none_")
            && spec.get("_source").is_some_and(|v| v != &json!(false))
        {
            return Err(EsError::bad_request(
                "action_request_validation_exception",
                "Validation Failed: 1: [stored_fields] cannot be disabled if [_source] is requested;",
            ));
        }
        if !explicit_source {
            s.source.fetch = list.iter().any(|f| f == "_source");
        }
        s.stored_fields = list
            .into_iter()
            .filter(|f| f != "_none_" && f != "_source")
            .collect();
    }
    if s.from + s.size > MAX_INNER_RESULT_WINDOW {
        return Err(EsError::illegal_argument(format!(
            "Inner result window is too large, the inner hit definition's [{}]'s from + size must be less than or equal to: [{MAX_INNER_RESULT_WINDOW}] but was [{}]. This limit can be set by changing the [index.max_inner_result_window] index level setting.",
            s.name,
            s.from + s.size
        )));
    }
    Ok(s)
}

/// Renders the `inner_hits` object of one search hit.
#[allow(clippy::too_many_arguments)]
pub(super) fn render(
    specs: &[InnerHitsSpec],
    ctx: &QueryContext,
    s: &ShardSearcher,
    addr: DocAddress,
    index_name: &str,
    id: &str,
    source: Option<&Value>,
    max_analyzed_offset: usize,
    named_scores: bool,
) -> EsResult<Value> {
    let mut out = Map::new();
    for spec in specs {
        let highlighter = spec
            .highlight
            .as_ref()
            .map(|hl| {
                lode_hits::highlight::Highlighter::new(
                    hl,
                    Some(spec.query),
                    ctx,
                    max_analyzed_offset,
                    index_name,
                )
            })
            .transpose()?;
        let nested_ok = ctx
            .mapping
            .objects
            .get(spec.path.as_str())
            .is_some_and(|o| o.nested);
        let planned = if nested_ok {
            lode_query::build_nested_children(&spec.path, spec.query, ctx)?
        } else {
            None
        };
        let mut matched: Vec<(u32, Score, usize)> = Vec::new();
        if let (Some(q), Some(field)) = (planned.as_ref(), s.meta.nested) {
            let seg = s.searcher.segment_reader(addr.segment_ord);
            let parents = lode_query::nested::parent_docs(seg, field, &[])?;
            let range = lode_query::nested::children_of(&parents, addr.doc_id);
            // The block's documents of this path, in order: their rank is the offset.
            let of_path = {
                let mut p = lode_query::nested::path_query(field, &spec.path)
                    .weight(EnableScoring::disabled_from_searcher(&s.searcher))?
                    .scorer(seg, 1.0)?;
                let mut v = Vec::new();
                // A fresh scorer may already stand past `range.start` (seek must not go back).
                let mut d = if p.doc() >= range.start {
                    p.doc()
                } else {
                    p.seek(range.start)
                };
                while d != TERMINATED && d < range.end {
                    v.push(d);
                    d = p.advance();
                }
                v
            };
            let stats = lode_query::FieldStatistics::new(&s.searcher);
            let weight = q.weight(stats.scoring(&s.searcher))?;
            let mut scorer = weight.scorer(seg, 1.0)?;
            let mut d = if range.is_empty() {
                TERMINATED
            } else if scorer.doc() >= range.start {
                scorer.doc()
            } else {
                scorer.seek(range.start)
            };
            while d != TERMINATED && d < range.end {
                if let Ok(offset) = of_path.binary_search(&d) {
                    matched.push((d, scorer.score(), offset));
                }
                d = scorer.advance();
            }
        }
        let mut objects = Vec::new();
        if let Some(src) = source {
            objects_at(src, &spec.path, &mut objects);
        }
        let by_field = spec.sort.iter().any(|k| k.field.is_some());
        let scores_kept =
            !by_field || spec.track_scores || spec.sort.iter().any(|k| k.field.is_none());
        // Each match's sort values (by score only: none).
        let mut keyed: Vec<(Match, Vec<Option<SortVal>>)> = Vec::new();
        for m in matched {
            let mut vals = Vec::new();
            for k in &spec.sort {
                vals.push(match &k.field {
                    None => Some(SortVal::Num(m.1 as f64)),
                    Some(f) => sort_value(ctx, &spec.path, objects.get(m.2).copied(), f, k.asc)?,
                });
            }
            keyed.push((m, vals));
        }
        if spec.sort.is_empty() {
            keyed.sort_by(|a, b| b.0 .1.total_cmp(&a.0 .1).then(a.0 .0.cmp(&b.0 .0)));
        } else {
            keyed.sort_by(|a, b| {
                for (i, k) in spec.sort.iter().enumerate() {
                    let c = match (&a.1[i], &b.1[i]) {
                        (None, None) => std::cmp::Ordering::Equal,
                        (None, Some(_)) if k.missing_first => std::cmp::Ordering::Less,
                        (None, Some(_)) => std::cmp::Ordering::Greater,
                        (Some(_), None) if k.missing_first => std::cmp::Ordering::Greater,
                        (Some(_), None) => std::cmp::Ordering::Less,
                        (Some(x), Some(y)) => {
                            let c = x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal);
                            if k.asc {
                                c
                            } else {
                                c.reverse()
                            }
                        }
                    };
                    if c != std::cmp::Ordering::Equal {
                        return c;
                    }
                }
                a.0 .0.cmp(&b.0 .0)
            });
        }
        let max_score = if scores_kept {
            keyed.iter().map(|m| m.0 .1).reduce(f32::max)
        } else {
            None
        };
        let total = keyed.len();
        let seq_no_version = if spec.version || spec.seq_no_primary_term {
            Some(s.seq_no_version(addr)?)
        } else {
            None
        };
        let page = keyed.iter().skip(spec.from).take(spec.size);
        let matched = named_matches(spec, ctx, s, addr, page.map(|m| m.0 .0))?;
        // `script_fields`: the segment's `doc` and each script's buffers, reused from inner
        // hit to inner hit (all in the parent's segment)
        let mut script_docs: Option<(lode_query::DocColumns, Vec<lode_painless::Scratch>)> = None;
        let hits: Vec<EsResult<Value>> = keyed
            .iter()
            .skip(spec.from)
            .take(spec.size)
            .zip(&matched)
            .map(|(((doc, score, offset), vals), matched)| {
                let (doc, score, offset) = (*doc, *score, *offset);
                let mut h = Map::new();
                h.insert("_index".into(), json!(index_name));
                h.insert("_id".into(), json!(id));
                h.insert(
                    "_nested".into(),
                    json!({"field": spec.path, "offset": offset}),
                );
                if let Some((seq_no, version)) = seq_no_version {
                    if spec.version {
                        h.insert("_version".into(), json!(version));
                    }
                    if spec.seq_no_primary_term {
                        h.insert("_seq_no".into(), json!(seq_no));
                        h.insert(
                            "_primary_term".into(),
                            json!(lode_engine::shard::PRIMARY_TERM),
                        );
                    }
                }
                h.insert(
                    "_score".into(),
                    if scores_kept {
                        json!(score)
                    } else {
                        Value::Null
                    },
                );
                if spec.source.fetch {
                    if let Some(obj) = objects.get(offset) {
                        let wrapped = wrap(&spec.path, (*obj).clone());
                        if let Some(filtered) = spec.source.apply(&wrapped) {
                            h.insert("_source".into(), unwrap(&spec.path, filtered));
                        }
                    }
                }
                let mut fields = Map::new();
                for (pattern, format) in &spec.docvalue_fields {
                    for def in ctx.mapping.matching_fields(pattern) {
                        let nested_doc = DocAddress::new(addr.segment_ord, doc);
                        let vals = lode_hits::docvalues::read(
                            &s.searcher,
                            nested_doc,
                            &def,
                            format.as_deref(),
                        )?;
                        if !vals.is_empty() {
                            fields.insert(def.path.clone(), Value::Array(vals));
                        }
                    }
                }
                if let (false, Some(obj)) = (spec.fields.is_empty(), objects.get(offset)) {
                    let wrapped = wrap(&spec.path, (*obj).clone());
                    for (pattern, format) in &spec.fields {
                        for def in ctx.mapping.matching_fields(pattern) {
                            let vals = lode_hits::docvalues::from_source(
                                &wrapped,
                                &def,
                                format.as_deref(),
                            )?;
                            if !vals.is_empty() {
                                fields.insert(def.path.clone(), Value::Array(vals));
                            }
                        }
                    }
                }
                if let (false, Some(obj)) = (spec.stored_fields.is_empty(), objects.get(offset)) {
                    let wrapped = wrap(&spec.path, (*obj).clone());
                    for pattern in &spec.stored_fields {
                        for def in ctx.mapping.matching_fields(pattern) {
                            if !def.store || fields.contains_key(&def.path) {
                                continue;
                            }
                            let vals = lode_hits::docvalues::from_source(&wrapped, &def, None)?;
                            if !vals.is_empty() {
                                fields.insert(def.path.clone(), Value::Array(vals));
                            }
                        }
                    }
                }
                if !spec.script_fields.is_empty() {
                    let (docs, scratches) = script_docs.get_or_insert_with(|| {
                        let reader = s.searcher.segment_reader(addr.segment_ord);
                        let docs = lode_query::DocColumns::new(
                            reader,
                            lode_query::script::fields_of(ctx.mapping),
                        )
                        .with_runtime(ctx.runtime.clone());
                        let scratches = spec
                            .script_fields
                            .iter()
                            .map(|_| lode_painless::Scratch::default())
                            .collect();
                        (docs, scratches)
                    });
                    docs.doc = doc;
                    for ((name, script, ignore_failure), sc) in
                        spec.script_fields.iter().zip(scratches.iter_mut())
                    {
                        match script.value_in(sc, docs, f64::from(score)) {
                            Ok(Value::Array(a)) => {
                                fields.insert(name.clone(), Value::Array(a));
                            }
                            Ok(v) => {
                                fields.insert(name.clone(), json!([v]));
                            }
                            Err(_) if *ignore_failure => {}
                            Err(e) => return Err(super::search_phase_error(e)),
                        }
                    }
                }
                if !fields.is_empty() {
                    h.insert("fields".into(), Value::Object(fields));
                }
                if let (true, Some(q)) = (spec.explain, planned.as_ref()) {
                    let stats = lode_query::FieldStatistics::new(&s.searcher);
                    let e = q
                        .weight(stats.scoring(&s.searcher))?
                        .explain(s.searcher.segment_reader(addr.segment_ord), doc)?;
                    let e =
                        serde_json::to_value(e).map_err(|e| EsError::internal(e.to_string()))?;
                    h.insert("_explanation".into(), super::es_explanation(e));
                }
                if let (Some(hl), Some(obj)) = (&highlighter, objects.get(offset)) {
                    let wrapped = wrap(&spec.path, (*obj).clone());
                    if let Some(v) = hl.highlight(&wrapped, id)? {
                        h.insert("highlight".into(), v);
                    }
                }
                if let Some(m) = lode_hits::matched::render(matched, named_scores) {
                    h.insert("matched_queries".into(), m);
                }
                if !spec.sort.is_empty() {
                    h.insert(
                        "sort".into(),
                        Value::Array(
                            vals.iter()
                                .zip(&spec.sort)
                                .map(|(v, k)| match (v, &k.field) {
                                    // A score sorts as the float it is.
                                    (_, None) => lode_engine::float::float_value(score),
                                    (Some(v), _) => v.json(),
                                    (None, Some(f)) => missing_sort_value(ctx, f, k),
                                })
                                .collect(),
                        ),
                    );
                }
                Ok(Value::Object(h))
            })
            .collect();
        let hits = hits.into_iter().collect::<EsResult<Vec<Value>>>()?;
        out.insert(
            spec.name.clone(),
            json!({"hits": {
                "total": {"value": total, "relation": "eq"},
                "max_score": max_score,
                "hits": hits,
            }}),
        );
    }
    Ok(Value::Object(out))
}

/// The `matched_queries` of the inner hits on `docs` (nested documents of `addr`'s segment):
/// the `nested` query's own named queries, each planned on the path's documents as the
/// inner query is.
fn named_matches(
    spec: &InnerHitsSpec,
    ctx: &QueryContext,
    s: &ShardSearcher,
    addr: DocAddress,
    docs: impl Iterator<Item = u32>,
) -> EsResult<Vec<lode_hits::matched::Matches>> {
    let docs: Vec<u32> = docs.collect();
    if spec.named.is_empty() {
        return Ok(vec![Vec::new(); docs.len()]);
    }
    let mut out = vec![Vec::new(); docs.len()];
    let seg = s.searcher.segment_reader(addr.segment_ord);
    for nq in spec.named {
        let Some(q) = lode_query::build_nested_children(&spec.path, &nq.query, ctx)? else {
            continue;
        };
        let one = lode_hits::matched::Planned::from_planned(vec![(nq.name.clone(), q)]);
        for (o, m) in out
            .iter_mut()
            .zip(one.weights(&s.searcher)?.matches(seg, &docs)?)
        {
            o.extend(m);
        }
    }
    Ok(out)
}

/// The sort value ES renders for an object without one: the extreme of the column's type
/// on the side it sorts to (`"Infinity"` for floating-point fields), `null` for keywords.
fn missing_sort_value(ctx: &QueryContext, field: &str, k: &SortKey) -> Value {
    use lode_engine::mapping::Storage;
    let low = k.missing_first == k.asc;
    match ctx.mapping.fields.get(field).map(|d| d.storage()) {
        Some(Storage::Keyword) | None => Value::Null,
        Some(Storage::F64) => json!(if low { "-Infinity" } else { "Infinity" }),
        Some(_) => json!(if low { i64::MIN } else { i64::MAX }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_inner_hits_are_declared() {
        let q = Query::MatchAll { boost: 1.0 };
        let s = parse(
            "users",
            &q,
            &json!({"name": "n", "size": 2, "version": true}),
        )
        .unwrap();
        assert_eq!((s.name.as_str(), s.size, s.version), ("n", 2, true));
        assert!(std::ptr::eq(s.query, &q));
        let e = parse("users", &q, &json!({"sizee": 1})).err().unwrap();
        assert_eq!(e.kind, "x_content_parse_exception");
        assert_eq!(
            e.reason,
            "[inner_hits] unknown field [sizee] did you mean [size]?"
        );
        let e = parse("users", &q, &json!({"collapse": {"field": "a"}}))
            .err()
            .unwrap();
        assert_eq!(e.reason, "[inner_hits] [collapse] is not supported by Lode");
    }
}
