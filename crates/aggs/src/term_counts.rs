//! `terms` buckets counted from the term dictionary instead of the documents.
//!
//! When the search query matches every document of a segment (`match_all`, or a range that
//! covers the segment's whole [min, max] — tantivy then hands out an `AllScorer`), a keyword
//! field's bucket counts are its terms' document frequencies, corrected for the segment's
//! deleted documents (whose terms are read back from the column). The cost is the number of
//! distinct terms plus the number of deleted documents, not the number of documents; this is
//! the shortcut Elasticsearch takes for the same shape (its terms aggregator reads
//! `TermsEnum.docFreq()` when the query matches everything).
//!
//! In a segment the query matches only in part, the query's documents are counted by column
//! ordinal ([`query_ord_counts`]). A node with metric sub-aggregations is counted the same way
//! first; its sub-aggregations are then collected over the documents of the buckets the shard
//! keeps only ([`kept_terms`]), as Elasticsearch defers them (`breadth_first`).
//!
//! The counts become the same intermediate result tantivy's terms collector produces, so
//! shard pruning, merging, ordering and rendering stay one code path.

use super::plan::{Op, PlanNode};
use super::request::{AggKind, OrderKey};
use lode_engine::mapping::Storage;
use serde::Deserialize as _;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use tantivy::aggregation::intermediate_agg_result::{
    IntermediateAggregationResult, IntermediateBucketResult, IntermediateTermBucketResult,
};
use tantivy::schema::{Field, Schema};
use tantivy::termdict::TermStreamer;
use tantivy::{DocId, SegmentReader};

/// The keyword field whose buckets `node` may count from document frequencies, if its shape
/// allows it: a `terms` aggregation without sub-aggregations, `missing`, a partition or
/// `min_doc_count: 0` (which lists terms no matching document has), on an indexed keyword
/// field with doc values (the column serves deleted documents' terms).
pub(crate) fn countable_field(node: &PlanNode, schema: &Schema) -> Option<Field> {
    if !node.subs.is_empty() {
        return None;
    }
    counted_terms_field(node, schema)
}

/// The keyword field of a `terms` node whose buckets can be counted first and whose
/// sub-aggregations can then be collected over the documents of the buckets the shard keeps
/// only, as Elasticsearch's `breadth_first` collection mode defers them: the node is
/// [`countable_field`]'s but for its sub-aggregations, which are metrics without
/// sub-aggregations of their own, and it is ordered by count or key (an order by a
/// sub-aggregation needs every bucket's metric before the cut).
pub(crate) fn deferred_subs_field(node: &PlanNode, schema: &Schema) -> Option<Field> {
    let metrics_only = !node.subs.is_empty()
        && node
            .subs
            .iter()
            .all(|s| matches!(s.req.kind, AggKind::Metric(_)) && s.subs.is_empty());
    if !metrics_only {
        return None;
    }
    shard_cut(node)?;
    counted_terms_field(node, schema)
}

/// [`countable_field`] without its condition on sub-aggregations.
pub(crate) fn counted_terms_field(node: &PlanNode, schema: &Schema) -> Option<Field> {
    let Op::Terms(op) = &node.op else {
        return None;
    };
    let AggKind::Terms(req) = &node.req.kind else {
        return None;
    };
    let def = op.field.def.as_ref()?;
    // A keyword `include`/`exclude` drops buckets by term ([`crate::term_filter`]); a
    // partition, numeric filters and `missing` (which passes through them) do not count here.
    let (include, exclude) = op.keyword_filters();
    let plain = req.missing.is_none()
        && op.partition.is_none()
        && crate::term_filter::TermFilter::of(include, exclude).is_some()
        && req.min_doc_count > 0
        && op.numeric_include.is_none()
        && op.numeric_exclude.is_none();
    // A constant_keyword's terms are only those of the documents that stored its value; its
    // values are the constant column every document reads.
    let constant = def.ty == lode_engine::mapping::FieldType::ConstantKeyword;
    if !plain || constant || def.storage() != Storage::Keyword || !def.index || !def.doc_values {
        return None;
    }
    schema.get_field(&op.field.name).ok()
}

