//! Crash test: concurrent writers against a real `lode serve`, SIGKILLed mid-flight, restarted
//! on the same data directory, again and again.
//!
//! Elasticsearch's contract with `index.translog.durability: request` (the default): once a
//! write is acknowledged (2xx with `_version`/`_seq_no`), it survives a crash. A request that was
//! in flight when the process died has an unknown outcome: the document may be in its old or
//! its new state, but in no other. Every writer thread owns its own ids, so each id sees one
//! operation at a time and the oracle below knows, per id, the exact set of allowed states.
//!
//! After each restart, every id ever touched is checked with a realtime GET (exact `_version`,
//! `_seq_no` and `_source`, or the outcome of the op in flight), then after `_refresh` the
//! `_count` and an `ids`/`terms` search on `_id` must agree with the GETs.
//!
//! Some writes add new fields (dynamic mapping updates under load), and some cycles run
//! `_flush`/`_refresh` concurrently (translog roll and trim while writers append).
//!
//! The sequence of operations is drawn from a seeded RNG; the seed is printed and can be set
//! with `LODE_CRASH_SEED`.

mod common;

use common::{try_request, Node};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const INDEX: &str = "crash";
const CYCLES: usize = 20;
const WRITERS: usize = 6;
const IDS_PER_WRITER: usize = 30;
/// Safety bound on operations per writer per cycle (the kill normally comes much earlier).
const MAX_OPS_PER_CYCLE: usize = 5_000;
const DEFAULT_SEED: u64 = 0x10DE_C0DE_2024;

/// The acknowledged state of one id.
#[derive(Debug, Clone, PartialEq)]
enum State {
    Absent,
    Live {
        version: u64,
        seq_no: u64,
        source: Value,
    },
}

/// What the server remembers about a deleted (or never created) id, for the next version.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Tomb {
    /// Never written: the next write gets version 1.
    Never,
    /// Deleted in this server lifetime with this version (Elasticsearch keeps tombstones for
    /// `index.gc_deletes`, 60 s): the next write gets `v + 1`.
    Known(u64),
    /// Deleted before a restart: the tombstone may or may not have been kept.
    Unknown,
}

/// An operation whose response never came (the server died): its outcome is unknown.
#[derive(Debug, Clone, PartialEq)]
enum InFlight {
    /// An index or update that, if applied, left exactly this source.
    Index(Value),
    Delete,
}

#[derive(Debug, Clone)]
struct IdOracle {
    id: String,
    acked: State,
    tomb: Tomb,
    /// The highest acknowledged `_seq_no` of any operation on this id (deletes included).
    last_seq: Option<u64>,
    in_flight: Option<InFlight>,
    touched: bool,
}

impl IdOracle {
    fn live_version(&self) -> Option<u64> {
        match &self.acked {
            State::Live { version, .. } => Some(*version),
            State::Absent => None,
        }
    }

    /// The version Elasticsearch's internal versioning assigns to the next write, if known.
    fn next_version(&self) -> Option<u64> {
        match (&self.acked, self.tomb) {
            (State::Live { version, .. }, _) => Some(version + 1),
            (State::Absent, Tomb::Never) => Some(1),
            (State::Absent, Tomb::Known(v)) => Some(v + 1),
            (State::Absent, Tomb::Unknown) => None,
        }
    }
}

/// One writer thread's ids and RNG; moved into the thread and handed back at the end.
struct Writer {
    w: usize,
    ids: Vec<IdOracle>,
    counter: u64,
    rng: StdRng,
    acked_ops: u64,
    failures: Vec<String>,
}

/// One planned write on one id.
enum Op {
    Index(Value),
    Update { doc: Value, merged: Value },
    Delete,
}

