//! `lode bench` end to end: every mode against a `lode serve` started by the test, on a small
//! corpus, checking that the reports' numbers agree with each other and with the server's
//! `_stats` counters (search.query_total, indexing.index_total, get.total).
//!
//! No timing assertions: runs are short (a second or two, or a bounded request count) and
//! only counts and internal consistency are checked.
//!
//! To run the same tests against another engine (e.g. the OpenSearch reference node), set
//! `LODE_BENCH_TEST_URL=http://127.0.0.1:9201` and run with `--test-threads=1` (the `_stats`
//! counters are server-wide, so tests sharing one server must not overlap).

mod common;

use lode_bench::report::{KindReport, PhaseReport, Report};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// A server for one test: a fresh `lode serve`, or the external one from the environment.
struct Server {
    url: String,
    _node: Option<common::Node>,
}

fn server() -> Server {
    match std::env::var("LODE_BENCH_TEST_URL") {
        Ok(url) => Server {
            url: url.trim_end_matches('/').to_string(),
            _node: None,
        },
        Err(_) => {
            let node = common::Node::start();
            Server {
                url: node.url.clone(),
                _node: Some(node),
            }
        }
    }
}

/// A plain HTTP/1.1 request with `Connection: close`, independent of the tool under test.
fn http(method: &str, url: &str, body: &str) -> (u16, Value) {
    let rest = url.strip_prefix("http://").expect("http url");
    let (hostport, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let mut s = std::net::TcpStream::connect(hostport).expect("connect");
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {hostport}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).expect("write");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).expect("read");
    let text = String::from_utf8_lossy(&buf);
    let status: u16 = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status line");
    let (head, mut payload) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let chunked;
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        chunked = dechunk(payload);
        payload = &chunked;
    }
    (status, serde_json::from_str(payload).unwrap_or(Value::Null))
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// (search.query_total, indexing.index_total, get.total) of all indices.
fn stats(url: &str) -> (u64, u64, u64) {
    let (status, v) = http("GET", &format!("{url}/_stats"), "");
    assert_eq!(status, 200, "{v}");
    let t = &v["_all"]["total"];
    let n = |p: &str| t.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    (
        n("/search/query_total"),
        n("/indexing/index_total"),
        n("/get/total"),
    )
}

/// Deletes an index if it exists (tests may share an external server).
fn delete_index(url: &str, index: &str) {
    let (status, v) = http("DELETE", &format!("{url}/{index}"), "");
    assert!(
        status == 200 || status == 404,
        "DELETE {index}: {status} {v}"
    );
}

