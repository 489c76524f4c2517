//! A slice of a shard's documents for sliced scrolls (ES's `TermsSliceQuery`): a document
//! belongs to slice `id` of `max` when the murmur3 hash (seed 7919, as ES) of its `_id` is
//! `id` modulo `max`. The `_id` terms of each segment are walked once and their documents
//! collected into a bitset, so the slices of a shard are disjoint and together cover it.

use tantivy::query::{
    BitSetDocSet, ConstScorer, EnableScoring, Explanation, Query, Scorer, Weight,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{BitSet, DocId, DocSet, Score, SegmentReader, TERMINATED};

const SEED: u32 = 7919;

#[derive(Debug, Clone)]
pub struct IdSliceQuery {
    id_field: Field,
    id: u32,
    max: u32,
}

impl IdSliceQuery {
    pub fn new(id_field: Field, id: u32, max: u32) -> IdSliceQuery {
        IdSliceQuery { id_field, id, max }
    }
}

impl Query for IdSliceQuery {
    fn weight(&self, _: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for IdSliceQuery {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let mut bits = BitSet::with_max_value(reader.max_doc());
        let index = reader.inverted_index(self.id_field)?;
        let mut terms = index.terms().stream()?;
        while terms.advance() {
            let hash = lode_engine::index::murmur3_32_seeded::<SEED>(terms.key()) as i32;
            if hash.rem_euclid(self.max as i32) as u32 != self.id {
                continue;
            }
            let mut postings =
                index.read_postings_from_terminfo(terms.value(), IndexRecordOption::Basic)?;
            let mut doc = postings.doc();
            while doc != TERMINATED {
                bits.insert(doc);
                doc = postings.advance();
            }
        }
        Ok(Box::new(ConstScorer::new(BitSetDocSet::from(bits), boost)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        crate::explain_by_seek(self, reader, doc, "IdSliceQuery")
    }
}
