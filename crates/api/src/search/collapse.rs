//! `collapse`: one hit per value of a keyword or numeric field, the best of its group under the
//! request's sort; `hits.total` still counts documents. In a list sorted by the request's order
//! a group's first document is its best, so the top groups are the first distinct values of
//! the top documents: a shard collects its top documents, and collects more (4x) while they
//! hold fewer distinct groups than the page needs and the shard has more matches. A shard that
//! found enough groups may omit a group only when that group ranks below all of them.

use super::{Candidate, SearchRequest};
use lode_engine::mapping::{FieldDef, FieldType, Mapping};
use lode_engine::{EsError, EsResult};
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;
use tantivy::{DocAddress, Searcher};

/// The collapse field, checked as ES checks it.
pub fn field(mapping: &Mapping, name: &str) -> EsResult<Arc<FieldDef>> {
    let def = mapping.field(name).ok_or_else(|| {
        EsError::illegal_argument(format!(
            "no mapping found for `{name}` in order to collapse on"
        ))
    })?;
    if !(def.ty == FieldType::Keyword || def.ty.is_numeric()) {
        return Err(EsError::illegal_argument(format!(
            "unknown type for collapse field `{name}`, only keywords and numbers are accepted"
        )));
    }
    if !def.doc_values {
        return Err(EsError::illegal_argument(format!(
            "cannot collapse on field `{name}` without `doc_values`"
        )));
    }
    Ok(def.clone())
}

/// What ES refuses with `collapse`.
pub fn check_request(sreq: &SearchRequest, scroll: bool) -> EsResult<()> {
    if scroll {
        return Err(EsError::bad_request(
            "action_request_validation_exception",
            "Validation Failed: 1: cannot use `collapse` in a scroll context;",
        ));
    }
    if sreq.search_after.is_some() {
        return Err(EsError::illegal_argument(
            "Cannot use [collapse] in conjunction with [search_after] unless the search is sorted on the same field. Multiple sort fields are not allowed.",
        ));
    }
    Ok(())
}

/// A document's group: its one value of the field, `null` when it has none.
pub fn group_value(searcher: &Searcher, addr: DocAddress, def: &FieldDef) -> EsResult<Value> {
    let mut values = lode_hits::docvalues::read(searcher, addr, def, None)?;
    match values.len() {
        0 => Ok(Value::Null),
        1 => Ok(values.remove(0)),
        _ => Err(EsError::illegal_argument(format!(
            "failed to collapse {}, the collapse field `{}` must be single valued",
            addr.doc_id, def.path
        ))),
    }
}

/// A shard's best document of each of its top `need` groups (fewer when it has fewer), with
/// the shard's count. `collect(k)` returns the shard's top `k` documents in order.
pub fn top_groups(
    need: usize,
    max_docs: usize,
    collect: impl Fn(usize) -> EsResult<(u64, Vec<Candidate>)>,
    mut group: impl FnMut(&mut Candidate) -> EsResult<Value>,
) -> EsResult<(u64, Vec<Candidate>)> {
    if need == 0 {
        return collect(0);
    }
    let mut k = need.saturating_mul(2);
    loop {
        let (count, mut cands) = collect(k)?;
        let mut groups = HashSet::new();
        for c in cands.iter_mut() {
            groups.insert(group(c)?.to_string());
        }
        if groups.len() >= need || cands.len() < k || k >= max_docs {
            first_of_each_group(&mut cands, |c| c.group.as_deref());
            cands.truncate(need);
            return Ok((count, cands));
        }
        k = k.saturating_mul(4);
    }
}

/// Keeps the first candidate of each group, in order.
pub fn first_of_each_group(
    cands: &mut Vec<Candidate>,
    group: impl Fn(&Candidate) -> Option<&Value>,
) {
    let mut seen = HashSet::new();
    cands.retain(|c| seen.insert(group(c).map_or_else(String::new, Value::to_string)));
}
