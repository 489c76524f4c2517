//! `top_hits`: tantivy's version returns fast-field values only, so the hits of each bucket are
//! found by re-running the search restricted to the bucket (the search query AND the bucket's
//! constraints), sorted and paged, and fetched from the doc store like search hits.

use super::exec::{Exec, PlannedTarget};
use super::plan::SourceSpec;
use super::render::{Constraint, LevelKind, Scope};
use super::request::TopHitsReq;
use lode_engine::mapping::Storage;
use lode_engine::{EsError, EsResult};
use lode_hits::sort::{cmp_rows, parse_sort, FieldSortCollector, SortKey, SortKind, SortedHit};
use lode_hits::source::{objects_at, unwrap, wrap};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::ops::Bound;
use tantivy::aggregation::Key;
use tantivy::collector::Count;
use tantivy::query::{
    AllQuery, BooleanQuery, ConstScoreQuery, EmptyQuery, ExistsQuery, Occur, Query, RangeQuery,
    TermQuery,
};
use tantivy::schema::IndexRecordOption;
use tantivy::Term;

struct Hit {
    target: usize,
    shard: usize,
    hit: SortedHit,
}

fn score_keys() -> Vec<SortKey> {
    vec![SortKey {
        kind: SortKind::Score,
        desc: true,
        missing_first: false,
        missing_value: None,
        mode: None,
        nested: None,
    }]
}

/// A bucket's top documents under `collector`'s sort, and (when `count`) how many documents
/// the bucket holds. A sort led by a field walks its points as the search's sorted pages do
/// (`lode_hits::walk`): the newest three of a bucket of 400,000 are found near the end of the
/// field's points, not by comparing every document of the bucket.
fn bucket_top(
    searcher: &tantivy::Searcher,
    query: &dyn tantivy::query::Query,
    collector: FieldSortCollector,
    count: bool,
) -> EsResult<(usize, Vec<SortedHit>)> {
    let stats = lode_query::FieldStatistics::new(searcher);
    match lode_hits::walk::top_hits(searcher, &stats, query, &collector, None).map_err(internal)? {
        Some(found) => {
            // Counted by the query's own count: a term's postings, not a collector's pass.
            let n = if count {
                query.count(searcher).map_err(internal)?
            } else {
                0
            };
            Ok((n, found))
        }
        None if count => stats
            .search(searcher, query, &(Count, collector))
            .map_err(internal),
        None => Ok((
            0,
            stats
                .search(searcher, query, &collector)
                .map_err(internal)?,
        )),
    }
}

