//! Aggregation tests: small in-RAM indices built through the engine's own mapping, schema and
//! document code, aggregated with ES JSON; every expectation is computed independently from
//! the same generated documents.

use super::{parse_aggs, run_aggs, run_aggs_for_index, run_aggs_multi, AggTarget};
use lode_analysis::AnalysisRegistry;
use lode_dates::{calendar_floor, calendar_next, CalendarUnit, DateFormat, Tz};
use lode_engine::document::{DocParser, Parsed};
use lode_engine::mapping::{self, Mapping};
use lode_engine::schema::{self, MetaFields};
use lode_engine::shard::ShardSearcher;
use lode_engine::{EsError, EsResult};
use lode_query::{build_query, parse_query, QueryContext};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use tantivy::schema::Schema;
use tantivy::tokenizer::TextAnalyzer;
use tantivy::IndexWriter;

/// 2022-01-10T00:00:00Z, the fixed "now" of these tests.
const NOW: i64 = 1_641_772_800_000;
/// 2021-12-27T00:00:00+08:00, the start of the reference `trend` query.
const TREND_FROM: i64 = 1_640_534_400_000;
const TREND_TO: i64 = 1_640_966_400_000;
const DAY: i64 = 86_400_000;

const TYPES: [&str; 6] = ["活期", "定期", "信用", "储蓄", "理财", "基金"];

fn mapping_json() -> Value {
    json!({"properties": {
        "acctId": {"type": "keyword"},
        "acctType": {"type": "keyword"},
        "balanceTypeName": {"type": "keyword"},
        "balance": {"type": "double"},
        "status": {"type": "integer"},
        "createdTime": {"type": "date", "format": "epoch_millis"},
        "created": {"type": "date"},
        "tags": {"type": "keyword"},
        "active": {"type": "boolean"},
        "remark": {"type": "text"},
        "nodv": {"type": "long", "doc_values": false}
    }})
}

/// A small deterministic generator (no external state, same documents on every run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() << 31) ^ self.next()) % n
    }
}

#[derive(Clone, Debug)]
struct Doc {
    id: String,
    acct_type: &'static str,
    balance_type: String,
    balance: Option<f64>,
    status: i64,
    created: i64,
    tags: Vec<String>,
    active: bool,
}

impl Doc {
    fn source(&self) -> Value {
        let mut v = json!({
            "acctId": format!("A{:011}", self.id.parse::<u64>().unwrap() % 37),
            "acctType": self.acct_type,
            "balanceTypeName": self.balance_type,
            "status": self.status,
            "createdTime": self.created,
            "created": DateFormat::default_es().format_millis(self.created, &Tz::utc()),
            "tags": self.tags,
            "active": self.active,
            "remark": "note",
            "nodv": 1
        });
        if let Some(b) = self.balance {
            v["balance"] = json!(b);
        }
        v
    }
}

fn docs(n: usize) -> Vec<Doc> {
    let mut r = Lcg(42);
    (0..n)
        .map(|i| {
            // Skewed type distribution, 30 balance types, two decimals of money.
            let t = (r.below(6) * r.below(6) / 5) as usize;
            let balance =
                (r.below(5) != 0).then(|| (r.below(10_000_000) as f64) / 100.0 - 20_000.0);
            let tags = (0..r.below(3))
                .map(|_| format!("t{}", r.below(5)))
                .collect();
            Doc {
                id: (i + 1).to_string(),
                acct_type: TYPES[t],
                balance_type: format!("类型{:02}", r.below(30)),
                balance,
                status: r.below(4) as i64,
                created: TREND_FROM - 3 * DAY + r.below(12 * DAY as u64) as i64,
                tags,
                active: r.below(3) == 0,
            }
        })
        .collect()
}

struct TestIndex {
    mapping: Mapping,
    schema: Schema,
    analysis: AnalysisRegistry,
    meta: MetaFields,
    shards: Vec<ShardSearcher>,
}

impl TestIndex {
    /// One tantivy index per shard; each shard's documents are split in `segments` commits.
    fn new(shards: &[&[Doc]], segments: usize) -> TestIndex {
        let analysis = AnalysisRegistry::new(None).unwrap();
        let mapping = mapping::compile(&mapping_json(), &analysis).unwrap();
        let schema = schema::extend(None, &mapping);
        let meta = MetaFields::of(&schema);
        let mut searchers = Vec::new();
        for (shard_id, docs) in shards.iter().enumerate() {
            let index = lode_engine::source_store::create_in_ram(schema.clone()).unwrap();
            for name in analysis.analyzer_names() {
                index
                    .tokenizers()
                    .register(&name, TextAnalyzer::from(analysis.analyzer(&name).unwrap()));
            }
            let parser = DocParser {
                mapping: &mapping,
                schema: &schema,
                meta,
                nested_objects_limit: lode_engine::document::DEFAULT_NESTED_OBJECTS_LIMIT,
            };
            let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
            // The segments stay as committed: a merge would concatenate them in tantivy's
            // order, not the order the documents were indexed in.
            writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
            let per_segment = docs.len().div_ceil(segments.max(1)).max(1);
            let mut seq_no = 0;
            for chunk in docs.chunks(per_segment) {
                for d in chunk {
                    let source = d.source();
                    match parser.parse(&d.id, &source).unwrap() {
                        Parsed::Doc(parsed) => {
                            let mut doc = parsed.root;
                            doc.add_text(meta.id, &d.id);
                            doc.add_u64(meta.seq_no, seq_no);
                            seq_no += 1;
                            doc.add_bytes(
                                meta.source,
                                serde_json::to_vec(&source).unwrap().as_slice(),
                            );
                            let block = parsed.nested.into_iter().chain(std::iter::once(doc));
                            writer
                                .run(
                                    block
                                        .map(tantivy::indexer::UserOperation::Add)
                                        .collect::<Vec<_>>(),
                                )
                                .unwrap();
                        }
                        Parsed::MappingUpdate(u) => {
                            panic!("doc {} needs a mapping update: {u}", d.id)
                        }
                    }
                }
                writer.commit().unwrap();
            }
            let reader = index.reader().unwrap();
            reader.reload().unwrap();
            searchers.push(
                ShardSearcher::open(shard_id, reader.searcher(), schema.clone(), meta).unwrap(),
            );
        }
        TestIndex {
            mapping,
            schema,
            analysis,
            meta,
            shards: searchers,
        }
    }

    fn ctx(&self) -> QueryContext<'_> {
        QueryContext {
            mapping: &self.mapping,
            schema: &self.schema,
            meta: self.meta,
            analysis: &self.analysis,
            now_millis: NOW,
            max_terms_count: 65_536,
            max_regex_length: 1000,
            max_clause_count: lode_query::MAX_CLAUSE_COUNT,
            query_string_lenient: false,
            default_fields: Default::default(),
            terms_lookups: None,
            script_errors: Default::default(),
            runtime: Default::default(),
            allow_expensive_queries: true,
        }
    }

    fn run_with(&self, query: Option<Value>, aggs: Value, typed: bool) -> EsResult<Value> {
        let req = parse_aggs(&aggs)?;
        let ctx = self.ctx();
        let q = match query {
            Some(q) => build_query(&parse_query(&q)?, &ctx)?,
            None => Box::new(tantivy::query::AllQuery) as Box<dyn tantivy::query::Query>,
        };
        run_aggs_for_index(&req, &ctx, "test", &self.shards, &*q, typed)
    }

    fn run(&self, aggs: Value) -> Value {
        self.run_with(None, aggs, false).unwrap()
    }
}

fn close(a: f64, b: f64) -> bool {
    a == b || ((a - b).abs() <= 1e-9 * a.abs().max(b.abs()))
}

fn assert_close(actual: &Value, expected: f64, what: &str) {
    let a = actual
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: not a number: {actual}"));
    assert!(close(a, expected), "{what}: {a} != {expected}");
}

