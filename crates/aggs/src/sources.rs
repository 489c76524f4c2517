//! Computed columns that let tantivy's bucket machinery run the aggregations it lacks.
//!
//! Each source maps a document to the *indices* of the buckets it falls in (from 1 for the
//! fixed bucket lists: tantivy's `range` treats a bound of 0 as unbounded); tantivy then runs a
//! `range` (one unit range per bucket) or a `histogram` (interval 1) over those indices, with
//! the sub-aggregations, merging and limits it already has.
//!
//! - [`FilterSource`]: `filter`, `filters` (with the other bucket) and `missing`: bucket `i`
//!   holds the documents matching query `i`, from a per-segment bit set.
//! - [`RangeSource`]: `range` and `date_range`, where ranges may overlap and a document with
//!   several values counts once per range, as in Elasticsearch.
//! - [`DateIndexSource`]: `date_histogram` buckets of variable width (months, DST days).
//! - [`RangeBucketSource`]: `histogram` and `date_histogram` on range fields, where a
//!   document counts once in every bucket its ranges overlap.
//! - [`ValuesSource`]: a field's values with a `missing` value for the documents without
//!   any (`histogram`, fixed `date_histogram`), read by tantivy's histogram as the field.

use super::rounding::IndexedRounding;
use std::sync::Arc;
use tantivy::aggregation::{ValueSource, ValueSourceProvider};
use tantivy::columnar::{Cardinality, Column, ColumnType, ColumnValues, RowId};
use tantivy::query::Weight;
use tantivy::{BitSet, DocId, DocSet, SegmentReader, TERMINATED};

// ---------------------------------------------------------------------------------------------
// Filters

/// Bucket `i` = documents matching weight `i`; with `other`, bucket `n` = documents matching
/// none of them.
pub(crate) struct FilterProvider {
    pub weights: Vec<Box<dyn Weight>>,
    pub other: bool,
}

impl ValueSourceProvider for FilterProvider {
    fn for_segment(
        &self,
        reader: &SegmentReader,
        _allowed: Option<&[ColumnType]>,
    ) -> tantivy::Result<Option<Box<dyn ValueSource>>> {
        let max_doc = reader.max_doc();
        let mut sets = Vec::with_capacity(self.weights.len());
        for weight in &self.weights {
            let mut set = BitSet::with_max_value(max_doc.max(1));
            let mut scorer = weight.scorer(reader, 1.0)?;
            let mut doc = scorer.doc();
            while doc != TERMINATED {
                set.insert(doc);
                doc = scorer.advance();
            }
            sets.push(set);
        }
        Ok(Some(Box::new(FilterSource {
            sets: Arc::new(sets),
            other: self.other,
        })))
    }
}

#[derive(Clone)]
struct FilterSource {
    sets: Arc<Vec<BitSet>>,
    other: bool,
}

impl std::fmt::Debug for FilterSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilterSource")
            .field("filters", &self.sets.len())
            .finish()
    }
}

impl ValueSource for FilterSource {
    fn column_type(&self) -> ColumnType {
        ColumnType::U64
    }

    fn load_block(
        &mut self,
        docs: &[DocId],
        values: &mut Vec<u64>,
        docids: &mut Vec<DocId>,
        _row_ids: &mut Vec<RowId>,
    ) -> Cardinality {
        values.clear();
        docids.clear();
        for &doc in docs {
            let mut matched = false;
            for (i, set) in self.sets.iter().enumerate() {
                if set.contains(doc) {
                    values.push(i as u64 + 1);
                    docids.push(doc);
                    matched = true;
                }
            }
            if self.other && !matched {
                values.push(self.sets.len() as u64 + 1);
                docids.push(doc);
            }
        }
        Cardinality::Multivalued
    }

    fn to_f64(self: Box<Self>) -> Box<dyn ValueSource> {
        self
    }
}

// ---------------------------------------------------------------------------------------------
// Sampler

/// `sampler`: bucket 1 = the shard's sampled documents, per segment (by id).
pub(crate) struct SampleProvider {
    pub sets: std::collections::HashMap<tantivy::index::SegmentId, BitSet>,
}

/// The documents of a sample (a `sampler` below a bucket aggregation: each enclosing
/// bucket's sample), by segment (segment ids are unique across indices).
#[derive(Clone)]
pub(crate) struct SampleQuery {
    pub sets: Arc<std::collections::HashMap<tantivy::index::SegmentId, BitSet>>,
}

impl std::fmt::Debug for SampleQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SampleQuery")
            .field("segments", &self.sets.len())
            .finish()
    }
}

impl tantivy::query::Query for SampleQuery {
    fn weight(
        &self,
        _scoring: tantivy::query::EnableScoring<'_>,
    ) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for SampleQuery {
    fn scorer(
        &self,
        reader: &SegmentReader,
        boost: tantivy::Score,
    ) -> tantivy::Result<Box<dyn tantivy::query::Scorer>> {
        let set = match self.sets.get(&reader.segment_id()) {
            Some(set) => set.clone(),
            None => BitSet::with_max_value(1),
        };
        Ok(Box::new(tantivy::query::ConstScorer::new(
            tantivy::query::BitSetDocSet::from(set),
            boost,
        )))
    }

    fn explain(
        &self,
        reader: &SegmentReader,
        doc: DocId,
    ) -> tantivy::Result<tantivy::query::Explanation> {
        match self.sets.get(&reader.segment_id()) {
            Some(set) if set.contains(doc) => {
                Ok(tantivy::query::Explanation::new("SampleQuery", 1.0))
            }
            _ => Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            ))),
        }
    }
}

/// A shard's `shard_size` best-scoring matches of `query` (ties in document order); with
/// `diversify`, read in score order, at most `max` per value of the field (the document's
/// values together make its key; documents without one share a key), as ES's
/// `DiversifiedTopDocsCollector` keeps them.
pub(crate) fn sample(
    shard: &lode_engine::shard::ShardSearcher,
    query: &dyn tantivy::query::Query,
    shard_size: usize,
    diversify: Option<&(crate::plan::FieldRef, usize, Option<String>)>,
) -> tantivy::Result<Vec<tantivy::DocAddress>> {
    use tantivy::collector::TopDocs;
    let Some((field, max, missing)) = diversify else {
        let top = lode_query::FieldStatistics::new(&shard.searcher).search(
            &shard.searcher,
            query,
            &TopDocs::with_limit(shard_size).order_by_score(),
        )?;
        return Ok(top.into_iter().map(|(_, a)| a).collect());
    };
    let mut limit = shard_size.saturating_mul(*max).max(shard_size);
    loop {
        let top = lode_query::FieldStatistics::new(&shard.searcher).search(
            &shard.searcher,
            query,
            &TopDocs::with_limit(limit).order_by_score(),
        )?;
        let exhausted = top.len() < limit;
        let mut per_key: std::collections::HashMap<String, usize> = Default::default();
        let mut out = Vec::new();
        for (_, addr) in &top {
            let key = doc_key(shard, field, *addr, missing.as_deref())?;
            let n = per_key.entry(key).or_insert(0);
            if *n < *max {
                *n += 1;
                out.push(*addr);
                if out.len() == shard_size {
                    return Ok(out);
                }
            }
        }
        if exhausted {
            return Ok(out);
        }
        limit = limit.saturating_mul(4);
    }
}

