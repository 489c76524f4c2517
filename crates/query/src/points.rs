//! A sorted index of a numeric column's values per segment, and the range query that uses it.
//!
//! tantivy answers a range on a fast field by scanning the column (cost: every document of the
//! segment), or on an indexed field by walking the term dictionary (cost: every distinct value
//! in the range). Lucene keeps a points index (a BKD tree) instead, where a range costs a tree
//! descent plus the matching documents. [`SortedPoints`] is that index in one dimension: every
//! (value, document) pair of a segment's column sorted by value, built on first use and cached
//! per segment, so a range is two binary searches and its documents are one contiguous slice.
//!
//! [`PointRangeQuery`] chooses per segment between it and the column, as Lucene's
//! `IndexOrDocValuesQuery` does: a range matching few documents is read from the points (its
//! documents, sorted, become the doc set: cheap to lead a conjunction and to skip through);
//! a range matching a large share of the segment keeps tantivy's column scorer, whose `seek`
//! checks one value, which is what a selective sibling clause needs. A range covering the
//! whole column becomes tantivy's `AllScorer`, which aggregations recognise.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use tantivy::columnar::{Column, ColumnIndex};
use tantivy::index::SegmentId;
use tantivy::query::{
    AllScorer, ConstScorer, EmptyScorer, EnableScoring, Explanation, Query, Scorer, Weight,
};
use tantivy::schema::Field;
use tantivy::{DocId, DocSet, Score, SegmentReader, TantivyError, TERMINATED};

/// Every value of one segment's column with its document, sorted by value (then document).
/// Values are in tantivy's order-preserving `u64` mapping of the column type. A segment
/// without the column has no points.
#[derive(Default)]
pub struct SortedPoints {
    values: Vec<u64>,
    docs: Vec<DocId>,
    /// Some document has more than one value (a range then needs its documents deduplicated).
    multi_valued: bool,
    /// Every document of the segment has at least one value.
    full: bool,
}

impl SortedPoints {
    fn build(column: &Column<u64>, max_doc: DocId) -> SortedPoints {
        let mut pairs: Vec<(u64, DocId)> = Vec::with_capacity(column.values.num_vals() as usize);
        let (multi_valued, full) = match &column.index {
            ColumnIndex::Full => {
                pairs.extend(column.values.iter().zip(0..max_doc));
                (false, true)
            }
            ColumnIndex::Empty { .. } => (false, max_doc == 0),
            index => {
                let mut with_value = 0u32;
                for doc in 0..max_doc {
                    let before = pairs.len();
                    pairs.extend(column.values_for_doc(doc).map(|v| (v, doc)));
                    with_value += u32::from(pairs.len() > before);
                }
                (
                    matches!(index, ColumnIndex::Multivalued(_)),
                    with_value == max_doc,
                )
            }
        };
        pairs.sort_unstable();
        let (values, docs) = pairs.into_iter().unzip();
        SortedPoints {
            values,
            docs,
            multi_valued,
            full,
        }
    }

    /// The number of (value, document) pairs.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The value at a position (positions run in ascending value order).
    pub fn value(&self, pos: usize) -> u64 {
        self.values[pos]
    }

    /// The document at a position.
    pub fn doc(&self, pos: usize) -> DocId {
        self.docs[pos]
    }

    /// Some document has more than one value.
    pub fn multi_valued(&self) -> bool {
        self.multi_valued
    }

    /// Every document of the segment has a value.
    pub fn full(&self) -> bool {
        self.full
    }

    /// The positions of the values within `[lo, hi]`.
    pub fn span(&self, lo: u64, hi: u64) -> std::ops::Range<usize> {
        let start = self.values.partition_point(|&v| v < lo);
        let end = self.values.partition_point(|&v| v <= hi);
        start..end.max(start)
    }

    fn bytes(&self) -> u64 {
        (self.values.capacity() * 8 + self.docs.capacity() * 4) as u64
    }

