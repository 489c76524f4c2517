//! ES `function_score` on tantivy: the inner query's score, combined (`boost_mode`) with
//! per-document functions (`weight`, `field_value_factor`, `random_score`, `gauss`/`exp`/
//! `linear` decay on numeric and date fast fields, `script_score`) that are themselves combined
//! (`score_mode`), capped by `max_boost`, with documents under `min_score` dropped.
//!
//! Functions read fast fields (doc values); a multi-valued field contributes its smallest
//! value, as ES's default `multi_value_mode: min` does.

use super::parse::{BoostMode, DecayShape, Modifier, ScoreMode};
use tantivy::columnar::Column;
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED};

/// A function with its field already resolved.
#[derive(Debug, Clone)]
pub enum Compiled {
    /// Only a weight: the value is 1.
    Const,
    FieldValueFactor {
        /// `None`: the field is unmapped, every document uses `missing`.
        field: Option<NumericField>,
        factor: f64,
        modifier: Modifier,
        missing: Option<f64>,
    },
    Random {
        seed: u64,
    },
    Decay {
        field: NumericField,
        shape: DecayShape,
        origin: f64,
        scale: f64,
        offset: f64,
        decay: f64,
    },
    /// `script_score`: a Painless script over `doc`, `params` and the query's `_score`.
    Script {
        script: std::sync::Arc<lode_painless::SearchScript>,
        fields: crate::script::Fields,
        /// The search's runtime fields, read by `doc['name']` as in the other search scripts.
        runtime: crate::runtime::RuntimeFields,
        errors: crate::script::ScriptErrors,
    },
}

/// A numeric fast field (`float` for f64 columns, otherwise i64 columns: integers, dates).
#[derive(Debug, Clone)]
pub struct NumericField {
    pub name: String,
    pub float: bool,
}

#[derive(Debug)]
pub struct PlannedFunction {
    pub filter: Option<Box<dyn Query>>,
    pub weight: f32,
    pub kind: Compiled,
}

impl Clone for PlannedFunction {
    fn clone(&self) -> Self {
        PlannedFunction {
            filter: self.filter.as_ref().map(|f| f.box_clone()),
            weight: self.weight,
            kind: self.kind.clone(),
        }
    }
}

#[derive(Debug)]
pub struct FunctionScoreQuery {
    pub query: Box<dyn Query>,
    pub functions: Vec<PlannedFunction>,
    pub score_mode: ScoreMode,
    pub boost_mode: BoostMode,
    pub max_boost: f32,
    pub min_score: Option<f32>,
}

impl Clone for FunctionScoreQuery {
    fn clone(&self) -> Self {
        FunctionScoreQuery {
            query: self.query.box_clone(),
            functions: self.functions.clone(),
            score_mode: self.score_mode,
            boost_mode: self.boost_mode,
            max_boost: self.max_boost,
            min_score: self.min_score,
        }
    }
}

impl Query for FunctionScoreQuery {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let scoring = enable_scoring.is_scoring_enabled();
        if !scoring && self.min_score.is_none() {
            return self.query.weight(enable_scoring);
        }
        // min_score needs the scores even in filter context.
        let stats;
        let inner_scoring = match (scoring, enable_scoring.searcher()) {
            (false, Some(searcher)) => {
                stats = crate::FieldStatistics::new(searcher);
                stats.scoring(searcher)
            }
            _ => enable_scoring,
        };
        let filter_scoring = match enable_scoring.searcher() {
            Some(searcher) => EnableScoring::disabled_from_searcher(searcher),
            None => EnableScoring::disabled_from_schema(enable_scoring.schema()),
        };
        let functions = self
            .functions
            .iter()
            .map(|f| {
                Ok(FunctionWeight {
                    filter: f
                        .filter
                        .as_ref()
                        .map(|q| q.weight(filter_scoring))
                        .transpose()?,
                    weight: f.weight,
                    kind: f.kind.clone(),
                })
            })
            .collect::<tantivy::Result<Vec<_>>>()?;
        Ok(Box::new(FunctionScoreWeight {
            query: self.query.weight(inner_scoring)?,
            functions,
            score_mode: self.score_mode,
            boost_mode: self.boost_mode,
            max_boost: self.max_boost,
            min_score: self.min_score,
            emit_scores: scoring,
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a tantivy::Term, bool)) {
        self.query.query_terms(visitor);
    }
}

struct FunctionWeight {
    filter: Option<Box<dyn Weight>>,
    weight: f32,
    kind: Compiled,
}

struct FunctionScoreWeight {
    query: Box<dyn Weight>,
    functions: Vec<FunctionWeight>,
    score_mode: ScoreMode,
    boost_mode: BoostMode,
    max_boost: f32,
    min_score: Option<f32>,
    emit_scores: bool,
}

enum NumColumn {
    I64(Column<i64>),
    F64(Column<f64>),
    Absent,
}

impl NumColumn {
    fn open(reader: &SegmentReader, field: &NumericField) -> tantivy::Result<NumColumn> {
        let ff = reader.fast_fields();
        Ok(if field.float {
            ff.column_opt::<f64>(&field.name)?
                .map_or(NumColumn::Absent, NumColumn::F64)
        } else {
            ff.column_opt::<i64>(&field.name)?
                .map_or(NumColumn::Absent, NumColumn::I64)
        })
    }