impl Writer {
    fn next_content(&mut self, kind: &str, cycle: usize) -> Value {
        self.counter += 1;
        let mut v = json!({"n": self.counter, "writer": self.w, "kind": kind, "cycle": cycle});
        // Now and then a field the mapping does not have yet: a dynamic mapping update (schema
        // extension, with its own commit) in the middle of the concurrent writes. Bounded, so
        // the mapping stays small.
        if self.rng.gen_bool(0.03) {
            let m = self.rng.gen_range(0..3);
            v[format!("x{}_{m}", self.w)] = json!(format!("v{}", self.counter));
        }
        v
    }

    fn plan(&mut self, i: usize, cycle: usize, in_bulk: bool) -> Op {
        let live = match &self.ids[i].acked {
            State::Live { source, .. } => Some(source.clone()),
            State::Absent => None,
        };
        let r: f64 = self.rng.gen();
        match live {
            Some(src) if r < 0.35 => {
                self.counter += 1;
                let doc = json!({"n": self.counter, "kind": if in_bulk { "bulk-update" } else { "update" }});
                let mut merged = src;
                merged["n"] = doc["n"].clone();
                merged["kind"] = doc["kind"].clone();
                Op::Update { doc, merged }
            }
            Some(_) if r < 0.6 => Op::Delete,
            // Deleting an absent id: a `not_found` that still takes a seq_no.
            None if r < 0.08 => Op::Delete,
            _ => Op::Index(self.next_content(if in_bulk { "bulk-index" } else { "index" }, cycle)),
        }
    }

    /// Applies an acknowledged single-document result (`body` is the item or response body)
    /// to the oracle, checking it against Elasticsearch's versioning rules.
    fn ack(&mut self, i: usize, op: &Op, status: u16, body: &Value, what: &str) {
        let o = &self.ids[i];
        let id = o.id.clone();
        let version = body["_version"].as_u64();
        let seq_no = body["_seq_no"].as_u64();
        let result = body["result"].as_str().unwrap_or("");
        let mut fail = |msg: String| {
            self.failures.push(format!(
                "{what} on [{id}]: {msg}; status {status}, body {body}"
            ))
        };
        let (Some(version), Some(seq_no)) = (version, seq_no) else {
            fail("acknowledged without _version/_seq_no".into());
            return;
        };
        if let Some(last) = o.last_seq {
            if seq_no <= last {
                fail(format!(
                    "_seq_no {seq_no} does not follow the previous acknowledged {last}"
                ));
            }
        }
        let expected_version = o.next_version();
        let (exp_status, exp_result): (&[u16], &str) = match (op, &o.acked) {
            (Op::Index(_), State::Live { .. }) => (&[200], "updated"),
            (Op::Index(_), State::Absent) => (&[201], "created"),
            (Op::Update { .. }, _) => (&[200], "updated"),
            (Op::Delete, State::Live { .. }) => (&[200], "deleted"),
            (Op::Delete, State::Absent) => (&[404], "not_found"),
        };
        if !exp_status.contains(&status) || result != exp_result {
            fail(format!("expected {exp_status:?} {exp_result}"));
        }
        if let Some(ev) = expected_version {
            if version != ev {
                fail(format!("expected _version {ev}, got {version}"));
            }
        }
        let o = &mut self.ids[i];
        o.last_seq = Some(seq_no);
        o.touched = true;
        match op {
            Op::Index(src) => {
                o.acked = State::Live {
                    version,
                    seq_no,
                    source: src.clone(),
                }
            }
            Op::Update { merged, .. } => {
                o.acked = State::Live {
                    version,
                    seq_no,
                    source: merged.clone(),
                }
            }
            Op::Delete => {
                o.acked = State::Absent;
                o.tomb = Tomb::Known(version);
            }
        }
        self.acked_ops += 1;
    }

    fn mark_in_flight(&mut self, i: usize, op: &Op) {
        let o = &mut self.ids[i];
        o.touched = true;
        o.in_flight = Some(match op {
            Op::Index(src) => InFlight::Index(src.clone()),
            Op::Update { merged, .. } => InFlight::Index(merged.clone()),
            Op::Delete => InFlight::Delete,
        });
    }