/// A document's values of `field` as one key.
fn doc_key(
    shard: &lode_engine::shard::ShardSearcher,
    field: &crate::plan::FieldRef,
    addr: tantivy::DocAddress,
    missing: Option<&str>,
) -> tantivy::Result<String> {
    use lode_engine::mapping::Storage;
    let fast = shard
        .searcher
        .segment_reader(addr.segment_ord)
        .fast_fields();
    let doc = addr.doc_id;
    let mut parts: Vec<String> = Vec::new();
    match field.storage() {
        Some(Storage::Keyword) => {
            if let Some(c) = fast.str(&field.name)? {
                let mut s = String::new();
                for ord in c.term_ords(doc) {
                    s.clear();
                    c.ord_to_str(ord, &mut s)?;
                    parts.push(s.clone());
                }
            }
        }
        Some(Storage::F64) => {
            if let Some(c) = fast.column_opt::<f64>(&field.name)? {
                parts.extend(c.values_for_doc(doc).map(|v| v.to_string()));
            }
        }
        Some(_) => {
            if let Some(c) = fast.column_opt::<i64>(&field.name)? {
                parts.extend(c.values_for_doc(doc).map(|v| v.to_string()));
            }
        }
        None => {}
    }
    // A document without values has the `missing` value's key.
    if parts.is_empty() {
        parts.extend(missing.map(str::to_string));
    }
    Ok(parts.join("\u{1}"))
}

impl ValueSourceProvider for SampleProvider {
    fn for_segment(
        &self,
        reader: &SegmentReader,
        _allowed: Option<&[ColumnType]>,
    ) -> tantivy::Result<Option<Box<dyn ValueSource>>> {
        let set = self
            .sets
            .get(&reader.segment_id())
            .cloned()
            .unwrap_or_else(|| BitSet::with_max_value(reader.max_doc().max(1)));
        Ok(Some(Box::new(FilterSource {
            sets: Arc::new(vec![set]),
            other: false,
        })))
    }
}

// ---------------------------------------------------------------------------------------------
// Ranges

/// How a field's values are read for ranges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NumericColumn {
    I64,
    F64,
}

/// Bucket `i` = documents with a value in `ranges[i]` (`[from, to)`).
pub(crate) struct RangeProvider {
    pub field: String,
    pub column: NumericColumn,
    pub ranges: Vec<(f64, f64)>,
    pub missing: Option<f64>,
    /// A runtime field (or an aggregation script) read instead of a column.
    pub runtime: Option<Arc<RuntimeProvider>>,
}

impl ValueSourceProvider for RangeProvider {
    fn for_segment(
        &self,
        reader: &SegmentReader,
        _allowed: Option<&[ColumnType]>,
    ) -> tantivy::Result<Option<Box<dyn ValueSource>>> {
        let column = open_numeric(reader, &self.field, self.column, self.runtime.as_deref())?;
        Ok(Some(Box::new(RangeSource {
            column,
            ranges: Arc::new(self.ranges.clone()),
            missing: self.missing,
            scratch: Vec::new(),
        })))
    }
}

/// The numeric values of a document, from a column or a runtime field (or an aggregation
/// script): the one value source the computed columns read (`range`, `date_range`,
/// calendar `date_histogram`, `weighted_avg`, `percentiles`). A column is matched once per
/// block by the sources that have a fast loop for it.
pub(crate) enum AnyColumn {
    I64(Column<i64>),
    F64(Column<f64>),
    /// A runtime field evaluated per document.
    Runtime(Box<RuntimeColumn>),
}

pub(crate) struct RuntimeColumn {
    docs: lode_query::DocColumns,
    field: Arc<lode_query::runtime::RuntimeField>,
    errors: lode_query::ScriptErrors,
}

/// Opens `field`'s values on a segment: the runtime field when one is given, else the column
/// (`None` when the segment has none).
pub(crate) fn open_numeric(
    reader: &SegmentReader,
    field: &str,
    column: NumericColumn,
    runtime: Option<&RuntimeProvider>,
) -> tantivy::Result<Option<AnyColumn>> {
    let fast = reader.fast_fields();
    Ok(match (runtime, column) {
        (Some(rt), _) => Some(AnyColumn::Runtime(Box::new(RuntimeColumn {
            docs: lode_query::DocColumns::new(reader, rt.fields.clone())
                .with_runtime(rt.runtime.clone()),
            field: rt.field.clone(),
            errors: rt.errors.clone(),
        }))),
        (None, NumericColumn::I64) => fast.column_opt::<i64>(field)?.map(AnyColumn::I64),
        (None, NumericColumn::F64) => fast.column_opt::<f64>(field)?.map(AnyColumn::F64),
    })
}

impl AnyColumn {
    pub(crate) fn values_into(&mut self, doc: DocId, out: &mut Vec<f64>) {
        out.clear();
        match self {
            AnyColumn::I64(c) => out.extend(c.values_for_doc(doc).map(|v| v as f64)),
            AnyColumn::F64(c) => out.extend(c.values_for_doc(doc)),
            AnyColumn::Runtime(r) => {
                r.docs.doc = doc;
                r.field
                    .with_values_or_record(&mut r.docs, &r.errors, |vals| {
                        out.extend(vals.iter().filter_map(|v| match v {
                            serde_json::Value::Bool(b) => Some(f64::from(u8::from(*b))),
                            v => v.as_f64(),
                        }))
                    });
            }
        }
    }
}

/// A document's values of an optional column into `out`, or the `missing` value when it has
/// none.
fn doc_values(
    column: &mut Option<AnyColumn>,
    missing: Option<f64>,
    doc: DocId,
    out: &mut Vec<f64>,
) {
    match column {
        Some(c) => c.values_into(doc, out),
        None => out.clear(),
    }
    if out.is_empty() {
        out.extend(missing);
    }
}

