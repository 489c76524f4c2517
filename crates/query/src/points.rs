//! The range query over the points index ([`lode_engine::points`]).
//!
//! [`PointRangeQuery`] chooses per segment between the points and the column, as Lucene's
//! `IndexOrDocValuesQuery` does: a range matching few documents is read from the points (its
//! documents, sorted, become the doc set: cheap to lead a conjunction and to skip through);
//! a range matching a large share of the segment keeps tantivy's column scorer, whose `seek`
//! checks one value, which is what a selective sibling clause needs. A range covering the
//! whole column becomes tantivy's `AllScorer`, which aggregations recognise.

pub use lode_engine::points::{sorted_points, DocBits, SortedPoints};
use std::sync::{Arc, Mutex, OnceLock};
use tantivy::index::SegmentId;
use tantivy::query::{
    AllScorer, ConstScorer, EmptyScorer, EnableScoring, Explanation, Query, Scorer, Weight,
};
use tantivy::schema::Field;
use tantivy::{
    DocId, DocSet, Score, SeekDangerResult, SegmentReader, COLLECT_BLOCK_BUFFER_LEN, TERMINATED,
};

/// A range `[lo, hi]` (in the column's `u64` mapping) over a numeric fast field, answered per
/// segment from [`SortedPoints`] or from `fallback` (tantivy's range query on the same field
/// and bounds), whichever is cheaper for the share of the segment it matches.
#[derive(Clone, Debug)]
pub struct PointRangeQuery {
    field: Field,
    lo: u64,
    hi: u64,
    /// The constant score of every match (ES's range `boost`).
    score: Score,
    fallback: Arc<dyn Query>,
    /// What each segment's scorers materialised, shared by every weight of this query (and
    /// its clones): a request counts its hits and walks its sorted page with two weights.
    memo: Arc<Mutex<Vec<(SegmentId, Memo)>>>,
}

impl PointRangeQuery {
    pub fn new(field: Field, lo: u64, hi: u64, fallback: Box<dyn Query>) -> PointRangeQuery {
        PointRangeQuery {
            field,
            lo,
            hi,
            score: 1.0,
            fallback: fallback.into(),
            memo: Arc::default(),
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

    /// Lucene's `toString` of the range, `field:[lo TO hi]`, in the field's own values.
    pub fn describe(&self, schema: &tantivy::schema::Schema) -> String {
        use tantivy::columnar::MonotonicallyMappableToU64;
        use tantivy::schema::FieldType;
        let entry = schema.get_field_entry(self.field);
        let show = |v: u64| match entry.field_type() {
            FieldType::F64(_) => f64::from_u64(v).to_string(),
            FieldType::U64(_) => v.to_string(),
            _ => i64::from_u64(v).to_string(),
        };
        format!("{}:[{} TO {}]", entry.name(), show(self.lo), show(self.hi))
    }

    /// Every match scores `score` (1.0 by default).
    pub fn with_score(mut self, score: Score) -> PointRangeQuery {
        self.score = score;
        self
    }
}

impl PointRangeQuery {
    /// The number of documents of `reader` this range matches, when the points index gives it
    /// without visiting documents (no deletes, one value per document), as Lucene's
    /// `Weight#count` answers only when it is cheap.
    pub fn cheap_count(&self, reader: &SegmentReader) -> tantivy::Result<Option<u32>> {
        if reader.alive_bitset().is_some() {
            return Ok(None);
        }
        if self.lo > self.hi {
            return Ok(Some(0));
        }
        let points = sorted_points(reader, self.field)?;
        Ok((!points.multi_valued()).then(|| points.span(self.lo, self.hi).len() as u32))
    }
}

impl PointRangeQuery {
    /// Live documents surely matched: on a single-valued field, the range's points less the
    /// segment's deleted documents (each point is one document).
    pub fn count_lower_bound(&self, reader: &SegmentReader) -> tantivy::Result<u64> {
        if self.lo > self.hi {
            return Ok(0);
        }
        let points = sorted_points(reader, self.field)?;
        if points.multi_valued() {
            return Ok(0);
        }
        let span = points.span(self.lo, self.hi).len() as u64;
        Ok(span.saturating_sub(reader.num_deleted_docs().into()))
    }
}

impl Query for PointRangeQuery {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(PointRangeWeight {
            field: self.field,
            lo: self.lo,
            hi: self.hi,
            score: self.score,
            fallback: self.fallback.weight(scoring)?,
            memo: self.memo.clone(),
        }))
    }
}

