//! The per-bucket sketches (`percentiles`, `percentile_ranks`, `median_absolute_deviation`,
//! `boxplot`, `string_stats`, `geo_bounds`, `geo_centroid`) collected in **one pass**.
//!
//! tantivy keeps its own sketches private, so these metrics are not part of its collection.
//! Rendering records each bucket's request (the metric and the bucket's [`Scope`]: the
//! constraints of its parent buckets) and leaves a marker in its place; [`collect_all`] then
//! runs one search per shard (two when some requests are under `global`), whose collector
//! walks every matching document down a trie of the recorded constraints: at each level the
//! document's values of the level's field are read once and looked up (a term's ordinal or
//! value in a hash map, a histogram's ranges by binary search), so a document reaches the
//! bucket(s) it falls in at any depth, and its values are added to those buckets' sketches.
//! A shard's percentile digests are fed across its segments one after the other (each
//! segment's collector takes the digests the previous one left, [`Carried`]), as ES feeds one
//! `TDigestState` per bucket and shard from every segment: a t-digest built from digests
//! merged per segment depends on where refreshes cut the segments, which made the same
//! documents give different percentiles from one load to the next. The other sketches merge
//! per segment, in segment order; shards merge in shard order.
//!
//! Constraints with no cheap per-document test (`filter(s)` buckets, ip terms, histograms on
//! range fields) are evaluated as one bit set per bucket and segment from the constraint's
//! own query (the bucket's filter, not the search query).

use super::exec::{runtime_provider_in, Exec};
use super::percentiles::{GeoStats, State};
use super::plan::FieldRef;
use super::render::{key_f64, key_id, Constraint, Scope};
use super::request::PercentilesMethod;
use super::sources::{open_numeric, AnyColumn, NumericColumn, RuntimeProvider};
use super::top_hits::{bucket_query, constraint_query};
use lode_engine::mapping::Storage;
use lode_engine::{EsError, EsResult};
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use tantivy::aggregation::Key;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{Column, StrColumn};
use tantivy::query::{AllQuery, EnableScoring, Query, Weight};
use tantivy::{BitSet, DocId, DocSet, Score, SegmentOrdinal, SegmentReader, TERMINATED};

thread_local! {
    /// Searches run by [`collect_all`] on this thread (a test's proof of one pass).
    static PASSES: Cell<usize> = const { Cell::new(0) };
}

/// The searches [`collect_all`] has run on this thread.
#[cfg(test)]
pub(crate) fn passes() -> usize {
    PASSES.with(Cell::get)
}

/// What a recorded request sketches.
#[derive(Clone)]
pub(crate) enum SketchSpec {
    /// A numeric field's values (or `missing`) into a TDigest or HDR histogram.
    Digest {
        method: PercentilesMethod,
        missing: Option<f64>,
    },
    /// A keyword field's distinct values per document, counted (`missing`: its count of
    /// documents without one).
    Strings { missing: bool },
    /// A geo_point field's points (`mapped`: the field is mapped in the rendered index).
    Geo { mapped: bool },
    /// `cardinality`: the distinct values, exactly while there are at most `limit` of them
    /// (`missing`: the identity of the value documents without one count as).
    Distinct { limit: usize, missing: Option<u64> },
}

/// One metric of one bucket, recorded at render time.
pub(crate) struct Pending {
    /// The plan node (its address, as an identity while the plan lives).
    pub node: usize,
    pub field: String,
    pub spec: SketchSpec,
    pub scope: Scope,
}

/// A bucket's collected sketch.
pub(crate) enum Sketch {
    Digest(State),
    Strings {
        counts: HashMap<String, u64>,
        missing: u64,
    },
    Geo(GeoStats),
    /// The distinct values' identities; `None` once there were more than the limit.
    Distinct(Option<HashSet<u64>>),
}

/// ES's `cardinality` is exact (HyperLogLog++'s linear counting, a hash set) up to the
/// threshold of the precision its `precision_threshold` gives (`HyperLogLogPlusPlus`:
/// `precisionFromThreshold`, then 3/4 of a hash table of `2^p / 4` ints).
pub(crate) fn exact_limit(precision_threshold: u64) -> usize {
    let entries = (precision_threshold as f64 / 0.75).ceil() as u64;
    let bytes = entries.saturating_mul(4);
    let bits = (64 - bytes.leading_zeros()).max(1);
    let p = bits.clamp(4, 18);
    let capacity = (1u64 << p) / 4;
    (capacity as f64 * 0.75) as usize
}

/// A keyword's identity among a cardinality's distinct values (stable across segments).
pub(crate) fn str_identity(s: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    h.write(s);
    h.finish()
}

