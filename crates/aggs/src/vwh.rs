//! `variable_width_histogram`: Elasticsearch clusters the values of each shard as its
//! `VariableWidthHistogramAggregator` does, then its final reduce
//! (`InternalVariableWidthHistogram#reduce`) merges the shards' clusters down to `buckets`.
//!
//! Per shard, the values of the matching documents (each document's distinct values in
//! ascending order, documents in collection order) go first into a buffer of `initial_buffer`
//! values; once it is full (or at the end) the buffer is sorted and cut into
//! `shard_size * 3 / 4` clusters of `ceil(buffer / that)` consecutive values; each later
//! value joins the cluster whose centroid is nearest (ES's `BinarySearcher` ties) unless it is
//! farther than twice the average distance between centroids and fewer than `shard_size`
//! clusters exist, when it starts a cluster of its own. The reduce groups equal centroids,
//! merges the two closest adjacent centroids until `buckets` remain, then buckets with the
//! same `min`, and moves the bounds of overlapping neighbours to their midpoint.
//!
//! This runs before planning, as `auto_date_histogram`'s range (one pass over the matches
//! per shard, holding only the buffer and the clusters, as ES); the aggregation then runs as a `range` over the
//! buckets' intervals (`[min, next min)`, the last one up to its `max`) so sub-aggregations
//! see the documents whose values lie in a bucket. `doc_count` is the clusters' own count of
//! values, as ES's. Below a bucket aggregation each bucket clusters its own documents at
//! render time (`top_hits`' bucket query), and each of its buckets collects its
//! sub-aggregations over the enclosing bucket's documents in its interval.

use super::exec::AggTarget;
use super::fields::{self, Source, Sourced};
use super::request::{int32, AggKind, AggNode};
use lode_engine::mapping::Storage;
use lode_engine::object_parser::{At, Field, ObjectParser};
use lode_engine::{EsError, EsResult};
use serde_json::{Map, Value};
use tantivy::query::EnableScoring;
use tantivy::{DocSet, TERMINATED};

/// The request: `field`, `buckets`, `shard_size`, `initial_buffer`, `format`; the buckets
/// are computed before planning into `chosen`.
pub(crate) struct VwhReq {
    pub field: String,
    pub buckets: usize,
    pub shard_size: usize,
    pub initial_buffer: usize,
    pub format: Option<String>,
    /// The value of documents without one (parsed against each index's field).
    pub missing: Option<Value>,
    pub chosen: std::sync::Mutex<Option<Vec<Cluster>>>,
}

/// One bucket: its bounds, centroid (the key) and count of values.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cluster {
    pub min: f64,
    pub max: f64,
    pub centroid: f64,
    pub doc_count: u64,
}

/// A body under construction.
#[derive(Default)]
struct Body {
    name: String,
    source: Source,
    buckets: Option<usize>,
    shard_size: Option<usize>,
    initial_buffer: Option<usize>,
    format: Option<String>,
}

impl Sourced for Body {
    fn source(&mut self) -> &mut Source {
        &mut self.source
    }
}

type F = Field<Body>;

/// An int option that must be above `min` (ES's setters' checks).
fn above(b: &Body, at: &At<'_>, v: &Value, min: i64) -> EsResult<usize> {
    let n = int32(at.parser, at.key, v)?;
    if n <= min {
        return Err(EsError::illegal_argument(format!(
            "{} must be greater than [{min}] for [{}]",
            at.key, b.name
        )));
    }
    Ok(n as usize)
}

/// ES's `VariableWidthHistogramAggregationBuilder` parser: its own options and the
/// values-source keys (`time_zone` refused: Lode does not apply it to this aggregation).
static PARSER: ObjectParser<Body> = ObjectParser {
    name: "variable_width_histogram",
    style: fields::AGG,
    fields: &[
        &[
            F::new("buckets", "*", |b, at, v| {
                b.buckets = Some(above(b, at, v, 0)?);
                Ok(())
            }),
            F::new("shard_size", "*", |b, at, v| {
                b.shard_size = Some(above(b, at, v, 1)?);
                Ok(())
            }),
            F::new("initial_buffer", "*", |b, at, v| {
                b.initial_buffer = Some(above(b, at, v, 0)?);
                Ok(())
            }),
            F::new("format", "*", |b, at, v| {
                let Value::String(s) = v else {
                    return Err(EsError::x_content_parse(format!(
                        "[{}] failed to parse field [{}]",
                        at.parser, at.key
                    )));
                };
                b.format = Some(s.clone());
                Ok(())
            }),
            F::new("time_zone", "*", |_, at, _| {
                Err(EsError::illegal_argument(format!(
                    "[{}] in [{}] aggregations is not supported by Lode",
                    at.key, at.parser
                )))
            }),
        ],
        &fields::field(),
        &fields::script(),
        &fields::value_type(),
        &fields::missing_scalar(),
    ],
};

