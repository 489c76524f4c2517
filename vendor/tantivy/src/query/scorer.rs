use std::ops::DerefMut;

use downcast_rs::impl_downcast;

use crate::docset::DocSet;
use crate::Score;

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
}