    /// The smallest value of the document.
    fn min(&self, doc: DocId) -> Option<f64> {
        match self {
            NumColumn::I64(c) => c.values_for_doc(doc).min().map(|v| v as f64),
            NumColumn::F64(c) => c.values_for_doc(doc).reduce(f64::min),
            NumColumn::Absent => None,
        }
    }
}

enum SegmentFunction {
    Const,
    FieldValueFactor {
        column: NumColumn,
        factor: f64,
        modifier: Modifier,
        missing: Option<f64>,
    },
    Random {
        seed: u64,
    },
    Decay {
        column: NumColumn,
        shape: DecayShape,
        origin: f64,
        scale: f64,
        offset: f64,
        decay: f64,
    },
    Script {
        script: std::sync::Arc<lode_painless::SearchScript>,
        docs: Box<crate::script::SegmentDocs>,
        /// The script's buffers on this segment, reused from document to document.
        scratch: Box<lode_painless::Scratch>,
        errors: crate::script::ScriptErrors,
    },
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn apply_modifier(m: Modifier, v: f64) -> f64 {
    match m {
        Modifier::None => v,
        Modifier::Log => v.log10(),
        Modifier::Log1p => (v + 1.0).log10(),
        Modifier::Log2p => (v + 2.0).log10(),
        Modifier::Ln => v.ln(),
        Modifier::Ln1p => v.ln_1p(),
        Modifier::Ln2p => (v + 2.0).ln(),
        Modifier::Square => v * v,
        Modifier::Sqrt => v.sqrt(),
        Modifier::Reciprocal => 1.0 / v,
    }
}

impl SegmentFunction {
    /// The function's value for `doc`; `None` when it does not apply.
    fn value(&mut self, doc: DocId, segment_salt: u64, query_score: f64) -> Option<f64> {
        if let SegmentFunction::Script {
            script,
            docs,
            scratch,
            errors,
        } = self
        {
            {
                docs.doc = doc;
                let r = script.score_in(scratch, &mut **docs, query_score).and_then(|v| {
                    if v < 0.0 || v.is_nan() {
                        Err(lode_engine::EsError::illegal_argument(format!(
                            "script score function must not produce negative scores, but got: [{v:?}]"
                        )))
                    } else {
                        Ok(v)
                    }
                });
                return match r {
                    Ok(v) => Some(v),
                    Err(e) => {
                        errors.lock().get_or_insert(e);
                        Some(0.0)
                    }
                };
            }
        }
        match &*self {
            SegmentFunction::Script { .. } => None,
            SegmentFunction::Const => Some(1.0),
            SegmentFunction::FieldValueFactor {
                column,
                factor,
                modifier,
                missing,
            } => {
                let v = column.min(doc).or(*missing)?;
                let r = apply_modifier(*modifier, v * factor);
                Some(if r.is_finite() && r >= 0.0 { r } else { 0.0 })
            }
            SegmentFunction::Random { seed } => {
                let h = splitmix(seed ^ splitmix(segment_salt ^ u64::from(doc)));
                Some((h >> 40) as f64 / (1u64 << 24) as f64)
            }
            SegmentFunction::Decay {
                column,
                shape,
                origin,
                scale,
                offset,
                decay,
            } => {
                let Some(v) = column.min(doc) else {
                    return Some(1.0);
                };
                let d = ((v - origin).abs() - offset).max(0.0);
                Some(match shape {
                    DecayShape::Gauss => {
                        let sigma2 = -scale * scale / (2.0 * decay.ln());
                        (-d * d / (2.0 * sigma2)).exp()
                    }
                    DecayShape::Exp => (decay.ln() / scale * d).exp(),
                    DecayShape::Linear => {
                        let s = scale / (1.0 - decay);
                        ((s - d) / s).max(0.0)
                    }
                })
            }
        }
    }
}

struct ScorerFunction {
    filter: Option<Box<dyn Scorer>>,
    weight: f64,
    function: SegmentFunction,
}

impl Weight for FunctionScoreWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let inner = self.query.scorer(reader, boost)?;
        let mut functions = Vec::with_capacity(self.functions.len());
        for f in &self.functions {
            let function = match &f.kind {
                Compiled::Const => SegmentFunction::Const,
                Compiled::FieldValueFactor {
                    field,
                    factor,
                    modifier,
                    missing,
                } => SegmentFunction::FieldValueFactor {
                    column: match field {
                        Some(field) => NumColumn::open(reader, field)?,
                        None => NumColumn::Absent,
                    },
                    factor: *factor,
                    modifier: *modifier,
                    missing: *missing,
                },
                Compiled::Random { seed } => SegmentFunction::Random { seed: *seed },
                Compiled::Decay {
                    field,
                    shape,
                    origin,
                    scale,
                    offset,
                    decay,
                } => SegmentFunction::Decay {
                    column: NumColumn::open(reader, field)?,
                    shape: *shape,
                    origin: *origin,
                    scale: *scale,
                    offset: *offset,
                    decay: *decay,
                },
                Compiled::Script {
                    script,
                    fields,
                    runtime,
                    errors,
                } => SegmentFunction::Script {
                    script: script.clone(),
                    docs: Box::new(
                        crate::script::SegmentDocs::new(reader, fields.clone())
                            .with_runtime(runtime.clone()),
                    ),
                    scratch: Box::default(),
                    errors: errors.clone(),
                },
            };
            functions.push(ScorerFunction {
                filter: f
                    .filter
                    .as_ref()
                    .map(|w| w.scorer(reader, 1.0))
                    .transpose()?,
                weight: f64::from(f.weight),
                function,
            });
        }
        let salt = reader
            .segment_id()
            .uuid_string()
            .bytes()
            .fold(0u64, |h, b| h.wrapping_mul(131).wrapping_add(u64::from(b)));
        let mut scorer = FunctionScorer {
            inner,
            functions,
            score_mode: self.score_mode,
            boost_mode: self.boost_mode,
            max_boost: f64::from(self.max_boost),
            min_score: self.min_score,
            emit_scores: self.emit_scores,
            salt,
            scored_doc: TERMINATED,
            score: 0.0,
        };
        let first = scorer.inner.doc();
        if first != TERMINATED && !scorer.accept(first) {
            scorer.advance();
        }
        Ok(Box::new(scorer))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        crate::explain_by_seek(
            self,
            reader,
            doc,
            "function score, computed as boost_mode(query score, score_mode(functions))",
        )
    }
}

