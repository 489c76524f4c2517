//! Lode patch: `minimum_should_match` over optional clauses, as Lucene's `WANDScorer` runs it.
//!
//! A document matching at least `msm` of `n` clauses matches at least one of any
//! `n - msm + 1` of them. The `msm - 1` costliest clauses therefore never propose candidates
//! (the *tail*): candidates come from the cheaper *lead* clauses, and a tail clause is only
//! sought to a candidate, and only while the candidate can still reach `msm`. The heap
//! disjunction this replaces advanced every clause through every one of its documents.
//!
//! Collecting top hits (`for_each_pruning`), a clause also joins the tail while the tail's
//! score upper bounds sum to at most the competitive threshold: a document matching only
//! tail clauses could not enter the top hits, so the lead may shrink to the clauses a
//! competitive document must hold (with `msm` 2 of a rare and two common terms, once the
//! threshold passes the common terms' bounds, only the rare term's documents are visited).
//! Within that, documents go by windows of the clauses' block bounds (block-max WAND, as
//! Lucene's `WANDScorer` with impacts): a window none of whose documents can beat the
//! threshold is passed over, and a candidate is dropped once its known scores and the block
//! bounds of the clauses not yet sought cannot.

use crate::query::score_combiner::ScoreCombiner;
use crate::query::Scorer;
use crate::{DocId, DocSet, Score, TERMINATED};

/// Documents matching at least `msm` of the scorers; the score combines the matching
/// clauses' scores in clause order.
pub struct MinShouldMatchScorer<TScoreCombiner> {
    scorers: Vec<Box<dyn Scorer>>,
    msm: usize,
    /// Per clause: whether it is in the tail (never leads a candidate).
    in_tail: Vec<bool>,
    /// Lead clause indices.
    lead: Vec<usize>,
    /// Tail clause indices, in the order they are sought.
    tail: Vec<usize>,
    doc: DocId,
    combiner: TScoreCombiner,
}

impl<TScoreCombiner: ScoreCombiner> MinShouldMatchScorer<TScoreCombiner> {
    /// `msm` must be at least 2 and below `scorers.len()` (other cases are a union or a
    /// conjunction).
    pub fn new(
        scorers: Vec<Box<dyn Scorer>>,
        msm: usize,
        combiner: TScoreCombiner,
    ) -> MinShouldMatchScorer<TScoreCombiner> {
        debug_assert!(msm >= 2 && msm < scorers.len());
        let n = scorers.len();
        let mut scorer = MinShouldMatchScorer {
            scorers,
            msm,
            in_tail: vec![false; n],
            lead: Vec::with_capacity(n),
            tail: Vec::with_capacity(n),
            doc: 0,
            combiner,
        };
        scorer.partition(None, 0.0);
        scorer.doc = scorer.next_match(0);
        scorer
    }

    /// Splits the clauses into lead and tail. Costliest first, a clause joins the tail while
    /// the tail holds fewer than `msm` clauses, or (with a `threshold`) while a document
    /// matching only tail clauses cannot score above the threshold. Returns false when every
    /// clause fits in the tail, i.e. no document can be competitive.
    /// `extra` bounds what a required clause adds to a document's score.
    fn partition(&mut self, threshold: Option<Score>, extra: Score) -> bool {
        let mut by_cost: Vec<usize> = (0..self.scorers.len()).collect();
        by_cost.sort_by_key(|&i| std::cmp::Reverse(self.scorers[i].cost()));
        self.lead.clear();
        self.tail.clear();
        self.in_tail.iter_mut().for_each(|t| *t = false);
        for i in by_cost {
            let fits_count = self.tail.len() + 1 < self.msm;
            let fits_score = threshold.is_some_and(|t| {
                self.in_tail[i] = true;
                let bounds = self.scorers.iter().map(|s| s.score_upper_bound().max(0.0));
                let fits = clause_order_sum(bounds, &self.in_tail) + extra <= t;
                self.in_tail[i] = false;
                fits
            });
            if fits_count || fits_score {
                self.tail.push(i);
                self.in_tail[i] = true;
            } else {
                self.lead.push(i);
            }
        }
        // The tail is sought cheapest first: the likeliest to end a candidate early.
        self.tail.reverse();
        !self.lead.is_empty()
    }

    /// Moves every lead clause to `target` or beyond and returns the smallest lead document.
    fn lead_to(&mut self, target: DocId) -> DocId {
        let mut min = TERMINATED;
        for &i in &self.lead {
            let s = &mut self.scorers[i];
            let mut d = s.doc();
            if d < target {
                d = if d + 1 == target {
                    s.advance()
                } else {
                    s.seek(target)
                };
            }
            min = min.min(d);
        }
        min
    }

