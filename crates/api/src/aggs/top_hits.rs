//! `top_hits`: tantivy's version returns fast-field values only, so the hits of each bucket are
//! found by re-running the search restricted to the bucket (the search query AND the bucket's
//! constraints), sorted and paged, and fetched from the doc store like search hits.

use super::exec::{Exec, PlannedTarget};
use super::plan::{FieldRef, SourceSpec};
use super::render::{Constraint, Scope};
use super::request::TopHitsReq;
use lode_engine::mapping::Storage;
use lode_engine::shard::stored_source;
use lode_engine::{EsError, EsResult};
use serde_json::{json, Map, Value};
use std::cmp::Ordering;
use std::ops::Bound;
use tantivy::aggregation::Key;
use tantivy::collector::{Count, TopDocs};
use tantivy::query::{
    AllQuery, BooleanQuery, ConstScoreQuery, EmptyQuery, Occur, Query, RangeQuery, TermQuery,
};
use tantivy::schema::{IndexRecordOption, Value as _};
use tantivy::{DocAddress, Order, TantivyDocument, Term};

/// A sort value of one hit.
#[derive(Clone, Debug)]
enum SortValue {
    Missing,
    Num(f64),
    Str(String),
}

struct Hit {
    target: usize,
    shard: usize,
    addr: DocAddress,
    score: f32,
    sort: SortValue,
}

pub(crate) fn render(exec: &Exec, req: &TopHitsReq, scope: &Scope) -> EsResult<Value> {
    let want = req.from + req.size;
    let sort = req.sort.first().filter(|s| s.field != "_score");
    let order = |desc: bool| if desc { Order::Desc } else { Order::Asc };
    let mut total = 0u64;
    let mut hits: Vec<Hit> = Vec::new();
    for (ti, pt) in exec.targets.iter().enumerate() {
        let query = bucket_query(pt, scope)?;
        let by_field = sort.filter(|s| s.field != "_doc").map(|s| {
            (
                FieldRef {
                    name: s.field.clone(),
                    def: pt.target.ctx.mapping.field(&s.field).cloned(),
                },
                s.desc,
            )
        });
        for (i, shard) in pt.target.shards.iter().enumerate() {
            let searcher = &shard.searcher;
            total += searcher.search(&*query, &Count).map_err(internal)? as u64;
            if want == 0 {
                continue;
            }
            let top = TopDocs::with_limit(want);
            let found: Vec<Hit> = match &by_field {
            None if sort.is_some() => {
                // `_doc`: scoring disabled, ties (all of them) go by document address.
                let mut docs = searcher
                    .search(&ConstScoreQuery::new(query.box_clone(), 0.0), &top.order_by_score())
                    .map_err(internal)?;
                docs.sort_by_key(|(_, a)| *a);
                docs.into_iter()
                    .map(|(_, addr)| Hit { target: ti, shard: i, addr, score: f32::NAN, sort: SortValue::Missing })
                    .collect()
            }
            None => searcher
                .search(&*query, &top.order_by_score())
                .map_err(internal)?
                .into_iter()
                .map(|(score, addr)| Hit { target: ti, shard: i, addr, score, sort: SortValue::Missing })
                .collect(),
            Some((field, desc)) => match field.storage() {
                Some(Storage::I64) => searcher
                    .search(&*query, &top.order_by_fast_field::<i64>(&field.name, order(*desc)))
                    .map_err(internal)?
                    .into_iter()
                    .map(|(v, addr)| Hit { target: ti, shard: i, addr, score: f32::NAN, sort: v.map(|x| SortValue::Num(x as f64)).unwrap_or(SortValue::Missing) })
                    .collect(),
                Some(Storage::F64) => searcher
                    .search(&*query, &top.order_by_fast_field::<f64>(&field.name, order(*desc)))
                    .map_err(internal)?
                    .into_iter()
                    .map(|(v, addr)| Hit { target: ti, shard: i, addr, score: f32::NAN, sort: v.map(SortValue::Num).unwrap_or(SortValue::Missing) })
                    .collect(),
                Some(Storage::Keyword) => searcher
                    .search(&*query, &top.order_by_string_fast_field(&field.name, order(*desc)))
                    .map_err(internal)?
                    .into_iter()
                    .map(|(v, addr)| Hit { target: ti, shard: i, addr, score: f32::NAN, sort: v.map(SortValue::Str).unwrap_or(SortValue::Missing) })
                    .collect(),
                Some(Storage::Bool) => searcher
                    .search(&*query, &top.order_by_fast_field::<bool>(&field.name, order(*desc)))
                    .map_err(internal)?
                    .into_iter()
                    .map(|(v, addr)| Hit { target: ti, shard: i, addr, score: f32::NAN, sort: v.map(|b| SortValue::Num(b as u8 as f64)).unwrap_or(SortValue::Missing) })
                    .collect(),
                Some(Storage::Text) => {
                    return Err(EsError::illegal_argument(format!(
                        "Text fields are not optimised for operations that require per-document field data like aggregations and sorting, so these operations are disabled by default. Please use a keyword field instead. Alternatively, set fielddata=true on [{}] in order to load field data by uninverting the inverted index. Note that this can use significant memory.",
                        field.name
                    )))
                }
                _ => searcher
                    .search(&ConstScoreQuery::new(query.box_clone(), 0.0), &top.order_by_score())
                    .map_err(internal)?
                    .into_iter()
                    .map(|(_, addr)| Hit { target: ti, shard: i, addr, score: f32::NAN, sort: SortValue::Missing })
                    .collect(),
            },
        };
            hits.extend(found);
        }
    }
    let desc = sort.filter(|s| s.field != "_doc").map(|s| s.desc);
    hits.sort_by(|a, b| {
        let primary = match desc {
            None if sort.is_some() => Ordering::Equal,
            None => b.score.total_cmp(&a.score),
            Some(desc) => cmp_sort(&a.sort, &b.sort, desc),
        };
        primary
            .then(a.shard.cmp(&b.shard))
            .then(a.addr.cmp(&b.addr))
    });
    let scored = sort.is_none();
    let max_score = if scored {
        hits.iter()
            .map(|h| h.score)
            .fold(None, |m: Option<f32>, s| Some(m.map_or(s, |m| m.max(s))))
    } else {
        None
    };
    let mut out = Vec::new();
    for h in hits.into_iter().skip(req.from).take(req.size) {
        let target = exec.targets[h.target].target;
        let shard = &target.shards[h.shard];
        let doc: TantivyDocument = shard.searcher.doc(h.addr).map_err(internal)?;
        let id = doc
            .get_first(shard.meta.id)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string();
        let mut o = Map::new();
        o.insert("_index".into(), json!(target.index_name));
        o.insert("_id".into(), json!(id));
        if req.version {
            let v = doc.get_first(shard.meta.version).and_then(|v| v.as_u64());
            o.insert("_version".into(), json!(v));
        }
        if req.seq_no_primary_term {
            let v = doc.get_first(shard.meta.seq_no).and_then(|v| v.as_u64());
            o.insert("_seq_no".into(), json!(v));
            o.insert(
                "_primary_term".into(),
                json!(lode_engine::shard::PRIMARY_TERM),
            );
        }
        o.insert(
            "_score".into(),
            if scored { json!(h.score) } else { Value::Null },
        );
        if req.source.fetch {
            let bytes = stored_source(&doc, shard.meta);
            let source: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            if let Some(filtered) = req.source.apply(&source) {
                o.insert("_source".into(), filtered);
            }
        }
        if desc.is_some() {
            let integral = target
                .ctx
                .mapping
                .field(&sort.map(|s| s.field.clone()).unwrap_or_default())
                .is_some_and(|d| d.storage() == Storage::I64);
            let v = match &h.sort {
                SortValue::Missing => Value::Null,
                SortValue::Str(x) => json!(x),
                SortValue::Num(x) if integral => json!(*x as i64),
                SortValue::Num(x) => json!(x),
            };
            o.insert("sort".into(), json!([v]));
        }
        out.push(Value::Object(o));
    }
    Ok(json!({
        "total": {"value": total, "relation": "eq"},
        "max_score": max_score.map(|s| json!(s)).unwrap_or(Value::Null),
        "hits": out,
    }))
}