/// Per term of `field`, the number of live documents of `segment` that have it (terms no live
/// document has are left out, as the collector leaves them out), in term order.
///
/// Two sources give the same counts at different costs: the term dictionary's document
/// frequencies cost a dictionary step per term (an FST walk, ~0.3 µs), the column's ordinals
/// cost a read per value plus a step of its (block-encoded) dictionary per term. A field with
/// few terms (an `acctType`) is counted from document frequencies; one with nearly a term per
/// document (a name, an id) from its column, as Lucene counts it from doc values.
pub(crate) fn live_term_counts(
    segment: &SegmentReader,
    field: Field,
    field_name: &str,
) -> tantivy::Result<Vec<(String, u64)>> {
    live_counts(segment, field, field_name)?.into_terms(segment, field_name)
}

/// A segment's live counts of a keyword field, as [`live_term_counts`] chooses to count them.
pub(crate) enum SegmentCounts {
    /// Per term, in term order.
    Terms(TermCounts),
    /// Per ordinal of the segment's column (terms not read yet).
    Ords(Vec<u32>),
    /// The ordinals of the segment's column that have documents, ascending, with their counts
    /// (a query's few matches in a large dictionary).
    SparseOrds(Vec<(u32, u32)>),
}

impl SegmentCounts {
    fn into_terms(self, segment: &SegmentReader, field_name: &str) -> tantivy::Result<TermCounts> {
        match self {
            SegmentCounts::Terms(counts) => Ok(counts),
            SegmentCounts::Ords(per_ord) => match segment.fast_fields().str(field_name)? {
                Some(column) => ord_counts_to_terms(&column, &per_ord),
                None => Ok(Vec::new()),
            },
            SegmentCounts::SparseOrds(pairs) => match segment.fast_fields().str(field_name)? {
                Some(column) => {
                    let ords: Vec<u64> = pairs.iter().map(|&(o, _)| u64::from(o)).collect();
                    let mut counts = pairs.iter().map(|&(_, n)| u64::from(n));
                    let mut out = Vec::with_capacity(pairs.len());
                    column.dictionary().sorted_ords_to_term_cb(&ords, |t| {
                        out.push((term_text(t), counts.next().unwrap_or(0)));
                    })?;
                    Ok(out)
                }
                None => Ok(Vec::new()),
            },
        }
    }
}

/// [`live_term_counts`] before the column's ordinals are turned into terms.
pub(crate) fn live_counts(
    segment: &SegmentReader,
    field: Field,
    field_name: &str,
) -> tantivy::Result<SegmentCounts> {
    let num_terms = segment.inverted_index(field)?.terms().num_terms();
    if num_terms.saturating_mul(DOC_FREQ_STEP_COST) > segment.max_doc() as usize {
        if let Some(column) = segment.fast_fields().str(field_name)? {
            return Ok(SegmentCounts::Ords(column_ord_counts(segment, &column)));
        }
    }
    Ok(SegmentCounts::Terms(cached_doc_freq_term_counts(
        segment, field, field_name,
    )?))
}

/// A segment's live counts by document frequency, by segment, field and number of deleted
/// documents (which only grows while the segment lives): a `terms` over every document (the
/// reference `bucket` query) otherwise streamed each segment's term dictionary on every
/// request. Most recently used last; bounded by the terms held.
static DOC_FREQ_CACHE: std::sync::Mutex<Vec<(DocFreqKey, std::sync::Arc<TermCounts>)>> =
    std::sync::Mutex::new(Vec::new());
/// What the cache may hold, in terms (a few fields of a few dozen terms over a few dozen
/// segments take hundreds).
const DOC_FREQ_CACHE_TERMS: usize = 1 << 20;

type DocFreqKey = (tantivy::index::SegmentId, String, u32);

fn cached_doc_freq_term_counts(
    segment: &SegmentReader,
    field: Field,
    field_name: &str,
) -> tantivy::Result<Vec<(String, u64)>> {
    let key = (
        segment.segment_id(),
        field_name.to_string(),
        segment.num_deleted_docs(),
    );
    {
        let mut cache = DOC_FREQ_CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = cache.iter().position(|(k, _)| *k == key) {
            let entry = cache.remove(i);
            let counts = entry.1.as_ref().clone();
            cache.push(entry);
            return Ok(counts);
        }
    }
    let counts = doc_freq_term_counts(segment, field, field_name)?;
    let mut cache = DOC_FREQ_CACHE.lock().unwrap_or_else(|e| e.into_inner());
    cache.push((key, std::sync::Arc::new(counts.clone())));
    let mut held: usize = cache.iter().map(|(_, c)| c.len()).sum();
    while held > DOC_FREQ_CACHE_TERMS && cache.len() > 1 {
        held -= cache.remove(0).1.len();
    }
    Ok(counts)
}

