//! Execution: one tantivy collection per shard, merged the way Elasticsearch reduces shard
//! responses. Each shard collects every bucket exactly (`Stage::Collect`), is cut to its
//! `shard_size` (`Stage::ShardPrune`), the shards merge with `merge_fruits`, and the merged
//! tree becomes final results (`Stage::Final`) for rendering.

use super::composite_counts;
use super::filter_counts;
use super::histogram_counts;
use super::metric_bounds;
use super::metric_order;
use super::plan::{source_name, Op, Plan, PlanNode, SourceSpec, Stage};
use super::profile;
use super::range_counts;
use super::render::{key_id, too_many_buckets, Scope};
use super::sources::{DateIndexProvider, FilterProvider, RangeProvider, WeightedProvider};
use super::term_counts;
use super::term_filter::TermFilter;
use lode_engine::shard::ShardSearcher;
use lode_engine::{EsError, EsResult};
use lode_query::QueryContext;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tantivy::aggregation::agg_req::Aggregations;
use tantivy::aggregation::agg_result::AggregationResults;
use tantivy::aggregation::intermediate_agg_result::{
    IntermediateAggregationResult, IntermediateAggregationResults, IntermediateBucketResult,
    PruneMode,
};
use tantivy::aggregation::{
    AggContextParams, AggregationError, AggregationLimitsGuard, DistributedAggregationCollector,
    Key, ValueSourceProvider, ValueSourceRegistry,
};
use tantivy::collector::Collector;
use tantivy::query::{AllQuery, EnableScoring, Query};
use tantivy::schema::Field;
use tantivy::tokenizer::TokenizerManager;
use tantivy::TantivyError;

/// What one shard returned for a top-level `terms` aggregation, for Elasticsearch's error bounds.
pub(crate) struct TermsShardInfo {
    pub keys: HashSet<String>,
    /// The shard's `doc_count_error_upper_bound` contribution (-1: unbounded).
    pub error: i64,
    /// The documents of the buckets the shard dropped under `shard_min_doc_count` (counted
    /// in `sum_other_doc_count`, as ES counts them).
    pub dropped: u64,
}

/// One index a search aggregates over.
pub struct AggTarget<'a> {
    /// The index name, as `top_hits` hits report it in `_index`.
    pub index_name: &'a str,
    pub ctx: &'a QueryContext<'a>,
    pub shards: &'a [ShardSearcher],
    /// The search query, planned for this index.
    pub query: &'a dyn Query,
    /// The search's named queries (`top_hits` hits' `matched_queries`), and whether they
    /// render with their scores (`include_named_queries_score`).
    pub named: &'a [lode_query::named::NamedQuery],
    pub named_scores: bool,
}

/// An index with the aggregations planned against its mapping.
pub(crate) struct PlannedTarget<'a> {
    pub target: &'a AggTarget<'a>,
    pub plan: Plan<'a>,
}

/// Everything a search's aggregations run against: one or more indices.
pub(crate) struct Exec<'a> {
    pub targets: Vec<PlannedTarget<'a>>,
    pub max_buckets: usize,
    pub terms_info: HashMap<String, Vec<TermsShardInfo>>,
    /// The `request` breaker's reservation for this search's aggregations, released when
    /// the search is done with them.
    pub reserved: std::sync::Mutex<lode_engine::breaker::Reservation<'static>>,
    /// A profiled search: the aggregators' profile entries of each shard, in shard order.
    pub profile: Option<std::sync::Mutex<Vec<Vec<serde_json::Value>>>>,
}

/// The per-shard requests of one collection (the final one is shared by all indices).
struct Requests {
    collect: Aggregations,
    prune: Aggregations,
    shard_min: Option<Aggregations>,
}

impl Requests {
    fn for_nodes(nodes: &[PlanNode]) -> EsResult<Requests> {
        Ok(Requests {
            collect: Plan::request_for(nodes, Stage::Collect)?,
            prune: Plan::request_for(nodes, Stage::ShardPrune)?,
            shard_min: Plan::shard_min_request(nodes)?,
        })
    }

    /// The shard's cuts, as ES's shard aggregators make them: the buckets under
    /// `shard_min_doc_count` go first (they never take one of the `shard_size` places), then
    /// each terms aggregation keeps its `shard_size` best. Returns, per top-level terms
    /// aggregation, the documents of the buckets dropped the first way.
    fn cut(
        &self,
        res: &mut IntermediateAggregationResults,
    ) -> tantivy::Result<HashMap<String, u64>> {
        let mut dropped = HashMap::new();
        if let Some(req) = &self.shard_min {
            let before = top_terms_docs(res);
            res.prune_intermediate_results(req, PruneMode::Final)?;
            let after = top_terms_docs(res);
            for (name, n) in before {
                dropped.insert(name.clone(), n - after.get(&name).copied().unwrap_or(0));
            }
        }
        res.prune_intermediate_results(&self.prune, PruneMode::Intermediate)?;
        Ok(dropped)
    }
}

/// The documents in the buckets of each top-level terms result.
fn top_terms_docs(res: &IntermediateAggregationResults) -> HashMap<String, u64> {
    res.keys()
        .filter_map(|k| match res.get(k) {
            Some(IntermediateAggregationResult::Bucket(IntermediateBucketResult::Terms {
                buckets,
            })) => Some((
                k.clone(),
                buckets.entries().iter().map(|(_, e)| e.doc_count).sum(),
            )),
            _ => None,
        })
        .collect()
}

/// tantivy's memory limit for one collection: the room under the `request` breaker.
fn limits() -> AggregationLimitsGuard {
    AggregationLimitsGuard::new(super::breaker::collection_room(), Some(u32::MAX))
}

