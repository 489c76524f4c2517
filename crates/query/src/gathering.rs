//! A constant-score query's matches gathered once per segment and request.
//!
//! A request makes scorers for a segment several times over (the total's count, the top hits,
//! a sorted page's walk), and a multi-term query (a `prefix`: every term of a dictionary range,
//! its postings read into a bitset of the segment) pays its whole cost each time: a `prefix`
//! page cost twice its count. The first scorer's matches are kept as a sorted list or a bitset
//! ([`Gathered`], as [`crate::term_set`] keeps a term set's) for the scorers that follow; the
//! kept matches live as long as the query, one request.

use crate::points::{const_scorer, Gathered};
use std::sync::{Arc, Mutex};
use tantivy::index::SegmentId;
use tantivy::query::{EmptyScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader, Term, TERMINATED};

/// Each segment's gathered matches (`None`: none there), shared by every clone and weight of
/// the query that holds it.
#[derive(Clone, Default)]
pub(crate) struct SegmentMemo(Arc<Mutex<Vec<SegmentMatches>>>);

type SegmentMatches = (SegmentId, Option<Gathered>);

impl SegmentMemo {
    /// `reader`'s matches: kept ones, or `gather`'s, kept from now on.
    pub(crate) fn get_or_gather(
        &self,
        reader: &SegmentReader,
        gather: impl FnOnce() -> tantivy::Result<Option<Gathered>>,
    ) -> tantivy::Result<Option<Gathered>> {
        let id = reader.segment_id();
        if let Some((_, g)) = self.lock().iter().find(|(s, _)| *s == id) {
            return Ok(g.clone());
        }
        // Gathered outside the lock: segments are searched in parallel.
        let gathered = gather()?;
        self.lock().push((id, gathered.clone()));
        Ok(gathered)
    }

    /// How many segments' matches are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<SegmentMatches>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `inner`'s matches, each segment's gathered by its first scorer; scores are constant.
#[derive(Clone)]
pub(crate) struct Gathering {
    inner: Arc<dyn Query>,
    memo: SegmentMemo,
}

impl Gathering {
    pub(crate) fn new(inner: Box<dyn Query>) -> Gathering {
        Gathering {
            inner: Arc::from(inner),
            memo: SegmentMemo::default(),
        }
    }
}

impl std::fmt::Debug for Gathering {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gathering")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl Query for Gathering {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let searcher = scoring.searcher();
        let inner = match searcher {
            Some(s) => self
                .inner
                .weight(EnableScoring::disabled_from_searcher(s))?,
            None => self.inner.weight(scoring)?,
        };
        Ok(Box::new(GatheringWeight {
            inner,
            memo: self.memo.clone(),
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        self.inner.query_terms(visitor);
    }
}

struct GatheringWeight {
    inner: Box<dyn Weight>,
    memo: SegmentMemo,
}

impl GatheringWeight {
    fn gathered(&self, reader: &SegmentReader) -> tantivy::Result<Option<Gathered>> {
        self.memo.get_or_gather(reader, || self.gather(reader))
    }

    fn gather(&self, reader: &SegmentReader) -> tantivy::Result<Option<Gathered>> {
        let mut scorer = self.inner.scorer(reader, 1.0)?;
        let mut docs = Vec::new();
        let mut doc = scorer.doc();
        while doc != TERMINATED {
            docs.push(doc);
            doc = scorer.advance();
        }
        Ok((!docs.is_empty()).then(|| {
            if Gathered::bits_for(docs.len(), reader.max_doc()) {
                let mut words = vec![0u64; (reader.max_doc() as usize).div_ceil(64)];
                for &d in &docs {
                    words[d as usize / 64] |= 1 << (d % 64);
                }
                Gathered::Bits {
                    words: Arc::new(words),
                    len: docs.len(),
                }
            } else {
                Gathered::Sorted(docs.into())
            }
        }))
    }
}

impl Weight for GatheringWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        Ok(match self.gathered(reader)? {
            Some(gathered) => const_scorer(gathered, boost),
            None => Box::new(EmptyScorer),
        })
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        self.inner.explain(reader, doc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::collector::DocSetCollector;
    use tantivy::query::InvertedIndexRangeQuery;
    use tantivy::schema::{Schema, STRING};
    use tantivy::{doc, Index, IndexWriter};

    #[test]
    fn gathered_matches_equal_the_inner_query_and_are_kept_per_segment() {
        let mut sb = Schema::builder();
        let f = sb.add_text_field("k", STRING);
        let index = Index::create_in_ram(sb.build());
        let mut w: IndexWriter = index.writer_with_num_threads(1, 20_000_000).unwrap();
        w.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        // Three segments; terms a000..a999, the range a1.. (a tenth: a list) and a.. (all:
        // a bitset); deletes on top.
        for i in 0..3000u32 {
            w.add_document(doc!(f => format!("a{:03}", (i * 7) % 1000)))
                .unwrap();
            if i % 1000 == 999 {
                w.commit().unwrap();
            }
        }
        w.delete_term(Term::from_field_text(f, "a105"));
        w.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        assert_eq!(searcher.segment_readers().len(), 3);
        for (lo, hi) in [("a1", "a2"), ("a", "b"), ("x", "y")] {
            let range = || {
                InvertedIndexRangeQuery::new(
                    std::ops::Bound::Included(Term::from_field_text(f, lo)),
                    std::ops::Bound::Excluded(Term::from_field_text(f, hi)),
                )
            };
            let stats = crate::FieldStatistics::new(&searcher);
            let expected = stats.search(&searcher, &range(), &DocSetCollector).unwrap();
            let gathering = Gathering::new(Box::new(range()));
            // Twice: the second search reads the kept matches.
            for _ in 0..2 {
                let got = stats
                    .search(&searcher, &gathering, &DocSetCollector)
                    .unwrap();
                assert_eq!(got, expected, "{lo}..{hi}");
            }
            assert_eq!(gathering.memo.len(), 3);
        }
    }
}