/// A term dictionary step costs about this many column reads (measured on the reference
/// `userName` field: ~290 ns per FST step, a few ns per bit-packed ordinal).
const DOC_FREQ_STEP_COST: usize = 64;

/// The counts of [`live_term_counts`] from the term dictionary's document frequencies.
fn doc_freq_term_counts(
    segment: &SegmentReader,
    field: Field,
    field_name: &str,
) -> tantivy::Result<Vec<(String, u64)>> {
    let inverted = segment.inverted_index(field)?;
    let num_terms = inverted.terms().num_terms();
    let mut stream: TermStreamer = inverted.terms().stream()?;
    let mut counts: Vec<(String, u64)> = Vec::with_capacity(num_terms);
    while stream.advance() {
        let term = term_text(stream.key());
        counts.push((term, u64::from(stream.value().doc_freq)));
    }
    if let Some(alive) = segment.alive_bitset() {
        subtract_deleted(segment, field_name, alive.iter_deleted(), &mut counts)?;
    }
    counts.retain(|(_, n)| *n > 0);
    Ok(counts)
}

/// The counts of [`live_term_counts`] from the column: live documents per ordinal over every
/// value, deleted documents' ordinals taken off.
fn column_ord_counts(segment: &SegmentReader, column: &tantivy::columnar::StrColumn) -> Vec<u32> {
    let ords = column.ords();
    let mut per_ord = vec![0u32; column.num_terms()];
    let deleted = segment.alive_bitset().map(|alive| alive.iter_deleted());
    if ords.get_cardinality().is_multivalue() {
        // Segments written before keyword doc values became sets may repeat a value within a
        // document: count each document once per term.
        let alive = segment.alive_bitset();
        let mut doc_ords: Vec<u64> = Vec::new();
        for doc in 0..segment.max_doc() {
            if alive.is_some_and(|a| a.is_deleted(doc)) {
                continue;
            }
            doc_ords.clear();
            doc_ords.extend(column.term_ords(doc));
            doc_ords.sort_unstable();
            doc_ords.dedup();
            for &ord in &doc_ords {
                per_ord[ord as usize] += 1;
            }
        }
    } else {
        // One value at most per document: every stored value is one document's.
        let values = &ords.values;
        let mut buf = vec![0u64; 4096];
        let num_vals = u64::from(values.num_vals());
        let mut start = 0u64;
        while start < num_vals {
            let n = (num_vals - start).min(buf.len() as u64) as usize;
            values.get_range(start, &mut buf[..n]);
            for &ord in &buf[..n] {
                per_ord[ord as usize] += 1;
            }
            start += n as u64;
        }
        if let Some(deleted) = deleted {
            let deleted: Vec<DocId> = deleted.collect();
            let mut firsts = vec![None; 1024];
            for docs in deleted.chunks(1024) {
                let out = &mut firsts[..docs.len()];
                ords.first_vals(docs, out);
                for ord in out.iter().flatten() {
                    per_ord[*ord as usize] = per_ord[*ord as usize].saturating_sub(1);
                }
            }
        }
    }
    per_ord
}

/// Calls `f` with each block of the live documents `scorer` matches in `segment` (its batched
/// `fill_buffer`, deleted documents left out): the dense counts read their columns a block at a
/// time.
pub(crate) fn for_each_live_block(
    segment: &SegmentReader,
    scorer: &mut dyn tantivy::query::Scorer,
    mut f: impl FnMut(&[DocId]),
) {
    let alive = segment.alive_bitset();
    let mut block = [0 as DocId; tantivy::COLLECT_BLOCK_BUFFER_LEN];
    let mut docs: Vec<DocId> = Vec::with_capacity(block.len());
    loop {
        let n = scorer.fill_buffer(&mut block);
        if n == 0 {
            break;
        }
        docs.clear();
        docs.extend(
            block[..n]
                .iter()
                .copied()
                .filter(|&d| alive.is_none_or(|a| a.is_alive(d))),
        );
        f(&docs);
    }
}

