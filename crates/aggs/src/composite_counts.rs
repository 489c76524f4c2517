//! `composite` buckets over keyword, integer and date `terms` sources, counted per tuple of
//! segment ordinals in a dense array instead of tantivy's per-document hash map.
//!
//! Each source's values in a segment are ordinals (a keyword's term ordinals; a number's
//! offset from the segment's smallest value, when the values span a small range), plus one
//! slot for documents without a value under `missing_bucket`. A source's slots are laid out by *rank*, its
//! position in the composite order (`order`, `missing_order`), and the sources are mixed-radix
//! digits, the first the most significant: a cell's index is then its key's position in the
//! composite order. Counting a document is one array increment per combination of its values
//! (every combination of a multi-valued document's distinct terms, as Lucene's sorted-set
//! doc values give them to Elasticsearch's `CompositeValuesCollectorQueue`; numbers keep their
//! repeats, as the collector counts them); the segment's page
//! is the first `size` non-empty cells after the `after` key's index, the only ones whose
//! ordinals are turned into terms. Elasticsearch keeps a queue of `size` keys over segment
//! ordinals for the same reason: ordinals compare like their terms within a segment.
//!
//! The array's size is the product of the sources' slot counts: a segment where that is small
//! next to its document count is counted this way, any other keeps tantivy's collector. The
//! pages of a shard's segments become one intermediate result of tantivy's own type (vendored
//! patch 9), so merging, trimming and rendering stay the collector's.

use super::plan::{Op, PlanNode};
use lode_engine::mapping::Storage;
use tantivy::aggregation::agg_req::{AggregationVariants, Aggregations};
use tantivy::aggregation::bucket::{
    AfterKey, CompositeAggregation, CompositeAggregationSource, MissingOrder, Order,
};
use tantivy::aggregation::intermediate_agg_result::{
    CompositeIntermediateKey, IntermediateAggregationResult, IntermediateBucketResult,
    IntermediateCompositeBucketResult,
};
use tantivy::columnar::{Column, ColumnType, StrColumn};
use tantivy::query::Scorer;
use tantivy::{DocId, SegmentReader, COLLECT_BLOCK_BUFFER_LEN};

/// One composite key and its documents.
pub(crate) type KeyCount = (Vec<CompositeIntermediateKey>, u64);

/// A `composite` node whose buckets may be counted densely.
pub(crate) struct DenseComposite<'n> {
    pub name: &'n str,
    req: &'n CompositeAggregation,
    sources: Vec<Source<'n>>,
}

struct Source<'n> {
    field: &'n str,
    asc: bool,
    missing_bucket: bool,
    missing_first: bool,
    after: After<'n>,
}

/// A source's part of the `after` key.
#[derive(Clone, Copy)]
enum After<'a> {
    Unset,
    Missing,
    Term(&'a str),
    Integer(i64),
}

/// The node, if its shape allows dense counting: a `composite` read from columns (not computed
/// keys) without sub-aggregations, whose sources are all `terms` on keyword, integer or date
/// fields, with an `after` key (if any) of a term, an integer or `null` per source. Anything
/// else is collected by tantivy.
pub(crate) fn dense_composite<'n>(
    node: &'n PlanNode,
    collect: &'n Aggregations,
) -> Option<DenseComposite<'n>> {
    let Op::Composite(op) = &node.op else {
        return None;
    };
    if op.computed.is_some() || !node.subs.is_empty() {
        return None;
    }
    if op
        .fields
        .iter()
        .any(|f| !matches!(f.storage(), Some(Storage::Keyword | Storage::I64)))
    {
        return None;
    }
    let agg = collect.get(node.req.name.as_str())?;
    if !agg.sub_aggregation.is_empty() {
        return None;
    }
    let AggregationVariants::Composite(req) = &agg.agg else {
        return None;
    };
    from_request(node.req.name.as_str(), req)
}