struct RangeSource {
    column: Option<AnyColumn>,
    ranges: Arc<Vec<(f64, f64)>>,
    missing: Option<f64>,
    scratch: Vec<f64>,
}

impl std::fmt::Debug for RangeSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeSource")
            .field("ranges", &self.ranges)
            .finish()
    }
}

impl ValueSource for RangeSource {
    fn column_type(&self) -> ColumnType {
        ColumnType::U64
    }

    fn load_block(
        &mut self,
        docs: &[DocId],
        values: &mut Vec<u64>,
        docids: &mut Vec<DocId>,
        _row_ids: &mut Vec<RowId>,
    ) -> Cardinality {
        values.clear();
        docids.clear();
        for &doc in docs {
            doc_values(&mut self.column, self.missing, doc, &mut self.scratch);
            for (i, (from, to)) in self.ranges.iter().enumerate() {
                if self.scratch.iter().any(|v| v >= from && v < to) {
                    values.push(i as u64 + 1);
                    docids.push(doc);
                }
            }
        }
        Cardinality::Multivalued
    }

    fn to_f64(self: Box<Self>) -> Box<dyn ValueSource> {
        self
    }
}

// ---------------------------------------------------------------------------------------------
// Date buckets of variable width

/// The bucket index of every value of an `i64` millisecond column (or of a runtime date
/// field's values).
pub(crate) struct DateIndexProvider {
    pub field: String,
    pub rounding: IndexedRounding,
    pub runtime: Option<Arc<RuntimeProvider>>,
    /// The value (milliseconds) of documents without any (`missing`).
    pub missing: Option<i64>,
}

impl ValueSourceProvider for DateIndexProvider {
    fn for_segment(
        &self,
        reader: &SegmentReader,
        _allowed: Option<&[ColumnType]>,
    ) -> tantivy::Result<Option<Box<dyn ValueSource>>> {
        let column = open_numeric(
            reader,
            &self.field,
            NumericColumn::I64,
            self.runtime.as_deref(),
        )?;
        if column.is_none() && self.missing.is_none() {
            return Ok(None);
        }
        Ok(Some(Box::new(DateIndexSource {
            column,
            missing: self.missing,
            index: DateIndexer {
                rounding: self.rounding.clone(),
                cached: (1, 0, 0),
                known: Vec::new(),
            },
            scratch: Vec::new(),
        })))
    }
}

struct DateIndexSource {
    /// `None`: the segment has no column (every document is missing).
    column: Option<AnyColumn>,
    missing: Option<i64>,
    index: DateIndexer,
    scratch: Vec<f64>,
}

struct DateIndexer {
    rounding: IndexedRounding,
    /// The last bucket seen: `(index, start, end)`; values are often close together.
    cached: (i64, i64, i64),
    /// Buckets met so far as `(start, end, index)`, sorted by start (at most
    /// `KNOWN_BUCKETS`): dates in document order jump between buckets, and a binary search
    /// of a few dozen months costs a tenth of a calendar computation in a time zone.
    known: Vec<(i64, i64, i64)>,
}

const KNOWN_BUCKETS: usize = 4096;

impl std::fmt::Debug for DateIndexSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DateIndexSource")
            .field("rounding", &self.index.rounding)
            .finish()
    }
}

impl DateIndexer {
    /// Adds the bucket of `t` for `doc` unless the document already has it (a document
    /// counts once per bucket).
    #[inline]
    fn push(
        &mut self,
        t: i64,
        first: usize,
        doc: DocId,
        values: &mut Vec<u64>,
        docids: &mut Vec<DocId>,
    ) {
        let index = tantivy::i64_to_u64(self.index_of(t));
        if !values[first..].contains(&index) {
            values.push(index);
            docids.push(doc);
        }
    }

    #[inline]
    fn index_of(&mut self, t: i64) -> i64 {
        let (index, start, end) = self.cached;
        if t >= start && t < end {
            return index;
        }
        // Buckets do not overlap: the one holding `t`, if known, is the last starting at or
        // before it, and a new one goes right there.
        let at = self.known.partition_point(|&(start, _, _)| start <= t);
        if let Some(&(start, end, index)) = at.checked_sub(1).map(|i| &self.known[i]) {
            if t < end {
                self.cached = (index, start, end);
                return index;
            }
        }
        self.cached = self.rounding.bucket_of(t);
        let (index, start, end) = self.cached;
        if self.known.len() < KNOWN_BUCKETS {
            self.known.insert(at, (start, end, index));
        }
        index
    }
}

impl ValueSource for DateIndexSource {
    fn column_type(&self) -> ColumnType {
        ColumnType::I64
    }

    fn load_block(
        &mut self,
        docs: &[DocId],
        values: &mut Vec<u64>,
        docids: &mut Vec<DocId>,
        _row_ids: &mut Vec<RowId>,
    ) -> Cardinality {
        values.clear();
        docids.clear();
        // The column is matched once per block: a mapped date keeps its direct loop.
        if let Some(AnyColumn::I64(column)) = &self.column {
            for &doc in docs {
                let first = values.len();
                for v in column.values_for_doc(doc) {
                    self.index.push(v, first, doc, values, docids);
                }
                if let (Some(m), true) = (self.missing, values.len() == first) {
                    self.index.push(m, first, doc, values, docids);
                }
            }
        } else {
            let missing = self.missing.map(|m| m as f64);
            for &doc in docs {
                doc_values(&mut self.column, missing, doc, &mut self.scratch);
                let first = values.len();
                for &v in &self.scratch {
                    self.index.push(v as i64, first, doc, values, docids);
                }
            }
        }
        Cardinality::Multivalued
    }

    fn to_f64(self: Box<Self>) -> Box<dyn ValueSource> {
        self
    }
}

// ---------------------------------------------------------------------------------------------
// Values with a missing value

/// A numeric field's values (or a runtime field's, or an aggregation script's), and the
/// `missing` value for a document without any: ES's `MissingValues.replaceMissing`, which
/// tantivy's histogram lacks. `I64` columns (integers, dates in milliseconds) stay `i64`.
pub(crate) struct ValuesProvider {
    pub field: String,
    pub column: NumericColumn,
    pub missing: f64,
    /// Emit `i64` values (dates in milliseconds), else `f64`.
    pub as_i64: bool,
    pub runtime: Option<Arc<RuntimeProvider>>,
}