/// A query's matches in a segment it does not match whole, per ordinal of a keyword column:
/// the counts [`live_counts`] gives for a whole segment, here over `scorer`'s live documents,
/// as Elasticsearch's `GlobalOrdinalsStringTermsAggregator` counts by ordinal. The shard then
/// adds segments up by global ordinal and reads back only the terms its cut keeps
/// ([`shard_result`]), where tantivy's collector turned every bucket of every segment into
/// text and merged them by hashing (seven times the time on a name field). Counted into an
/// array over the dictionary when the query's estimated matches are enough for it to pay,
/// else as the sorted list of the matches' ordinals.
pub(crate) fn query_ord_counts(
    segment: &SegmentReader,
    field_name: &str,
    scorer: &mut dyn tantivy::query::Scorer,
) -> tantivy::Result<SegmentCounts> {
    let Some(column) = segment.fast_fields().str(field_name)? else {
        return Ok(SegmentCounts::SparseOrds(Vec::new()));
    };
    let num_terms = column.num_terms();
    let dense = (scorer.size_hint() as usize).saturating_mul(DENSE_MATCHES_PER_TERM) >= num_terms;
    let mut per_ord = vec![0u32; if dense { num_terms } else { 0 }];
    // Sparse: every match's ordinals, sorted and counted at the end.
    let mut listed: Vec<u32> = Vec::new();
    let ords = column.ords();
    let multi = ords.get_cardinality().is_multivalue();
    let mut firsts = vec![None; tantivy::COLLECT_BLOCK_BUFFER_LEN];
    let mut doc_ords: Vec<u64> = Vec::new();
    let mut add = |ord: u64| {
        if dense {
            per_ord[ord as usize] += 1;
        } else {
            listed.push(ord as u32);
        }
    };
    for_each_live_block(segment, scorer, |docs| {
        if multi {
            // Old segments may repeat a value within a document: once per term.
            for &doc in docs {
                doc_ords.clear();
                doc_ords.extend(column.term_ords(doc));
                doc_ords.sort_unstable();
                doc_ords.dedup();
                for &ord in &doc_ords {
                    add(ord);
                }
            }
        } else {
            let out = &mut firsts[..docs.len()];
            ords.first_vals(docs, out);
            for ord in out.iter().flatten() {
                add(*ord);
            }
        }
    });
    if dense {
        return Ok(SegmentCounts::Ords(per_ord));
    }
    listed.sort_unstable();
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    for ord in listed {
        match pairs.last_mut() {
            Some((last, n)) if *last == ord => *n += 1,
            _ => pairs.push((ord, 1)),
        }
    }
    Ok(SegmentCounts::SparseOrds(pairs))
}

/// [`query_ord_counts`] counts densely when the query's estimated matches times this reach
/// the dictionary's size: a term costs a zeroed counter and a step of the shard's sum, about a
/// sixteenth of what the hashing collector spends on a document.
const DENSE_MATCHES_PER_TERM: usize = 16;

/// Per-ordinal counts as per-term counts: the dictionary read in ordinal order.
fn ord_counts_to_terms(
    column: &tantivy::columnar::StrColumn,
    per_ord: &[u32],
) -> tantivy::Result<TermCounts> {
    let mut counts = Vec::new();
    let mut terms = column.dictionary().stream()?;
    while terms.advance() {
        let n = per_ord[terms.term_ord() as usize];
        if n > 0 {
            counts.push((term_text(terms.key()), u64::from(n)));
        }
    }
    Ok(counts)
}

/// How the shard prune (`Stage::ShardPrune`) cuts a counted `terms` node: its first `size`
/// buckets by its order, equal counts by key ascending, as tantivy's prune breaks the ties.
pub(crate) struct ShardCut {
    size: usize,
    by_count: bool,
    asc: bool,
}

impl ShardCut {
    /// How many buckets the shard keeps.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Keeps the `size` first of `buckets` in the cut's order (and the first past them, whose
    /// count tantivy's prune takes as the error bound), each read as its document count and its
    /// key; the documents of the others.
    fn keep<T, K: Ord + ?Sized>(
        &self,
        buckets: &mut Vec<T>,
        count: impl Fn(&T) -> u64,
        key: impl Fn(&T) -> &K,
    ) -> u64 {
        let order = |a: &T, b: &T| {
            let by_key = if self.asc || self.by_count {
                key(a).cmp(key(b))
            } else {
                key(b).cmp(key(a))
            };
            match (self.by_count, self.asc) {
                (true, true) => count(a).cmp(&count(b)).then(by_key),
                (true, false) => count(b).cmp(&count(a)).then(by_key),
                (false, _) => by_key,
            }
        };
        let keep = self.size.saturating_add(1);
        if buckets.len() <= keep {
            return 0;
        }
        buckets.select_nth_unstable_by(keep, order);
        let other = buckets[keep..].iter().map(&count).sum();
        buckets.truncate(keep);
        other
    }
}

