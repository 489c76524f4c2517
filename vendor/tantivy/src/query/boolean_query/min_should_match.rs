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
        scorer.partition(None);
        scorer.doc = scorer.next_match(0);
        scorer
    }

    /// Splits the clauses into lead and tail. Costliest first, a clause joins the tail while
    /// the tail holds fewer than `msm` clauses, or (with a `threshold`) while the tail's upper
    /// bounds sum to at most the threshold. Returns false when every clause fits in the tail,
    /// i.e. no document can be competitive.
    fn partition(&mut self, threshold: Option<Score>) -> bool {
        let mut by_cost: Vec<usize> = (0..self.scorers.len()).collect();
        by_cost.sort_by_key(|&i| std::cmp::Reverse(self.scorers[i].cost()));
        self.lead.clear();
        self.tail.clear();
        let mut tail_bound = 0f64;
        for i in by_cost {
            let bound = f64::from(self.scorers[i].score_upper_bound());
            let fits_count = self.tail.len() + 1 < self.msm;
            let fits_score = threshold.is_some_and(|t| below(tail_bound + bound, t));
            if fits_count || fits_score {
                self.tail.push(i);
                tail_bound += bound;
            } else {
                self.lead.push(i);
            }
        }
        for (i, t) in self.in_tail.iter_mut().enumerate() {
            *t = self.tail.contains(&i);
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

    /// Calls `callback` with the matches scoring above `threshold` (which `callback` returns
    /// anew), skipping documents that cannot reach it. Only for a summing combiner.
    pub fn for_each_pruning(
        &mut self,
        mut threshold: Score,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) {
        debug_assert!(TScoreCombiner::SUPPORTS_BLOCK_WAND);
        let bounds: Vec<f64> = self
            .scorers
            .iter()
            .map(|s| f64::from(s.score_upper_bound()))
            .collect();
        if !self.partition(Some(threshold)) {
            return;
        }
        let mut target = self.doc;
        // Tail clauses by decreasing bound: the bound left falls fastest.
        let order_tail = |this: &mut Self| {
            this.tail
                .sort_by(|&a, &b| bounds[b].total_cmp(&bounds[a]));
        };
        order_tail(self);
        let mut partial: Vec<Score> = vec![0.0; self.scorers.len()];
        let mut matched: Vec<bool> = vec![false; self.scorers.len()];
        loop {
            let candidate = self.lead_to(target);
            if candidate == TERMINATED {
                self.doc = TERMINATED;
                return;
            }
            target = candidate + 1;
            let mut count = 0;
            let mut sum = 0f64;
            for (i, m) in matched.iter_mut().enumerate() {
                *m = !self.in_tail[i] && self.scorers[i].doc() == candidate;
                if *m {
                    partial[i] = self.scorers[i].score();
                    sum += f64::from(partial[i]);
                    count += 1;
                }
            }
            let mut remaining = self.tail.len();
            let mut remaining_bound: f64 = self.tail.iter().map(|&i| bounds[i]).sum();
            let mut competitive = true;
            for k in 0..self.tail.len() {
                if count + remaining < self.msm || below(sum + remaining_bound, threshold) {
                    competitive = false;
                    break;
                }
                let i = self.tail[k];
                remaining -= 1;
                remaining_bound -= bounds[i];
                if self.clause_matches(i, candidate) {
                    matched[i] = true;
                    partial[i] = self.scorers[i].score();
                    sum += f64::from(partial[i]);
                    count += 1;
                }
            }
            if !competitive || count < self.msm {
                continue;
            }
            self.combiner.clear();
            for (i, &m) in matched.iter().enumerate() {
                if m {
                    self.combiner.update(&mut Fixed(partial[i]));
                }
            }
            let score = self.combiner.score();
            if score > threshold {
                let next = callback(candidate, score);
                if next != threshold {
                    threshold = next;
                    if !self.partition(Some(threshold)) {
                        self.doc = TERMINATED;
                        return;
                    }
                    order_tail(self);
                }
            }
        }
    }
}

/// Whether a sum of upper bounds cannot exceed `threshold`, allowing for the rounding of the
/// scores' own (f32) sums: a document is only skipped when its bound is below the threshold by
/// more than that.
fn below(bound: f64, threshold: Score) -> bool {
    bound * (1.0 + 1e-5) <= f64::from(threshold)
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