struct PointRangeWeight {
    field: Field,
    lo: u64,
    hi: u64,
    score: Score,
    fallback: Box<dyn Weight>,
    /// The query's memo: a sorted-page walk makes a fresh scorer per chunk of positions it
    /// checks, and the hit count has its own weight.
    memo: Arc<Mutex<Vec<(SegmentId, Memo)>>>,
}

/// A segment's materialised matches, shared by the scorers a query's weights make for it.
#[derive(Clone)]
enum Memo {
    Docs(Arc<[DocId]>),
    /// Filled the first time a dense range turns into a bitset.
    Bits(Arc<OnceLock<DocBits>>),
}

impl std::fmt::Debug for Memo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Memo::Docs(docs) => write!(f, "Docs({})", docs.len()),
            Memo::Bits(bits) => write!(f, "Bits(filled: {})", bits.get().is_some()),
        }
    }
}

impl PointRangeWeight {
    fn memo(&self, reader: &SegmentReader, make: impl FnOnce() -> Memo) -> Memo {
        let mut memo = self.memo.lock().unwrap_or_else(|e| e.into_inner());
        let id = reader.segment_id();
        if let Some((_, m)) = memo.iter().find(|(s, _)| *s == id) {
            return m.clone();
        }
        let m = make();
        memo.push((id, m.clone()));
        m
    }
}

/// From this share of a segment's documents up, the column serves the range until it leads
/// (a [`DenseRange`]): its doc set costs nothing up front and one value per `seek`, where
/// materialising the matches would cost every one of them; once materialised, the matches
/// are a bitset rather than a sorted list (Lucene's `DocIdSetBuilder` switches at the same
/// 1/128): built in one pass without sorting, and a follower's seek tests one bit. Below it,
/// the few matches are gathered up front as a sorted list.
const BITSET_SHARE: usize = 128;

impl Weight for PointRangeWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let boost = boost * self.score;
        if self.lo > self.hi {
            return Ok(Box::new(EmptyScorer));
        }
        let points = sorted_points(reader, self.field)?;
        let span = points.span(self.lo, self.hi);
        if span.is_empty() {
            return Ok(Box::new(EmptyScorer));
        }
        if span.len() == points.len() && points.full() {
            let all = AllScorer::new(reader.max_doc());
            return Ok(if boost == 1.0 {
                Box::new(all)
            } else {
                Box::new(ConstScorer::new(all, boost))
            });
        }
        // Dense enough for a bitset: the range starts on its column, so that after
        // a selective clause (50 ids, one account) it costs a value read per candidate (Lucene's
        // IndexOrDocValuesQuery), and builds the bitset only once it leads a conjunction or a
        // scan. Building it up front cost every segment a pass over its matches: with the
        // 10M index's 24 segments that was most of `ids_range`.
        if Gathered::bits_for(span.len(), reader.max_doc()) {
            let Memo::Bits(slot) = self.memo(reader, || {
                let slot = OnceLock::new();
                if let Some(words) = points.cached_bits(self.lo, self.hi, reader.max_doc()) {
                    let _ = slot.set(words);
                }
                Memo::Bits(Arc::new(slot))
            }) else {
                unreachable!("a segment's span is dense for every scorer of the weight")
            };
            let dense = match slot.get() {
                Some(words) => DenseRange::from_bits(words.clone(), span.len()),
                None => DenseRange {
                    column: self.fallback.scorer(reader, 1.0)?,
                    points,
                    span,
                    max_doc: reader.max_doc(),
                    bits: None,
                    slot,
                    steps: 0,
                    advances: 0,
                    score: 1.0,
                },
            };
            return Ok(Box::new(dense.scored(boost)));
        }
        let Memo::Docs(docs) = self.memo(reader, || Memo::Docs(points.docs_in(span).into())) else {
            unreachable!("a segment's span is sparse for every scorer of the weight")
        };
        Ok(Box::new(ConstScorer::new(SortedDocs::new(docs), boost)))
    }

    fn count(&self, reader: &SegmentReader) -> tantivy::Result<u32> {
        if reader.alive_bitset().is_none() && self.lo <= self.hi {
            let points = sorted_points(reader, self.field)?;
            if !points.multi_valued() {
                return Ok(points.span(self.lo, self.hi).len() as u32);
            }
        }
        crate::early_stop::scan_count(self, reader)
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        crate::explain_by_seek(self, reader, doc, "PointRangeQuery")
    }
}