    /// Writes until the server dies (a transport error) or `stop` is set.
    fn run(mut self, url: String, cycle: usize, stop: Arc<AtomicBool>) -> Writer {
        let agent = common::agent();
        for _ in 0..MAX_OPS_PER_CYCLE {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let alive = if self.rng.gen_bool(0.25) {
                self.bulk(&agent, &url, cycle)
            } else {
                self.single(&agent, &url, cycle)
            };
            if !alive {
                break;
            }
        }
        self
    }

    fn single(&mut self, agent: &ureq::Agent, url: &str, cycle: usize) -> bool {
        let i = self.rng.gen_range(0..self.ids.len());
        let op = self.plan(i, cycle, false);
        let id = self.ids[i].id.clone();
        let (method, path, body, what) = match &op {
            Op::Index(src) => ("PUT", format!("/{INDEX}/_doc/{id}"), src.clone(), "index"),
            Op::Update { doc, .. } => (
                "POST",
                format!("/{INDEX}/_update/{id}"),
                json!({ "doc": doc }),
                "update",
            ),
            Op::Delete => (
                "DELETE",
                format!("/{INDEX}/_doc/{id}"),
                Value::Null,
                "delete",
            ),
        };
        let body_s = (!body.is_null()).then(|| body.to_string());
        match try_request(agent, method, &format!("{url}{path}"), body_s.as_deref()) {
            Ok((status, resp)) => {
                if !(200..300).contains(&status) && status != 404 {
                    // Not an acknowledgement: the outcome is unknown, and the status is a bug.
                    self.failures.push(format!(
                        "{what} on [{id}]: unexpected status {status}: {resp}"
                    ));
                    self.mark_in_flight(i, &op);
                    return false;
                }
                self.ack(i, &op, status, &resp, what);
                true
            }
            Err(_) => {
                self.mark_in_flight(i, &op);
                false
            }
        }
    }

    fn bulk(&mut self, agent: &ureq::Agent, url: &str, cycle: usize) -> bool {
        let n = self.rng.gen_range(2..=8).min(self.ids.len());
        let mut picked: Vec<usize> = Vec::new();
        while picked.len() < n {
            let i = self.rng.gen_range(0..self.ids.len());
            if !picked.contains(&i) {
                picked.push(i);
            }
        }
        let mut ops = Vec::new();
        let mut body = String::new();
        for &i in &picked {
            let op = self.plan(i, cycle, true);
            let id = &self.ids[i].id;
            match &op {
                Op::Index(src) => {
                    body.push_str(&format!("{}\n{}\n", json!({"index": {"_id": id}}), src))
                }
                Op::Update { doc, .. } => body.push_str(&format!(
                    "{}\n{}\n",
                    json!({"update": {"_id": id}}),
                    json!({ "doc": doc })
                )),
                Op::Delete => body.push_str(&format!("{}\n", json!({"delete": {"_id": id}}))),
            }
            ops.push((i, op));
        }
        match try_request(agent, "POST", &format!("{url}/{INDEX}/_bulk"), Some(&body)) {
            Ok((200, resp)) => {
                let items = resp["items"].as_array().cloned().unwrap_or_default();
                if items.len() != ops.len() {
                    self.failures.push(format!(
                        "bulk: {} items for {} actions: {resp}",
                        items.len(),
                        ops.len()
                    ));
                    for (i, op) in &ops {
                        self.mark_in_flight(*i, op);
                    }
                    return false;
                }
                for ((i, op), item) in ops.iter().zip(items) {
                    let (action, inner) = item.as_object().unwrap().iter().next().unwrap();
                    let status = inner["status"].as_u64().unwrap_or(0) as u16;
                    let what = format!("bulk {action}");
                    if !(200..300).contains(&status) && status != 404 {
                        self.failures.push(format!(
                            "{what} on [{}]: item status {status}: {inner}",
                            self.ids[*i].id
                        ));
                        self.mark_in_flight(*i, op);
                        continue;
                    }
                    self.ack(*i, op, status, inner, &what);
                }
                true
            }
            Ok((status, resp)) => {
                self.failures
                    .push(format!("bulk: unexpected status {status}: {resp}"));
                for (i, op) in &ops {
                    self.mark_in_flight(*i, op);
                }
                false
            }
            Err(_) => {
                for (i, op) in &ops {
                    self.mark_in_flight(*i, op);
                }
                false
            }
        }
    }
}