pub(crate) fn parse(name: &str, o: &Map<String, Value>) -> EsResult<VwhReq> {
    let mut b = Body {
        name: name.to_string(),
        ..Body::default()
    };
    PARSER.parse_into(&mut b, o)?;
    // A script (with `value_type`) stands for a runtime field of the request.
    let field = b.source.field_or_script(false, false)?;
    let buckets = b.buckets.unwrap_or(10);
    let shard_size = b.shard_size.unwrap_or(buckets * 50);
    let initial_buffer = b.initial_buffer.unwrap_or((10 * shard_size).min(50_000));
    Ok(VwhReq {
        field,
        buckets,
        shard_size,
        initial_buffer,
        format: b.format,
        missing: b.source.missing,
        chosen: std::sync::Mutex::new(None),
    })
}

impl VwhReq {
    /// ES's checks when the aggregation is built (`innerBuild`).
    pub(crate) fn validate(&self, name: &str, max_buckets: usize) -> EsResult<()> {
        if self.buckets > max_buckets {
            return Err(EsError::illegal_argument(format!(
                "buckets must be less than {max_buckets}"
            )));
        }
        if self.initial_buffer < self.buckets {
            return Err(EsError::illegal_argument(format!(
                "initial_buffer must be at least buckets but was [{}<{}] for [{name}]",
                self.initial_buffer, self.buckets
            )));
        }
        let merge_init = merge_phase_initial_bucket_count(self.shard_size);
        if merge_init < self.buckets {
            return Err(EsError::illegal_argument(format!(
                "3/4 of shard_size must be at least buckets but was [{merge_init}<{}] for [{name}]",
                self.buckets
            )));
        }
        Ok(())
    }
}

fn merge_phase_initial_bucket_count(shard_size: usize) -> usize {
    shard_size * 3 / 4
}

/// A shard's clustering, fed one value at a time (`VariableWidthHistogramAggregator`).
pub(crate) struct ShardClustering {
    shard_size: usize,
    buffer_limit: usize,
    buffer: Vec<f64>,
    merging: Option<Clusters>,
}

/// The merge phase's clusters, sorted by centroid.
struct Clusters {
    mins: Vec<f64>,
    maxes: Vec<f64>,
    centroids: Vec<f64>,
    sizes: Vec<u64>,
    avg_distance: f64,
}

impl ShardClustering {
    pub(crate) fn new(shard_size: usize, initial_buffer: usize) -> Self {
        ShardClustering {
            shard_size,
            buffer_limit: initial_buffer,
            buffer: Vec::new(),
            merging: None,
        }
    }

    pub(crate) fn collect(&mut self, val: f64) {
        match &mut self.merging {
            None => {
                if self.buffer.len() < self.buffer_limit {
                    self.buffer.push(val);
                }
                if self.buffer.len() == self.buffer_limit {
                    let buffer = std::mem::take(&mut self.buffer);
                    self.merging = Some(Clusters::from_buffer(buffer, self.shard_size));
                }
            }
            Some(c) => c.collect(val, self.shard_size),
        }
    }

    /// The shard's buckets, by centroid.
    pub(crate) fn finish(self) -> Vec<Cluster> {
        let c = match self.merging {
            Some(c) => c,
            None => Clusters::from_buffer(self.buffer, self.shard_size),
        };
        let mut out: Vec<Cluster> = (0..c.centroids.len())
            .map(|i| Cluster {
                min: c.mins[i],
                max: c.maxes[i],
                centroid: c.centroids[i],
                doc_count: c.sizes[i],
            })
            .collect();
        out.sort_by(|a, b| java_compare(a.centroid, b.centroid));
        out
    }
}

/// Java's `Double.compare`.
fn java_compare(a: f64, b: f64) -> std::cmp::Ordering {
    a.total_cmp(&b)
}

