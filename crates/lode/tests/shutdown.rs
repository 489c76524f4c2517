//! Graceful shutdown under load: a real `lode serve` gets SIGTERM while it holds idle keep-alive
//! connections, a half-sent request (headers) and a half-sent body, a throttled by-query task,
//! a by-query request in flight, an open scroll and a stream of concurrent writes and searches.
//! The process must exit with success (waited for at most 10 s: a hung shutdown fails the
//! test), and after a restart on the same data directory every acknowledged write must be
//! there with the source it was written with.

mod common;

use common::{agent, try_request, Node};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const INDEX: &str = "shutdown";
const SLOW: &str = "shutdown-slow";
const BULK_DOCS: usize = 200;
const WRITERS: usize = 3;

fn host_port(url: &str) -> String {
    url.trim_start_matches("http://").to_string()
}

/// A raw connection that sent one complete `GET /` and read its answer, then stays idle.
fn idle_keep_alive(addr: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET / HTTP/1.1\r\nhost: {addr}\r\n\r\n").unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    // Read until the whole JSON body is there (the response is small).
    while !buf.ends_with(b"}") && !buf.ends_with(b"}\n") {
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "connection closed before the answer");
        buf.extend_from_slice(&chunk[..n]);
    }
    assert!(
        buf.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&buf)
    );
    s
}

fn doc_source(writer: usize, i: usize) -> Value {
    json!({"writer": writer, "n": i, "text": format!("document {i} of writer {writer}")})
}

#[test]
fn sigterm_under_load_exits_cleanly_and_keeps_every_acknowledged_write() {
    let mut node = Node::start();
    let data = node.data.clone();
    let _tmp = node.take_tmp();
    let addr = host_port(&node.url);

    let (s, _) = node.req(
        "PUT",
        &format!("/{INDEX}"),
        Some(&json!({"settings": {"number_of_shards": 2}})),
    );
    assert_eq!(s, 200);
    // Acknowledged documents: id → source.
    let acked: Arc<Mutex<BTreeMap<String, Value>>> = Arc::default();
    let mut ndjson = String::new();
    let mut bulk_sources = BTreeMap::new();
    for i in 0..BULK_DOCS {
        let id = format!("bulk-{i}");
        // Writer 1000: the bulk load, apart from the stream's writers 0..WRITERS.
        let src = doc_source(1000, i);
        ndjson.push_str(&json!({"index": {"_id": id}}).to_string());
        ndjson.push('\n');
        ndjson.push_str(&src.to_string());
        ndjson.push('\n');
        bulk_sources.insert(id, src);
    }
    let (s, r) = node.bulk(&format!("/{INDEX}/_bulk"), &ndjson);
    assert_eq!(s, 200);
    assert_eq!(r["errors"], false, "{}", r["items"][0]);
    acked.lock().unwrap().extend(bulk_sources);

    // A slow by-query: one document per batch at one batch per second, as a task...
    for i in 0..20 {
        let (s, _) = node.req("PUT", &format!("/{SLOW}/_doc/{i}"), Some(&json!({"n": i})));
        assert!(s == 200 || s == 201);
    }
    node.req("POST", &format!("/{SLOW}/_refresh"), None);
    let (s, task) = node.req(
        "POST",
        &format!(
            "/{SLOW}/_update_by_query?scroll_size=1&requests_per_second=1&wait_for_completion=false"
        ),
        Some(&json!({"script": {"source": "ctx._source.n += 1000"}})),
    );
    assert_eq!(s, 200, "{task}");
    assert!(task["task"].is_string(), "{task}");
    // ...and one the client waits for (an in-flight request the grace period cannot wait out).
    let url = node.url.clone();
    std::thread::spawn(move || {
        let _ = try_request(
            &agent(),
            "POST",
            &format!(
                "{url}/{SLOW}/_update_by_query?scroll_size=1&requests_per_second=1&conflicts=proceed"
            ),
            Some(r#"{"script": {"source": "ctx._source.m = 1"}}"#),
        );
    });
    // An open scroll.
    let (s, r) = node.req(
        "POST",
        &format!("/{INDEX}/_search?scroll=5m"),
        Some(&json!({"size": 1})),
    );
    assert_eq!(s, 200, "{r}");
    assert!(r["_scroll_id"].is_string());

    // Idle keep-alive connections, a request stalled in its headers, one stalled in its body.
    let idle: Vec<TcpStream> = (0..4).map(|_| idle_keep_alive(&addr)).collect();
    let mut stalled_headers = TcpStream::connect(&addr).unwrap();
    write!(
        stalled_headers,
        "PUT /{INDEX}/_doc/stalled-h HTTP/1.1\r\nhost: {addr}\r\ncontent-ty"
    )
    .unwrap();
    let mut stalled_body = TcpStream::connect(&addr).unwrap();
    write!(
        stalled_body,
        "PUT /{INDEX}/_doc/stalled-b HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{{\"a\":"
    )
    .unwrap();

    // A stream of concurrent writes (each acknowledged one recorded) and searches, until the
    // node stops answering.
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for w in 0..WRITERS {
        let (url, acked, stop) = (node.url.clone(), acked.clone(), stop.clone());
        workers.push(std::thread::spawn(move || {
            let agent = agent();
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) {
                let id = format!("w{w}-{i}");
                let src = doc_source(w, i);
                match try_request(
                    &agent,
                    "PUT",
                    &format!("{url}/{INDEX}/_doc/{id}"),
                    Some(&src.to_string()),
                ) {
                    Ok((s, r)) if s == 200 || s == 201 => {
                        assert!(r["_seq_no"].is_u64(), "{r}");
                        acked.lock().unwrap().insert(id, src);
                    }
                    // Answered with an error: not acknowledged.
                    Ok(_) => {}
                    Err(_) => break,
                }
                i += 1;
            }
        }));
    }
    {
        let (url, stop) = (node.url.clone(), stop.clone());
        workers.push(std::thread::spawn(move || {
            let agent = agent();
            while !stop.load(Ordering::SeqCst) {
                let body = r#"{"query": {"match": {"text": "document"}}, "size": 5}"#;
                if try_request(
                    &agent,
                    "POST",
                    &format!("{url}/{INDEX}/_search"),
                    Some(body),
                )
                .is_err()
                {
                    break;
                }
            }
        }));
    }
    // Let the stream run, and make sure some writes went through it.
    while acked.lock().unwrap().len() < BULK_DOCS + 3 * WRITERS {
        std::thread::sleep(Duration::from_millis(20));
    }

    let status = node
        .terminate_within(Duration::from_secs(10))
        .expect("the node exits after SIGTERM");
    assert!(status.success(), "exit status {status:?}");
    stop.store(true, Ordering::SeqCst);
    for w in workers {
        w.join().unwrap();
    }
    drop((idle, stalled_headers, stalled_body));

    // Restart on the same data directory: every acknowledged write is there, as written.
    let node = Node::start_on(&data, &[]);
    let acked = acked.lock().unwrap();
    for (id, src) in acked.iter() {
        let (s, r) = node.req("GET", &format!("/{INDEX}/_doc/{id}"), None);
        assert_eq!(s, 200, "acknowledged document {id} lost: {r}");
        assert_eq!(r["found"], true, "{r}");
        assert_eq!(&r["_source"], src, "{id}");
    }
    // The half-sent requests were never applied.
    for id in ["stalled-h", "stalled-b"] {
        let (s, _) = node.req("GET", &format!("/{INDEX}/_doc/{id}"), None);
        assert_eq!(s, 404, "{id}");
    }
    // The slow index survived too (the cancelled by-query left every document in place).
    node.req("POST", &format!("/{SLOW}/_refresh"), None);
    let (s, r) = node.req("GET", &format!("/{SLOW}/_count"), None);
    assert_eq!(s, 200);
    assert_eq!(r["count"], 20, "{r}");
}