fn bench(args: &[&str]) {
    let parsed = lode_bench::parse_args(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    lode_bench::run(parsed).unwrap_or_else(|e| panic!("lode bench {args:?}: {e:#}"));
}

fn read_report(path: &Path) -> Report {
    let text = std::fs::read_to_string(path).expect("report written");
    serde_json::from_str(&text).expect("report deserializes")
}

fn tmp(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Loads `docs` generated accounts documents into `index` and checks the load report.
fn load(url: &str, index: &str, docs: u64, dir: &tempfile::TempDir) {
    let out = tmp(dir, &format!("load-{index}.json"));
    let n = docs.to_string();
    bench(&[
        "load",
        url,
        "--index",
        index,
        "-n",
        &n,
        "--batch-size",
        "400",
        "--parallel",
        "2",
        "--accounts",
        "2000",
        "--no-progress",
        "--json",
        s(&out),
    ]);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["docs"], docs, "{v}");
    assert_eq!(v["count"], docs, "{v}");
    assert_eq!(v["bulk_requests"], docs.div_ceil(400), "{v}");
    assert_eq!(v["bulk_latency_ms"]["count"], docs.div_ceil(400), "{v}");
}

/// Checks that a kind's own figures agree with each other.
fn check_kind(k: &KindReport, phase: &PhaseReport) {
    let answered = k.ok + k.non_2xx;
    assert_eq!(k.requests, answered + k.errors, "{}", k.name);
    assert_eq!(k.latency_ms.count, answered, "{}: histogram count", k.name);
    let in_windows: u64 = k.windows.iter().map(|w| w.requests).sum();
    assert_eq!(in_windows, answered, "{}: window counts", k.name);
    let statuses: u64 = k.statuses.values().sum();
    assert_eq!(statuses, answered, "{}: status counts", k.name);
    let errs: u64 = k.error_kinds.values().sum();
    assert_eq!(errs, k.errors, "{}: error kinds", k.name);
    if answered > 0 {
        let l = &k.latency_ms;
        let t = l.table();
        assert!(t.windows(2).all(|w| w[0].1 <= w[1].1), "{}: {t:?}", k.name);
        assert!(l.min <= l.p50 && l.mean <= l.p100 * 1.001, "{}", k.name);
        let span = phase.elapsed_s.max(k.elapsed_s);
        assert!(
            (k.requests_per_sec * span - answered as f64).abs() < 0.5,
            "{}: req/s x seconds != requests",
            k.name
        );
        let last = k.distribution.last().unwrap();
        assert_eq!(last[0], 100.0);
        assert!((last[1] - l.p100).abs() <= l.p100 * 0.002 + 0.002);
    }
}

fn counters(p: &PhaseReport) -> lode_bench::control::Counters {
    p.server
        .as_ref()
        .and_then(|s| s.counters)
        .expect("the server's _stats counters are in the report")
}

#[test]
fn gen_through_the_lode_binary() {
    let dir = tempfile::tempdir().unwrap();
    let out = tmp(&dir, "acc.ndjson");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_lode"))
        .args([
            "bench",
            "gen",
            "-n",
            "500",
            "--accounts",
            "300",
            "-o",
            s(&out),
        ])
        .status()
        .expect("run lode bench gen");
    assert!(status.success());
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1000);
    for (i, pair) in lines.chunks(2).enumerate() {
        let action: Value = serde_json::from_str(pair[0]).unwrap();
        assert_eq!(action["index"]["_id"], (i + 1).to_string());
        assert_eq!(action["index"]["_index"], "accounts");
        let src: Value = serde_json::from_str(pair[1]).unwrap();
        assert!(src["acctId"].as_str().unwrap().starts_with('A'));
    }
}