pub(crate) fn render(exec: &Exec, req: &TopHitsReq, scope: &Scope) -> EsResult<Value> {
    let want = req.from + req.size;
    let mut total = 0u64;
    let mut hits: Vec<Hit> = Vec::new();
    let mut keys_out: Option<Vec<SortKey>> = None;
    for (ti, pt) in exec.targets.iter().enumerate() {
        let query = bucket_query(pt, scope)?;
        // The search's own sort machinery: every key, `missing`, `mode` and `unmapped_type`.
        let keys = match &req.sort {
            Some(v) => parse_sort(
                v,
                pt.target.ctx.mapping,
                &pt.target.ctx.script_errors,
                &pt.target.ctx.runtime,
                Some(pt.target.ctx),
            )?,
            None => score_keys(),
        };
        for (i, shard) in pt.target.shards.iter().enumerate() {
            let collector = FieldSortCollector {
                keys: keys.clone(),
                limit: want,
                after: None,
                shard_id: shard.shard_id,
                track_scores: req.track_scores,
            };
            let (count, found) = bucket_top(&shard.searcher, &*query, collector, true)?;
            total += count as u64;
            hits.extend(found.into_iter().map(|hit| Hit {
                target: ti,
                shard: i,
                hit,
            }));
        }
        keys_out.get_or_insert(keys);
    }
    let keys = keys_out.unwrap_or_else(score_keys);
    hits.sort_by(|a, b| {
        cmp_rows(&a.hit.values, &b.hit.values, &keys)
            .then(a.target.cmp(&b.target))
            .then(a.shard.cmp(&b.shard))
            .then(a.hit.addr.cmp(&b.hit.addr))
    });
    let by_score_only = req.sort.is_none() || (keys.len() == 1 && keys[0].kind == SortKind::Score);
    let scored = by_score_only || req.track_scores;
    let max_score = if scored {
        hits.iter()
            .map(|h| h.hit.score)
            .fold(None, |m: Option<f32>, s| Some(m.map_or(s, |m| m.max(s))))
    } else {
        None
    };
    let mut out = Vec::new();
    let page: Vec<Hit> = hits.into_iter().skip(req.from).take(req.size).collect();
    let matched = matched_queries(exec, &page)?;
    for (h, matched) in page.into_iter().zip(matched) {
        let target = exec.targets[h.target].target;
        let shard = &target.shards[h.shard];
        // A nested object is rendered as ES's nested hit: its root's `_id`, the `_nested`
        // identity and the object's own `_source`.
        let nested = match (scope.path(), shard.meta.nested) {
            (Some(path), Some(field)) => {
                let chain = nested_chain(target.ctx.mapping, path);
                let seg = shard.searcher.segment_reader(h.hit.addr.segment_ord);
                let (root, offsets) =
                    lode_query::nested::nested_identity(seg, field, &chain, h.hit.addr.doc_id)
                        .map_err(internal)?;
                Some((chain, root, offsets))
            }
            _ => None,
        };
        let root_addr = match &nested {
            Some((_, root, _)) => tantivy::DocAddress::new(h.hit.addr.segment_ord, *root),
            None => h.hit.addr,
        };
        let doc = shard
            .stored(root_addr)
            .map_err(|e| tantivy::TantivyError::InternalError(e.reason))?;
        let id = doc.id.clone().unwrap_or_default();
        let mut o = Map::new();
        o.insert("_index".into(), json!(target.index_name));
        o.insert("_id".into(), json!(id));
        if let Some((chain, _, offsets)) = &nested {
            o.insert("_nested".into(), nested_identity_json(chain, offsets));
        }
        let (seq_no, version) = if req.version || req.seq_no_primary_term {
            shard.seq_no_version(root_addr).map_err(|e| {
                tantivy::TantivyError::InternalError(format!("versions: {}", e.reason))
            })?
        } else {
            (0, 1)
        };
        if req.version {
            o.insert("_version".into(), json!(version));
        }
        if req.seq_no_primary_term {
            o.insert("_seq_no".into(), json!(seq_no));
            o.insert(
                "_primary_term".into(),
                json!(lode_engine::shard::PRIMARY_TERM),
            );
        }
        o.insert(
            "_score".into(),
            if scored {
                lode_engine::float::float_value(h.hit.score)
            } else {
                Value::Null
            },
        );
        if req.source.fetch {
            let source: Value = serde_json::from_slice(doc.source_bytes()).unwrap_or(Value::Null);
            // field-level security: the hidden fields are not in `_source`
            let source = match &target.ctx.mapping.source_filter {
                Some(p) => p.filter_source(&source),
                None => source,
            };
            match &nested {
                None => {
                    if let Some(filtered) = req.source.apply(&source) {
                        o.insert("_source".into(), filtered);
                    }
                }
                Some((chain, _, offsets)) => {
                    if let Some(obj) = nested_object(&source, chain, offsets) {
                        // Filtered under its full path, as `inner_hits` filters.
                        let path = chain.last().map_or("", String::as_str);
                        let wrapped = wrap(path, obj);
                        if let Some(filtered) = req.source.apply(&wrapped) {
                            o.insert("_source".into(), unwrap(path, filtered));
                        }
                    }
                }
            }
        }
        if !by_score_only {
            let values: Vec<Value> = h
                .hit
                .values
                .iter()
                .zip(&keys)
                .map(|(v, k)| v.to_json(k))
                .collect();
            o.insert("sort".into(), Value::Array(values));
        }
        if let Some(m) = lode_hits::matched::render(&matched, target.named_scores) {
            o.insert("matched_queries".into(), m);
        }
        out.push(Value::Object(o));
    }
    Ok(json!({
        "total": {"value": total, "relation": "eq"},
        "max_score": max_score.map(lode_engine::float::float_value).unwrap_or(Value::Null),
        "hits": out,
    }))
}