    /// The sorted, distinct documents at `span`: sorted directly when few, through a bitmap
    /// of the segment when many (linear in the matches plus `max_doc / 64`).
    fn docs_in(&self, span: std::ops::Range<usize>, max_doc: DocId) -> Vec<DocId> {
        let docs = &self.docs[span];
        if docs.len() * 64 < max_doc as usize {
            let mut docs = docs.to_vec();
            docs.sort_unstable();
            if self.multi_valued {
                docs.dedup();
            }
            return docs;
        }
        let mut words = vec![0u64; (max_doc as usize).div_ceil(64)];
        for &d in docs {
            words[d as usize / 64] |= 1 << (d % 64);
        }
        let mut out = Vec::with_capacity(docs.len());
        for (i, &w) in words.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                out.push((i * 64) as DocId + w.trailing_zeros());
                w &= w - 1;
            }
        }
        out
    }
}

/// The points of a segment's numeric, date or boolean fast field `field` (values in the
/// column's order-preserving `u64` mapping), from the cache or built now.
pub fn sorted_points(reader: &SegmentReader, field: Field) -> tantivy::Result<Arc<SortedPoints>> {
    let name = reader.schema().get_field_name(field).to_string();
    cache().get(reader, field, &name)
}

/// Process-wide cache of built points, by segment and field. Segment ids are unique across
/// indices, so one map serves every index; entries are evicted least recently used beyond
/// [`CACHE_BYTES`].
struct PointsCache {
    entries: Mutex<HashMap<(SegmentId, Field), Entry>>,
    clock: AtomicU64,
}

struct Entry {
    points: Arc<OnceLock<Arc<SortedPoints>>>,
    last_used: u64,
}

/// Memory the cached points may take (12 bytes per value): the 1.12M-document reference index
/// needs 13 MiB per field; this leaves room for ~40M values.
const CACHE_BYTES: u64 = 512 << 20;

fn cache() -> &'static PointsCache {
    static CACHE: OnceLock<PointsCache> = OnceLock::new();
    CACHE.get_or_init(|| PointsCache {
        entries: Mutex::new(HashMap::new()),
        clock: AtomicU64::new(0),
    })
}

impl PointsCache {
    fn get(
        &self,
        reader: &SegmentReader,
        field: Field,
        field_name: &str,
    ) -> tantivy::Result<Arc<SortedPoints>> {
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        let cell = {
            let mut entries = self.entries.lock();
            let e = entries
                .entry((reader.segment_id(), field))
                .or_insert_with(|| Entry {
                    points: Arc::new(OnceLock::new()),
                    last_used: now,
                });
            e.last_used = now;
            e.points.clone()
        };
        // Built outside the map's lock: other segments stay available meanwhile, and
        // concurrent requests for this one wait for the single build.
        // The column is opened only to build: opening it decodes its block index, which a
        // cached segment must not pay on every query.
        if let Some(points) = cell.get() {
            return Ok(points.clone());
        }
        let column = reader.fast_fields().u64_lenient(field_name)?;
        let points = cell
            .get_or_init(|| {
                Arc::new(match &column {
                    Some((column, _)) => SortedPoints::build(column, reader.max_doc()),
                    None => SortedPoints::default(),
                })
            })
            .clone();
        self.evict();
        Ok(points)
    }

    fn evict(&self) {
        let mut entries = self.entries.lock();
        let mut total: u64 = entries
            .values()
            .filter_map(|e| e.points.get().map(|p| p.bytes()))
            .sum();
        while total > CACHE_BYTES {
            let Some((&key, _)) = entries
                .iter()
                .filter(|(_, e)| e.points.get().is_some())
                .min_by_key(|(_, e)| e.last_used)
            else {
                break;
            };
            if let Some(e) = entries.remove(&key) {
                total -= e.points.get().map_or(0, |p| p.bytes());
            }
        }
    }
}

/// A range `[lo, hi]` (in the column's `u64` mapping) over a numeric fast field, answered per
/// segment from [`SortedPoints`] or from `fallback` (tantivy's range query on the same field
/// and bounds), whichever is cheaper for the share of the segment it matches.
#[derive(Clone, Debug)]
pub struct PointRangeQuery {
    field: Field,
    field_name: String,
    lo: u64,
    hi: u64,
    /// The constant score of every match (ES's range `boost`).
    score: Score,
    fallback: Arc<dyn Query>,
}

