//! `_version` and `_seq_no` across restarts. Elasticsearch keeps both per document forever
//! (they are stored with it), and a shard's sequence numbers never go backwards: after any
//! restart (clean or crash) a new operation gets a `_seq_no` above every one used before.

mod common;

use common::Node;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

const INDEX: &str = "ver";

/// `(version, seq_no, source)` of each live id, as GET reports them.
type Snapshot = BTreeMap<String, (u64, u64, Value)>;

fn create(n: &Node, shards: u32) {
    let (s, v) = n.req(
        "PUT",
        &format!("/{INDEX}"),
        Some(&json!({
            "settings": {"number_of_shards": shards, "refresh_interval": "-1"},
            "mappings": {"properties": {"v": {"type": "long"}, "t": {"type": "keyword"}}}
        })),
    );
    assert_eq!(s, 200, "{v}");
}

fn ok(r: (u16, Value), what: &str) -> Value {
    assert!((200..300).contains(&r.0), "{what}: {} {}", r.0, r.1);
    r.1
}

/// A history with overwrites, updates, deletes and a re-create after a delete; returns the
/// highest `_seq_no` any operation got.
fn history(n: &Node) -> u64 {
    let mut max_seq = 0;
    let mut track = |v: Value| {
        max_seq = max_seq.max(v["_seq_no"].as_u64().unwrap());
        v
    };
    for k in 0..3 {
        let v = track(ok(
            n.req("PUT", &format!("/{INDEX}/_doc/a"), Some(&json!({"v": k}))),
            "index a",
        ));
        assert_eq!(v["_version"], k + 1);
    }
    track(ok(
        n.req("PUT", &format!("/{INDEX}/_doc/b"), Some(&json!({"v": 10}))),
        "index b",
    ));
    track(ok(
        n.req("PUT", &format!("/{INDEX}/_doc/c"), Some(&json!({"v": 20}))),
        "index c",
    ));
    track(ok(
        n.req("DELETE", &format!("/{INDEX}/_doc/c"), None),
        "delete c",
    ));
    track(ok(
        n.req("PUT", &format!("/{INDEX}/_doc/d"), Some(&json!({"v": 30}))),
        "index d",
    ));
    let v = track(ok(
        n.req(
            "POST",
            &format!("/{INDEX}/_update/d"),
            Some(&json!({"doc": {"t": "updated"}})),
        ),
        "update d",
    ));
    assert_eq!(v["_version"], 2);
    track(ok(
        n.req("PUT", &format!("/{INDEX}/_doc/e"), Some(&json!({"v": 40}))),
        "index e",
    ));
    track(ok(
        n.req("DELETE", &format!("/{INDEX}/_doc/e"), None),
        "delete e",
    ));
    let v = track(ok(
        n.req("PUT", &format!("/{INDEX}/_doc/e"), Some(&json!({"v": 41}))),
        "re-create e",
    ));
    // Within gc_deletes the delete's tombstone still counts: version 1 → delete 2 → 3.
    assert_eq!(v["_version"], 3, "{v}");
    // External versioning keeps the caller's version.
    track(ok(
        n.req(
            "PUT",
            &format!("/{INDEX}/_doc/f?version=42&version_type=external"),
            Some(&json!({"v": 50})),
        ),
        "external f",
    ));
    // A bulk touching several ids.
    let mut bulk = String::new();
    for i in 0..20 {
        bulk.push_str(&format!(
            "{{\"index\":{{\"_id\":\"g{i}\"}}}}\n{{\"v\":{i}}}\n"
        ));
    }
    let v = ok(n.bulk(&format!("/{INDEX}/_bulk"), &bulk), "bulk");
    assert_eq!(v["errors"], false, "{v}");
    for item in v["items"].as_array().unwrap() {
        track(item["index"].clone());
    }
    max_seq
}