/// The search's named queries each hit of the page matches, as the search's own hits (a
/// nested object is checked itself, as ES checks a top hit's document).
fn matched_queries(exec: &Exec, page: &[Hit]) -> EsResult<Vec<lode_hits::matched::Matches>> {
    let mut out = Vec::with_capacity(page.len());
    let mut planned: HashMap<usize, lode_hits::matched::Planned> = HashMap::new();
    for h in page {
        let target = exec.targets[h.target].target;
        if target.named.is_empty() {
            out.push(Vec::new());
            continue;
        }
        let p = match planned.entry(h.target) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(lode_hits::matched::Planned::new(target.named, target.ctx)?)
            }
        };
        let searcher = &target.shards[h.shard].searcher;
        let seg = searcher.segment_reader(h.hit.addr.segment_ord);
        let mut m = p.weights(searcher)?.matches(seg, &[h.hit.addr.doc_id])?;
        out.push(m.pop().unwrap_or_default());
    }
    Ok(out)
}

/// `path` and its enclosing nested paths, outermost first (the levels of a nested hit).
fn nested_chain(mapping: &lode_engine::mapping::Mapping, path: &str) -> Vec<String> {
    let mut chain = Vec::new();
    let mut end = 0;
    for part in path.split('.') {
        end += if end == 0 { part.len() } else { part.len() + 1 };
        let prefix = &path[..end];
        if mapping.objects.get(prefix).is_some_and(|o| o.nested) {
            chain.push(prefix.to_string());
        }
    }
    if chain.last().map(String::as_str) != Some(path) {
        chain.push(path.to_string());
    }
    chain
}

/// ES's `_nested`: `{field, offset}` per level, the inner level under `_nested`, each
/// field relative to its parent level.
fn nested_identity_json(chain: &[String], offsets: &[usize]) -> Value {
    let mut out: Option<Value> = None;
    for k in (0..chain.len()).rev() {
        let field = match k {
            0 => chain[0].as_str(),
            _ => chain[k]
                .strip_prefix(chain[k - 1].as_str())
                .and_then(|r| r.strip_prefix('.'))
                .unwrap_or(&chain[k]),
        };
        let mut o = Map::new();
        o.insert("field".into(), json!(field));
        o.insert("offset".into(), json!(offsets[k]));
        if let Some(inner) = out.take() {
            o.insert("_nested".into(), inner);
        }
        out = Some(Value::Object(o));
    }
    out.unwrap_or(Value::Null)
}

/// The object a nested hit stands for in its root's `_source`.
fn nested_object(source: &Value, chain: &[String], offsets: &[usize]) -> Option<Value> {
    let mut cur = source;
    let mut prefix = "";
    for (path, &offset) in chain.iter().zip(offsets) {
        let rel = match prefix {
            "" => path.as_str(),
            p => path.strip_prefix(p)?.strip_prefix('.')?,
        };
        let mut objects = Vec::new();
        objects_at(cur, rel, &mut objects);
        cur = objects.get(offset)?;
        prefix = path;
    }
    Some(cur.clone())
}

fn internal(e: tantivy::TantivyError) -> EsError {
    EsError::internal(format!("top_hits failure: {e}"))
}

/// The documents of the bucket `scope`, AND every bucket constraint (not contributing to
/// the score) on the documents of its level: the search query (every root inside
/// `global`), or for a level entered by `nested` / `reverse_nested` the outer bucket's
/// documents mapped over the block-join layout (children precede their parent; an object's
/// parent is the next document of the enclosing level): `nested` takes the objects of its
/// path under them, `reverse_nested` the documents of its level holding them.
///
/// Under a `match_all` level the bucket is its constraints alone, the first scoring 1 as
/// `match_all` does: intersected with an all-documents clause, a term bucket would lose its
/// term's own count and iteration (and the sorted walk's cheap checks).
pub(crate) fn bucket_query(pt: &PlannedTarget, scope: &Scope) -> EsResult<Box<dyn Query>> {
    let level = level_query(pt, scope)?;
    let all = lode_query::planned_match_all(&*level) && !scope.constraints.is_empty();
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    if !all {
        clauses.push((Occur::Must, level.box_clone()));
    }
    for c in &scope.constraints {
        let q = constraint_query(pt, c)?;
        let score = if all && clauses.is_empty() { 1.0 } else { 0.0 };
        clauses.push((Occur::Must, Box::new(ConstScoreQuery::new(q, score))));
    }
    if all {
        let q: Box<dyn Query> = match clauses.len() {
            1 => clauses.pop().expect("one clause").1,
            _ => Box::new(BooleanQuery::new(clauses)),
        };
        return Ok(lode_query::watched_like(&*level, q));
    }
    if clauses.len() == 1 {
        return Ok(clauses.pop().expect("one clause").1);
    }
    Ok(Box::new(BooleanQuery::new(clauses)))
}