    /// Whether clause `i` matches `doc`, seeking it there if it is behind.
    fn clause_matches(&mut self, i: usize, doc: DocId) -> bool {
        let s = &mut self.scorers[i];
        let d = s.doc();
        if d < doc {
            s.seek(doc) == doc
        } else {
            d == doc
        }
    }

    /// The first document at or after `target` matching at least `msm` clauses.
    fn next_match(&mut self, mut target: DocId) -> DocId {
        loop {
            let candidate = self.lead_to(target);
            if candidate == TERMINATED {
                return TERMINATED;
            }
            let mut count = self
                .lead
                .iter()
                .filter(|&&i| self.scorers[i].doc() == candidate)
                .count();
            let mut remaining = self.tail.len();
            for k in 0..self.tail.len() {
                if count >= self.msm || count + remaining < self.msm {
                    break;
                }
                remaining -= 1;
                if self.clause_matches(self.tail[k], candidate) {
                    count += 1;
                }
            }
            if count >= self.msm {
                return candidate;
            }
            target = candidate + 1;
        }
    }

    /// The combined score of the clauses matching `doc` (the current document), in clause
    /// order; tail clauses not yet sought are sought.
    fn score_at(&mut self, doc: DocId) -> Score {
        self.combiner.clear();
        for i in 0..self.scorers.len() {
            let matches = if self.in_tail[i] {
                self.clause_matches(i, doc)
            } else {
                self.scorers[i].doc() == doc
            };
            if matches {
                self.combiner.update(&mut self.scorers[i]);
            }
        }
        self.combiner.score()
    }

    /// Moves every lead clause to `target` or beyond by `seek` (block bounds move the term
    /// scorers' skip lists, which `advance` would step from) and returns the smallest lead
    /// document.
    fn seek_lead(&mut self, target: DocId) -> DocId {
        let mut min = TERMINATED;
        for &i in &self.lead {
            let s = &mut self.scorers[i];
            let d = if s.doc() < target {
                s.seek(target)
            } else {
                s.doc()
            };
            min = min.min(d);
        }
        min
    }

    /// Calls `callback` with the matches scoring above `threshold` (which `callback` returns
    /// anew), skipping documents that cannot reach it. Only for a summing combiner.
    ///
    /// Documents go by windows: the span where every clause's block bound holds
    /// ([`Scorer::block_upper_bound`], a term's block maximum from its skip list). A window
    /// whose bounds cannot lift a document above the threshold is passed over without
    /// decoding a posting; in the others a candidate from the lead is dropped as soon as its
    /// lead scores and the unsought tail clauses' block bounds cannot. Bounds add up as the
    /// scores do: in `f32`, in clause order, over the clauses that may still match. Rounding
    /// to nearest is monotonic, so that sum is never below the document's own score, and a
    /// document is skipped only when it cannot score above the threshold (ties lose to the
    /// earlier documents already collected).
    ///
    /// With `required` (the `must` and `filter` clauses' conjunction) a document must match
    /// it too and scores its score plus this one's, as their intersection does; a document
    /// matching one of `excluded` (`must_not`) is not collected.
    pub fn for_each_pruning(
        &mut self,
        mut threshold: Score,
        mut required: Option<&mut Box<dyn Scorer>>,
        excluded: &mut [Box<dyn Scorer>],
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) {
        debug_assert!(TScoreCombiner::SUPPORTS_BLOCK_WAND);
        let n = self.scorers.len();
        let global: Vec<Score> = self.scorers.iter().map(|s| s.score_upper_bound()).collect();
        let required_global = required
            .as_ref()
            .map_or(0.0, |r| r.score_upper_bound().max(0.0));
        let mut required_end: DocId = 0;
        let mut required_bound: Score = 0.0;
        if !self.partition(Some(threshold), required_global) {
            self.doc = TERMINATED;
            return;
        }
        // Tail clauses by decreasing bound: the bound left falls fastest.
        let order_tail = |this: &mut Self| {
            this.tail.sort_by(|&a, &b| global[b].total_cmp(&global[a]));
        };
        order_tail(self);
        let mut block_end: Vec<DocId> = vec![0; n];
        let mut block_bound: Vec<Score> = vec![0.0; n];
        let mut fresh = true;
        // Per clause, for the candidate: what it may add (its score once read, 0 when it
        // does not match, its block bound while unsought).
        let mut part: Vec<Score> = vec![0.0; n];
        let mut matched: Vec<bool> = vec![false; n];
        let mut target = self.doc;
        while target != TERMINATED {
            // The window from `target`: every clause's block bound holds up to `window_end`.
            let mut window_end = TERMINATED;
            for i in 0..n {
                if fresh || block_end[i] < target {
                    let (end, bound) = self.scorers[i].block_upper_bound(target);
                    block_end[i] = end;
                    block_bound[i] = bound.max(0.0);
                }
                window_end = window_end.min(block_end[i]);
            }
            if let Some(r) = required.as_mut() {
                if fresh || required_end < target {
                    let (end, bound) = r.block_upper_bound(target);
                    required_end = end;
                    required_bound = bound.max(0.0);
                }
                window_end = window_end.min(required_end);
            }
            fresh = false;
            let window_bound = clause_order_sum(block_bound.iter().copied(), &[]) + required_bound;
            if window_bound <= threshold {
                if window_end >= TERMINATED {
                    break;
                }
                target = window_end + 1;
                continue;
            }
            let candidate = self.seek_lead(target);
            if candidate == TERMINATED {
                break;
            }
            if candidate > window_end {
                target = candidate;
                continue;
            }
            let mut required_score: Score = 0.0;
            if let Some(r) = required.as_mut() {
                let d = if r.doc() < candidate {
                    r.seek(candidate)
                } else {
                    r.doc()
                };
                if d != candidate {
                    target = d;
                    continue;
                }
                required_score = r.score();
            }
            target = candidate + 1;
            let mut count = 0;
            for i in 0..n {
                matched[i] = false;
                part[i] = if self.in_tail[i] {
                    block_bound[i]
                } else if self.scorers[i].doc() == candidate {
                    matched[i] = true;
                    count += 1;
                    self.scorers[i].score()
                } else {
                    0.0
                };
            }
            let mut competitive = true;
            for k in 0..self.tail.len() {
                let remaining = self.tail.len() - k;
                if count + remaining < self.msm
                    || clause_order_sum(part.iter().copied(), &[]) + required_score <= threshold
                {
                    competitive = false;
                    break;
                }
                let i = self.tail[k];
                part[i] = if self.clause_matches(i, candidate) {
                    matched[i] = true;
                    count += 1;
                    self.scorers[i].score()
                } else {
                    0.0
                };
            }
            if !competitive || count < self.msm {
                continue;
            }
            self.combiner.clear();
            for i in 0..n {
                if matched[i] {
                    self.combiner.update(&mut Fixed(part[i]));
                }
            }
            let score = self.combiner.score() + required_score;
            if score > threshold && !excluded.iter_mut().any(|e| matches_at(e, candidate)) {
                let next = callback(candidate, score);
                if next != threshold {
                    threshold = next;
                    if !self.partition(Some(threshold), required_global) {
                        break;
                    }
                    order_tail(self);
                }
            }
        }
        self.doc = TERMINATED;
    }
}

