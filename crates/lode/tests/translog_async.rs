//! `index.translog.durability: async`: writes are acknowledged before they are fsynced, and a
//! background sync runs every `index.translog.sync_interval` (minimum 100ms). Elasticsearch's
//! contract: a crash loses at most the writes of the last interval, so whatever was
//! acknowledged more than one interval before the crash survives it. Also `_stats`' translog
//! section: `operations` / `uncommitted_operations` count what a recovery would replay, and
//! `fsync_total` counts fsyncs (one per request with `request` durability, far fewer with
//! `async`).

mod common;

use common::Node;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn translog_stats(n: &Node, index: &str) -> Value {
    let (s, v) = n.req("GET", &format!("/{index}/_stats/translog"), None);
    assert_eq!(s, 200, "{v}");
    let t = v["indices"][index]["primaries"]["translog"].clone();
    assert!(t.is_object(), "no translog section: {v}");
    t
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("translog stat [{k}] missing or not a number: {v}"))
}

#[test]
fn sync_interval_below_100ms_is_rejected() {
    let n = Node::start();
    let (s, v) = n.req(
        "PUT",
        "/too_fast",
        Some(&json!({"settings": {"index.translog.durability": "async", "index.translog.sync_interval": "50ms"}})),
    );
    assert_eq!(s, 400, "{v}");
    assert_eq!(v["error"]["type"], "illegal_argument_exception", "{v}");
    assert!(
        v["error"]["reason"]
            .as_str()
            .unwrap()
            .contains(">= [100ms]"),
        "{v}"
    );
    let (s, _) = n.req("GET", "/too_fast", None);
    assert_eq!(s, 404, "a rejected index must not be created");
    // The same check on a settings update of an existing index.
    let (s, v) = n.req(
        "PUT",
        "/ok",
        Some(&json!({"settings": {"index.translog.durability": "async", "index.translog.sync_interval": "100ms"}})),
    );
    assert_eq!(s, 200, "100ms is the minimum and allowed: {v}");
    let (s, v) = n.req(
        "PUT",
        "/ok/_settings",
        Some(&json!({"index.translog.sync_interval": "50ms"})),
    );
    assert_eq!(s, 400, "{v}");
    let (_, v) = n.req("GET", "/ok/_settings", None);
    assert_eq!(
        v["ok"]["settings"]["index"]["translog"]["sync_interval"], "100ms",
        "a rejected update must leave the setting alone: {v}"
    );
    // An unknown durability value.
    let (s, v) = n.req(
        "PUT",
        "/bad_durability",
        Some(&json!({"settings": {"index.translog.durability": "sometimes"}})),
    );
    assert_eq!(s, 400, "{v}");
}

