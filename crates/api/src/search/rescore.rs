//! `rescore` with ES's query rescorer: on each shard, the top `window_size` hits by score are
//! scored again by `rescore_query` and their scores combined (`score_mode`, weighted by
//! `query_weight` and `rescore_query_weight`); the window is re-sorted and the shard's hits
//! beyond it follow unchanged, as ES's `QueryRescorer#combine`. Several rescorers apply in
//! order.

use super::body::{read_float, read_int, Token};
use super::Candidate;
use lode_engine::{EsError, EsResult};
use lode_query::{self as query, Query, QueryContext};
use serde_json::Value;
use tantivy::query::EnableScoring;
use tantivy::{DocSet, Searcher};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScoreMode {
    Total,
    Multiply,
    Avg,
    Max,
    Min,
}

#[derive(Clone, Debug)]
pub struct Rescorer {
    pub window_size: usize,
    query: Query,
    query_weight: f32,
    rescore_query_weight: f32,
    score_mode: ScoreMode,
}

/// `rescore`: one rescorer object or an array of them.
pub fn parse(v: &Value) -> EsResult<Vec<Rescorer>> {
    match v {
        Value::Array(a) => a.iter().map(parse_one).collect(),
        other => Ok(vec![parse_one(other)?]),
    }
}

fn parse_one(v: &Value) -> EsResult<Rescorer> {
    let Value::Object(o) = v else {
        return Err(EsError::parsing(format!(
            "rescore doesn't support values of type: {}",
            Token::of(v).es_name()
        )));
    };
    let mut window_size = 10;
    let mut body = None;
    for (k, v) in o {
        match k.as_str() {
            "window_size" => {
                let n = read_int(v)?;
                if n < 0 {
                    return Err(EsError::illegal_argument(
                        "[window_size] must be greater than or equal to 0",
                    ));
                }
                window_size = n as usize;
            }
            "query" => body = Some(v),
            other => {
                return Err(EsError::parsing(format!(
                    "Unknown NamedObject [rescore] [{other}]"
                )))
            }
        }
    }
    let Some(Value::Object(q)) = body else {
        return Err(EsError::parsing("missing rescore type"));
    };
    let mut r = Rescorer {
        window_size,
        query: Query::MatchAll { boost: 1.0 },
        query_weight: 1.0,
        rescore_query_weight: 1.0,
        score_mode: ScoreMode::Total,
    };
    let mut has_query = false;
    for (k, v) in q {
        match k.as_str() {
            "rescore_query" => {
                r.query = query::parse_query(v)?;
                has_query = true;
            }
            "query_weight" => r.query_weight = read_float(v)? as f32,
            "rescore_query_weight" => r.rescore_query_weight = read_float(v)? as f32,
            "score_mode" => {
                r.score_mode = match v.as_str().map(str::to_ascii_lowercase).as_deref() {
                    Some("total") => ScoreMode::Total,
                    Some("multiply") => ScoreMode::Multiply,
                    Some("avg") => ScoreMode::Avg,
                    Some("max") => ScoreMode::Max,
                    Some("min") => ScoreMode::Min,
                    _ => {
                        return Err(EsError::illegal_argument(format!(
                            "illegal score_mode [{}]",
                            v.as_str().unwrap_or_default()
                        )))
                    }
                }
            }
            other => {
                return Err(EsError::unknown_field(
                    "query",
                    other,
                    &[
                        "rescore_query",
                        "query_weight",
                        "rescore_query_weight",
                        "score_mode",
                    ],
                ))
            }
        }
    }
    if !has_query {
        return Err(EsError::illegal_argument("rescore_query cannot be null"));
    }
    Ok(r)
}

/// Rescores a shard's hits, sorted by score, in place.
pub fn apply(
    rescorers: &[Rescorer],
    searcher: &Searcher,
    ctx: &QueryContext,
    hits: &mut [Candidate],
) -> EsResult<()> {
    for r in rescorers {
        let window = r.window_size.min(hits.len());
        let (top, _) = hits.split_at_mut(window);
        let q = query::build_query(&r.query, ctx)?;
        let weight = q.weight(EnableScoring::enabled_from_searcher(searcher))?;
        // Visit the window in index order, one scorer per segment.
        let mut order: Vec<usize> = (0..top.len()).collect();
        order.sort_by_key(|&i| (top[i].addr.segment_ord, top[i].addr.doc_id));
        let mut current: Option<(u32, Box<dyn tantivy::query::Scorer>)> = None;
        for i in order {
            let addr = top[i].addr;
            if current.as_ref().map(|(s, _)| *s) != Some(addr.segment_ord) {
                let reader = searcher.segment_reader(addr.segment_ord);
                current = Some((addr.segment_ord, weight.scorer(reader, 1.0)?));
            }
            let (_, scorer) = current.as_mut().expect("scorer");
            let first = top[i].score.unwrap_or(0.0) * r.query_weight;
            let matched = scorer.doc() <= addr.doc_id && scorer.seek(addr.doc_id) == addr.doc_id;
            top[i].score = Some(if matched {
                let second = scorer.score() * r.rescore_query_weight;
                match r.score_mode {
                    ScoreMode::Total => first + second,
                    ScoreMode::Multiply => first * second,
                    ScoreMode::Avg => (first + second) / 2.0,
                    ScoreMode::Max => first.max(second),
                    ScoreMode::Min => first.min(second),
                }
            } else {
                first
            });
        }
        top.sort_by(|a, b| {
            b.score
                .partial_cmp(&a.score)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.addr.segment_ord.cmp(&b.addr.segment_ord))
                .then(a.addr.doc_id.cmp(&b.addr.doc_id))
        });
    }
    Ok(())
}
