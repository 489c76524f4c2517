//! The filter clauses of a `bool` query ANDed as bitsets where they are dense.
//!
//! tantivy intersects required clauses by leapfrog: the cheapest clause leads and every other
//! one seeks to each of its documents. When each clause matches a large share of a segment
//! (`status: 0` and a date range, hundreds of thousands of documents each), those seeks are
//! most of a search's cost: a page sorted on a date spent 40% of its time seeking the second
//! clause. Lucene 10 answers such conjunctions with its `DenseConjunctionBulkScorer`, which
//! ANDs windows of bitsets; here each dense clause's matches become a bitset of the segment
//! (a range or term set that already holds one hands it over as is), the bitsets are ANDed
//! word by word, and clauses too costly to materialise against the matches left seek them,
//! as before. The result is kept per segment for the query's later scorers (a sorted-page
//! walk asks for one per chunk of positions, the hit count for another).

use crate::points::{bitset_of, DenseRange};
use std::sync::{Arc, Mutex};
use tantivy::index::SegmentId;
use tantivy::query::{
    intersect_scorers, AllQuery, EmptyScorer, EnableScoring, Explanation, Query, Scorer, TermQuery,
    Weight,
};
use tantivy::{DocId, DocSet, Score, SegmentReader, TantivyError, Term, TERMINATED};

/// A lead clause matching fewer than this share of a segment keeps the leapfrog: its few
/// seeks cost less than a bitset of the segment.
const SPARSE_SHARE: u64 = 32;

/// A term clause is drained into a bitset when it matches at most this many times the
/// documents still in the conjunction (reading a posting costs a fraction of a seek);
/// otherwise it seeks them. Other clauses (a phrase checks positions per document) are
/// drained only when they match no more documents than are left.
const DRAIN_RATIO: u64 = 4;

/// Required, non-scoring clauses of a `bool` query (its `filter` clauses, or every required
/// clause where nothing is scored).
#[derive(Debug)]
pub struct FilterConjunction {
    clauses: Vec<Box<dyn Query>>,
    memo: Memo,
}

impl Clone for FilterConjunction {
    fn clone(&self) -> Self {
        FilterConjunction {
            clauses: self.clauses.iter().map(|q| q.box_clone()).collect(),
            memo: self.memo.clone(),
        }
    }
}

/// The bitsets of the dense part of the conjunction, per segment.
type Memo = Arc<Mutex<Vec<(SegmentId, Dense)>>>;

/// A clause's scorer with the clause's index.
type Clause = (usize, Box<dyn Scorer>);

/// A segment's bitset of the clauses ANDed into it.
#[derive(Clone, Debug)]
struct Dense {
    words: Arc<Vec<u64>>,
    len: usize,
    /// The clauses (indices) the bitset holds; the others seek its documents.
    clauses: Vec<usize>,
}

impl FilterConjunction {
    /// Needs at least two clauses.
    pub fn new(clauses: Vec<Box<dyn Query>>) -> FilterConjunction {
        debug_assert!(clauses.len() >= 2);
        FilterConjunction {
            clauses,
            memo: Memo::default(),
        }
    }

    pub fn clauses(&self) -> &[Box<dyn Query>] {
        &self.clauses
    }
}