/// Seeks a dense range takes from the column before it turns into a bitset.
const MATERIALISE_AFTER: u32 = 32;

/// Advances (a plain walk through the matches) before it turns into a bitset, as a share of
/// its matches: a walk that stops early (a total counted up to 10,000) is cheaper on the
/// column than a bitset of every match.
const MATERIALISE_AFTER_WALKED: usize = 16;

/// A range matching at least 1/[`BITSET_SHARE`] of a segment. Following a selective clause it answers
/// each `seek_danger` from the column (one value read, as Lucene's `IndexOrDocValuesQuery`
/// uses doc values there); leading a conjunction or a scan (many seeks and advances) it turns
/// into a bitset of its documents, built from the points in one pass, which then costs a
/// word scan per step. A range repeated across requests starts as its cached bitset
/// ([`SortedPoints::cached_bits`]).
pub(crate) struct DenseRange {
    column: Box<dyn Scorer>,
    points: Arc<SortedPoints>,
    span: std::ops::Range<usize>,
    max_doc: DocId,
    bits: Option<Bits>,
    /// Where the bitset goes once built, for the weight's next scorer on this segment.
    slot: Arc<OnceLock<DocBits>>,
    steps: u32,
    advances: usize,
    score: Score,
}

impl DenseRange {
    pub(crate) fn from_bits(words: DocBits, len: usize) -> DenseRange {
        let mut bits = Bits { words, doc: 0 };
        bits.seek(0);
        DenseRange {
            column: Box::new(EmptyScorer),
            points: Arc::default(),
            span: 0..len,
            max_doc: 0,
            bits: Some(bits),
            slot: Arc::default(),
            steps: 0,
            advances: 0,
            score: 1.0,
        }
    }

    /// The same documents, each scoring `score`.
    pub(crate) fn scored(mut self, score: Score) -> DenseRange {
        self.score = score;
        self
    }

    /// The segment's matches as a bitset, built from the points if the range still reads
    /// its column (and kept for the weight's later scorers on this segment).
    fn bitset(&mut self) -> DocBits {
        if self.bits.is_none() {
            self.materialise();
        }
        self.bits.as_ref().expect("materialised").words.clone()
    }

    /// Counts a seek; past [`MATERIALISE_AFTER`], switches to the bitset, at the column's
    /// current document (a valid position: seeks follow only valid states).
    fn step(&mut self) {
        if self.bits.is_some() {
            return;
        }
        self.steps += 1;
        if self.steps > MATERIALISE_AFTER {
            self.materialise();
        }
    }

