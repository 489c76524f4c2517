//! Queries on range fields (`lode_engine::range_field`): the documents one of whose ranges
//! relates to the query's range as asked (`intersects`, `contains`, `within`). Each segment's
//! bytes column is read once into a bitset, as a `range` or `term` query on a range field
//! checks every document's ranges (ES answers from BKD points; a range field has no other
//! index in Lode).

use lode_engine::range_field::Relation;
use tantivy::query::{
    BitSetDocSet, ConstScorer, EnableScoring, Explanation, Query, Scorer, Weight,
};
use tantivy::{DocId, Score, SegmentReader};

#[derive(Debug, Clone)]
pub struct RangeFieldQuery {
    pub field: String,
    /// Bytes of one encoded bound.
    pub width: usize,
    /// The query's inclusive bounds, encoded.
    pub lo: Vec<u8>,
    pub hi: Vec<u8>,
    pub relation: Relation,
}

impl RangeFieldQuery {
    /// The documents of `field` (of `kind`) one of whose ranges relates to the encoded
    /// inclusive range `[lo, hi]` as `relation` asks.
    pub fn new(
        field: &str,
        kind: lode_engine::range_field::RangeKind,
        lo: Vec<u8>,
        hi: Vec<u8>,
        relation: Relation,
    ) -> RangeFieldQuery {
        RangeFieldQuery {
            field: field.to_string(),
            width: kind.width(),
            lo,
            hi,
            relation,
        }
    }

    fn matches(&self, value: &[u8]) -> bool {
        if value.len() != 2 * self.width {
            return false;
        }
        let (a, b) = value.split_at(self.width);
        self.relation.matches(a, b, &self.lo, &self.hi)
    }

    fn doc_set(&self, reader: &SegmentReader) -> tantivy::Result<tantivy::BitSet> {
        let max_doc = reader.max_doc();
        let mut set = tantivy::BitSet::with_max_value(max_doc);
        if let Some(col) = reader.fast_fields().bytes(&self.field)? {
            let mut buf = Vec::new();
            for doc in 0..max_doc {
                for ord in col.term_ords(doc) {
                    buf.clear();
                    col.ord_to_bytes(ord, &mut buf)?;
                    if self.matches(&buf) {
                        set.insert(doc);
                        break;
                    }
                }
            }
        }
        Ok(set)
    }
}

impl Query for RangeFieldQuery {
    fn weight(&self, _scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for RangeFieldQuery {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let set = self.doc_set(reader)?;
        Ok(Box::new(ConstScorer::new(BitSetDocSet::from(set), boost)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        if self.doc_set(reader)?.contains(doc) {
            Ok(Explanation::new("RangeFieldQuery", 1.0))
        } else {
            Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lode_engine::range_field::enc_i64;

    #[test]
    fn matches_pairs_of_bounds() {
        let q = RangeFieldQuery {
            field: "r".into(),
            width: 8,
            lo: enc_i64(5),
            hi: enc_i64(10),
            relation: Relation::Within,
        };
        assert!(q.matches(&[enc_i64(5), enc_i64(10)].concat()));
        assert!(!q.matches(&[enc_i64(4), enc_i64(10)].concat()));
        assert!(!q.matches(&enc_i64(5)));
    }
}
