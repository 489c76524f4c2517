//! `exists` on a field with doc values, answered from its column: tantivy's `ExistsQuery`
//! (which already matches a segment whose column is full with an all-documents scorer),
//! with a `count` from the column index where it is O(1). Lucene's `FieldExistsQuery`
//! counts from `docCount` the same way when the segment has no deleted documents.

use tantivy::columnar::column_index::MultiValueIndex;
use tantivy::columnar::ColumnIndex;
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, Score, SegmentReader};

/// Documents with at least one value in the column `field`.
#[derive(Debug, Clone)]
pub struct ColumnExistsQuery {
    inner: tantivy::query::ExistsQuery,
    field: String,
}

impl ColumnExistsQuery {
    pub fn new(field: String) -> ColumnExistsQuery {
        ColumnExistsQuery {
            inner: tantivy::query::ExistsQuery::new(field.clone(), false),
            field,
        }
    }
}

impl Query for ColumnExistsQuery {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(ColumnExistsWeight {
            inner: self.inner.weight(scoring)?,
            field: self.field.clone(),
        }))
    }
}

struct ColumnExistsWeight {
    inner: Box<dyn Weight>,
    field: String,
}

impl Weight for ColumnExistsWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        self.inner.scorer(reader, boost)
    }

    fn count(&self, reader: &SegmentReader) -> tantivy::Result<u32> {
        if reader.alive_bitset().is_none() {
            if let Some(n) = documents_with_values(reader, &self.field)? {
                return Ok(n);
            }
        }
        self.inner.count(reader)
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        self.inner.explain(reader, doc)
    }
}

/// The documents of `reader` with a value in the column `field`, deleted ones included,
/// when its index says so directly (`None`: several columns share the name, or an old
/// multi-valued index without the count).
pub(crate) fn documents_with_values(
    reader: &SegmentReader,
    field: &str,
) -> tantivy::Result<Option<u32>> {
    let handles = reader.fast_fields().dynamic_column_handles(field)?;
    let [handle] = handles.as_slice() else {
        return Ok(if handles.is_empty() { Some(0) } else { None });
    };
    let index = handle.open()?.into_column_index();
    Ok(column_index_count(&index, reader.max_doc()))
}

/// The rows of a column index with a value (`None` when only a walk would tell).
pub(crate) fn column_index_count(index: &ColumnIndex, max_doc: u32) -> Option<u32> {
    match index {
        ColumnIndex::Empty { .. } => Some(0),
        ColumnIndex::Full => Some(max_doc),
        ColumnIndex::Optional(optional) => Some(optional.num_non_nulls()),
        ColumnIndex::Multivalued(MultiValueIndex::MultiValueIndexV2(v2)) => {
            Some(v2.optional_index.num_non_nulls())
        }
        ColumnIndex::Multivalued(_) => None,
    }
}