fn union(a: &mut Option<HashSet<u64>>, b: Option<HashSet<u64>>, limit: usize) {
    match (a.as_mut(), b) {
        (Some(x), Some(y)) => {
            x.extend(y);
            if x.len() > limit {
                *a = None;
            }
        }
        _ => *a = None,
    }
}

impl Sketch {
    fn empty(spec: &SketchSpec) -> Sketch {
        match spec {
            SketchSpec::Digest { method, .. } => Sketch::Digest(State::new(*method)),
            SketchSpec::Strings { .. } => Sketch::Strings {
                counts: HashMap::new(),
                missing: 0,
            },
            SketchSpec::Geo { .. } => Sketch::Geo(GeoStats::default()),
            SketchSpec::Distinct { .. } => Sketch::Distinct(Some(HashSet::new())),
        }
    }

    fn merge(&mut self, other: Sketch, spec: &SketchSpec) {
        match (self, other) {
            (Sketch::Digest(a), Sketch::Digest(b)) => a.merge(b),
            (
                Sketch::Strings { counts, missing },
                Sketch::Strings {
                    counts: c,
                    missing: m,
                },
            ) => {
                for (k, n) in c {
                    *counts.entry(k).or_insert(0) += n;
                }
                *missing += m;
            }
            (Sketch::Geo(a), Sketch::Geo(b)) => a.merge(&b),
            (Sketch::Distinct(a), Sketch::Distinct(b)) => {
                let limit = match spec {
                    SketchSpec::Distinct { limit, .. } => *limit,
                    _ => 0,
                };
                union(a, b, limit)
            }
            _ => {}
        }
    }
}

/// Collects every recorded request's sketch: one search per shard for the requests under the
/// search query, one more for those under `global`.
pub(crate) fn collect_all(exec: &Exec, pending: &[Pending]) -> EsResult<Vec<Sketch>> {
    let mut out: Vec<Sketch> = pending.iter().map(|p| Sketch::empty(&p.spec)).collect();
    // Sketches at the root level share one pass per shard (one more under `global`); one
    // below a `nested`/`reverse_nested` aggregation reads its bucket's documents, mapped over
    // the block-join layout, in a pass of its own.
    let mut passes: Vec<(Option<bool>, Vec<usize>)> = Vec::new();
    for global in [false, true] {
        let group: Vec<usize> = (0..pending.len())
            .filter(|&i| pending[i].scope.global == global && pending[i].scope.level.is_none())
            .collect();
        if !group.is_empty() {
            passes.push((Some(global), group));
        }
    }
    for i in (0..pending.len()).filter(|&i| pending[i].scope.level.is_some()) {
        passes.push((None, vec![i]));
    }
    for (global, group) in passes {
        for pt in &exec.targets {
            let trie = Arc::new(Trie::build(
                pending,
                &group,
                pt.target.ctx,
                global.is_some(),
            )?);
            let query: Box<dyn Query> = match global {
                Some(true) => {
                    lode_query::nested::non_nested(Box::new(AllQuery), pt.target.ctx.meta.nested)
                }
                Some(false) => pt.target.query.box_clone(),
                None => bucket_query(pt, &pending[group[0]].scope)?,
            };
            for shard in pt.target.shards {
                // The bit-set constraints' own queries, weighted once per shard.
                let mut weights: HashMap<(usize, usize), Box<dyn Weight>> = HashMap::new();
                for (g, grp) in trie.groups.iter().enumerate() {
                    if let GroupEval::Bits = grp.eval {
                        for (c, (constraint, _)) in grp.children.iter().enumerate() {
                            let q = constraint_query(pt, constraint)?;
                            let w = q
                                .weight(EnableScoring::disabled_from_searcher(&shard.searcher))
                                .map_err(failure)?;
                            weights.insert((g, c), w);
                        }
                    }
                }
                let carried = Carried::default();
                let collector = SketchCollector {
                    trie: Arc::clone(&trie),
                    weights: &weights,
                    carried: carried.clone(),
                };
                PASSES.with(|p| p.set(p.get() + 1));
                let found = collect_in_insertion_order(&shard.searcher, &*query, &collector)
                    .map_err(failure)?;
                for (slot, sketch) in found.into_iter().enumerate() {
                    out[group[slot]].merge(sketch, &pending[group[slot]].spec);
                }
                for (slot, state) in carried.take_all() {
                    out[group[slot]].merge(Sketch::Digest(state), &pending[group[slot]].spec);
                }
            }
        }
    }
    Ok(out)
}