impl Clusters {
    /// `bucketBufferedDocs`: the sorted buffer cut into runs of `ceil(len / initial)` values.
    fn from_buffer(mut buffer: Vec<f64>, shard_size: usize) -> Clusters {
        let mut c = Clusters {
            mins: Vec::new(),
            maxes: Vec::new(),
            centroids: Vec::new(),
            sizes: Vec::new(),
            avg_distance: 0.0,
        };
        buffer.sort_by(|a, b| java_compare(*a, *b));
        let num_buckets = merge_phase_initial_bucket_count(shard_size).max(1);
        let per_bucket = buffer.len().div_ceil(num_buckets);
        let mut ord = 0;
        for (i, &val) in buffer.iter().enumerate() {
            if ord == c.centroids.len() {
                c.push(val);
            } else {
                c.add(ord, val);
            }
            if (i + 1) % per_bucket == 0 {
                ord += 1;
            }
        }
        if buffer.len() > 1 {
            c.update_avg();
        }
        c
    }

    fn push(&mut self, val: f64) {
        self.mins.push(val);
        self.maxes.push(val);
        self.centroids.push(val);
        self.sizes.push(1);
    }

    fn add(&mut self, ord: usize, val: f64) {
        self.maxes[ord] = self.maxes[ord].max(val);
        self.mins[ord] = self.mins[ord].min(val);
        let size = self.sizes[ord] as f64;
        self.centroids[ord] = (self.centroids[ord] * size + val) / (size + 1.0);
        self.sizes[ord] += 1;
    }

    fn update_avg(&mut self) {
        let n = self.centroids.len();
        self.avg_distance = (self.centroids[n - 1] - self.centroids[0]) / (n as f64 - 1.0);
    }

    fn collect(&mut self, val: f64, shard_size: usize) {
        let n = self.centroids.len();
        if n == 0 {
            self.push(val);
            return;
        }
        let mut ord = nearest(&self.centroids, val);
        let distance = (self.centroids[ord] - val).abs();
        if distance > 2.0 * self.avg_distance && n < shard_size {
            self.push(val);
            if val > self.centroids[ord] {
                ord += 1;
            }
            // Move the new (last) cluster to `ord`, keeping the centroids sorted.
            let last = self.centroids.len() - 1;
            if ord != last {
                for v in [&mut self.mins, &mut self.maxes, &mut self.centroids] {
                    let x = v.remove(last);
                    v.insert(ord, x);
                }
                let s = self.sizes.remove(last);
                self.sizes.insert(ord, s);
            }
            self.update_avg();
        } else {
            self.add(ord, val);
            if ord == 0 || ord == n - 1 {
                self.update_avg();
            }
        }
    }
}

/// ES's `BinarySearcher#search` over `[0, len - 1]`: the index of the closest value.
fn nearest(arr: &[f64], val: f64) -> usize {
    use std::cmp::Ordering::*;
    let cmp = |i: usize| java_compare(arr[i], val);
    let dist = |i: usize| (arr[i] - val).abs();
    let closest = |a: usize, b: usize| if dist(a) < dist(b) { a } else { b };
    let mut from: isize = 0;
    let mut to: isize = arr.len() as isize - 1;
    while from < to {
        let mid = ((from + to) as usize) >> 1;
        match cmp(mid) {
            Equal => return mid,
            Less => {
                if (mid as isize) < to {
                    if cmp(mid + 1) == Greater {
                        return closest(mid, mid + 1);
                    }
                } else if mid as isize == to {
                    return mid;
                }
                from = mid as isize + 1;
            }
            Greater => {
                if mid as isize > from {
                    if cmp(mid - 1) == Less {
                        return closest(mid, mid - 1);
                    }
                } else if mid == 0 {
                    return mid;
                }
                to = mid as isize - 1;
            }
        }
    }
    from.max(0) as usize
}

/// `reduceBucket`: counts and bounds combined, the centroid weighted by the counts, summed
/// in the order given.
fn reduce_bucket(buckets: &[&Cluster]) -> Cluster {
    let mut doc_count = 0u64;
    let mut min = f64::INFINITY;
    let mut max = f64::NEG_INFINITY;
    let mut sum = 0.0;
    for b in buckets {
        doc_count += b.doc_count;
        min = min.min(b.min);
        max = max.max(b.max);
        sum += b.doc_count as f64 * b.centroid;
    }
    Cluster {
        min,
        max,
        centroid: sum / doc_count as f64,
        doc_count,
    }
}

