//! Stopping a shard's collection early, for the search body's `terminate_after` and
//! `timeout`. `terminate_after`: a shard stops after that many matching documents (in index
//! order, as ES's early-terminating collector), and every collector of the pass (count, hits,
//! aggregations) sees the same documents; the budget lives in the weight, so one weight is
//! one shard's pass over its segments, whatever collectors share it. `timeout`: a shard stops
//! at the deadline (checked every 256 documents and at each segment), keeping what it
//! collected, as ES's time-limited searcher returns partial results. Cancellation (a task's
//! `_cancel`, a closed client connection): a shard stops at the same checks as the deadline,
//! noting `cancelled`; the caller turns that into ES's `task_cancelled_exception`.

use lode_engine::cancel::CancelToken;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{
    DocId, DocSet, Score, SeekDangerResult, SegmentReader, COLLECT_BLOCK_BUFFER_LEN, TERMINATED,
};

/// Why collections stopped, shared by every shard of a request.
#[derive(Debug, Default)]
pub struct Stopped {
    /// Some shard had more matches than `terminate_after` (`terminated_early`).
    pub terminated: AtomicBool,
    /// Some shard reached the deadline (`timed_out`).
    pub timed_out: AtomicBool,
    /// Some shard saw the request's cancellation token set.
    pub cancelled: AtomicBool,
}

#[derive(Debug)]
pub struct EarlyStopQuery {
    query: Box<dyn Query>,
    max_docs: Option<u64>,
    deadline: Option<Instant>,
    cancel: Option<CancelToken>,
    stopped: Arc<Stopped>,
}

impl EarlyStopQuery {
    pub fn new(
        query: Box<dyn Query>,
        max_docs: Option<u64>,
        deadline: Option<Instant>,
        cancel: Option<CancelToken>,
        stopped: Arc<Stopped>,
    ) -> EarlyStopQuery {
        EarlyStopQuery {
            query,
            max_docs,
            deadline,
            cancel,
            stopped,
        }
    }
}

impl EarlyStopQuery {
    /// The query this one watches, when only a cancellation token watches it: what it
    /// matches and counts is the watched query's, so its fast paths apply.
    pub fn watched(&self) -> Option<&dyn Query> {
        (self.max_docs.is_none() && self.deadline.is_none()).then_some(&*self.query)
    }
}

/// Whether `q` matches every document with the score 1 (`match_all`), seen through a
/// cancellation-only watch.
pub fn planned_match_all(q: &dyn Query) -> bool {
    match q.downcast_ref::<EarlyStopQuery>() {
        Some(watch) => watch.watched().is_some_and(planned_match_all),
        None => q.is::<tantivy::query::AllQuery>(),
    }
}

/// `q` under the same cancellation token as the cancellation-only watch `like` (as it is when
/// `like` is not such a watch): a query that stands in for `like` stays cancellable.
pub fn watched_like(like: &dyn Query, q: Box<dyn Query>) -> Box<dyn Query> {
    match like.downcast_ref::<EarlyStopQuery>() {
        Some(watch) if watch.watched().is_some() => Box::new(EarlyStopQuery {
            query: q,
            max_docs: None,
            deadline: None,
            cancel: watch.cancel.clone(),
            stopped: watch.stopped.clone(),
        }),
        _ => q,
    }
}

/// A segment's live matches counted by stepping through `weight`'s scorer (tantivy's own
/// `Weight::count`), for weights whose cheap count does not apply.
pub(crate) fn scan_count(weight: &dyn Weight, reader: &SegmentReader) -> tantivy::Result<u32> {
    let mut scorer = weight.scorer(reader, 1.0)?;
    Ok(match reader.alive_bitset() {
        Some(alive) => scorer.count(alive),
        None => scorer.count_including_deleted(),
    })
}

/// Whether `scorer` matches every document of its segment (tantivy's [`AllScorer`]), seen
/// through a cancellation-only watch.
///
/// [`AllScorer`]: tantivy::query::AllScorer
pub fn matches_every_doc(scorer: &dyn Scorer) -> bool {
    match scorer.downcast_ref::<EarlyStopScorer>() {
        Some(watch) => watch.watched().is_some_and(matches_every_doc),
        None => scorer.is::<tantivy::query::AllScorer>(),
    }
}