fn ids() -> Vec<String> {
    let mut ids: Vec<String> = ["a", "b", "c", "d", "e", "f"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    ids.extend((0..20).map(|i| format!("g{i}")));
    ids
}

fn snapshot(n: &Node) -> Snapshot {
    let mut out = Snapshot::new();
    for id in ids() {
        let (s, v) = n.req("GET", &format!("/{INDEX}/_doc/{id}"), None);
        match s {
            200 => {
                assert_eq!(v["_primary_term"], 1, "{v}");
                out.insert(
                    id,
                    (
                        v["_version"].as_u64().unwrap(),
                        v["_seq_no"].as_u64().unwrap(),
                        v["_source"].clone(),
                    ),
                );
            }
            404 => assert_eq!(v["found"], false, "{v}"),
            _ => panic!("GET {id}: {s} {v}"),
        }
    }
    out
}

/// The snapshot as a search (after refresh) reports it, with `version` and `seq_no_primary_term`.
fn search_snapshot(n: &Node) -> Snapshot {
    ok(
        n.req("POST", &format!("/{INDEX}/_refresh"), None),
        "refresh",
    );
    let v = ok(
        n.req(
            "POST",
            &format!("/{INDEX}/_search"),
            Some(&json!({"size": 100, "version": true, "seq_no_primary_term": true})),
        ),
        "search",
    );
    v["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["_id"].as_str().unwrap().to_string(),
                (
                    h["_version"].as_u64().unwrap(),
                    h["_seq_no"].as_u64().unwrap(),
                    h["_source"].clone(),
                ),
            )
        })
        .collect()
}

/// Restarts (by `how`) and checks that versions and seq_nos are kept and that new writes
/// continue the sequence on every shard.
fn check_restart(data: &Path, shards: u32, how: &str) {
    let mut n = Node::start_on(data, &[]);
    create(&n, shards);
    let max_seq = history(&n);
    let before = snapshot(&n);
    assert_eq!(before.len(), 25, "{before:?}");
    assert_eq!(before["a"].0, 3);
    assert_eq!(before["d"].2, json!({"v": 30, "t": "updated"}));
    assert_eq!(before["e"].0, 3);
    assert_eq!(before["f"].0, 42);
    match how {
        "flush+sigterm" => {
            ok(n.req("POST", &format!("/{INDEX}/_flush"), None), "flush");
            n.stop();
        }
        "sigterm" => n.stop(),
        "sigkill" => n.kill(),
        "refresh+sigkill" => {
            ok(
                n.req("POST", &format!("/{INDEX}/_refresh"), None),
                "refresh",
            );
            n.kill();
        }
        _ => unreachable!(),
    }
    let n = Node::start_on(data, &[]);
    let after = snapshot(&n);
    assert_eq!(after, before, "{how}: realtime GET after restart");
    assert_eq!(search_snapshot(&n), before, "{how}: search after restart");
    // New writes: versions continue per document, seq_nos continue per shard. With one shard
    // every new seq_no is above the old maximum; with several, each shard's sequence continues,
    // which for a document means a seq_no above its own previous one.
    let v = ok(
        n.req("PUT", &format!("/{INDEX}/_doc/a"), Some(&json!({"v": 99}))),
        "overwrite a",
    );
    assert_eq!(v["_version"], 4, "{how}: {v}");
    assert!(v["_seq_no"].as_u64().unwrap() > before["a"].1, "{how}: {v}");
    for (id, (version, seq_no, _)) in &before {
        let v = ok(
            n.req(
                "POST",
                &format!("/{INDEX}/_update/{id}"),
                Some(&json!({"doc": {"t": "after-restart"}})),
            ),
            "update after restart",
        );
        let expected_version = if id == "a" { 5 } else { version + 1 };
        assert_eq!(v["_version"], expected_version, "{how}: [{id}] {v}");
        let new_seq = v["_seq_no"].as_u64().unwrap();
        assert!(
            new_seq > *seq_no,
            "{how}: [{id}] seq_no {new_seq} after {seq_no}"
        );
        if shards == 1 {
            assert!(
                new_seq > max_seq,
                "{how}: [{id}] seq_no {new_seq} reuses one ≤ {max_seq}"
            );
        }
    }
    // `if_seq_no` optimistic concurrency works with the restored seq_nos.
    let cur = snapshot(&n)["b"].clone();
    let (s, v) = n.req(
        "PUT",
        &format!("/{INDEX}/_doc/b?if_seq_no={}&if_primary_term=1", cur.1),
        Some(&json!({"v": 11})),
    );
    assert_eq!(s, 200, "{how}: {v}");
    let (s, v) = n.req(
        "PUT",
        &format!("/{INDEX}/_doc/b?if_seq_no={}&if_primary_term=1", cur.1),
        Some(&json!({"v": 12})),
    );
    assert_eq!(s, 409, "{how}: stale if_seq_no accepted: {v}");
}

