//! Top hits of a single numeric sort without reading every match: search the query restricted
//! to the competitive end of the field's value range, widening the range until it holds enough
//! hits. Lucene skips non-competitive documents with its points index for the same reason;
//! tantivy has no such skipping, so "newest 10 of 300,000 matches" would otherwise read all
//! 300,000 sort values.
//!
//! Exactness: if at least `limit` matches have a value in `[T, max]` (descending), every match
//! below `T` (or without a value, which sorts last) is worse than all of them, so the top
//! `limit` of the restricted search are the top `limit` of the full one, ties included.

use std::ops::Bound;

use lode_engine::mapping::Storage;
use tantivy::query::{
    BooleanQuery, ConstScoreQuery, InvertedIndexRangeQuery, Occur, Query, RangeQuery,
};
use tantivy::{Searcher, Term};

use lode_hits::sort::{FieldSortCollector, SortKind, SortMode, SortedHit};

/// Below this many documents a plain scan is as fast.
const MIN_DOCS: u64 = 50_000;
/// Restricted searches tried before falling back to the plain scan.
const ATTEMPTS: usize = 3;
/// Widest range (in expected distinct values) searched through the term dictionary.
const MAX_RANGE_TERMS: f64 = 20_000.0;

/// The top hits by `collector`'s single key, or `None` when the request does not qualify (the
/// caller then scans). The caller counts the total separately.
pub fn top_hits(
    searcher: &Searcher,
    query: &dyn Query,
    collector: &FieldSortCollector,
    bounds: (Option<f64>, Option<f64>),
) -> tantivy::Result<Option<Vec<SortedHit>>> {
    let [key] = collector.keys.as_slice() else {
        return Ok(None);
    };
    let SortKind::Field { name, storage, .. } = &key.kind else {
        return Ok(None);
    };
    if collector.after.is_some()
        || collector.track_scores
        || collector.limit == 0
        || key.missing_first
        || key.missing_value.is_some()
        || !matches!(key.mode, None | Some(SortMode::Min) | Some(SortMode::Max))
        || !matches!(storage, Storage::I64 | Storage::F64)
        || searcher.num_docs() < MIN_DOCS
    {
        return Ok(None);
    }
    // A mode against the direction (e.g. `max` ascending) breaks the "any value in range"
    // reasoning below.
    if key.mode.is_some_and(|m| (m == SortMode::Max) != key.desc) {
        return Ok(None);
    }
    let schema = searcher.schema();
    let Ok(field) = schema.get_field(name) else {
        return Ok(None);
    };
    let indexed = schema.get_field_entry(field).is_indexed();
    let Some((min, max)) = value_range(searcher, name, *storage)? else {
        return Ok(None);
    };
    // Bounds the query itself puts on the field (e.g. `createdTime < X`): matches lie inside.
    let (min, max) = (
        bounds.0.map_or(min, |b| b.max(min)),
        bounds.1.map_or(max, |b| b.min(max)),
    );
    if min > max {
        return Ok(None);
    }
    let span = max - min;
    let docs = searcher.num_docs() as f64;
    let mut fraction = (4 * collector.limit) as f64 / docs;
    // A few cheap tries; a query whose matches lie far from the end of the value range (e.g.
    // `createdTime < X` sorted descending) goes to the plain scan instead of widening forever.
    for _ in 0..ATTEMPTS {
        if fraction >= 0.25 {
            break;
        }
        let threshold = if key.desc {
            max - fraction * span
        } else {
            min + fraction * span
        };
        // The terms of a narrow range are few; past that, scanning the column is cheaper than
        // a union of many postings lists.
        let by_terms = indexed && fraction * docs <= MAX_RANGE_TERMS;
        let (lo, hi) = if key.desc {
            (threshold, max)
        } else {
            (min, threshold)
        };
        let range = range_query(field, *storage, lo, hi, by_terms);
        let restricted = BooleanQuery::new(vec![
            (Occur::Must, query.box_clone()),
            (Occur::Must, Box::new(ConstScoreQuery::new(range, 0.0))),
        ]);
        let hits = searcher.search(&restricted, collector)?;
        if hits.len() >= collector.limit {
            return Ok(Some(hits));
        }
        fraction *= 8.0;
    }
    Ok(None)
}

/// The bounds a query's required clauses put on `field` (numeric range values only):
/// every match has its value inside them.
pub fn query_bounds(q: &lode_query::Query, field: &str) -> (Option<f64>, Option<f64>) {
    use lode_query::Query as Q;
    match q {
        Q::Range(r) if r.field == field => (
            r.from.as_ref().and_then(|v| v.as_f64()),
            r.to.as_ref().and_then(|v| v.as_f64()),
        ),
        Q::Bool(b) => b.must.iter().chain(&b.filter).fold((None, None), |acc, c| {
            let (lo, hi) = query_bounds(c, field);
            (max_opt(acc.0, lo), min_opt(acc.1, hi))
        }),
        _ => (None, None),
    }
}

fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