/// A token-only watch's checks, taken over by a consumer that checks between its own steps.
pub struct TokenCheck {
    cancel: CancelToken,
    stopped: Arc<Stopped>,
}

impl TokenCheck {
    /// Whether the request is cancelled (noting it, as the watch would).
    pub fn cancelled(&self) -> bool {
        let c = self.cancel.is_cancelled();
        if c {
            self.stopped.cancelled.store(true, Ordering::Relaxed);
        }
        c
    }
}

/// The scorer a token-only watch watches, with the checks it would have made, for a consumer
/// that checks the token itself between its own steps (the sorted-page walk, per chunk): the
/// watch's per-document bookkeeping is a sixth of a walk's check. Any other scorer (a budget
/// or a deadline charges every document) comes back as it is.
pub fn unwatched(scorer: Box<dyn Scorer>) -> (Box<dyn Scorer>, Option<TokenCheck>) {
    match scorer.downcast::<EarlyStopScorer>() {
        Ok(watch) if watch.cancel_only() && watch.doc == watch.scorer.doc() => {
            let watch = *watch;
            let check = watch.cancel.map(|cancel| TokenCheck {
                cancel,
                stopped: watch.stopped,
            });
            (watch.scorer, check)
        }
        Ok(watch) => (watch, None),
        Err(other) => (other, None),
    }
}

impl Clone for EarlyStopQuery {
    fn clone(&self) -> Self {
        EarlyStopQuery {
            query: self.query.box_clone(),
            max_docs: self.max_docs,
            deadline: self.deadline,
            cancel: self.cancel.clone(),
            stopped: self.stopped.clone(),
        }
    }
}

impl Query for EarlyStopQuery {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(EarlyStopWeight {
            weight: self.query.weight(enable_scoring)?,
            remaining: Arc::new(AtomicU64::new(self.max_docs.unwrap_or(u64::MAX))),
            budgeted: self.max_docs.is_some(),
            deadline: self.deadline,
            cancel: self.cancel.clone(),
            stopped: self.stopped.clone(),
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a tantivy::Term, bool)) {
        self.query.query_terms(visitor);
    }
}

struct EarlyStopWeight {
    weight: Box<dyn Weight>,
    remaining: Arc<AtomicU64>,
    /// `terminate_after` was given.
    budgeted: bool,
    deadline: Option<Instant>,
    cancel: Option<CancelToken>,
    stopped: Arc<Stopped>,
}

