//! proptest strategies for hostile JSON, shared by the generative tests of the parsers
//! (`lode-query`, `lode-engine`'s mappings, `lode-api`'s bulk body). Test-only: each crate
//! includes this file with `#[path]` from a `#[cfg(test)]` module.

#![allow(dead_code)] // each including crate uses a subset

use proptest::prelude::*;
use serde_json::{Map, Number, Value};

/// Cases per property: enough to find shallow panics, few enough to run in CI in seconds.
pub const CASES: u32 = 256;

/// A fixed seed unless `PROPTEST_RNG_SEED` names another: CI must give the same verdict on the
/// same commit. Explore new inputs with `PROPTEST_RNG_SEED=<n> PROPTEST_CASES=<m> cargo test`.
pub fn config() -> ProptestConfig {
    let defaults = ProptestConfig::default();
    let rng_seed = match defaults.rng_seed {
        proptest::test_runner::RngSeed::Random => proptest::test_runner::RngSeed::Fixed(0x10de),
        chosen => chosen,
    };
    let cases = if std::env::var_os("PROPTEST_CASES").is_some() {
        defaults.cases
    } else {
        CASES
    };
    ProptestConfig {
        cases,
        rng_seed,
        failure_persistence: None,
        ..defaults
    }
}

/// Words the parsers dispatch on, so random objects reach deep code paths.
pub const WORDS: &[&str] = &[
    "query",
    "bool",
    "must",
    "should",
    "filter",
    "must_not",
    "term",
    "terms",
    "match",
    "match_phrase",
    "match_all",
    "match_none",
    "range",
    "gte",
    "lte",
    "gt",
    "lt",
    "prefix",
    "wildcard",
    "regexp",
    "fuzzy",
    "exists",
    "field",
    "fields",
    "ids",
    "values",
    "value",
    "boost",
    "minimum_should_match",
    "query_string",
    "simple_query_string",
    "multi_match",
    "constant_score",
    "dis_max",
    "queries",
    "function_score",
    "functions",
    "nested",
    "path",
    "script",
    "source",
    "params",
    "script_score",
    "boosting",
    "positive",
    "negative",
    "negative_boost",
    "fuzziness",
    "operator",
    "analyzer",
    "slop",
    "format",
    "time_zone",
    "relation",
    "flags",
    "max_determinized_states",
    "case_insensitive",
    "rewrite",
    "prefix_length",
    "max_expansions",
    "type",
    "properties",
    "dynamic",
    "keyword",
    "text",
    "long",
    "integer",
    "double",
    "date",
    "boolean",
    "ip",
    "object",
    "nested",
    "index",
    "doc_values",
    "store",
    "null_value",
    "ignore_above",
    "normalizer",
    "copy_to",
    "_id",
    "_index",
    "_source",
    "routing",
    "create",
    "update",
    "delete",
    "doc",
    "upsert",
    "n",
    "k",
    "t",
    "a.b",
    "",
    ".",
    "..",
    "*",
    "now-1d/d",
    "2024-01-01",
    "1<-1 2<75%",
    "AUTO",
    "and",
    "or",
    "standard",
    "whitespace",
    "scaled_float",
    "scaling_factor",
    "meta",
    "tie_breaker",
];

pub fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(WORDS).prop_map(str::to_string),
        1 => "[a-z_.*?\\[\\]()<>/\\\\\"{}0-9 -]{0,12}",
        1 => any::<String>().prop_map(|s| s.chars().take(12).collect()),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| Value::Number(n.into())),
        prop_oneof![
            Just(0i64),
            Just(-1),
            Just(1),
            Just(i64::MAX),
            Just(i64::MIN),
            Just(i32::MAX as i64 + 1)
        ]
        .prop_map(|n| Value::Number(n.into())),
        any::<u64>().prop_map(|n| Value::Number(n.into())),
        any::<f64>().prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
        word().prop_map(Value::String),
    ]
}

/// Any JSON value, at most 4 levels deep, with keys mostly from [`WORDS`].
pub fn json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((word(), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// An object `{name: value}` with `name` from [`WORDS`]: the shape every parser expects.
pub fn named(value: impl Strategy<Value = Value>) -> impl Strategy<Value = Value> {
    (proptest::sample::select(WORDS), value).prop_map(|(k, v)| {
        let mut m = Map::new();
        m.insert(k.to_string(), v);
        Value::Object(m)
    })
}

/// Replaces the node at a pseudo-random position of `seed` (chosen by `pick`) with `with`.
pub fn graft(seed: &Value, pick: usize, with: Value) -> Value {
    fn count(v: &Value) -> usize {
        1 + match v {
            Value::Array(a) => a.iter().map(count).sum(),
            Value::Object(o) => o.values().map(count).sum(),
            _ => 0,
        }
    }
    fn go(v: &mut Value, n: &mut usize, with: &mut Option<Value>) {
        if *n == 0 {
            if let Some(w) = with.take() {
                *v = w;
            }
            return;
        }
        *n -= 1;
        match v {
            Value::Array(a) => a.iter_mut().for_each(|c| go(c, n, with)),
            Value::Object(o) => o.values_mut().for_each(|c| go(c, n, with)),
            _ => {}
        }
    }
    let mut out = seed.clone();
    let mut n = pick % count(seed);
    go(&mut out, &mut n, &mut Some(with));
    out
}

/// Byte-level mutations of a text (delete, insert, replace at positions), for parsers of raw
/// bodies: truncations, stray quotes and brackets, invalid UTF-8.
pub fn mutate_bytes(text: &[u8], edits: &[(usize, u8, u8)]) -> Vec<u8> {
    let mut out = text.to_vec();
    for &(pos, op, byte) in edits {
        let i = if out.is_empty() {
            0
        } else {
            pos % (out.len() + 1)
        };
        match op % 3 {
            0 if i < out.len() => {
                out.remove(i);
            }
            1 => out.insert(i, byte),
            _ if i < out.len() => out[i] = byte,
            _ => out.push(byte),
        }
    }
    out
}

pub fn edits() -> impl Strategy<Value = Vec<(usize, u8, u8)>> {
    let byte = prop_oneof![
        proptest::sample::select(b"{}[]\":,\\\n 0-.eE\xff\xc3".to_vec()),
        any::<u8>()
    ];
    proptest::collection::vec((any::<usize>(), any::<u8>(), byte), 1..6)
}

/// The check every property makes: a parser answers Ok or a client error, never a 5xx.
/// (`status`, `detail`) of the error, if any.
pub fn client_error_or_ok(err: Option<(u16, String)>) -> Result<(), TestCaseError> {
    if let Some((status, detail)) = err {
        prop_assert!((400..=499).contains(&status), "status {status}: {detail}");
    }
    Ok(())
}