/// Which nodes one collection runs, in every target's plan.
#[derive(Clone, Copy)]
enum Nodes<'x> {
    Roots,
    /// The sub-aggregations of the `global` aggregation at this root position.
    GlobalSubs(usize),
    /// The sub-aggregations of the node at this position (child indices from the roots),
    /// over the documents of one query per target.
    Subs(&'x [usize]),
}

fn select<'p, 'r>(plan: &'p Plan<'r>, nodes: Nodes) -> &'p [PlanNode<'r>] {
    match nodes {
        Nodes::Roots => &plan.roots,
        Nodes::GlobalSubs(i) => &plan.roots[i].subs,
        Nodes::Subs(at) => {
            let mut level = &plan.roots;
            for &i in &at[..at.len() - 1] {
                level = &level[i].subs;
            }
            &level[at[at.len() - 1]].subs
        }
    }
}

/// Where `node` is in `nodes` (child indices), found by identity.
fn position_of(nodes: &[PlanNode], node: &PlanNode) -> Option<Vec<usize>> {
    for (i, n) in nodes.iter().enumerate() {
        if std::ptr::eq(n, node) {
            return Some(vec![i]);
        }
        if let Some(mut rest) = position_of(&n.subs, node) {
            rest.insert(0, i);
            return Some(rest);
        }
    }
    None
}

