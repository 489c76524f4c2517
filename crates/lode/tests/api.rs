//! Integration tests: a real `lode serve` driven over HTTP, every expectation taken from
//! Elasticsearch's documented behaviour.

mod common;

use common::Node;
use serde_json::{json, Value};

fn call(method: &str, url: &str, body: Option<&str>) -> (u16, Value) {
    let req = ureq::request(method, url).set("content-type", "application/json");
    let resp = match body {
        Some(b) => req.send_string(b),
        None => req.call(),
    };
    let resp = match resp {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {url}: {e}"),
    };
    let status = resp.status();
    assert_eq!(
        resp.header("x-elastic-product"),
        Some("Elasticsearch"),
        "{method} {url}"
    );
    let text = resp.into_string().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn put(n: &Node, path: &str, body: Value) -> (u16, Value) {
    call("PUT", &format!("{}{path}", n.url), Some(&body.to_string()))
}

fn post(n: &Node, path: &str, body: Value) -> (u16, Value) {
    call("POST", &format!("{}{path}", n.url), Some(&body.to_string()))
}

fn get(n: &Node, path: &str) -> (u16, Value) {
    call("GET", &format!("{}{path}", n.url), None)
}

#[test]
fn node_info_and_health() {
    let n = Node::start();
    let (s, v) = get(&n, "/");
    assert_eq!(s, 200);
    assert_eq!(v["version"]["build_flavor"], "default");
    assert!(v["version"]["number"].as_str().unwrap().starts_with("8."));
    assert_eq!(v["tagline"], "You Know, for Search");
    let (s, v) = get(&n, "/_cluster/health");
    assert_eq!(s, 200);
    assert_eq!(v["status"], "green");
}

#[test]
fn index_lifecycle_and_errors() {
    let n = Node::start();
    assert_eq!(put(&n, "/books", json!({"settings":{"number_of_shards":1},"mappings":{"properties":{"title":{"type":"text"},"n":{"type":"long"}}}})).0, 200);
    let (s, v) = put(&n, "/books", json!({}));
    assert_eq!(
        (s, v["error"]["type"].as_str()),
        (400, Some("resource_already_exists_exception"))
    );
    let (s, v) = put(&n, "/Bad", json!({}));
    assert_eq!(
        (s, v["error"]["type"].as_str()),
        (400, Some("invalid_index_name_exception"))
    );
    let (s, v) = get(&n, "/missing/_doc/1");
    assert_eq!(
        (s, v["error"]["type"].as_str()),
        (404, Some("index_not_found_exception"))
    );
    let (s, v) = post(&n, "/books/_doc/1", json!({"title":"Rust in Action","n":1}));
    assert_eq!(s, 201);
    assert_eq!(v["result"], "created");
    assert_eq!(v["_version"], 1);
    assert_eq!(v["_seq_no"], 0);
    // Realtime GET before any refresh.
    let (s, v) = get(&n, "/books/_doc/1");
    assert_eq!(s, 200);
    assert_eq!(v["_source"]["title"], "Rust in Action");
    let (s, v) = get(&n, "/books/_doc/2");
    assert_eq!((s, v["found"].as_bool()), (404, Some(false)));
    // A value that does not fit the mapping (ES 8.8+ names it document_parsing_exception).
    let (s, v) = post(&n, "/books/_doc/x", json!({"n":"abc"}));
    assert_eq!(
        (s, v["error"]["type"].as_str()),
        (400, Some("document_parsing_exception"))
    );
    // Version conflicts.
    let (s, v) = put(&n, "/books/_create/1", json!({"title":"again"}));
    assert_eq!(
        (s, v["error"]["type"].as_str()),
        (409, Some("version_conflict_engine_exception"))
    );
    let (s, _) = put(
        &n,
        "/books/_doc/1?if_seq_no=5&if_primary_term=1",
        json!({"title":"x"}),
    );
    assert_eq!(s, 409);
    let (s, v) = put(
        &n,
        "/books/_doc/1?if_seq_no=0&if_primary_term=1",
        json!({"title":"Rust in Action, 2nd"}),
    );
    assert_eq!((s, v["_version"].as_u64()), (200, Some(2)));
    // Malformed JSON.
    let (s, v) = call(
        "POST",
        &format!("{}/books/_search", n.url),
        Some("{\"query\":"),
    );
    assert_eq!(s, 400);
    assert!(v["error"]["type"].as_str().unwrap().contains("parse"));
    // Unknown query type.
    let (s, v) = post(&n, "/books/_search", json!({"query":{"nope":{}}}));
    assert_eq!(s, 400);
    assert!(v["error"]["root_cause"][0]["type"]
        .as_str()
        .unwrap()
        .contains("parsing_exception"));
    // Result window.
    let (s, v) = post(&n, "/books/_search", json!({"from":10000,"size":10}));
    assert_eq!(s, 400);
    assert!(v["error"]["root_cause"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("Result window is too large"));
}

#[test]
fn bulk_search_and_refresh() {
    let n = Node::start();
    let mut lines = String::new();
    for i in 0..50 {
        lines.push_str(&format!(
            "{{\"index\":{{\"_index\":\"t\",\"_id\":\"{i}\"}}}}\n{{\"n\":{i},\"tag\":\"{}\"}}\n",
            if i % 2 == 0 { "even" } else { "odd" }
        ));
    }
    lines.push_str("{\"index\":{\"_index\":\"t\",\"_id\":\"bad\"}}\n{\"n\":\"not a number\"}\n");
    let (s, v) = call(
        "POST",
        &format!("{}/_bulk?refresh=true", n.url),
        Some(&lines),
    );
    assert_eq!(s, 200);
    assert_eq!(v["errors"], true);
    let items = v["items"].as_array().unwrap();
    assert_eq!(items.len(), 51);
    assert_eq!(items[50]["index"]["status"], 400);
    assert_eq!(items[0]["index"]["status"], 201);
    let (_, v) = get(&n, "/t/_count");
    assert_eq!(v["count"], 50);
    let (_, v) = post(
        &n,
        "/t/_search",
        json!({"query":{"term":{"tag.keyword":"even"}},"sort":[{"n":"desc"}],"size":3}),
    );
    assert_eq!(v["hits"]["total"]["value"], 25);
    let ids: Vec<&str> = v["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["48", "46", "44"]);
    let (_, v) = post(
        &n,
        "/t/_search",
        json!({"size":0,"query":{"range":{"n":{"gte":10,"lt":20}}}}),
    );
    assert_eq!(v["hits"]["total"]["value"], 10);
    // Dynamic mapping: string → text + keyword.
    let (_, v) = get(&n, "/t/_mapping");
    assert_eq!(v["t"]["mappings"]["properties"]["tag"]["type"], "text");
    assert_eq!(
        v["t"]["mappings"]["properties"]["tag"]["fields"]["keyword"]["ignore_above"],
        256
    );
}

#[test]
fn data_survives_restart() {
    let mut n = Node::start();
    let tmp = n.take_tmp();
    post(&n, "/r/_doc/1?refresh=true", json!({"a":1}));
    post(&n, "/r/_doc/2", json!({"a":2}));
    n.stop();
    let n2 = Node::start_on(&n.data, &[]);
    let (_, v) = get(&n2, "/r/_count");
    assert_eq!(v["count"], 2);
    let (s, v) = get(&n2, "/r/_doc/2");
    assert_eq!((s, v["_source"]["a"].as_i64()), (200, Some(2)));
    drop(tmp);
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    let mut n = Node::start();
    let tmp = n.take_tmp();
    for i in 0..20 {
        let (s, _) = post(&n, &format!("/k/_doc/{i}"), json!({"i": i}));
        assert_eq!(s, 201);
    }
    n.kill();
    let n2 = Node::start_on(&n.data, &[]);
    post(&n2, "/k/_refresh", json!({}));
    let (_, v) = get(&n2, "/k/_count");
    assert_eq!(v["count"], 20);
    let (_, v) = get(&n2, "/k/_doc/19");
    assert_eq!(v["_version"], 1);
    drop(tmp);
}