fn level_query(pt: &PlannedTarget, scope: &Scope) -> EsResult<Box<dyn Query>> {
    let Some(level) = scope.level.as_deref() else {
        return Ok(if scope.global {
            lode_query::nested::non_nested(Box::new(AllQuery), pt.target.ctx.meta.nested)
        } else {
            pt.target.query.box_clone()
        });
    };
    let Some(field) = pt.target.ctx.meta.nested else {
        // This index has no nested mappings: no nested documents.
        return Ok(Box::new(EmptyQuery));
    };
    // Each index resolves the paths against its own mapping (unmapped: no documents).
    let nested_here = |p: &str| {
        pt.target
            .ctx
            .mapping
            .objects
            .get(p)
            .is_some_and(|o| o.nested)
    };
    Ok(match &level.kind {
        LevelKind::Nested(Some(path)) if nested_here(path) => {
            Box::new(lode_query::nested::ToChildQuery::new(
                bucket_query(pt, &level.outer)?,
                field,
                level.outer.path(),
                path,
            ))
        }
        LevelKind::Reverse(path) if path.as_deref().is_none_or(nested_here) => {
            Box::new(lode_query::nested::ToParentQuery::new(
                bucket_query(pt, &level.outer)?,
                field,
                path.iter().cloned().collect(),
                lode_query::nested::ScoreMode::Max,
            ))
        }
        _ => Box::new(EmptyQuery),
    })
}