/// Collects the segments one after the other in the order their documents were indexed
/// (by their first `_seq_no`), as Lucene keeps its segments, rather than in tantivy's order
/// (its segment register is a hash map keyed by random ids): the digests fed across the
/// segments then see the documents in the same order however the shard was loaded.
fn collect_in_insertion_order(
    searcher: &tantivy::Searcher,
    query: &dyn Query,
    collector: &SketchCollector,
) -> tantivy::Result<Vec<Sketch>> {
    let weight = query.weight(EnableScoring::disabled_from_searcher(searcher))?;
    let mut segments: Vec<(u64, SegmentOrdinal, &SegmentReader)> = searcher
        .segment_readers()
        .iter()
        .enumerate()
        .map(|(ord, reader)| {
            let first = reader
                .fast_fields()
                .u64(lode_engine::schema::SEQ_NO)
                .map_or(u64::MAX, |c| c.min_value());
            (first, ord as SegmentOrdinal, reader)
        })
        .collect();
    segments.sort_by_key(|(first, ord, _)| (*first, *ord));
    let mut fruits = Vec::with_capacity(segments.len());
    for (_, ord, reader) in segments {
        fruits.push(collector.collect_segment(&*weight, ord, reader)?);
    }
    collector.merge_fruits(fruits)
}

fn failure(e: tantivy::TantivyError) -> EsError {
    EsError::internal(format!("aggregation failure: {e}"))
}

/// How a level's documents are tested against its buckets' constraints.
enum GroupEval {
    /// Terms of a keyword field: the document's ordinals.
    Keyword(String),
    I64Term(String),
    F64Term(String),
    BoolTerm(String),
    /// `[from, to)` on a numeric or date field's values.
    I64Range(String),
    F64Range(String),
    /// One bit set per bucket from the constraint's query.
    Bits,
}

struct Group {
    eval: GroupEval,
    /// Each bucket's constraint and trie node.
    children: Vec<(Constraint, usize)>,
}

#[derive(Default)]
struct TrieNode {
    /// The requests (positions in the collected group) of this bucket.
    requests: Vec<usize>,
    groups: Vec<usize>,
}

/// What a request reads, per index.
enum Reader {
    I64(String),
    F64(String),
    /// A runtime field or an aggregation script, read as doubles.
    Computed(String, Arc<RuntimeProvider>),
    Str(String),
    Geo(String),
    Bool(String),
    None,
}

struct Request {
    reader: Reader,
    spec: SketchSpec,
}

struct Trie {
    nodes: Vec<TrieNode>,
    groups: Vec<Group>,
    requests: Vec<Request>,
}

/// The identity of a constraint's level (its field or filters source) and of its bucket.
fn level_and_bucket(c: &Constraint) -> (String, String) {
    match c {
        // A bucket holding the documents without a value is read from its query.
        Constraint::Term {
            field,
            key,
            missing,
        } => (
            format!("t{}{}", field.name, if *missing { "+m" } else { "" }),
            key_id(key),
        ),
        // A bucket holding the documents without a value is read from its query.
        Constraint::Range {
            field,
            from,
            to,
            missing,
        } => (
            format!(
                "r{}{}",
                field.name,
                if missing.is_some() { "+m" } else { "" }
            ),
            format!("{from:?}/{to:?}"),
        ),
        Constraint::Filter { source, bucket } => (format!("f{source}"), bucket.to_string()),
        Constraint::GeoCell { source, cell } => (format!("g{source}"), cell.to_string()),
        Constraint::CompositeKey { source, key } => (format!("c{source}"), format!("{key:?}")),
        Constraint::Sample(q) => (format!("s{:p}", std::sync::Arc::as_ptr(q)), String::new()),
    }
}

fn eval_of(c: &Constraint) -> GroupEval {
    let range_field = |f: &FieldRef| {
        matches!(
            f.def.as_ref().map(|d| d.ty),
            Some(lode_engine::mapping::FieldType::Range(_))
        )
    };
    match c {
        // A runtime field has no column: its documents come from its query's bit set.
        Constraint::Term { field, .. } | Constraint::Range { field, .. }
            if super::plan::parse_runtime_source(&field.name).is_some() =>
        {
            GroupEval::Bits
        }
        Constraint::Term {
            field,
            missing: false,
            ..
        } => match field.storage() {
            Some(Storage::Keyword) => GroupEval::Keyword(field.name.clone()),
            Some(Storage::I64) => GroupEval::I64Term(field.name.clone()),
            Some(Storage::F64) => GroupEval::F64Term(field.name.clone()),
            Some(Storage::Bool) => GroupEval::BoolTerm(field.name.clone()),
            _ => GroupEval::Bits,
        },
        Constraint::Range {
            field,
            missing: None,
            ..
        } if !range_field(field) => match field.storage() {
            Some(Storage::I64) => GroupEval::I64Range(field.name.clone()),
            Some(Storage::F64) => GroupEval::F64Range(field.name.clone()),
            _ => GroupEval::Bits,
        },
        _ => GroupEval::Bits,
    }
}

