//! `terms` (and `ids`) on one field: each term looked up in the segment's term dictionary,
//! as Lucene's `TermInSetQuery` seeks each term, instead of tantivy's `TermSetQuery`, which
//! builds an FST of the terms per request and streams the dictionary through it. Fifty `_id`s
//! cost fifty lookups; the FST build alone (its allocation and node registry) was a tenth of
//! the CPU of the reference `ids_range` query.

use crate::gathering::SegmentMemo;
use crate::points::{const_scorer, Gathered};
use std::sync::Arc;
use tantivy::postings::TermInfo;
use tantivy::query::{EmptyScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::InvertedIndexReader;
use tantivy::{DocId, Score, SegmentReader, Term};

/// Matches the documents holding any of `terms`, all on one field; scores constant.
#[derive(Clone)]
pub struct TermSetLookup {
    field: Field,
    /// Sorted and distinct: the dictionary is read in order.
    terms: Arc<Vec<Term>>,
    /// Each segment's matches, gathered by its first scorer and shared by the later ones (and
    /// by every clone of the query): a sorted page counts its hits with one weight and walks
    /// with another, each making scorers per segment, and 500 terms cost far more to look up
    /// than their few thousand documents cost to keep. `None`: no term of the set is there.
    memo: SegmentMemo,
}

impl TermSetLookup {
    /// `terms` must all be on one field (the caller builds them from one field's values).
    pub fn new(mut terms: Vec<Term>) -> TermSetLookup {
        terms.sort_unstable();
        terms.dedup();
        let field = terms
            .first()
            .map(Term::field)
            .unwrap_or(Field::from_field_id(0));
        debug_assert!(terms.iter().all(|t| t.field() == field));
        TermSetLookup {
            field,
            terms: Arc::new(terms),
            memo: SegmentMemo::default(),
        }
    }

    /// The documents of `reader` holding a term of the set (deleted ones included, as
    /// postings hold them), gathered once per segment.
    fn gathered(&self, reader: &SegmentReader) -> tantivy::Result<Option<Gathered>> {
        self.memo.get_or_gather(reader, || {
            let index = reader.inverted_index(self.field)?;
            let mut infos = Vec::with_capacity(self.terms.len());
            for term in self.terms.iter() {
                if let Some(info) = index.get_term_info(term)? {
                    infos.push(info);
                }
            }
            gather_postings(&index, &infos, reader.max_doc())
        })
    }
}

impl std::fmt::Debug for TermSetLookup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TermSetLookup")
            .field("field", &self.field)
            .field("terms", &self.terms)
            .finish_non_exhaustive()
    }
}

impl Query for TermSetLookup {
    fn weight(&self, _scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        for term in self.terms.iter() {
            visitor(term, false);
        }
    }
}

impl Weight for TermSetLookup {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let Some(gathered) = self.gathered(reader)? else {
            return Ok(Box::new(EmptyScorer));
        };
        Ok(const_scorer(gathered, boost))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        crate::explain_by_seek(self, reader, doc, "TermSetQuery")
    }
}

/// The documents of the terms `infos` (their postings read block by block), as a bitset or a
/// sorted list by their count; `None` when the terms have no documents.
pub(crate) fn gather_postings(
    index: &InvertedIndexReader,
    infos: &[TermInfo],
    max_doc: DocId,
) -> tantivy::Result<Option<Gathered>> {
    let total: usize = infos.iter().map(|i| i.doc_freq as usize).sum();
    if total == 0 {
        return Ok(None);
    }
    let each = |f: &mut dyn FnMut(DocId)| -> tantivy::Result<()> {
        for info in infos {
            let mut postings =
                index.read_block_postings_from_terminfo(info, IndexRecordOption::Basic)?;
            while !postings.docs().is_empty() {
                postings.docs().iter().for_each(|&d| f(d));
                postings.advance();
            }
        }
        Ok(())
    };
    Ok(Some(if Gathered::bits_for(total, max_doc) {
        let mut words = vec![0u64; (max_doc as usize).div_ceil(64)];
        each(&mut |d| words[d as usize / 64] |= 1 << (d % 64))?;
        let len = words.iter().map(|w| w.count_ones() as usize).sum();
        Gathered::Bits {
            words: Arc::new(words),
            len,
        }
    } else {
        let mut docs = Vec::with_capacity(total);
        each(&mut |d| docs.push(d))?;
        docs.sort_unstable();
        docs.dedup();
        Gathered::Sorted(docs.into())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::collector::DocSetCollector;
    use tantivy::schema::{Schema, STRING};
    use tantivy::{doc, Index, IndexWriter};

    #[test]
    fn matches_every_document_holding_a_term() {
        let mut sb = Schema::builder();
        let f = sb.add_text_field("k", STRING | tantivy::schema::STORED);
        let index = Index::create_in_ram(sb.build());
        let mut w: IndexWriter = index.writer_with_num_threads(1, 20_000_000).unwrap();
        w.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        // 3,000 documents in three segments: value i % 300, so a term has 10 documents;
        // deletes on top (a whole term, and every 7th document of the last segment).
        for i in 0..3000u32 {
            w.add_document(doc!(f => format!("v{}", i % 300))).unwrap();
            if i % 1000 == 999 {
                w.commit().unwrap();
            }
        }
        w.delete_term(Term::from_field_text(f, "v7"));
        for v in (0..300).step_by(7) {
            w.delete_term(Term::from_field_text(f, &format!("v{v}")));
        }
        w.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let segments = searcher.segment_readers().len();
        assert_eq!(segments, 3);
        let stored = |addr: tantivy::DocAddress| -> u32 {
            let d: tantivy::TantivyDocument = searcher.doc(addr).unwrap();
            use tantivy::schema::Value as _;
            d.get_first(f).and_then(|v| v.as_str()).unwrap()[1..]
                .parse()
                .unwrap()
        };
        // Few terms (a sorted list), many terms (a bitset), absent, duplicated and deleted
        // terms.
        for wanted in [
            vec![3u32, 5, 999, 5],
            (0..150).collect::<Vec<u32>>(),
            vec![7, 8],
            vec![1000],
        ] {
            let terms: Vec<Term> = wanted
                .iter()
                .map(|v| Term::from_field_text(f, &format!("v{v}")))
                .collect();
            let query = TermSetLookup::new(terms);
            let mut expected = std::collections::HashSet::new();
            for (s, seg) in searcher.segment_readers().iter().enumerate() {
                for doc in 0..seg.max_doc() {
                    let addr = tantivy::DocAddress::new(s as u32, doc);
                    if !seg.is_deleted(doc) && wanted.contains(&stored(addr)) {
                        expected.insert(addr);
                    }
                }
            }
            // Two searches with the same query, as a page's count and walk: the second reads
            // what the first gathered, once per segment.
            for _ in 0..2 {
                let got = crate::FieldStatistics::new(&searcher)
                    .search(&searcher, &query, &DocSetCollector)
                    .unwrap();
                assert_eq!(got, expected, "{wanted:?}");
            }
            assert_eq!(query.memo.len(), segments, "{wanted:?}");
        }
    }
}
