//! What a text field's norms say about presence: a document whose value yielded at least one
//! token has a norm above 0 (tantivy's fieldnorm id 0 is length 0). Lucene answers `exists`
//! on a text field from its norms (`FieldExistsQuery`), and its BM25 `docCount` is the
//! number of documents with a term in the field, which is the same set. Values that yielded
//! no token (`""`, only stopwords) have norm 0 like documents without the field; ES's
//! `exists` still matches them, so the engine lists those in `_field_names` (see
//! `FieldDef::exists_from_norms`), and `exists` is the union of both.

use std::collections::HashMap;
use std::sync::Mutex;
use tantivy::index::SegmentId;
use tantivy::query::{
    BitSetDocSet, ConstScorer, EmptyScorer, EnableScoring, Explanation, Query, Scorer, Weight,
};
use tantivy::schema::Field;
use tantivy::{BitSet, DocId, Score, SegmentReader, TantivyError};

/// Whether `field` keeps norms in `reader`'s schema (an indexed text field with norms).
pub fn has_norms(reader_schema: &tantivy::schema::Schema, field: Field) -> bool {
    let entry = reader_schema.get_field_entry(field);
    entry.is_indexed() && entry.has_fieldnorms()
}

/// The documents of one segment whose norm for `field` is above 0, or `None` when the
/// segment has no norms for it.
fn with_tokens(reader: &SegmentReader, field: Field) -> tantivy::Result<Option<BitSet>> {
    let Some(norms) = reader.fieldnorms_readers().get_field(field)? else {
        return Ok(None);
    };
    let max_doc = reader.max_doc();
    let mut bits = BitSet::with_max_value(max_doc);
    for doc in 0..max_doc {
        if norms.fieldnorm_id(doc) != 0 {
            bits.insert(doc);
        }
    }
    Ok(Some(bits))
}

/// Documents whose value of a text field yielded a token, deleted ones included (as
/// Lucene's norms count them until a merge drops them).
#[derive(Debug, Clone)]
pub struct NormsExistQuery {
    field: Field,
}

impl NormsExistQuery {
    pub fn new(field: Field) -> NormsExistQuery {
        NormsExistQuery { field }
    }
}

impl Query for NormsExistQuery {
    fn weight(&self, _: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for NormsExistQuery {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        Ok(match with_tokens(reader, self.field)? {
            Some(bits) => Box::new(ConstScorer::new(BitSetDocSet::from(bits), boost)),
            None => Box::new(EmptyScorer),
        })
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let norms = reader.fieldnorms_readers().get_field(self.field)?;
        match norms {
            Some(n) if doc < reader.max_doc() && n.fieldnorm_id(doc) != 0 => {
                Ok(Explanation::new("NormsExistQuery", 1.0))
            }
            _ => Err(TantivyError::InvalidArgument(format!(
                "Document #({doc}) does not match"
            ))),
        }
    }
}

/// Per segment and field: the documents with a norm above 0. A segment never changes, so
/// the count is computed once (a scan of one byte per document).
type Counts = HashMap<(SegmentId, Field), u64>;
static COUNTS: Mutex<Option<Counts>> = Mutex::new(None);
/// Entries kept before the cache starts over (segments merged away leave theirs behind).
const COUNTS_MAX: usize = 4096;

/// The documents of `reader` whose value of `field` yielded a token (0 without norms).
pub fn documents_with_tokens(reader: &SegmentReader, field: Field) -> tantivy::Result<u64> {
    let key = (reader.segment_id(), field);
    if let Some(n) = COUNTS
        .lock()
        .expect("norm counts")
        .as_ref()
        .and_then(|m| m.get(&key).copied())
    {
        return Ok(n);
    }
    let n = match reader.fieldnorms_readers().get_field(field)? {
        Some(norms) => (0..reader.max_doc())
            .filter(|&doc| norms.fieldnorm_id(doc) != 0)
            .count() as u64,
        None => 0,
    };
    let mut cache = COUNTS.lock().expect("norm counts");
    let map = cache.get_or_insert_with(HashMap::new);
    if map.len() >= COUNTS_MAX {
        map.clear();
    }
    map.insert(key, n);
    Ok(n)
}
