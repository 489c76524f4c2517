//! BM25 statistics as Lucene computes them.
//!
//! tantivy's `Searcher` answers `total_num_docs()` with every document of the segments
//! (`max_doc`), for every field: nested child documents count for root fields, and documents
//! without the field count too. Lucene's `CollectionStatistics` are per field: `docCount` is
//! the number of documents with at least one term in the field, and it is both the `N` of the
//! IDF and the divisor of the average field length (`sumTotalTermFreq / docCount`). With
//! sparse fields or nested documents the two differ, and so do the scores.
//!
//! [`FieldStatistics`] supplies Lucene's numbers: the field's document count is the number of
//! documents with a value in a keyword's column, with a token in a text field's norms
//! (counted once per segment), or else the document frequency of its `_field_names` term
//! (once per scored field and request, cached for the weight's other terms), token counts are tantivy's (a keyword's: its doc values'
//! count, see `values_in_column`) and document frequencies too. Like
//! Lucene's, all of them count deleted documents until a merge drops them. Every search that
//! scores goes through it: [`FieldStatistics::search`] or [`FieldStatistics::scoring`] (the
//! workspace's `clippy.toml` disallows the searcher-wide defaults). Over several shards (ES's
//! `dfs_query_then_fetch`) the numbers are summed.

use lode_engine::schema::FIELD_NAMES;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Mutex;
use tantivy::collector::Collector;
use tantivy::index::SegmentId;
use tantivy::query::{Bm25StatisticsProvider, EnableScoring, Query};
use tantivy::schema::{Field, FieldType};
use tantivy::{Searcher, Term};

/// Per-field BM25 statistics over one shard's searcher, or summed over several.
///
/// Deliberately neither `Sync` nor shared: tantivy asks `total_num_tokens(field)` and then
/// the field-less `total_num_docs()`, so the field in between is remembered, and that pairing
/// only holds within one thread's weight construction.
pub struct FieldStatistics<'s> {
    searchers: Vec<&'s Searcher>,
    /// The field whose token count was asked last: tantivy asks `total_num_tokens(field)`
    /// right before `total_num_docs()` when it builds a BM25 weight.
    last_field: Cell<Option<Field>>,
    /// Document counts looked up so far (a multi-term query asks once per term).
    doc_counts: RefCell<Vec<(Field, u64)>>,
    /// Token counts, likewise (a keyword's is read from its columns).
    token_counts: RefCell<Vec<(Field, u64)>>,
}

