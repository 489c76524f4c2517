//! The search body's `min_score`: documents scoring below it are not matches at all, so they
//! leave `hits.total`, the hits and the aggregations alike (ES filters them in the query phase,
//! before every collector). Wrapping the query keeps the one mechanism for all three; the
//! wrapped query is always scored, even when the caller (an aggregation, a count) is not.

use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED};

#[derive(Debug)]
pub struct MinScoreQuery {
    query: Box<dyn Query>,
    min_score: Score,
}

impl MinScoreQuery {
    pub fn new(query: Box<dyn Query>, min_score: Score) -> MinScoreQuery {
        MinScoreQuery { query, min_score }
    }
}

impl Clone for MinScoreQuery {
    fn clone(&self) -> Self {
        MinScoreQuery {
            query: self.query.box_clone(),
            min_score: self.min_score,
        }
    }
}

impl Query for MinScoreQuery {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let stats;
        let scoring = match (
            enable_scoring.is_scoring_enabled(),
            enable_scoring.searcher(),
        ) {
            (false, Some(searcher)) => {
                stats = crate::FieldStatistics::new(searcher);
                stats.scoring(searcher)
            }
            _ => enable_scoring,
        };
        Ok(Box::new(MinScoreWeight {
            weight: self.query.weight(scoring)?,
            min_score: self.min_score,
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a tantivy::Term, bool)) {
        self.query.query_terms(visitor);
    }
}

struct MinScoreWeight {
    weight: Box<dyn Weight>,
    min_score: Score,
}

impl Weight for MinScoreWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let mut scorer = MinScoreScorer {
            scorer: self.weight.scorer(reader, boost)?,
            min_score: self.min_score,
        };
        scorer.skip_below();
        Ok(Box::new(scorer))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let e = self.weight.explain(reader, doc)?;
        if e.value() < self.min_score {
            return Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} scores below min_score [{}]",
                self.min_score
            )));
        }
        Ok(e)
    }
}

struct MinScoreScorer {
    scorer: Box<dyn Scorer>,
    min_score: Score,
}

impl MinScoreScorer {
    /// Moves on from the current document while it scores below `min_score`.
    fn skip_below(&mut self) -> DocId {
        let mut doc = self.scorer.doc();
        while doc != TERMINATED && self.scorer.score() < self.min_score {
            doc = self.scorer.advance();
        }
        doc
    }
}

impl DocSet for MinScoreScorer {
    fn advance(&mut self) -> DocId {
        self.scorer.advance();
        self.skip_below()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        self.scorer.seek(target);
        self.skip_below()
    }

    fn doc(&self) -> DocId {
        self.scorer.doc()
    }

    fn size_hint(&self) -> u32 {
        self.scorer.size_hint()
    }
}

impl Scorer for MinScoreScorer {
    fn score(&mut self) -> Score {
        self.scorer.score()
    }
}