impl ValueSourceProvider for ValuesProvider {
    fn for_segment(
        &self,
        reader: &SegmentReader,
        _allowed: Option<&[ColumnType]>,
    ) -> tantivy::Result<Option<Box<dyn ValueSource>>> {
        let column = open_numeric(reader, &self.field, self.column, self.runtime.as_deref())?;
        Ok(Some(Box::new(ValuesSource {
            column,
            missing: self.missing,
            as_i64: self.as_i64,
            scratch: Vec::new(),
        })))
    }
}

pub(crate) struct ValuesSource {
    column: Option<AnyColumn>,
    missing: f64,
    as_i64: bool,
    scratch: Vec<f64>,
}

impl std::fmt::Debug for ValuesSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValuesSource")
            .field("missing", &self.missing)
            .finish()
    }
}

impl ValueSource for ValuesSource {
    fn column_type(&self) -> ColumnType {
        if self.as_i64 {
            ColumnType::I64
        } else {
            ColumnType::F64
        }
    }

    fn load_block(
        &mut self,
        docs: &[DocId],
        values: &mut Vec<u64>,
        docids: &mut Vec<DocId>,
        _row_ids: &mut Vec<RowId>,
    ) -> Cardinality {
        values.clear();
        docids.clear();
        for &doc in docs {
            doc_values(&mut self.column, Some(self.missing), doc, &mut self.scratch);
            for &v in &self.scratch {
                values.push(if self.as_i64 {
                    tantivy::i64_to_u64(v as i64)
                } else {
                    tantivy::f64_to_u64(v)
                });
                docids.push(doc);
            }
        }
        Cardinality::Multivalued
    }

    fn to_f64(self: Box<Self>) -> Box<dyn ValueSource> {
        Box::new(ValuesSource {
            as_i64: false,
            ..*self
        })
    }
}

/// A boolean column's values, and `missing` for a document without any: `terms`' `missing`
/// on a boolean field, which tantivy's terms refuses on a boolean column.
pub(crate) struct BoolValuesProvider {
    pub field: String,
    pub missing: bool,
}

impl ValueSourceProvider for BoolValuesProvider {
    fn for_segment(
        &self,
        reader: &SegmentReader,
        _allowed: Option<&[ColumnType]>,
    ) -> tantivy::Result<Option<Box<dyn ValueSource>>> {
        Ok(Some(Box::new(BoolValuesSource {
            column: reader.fast_fields().column_opt::<bool>(&self.field)?,
            missing: self.missing,
        })))
    }
}

struct BoolValuesSource {
    column: Option<Column<bool>>,
    missing: bool,
}

impl std::fmt::Debug for BoolValuesSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoolValuesSource")
            .field("missing", &self.missing)
            .finish()
    }
}

impl ValueSource for BoolValuesSource {
    fn column_type(&self) -> ColumnType {
        ColumnType::Bool
    }

    fn load_block(
        &mut self,
        docs: &[DocId],
        values: &mut Vec<u64>,
        docids: &mut Vec<DocId>,
        _row_ids: &mut Vec<RowId>,
    ) -> Cardinality {
        values.clear();
        docids.clear();
        for &doc in docs {
            let first = values.len();
            if let Some(c) = &self.column {
                // Each value once per document, as a term counts documents.
                for v in c.values_for_doc(doc) {
                    if !values[first..].contains(&u64::from(v)) {
                        values.push(u64::from(v));
                        docids.push(doc);
                    }
                }
            }
            if values.len() == first {
                values.push(u64::from(self.missing));
                docids.push(doc);
            }
        }
        Cardinality::Multivalued
    }

    fn to_f64(self: Box<Self>) -> Box<dyn ValueSource> {
        self
    }
}

/// A boolean column's values as doubles 0/1 (and `missing`'s for a document without any),
/// for the numeric metrics, which tantivy reads only from numeric columns.
pub(crate) struct BoolNumbersProvider {
    pub field: String,
    pub missing: Option<bool>,
}

impl ValueSourceProvider for BoolNumbersProvider {
    fn for_segment(
        &self,
        reader: &SegmentReader,
        _allowed: Option<&[ColumnType]>,
    ) -> tantivy::Result<Option<Box<dyn ValueSource>>> {
        Ok(Some(Box::new(BoolNumbersSource {
            column: reader.fast_fields().column_opt::<bool>(&self.field)?,
            missing: self.missing,
        })))
    }
}

struct BoolNumbersSource {
    column: Option<Column<bool>>,
    missing: Option<bool>,
}

impl std::fmt::Debug for BoolNumbersSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoolNumbersSource")
            .field("missing", &self.missing)
            .finish()
    }
}

impl ValueSource for BoolNumbersSource {
    fn column_type(&self) -> ColumnType {
        ColumnType::F64
    }

    fn load_block(
        &mut self,
        docs: &[DocId],
        values: &mut Vec<u64>,
        docids: &mut Vec<DocId>,
        _row_ids: &mut Vec<RowId>,
    ) -> Cardinality {
        use tantivy::columnar::MonotonicallyMappableToU64;
        values.clear();
        docids.clear();
        for &doc in docs {
            let first = values.len();
            if let Some(c) = &self.column {
                // Each of the document's values, as ES's doc values hold them.
                for v in c.values_for_doc(doc) {
                    values.push(f64::from(u8::from(v)).to_u64());
                    docids.push(doc);
                }
            }
            if values.len() == first {
                if let Some(m) = self.missing {
                    values.push(f64::from(u8::from(m)).to_u64());
                    docids.push(doc);
                }
            }
        }
        Cardinality::Multivalued
    }

    fn to_f64(self: Box<Self>) -> Box<dyn ValueSource> {
        self
    }
}

/// A keyword column with `missing` for a document without a value, for `terms`,
/// `multi_terms`, `rare_terms` and `significant_terms`: in a segment whose dictionary holds
/// the `missing` term, the documents without a value get that term's ordinal, so they count
/// in the term's one bucket (tantivy's sentinel bucket for `missing` would collide with the
/// term's and replace it). Elsewhere the plain column, and tantivy's `missing` gives the
/// bucket.
pub(crate) struct KeywordMissingProvider {
    pub field: String,
    pub missing: String,
}

impl ValueSourceProvider for KeywordMissingProvider {
    fn for_segment(
        &self,
        reader: &SegmentReader,
        _allowed: Option<&[ColumnType]>,
    ) -> tantivy::Result<Option<Box<dyn ValueSource>>> {
        let Some(column) = reader.fast_fields().str(&self.field)? else {
            return Ok(None);
        };
        let full = column.ords().get_cardinality() == Cardinality::Full;
        match column.dictionary().term_ord(self.missing.as_bytes())? {
            Some(ord) if !full => Ok(Some(Box::new(KeywordMissingSource { column, ord }))),
            _ => Ok(Some(Box::new(column))),
        }
    }
}