/// The request's dense count, if its sources and `after` key allow one (fields not checked).
fn from_request<'n>(name: &'n str, req: &'n CompositeAggregation) -> Option<DenseComposite<'n>> {
    if req.size == 0 {
        // tantivy's collector refuses a page of 0 keys: leave the error to it.
        return None;
    }
    let mut sources = Vec::with_capacity(req.sources.len());
    for s in &req.sources {
        let CompositeAggregationSource::Terms(t) = s else {
            return None;
        };
        let after = match req.after.get(&t.name) {
            None if req.after.is_empty() => After::Unset,
            Some(AfterKey(CompositeIntermediateKey::Str(term))) => After::Term(term),
            Some(AfterKey(CompositeIntermediateKey::I64(n))) => After::Integer(*n),
            // The collector refuses a `null` without `missing_bucket`; a key of another type
            // pages through a mixed-type field's columns in the collector's own order.
            Some(AfterKey(CompositeIntermediateKey::Null)) if t.missing_bucket => After::Missing,
            _ => return None,
        };
        let asc = t.order == Order::Asc;
        sources.push(Source {
            field: &t.field,
            asc,
            missing_bucket: t.missing_bucket,
            missing_first: match t.missing_order {
                MissingOrder::First => true,
                MissingOrder::Last => false,
                MissingOrder::Default => asc,
            },
            after,
        });
    }
    Some(DenseComposite { name, req, sources })
}

/// The fewest and the most cells a segment's array may have; between them, a few per
/// document (a cell costs a write and a read, a document a hash map probe per key).
const MIN_CELLS: u64 = 1 << 12;
const MAX_CELLS: u64 = 1 << 20;
const CELLS_PER_DOC: u64 = 8;

/// Documents read per batch of column lookups.
const BATCH: usize = 1024;

/// A source's column in a segment, its values as ordinals `0..num_terms` in value order.
enum Values {
    /// No column: every document is missing the field.
    Absent,
    /// A keyword column: its term ordinals.
    Terms(StrColumn),
    /// An integer (or date) column whose values span a small range: `value - min`.
    Integers { column: Column<i64>, min: i64 },
}

/// A source in one segment: its column and where its slots are in the array.
struct Axis {
    values: Values,
    num_terms: u64,
    asc: bool,
    /// 1 when the missing slot comes first (rank 0) and the terms follow.
    shift: u64,
    /// The missing slot's rank, under `missing_bucket`.
    missing_rank: Option<u64>,
    width: u64,
    stride: u64,
}

impl Axis {
    fn rank(&self, ord: u64) -> u64 {
        let r = if self.asc {
            ord
        } else {
            self.num_terms - 1 - ord
        };
        r + self.shift
    }

    /// The key of the slot at `rank`.
    fn key(&self, rank: u64, text: &mut String) -> tantivy::Result<CompositeIntermediateKey> {
        if self.missing_rank == Some(rank) {
            return Ok(CompositeIntermediateKey::Null);
        }
        let r = rank - self.shift;
        let ord = if self.asc { r } else { self.num_terms - 1 - r };
        text.clear();
        match &self.values {
            Values::Integers { min, .. } => Ok(CompositeIntermediateKey::I64(*min + ord as i64)),
            Values::Terms(column) => {
                column.ord_to_str(ord, text)?;
                Ok(CompositeIntermediateKey::Str(text.clone()))
            }
            Values::Absent => Ok(CompositeIntermediateKey::Str(String::new())),
        }
    }

    /// Where the `after` key's value of this source lies among the ranks.
    fn after_position(&self, after: After) -> tantivy::Result<Position> {
        // The first ordinal not below the key's value, and whether it is the value.
        let (lower, exact) = match (after, &self.values) {
            (After::Unset, _) => return Ok(Position::Before(0)),
            (After::Missing, _) => {
                return Ok(match self.missing_rank {
                    Some(r) => Position::At(r),
                    None => Position::Before(0),
                })
            }
            (After::Term(term), Values::Terms(column)) => {
                let mut stream = column.dictionary().range().ge(term).into_stream()?;
                if stream.advance() {
                    (stream.term_ord(), stream.key() == term.as_bytes())
                } else {
                    (self.num_terms, false)
                }
            }
            (After::Integer(n), Values::Integers { min, .. }) => {
                let offset = i128::from(n) - i128::from(*min);
                if offset < 0 {
                    (0, false)
                } else if offset >= i128::from(self.num_terms) {
                    (self.num_terms, false)
                } else {
                    // A value no document has is still an ordinal, of an empty slot.
                    (offset as u64, true)
                }
            }
            (_, Values::Absent) => (0, false),
            // Checked by `axes`: a key of the source's type.
            _ => (0, false),
        };
        Ok(match (exact, self.asc) {
            (true, _) => Position::At(self.rank(lower)),
            (false, true) => Position::Before(lower + self.shift),
            // Descending, the values after the key are those below `lower`.
            (false, false) => Position::Before(self.num_terms - lower + self.shift),
        })
    }
}

