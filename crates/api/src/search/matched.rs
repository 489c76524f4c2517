//! `matched_queries` for a page of fetched hits, which may come from several indices, shards
//! and segments: each index plans the request's named queries against its own mapping, each
//! shard weighs them once, and each segment's hits are checked together (`lode_hits::matched`).

use super::{Candidate, Target};
use lode_engine::EsResult;
use lode_hits::matched::{Matches, Planned, Weights};
use lode_query::named::NamedQuery;
use lode_query::QueryContext;
use std::collections::{BTreeMap, HashMap};

/// Each hit's named queries (empty when it matches none, or the request names none).
pub(super) fn of_hits(
    targets: &[Target],
    hits: &[Candidate],
    named: &[NamedQuery],
    ctxs: &[QueryContext],
) -> EsResult<Vec<Matches>> {
    let mut out = vec![Matches::new(); hits.len()];
    if named.is_empty() || hits.is_empty() {
        return Ok(out);
    }
    let planned = ctxs
        .iter()
        .map(|ctx| Planned::new(named, ctx))
        .collect::<EsResult<Vec<_>>>()?;
    let mut segments: BTreeMap<(usize, usize, u32), Vec<usize>> = BTreeMap::new();
    for (i, h) in hits.iter().enumerate() {
        segments
            .entry((h.index, h.shard, h.addr.segment_ord))
            .or_default()
            .push(i);
    }
    let mut weights: HashMap<(usize, usize), Weights> = HashMap::new();
    for ((index, shard, segment), positions) in segments {
        let Some(s) = targets[index]
            .searchers
            .iter()
            .find(|s| s.shard_id == shard)
        else {
            continue;
        };
        let w = match weights.entry((index, shard)) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(planned[index].weights(&s.searcher)?)
            }
        };
        let docs: Vec<u32> = positions.iter().map(|&i| hits[i].addr.doc_id).collect();
        let found = w.matches(s.searcher.segment_reader(segment), &docs)?;
        for (i, m) in positions.into_iter().zip(found) {
            out[i] = m;
        }
    }
    Ok(out)
}
