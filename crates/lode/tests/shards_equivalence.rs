//! Multi-shard equals single-shard: the same ~2,000 deterministic documents (plus the same
//! updates and deletes) in an index with 1 shard and one with 5; every query and aggregation
//! whose result Elasticsearch defines independently of the shard count must answer the same.
//!
//! What is compared, and why only that:
//! - Hits only for sorted queries with a unique tie-breaker (`uid`), or filters. BM25 scores
//!   legitimately differ per shard in Elasticsearch (per-shard term statistics) unless
//!   `search_type=dfs_query_then_fetch` is used; see `dfs_query_then_fetch_scores_match`.
//! - `terms` aggregations: Elasticsearch's counts are exact across shards when ordered by
//!   `_key` (every key of the global first `size` is also in each shard's first `shard_size`),
//!   or when `shard_size` is at least the field's cardinality. With `size` < cardinality and
//!   `_count` order, counts can legitimately be approximate, so those are not compared, and
//!   `doc_count_error_upper_bound` is only compared where it must be 0.
//! - Floating sums/averages: equal up to summation order (relative 1e-9). `cardinality`
//!   (HyperLogLog++) and `percentiles` (t-digest) are approximations: compared with tolerances.
//!
//! Besides the two indices agreeing, several answers are also checked against the expected
//! values computed here from the documents.

mod common;

use common::Node;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

const DOCS: usize = 2000;
const ONE: &str = "one_shard";
const FIVE: &str = "five_shards";
const TAGS: usize = 40;
const WORDS: &[&str] = &[
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
    "uniform", "victor", "whiskey", "xray", "yankee", "zulu", "search", "engine", "shard", "lode",
];
/// 2023-01-01T00:00:00Z in epoch milliseconds.
const EPOCH_2023: i64 = 1_672_531_200_000;

#[derive(Clone, Debug)]
struct Doc {
    uid: String,
    n: i64,
    price: Option<f64>,
    tag: String,
    text: String,
    date_ms: i64,
    flag: bool,
    routing: Option<String>,
}

impl Doc {
    fn source(&self) -> Value {
        let mut v = json!({
            "uid": self.uid,
            "n": self.n,
            "tag": self.tag,
            "text": self.text,
            "date": iso(self.date_ms),
            "flag": self.flag,
        });
        if let Some(p) = self.price {
            v["price"] = json!(p);
        }
        v
    }
}

