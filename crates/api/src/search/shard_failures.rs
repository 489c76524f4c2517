//! Shard failures of a search, as Elasticsearch reports them.
//!
//! In ES a search fails per shard: a query that cannot be planned against an index's mapping,
//! or a script that throws on one of a shard's documents, fails that shard only
//! (`ShardSearchFailure`). The coordinator then answers with the other shards' results and
//! the failures in `_shards.failures` (a 200), or, when every shard failed or
//! `allow_partial_search_results` is false, with a `search_phase_execution_exception`
//! (`AbstractSearchAsyncAction#executeNextPhase`). Either way the failures are grouped by
//! index, cause type and message (`ExceptionsHelper#groupBy`).

use lode_engine::EsError;
use serde_json::{json, Value};

/// One failed shard and why.
#[derive(Debug, Clone)]
pub(crate) struct ShardFailure {
    pub index: String,
    pub shard: usize,
    pub error: EsError,
}

/// Whether `e` fails only the shard that raised it. Request-wide conditions are not shard
/// failures here: a cancelled task, a tripped circuit breaker (429) and internal failures
/// (5xx) still fail the whole search.
pub(crate) fn fails_shard(e: &EsError) -> bool {
    (400..500).contains(&e.status)
        && e.status != 429
        && e.kind != "task_cancelled_exception"
        && e.kind != "search_phase_execution_exception"
}

/// The failures ES renders: the first of each (index, type, reason).
fn grouped(failures: &[ShardFailure]) -> Vec<&ShardFailure> {
    let mut seen: Vec<(&str, &str, &str)> = Vec::new();
    let mut out = Vec::new();
    for f in failures {
        let key = (
            f.index.as_str(),
            f.error.kind.as_str(),
            f.error.reason.as_str(),
        );
        if !seen.contains(&key) {
            seen.push(key);
            out.push(f);
        }
    }
    out
}

/// A `ShardSearchFailure` as ES renders it (`shard`, `index`, `node`, `reason`).
fn render(f: &ShardFailure, node_id: &str) -> Value {
    json!({"shard": f.shard, "index": f.index, "node": node_id,
           "reason": f.error.to_cause_json()})
}

/// ES's `guessRootCauses` of one failure: the innermost Elasticsearch exception, which for
/// an expensive-query refusal is the `exception` it wraps.
fn root_cause(e: &EsError) -> EsError {
    match &e.caused_by {
        Some(cause) if lode_query::expensive::is_refusal(e) => (**cause).clone(),
        _ => e.clone(),
    }
}

/// The error of a search whose query phase left failures: "all shards failed" (its cause
/// the first failure's root cause), or with partial results refused "Partial shards failure"
/// (no cause). The status is the first failure's, or a 5xx one's (`SearchPhaseExecutionException#status`).
pub(crate) fn phase_error(failures: &[ShardFailure], all_failed: bool, node_id: &str) -> EsError {
    let groups = grouped(failures);
    let status = failures[1..]
        .iter()
        .rev()
        .map(|f| f.error.status)
        .find(|s| *s >= 500)
        .unwrap_or(failures[0].error.status);
    let reason = if all_failed {
        "all shards failed"
    } else {
        "Partial shards failure"
    };
    let mut outer = EsError::new(status, "search_phase_execution_exception", reason);
    outer.extra.insert("phase".into(), json!("query"));
    outer.extra.insert("grouped".into(), json!(true));
    outer.extra.insert(
        "failed_shards".into(),
        Value::Array(groups.iter().map(|f| render(f, node_id)).collect()),
    );
    outer.root_causes = groups.iter().map(|f| root_cause(&f.error)).collect();
    if all_failed {
        outer.caused_by = Some(Box::new(root_cause(&groups[0].error)));
    }
    outer
}

/// Adds a search's shard failures to its response's `_shards` header.
pub(crate) fn report(out: &mut Value, failures: &[ShardFailure], node_id: &str) {
    if failures.is_empty() {
        return;
    }
    if let Some(h) = out.get_mut("_shards").and_then(Value::as_object_mut) {
        let ok = h.get("successful").and_then(Value::as_u64).unwrap_or(0);
        let failed = h.get("failed").and_then(Value::as_u64).unwrap_or(0);
        let n = failures.len() as u64;
        h.insert("successful".into(), json!(ok.saturating_sub(n)));
        h.insert("failed".into(), json!(failed + n));
        let list = h.entry("failures").or_insert_with(|| json!([]));
        if let Value::Array(a) = list {
            a.extend(grouped(failures).into_iter().map(|f| render(f, node_id)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script_error() -> EsError {
        EsError::bad_request("script_exception", "runtime error")
            .with("lang", "painless")
            .caused_by(EsError::illegal_argument("boom"))
    }

    fn failure(index: &str, shard: usize) -> ShardFailure {
        ShardFailure {
            index: index.into(),
            shard,
            error: script_error(),
        }
    }

    #[test]
    fn every_shard_failed_groups_by_index_and_keeps_the_cause() {
        let e = phase_error(
            &[failure("a", 0), failure("a", 1), failure("b", 0)],
            true,
            "n1",
        );
        let reason = json!({"type": "script_exception", "reason": "runtime error", "lang": "painless",
                            "caused_by": {"type": "illegal_argument_exception", "reason": "boom"}});
        let root =
            json!({"type": "script_exception", "reason": "runtime error", "lang": "painless"});
        assert_eq!(
            e.to_response_json(),
            json!({"error": {
                "root_cause": [root, root],
                "type": "search_phase_execution_exception", "reason": "all shards failed",
                "phase": "query", "grouped": true,
                "failed_shards": [
                    {"shard": 0, "index": "a", "node": "n1", "reason": reason},
                    {"shard": 0, "index": "b", "node": "n1", "reason": reason}],
                "caused_by": reason},
                "status": 400})
        );
    }

    #[test]
    fn refused_partial_results_have_no_cause() {
        let e = phase_error(&[failure("a", 1)], false, "n1");
        let body = e.to_response_json();
        assert_eq!(body["error"]["reason"], "Partial shards failure");
        assert!(body["error"].get("caused_by").is_none());
        assert_eq!(body["error"]["failed_shards"][0]["shard"], 1);
        assert_eq!(body["status"], 400);
    }

    #[test]
    fn failures_join_the_shards_header() {
        let mut out = json!({"_shards": {"total": 3, "successful": 3, "skipped": 0, "failed": 0}});
        report(&mut out, &[failure("a", 0), failure("a", 2)], "n1");
        assert_eq!(out["_shards"]["successful"], 1);
        assert_eq!(out["_shards"]["failed"], 2);
        assert_eq!(out["_shards"]["failures"].as_array().unwrap().len(), 1);
        assert_eq!(out["_shards"]["failures"][0]["index"], "a");
    }

    #[test]
    fn request_wide_errors_are_not_shard_failures() {
        assert!(fails_shard(&script_error()));
        assert!(!fails_shard(&EsError::internal("x")));
        assert!(!fails_shard(&EsError::new(
            429,
            "circuit_breaking_exception",
            "x"
        )));
        assert!(!fails_shard(&EsError::bad_request(
            "task_cancelled_exception",
            "x"
        )));
    }
}