    /// Counts an advance; past [`MATERIALISE_AFTER_WALKED`]'s share of the matches, switches
    /// to the bitset.
    fn walked(&mut self) {
        if self.bits.is_some() {
            return;
        }
        self.advances += 1;
        if self.advances * MATERIALISE_AFTER_WALKED > self.span.len() {
            self.materialise();
        }
    }

    fn materialise(&mut self) {
        let words = self
            .slot
            .get_or_init(|| Arc::new(self.points.bits(self.span.clone(), self.max_doc)))
            .clone();
        self.bits = Some(Bits {
            words,
            doc: self.column.doc(),
        });
    }
}

impl Scorer for DenseRange {
    fn score(&mut self) -> Score {
        self.score
    }

    /// Every match scores the same: a `minimum_should_match` disjunction collecting top hits
    /// may then leave this clause out of its candidates once the clause alone cannot lift a
    /// document above the threshold (the default, `INFINITY`, kept it leading every candidate).
    fn score_upper_bound(&self) -> Score {
        self.score
    }
}

/// The bitset of a scorer's matches when it is one of the doc sets here that hold or can
/// build one cheaply (a dense range, a gathered term set), for conjunctions that AND their
/// clauses word by word ([`crate::conjunction`]). Bits past the scorer's position are all
/// there: only a fresh scorer may be asked.
pub(crate) fn bitset_of(scorer: &mut dyn Scorer) -> Option<DocBits> {
    scorer.downcast_mut::<DenseRange>().map(DenseRange::bitset)
}

/// The bitset of a scorer's matches when it already holds one: a membership test then costs
/// a bit, for the sorted-page walk. Only a fresh scorer may be asked.
pub fn held_bitset(scorer: &dyn Scorer) -> Option<DocBits> {
    let dense = scorer.downcast_ref::<DenseRange>()?;
    dense.bits.as_ref().map(|b| b.words.clone())
}

impl DocSet for DenseRange {
    fn advance(&mut self) -> DocId {
        self.walked();
        match &mut self.bits {
            Some(b) if b.doc == TERMINATED => TERMINATED,
            Some(b) => b.seek(b.doc + 1),
            None => self.column.advance(),
        }
    }

    fn seek(&mut self, target: DocId) -> DocId {
        self.step();
        match &mut self.bits {
            Some(b) if b.doc >= target => b.doc,
            Some(b) => b.seek(target),
            None => self.column.seek(target),
        }
    }

    fn seek_danger(&mut self, target: DocId) -> SeekDangerResult {
        match &mut self.bits {
            Some(b) => match b.seek(target) {
                d if d == target => SeekDangerResult::Found,
                d => SeekDangerResult::SeekLowerBound(d),
            },
            None => self.column.seek_danger(target),
        }
    }

    fn fill_buffer(&mut self, buffer: &mut [DocId; COLLECT_BLOCK_BUFFER_LEN]) -> usize {
        match &mut self.bits {
            Some(b) => b.fill(buffer),
            None => {
                // tantivy's default, which an override cannot call.
                if self.doc() == TERMINATED {
                    return 0;
                }
                for (i, slot) in buffer.iter_mut().enumerate() {
                    *slot = self.doc();
                    if self.advance() == TERMINATED {
                        return i + 1;
                    }
                }
                buffer.len()
            }
        }
    }

    fn doc(&self) -> DocId {
        match &self.bits {
            Some(b) => b.doc,
            None => self.column.doc(),
        }
    }

    fn size_hint(&self) -> u32 {
        self.span.len() as u32
    }

    fn cost(&self) -> u64 {
        self.span.len() as u64
    }
}

/// A position in a segment bitset.
struct Bits {
    words: DocBits,
    doc: DocId,
}