/// The node's shard cut, when it is one counts can be cut to beforehand: ordered by count or
/// key, no partition, no `shard_min_doc_count` (whose shard-level drop is counted apart);
/// a keyword include/exclude has dropped its terms from the counts already.
pub(crate) fn shard_cut(node: &PlanNode) -> Option<ShardCut> {
    let (Op::Terms(op), AggKind::Terms(req)) = (&node.op, &node.req.kind) else {
        return None;
    };
    if op.partition.is_some() || req.shard_min_doc_count > 0 {
        return None;
    }
    let order = req.order.first()?;
    let by_count = match order.key {
        OrderKey::Count => true,
        OrderKey::Key => false,
        OrderKey::Path { .. } => return None,
    };
    Some(ShardCut {
        size: op.shard_size,
        by_count,
        asc: order.asc,
    })
}

/// A shard's intermediate `terms` result from its segments' counts (`per_segment`, by segment
/// position in `segments`). When every segment was counted by column ordinals and the node's
/// shard cut is known, the counts add up by global ordinal ([`crate::global_ords`]) and only
/// the buckets the cut can keep are read back as terms: the cut's `size` plus the first one
/// past it (tantivy's prune then makes the same cut, and the same error bound from that
/// bucket), the others' documents in `sum_other_doc_count`. Otherwise terms are merged as text.
pub(crate) fn shard_result(
    segments: &[SegmentReader],
    field_name: &str,
    per_segment: Vec<(usize, SegmentCounts)>,
    cut: Option<&ShardCut>,
) -> tantivy::Result<IntermediateAggregationResult> {
    let every_segment_by_ords = per_segment.len() == segments.len()
        && per_segment
            .iter()
            .all(|(_, c)| matches!(c, SegmentCounts::Ords(_) | SegmentCounts::SparseOrds(_)));
    if let (true, Some(cut)) = (every_segment_by_ords, cut) {
        if let Some((counts, other)) = cut_by_global_ords(segments, field_name, &per_segment, cut)?
        {
            return terms_result_with_other(counts, other);
        }
    }
    let mut lists = Vec::with_capacity(per_segment.len());
    for (seg, counts) in per_segment {
        lists.push(counts.into_terms(&segments[seg], field_name)?);
    }
    terms_result(merge_sorted(lists))
}

/// The terms a shard's cut can keep (and the first past it) with their counts, in no
/// particular order, and the documents of the other buckets: what [`shard_result`] builds its
/// result from, for a node whose sub-aggregations are collected afterwards over these terms.
pub(crate) fn kept_terms(
    segments: &[SegmentReader],
    field_name: &str,
    per_segment: Vec<(usize, SegmentCounts)>,
    cut: &ShardCut,
) -> tantivy::Result<(TermCounts, u64)> {
    let every_segment_by_ords = per_segment.len() == segments.len()
        && per_segment
            .iter()
            .all(|(_, c)| matches!(c, SegmentCounts::Ords(_) | SegmentCounts::SparseOrds(_)));
    if every_segment_by_ords {
        if let Some(kept) = cut_by_global_ords(segments, field_name, &per_segment, cut)? {
            return Ok(kept);
        }
    }
    let mut lists = Vec::with_capacity(per_segment.len());
    for (seg, counts) in per_segment {
        lists.push(counts.into_terms(&segments[seg], field_name)?);
    }
    let mut all = merge_sorted(lists);
    let other = cut.keep(&mut all, |t| t.1, |t| &t.0);
    Ok((all, other))
}

/// A `terms` result without buckets holding `other` documents: merged into the result of the
/// kept buckets' collection, it carries the documents of the buckets the shard cut.
pub(crate) fn other_docs_result(other: u64) -> tantivy::Result<IntermediateAggregationResult> {
    terms_result_with_other(Vec::new(), other)
}

