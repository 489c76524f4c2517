//! A sorted index of a numeric column's values per segment: Lucene's points, in one dimension.
//!
//! tantivy answers a range on a fast field by scanning the column (cost: every document of the
//! segment), or on an indexed field by walking the term dictionary (cost: every distinct value
//! in the range). Lucene keeps a points index (a BKD tree) instead, where a range costs a tree
//! descent plus the matching documents. [`SortedPoints`] is that index in one dimension: every
//! (value, document) pair of a segment's column sorted by value, built on first use and cached
//! per segment, so a range is two binary searches and its documents are one contiguous slice.
//! Numbers and dates with doc values have no terms in tantivy (see `FieldDef::inverted`): exact
//! values and ranges on them are read from here (`lode_query::points::PointRangeQuery`), and
//! sorted pages walk it (`lode_hits::walk`).
//!
//! The index lives with the engine because a shard keeps it warm: [`PointsWarmer`] builds the
//! points of the fields in use for every new segment (a merged one above all) before the
//! refreshed searcher is published, so no query pays for the build, and drops the points of
//! segments no searcher holds any more.

use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use tantivy::columnar::{Column, ColumnIndex};
use tantivy::index::SegmentId;
use tantivy::schema::Field;
use tantivy::{DocId, Searcher, SearcherGeneration, SegmentReader, Warmer};

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
    /// Ranges recently asked for as bitsets, least recent first (see [`Self::cached_bits`]).
    filters: Mutex<Vec<CachedRange>>,
}

/// A range's documents as a bitset of the segment (bit `d` of word `d / 64`).
pub type DocBits = Arc<Vec<u64>>;

struct CachedRange {
    lo: u64,
    hi: u64,
    bits: Option<DocBits>,
}

/// Ranges remembered per segment and field.
const CACHED_RANGES: usize = 16;

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
            filters: Mutex::default(),
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

    /// The number of leading positions whose value satisfies `below` (a predicate true for
    /// a prefix of the values, as `slice::partition_point` asks).
    pub fn partition_point(&self, below: impl FnMut(&u64) -> bool) -> usize {
        self.values.partition_point(below)
    }

    pub fn bytes(&self) -> u64 {
        (self.values.capacity() * 8 + self.docs.capacity() * 4) as u64
    }

    /// The documents with a value in `[lo, hi]` as a bitset, when the same range was asked
    /// for before on this segment: a filter repeated across requests (`status: 0` on every
    /// page) is materialised once, as Lucene's query cache does for frequent filters, while a
    /// one-off range (a random cut-off date) costs nothing here.
    pub fn cached_bits(&self, lo: u64, hi: u64, max_doc: DocId) -> Option<DocBits> {
        let mut filters = self.filters.lock();
        if let Some(i) = filters.iter().position(|c| c.lo == lo && c.hi == hi) {
            let mut c = filters.remove(i);
            if c.bits.is_none() {
                c.bits = Some(Arc::new(self.bits(self.span(lo, hi), max_doc)));
            }
            let bits = c.bits.clone();
            filters.push(c);
            return bits;
        }
        if filters.len() >= CACHED_RANGES {
            // A range seen once goes first: it is the likeliest never to come back.
            let victim = filters.iter().position(|c| c.bits.is_none()).unwrap_or(0);
            filters.remove(victim);
        }
        filters.push(CachedRange { lo, hi, bits: None });
        None
    }

    /// The documents at `span` as a bitset of the segment.
    pub fn bits(&self, span: std::ops::Range<usize>, max_doc: DocId) -> Vec<u64> {
        let mut words = vec![0u64; (max_doc as usize).div_ceil(64)];
        for &d in &self.docs[span] {
            words[d as usize / 64] |= 1 << (d % 64);
        }
        words
    }

    /// The sorted, distinct documents at `span` (for spans of a small share of the segment;
    /// larger ones are materialised with [`SortedPoints::bits`]).
    pub fn docs_in(&self, span: std::ops::Range<usize>) -> Vec<DocId> {
        let mut docs = self.docs[span].to_vec();
        docs.sort_unstable();
        if self.multi_valued {
            docs.dedup();
        }
        docs
    }
}