impl PointRangeQuery {
    pub fn new(
        field: Field,
        field_name: &str,
        lo: u64,
        hi: u64,
        fallback: Box<dyn Query>,
    ) -> PointRangeQuery {
        PointRangeQuery {
            field,
            field_name: field_name.to_string(),
            lo,
            hi,
            score: 1.0,
            fallback: fallback.into(),
        }
    }

    /// The field this range is on.
    pub fn field(&self) -> Field {
        self.field
    }

    /// The inclusive bounds, in the column's `u64` mapping.
    pub fn bounds(&self) -> (u64, u64) {
        (self.lo, self.hi)
    }

    /// Every match scores `score` (1.0 by default).
    pub fn with_score(mut self, score: Score) -> PointRangeQuery {
        self.score = score;
        self
    }
}

impl Query for PointRangeQuery {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(PointRangeWeight {
            field: self.field,
            field_name: self.field_name.clone(),
            lo: self.lo,
            hi: self.hi,
            score: self.score,
            fallback: self.fallback.weight(scoring)?,
        }))
    }
}

struct PointRangeWeight {
    field: Field,
    field_name: String,
    lo: u64,
    hi: u64,
    score: Score,
    fallback: Box<dyn Weight>,
}

/// Above this share of a segment's documents, the column serves the range: its doc set costs
/// nothing up front and one value per `seek`, where materialising the matches would cost
/// every one of them.
const DENSE_SHARE: usize = 8;

impl Weight for PointRangeWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let boost = boost * self.score;
        if self.lo > self.hi {
            return Ok(Box::new(EmptyScorer));
        }
        let points = cache().get(reader, self.field, &self.field_name)?;
        let span = points.span(self.lo, self.hi);
        let max_doc = reader.max_doc() as usize;
        if span.is_empty() {
            return Ok(Box::new(EmptyScorer));
        }
        if span.len() == points.values.len() && points.full {
            let all = AllScorer::new(reader.max_doc());
            return Ok(if boost == 1.0 {
                Box::new(all)
            } else {
                Box::new(ConstScorer::new(all, boost))
            });
        }
        if span.len() * DENSE_SHARE > max_doc {
            return self.fallback.scorer(reader, boost);
        }
        let docs = points.docs_in(span, reader.max_doc());
        Ok(Box::new(ConstScorer::new(SortedDocs::new(docs), boost)))
    }

    fn count(&self, reader: &SegmentReader) -> tantivy::Result<u32> {
        if reader.alive_bitset().is_none() && self.lo <= self.hi {
            let points = cache().get(reader, self.field, &self.field_name)?;
            if !points.multi_valued {
                return Ok(points.span(self.lo, self.hi).len() as u32);
            }
        }
        let mut scorer = self.scorer(reader, 1.0)?;
        Ok(match reader.alive_bitset() {
            Some(alive) => scorer.count(alive),
            None => scorer.count_including_deleted(),
        })
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut scorer = self.scorer(reader, 1.0)?;
        if scorer.seek(doc) != doc {
            return Err(TantivyError::InvalidArgument(format!(
                "Document #({doc}) does not match"
            )));
        }
        Ok(Explanation::new("PointRangeQuery", scorer.score()))
    }
}

/// A doc set over sorted, distinct document ids.
struct SortedDocs {
    docs: Vec<DocId>,
    cursor: usize,
}

impl SortedDocs {
    fn new(docs: Vec<DocId>) -> SortedDocs {
        SortedDocs { docs, cursor: 0 }
    }
}

impl DocSet for SortedDocs {
    fn advance(&mut self) -> DocId {
        self.cursor = (self.cursor + 1).min(self.docs.len());
        self.doc()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        // Galloping from the cursor: a seek costs the log of the distance it skips.
        let rest = &self.docs[self.cursor..];
        let mut bound = 1;
        while bound < rest.len() && rest[bound] < target {
            bound *= 2;
        }
        let end = (bound + 1).min(rest.len());
        self.cursor += rest[..end].partition_point(|&d| d < target);
        self.doc()
    }

    fn doc(&self) -> DocId {
        self.docs.get(self.cursor).copied().unwrap_or(TERMINATED)
    }