/// Expected terms buckets: counts per key, ordered by count desc then key asc.
fn expected_terms<'a>(keys: impl Iterator<Item = &'a str>) -> Vec<(String, u64)> {
    let mut m: BTreeMap<String, u64> = BTreeMap::new();
    for k in keys {
        *m.entry(k.to_string()).or_default() += 1;
    }
    let mut v: Vec<_> = m.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

fn bucket_pairs(agg: &Value) -> Vec<(String, u64)> {
    agg["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let k = match &b["key"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k, b["doc_count"].as_u64().unwrap())
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The reference workload shapes

#[test]
fn bucket_terms_balance_type_name() {
    let all = docs(600);
    let ix = TestIndex::new(&[&all], 3);
    let out = ix.run(json!({"typeName": {"terms": {"field": "balanceTypeName", "size": 50}}}));
    let agg = &out["typeName"];
    let expected = expected_terms(all.iter().map(|d| d.balance_type.as_str()));
    assert_eq!(expected.len(), 30);
    assert_eq!(bucket_pairs(agg), expected);
    assert_eq!(agg["sum_other_doc_count"], json!(0));
    assert_eq!(agg["doc_count_error_upper_bound"], json!(0));
}

#[test]
fn group_terms_with_sum() {
    let all = docs(500);
    let ix = TestIndex::new(&[&all], 2);
    let out = ix.run(
        json!({"by_acct_type": {"terms": {"field": "acctType", "size": 10},
        "aggs": {"total_balance": {"sum": {"field": "balance"}}}}}),
    );
    let agg = &out["by_acct_type"];
    let expected = expected_terms(all.iter().map(|d| d.acct_type));
    assert_eq!(bucket_pairs(agg), expected);
    for b in agg["buckets"].as_array().unwrap() {
        let key = b["key"].as_str().unwrap();
        let sum: f64 = all
            .iter()
            .filter(|d| d.acct_type == key)
            .filter_map(|d| d.balance)
            .sum();
        assert_close(&b["total_balance"]["value"], sum, key);
    }
}

#[test]
fn extended_stats_balance() {
    let all = docs(400);
    let ix = TestIndex::new(&[&all], 2);
    let out = ix.run(json!({"balance_stats": {"extended_stats": {"field": "balance"}}}));
    let s = &out["balance_stats"];
    let v: Vec<f64> = all.iter().filter_map(|d| d.balance).collect();
    let n = v.len() as f64;
    let sum: f64 = v.iter().sum();
    let sq: f64 = v.iter().map(|x| x * x).sum();
    let avg = sum / n;
    let var = (sq - sum * sum / n) / n;
    let var_s = (sq - sum * sum / n) / (n - 1.0);
    assert_eq!(s["count"], json!(v.len()));
    assert_close(&s["min"], v.iter().cloned().fold(f64::MAX, f64::min), "min");
    assert_close(&s["max"], v.iter().cloned().fold(f64::MIN, f64::max), "max");
    assert_close(&s["avg"], avg, "avg");
    assert_close(&s["sum"], sum, "sum");
    assert_close(&s["sum_of_squares"], sq, "sum_of_squares");
    assert_close(&s["variance"], var, "variance");
    assert_close(&s["variance_population"], var, "variance_population");
    assert_close(&s["variance_sampling"], var_s, "variance_sampling");
    assert_close(&s["std_deviation"], var.sqrt(), "std_deviation");
    assert_close(
        &s["std_deviation_sampling"],
        var_s.sqrt(),
        "std_deviation_sampling",
    );
    assert_close(
        &s["std_deviation_bounds"]["upper"],
        avg + 2.0 * var.sqrt(),
        "upper",
    );
    assert_close(
        &s["std_deviation_bounds"]["lower"],
        avg - 2.0 * var.sqrt(),
        "lower",
    );
    assert_close(
        &s["std_deviation_bounds"]["upper_sampling"],
        avg + 2.0 * var_s.sqrt(),
        "upper_sampling",
    );
    let keys: Vec<&str> = s.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "count",
            "min",
            "max",
            "avg",
            "sum",
            "sum_of_squares",
            "variance",
            "variance_population",
            "variance_sampling",
            "std_deviation",
            "std_deviation_population",
            "std_deviation_sampling",
            "std_deviation_bounds"
        ]
    );
}

fn trend_aggs() -> Value {
    json!({"per_day": {"date_histogram": {"field": "createdTime", "calendar_interval": "1d",
        "time_zone": "+08:00", "min_doc_count": 0, "format": "yyyy-MM-dd"}}})
}

fn trend_query() -> Value {
    json!({"bool": {"filter": [{"range": {"createdTime": {"gte": TREND_FROM, "lt": TREND_TO}}}]}})
}

/// Expected day buckets in +08:00 from the first to the last matching day, empty days included.
fn expected_days(all: &[Doc]) -> Vec<(String, i64, u64)> {
    let off = 8 * 3_600_000;
    let mut counts: BTreeMap<i64, u64> = BTreeMap::new();
    for d in all
        .iter()
        .filter(|d| d.created >= TREND_FROM && d.created < TREND_TO)
    {
        let day = (d.created + off).div_euclid(DAY) * DAY - off;
        *counts.entry(day).or_default() += 1;
    }
    let (first, last) = (
        *counts.keys().next().unwrap(),
        *counts.keys().last().unwrap(),
    );
    let fmt = DateFormat::parse("yyyy-MM-dd").unwrap();
    let tz = Tz::parse("+08:00").unwrap();
    (0..=(last - first) / DAY)
        .map(|i| {
            let k = first + i * DAY;
            (
                fmt.format_millis(k, &tz),
                k,
                counts.get(&k).copied().unwrap_or(0),
            )
        })
        .collect()
}

fn day_buckets(agg: &Value) -> Vec<(String, i64, u64)> {
    agg["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["key_as_string"].as_str().unwrap().to_string(),
                b["key"].as_i64().unwrap(),
                b["doc_count"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn trend_date_histogram_days_in_plus_eight() {
    // Sparse documents so that some days in the range are empty.
    let all: Vec<Doc> = docs(300)
        .into_iter()
        .enumerate()
        .filter(|(i, d)| i % 7 == 0 || d.status == 0)
        .map(|(_, d)| d)
        .collect();
    let ix = TestIndex::new(&[&all], 2);
    let out = ix
        .run_with(Some(trend_query()), trend_aggs(), false)
        .unwrap();
    let got = day_buckets(&out["per_day"]);
    assert_eq!(got, expected_days(&all));
    assert_eq!(got[0].0, "2021-12-27");
    assert_eq!(got[0].1, TREND_FROM);
}

#[test]
fn trend_fills_empty_days() {
    let mut all = docs(40);
    // Only the first and the fourth day have documents.
    for (i, d) in all.iter_mut().enumerate() {
        d.created = TREND_FROM + if i % 2 == 0 { 3_600_000 } else { 3 * DAY + 5 };
    }
    let ix = TestIndex::new(&[&all], 1);
    let out = ix
        .run_with(Some(trend_query()), trend_aggs(), false)
        .unwrap();
    let got = day_buckets(&out["per_day"]);
    assert_eq!(
        got.iter().map(|b| b.2).collect::<Vec<_>>(),
        vec![20, 0, 0, 20]
    );
    assert_eq!(got[3].0, "2021-12-30");
}

// ---------------------------------------------------------------------------------------------
// Shards

#[test]
fn two_shards_equal_one_index() {
    let all = docs(700);
    let one = TestIndex::new(&[&all], 2);
    let (a, b) = all.split_at(300);
    let two = TestIndex::new(&[a, b], 2);
    for aggs in [
        json!({"t": {"terms": {"field": "balanceTypeName", "size": 50}}}),
        json!({"g": {"terms": {"field": "acctType", "size": 10}, "aggs": {"s": {"sum": {"field": "balance"}}}}}),
        json!({"total": {"sum": {"field": "balance"}}}),
    ] {
        let x = one.run(aggs.clone());
        let y = two.run(aggs);
        assert_json_close(&x, &y, "");
    }
    let x = one
        .run_with(Some(trend_query()), trend_aggs(), false)
        .unwrap();
    let y = two
        .run_with(Some(trend_query()), trend_aggs(), false)
        .unwrap();
    assert_eq!(x, y);
}

/// A shard's digest is fed its documents in the order they were indexed whatever the
/// segments (as ES's one `TDigestState` per shard): where refreshes cut a load, and the
/// order tantivy lists the segments in, do not change its percentiles.
#[test]
fn percentiles_do_not_depend_on_the_segments() {
    let all = docs(6000);
    let aggs = json!({
        "p": {"percentiles": {"field": "status", "percents": [50, 95, 99]}},
        "b": {"percentiles": {"field": "balance", "percents": [1, 50, 95]}},
        "t": {"terms": {"field": "acctType"},
              "aggs": {"m": {"median_absolute_deviation": {"field": "balance"}}}}
    });
    let one = TestIndex::new(&[&all], 1).run(aggs.clone());
    for segments in [2, 5, 9] {
        assert_eq!(
            TestIndex::new(&[&all], segments).run(aggs.clone()),
            one,
            "{segments}"
        );
    }
}

fn assert_json_close(a: &Value, b: &Value, path: &str) {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            assert!(
                close(x.as_f64().unwrap(), y.as_f64().unwrap()),
                "{path}: {x} != {y}"
            )
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(
                x.keys().collect::<Vec<_>>(),
                y.keys().collect::<Vec<_>>(),
                "{path}"
            );
            for (k, v) in x {
                assert_json_close(v, &y[k], &format!("{path}.{k}"));
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{path}");
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                assert_json_close(v, w, &format!("{path}[{i}]"));
            }
        }
        _ => assert_eq!(a, b, "{path}"),
    }
}

#[test]
fn terms_across_shards_count_errors_and_others() {
    let all = docs(900);
    let shards: Vec<Vec<Doc>> = (0..3)
        .map(|s| {
            all.iter()
                .filter(|d| d.id.parse::<usize>().unwrap() % 3 == s)
                .cloned()
                .collect()
        })
        .collect();
    let refs: Vec<&[Doc]> = shards.iter().map(|v| v.as_slice()).collect();
    let ix = TestIndex::new(&refs, 1);
    // shard_size 3 < 30 terms per shard: each shard reports its 3rd count as its error.
    let out = ix.run(
        json!({"t": {"terms": {"field": "balanceTypeName", "size": 2, "shard_size": 3,
        "show_term_doc_count_error": true}}}),
    );
    let agg = &out["t"];
    let mut shard_tops: Vec<Vec<(String, u64)>> = Vec::new();
    for s in &shards {
        shard_tops.push(
            expected_terms(s.iter().map(|d| d.balance_type.as_str()))
                .into_iter()
                .take(3)
                .collect(),
        );
    }
    let error: u64 = shard_tops.iter().map(|t| t[2].1).sum();
    assert_eq!(agg["doc_count_error_upper_bound"], json!(error));
    // Merge the shard tops like Elasticsearch, then cut to 2.
    let mut merged: BTreeMap<String, u64> = BTreeMap::new();
    for t in &shard_tops {
        for (k, c) in t {
            *merged.entry(k.clone()).or_default() += c;
        }
    }
    let mut m: Vec<_> = merged.into_iter().collect();
    m.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    assert_eq!(bucket_pairs(agg), m[..2].to_vec());
    let returned: u64 = m[..2].iter().map(|x| x.1).sum();
    assert_eq!(
        agg["sum_other_doc_count"],
        json!(all.len() as u64 - returned)
    );
    for b in agg["buckets"].as_array().unwrap() {
        let key = b["key"].as_str().unwrap();
        let missing: u64 = shard_tops
            .iter()
            .filter(|t| !t.iter().any(|(k, _)| k == key))
            .map(|t| t[2].1)
            .sum();
        assert_eq!(b["doc_count_error_upper_bound"], json!(missing), "{key}");
    }
}

// ---------------------------------------------------------------------------------------------
// Terms options

#[test]
fn terms_size_order_and_min_doc_count() {
    let all = docs(300);
    let ix = TestIndex::new(&[&all], 2);
    let expected = expected_terms(all.iter().map(|d| d.balance_type.as_str()));
    let out = ix.run(json!({"t": {"terms": {"field": "balanceTypeName", "size": 5}}}));
    assert_eq!(bucket_pairs(&out["t"]), expected[..5].to_vec());
    let rest: u64 = expected[5..].iter().map(|x| x.1).sum();
    assert_eq!(out["t"]["sum_other_doc_count"], json!(rest));

    let out = ix.run(
        json!({"t": {"terms": {"field": "balanceTypeName", "size": 3, "order": {"_key": "desc"}}}}),
    );
    let mut by_key = expected.clone();
    by_key.sort_by(|a, b| b.0.cmp(&a.0));
    assert_eq!(bucket_pairs(&out["t"]), by_key[..3].to_vec());

    let out = ix.run(
        json!({"t": {"terms": {"field": "balanceTypeName", "size": 50, "min_doc_count": 12}}}),
    );
    let filtered: Vec<_> = expected.iter().filter(|x| x.1 >= 12).cloned().collect();
    assert_eq!(bucket_pairs(&out["t"]), filtered);

    // Order by a sub-aggregation.
    let out = ix.run(
        json!({"t": {"terms": {"field": "acctType", "order": {"m": "asc"}},
        "aggs": {"m": {"max": {"field": "balance"}}}}}),
    );
    let mut maxes: Vec<(String, f64)> = TYPES
        .iter()
        .filter_map(|t| {
            let m = all
                .iter()
                .filter(|d| d.acct_type == *t)
                .filter_map(|d| d.balance)
                .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))?;
            Some((t.to_string(), m))
        })
        .collect();
    maxes.sort_by(|a, b| a.1.total_cmp(&b.1));
    let got: Vec<String> = out["t"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["key"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(got, maxes.iter().map(|x| x.0.clone()).collect::<Vec<_>>());
}

#[test]
fn terms_in_key_order_cut_each_shard_to_size_before_min_doc_count() {
    // Elasticsearch's `TermsAggregatorFactory`: under a key order a shard returns exactly `size`
    // candidates (not `size * 1.5 + 10`), the terms under `min_doc_count` included; the reduce
    // then drops those without counting them as others. So fewer than `size` buckets may come
    // back although more terms have enough documents.
    let all = docs(300);
    let ix = TestIndex::new(&[&all], 2);
    let mut by_key = expected_terms(all.iter().map(|d| d.balance_type.as_str()));
    by_key.sort_by(|a, b| a.0.cmp(&b.0));
    let mut counts: Vec<u64> = by_key.iter().map(|x| x.1).collect();
    counts.sort_unstable();
    let min_doc_count = counts[counts.len() / 2];
    let size = 12;
    let out = ix.run(
        json!({"t": {"terms": {"field": "balanceTypeName", "size": size,
        "order": {"_key": "asc"}, "min_doc_count": min_doc_count}}}),
    );
    let kept: Vec<_> = by_key[..size]
        .iter()
        .filter(|x| x.1 >= min_doc_count)
        .cloned()
        .collect();
    assert!(
        kept.len()
            < by_key
                .iter()
                .filter(|x| x.1 >= min_doc_count)
                .count()
                .min(size),
        "the fixture must hold enough terms past the shard's cut"
    );
    assert_eq!(bucket_pairs(&out["t"]), kept);
    let beyond: u64 = by_key[size..].iter().map(|x| x.1).sum();
    assert_eq!(out["t"]["sum_other_doc_count"], json!(beyond));
    assert_eq!(out["t"]["doc_count_error_upper_bound"], json!(0));
}

#[test]
fn terms_ordered_by_a_sub_aggregation_have_an_unbounded_error_on_one_shard() {
    // 30 terms, `size` 3 gives a `shard_size` of 14: the shard fills it, and under an order by
    // a sub-aggregation Elasticsearch's reduce reports the error as unknown (-1), for the
    // aggregation and for each bucket, even when a single shard answers.
    let all = docs(300);
    let ix = TestIndex::new(&[&all], 2);
    let out = ix.run(
        json!({"t": {"terms": {"field": "balanceTypeName", "size": 3,
        "order": {"m": "desc"}, "show_term_doc_count_error": true},
        "aggs": {"m": {"max": {"field": "balance"}}}}}),
    );
    assert_eq!(out["t"]["doc_count_error_upper_bound"], json!(-1));
    let buckets = out["t"]["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 3);
    for b in buckets {
        assert_eq!(b["doc_count_error_upper_bound"], json!(-1));
    }
    // Fewer terms than `shard_size`: the shard's list is complete and the error is 0.
    let out = ix.run(
        json!({"t": {"terms": {"field": "balanceTypeName", "size": 20,
        "order": {"m": "desc"}}, "aggs": {"m": {"max": {"field": "balance"}}}}}),
    );
    assert_eq!(out["t"]["doc_count_error_upper_bound"], json!(0));
}

#[test]
fn terms_on_numbers_booleans_dates_and_multi_values() {
    let all = docs(200);
    let ix = TestIndex::new(&[&all], 2);
    let out = ix.run(json!({
        "s": {"terms": {"field": "status"}},
        "b": {"terms": {"field": "active"}},
        "tags": {"terms": {"field": "tags"}},
        "inc": {"terms": {"field": "balanceTypeName", "include": "类型0.*", "size": 50}},
        "exc": {"terms": {"field": "status", "exclude": [0, 1]}},
    }));
    let st = expected_terms(all.iter().map(|d| match d.status {
        0 => "0",
        1 => "1",
        2 => "2",
        _ => "3",
    }));
    assert_eq!(bucket_pairs(&out["s"]), st);
    assert!(out["s"]["buckets"][0]["key"].is_i64());
    let trues = all.iter().filter(|d| d.active).count() as u64;
    let bools: Vec<(String, u64)> = out["b"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["key_as_string"].as_str().unwrap().to_string(),
                b["doc_count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(bools.contains(&("true".to_string(), trues)));
    assert!(bools.contains(&("false".to_string(), all.len() as u64 - trues)));
    assert_eq!(
        out["b"]["buckets"][0]["key"],
        json!(if trues * 2 > all.len() as u64 { 1 } else { 0 })
    );
    // A document counts once per distinct value.
    let mut tags: Vec<String> = Vec::new();
    for d in &all {
        let mut t = d.tags.clone();
        t.sort();
        t.dedup();
        tags.extend(t);
    }
    let tags_expected = expected_terms(tags.iter().map(String::as_str));
    assert_eq!(bucket_pairs(&out["tags"]), tags_expected);
    let inc = expected_terms(
        all.iter()
            .map(|d| d.balance_type.as_str())
            .filter(|k| k.starts_with("类型0")),
    );
    assert_eq!(bucket_pairs(&out["inc"]), inc);
    let exc: Vec<_> = st
        .iter()
        .filter(|x| x.0 != "0" && x.0 != "1")
        .cloned()
        .collect();
    assert_eq!(bucket_pairs(&out["exc"]), exc);

    // Dates: keys are millis with key_as_string in the field's format.
    let mut few = docs(10);
    for (i, d) in few.iter_mut().enumerate() {
        d.created = TREND_FROM + (i as i64 % 3) * DAY;
    }
    let ix = TestIndex::new(&[&few], 1);
    let out = ix.run(json!({"d": {"terms": {"field": "created", "order": {"_key": "asc"}}}}));
    let b = &out["d"]["buckets"][0];
    assert_eq!(b["key"], json!(TREND_FROM));
    assert_eq!(b["key_as_string"], json!("2021-12-26T16:00:00.000Z"));
    assert_eq!(b["doc_count"], json!(4));
}

#[test]
fn terms_missing_and_unmapped() {
    let all = docs(100);
    let ix = TestIndex::new(&[&all], 1);
    let out = ix.run(json!({
        "u": {"terms": {"field": "nope"}},
        "um": {"terms": {"field": "nope", "missing": "N/A"}},
        "avg": {"avg": {"field": "nope"}},
        "sum": {"sum": {"field": "nope"}},
        "min": {"min": {"field": "nope"}},
        "vc": {"value_count": {"field": "nope"}},
        "st": {"stats": {"field": "nope"}},
    }));
    assert_eq!(
        out["u"],
        json!({"doc_count_error_upper_bound": 0, "sum_other_doc_count": 0, "buckets": []})
    );
    assert_eq!(bucket_pairs(&out["um"]), vec![("N/A".to_string(), 100)]);
    assert_eq!(out["avg"], json!({"value": null}));
    assert_eq!(out["sum"], json!({"value": 0.0}));
    assert_eq!(out["min"], json!({"value": null}));
    assert_eq!(out["vc"], json!({"value": 0}));
    assert_eq!(
        out["st"],
        json!({"count": 0, "min": null, "max": null, "avg": null, "sum": 0.0})
    );
}

// ---------------------------------------------------------------------------------------------
// Metrics

#[test]
fn single_value_metrics() {
    let all = docs(250);
    let ix = TestIndex::new(&[&all], 3);
    let out = ix.run(json!({
        "avg": {"avg": {"field": "balance"}},
        "min_t": {"min": {"field": "createdTime"}},
        "max_c": {"max": {"field": "created"}},
        "vc": {"value_count": {"field": "balance"}},
        "card": {"cardinality": {"field": "balanceTypeName"}},
        "st": {"stats": {"field": "status"}},
        "missing": {"sum": {"field": "balance", "missing": 1000}},
    }));
    let v: Vec<f64> = all.iter().filter_map(|d| d.balance).collect();
    assert_close(
        &out["avg"]["value"],
        v.iter().sum::<f64>() / v.len() as f64,
        "avg",
    );
    let min_t = all.iter().map(|d| d.created).min().unwrap();
    assert_close(&out["min_t"]["value"], min_t as f64, "min");
    assert_eq!(out["min_t"]["value_as_string"], json!(min_t.to_string()));
    let max_c = all.iter().map(|d| d.created).max().unwrap();
    assert_eq!(
        out["max_c"]["value_as_string"],
        json!(DateFormat::default_es().format_millis(max_c, &Tz::utc()))
    );
    assert_eq!(out["vc"]["value"], json!(v.len()));
    assert_eq!(out["card"]["value"], json!(30));
    let s: i64 = all.iter().map(|d| d.status).sum();
    assert_eq!(out["st"]["count"], json!(all.len()));
    assert_close(&out["st"]["sum"], s as f64, "stats sum");
    assert_close(&out["st"]["avg"], s as f64 / all.len() as f64, "stats avg");
    let with_missing = v.iter().sum::<f64>() + 1000.0 * (all.len() - v.len()) as f64;
    assert_close(&out["missing"]["value"], with_missing, "sum with missing");
}

#[test]
fn percentiles_keys_and_values() {
    let all = docs(500);
    let ix = TestIndex::new(&[&all], 1);
    let out = ix.run(json!({
        "p": {"percentiles": {"field": "status"}},
        "q": {"percentiles": {"field": "balance", "percents": [50, 99.9], "keyed": false}},
    }));
    let keys: Vec<&str> = out["p"]["values"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["1.0", "5.0", "25.0", "50.0", "75.0", "95.0", "99.0"]);
    assert_close(&out["p"]["values"]["1.0"], 0.0, "p1");
    let mut v: Vec<f64> = all.iter().filter_map(|d| d.balance).collect();
    v.sort_by(f64::total_cmp);
    assert!(
        v.len() < 2000,
        "ES's TDigest is exact below 20 * compression values"
    );
    assert_eq!(out["q"]["values"][0]["key"], json!(50.0));
    assert_eq!(out["q"]["values"][1]["key"], json!(99.9));
    for (i, p) in [50.0, 99.9].into_iter().enumerate() {
        // Linear interpolation between the closest ranks, at index p/100 * (n - 1).
        let index = p / 100.0 * (v.len() - 1) as f64;
        let (lo, frac) = (index.floor() as usize, index - index.floor());
        let want = if lo + 1 < v.len() {
            v[lo] + frac * (v[lo + 1] - v[lo])
        } else {
            v[lo]
        };
        assert_close(&out["q"]["values"][i]["value"], want, "q");
    }
}

/// Elasticsearch's percentile rank of `x` below 20 * compression values: the values below
/// it, those equal to it counting half, and between two values a linear share of the gap;
/// the smallest value counts half once `x` is above it (ES's `Dist.cdf`).
fn exact_rank(values: &[f64], x: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    if v.is_empty() {
        return f64::NAN;
    }
    if x < v[0] {
        return 0.0;
    }
    let below = v.iter().filter(|&&y| y < x).count() as f64;
    let equal = v.iter().filter(|&&y| y == x).count() as f64;
    let first = if v[0] < x { 0.5 } else { 0.0 };
    let r = if equal > 0.0 {
        if v[v.len() - 1] == x {
            n - 0.5 * equal
        } else {
            below - first + 0.5 * equal
        }
    } else if let Some(i) = v.iter().position(|&y| y > x) {
        below - first + (x - v[i - 1]) / (v[i] - v[i - 1])
    } else {
        n
    };
    r / n * 100.0
}

#[test]
fn percentile_ranks_count_values_at_or_below() {
    let all = docs(600);
    let (a, b) = all.split_at(250);
    let ix = TestIndex::new(&[a, b], 2);
    let out = ix.run(json!({
        "r": {"percentile_ranks": {"field": "balance", "values": [50000, -10000.5, 0, 1e9]}},
        "s": {"percentile_ranks": {"field": "status", "values": [1, 2], "keyed": false}},
        "m": {"percentile_ranks": {"field": "balance", "values": [-30000], "missing": -30000}},
    }));
    let bal: Vec<f64> = all.iter().filter_map(|d| d.balance).collect();
    // Keyed by `String.valueOf(double)`, in ascending order of the values.
    let keys: Vec<&str> = out["r"]["values"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["-10000.5", "0.0", "50000.0", "1.0E9"]);
    for (k, v) in [("-10000.5", -10000.5), ("0.0", 0.0), ("50000.0", 50000.0)] {
        assert_close(&out["r"]["values"][k], exact_rank(&bal, v), k);
    }
    assert_eq!(out["r"]["values"]["1.0E9"], json!(100.0));
    let st: Vec<f64> = all.iter().map(|d| d.status as f64).collect();
    assert_eq!(out["s"]["values"][0]["key"], json!(1.0));
    assert_close(&out["s"]["values"][0]["value"], exact_rank(&st, 1.0), "s1");
    assert_close(&out["s"]["values"][1]["value"], exact_rank(&st, 2.0), "s2");
    // Documents without a balance count as -30000, below every real balance.
    let with_missing: Vec<f64> = all.iter().map(|d| d.balance.unwrap_or(-30000.0)).collect();
    assert_close(
        &out["m"]["values"]["-30000.0"],
        exact_rank(&with_missing, -30000.0),
        "missing",
    );
}

#[test]
fn percentile_ranks_under_buckets_empty_and_typed() {
    let all = docs(400);
    let ix = TestIndex::new(&[&all], 3);
    let out = ix
        .run_with(
            None,
            json!({
                "t": {"terms": {"field": "acctType", "size": 10},
                      "aggs": {"r": {"percentile_ranks": {"field": "balance", "values": [0],
                                                          "format": "0.0"}}}},
                "h": {"histogram": {"field": "status", "interval": 1,
                                    "extended_bounds": {"min": -1, "max": 3}},
                      "aggs": {"r": {"percentile_ranks": {"field": "balance", "values": [0]}}}},
            }),
            true,
        )
        .unwrap();
    let buckets = out["sterms#t"]["buckets"].as_array().unwrap();
    assert!(!buckets.is_empty());
    for b in buckets {
        let key = b["key"].as_str().unwrap();
        let v: Vec<f64> = all
            .iter()
            .filter(|d| d.acct_type == key)
            .filter_map(|d| d.balance)
            .collect();
        let r = &b["tdigest_percentile_ranks#r"]["values"];
        assert_close(&r["0.0"], exact_rank(&v, 0.0), key);
        assert_eq!(
            r["0.0_as_string"],
            json!(format!("{:.1}", exact_rank(&v, 0.0)))
        );
    }
    // The empty bucket (status -1) has no values: `null`, no `_as_string`.
    let empty = &out["histogram#h"]["buckets"][0];
    assert_eq!(empty["doc_count"], json!(0));
    assert_eq!(
        empty["tdigest_percentile_ranks#r"],
        json!({"values": {"0.0": null}})
    );
}

/// Linear interpolation at index p * (n - 1) of the sorted values (ES's exact TDigest phase).
fn interpolated(values: &[f64], p: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let index = p * (v.len() - 1) as f64;
    let lo = index.floor() as usize;
    if lo + 1 >= v.len() {
        return v[v.len() - 1];
    }
    v[lo] + (index - lo as f64) * (v[lo + 1] - v[lo])
}

#[test]
fn median_absolute_deviation_and_boxplot() {
    let all = docs(700);
    let (a, b) = all.split_at(300);
    let ix = TestIndex::new(&[a, b], 2);
    let out = ix
        .run_with(
            None,
            json!({
                "mad": {"median_absolute_deviation": {"field": "balance"}},
                "box": {"boxplot": {"field": "balance", "format": "0.0"}},
                "t": {"terms": {"field": "acctType"},
                      "aggs": {"m": {"median_absolute_deviation": {"field": "balance", "missing": 0}}}},
                "none": {"median_absolute_deviation": {"field": "nope"}},
                "nobox": {"boxplot": {"field": "nope"}},
            }),
            true,
        )
        .unwrap();
    let v: Vec<f64> = all.iter().filter_map(|d| d.balance).collect();
    let median = interpolated(&v, 0.5);
    let dev: Vec<f64> = v.iter().map(|x| (x - median).abs()).collect();
    assert_close(
        &out["median_absolute_deviation#mad"]["value"],
        interpolated(&dev, 0.5),
        "mad",
    );
    let bx = &out["boxplot#box"];
    let (q1, q3) = (interpolated(&v, 0.25), interpolated(&v, 0.75));
    assert_close(&bx["q1"], q1, "q1");
    assert_close(&bx["q2"], median, "q2");
    assert_close(&bx["q3"], q3, "q3");
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert_close(&bx["min"], min, "min");
    assert_close(&bx["max"], max, "max");
    let iqr = q3 - q1;
    let upper = v
        .iter()
        .copied()
        .filter(|x| *x <= q3 + 1.5 * iqr)
        .fold(f64::NEG_INFINITY, f64::max);
    let lower = v
        .iter()
        .copied()
        .filter(|x| *x >= q1 - 1.5 * iqr)
        .fold(f64::INFINITY, f64::min);
    assert_close(&bx["upper"], upper, "upper");
    assert_close(&bx["lower"], lower, "lower");
    assert_eq!(bx["q1_as_string"], json!(format!("{q1:.1}")));
    for b in out["sterms#t"]["buckets"].as_array().unwrap() {
        let key = b["key"].as_str().unwrap();
        let v: Vec<f64> = all
            .iter()
            .filter(|d| d.acct_type == key)
            .map(|d| d.balance.unwrap_or(0.0))
            .collect();
        let m = interpolated(&v, 0.5);
        let dev: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
        assert_close(
            &b["median_absolute_deviation#m"]["value"],
            interpolated(&dev, 0.5),
            key,
        );
    }
    assert_eq!(
        out["median_absolute_deviation#none"],
        json!({"value": null})
    );
    assert_eq!(out["boxplot#nobox"]["min"], json!("Infinity"));
    assert_eq!(out["boxplot#nobox"]["q1"], json!("NaN"));
    let e = ix
        .run_with(
            None,
            json!({"m": {"median_absolute_deviation": {"field": "balance", "compression": -1}}}),
            false,
        )
        .unwrap_err();
    assert_eq!(
        e.reason,
        "[compression] must be greater than or equal to 0. Found [-1.0] in [m]"
    );
    let e = ix
        .run_with(
            None,
            json!({"m": {"boxplot": {"field": "acctType"}}}),
            false,
        )
        .unwrap_err();
    assert_eq!(e.status, 400);
}

#[test]
fn string_stats_counts_lengths_and_entropy() {
    let all = docs(200);
    let ix = TestIndex::new(&[&all[..90], &all[90..]], 2);
    let out = ix.run(json!({
        "s": {"string_stats": {"field": "acctType", "show_distribution": true}},
        "e": {"filter": {"term": {"acctType": "nope"}},
              "aggs": {"s": {"string_stats": {"field": "acctType"}}}},
    }));
    let vals: Vec<&str> = all.iter().map(|d| d.acct_type).collect();
    let s = &out["s"];
    assert_eq!(s["count"], json!(vals.len()));
    assert_eq!(
        s["min_length"],
        json!(vals.iter().map(|v| v.encode_utf16().count()).min().unwrap())
    );
    assert_eq!(
        s["max_length"],
        json!(vals.iter().map(|v| v.encode_utf16().count()).max().unwrap())
    );
    let total: usize = vals.iter().map(|v| v.encode_utf16().count()).sum();
    assert_close(&s["avg_length"], total as f64 / vals.len() as f64, "avg");
    let mut counts: BTreeMap<char, usize> = BTreeMap::new();
    for v in &vals {
        for c in v.chars() {
            *counts.entry(c).or_default() += 1;
        }
    }
    let entropy: f64 = -counts
        .values()
        .map(|&n| n as f64 / total as f64)
        .map(|p| p * p.log2())
        .sum::<f64>();
    assert_close(&s["entropy"], entropy, "entropy");
    for (c, n) in &counts {
        assert_close(
            &s["distribution"][c.to_string()],
            *n as f64 / total as f64,
            "p",
        );
    }
    assert_eq!(
        out["e"]["s"],
        json!({"count": 0, "min_length": null, "max_length": null, "avg_length": null, "entropy": 0.0})
    );
    let e = ix
        .run_with(
            None,
            json!({"s": {"string_stats": {"field": "balance"}}}),
            false,
        )
        .unwrap_err();
    assert_eq!(
        e.reason,
        "Field [balance] of type [double] is not supported for aggregation [string_stats]"
    );
}

#[test]
fn sampler_keeps_the_best_scoring_documents_per_shard() {
    let all = docs(300);
    let (a, b) = all.split_at(120);
    let ix = TestIndex::new(&[a, b], 2);
    // A constant-score query: every document scores the same, so each shard keeps
    // `shard_size` of its matches.
    let out = ix
        .run_with(
            Some(json!({"match_all": {}})),
            json!({"s": {"sampler": {"shard_size": 50},
                         "aggs": {"c": {"value_count": {"field": "status"}}}},
                   "big": {"sampler": {}}}),
            true,
        )
        .unwrap();
    assert_eq!(out["sampler#s"]["doc_count"], json!(100));
    assert_eq!(out["sampler#s"]["value_count#c"]["value"], json!(100));
    assert_eq!(out["sampler#big"]["doc_count"], json!(100 + 100));
    // Under a bucket aggregation each bucket is sampled on its own.
    let out = ix
        .run_with(
            None,
            json!({"t": {"terms": {"field": "acctType"},
                                     "aggs": {"s": {"sampler": {"shard_size": 3}}}}}),
            false,
        )
        .unwrap();
    for b in out["t"]["buckets"].as_array().unwrap() {
        // At most 3 per shard (two shards), and all of a bucket smaller than that.
        let n = b["doc_count"].as_u64().unwrap();
        let s = b["s"]["doc_count"].as_u64().unwrap();
        assert!(s <= n.min(6) && s >= n.min(3), "{n} {s}");
    }
    let e = ix
        .run_with(None, json!({"s": {"sampler": {"shard_size": 0}}}), false)
        .unwrap_err();
    assert_eq!(
        e.reason,
        "[shardSize] must be greater than 0. Found [0] in [s]"
    );
}

#[test]
fn percentile_ranks_errors() {
    let ix = TestIndex::new(&[&docs(10)], 1);
    let err = |aggs: Value| ix.run_with(None, aggs, false).unwrap_err();
    let e = err(json!({"r": {"percentile_ranks": {"field": "balance"}}}));
    assert_eq!(e.kind, "x_content_parse_exception");
    assert_eq!(
        e.reason,
        "Failed to build [percentile_ranks] after last required field arrived"
    );
    let cause = e.caused_by.as_ref().unwrap();
    assert_eq!(cause.kind, "illegal_argument_exception");
    assert_eq!(cause.reason, "[values] must not be null: [r]");
    let e = err(json!({"r": {"percentile_ranks": {"field": "balance", "values": []}}}));
    assert_eq!(
        e.caused_by.unwrap().reason,
        "[values] must not be an empty array: [r]"
    );
    // a script is a value source like any other: one that does not compile fails
    let e = err(
        json!({"r": {"percentile_ranks": {"script": "doc['balance'].value +", "values": [1]}}}),
    );
    assert_eq!(e.kind, "script_exception");
    let e = err(
        json!({"r": {"percentile_ranks": {"field": "balance", "values": [1],
                                                  "percents": [1]}}}),
    );
    assert_eq!(e.status, 400);
    let e = err(
        json!({"r": {"percentile_ranks": {"field": "balance", "values": [1],
                                                  "hdr": {"number_of_significant_value_digits": 6}}}}),
    );
    assert_eq!(
        e.reason,
        "[numberOfSignificantValueDigits] must be between 0 and 5: [r]"
    );
    let e = err(json!({"r": {"percentiles": {"field": "balance",
                                     "tdigest": {"execution_hint": "fast"}}}}));
    assert_eq!(e.status, 400);
    // Under composite, a bucket's percentiles see its documents (computed keys).
    let out = ix.run(
        json!({"c": {"composite": {"sources": [{"t": {"terms": {"field": "acctType"}}}]},
                     "aggs": {"p": {"percentiles": {"field": "balance", "percents": [0, 100]}}}}}),
    );
    for b in out["c"]["buckets"].as_array().unwrap() {
        let t = b["key"]["t"].as_str().unwrap();
        let vals: Vec<f64> = docs(10)
            .iter()
            .filter(|d| d.acct_type == t)
            .filter_map(|d| d.balance)
            .collect();
        let min = vals.iter().copied().fold(f64::INFINITY, f64::min);
        let max = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if vals.is_empty() {
            assert!(b["p"]["values"]["0.0"].is_null());
        } else {
            assert_eq!(b["p"]["values"]["0.0"], json!(min));
            assert_eq!(b["p"]["values"]["100.0"], json!(max));
        }
    }
    let e = err(json!({"r": {"percentile_ranks": {"field": "acctType", "values": [1]}}}));
    assert_eq!(e.status, 400);
    let e = err(json!({"r": {"percentile_ranks": {"values": [1]}}}));
    assert_eq!(
        e.reason,
        "Required one of fields [field, script], but none were specified. "
    );
}

// ---------------------------------------------------------------------------------------------
// Histograms

#[test]
fn histogram_with_empty_buckets_and_bounds() {
    let all = docs(300);
    let ix = TestIndex::new(&[&all], 2);
    let out = ix.run(json!({"h": {"histogram": {"field": "status", "interval": 2}},
        "e": {"histogram": {"field": "status", "interval": 1, "extended_bounds": {"min": -2, "max": 5}}},
        "k": {"histogram": {"field": "balance", "interval": 25000, "keyed": true, "min_doc_count": 1}}}));
    let lo = all.iter().filter(|d| d.status < 2).count() as u64;
    assert_eq!(
        out["h"]["buckets"],
        json!([{"key": 0.0, "doc_count": lo}, {"key": 2.0, "doc_count": all.len() as u64 - lo}])
    );
    let e = out["e"]["buckets"].as_array().unwrap();
    assert_eq!(e.len(), 8);
    assert_eq!(e[0], json!({"key": -2.0, "doc_count": 0}));
    assert_eq!(e[7], json!({"key": 5.0, "doc_count": 0}));
    let mut counts: BTreeMap<i64, u64> = BTreeMap::new();
    for b in all.iter().filter_map(|d| d.balance) {
        *counts.entry((b / 25000.0).floor() as i64).or_default() += 1;
    }
    let k = out["k"]["buckets"].as_object().unwrap();
    assert_eq!(k.len(), counts.len());
    for (slot, n) in counts {
        let name = format!("{:.1}", slot as f64 * 25000.0);
        assert_eq!(k[&name]["doc_count"], json!(n), "{name}");
    }
}

#[test]
fn histogram_missing_counts_documents_without_a_value() {
    let all = docs(200);
    let (a, b) = all.split_at(120);
    let ix = TestIndex::new(&[a, b], 2);
    let out = ix.run(json!({
        "h": {"histogram": {"field": "balance", "interval": 25000, "missing": -60000}},
        "d": {"date_histogram": {"field": "nope", "fixed_interval": "1d",
                                 "missing": "2021-12-30T10:00:00Z"}},
        "c": {"date_histogram": {"field": "createdTime", "calendar_interval": "day",
                                 "missing": 0, "min_doc_count": 1}}}));
    let mut counts: BTreeMap<i64, u64> = BTreeMap::new();
    for d in &all {
        let v = d.balance.unwrap_or(-60000.0);
        *counts.entry((v / 25000.0).floor() as i64).or_default() += 1;
    }
    let (lo, hi) = (
        *counts.keys().next().unwrap(),
        *counts.keys().last().unwrap(),
    );
    let expected: Vec<Value> = (lo..=hi)
        .map(|k| json!({"key": k as f64 * 25000.0, "doc_count": counts.get(&k).copied().unwrap_or(0)}))
        .collect();
    assert_eq!(out["h"]["buckets"], json!(expected));
    assert!(all.iter().any(|d| d.balance.is_none()));
    // An unmapped field: every document has the missing value.
    let day = 1_640_822_400_000i64; // 2021-12-30T00:00:00Z
    assert_eq!(out["d"]["buckets"][0]["key"], json!(day));
    assert_eq!(out["d"]["buckets"][0]["doc_count"], json!(all.len()));
    assert_eq!(out["d"]["buckets"].as_array().unwrap().len(), 1);
    // Every document has a date: the missing value adds no bucket.
    let days: std::collections::BTreeSet<i64> =
        all.iter().map(|d| d.created.div_euclid(DAY)).collect();
    assert_eq!(out["c"]["buckets"].as_array().unwrap().len(), days.len());
}

#[test]
fn terms_missing_on_a_boolean_field() {
    let all = docs(50);
    let ix = TestIndex::new(&[&all], 2);
    let out = ix.run(json!({"t": {"terms": {"field": "active", "missing": "true"}}}));
    let yes = all.iter().filter(|d| d.active).count() as u64;
    let mut got: Vec<(String, u64)> = out["t"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["key_as_string"].as_str().unwrap().to_string(),
                b["doc_count"].as_u64().unwrap(),
            )
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            ("false".to_string(), all.len() as u64 - yes),
            ("true".to_string(), yes)
        ]
    );
    let err = ix
        .run_with(
            None,
            json!({"t": {"terms": {"field": "active", "missing": "yes"}}}),
            false,
        )
        .unwrap_err();
    assert_eq!(
        err.reason,
        "Cannot parse boolean [yes], expected either [true] or [false]"
    );
}

#[test]
fn histogram_missing_errors() {
    let all = docs(10);
    let ix = TestIndex::new(&[&all], 1);
    let err = ix
        .run_with(
            None,
            json!({"h": {"histogram": {"field": "balance", "interval": 5, "missing": "x"}}}),
            false,
        )
        .unwrap_err();
    assert_eq!(err.reason, "For input string: \"x\"");
    let err = ix
        .run_with(
            None,
            json!({"h": {"histogram": {"field": "balance", "interval": 5, "missing": [1]}}}),
            false,
        )
        .unwrap_err();
    assert_eq!(err.status, 400);
    let err = ix
        .run_with(None, json!({"h": {"date_histogram": {"field": "createdTime", "fixed_interval": "1d", "missing": "nope"}}}), false)
        .unwrap_err();
    assert_eq!(err.kind, "parse_exception");
}

#[test]
fn date_histogram_months_in_new_york_and_weeks() {
    let mut all = docs(120);
    let mut r = Lcg(7);
    for d in all.iter_mut() {
        // 2015-10 .. 2016-06, crossing both DST changes.
        d.created = 1_443_657_600_000 + r.below(270 * DAY as u64) as i64;
    }
    let ix = TestIndex::new(&[&all], 2);
    let tz = Tz::parse("America/New_York").unwrap();
    for (interval, unit) in [
        ("month", CalendarUnit::Month),
        ("1w", CalendarUnit::Week),
        ("day", CalendarUnit::Day),
        ("quarter", CalendarUnit::Quarter),
    ] {
        let out = ix.run(
            json!({"h": {"date_histogram": {"field": "createdTime", "calendar_interval": interval,
            "time_zone": "America/New_York", "format": "yyyy-MM-dd'T'HH:mm:ssXXX"}}}),
        );
        let mut counts: BTreeMap<i64, u64> = BTreeMap::new();
        for d in &all {
            *counts
                .entry(calendar_floor(d.created, unit, &tz))
                .or_default() += 1;
        }
        let mut expected = Vec::new();
        let mut k = *counts.keys().next().unwrap();
        let last = *counts.keys().last().unwrap();
        while k <= last {
            expected.push((k, counts.get(&k).copied().unwrap_or(0)));
            k = calendar_next(k, unit, &tz);
        }
        let got: Vec<(i64, u64)> = out["h"]["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| (b["key"].as_i64().unwrap(), b["doc_count"].as_u64().unwrap()))
            .collect();
        assert_eq!(got, expected, "{interval}");
        if unit == CalendarUnit::Month {
            assert_eq!(
                out["h"]["buckets"][0]["key_as_string"],
                json!("2015-10-01T00:00:00-04:00")
            );
            assert_eq!(
                out["h"]["buckets"][2]["key_as_string"],
                json!("2015-12-01T00:00:00-05:00")
            );
        }
    }
}

#[test]
fn date_histogram_fixed_offset_and_extended_bounds() {
    let mut all = docs(30);
    for (i, d) in all.iter_mut().enumerate() {
        d.created = TREND_FROM + (i as i64 % 3) * 3_600_000;
    }
    let ix = TestIndex::new(&[&all], 1);
    let out = ix.run(
        json!({"h": {"date_histogram": {"field": "createdTime", "fixed_interval": "2h",
        "offset": "+1h", "min_doc_count": 0,
        "extended_bounds": {"min": "1640527200000", "max": "now-13d/d"}}}}),
    );
    let b = out["h"]["buckets"].as_array().unwrap();
    // Buckets start at odd UTC hours: 15:00Z the day before covers the 16:00Z documents.
    let first = TREND_FROM - 3_600_000 - 2 * 3_600_000;
    assert_eq!(b[0]["key"], json!(first));
    assert_eq!(b[0]["doc_count"], json!(0));
    assert_eq!(b[1]["key"], json!(first + 7_200_000));
    assert_eq!(b[1]["doc_count"], json!(10));
    assert_eq!(b[2]["doc_count"], json!(20));
    // now-13d/d = 2021-12-28T00:00:00Z: the last bucket starts at 2021-12-27T23:00Z.
    assert_eq!(b.last().unwrap()["key"], json!(1_640_646_000_000i64));
    assert_eq!(b[0]["key_as_string"], json!(first.to_string()));
}

// ---------------------------------------------------------------------------------------------
// Ranges, filters, missing, global

#[test]
fn ranges_and_date_ranges() {
    let all = docs(300);
    let ix = TestIndex::new(&[&all], 2);
    let out = ix.run(json!({
        "r": {"range": {"field": "balance", "ranges": [{"to": 0}, {"from": 0, "to": 50000}, {"from": 25000}]},
            "aggs": {"a": {"avg": {"field": "balance"}}}},
        "k": {"range": {"field": "status", "keyed": true, "ranges": [{"key": "low", "to": 2}, {"key": "high", "from": 2}]}},
        "d": {"date_range": {"field": "created", "format": "yyyy-MM-dd", "ranges": [{"from": "2021-12-27", "to": "now-12d/d"}]}},
    }));
    let vals: Vec<f64> = all.iter().filter_map(|d| d.balance).collect();
    let count = |lo: f64, hi: f64| vals.iter().filter(|v| **v >= lo && **v < hi).count() as u64;
    let r = out["r"]["buckets"].as_array().unwrap();
    assert_eq!(r[0]["key"], json!("*-0.0"));
    assert_eq!(r[0]["to"], json!(0.0));
    assert!(r[0].get("from").is_none());
    assert_eq!(r[0]["doc_count"], json!(count(f64::NEG_INFINITY, 0.0)));
    assert_eq!(r[1]["key"], json!("0.0-50000.0"));
    assert_eq!(r[1]["doc_count"], json!(count(0.0, 50000.0)));
    assert_eq!(r[2]["key"], json!("25000.0-*"));
    assert_eq!(r[2]["doc_count"], json!(count(25000.0, f64::INFINITY)));
    let in_r1: Vec<f64> = vals
        .iter()
        .cloned()
        .filter(|v| *v >= 0.0 && *v < 50000.0)
        .collect();
    assert_close(
        &r[1]["a"]["value"],
        in_r1.iter().sum::<f64>() / in_r1.len() as f64,
        "range avg",
    );
    let low = all.iter().filter(|d| d.status < 2).count() as u64;
    assert_eq!(
        out["k"]["buckets"]["low"],
        json!({"to": 2.0, "doc_count": low})
    );
    assert_eq!(
        out["k"]["buckets"]["high"],
        json!({"from": 2.0, "doc_count": all.len() as u64 - low})
    );
    let d = &out["d"]["buckets"][0];
    let from = 1_640_563_200_000i64; // 2021-12-27T00:00Z
    let to = 1_640_736_000_000i64; // now-12d/d = 2021-12-29T00:00Z
    assert_eq!(d["key"], json!("2021-12-27-2021-12-29"));
    assert_eq!(d["from_as_string"], json!("2021-12-27"));
    assert_eq!(d["from"], json!(from as f64));
    let n = all
        .iter()
        .filter(|x| x.created >= from && x.created < to)
        .count() as u64;
    assert_eq!(d["doc_count"], json!(n));
}

#[test]
fn filter_filters_missing_and_global() {
    let all = docs(300);
    let ix = TestIndex::new(&[&all], 2);
    let out = ix
        .run_with(
            Some(json!({"term": {"status": 1}})),
            json!({
                "f": {"filter": {"term": {"acctType": "活期"}}, "aggs": {"s": {"stats": {"field": "balance"}}}},
                "fs": {"filters": {"filters": {"a": {"term": {"acctType": "定期"}}, "b": {"range": {"balance": {"gte": 0}}}}, "other_bucket_key": "rest"}},
                "anon": {"filters": {"filters": [{"term": {"active": true}}, {"match_all": {}}]}},
                "m": {"missing": {"field": "balance"}},
                "g": {"global": {}, "aggs": {"all_types": {"terms": {"field": "acctType"}}}},
            }),
            false,
        )
        .unwrap();
    let q: Vec<&Doc> = all.iter().filter(|d| d.status == 1).collect();
    let f: Vec<&&Doc> = q.iter().filter(|d| d.acct_type == "活期").collect();
    assert_eq!(out["f"]["doc_count"], json!(f.len()));
    let s: f64 = f.iter().filter_map(|d| d.balance).sum();
    assert_close(&out["f"]["s"]["sum"], s, "filter stats sum");
    let a = q.iter().filter(|d| d.acct_type == "定期").count();
    let b = q
        .iter()
        .filter(|d| d.balance.is_some_and(|x| x >= 0.0))
        .count();
    let rest = q
        .iter()
        .filter(|d| d.acct_type != "定期" && !d.balance.is_some_and(|x| x >= 0.0))
        .count();
    assert_eq!(
        out["fs"]["buckets"],
        json!({"a": {"doc_count": a}, "b": {"doc_count": b}, "rest": {"doc_count": rest}})
    );
    let act = q.iter().filter(|d| d.active).count();
    assert_eq!(
        out["anon"]["buckets"],
        json!([{"doc_count": act}, {"doc_count": q.len()}])
    );
    assert_eq!(
        out["m"]["doc_count"],
        json!(q.iter().filter(|d| d.balance.is_none()).count())
    );
    assert_eq!(out["g"]["doc_count"], json!(all.len()));
    assert_eq!(
        bucket_pairs(&out["g"]["all_types"]),
        expected_terms(all.iter().map(|d| d.acct_type))
    );
}

#[test]
fn nested_bucket_aggregations() {
    let all = docs(400);
    let ix = TestIndex::new(&[&all], 2);
    let out = ix.run(json!({"h": {"date_histogram": {"field": "createdTime", "calendar_interval": "day", "time_zone": "+08:00"},
        "aggs": {"t": {"terms": {"field": "acctType", "size": 2}}}}}));
    let tz_off = 8 * 3_600_000;
    for b in out["h"]["buckets"].as_array().unwrap() {
        let k = b["key"].as_i64().unwrap();
        let in_day: Vec<&Doc> = all
            .iter()
            .filter(|d| (d.created + tz_off).div_euclid(DAY) * DAY - tz_off == k)
            .collect();
        assert_eq!(b["doc_count"], json!(in_day.len()));
        let exp = expected_terms(in_day.iter().map(|d| d.acct_type));
        let n = exp.len().min(2);
        assert_eq!(bucket_pairs(&b["t"]), exp[..n].to_vec());
        let other: u64 = exp[n..].iter().map(|x| x.1).sum();
        assert_eq!(b["t"]["sum_other_doc_count"], json!(other));
    }
}

// ---------------------------------------------------------------------------------------------
// top_hits, composite, typed keys

#[test]
fn top_hits_per_bucket() {
    let all = docs(120);
    let ix = TestIndex::new(&[&all[..60], &all[60..]], 2);
    let out = ix.run(json!({"t": {"terms": {"field": "acctType", "size": 2},
        "aggs": {"top": {"top_hits": {"size": 2, "sort": [{"balance": {"order": "desc"}}], "_source": ["balance", "acctType"]}}}}}));
    for b in out["t"]["buckets"].as_array().unwrap() {
        let key = b["key"].as_str().unwrap();
        let mut ds: Vec<&Doc> = all
            .iter()
            .filter(|d| d.acct_type == key && d.balance.is_some())
            .collect();
        ds.sort_by(|x, y| y.balance.unwrap().total_cmp(&x.balance.unwrap()));
        let hits = &b["top"]["hits"];
        assert_eq!(
            hits["total"],
            json!({"value": b["doc_count"], "relation": "eq"})
        );
        let got: Vec<&str> = hits["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["_id"].as_str().unwrap())
            .collect();
        assert_eq!(
            got,
            ds[..2].iter().map(|d| d.id.as_str()).collect::<Vec<_>>()
        );
        let h0 = &hits["hits"][0];
        assert_eq!(h0["_index"], json!("test"));
        assert_eq!(
            h0["_source"],
            json!({"acctType": key, "balance": ds[0].balance.unwrap()})
        );
        assert_eq!(h0["sort"], json!([ds[0].balance.unwrap()]));
        assert_eq!(h0["_score"], Value::Null);
    }
}

#[test]
fn composite_pages() {
    let all = docs(200);
    let ix = TestIndex::new(&[&all], 2);
    let out = ix.run(json!({"c": {"composite": {"size": 4, "sources": [{"type": {"terms": {"field": "acctType"}}}, {"st": {"terms": {"field": "status"}}}]}}}));
    let mut combos: BTreeMap<(String, i64), u64> = BTreeMap::new();
    for d in &all {
        *combos
            .entry((d.acct_type.to_string(), d.status))
            .or_default() += 1;
    }
    let expected: Vec<_> = combos.iter().take(4).collect();
    let got = out["c"]["buckets"].as_array().unwrap();
    assert_eq!(got.len(), 4);
    for (b, ((t, s), n)) in got.iter().zip(expected) {
        assert_eq!(b["key"], json!({"type": t, "st": s}));
        assert_eq!(b["doc_count"], json!(n));
    }
    let after = out["c"]["after_key"].clone();
    assert_eq!(after, got[3]["key"]);
    let next = ix.run(json!({"c": {"composite": {"size": 4, "after": after, "sources": [{"type": {"terms": {"field": "acctType"}}}, {"st": {"terms": {"field": "status"}}}]}}}));
    let (k, n) = combos.iter().nth(4).unwrap();
    assert_eq!(
        next["c"]["buckets"][0]["key"],
        json!({"type": k.0, "st": k.1})
    );
    assert_eq!(next["c"]["buckets"][0]["doc_count"], json!(n));
}

#[test]
fn typed_keys_and_meta() {
    let all = docs(50);
    let ix = TestIndex::new(&[&all], 1);
    let out = ix
        .run_with(
            None,
            json!({
                "a": {"terms": {"field": "acctType"}},
                "b": {"terms": {"field": "status"}},
                "c": {"terms": {"field": "balance"}},
                "d": {"date_histogram": {"field": "created", "calendar_interval": "year"}, "meta": {"x": 1}},
                "e": {"percentiles": {"field": "balance"}},
                "f": {"filter": {"match_all": {}}, "aggs": {"g": {"avg": {"field": "balance"}}}},
                "h": {"extended_stats": {"field": "balance"}},
                "i": {"top_hits": {"size": 1}},
            }),
            true,
        )
        .unwrap();
    let keys: Vec<&str> = out
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "sterms#a",
            "lterms#b",
            "dterms#c",
            "date_histogram#d",
            "tdigest_percentiles#e",
            "filter#f",
            "extended_stats#h",
            "top_hits#i"
        ]
    );
    assert!(out["filter#f"]["avg#g"]["value"].is_f64());
    assert_eq!(out["date_histogram#d"]["meta"], json!({"x": 1}));
}

// ---------------------------------------------------------------------------------------------
// Errors

fn error_of(ix: &TestIndex, aggs: Value) -> EsError {
    ix.run_with(None, aggs, false).expect_err("an error")
}

#[test]
fn field_type_errors() {
    let ix = TestIndex::new(&[&docs(10)], 1);
    let e = error_of(&ix, json!({"t": {"terms": {"field": "remark"}}}));
    assert_eq!(
        (e.status, e.kind.as_str()),
        (400, "illegal_argument_exception")
    );
    assert!(
        e.reason
            .starts_with("Text fields are not optimised for operations"),
        "{}",
        e.reason
    );
    assert!(e.reason.contains("set fielddata=true on [remark]"));
    let e = error_of(&ix, json!({"t": {"sum": {"field": "nodv"}}}));
    assert_eq!(e.reason, "Can't load fielddata on [nodv] because fielddata is unsupported on fields of type [long]. Use doc values instead.");
    let e = error_of(&ix, json!({"t": {"avg": {"field": "acctType"}}}));
    assert_eq!(
        e.reason,
        "Field [acctType] of type [keyword] is not supported for aggregation [avg]"
    );
    let e = error_of(
        &ix,
        json!({"t": {"terms": {"field": "acctType", "order": {"nope": "asc"}}}}),
    );
    assert_eq!(e.status, 400);
}

#[test]
fn too_many_buckets() {
    let ix = TestIndex::new(&[&docs(100)], 1);
    let mut req =
        parse_aggs(&json!({"t": {"terms": {"field": "balanceTypeName", "size": 50}}})).unwrap();
    req.set_max_buckets(10);
    let ctx = ix.ctx();
    let e = run_aggs(&req, &ctx, &ix.shards, &tantivy::query::AllQuery, false).unwrap_err();
    assert_eq!(
        (e.status, e.kind.as_str()),
        (400, "too_many_buckets_exception")
    );
    assert_eq!(e.extra["max_buckets"], json!(10));
    assert!(e
        .reason
        .starts_with("Trying to create too many buckets. Must be less than or equal to: [10]"));
}

#[test]
fn every_compat_shape_parses() {
    // Shapes from the conformance suite that must at least parse.
    for v in [
        json!({"histo": {"histogram": {"field": "number", "interval": 50, "format": "Value is ##0.0"}}}),
        json!({"histo": {"date_histogram": {"field": "date", "calendar_interval": "month", "order": {"_time": "desc"}}}}),
        json!({"r": {"date_range": {"field": "date", "ranges": [{"to": "now"}]}}}),
    ] {
        parse_aggs(&v).unwrap();
    }
    let _unused: HashMap<(), ()> = HashMap::new();
}

#[test]
fn computed_buckets_nested_under_terms() {
    let all = docs(300);
    let ix = TestIndex::new(&[&all[..140], &all[140..]], 2);
    let out = ix.run(json!({"t": {"terms": {"field": "acctType"}, "aggs": {
        "fs": {"filters": {"filters": {"pos": {"range": {"balance": {"gte": 0}}}, "neg": {"range": {"balance": {"lt": 0}}}}}},
        "r": {"range": {"field": "status", "ranges": [{"to": 2}, {"from": 2}]}},
        "m": {"date_histogram": {"field": "created", "calendar_interval": "month"}},
        "miss": {"missing": {"field": "balance"}}
    }}}));
    for b in out["t"]["buckets"].as_array().unwrap() {
        let key = b["key"].as_str().unwrap();
        let ds: Vec<&Doc> = all.iter().filter(|d| d.acct_type == key).collect();
        let pos = ds
            .iter()
            .filter(|d| d.balance.is_some_and(|x| x >= 0.0))
            .count();
        let neg = ds
            .iter()
            .filter(|d| d.balance.is_some_and(|x| x < 0.0))
            .count();
        assert_eq!(
            b["fs"]["buckets"],
            json!({"pos": {"doc_count": pos}, "neg": {"doc_count": neg}}),
            "{key}"
        );
        let low = ds.iter().filter(|d| d.status < 2).count();
        assert_eq!(b["r"]["buckets"][0]["doc_count"], json!(low));
        assert_eq!(b["r"]["buckets"][1]["doc_count"], json!(ds.len() - low));
        let months: u64 = b["m"]["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["doc_count"].as_u64().unwrap())
            .sum();
        assert_eq!(months as usize, ds.len());
        assert_eq!(
            b["miss"]["doc_count"],
            json!(ds.iter().filter(|d| d.balance.is_none()).count())
        );
    }
}

#[test]
fn several_indices_in_one_call() {
    let all = docs(200);
    let a = TestIndex::new(&[&all[..80]], 1);
    let b = TestIndex::new(&[&all[80..130], &all[130..]], 1);
    let (ca, cb) = (a.ctx(), b.ctx());
    let targets = [
        AggTarget {
            index_name: "a",
            ctx: &ca,
            shards: &a.shards,
            query: &tantivy::query::AllQuery,
            named: &[],
            named_scores: false,
        },
        AggTarget {
            index_name: "b",
            ctx: &cb,
            shards: &b.shards,
            query: &tantivy::query::AllQuery,
            named: &[],
            named_scores: false,
        },
    ];
    let req = parse_aggs(
        &json!({"t": {"terms": {"field": "acctType", "size": 3}, "aggs": {
        "top": {"top_hits": {"size": 1, "sort": [{"created": "asc"}], "_source": false}}}}}),
    )
    .unwrap();
    let out = run_aggs_multi(&req, &targets, false).unwrap();
    let expected = expected_terms(all.iter().map(|d| d.acct_type));
    assert_eq!(bucket_pairs(&out["t"]), expected[..3].to_vec());
    for bucket in out["t"]["buckets"].as_array().unwrap() {
        let key = bucket["key"].as_str().unwrap();
        let (i, first) = all
            .iter()
            .enumerate()
            .filter(|(_, d)| d.acct_type == key)
            .min_by_key(|(_, d)| d.created)
            .unwrap();
        let hit = &bucket["top"]["hits"]["hits"][0];
        assert_eq!(hit["_id"], json!(first.id));
        assert_eq!(hit["_index"], json!(if i < 80 { "a" } else { "b" }));
        assert_eq!(hit["sort"], json!([first.created]));
        assert!(hit.get("_source").is_none());
    }
}

#[test]
fn conformance_formats() {
    let mut few = docs(4);
    for (i, d) in few.iter_mut().enumerate() {
        d.status = [1, 51, 101, 151][i];
        d.created = 1_451_606_400_000; // 2016-01-01T00:00:00Z
    }
    let ix = TestIndex::new(&[&few], 1);
    let out = ix.run(json!({
        "histo": {"histogram": {"field": "status", "interval": 50, "format": "Value is ##0.0"}},
        "plain": {"histogram": {"field": "status", "interval": 50}},
        "phx": {"date_histogram": {"field": "created", "fixed_interval": "1ms", "time_zone": "America/Phoenix"}},
        "es": {"extended_stats": {"field": "status"}},
    }));
    let keys: Vec<&str> = out["histo"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["key_as_string"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "Value is 0.0",
            "Value is 50.0",
            "Value is 100.0",
            "Value is 150.0"
        ]
    );
    assert!(out["plain"]["buckets"][0].get("key_as_string").is_none());
    assert_eq!(
        out["phx"]["buckets"],
        json!([{"key_as_string": "2015-12-31T17:00:00.000-07:00", "key": 1_451_606_400_000i64, "doc_count": 4}])
    );
    // The conformance suite's exact figures.
    assert_eq!(out["es"]["sum_of_squares"], json!(35604.0));
    assert_eq!(out["es"]["std_deviation"], json!(55.90169943749474));
    assert_eq!(
        out["es"]["std_deviation_bounds"]["upper"],
        json!(187.80339887498948)
    );
    assert_eq!(
        out["es"]["std_deviation_bounds"]["lower"],
        json!(-35.80339887498948)
    );
}

/// Times the reference workload shapes against tantivy's own aggregation collector on the
/// same index: `cargo test --release -p lode-api aggs::tests::perf -- --ignored --nocapture`
/// (`LODE_AGGS_PERF_DOCS` documents, 200000 by default).
#[test]
#[ignore]
fn perf_reference_workload() {
    use std::time::Instant;
    let n: usize = std::env::var("LODE_AGGS_PERF_DOCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let all = docs(n);
    let started = Instant::now();
    let ix = TestIndex::new(&[&all], 4);
    eprintln!("indexed {n} docs in {:?}", started.elapsed());
    let cases = [
        (
            "bucket",
            None,
            json!({"typeName": {"terms": {"field": "balanceTypeName", "size": 50}}}),
        ),
        (
            "group",
            None,
            json!({"by_acct_type": {"terms": {"field": "acctType", "size": 10}, "aggs": {"total_balance": {"sum": {"field": "balance"}}}}}),
        ),
        (
            "metric",
            None,
            json!({"balance_stats": {"extended_stats": {"field": "balance"}}}),
        ),
        ("trend", Some(trend_query()), trend_aggs()),
    ];
    for (name, query, aggs) in cases {
        let ctx = ix.ctx();
        let q = match &query {
            Some(q) => build_query(&parse_query(q).unwrap(), &ctx).unwrap(),
            None => Box::new(tantivy::query::AllQuery) as Box<dyn tantivy::query::Query>,
        };
        let req = parse_aggs(&aggs).unwrap();
        let mut best = std::time::Duration::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            run_aggs(&req, &ctx, &ix.shards, &*q, false).unwrap();
            best = best.min(t.elapsed());
        }
        // tantivy alone, with the request as tantivy takes it (fixed interval for the trend).
        let raw = match name {
            "trend" => {
                json!({"per_day": {"histogram": {"field": "createdTime", "interval": 86_400_000.0, "offset": 57_600_000.0, "min_doc_count": 0}}})
            }
            _ => aggs.clone(),
        };
        let raw: tantivy::aggregation::agg_req::Aggregations = serde_json::from_value(raw).unwrap();
        let mut raw_best = std::time::Duration::MAX;
        for _ in 0..5 {
            let c = tantivy::aggregation::AggregationCollector::from_aggs(
                raw.clone(),
                Default::default(),
            );
            let t = Instant::now();
            lode_query::FieldStatistics::new(&ix.shards[0].searcher)
                .search(&ix.shards[0].searcher, &*q, &c)
                .unwrap();
            raw_best = raw_best.min(t.elapsed());
        }
        eprintln!("{name:>7}: lode {best:?}  tantivy {raw_best:?}");
    }
}

#[test]
fn terms_ordered_by_a_filter_and_epoch_second_ranges() {
    let all = docs(200);
    let ix = TestIndex::new(&[&all[..90], &all[90..]], 1);
    let out = ix.run(
        json!({"t": {"terms": {"field": "acctType", "order": {"high.doc_count": "desc"}},
        "aggs": {"high": {"filter": {"range": {"status": {"gte": 2}}}}}}}),
    );
    let mut expected: Vec<(String, usize)> = TYPES
        .iter()
        .map(|t| {
            (
                t.to_string(),
                all.iter()
                    .filter(|d| d.acct_type == *t && d.status >= 2)
                    .count(),
            )
        })
        .filter(|(t, _)| all.iter().any(|d| d.acct_type == t))
        .collect();
    expected.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let got: Vec<(String, usize)> = out["t"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["key"].as_str().unwrap().to_string(),
                b["high"]["doc_count"].as_u64().unwrap() as usize,
            )
        })
        .collect();
    assert_eq!(got, expected);
    // Numbers in date_range go through the field's format (epoch_millis here).
    let out = ix.run(json!({"d": {"date_range": {"field": "createdTime", "ranges": [{"from": TREND_FROM, "to": TREND_TO}]}}}));
    let b = &out["d"]["buckets"][0];
    assert_eq!(b["key"], json!(format!("{TREND_FROM}-{TREND_TO}")));
    assert_eq!(b["from"], json!(TREND_FROM as f64));
    let n = all
        .iter()
        .filter(|d| d.created >= TREND_FROM && d.created < TREND_TO)
        .count();
    assert_eq!(b["doc_count"], json!(n));
}

#[test]
fn composite_dates_formats_and_limits() {
    let mut all = docs(30);
    for (i, d) in all.iter_mut().enumerate() {
        d.created = TREND_FROM + (i as i64 % 3) * DAY;
    }
    let ix = TestIndex::new(&[&all], 1);
    let src = json!([{"day": {"date_histogram": {"field": "created", "calendar_interval": "1d", "format": "yyyy-MM-dd"}}}]);
    let out = ix.run(json!({"c": {"composite": {"size": 2, "sources": src}}}));
    // TREND_FROM is 2021-12-26T16:00Z: UTC days 12-26, 12-27, 12-28.
    assert_eq!(
        out["c"]["buckets"],
        json!([{"key": {"day": "2021-12-26"}, "doc_count": 10}, {"key": {"day": "2021-12-27"}, "doc_count": 10}])
    );
    assert_eq!(out["c"]["after_key"], json!({"day": "2021-12-27"}));
    let next = ix.run(
        json!({"c": {"composite": {"size": 2, "sources": src, "after": {"day": "2021-12-27"}}}}),
    );
    assert_eq!(
        next["c"]["buckets"],
        json!([{"key": {"day": "2021-12-28"}, "doc_count": 10}])
    );
    let plain = ix.run(json!({"c": {"composite": {"sources": [{"t": {"date_histogram": {"field": "created", "fixed_interval": "1d"}}}]}}}));
    assert_eq!(
        plain["c"]["buckets"][0]["key"]["t"],
        json!(TREND_FROM - 16 * 3_600_000)
    );

    let e = error_of(
        &ix,
        json!({"c": {"composite": {"size": 1_000_000_000, "sources": src}}}),
    );
    assert_eq!(e.kind, "too_many_buckets_exception");
    let e = error_of(
        &ix,
        json!({"t": {"terms": {"field": "acctType"}, "aggs": {"c": {"composite": {"sources": src}}}}}),
    );
    assert_eq!(
        e.reason,
        "[composite] aggregation cannot be used with a parent aggregation of type: [terms]"
    );
    let out = ix.run(
        json!({"n": {"nested": {"path": "nothing"}, "aggs": {"s": {"sum": {"field": "balance"}}}}}),
    );
    assert_eq!(out["n"], json!({"doc_count": 0, "s": {"value": 0.0}}));
    let e = error_of(
        &ix,
        json!({"r": {"terms": {"field": "acctType", "size": 1}, "aggs": {"back": {"reverse_nested": {}}}}}),
    );
    assert_eq!(
        e.reason,
        "Reverse nested aggregation [back] can only be used inside a [nested] aggregation"
    );
}

#[test]
fn extended_bounds_with_a_tiny_interval_are_too_many_buckets() {
    // 1e18 empty buckets: tantivy's memory estimate overflowed (a panic) before this check
    let ix = TestIndex::new(&[&docs(10)], 1);
    let ctx = ix.ctx();
    for agg in [
        json!({"h": {"histogram": {"field": "balance", "interval": 1e-9,
                                   "extended_bounds": {"min": 0, "max": 1e9}}}}),
        json!({"h": {"date_histogram": {"field": "createdTime", "fixed_interval": "1ms",
                                        "extended_bounds": {"min": 0, "max": 9_000_000_000_000_000_000_i64}}}}),
    ] {
        let req = parse_aggs(&agg).unwrap();
        let e = run_aggs(&req, &ctx, &ix.shards, &tantivy::query::AllQuery, false).unwrap_err();
        assert_eq!(
            (e.status, e.kind.as_str()),
            (400, "too_many_buckets_exception"),
            "{agg}"
        );
    }
    // hard_bounds clip the extended ones: a few buckets are fine
    let req = parse_aggs(
        &json!({"h": {"histogram": {"field": "balance", "interval": 1,
        "extended_bounds": {"min": 0, "max": 1e12}, "hard_bounds": {"min": 0, "max": 10}}}}),
    )
    .unwrap();
    run_aggs(&req, &ctx, &ix.shards, &tantivy::query::AllQuery, false).unwrap();
}

// ---------------------------------------------------------------------------------------------
// weighted_avg and multi_terms

#[test]
fn weighted_avg_balance_by_status() {
    let all = docs(400);
    let ix = TestIndex::new(&[&all], 3);
    let out = ix.run(json!({"w": {"weighted_avg": {
        "value": {"field": "balance"}, "weight": {"field": "status", "missing": 1}}}}));
    let (mut num, mut den) = (0.0, 0.0);
    for d in &all {
        if let Some(b) = d.balance {
            num += b * d.status as f64;
            den += d.status as f64;
        }
    }
    assert_close(&out["w"]["value"], num / den, "weighted avg");
}

#[test]
fn weighted_avg_of_columns_every_document_has() {
    // `status` has a value in every document: the batched reads of the value's and the
    // weight's columns (the common shape) must give the per-document path's sums.
    let all = docs(400);
    let ix = TestIndex::new(&[&all], 3);
    let out = ix.run(json!({"w": {"weighted_avg": {
        "value": {"field": "status"}, "weight": {"field": "status"}}}}));
    let (mut num, mut den) = (0.0, 0.0);
    for d in &all {
        num += (d.status * d.status) as f64;
        den += d.status as f64;
    }
    assert_close(&out["w"]["value"], num / den, "weighted avg");
}

#[test]
fn multi_terms_orders_and_cuts_combined_keys() {
    let all = docs(500);
    let ix = TestIndex::new(&[&all], 3);
    let out = ix.run(json!({"m": {"multi_terms": {
        "terms": [{"field": "acctType"}, {"field": "status"}], "size": 6}}}));
    let mut counts: BTreeMap<(String, i64), u64> = BTreeMap::new();
    for d in &all {
        *counts
            .entry((d.acct_type.to_string(), d.status))
            .or_default() += 1;
    }
    let mut expected: Vec<((String, i64), u64)> = counts.into_iter().collect();
    expected.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let other: u64 = expected[6..].iter().map(|e| e.1).sum();
    expected.truncate(6);
    let got: Vec<((String, i64), u64)> = out["m"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let k = &b["key"];
            (
                (k[0].as_str().unwrap().to_string(), k[1].as_i64().unwrap()),
                b["doc_count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, expected);
    assert_eq!(out["m"]["sum_other_doc_count"], json!(other));
    let first = &out["m"]["buckets"][0];
    assert_eq!(
        first["key_as_string"],
        json!(format!("{}|{}", expected[0].0 .0, expected[0].0 .1))
    );
}

#[test]
fn multi_terms_reads_scripts_as_value_sources() {
    let all = docs(300);
    let ix = TestIndex::new(&[&all], 2);
    let out = ix.run(json!({"m": {"multi_terms": {"size": 1000, "terms": [
        {"script": "doc['acctType'].value + '!'"},
        {"field": "status", "script": "_value % 3"}]}}}));
    let mut counts: BTreeMap<(String, i64), u64> = BTreeMap::new();
    for d in &all {
        *counts
            .entry((format!("{}!", d.acct_type), d.status % 3))
            .or_default() += 1;
    }
    let mut expected: Vec<((String, i64), u64)> = counts.into_iter().collect();
    expected.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let got: Vec<((String, i64), u64)> = out["m"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let k = &b["key"];
            (
                (k[0].as_str().unwrap().to_string(), k[1].as_i64().unwrap()),
                b["doc_count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn multi_terms_needs_two_terms() {
    let err = parse_aggs(&json!({"m": {"multi_terms": {"terms": [{"field": "a"}]}}})).unwrap_err();
    assert_eq!(err.status, 400);
    assert!(err.reason.contains("at least 2 fields"), "{}", err.reason);
}

#[test]
fn rare_terms_keeps_the_rare_by_count_then_key() {
    let all = docs(300);
    let ix = TestIndex::new(&[&all], 2);
    let out = ix.run(json!({"r": {"rare_terms": {"field": "acctId", "max_doc_count": 8}}}));
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for d in &all {
        let id = format!("A{:011}", d.id.parse::<u64>().unwrap() % 37);
        *counts.entry(id).or_default() += 1;
    }
    let mut expected: Vec<(String, u64)> = counts.into_iter().filter(|(_, n)| *n <= 8).collect();
    expected.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
    assert_eq!(bucket_pairs(&out["r"]), expected);
}

#[test]
fn top_metrics_by_balance() {
    let all = docs(200);
    let ix = TestIndex::new(&[&all], 2);
    let out = ix.run(json!({"t": {"top_metrics": {
        "metrics": [{"field": "status"}], "sort": {"balance": "desc"}, "size": 2}}}));
    let mut have: Vec<&Doc> = all.iter().filter(|d| d.balance.is_some()).collect();
    have.sort_by(|a, b| b.balance.unwrap().total_cmp(&a.balance.unwrap()));
    let top = out["t"]["top"].as_array().unwrap();
    assert_eq!(top.len(), 2);
    for (t, d) in top.iter().zip(&have) {
        assert_eq!(t["sort"][0].as_f64(), d.balance);
        assert_eq!(t["metrics"]["status"], json!(d.status));
    }
}

// ---------------------------------------------------------------------------------------------
// Scripts, runtime fields, profiling

#[test]
fn value_scripts_and_scripts_as_sources_under_buckets() {
    let all = docs(300);
    let ix = TestIndex::new(&[&all], 2);
    let out = ix.run(json!({
        "by_type": {"terms": {"script": "doc['acctType'].value + '!'", "size": 10},
            "aggs": {"twice": {"sum": {"field": "status", "script": {
                "source": "_value * params.k", "params": {"k": 2}}}}}},
        "h": {"histogram": {"script": "doc['status'].value * 10", "interval": 20}}
    }));
    let expected = expected_terms(all.iter().map(|d| d.acct_type));
    let got: Vec<(String, u64)> = bucket_pairs(&out["by_type"]);
    let want: Vec<(String, u64)> = expected
        .iter()
        .map(|(k, c)| (format!("{k}!"), *c))
        .collect();
    assert_eq!(got, want);
    for b in out["by_type"]["buckets"].as_array().unwrap() {
        let key = b["key"].as_str().unwrap().trim_end_matches('!');
        let sum: i64 = all
            .iter()
            .filter(|d| d.acct_type == key)
            .map(|d| 2 * d.status)
            .sum();
        assert_close(&b["twice"]["value"], sum as f64, key);
    }
    let mut hist: BTreeMap<i64, u64> = BTreeMap::new();
    for d in &all {
        *hist.entry(d.status * 10 / 20 * 20).or_default() += 1;
    }
    let got: BTreeMap<i64, u64> = out["h"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["doc_count"].as_u64() != Some(0))
        .map(|b| {
            (
                b["key"].as_f64().unwrap() as i64,
                b["doc_count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, hist);
}

#[test]
fn profiled_run_matches_and_times_each_top_level_aggregation() {
    let all = docs(200);
    let ix = TestIndex::new(&[&all, &all[..50]], 2);
    let aggs = json!({"t": {"terms": {"field": "acctType"}},
                      "h": {"histogram": {"field": "status", "interval": 2},
                            "aggs": {"m": {"max": {"field": "balance"}}}}});
    let req = parse_aggs(&aggs).unwrap();
    let ctx = ix.ctx();
    let q = tantivy::query::AllQuery;
    let target = AggTarget {
        index_name: "test",
        ctx: &ctx,
        shards: &ix.shards,
        query: &q,
        named: &[],
        named_scores: false,
    };
    let plain = run_aggs_multi(&req, std::slice::from_ref(&target), false).unwrap();
    let (out, shards) =
        super::run_aggs_multi_profiled(&req, std::slice::from_ref(&target), false).unwrap();
    assert_eq!(out, plain);
    assert_eq!(shards.len(), 2);
    for (entries, n) in shards.iter().zip([200u64, 50]) {
        let h = entries.iter().find(|e| e["description"] == "h").unwrap();
        assert_eq!(h["type"], "NumericHistogramAggregator");
        assert_eq!(h["breakdown"]["collect_count"], json!(n));
        assert_eq!(h["children"][0]["type"], "MaxAggregator");
        assert!(h["breakdown"]["initialize"].as_u64().unwrap() > 0);
    }
}

#[test]
fn refusals_on_scripts_name_the_script() {
    let all = docs(20);
    let ix = TestIndex::new(&[&all], 1);
    let e = ix
        .run_with(
            None,
            json!({"t": {"terms": {"script": "doc['acctType'].value", "include": "a.*"}}}),
            false,
        )
        .unwrap_err();
    assert_eq!(e.kind, "illegal_argument_exception");
    assert!(
        e.reason.contains("[script: doc['acctType'].value]"),
        "{}",
        e.reason
    );
    let e = ix
        .run_with(
            None,
            json!({"a": {"avg": {"script": "doc['acctType'].value", "value_type": "string"}}}),
            false,
        )
        .unwrap_err();
    assert!(e.reason.contains("of type [keyword]"), "{}", e.reason);
}

#[test]
fn scripts_feed_date_histograms_date_ranges_weighted_avg_percentile_ranks_and_missing() {
    let all = docs(200);
    let ix = TestIndex::new(&[&all], 2);
    const BASE: i64 = 1_704_067_200_000; // 2024-01-01
    let script = format!("doc['status'].value * 40L * 86400000L + {BASE}L");
    let out = ix.run(json!({
        "months": {"date_histogram": {"script": script, "calendar_interval": "month"}},
        // 120 days in 10 buckets: 121 days exceed 10 x 7, the 4 months fit.
        "auto": {"auto_date_histogram": {"script": script, "buckets": 10}},
        "days": {"date_histogram": {"script": script, "fixed_interval": "1d",
                                    "min_doc_count": 1}},
        "dr": {"date_range": {"script": script,
                              "ranges": [{"to": "2024-02-01"}, {"from": "2024-02-01"}]}},
        "wa": {"weighted_avg": {"value": {"script": "doc['status'].value * 2"},
                                "weight": {"field": "status"}}},
        "pr": {"percentile_ranks": {"script": "doc['status'].value", "values": [-1, 10]}},
        "none": {"missing": {"script": "doc['status'].value == 0 ? null : 1"}}
    }));
    let millis = |d: &Doc| d.status * 40 * DAY + BASE;
    // 2024-01-01, 2024-02-10, 2024-03-21, 2024-04-30: one month each
    let mut months: BTreeMap<i64, u64> = BTreeMap::new();
    for d in &all {
        *months.entry(d.status).or_default() += 1;
    }
    let got: Vec<(String, u64)> = out["months"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["doc_count"].as_u64() != Some(0))
        .map(|b| {
            (
                b["key_as_string"].as_str().unwrap().to_string(),
                b["doc_count"].as_u64().unwrap(),
            )
        })
        .collect();
    let names = [
        "2024-01-01T00:00:00.000Z",
        "2024-02-01T00:00:00.000Z",
        "2024-03-01T00:00:00.000Z",
        "2024-04-01T00:00:00.000Z",
    ];
    let want: Vec<(String, u64)> = months
        .iter()
        .map(|(s, c)| (names[*s as usize].to_string(), *c))
        .collect();
    assert_eq!(got, want);
    assert_eq!(out["auto"]["interval"], json!("1M"));
    let auto: Vec<(String, u64)> = out["auto"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["doc_count"].as_u64() != Some(0))
        .map(|b| {
            (
                b["key_as_string"].as_str().unwrap().to_string(),
                b["doc_count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(auto, want);
    let days: Vec<(i64, u64)> = out["days"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["key"].as_i64().unwrap(), b["doc_count"].as_u64().unwrap()))
        .collect();
    let want: Vec<(i64, u64)> = months
        .iter()
        .map(|(s, c)| (s * 40 * DAY + BASE, *c))
        .collect();
    assert_eq!(days, want);
    let feb = BASE + 31 * DAY;
    let before = all.iter().filter(|d| millis(d) < feb).count() as u64;
    let ranges = out["dr"]["buckets"].as_array().unwrap();
    assert_eq!(ranges[0]["doc_count"], json!(before));
    assert_eq!(ranges[1]["doc_count"], json!(all.len() as u64 - before));
    let num: i64 = all.iter().map(|d| 2 * d.status * d.status).sum();
    let den: i64 = all.iter().map(|d| d.status).sum();
    assert_close(&out["wa"]["value"], num as f64 / den as f64, "weighted_avg");
    assert_eq!(out["pr"]["values"]["-1.0"], json!(0.0));
    assert_eq!(out["pr"]["values"]["10.0"], json!(100.0));
    let zero = all.iter().filter(|d| d.status == 0).count() as u64;
    assert_eq!(out["none"]["doc_count"], json!(zero));
}

/// Every per-bucket sketch (percentiles, percentile_ranks, boxplot, MAD, string_stats) at
/// any depth comes from one search per shard (one more under `global`), whatever the number
/// of buckets, with each bucket's exact values.
#[test]
fn sketches_of_every_bucket_in_one_pass() {
    let all = docs(600);
    let (a, b) = all.split_at(250);
    let ix = TestIndex::new(&[a, b], 3);
    let before = crate::sketch::passes();
    let out = ix.run(json!({
        "t": {"terms": {"field": "acctType", "size": 10},
              "aggs": {"h": {"histogram": {"field": "status", "interval": 1,
                                           "extended_bounds": {"min": -1, "max": 4}},
                             "aggs": {"p": {"percentiles": {"field": "balance",
                                                            "percents": [25, 50, 75]}},
                                      "s": {"string_stats": {"field": "tags"}}}}}},
        "f": {"filters": {"filters": {"on": {"term": {"active": true}},
                                      "off": {"term": {"active": false}}}},
              "aggs": {"r": {"range": {"field": "balance",
                                       "ranges": [{"to": 0}, {"from": 0, "to": 40000},
                                                  {"from": 20000}]},
                             "aggs": {"m": {"median_absolute_deviation": {"field": "balance"}}}}}},
        "g": {"global": {}, "aggs": {"b": {"boxplot": {"field": "status"}}}},
        "tags": {"terms": {"field": "tags"},
                 "aggs": {"k": {"percentile_ranks": {"field": "status", "values": [1]}}}},
    }));
    // Two shards: one pass over the query's matches and one over `global`'s documents each.
    assert_eq!(crate::sketch::passes() - before, 4);
    for tb in out["t"]["buckets"].as_array().unwrap() {
        let key = tb["key"].as_str().unwrap();
        let hb = tb["h"]["buckets"].as_array().unwrap();
        assert_eq!(hb.len(), 6, "{key}: extended bounds -1..4");
        for b in hb {
            let s = b["key"].as_f64().unwrap() as i64;
            let in_bucket: Vec<&Doc> = all
                .iter()
                .filter(|d| d.acct_type == key && d.status == s)
                .collect();
            assert_eq!(b["doc_count"], json!(in_bucket.len()));
            let v: Vec<f64> = in_bucket.iter().filter_map(|d| d.balance).collect();
            for p in [25.0, 50.0, 75.0] {
                let got = &b["p"]["values"][format!("{p:.1}")];
                if v.is_empty() {
                    assert_eq!(*got, Value::Null);
                } else {
                    assert_close(got, interpolated(&v, p / 100.0), key);
                }
            }
            let tags: usize = in_bucket
                .iter()
                .map(|d| {
                    let mut t = d.tags.clone();
                    t.sort();
                    t.dedup();
                    t.len()
                })
                .sum();
            assert_eq!(b["s"]["count"], json!(tags), "{key}/{s}");
        }
    }
    for (name, active) in [("on", true), ("off", false)] {
        let ranges = out["f"]["buckets"][name]["r"]["buckets"]
            .as_array()
            .unwrap();
        for r in ranges {
            let from = r["from"].as_f64().unwrap_or(f64::NEG_INFINITY);
            let to = r["to"].as_f64().unwrap_or(f64::INFINITY);
            let v: Vec<f64> = all
                .iter()
                .filter(|d| d.active == active)
                .filter_map(|d| d.balance)
                .filter(|x| *x >= from && *x < to)
                .collect();
            assert_eq!(r["doc_count"], json!(v.len()));
            let m = interpolated(&v, 0.5);
            let dev: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
            assert_close(&r["m"]["value"], interpolated(&dev, 0.5), name);
        }
    }
    let st: Vec<f64> = all.iter().map(|d| d.status as f64).collect();
    assert_close(&out["g"]["b"]["q3"], interpolated(&st, 0.75), "global q3");
    for tb in out["tags"]["buckets"].as_array().unwrap() {
        let key = tb["key"].as_str().unwrap();
        let v: Vec<f64> = all
            .iter()
            .filter(|d| d.tags.iter().any(|t| t == key))
            .map(|d| d.status as f64)
            .collect();
        assert_close(&tb["k"]["values"]["1.0"], exact_rank(&v, 1.0), key);
    }
    // No sketch: no extra pass.
    let before = crate::sketch::passes();
    ix.run(json!({"t": {"terms": {"field": "acctType"}}}));
    assert_eq!(crate::sketch::passes(), before);
}

/// `cardinality` counts exactly up to its precision threshold's limit, at any depth, with
/// `missing`; past the limit the HyperLogLog estimate stays.
#[test]
fn cardinality_is_exact_below_the_precision_threshold() {
    assert_eq!(crate::sketch::exact_limit(3000), 3072);
    assert_eq!(crate::sketch::exact_limit(40000), 49152);
    assert_eq!(crate::sketch::exact_limit(100), 192);
    let all = docs(1500);
    let (a, b) = all.split_at(700);
    let ix = TestIndex::new(&[a, b], 3);
    let out = ix.run(json!({
        "balance": {"cardinality": {"field": "balance"}},
        "with_missing": {"cardinality": {"field": "balance", "missing": -1}},
        "created": {"cardinality": {"field": "createdTime"}},
        "acct": {"cardinality": {"field": "acctId"}},
        "low": {"cardinality": {"field": "balance", "precision_threshold": 100}},
        "t": {"terms": {"field": "acctType", "size": 10},
              "aggs": {"c": {"cardinality": {"field": "balance"}},
                       "k": {"cardinality": {"field": "tags", "missing": "none"}},
                       "a": {"cardinality": {"field": "active"}}}},
    }));
    let distinct = |it: &mut dyn Iterator<Item = String>| {
        let mut v: Vec<String> = it.collect();
        v.sort();
        v.dedup();
        v.len()
    };
    let balances = distinct(&mut all.iter().filter_map(|d| d.balance).map(|x| x.to_string()));
    assert!(balances > 1000, "{balances}");
    assert_eq!(out["balance"]["value"], json!(balances));
    let with_missing = distinct(
        &mut all
            .iter()
            .map(|d| d.balance.unwrap_or(-1.0))
            .map(|x| x.to_string()),
    );
    assert_eq!(out["with_missing"]["value"], json!(with_missing));
    let created = distinct(&mut all.iter().map(|d| d.created.to_string()));
    assert_eq!(out["created"]["value"], json!(created));
    assert_eq!(out["acct"]["value"], json!(37));
    // Past the limit (192): an estimate, within HyperLogLog's error.
    let low = out["low"]["value"].as_f64().unwrap();
    assert!(
        (low - balances as f64).abs() <= 0.05 * balances as f64,
        "{low}"
    );
    for tb in out["t"]["buckets"].as_array().unwrap() {
        let key = tb["key"].as_str().unwrap();
        let docs: Vec<&Doc> = all.iter().filter(|d| d.acct_type == key).collect();
        let c = distinct(&mut docs.iter().filter_map(|d| d.balance).map(|x| x.to_string()));
        assert_eq!(tb["c"]["value"], json!(c), "{key}");
        let k = distinct(&mut docs.iter().flat_map(|d| {
            if d.tags.is_empty() {
                vec!["none".to_string()]
            } else {
                d.tags.clone()
            }
        }));
        assert_eq!(tb["k"]["value"], json!(k), "{key}");
        let act = distinct(&mut docs.iter().map(|d| d.active.to_string()));
        assert_eq!(tb["a"]["value"], json!(act), "{key}");
    }
}

/// A composite over computed keys (a zoned, offset date histogram and a keyword), on two
/// shards of several segments, paged through `after_key`: every key once, in order, with
/// the documents' counts and a sub-aggregation.
#[test]
fn composite_computed_keys_page_across_shards() {
    let all = docs(200);
    let (a, b) = all.split_at(90);
    let ix = TestIndex::new(&[a, b], 3);
    let zone = 5 * 3_600_000 + 30 * 60_000;
    let offset = -3_600_000;
    let o = offset - zone;
    let mut want: std::collections::BTreeMap<(String, i64), (u64, i64)> = Default::default();
    for d in &all {
        let day = (d.created - o).div_euclid(DAY) * DAY + o;
        let e = want.entry((d.acct_type.to_string(), -day)).or_default();
        e.0 += 1;
        e.1 += d.status;
    }
    let sources = json!([
        {"t": {"terms": {"field": "acctType"}}},
        {"d": {"date_histogram": {"field": "createdTime", "calendar_interval": "day",
                                  "time_zone": "+05:30", "offset": "-1h", "order": "desc"}}},
    ]);
    let mut got = Vec::new();
    let mut after = Value::Null;
    loop {
        let mut c = json!({"size": 7, "sources": sources});
        if !after.is_null() {
            c["after"] = after.clone();
        }
        let out =
            ix.run(json!({"c": {"composite": c, "aggs": {"s": {"sum": {"field": "status"}}}}}));
        let buckets = out["c"]["buckets"].as_array().unwrap().clone();
        if buckets.is_empty() {
            assert!(out["c"].get("after_key").is_none());
            break;
        }
        assert!(buckets.len() <= 7);
        after = out["c"]["after_key"].clone();
        got.extend(buckets);
    }
    let want: Vec<Value> = want
        .into_iter()
        .map(|((t, d), (n, s))| {
            json!({"key": {"t": t, "d": -d}, "doc_count": n, "s": {"value": s as f64}})
        })
        .collect();
    assert_eq!(got, want);
}