impl Weight for EarlyStopWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let mut scorer = EarlyStopScorer {
            scorer: self.weight.scorer(reader, boost)?,
            remaining: self.remaining.clone(),
            budgeted: self.budgeted,
            deadline: self.deadline,
            cancel: self.cancel.clone(),
            stopped: self.stopped.clone(),
            doc: TERMINATED,
            since_clock: 0,
        };
        scorer.arrive(scorer.scorer.doc());
        Ok(Box::new(scorer))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        self.weight.explain(reader, doc)
    }

    /// With only a cancellation token (no budget, no deadline: every search has one), the
    /// wrapped query's own count (a term's document frequency) is kept, checked per segment.
    fn count(&self, reader: &SegmentReader) -> tantivy::Result<u32> {
        if self.cancel_only() {
            if self.cancelled() {
                return Ok(0);
            }
            return self.weight.count(reader);
        }
        scan_count(self, reader)
    }

    /// With only a cancellation token, the wrapped query keeps its own iteration (a union of
    /// terms is driven in blocks); once cancelled, the rest of the segment is passed over
    /// without being collected.
    fn for_each(
        &self,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score),
    ) -> tantivy::Result<()> {
        if self.cancel_only() {
            if self.cancelled() {
                return Ok(());
            }
            let (mut since_check, mut stopped) = (0u32, false);
            return self.weight.for_each(reader, &mut |doc, score| {
                since_check = (since_check + 1) % 1024;
                stopped = stopped || (since_check == 0 && self.cancelled());
                if !stopped {
                    callback(doc, score)
                }
            });
        }
        let mut scorer = self.scorer(reader, 1.0)?;
        let mut doc = scorer.doc();
        while doc != TERMINATED {
            callback(doc, scorer.score());
            doc = scorer.advance();
        }
        Ok(())
    }

    /// As [`Self::for_each`], a block of documents at a time.
    fn for_each_no_score(
        &self,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(&[DocId]),
    ) -> tantivy::Result<()> {
        if self.cancel_only() {
            if self.cancelled() {
                return Ok(());
            }
            let mut stopped = false;
            return self.weight.for_each_no_score(reader, &mut |docs| {
                stopped = stopped || self.cancelled();
                if !stopped {
                    callback(docs)
                }
            });
        }
        let mut scorer = self.scorer(reader, 1.0)?;
        let mut buffer = [0; COLLECT_BLOCK_BUFFER_LEN];
        loop {
            let n = scorer.fill_buffer(&mut buffer);
            if n == 0 {
                return Ok(());
            }
            callback(&buffer[..n]);
        }
    }

    /// With only a cancellation token, the wrapped query keeps its pruning (block-max WAND);
    /// once cancelled, the threshold becomes infinite so no further document competes.
    fn for_each_pruning(
        &self,
        threshold: Score,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) -> tantivy::Result<()> {
        if self.cancel_only() {
            if self.cancelled() {
                return Ok(());
            }
            let mut since_check = 0u32;
            return self
                .weight
                .for_each_pruning(threshold, reader, &mut |doc, score| {
                    since_check = (since_check + 1) % 256;
                    if since_check == 0 && self.cancelled() {
                        return Score::INFINITY;
                    }
                    callback(doc, score)
                });
        }
        let mut scorer = self.scorer(reader, 1.0)?;
        let mut threshold = threshold;
        let mut doc = scorer.doc();
        while doc != TERMINATED {
            let score = scorer.score();
            if score > threshold {
                threshold = callback(doc, score);
            }
            doc = scorer.advance();
        }
        Ok(())
    }
}

impl EarlyStopWeight {
    fn cancel_only(&self) -> bool {
        self.deadline.is_none() && !self.budgeted
    }

    /// Whether the request is cancelled (noting it in `stopped`).
    fn cancelled(&self) -> bool {
        let c = self.cancel.as_ref().is_some_and(|c| c.is_cancelled());
        if c {
            self.stopped.cancelled.store(true, Ordering::Relaxed);
        }
        c
    }
}

/// A document is charged to the budget when the scorer moves past it, not when it arrives:
/// a scorer only probed (built, looked at, dropped) costs nothing.
pub struct EarlyStopScorer {
    scorer: Box<dyn Scorer>,
    remaining: Arc<AtomicU64>,
    /// `terminate_after` was given: each document passed is charged to `remaining`.
    budgeted: bool,
    deadline: Option<Instant>,
    cancel: Option<CancelToken>,
    stopped: Arc<Stopped>,
    doc: DocId,
    /// Documents since the clock was last read.
    since_clock: u32,
}

impl EarlyStopScorer {
    /// Only a cancellation token watches this scorer (no budget, no deadline): every search
    /// has one, so it must cost next to nothing and hide no fast path of the scorer it wraps.
    fn cancel_only(&self) -> bool {
        !self.budgeted && self.deadline.is_none()
    }

    /// The scorer this one watches, when only a cancellation token watches it: fast paths
    /// that recognise a scorer (a segment's every document, [`AllScorer`]) look through it.
    ///
    /// [`AllScorer`]: tantivy::query::AllScorer
    pub fn watched(&self) -> Option<&dyn Scorer> {
        self.cancel_only().then_some(&*self.scorer)
    }