impl Bits {
    /// Fills `buffer` from the current document on, word by word, and moves past them.
    fn fill(&mut self, buffer: &mut [DocId; COLLECT_BLOCK_BUFFER_LEN]) -> usize {
        if self.doc == TERMINATED {
            return 0;
        }
        let mut w = self.doc as usize / 64;
        let mut word = self.words[w] & (u64::MAX << (self.doc % 64));
        let mut n = 0;
        loop {
            while word != 0 {
                let doc = (w * 64) as DocId + word.trailing_zeros();
                if n == buffer.len() {
                    self.doc = doc;
                    return n;
                }
                buffer[n] = doc;
                n += 1;
                word &= word - 1;
            }
            w += 1;
            if w == self.words.len() {
                self.doc = TERMINATED;
                return n;
            }
            word = self.words[w];
        }
    }

    /// Moves to the first document at or after `target`.
    fn seek(&mut self, target: DocId) -> DocId {
        let mut w = target as usize / 64;
        if target == TERMINATED || w >= self.words.len() {
            self.doc = TERMINATED;
            return TERMINATED;
        }
        let mut word = self.words[w] & (u64::MAX << (target % 64));
        while word == 0 {
            w += 1;
            if w == self.words.len() {
                self.doc = TERMINATED;
                return TERMINATED;
            }
            word = self.words[w];
        }
        self.doc = (w * 64) as DocId + word.trailing_zeros();
        self.doc
    }
}

/// A constant-score doc set of a segment's documents, built from `words` (a bitset of the
/// segment holding `len` documents) or from `docs` (sorted, distinct): what a query that
/// gathers its matches up front (a range's points, a term set's postings) hands on.
pub(crate) fn const_scorer(docs: Gathered, boost: Score) -> Box<dyn Scorer> {
    match docs {
        Gathered::Bits { words, len } => Box::new(DenseRange::from_bits(words, len).scored(boost)),
        Gathered::Sorted(docs) => Box::new(ConstScorer::new(SortedDocs::new(docs), boost)),
    }
}

/// Matches gathered up front, in the representation their count calls for; shared, so that
/// every scorer a request makes for a segment reuses one gathering.
#[derive(Clone)]
pub(crate) enum Gathered {
    Bits { words: DocBits, len: usize },
    Sorted(Arc<[DocId]>),
}

impl Gathered {
    /// Whether `count` matches of a segment of `max_doc` documents go into a bitset.
    pub(crate) fn bits_for(count: usize, max_doc: DocId) -> bool {
        count * BITSET_SHARE >= max_doc as usize
    }
}

/// A doc set over sorted, distinct document ids.
struct SortedDocs {
    docs: Arc<[DocId]>,
    cursor: usize,
}

impl SortedDocs {
    fn new(docs: Arc<[DocId]>) -> SortedDocs {
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
        PointRangeQuery::new(f, lo.to_u64(), hi.to_u64(), Box::new(fallback))
    }

    #[test]
    fn every_range_matches_the_oracle() {
        // 20,000 documents, some with two values, some with none; values from -5,000 to 4,999:
        // the ranges below take each representation (sorted list, bitset, column).
        let values: Vec<Vec<i64>> = (0..20_000i64)
            .map(|i| match i % 7 {
                0 => vec![],
                1 => vec![(i * 37) % 10_000 - 5_000, (i * 11) % 10_000 - 5_000],
                _ => vec![(i * 37) % 10_000 - 5_000],
            })
            .collect();
        let (index, f) = index(&values);
        let searcher = index.reader().unwrap().searcher();
        for (lo, hi) in [
            (-5_000, 4_999),
            (-100_000, 100_000),
            (0, 0),
            (10, 12),
            (-20, 30),
            (-500, -200),
            (-3_000, 3_000),
            (5, 4),
            (6_000, 7_000),
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
                crate::FieldStatistics::new(&searcher)
                    .search(&searcher, &q, &Count)
                    .unwrap(),
                expected,
                "count [{lo}, {hi}]"
            );
            // Every hit holds a value in the range (a shifted document id would not).
            let hits = crate::FieldStatistics::new(&searcher)
                .search(&searcher, &q, &DocSetCollector)
                .unwrap();
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
