//! ES `boosting`: documents matching `positive` keep its score, multiplied by
//! `negative_boost` when they also match `negative`. tantivy has no such query, so this is a
//! small `Query`/`Weight`/`Scorer` trio; the negative side is evaluated without scoring.

use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED};

#[derive(Debug)]
pub struct BoostingQuery {
    positive: Box<dyn Query>,
    negative: Box<dyn Query>,
    negative_boost: Score,
}

impl BoostingQuery {
    pub fn new(
        positive: Box<dyn Query>,
        negative: Box<dyn Query>,
        negative_boost: Score,
    ) -> BoostingQuery {
        BoostingQuery {
            positive,
            negative,
            negative_boost,
        }
    }
}

impl Clone for BoostingQuery {
    fn clone(&self) -> Self {
        BoostingQuery {
            positive: self.positive.box_clone(),
            negative: self.negative.box_clone(),
            negative_boost: self.negative_boost,
        }
    }
}

impl Query for BoostingQuery {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let positive = self.positive.weight(enable_scoring)?;
        if !enable_scoring.is_scoring_enabled() {
            return Ok(positive);
        }
        let negative = match enable_scoring.searcher() {
            Some(searcher) => self
                .negative
                .weight(EnableScoring::disabled_from_searcher(searcher))?,
            None => self
                .negative
                .weight(EnableScoring::disabled_from_schema(enable_scoring.schema()))?,
        };
        Ok(Box::new(BoostingWeight {
            positive,
            negative,
            negative_boost: self.negative_boost,
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a tantivy::Term, bool)) {
        self.positive.query_terms(visitor);
    }
}

struct BoostingWeight {
    positive: Box<dyn Weight>,
    negative: Box<dyn Weight>,
    negative_boost: Score,
}

impl Weight for BoostingWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        Ok(Box::new(BoostingScorer {
            positive: self.positive.scorer(reader, boost)?,
            negative: self.negative.scorer(reader, 1.0)?,
            negative_boost: self.negative_boost,
        }))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let positive = self.positive.explain(reader, doc)?;
        let mut negative = self.negative.scorer(reader, 1.0)?;
        if negative.seek(doc) == doc {
            let mut e = Explanation::new("product of:", positive.value() * self.negative_boost);
            e.add_detail(positive);
            e.add_const("negative_boost", self.negative_boost);
            Ok(e)
        } else {
            Ok(positive)
        }
    }
}

struct BoostingScorer {
    positive: Box<dyn Scorer>,
    negative: Box<dyn Scorer>,
    negative_boost: Score,
}

impl DocSet for BoostingScorer {
    fn advance(&mut self) -> DocId {
        self.positive.advance()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        self.positive.seek(target)
    }

    fn doc(&self) -> DocId {
        self.positive.doc()
    }

    fn size_hint(&self) -> u32 {
        self.positive.size_hint()
    }
}

impl Scorer for BoostingScorer {
    fn score(&mut self) -> Score {
        let doc = self.positive.doc();
        let score = self.positive.score();
        if doc == TERMINATED {
            return score;
        }
        if self.negative.doc() < doc {
            self.negative.seek(doc);
        }
        if self.negative.doc() == doc {
            score * self.negative_boost
        } else {
            score
        }
    }
}