#[test]
fn async_writes_older_than_the_sync_interval_survive_sigkill() {
    const N: u64 = 60;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut n = Node::start_on(&data, &[]);
    let (s, v) = n.req(
        "PUT",
        "/async",
        Some(&json!({
            "settings": {
                "number_of_shards": 1,
                "refresh_interval": "-1",
                "translog": {"durability": "async", "sync_interval": "1s"}
            },
            "mappings": {"properties": {"i": {"type": "long"}}}
        })),
    );
    assert_eq!(s, 200, "{v}");
    let t0 = translog_stats(&n, "async");
    assert_eq!(u(&t0, "uncommitted_operations"), 0, "{t0}");
    let fsyncs0 = u(&t0, "fsync_total");

    let mut bulk = String::new();
    for i in 0..N {
        if i % 2 == 0 {
            let (s, v) = n.req("PUT", &format!("/async/_doc/{i}"), Some(&json!({"i": i})));
            assert_eq!(s, 201, "{v}");
        } else {
            bulk.push_str(&format!(
                "{{\"index\":{{\"_id\":\"{i}\"}}}}\n{{\"i\":{i}}}\n"
            ));
        }
    }
    let (s, v) = n.bulk("/async/_bulk", &bulk);
    assert_eq!((s, &v["errors"]), (200, &json!(false)), "{v}");
    let t1 = translog_stats(&n, "async");
    assert_eq!(u(&t1, "operations"), N, "{t1}");
    assert_eq!(u(&t1, "uncommitted_operations"), N, "{t1}");
    assert!(
        u(&t1, "uncommitted_size_in_bytes") > u(&t0, "uncommitted_size_in_bytes"),
        "{t0} -> {t1}"
    );

    // Wait more than one sync interval; then a background fsync must have happened. (Polling
    // for the counter, bounded, rather than asserting on timing: the interval is the minimum
    // wait, not a deadline.)
    let start = Instant::now();
    std::thread::sleep(Duration::from_millis(2500));
    let t2 = loop {
        let t = translog_stats(&n, "async");
        if u(&t, "fsync_total") > fsyncs0 || start.elapsed() > Duration::from_secs(30) {
            break t;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        u(&t2, "fsync_total") > fsyncs0,
        "no translog fsync in {:?} with sync_interval 1s: {t2}",
        start.elapsed()
    );
    // The ops are durable but not committed: a recovery would still replay them.
    assert_eq!(u(&t2, "uncommitted_operations"), N, "{t2}");

    n.kill();
    let n = Node::start_on(&data, &[]);
    for i in 0..N {
        let (s, v) = n.req("GET", &format!("/async/_doc/{i}"), None);
        assert_eq!(
            (s, &v["_source"]),
            (200, &json!({"i": i})),
            "doc {i}, acknowledged {:?} before the crash, is lost",
            start.elapsed()
        );
    }
    n.req("POST", "/async/_refresh", None);
    let (_, v) = n.req("GET", "/async/_count", None);
    assert_eq!(v["count"].as_u64(), Some(N), "{v}");
    // Recovery replayed and flushed: nothing is left to replay.
    let t3 = translog_stats(&n, "async");
    assert_eq!(u(&t3, "uncommitted_operations"), 0, "{t3}");
    // Still async after the restart, and still writable.
    let (_, v) = n.req("GET", "/async/_settings", None);
    assert_eq!(
        v["async"]["settings"]["index"]["translog"]["durability"], "async",
        "{v}"
    );
    let (s, v) = n.req("PUT", "/async/_doc/new", Some(&json!({"i": -1})));
    assert_eq!(s, 201, "{v}");
}

#[test]
fn request_durability_fsyncs_before_every_acknowledgement() {
    // N sequential writes under `request` durability: each response waits for its own fsync,
    // and no record was appended before the previous response, so there are >= N fsyncs.
    const N: u64 = 10;
    let n = Node::start();
    let (s, v) = n.req(
        "PUT",
        "/req",
        Some(&json!({"settings": {"number_of_shards": 1, "refresh_interval": "-1"}})),
    );
    assert_eq!(s, 200, "{v}");
    let f0 = u(&translog_stats(&n, "req"), "fsync_total");
    for i in 0..N {
        let (s, v) = n.req("PUT", &format!("/req/_doc/{i}"), Some(&json!({"i": i})));
        assert_eq!(s, 201, "{v}");
    }
    let t = translog_stats(&n, "req");
    assert!(
        u(&t, "fsync_total") >= f0 + N,
        "{N} writes, fsyncs {f0} -> {t}"
    );
    assert_eq!(u(&t, "uncommitted_operations"), N, "{t}");
    assert_eq!(u(&t, "operations"), N, "{t}");
    // A flush commits: nothing left to replay; the fsync counter only grows.
    let (s, v) = n.req("POST", "/req/_flush", None);
    assert_eq!(s, 200, "{v}");
    let t2 = translog_stats(&n, "req");
    assert_eq!(u(&t2, "uncommitted_operations"), 0, "{t2}");
    assert!(u(&t2, "fsync_total") >= u(&t, "fsync_total"), "{t} -> {t2}");

    // Switching a live index to async and back (both are dynamic settings).
    let (s, v) = n.req(
        "PUT",
        "/req/_settings",
        Some(&json!({"index.translog.durability": "async"})),
    );
    assert_eq!(s, 200, "{v}");
    let (s, v) = n.req("PUT", "/req/_doc/a", Some(&json!({"i": 100})));
    assert_eq!(s, 201, "{v}");
    let (s, v) = n.req(
        "PUT",
        "/req/_settings",
        Some(&json!({"index.translog.durability": "request"})),
    );
    assert_eq!(s, 200, "{v}");
}