/// The buckets `cut` can keep (and the first past it), with the documents of the others;
/// `None` where global ordinals cannot be built.
fn cut_by_global_ords(
    segments: &[SegmentReader],
    field_name: &str,
    per_segment: &[(usize, SegmentCounts)],
    cut: &ShardCut,
) -> tantivy::Result<Option<(TermCounts, u64)>> {
    let columns = segments
        .iter()
        .map(|s| s.fast_fields().str(field_name))
        .collect::<tantivy::Result<Vec<_>>>()?;
    let ids = segments.iter().map(|s| s.segment_id()).collect();
    let Some(global) = crate::global_ords::global_ords(ids, field_name, &columns)? else {
        return Ok(None);
    };
    let mut totals = vec![0u64; global.len()];
    for (seg, counts) in per_segment {
        match counts {
            SegmentCounts::Ords(per_ord) => {
                for (ord, &n) in per_ord.iter().enumerate() {
                    if n > 0 {
                        totals[global.global(*seg, ord) as usize] += u64::from(n);
                    }
                }
            }
            SegmentCounts::SparseOrds(pairs) => {
                for &(ord, n) in pairs {
                    totals[global.global(*seg, ord as usize) as usize] += u64::from(n);
                }
            }
            SegmentCounts::Terms(_) => {}
        }
    }
    let mut buckets: Vec<(u64, u32)> = totals
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(g, &n)| (n, g as u32))
        .collect();
    drop(totals);
    // Global ordinals run in term order: comparing them compares the keys.
    let other = cut.keep(&mut buckets, |b| b.0, |b| &b.1);
    let mut counts = Vec::with_capacity(buckets.len());
    let mut term = String::new();
    for (n, g) in buckets {
        let (seg, ord) = global.holder(g);
        term.clear();
        if let Some(column) = &columns[seg] {
            column.ord_to_str(ord, &mut term)?;
        }
        counts.push((term.clone(), n));
    }
    Ok(Some((counts, other)))
}

/// A keyword term as text: valid UTF-8 as Lode writes it (validated at SIMD speed; the lossy
/// decoder walks it in chunks, a tenth of the time of a high-cardinality count).
fn term_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// Documents per term, in term order.
pub(crate) type TermCounts = Vec<(String, u64)>;

/// Adds up per-segment counts, each in term order, into one list in term order: a k-way merge
/// (each segment's terms are compared as text once, never looked up in a map).
pub(crate) fn merge_sorted(mut per_segment: Vec<Vec<(String, u64)>>) -> Vec<(String, u64)> {
    if per_segment.len() == 1 {
        return per_segment.pop().unwrap_or_default();
    }
    let mut lists: Vec<std::vec::IntoIter<(String, u64)>> =
        per_segment.into_iter().map(Vec::into_iter).collect();
    // The head of each list: its term in the heap, its count here.
    let mut head_counts = vec![0u64; lists.len()];
    let mut heap = BinaryHeap::with_capacity(lists.len());
    for (i, list) in lists.iter_mut().enumerate() {
        if let Some((term, n)) = list.next() {
            head_counts[i] = n;
            heap.push(Reverse((term, i)));
        }
    }
    let mut out: Vec<(String, u64)> = Vec::new();
    while let Some(Reverse((term, i))) = heap.pop() {
        let n = head_counts[i];
        if let Some((next, m)) = lists[i].next() {
            head_counts[i] = m;
            heap.push(Reverse((next, i)));
        }
        match out.last_mut() {
            Some((last, sum)) if *last == term => *sum += n,
            _ => out.push((term, n)),
        }
    }
    out
}