/// `mergeBucketsWithPlan`: each range of adjacent buckets replaced by their reduction (the
/// buckets from the range's end down to its start, as ES lists them).
fn merge_with_plan(buckets: &mut Vec<Cluster>, plan: &[(usize, usize)]) {
    for &(start, end) in plan.iter().rev() {
        if start == end {
            continue;
        }
        let mut merged = {
            let mut list: Vec<&Cluster> = (start + 1..=end).rev().map(|i| &buckets[i]).collect();
            list.push(&buckets[start]);
            reduce_bucket(&list)
        };
        buckets.drain(start + 1..=end);
        std::mem::swap(&mut buckets[start], &mut merged);
    }
}

/// The final reduce of every shard's buckets (each sorted by centroid) into `target` buckets.
pub(crate) fn reduce(shards: Vec<Vec<Cluster>>, target: usize) -> Vec<Cluster> {
    let mut all: Vec<Cluster> = shards.into_iter().flatten().collect();
    all.sort_by(|a, b| java_compare(a.centroid, b.centroid));
    // Buckets of equal centroids (from different shards) become one.
    let mut buckets: Vec<Cluster> = Vec::new();
    let mut i = 0;
    while i < all.len() {
        let mut j = i + 1;
        while j < all.len() && java_compare(all[j].centroid, all[i].centroid).is_eq() {
            j += 1;
        }
        let group: Vec<&Cluster> = all[i..j].iter().collect();
        buckets.push(reduce_bucket(&group));
        i = j;
    }
    // Merge the two closest centroids until `target` remain (`mergeBucketsIfNeeded`).
    struct R {
        start: usize,
        end: usize,
        centroid: f64,
        count: u64,
    }
    let mut ranges: Vec<R> = buckets
        .iter()
        .enumerate()
        .map(|(i, b)| R {
            start: i,
            end: i,
            centroid: b.centroid,
            count: b.doc_count,
        })
        .collect();
    while ranges.len() > target {
        let mut closest = 0;
        let mut smallest = f64::INFINITY;
        for i in 0..ranges.len() - 1 {
            let d = ranges[i + 1].centroid - ranges[i].centroid;
            if d < smallest {
                closest = i;
                smallest = d;
            }
        }
        let other = ranges.remove(closest + 1);
        let r = &mut ranges[closest];
        r.start = r.start.min(other.start);
        r.end = r.end.max(other.end);
        if r.count + other.count > 0 {
            r.centroid = (r.centroid * r.count as f64 + other.centroid * other.count as f64)
                / (r.count + other.count) as f64;
            r.count += other.count;
        }
    }
    let plan: Vec<(usize, usize)> = ranges.iter().map(|r| (r.start, r.end)).collect();
    merge_with_plan(&mut buckets, &plan);
    // Buckets with the same `min` become one (`mergeBucketsWithSameMin`).
    let mut plan: Vec<(usize, usize, f64)> = buckets
        .iter()
        .enumerate()
        .map(|(i, b)| (i, i, b.min))
        .collect();
    let mut i = 0;
    while i + 1 < plan.len() {
        if plan[i].2 == plan[i + 1].2 {
            let next = plan.remove(i + 1);
            plan[i].1 = plan[i].1.max(next.1);
        } else {
            i += 1;
        }
    }
    let plan: Vec<(usize, usize)> = plan.iter().map(|p| (p.0, p.1)).collect();
    merge_with_plan(&mut buckets, &plan);
    // Overlapping neighbours meet at the midpoint (`adjustBoundsForOverlappingBuckets`).
    for i in 1..buckets.len() {
        if buckets[i].min < buckets[i - 1].max {
            let mid = (buckets[i - 1].max + buckets[i].min) / 2.0;
            buckets[i].min = mid;
            buckets[i - 1].max = mid;
        }
    }
    buckets
}

/// The range (`from`, `to`) of each bucket's documents for its sub-aggregations.
pub(crate) fn bucket_ranges(buckets: &[Cluster]) -> Vec<(f64, f64)> {
    (0..buckets.len())
        .map(|i| {
            let to = match buckets.get(i + 1) {
                Some(next) => next.min,
                None => next_up(buckets[i].max),
            };
            (buckets[i].min, to)
        })
        .collect()
}