#[test]
fn suite_counts_match_the_servers_stats() {
    let srv = server();
    let dir = tempfile::tempdir().unwrap();
    load(&srv.url, "accounts", 2000, &dir);
    let before = stats(&srv.url);
    let out = tmp(&dir, "suite.json");
    let html = tmp(&dir, "suite.html");
    bench(&[
        "search",
        &srv.url,
        "-c",
        "4",
        "-n",
        "30",
        "--warmup",
        "200ms",
        "-q",
        "--json",
        s(&out),
        "--html",
        s(&html),
    ]);
    let after = stats(&srv.url);
    let r = read_report(&out);
    assert_eq!(r.command, "search");
    assert_eq!(r.phases.len(), 14, "one phase per built-in query");
    let mut searches = 0;
    let mut gets = 0;
    for p in &r.phases {
        assert_eq!(p.kinds.len(), 1);
        let k = &p.kinds[0];
        check_kind(k, p);
        assert_eq!(k.requests, 30, "{}: -n 30", k.name);
        assert_eq!(k.errors, 0, "{}: {:?}", k.name, k.error_samples);
        let c = counters(p);
        if k.endpoint == "_search" {
            assert_eq!(k.non_2xx, 0, "{}: {:?}", k.name, k.error_samples);
            assert_eq!(c.search_query_total, k.ok, "{}: query_total delta", k.name);
        } else {
            assert_eq!(k.endpoint, "GET _doc");
            // Document 560000 is not in a 2,000-document corpus.
            assert_eq!(k.non_2xx, 30, "detail: 404s");
            assert_eq!(c.search_query_total, 0);
            if c.get_total > 0 {
                assert_eq!(c.get_total, 30);
            }
        }
        // Warm-up requests were sent, and are not in the measured counts.
        assert!(p.warmup_requests > 0, "{}", p.name);
        if k.endpoint == "_search" {
            searches += k.ok + p.warmup_requests;
        } else {
            gets += k.ok + k.non_2xx + p.warmup_requests;
        }
    }
    // The whole run, warm-ups included, as the server counted it.
    assert_eq!(after.0 - before.0, searches, "query_total over the run");
    if after.2 > before.2 {
        assert_eq!(after.2 - before.2, gets, "get.total over the run");
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg") && page.contains("ids_range"));
    assert!(!page.contains("<script") && !page.contains("<link"));
    assert!(!page.contains("src=\"http") && !page.contains("href=\"http"));
}

#[test]
fn varied_requests_without_request_cache() {
    let srv = server();
    let dir = tempfile::tempdir().unwrap();
    load(&srv.url, "accounts", 1500, &dir);
    let out = tmp(&dir, "vary.json");
    bench(&[
        "search",
        &srv.url,
        "--only",
        "term,match,trend,detail,ids_range",
        "--vary",
        "--no-request-cache",
        "--corpus-accounts",
        "2000",
        "-c",
        "3",
        "-n",
        "40",
        "--warmup",
        "0",
        "-q",
        "--json",
        s(&out),
    ]);
    let r = read_report(&out);
    assert_eq!(r.phases.len(), 5);
    for p in &r.phases {
        let k = &p.kinds[0];
        check_kind(k, p);
        assert_eq!(
            (k.requests, k.errors, k.non_2xx),
            (40, 0, 0),
            "{}: {:?}",
            k.name,
            k.error_samples
        );
        if k.endpoint == "_search" {
            assert!(k.path.ends_with("request_cache=false"), "{}", k.path);
            assert_eq!(counters(p).search_query_total, 40, "{}", k.name);
        }
        // detail draws ids from 1..=_count: every one exists.
        assert_eq!(p.warmup_requests, 0);
    }
}

#[test]
fn open_loop_fixed_rate() {
    let srv = server();
    let dir = tempfile::tempdir().unwrap();
    load(&srv.url, "accounts", 1000, &dir);
    let out = tmp(&dir, "open.json");
    bench(&[
        "search",
        &srv.url,
        "--only",
        "term",
        "--rate",
        "100",
        "-t",
        "1",
        "-c",
        "8",
        "--warmup",
        "0",
        "-q",
        "--json",
        s(&out),
    ]);
    let r = read_report(&out);
    let p = &r.phases[0];
    let k = &p.kinds[0];
    check_kind(k, p);
    assert_eq!(p.pacing, "open");
    assert_eq!(p.rate, Some(100.0));
    // A uniform schedule of 100/s over 1 s has exactly 100 due requests.
    assert_eq!(k.requests, 100);
    assert_eq!(counters(p).search_query_total, k.ok);
    let service = k
        .service_ms
        .as_ref()
        .expect("open loop reports the service time");
    assert_eq!(service.count, k.latency_ms.count);
    // Latency from the intended send time is never below the service time.
    assert!(k.latency_ms.p100 + 0.01 >= service.p100);
    assert!(p.timer_lag_p99_ms.is_some());
}

#[test]
fn keep_alive_and_new_connection_per_request() {
    let srv = server();
    let dir = tempfile::tempdir().unwrap();
    load(&srv.url, "accounts", 500, &dir);
    for (flag, expect_per_request) in [("--no-keepalive", true), ("--timeout=30s", false)] {
        let out = tmp(&dir, "conn.json");
        bench(&[
            "search",
            &srv.url,
            "--only",
            "term",
            "-c",
            "2",
            "-n",
            "20",
            "--warmup",
            "0",
            flag,
            "-q",
            "--json",
            s(&out),
        ]);
        let p = &read_report(&out).phases[0];
        check_kind(&p.kinds[0], p);
        assert_eq!(p.kinds[0].ok, 20);
        assert_eq!(p.keep_alive, !expect_per_request);
        if expect_per_request {
            assert_eq!(p.connects, 20, "one TCP connection per request");
        } else {
            assert!(
                p.connects <= 2,
                "keep-alive reuses the 2 connections: {}",
                p.connects
            );
        }
    }
}

#[test]
fn single_document_writes() {
    let srv = server();
    let dir = tempfile::tempdir().unwrap();
    let out = tmp(&dir, "write.json");
    delete_index(&srv.url, "books_w");
    bench(&[
        "write",
        &srv.url,
        "--index",
        "books_w",
        "-n",
        "200",
        "-c",
        "8",
        "--warmup",
        "0",
        "-q",
        "--json",
        s(&out),
    ]);
    let r = read_report(&out);
    let p = &r.phases[0];
    let k = &p.kinds[0];
    check_kind(k, p);
    assert_eq!(
        (k.requests, k.ok, k.docs),
        (200, 200, 200),
        "{:?}",
        k.error_samples
    );
    assert_eq!(k.endpoint, "POST _doc");
    assert_eq!(counters(p).indexing_index_total, 200);
    assert_eq!(r.extra["count_after"], 200);
}

#[test]
fn bulk_writes_of_generated_documents() {
    let srv = server();
    let dir = tempfile::tempdir().unwrap();
    let out = tmp(&dir, "bulk.json");
    delete_index(&srv.url, "bulk_w");
    bench(&[
        "write",
        &srv.url,
        "--index",
        "bulk_w",
        "--accounts",
        "--bulk",
        "50",
        "-n",
        "10",
        "-c",
        "2",
        "--warmup",
        "0",
        "-q",
        "--json",
        s(&out),
    ]);
    let r = read_report(&out);
    let p = &r.phases[0];
    let k = &p.kinds[0];
    check_kind(k, p);
    assert_eq!(k.endpoint, "_bulk");
    assert_eq!((k.requests, k.ok, k.docs, k.item_errors), (10, 10, 500, 0));
    assert_eq!(counters(p).indexing_index_total, 500);
    assert_eq!(r.extra["count_after"], 500);
}

#[test]
fn mixed_searches_writes_and_force_merge() {
    let srv = server();
    let dir = tempfile::tempdir().unwrap();
    load(&srv.url, "mix", 1000, &dir);
    let out = tmp(&dir, "mixed.json");
    bench(&[
        "mixed",
        &srv.url,
        "--index",
        "mix",
        "--only",
        "term,ids_range",
        "--search-rate",
        "40",
        "--write-rate",
        "4",
        "--write-batch",
        "20",
        "-t",
        "2",
        "--force-merge",
        "--warmup",
        "0",
        "-q",
        "--json",
        s(&out),
        "--html",
        s(&tmp(&dir, "mixed.html")),
    ]);
    let r = read_report(&out);
    assert_eq!(r.phases.len(), 1);
    let p = &r.phases[0];
    let names: Vec<&str> = p.kinds.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["term", "ids_range", "write"]);
    for k in &p.kinds {
        check_kind(k, p);
        assert_eq!(k.errors + k.non_2xx, 0, "{}: {:?}", k.name, k.error_samples);
    }
    // 40 searches/s for 2 s, round-robin over two queries; 4 writes/s of 20 documents.
    assert_eq!(p.kinds[0].requests + p.kinds[1].requests, 80);
    assert_eq!(p.kinds[2].requests, 8);
    assert_eq!(p.kinds[2].docs, 160);
    let c = counters(p);
    assert_eq!(c.search_query_total, p.ok_for("_search"));
    assert_eq!(c.indexing_index_total, 160);
    // One-second windows over the two seconds.
    assert_eq!(p.kinds[0].windows.len(), 2);
    let labels: Vec<&str> = p.events.iter().map(|e| e.label.as_str()).collect();
    assert_eq!(labels.len(), 2, "{labels:?}");
    assert_eq!(labels[0], "force merge started");
    assert!(labels[1].starts_with("force merge done"), "{labels:?}");
    // The requests started between the two events, per kind (the merge of 1,160 small
    // documents ends well within the run: the interval holds some of the searches only).
    let during = &p.intervals[0];
    assert_eq!(during.label, "during the force merge");
    assert_eq!((during.from_s, during.to_s), (p.events[0].t, p.events[1].t));
    let names: Vec<&str> = during.kinds.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["term", "ids_range", "write"]);
    let searched: u64 = during.kinds[..2].iter().map(|(_, l)| l.count).sum();
    assert!(searched < 80, "{searched}");
    // The writes continued the corpus ids: 1000 + 160 documents.
    http("POST", &format!("{}/mix/_refresh", srv.url), "");
    let (_, count) = http("GET", &format!("{}/mix/_count", srv.url), "");
    assert_eq!(count["count"], 1160);
}

