//! Execution: one tantivy collection per shard, merged the way Elasticsearch reduces shard
//! responses. Each shard collects every bucket exactly (`Stage::Collect`), is cut to its
//! `shard_size` (`Stage::ShardPrune`), the shards merge with `merge_fruits`, and the merged
//! tree becomes final results (`Stage::Final`) for rendering.

use super::plan::{source_name, Op, Plan, PlanNode, SourceSpec, Stage};
use super::render::{key_id, too_many_buckets};
use super::sources::{DateIndexProvider, FilterProvider, RangeProvider};
use crate::query::QueryContext;
use lode_engine::shard::ShardSearcher;
use lode_engine::{EsError, EsResult};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tantivy::aggregation::agg_req::Aggregations;
use tantivy::aggregation::agg_result::AggregationResults;
use tantivy::aggregation::intermediate_agg_result::{
    IntermediateAggregationResult, IntermediateAggregationResults, IntermediateBucketResult, PruneMode,
};
use tantivy::aggregation::{
    AggContextParams, AggregationError, AggregationLimitsGuard, DistributedAggregationCollector, Key,
    ValueSourceProvider, ValueSourceRegistry,
};
use tantivy::query::{AllQuery, EnableScoring, Query};
use tantivy::tokenizer::TokenizerManager;
use tantivy::TantivyError;

/// What one shard returned for a top-level `terms` aggregation, for Elasticsearch's error bounds.
pub(crate) struct TermsShardInfo {
    pub keys: HashSet<String>,
    /// The shard's `doc_count_error_upper_bound` contribution (-1: unbounded).
    pub error: i64,
}

/// Everything a search's aggregations run against, for one index.
pub(crate) struct Exec<'a> {
    pub ctx: &'a QueryContext<'a>,
    pub index_name: &'a str,
    pub shards: &'a [ShardSearcher],
    pub query: &'a dyn Query,
    pub plan: &'a Plan<'a>,
    pub max_buckets: usize,
    pub terms_info: HashMap<String, Vec<TermsShardInfo>>,
}

/// The three stage requests of one collection.
struct Requests {
    collect: Aggregations,
    prune: Aggregations,
    fin: Aggregations,
}

fn limits() -> AggregationLimitsGuard {
    AggregationLimitsGuard::new(None, Some(u32::MAX))
}

impl<'a> Exec<'a> {
    /// Runs the main collection: the search query's documents on every shard.
    pub fn collect_main(&mut self) -> EsResult<AggregationResults> {
        let reqs = Requests {
            collect: self.plan.tantivy_request(Stage::Collect)?,
            prune: self.plan.tantivy_request(Stage::ShardPrune)?,
            fin: self.plan.tantivy_request(Stage::Final)?,
        };
        let top_terms: Vec<(&str, usize, Option<bool>)> = self
            .plan
            .roots
            .iter()
            .filter_map(|n| match &n.op {
                Op::Terms(op) => Some((n.req.name.as_str(), op.shard_size, terms_error_mode(n))),
                _ => None,
            })
            .collect();
        let mut info: HashMap<String, Vec<TermsShardInfo>> = HashMap::new();
        let results = self.collect(&reqs, self.query, |res| {
            for &(name, shard_size, mode) in &top_terms {
                let Some(IntermediateAggregationResult::Bucket(IntermediateBucketResult::Terms { buckets })) = res.get(name) else {
                    continue;
                };
                let entries = buckets.entries();
                let error = match mode {
                    _ if entries.is_empty() || entries.len() < shard_size => 0,
                    None => 0,
                    Some(true) => entries.iter().map(|(_, e)| e.doc_count).min().unwrap_or(0) as i64,
                    Some(false) => -1,
                };
                let keys = entries.iter().map(|(k, _)| key_id(&Key::from(k.clone()))).collect();
                info.entry(name.to_string()).or_default().push(TermsShardInfo { keys, error });
            }
        })?;
        self.terms_info = info;
        Ok(results)
    }

    /// Runs a `global` aggregation's sub-aggregations over every document of every shard.
    pub fn collect_global(&self, node: &PlanNode) -> EsResult<(AggregationResults, u64)> {
        let reqs = Requests {
            collect: Plan::global_request(node, Stage::Collect)?,
            prune: Plan::global_request(node, Stage::ShardPrune)?,
            fin: Plan::global_request(node, Stage::Final)?,
        };
        let doc_count = self.shards.iter().map(|s| s.searcher.num_docs()).sum();
        let results = self.collect(&reqs, &AllQuery, |_| {})?;
        Ok((results, doc_count))
    }

    fn collect(
        &self,
        reqs: &Requests,
        query: &dyn Query,
        mut on_shard: impl FnMut(&IntermediateAggregationResults),
    ) -> EsResult<AggregationResults> {
        if reqs.collect.is_empty() {
            return Ok(AggregationResults::default());
        }
        let mut merged: Option<IntermediateAggregationResults> = None;
        for shard in self.shards {
            let registry = self.registry_for(shard)?;
            let params = AggContextParams::new(limits(), TokenizerManager::default())
                .with_value_sources(Arc::new(registry));
            let collector = DistributedAggregationCollector::from_aggs(reqs.collect.clone(), params);
            let mut res = shard.searcher.search(query, &collector).map_err(|e| self.error(e))?;
            res.prune_intermediate_results(&reqs.prune, PruneMode::Intermediate)
                .map_err(|e| self.error(e))?;
            on_shard(&res);
            match &mut merged {
                None => merged = Some(res),
                Some(m) => m.merge_fruits(res).map_err(|e| self.error(e))?,
            }
        }
        merged
            .unwrap_or_default()
            .into_final_result(reqs.fin.clone(), limits())
            .map_err(|e| self.error(e))
    }

    fn registry_for(&self, shard: &ShardSearcher) -> EsResult<ValueSourceRegistry> {
        let mut registry = ValueSourceRegistry::default();
        for (i, spec) in self.plan.sources.iter().enumerate() {
            let provider: Arc<dyn ValueSourceProvider> = match spec {
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
                }),
                SourceSpec::Dates { field, rounding } => Arc::new(DateIndexProvider {
                    field: field.clone(),
                    rounding: rounding.clone(),
                }),
            };
            registry.register(&source_name(i), provider);
        }
        Ok(registry)
    }

    fn error(&self, e: TantivyError) -> EsError {
        match e {
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

/// How a terms aggregation's shard error is computed: `Some(true)` for `_count` descending,
/// `None` for key orders (no error), `Some(false)` for anything else (unbounded).
fn terms_error_mode(n: &PlanNode) -> Option<bool> {
    let super::request::AggKind::Terms(t) = &n.req.kind else { return None };
    match &t.order[0].key {
        super::request::OrderKey::Key => None,
        super::request::OrderKey::Count => Some(!t.order[0].asc),
        _ => Some(false),
    }
}