fn iso(ms: i64) -> String {
    // Days from civil (Howard Hinnant), enough for an ISO-8601 UTC timestamp.
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn corpus() -> Vec<Doc> {
    let mut rng = StdRng::seed_from_u64(0x5_4A2D);
    (0..DOCS)
        .map(|i| {
            // A skewed tag distribution: low tags are frequent.
            let a: usize = rng.gen_range(0..TAGS);
            let b: usize = rng.gen_range(0..TAGS);
            let words: Vec<&str> = (0..rng.gen_range(3..10))
                .map(|_| WORDS[rng.gen_range(0..WORDS.len())])
                .collect();
            Doc {
                uid: format!("d{i:05}"),
                n: ((i * 7919) % 1000) as i64,
                price: (i % 13 != 0).then(|| rng.gen_range(0..2000) as f64 / 16.0),
                tag: format!("t{:02}", a.min(b)),
                text: words.join(" "),
                date_ms: EPOCH_2023 + rng.gen_range(0..365 * 86_400_000i64),
                flag: rng.gen_bool(0.3),
                routing: (i % 7 == 0).then(|| format!("r{}", i % 5)),
            }
        })
        .collect()
}

fn bulk_line(index: &str, d: &Doc) -> String {
    let mut meta = json!({"_index": index, "_id": d.uid});
    if let Some(r) = &d.routing {
        meta["routing"] = json!(r);
    }
    format!("{}\n{}\n", json!({ "index": meta }), d.source())
}

/// Loads both indices with the same operations; returns the final documents.
fn load(n: &Node) -> Vec<Doc> {
    for (name, shards) in [(ONE, 1), (FIVE, 5)] {
        let (s, v) = n.req(
            "PUT",
            &format!("/{name}"),
            Some(&json!({
                "settings": {"number_of_shards": shards, "refresh_interval": "-1"},
                "mappings": {"properties": {
                    "uid": {"type": "keyword"},
                    "n": {"type": "long"},
                    "price": {"type": "double"},
                    "tag": {"type": "keyword"},
                    "text": {"type": "text"},
                    "date": {"type": "date"},
                    "flag": {"type": "boolean"}
                }}
            })),
        );
        assert_eq!(s, 200, "{v}");
    }
    let mut docs = corpus();
    for name in [ONE, FIVE] {
        // Several bulks with refreshes between them: several segments per shard.
        for chunk in docs.chunks(450) {
            let body: String = chunk.iter().map(|d| bulk_line(name, d)).collect();
            let (s, v) = n.bulk("/_bulk", &body);
            assert_eq!((s, &v["errors"]), (200, &json!(false)), "{v}");
            n.req("POST", &format!("/{name}/_refresh"), None);
        }
    }
    // Updates (price changes, a tag move) and deletes, identical on both: deleted docs in
    // segments must not leak into any count.
    let mut body = String::new();
    let mut deleted = BTreeSet::new();
    for (i, d) in docs.iter_mut().enumerate() {
        if i % 50 == 3 {
            deleted.insert(d.uid.clone());
            let mut meta = json!({"_id": d.uid});
            if let Some(r) = &d.routing {
                meta["routing"] = json!(r);
            }
            body.push_str(&format!("{}\n", json!({ "delete": meta })));
        } else if i % 31 == 5 {
            d.price = Some(999.5);
            d.tag = "t39".into();
            let mut meta = json!({"_id": d.uid});
            if let Some(r) = &d.routing {
                meta["routing"] = json!(r);
            }
            body.push_str(&format!(
                "{}\n{}\n",
                json!({ "update": meta }),
                json!({"doc": {"price": 999.5, "tag": "t39"}})
            ));
        }
    }
    for name in [ONE, FIVE] {
        let (s, v) = n.bulk(&format!("/{name}/_bulk?refresh=true"), &body);
        assert_eq!((s, &v["errors"]), (200, &json!(false)), "{v}");
    }
    docs.retain(|d| !deleted.contains(&d.uid));
    docs
}

fn search(n: &Node, index: &str, body: &Value) -> Value {
    let (s, v) = n.req("POST", &format!("/{index}/_search"), Some(body));
    assert_eq!(s, 200, "{index} {body}: {v}");
    v
}

fn ids(v: &Value) -> Vec<String> {
    v["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["_id"].as_str().unwrap().to_string())
        .collect()
}

fn sorts(v: &Value) -> Vec<Value> {
    v["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["sort"].clone())
        .collect()
}

/// Runs `body` on both indices and checks hits (ids and sort values, in order) and totals.
fn same_hits(n: &Node, body: &Value) -> (Value, Value) {
    let a = search(n, ONE, body);
    let b = search(n, FIVE, body);
    assert_eq!(a["hits"]["total"], b["hits"]["total"], "total of {body}");
    assert_eq!(ids(&a), ids(&b), "hits of {body}");
    assert_eq!(sorts(&a), sorts(&b), "sort values of {body}");
    assert_eq!(b["_shards"]["total"], 5, "{b}");
    assert_eq!(b["_shards"]["failed"], 0, "{b}");
    (a, b)
}

/// Every hit of a sorted match_all through `search_after` pages of 137, stopping once `limit`
/// hits are collected (or after 100 pages, so a pagination that never ends fails the test).
fn paginate(n: &Node, index: &str, sort: &Value, limit: usize) -> Vec<String> {
    let mut all = Vec::new();
    let mut after: Option<Value> = None;
    for _ in 0..100 {
        let mut body =
            json!({"sort": sort, "size": 137, "query": {"match_all": {}}, "_source": false});
        if let Some(a) = &after {
            body["search_after"] = a.clone();
        }
        let v = search(n, index, &body);
        let hits = v["hits"]["hits"].as_array().unwrap();
        if hits.is_empty() {
            return all;
        }
        after = Some(hits.last().unwrap()["sort"].clone());
        all.extend(ids(&v));
        if all.len() >= limit {
            all.truncate(limit);
            return all;
        }
    }
    all
}

fn total(v: &Value) -> u64 {
    v["hits"]["total"]["value"].as_u64().unwrap()
}

/// Compares two JSON trees; numbers within `rel` relative (or 1e-9 absolute) tolerance.
fn assert_close(a: &Value, b: &Value, rel: f64, path: &str) {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            let tol = (x.abs().max(y.abs()) * rel).max(1e-9);
            assert!((x - y).abs() <= tol, "{path}: {x} vs {y}");
        }
        (Value::Object(x), Value::Object(y)) => {
            let kx: BTreeSet<_> = x.keys().collect();
            let ky: BTreeSet<_> = y.keys().collect();
            assert_eq!(kx, ky, "{path}: keys");
            for (k, v) in x {
                assert_close(v, &y[k], rel, &format!("{path}.{k}"));
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{path}: length");
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                assert_close(p, q, rel, &format!("{path}[{i}]"));
            }
        }
        _ => assert_eq!(a, b, "{path}"),
    }
}

fn aggs(n: &Node, index: &str, aggs: &Value) -> Value {
    let v = search(n, index, &json!({"size": 0, "aggs": aggs}));
    v["aggregations"].clone()
}

#[test]
fn five_shards_answer_like_one() {
    let node = Node::start();
    let docs = load(&node);
    let live = docs.len() as u64;
    assert!(live > 1900, "{live}");

    // --- counts and filters, also against the expected values ---
    let by_tag = |t: &str| docs.iter().filter(|d| d.tag == t).count() as u64;
    let mut queries: Vec<(Value, u64)> = vec![
        (json!({"match_all": {}}), live),
        (json!({"term": {"tag": "t00"}}), by_tag("t00")),
        (json!({"term": {"tag": "t39"}}), by_tag("t39")),
        (
            json!({"range": {"n": {"gte": 100, "lt": 350}}}),
            docs.iter().filter(|d| (100..350).contains(&d.n)).count() as u64,
        ),
        (
            json!({"range": {"date": {"gte": "2023-03-01", "lt": "2023-06-01"}}}),
            docs.iter()
                .filter(|d| {
                    let (lo, hi) = (EPOCH_2023 + 59 * 86_400_000, EPOCH_2023 + 151 * 86_400_000);
                    d.date_ms >= lo && d.date_ms < hi
                })
                .count() as u64,
        ),
        (
            json!({"bool": {
                "must": [{"range": {"price": {"gte": 10.0}}}],
                "filter": [{"term": {"flag": true}}],
                "must_not": [{"terms": {"tag": ["t00", "t01"]}}],
            }}),
            docs.iter()
                .filter(|d| {
                    d.price.is_some_and(|p| p >= 10.0) && d.flag && d.tag != "t00" && d.tag != "t01"
                })
                .count() as u64,
        ),
        (
            json!({"bool": {
                "should": [
                    {"term": {"tag": "t02"}},
                    {"range": {"n": {"lt": 50}}},
                    {"match": {"text": "zulu"}}
                ],
                "minimum_should_match": 2
            }}),
            docs.iter()
                .filter(|d| {
                    [
                        d.tag == "t02",
                        d.n < 50,
                        d.text.split(' ').any(|w| w == "zulu"),
                    ]
                    .iter()
                    .filter(|b| **b)
                    .count()
                        >= 2
                })
                .count() as u64,
        ),
        (
            json!({"match": {"text": {"query": "alpha bravo", "operator": "and"}}}),
            docs.iter()
                .filter(|d| {
                    let w: BTreeSet<&str> = d.text.split(' ').collect();
                    w.contains("alpha") && w.contains("bravo")
                })
                .count() as u64,
        ),
        (
            json!({"bool": {"must_not": {"exists": {"field": "price"}}}}),
            docs.iter().filter(|d| d.price.is_none()).count() as u64,
        ),
    ];
    queries.push((
        json!({"ids": {"values": ["d00000", "d00003", "d00007", "d01999", "nope"]}}),
        // d00003 is deleted (i % 50 == 3).
        3,
    ));
    for (q, expected) in &queries {
        for sort in [
            json!([{"n": "asc"}, {"uid": "asc"}]),
            json!([{"price": {"order": "desc", "missing": "_last"}}, {"uid": "desc"}]),
            json!([{"date": "desc"}, {"uid": "asc"}]),
        ] {
            let body = json!({"query": q, "sort": sort, "size": 60, "track_total_hits": true});
            let (a, _) = same_hits(&node, &body);
            assert_eq!(total(&a), *expected, "total of {q}");
            assert_eq!(
                a["hits"]["total"]["relation"], "eq",
                "{q}: {}",
                a["hits"]["total"]
            );
        }
        let (sa, sa_v) = node.req(
            "POST",
            &format!("/{ONE}/_count"),
            Some(&json!({"query": q})),
        );
        let (sb, sb_v) = node.req(
            "POST",
            &format!("/{FIVE}/_count"),
            Some(&json!({"query": q})),
        );
        assert_eq!((sa, sb), (200, 200), "{sa_v} {sb_v}");
        assert_eq!(sa_v["count"].as_u64(), Some(*expected), "_count {q}");
        assert_eq!(sb_v["count"].as_u64(), Some(*expected), "_count {q}");
    }

    // Sort order itself against the expectation: n asc, uid asc.
    let mut expected_order: Vec<&Doc> = docs.iter().collect();
    expected_order.sort_by(|a, b| a.n.cmp(&b.n).then(a.uid.cmp(&b.uid)));
    let (a, _) = same_hits(
        &node,
        &json!({"sort": [{"n": "asc"}, {"uid": "asc"}], "size": 100}),
    );
    let want: Vec<String> = expected_order[..100]
        .iter()
        .map(|d| d.uid.clone())
        .collect();
    assert_eq!(ids(&a), want);

    // --- search_after through every page ---
    for sort in [
        json!([{"n": "desc"}, {"uid": "asc"}]),
        json!([{"price": {"order": "asc", "missing": "_last"}}, {"uid": "asc"}]),
        json!([{"tag": "asc"}, {"date": "desc"}, {"uid": "desc"}]),
    ] {
        // Pages are compared up to the documents without a price (see
        // `search_after_pages_through_missing_numeric_values`, a known bug).
        let with_price = docs.iter().filter(|d| d.price.is_some()).count();
        let limit = if sort[0].get("price").is_some() {
            with_price
        } else {
            live as usize
        };
        let one = paginate(&node, ONE, &sort, limit);
        let five = paginate(&node, FIVE, &sort, limit);
        assert_eq!(one.len(), limit, "{sort}: pages cover every doc once");
        assert_eq!(
            one.iter().collect::<BTreeSet<_>>().len(),
            limit,
            "{sort}: a doc on two pages"
        );
        assert_eq!(one, five, "search_after order for {sort}");
    }

    // --- from/size pages ---
    let sort = json!([{"n": "asc"}, {"uid": "asc"}]);
    let mut concatenated = Vec::new();
    for from in (0..live as usize).step_by(250) {
        let (a, _) = same_hits(&node, &json!({"sort": sort, "from": from, "size": 250}));
        concatenated.extend(ids(&a));
    }
    let want: Vec<String> = expected_order.iter().map(|d| d.uid.clone()).collect();
    assert_eq!(concatenated, want, "from/size pages in order");
    same_hits(&node, &json!({"sort": sort, "from": 1990, "size": 50}));

    // --- track_total_hits ---
    for tth in [
        json!(true),
        json!(false),
        json!(100),
        json!(5000),
        json!(live),
    ] {
        let body = json!({"query": {"range": {"n": {"gte": 0}}}, "track_total_hits": tth,
                          "sort": [{"uid": "asc"}], "size": 5});
        let (a, _) = same_hits(&node, &body);
        match &tth {
            Value::Bool(false) => assert!(a["hits"].get("total").is_none(), "{a}"),
            Value::Number(k) if k.as_u64().unwrap() < live => {
                assert_eq!(
                    a["hits"]["total"],
                    json!({"value": k.as_u64().unwrap(), "relation": "gte"}),
                    "{tth}"
                )
            }
            _ => assert_eq!(
                a["hits"]["total"],
                json!({"value": live, "relation": "eq"}),
                "{tth}"
            ),
        }
    }

    // --- aggregations ---
    let mut tag_counts: BTreeMap<&str, u64> = BTreeMap::new();
    for d in &docs {
        *tag_counts.entry(d.tag.as_str()).or_default() += 1;
    }
    assert!(tag_counts.len() > 20, "{tag_counts:?}");
    let exact = json!({
        "tags_by_key": {"terms": {"field": "tag", "size": 7, "order": {"_key": "asc"}}},
        "tags_by_key_desc": {"terms": {"field": "tag", "size": 4, "order": {"_key": "desc"}},
                             "aggs": {"n_sum": {"sum": {"field": "n"}}}},
        "tags_full": {"terms": {"field": "tag", "size": 10, "shard_size": 100}},
        "n_sum": {"sum": {"field": "n"}},
        "n_min": {"min": {"field": "n"}},
        "n_max": {"max": {"field": "n"}},
        "n_stats": {"stats": {"field": "n"}},
        "price_count": {"value_count": {"field": "price"}},
        "price_min": {"min": {"field": "price"}},
        "price_max": {"max": {"field": "price"}},
        "n_hist": {"histogram": {"field": "n", "interval": 100}},
        "price_hist": {"histogram": {"field": "price", "interval": 25, "min_doc_count": 1}},
        "monthly": {"date_histogram": {"field": "date", "calendar_interval": "month"}},
        "price_ranges": {"range": {"field": "price", "ranges": [
            {"to": 25}, {"from": 25, "to": 75}, {"from": 75}
        ]}},
        "no_price": {"missing": {"field": "price"}},
        "flagged": {"filter": {"term": {"flag": true}},
                    "aggs": {"n_max": {"max": {"field": "n"}}}},
    });
    let a = aggs(&node, ONE, &exact);
    let b = aggs(&node, FIVE, &exact);
    assert_close(&a, &b, 0.0, "aggs");
    // The expected values themselves.
    let want_keys: Vec<&str> = tag_counts.keys().take(7).copied().collect();
    let got_keys: Vec<&str> = a["tags_by_key"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["key"].as_str().unwrap())
        .collect();
    assert_eq!(got_keys, want_keys);
    for bucket in a["tags_by_key"]["buckets"].as_array().unwrap() {
        let k = bucket["key"].as_str().unwrap();
        assert_eq!(bucket["doc_count"].as_u64(), Some(tag_counts[k]), "{k}");
    }
    let shown: u64 = want_keys.iter().map(|k| tag_counts[k]).sum();
    assert_eq!(
        a["tags_by_key"]["sum_other_doc_count"].as_u64(),
        Some(live - shown)
    );
    assert_eq!(a["tags_full"]["doc_count_error_upper_bound"], 0);
    assert_eq!(b["tags_full"]["doc_count_error_upper_bound"], 0);
    let mut by_count: Vec<(&str, u64)> = tag_counts.iter().map(|(k, v)| (*k, *v)).collect();
    by_count.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(y.0)));
    let got: Vec<(String, u64)> = a["tags_full"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["key"].as_str().unwrap().to_string(),
                b["doc_count"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, u64)> = by_count[..10]
        .iter()
        .map(|(k, c)| (k.to_string(), *c))
        .collect();
    assert_eq!(got, want, "terms by count with shard_size >= cardinality");
    assert_eq!(
        a["n_sum"]["value"].as_f64(),
        Some(docs.iter().map(|d| d.n).sum::<i64>() as f64)
    );
    assert_eq!(
        a["price_count"]["value"].as_u64(),
        Some(docs.iter().filter(|d| d.price.is_some()).count() as u64)
    );
    assert_eq!(
        a["no_price"]["doc_count"].as_u64(),
        Some(docs.iter().filter(|d| d.price.is_none()).count() as u64)
    );
    let monthly: u64 = a["monthly"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["doc_count"].as_u64().unwrap())
        .sum();
    assert_eq!(monthly, live);
    assert_eq!(a["monthly"]["buckets"].as_array().unwrap().len(), 12);
    assert_eq!(
        a["monthly"]["buckets"][0]["key_as_string"],
        "2023-01-01T00:00:00.000Z"
    );

    // Floating point sums: equal up to summation order.
    let float = json!({
        "price_sum": {"sum": {"field": "price"}},
        "price_avg": {"avg": {"field": "price"}},
        "price_stats": {"stats": {"field": "price"}},
        "n_avg": {"avg": {"field": "n"}},
        "price_ext": {"extended_stats": {"field": "price"}},
        "by_tag": {"terms": {"field": "tag", "size": 5, "order": {"_key": "asc"}},
                   "aggs": {"avg_price": {"avg": {"field": "price"}}}},
        "per_month": {"date_histogram": {"field": "date", "calendar_interval": "month"},
                      "aggs": {"s": {"sum": {"field": "price"}}}},
    });
    let a = aggs(&node, ONE, &float);
    let b = aggs(&node, FIVE, &float);
    assert_close(&a, &b, 1e-9, "float aggs");
    let want_sum: f64 = docs.iter().filter_map(|d| d.price).sum();
    assert!((a["price_sum"]["value"].as_f64().unwrap() - want_sum).abs() < 1e-6 * want_sum);

    // Approximations: HyperLogLog++ cardinality, t-digest percentiles.
    let approx = json!({
        "tag_card": {"cardinality": {"field": "tag"}},
        "n_card": {"cardinality": {"field": "n"}},
        "uid_card": {"cardinality": {"field": "uid"}},
        "price_pct": {"percentiles": {"field": "price", "percents": [1, 25, 50, 75, 99]}},
    });
    let a = aggs(&node, ONE, &approx);
    let b = aggs(&node, FIVE, &approx);
    let distinct_n = docs.iter().map(|d| d.n).collect::<BTreeSet<_>>().len() as f64;
    for (name, truth) in [
        ("tag_card", tag_counts.len() as f64),
        ("n_card", distinct_n),
        ("uid_card", live as f64),
    ] {
        for (which, v) in [(ONE, &a), (FIVE, &b)] {
            let got = v[name]["value"].as_f64().unwrap();
            assert!(
                (got - truth).abs() <= truth * 0.05,
                "{which} {name}: {got} vs {truth}"
            );
        }
    }
    let mut prices: Vec<f64> = docs.iter().filter_map(|d| d.price).collect();
    prices.sort_by(|x, y| x.partial_cmp(y).unwrap());
    let range = prices.last().unwrap() - prices[0];
    for p in ["1.0", "25.0", "50.0", "75.0", "99.0"] {
        let x = a["price_pct"]["values"][p].as_f64().unwrap();
        let y = b["price_pct"]["values"][p].as_f64().unwrap();
        assert!((x - y).abs() <= range * 0.02, "percentile {p}: {x} vs {y}");
        let rank = p.parse::<f64>().unwrap() / 100.0 * (prices.len() - 1) as f64;
        let truth = prices[rank.round() as usize];
        assert!(
            (x - truth).abs() <= range * 0.02,
            "percentile {p}: {x} vs {truth}"
        );
    }

    // Routed documents: found with their routing on both.
    for d in docs.iter().filter(|d| d.routing.is_some()).take(20) {
        for index in [ONE, FIVE] {
            let (s, v) = node.req(
                "GET",
                &format!(
                    "/{index}/_doc/{}?routing={}",
                    d.uid,
                    d.routing.as_ref().unwrap()
                ),
                None,
            );
            assert_eq!(s, 200, "{index} {}: {v}", d.uid);
            assert_eq!(v["_source"]["uid"], json!(d.uid));
        }
    }
}