#[test]
fn replay_paced_and_as_fast_as_possible() {
    let srv = server();
    let dir = tempfile::tempdir().unwrap();
    load(&srv.url, "accounts", 500, &dir);
    let file = tmp(&dir, "recorded.jsonl");
    let mut lines = String::new();
    for i in 0..30u64 {
        let t = 1_000 + i * 20; // 580 ms of recording
        let line = match i % 3 {
            0 => serde_json::json!({"method": "POST", "path": "/accounts/_search",
                "body": {"query": {"term": {"status": i % 4}}, "size": 0}, "timestamp": t}),
            1 => serde_json::json!({"method": "GET", "path": format!("/accounts/_doc/{}", i + 1),
                "timestamp": t}),
            _ => serde_json::json!({"method": "POST", "path": "/_bulk", "timestamp": t,
                "body": [{"index": {"_index": "replayed"}}, {"n": i},
                         {"index": {"_index": "replayed"}}, {"n": i + 1}]}),
        };
        lines.push_str(&line.to_string());
        lines.push('\n');
    }
    std::fs::write(&file, lines).unwrap();
    for speed in [["--speed", "2"], ["--max-speed", "--concurrency=8"]] {
        let out = tmp(&dir, "replay.json");
        let mut args = vec!["replay", &srv.url, s(&file), "-q", "--json", s(&out)];
        args.extend(speed);
        bench(&args);
        let r = read_report(&out);
        let p = &r.phases[0];
        let kinds: Vec<(&str, u64)> = p
            .kinds
            .iter()
            .map(|k| (k.endpoint.as_str(), k.ok))
            .collect();
        assert_eq!(kinds, [("_search", 10), ("GET _doc", 10), ("_bulk", 10)]);
        for k in &p.kinds {
            check_kind(k, p);
        }
        let c = counters(p);
        assert_eq!(c.search_query_total, 10);
        assert_eq!(c.indexing_index_total, 20);
        assert_eq!(p.kinds[2].docs, 20);
        if speed[0] == "--speed" {
            assert_eq!(p.pacing, "open");
            // The last request is due 290 ms after the first at twice the recorded pace.
            assert!(p.elapsed_s >= 0.29, "{}", p.elapsed_s);
        } else {
            assert_eq!(p.pacing, "closed");
        }
    }
}