/// Checks one id's realtime GET against the oracle; on success, resolves the oracle to the
/// observed state (the in-flight uncertainty is gone once we have seen the document).
fn verify_get(o: &mut IdOracle, status: u16, body: &Value) -> Result<(), String> {
    let found = body["found"].as_bool();
    let observed = match (status, found) {
        (200, Some(true)) => {
            let (Some(version), Some(seq_no)) =
                (body["_version"].as_u64(), body["_seq_no"].as_u64())
            else {
                return Err(format!("found without _version/_seq_no: {body}"));
            };
            State::Live {
                version,
                seq_no,
                source: body["_source"].clone(),
            }
        }
        (404, Some(false)) => State::Absent,
        _ => return Err(format!("unexpected GET answer {status}: {body}")),
    };
    let ok = if observed == o.acked {
        true
    } else {
        match (&o.in_flight, &observed) {
            (Some(InFlight::Delete), State::Absent) => true,
            (
                Some(InFlight::Index(expected)),
                State::Live {
                    version,
                    seq_no,
                    source,
                },
            ) => {
                source == expected
                    && o.live_version().is_none_or(|v| *version == v + 1)
                    && o.last_seq.is_none_or(|s| *seq_no > s)
            }
            _ => false,
        }
    };
    if !ok {
        return Err(format!(
            "acknowledged state {:?} (in flight: {:?}), but the server has {:?}",
            o.acked, o.in_flight, observed
        ));
    }
    if let State::Live { seq_no, .. } = &observed {
        o.last_seq = Some(o.last_seq.map_or(*seq_no, |s| s.max(*seq_no)));
    }
    if observed == State::Absent && (o.in_flight.is_some() || o.tomb != Tomb::Never) {
        // A delete may have been applied (even a `not_found` one leaves a tombstone): the
        // version the next write gets is no longer known.
        o.tomb = Tomb::Unknown;
    }
    o.acked = observed;
    o.in_flight = None;
    Ok(())
}