struct KeywordMissingSource {
    column: tantivy::columnar::StrColumn,
    /// The ordinal of the `missing` term in this segment's dictionary.
    ord: u64,
}

impl std::fmt::Debug for KeywordMissingSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeywordMissingSource")
            .field("ord", &self.ord)
            .finish()
    }
}

/// Adds `ord` for every document of `docs` (increasing) absent from `docids`, keeping the
/// values grouped by document in document order.
fn fill_missing(docs: &[DocId], values: &mut Vec<u64>, docids: &mut Vec<DocId>, ord: u64) {
    if docids.len() >= docs.len() && docs.iter().all(|d| docids.binary_search(d).is_ok()) {
        return;
    }
    let (old_values, old_docids) = (std::mem::take(values), std::mem::take(docids));
    let mut j = 0;
    for &doc in docs {
        let start = j;
        while j < old_docids.len() && old_docids[j] == doc {
            j += 1;
        }
        if start == j {
            values.push(ord);
            docids.push(doc);
        } else {
            values.extend_from_slice(&old_values[start..j]);
            docids.extend_from_slice(&old_docids[start..j]);
        }
    }
}

impl ValueSource for KeywordMissingSource {
    fn column_type(&self) -> ColumnType {
        ColumnType::Str
    }

    fn load_block(
        &mut self,
        docs: &[DocId],
        values: &mut Vec<u64>,
        docids: &mut Vec<DocId>,
        row_ids: &mut Vec<RowId>,
    ) -> Cardinality {
        let cardinality =
            (self.column.ords(), ColumnType::Str).load_block(docs, values, docids, row_ids);
        if cardinality.is_full() {
            return cardinality;
        }
        fill_missing(docs, values, docids, self.ord);
        Cardinality::Multivalued
    }

    fn to_f64(self: Box<Self>) -> Box<dyn ValueSource> {
        self
    }

    // The ordinals are the column's: tantivy may size its buckets by the column, resolve
    // `include`/`exclude` in its dictionary and order `_key` by ordinal.
    fn as_physical_column(&self) -> Option<&Column<u64>> {
        Some(self.column.ords())
    }

    fn as_physical_str_column(&self) -> Option<&tantivy::columnar::StrColumn> {
        Some(&self.column)
    }

    fn term_dictionary(&self) -> Option<&dyn tantivy::aggregation::ValueSourceDictionary> {
        Some(self.column.dictionary())
    }
}

#[cfg(test)]
mod keyword_missing_tests {
    use super::fill_missing;

    #[test]
    fn documents_without_a_value_get_the_ordinal_in_document_order() {
        let (mut values, mut docids) = (vec![4, 7, 2], vec![1, 1, 3]);
        fill_missing(&[0, 1, 2, 3, 5], &mut values, &mut docids, 9);
        assert_eq!(docids, vec![0, 1, 1, 2, 3, 5]);
        assert_eq!(values, vec![9, 4, 7, 9, 2, 9]);
    }

    #[test]
    fn a_block_where_every_document_has_a_value_is_unchanged() {
        let (mut values, mut docids) = (vec![4, 7], vec![1, 2]);
        fill_missing(&[1, 2], &mut values, &mut docids, 9);
        assert_eq!((values, docids), (vec![4, 7], vec![1, 2]));
    }
}

// ---------------------------------------------------------------------------------------------
// Weighted average

/// `weighted_avg`: for a document with a weight (or the weight's `missing`), each of its
/// values (or the value's `missing`) as `value * weight` (`product`) or as `weight`, so that
/// two `sum`s give Elasticsearch's `sum(value * weight)` and `sum(weight)`. A document
/// without a value or without a weight contributes nothing, as in `WeightedAvgAggregator`;
/// of several weights the first is used.
pub(crate) struct WeightedProvider {
    pub value: (String, NumericColumn, Option<f64>),
    pub weight: (String, NumericColumn, Option<f64>),
    pub product: bool,
    /// The runtime fields (or scripts) read instead of the value's and the weight's columns.
    pub value_runtime: Option<Arc<RuntimeProvider>>,
    pub weight_runtime: Option<Arc<RuntimeProvider>>,
}

impl ValueSourceProvider for WeightedProvider {
    fn for_segment(
        &self,
        reader: &SegmentReader,
        _allowed: Option<&[ColumnType]>,
    ) -> tantivy::Result<Option<Box<dyn ValueSource>>> {
        Ok(Some(Box::new(WeightedSource {
            value: open_numeric(
                reader,
                &self.value.0,
                self.value.1,
                self.value_runtime.as_deref(),
            )?,
            value_missing: self.value.2,
            weight: open_numeric(
                reader,
                &self.weight.0,
                self.weight.1,
                self.weight_runtime.as_deref(),
            )?,
            weight_missing: self.weight.2,
            product: self.product,
            values: Vec::new(),
            weights: Vec::new(),
            ints: Vec::new(),
        })))
    }
}

struct WeightedSource {
    value: Option<AnyColumn>,
    value_missing: Option<f64>,
    weight: Option<AnyColumn>,
    weight_missing: Option<f64>,
    product: bool,
    values: Vec<f64>,
    weights: Vec<f64>,
    /// Scratch for an integer column's batched values.
    ints: Vec<i64>,
}

impl std::fmt::Debug for WeightedSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeightedSource")
            .field("product", &self.product)
            .finish()
    }
}

/// A document's contributions to `weighted_avg`'s two sums: `(value * weight, weight)` per value.
pub(crate) fn weighted_terms<'a>(
    values: &'a [f64],
    weights: &[f64],
) -> impl Iterator<Item = (f64, f64)> + 'a {
    let weight = weights.first().copied();
    values
        .iter()
        .filter_map(move |&v| weight.map(|w| (v * w, w)))
}

/// A column with exactly one value per document (`ColumnIndex::Full`): a block's values are
/// one batched read, row ids being document ids.
fn full_column(column: &Option<AnyColumn>) -> bool {
    match column {
        Some(AnyColumn::I64(c)) => c.get_cardinality() == Cardinality::Full,
        Some(AnyColumn::F64(c)) => c.get_cardinality() == Cardinality::Full,
        _ => false,
    }
}