/// A key's value relative to the ranks of its source.
enum Position {
    /// Equal to the value at this rank.
    At(u64),
    /// Between this rank and the one before: this rank is the first greater value.
    Before(u64),
}

/// The documents a segment's count reads.
pub(crate) enum Docs<'s> {
    /// Every live document (the query matches the whole segment).
    All,
    /// The query's documents.
    Matching(&'s mut dyn Scorer),
}

impl DenseComposite<'_> {
    /// Counts the segment's documents: its page (the first `size` keys after `after`, in the
    /// composite order) and how many documents were read, or `None` when the segment is not
    /// one to count densely (a source's field has columns of other types, or too many cells).
    pub(crate) fn count_segment(
        &self,
        segment: &SegmentReader,
        docs: Docs,
    ) -> tantivy::Result<Option<(Vec<KeyCount>, u64)>> {
        let Some(mut axes) = self.axes(segment)? else {
            return Ok(None);
        };
        let mut cells = 1u64;
        for a in axes.iter_mut().rev() {
            a.stride = cells;
            cells = match cells.checked_mul(a.width) {
                Some(c) => c,
                None => return Ok(None),
            };
        }
        let estimate = match &docs {
            Docs::All => u64::from(segment.num_docs()),
            Docs::Matching(scorer) => u64::from(scorer.size_hint()),
        };
        let budget = estimate
            .saturating_mul(CELLS_PER_DOC)
            .clamp(MIN_CELLS, MAX_CELLS);
        if cells > budget {
            return Ok(None);
        }
        let mut counts = vec![0u32; cells as usize];
        let multi = axes.iter().any(|a| match &a.values {
            Values::Terms(c) => c.ords().get_cardinality().is_multivalue(),
            Values::Integers { column, .. } => column.get_cardinality().is_multivalue(),
            Values::Absent => false,
        });
        let mut counter = Counter {
            axes: &axes,
            counts: &mut counts,
            keys: vec![0; BATCH],
            present: vec![true; BATCH],
            firsts: vec![None; BATCH],
            integers: vec![None; BATCH],
            values: vec![Vec::new(); axes.len()],
        };
        let mut read = 0u64;
        for_each_batch(segment, docs, |batch| {
            read += batch.len() as u64;
            if multi {
                counter.add_multi(batch);
            } else {
                counter.add_single(batch);
            }
        });
        let page = self.page(&axes, &counts)?;
        Ok(Some((page, read)))
    }

    /// The segment's columns of the sources, if each is one string column, or one integer
    /// column over a range of at most [`MAX_CELLS`] values, with an `after` value of its type.
    fn axes(&self, segment: &SegmentReader) -> tantivy::Result<Option<Vec<Axis>>> {
        let mut axes = Vec::with_capacity(self.sources.len());
        for s in &self.sources {
            let handles = segment.fast_fields().dynamic_column_handles(s.field)?;
            let values = match handles.iter().map(|h| h.column_type()).collect::<Vec<_>>()[..] {
                [] => Values::Absent,
                [ColumnType::Str] => match segment.fast_fields().str(s.field)? {
                    Some(column) => Values::Terms(column),
                    None => Values::Absent,
                },
                [ColumnType::I64] => match segment.fast_fields().column_opt::<i64>(s.field)? {
                    Some(column) => Values::Integers {
                        min: column.min_value(),
                        column,
                    },
                    None => Values::Absent,
                },
                _ => return Ok(None),
            };
            let num_terms = match &values {
                Values::Absent => 0,
                Values::Terms(column) => column.num_terms() as u64,
                Values::Integers { column, min } if column.values.num_vals() > 0 => {
                    let span = i128::from(column.max_value()) - i128::from(*min) + 1;
                    if span > i128::from(MAX_CELLS) {
                        return Ok(None);
                    }
                    span as u64
                }
                Values::Integers { .. } => 0,
            };
            let mistyped = matches!(
                (s.after, &values),
                (After::Term(_), Values::Integers { .. }) | (After::Integer(_), Values::Terms(_))
            );
            if mistyped {
                // A key of another type pages through the collector's own type order.
                return Ok(None);
            }
            let shift = u64::from(s.missing_bucket && s.missing_first);
            let missing_rank =
                s.missing_bucket
                    .then_some(if s.missing_first { 0 } else { num_terms });
            axes.push(Axis {
                values,
                num_terms,
                asc: s.asc,
                shift,
                missing_rank,
                width: num_terms + u64::from(s.missing_bucket),
                stride: 0,
            });
        }
        Ok(Some(axes))
    }

    /// The first `size` non-empty cells after the `after` key, as keys.
    fn page(&self, axes: &[Axis], counts: &[u32]) -> tantivy::Result<Vec<KeyCount>> {
        let start = self.start_cell(axes)?;
        let size = self.req.size as usize;
        let mut page = Vec::new();
        let mut text = String::new();
        for (cell, &n) in counts.iter().enumerate().skip(start as usize) {
            if n == 0 {
                continue;
            }
            let mut key = Vec::with_capacity(axes.len());
            for a in axes {
                key.push(a.key((cell as u64 / a.stride) % a.width, &mut text)?);
            }
            page.push((key, u64::from(n)));
            if page.len() == size {
                break;
            }
        }
        Ok(page)
    }

    /// The index of the first cell strictly after the `after` key (0 without one).
    fn start_cell(&self, axes: &[Axis]) -> tantivy::Result<u64> {
        if self.sources.iter().all(|s| matches!(s.after, After::Unset)) {
            return Ok(0);
        }
        let mut prefix = 0;
        for (a, s) in axes.iter().zip(&self.sources) {
            match a.after_position(s.after)? {
                Position::At(rank) => prefix += rank * a.stride,
                Position::Before(rank) => return Ok(prefix + rank * a.stride),
            }
        }
        // The key itself was on the previous page.
        Ok(prefix + 1)
    }

    /// The shard's result from its segments' pages.
    pub(crate) fn result(
        &self,
        pages: Vec<KeyCount>,
    ) -> tantivy::Result<IntermediateAggregationResult> {
        let buckets = IntermediateCompositeBucketResult::from_counts(self.req, pages)?;
        Ok(IntermediateAggregationResult::Bucket(
            IntermediateBucketResult::Composite { buckets },
        ))
    }
}