impl<'a> Exec<'a> {
    /// The plan rendering follows (every target's plan has the same shape).
    pub fn plan(&self) -> &Plan<'a> {
        &self.targets[0].plan
    }

    /// All shards of all targets.
    pub fn shard_count(&self) -> usize {
        self.targets.iter().map(|t| t.target.shards.len()).sum()
    }

    /// Runs the main collection: the search query's documents on every shard.
    pub fn collect_main(&mut self) -> EsResult<AggregationResults> {
        let top_terms: Vec<(&str, usize, Option<bool>)> = self
            .plan()
            .roots
            .iter()
            .filter_map(|n| match &n.op {
                Op::Terms(op) => Some((n.req.name.as_str(), op.shard_size, terms_error_mode(n))),
                _ => None,
            })
            .collect();
        let mut info: HashMap<String, Vec<TermsShardInfo>> = HashMap::new();
        let results = self.collect(Nodes::Roots, |res, dropped| {
            for &(name, shard_size, mode) in &top_terms {
                let Some(IntermediateAggregationResult::Bucket(IntermediateBucketResult::Terms {
                    buckets,
                })) = res.get(name)
                else {
                    continue;
                };
                let entries = buckets.entries();
                let error = match mode {
                    _ if entries.is_empty() || entries.len() < shard_size => 0,
                    None => 0,
                    Some(true) => {
                        entries.iter().map(|(_, e)| e.doc_count).min().unwrap_or(0) as i64
                    }
                    Some(false) => -1,
                };
                let keys = entries
                    .iter()
                    .map(|(k, _)| key_id(&Key::from(k.clone())))
                    .collect();
                info.entry(name.to_string())
                    .or_default()
                    .push(TermsShardInfo {
                        keys,
                        error,
                        dropped: dropped.get(name).copied().unwrap_or(0),
                    });
            }
        })?;
        self.terms_info = info;
        Ok(results)
    }

    /// Runs a `global` aggregation's sub-aggregations over every document of every shard.
    pub fn collect_global(&self, node: &PlanNode) -> EsResult<(AggregationResults, u64)> {
        let position = self
            .plan()
            .roots
            .iter()
            .position(|n| std::ptr::eq(n, node))
            .ok_or_else(|| EsError::internal("global aggregations are top-level"))?;
        let mut doc_count = 0u64;
        for t in &self.targets {
            for s in t.target.shards {
                doc_count += match t.target.ctx.meta.nested {
                    // Nested documents are not documents of the index: count the roots.
                    Some(_) => {
                        let q = lode_query::nested::non_nested(
                            Box::new(AllQuery),
                            t.target.ctx.meta.nested,
                        );
                        q.count(&s.searcher).map_err(|e| self.error(e))? as u64
                    }
                    None => s.searcher.num_docs(),
                };
            }
        }
        let results = self.collect(Nodes::GlobalSubs(position), |_, _| {})?;
        Ok((results, doc_count))
    }

    /// Runs the sub-aggregations of a `nested` or `reverse_nested` aggregation (at any
    /// depth) over the documents of its bucket, `scope` (per target, as
    /// `top_hits::bucket_query` builds them: the enclosing bucket's documents mapped over
    /// the block-join layout); returns them and the bucket's document count.
    pub fn collect_level(
        &self,
        node: &PlanNode,
        scope: &Scope,
    ) -> EsResult<(AggregationResults, u64)> {
        let at = position_of(&self.plan().roots, node)
            .ok_or_else(|| EsError::internal("aggregation not in the plan"))?;
        let mut doc_count = 0u64;
        let mut queries = Vec::with_capacity(self.targets.len());
        for t in &self.targets {
            let q = super::top_hits::bucket_query(t, scope)?;
            for s in t.target.shards {
                doc_count += q.count(&s.searcher).map_err(|e| self.error(e))? as u64;
            }
            queries.push(q);
        }
        let results = if node.subs.is_empty() {
            AggregationResults::default()
        } else {
            self.collect_over(Nodes::Subs(&at), Some(&queries), |_, _| {})?
        };
        Ok((results, doc_count))
    }

    fn collect(
        &self,
        nodes: Nodes,
        on_shard: impl FnMut(&IntermediateAggregationResults, &HashMap<String, u64>),
    ) -> EsResult<AggregationResults> {
        self.collect_over(nodes, None, on_shard)
    }

    /// `queries`: the documents of [`Nodes::Subs`], one query per target.
    fn collect_over(
        &self,
        nodes: Nodes,
        queries: Option<&[Box<dyn Query>]>,
        mut on_shard: impl FnMut(&IntermediateAggregationResults, &HashMap<String, u64>),
    ) -> EsResult<AggregationResults> {
        let fin = Plan::request_for(select(self.plan(), nodes), Stage::Final)?;
        if fin.is_empty() {
            return Ok(AggregationResults::default());
        }
        let mut merged: Option<IntermediateAggregationResults> = None;
        for (ti, t) in self.targets.iter().enumerate() {
            // Each index collects with its own plan (its own field types and computed columns).
            let reqs = Requests::for_nodes(select(&t.plan, nodes))?;
            let global;
            let query: &dyn Query = match nodes {
                Nodes::Roots => t.target.query,
                Nodes::GlobalSubs(_) => {
                    global = lode_query::nested::non_nested(
                        Box::new(AllQuery),
                        t.target.ctx.meta.nested,
                    );
                    &*global
                }
                Nodes::Subs(_) => match queries.and_then(|q| q.get(ti)) {
                    Some(q) => &**q,
                    None => return Err(EsError::internal("no documents for a sub-collection")),
                },
            };
            for shard in t.target.shards {
                super::breaker::reserve_estimate(
                    select(&t.plan, nodes),
                    shard,
                    &mut self.reserved.lock().unwrap_or_else(|p| p.into_inner()),
                )?;
                let (res, dropped) = match &self.profile {
                    Some(entries) if matches!(nodes, Nodes::Roots) => {
                        let (res, dropped, shard_entries) =
                            self.collect_profiled(t, shard, query)?;
                        entries
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push(shard_entries);
                        (res, dropped)
                    }
                    _ => {
                        let registry = self.registry_for(&t.plan, shard, query)?;
                        let params = AggContextParams::new(limits(), TokenizerManager::default())
                            .with_value_sources(Arc::new(registry));
                        let mut res = collect_shard(
                            select(&t.plan, nodes),
                            &t.plan.sources,
                            shard,
                            query,
                            &reqs,
                            params,
                            None,
                        )
                        .map_err(|e| self.error(e))?;
                        let dropped = reqs.cut(&mut res).map_err(|e| self.error(e))?;
                        (res, dropped)
                    }
                };
                on_shard(&res, &dropped);
                match &mut merged {
                    None => merged = Some(res),
                    Some(m) => m.merge_fruits(res).map_err(|e| self.error(e))?,
                }
            }
        }
        merged
            .unwrap_or_default()
            .into_final_result(fin, limits())
            .map_err(|e| self.error(e))
    }

    /// A profiled shard collection: each top-level aggregation collected on its own, timed
    /// (see `profile.rs`); the same shard result as one collection of them all.
    fn collect_profiled(
        &self,
        t: &PlannedTarget,
        shard: &ShardSearcher,
        query: &dyn Query,
    ) -> EsResult<(
        IntermediateAggregationResults,
        HashMap<String, u64>,
        Vec<serde_json::Value>,
    )> {
        let mut out = IntermediateAggregationResults::default();
        let mut all_dropped = HashMap::new();
        let mut entries = Vec::new();
        for i in 0..t.plan.roots.len() {
            let one = &t.plan.roots[i..=i];
            let timer = Arc::new(profile::AggTimer::default());
            let started = std::time::Instant::now();
            let reqs = Requests::for_nodes(one)?;
            let registry = self.registry_for(&t.plan, shard, query)?;
            let params = AggContextParams::new(limits(), TokenizerManager::default())
                .with_value_sources(Arc::new(registry));
            timer.add(profile::INITIALIZE, started, 1);
            let mut res = collect_shard(
                one,
                &t.plan.sources,
                shard,
                query,
                &reqs,
                params,
                Some(&timer),
            )
            .map_err(|e| self.error(e))?;
            let started = std::time::Instant::now();
            all_dropped.extend(reqs.cut(&mut res).map_err(|e| self.error(e))?);
            timer.add(profile::BUILD_AGGREGATION, started, 0);
            entries.push(profile::entry(&one[0], &res, &timer, shard));
            let keys: Vec<String> = res.keys().cloned().collect();
            for key in keys {
                if let Some(v) = res.remove(&key) {
                    out.push(key, v).map_err(|e| self.error(e))?;
                }
            }
        }
        Ok((out, all_dropped, entries))
    }

    /// Final results of `nodes` over no documents (empty buckets, null metrics).
    pub fn empty_results(&self, nodes: &[PlanNode]) -> EsResult<AggregationResults> {
        IntermediateAggregationResults::default()
            .into_final_result(Plan::request_for(nodes, Stage::Final)?, limits())
            .map_err(|e| self.error(e))
    }

    fn registry_for(
        &self,
        plan: &Plan,
        shard: &ShardSearcher,
        query: &dyn Query,
    ) -> EsResult<ValueSourceRegistry> {
        let mut registry = ValueSourceRegistry::default();
        // Runtime fields are value sources (read only by the aggregations that name them).
        let ctx = self
            .targets
            .iter()
            .find(|t| std::ptr::eq(&t.plan, plan))
            .map(|t| t.target.ctx);
        if let Some(ctx) = ctx.filter(|c| !c.runtime.is_empty()) {
            let mut names = Vec::new();
            super::plan::runtime_sources(&plan.roots, &mut names);
            let fields: lode_query::script::Fields = lode_query::script::fields_of(ctx.mapping);
            for name in names {
                let Some((field, missing)) = super::plan::parse_runtime_source(&name) else {
                    continue;
                };
                let Some(f) = ctx.runtime.get(field) else {
                    continue;
                };
                registry.register(
                    &name,
                    Arc::new(super::sources::RuntimeProvider {
                        field: f.clone(),
                        fields: fields.clone(),
                        runtime: ctx.runtime.clone(),
                        errors: ctx.script_errors.clone(),
                        missing: missing.map(|m| serde_json::Value::String(m.to_string())),
                        distinct: !super::plan::runtime_source_keeps_repeats(&name),
                    }),
                );
            }
        }
        for (i, spec) in plan.sources.iter().enumerate() {
            let provider: Arc<dyn ValueSourceProvider> = match spec {
                SourceSpec::Sample {
                    shard_size,
                    diversify,
                } => {
                    // The shard's best-scoring matches, as ES's `BestDocsDeferringCollector`
                    // (or its diversified variant).
                    let top = super::sources::sample(shard, query, *shard_size, diversify.as_ref())
                        .map_err(|e| self.error(e))?;
                    let mut sets: HashMap<tantivy::index::SegmentId, tantivy::BitSet> =
                        HashMap::new();
                    for addr in top {
                        let reader = shard.searcher.segment_reader(addr.segment_ord);
                        sets.entry(reader.segment_id())
                            .or_insert_with(|| {
                                tantivy::BitSet::with_max_value(reader.max_doc().max(1))
                            })
                            .insert(addr.doc_id);
                    }
                    Arc::new(super::sources::SampleProvider { sets })
                }
                SourceSpec::Filters { queries, other } => {
                    let scoring = EnableScoring::disabled_from_searcher(&shard.searcher);
                    let weights = queries
                        .iter()
                        .map(|q| q.weight(scoring))
                        .collect::<tantivy::Result<Vec<_>>>()
                        .map_err(|e| self.error(e))?;
                    Arc::new(FilterProvider {
                        weights,
                        other: *other,
                    })
                }
                SourceSpec::Ranges {
                    field,
                    column,
                    ranges,
                    missing,
                } => Arc::new(RangeProvider {
                    field: field.clone(),
                    column: *column,
                    ranges: ranges.clone(),
                    missing: *missing,
                    runtime: self.runtime_provider(plan, field),
                }),
                SourceSpec::Dates {
                    field,
                    rounding,
                    missing,
                } => Arc::new(DateIndexProvider {
                    field: field.clone(),
                    rounding: rounding.clone(),
                    runtime: self.runtime_provider(plan, field),
                    missing: *missing,
                }),
                SourceSpec::Bools { field, missing } => {
                    Arc::new(super::sources::BoolValuesProvider {
                        field: field.clone(),
                        missing: *missing,
                    })
                }
                SourceSpec::BoolNumbers { field, missing } => {
                    Arc::new(super::sources::BoolNumbersProvider {
                        field: field.clone(),
                        missing: *missing,
                    })
                }
                SourceSpec::KeywordMissing { field, missing } => {
                    Arc::new(super::sources::KeywordMissingProvider {
                        field: field.clone(),
                        missing: missing.clone(),
                    })
                }
                SourceSpec::Values {
                    field,
                    column,
                    missing,
                    as_i64,
                } => Arc::new(super::sources::ValuesProvider {
                    field: field.clone(),
                    column: *column,
                    missing: *missing,
                    as_i64: *as_i64,
                    runtime: self.runtime_provider(plan, field),
                }),
                SourceSpec::RangeBuckets {
                    field,
                    kind,
                    bucketing,
                } => Arc::new(super::sources::RangeBucketProvider {
                    field: field.clone(),
                    kind: *kind,
                    bucketing: bucketing.clone(),
                    max_buckets: self.max_buckets,
                }),
                SourceSpec::CompositeKeys(spec) => {
                    let ctx = ctx.ok_or_else(|| EsError::internal("composite: no index"))?;
                    let fields: lode_query::script::Fields =
                        lode_query::script::fields_of(ctx.mapping);
                    let page = super::composite::shard_page(
                        spec,
                        &shard.searcher,
                        query,
                        fields.clone(),
                        ctx.runtime.clone(),
                    )?;
                    // A script that failed on a document fails the search.
                    if let Some(e) = ctx.script_errors.lock().clone() {
                        return Err(e);
                    }
                    Arc::new(super::composite::CompositeKeysProvider {
                        spec: spec.clone(),
                        page: Arc::new(page),
                        fields,
                        runtime: ctx.runtime.clone(),
                    })
                }
                SourceSpec::GeoCells { field, grid } => Arc::new(super::geogrid::CellProvider {
                    field: field.clone(),
                    grid: grid.clone(),
                }),
                SourceSpec::Weighted {
                    value,
                    weight,
                    product,
                } => Arc::new(WeightedProvider {
                    value: value.clone(),
                    weight: weight.clone(),
                    product: *product,
                    value_runtime: self.runtime_provider(plan, &value.0),
                    weight_runtime: self.runtime_provider(plan, &weight.0),
                }),
            };
            registry.register(&source_name(i), provider);
        }
        Ok(registry)
    }

    /// The runtime field a computed column reads instead of a column, when `field` names one.
    fn runtime_provider(
        &self,
        plan: &Plan,
        field: &str,
    ) -> Option<Arc<super::sources::RuntimeProvider>> {
        let ctx = self
            .targets
            .iter()
            .find(|t| std::ptr::eq(&t.plan, plan))?
            .target
            .ctx;
        runtime_provider_in(ctx, field)
    }

    fn error(&self, e: TantivyError) -> EsError {
        match e {
            TantivyError::AggregationError(AggregationError::MemoryExceeded {
                current, ..
            }) if super::breaker::collection_room().is_some() => {
                // tantivy was given the room under the `request` breaker: over it, the
                // breaker trips with what the collection wanted.
                let label = format!(
                    "<agg [{}]>",
                    self.plan()
                        .roots
                        .first()
                        .map_or("", |n| n.req.name.as_str())
                );
                super::breaker::trip(current.get_bytes(), &label)
                    .unwrap_or_else(|| too_many_buckets(self.max_buckets))
            }
            TantivyError::AggregationError(AggregationError::MemoryExceeded { .. })
            | TantivyError::AggregationError(AggregationError::BucketLimitExceeded { .. }) => {
                too_many_buckets(self.max_buckets)
            }
            TantivyError::AggregationError(AggregationError::InvalidRequest(m))
            | TantivyError::InvalidArgument(m) => EsError::illegal_argument(m),
            other => EsError::internal(format!("aggregation failure: {other}")),
        }
    }
}

