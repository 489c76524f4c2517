//! Mapping updates (new fields) and what they leave on disk: documents indexed under a grown
//! mapping survive clean and crash restarts and stay findable by the new fields, and segments
//! written before a field existed still merge with newer ones (Elasticsearch merges any
//! segments of a shard, whatever the mapping was when they were written).

mod common;

use common::Node;
use serde_json::{json, Value};

const INDEX: &str = "grow";

fn ok(r: (u16, Value), what: &str) -> Value {
    assert!((200..300).contains(&r.0), "{what}: {} {}", r.0, r.1);
    r.1
}

fn count(n: &Node, q: Value) -> u64 {
    let v = ok(
        n.req(
            "POST",
            &format!("/{INDEX}/_count"),
            Some(&json!({ "query": q })),
        ),
        "count",
    );
    v["count"].as_u64().unwrap()
}

/// Three segments written before fields `b` (text, dynamic) and `c` (keyword, PUT _mapping)
/// exist, then documents using them.
fn grow(n: &Node) {
    ok(
        n.req(
            "PUT",
            &format!("/{INDEX}"),
            Some(&json!({
                "settings": {"number_of_shards": 1, "refresh_interval": "-1"},
                "mappings": {"properties": {"a": {"type": "text"}}}
            })),
        ),
        "create",
    );
    for i in 0..3 {
        ok(
            n.req(
                "PUT",
                &format!("/{INDEX}/_doc/{i}?refresh=true"),
                Some(&json!({"a": "hello world"})),
            ),
            "old doc",
        );
    }
    ok(
        n.req(
            "PUT",
            &format!("/{INDEX}/_doc/3?refresh=true"),
            Some(&json!({"a": "hello", "b": "brand new text field"})),
        ),
        "dynamic field",
    );
    ok(
        n.req(
            "PUT",
            &format!("/{INDEX}/_mapping"),
            Some(&json!({"properties": {"c": {"type": "keyword"}}})),
        ),
        "put mapping",
    );
    ok(
        n.req(
            "PUT",
            &format!("/{INDEX}/_doc/4"),
            Some(&json!({"a": "bye", "c": "tagged"})),
        ),
        "explicit field",
    );
}

fn check(n: &Node, what: &str) {
    ok(
        n.req("POST", &format!("/{INDEX}/_refresh"), None),
        "refresh",
    );
    assert_eq!(count(n, json!({"match_all": {}})), 5, "{what}");
    assert_eq!(count(n, json!({"match": {"a": "hello"}})), 4, "{what}");
    assert_eq!(count(n, json!({"match": {"b": "new"}})), 1, "{what}");
    assert_eq!(count(n, json!({"term": {"c": "tagged"}})), 1, "{what}");
    assert_eq!(count(n, json!({"exists": {"field": "b"}})), 1, "{what}");
    let v = ok(n.req("GET", &format!("/{INDEX}/_mapping"), None), "mapping");
    let props = &v[INDEX]["mappings"]["properties"];
    assert_eq!(props["b"]["type"], "text", "{what}: {v}");
    assert_eq!(props["c"]["type"], "keyword", "{what}: {v}");
}

#[test]
fn grown_mapping_survives_sigkill_and_sigterm() {
    for crash in [true, false] {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        let mut n = Node::start_on(&data, &[]);
        grow(&n);
        let what = if crash {
            "after SIGKILL"
        } else {
            "after SIGTERM"
        };
        if crash {
            n.kill();
        } else {
            n.stop();
        }
        let n = Node::start_on(&data, &[]);
        check(&n, what);
        // And the grown index still takes documents with the new fields.
        ok(
            n.req(
                "PUT",
                &format!("/{INDEX}/_doc/5?refresh=true"),
                Some(&json!({"b": "newer", "c": "tagged"})),
            ),
            "write after restart",
        );
        assert_eq!(count(&n, json!({"term": {"c": "tagged"}})), 2, "{what}");
    }
}

#[test]
fn segments_from_before_a_new_field_still_merge() {
    let n = Node::start();
    grow(&n);
    ok(
        n.req("POST", &format!("/{INDEX}/_refresh"), None),
        "refresh",
    );
    let v = ok(
        n.req(
            "POST",
            &format!("/{INDEX}/_forcemerge?max_num_segments=1"),
            None,
        ),
        "forcemerge",
    );
    assert_eq!(v["_shards"]["failed"], 0, "{v}");
    let v = ok(
        n.req("GET", &format!("/{INDEX}/_segments"), None),
        "segments",
    );
    let segments = v["indices"][INDEX]["shards"]["0"][0]["segments"]
        .as_object()
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(segments.len(), 1, "{v}");
    check(&n, "after forcemerge");
}