impl Trie {
    /// The trie of the sketches `group` of `pending`; without `constrained`, the pass's query
    /// is already the one bucket's documents and its constraints are not tested again.
    fn build(
        pending: &[Pending],
        group: &[usize],
        ctx: &lode_query::QueryContext,
        constrained: bool,
    ) -> EsResult<Trie> {
        let mut trie = Trie {
            nodes: vec![TrieNode::default()],
            groups: Vec::new(),
            requests: Vec::new(),
        };
        // (node, level) -> group; (group, bucket) -> child node
        let mut levels: HashMap<(usize, String), usize> = HashMap::new();
        let mut buckets: HashMap<(usize, String), usize> = HashMap::new();
        for (slot, &i) in group.iter().enumerate() {
            let p = &pending[i];
            if p.scope.unconstrained {
                return Err(EsError::internal("a sketch in an unconstrained bucket"));
            }
            let mut node = 0;
            let constraints = if constrained {
                &p.scope.constraints[..]
            } else {
                &[]
            };
            for c in constraints {
                let (level, bucket) = level_and_bucket(c);
                let g = *levels.entry((node, level)).or_insert_with(|| {
                    trie.groups.push(Group {
                        eval: eval_of(c),
                        children: Vec::new(),
                    });
                    trie.nodes[node].groups.push(trie.groups.len() - 1);
                    trie.groups.len() - 1
                });
                node = match buckets.get(&(g, bucket.clone())) {
                    Some(&n) => n,
                    None => {
                        trie.nodes.push(TrieNode::default());
                        let n = trie.nodes.len() - 1;
                        trie.groups[g].children.push((c.clone(), n));
                        buckets.insert((g, bucket), n);
                        n
                    }
                };
            }
            trie.nodes[node].requests.push(slot);
            // Each index resolves the field against its own mapping.
            let reader = match &p.spec {
                SketchSpec::Digest { .. } => match runtime_provider_in(ctx, &p.field) {
                    Some(rt) => Reader::Computed(p.field.clone(), rt),
                    None => match ctx.mapping.field(&p.field).map(|d| d.storage()) {
                        Some(Storage::I64) => Reader::I64(p.field.clone()),
                        Some(Storage::F64) => Reader::F64(p.field.clone()),
                        _ => Reader::None,
                    },
                },
                SketchSpec::Strings { .. } => Reader::Str(p.field.clone()),
                SketchSpec::Geo { mapped: true } => Reader::Geo(p.field.clone()),
                SketchSpec::Geo { mapped: false } => Reader::None,
                SketchSpec::Distinct { .. } => {
                    match ctx.mapping.field(&p.field).map(|d| d.storage()) {
                        Some(Storage::I64) => Reader::I64(p.field.clone()),
                        Some(Storage::F64) => Reader::F64(p.field.clone()),
                        Some(Storage::Keyword) => Reader::Str(p.field.clone()),
                        Some(Storage::Bool) => Reader::Bool(p.field.clone()),
                        _ => Reader::None,
                    }
                }
            };
            trie.requests.push(Request {
                reader,
                spec: p.spec.clone(),
            });
        }
        Ok(trie)
    }
}

struct SketchCollector<'a> {
    trie: Arc<Trie>,
    weights: &'a HashMap<(usize, usize), Box<dyn Weight>>,
    carried: Carried,
}

/// The digests of one shard's requests between its segments: a segment's collector takes
/// them (a fresh digest where none is left) and puts them back when harvested. Segments are
/// collected one after the other; were two collected at once, the second would start fresh
/// digests and hand them on as fruits, merged as before.
#[derive(Clone, Default)]
struct Carried(Arc<Mutex<HashMap<usize, State>>>);

impl Carried {
    fn take(&self, request: usize) -> Option<State> {
        self.0.lock().ok()?.remove(&request)
    }

    /// Leaves `state` for the next segment; answers it back when a digest is already there.
    fn put(&self, request: usize, state: State) -> Option<State> {
        match self.0.lock() {
            Ok(mut slots) if !slots.contains_key(&request) => {
                slots.insert(request, state);
                None
            }
            _ => Some(state),
        }
    }