pub(crate) fn constraint_query(pt: &PlannedTarget, c: &Constraint) -> EsResult<Box<dyn Query>> {
    let schema = pt.target.ctx.schema;
    Ok(match c {
        Constraint::Filter { source, bucket } => {
            if let Some(SourceSpec::Sample { .. }) = pt.plan.sources.get(*source) {
                return Err(EsError::illegal_argument(
                    "aggregations that re-query their bucket (top_hits, top_metrics, percentiles, ...) under [sampler] are not supported by Lode",
                ));
            }
            let Some(SourceSpec::Filters { queries, .. }) = pt.plan.sources.get(*source) else {
                return Err(EsError::internal("unknown filter source"));
            };
            match queries.get(*bucket) {
                Some(q) => q.box_clone(),
                None => {
                    let mut clauses: Vec<(Occur, Box<dyn Query>)> =
                        vec![(Occur::Must, Box::new(AllQuery))];
                    clauses.extend(queries.iter().map(|q| (Occur::MustNot, q.box_clone())));
                    Box::new(BooleanQuery::new(clauses))
                }
            }
        }
        Constraint::Sample(q) => Box::new((**q).clone()),
        Constraint::GeoCell { source, cell } => {
            let Some(SourceSpec::GeoCells { field, grid }) = pt.plan.sources.get(*source) else {
                return Err(EsError::internal("unknown geo grid source"));
            };
            Box::new(crate::geogrid::CellQuery {
                field: field.clone(),
                grid: grid.clone(),
                cell: *cell,
            })
        }
        Constraint::CompositeKey { source, key } => {
            let Some(SourceSpec::CompositeKeys(spec)) = pt.plan.sources.get(*source) else {
                return Err(EsError::internal("unknown composite source"));
            };
            let ctx = pt.target.ctx;
            Box::new(crate::composite::CompositeKeyQuery {
                spec: spec.clone(),
                key: key.clone(),
                fields: lode_query::script::fields_of(ctx.mapping),
                runtime: ctx.runtime.clone(),
            })
        }
        // A runtime field's term: the DSL's `term` on it, evaluated per document.
        Constraint::Term {
            field,
            key,
            missing,
        } if super::plan::parse_runtime_source(&field.name).is_some() => {
            let (name, _) = super::plan::parse_runtime_source(&field.name).expect("runtime");
            let value = match (key, field.storage()) {
                (Key::Str(s), _) => json!(s),
                (k, Some(Storage::Bool)) => json!(super::render::key_f64(k) != 0.0),
                (Key::F64(x), _) => json!(x),
                (Key::I64(x), _) => json!(x),
                (Key::U64(x), _) => json!(x),
            };
            let mut term = Map::new();
            term.insert(name.to_string(), value);
            let mut dsl = json!({ "term": term });
            if *missing {
                dsl = json!({"bool": {"should": [
                    dsl,
                    {"bool": {"must_not": {"exists": {"field": name}}}},
                ]}});
            }
            let q = super::dsl::parse_dsl(&dsl)?;
            super::dsl::build_dsl(&q, pt.target.ctx)?
        }
        Constraint::Term {
            field,
            key,
            missing: true,
        } => {
            // The documents with the term, and those without a value (the bucket of the
            // aggregation's `missing` value).
            let with_term = constraint_query(
                pt,
                &Constraint::Term {
                    field: field.clone(),
                    key: key.clone(),
                    missing: false,
                },
            )?;
            let without: Box<dyn Query> = match schema.get_field(&field.name) {
                Ok(_) => Box::new(BooleanQuery::new(vec![
                    (Occur::Must, Box::new(AllQuery) as Box<dyn Query>),
                    (
                        Occur::MustNot,
                        Box::new(ExistsQuery::new(field.name.clone(), false)),
                    ),
                ])),
                // An unmapped field: every document has the `missing` value.
                Err(_) if field.def.is_none() => Box::new(AllQuery),
                Err(_) => Box::new(EmptyQuery),
            };
            Box::new(BooleanQuery::new(vec![
                (Occur::Should, with_term),
                (Occur::Should, without),
            ]))
        }
        Constraint::Term {
            field,
            key,
            missing: false,
        } => {
            let Ok(f) = schema.get_field(&field.name) else {
                return Ok(Box::new(EmptyQuery));
            };
            let term = match (field.storage(), key) {
                (Some(Storage::Keyword | Storage::Text), Key::Str(s)) => {
                    Term::from_field_text(f, s)
                }
                (Some(Storage::Ip), Key::Str(s)) => match s.parse::<std::net::IpAddr>() {
                    Ok(ip) => Term::from_field_ip_addr(f, lode_engine::document::to_v6(ip)),
                    Err(_) => return Ok(Box::new(EmptyQuery)),
                },
                (Some(Storage::I64), k) => {
                    let v = super::render::key_f64(k) as i64;
                    let t = Term::from_field_i64(f, v);
                    return Ok(Box::new(RangeQuery::new(
                        Bound::Included(t.clone()),
                        Bound::Included(t),
                    )));
                }
                (Some(Storage::F64), k) => {
                    let t = Term::from_field_f64(f, super::render::key_f64(k));
                    return Ok(Box::new(RangeQuery::new(
                        Bound::Included(t.clone()),
                        Bound::Included(t),
                    )));
                }
                (Some(Storage::Bool), k) => {
                    Term::from_field_bool(f, super::render::key_f64(k) != 0.0)
                }
                _ => return Ok(Box::new(EmptyQuery)),
            };
            Box::new(TermQuery::new(term, IndexRecordOption::Basic))
        }
        // A runtime field (or an aggregation script) has no indexed values: its range is
        // the DSL's `range` on it, evaluated per document, and the `missing` value's bucket
        // adds the documents where it has no value.
        Constraint::Range {
            field,
            from,
            to,
            missing,
        } if super::plan::parse_runtime_source(&field.name).is_some() => {
            let (name, _) = super::plan::parse_runtime_source(&field.name).expect("runtime");
            // Integer values (longs, dates): `[from, to)` holds the integers from
            // `ceil(from)` below `ceil(to)`, as for a mapped field.
            let bound = |x: f64| match field.storage() {
                Some(Storage::I64) => json!(x.ceil() as i64),
                _ => json!(x),
            };
            let mut bounds = Map::new();
            if let Some(f) = from {
                bounds.insert("gte".into(), bound(*f));
            }
            if let Some(t) = to {
                bounds.insert("lt".into(), bound(*t));
            }
            let mut range = Map::new();
            range.insert(name.to_string(), Value::Object(bounds));
            let mut dsl = json!({ "range": range });
            if missing.is_some() {
                dsl = json!({"bool": {"should": [
                    dsl,
                    {"bool": {"must_not": {"exists": {"field": name}}}},
                ]}});
            }
            let q = super::dsl::parse_dsl(&dsl)?;
            super::dsl::build_dsl(&q, pt.target.ctx)?
        }
        Constraint::Range {
            field,
            from,
            to,
            missing: Some(_),
        } => {
            // The documents in the range, and those without a value (the bucket of the
            // aggregation's `missing` value).
            let in_range = constraint_query(
                pt,
                &Constraint::Range {
                    field: field.clone(),
                    from: *from,
                    to: *to,
                    missing: None,
                },
            )?;
            let without: Box<dyn Query> = match schema.get_field(&field.name) {
                Ok(_) => Box::new(BooleanQuery::new(vec![
                    (Occur::Must, Box::new(AllQuery) as Box<dyn Query>),
                    (
                        Occur::MustNot,
                        Box::new(ExistsQuery::new(field.name.clone(), false)),
                    ),
                ])),
                // An unmapped field: every document has the `missing` value.
                Err(_) if field.def.is_none() => Box::new(AllQuery),
                // A runtime field has no indexed values to test (as its range above).
                Err(_) => Box::new(EmptyQuery),
            };
            Box::new(BooleanQuery::new(vec![
                (Occur::Should, in_range),
                (Occur::Should, without),
            ]))
        }
        Constraint::Range {
            field,
            from,
            to,
            missing: None,
        } => {
            let Ok(f) = schema.get_field(&field.name) else {
                return Ok(Box::new(EmptyQuery));
            };
            if let Some(lode_engine::mapping::FieldType::Range(kind)) =
                field.def.as_ref().map(|d| d.ty)
            {
                return Ok(range_field_bucket(&field.name, kind, *from, *to));
            }
            let (lo, hi) = match field.storage() {
                Some(Storage::I64) => (
                    from.map(|x| Bound::Included(Term::from_field_i64(f, x.ceil() as i64)))
                        .unwrap_or(Bound::Unbounded),
                    to.map(|x| Bound::Excluded(Term::from_field_i64(f, x.ceil() as i64)))
                        .unwrap_or(Bound::Unbounded),
                ),
                Some(Storage::F64) => (
                    from.map(|x| Bound::Included(Term::from_field_f64(f, x)))
                        .unwrap_or(Bound::Unbounded),
                    to.map(|x| Bound::Excluded(Term::from_field_f64(f, x)))
                        .unwrap_or(Bound::Unbounded),
                ),
                _ => return Ok(Box::new(EmptyQuery)),
            };
            if matches!((&lo, &hi), (Bound::Unbounded, Bound::Unbounded)) {
                return Ok(Box::new(AllQuery));
            }
            Box::new(RangeQuery::new(lo, hi))
        }
    })
}