/// Document frequencies count deleted documents until a merge drops them: take each deleted
/// document's distinct terms (from the column) off the counts. The deleted documents are
/// counted per term ordinal first, so each term's text is looked up once, not once per
/// deleted document (a dictionary block decode each).
fn subtract_deleted(
    segment: &SegmentReader,
    field_name: &str,
    deleted: impl Iterator<Item = DocId>,
    counts: &mut [(String, u64)],
) -> tantivy::Result<()> {
    let Some(column) = segment.fast_fields().str(field_name)? else {
        return Ok(());
    };
    let mut per_ord = OrdCounts::new(column.num_terms());
    let ord_column = column.ords();
    if ord_column.get_cardinality().is_multivalue() {
        let mut ords: Vec<u64> = Vec::new();
        for doc in deleted {
            ords.clear();
            ords.extend(column.term_ords(doc));
            ords.sort_unstable();
            ords.dedup();
            for &ord in &ords {
                per_ord.add(ord);
            }
        }
    } else {
        // One value at most per document: read the ordinals in batches.
        let deleted: Vec<DocId> = deleted.collect();
        let mut firsts = vec![None; 1024];
        for docs in deleted.chunks(1024) {
            let out = &mut firsts[..docs.len()];
            ord_column.first_vals(docs, out);
            for ord in out.iter().flatten() {
                per_ord.add(*ord);
            }
        }
    }
    if per_ord.is_empty() {
        return Ok(());
    }
    let position: HashMap<&str, usize> = counts
        .iter()
        .enumerate()
        .map(|(i, (t, _))| (t.as_str(), i))
        .collect();
    let mut minus = vec![0u64; counts.len()];
    let mut text = String::new();
    for (ord, n) in per_ord.nonzero() {
        text.clear();
        if column.ord_to_str(ord, &mut text)? {
            if let Some(&i) = position.get(text.as_str()) {
                minus[i] += n;
            }
        }
    }
    for ((_, n), m) in counts.iter_mut().zip(minus) {
        *n = n.saturating_sub(m);
    }
    Ok(())
}

/// Counts per term ordinal: dense for a dictionary of up to 64k terms, sparse above (a
/// high-cardinality field with few deletions must not allocate per term).
enum OrdCounts {
    Dense(Vec<u64>),
    Sparse(HashMap<u64, u64>),
}

impl OrdCounts {
    fn new(num_terms: usize) -> OrdCounts {
        if num_terms <= 1 << 16 {
            OrdCounts::Dense(vec![0; num_terms])
        } else {
            OrdCounts::Sparse(HashMap::new())
        }
    }

    fn add(&mut self, ord: u64) {
        match self {
            OrdCounts::Dense(v) => {
                if let Some(n) = v.get_mut(ord as usize) {
                    *n += 1;
                }
            }
            OrdCounts::Sparse(m) => *m.entry(ord).or_insert(0) += 1,
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            OrdCounts::Dense(v) => v.iter().all(|&n| n == 0),
            OrdCounts::Sparse(m) => m.is_empty(),
        }
    }

    fn nonzero(&self) -> Vec<(u64, u64)> {
        match self {
            OrdCounts::Dense(v) => v
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(ord, &n)| (ord as u64, n))
                .collect(),
            OrdCounts::Sparse(m) => m.iter().map(|(&ord, &n)| (ord, n)).collect(),
        }
    }
}

/// The intermediate `terms` result tantivy's collector would have produced for these counts.
///
/// tantivy keeps the fields of `IntermediateTermBucketResult` private and offers no
/// constructor, but the type is `Deserialize`: it is built through serde, from a small tree
/// ([`Tree`]) whose maps may have enum keys (the bucket keys), which JSON cannot carry.
pub(crate) fn terms_result(
    counts: Vec<(String, u64)>,
) -> tantivy::Result<IntermediateAggregationResult> {
    terms_result_with_other(counts, 0)
}

/// [`terms_result`] with `other` documents in buckets left out.
fn terms_result_with_other(
    counts: Vec<(String, u64)>,
    other: u64,
) -> tantivy::Result<IntermediateAggregationResult> {
    let map = |pairs: Vec<(&str, Tree)>| {
        Tree::Map(
            pairs
                .into_iter()
                .map(|(k, v)| (Tree::Str(k.into()), v))
                .collect(),
        )
    };
    let entries = counts
        .into_iter()
        .map(|(term, doc_count)| {
            let key = map(vec![("Str", Tree::Str(term))]);
            let entry = map(vec![
                ("doc_count", Tree::U64(doc_count)),
                (
                    "sub_aggregation",
                    map(vec![("aggs_res", Tree::Map(Vec::new()))]),
                ),
            ]);
            (key, entry)
        })
        .collect();
    let result = map(vec![
        ("entries", Tree::Map(entries)),
        ("sum_other_doc_count", Tree::U64(other)),
        ("doc_count_error_upper_bound", Tree::U64(0)),
    ]);
    let buckets = IntermediateTermBucketResult::deserialize(result)
        .map_err(|e| tantivy::TantivyError::InternalError(format!("terms counts: {e}")))?;
    Ok(IntermediateAggregationResult::Bucket(
        IntermediateBucketResult::Terms { buckets },
    ))
}

