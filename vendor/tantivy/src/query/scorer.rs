use std::ops::DerefMut;

use downcast_rs::impl_downcast;

use crate::docset::DocSet;
use crate::{DocId, Score, TERMINATED};

/// Scored set of documents matching a query within a specific segment.
///
/// See [`Query`](crate::query::Query).
pub trait Scorer: downcast_rs::Downcast + DocSet + 'static {
    /// Returns the score.
    ///
    /// This method will perform a bit of computation and is not cached.
    fn score(&mut self) -> Score;

    /// Lode patch: a score no document of this scorer exceeds (`INFINITY` when unknown), for
    /// the pruning of `minimum_should_match` disjunctions (Lucene's `Scorer#getMaxScore`).
    fn score_upper_bound(&self) -> Score {
        Score::INFINITY
    }

    /// Lode patch: a score bound over a block of documents (Lucene's `advanceShallow` and
    /// `getMaxScore`). Moves only what locates `target`'s block (a postings skip list), never
    /// the scorer's position, and returns the last document of that block with a score no
    /// document of this scorer from `target` to it exceeds. `target` must not be below a
    /// target given before. After a call, the scorer must be moved with `seek` only: a term
    /// scorer's `advance` steps its skip list from where this left it. The default is the
    /// whole segment under [`Scorer::score_upper_bound`].
    fn block_upper_bound(&mut self, _target: DocId) -> (DocId, Score) {
        (TERMINATED, self.score_upper_bound())
    }
}

impl_downcast!(Scorer);

impl Scorer for Box<dyn Scorer> {
    #[inline]
    fn score(&mut self) -> Score {
        self.deref_mut().score()
    }

    fn score_upper_bound(&self) -> Score {
        (**self).score_upper_bound()
    }

    fn block_upper_bound(&mut self, target: DocId) -> (DocId, Score) {
        self.deref_mut().block_upper_bound(target)
    }
}