    fn size_hint(&self) -> u32 {
        (self.docs.len() - self.cursor) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::collector::{Count, DocSetCollector};
    use tantivy::query::RangeQuery;
    use tantivy::schema::Value as _;
    use tantivy::schema::{Schema, FAST, INDEXED, STORED};
    use tantivy::{doc, Index, SeekDangerResult, Term};

    fn index(values: &[Vec<i64>]) -> (Index, Field) {
        let mut sb = Schema::builder();
        let f = sb.add_i64_field("n", FAST | INDEXED | STORED);
        let index = Index::create_in_ram(sb.build());
        let mut w: tantivy::IndexWriter = index.writer(15_000_000).unwrap();
        for vs in values {
            let mut d = tantivy::TantivyDocument::default();
            for &v in vs {
                d.add_i64(f, v);
            }
            w.add_document(d).unwrap();
        }
        w.add_document(doc!()).unwrap();
        w.commit().unwrap();
        (index, f)
    }

    fn query(f: Field, lo: i64, hi: i64) -> PointRangeQuery {
        use tantivy::columnar::MonotonicallyMappableToU64;
        let fallback = RangeQuery::new(
            std::ops::Bound::Included(Term::from_field_i64(f, lo)),
            std::ops::Bound::Included(Term::from_field_i64(f, hi)),
        );
        PointRangeQuery::new(f, "n", lo.to_u64(), hi.to_u64(), Box::new(fallback))
    }

    #[test]
    fn every_range_matches_the_oracle() {
        // 1,000 documents, some with two values, some with none; values from -50 to 49.
        let values: Vec<Vec<i64>> = (0..1000i64)
            .map(|i| match i % 7 {
                0 => vec![],
                1 => vec![(i * 37) % 100 - 50, (i * 11) % 100 - 50],
                _ => vec![(i * 37) % 100 - 50],
            })
            .collect();
        let (index, f) = index(&values);
        let searcher = index.reader().unwrap().searcher();
        for (lo, hi) in [
            (-50, 49),
            (-1000, 1000),
            (0, 0),
            (10, 12),
            (-20, 30),
            (5, 4),
            (60, 70),
        ] {
            let stored = |addr: &tantivy::DocAddress| -> Vec<i64> {
                let d: tantivy::TantivyDocument = searcher.doc(*addr).unwrap();
                d.get_all(f).filter_map(|v| v.as_i64()).collect()
            };
            let expected = values
                .iter()
                .filter(|vs| vs.iter().any(|v| (lo..=hi).contains(v)))
                .count();
            let q = query(f, lo, hi);
            // Checked document by document (`seek` and `seek_danger`, as a conjunction does).
            let weight = q
                .weight(EnableScoring::disabled_from_searcher(&searcher))
                .unwrap();
            let segment = &searcher.segment_readers()[0];
            let matches = |doc: DocId| {
                values
                    .get(doc as usize)
                    .is_some_and(|vs| vs.iter().any(|v| (lo..=hi).contains(v)))
            };
            let mut scorer = weight.scorer(segment, 1.0).unwrap();
            for target in 0..segment.max_doc() {
                let doc = if scorer.doc() < target {
                    scorer.seek(target)
                } else {
                    scorer.doc()
                };
                assert_eq!(doc == target, matches(target), "seek {target} [{lo}, {hi}]");
            }
            let mut scorer = weight.scorer(segment, 1.0).unwrap();
            for target in 1..segment.max_doc() {
                let found = scorer.seek_danger(target) == SeekDangerResult::Found;
                assert_eq!(found, matches(target), "seek_danger {target} [{lo}, {hi}]");
            }
            assert_eq!(
                searcher.search(&q, &Count).unwrap(),
                expected,
                "count [{lo}, {hi}]"
            );
            // Every hit holds a value in the range (a shifted document id would not).
            let hits = searcher.search(&q, &DocSetCollector).unwrap();
            assert_eq!(hits.len(), expected, "hits [{lo}, {hi}]");
            for addr in &hits {
                assert!(
                    stored(addr).iter().any(|v| (lo..=hi).contains(v)),
                    "[{lo}, {hi}]"
                );
            }
        }
    }
}