    /// Makes `doc` current if the budget has room for it, the deadline has not passed and the
    /// request is not cancelled (both checked every 256 documents and at each segment); a
    /// spent budget ends the segment (and the shard: the budget is shared by its segments).
    fn arrive(&mut self, doc: DocId) -> DocId {
        self.doc = doc;
        if doc == TERMINATED {
            return doc;
        }
        if self.budgeted && self.remaining.load(Ordering::Relaxed) == 0 {
            self.stopped.terminated.store(true, Ordering::Relaxed);
            self.doc = TERMINATED;
        } else if self.deadline.is_some() || self.cancel.is_some() {
            if self.since_clock == 0 {
                if self.cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
                    self.stopped.cancelled.store(true, Ordering::Relaxed);
                    self.doc = TERMINATED;
                } else if self.deadline.is_some_and(|d| Instant::now() >= d) {
                    self.stopped.timed_out.store(true, Ordering::Relaxed);
                    self.doc = TERMINATED;
                }
            }
            self.since_clock = (self.since_clock + 1) % 256;
        }
        self.doc
    }

    fn leave(&mut self) {
        if !self.budgeted {
            return;
        }
        let _ = self
            .remaining
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }
}

impl DocSet for EarlyStopScorer {
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

    /// The watched scorer's own `seek_danger` (a point lookup where `seek` would scan on)
    /// when only a token watches; otherwise tantivy's default, through `seek`.
    fn seek_danger(&mut self, target: DocId) -> SeekDangerResult {
        if !self.cancel_only() {
            if target >= TERMINATED {
                return SeekDangerResult::SeekLowerBound(target);
            }
            let mut doc = self.doc();
            if doc < target {
                doc = self.seek(target);
            }
            return if doc == target {
                SeekDangerResult::Found
            } else {
                SeekDangerResult::SeekLowerBound(doc)
            };
        }
        if self.doc == TERMINATED {
            return SeekDangerResult::SeekLowerBound(TERMINATED);
        }
        let found = self.scorer.seek_danger(target);
        let at = match found {
            SeekDangerResult::Found => target,
            SeekDangerResult::SeekLowerBound(d) => d,
        };
        // After a lower bound the watched scorer may sit between documents; the contract
        // allows only `seek_danger` until it finds one, so `doc` is not read meanwhile.
        if self.arrive(at) == TERMINATED {
            return SeekDangerResult::SeekLowerBound(TERMINATED);
        }
        found
    }

    /// A block at a time from the watched scorer (its own batched path, such as every
    /// document of a segment), the token checked per block.
    fn fill_buffer(&mut self, buffer: &mut [DocId; COLLECT_BLOCK_BUFFER_LEN]) -> usize {
        if !self.cancel_only() || self.doc == TERMINATED {
            return default_fill_buffer(self, buffer);
        }
        if self.cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
            self.stopped.cancelled.store(true, Ordering::Relaxed);
            self.doc = TERMINATED;
            return 0;
        }
        let n = self.scorer.fill_buffer(buffer);
        self.doc = self.scorer.doc();
        n
    }

    fn doc(&self) -> DocId {
        self.doc
    }

    fn size_hint(&self) -> u32 {
        self.scorer
            .size_hint()
            .min(self.remaining.load(Ordering::Relaxed).min(u32::MAX as u64) as u32)
    }

    /// The watched scorer's estimate (what a walk budgets by), capped by the budget.
    fn cost(&self) -> u64 {
        self.scorer
            .cost()
            .min(self.remaining.load(Ordering::Relaxed))
    }
}

/// tantivy's default `fill_buffer` (advance by advance), for the scorers that charge or time
/// every document.
fn default_fill_buffer(
    scorer: &mut EarlyStopScorer,
    buffer: &mut [DocId; COLLECT_BLOCK_BUFFER_LEN],
) -> usize {
    if scorer.doc() == TERMINATED {
        return 0;
    }
    for (i, slot) in buffer.iter_mut().enumerate() {
        *slot = scorer.doc();
        if scorer.advance() == TERMINATED {
            return i + 1;
        }
    }
    buffer.len()
}

