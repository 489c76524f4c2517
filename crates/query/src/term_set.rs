//! `terms` (and `ids`) on one field: each term looked up in the segment's term dictionary,
//! as Lucene's `TermInSetQuery` seeks each term, instead of tantivy's `TermSetQuery`, which
//! builds an FST of the terms per request and streams the dictionary through it. Fifty `_id`s
//! cost fifty lookups; the FST build alone (its allocation and node registry) was a tenth of
//! the CPU of the reference `ids_range` query.

use crate::points::{const_scorer, Gathered};
use std::sync::Arc;
use tantivy::postings::TermInfo;
use tantivy::query::{EmptyScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::InvertedIndexReader;
use tantivy::{DocId, Score, SegmentReader, Term};

/// Matches the documents holding any of `terms`, all on one field; scores constant.
#[derive(Clone, Debug)]
pub struct TermSetLookup {
    field: Field,
    /// Sorted and distinct: the dictionary is read in order.
    terms: Arc<Vec<Term>>,
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
        }
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
        let index = reader.inverted_index(self.field)?;
        let mut infos = Vec::with_capacity(self.terms.len());
        for term in self.terms.iter() {
            if let Some(info) = index.get_term_info(term)? {
                infos.push(info);
            }
        }
        let Some(gathered) = gather_postings(&index, &infos, reader.max_doc())? else {
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
        Gathered::Bits { words, len }
    } else {
        let mut docs = Vec::with_capacity(total);
        each(&mut |d| docs.push(d))?;
        docs.sort_unstable();
        docs.dedup();
        Gathered::Sorted(docs)
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
        let f = sb.add_text_field("k", STRING);
        let index = Index::create_in_ram(sb.build());
        let mut w: IndexWriter = index.writer_with_num_threads(1, 20_000_000).unwrap();
        // 3,000 documents: value i % 300, so a term has 10 documents; deletes on top.
        for i in 0..3000u32 {
            w.add_document(doc!(f => format!("v{}", i % 300))).unwrap();
        }
        w.commit().unwrap();
        w.delete_term(Term::from_field_text(f, "v7"));
        w.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        // Few terms (a sorted list), many terms (a bitset), absent and deleted terms.
        for wanted in [
            vec![3u32, 5, 999],
            (0..150).collect::<Vec<u32>>(),
            vec![7, 8],
            vec![1000],
        ] {
            let terms: Vec<Term> = wanted
                .iter()
                .map(|v| Term::from_field_text(f, &format!("v{v}")))
                .collect();
            let got = crate::FieldStatistics::new(&searcher)
                .search(&searcher, &TermSetLookup::new(terms), &DocSetCollector)
                .unwrap();
            let seg = &searcher.segment_readers()[0];
            let expected: std::collections::HashSet<_> = (0..3000u32)
                .filter(|i| wanted.contains(&(i % 300)) && i % 300 != 7)
                .filter(|i| !seg.is_deleted(*i))
                .map(|i| tantivy::DocAddress::new(0, i))
                .collect();
            assert_eq!(got, expected, "{wanted:?}");
        }
    }
}
