//! The search body's `terminate_after`: a shard stops collecting after that many matching
//! documents (in index order, as ES's early-terminating collector), and every collector of the
//! pass (count, hits, aggregations) sees the same documents. The budget lives in the weight, so
//! one weight is one shard's pass over its segments, whatever collectors share it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED};

#[derive(Debug)]
pub struct TerminateAfterQuery {
    query: Box<dyn Query>,
    limit: u64,
    /// Set when some weight of this query ran out of budget.
    reached: Arc<AtomicBool>,
}

impl TerminateAfterQuery {
    /// `reached` is set when a pass stops early (the response's `terminated_early`).
    pub fn new(query: Box<dyn Query>, limit: u64, reached: Arc<AtomicBool>) -> TerminateAfterQuery {
        TerminateAfterQuery {
            query,
            limit,
            reached,
        }
    }
}

impl Clone for TerminateAfterQuery {
    fn clone(&self) -> Self {
        TerminateAfterQuery {
            query: self.query.box_clone(),
            limit: self.limit,
            reached: self.reached.clone(),
        }
    }
}

impl Query for TerminateAfterQuery {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(TerminateAfterWeight {
            weight: self.query.weight(enable_scoring)?,
            remaining: Arc::new(AtomicU64::new(self.limit)),
            reached: self.reached.clone(),
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a tantivy::Term, bool)) {
        self.query.query_terms(visitor);
    }
}

struct TerminateAfterWeight {
    weight: Box<dyn Weight>,
    remaining: Arc<AtomicU64>,
    reached: Arc<AtomicBool>,
}

impl Weight for TerminateAfterWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let mut scorer = TerminateAfterScorer {
            scorer: self.weight.scorer(reader, boost)?,
            remaining: self.remaining.clone(),
            reached: self.reached.clone(),
            doc: TERMINATED,
        };
        scorer.arrive(scorer.scorer.doc());
        Ok(Box::new(scorer))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        self.weight.explain(reader, doc)
    }
}

/// A document is charged to the budget when the scorer moves past it, not when it arrives:
/// a scorer only probed (built, looked at, dropped) costs nothing.
struct TerminateAfterScorer {
    scorer: Box<dyn Scorer>,
    remaining: Arc<AtomicU64>,
    reached: Arc<AtomicBool>,
    doc: DocId,
}

impl TerminateAfterScorer {
    /// Makes `doc` current if the budget has room for it; a spent budget ends the segment
    /// (and the shard: the budget is shared by its segments).
    fn arrive(&mut self, doc: DocId) -> DocId {
        self.doc = if doc == TERMINATED || self.remaining.load(Ordering::Relaxed) > 0 {
            doc
        } else {
            self.reached.store(true, Ordering::Relaxed);
            TERMINATED
        };
        self.doc
    }

    fn leave(&mut self) {
        let _ = self
            .remaining
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }
}

impl DocSet for TerminateAfterScorer {
    fn advance(&mut self) -> DocId {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        self.leave();
        let doc = self.scorer.advance();
        self.arrive(doc)
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc == TERMINATED || self.doc >= target {
            return self.doc;
        }
        self.leave();
        let doc = self.scorer.seek(target);
        self.arrive(doc)
    }

    fn doc(&self) -> DocId {
        self.doc
    }

    fn size_hint(&self) -> u32 {
        self.scorer
            .size_hint()
            .min(self.remaining.load(Ordering::Relaxed) as u32)
    }
}

impl Scorer for TerminateAfterScorer {
    fn score(&mut self) -> Score {
        self.scorer.score()
    }
}