impl Scorer for EarlyStopScorer {
    fn score(&mut self) -> Score {
        self.scorer.score()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::query::{AllQuery, TermQuery};
    use tantivy::schema::{IndexRecordOption, Schema, STRING};
    use tantivy::{doc, Index, Term};

    /// 300 documents, `k` = "even" or "odd".
    fn index() -> (Index, tantivy::schema::Field) {
        let mut schema = Schema::builder();
        let k = schema.add_text_field("k", STRING);
        let index = Index::create_in_ram(schema.build());
        // One indexing thread: one segment.
        let mut w: tantivy::IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        for i in 0..300 {
            w.add_document(doc!(k => if i % 2 == 0 { "even" } else { "odd" }))
                .unwrap();
        }
        w.commit().unwrap();
        (index, k)
    }

    fn watch(q: Box<dyn Query>, deadline: Option<Instant>, token: &CancelToken) -> EarlyStopQuery {
        EarlyStopQuery::new(q, None, deadline, Some(token.clone()), Arc::default())
    }

    fn no_score_docs(q: &dyn Query, searcher: &tantivy::Searcher) -> usize {
        let w = q
            .weight(EnableScoring::disabled_from_searcher(searcher))
            .unwrap();
        let mut n = 0;
        w.for_each_no_score(searcher.segment_reader(0), &mut |docs| n += docs.len())
            .unwrap();
        n
    }

    #[test]
    fn a_cancellation_only_watch_keeps_the_fast_paths_of_what_it_watches() {
        let (index, _) = index();
        let searcher = index.reader().unwrap().searcher();
        let seg = searcher.segment_reader(0);
        let token = CancelToken::new();
        let q = watch(Box::new(AllQuery), None, &token);
        assert_eq!(crate::cheap_count(&q, seg).unwrap(), Some(300));
        let w = q
            .weight(EnableScoring::disabled_from_searcher(&searcher))
            .unwrap();
        assert!(matches_every_doc(&*w.scorer(seg, 1.0).unwrap()));
        assert_eq!(no_score_docs(&q, &searcher), 300);
        // A deadline charges every document: no shortcut may bypass it.
        let timed = watch(Box::new(AllQuery), Some(Instant::now()), &token);
        assert_eq!(crate::cheap_count(&timed, seg).unwrap(), None);
        let w = timed
            .weight(EnableScoring::disabled_from_searcher(&searcher))
            .unwrap();
        assert!(!matches_every_doc(&*w.scorer(seg, 1.0).unwrap()));
    }

    #[test]
    fn a_cancelled_watch_stops_collection_and_says_so() {
        let (index, k) = index();
        let searcher = index.reader().unwrap().searcher();
        let token = CancelToken::new();
        let stopped = Arc::<Stopped>::default();
        let term = TermQuery::new(Term::from_field_text(k, "even"), IndexRecordOption::Basic);
        let q = EarlyStopQuery::new(
            Box::new(term),
            None,
            None,
            Some(token.clone()),
            stopped.clone(),
        );
        assert_eq!(no_score_docs(&q, &searcher), 150);
        assert!(!stopped.cancelled.load(Ordering::Relaxed));
        token.cancel("by user request");
        assert_eq!(no_score_docs(&q, &searcher), 0);
        assert!(stopped.cancelled.load(Ordering::Relaxed));
    }

    #[test]
    fn seek_danger_through_a_watch_finds_and_bounds_as_the_watched_scorer() {
        let (index, k) = index();
        let searcher = index.reader().unwrap().searcher();
        let token = CancelToken::new();
        let term = TermQuery::new(Term::from_field_text(k, "odd"), IndexRecordOption::Basic);
        let q = watch(Box::new(term), None, &token);
        let w = q
            .weight(EnableScoring::disabled_from_searcher(&searcher))
            .unwrap();
        let mut s = w.scorer(searcher.segment_reader(0), 1.0).unwrap();
        assert_eq!(s.doc(), 1);
        assert!(matches!(s.seek_danger(5), SeekDangerResult::Found));
        match s.seek_danger(8) {
            SeekDangerResult::SeekLowerBound(d) => assert!(d > 8 && d <= 9),
            SeekDangerResult::Found => panic!("8 is even"),
        }
        assert!(matches!(s.seek_danger(9), SeekDangerResult::Found));
        assert_eq!(s.seek(11), 11);
    }
}