struct FunctionScorer {
    inner: Box<dyn Scorer>,
    functions: Vec<ScorerFunction>,
    score_mode: ScoreMode,
    boost_mode: BoostMode,
    max_boost: f64,
    min_score: Option<f32>,
    emit_scores: bool,
    salt: u64,
    /// The document `score` holds the score of.
    scored_doc: DocId,
    score: Score,
}

impl FunctionScorer {
    fn compute(&mut self, doc: DocId) -> Score {
        let query_score = f64::from(self.inner.score());
        let mut factor = 1.0f64;
        let (mut count, mut total, mut weight_sum) = (0usize, 0.0f64, 0.0f64);
        let (mut max, mut min) = (f64::NEG_INFINITY, f64::INFINITY);
        for f in &mut self.functions {
            if let Some(filter) = &mut f.filter {
                if filter.doc() < doc {
                    filter.seek(doc);
                }
                if filter.doc() != doc {
                    continue;
                }
            }
            let Some(v) = f.function.value(doc, self.salt, query_score) else {
                continue;
            };
            let v = v * f.weight;
            match self.score_mode {
                ScoreMode::First => {
                    factor = v;
                    count = 1;
                    break;
                }
                ScoreMode::Multiply => factor *= v,
                _ => {}
            }
            count += 1;
            total += v;
            weight_sum += f.weight;
            max = max.max(v);
            min = min.min(v);
        }
        if count > 0 {
            match self.score_mode {
                ScoreMode::Sum => factor = total,
                ScoreMode::Avg if weight_sum != 0.0 => factor = total / weight_sum,
                ScoreMode::Max => factor = max,
                ScoreMode::Min => factor = min,
                _ => {}
            }
        }
        let factor = factor.min(self.max_boost);
        let combined = match self.boost_mode {
            BoostMode::Multiply => query_score * factor,
            BoostMode::Replace => factor,
            BoostMode::Sum => query_score + factor,
            BoostMode::Avg => (query_score + factor) / 2.0,
            BoostMode::Max => query_score.max(factor),
            BoostMode::Min => query_score.min(factor),
        };
        combined as Score
    }

    /// Scores `doc` and tells whether it passes `min_score`.
    fn accept(&mut self, doc: DocId) -> bool {
        let Some(min) = self.min_score else {
            return true;
        };
        self.score = self.compute(doc);
        self.scored_doc = doc;
        self.score >= min
    }
}

impl DocSet for FunctionScorer {
    fn advance(&mut self) -> DocId {
        loop {
            let doc = self.inner.advance();
            if doc == TERMINATED || self.accept(doc) {
                return doc;
            }
        }
    }

    fn seek(&mut self, target: DocId) -> DocId {
        let doc = self.inner.seek(target);
        if doc == TERMINATED || self.accept(doc) {
            return doc;
        }
        self.advance()
    }

    fn doc(&self) -> DocId {
        self.inner.doc()
    }

    fn size_hint(&self) -> u32 {
        self.inner.size_hint()
    }
}

impl Scorer for FunctionScorer {
    fn score(&mut self) -> Score {
        if !self.emit_scores {
            return 1.0;
        }
        let doc = self.inner.doc();
        if self.scored_doc != doc {
            self.score = self.compute(doc);
            self.scored_doc = doc;
        }
        self.score
    }
}
