//! Top hits by score over a shard's segments, with the k-th best score carried from one
//! segment to the next: Lucene's `TopScoreDocCollector` keeps one queue over every leaf and
//! starts each new leaf's scorer at the queue's minimum competitive score, so block-max WAND
//! (and the `minimum_should_match` and intersection pruning) skips blocks that cannot enter
//! from a later segment's very first block. tantivy's `TopDocs::order_by_score` starts every
//! segment from nothing and re-learns its threshold.
//!
//! Exactness: hits rank by score, then by address (segment, then document), as ES ranks a
//! shard's hits. When segment `j` starts, the k-th best score `t` over the finished segments
//! before `j` is held by `k` documents that all rank ahead of any document of `j` scoring
//! `t` or less (a tie goes to the earlier segment), so `j` only needs documents scoring
//! strictly above `t`: exactly what `Weight::for_each_pruning` hands over (each pruning path
//! skips a block or a document when its bound is `<= threshold` and reports one when its
//! score is `> threshold`). Only segments with a lower ordinal feed a threshold, so the
//! result does not depend on the order an executor visits the segments in.
//!
//! In a collector tuple (a `Count` beside the hits) tantivy feeds every match through
//! [`SegmentCollector::collect`] instead; the hits are the same, without the carry.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use parking_lot::Mutex;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::query::Weight;
use tantivy::{DocAddress, DocId, Score, SegmentOrdinal, SegmentReader};

/// The best `limit` documents by score (ties by address), every segment starting at the
/// k-th best score of the segments before it.
pub struct TopScoreCarried {
    limit: usize,
    /// The scores each finished segment kept (at most `limit` each), with its ordinal.
    finished: Mutex<Vec<(SegmentOrdinal, Score)>>,
}

impl TopScoreCarried {
    pub fn new(limit: usize) -> TopScoreCarried {
        TopScoreCarried {
            limit,
            finished: Mutex::new(Vec::new()),
        }
    }

    /// The k-th best score over the finished segments before `segment_ord`, if they hold
    /// `limit` hits. A segment's own top `limit` suffice: a document below them has `limit`
    /// documents of its own segment ahead of it.
    pub(crate) fn carried_threshold(&self, segment_ord: SegmentOrdinal) -> Option<Score> {
        if self.limit == 0 {
            return None;
        }
        let mut before: Vec<Score> = self
            .finished
            .lock()
            .iter()
            .filter(|(ord, _)| *ord < segment_ord)
            .map(|&(_, score)| score)
            .collect();
        if before.len() < self.limit {
            return None;
        }
        let (_, kth, _) = before.select_nth_unstable_by(self.limit - 1, |a, b| by_score(*b, *a));
        Some(*kth)
    }
}

/// Scores compared the way tantivy's top-score collection compares them (incomparable
/// scores are equal).
fn by_score(a: Score, b: Score) -> Ordering {
    a.partial_cmp(&b).unwrap_or(Ordering::Equal)
}

impl Collector for TopScoreCarried {
    type Fruit = Vec<(Score, DocAddress)>;
    type Child = TopScoreSegment;

    fn for_segment(
        &self,
        segment_ord: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<TopScoreSegment> {
        Ok(TopScoreSegment::new(
            self.limit.min(reader.max_doc() as usize),
            segment_ord,
            self.carried_threshold(segment_ord),
        ))
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, fruits: Vec<Self::Fruit>) -> tantivy::Result<Self::Fruit> {
        let mut all: Vec<(Score, DocAddress)> = fruits.into_iter().flatten().collect();
        all.sort_unstable_by(|a, b| by_score(b.0, a.0).then(a.1.cmp(&b.1)));
        all.truncate(self.limit);
        Ok(all)
    }

    fn collect_segment(
        &self,
        weight: &dyn Weight,
        segment_ord: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<Self::Fruit> {
        let mut segment = self.for_segment(segment_ord, reader)?;
        if segment.limit > 0 {
            // `Score::MIN` when nothing is carried: what tantivy's own collection starts at.
            let start = segment.threshold();
            match reader.alive_bitset() {
                Some(alive) => weight.for_each_pruning(start, reader, &mut |doc, score| {
                    if alive.is_alive(doc) {
                        segment.push(doc, score);
                    }
                    segment.threshold()
                })?,
                None => weight.for_each_pruning(start, reader, &mut |doc, score| {
                    segment.push(doc, score);
                    segment.threshold()
                })?,
            }
        }
        let fruit = segment.harvest();
        self.finished
            .lock()
            .extend(fruit.iter().map(|&(score, _)| (segment_ord, score)));
        Ok(fruit)
    }
}

/// One segment's best documents: a min-heap holding the current worst of them on top.
pub struct TopScoreSegment {
    heap: BinaryHeap<Reverse<Ranked>>,
    limit: usize,
    segment_ord: SegmentOrdinal,
    /// The k-th best score of the earlier segments: a document needs more to enter.
    carried: Option<Score>,
}

impl TopScoreSegment {
    fn new(limit: usize, segment_ord: SegmentOrdinal, carried: Option<Score>) -> TopScoreSegment {
        TopScoreSegment {
            heap: BinaryHeap::with_capacity(limit),
            limit,
            segment_ord,
            carried,
        }
    }

    /// Keeps the document if it ranks among the best so far (in any order of arrival).
    fn push(&mut self, doc: DocId, score: Score) {
        if let Some(t) = self.carried {
            if score.partial_cmp(&t) != Some(Ordering::Greater) {
                return;
            }
        }
        let ranked = Ranked { score, doc };
        if self.heap.len() < self.limit {
            self.heap.push(Reverse(ranked));
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if ranked > worst.0 {
                *worst = Reverse(ranked);
            }
        }
    }

    /// The score a document must beat to enter: the carried score until the segment holds
    /// `limit` documents, then the worst of them (documents arrive in ascending order when
    /// pruning, so an equal score loses the tie).
    fn threshold(&self) -> Score {
        let carried = self.carried.unwrap_or(Score::MIN);
        match self.heap.peek() {
            Some(worst) if self.heap.len() == self.limit => carried.max(worst.0.score),
            _ => carried,
        }
    }
}

impl SegmentCollector for TopScoreSegment {
    type Fruit = Vec<(Score, DocAddress)>;

    fn collect(&mut self, doc: DocId, score: Score) {
        if self.limit > 0 {
            self.push(doc, score);
        }
    }

    fn harvest(self) -> Self::Fruit {
        let segment_ord = self.segment_ord;
        self.heap
            .into_iter()
            .map(|Reverse(r)| (r.score, DocAddress::new(segment_ord, r.doc)))
            .collect()
    }
}

/// A collected document: greater is better (a higher score, then a lower document id).
#[derive(Clone, Copy)]
struct Ranked {
    score: Score,
    doc: DocId,
}

impl Ord for Ranked {
    fn cmp(&self, other: &Ranked) -> Ordering {
        by_score(self.score, other.score).then_with(|| other.doc.cmp(&self.doc))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Ranked) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Ranked) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ranked {}