fn min_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// The smallest and largest value of the field over all segments.
fn value_range(
    searcher: &Searcher,
    name: &str,
    storage: Storage,
) -> tantivy::Result<Option<(f64, f64)>> {
    let mut out: Option<(f64, f64)> = None;
    for seg in searcher.segment_readers() {
        let ff = seg.fast_fields();
        let mm = match storage {
            Storage::I64 => ff
                .column_opt::<i64>(name)?
                .map(|c| (c.min_value() as f64, c.max_value() as f64)),
            _ => ff
                .column_opt::<f64>(name)?
                .map(|c| (c.min_value(), c.max_value())),
        };
        if let Some((lo, hi)) = mm {
            out = Some(match out {
                Some((a, b)) => (a.min(lo), b.max(hi)),
                None => (lo, hi),
            });
        }
    }
    Ok(out)
}

fn range_query(
    field: tantivy::schema::Field,
    storage: Storage,
    lo: f64,
    hi: f64,
    by_terms: bool,
) -> Box<dyn Query> {
    // Rounded outward so the range never loses a competitive value.
    let term = |v: f64, up: bool| match storage {
        Storage::I64 => Term::from_field_i64(field, if up { v.ceil() } else { v.floor() } as i64),
        _ => Term::from_field_f64(field, v),
    };
    let (lower, upper) = (
        Bound::Included(term(lo, false)),
        Bound::Included(term(hi, true)),
    );
    // A narrow range of an indexed field is a handful of terms; otherwise scan the column.
    if by_terms {
        Box::new(InvertedIndexRangeQuery::new(lower, upper))
    } else {
        Box::new(RangeQuery::new(lower, upper))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lode_hits::sort::SortKey;
    use tantivy::collector::Count;
    use tantivy::query::{AllQuery, TermQuery};
    use tantivy::schema::{IndexRecordOption, Schema, FAST, INDEXED};
    use tantivy::{doc, Index};

    /// Narrowed and full scans agree on every hit, including ties and documents without a value.
    #[test]
    fn narrowed_top_hits_equal_a_full_scan() {
        let mut sb = Schema::builder();
        let t = sb.add_i64_field("t", INDEXED | FAST);
        let f = sb.add_f64_field("f", FAST);
        let s = sb.add_u64_field("s", INDEXED);
        let index = Index::create_in_ram(sb.build());
        let mut w = index.writer_with_num_threads(1, 50_000_000).unwrap();
        let mut x: u64 = 12345;
        for i in 0..60_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = (x >> 33) as i64 % 5_000; // many ties
            if i % 97 == 0 {
                w.add_document(doc!(s => i % 4)).unwrap(); // no sort value
            } else {
                w.add_document(doc!(t => v, f => v as f64 / 3.0, s => i % 4))
                    .unwrap();
            }
            if i == 30_000 {
                w.commit().unwrap(); // two segments
            }
        }
        w.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let mut narrowed = 0;
        let status1: Box<dyn Query> = Box::new(TermQuery::new(
            Term::from_field_u64(s, 1),
            IndexRecordOption::Basic,
        ));
        for (field, storage) in [("t", Storage::I64), ("f", Storage::F64)] {
            for desc in [true, false] {
                for limit in [1, 10, 1_000] {
                    for q in [&status1, &(Box::new(AllQuery) as Box<dyn Query>)] {
                        let coll = FieldSortCollector {
                            keys: vec![SortKey {
                                kind: SortKind::Field {
                                    name: field.into(),
                                    storage,
                                    is_date: false,
                                },
                                desc,
                                missing_first: false,
                                missing_value: None,
                                mode: None,
                            }],
                            limit,
                            after: None,
                            shard_id: 0,
                            track_scores: false,
                        };
                        // `None` is the fallback to the plain scan, which is the reference.
                        let Some(fast) = top_hits(&searcher, &**q, &coll, (None, None)).unwrap()
                        else {
                            continue;
                        };
                        narrowed += 1;
                        let (_, full) = searcher.search(&**q, &(Count, coll)).unwrap();
                        let addr =
                            |h: &Vec<SortedHit>| h.iter().map(|x| x.addr).collect::<Vec<_>>();
                        assert_eq!(
                            addr(&fast),
                            addr(&full),
                            "{field} desc={desc} limit={limit}"
                        );
                    }
                }
            }
        }
        assert!(
            narrowed >= 16,
            "only {narrowed} of 24 cases took the narrowed path"
        );
    }

    #[test]
    fn bounds_come_from_required_range_clauses() {
        let q = |v: serde_json::Value| lode_query::parse_query(&v).unwrap();
        let b = q(serde_json::json!({"bool": {"filter": [
            {"term": {"status": 0}},
            {"range": {"t": {"lt": 500}}},
            {"range": {"t": {"gte": 100, "lte": 900}}}
        ], "should": [{"range": {"t": {"gte": 450}}}]}}));
        assert_eq!(query_bounds(&b, "t"), (Some(100.0), Some(500.0)));
        assert_eq!(query_bounds(&b, "other"), (None, None));
        let dates = q(serde_json::json!({"range": {"t": {"gte": "now-1d"}}}));
        assert_eq!(query_bounds(&dates, "t"), (None, None));
    }
}
