//! Named queries (`_name`), as ES's `SearchExecutionContext#addNamedQuery`: every query of a
//! parsed tree that carries a `_name` is also kept on its own, so the fetch phase can tell
//! for each hit which of them match it (`matched_queries`) by running each one alone.
//!
//! The `_name` key is one setter shared by every query's declaration (`parse::common`), which
//! sees only the query under construction; the names are therefore gathered on the side while
//! a tree is parsed: each `parse_query` call opens a slot that its own `_name` fills, and on
//! success the query is recorded under that name.

use crate::parse::Query;
use lode_engine::EsResult;
use serde_json::Value;
use std::cell::RefCell;

/// A query of the tree that carries a `_name`, as parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedQuery {
    pub name: String,
    pub query: Query,
}

#[derive(Default)]
struct Gathering {
    /// One slot per `parse_query` under way, innermost last.
    open: Vec<Option<String>>,
    /// The named queries parsed so far, in the order they were completed.
    found: Vec<NamedQuery>,
}

thread_local! {
    static GATHERING: RefCell<Gathering> = RefCell::default();
}

/// Records `name` for the query being parsed (the innermost `parse_query` under way).
pub(crate) fn set_name(name: String) {
    GATHERING.with(|g| {
        if let Some(slot) = g.borrow_mut().open.last_mut() {
            *slot = Some(name);
        }
    });
}

/// Runs `parse` (one query object) inside its own naming slot, recording the result under
/// the name its `_name` gave, if any. The slot is closed whether parsing succeeded or not.
pub(crate) fn in_slot(parse: impl FnOnce() -> EsResult<Query>) -> EsResult<Query> {
    GATHERING.with(|g| g.borrow_mut().open.push(None));
    let out = parse();
    GATHERING.with(|g| {
        let mut g = g.borrow_mut();
        let name = g.open.pop().flatten();
        if let (Some(name), Ok(q)) = (name, &out) {
            g.found.push(NamedQuery {
                name,
                query: q.clone(),
            });
        }
        if g.open.is_empty() {
            // a top-level parse keeps nothing behind for the thread's next request
            g.found.clear();
        }
    });
    out
}

/// Runs `parse` and returns, with its result, the named queries completed meanwhile (a part
/// of a tree being parsed, such as a nested query's inner query, or a whole tree).
pub(crate) fn within<T>(parse: impl FnOnce() -> EsResult<T>) -> EsResult<(T, Vec<NamedQuery>)> {
    // The frame's own slot keeps a top-level parse from clearing what it gathers; no `_name`
    // reaches it, since every query object opens its slot inside.
    let start = GATHERING.with(|g| {
        let mut g = g.borrow_mut();
        g.open.push(None);
        g.found.len()
    });
    let out = parse();
    let found = GATHERING.with(|g| {
        let mut g = g.borrow_mut();
        g.open.pop();
        let found = g.found.get(start..).map(<[_]>::to_vec).unwrap_or_default();
        if g.open.is_empty() {
            g.found.clear();
        }
        found
    });
    Ok((out?, found))
}

/// Parses a query and returns it with its named queries (anywhere in the tree, a `wrapper`'s
/// and a `function_score` function's filter included). A later query of the same name
/// replaces an earlier one, as ES's map of named queries does.
pub fn parse_query_named(v: &Value) -> EsResult<(Query, Vec<NamedQuery>)> {
    let (q, found) = within(|| crate::parse_query(v))?;
    Ok((q, dedup(found)))
}

/// Keeps the last query given under each name, in the order of first appearance.
pub fn dedup(found: Vec<NamedQuery>) -> Vec<NamedQuery> {
    let mut out: Vec<NamedQuery> = Vec::with_capacity(found.len());
    for nq in found {
        match out.iter_mut().find(|o| o.name == nq.name) {
            Some(o) => o.query = nq.query,
            None => out.push(nq),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(v: Value) -> Vec<String> {
        parse_query_named(&v)
            .unwrap()
            .1
            .into_iter()
            .map(|n| n.name)
            .collect()
    }

    #[test]
    fn every_named_query_of_the_tree_in_completion_order() {
        let q = json!({"bool": {
            "_name": "outer",
            "should": [
                {"term": {"f": {"value": "a", "_name": "ta"}}},
                {"constant_score": {"filter": {"range": {"n": {"gte": 1, "_name": "r"}}}, "_name": "cs"}},
            ],
            "filter": {"function_score": {"query": {"exists": {"field": "x", "_name": "ex"}},
                        "functions": [{"filter": {"ids": {"values": ["1"], "_name": "ids"}}, "weight": 2}]}},
        }});
        assert_eq!(names(q), ["ta", "r", "cs", "ex", "ids", "outer"]);
        // numbers and booleans are their text, null no name
        assert_eq!(names(json!({"match_all": {"_name": 7}})), ["7"]);
        assert!(names(json!({"match_all": {"_name": null}})).is_empty());
    }

    #[test]
    fn a_later_name_replaces_an_earlier_one() {
        let (_, found) = parse_query_named(&json!({"bool": {"should": [
            {"term": {"f": {"value": "a", "_name": "n"}}},
            {"term": {"f": {"value": "b", "_name": "m"}}},
            {"term": {"f": {"value": "c", "_name": "n"}}},
        ]}}))
        .unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].name, "n");
        assert!(matches!(&found[0].query, Query::Term(t) if t.value == json!("c")));
    }

    #[test]
    fn a_nested_query_keeps_its_own_and_a_wrapper_is_read() {
        let (q, found) = parse_query_named(&json!({"nested": {"path": "p", "_name": "nest",
            "query": {"term": {"p.k": {"value": "v", "_name": "inner"}}}}}))
        .unwrap();
        assert_eq!(
            found.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(),
            ["inner", "nest"]
        );
        let Query::Nested { named, .. } = q else {
            panic!("nested")
        };
        assert_eq!(named.len(), 1);
        assert_eq!(named[0].name, "inner");
        use base64::Engine as _;
        let inner = base64::engine::general_purpose::STANDARD
            .encode(r#"{"term": {"f": {"value": "x", "_name": "wrapped"}}}"#);
        assert_eq!(names(json!({"wrapper": {"query": inner}})), ["wrapped"]);
    }

    #[test]
    fn a_failed_parse_leaves_nothing_for_the_next() {
        assert!(parse_query_named(&json!({"bool": {"should": [
            {"term": {"f": {"value": "a", "_name": "lost"}}},
            {"nope": {}},
        ]}}))
        .is_err());
        assert!(crate::parse_query(&json!({"term": {"f": {"value": "a", "_name": "x"}}})).is_ok());
        assert_eq!(names(json!({"match_all": {"_name": "only"}})), ["only"]);
        GATHERING.with(|g| {
            let g = g.borrow();
            assert!(g.open.is_empty() && g.found.is_empty());
        });
    }
}