/// Collects one shard. In a segment the query matches entirely, the nodes answered from
/// segment metadata skip the collector: the `terms` nodes `term_counts` can answer come from
/// document frequencies (in the other segments, from the query's documents counted by
/// ordinal when they are enough of them), the `range` and histogram nodes `range_counts` and
/// `histogram_counts` can answer from the points (on a single-valued segment), the `filters`
/// nodes `filter_counts` can count filter by filter, and (when the segment has no deleted
/// documents) the `min`/`max` nodes `metric_bounds` can answer from column headers. In any
/// segment, the `composite` nodes `composite_counts` can count densely
/// are counted over the query's documents. The collector runs only for the
/// other nodes (not at all when none is left).
#[allow(clippy::too_many_arguments)]
/// `counts` of `segment` without the terms `filter` (a node's include/exclude) rejects.
fn without_rejected_terms(
    filter: Option<&TermFilter>,
    segment: &tantivy::SegmentReader,
    field_name: &str,
    counts: term_counts::SegmentCounts,
) -> tantivy::Result<term_counts::SegmentCounts> {
    let Some(filter) = filter else {
        return Ok(counts);
    };
    let column = segment.fast_fields().str(field_name)?;
    Ok(filter.apply(column.as_ref(), counts)?)
}

fn collect_shard(
    nodes: &[PlanNode],
    sources: &[SourceSpec],
    shard: &ShardSearcher,
    query: &dyn Query,
    reqs: &Requests,
    params: AggContextParams,
    timer: Option<&Arc<profile::AggTimer>>,
) -> tantivy::Result<IntermediateAggregationResults> {
    // The `terms` nodes counted by term (with `true`: their metric sub-aggregations are
    // collected afterwards, over the documents of the buckets the shard keeps).
    // Each with its keyword include/exclude, applied to every segment's counts.
    type Countable<'a> = (
        &'a str,
        &'a str,
        Field,
        Option<term_counts::ShardCut>,
        bool,
        Option<TermFilter>,
    );
    let countable: Vec<Countable> = nodes
        .iter()
        .filter_map(|n| {
            let Op::Terms(op) = &n.op else { return None };
            let (field, deferred) = match term_counts::countable_field(n, &shard.schema) {
                Some(field) => (field, false),
                None => {
                    let field = term_counts::deferred_subs_field(n, &shard.schema)?;
                    // A document with several terms would bring its other terms' buckets
                    // into the kept buckets' collection.
                    if !single_valued_everywhere(shard, &op.field.name).ok()? {
                        return None;
                    }
                    // Deferring pays only when the cut drops buckets: when the shard keeps
                    // every term, the kept buckets' collection is all of the first pass again.
                    let cut = term_counts::shard_cut(n)?;
                    if shard_terms_at_most(shard, &op.field.name, cut.size()).ok()? {
                        return None;
                    }
                    (field, true)
                }
            };
            let cut = term_counts::shard_cut(n);
            let (include, exclude) = op.keyword_filters();
            Some((
                n.req.name.as_str(),
                op.field.name.as_str(),
                field,
                cut,
                deferred,
                TermFilter::of(include, exclude)?,
            ))
        })
        .collect();
    // The `terms` nodes ordered by a metric, counted with their metric by global ordinal.
    let mut metric_ordered: Vec<MetricOrderedShard> = nodes
        .iter()
        .filter_map(|n| MetricOrderedShard::new(n, shard).transpose())
        .collect::<tantivy::Result<_>>()?;
    let bounded: Vec<(&str, metric_bounds::Bound, &str)> = nodes
        .iter()
        .filter_map(|n| {
            let (bound, field) = metric_bounds::bounded_field(n, &shard.schema)?;
            Some((n.req.name.as_str(), bound, field))
        })
        .collect();
    let ranged: Vec<range_counts::CountedRanges> = nodes
        .iter()
        .filter_map(|n| range_counts::counted_ranges(n, &shard.schema))
        .collect();
    let histograms: Vec<histogram_counts::CountedHistogram> = nodes
        .iter()
        .filter_map(|n| histogram_counts::counted_histogram(n, &shard.schema))
        .collect();
    let filtered: Vec<filter_counts::CountedFilters> = nodes
        .iter()
        .filter_map(|n| filter_counts::counted_filters(n, sources, &shard.searcher).transpose())
        .collect::<tantivy::Result<_>>()?;
    let composites: Vec<composite_counts::DenseComposite> = nodes
        .iter()
        .filter_map(|n| composite_counts::dense_composite(n, &reqs.collect))
        .collect();
    let collector =
        DistributedAggregationCollector::from_aggs(reqs.collect.clone(), params.clone());
    // A profiled collection goes through the timing wrapper (only then: no cost otherwise).
    let collect_one = |c: &DistributedAggregationCollector,
                       weight: &dyn tantivy::query::Weight,
                       ord: u32,
                       reader: &tantivy::SegmentReader|
     -> tantivy::Result<IntermediateAggregationResults> {
        match timer {
            None => c.collect_segment(weight, ord, reader)?,
            Some(t) => {
                let timed = profile::Timed {
                    inner: c,
                    timer: t.clone(),
                };
                let fruit = timed.collect_segment(weight, ord, reader)?;
                timed.merge_fruits(vec![fruit])
            }
        }
    };
    if countable.is_empty()
        && bounded.is_empty()
        && ranged.is_empty()
        && histograms.is_empty()
        && filtered.is_empty()
        && composites.is_empty()
        && metric_ordered.is_empty()
    {
        return match timer {
            None => lode_query::FieldStatistics::new(&shard.searcher).search(
                &shard.searcher,
                query,
                &collector,
            ),
            Some(t) => lode_query::FieldStatistics::new(&shard.searcher).search(
                &shard.searcher,
                query,
                &profile::Timed {
                    inner: &collector,
                    timer: t.clone(),
                },
            ),
        };
    }
    // The collector of what a whole segment still collects, by the nodes it answered
    // otherwise (built once per such set).
    let mut rests: Vec<(Vec<&str>, Option<DistributedAggregationCollector>)> = Vec::new();
    let searcher = &shard.searcher;
    let weight = query.weight(EnableScoring::disabled_from_searcher(searcher))?;
    let mut merged = IntermediateAggregationResults::default();
    // Counted segments add up per term first: one intermediate result per shard, not per
    // segment (building one goes through serde, see `terms_result`).
    let mut counted: Vec<Option<Vec<(usize, term_counts::SegmentCounts)>>> =
        (0..countable.len()).map(|_| None).collect();
    // Per bounded node: whether some segment was answered from its bounds, and the bound.
    let mut bounds: Vec<(bool, Option<f64>)> = vec![(false, None); bounded.len()];
    // Per ranged node: whether some segment was counted from points, and the counts.
    let mut range_sums: Vec<(bool, Vec<u64>)> =
        ranged.iter().map(|r| (false, vec![0; r.len()])).collect();
    // Per filtered node: whether some segment was counted filter by filter, and the counts.
    let mut filter_sums: Vec<(bool, Vec<u64>)> =
        filtered.iter().map(|f| (false, vec![0; f.len()])).collect();
    let mut histogram_sums: Vec<(bool, histogram_counts::BucketCounts)> = histograms
        .iter()
        .map(|_| (false, Default::default()))
        .collect();
    // Per dense composite node: the pages of the segments it counted.
    let mut composite_pages: Vec<Option<Vec<composite_counts::KeyCount>>> =
        vec![None; composites.len()];
    // A query that is a range on one field: a histogram of that field counts its slice of
    // the sorted values.
    let sole_range = lode_query::sole_point_range(query);
    for (ord, segment) in searcher.segment_readers().iter().enumerate() {
        let ord = ord as u32;
        let first = weight.scorer(segment, 1.0)?;
        let everything = lode_query::matches_every_doc(&*first);
        let mut scorer = Some(first);
        let started = std::time::Instant::now();
        let mut answered: Vec<&str> = Vec::new();
        // Documents a dense count read (the segment's live documents when it matches whole).
        let mut read = u64::from(segment.num_docs());
        for (c, pages) in composites.iter().zip(&mut composite_pages) {
            // Each count walks the query's documents: a fresh scorer after the first.
            let mut fresh;
            let docs = match scorer.take() {
                _ if everything => composite_counts::Docs::All,
                Some(s) => {
                    fresh = s;
                    composite_counts::Docs::Matching(&mut *fresh)
                }
                None => {
                    fresh = weight.scorer(segment, 1.0)?;
                    composite_counts::Docs::Matching(&mut *fresh)
                }
            };
            if let Some((page, n)) = c.count_segment(segment, docs)? {
                pages.get_or_insert_with(Vec::new).extend(page);
                read = n;
                answered.push(c.name);
            }
        }
        for m in &mut metric_ordered {
            let mut docs = match scorer.take() {
                Some(s) => s,
                None => weight.scorer(segment, 1.0)?,
            };
            m.add_segment(ord as usize, segment, &mut *docs)?;
            answered.push(m.node.name);
        }
        if !everything {
            for (&(name, field_name, _, _, _, ref filter), sums) in
                countable.iter().zip(&mut counted)
            {
                // Each count walks the query's documents: a fresh scorer after the first.
                let mut docs = match scorer.take() {
                    Some(s) => s,
                    None => weight.scorer(segment, 1.0)?,
                };
                let counts = term_counts::query_ord_counts(segment, field_name, &mut *docs)?;
                let counts = without_rejected_terms(filter.as_ref(), segment, field_name, counts)?;
                sums.get_or_insert_with(Vec::new)
                    .push((ord as usize, counts));
                answered.push(name);
            }
        }
        if let (false, Some(range)) = (everything, sole_range) {
            for (h, (done, sums)) in histograms.iter().zip(&mut histogram_sums) {
                if h.field() != range.field() {
                    continue;
                }
                if let Some(n) = h.add_segment(segment, sums, Some(range.bounds()))? {
                    *done = true;
                    read = n;
                    answered.push(h.name);
                }
            }
        }
        if !everything && answered.is_empty() {
            merged.merge_fruits(collect_one(&collector, &*weight, ord, segment)?)?;
            continue;
        }
        if everything {
            for (&(name, field_name, field, _, _, ref filter), sums) in
                countable.iter().zip(&mut counted)
            {
                let counts = term_counts::live_counts(segment, field, field_name)?;
                let counts = without_rejected_terms(filter.as_ref(), segment, field_name, counts)?;
                sums.get_or_insert_with(Vec::new)
                    .push((ord as usize, counts));
                answered.push(name);
            }
            if segment.num_deleted_docs() == 0 {
                for (&(name, bound, field), (done, acc)) in bounded.iter().zip(&mut bounds) {
                    let value = metric_bounds::segment_bound(segment, field, bound)?;
                    *acc = metric_bounds::fold(*acc, value, bound);
                    *done = true;
                    answered.push(name);
                }
            }
            for (r, (done, sums)) in ranged.iter().zip(&mut range_sums) {
                if r.add_segment(segment, sums)? {
                    *done = true;
                    answered.push(r.name);
                }
            }
            for (f, (done, sums)) in filtered.iter().zip(&mut filter_sums) {
                f.add_segment(segment, sums)?;
                *done = true;
                answered.push(f.name);
            }
            for (h, (done, sums)) in histograms.iter().zip(&mut histogram_sums) {
                if h.add_segment(segment, sums, None)?.is_some() {
                    *done = true;
                    answered.push(h.name);
                }
            }
        }
        if let (Some(t), false) = (timer, answered.is_empty()) {
            // A profiled search collects one top-level aggregation at a time: this one.
            t.counted(started, read);
        }
        answered.sort_unstable();
        let at = match rests.iter().position(|(names, _)| *names == answered) {
            Some(at) => at,
            None => {
                let mut rest = reqs.collect.clone();
                for name in &answered {
                    rest.remove(*name);
                }
                let c = (!rest.is_empty())
                    .then(|| DistributedAggregationCollector::from_aggs(rest, params.clone()));
                rests.push((answered, c));
                rests.len() - 1
            }
        };
        if let Some(c) = &rests[at].1 {
            merged.merge_fruits(collect_one(c, &*weight, ord, segment)?)?;
        }
    }
    for ((name, field_name, field, cut, deferred, _), sums) in countable.iter().zip(counted) {
        let Some(per_segment) = sums else { continue };
        let segments = searcher.segment_readers();
        match (deferred, cut) {
            (true, Some(cut)) => {
                let (kept, other) =
                    term_counts::kept_terms(segments, field_name, per_segment, cut)?;
                let result =
                    collect_kept_buckets(shard, query, reqs, &params, name, *field, &kept)?;
                merged.merge_fruits(result)?;
                merged.push(name.to_string(), term_counts::other_docs_result(other)?)?;
            }
            _ => {
                let result =
                    term_counts::shard_result(segments, field_name, per_segment, cut.as_ref())?;
                merged.push(name.to_string(), result)?;
            }
        }
    }
    for m in metric_ordered {
        let name = m.node.name;
        let (kept, other) = m.kept_terms()?;
        let result = collect_kept_buckets(shard, query, reqs, &params, name, m.node.field, &kept)?;
        merged.merge_fruits(result)?;
        merged.push(name.to_string(), term_counts::other_docs_result(other)?)?;
    }
    for (c, pages) in composites.iter().zip(composite_pages) {
        if let Some(pages) = pages {
            merged.push(c.name.to_string(), c.result(pages)?)?;
        }
    }
    for (&(name, bound, _), (answered, value)) in bounded.iter().zip(bounds) {
        if answered {
            merged.push(name.to_string(), metric_bounds::bound_result(bound, value)?)?;
        }
    }
    for (h, (done, sums)) in histograms.iter().zip(histogram_sums) {
        if done {
            merged.push(
                h.name.to_string(),
                histogram_counts::CountedHistogram::result(sums),
            )?;
        }
    }
    if range_sums.iter().chain(&filter_sums).any(|(done, _)| *done) {
        // Every bucket with its key and bounds: the node collected over no documents.
        let none =
            tantivy::query::EmptyQuery.weight(EnableScoring::disabled_from_searcher(searcher))?;
        let first = &searcher.segment_readers()[0];
        let empty = |name: &str| -> tantivy::Result<Option<IntermediateAggregationResult>> {
            let mut only = Aggregations::default();
            only.insert(name.to_string(), reqs.collect[name].clone());
            let mut empty = DistributedAggregationCollector::from_aggs(only, params.clone())
                .collect_segment(&*none, 0, first)??;
            Ok(empty.remove(name))
        };
        for (r, (done, sums)) in ranged.iter().zip(range_sums) {
            if let (true, Some(result)) = (done, empty(r.name)?) {
                merged.push(r.name.to_string(), r.with_counts(result, &sums)?)?;
            }
        }
        for (f, (done, sums)) in filtered.iter().zip(filter_sums) {
            if let (true, Some(result)) = (done, empty(f.name)?) {
                merged.push(f.name.to_string(), f.with_counts(result, &sums)?)?;
            }
        }
    }
    Ok(merged)
}