impl<'s> FieldStatistics<'s> {
    /// The statistics of one shard.
    pub fn new(searcher: &'s Searcher) -> FieldStatistics<'s> {
        FieldStatistics::across(vec![searcher])
    }

    /// The statistics summed over several shards of one index (same schema).
    pub fn across(searchers: Vec<&'s Searcher>) -> FieldStatistics<'s> {
        assert!(!searchers.is_empty(), "statistics need a searcher");
        FieldStatistics {
            searchers,
            last_field: Cell::new(None),
            doc_counts: RefCell::new(Vec::new()),
            token_counts: RefCell::new(Vec::new()),
        }
    }

    /// Scoring enabled with these statistics, for a weight built on `searcher`.
    pub fn scoring<'a>(&'a self, searcher: &'a Searcher) -> EnableScoring<'a> {
        EnableScoring::enabled_from_statistics_provider(self, searcher)
    }

    /// `Searcher::search` with these statistics (when the collector scores).
    pub fn search<C: Collector>(
        &self,
        searcher: &Searcher,
        query: &dyn Query,
        collector: &C,
    ) -> tantivy::Result<C::Fruit> {
        searcher.search_with_statistics_provider(query, collector, self)
    }

    /// Lucene's `docCount`: the documents with the field.
    pub fn doc_count(&self, field: Field) -> tantivy::Result<u64> {
        cached(&self.doc_counts, field, || self.lookup_doc_count(field))
    }

    fn token_count(&self, field: Field) -> tantivy::Result<u64> {
        let mut n = 0;
        for s in &self.searchers {
            n += match values_in_column(s, field)? {
                Some(values) => values,
                None if without_freqs(s, field) => sum_doc_freq(s, field)?,
                None => s.total_num_tokens(field)?,
            };
        }
        Ok(n)
    }

    fn lookup_doc_count(&self, field: Field) -> tantivy::Result<u64> {
        let schema = self.searchers[0].schema();
        let mut n = 0;
        let entry = schema.get_field_entry(field);
        if entry.is_fast() && matches!(entry.field_type(), FieldType::Str(_)) {
            // A keyword with doc values: the documents with a value in its column, which
            // holds exactly the values it indexes (O(1) per segment).
            for s in &self.searchers {
                for reader in s.segment_readers() {
                    n += documents_in_column(reader, entry.name())?;
                }
            }
        } else if crate::norms::has_norms(schema, field) {
            // A text field: the documents whose value yielded a token, as Lucene's docCount.
            for s in &self.searchers {
                for reader in s.segment_readers() {
                    n += crate::norms::documents_with_tokens(reader, field)?;
                }
            }
        } else if let Ok(names) = schema.get_field(FIELD_NAMES) {
            let term = Term::from_field_text(names, schema.get_field_name(field));
            for s in &self.searchers {
                n += s.doc_freq(&term)?;
            }
        }
        if n == 0 {
            // A field no document has, or one `_field_names` does not list (an index
            // without it, or a field indexed on the side): every document, as tantivy
            // counts them (nothing matches the former; the count only keeps IDF finite).
            for s in &self.searchers {
                n += Bm25StatisticsProvider::total_num_docs(*s)?;
            }
        }
        Ok(n)
    }
}

fn cached(
    cache: &RefCell<Vec<(Field, u64)>>,
    field: Field,
    compute: impl FnOnce() -> tantivy::Result<u64>,
) -> tantivy::Result<u64> {
    if let Some(&(_, n)) = cache.borrow().iter().find(|(f, _)| *f == field) {
        return Ok(n);
    }
    let n = compute()?;
    cache.borrow_mut().push((field, n));
    Ok(n)
}

/// Lucene's `sumTotalTermFreq` of a field indexed without frequencies (a `keyword`) is its
/// `sumDocFreq`: one per document and distinct term, which is what a keyword column holds
/// (a sorted set per document; segments written before it was one count a repeated value
/// again). tantivy's token count of a merged segment that
/// dropped deleted documents is an estimate (the field's tokens times the share of live
/// documents, nested ones included), while the segment's doc-values column holds exactly the
/// values of its documents; it is read instead when the field has one (an O(1) count).
fn values_in_column(searcher: &Searcher, field: Field) -> tantivy::Result<Option<u64>> {
    let schema = searcher.schema();
    let entry = schema.get_field_entry(field);
    if !(without_freqs(searcher, field)
        && entry.is_fast()
        && matches!(entry.field_type(), FieldType::Str(_)))
    {
        return Ok(None);
    }
    let mut n = 0;
    for reader in searcher.segment_readers() {
        if let Some(column) = reader.fast_fields().str(entry.name())? {
            n += u64::from(column.ords().values.num_vals());
        }
    }
    Ok(Some(n))
}

/// The documents of one segment with at least one value in the string column `name`.
fn documents_in_column(reader: &tantivy::SegmentReader, name: &str) -> tantivy::Result<u64> {
    let Some(column) = reader.fast_fields().str(name)? else {
        return Ok(0);
    };
    let index = &column.ords().index;
    Ok(u64::from(
        match crate::column_exists::column_index_count(index, reader.max_doc()) {
            Some(n) => n,
            None => match index {
                tantivy::columnar::ColumnIndex::Multivalued(v1) => {
                    v1.iter_non_null_docs().count() as u32
                }
                _ => 0,
            },
        },
    ))
}

fn without_freqs(searcher: &Searcher, field: Field) -> bool {
    searcher
        .schema()
        .get_field_entry(field)
        .field_type()
        .get_index_record_option()
        .is_some_and(|o| !o.has_freq())
}

/// Sums of document frequencies by segment and field: a segment never changes, and its
/// deleted documents count until a merge drops them, as in Lucene.
type SumDocFreqs = HashMap<(SegmentId, Field), u64>;
static SUM_DOC_FREQS: Mutex<Option<SumDocFreqs>> = Mutex::new(None);
/// Entries kept before the cache starts over (segments merged away leave theirs behind).
const SUM_DOC_FREQS_MAX: usize = 4096;

/// Lucene's `sumDocFreq`, the `sumTotalTermFreq` of a field indexed without frequencies
/// (`index_options: docs`, or a keyword without a column): tantivy's token count would
/// count a term repeated in one document again, so the term dictionary is walked instead,
/// once per segment.
fn sum_doc_freq(searcher: &Searcher, field: Field) -> tantivy::Result<u64> {
    let mut n = 0;
    for reader in searcher.segment_readers() {
        let key = (reader.segment_id(), field);
        let cached = SUM_DOC_FREQS
            .lock()
            .expect("sum_doc_freq cache")
            .as_ref()
            .and_then(|m| m.get(&key).copied());
        let segment_sum = match cached {
            Some(v) => v,
            None => {
                let mut sum = 0u64;
                let inverted = reader.inverted_index(field)?;
                let mut terms = inverted.terms().stream()?;
                while terms.advance() {
                    sum += u64::from(terms.value().doc_freq);
                }
                let mut cache = SUM_DOC_FREQS.lock().expect("sum_doc_freq cache");
                let map = cache.get_or_insert_with(HashMap::new);
                if map.len() >= SUM_DOC_FREQS_MAX {
                    map.clear();
                }
                map.insert(key, sum);
                sum
            }
        };
        n += segment_sum;
    }
    Ok(n)
}

impl Bm25StatisticsProvider for FieldStatistics<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        self.last_field.set(Some(field));
        cached(&self.token_counts, field, || self.token_count(field))
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        match self.last_field.take() {
            Some(field) => self.doc_count(field),
            None => {
                let mut n = 0;
                for s in &self.searchers {
                    n += Bm25StatisticsProvider::total_num_docs(*s)?;
                }
                Ok(n)
            }
        }
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let mut n = 0;
        for s in &self.searchers {
            n += s.doc_freq(term)?;
        }
        // tantivy's IDF asserts `docFreq <= docCount`: a term of a document `_field_names`
        // missed (it cannot happen for the fields Lode indexes) must not panic a search.
        Ok(n.min(self.doc_count(term.field())?))
    }
}
