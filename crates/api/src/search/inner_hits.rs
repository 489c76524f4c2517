//! `inner_hits` of `nested` queries: per search hit, the nested objects of the query's path
//! that its inner query matches, read from the hit's block (the documents between the
//! previous root and the hit), scored by the inner query, with `_nested: {field, offset}` and
//! the object's `_source` as Elasticsearch renders them.

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
            ..
        } => {
            if let Some(spec) = inner_hits {
                if in_nested {
                    return Err(refuse("of a [nested] query inside another [nested] query"));
                }
                out.push(parse(path, query, spec)?);
            }
            walk(query, true, out)?;
        }
        _ => {}
    }
    Ok(())
}

fn parse<'q>(path: &str, query: &'q Query, spec: &Value) -> EsResult<InnerHitsSpec<'q>> {
    let mut s = InnerHitsSpec {
        name: path.to_string(),
        path: path.to_string(),
        query,
        from: 0,
        size: 3,
        source: SourceFilter::all(),
    };
    for (k, v) in spec.as_object().into_iter().flatten() {
        match k.as_str() {
            "name" => {
                s.name = v
                    .as_str()
                    .ok_or_else(|| EsError::parsing("[inner_hits] failed to parse field [name]"))?
                    .to_string()
            }
            "from" => s.from = count(v, k)?,
            "size" => s.size = count(v, k)?,
            "_source" => s.source = SourceFilter::from_json(Some(v)),
            "ignore_unmapped" => {}
            other => return Err(refuse(&format!("[{other}]"))),
        }
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
pub(super) fn render(
    specs: &[InnerHitsSpec],
    ctx: &QueryContext,
    s: &ShardSearcher,
    addr: DocAddress,
    index_name: &str,
    id: &str,
    source: Option<&Value>,
) -> EsResult<Value> {
    let mut out = Map::new();
    for spec in specs {
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
        if let (Some(q), Some(field)) = (planned, s.meta.nested) {
            let seg = s.searcher.segment_reader(addr.segment_ord);
            let parents = lode_query::nested::parent_docs(seg, field, &[])?;
            let range = lode_query::nested::children_of(&parents, addr.doc_id);
            // The block's documents of this path, in order: their rank is the offset.
            let of_path = {
                let mut p = lode_query::nested::path_query(field, &spec.path)
                    .weight(EnableScoring::disabled_from_searcher(&s.searcher))?
                    .scorer(seg, 1.0)?;
                let mut v = Vec::new();
                let mut d = p.seek(range.start);
                while d != TERMINATED && d < range.end {
                    v.push(d);
                    d = p.advance();
                }
                v
            };
            let weight = q.weight(EnableScoring::enabled_from_searcher(&s.searcher))?;
            let mut scorer = weight.scorer(seg, 1.0)?;
            let mut d = if range.is_empty() {
                TERMINATED
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
        matched.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let max_score = matched.iter().map(|m| m.1).reduce(f32::max);
        let mut objects = Vec::new();
        if let Some(src) = source {
            objects_at(src, &spec.path, &mut objects);
        }
        let hits: Vec<Value> = matched
            .iter()
            .skip(spec.from)
            .take(spec.size)
            .map(|&(_, score, offset)| {
                let mut h = Map::new();
                h.insert("_index".into(), json!(index_name));
                h.insert("_id".into(), json!(id));
                h.insert(
                    "_nested".into(),
                    json!({"field": spec.path, "offset": offset}),
                );
                h.insert("_score".into(), json!(score));
                if spec.source.fetch {
                    if let Some(obj) = objects.get(offset) {
                        let wrapped = wrap(&spec.path, (*obj).clone());
                        if let Some(filtered) = spec.source.apply(&wrapped) {
                            h.insert("_source".into(), unwrap(&spec.path, filtered));
                        }
                    }
                }
                Value::Object(h)
            })
            .collect();
        out.insert(
            spec.name.clone(),
            json!({"hits": {
                "total": {"value": matched.len(), "relation": "eq"},
                "max_score": max_score,
                "hits": hits,
            }}),
        );
    }
    Ok(Value::Object(out))
}