#[test]
fn search_with_routing_reaches_only_the_routed_shard() {
    let node = Node::start();
    let docs = load(&node);
    let routed_r1: BTreeSet<String> = docs
        .iter()
        .filter(|d| d.routing.as_deref() == Some("r1"))
        .map(|d| d.uid.clone())
        .collect();
    assert!(!routed_r1.is_empty());
    let (s, v) = node.req(
        "POST",
        &format!("/{FIVE}/_search?routing=r1"),
        Some(&json!({"size": 2000, "_source": false, "track_total_hits": true})),
    );
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["_shards"]["total"], 1, "{}", v["_shards"]);
    let got: BTreeSet<String> = ids(&v).into_iter().collect();
    assert!(routed_r1.is_subset(&got), "routing=r1 misses routed docs");
    assert!(got.len() < docs.len(), "routing=r1 searched every shard");
    // Exactly the docs on r1's shard: a GET routed by r1 goes to that shard.
    for d in docs.iter().step_by(23) {
        let (s, _) = node.req("GET", &format!("/{FIVE}/_doc/{}?routing=r1", d.uid), None);
        assert_eq!(
            s == 200,
            got.contains(&d.uid),
            "{}: GET routed by r1 gives {s}",
            d.uid
        );
    }
}

#[test]
fn search_after_pages_through_missing_numeric_values() {
    let node = Node::start();
    let docs = load(&node);
    let live = docs.len();
    for sort in [
        json!([{"price": {"order": "asc", "missing": "_last"}}, {"uid": "asc"}]),
        json!([{"price": {"order": "desc"}}, {"uid": "desc"}]),
        json!([{"price": {"order": "asc", "missing": "_first"}}, {"uid": "asc"}]),
    ] {
        let one = paginate(&node, ONE, &sort, usize::MAX);
        assert_eq!(one.len(), live, "{sort}: pages cover every doc once");
        assert_eq!(
            one.iter().collect::<BTreeSet<_>>().len(),
            live,
            "{sort}: a doc on two pages"
        );
        assert_eq!(one, paginate(&node, FIVE, &sort, usize::MAX), "{sort}");
    }
}