/// A `terms` node ordered by a metric (`metric_order`) on one shard: its global ordinals, its
/// segments' columns and the per-ordinal counts and metrics added up so far.
struct MetricOrderedShard<'n> {
    node: metric_order::MetricOrdered<'n>,
    global: Arc<super::global_ords::GlobalOrds>,
    columns: Vec<Option<tantivy::columnar::StrColumn>>,
    metrics: metric_order::OrdMetrics,
}

impl<'n> MetricOrderedShard<'n> {
    /// `None` when the node is not one `metric_order` answers on this shard: a multi-valued
    /// keyword (a document's other terms would join the kept buckets' collection), a shard
    /// whose cut keeps every term (the kept buckets' collection would be all of the first pass
    /// again), or no global ordinals.
    fn new(node: &'n PlanNode, shard: &ShardSearcher) -> tantivy::Result<Option<Self>> {
        let Some(node) = metric_order::metric_ordered(node, &shard.schema) else {
            return Ok(None);
        };
        if !single_valued_everywhere(shard, node.field_name)?
            || shard_terms_at_most(shard, node.field_name, node.shard_size)?
        {
            return Ok(None);
        }
        let segments = shard.searcher.segment_readers();
        let columns = segments
            .iter()
            .map(|s| s.fast_fields().str(node.field_name))
            .collect::<tantivy::Result<Vec<_>>>()?;
        let ids = segments.iter().map(|s| s.segment_id()).collect();
        let Some(global) = super::global_ords::global_ords(ids, node.field_name, &columns)? else {
            return Ok(None);
        };
        let metrics = metric_order::OrdMetrics::new(node.value, global.len());
        Ok(Some(MetricOrderedShard {
            node,
            global,
            columns,
            metrics,
        }))
    }