/// The values of a [`full_column`] for `docs`, into `out` (`ints` is scratch space).
fn read_full(column: &Option<AnyColumn>, docs: &[DocId], ints: &mut Vec<i64>, out: &mut Vec<f64>) {
    out.resize(docs.len(), 0.0);
    match column {
        Some(AnyColumn::F64(c)) => c.values.get_vals(docs, out),
        Some(AnyColumn::I64(c)) => {
            ints.resize(docs.len(), 0);
            c.values.get_vals(docs, ints);
            for (o, &i) in out.iter_mut().zip(ints.iter()) {
                *o = i as f64;
            }
        }
        _ => unreachable!("read_full on a column that is not full"),
    }
}

impl ValueSource for WeightedSource {
    fn column_type(&self) -> ColumnType {
        ColumnType::F64
    }

    fn load_block(
        &mut self,
        docs: &[DocId],
        values: &mut Vec<u64>,
        docids: &mut Vec<DocId>,
        _row_ids: &mut Vec<RowId>,
    ) -> Cardinality {
        values.clear();
        docids.clear();
        if full_column(&self.value) && full_column(&self.weight) {
            // Every document has one value and one weight (the common shape): two batched
            // reads instead of two per-document lookups (a fifth of the aggregation's time).
            read_full(&self.value, docs, &mut self.ints, &mut self.values);
            read_full(&self.weight, docs, &mut self.ints, &mut self.weights);
            for ((&v, &w), &doc) in self.values.iter().zip(&self.weights).zip(docs) {
                let x = if self.product { v * w } else { w };
                values.push(tantivy::f64_to_u64(x));
                docids.push(doc);
            }
            return Cardinality::Multivalued;
        }
        for &doc in docs {
            doc_values(
                &mut self.weight,
                self.weight_missing,
                doc,
                &mut self.weights,
            );
            if self.weights.is_empty() {
                continue;
            }
            doc_values(&mut self.value, self.value_missing, doc, &mut self.values);
            for (product, weight) in weighted_terms(&self.values, &self.weights) {
                let x = if self.product { product } else { weight };
                values.push(tantivy::f64_to_u64(x));
                docids.push(doc);
            }
        }
        Cardinality::Multivalued
    }

    fn to_f64(self: Box<Self>) -> Box<dyn ValueSource> {
        self
    }
}

#[cfg(test)]
mod weighted_tests {
    use super::weighted_terms;

    #[test]
    fn every_value_counts_with_the_first_weight() {
        assert_eq!(
            weighted_terms(&[1.0, 3.0], &[2.0, 5.0]).collect::<Vec<_>>(),
            vec![(2.0, 2.0), (6.0, 2.0)]
        );
        assert_eq!(weighted_terms(&[1.0], &[]).count(), 0);
        assert_eq!(weighted_terms(&[], &[4.0]).count(), 0);
    }
}

// ---------------------------------------------------------------------------------------------
// Runtime fields and scripts

/// A runtime field (or an aggregation's `script`, an anonymous one) as a value source: the
/// field is evaluated per collected document (compiled once per request, its columns opened
/// per segment), its values encoded as the column of its type would hold them. Keywords get
/// ordinals from a dictionary that grows as values are met.
pub(crate) struct RuntimeProvider {
    pub field: Arc<lode_query::runtime::RuntimeField>,
    pub fields: lode_query::script::Fields,
    pub runtime: lode_query::runtime::RuntimeFields,
    pub errors: lode_query::ScriptErrors,
    /// The value of a document without any (a keyword aggregation's `missing`).
    pub missing: Option<serde_json::Value>,
    /// Whether a document's keywords are handed over each once (the bucketing aggregations,
    /// as ES's collectors skip a value equal to the previous one) or all (`value_count`).
    pub distinct: bool,
}

impl ValueSourceProvider for RuntimeProvider {
    fn for_segment(
        &self,
        reader: &SegmentReader,
        _allowed: Option<&[ColumnType]>,
    ) -> tantivy::Result<Option<Box<dyn ValueSource>>> {
        Ok(Some(Box::new(RuntimeSource {
            docs: lode_query::DocColumns::new(reader, self.fields.clone())
                .with_runtime(self.runtime.clone()),
            field: self.field.clone(),
            errors: self.errors.clone(),
            dict: RuntimeDict::default(),
            f64: false,
            missing: self.missing.clone(),
            distinct: self.distinct,
        })))
    }
}

#[derive(Default)]
struct RuntimeDict {
    ords: std::collections::HashMap<String, u64>,
    terms: Vec<String>,
}

impl tantivy::aggregation::ValueSourceDictionary for RuntimeDict {
    fn num_terms(&self) -> u64 {
        self.terms.len() as u64
    }

    fn sorted_ords_to_term_cb(
        &self,
        sorted_ords: &[u64],
        callback: &mut dyn FnMut(&[u8]),
    ) -> std::io::Result<bool> {
        for &o in sorted_ords {
            match self.terms.get(o as usize) {
                Some(t) => callback(t.as_bytes()),
                None => return Ok(false),
            }
        }
        Ok(true)
    }
}

struct RuntimeSource {
    docs: lode_query::DocColumns,
    field: Arc<lode_query::runtime::RuntimeField>,
    errors: lode_query::ScriptErrors,
    dict: RuntimeDict,
    /// Numbers handed over as `f64` (metrics, see `ValueSource::to_f64`).
    f64: bool,
    missing: Option<serde_json::Value>,
    distinct: bool,
}

impl std::fmt::Debug for RuntimeSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeSource")
            .field("field", &self.field.name)
            .finish()
    }
}

impl ValueSource for RuntimeSource {
    fn column_type(&self) -> ColumnType {
        use lode_query::runtime::RuntimeType;
        match self.field.ty {
            _ if self.f64 => ColumnType::F64,
            RuntimeType::Keyword => ColumnType::Str,
            RuntimeType::Long | RuntimeType::Date => ColumnType::I64,
            RuntimeType::Double => ColumnType::F64,
            RuntimeType::Boolean => ColumnType::Bool,
        }
    }