/// `top_metrics`: the bucket's documents that have a sort value, first `size` in the sort
/// order (as Elasticsearch's `BucketedSort` skips documents without one), each as its sort
/// value and each metric field's value ([`metric_value`]).
pub(crate) fn render_top_metrics(
    exec: &Exec,
    req: &crate::request::TopMetricsReq,
    scope: &Scope,
) -> EsResult<Value> {
    let mut hits: Vec<Hit> = Vec::new();
    let mut keys_out: Option<Vec<SortKey>> = None;
    for (ti, pt) in exec.targets.iter().enumerate() {
        let query = bucket_query(pt, scope)?;
        let keys = parse_sort(
            &req.sort,
            pt.target.ctx.mapping,
            &pt.target.ctx.script_errors,
            &pt.target.ctx.runtime,
            Some(pt.target.ctx),
        )?;
        for (i, shard) in pt.target.shards.iter().enumerate() {
            let collector = FieldSortCollector {
                keys: keys.clone(),
                limit: req.size,
                after: None,
                shard_id: shard.shard_id,
                track_scores: false,
            };
            let (_, found) = bucket_top(&shard.searcher, &*query, collector, false)?;
            hits.extend(
                found
                    .into_iter()
                    .filter(|h| {
                        !h.values
                            .iter()
                            .any(|v| matches!(v, lode_hits::sort::SortValue::Missing))
                    })
                    .map(|hit| Hit {
                        target: ti,
                        shard: i,
                        hit,
                    }),
            );
        }
        keys_out.get_or_insert(keys);
    }
    let Some(keys) = keys_out else {
        return Ok(json!([]));
    };
    hits.sort_by(|a, b| {
        cmp_rows(&a.hit.values, &b.hit.values, &keys)
            .then(a.target.cmp(&b.target))
            .then(a.shard.cmp(&b.shard))
            .then(a.hit.addr.cmp(&b.hit.addr))
    });
    let mut out = Vec::new();
    for h in hits.into_iter().take(req.size) {
        let pt = &exec.targets[h.target];
        let shard = &pt.target.shards[h.shard];
        let segment = shard.searcher.segment_reader(h.hit.addr.segment_ord);
        let doc = h.hit.addr.doc_id;
        let mut metrics = Map::new();
        for name in &req.metrics {
            let field = super::plan::metric_field(pt.target.ctx, name)?;
            let value = match super::exec::runtime_provider_in(pt.target.ctx, &field.name) {
                Some(rt) => runtime_metric_value(segment, &rt, &field, doc),
                None => metric_value(segment, &field, doc)?,
            };
            metrics.insert(name.clone(), value);
        }
        let sort: Vec<Value> = h
            .hit
            .values
            .iter()
            .zip(&keys)
            .map(|(v, k)| match (v, &k.kind) {
                (lode_hits::sort::SortValue::F64(x), _) => json!(x),
                (_, SortKind::Score) => lode_engine::float::float_value(h.hit.score),
                _ => v.to_json(k),
            })
            .collect();
        out.push(json!({"sort": sort, "metrics": metrics}));
    }
    Ok(Value::Array(out))
}