    /// Adds the documents `docs` matches in the segment at position `seg`.
    fn add_segment(
        &mut self,
        seg: usize,
        segment: &tantivy::SegmentReader,
        docs: &mut dyn tantivy::query::Scorer,
    ) -> tantivy::Result<()> {
        let Some(terms) = &self.columns[seg] else {
            return Ok(());
        };
        self.metrics.add_segment(
            &self.global,
            seg,
            segment,
            terms,
            self.node.metric_field,
            docs,
        )
    }

    /// The terms the shard's cut keeps, with their documents, and the others' documents.
    fn kept_terms(&self) -> tantivy::Result<(Vec<(String, u64)>, u64)> {
        let (kept, other) = self.metrics.cut(self.node.shard_size, self.node.asc);
        let kept = metric_order::kept_terms(&self.global, &self.columns, kept)?;
        Ok((kept, other))
    }
}

/// Whether every segment of `shard` holds at most one value of the keyword `field` per
/// document.
fn single_valued_everywhere(shard: &ShardSearcher, field: &str) -> tantivy::Result<bool> {
    for segment in shard.searcher.segment_readers() {
        if let Some(column) = segment.fast_fields().str(field)? {
            if column.ords().get_cardinality().is_multivalue() {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// Whether `shard` holds at most `n` distinct terms of `field`: its segments' term counts when
/// they add up to no more, else its global ordinals (built for the counts' cut anyway).
fn shard_terms_at_most(shard: &ShardSearcher, field: &str, n: usize) -> tantivy::Result<bool> {
    let segments = shard.searcher.segment_readers();
    let columns = segments
        .iter()
        .map(|s| s.fast_fields().str(field))
        .collect::<tantivy::Result<Vec<_>>>()?;
    if columns
        .iter()
        .flatten()
        .map(|c| c.num_terms())
        .sum::<usize>()
        <= n
    {
        return Ok(true);
    }
    let ids = segments.iter().map(|s| s.segment_id()).collect();
    Ok(super::global_ords::global_ords(ids, field, &columns)?.is_some_and(|g| g.len() <= n))
}

/// A deferred `terms` node's buckets with their sub-aggregations: the node's own collection
/// over the query's documents that hold one of the `kept` terms, as Elasticsearch replays the
/// documents of the surviving buckets to their deferred sub-aggregators. The counts come out
/// as the first pass counted them (the same documents, one term each).
fn collect_kept_buckets(
    shard: &ShardSearcher,
    query: &dyn Query,
    reqs: &Requests,
    params: &AggContextParams,
    name: &str,
    field: Field,
    kept: &[(String, u64)],
) -> tantivy::Result<IntermediateAggregationResults> {
    if kept.is_empty() {
        return Ok(IntermediateAggregationResults::default());
    }
    let terms = kept
        .iter()
        .map(|(t, _)| tantivy::Term::from_field_text(field, t))
        .collect();
    let kept_docs = tantivy::query::BooleanQuery::intersection(vec![
        query.box_clone(),
        Box::new(lode_query::TermSetLookup::new(terms)),
    ]);
    let mut only = Aggregations::default();
    only.insert(name.to_string(), reqs.collect[name].clone());
    let collector = DistributedAggregationCollector::from_aggs(only, params.clone());
    lode_query::FieldStatistics::new(&shard.searcher).search(
        &shard.searcher,
        &kept_docs,
        &collector,
    )
}

/// How a terms aggregation's shard error is computed: `Some(true)` for `_count` descending,
/// `None` for key orders (no error), `Some(false)` for anything else (unbounded).
fn terms_error_mode(n: &PlanNode) -> Option<bool> {
    let super::request::AggKind::Terms(t) = &n.req.kind else {
        return None;
    };
    match &t.order[0].key {
        super::request::OrderKey::Key => None,
        super::request::OrderKey::Count => Some(!t.order[0].asc),
        _ => Some(false),
    }
}

/// The runtime field (or aggregation script) a computed column reads instead of a column,
/// when `field` names one's value source.
pub(crate) fn runtime_provider_in(
    ctx: &QueryContext,
    field: &str,
) -> Option<Arc<super::sources::RuntimeProvider>> {
    let (name, _) = super::plan::parse_runtime_source(field)?;
    Some(Arc::new(super::sources::RuntimeProvider {
        field: ctx.runtime.get(name)?.clone(),
        fields: lode_query::script::fields_of(ctx.mapping),
        runtime: ctx.runtime.clone(),
        errors: ctx.script_errors.clone(),
        missing: None,
        distinct: true,
    }))
}