    fn take_all(&self) -> Vec<(usize, State)> {
        let mut all: Vec<(usize, State)> = match self.0.lock() {
            Ok(mut slots) => slots.drain().collect(),
            Err(_) => Vec::new(),
        };
        all.sort_by_key(|(request, _)| *request);
        all
    }
}

/// A level's test in one segment: pushes the trie nodes of the buckets a document is in.
enum SegGroup {
    Keyword {
        col: Option<StrColumn>,
        ords: HashMap<u64, usize>,
    },
    I64Term {
        col: Option<Column<i64>>,
        keys: HashMap<i64, usize>,
    },
    F64Term {
        col: Option<Column<f64>>,
        keys: HashMap<u64, usize>,
    },
    BoolTerm {
        col: Option<Column<bool>>,
        yes: Option<usize>,
        no: Option<usize>,
    },
    Range(SegRange),
    Bits(Vec<(BitSet, usize)>),
}

/// Ranges `[lo, hi)` over a column read as i64 or f64 (`None`: unbounded).
struct SegRange {
    i64_col: Option<Column<i64>>,
    f64_col: Option<Column<f64>>,
    /// Sorted by `lo`.
    ranges: Vec<(Option<f64>, Option<f64>, usize)>,
    i64_ranges: Vec<(Option<i64>, Option<i64>, usize)>,
    /// The ranges are disjoint: a value is in at most one, found by binary search.
    disjoint: bool,
    /// Unbounded on both sides: every document.
    all: Vec<usize>,
}

impl SegRange {
    fn push_f64(&self, v: f64, out: &mut Vec<usize>) {
        let inside = |lo: Option<f64>, hi: Option<f64>| {
            lo.is_none_or(|lo| v >= lo) && hi.is_none_or(|hi| v < hi)
        };
        if self.disjoint {
            let i = self
                .ranges
                .partition_point(|r| r.0.is_none_or(|lo| lo <= v));
            if i > 0 {
                let (lo, hi, n) = self.ranges[i - 1];
                if inside(lo, hi) {
                    out.push(n);
                }
            }
        } else {
            for &(lo, hi, n) in &self.ranges {
                if inside(lo, hi) {
                    out.push(n);
                }
            }
        }
    }

    fn push_i64(&self, v: i64, out: &mut Vec<usize>) {
        let inside = |lo: Option<i64>, hi: Option<i64>| {
            lo.is_none_or(|lo| v >= lo) && hi.is_none_or(|hi| v < hi)
        };
        if self.disjoint {
            let i = self
                .i64_ranges
                .partition_point(|r| r.0.is_none_or(|lo| lo <= v));
            if i > 0 {
                let (lo, hi, n) = self.i64_ranges[i - 1];
                if inside(lo, hi) {
                    out.push(n);
                }
            }
        } else {
            for &(lo, hi, n) in &self.i64_ranges {
                if inside(lo, hi) {
                    out.push(n);
                }
            }
        }
    }
}

fn seg_range(
    reader: &SegmentReader,
    field: &str,
    integral: bool,
    children: &[(Constraint, usize)],
) -> tantivy::Result<SegRange> {
    let fast = reader.fast_fields();
    let mut all = Vec::new();
    let mut ranges = Vec::new();
    let mut i64_ranges = Vec::new();
    for (c, n) in children {
        let Constraint::Range { from, to, .. } = c else {
            continue;
        };
        if from.is_none() && to.is_none() {
            all.push(*n);
        } else if integral {
            // As the bucket's query: `[ceil(from), ceil(to))` on the integers.
            i64_ranges.push((
                from.map(|x| x.ceil() as i64),
                to.map(|x| x.ceil() as i64),
                *n,
            ));
        } else {
            ranges.push((*from, *to, *n));
        }
    }
    ranges.sort_by(|a, b| {
        a.0.unwrap_or(f64::NEG_INFINITY)
            .total_cmp(&b.0.unwrap_or(f64::NEG_INFINITY))
    });
    i64_ranges.sort_by_key(|r| r.0.unwrap_or(i64::MIN));
    let disjoint = if integral {
        i64_ranges
            .windows(2)
            .all(|w| matches!((w[0].1, w[1].0), (Some(hi), Some(lo)) if hi <= lo))
    } else {
        ranges
            .windows(2)
            .all(|w| matches!((w[0].1, w[1].0), (Some(hi), Some(lo)) if hi <= lo))
    };
    Ok(SegRange {
        i64_col: if integral {
            fast.column_opt::<i64>(field).ok().flatten()
        } else {
            None
        },
        f64_col: if integral {
            None
        } else {
            fast.column_opt::<f64>(field).ok().flatten()
        },
        ranges,
        i64_ranges,
        disjoint,
        all,
    })
}