    fn load_block(
        &mut self,
        docs: &[DocId],
        values: &mut Vec<u64>,
        docids: &mut Vec<DocId>,
        _row_ids: &mut Vec<RowId>,
    ) -> Cardinality {
        use serde_json::Value;
        use tantivy::columnar::MonotonicallyMappableToU64;
        values.clear();
        docids.clear();
        let ty = self.column_type();
        for &doc in docs {
            self.docs.doc = doc;
            let first = values.len();
            let (dict, missing) = (&mut self.dict, &self.missing);
            self.field
                .with_values_or_record(&mut self.docs, &self.errors, |vals| {
                    let vals = if vals.is_empty() {
                        missing.as_slice()
                    } else {
                        vals
                    };
                    for v in vals {
                        let encoded = match (ty, v) {
                            (ColumnType::Str, Value::String(s)) => match dict.ords.get(s) {
                                Some(o) => *o,
                                None => {
                                    let o = dict.terms.len() as u64;
                                    dict.ords.insert(s.clone(), o);
                                    dict.terms.push(s.clone());
                                    o
                                }
                            },
                            (ColumnType::I64, v) => match v.as_i64() {
                                Some(i) => i.to_u64(),
                                None => continue,
                            },
                            (ColumnType::F64, Value::Bool(b)) => f64::from(u8::from(*b)).to_u64(),
                            (ColumnType::F64, v) => match v.as_f64() {
                                Some(f) => f.to_u64(),
                                None => continue,
                            },
                            (ColumnType::Bool, Value::Bool(b)) => b.to_u64(),
                            _ => continue,
                        };
                        values.push(encoded);
                    }
                });
            // A keyword counts once per document and term, as ES's ordinals do.
            if ty == ColumnType::Str && self.distinct {
                values[first..].sort_unstable();
                let mut keep = first;
                for i in first..values.len() {
                    if i == first || values[i] != values[keep - 1] {
                        values[keep] = values[i];
                        keep += 1;
                    }
                }
                values.truncate(keep);
            }
            docids.extend(std::iter::repeat_n(doc, values.len() - first));
        }
        Cardinality::Multivalued
    }

    fn to_f64(mut self: Box<Self>) -> Box<dyn ValueSource> {
        if self.column_type() != ColumnType::Str {
            self.f64 = true;
        }
        self
    }

    fn term_dictionary(&self) -> Option<&dyn tantivy::aggregation::ValueSourceDictionary> {
        (self.column_type() == ColumnType::Str).then_some(&self.dict as _)
    }
}

// ---------------------------------------------------------------------------------------------
// Histograms on range fields

/// How a range field's histogram names its buckets.
#[derive(Debug, Clone)]
pub(crate) enum RangeBucketing {
    /// `histogram`: bucket `floor((v - offset) / interval)`, clipped to `hard` (ES's
    /// `RangeHistogramAggregator`).
    Numeric {
        interval: f64,
        offset: f64,
        hard: (Option<f64>, Option<f64>),
    },
    /// `date_histogram` (ES's `DateRangeHistogramAggregator`), clipped to `hard`.
    Date {
        rounding: super::rounding::DateRounding,
        hard: (Option<i64>, Option<i64>),
    },
}

/// Every bucket one of a document's ranges overlaps, each once: for `histogram` the middle of
/// the bucket (so tantivy's histogram with the same interval and offset puts it there whatever
/// the rounding of `key * interval + offset`), for a fixed `date_histogram` the middle of the
/// bucket in milliseconds, for an indexed one the bucket's index.
pub(crate) struct RangeBucketProvider {
    pub field: String,
    pub kind: lode_engine::range_field::RangeKind,
    pub bucketing: RangeBucketing,
    /// More buckets than this for one document fail the request (`search.max_buckets`), as
    /// they would be too many buckets anyway: stop counting there.
    pub max_buckets: usize,
}

impl ValueSourceProvider for RangeBucketProvider {
    fn for_segment(
        &self,
        reader: &SegmentReader,
        _allowed: Option<&[ColumnType]>,
    ) -> tantivy::Result<Option<Box<dyn ValueSource>>> {
        let Some(column) = reader.fast_fields().bytes(&self.field)? else {
            return Ok(None);
        };
        Ok(Some(Box::new(RangeBucketSource {
            column,
            kind: self.kind,
            bucketing: self.bucketing.clone(),
            limit: self.max_buckets.saturating_add(1),
            buf: Vec::new(),
        })))
    }
}

struct RangeBucketSource {
    column: tantivy::columnar::BytesColumn,
    kind: lode_engine::range_field::RangeKind,
    bucketing: RangeBucketing,
    limit: usize,
    buf: Vec<u8>,
}

impl std::fmt::Debug for RangeBucketSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeBucketSource")
            .field("bucketing", &self.bucketing)
            .finish()
    }
}

/// The buckets of one document's ranges (sorted by lower bound), each once, as the values tantivy reads; at most `limit`. Numeric bounds are read as
/// ES's `RangeType#doubleValue`, dates as milliseconds.
pub(crate) fn numeric_bucket_values(
    interval: f64,
    offset: f64,
    hard: (Option<f64>, Option<f64>),
    ranges: &[(f64, f64)],
    limit: usize,
    out: &mut Vec<u64>,
) {
    let mut previous = f64::NEG_INFINITY;
    for &(from, to) in ranges {
        let from = hard.0.map_or(from, |m| from.max(m));
        let to = hard.1.map_or(to, |m| to.min(m));
        let start = ((from - offset) / interval).floor();
        let end = ((to - offset) / interval).floor();
        let mut key = start.max(previous);
        while key <= end {
            if key != previous {
                if out.len() >= limit {
                    return;
                }
                out.push(tantivy::f64_to_u64(
                    key * interval + offset + interval / 2.0,
                ));
            }
            key += 1.0;
        }
        if end > previous {
            previous = end;
        }
    }
}

/// [`numeric_bucket_values`] for `date_histogram`: buckets are numbered consecutively
/// (fixed-width bucket numbers or the indexed rounding's indices).
pub(crate) fn date_bucket_values(
    rounding: &super::rounding::DateRounding,
    hard: (Option<i64>, Option<i64>),
    ranges: &[(i64, i64)],
    limit: usize,
    out: &mut Vec<u64>,
) {
    use super::rounding::DateRounding;
    let mut previous: Option<i128> = None;
    for &(from, to) in ranges {
        let from = hard.0.map_or(from, |m| from.max(m));
        let to = hard.1.map_or(to, |m| to.min(m));
        let number = |t: i64| -> i128 {
            match rounding {
                DateRounding::Native { interval, offset } => {
                    (t as i128 - *offset as i128).div_euclid(*interval as i128)
                }
                DateRounding::Indexed(ix) => ix.bucket_of(t).0 as i128,
            }
        };
        let (start, end) = (number(from), number(to));
        let mut key = previous.map_or(start, |p| start.max(p + 1));
        while key <= end {
            if out.len() >= limit {
                return;
            }
            let v = match rounding {
                DateRounding::Native { interval, offset } => {
                    key * *interval as i128 + *offset as i128 + (*interval / 2) as i128
                }
                DateRounding::Indexed(_) => key,
            };
            out.push(tantivy::i64_to_u64(
                v.clamp(i64::MIN as i128, i64::MAX as i128) as i64,
            ));
            key += 1;
        }
        if previous.is_none_or(|p| end > p) {
            previous = Some(end);
        }
    }
}

