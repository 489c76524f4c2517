//! BM25 statistics as Lucene computes them. tantivy's `Searcher` reports the number of
//! documents in the whole index for every field; Lucene uses the field's `docCount` (the
//! documents that have the field) for both IDF and the average field length. With sparse
//! fields the two differ, and so do the scores.
//!
//! [`FieldStatistics`] supplies the per-field count from `_field_names` (one term lookup per
//! scored field). Use it with `Searcher::search_with_statistics_provider` or
//! `EnableScoring::enabled_from_statistics_provider`.

use lode_engine::schema::MetaFields;
use std::sync::atomic::{AtomicU32, Ordering};
use tantivy::query::Bm25StatisticsProvider;
use tantivy::schema::Field;
use tantivy::{Searcher, Term};

pub struct FieldStatistics<'s> {
    searcher: &'s Searcher,
    field_names: Field,
    /// The field whose token count was asked last: tantivy asks `total_num_tokens(field)`
    /// right before `total_num_docs()` when it builds a BM25 weight.
    last_field: AtomicU32,
}

const NO_FIELD: u32 = u32::MAX;

impl<'s> FieldStatistics<'s> {
    pub fn new(searcher: &'s Searcher, meta: &MetaFields) -> FieldStatistics<'s> {
        FieldStatistics {
            searcher,
            field_names: meta.field_names,
            last_field: AtomicU32::new(NO_FIELD),
        }
    }
}

impl Bm25StatisticsProvider for FieldStatistics<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        self.last_field.store(field.field_id(), Ordering::Relaxed);
        self.searcher.total_num_tokens(field)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        let id = self.last_field.swap(NO_FIELD, Ordering::Relaxed);
        if id != NO_FIELD {
            let name = self
                .searcher
                .schema()
                .get_field_name(Field::from_field_id(id));
            let with_field = self
                .searcher
                .doc_freq(&Term::from_field_text(self.field_names, name))?;
            if with_field > 0 {
                return Ok(with_field);
            }
        }
        self.searcher.total_num_docs()
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        self.searcher.doc_freq(term)
    }
}

/// `search_type=dfs_query_then_fetch`: BM25 statistics summed over every shard of an index,
/// so each shard scores with the index-wide document frequencies and lengths (ES's DFS phase
/// gathers them before the query phase).
pub struct ShardsStatistics<'s> {
    searchers: Vec<&'s Searcher>,
}

impl<'s> ShardsStatistics<'s> {
    pub fn new(searchers: Vec<&'s Searcher>) -> ShardsStatistics<'s> {
        ShardsStatistics { searchers }
    }
}

impl Bm25StatisticsProvider for ShardsStatistics<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        self.searchers
            .iter()
            .map(|s| s.total_num_tokens(field))
            .sum()
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        self.searchers.iter().map(|s| s.total_num_docs()).sum()
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        self.searchers.iter().map(|s| s.doc_freq(term)).sum()
    }
}
