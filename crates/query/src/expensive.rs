//! `search.allow_expensive_queries` (ES's `SearchService.ALLOW_EXPENSIVE_QUERIES`, dynamic,
//! default `true`). When `false`, ES refuses while the shard builds the query:
//!
//! - `script` and `script_score` queries (`ScriptQueryBuilder`, `ScriptScoreQueryBuilder`)
//!   and `nested` (`NestedQueryBuilder`, "[joining]"), before their inner query or path;
//! - on string fields (`StringFieldType`: text, keyword, match_only_text,
//!   search_as_you_type, flattened, `_routing`, `_ignored`): `fuzzy`, `prefix`, `wildcard`,
//!   `regexp` and `range` queries, however they are reached (the DSL query, `match` with
//!   `fuzziness`, `match_bool_prefix`, `query_string`, `simple_query_string`), except a
//!   prefix the field's prefix index holds (`index_prefixes`, search_as_you_type);
//! - any query on a field searched through its doc values alone
//!   (`MappedFieldType#failIfNotIndexedNorDocValuesFallback`), `exists` aside;
//! - any query on a runtime field (`AbstractScriptFieldType#applyScriptContext`).
//!
//! Each is an `ElasticsearchException` (type `exception`), which
//! `SearchExecutionContext#toQuery` wraps as a 400 `query_shard_exception`
//! "failed to create query: ...". The `lenient` query parsers catch it as they catch any
//! refusal of a field (`MatchQueryParser`, `QueryStringQueryParser`).

use lode_engine::EsError;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};

const KEY: &str = "search.allow_expensive_queries";

/// The node's setting, read once per request into [`crate::QueryContext`]: an atomic, so the
/// search path takes no lock for it.
static ALLOWED: AtomicBool = AtomicBool::new(true);

/// Sets `search.allow_expensive_queries` (called when the cluster settings change).
pub fn set_allow_expensive_queries(allowed: bool) {
    ALLOWED.store(allowed, Ordering::Relaxed);
}

/// The current `search.allow_expensive_queries`.
pub fn allow_expensive_queries() -> bool {
    ALLOWED.load(Ordering::Relaxed)
}

/// ES's `ElasticsearchException` `why` as the shard reports it.
fn refused(why: String) -> EsError {
    EsError::bad_request(
        "query_shard_exception",
        format!("failed to create query: {why}"),
    )
    .caused_by(EsError::new(500, "exception", why))
}

/// `[script]`, `[script score]`, `[joining]`, `[fuzzy]`, `[wildcard]`, `[regexp]`.
pub fn query(name: &str) -> EsError {
    refused(format!(
        "[{name}] queries cannot be executed when '{KEY}' is set to false."
    ))
}

/// `StringFieldType#prefixQuery`.
pub fn prefix() -> EsError {
    refused(format!(
        "[prefix] queries cannot be executed when '{KEY}' is set to false. For optimised prefix \
         queries on text fields please enable [index_prefixes]."
    ))
}

/// `StringFieldType#rangeQuery`.
pub fn range() -> EsError {
    refused(format!(
        "[range] queries on [text] or [keyword] fields cannot be executed when '{KEY}' is set to \
         false."
    ))
}

/// `MappedFieldType#failIfNotIndexedNorDocValuesFallback`.
pub fn doc_values_only(path: &str) -> EsError {
    refused(format!(
        "Cannot search on field [{path}] since it is not indexed and '{KEY}' is set to false."
    ))
}

/// `AbstractScriptFieldType#applyScriptContext`.
pub fn runtime_field() -> EsError {
    refused(format!(
        "queries cannot be executed against runtime fields while [{KEY}] is set to [false]."
    ))
}

/// Whether `err` is one of these refusals (which `lenient` queries turn into no match).
pub fn is_refusal(err: &EsError) -> bool {
    err.kind == "query_shard_exception"
        && err
            .caused_by
            .as_ref()
            .is_some_and(|c| c.kind == "exception")
        && err.reason.contains(KEY)
}

/// Whether a text field's `index_prefixes` holds `prefix` as one term of its prefix field
/// (ES's `PrefixFieldType#accept`: `min_chars - 1` to `max_chars` UTF-16 units; defaults 2
/// and 5), read from the mapping as given.
pub fn index_prefixes_hold(mapping: &Value, path: &str, prefix: &str) -> bool {
    let Some(cfg) = field_mapping(mapping, path).and_then(|f| f.get("index_prefixes")) else {
        return false;
    };
    let bound = |k: &str, default: u64| cfg.get(k).and_then(Value::as_u64).unwrap_or(default);
    let len = prefix.encode_utf16().count() as u64;
    len + 1 >= bound("min_chars", 2) && len <= bound("max_chars", 5)
}

/// A field's mapping in the mapping JSON: `a.b` under `properties` (objects) or `fields`
/// (multi-fields).
fn field_mapping<'m>(mapping: &'m Value, path: &str) -> Option<&'m Value> {
    fn walk<'m>(node: &'m Value, parts: &[&str]) -> Option<&'m Value> {
        let (first, rest) = parts.split_first()?;
        for section in ["properties", "fields"] {
            let Some(child) = node.get(section).and_then(|s| s.get(*first)) else {
                continue;
            };
            if rest.is_empty() {
                return Some(child);
            }
            if let Some(found) = walk(child, rest) {
                return Some(found);
            }
        }
        None
    }
    let parts: Vec<&str> = path.split('.').collect();
    // Dotted names (`"a.b": {...}`) are expanded by ES when mapped; Lode's mapping JSON is
    // the expanded form.
    walk(mapping, &parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refusals_are_es_shard_exceptions_caused_by_an_elasticsearch_exception() {
        let e = query("fuzzy");
        assert_eq!((e.status, e.kind.as_str()), (400, "query_shard_exception"));
        assert_eq!(
            e.reason,
            "failed to create query: [fuzzy] queries cannot be executed when \
             'search.allow_expensive_queries' is set to false."
        );
        let cause = e.caused_by.as_ref().unwrap();
        assert_eq!(cause.kind, "exception");
        assert_eq!(
            cause.reason,
            "[fuzzy] queries cannot be executed when 'search.allow_expensive_queries' is set to false."
        );
        assert!(is_refusal(&e));
        assert!(is_refusal(&doc_values_only("f")));
        assert!(!is_refusal(&EsError::illegal_argument("x")));
    }

    #[test]
    fn index_prefixes_bounds_follow_prefix_field_type_accept() {
        let m = json!({"properties": {
            "t": {"type": "text", "index_prefixes": {}},
            "u": {"type": "text", "index_prefixes": {"min_chars": 3, "max_chars": 4}},
            "o": {"properties": {"k": {"type": "keyword", "fields": {
                "t": {"type": "text", "index_prefixes": {}}
            }}}},
            "p": {"type": "text"}
        }});
        assert!(index_prefixes_hold(&m, "t", "o"));
        assert!(index_prefixes_hold(&m, "t", "outsi"));
        assert!(!index_prefixes_hold(&m, "t", "outsid"));
        assert!(!index_prefixes_hold(&m, "t", ""));
        assert!(!index_prefixes_hold(&m, "u", "o"));
        assert!(index_prefixes_hold(&m, "u", "ou"));
        assert!(index_prefixes_hold(&m, "o.k.t", "out"));
        assert!(!index_prefixes_hold(&m, "p", "out"));
        assert!(!index_prefixes_hold(&m, "missing", "out"));
    }
}
