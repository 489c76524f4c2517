//! `rescore` with ES's query rescorer: on each shard, the top `window_size` hits by score are
//! scored again by `rescore_query` and their scores combined (`score_mode`, weighted by
//! `query_weight` and `rescore_query_weight`); the window is re-sorted and the shard's hits
//! beyond it follow unchanged, as ES's `QueryRescorer#combine`. Several rescorers apply in
//! order.

use super::body::{read_float, read_int, Token};
use super::Candidate;
use lode_engine::object_parser::{ignore, At, Field, ObjectParser, Style};
use lode_engine::{EsError, EsResult};
use lode_query::{self as query, Query, QueryContext};
use serde_json::Value;
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
    /// `RescorerBuilder`: the window and one named rescorer (`query`, the only one ES ships).
    static RESCORE: ObjectParser<usize> = ObjectParser {
        name: "rescore",
        style: Style::Custom {
            unknown: |at, _, _| unknown_rescorer(at),
            wrong_token: |at, _| unknown_rescorer(at),
        },
        fields: &[&[
            Field::new("window_size", "*", |w, _, v| {
                let n = read_int(v)?;
                if n < 0 {
                    return Err(EsError::illegal_argument(
                        "[window_size] must be greater than or equal to 0",
                    ));
                }
                *w = n as usize;
                Ok(())
            }),
            // Read below, once the window is known.
            Field::new("query", "*", ignore),
        ]],
    };
    type F = Field<(Rescorer, bool)>;
    /// `QueryRescorerBuilder`; the flag: a `rescore_query` was given.
    static QUERY: ObjectParser<(Rescorer, bool)> = ObjectParser {
        name: "query",
        style: Style::Object,
        fields: &[&[
            F::new("rescore_query", "*", |(r, has), _, v| {
                r.query = query::parse_query(v)?;
                *has = true;
                Ok(())
            }),
            F::new("query_weight", "*", |(r, _), _, v| {
                r.query_weight = read_float(v)? as f32;
                Ok(())
            }),
            F::new("rescore_query_weight", "*", |(r, _), _, v| {
                r.rescore_query_weight = read_float(v)? as f32;
                Ok(())
            }),
            F::new("score_mode", "*", |(r, _), _, v| {
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
                };
                Ok(())
            }),
        ]],
    };
    let Value::Object(o) = v else {
        return Err(EsError::parsing(format!(
            "rescore doesn't support values of type: {}",
            Token::of(v).es_name()
        )));
    };
    let mut window_size = 10;
    RESCORE.parse_into(&mut window_size, o)?;
    let Some(Value::Object(q)) = o.get("query") else {
        return Err(EsError::parsing("missing rescore type"));
    };
    let mut r = (
        Rescorer {
            window_size,
            query: Query::MatchAll { boost: 1.0 },
            query_weight: 1.0,
            rescore_query_weight: 1.0,
            score_mode: ScoreMode::Total,
        },
        false,
    );
    QUERY.parse_into(&mut r, q)?;
    let (r, has_query) = r;
    if !has_query {
        return Err(EsError::illegal_argument("rescore_query cannot be null"));
    }
    Ok(r)
}

fn unknown_rescorer(at: &At<'_>) -> EsError {
    EsError::parsing(format!("Unknown NamedObject [rescore] [{}]", at.key))
}

/// Rescores a shard's hits, sorted by score, in place.
pub fn apply(
    rescorers: &[Rescorer],
    searcher: &Searcher,
    stats: &query::FieldStatistics,
    ctx: &QueryContext,
    hits: &mut [Candidate],
) -> EsResult<()> {
    for r in rescorers {
        let window = r.window_size.min(hits.len());
        let (top, _) = hits.split_at_mut(window);
        let q = query::build_query(&r.query, ctx)?;
        let weight = q.weight(stats.scoring(searcher))?;
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