fn verify(node: &Node, writers: &mut [Writer], cycle: usize, seed: u64) {
    let ctx = format!("seed {seed:#x}, after crash {cycle}");
    let mut errors = Vec::new();
    let mut live: BTreeMap<String, (u64, u64, Value)> = BTreeMap::new();
    let mut touched = Vec::new();
    for wr in writers.iter_mut() {
        for o in wr.ids.iter_mut().filter(|o| o.touched) {
            let (s, v) = node.req("GET", &format!("/{INDEX}/_doc/{}", o.id), None);
            if let Err(e) = verify_get(o, s, &v) {
                errors.push(format!("[{}] {e}", o.id));
            }
            touched.push(o.id.clone());
            if let State::Live {
                version,
                seq_no,
                source,
            } = &o.acked
            {
                live.insert(o.id.clone(), (*version, *seq_no, source.clone()));
            }
        }
    }
    assert!(
        errors.is_empty(),
        "{ctx}: {} ids lost or corrupted:\n{}",
        errors.len(),
        errors.join("\n")
    );
    // Search agrees with realtime GET once refreshed.
    let (s, v) = node.req("POST", &format!("/{INDEX}/_refresh"), None);
    assert_eq!(s, 200, "{ctx}: refresh: {v}");
    let (s, v) = node.req("GET", &format!("/{INDEX}/_count"), None);
    assert_eq!(s, 200, "{ctx}: count: {v}");
    assert_eq!(
        v["count"].as_u64(),
        Some(live.len() as u64),
        "{ctx}: _count disagrees with the documents GET finds"
    );
    for query in [
        json!({"ids": {"values": touched}}),
        json!({"terms": {"_id": touched}}),
    ] {
        let (s, v) = node.req(
            "POST",
            &format!("/{INDEX}/_search"),
            Some(&json!({
                "query": query,
                "size": touched.len() + 10,
                "version": true,
                "seq_no_primary_term": true,
                "track_total_hits": true,
            })),
        );
        assert_eq!(s, 200, "{ctx}: search: {v}");
        assert_eq!(
            v["hits"]["total"]["value"].as_u64(),
            Some(live.len() as u64),
            "{ctx}: total hits of {query}"
        );
        let mut seen = BTreeSet::new();
        for h in v["hits"]["hits"].as_array().unwrap() {
            let id = h["_id"].as_str().unwrap().to_string();
            let Some((version, seq_no, source)) = live.get(&id) else {
                panic!("{ctx}: search finds [{id}], which GET does not: {h}");
            };
            assert_eq!(h["_version"].as_u64(), Some(*version), "{ctx}: [{id}] {h}");
            assert_eq!(h["_seq_no"].as_u64(), Some(*seq_no), "{ctx}: [{id}] {h}");
            assert_eq!(&h["_source"], source, "{ctx}: [{id}] {h}");
            assert!(seen.insert(id.clone()), "{ctx}: [{id}] returned twice");
        }
        assert_eq!(
            seen.len(),
            live.len(),
            "{ctx}: search by _id misses documents"
        );
    }
}

/// Removes the data directory when the test passes; keeps it (and prints where) when it fails,
/// for a post-mortem of the files.
struct KeepOnFailure(Option<tempfile::TempDir>);

impl Drop for KeepOnFailure {
    fn drop(&mut self) {
        if std::thread::panicking() {
            if let Some(t) = self.0.take() {
                eprintln!("crash test data kept in {}", t.keep().display());
            }
        }
    }
}