fn cmp_sort(a: &SortValue, b: &SortValue, desc: bool) -> Ordering {
    let dir = |o: Ordering| if desc { o.reverse() } else { o };
    match (a, b) {
        // Missing values sort last either way.
        (SortValue::Missing, SortValue::Missing) => Ordering::Equal,
        (SortValue::Missing, _) => Ordering::Greater,
        (_, SortValue::Missing) => Ordering::Less,
        (SortValue::Num(x), SortValue::Num(y)) => dir(x.total_cmp(y)),
        (SortValue::Str(x), SortValue::Str(y)) => dir(x.cmp(y)),
        (SortValue::Num(_), _) => Ordering::Less,
        (_, SortValue::Num(_)) => Ordering::Greater,
    }
}

fn internal(e: tantivy::TantivyError) -> EsError {
    EsError::internal(format!("top_hits failure: {e}"))
}

/// The search query (unless inside `global`) AND every bucket constraint, the constraints
/// not contributing to the score.
fn bucket_query(pt: &PlannedTarget, scope: &Scope) -> EsResult<Box<dyn Query>> {
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    clauses.push((
        Occur::Must,
        if scope.global {
            Box::new(AllQuery)
        } else {
            pt.target.query.box_clone()
        },
    ));
    for c in &scope.constraints {
        let q = constraint_query(pt, c)?;
        clauses.push((Occur::Must, Box::new(ConstScoreQuery::new(q, 0.0))));
    }
    Ok(Box::new(BooleanQuery::new(clauses)))
}

fn constraint_query(pt: &PlannedTarget, c: &Constraint) -> EsResult<Box<dyn Query>> {
    let schema = pt.target.ctx.schema;
    Ok(match c {
        Constraint::Filter { source, bucket } => {
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
        Constraint::Term { field, key } => {
            let Ok(f) = schema.get_field(&field.name) else {
                return Ok(Box::new(EmptyQuery));
            };
            let term = match (field.storage(), key) {
                (Some(Storage::Keyword), Key::Str(s)) => Term::from_field_text(f, s),
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
        Constraint::Range { field, from, to } => {
            let Ok(f) = schema.get_field(&field.name) else {
                return Ok(Box::new(EmptyQuery));
            };
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