/// The points of a segment's numeric, date or boolean fast field `field` (values in the
/// column's order-preserving `u64` mapping), from the cache or built now.
pub fn sorted_points(reader: &SegmentReader, field: Field) -> tantivy::Result<Arc<SortedPoints>> {
    cache().get(reader, field, reader.schema().get_field_name(field))
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

impl PointsCache {
    /// The fields whose points are built for any of `segments`.
    fn fields_built_for(&self, segments: &HashSet<SegmentId>) -> HashSet<Field> {
        self.entries
            .lock()
            .iter()
            .filter(|((seg, _), e)| segments.contains(seg) && e.points.get().is_some())
            .map(|((_, field), _)| *field)
            .collect()
    }

    fn forget(&self, segments: &HashSet<SegmentId>) {
        self.entries
            .lock()
            .retain(|(seg, _), _| !segments.contains(seg));
    }
}

/// Keeps one shard's points warm (registered on its `IndexReader`; tantivy calls it while it
/// reloads, before the new searcher is published). A field counts as in use when its points
/// were built for a segment of the previous searcher: those are built for every new segment.
/// Segments that no live searcher holds any more (merged away) leave the cache.
#[derive(Default)]
pub struct PointsWarmer {
    /// The segments of the last searcher warmed.
    current: Mutex<HashSet<SegmentId>>,
    /// Every segment warmed that may still be live.
    known: Mutex<HashSet<SegmentId>>,
}

impl Warmer for PointsWarmer {
    fn warm(&self, searcher: &Searcher) -> tantivy::Result<()> {
        let previous = std::mem::take(&mut *self.current.lock());
        let in_use = cache().fields_built_for(&previous);
        let mut now = HashSet::new();
        for reader in searcher.segment_readers() {
            now.insert(reader.segment_id());
            if previous.contains(&reader.segment_id()) {
                continue;
            }
            for &field in &in_use {
                sorted_points(reader, field)?;
            }
        }
        self.known.lock().extend(now.iter().copied());
        *self.current.lock() = now;
        Ok(())
    }

    fn garbage_collect(&self, live: &[&SearcherGeneration]) {
        let alive: HashSet<SegmentId> = live
            .iter()
            .flat_map(|g| g.segments().keys().copied())
            .collect();
        let mut known = self.known.lock();
        let gone: HashSet<SegmentId> = known.difference(&alive).copied().collect();
        if !gone.is_empty() {
            cache().forget(&gone);
            known.retain(|s| !gone.contains(s));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::schema::{Schema, FAST};
    use tantivy::{doc, Index, IndexWriter, ReloadPolicy};

    fn built(segment: SegmentId, field: Field) -> bool {
        cache()
            .entries
            .lock()
            .get(&(segment, field))
            .is_some_and(|e| e.points.get().is_some())
    }

    fn segment_ids(searcher: &Searcher) -> Vec<SegmentId> {
        searcher
            .segment_readers()
            .iter()
            .map(|r| r.segment_id())
            .collect()
    }

    #[test]
    fn warmer_builds_fields_in_use_for_new_segments_and_forgets_merged_ones() {
        let mut sb = Schema::builder();
        let used = sb.add_i64_field("used", FAST);
        let unused = sb.add_i64_field("unused", FAST);
        let index = Index::create_in_ram(sb.build());
        let warmer = Arc::new(PointsWarmer::default());
        let weak: std::sync::Weak<dyn Warmer> = Arc::downgrade(&warmer) as _;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .warmers(vec![weak])
            .try_into()
            .unwrap();
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        writer
            .add_document(doc!(used => 1i64, unused => 1i64))
            .unwrap();
        writer.commit().unwrap();
        reader.reload().unwrap();
        let first = segment_ids(&reader.searcher());
        // Nothing is in use yet: nothing is built ahead of a query.
        assert!(!built(first[0], used));
        // A query reads `used` on the first segment.
        sorted_points(&reader.searcher().segment_readers()[0], used).unwrap();
        writer
            .add_document(doc!(used => 2i64, unused => 2i64))
            .unwrap();
        writer.commit().unwrap();
        reader.reload().unwrap();
        let second: Vec<SegmentId> = segment_ids(&reader.searcher())
            .into_iter()
            .filter(|s| !first.contains(s))
            .collect();
        assert_eq!(second.len(), 1);
        assert!(built(second[0], used), "the field in use is warmed");
        assert!(!built(second[0], unused), "other fields are not");

        // Merged away and no longer searched: the old segments leave the cache.
        let all = segment_ids(&reader.searcher());
        writer.merge(&all).wait().unwrap();
        writer.commit().unwrap();
        reader.reload().unwrap();
        let merged = segment_ids(&reader.searcher());
        assert_eq!(merged.len(), 1);
        assert!(built(merged[0], used), "the merged segment is warmed");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while all.iter().any(|s| built(*s, used)) {
            assert!(
                std::time::Instant::now() < deadline,
                "merged-away points stay cached"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}
