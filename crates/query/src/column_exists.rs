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

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::collector::Count;
    use tantivy::schema::{Schema, FAST, STRING};
    use tantivy::{Index, IndexWriter, TantivyDocument, Term};

    #[test]
    fn counts_documents_with_values_with_and_without_deletes() {
        let mut sb = Schema::builder();
        let n = sb.add_i64_field("n", FAST);
        let many = sb.add_i64_field("many", FAST);
        let id = sb.add_text_field("id", STRING);
        let index = Index::create_in_ram(sb.build());
        let mut w: IndexWriter = index.writer_with_num_threads(1, 20_000_000).unwrap();
        // (has n, has many) per document key.
        let mut docs = Vec::new();
        for i in 0..300i64 {
            let mut d = TantivyDocument::default();
            d.add_text(id, i.to_string());
            let (has_n, has_many) = (i % 3 != 0, i % 5 == 0);
            if has_n {
                d.add_i64(n, -i);
            }
            if has_many {
                d.add_i64(many, i);
                d.add_i64(many, i + 1);
            }
            w.add_document(d).unwrap();
            docs.push((i.to_string(), has_n, has_many));
            if i == 149 {
                w.commit().unwrap();
            }
        }
        w.commit().unwrap();
        let check = |docs: &[(String, bool, bool)]| {
            let searcher = index.reader().unwrap().searcher();
            let count = |f: &str| {
                crate::FieldStatistics::new(&searcher)
                    .search(&searcher, &ColumnExistsQuery::new(f.to_string()), &Count)
                    .unwrap()
            };
            assert_eq!(count("n"), docs.iter().filter(|d| d.1).count());
            assert_eq!(count("many"), docs.iter().filter(|d| d.2).count());
        };
        check(&docs);
        for key in ["0", "1", "5", "200"] {
            w.delete_term(Term::from_field_text(id, key));
            docs.retain(|d| d.0 != key);
        }
        w.commit().unwrap();
        check(&docs);
    }
}
