//! `matched_queries`, as ES's `MatchedQueriesPhase`: each named query of the request
//! (`lode_query::named`) is planned on its own, and a hit lists those whose scorer, advanced to
//! the hit's document on its segment, stands on it, with that scorer's score (rendered when
//! `include_named_queries_score` is set). Only fetched hits are visited: per segment the
//! documents are taken in order, so each named query's scorer moves forward once.

use lode_engine::float::float_value;
use lode_engine::EsResult;
use lode_query::named::NamedQuery;
use lode_query::QueryContext;
use serde_json::{Map, Value};
use tantivy::query::{Query, Weight};
use tantivy::{DocId, Searcher, SegmentReader, TERMINATED};

/// The named queries of a request, planned against one index.
pub struct Planned {
    queries: Vec<(String, Box<dyn Query>)>,
}

impl Planned {
    pub fn new(named: &[NamedQuery], ctx: &QueryContext) -> EsResult<Planned> {
        let queries = named
            .iter()
            .map(|nq| Ok((nq.name.clone(), lode_query::build_query(&nq.query, ctx)?)))
            .collect::<EsResult<_>>()?;
        Ok(Planned { queries })
    }

    /// Named queries the caller planned itself (such as a `nested` query's, on its path).
    pub fn from_planned(queries: Vec<(String, Box<dyn Query>)>) -> Planned {
        Planned { queries }
    }

    pub fn is_empty(&self) -> bool {
        self.queries.is_empty()
    }

    /// Scoring weights on one shard's searcher (a named query scores as it would alone).
    pub fn weights(&self, searcher: &Searcher) -> EsResult<Weights> {
        let stats = lode_query::FieldStatistics::new(searcher);
        let weights = self
            .queries
            .iter()
            .map(|(name, q)| {
                let w = q.weight(stats.scoring(searcher))?;
                Ok((name.clone(), w))
            })
            .collect::<EsResult<_>>()?;
        Ok(Weights { weights })
    }
}

/// The named queries' weights on one shard.
pub struct Weights {
    weights: Vec<(String, Box<dyn Weight>)>,
}

/// The named queries that match a document, with their scores, in the request's order.
pub type Matches = Vec<(String, f32)>;

impl Weights {
    /// The matches of each of `docs` (documents of `segment`, any order), in `docs`' order.
    pub fn matches(&self, segment: &SegmentReader, docs: &[DocId]) -> EsResult<Vec<Matches>> {
        let mut order: Vec<usize> = (0..docs.len()).collect();
        order.sort_by_key(|&i| docs[i]);
        let mut out = vec![Matches::new(); docs.len()];
        for (name, weight) in &self.weights {
            let mut scorer = weight.scorer(segment, 1.0)?;
            for &i in &order {
                let doc = docs[i];
                let at = if scorer.doc() < doc {
                    scorer.seek(doc)
                } else {
                    scorer.doc()
                };
                if at == doc && at != TERMINATED {
                    out[i].push((name.clone(), scorer.score()));
                }
            }
        }
        Ok(out)
    }
}

/// A hit's `matched_queries`: the names, or with `scores` an object of name and score;
/// `None` when no named query matched (ES then omits the key).
pub fn render(matches: &Matches, scores: bool) -> Option<Value> {
    if matches.is_empty() {
        return None;
    }
    Some(if scores {
        Value::Object(
            matches
                .iter()
                .map(|(n, s)| (n.clone(), float_value(*s)))
                .collect::<Map<_, _>>(),
        )
    } else {
        Value::Array(
            matches
                .iter()
                .map(|(n, _)| Value::from(n.as_str()))
                .collect(),
        )
    })
}