/// Adds documents into the array.
struct Counter<'a> {
    axes: &'a [Axis],
    counts: &'a mut [u32],
    /// Per document of a batch: its cell, and whether every source gave it a slot.
    keys: Vec<u64>,
    present: Vec<bool>,
    firsts: Vec<Option<u64>>,
    integers: Vec<Option<i64>>,
    /// Per source, a document's slot offsets (multi-valued segments).
    values: Vec<Vec<u64>>,
}

impl Counter<'_> {
    /// One value at most per document and source: a batched column read per source.
    fn add_single(&mut self, docs: &[DocId]) {
        let n = docs.len();
        self.keys[..n].fill(0);
        self.present[..n].fill(true);
        for a in self.axes {
            let firsts = &mut self.firsts[..n];
            // `first_vals` leaves the output as it was for a column without values.
            firsts.fill(None);
            match &a.values {
                Values::Terms(column) => column.ords().first_vals(docs, firsts),
                Values::Integers { column, min } => {
                    let integers = &mut self.integers[..n];
                    integers.fill(None);
                    column.first_vals(docs, integers);
                    for (first, v) in firsts.iter_mut().zip(integers.iter()) {
                        *first = v.map(|v| (v - *min) as u64);
                    }
                }
                Values::Absent => {}
            }
            for ((first, key), present) in firsts.iter().zip(&mut self.keys).zip(&mut self.present)
            {
                match (first, a.missing_rank) {
                    (Some(ord), _) => *key += a.rank(*ord) * a.stride,
                    (None, Some(rank)) => *key += rank * a.stride,
                    (None, None) => *present = false,
                }
            }
        }
        for (key, present) in self.keys[..n].iter().zip(&self.present) {
            if *present {
                self.counts[*key as usize] += 1;
            }
        }
    }

    /// Any number of values: each combination of a document's distinct values once.
    fn add_multi(&mut self, docs: &[DocId]) {
        'docs: for &doc in docs {
            for (a, values) in self.axes.iter().zip(&mut self.values) {
                values.clear();
                match &a.values {
                    Values::Terms(column) => {
                        values.extend(column.term_ords(doc).map(|ord| a.rank(ord) * a.stride));
                        // Segments written before keyword values became sets may repeat one.
                        values.sort_unstable();
                        values.dedup();
                    }
                    // Numbers keep their repeats (`SORTED_NUMERIC`), each counted as the
                    // collector counts it.
                    Values::Integers { column, min } => values.extend(
                        column
                            .values_for_doc(doc)
                            .map(|v| a.rank((v - *min) as u64) * a.stride),
                    ),
                    Values::Absent => {}
                }
                if values.is_empty() {
                    match a.missing_rank {
                        Some(rank) => values.push(rank * a.stride),
                        None => continue 'docs,
                    }
                }
            }
            add_combinations(&self.values, 0, 0, self.counts);
        }
    }
}