impl Query for FilterConjunction {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        // Filters do not score: their weights need no term statistics.
        let filtering = match scoring.searcher() {
            Some(searcher) => EnableScoring::disabled_from_searcher(searcher),
            None => EnableScoring::disabled_from_schema(scoring.schema()),
        };
        let weights = self
            .clauses
            .iter()
            .map(|q| q.weight(filtering))
            .collect::<tantivy::Result<Vec<_>>>()?;
        Ok(Box::new(ConjunctionWeight {
            weights,
            cheap: self.clauses.iter().map(|q| cheap_to_drain(&**q)).collect(),
            memo: self.memo.clone(),
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        for q in &self.clauses {
            q.query_terms(visitor);
        }
    }
}

struct ConjunctionWeight {
    weights: Vec<Box<dyn Weight>>,
    /// Per clause, [`cheap_to_drain`].
    cheap: Vec<bool>,
    memo: Memo,
}

impl ConjunctionWeight {
    fn remembered(&self, id: SegmentId) -> Option<Dense> {
        let memo = self.memo.lock().unwrap_or_else(|e| e.into_inner());
        memo.iter().find(|(s, _)| *s == id).map(|(_, d)| d.clone())
    }

    /// ANDs the leading clauses into a bitset while that is cheaper than seeking; returns
    /// it with the clauses left to seek.
    fn densify(&self, mut scorers: Vec<Clause>, max_doc: DocId) -> (Dense, Vec<Clause>) {
        let mut rest = scorers.split_off(1);
        let (lead, mut first) = scorers.pop().expect("a lead clause");
        let mut words = bitset(&mut *first, max_doc);
        let mut len = count(&words);
        let mut clauses = vec![lead];
        let mut seeking = Vec::new();
        for (i, mut s) in rest.drain(..) {
            match bitset_of(&mut *s) {
                Some(bits) => and(&mut words, &bits),
                None if s.cost() <= len as u64 * if self.cheap[i] { DRAIN_RATIO } else { 1 } => {
                    and(&mut words, &bitset(&mut *s, max_doc))
                }
                None => {
                    seeking.push((i, s));
                    continue;
                }
            }
            clauses.push(i);
            len = count(&words);
        }
        let dense = Dense {
            words: Arc::new(words),
            len,
            clauses,
        };
        (dense, seeking)
    }
}

impl Weight for ConjunctionWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let id = reader.segment_id();
        let remembered = self.remembered(id);
        let mut scorers = Vec::with_capacity(self.weights.len());
        for (i, w) in self.weights.iter().enumerate() {
            if remembered.as_ref().is_some_and(|d| d.clauses.contains(&i)) {
                continue;
            }
            let s = w.scorer(reader, 1.0)?;
            if s.doc() == TERMINATED {
                return Ok(Box::new(EmptyScorer));
            }
            scorers.push((i, s));
        }
        scorers.sort_by_key(|(_, s)| s.cost());
        let max_doc = reader.max_doc();
        let (dense, followers) = match remembered {
            Some(d) => (Some(d), scorers),
            None if scorers[0].1.cost() * SPARSE_SHARE < max_doc as u64 => (None, scorers),
            None => {
                let (d, rest) = self.densify(scorers, max_doc);
                let mut memo = self.memo.lock().unwrap_or_else(|e| e.into_inner());
                if !memo.iter().any(|(s, _)| *s == id) {
                    memo.push((id, d.clone()));
                }
                (Some(d), rest)
            }
        };
        let mut all: Vec<Box<dyn Scorer>> = followers.into_iter().map(|(_, s)| s).collect();
        if let Some(d) = dense {
            if d.len == 0 {
                return Ok(Box::new(EmptyScorer));
            }
            let bits = DenseRange::from_bits(d.words, d.len).scored(boost);
            if all.is_empty() {
                // The bitset as such: callers may test its bits directly.
                return Ok(Box::new(bits));
            }
            all.insert(0, Box::new(bits));
        }
        let scorer = intersect_scorers(all, reader.num_docs());
        Ok(Box::new(tantivy::query::ConstScorer::new(scorer, boost)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut scorer = self.scorer(reader, 1.0)?;
        if scorer.seek(doc) != doc {
            return Err(TantivyError::InvalidArgument(format!(
                "Document #({doc}) does not match"
            )));
        }
        let mut e = Explanation::new("match on required clauses", 0.0);
        for w in &self.weights {
            e.add_detail(w.explain(reader, doc)?);
        }
        Ok(e)
    }
}

/// Whether a clause's matches cost a posting each to read (terms, ranges, term sets).
fn cheap_to_drain(q: &dyn Query) -> bool {
    q.is::<TermQuery>()
        || q.is::<AllQuery>()
        || q.is::<crate::points::PointRangeQuery>()
        || q.is::<crate::term_set::TermSetLookup>()
}

/// A fresh scorer's matches as a bitset of the segment.
fn bitset(scorer: &mut dyn Scorer, max_doc: DocId) -> Vec<u64> {
    if let Some(bits) = bitset_of(scorer) {
        return bits.as_ref().clone();
    }
    let mut words = vec![0u64; (max_doc as usize).div_ceil(64)];
    let mut buffer = [0 as DocId; tantivy::COLLECT_BLOCK_BUFFER_LEN];
    loop {
        let n = scorer.fill_buffer(&mut buffer);
        for &d in &buffer[..n] {
            words[d as usize / 64] |= 1 << (d % 64);
        }
        if n < buffer.len() {
            return words;
        }
    }
}

fn and(words: &mut [u64], other: &[u64]) {
    for (w, o) in words.iter_mut().zip(other) {
        *w &= o;
    }
}

fn count(words: &[u64]) -> usize {
    words.iter().map(|w| w.count_ones() as usize).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::points::PointRangeQuery;
    use tantivy::collector::{Count, DocSetCollector};
    use tantivy::columnar::MonotonicallyMappableToU64;
    use tantivy::query::{BooleanQuery, Occur, RangeQuery, TermQuery};
    use tantivy::schema::{Field, IndexRecordOption, Schema, FAST, INDEXED, STRING};
    use tantivy::{DocAddress, Index};

    struct Fixture {
        index: Index,
        a: Field,
        b: Field,
        tag: Field,
    }

    /// Two segments of documents with `a = i % 10`, `b = i % 97` and a tag `t{i % 3}`; the
    /// `t1` documents deleted.
    fn fixture() -> Fixture {
        let mut sb = Schema::builder();
        let a = sb.add_i64_field("a", FAST | INDEXED);
        let b = sb.add_i64_field("b", FAST | INDEXED);
        let tag = sb.add_text_field("tag", STRING);
        let index = Index::create_in_ram(sb.build());
        let mut w: tantivy::IndexWriter = index.writer(15_000_000).unwrap();
        for i in 0..20_000i64 {
            if i == 12_000 {
                w.commit().unwrap();
            }
            let mut d = tantivy::TantivyDocument::default();
            d.add_i64(a, i % 10);
            d.add_i64(b, i % 97);
            d.add_text(tag, format!("t{}", i % 3));
            w.add_document(d).unwrap();
        }
        w.commit().unwrap();
        w.delete_term(Term::from_field_text(tag, "t1"));
        w.commit().unwrap();
        Fixture { index, a, b, tag }
    }

    fn range(f: Field, lo: i64, hi: i64) -> Box<dyn Query> {
        let fallback = RangeQuery::new(
            std::ops::Bound::Included(Term::from_field_i64(f, lo)),
            std::ops::Bound::Included(Term::from_field_i64(f, hi)),
        );
        Box::new(PointRangeQuery::new(
            f,
            lo.to_u64(),
            hi.to_u64(),
            Box::new(fallback),
        ))
    }

    fn term(f: Field, text: &str) -> Box<dyn Query> {
        Box::new(TermQuery::new(
            Term::from_field_text(f, text),
            IndexRecordOption::Basic,
        ))
    }

    fn docs(index: &Index, q: &dyn Query) -> Vec<DocAddress> {
        let searcher = index.reader().unwrap().searcher();
        let mut v: Vec<_> = crate::FieldStatistics::new(&searcher)
            .search(&searcher, q, &DocSetCollector)
            .unwrap()
            .into_iter()
            .collect();
        v.sort();
        v
    }

    #[test]
    fn matches_what_the_leapfrog_matches() {
        let fx = fixture();
        let cases: Vec<Vec<Box<dyn Query>>> = vec![
            // Dense and dense: ANDed as bitsets.
            vec![range(fx.a, 0, 6), range(fx.b, 10, 80)],
            // A term's postings drained next to a range.
            vec![term(fx.tag, "t2"), range(fx.a, 3, 9)],
            // A sparse lead keeps the leapfrog.
            vec![range(fx.b, 5, 5), range(fx.a, 0, 8), term(fx.tag, "t0")],
            // A costly clause against few remaining matches seeks them.
            vec![range(fx.a, 4, 4), range(fx.b, 0, 9), term(fx.tag, "t0")],
            // Nothing in common.
            vec![range(fx.a, 0, 1), range(fx.a, 5, 9)],
        ];
        for clauses in cases {
            let expected = docs(
                &fx.index,
                &BooleanQuery::new(
                    clauses
                        .iter()
                        .map(|q| (Occur::Must, q.box_clone()))
                        .collect(),
                ),
            );
            let conj = FilterConjunction::new(clauses);
            assert_eq!(docs(&fx.index, &conj), expected, "{conj:?}");
            // Again, from the bitsets remembered per segment.
            assert_eq!(docs(&fx.index, &conj), expected, "{conj:?}");
            let searcher = fx.index.reader().unwrap().searcher();
            assert_eq!(
                crate::FieldStatistics::new(&searcher)
                    .search(&searcher, &conj, &Count)
                    .unwrap(),
                expected.len(),
                "{conj:?}"
            );
        }
    }

    #[test]
    fn seeks_and_advances_agree() {
        let fx = fixture();
        let conj = FilterConjunction::new(vec![range(fx.a, 0, 6), term(fx.tag, "t0")]);
        let searcher = fx.index.reader().unwrap().searcher();
        let weight = conj
            .weight(EnableScoring::disabled_from_searcher(&searcher))
            .unwrap();
        for reader in searcher.segment_readers() {
            let mut all = Vec::new();
            let mut s = weight.scorer(reader, 1.0).unwrap();
            while s.doc() != TERMINATED {
                all.push(s.doc());
                s.advance();
            }
            assert!(!all.is_empty());
            for target in (0..reader.max_doc()).step_by(7) {
                let mut s = weight.scorer(reader, 1.0).unwrap();
                let want = all
                    .iter()
                    .copied()
                    .find(|&d| d >= target)
                    .unwrap_or(TERMINATED);
                assert_eq!(s.seek(target), want);
            }
        }
    }
}