impl SegGroup {
    fn push_matches(&self, doc: DocId, out: &mut Vec<usize>) {
        match self {
            SegGroup::Keyword { col, ords } => {
                if let Some(c) = col {
                    for ord in c.term_ords(doc) {
                        if let Some(&n) = ords.get(&ord) {
                            out.push(n);
                        }
                    }
                }
            }
            SegGroup::I64Term { col, keys } => {
                if let Some(c) = col {
                    for v in c.values_for_doc(doc) {
                        if let Some(&n) = keys.get(&v) {
                            out.push(n);
                        }
                    }
                }
            }
            SegGroup::F64Term { col, keys } => {
                if let Some(c) = col {
                    for v in c.values_for_doc(doc) {
                        if let Some(&n) = keys.get(&v.to_bits()) {
                            out.push(n);
                        }
                    }
                }
            }
            SegGroup::BoolTerm { col, yes, no } => {
                if let Some(c) = col {
                    for v in c.values_for_doc(doc) {
                        if let Some(n) = if v { yes } else { no } {
                            out.push(*n);
                        }
                    }
                }
            }
            SegGroup::Range(r) => {
                out.extend_from_slice(&r.all);
                if let Some(c) = &r.i64_col {
                    for v in c.values_for_doc(doc) {
                        r.push_i64(v, out);
                    }
                }
                if let Some(c) = &r.f64_col {
                    for v in c.values_for_doc(doc) {
                        r.push_f64(v, out);
                    }
                }
            }
            SegGroup::Bits(sets) => {
                for (set, n) in sets {
                    if set.contains(doc) {
                        out.push(*n);
                    }
                }
            }
        }
    }
}

enum SegReader {
    I64(Option<Column<i64>>),
    F64(Option<Column<f64>>),
    Computed(Option<Box<AnyColumn>>),
    Str(Option<StrColumn>),
    Geo(Option<Column<u64>>),
    Bool(Option<Column<bool>>),
    None,
}

enum SegState {
    Digest(State),
    Strings {
        ords: HashMap<u64, u64>,
        missing: u64,
    },
    Geo(GeoStats),
    /// Ordinals (keywords) or identities; `None` past the limit.
    Distinct {
        set: Option<HashSet<u64>>,
        missing: bool,
    },
}

struct SegmentSketches {
    carried: Carried,
    trie: Arc<Trie>,
    groups: Vec<SegGroup>,
    readers: Vec<SegReader>,
    states: Vec<SegState>,
    stack: Vec<usize>,
    scratch: Vec<u64>,
    /// A computed reader's values of one document.
    computed: Vec<f64>,
}