#[test]
fn versions_survive_flush_and_clean_restart() {
    let tmp = tempfile::tempdir().unwrap();
    check_restart(&tmp.path().join("data"), 1, "flush+sigterm");
}

#[test]
fn versions_survive_clean_restart_without_flush() {
    let tmp = tempfile::tempdir().unwrap();
    check_restart(&tmp.path().join("data"), 1, "sigterm");
}

#[test]
fn versions_survive_sigkill() {
    let tmp = tempfile::tempdir().unwrap();
    check_restart(&tmp.path().join("data"), 1, "sigkill");
}

#[test]
fn versions_survive_refresh_then_sigkill() {
    let tmp = tempfile::tempdir().unwrap();
    check_restart(&tmp.path().join("data"), 1, "refresh+sigkill");
}

#[test]
fn versions_survive_restarts_with_three_shards() {
    for how in ["flush+sigterm", "sigkill"] {
        let tmp = tempfile::tempdir().unwrap();
        check_restart(&tmp.path().join("data"), 3, how);
    }
}

/// A mapping update after a flush, then a crash: the next write must still get a seq_no above
/// every one used before.
fn seq_no_after_mapping_update_and_crash(dynamic: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut n = Node::start_on(&data, &[]);
    create(&n, 1);
    let mut max_seq = 0;
    for i in 0..5 {
        let v = ok(
            n.req("PUT", &format!("/{INDEX}/_doc/{i}"), Some(&json!({"v": i}))),
            "index",
        );
        max_seq = max_seq.max(v["_seq_no"].as_u64().unwrap());
    }
    ok(n.req("POST", &format!("/{INDEX}/_flush"), None), "flush");
    if dynamic {
        // A new field through dynamic mapping: the write itself is in the translog.
        let v = ok(
            n.req(
                "PUT",
                &format!("/{INDEX}/_doc/new"),
                Some(&json!({"fresh": "field"})),
            ),
            "dynamic",
        );
        max_seq = max_seq.max(v["_seq_no"].as_u64().unwrap());
    } else {
        ok(
            n.req(
                "PUT",
                &format!("/{INDEX}/_mapping"),
                Some(&json!({"properties": {"added": {"type": "keyword"}}})),
            ),
            "put mapping",
        );
    }
    n.kill();
    let n = Node::start_on(&data, &[]);
    let v = ok(
        n.req("PUT", &format!("/{INDEX}/_doc/z"), Some(&json!({"v": 1}))),
        "write after restart",
    );
    let seq = v["_seq_no"].as_u64().unwrap();
    assert!(
        seq > max_seq,
        "seq_no {seq} after restart reuses a sequence number (max before the crash: {max_seq})"
    );
    let v = ok(
        n.req("PUT", &format!("/{INDEX}/_doc/0"), Some(&json!({"v": 100}))),
        "overwrite after restart",
    );
    assert_eq!(v["_version"], 2, "{v}");
    assert!(v["_seq_no"].as_u64().unwrap() > seq, "{v}");
}

#[test]
fn seq_no_continues_after_put_mapping_and_crash() {
    seq_no_after_mapping_update_and_crash(false);
}

#[test]
fn seq_no_continues_after_dynamic_mapping_and_crash() {
    seq_no_after_mapping_update_and_crash(true);
}