/// The smallest double above `x` (Java's `Math.nextUp`).
fn next_up(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f64::from_bits(1);
    }
    let bits = x.to_bits();
    f64::from_bits(if x > 0.0 { bits + 1 } else { bits - 1 })
}

/// Computes the buckets of every top-level `variable_width_histogram` from the matches of
/// every shard of every target (each resolving the field against its own mapping), and
/// checks the parameters of those below (computed per bucket at render time, [`clusters`]).
pub(crate) fn prepare(
    nodes: &[AggNode],
    targets: &[AggTarget],
    max_buckets: usize,
) -> EsResult<()> {
    for node in nodes {
        let AggKind::VariableWidthHistogram(req) = &node.kind else {
            validate_below(&node.subs, max_buckets)?;
            continue;
        };
        req.validate(&node.name, max_buckets)?;
        validate_below(&node.subs, max_buckets)?;
        let parts: Vec<(&AggTarget, &dyn tantivy::query::Query)> =
            targets.iter().map(|t| (t, t.query)).collect();
        *req.chosen.lock().unwrap_or_else(|e| e.into_inner()) = Some(clusters(req, &parts)?);
    }
    Ok(())
}

fn validate_below(nodes: &[AggNode], max_buckets: usize) -> EsResult<()> {
    for node in nodes {
        if let AggKind::VariableWidthHistogram(req) = &node.kind {
            req.validate(&node.name, max_buckets)?;
        }
        validate_below(&node.subs, max_buckets)?;
    }
    Ok(())
}

/// The buckets of the documents of `query` in each target: every shard clustered on its
/// own, the shards reduced.
pub(crate) fn clusters(
    req: &VwhReq,
    parts: &[(&AggTarget, &dyn tantivy::query::Query)],
) -> EsResult<Vec<Cluster>> {
    let mut shards = Vec::new();
    for (t, query) in parts {
        // Documents without a value have `missing`'s (an unmapped field: every document).
        let missing = super::plan::vwh_missing(t.ctx, req)?;
        // A runtime field (or the aggregation's script) is read through its value source.
        let runtime = match t.ctx.runtime.get(&req.field) {
            Some(_) => Some(
                super::exec::runtime_provider_in(
                    t.ctx,
                    &super::plan::runtime_source_name(&req.field),
                )
                .ok_or_else(|| EsError::internal("variable_width_histogram: runtime field"))?,
            ),
            None => None,
        };
        let float = match t.ctx.mapping.field(&req.field).map(|d| d.storage()) {
            _ if runtime.is_some() => true,
            Some(Storage::I64) => false,
            Some(Storage::F64) => true,
            None if missing.is_some() => true,
            _ => continue, // planning reports the field type
        };
        for shard in t.shards {
            let mut clustering = ShardClustering::new(req.shard_size, req.initial_buffer);
            shard_values(
                &shard.searcher,
                *query,
                &req.field,
                (float, runtime.as_deref()),
                missing,
                &mut clustering,
            )
            .map_err(|e| EsError::internal(format!("variable_width_histogram: {e}")))?;
            // A script that failed on a document fails the search.
            if let Some(e) = t.ctx.script_errors.lock().clone() {
                return Err(e);
            }
            shards.push(clustering.finish());
        }
    }
    Ok(reduce(shards, req.buckets))
}