impl Collector for SketchCollector<'_> {
    type Fruit = Vec<Sketch>;
    type Child = SegmentSketches;

    fn for_segment(
        &self,
        _segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<SegmentSketches> {
        let trie = &self.trie;
        let fast = reader.fast_fields();
        let mut groups = Vec::with_capacity(trie.groups.len());
        for (g, grp) in trie.groups.iter().enumerate() {
            let seg = match &grp.eval {
                GroupEval::Keyword(field) => {
                    let col = fast.str(field).ok().flatten();
                    let mut ords = HashMap::new();
                    if let Some(c) = &col {
                        for (constraint, n) in &grp.children {
                            if let Constraint::Term {
                                key: Key::Str(s), ..
                            } = constraint
                            {
                                if let Some(ord) = c.dictionary().term_ord(s.as_bytes())? {
                                    ords.insert(ord, *n);
                                }
                            }
                        }
                    }
                    SegGroup::Keyword { col, ords }
                }
                GroupEval::I64Term(field) => SegGroup::I64Term {
                    col: fast.column_opt::<i64>(field).ok().flatten(),
                    keys: grp
                        .children
                        .iter()
                        .filter_map(|(c, n)| match c {
                            Constraint::Term { key, .. } => Some((key_f64(key) as i64, *n)),
                            _ => None,
                        })
                        .collect(),
                },
                GroupEval::F64Term(field) => SegGroup::F64Term {
                    col: fast.column_opt::<f64>(field).ok().flatten(),
                    keys: grp
                        .children
                        .iter()
                        .filter_map(|(c, n)| match c {
                            Constraint::Term { key, .. } => Some((key_f64(key).to_bits(), *n)),
                            _ => None,
                        })
                        .collect(),
                },
                GroupEval::BoolTerm(field) => {
                    let (mut yes, mut no) = (None, None);
                    for (c, n) in &grp.children {
                        if let Constraint::Term { key, .. } = c {
                            if key_f64(key) != 0.0 {
                                yes = Some(*n);
                            } else {
                                no = Some(*n);
                            }
                        }
                    }
                    SegGroup::BoolTerm {
                        col: fast.column_opt::<bool>(field).ok().flatten(),
                        yes,
                        no,
                    }
                }
                GroupEval::I64Range(field) => {
                    SegGroup::Range(seg_range(reader, field, true, &grp.children)?)
                }
                GroupEval::F64Range(field) => {
                    SegGroup::Range(seg_range(reader, field, false, &grp.children)?)
                }
                GroupEval::Bits => {
                    let max_doc = reader.max_doc();
                    let mut sets = Vec::with_capacity(grp.children.len());
                    for (c, (_, n)) in grp.children.iter().enumerate() {
                        let mut set = BitSet::with_max_value(max_doc.max(1));
                        if let Some(w) = self.weights.get(&(g, c)) {
                            let mut scorer = w.scorer(reader, 1.0)?;
                            let mut doc = scorer.doc();
                            while doc != TERMINATED {
                                set.insert(doc);
                                doc = scorer.advance();
                            }
                        }
                        sets.push((set, *n));
                    }
                    SegGroup::Bits(sets)
                }
            };
            groups.push(seg);
        }
        let readers = trie
            .requests
            .iter()
            .map(|r| match &r.reader {
                Reader::I64(f) => SegReader::I64(fast.column_opt::<i64>(f).ok().flatten()),
                Reader::F64(f) => SegReader::F64(fast.column_opt::<f64>(f).ok().flatten()),
                Reader::Computed(f, rt) => SegReader::Computed(
                    open_numeric(reader, f, NumericColumn::F64, Some(rt))
                        .ok()
                        .flatten()
                        .map(Box::new),
                ),
                Reader::Str(f) => SegReader::Str(fast.str(f).ok().flatten()),
                Reader::Geo(f) => SegReader::Geo(fast.column_opt::<u64>(f).ok().flatten()),
                Reader::Bool(f) => SegReader::Bool(fast.column_opt::<bool>(f).ok().flatten()),
                Reader::None => SegReader::None,
            })
            .collect();
        let states = trie
            .requests
            .iter()
            .enumerate()
            .map(|(i, r)| match &r.spec {
                SketchSpec::Digest { method, .. } => {
                    SegState::Digest(self.carried.take(i).unwrap_or_else(|| State::new(*method)))
                }
                SketchSpec::Strings { .. } => SegState::Strings {
                    ords: HashMap::new(),
                    missing: 0,
                },
                SketchSpec::Geo { .. } => SegState::Geo(GeoStats::default()),
                SketchSpec::Distinct { .. } => SegState::Distinct {
                    set: Some(HashSet::new()),
                    missing: false,
                },
            })
            .collect();
        Ok(SegmentSketches {
            carried: self.carried.clone(),
            trie: Arc::clone(trie),
            groups,
            readers,
            states,
            stack: Vec::new(),
            scratch: Vec::new(),
            computed: Vec::new(),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<Vec<Sketch>>) -> tantivy::Result<Vec<Sketch>> {
        let mut out: Vec<Sketch> = self
            .trie
            .requests
            .iter()
            .map(|r| Sketch::empty(&r.spec))
            .collect();
        for f in fruits {
            for ((o, s), r) in out.iter_mut().zip(f).zip(&self.trie.requests) {
                o.merge(s, &r.spec);
            }
        }
        Ok(out)
    }
}

impl SegmentSketches {
    fn feed(&mut self, r: usize, doc: DocId) {
        let spec = &self.trie.requests[r].spec;
        match (&mut self.readers[r], &mut self.states[r]) {
            (reader, SegState::Digest(state)) => {
                let mut any = false;
                match reader {
                    SegReader::I64(Some(c)) => {
                        for v in c.values_for_doc(doc) {
                            any = true;
                            state.add(v as f64);
                        }
                    }
                    SegReader::F64(Some(c)) => {
                        for v in c.values_for_doc(doc) {
                            any = true;
                            state.add(v);
                        }
                    }
                    SegReader::Computed(Some(c)) => {
                        c.values_into(doc, &mut self.computed);
                        for &v in &self.computed {
                            any = true;
                            state.add(v);
                        }
                    }
                    _ => {}
                }
                if !any {
                    if let SketchSpec::Digest {
                        missing: Some(m), ..
                    } = spec
                    {
                        state.add(*m);
                    }
                }
            }
            (reader, SegState::Strings { ords, missing }) => {
                let mut any = false;
                if let SegReader::Str(Some(c)) = reader {
                    // Each distinct value of a document counts once, as ES's sorted-set doc
                    // values.
                    self.scratch.clear();
                    self.scratch.extend(c.term_ords(doc));
                    self.scratch.sort_unstable();
                    self.scratch.dedup();
                    any = !self.scratch.is_empty();
                    for &ord in &self.scratch {
                        *ords.entry(ord).or_insert(0) += 1;
                    }
                }
                if !any && matches!(spec, SketchSpec::Strings { missing: true }) {
                    *missing += 1;
                }
            }
            (reader, SegState::Distinct { set, missing }) => {
                let Some(values) = set else {
                    return;
                };
                let before = values.len();
                let mut any = false;
                match reader {
                    SegReader::Str(Some(c)) => {
                        for ord in c.term_ords(doc) {
                            any = true;
                            values.insert(ord);
                        }
                    }
                    SegReader::I64(Some(c)) => {
                        for v in c.values_for_doc(doc) {
                            any = true;
                            values.insert(v as u64);
                        }
                    }
                    SegReader::F64(Some(c)) => {
                        for v in c.values_for_doc(doc) {
                            any = true;
                            values.insert(v.to_bits());
                        }
                    }
                    SegReader::Bool(Some(c)) => {
                        for v in c.values_for_doc(doc) {
                            any = true;
                            values.insert(v as u64);
                        }
                    }
                    _ => {}
                }
                if !any {
                    *missing = true;
                }
                if let SketchSpec::Distinct { limit, .. } = spec {
                    if values.len() > before && values.len() > *limit {
                        *set = None;
                    }
                }
            }
            (SegReader::Geo(Some(c)), SegState::Geo(stats)) => {
                for v in c.values_for_doc(doc) {
                    let (lat, lon) = lode_engine::geo::decode(v);
                    stats.add(lat, lon);
                }
            }
            _ => {}
        }
    }
}

impl SegmentCollector for SegmentSketches {
    type Fruit = Vec<Sketch>;

    fn collect(&mut self, doc: DocId, _score: Score) {
        let trie = Arc::clone(&self.trie);
        self.stack.clear();
        self.stack.push(0);
        while let Some(node) = self.stack.pop() {
            let n = &trie.nodes[node];
            for &r in &n.requests {
                self.feed(r, doc);
            }
            for &g in &n.groups {
                let start = self.stack.len();
                self.groups[g].push_matches(doc, &mut self.stack);
                // A document is in a bucket once, however many of its values fall in it.
                self.stack[start..].sort_unstable();
                let mut w = start;
                for i in start..self.stack.len() {
                    if i == start || self.stack[i] != self.stack[w - 1] {
                        self.stack[w] = self.stack[i];
                        w += 1;
                    }
                }
                self.stack.truncate(w);
            }
        }
    }

    fn harvest(self) -> Vec<Sketch> {
        let carried = &self.carried;
        self.states
            .into_iter()
            .zip(&self.readers)
            .zip(&self.trie.requests)
            .enumerate()
            .map(|(i, ((state, reader), request))| match state {
                SegState::Distinct { set, missing } => {
                    let SketchSpec::Distinct {
                        limit,
                        missing: missing_value,
                    } = request.spec
                    else {
                        return Sketch::Distinct(None);
                    };
                    let mut set = match (set, reader) {
                        // Ordinals are the segment's: a keyword's identity is its bytes.
                        (Some(ords), SegReader::Str(Some(c))) => {
                            let mut out = HashSet::with_capacity(ords.len());
                            let mut s = String::new();
                            for ord in ords {
                                s.clear();
                                if c.ord_to_str(ord, &mut s).is_ok() {
                                    out.insert(str_identity(s.as_bytes()));
                                }
                            }
                            Some(out)
                        }
                        (set, _) => set,
                    };
                    if let (Some(values), true, Some(m)) = (set.as_mut(), missing, missing_value) {
                        values.insert(m);
                        if values.len() > limit {
                            set = None;
                        }
                    }
                    Sketch::Distinct(set)
                }
                SegState::Digest(s) => match carried.put(i, s) {
                    Some(s) => Sketch::Digest(s),
                    None => Sketch::empty(&request.spec),
                },
                SegState::Geo(g) => Sketch::Geo(g),
                SegState::Strings { ords, missing } => {
                    let mut counts = HashMap::new();
                    if let SegReader::Str(Some(c)) = reader {
                        let mut s = String::new();
                        for (ord, n) in ords {
                            s.clear();
                            if c.ord_to_str(ord, &mut s).is_ok() {
                                *counts.entry(s.clone()).or_insert(0) += n;
                            }
                        }
                    }
                    Sketch::Strings { counts, missing }
                }
            })
            .collect()
    }
}