#[test]
fn compare_two_servers() {
    let a = server();
    let b = server();
    let dir = tempfile::tempdir().unwrap();
    load(&a.url, "accounts", 500, &dir);
    if b.url != a.url {
        load(&b.url, "accounts", 500, &dir);
    }
    let out = tmp(&dir, "compare.json");
    let html = tmp(&dir, "compare.html");
    bench(&[
        "compare",
        &a.url,
        &b.url,
        "--only",
        "term,range,group",
        "-c",
        "2",
        "-n",
        "25",
        "--warmup",
        "0",
        "-q",
        "--json",
        s(&out),
        "--html",
        s(&html),
    ]);
    let r = read_report(&out);
    assert_eq!(r.targets.len(), 2);
    assert_eq!(r.phases.len(), 6);
    assert_eq!(r.comparison.len(), 3);
    for (row, name) in r.comparison.iter().zip(["term", "range", "group"]) {
        assert_eq!(row.name, name);
        let (pa, pb) = (&r.phases[row.a], &r.phases[row.b]);
        assert_eq!((pa.target, pb.target), (0, 1));
        assert_eq!((pa.name.as_str(), pb.name.as_str()), (name, name));
        for p in [pa, pb] {
            check_kind(&p.kinds[0], p);
            assert_eq!(p.kinds[0].ok, 25);
            assert_eq!(counters(p).search_query_total, 25);
        }
        let want = pb.kinds[0].requests_per_sec / pa.kinds[0].requests_per_sec;
        assert!((row.requests_per_sec.unwrap() - want).abs() < 1e-9);
        let p50 = pb.kinds[0].latency_ms.p50 / pa.kinds[0].latency_ms.p50;
        assert!((row.latency["p50"].unwrap() - p50).abs() < 1e-9);
    }
    // Alternating order: A B for the first query, B A for the second.
    assert!(r.phases[0].target == 0 && r.phases[2].target == 1);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("B relative to A"));
}

#[test]
fn load_a_user_ndjson_file() {
    let srv = server();
    let dir = tempfile::tempdir().unwrap();
    let file = tmp(&dir, "user.ndjson");
    bench(&[
        "gen",
        "-n",
        "300",
        "--accounts",
        "100",
        "--index",
        "userload",
        "-o",
        s(&file),
    ]);
    let out = tmp(&dir, "load.json");
    bench(&[
        "load",
        &srv.url,
        "--file",
        s(&file),
        "--index",
        "userload",
        "-b",
        "64",
        "--no-progress",
        "--json",
        s(&out),
    ]);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["docs"], 300);
    assert_eq!(v["bulk_requests"], 5);
    assert_eq!(v["count"], 300);
    let (_, doc) = http("GET", &format!("{}/userload/_doc/300", srv.url), "");
    assert_eq!(doc["found"], true, "{doc}");
}