/// SIGINT on an idle node: a clean exit, every index flushed (each shard's newest translog
/// generation is empty, so the next start replays nothing), every document there after it.
#[test]
fn sigint_flushes_every_index() {
    let mut node = Node::start();
    let data = node.data.clone();
    let _tmp = node.take_tmp();
    let mut expected = BTreeMap::new();
    for (index, shards) in [("flush-a", 1), ("flush-b", 3)] {
        let (s, _) = node.req(
            "PUT",
            &format!("/{index}"),
            Some(&json!({"settings": {"number_of_shards": shards, "refresh_interval": "-1"}})),
        );
        assert_eq!(s, 200);
        for i in 0..30 {
            let src = json!({"i": i, "index": index});
            let (s, r) = node.req("PUT", &format!("/{index}/_doc/{i}"), Some(&src));
            assert_eq!(s, 201, "{r}");
            expected.insert((index, i), src);
        }
    }
    let status = node
        .signal_within("INT", Duration::from_secs(10))
        .expect("the node exits after SIGINT");
    assert!(status.success(), "exit status {status:?}");
    for index in ["flush-a", "flush-b"] {
        for shard in common::shard_dirs(&data, index) {
            let tlog = common::newest_translog(&shard);
            let len = std::fs::metadata(&tlog).unwrap().len();
            assert_eq!(
                len,
                0,
                "{} holds operations after a clean shutdown",
                tlog.display()
            );
        }
    }
    let node = Node::start_on(&data, &[]);
    for ((index, i), src) in &expected {
        let (s, r) = node.req("GET", &format!("/{index}/_doc/{i}"), None);
        assert_eq!(s, 200, "{r}");
        assert_eq!(&r["_source"], src);
    }
}