/// A serde data tree: unsigned numbers, strings, and maps with any keys (a one-entry map is
/// also an enum variant, as serde's externally tagged form reads it).
enum Tree {
    U64(u64),
    Str(String),
    Map(Vec<(Tree, Tree)>),
}

impl<'de> serde::de::IntoDeserializer<'de, serde::de::value::Error> for Tree {
    type Deserializer = Tree;

    fn into_deserializer(self) -> Tree {
        self
    }
}

impl<'de> serde::Deserializer<'de> for Tree {
    type Error = serde::de::value::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(
        self,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        match self {
            Tree::U64(n) => visitor.visit_u64(n),
            Tree::Str(s) => visitor.visit_string(s),
            Tree::Map(pairs) => {
                visitor.visit_map(serde::de::value::MapDeserializer::new(pairs.into_iter()))
            }
        }
    }

    fn deserialize_enum<V: serde::de::Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        match self {
            Tree::Map(pairs) => visitor.visit_enum(serde::de::value::MapAccessDeserializer::new(
                serde::de::value::MapDeserializer::new(pairs.into_iter()),
            )),
            other => other.deserialize_any(visitor),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::aggregation::intermediate_agg_result::IntermediateKey;

    #[test]
    fn terms_result_carries_every_count() {
        let res = terms_result(vec![("b".into(), 3), ("a".into(), 7), ("中文".into(), 1)]).unwrap();
        let IntermediateAggregationResult::Bucket(IntermediateBucketResult::Terms { buckets }) =
            res
        else {
            panic!("not a terms result");
        };
        let mut got: Vec<(String, u64)> = buckets
            .entries()
            .iter()
            .map(|(k, e)| match k {
                IntermediateKey::Str(s) => (s.clone(), e.doc_count),
                other => panic!("key {other:?}"),
            })
            .collect();
        got.sort();
        assert_eq!(
            got,
            vec![("a".into(), 7), ("b".into(), 3), ("中文".into(), 1)]
        );
        assert_eq!(buckets.sum_other_doc_count(), 0);
    }

    #[test]
    fn merge_sorted_adds_up_equal_terms() {
        let seg = |v: &[(&str, u64)]| v.iter().map(|(t, n)| (t.to_string(), *n)).collect();
        let merged = merge_sorted(vec![
            seg(&[("a", 1), ("c", 2)]),
            seg(&[]),
            seg(&[("b", 5), ("c", 1), ("d", 1)]),
            seg(&[("a", 3), ("d", 4)]),
        ]);
        assert_eq!(merged, seg(&[("a", 4), ("b", 5), ("c", 3), ("d", 5)]));
    }

    /// Both sources give the same counts: one- and multi-valued fields, deleted documents,
    /// documents without the field.
    #[test]
    fn column_and_doc_freq_counts_agree() {
        use tantivy::schema::{SchemaBuilder, FAST, STRING};
        use tantivy::{doc, Index, IndexWriter, Term};
        let mut builder = SchemaBuilder::new();
        let one = builder.add_text_field("one", STRING | FAST);
        let many = builder.add_text_field("many", STRING | FAST);
        let id = builder.add_u64_field("id", tantivy::schema::INDEXED);
        let index = Index::create_in_ram(builder.build());
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        for i in 0..500u64 {
            let mut d = doc!(id => i);
            if i % 7 != 0 {
                d.add_text(one, format!("t{}", (i * 31) % 97));
            }
            for k in 0..(i % 4) {
                d.add_text(many, format!("m{}", (i + k * 13) % 41));
            }
            writer.add_document(d).unwrap();
        }
        writer.commit().unwrap();
        for i in (0..500u64).filter(|i| i % 5 == 0) {
            writer.delete_term(Term::from_field_u64(id, i));
        }
        writer.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let segment = searcher.segment_reader(0);
        assert!(segment.alive_bitset().is_some());
        for (field, name) in [(one, "one"), (many, "many")] {
            let column = segment.fast_fields().str(name).unwrap().unwrap();
            let from_column =
                ord_counts_to_terms(&column, &column_ord_counts(segment, &column)).unwrap();
            let from_doc_freq = doc_freq_term_counts(segment, field, name).unwrap();
            assert!(!from_column.is_empty());
            assert_eq!(from_column, from_doc_freq, "{name}");
        }
    }
}