#[test]
fn dfs_query_then_fetch_scores_match() {
    let node = Node::start();
    let docs = load(&node);
    let _ = docs;
    for q in [
        json!({"match": {"text": "alpha"}}),
        json!({"match": {"text": "zulu lode shard"}}),
    ] {
        let body = json!({"query": q, "size": 50});
        let mut runs = Vec::new();
        for index in [ONE, FIVE] {
            let (s, v) = node.req(
                "POST",
                &format!("/{index}/_search?search_type=dfs_query_then_fetch"),
                Some(&body),
            );
            assert_eq!(s, 200, "{v}");
            let scores: BTreeMap<String, f64> = v["hits"]["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| {
                    (
                        h["_id"].as_str().unwrap().to_string(),
                        h["_score"].as_f64().unwrap(),
                    )
                })
                .collect();
            runs.push((
                v["hits"]["total"].clone(),
                v["hits"]["max_score"].as_f64(),
                scores,
            ));
        }
        assert_eq!(runs[0].0, runs[1].0, "{q}");
        let (m1, m5) = (runs[0].1.unwrap(), runs[1].1.unwrap());
        assert!((m1 - m5).abs() < 1e-4, "{q}: max_score {m1} vs {m5}");
        for (id, s) in &runs[0].2 {
            if let Some(t) = runs[1].2.get(id) {
                assert!((s - t).abs() < 1e-4, "{q}: [{id}] {s} vs {t}");
            }
        }
    }
}