fn add_combinations(values: &[Vec<u64>], at: usize, key: u64, counts: &mut [u32]) {
    match values.get(at) {
        None => counts[key as usize] += 1,
        Some(offsets) => {
            for &offset in offsets {
                add_combinations(values, at + 1, key + offset, counts);
            }
        }
    }
}

/// Hands the live documents of `docs` to `f`, in batches of at most [`BATCH`].
fn for_each_batch(segment: &SegmentReader, docs: Docs, mut f: impl FnMut(&[DocId])) {
    let alive = segment.alive_bitset();
    let mut batch: Vec<DocId> = Vec::with_capacity(BATCH);
    match docs {
        Docs::All => {
            let max_doc = segment.max_doc();
            let mut start = 0;
            while start < max_doc {
                let end = max_doc.min(start + BATCH as DocId);
                batch.clear();
                match alive {
                    Some(alive) => batch.extend((start..end).filter(|&d| alive.is_alive(d))),
                    None => batch.extend(start..end),
                }
                if !batch.is_empty() {
                    f(&batch);
                }
                start = end;
            }
        }
        Docs::Matching(scorer) => {
            let mut buffer = [0 as DocId; COLLECT_BLOCK_BUFFER_LEN];
            loop {
                let n = scorer.fill_buffer(&mut buffer);
                match alive {
                    Some(alive) => batch.extend(buffer[..n].iter().filter(|&&d| alive.is_alive(d))),
                    None => batch.extend_from_slice(&buffer[..n]),
                }
                if n < COLLECT_BLOCK_BUFFER_LEN || batch.len() + COLLECT_BLOCK_BUFFER_LEN > BATCH {
                    if !batch.is_empty() {
                        f(&batch);
                    }
                    batch.clear();
                }
                if n < COLLECT_BLOCK_BUFFER_LEN {
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};
    use tantivy::aggregation::intermediate_agg_result::IntermediateAggregationResults;
    use tantivy::aggregation::{AggregationCollector, AggregationLimitsGuard};
    use tantivy::query::{AllQuery, EnableScoring, Query, TermQuery};
    use tantivy::schema::{IndexRecordOption, SchemaBuilder, FAST, STRING};
    use tantivy::{doc, Index, IndexWriter, Searcher, Term};

    /// Three segments (the last with deletes), single- and multi-valued keyword fields with
    /// missing values, and a field with a term per document.
    fn searcher() -> Searcher {
        let mut builder = SchemaBuilder::new();
        let a = builder.add_text_field("a", STRING | FAST);
        let b = builder.add_text_field("b", STRING | FAST);
        let m = builder.add_text_field("m", STRING | FAST);
        let id = builder.add_text_field("id", STRING | FAST);
        let int = builder.add_i64_field("int", FAST);
        let ints = builder.add_i64_field("ints", FAST);
        let index = Index::create_in_ram(builder.build());
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        let mut n = 0u64;
        for seg in 0..3u64 {
            for _ in 0..(300 + 50 * seg) {
                let mut d = doc!(id => format!("i{n:04}"));
                if !n.is_multiple_of(9) {
                    d.add_text(a, ["x", "y", "z", "é"][((n * 7) % 4) as usize]);
                }
                if n % 5 != 1 {
                    d.add_text(b, format!("b{}", (n * 13) % 6));
                }
                for k in 0..(n % 4) {
                    d.add_text(m, format!("m{}", (n + k * 5) % 7));
                }
                if n % 6 != 2 {
                    d.add_i64(int, ((n * 3) % 17) as i64 - 5);
                }
                // Numbers keep repeats within a document.
                for k in 0..(n % 3) {
                    d.add_i64(ints, ((n + k * 2) % 5) as i64 * 10 - 20);
                }
                writer.add_document(d).unwrap();
                n += 1;
            }
            writer.commit().unwrap();
        }
        for i in (0..n).filter(|i| i % 11 == 3) {
            writer.delete_term(Term::from_field_text(id, &format!("i{i:04}")));
        }
        writer.commit().unwrap();
        index.reader().unwrap().searcher()
    }

    fn composite(sources: Value, size: u32, after: Option<Value>) -> Aggregations {
        let mut body = json!({"sources": sources, "size": size});
        if let Some(after) = after {
            body["after"] = after;
        }
        serde_json::from_value(json!({"c": {"composite": body}})).unwrap()
    }

    /// The final result of the dense count, or `None` where a segment is left to the collector.
    fn dense(searcher: &Searcher, aggs: &Aggregations, query: &dyn Query) -> Option<Value> {
        let AggregationVariants::Composite(req) = &aggs["c"].agg else {
            unreachable!()
        };
        let counted = from_request("c", req)?;
        let weight = query
            .weight(EnableScoring::disabled_from_searcher(searcher))
            .unwrap();
        let mut pages = Vec::new();
        for segment in searcher.segment_readers() {
            let mut scorer = weight.scorer(segment, 1.0).unwrap();
            let docs = if query.is::<AllQuery>() {
                Docs::All
            } else {
                Docs::Matching(&mut *scorer)
            };
            let (page, _) = counted.count_segment(segment, docs).unwrap()?;
            pages.extend(page);
        }
        let mut res = IntermediateAggregationResults::default();
        res.push("c".into(), counted.result(pages).unwrap())
            .unwrap();
        let fin = res
            .into_final_result(aggs.clone(), AggregationLimitsGuard::default())
            .unwrap();
        Some(serde_json::to_value(fin).unwrap())
    }

    fn collected(searcher: &Searcher, aggs: &Aggregations, query: &dyn Query) -> Value {
        let collector = AggregationCollector::from_aggs(aggs.clone(), Default::default());
        let res = lode_query::FieldStatistics::new(searcher)
            .search(searcher, query, &collector)
            .unwrap();
        serde_json::to_value(res).unwrap()
    }

    /// Every page the collector gives, walked through `after_key`, for sources in each order,
    /// with and without missing buckets, over every document and a filter.
    #[test]
    fn pages_match_the_collector() {
        let searcher = searcher();
        let m = searcher.schema().get_field("m").unwrap();
        let filter = TermQuery::new(Term::from_field_text(m, "m3"), IndexRecordOption::Basic);
        let shapes = [
            json!([{"a": {"terms": {"field": "a"}}}, {"b": {"terms": {"field": "b"}}}]),
            json!([{"a": {"terms": {"field": "a", "order": "desc", "missing_bucket": true}}},
                   {"b": {"terms": {"field": "b", "missing_bucket": true, "missing_order": "last"}}}]),
            json!([{"m": {"terms": {"field": "m", "missing_bucket": true, "order": "desc",
                                    "missing_order": "first"}}},
                   {"a": {"terms": {"field": "a"}}},
                   {"b": {"terms": {"field": "b", "missing_bucket": true}}}]),
            json!([{"n": {"terms": {"field": "no_such_field", "missing_bucket": true}}},
                   {"m": {"terms": {"field": "m"}}}]),
            json!([{"i": {"terms": {"field": "int", "missing_bucket": true, "order": "desc"}}},
                   {"a": {"terms": {"field": "a"}}}]),
            json!([{"a": {"terms": {"field": "a", "missing_bucket": true}}},
                   {"s": {"terms": {"field": "ints", "missing_bucket": true,
                                    "missing_order": "last"}}},
                   {"i": {"terms": {"field": "int"}}}]),
        ];
        let queries: [&dyn Query; 2] = [&AllQuery, &filter];
        for shape in &shapes {
            for query in queries {
                for size in [1, 4, 1000] {
                    let mut after = None;
                    let mut pages = 0;
                    loop {
                        let aggs = composite(shape.clone(), size, after.clone());
                        let want = collected(&searcher, &aggs, query);
                        let got = dense(&searcher, &aggs, query).expect("counted densely");
                        assert_eq!(got, want, "{shape} size {size} after {after:?}");
                        let buckets = want["c"]["buckets"].as_array().unwrap();
                        if buckets.is_empty() {
                            break;
                        }
                        pages += 1;
                        assert!(pages < 500, "{shape} {size} {after:?} {want}");
                        // The final `after_key` is typed as a request's `after` (`str:x`, `null:`).
                        after = Some(want["c"]["after_key"].clone());
                    }
                }
            }
        }
    }

    /// `after` keys between and beyond the terms.
    #[test]
    fn after_keys_not_in_the_dictionary() {
        let searcher = searcher();
        for order in ["asc", "desc"] {
            let sources = json!([{"a": {"terms": {"field": "a", "order": order}}},
                                 {"b": {"terms": {"field": "b", "order": order,
                                                  "missing_bucket": true}}}]);
            for (a, b) in [
                ("", "b0"),
                ("xa", "b3"),
                ("y", "a"),
                ("zz", "c"),
                ("y", "null"),
            ] {
                let b = if b == "null" {
                    json!("null:")
                } else {
                    json!(format!("str:{b}"))
                };
                let after = json!({"a": format!("str:{a}"), "b": b});
                let aggs = composite(sources.clone(), 3, Some(after));
                assert_eq!(
                    dense(&searcher, &aggs, &AllQuery).unwrap(),
                    collected(&searcher, &aggs, &AllQuery)
                );
            }
        }
    }

    /// Integer `after` values below, between and above a segment's values.
    #[test]
    fn integer_after_keys() {
        let searcher = searcher();
        for order in ["asc", "desc"] {
            let sources = json!([{"i": {"terms": {"field": "int", "order": order,
                                                  "missing_bucket": true}}},
                                 {"s": {"terms": {"field": "ints", "order": order}}}]);
            for (i, s) in [(-100, 0), (-5, -20), (3, 5), (11, 20), (12, 70)] {
                let after = json!({"i": format!("i64:{i}"), "s": format!("i64:{s}")});
                let aggs = composite(sources.clone(), 3, Some(after));
                assert_eq!(
                    dense(&searcher, &aggs, &AllQuery).unwrap(),
                    collected(&searcher, &aggs, &AllQuery)
                );
            }
        }
    }

    /// A term per document: more cells than the budget allows, left to the collector.
    #[test]
    fn many_combinations_are_left_to_the_collector() {
        let searcher = searcher();
        let aggs = composite(
            json!([{"i": {"terms": {"field": "id"}}}, {"j": {"terms": {"field": "id"}}}]),
            10,
            None,
        );
        assert!(dense(&searcher, &aggs, &AllQuery).is_none());
    }
}