/// Feeds the values of the matching live documents of a shard to `clustering`, segment by
/// segment in document order (each document's distinct values in ascending order), as ES's
/// collector sees them: only the buffer and the clusters are held.
fn shard_values(
    searcher: &tantivy::Searcher,
    query: &dyn tantivy::query::Query,
    field: &str,
    (float, runtime): (bool, Option<&super::sources::RuntimeProvider>),
    missing: Option<f64>,
    clustering: &mut ShardClustering,
) -> tantivy::Result<()> {
    use super::sources::NumericColumn;
    let weight = query.weight(EnableScoring::disabled_from_searcher(searcher))?;
    let mut doc_values: Vec<f64> = Vec::new();
    for segment in searcher.segment_readers() {
        let kind = if float {
            NumericColumn::F64
        } else {
            NumericColumn::I64
        };
        let mut column = super::sources::open_numeric(segment, field, kind, runtime)?;
        if column.is_none() && missing.is_none() {
            continue;
        }
        let alive = segment.alive_bitset();
        let mut scorer = weight.scorer(segment, 1.0)?;
        let mut doc = scorer.doc();
        while doc != TERMINATED {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                doc_values.clear();
                if let Some(c) = &mut column {
                    c.values_into(doc, &mut doc_values);
                }
                if doc_values.is_empty() {
                    doc_values.extend(missing);
                }
                doc_values.sort_by(|a, b| java_compare(*a, *b));
                doc_values.dedup();
                for &v in &doc_values {
                    clustering.collect(v);
                }
            }
            doc = scorer.advance();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(values: &[f64], buckets: usize, shard_size: usize, buffer: usize) -> Vec<Cluster> {
        let mut c = ShardClustering::new(shard_size, buffer);
        for &v in values {
            c.collect(v);
        }
        reduce(vec![c.finish()], buckets)
    }

    #[test]
    fn nearest_is_es_binary_search() {
        let a = [1.0, 3.0, 7.0, 10.0];
        assert_eq!(nearest(&a, 0.0), 0);
        // A tie between (mid - 1, mid) goes to mid - 1, between (mid, mid + 1) to mid + 1.
        assert_eq!(nearest(&a, 2.0), 0);
        assert_eq!(nearest(&a, 8.5), 3);
        assert_eq!(nearest(&a, 4.0), 1);
        assert_eq!(nearest(&a, 9.0), 3);
        assert_eq!(nearest(&a, 11.0), 3);
        assert_eq!(nearest(&a, 7.0), 2);
        assert_eq!(nearest(&[5.0], 1.0), 0);
    }

    #[test]
    fn buffer_only_merges_closest_centroids() {
        // 15 initial clusters of one value each, merged pairwise by closest centroids.
        let values = [1.0, 2.0, 3.0, 10.0, 11.0, 12.0, 50.0, 51.0];
        let b = cluster(&values, 3, 20, 100);
        assert_eq!(b.len(), 3);
        assert_eq!((b[0].min, b[0].max, b[0].doc_count), (1.0, 3.0, 3));
        assert_eq!(b[0].centroid, 2.0);
        assert_eq!((b[1].min, b[1].max, b[1].doc_count), (10.0, 12.0, 3));
        assert_eq!((b[2].min, b[2].max, b[2].doc_count), (50.0, 51.0, 2));
        assert_eq!(b[2].centroid, 50.5);
        // shard_size 6: 4 initial clusters of 2 values ({1,2}, {3,10}, ...); the first of
        // two equal gaps merges.
        let b = cluster(&values, 3, 6, 100);
        assert_eq!((b[0].min, b[0].max, b[0].doc_count), (1.0, 10.0, 4));
        assert_eq!(b[0].centroid, 4.0);
    }

    #[test]
    fn merge_phase_starts_distant_clusters() {
        // A buffer of 4 values, then values far away start clusters of their own.
        let values = [1.0, 2.0, 3.0, 4.0, 100.0, 2.5, 200.0];
        let mut c = ShardClustering::new(4, 4);
        for v in values {
            c.collect(v);
        }
        let shard = c.finish();
        // shard_size 4: 3 initial clusters of ceil(4/3) = 2 values: {1,2}, {3,4}
        assert_eq!(shard[0].doc_count, 3); // 2.5 joined {1, 2}? nearest centroid 1.5 or 3.5: tie -> lower
        let counts: Vec<u64> = shard.iter().map(|c| c.doc_count).collect();
        assert_eq!(counts.iter().sum::<u64>(), 7);
        assert_eq!(shard.last().unwrap().centroid, 200.0);
    }

    #[test]
    fn shards_reduce_equal_centroids_and_overlaps() {
        let a = vec![Cluster {
            min: 0.0,
            max: 4.0,
            centroid: 2.0,
            doc_count: 2,
        }];
        let b = vec![
            Cluster {
                min: 1.0,
                max: 3.0,
                centroid: 2.0,
                doc_count: 2,
            },
            Cluster {
                min: 3.0,
                max: 9.0,
                centroid: 6.0,
                doc_count: 1,
            },
        ];
        let r = reduce(vec![a, b], 10);
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].min, r[0].centroid, r[0].doc_count), (0.0, 2.0, 4));
        // 4.0 (max) overlaps 3.0 (next min): both become 3.5
        assert_eq!((r[0].max, r[1].min), (3.5, 3.5));
        assert_eq!(bucket_ranges(&r)[0], (0.0, 3.5));
    }

    #[test]
    fn empty_is_no_buckets() {
        assert!(cluster(&[], 10, 500, 5000).is_empty());
    }
}