/// Whether `scorer` matches `doc`, seeking it there if it is behind.
fn matches_at(scorer: &mut Box<dyn Scorer>, doc: DocId) -> bool {
    if scorer.doc() < doc {
        scorer.seek(doc) == doc
    } else {
        scorer.doc() == doc
    }
}

/// The sum of the clauses' `parts` in clause order, as the summing combiner adds scores,
/// over the clauses `keep` marks (all of them when `keep` is empty).
fn clause_order_sum(parts: impl Iterator<Item = Score>, keep: &[bool]) -> Score {
    let mut sum: Score = 0.0;
    for (i, p) in parts.enumerate() {
        if keep.get(i).copied().unwrap_or(true) {
            sum += p;
        }
    }
    sum
}

/// A clause score already read, handed to the combiner.
struct Fixed(Score);

impl DocSet for Fixed {
    fn advance(&mut self) -> DocId {
        TERMINATED
    }
    fn doc(&self) -> DocId {
        TERMINATED
    }
    fn size_hint(&self) -> u32 {
        0
    }
}

impl Scorer for Fixed {
    fn score(&mut self) -> Score {
        self.0
    }
}

impl<TScoreCombiner: ScoreCombiner> DocSet for MinShouldMatchScorer<TScoreCombiner> {
    fn advance(&mut self) -> DocId {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        self.doc = self.next_match(self.doc + 1);
        self.doc
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc >= target {
            return self.doc;
        }
        self.doc = self.next_match(target);
        self.doc
    }

    fn doc(&self) -> DocId {
        self.doc
    }

    fn size_hint(&self) -> u32 {
        self.lead
            .iter()
            .map(|&i| self.scorers[i].size_hint())
            .fold(0u32, u32::saturating_add)
    }

    fn cost(&self) -> u64 {
        self.lead
            .iter()
            .map(|&i| self.scorers[i].cost())
            .fold(0u64, u64::saturating_add)
    }
}

impl<TScoreCombiner: ScoreCombiner> Scorer for MinShouldMatchScorer<TScoreCombiner> {
    fn score(&mut self) -> Score {
        let doc = self.doc;
        self.score_at(doc)
    }

    fn score_upper_bound(&self) -> Score {
        if !TScoreCombiner::SUPPORTS_BLOCK_WAND {
            return Score::INFINITY;
        }
        self.scorers.iter().map(|s| s.score_upper_bound()).sum()
    }
}