#[test]
fn acknowledged_writes_survive_repeated_sigkill() {
    let seed = std::env::var("LODE_CRASH_SEED")
        .ok()
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .unwrap_or(DEFAULT_SEED);
    println!("crash test seed: {seed:#x} (set LODE_CRASH_SEED to replay)");
    let mut rng = StdRng::seed_from_u64(seed);
    let tmp = KeepOnFailure(Some(tempfile::tempdir().unwrap()));
    let data = tmp.0.as_ref().unwrap().path().join("data");

    let mut writers: Vec<Writer> = (0..WRITERS)
        .map(|w| Writer {
            w,
            ids: (0..IDS_PER_WRITER)
                .map(|i| IdOracle {
                    id: format!("w{w}-{i}"),
                    acked: State::Absent,
                    tomb: Tomb::Never,
                    last_seq: None,
                    in_flight: None,
                    touched: false,
                })
                .collect(),
            counter: 0,
            rng: StdRng::seed_from_u64(seed ^ ((w as u64 + 1) << 32)),
            acked_ops: 0,
            failures: Vec::new(),
        })
        .collect();

    let mut total_in_flight = 0;
    for cycle in 0..CYCLES {
        let mut node = Node::start_on(&data, &[]);
        if cycle == 0 {
            let (s, v) = node.req(
                "PUT",
                &format!("/{INDEX}"),
                Some(&json!({
                    "settings": {
                        "number_of_shards": 2,
                        "refresh_interval": "1s",
                        // A small threshold: the maintenance loop flushes (commit, translog
                        // roll and trim) every few hundred operations, so crashes also hit
                        // flushes in progress.
                        "translog": {"durability": "request", "flush_threshold_size": "64kb"}
                    },
                    "mappings": {"properties": {
                        "n": {"type": "long"},
                        "writer": {"type": "integer"},
                        "kind": {"type": "keyword"},
                        "cycle": {"type": "integer"}
                    }}
                })),
            );
            assert_eq!(s, 200, "create index: {v}");
        } else {
            verify(&node, &mut writers, cycle - 1, seed);
        }
        // Tombstones do not survive a restart in general: the next write's version after a
        // delete is only checked within one server lifetime.
        for wr in writers.iter_mut() {
            for o in wr.ids.iter_mut() {
                if o.tomb != Tomb::Never && o.acked == State::Absent {
                    o.tomb = Tomb::Unknown;
                }
            }
        }

        let stop = Arc::new(AtomicBool::new(false));
        let flushes = Arc::new(AtomicU64::new(0));
        // Some cycles also flush and refresh concurrently (translog roll and trim under load).
        let chaos = if cycle % 3 != 0 {
            let (url, stop, flushes) = (node.url.clone(), stop.clone(), flushes.clone());
            let mut crng = StdRng::seed_from_u64(seed ^ cycle as u64 ^ 0xC4A05);
            Some(std::thread::spawn(move || {
                let agent = common::agent();
                let mut errs = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(crng.gen_range(10..80)));
                    let path = if crng.gen_bool(0.5) {
                        "_flush"
                    } else {
                        "_refresh"
                    };
                    match try_request(&agent, "POST", &format!("{url}/{INDEX}/{path}"), None) {
                        Ok((200, _)) => {
                            if path == "_flush" {
                                flushes.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        Ok((s, v)) => errs.push(format!("{path}: {s} {v}")),
                        Err(_) => break,
                    }
                }
                errs
            }))
        } else {
            None
        };
        let handles: Vec<_> = writers
            .drain(..)
            .map(|wr| {
                let (url, stop) = (node.url.clone(), stop.clone());
                std::thread::spawn(move || wr.run(url, cycle, stop))
            })
            .collect();
        let delay = rng.gen_range(50..=400);
        std::thread::sleep(Duration::from_millis(delay));
        node.kill();
        stop.store(true, Ordering::Relaxed);
        writers = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let chaos_errs = chaos.map(|h| h.join().unwrap()).unwrap_or_default();
        assert!(
            chaos_errs.is_empty(),
            "seed {seed:#x}, cycle {cycle}: flush/refresh failed: {chaos_errs:?}"
        );
        let failures: Vec<&String> = writers.iter().flat_map(|w| &w.failures).collect();
        assert!(
            failures.is_empty(),
            "seed {seed:#x}, cycle {cycle}: acknowledged responses break Elasticsearch semantics:\n{}",
            failures.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n")
        );
        let in_flight = writers
            .iter()
            .flat_map(|w| &w.ids)
            .filter(|o| o.in_flight.is_some())
            .count();
        total_in_flight += in_flight;
        println!(
            "cycle {cycle}: killed after {delay} ms; {} ops acknowledged so far, {in_flight} in flight, {} flushes",
            writers.iter().map(|w| w.acked_ops).sum::<u64>(),
            flushes.load(Ordering::Relaxed)
        );
    }
    // The last crash is verified on a final restart, which must then take writes again.
    let node = Node::start_on(&data, &[]);
    verify(&node, &mut writers, CYCLES - 1, seed);
    let (s, v) = node.req(
        "PUT",
        &format!("/{INDEX}/_doc/after-the-storm?refresh=true"),
        Some(&json!({"n": -1})),
    );
    assert_eq!(s, 201, "write after the last restart: {v}");
    let acked: u64 = writers.iter().map(|w| w.acked_ops).sum();
    println!("{acked} acknowledged operations, {total_in_flight} in flight at a crash");
    assert!(acked > 0, "no operation was ever acknowledged");
}