/// A runtime field's value in `doc`, as [`metric_value`] reads a column's (numbers averaged).
fn runtime_metric_value(
    segment: &tantivy::SegmentReader,
    rt: &super::sources::RuntimeProvider,
    field: &super::plan::FieldRef,
    doc: tantivy::DocId,
) -> Value {
    let mut docs =
        lode_query::DocColumns::new(segment, rt.fields.clone()).with_runtime(rt.runtime.clone());
    docs.doc = doc;
    let values = rt.field.values_or_record(&mut docs, &rt.errors);
    let Some(def) = &field.def else {
        return values.into_iter().next().unwrap_or(Value::Null);
    };
    match def.storage() {
        Storage::I64 => match avg_i64(values.iter().filter_map(Value::as_i64)) {
            Some(ms) if def.ty.is_date() => {
                json!(def.date_format.format_millis(ms, &lode_dates::Tz::utc()))
            }
            Some(v) => json!(v),
            None => Value::Null,
        },
        Storage::F64 => avg_f64(values.iter().filter_map(Value::as_f64).collect())
            .map_or(Value::Null, |v| json!(v)),
        _ => values.into_iter().next().unwrap_or(Value::Null),
    }
}

/// The value of `field` in `doc`, as ES 8's `TopMetricsAggregator` loads it: a number is the
/// average of the document's values (`MultiValueMode.AVG`; dates formatted with the field's
/// format), a keyword its smallest value (the first ordinal), `null` when it has none.
fn metric_value(
    segment: &tantivy::SegmentReader,
    field: &super::plan::FieldRef,
    doc: tantivy::DocId,
) -> EsResult<Value> {
    let fast = segment.fast_fields();
    let Some(def) = &field.def else {
        return Ok(Value::Null);
    };
    Ok(match def.storage() {
        Storage::I64 => {
            let Some(col) = fast.column_opt::<i64>(&field.name).map_err(internal)? else {
                return Ok(Value::Null);
            };
            match avg_i64(col.values_for_doc(doc)) {
                Some(v) if def.ty.is_date() => {
                    json!(def.date_format.format_millis(v, &lode_dates::Tz::utc()))
                }
                Some(v) => json!(v),
                None => Value::Null,
            }
        }
        Storage::F64 => {
            let Some(col) = fast.column_opt::<f64>(&field.name).map_err(internal)? else {
                return Ok(Value::Null);
            };
            avg_f64(col.values_for_doc(doc).collect()).map_or(Value::Null, |v| json!(v))
        }
        Storage::Keyword => {
            let Some(col) = fast.str(&field.name).map_err(internal)? else {
                return Ok(Value::Null);
            };
            // A sorted set's first value is its smallest (segments written before keyword
            // columns were sets hold a document's values in indexing order).
            let first = col.term_ords(doc).min();
            match first {
                Some(ord) => {
                    let mut s = String::new();
                    col.ord_to_str(ord, &mut s)
                        .map_err(|e| EsError::internal(format!("top_metrics failure: {e}")))?;
                    json!(s)
                }
                None => Value::Null,
            }
        }
        _ => Value::Null,
    })
}

