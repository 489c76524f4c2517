//! `significant_terms`: the background (superset) counts, read from every shard of every
//! index the search aggregates over, and Elasticsearch's JLH score.
//!
//! Without a `background_filter` the background is every live document: its size is the
//! documents' count and a term's frequency its live document frequency (the term dictionary
//! minus deleted documents, see `term_counts`). With one, the filter's live documents are
//! walked and their terms counted from the column.

use super::dsl::{build_dsl, DslQuery};
use super::exec::Exec;
use super::term_counts::live_term_counts;
use lode_engine::{EsError, EsResult};
use std::collections::HashMap;
use tantivy::query::EnableScoring;
use tantivy::{DocSet, TERMINATED};

/// The background: its size and each term's document count.
pub(crate) struct Background {
    pub size: u64,
    pub counts: HashMap<String, u64>,
}

fn internal(e: tantivy::TantivyError) -> EsError {
    EsError::internal(format!("significant_terms failure: {e}"))
}

pub(crate) fn background(
    exec: &Exec,
    field: &str,
    filter: Option<&DslQuery>,
) -> EsResult<Background> {
    let mut bg = Background {
        size: 0,
        counts: HashMap::new(),
    };
    for pt in &exec.targets {
        let nested = pt.target.ctx.meta.nested;
        // With nested documents, the background is the root documents (as ES's non-nested
        // filter makes it).
        let query = filter
            .map(|q| build_dsl(q, pt.target.ctx))
            .transpose()?
            .map(|q| lode_query::nested::non_nested(q, nested));
        for shard in pt.target.shards {
            let searcher = &shard.searcher;
            let live_docs = || -> EsResult<u64> {
                Ok(match nested {
                    None => searcher.num_docs(),
                    Some(_) => {
                        lode_query::nested::non_nested(Box::new(tantivy::query::AllQuery), nested)
                            .count(searcher)
                            .map_err(internal)? as u64
                    }
                })
            };
            let Ok(schema_field) = shard.schema.get_field(field) else {
                if query.is_none() {
                    bg.size += live_docs()?;
                }
                continue;
            };
            let Some(query) = &query else {
                bg.size += live_docs()?;
                for segment in searcher.segment_readers() {
                    for (term, n) in
                        live_term_counts(segment, schema_field, field).map_err(internal)?
                    {
                        *bg.counts.entry(term).or_default() += n;
                    }
                }
                continue;
            };
            let weight = query
                .weight(EnableScoring::disabled_from_searcher(searcher))
                .map_err(internal)?;
            for segment in searcher.segment_readers() {
                let column = segment.fast_fields().str(field).map_err(internal)?;
                let alive = segment.alive_bitset();
                let mut per_ord: HashMap<u64, u64> = HashMap::new();
                let mut scorer = weight.scorer(segment, 1.0).map_err(internal)?;
                let mut doc = scorer.doc();
                while doc != TERMINATED {
                    if alive.is_none_or(|a| a.is_alive(doc)) {
                        bg.size += 1;
                        if let Some(c) = &column {
                            for ord in c.term_ords(doc) {
                                *per_ord.entry(ord).or_default() += 1;
                            }
                        }
                    }
                    doc = scorer.advance();
                }
                if let Some(c) = &column {
                    let mut s = String::new();
                    for (ord, n) in per_ord {
                        s.clear();
                        c.ord_to_str(ord, &mut s)
                            .map_err(|e| EsError::internal(format!("significant_terms: {e}")))?;
                        *bg.counts.entry(s.clone()).or_default() += n;
                    }
                }
            }
        }
    }
    Ok(bg)
}

/// Elasticsearch's `JLHScore`: the absolute change in probability times the relative change,
/// 0 when the term is not more frequent in the subset.
pub(crate) fn jlh(
    subset_freq: u64,
    subset_size: u64,
    superset_freq: u64,
    superset_size: u64,
) -> f64 {
    if subset_size == 0 || superset_size == 0 || superset_freq == 0 {
        return 0.0;
    }
    let subset = subset_freq as f64 / subset_size as f64;
    let superset = superset_freq as f64 / superset_size as f64;
    let change = subset - superset;
    if change <= 0.0 {
        return 0.0;
    }
    change * (subset / superset)
}

#[cfg(test)]
mod tests {
    use super::jlh;

    #[test]
    fn jlh_as_elasticsearch() {
        // 5 of 10 in the subset, 10 of 100 in the superset: (0.5 - 0.1) * (0.5 / 0.1).
        assert!((jlh(5, 10, 10, 100) - 2.0).abs() < 1e-12);
        assert_eq!(jlh(1, 10, 10, 100), 0.0);
        assert_eq!(jlh(1, 0, 10, 100), 0.0);
    }
}