use lode_engine::range_field::{dec_f64, dec_i64, RangeKind};

impl ValueSource for RangeBucketSource {
    fn column_type(&self) -> ColumnType {
        match self.bucketing {
            RangeBucketing::Numeric { .. } => ColumnType::F64,
            RangeBucketing::Date { .. } => ColumnType::I64,
        }
    }

    fn load_block(
        &mut self,
        docs: &[DocId],
        values: &mut Vec<u64>,
        docids: &mut Vec<DocId>,
        _row_ids: &mut Vec<RowId>,
    ) -> Cardinality {
        values.clear();
        docids.clear();
        let width = self.kind.width();
        let mut ranges_f = Vec::new();
        let mut ranges_i = Vec::new();
        let mut out = Vec::new();
        for &doc in docs {
            ranges_f.clear();
            ranges_i.clear();
            for ord in self.column.term_ords(doc) {
                self.buf.clear();
                if self.column.ord_to_bytes(ord, &mut self.buf).is_err()
                    || self.buf.len() != 2 * width
                {
                    continue;
                }
                let (a, b) = self.buf.split_at(width);
                match self.kind {
                    RangeKind::Float | RangeKind::Double => ranges_f.push((dec_f64(a), dec_f64(b))),
                    _ => ranges_i.push((dec_i64(a), dec_i64(b))),
                }
            }
            // ES walks a document's ranges sorted by lower bound (its doc values encode them
            // sorted); the column keeps them in document order.
            ranges_f.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
            ranges_i.sort_unstable();
            out.clear();
            match &self.bucketing {
                RangeBucketing::Numeric {
                    interval,
                    offset,
                    hard,
                } => {
                    // Integers and dates, already sorted; `ranges_f` is then empty.
                    ranges_f.extend(ranges_i.iter().map(|&(a, b)| (a as f64, b as f64)));
                    numeric_bucket_values(
                        *interval, *offset, *hard, &ranges_f, self.limit, &mut out,
                    )
                }
                RangeBucketing::Date { rounding, hard } => {
                    date_bucket_values(rounding, *hard, &ranges_i, self.limit, &mut out)
                }
            }
            docids.extend(std::iter::repeat_n(doc, out.len()));
            values.extend_from_slice(&out);
        }
        Cardinality::Multivalued
    }

    fn to_f64(self: Box<Self>) -> Box<dyn ValueSource> {
        self
    }
}

#[cfg(test)]
mod range_bucket_tests {

    /// The table of known buckets answers as the rounding does, for instants in any order,
    /// across daylight saving changes, with an offset, once the table is full too.
    #[test]
    fn date_indexer_agrees_with_the_rounding() {
        use super::{DateIndexer, KNOWN_BUCKETS};
        use crate::rounding::{IndexedRounding, IndexedUnit};
        use lode_dates::{CalendarUnit, Tz};
        for (unit, offset, cap_hit) in [
            (CalendarUnit::Month, 0, false),
            (CalendarUnit::Quarter, 3 * 3_600_000, false),
            (CalendarUnit::Day, -7 * 60_000, true),
        ] {
            let rounding = IndexedRounding {
                unit: IndexedUnit::Calendar(unit),
                tz: Tz::parse("America/New_York").unwrap(),
                offset,
                multiple: 1,
                anchor: 0,
            };
            let mut indexer = DateIndexer {
                rounding: rounding.clone(),
                cached: (1, 0, 0),
                known: Vec::new(),
            };
            // Pseudo-random instants over 2014-2026.
            let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
            for _ in 0..20_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let t = 1_400_000_000_000 + (x % 400_000_000_000) as i64;
                assert_eq!(
                    indexer.index_of(t),
                    rounding.bucket_of(t).0,
                    "{unit:?} at {t}"
                );
            }
            assert_eq!(indexer.known.len() == KNOWN_BUCKETS, cap_hit, "{unit:?}");
        }
    }

    use super::{date_bucket_values, numeric_bucket_values};
    use crate::rounding::DateRounding;

    fn numeric(
        interval: f64,
        offset: f64,
        hard: (Option<f64>, Option<f64>),
        r: &[(f64, f64)],
    ) -> Vec<f64> {
        let mut out = Vec::new();
        numeric_bucket_values(interval, offset, hard, r, 1000, &mut out);
        // The middle of each bucket, back to its key.
        out.iter()
            .map(|&v| tantivy::u64_to_f64(v) - interval / 2.0)
            .collect()
    }

    #[test]
    fn overlapping_ranges_count_once_per_bucket() {
        assert_eq!(
            numeric(5.0, 1.0, (None, None), &[(1.0, 3.0), (2.0, 7.0)]),
            vec![1.0, 6.0]
        );
        assert_eq!(
            numeric(
                10.0,
                0.0,
                (None, None),
                &[(0.0, 50.0), (10.0, 20.0), (55.0, 61.0)]
            ),
            vec![0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
        );
    }

    #[test]
    fn hard_bounds_clip_each_range() {
        let r = [(i64::MIN as f64, 10.0), (15.0, i64::MAX as f64)];
        let keys = numeric(1.0, 0.0, (Some(0.0), Some(20.0)), &r);
        let want: Vec<f64> = (0..=10).chain(15..=20).map(f64::from).collect();
        assert_eq!(keys, want);
    }

    #[test]
    fn a_document_stops_past_the_limit() {
        let mut out = Vec::new();
        numeric_bucket_values(1.0, 0.0, (None, None), &[(0.0, 1e12)], 7, &mut out);
        assert_eq!(out.len(), 7);
    }

    #[test]
    fn fixed_date_buckets_are_bucket_middles() {
        let rounding = DateRounding::Native {
            interval: 100,
            offset: 10,
        };
        let mut out = Vec::new();
        date_bucket_values(
            &rounding,
            (None, None),
            &[(5, 120), (115, 260)],
            100,
            &mut out,
        );
        let got: Vec<i64> = out.iter().map(|&v| tantivy::u64_to_i64(v)).collect();
        assert_eq!(got, vec![-40, 60, 160, 260]);
        out.clear();
        date_bucket_values(&rounding, (Some(50), Some(150)), &[(5, 260)], 100, &mut out);
        let got: Vec<i64> = out.iter().map(|&v| tantivy::u64_to_i64(v)).collect();
        assert_eq!(got, vec![60, 160]);
    }
}