/// `MultiValueMode.AVG` over a document's longs: their sum (wrapping, as Java's `long`), divided
/// and rounded as `Math.round` when there are several.
fn avg_i64(values: impl Iterator<Item = i64>) -> Option<i64> {
    let (total, count) = values.fold((0i64, 0u64), |(t, n), v| (t.wrapping_add(v), n + 1));
    match count {
        0 => None,
        1 => Some(total),
        n => Some(java_round(total as f64 / n as f64)),
    }
}

/// `MultiValueMode.AVG` over a document's doubles, summed in value order as Lucene's sorted
/// doc values hold them.
fn avg_f64(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(values.iter().fold(0.0, |t, v| t + v) / values.len() as f64)
}

/// Java's `Math.round(double)`: halves round up (towards positive infinity); the cast
/// saturates as Java's does.
fn java_round(x: f64) -> i64 {
    let floor = x.floor();
    (if x - floor >= 0.5 { floor + 1.0 } else { floor }) as i64
}

/// A histogram bucket `[from, to)` of a range field: the documents one of whose ranges
/// intersects it, as the bucket counted them.
fn range_field_bucket(
    field: &str,
    kind: lode_engine::range_field::RangeKind,
    from: Option<f64>,
    to: Option<f64>,
) -> Box<dyn tantivy::query::Query> {
    use lode_engine::range_field::{enc_f64, enc_i64, RangeKind, Relation};
    let integral = !matches!(kind, RangeKind::Float | RangeKind::Double);
    let lo = match from {
        None => kind.min(),
        Some(x) if integral => enc_i64(x.ceil() as i64),
        Some(x) => enc_f64(x),
    };
    let hi = match to {
        None => Some(kind.max()),
        // The last value below `to`.
        Some(x) if integral => (x.ceil() as i64).checked_sub(1).map(enc_i64),
        Some(x) => RangeKind::Double.next_down(&enc_f64(x)),
    };
    let Some(hi) = hi else {
        return Box::new(EmptyQuery);
    };
    Box::new(lode_query::RangeFieldQuery::new(
        field,
        kind,
        lo,
        hi,
        Relation::Intersects,
    ))
}

#[cfg(test)]
mod metric_tests {
    use super::*;

    #[test]
    fn several_values_average_as_multi_value_mode_avg() {
        assert_eq!(avg_i64([].into_iter()), None);
        assert_eq!(avg_i64([7].into_iter()), Some(7));
        assert_eq!(avg_i64([1, 2].into_iter()), Some(2));
        assert_eq!(avg_i64([-1, -2].into_iter()), Some(-1));
        assert_eq!(avg_i64([1, 2, 4].into_iter()), Some(2));
        assert_eq!(avg_f64(vec![3.0, 1.0, 0.5]), Some(1.5));
        assert_eq!(avg_f64(vec![]), None);
        assert_eq!(java_round(-2.5), -2);
        assert_eq!(java_round(2.5), 3);
        assert_eq!(java_round(0.49999999999999994), 0);
    }
}
