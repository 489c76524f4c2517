//! Aggregations over runtime fields. tantivy's aggregation framework reads columns, which a
//! runtime field does not have: a top-level `terms` or metric aggregation on a runtime field
//! is run here instead, by collecting the query's matching documents and evaluating the field
//! per document. Rendered as ES renders the same aggregation on a mapped field of that type.

use lode_engine::{EsError, EsResult};
use lode_query::runtime::{RuntimeField, RuntimeFields, RuntimeType};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

const METRICS: &[&str] = &[
    "min",
    "max",
    "sum",
    "avg",
    "value_count",
    "stats",
    "cardinality",
];

/// One top-level aggregation over a runtime field.
pub struct RuntimeAgg {
    pub name: String,
    kind: String,
    field: String,
    body: Map<String, Value>,
}

fn illegal(reason: String) -> EsError {
    EsError::illegal_argument(reason)
}

/// Splits the request's top-level aggregations into those on a runtime field of any target
/// (run here) and the rest (run by tantivy; its JSON, `None` when nothing is left).
pub fn split(
    aggs: &Value,
    runtimes: &[&RuntimeFields],
) -> EsResult<(Vec<RuntimeAgg>, Option<Value>)> {
    let Some(o) = aggs.as_object() else {
        return Ok((Vec::new(), Some(aggs.clone())));
    };
    let mut out = Vec::new();
    let mut rest = Map::new();
    for (name, def) in o {
        let field = def.as_object().and_then(|d| {
            d.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "meta" | "aggs" | "aggregations"))
                .find_map(|(k, body)| {
                    let f = body.get("field")?.as_str()?;
                    runtimes
                        .iter()
                        .any(|r| r.contains_key(f))
                        .then(|| (k.clone(), f.to_string(), body.clone()))
                })
        });
        let Some((kind, field, body)) = field else {
            rest.insert(name.clone(), def.clone());
            continue;
        };
        if kind != "terms" && !METRICS.contains(&kind.as_str()) {
            return Err(illegal(format!(
                "aggregation [{name}] of type [{kind}] on runtime field [{field}] is not supported by Lode"
            )));
        }
        if def.get("aggs").or(def.get("aggregations")).is_some() {
            return Err(illegal(format!(
                "sub-aggregations under aggregation [{name}] on runtime field [{field}] are not supported by Lode"
            )));
        }
        let body = body.as_object().cloned().unwrap_or_default();
        let allowed: &[&str] = if kind == "terms" {
            &[
                "field",
                "size",
                "shard_size",
                "order",
                "min_doc_count",
                "missing",
            ]
        } else {
            &["field", "missing"]
        };
        if let Some(k) = body.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(illegal(format!(
                "[{k}] of aggregation [{name}] on runtime field [{field}] is not supported by Lode"
            )));
        }
        out.push(RuntimeAgg {
            name: name.clone(),
            kind,
            field,
            body,
        });
    }
    Ok((out, (!rest.is_empty()).then_some(Value::Object(rest))))
}

/// The values of one aggregation, gathered over every target's matching documents.
#[derive(Default)]
pub struct Acc {
    /// terms: canonical key → (key value, doc count)
    terms: HashMap<String, (Value, u64)>,
    nums: Vec<f64>,
    distinct: std::collections::HashSet<String>,
    count: u64,
    ty: Option<RuntimeType>,
}

impl RuntimeAgg {
    /// Checks the aggregation against a target's runtime field (or none there: the
    /// field is then unmapped on that index and contributes nothing).
    pub fn field<'r>(&self, runtime: &'r RuntimeFields) -> EsResult<Option<&'r Arc<RuntimeField>>> {
        let Some(f) = runtime.get(&self.field) else {
            return Ok(None);
        };
        if f.ty == RuntimeType::Keyword
            && !matches!(self.kind.as_str(), "terms" | "value_count" | "cardinality")
        {
            return Err(illegal(format!(
                "Field [{}] of type [keyword] is not supported for aggregation [{}]",
                self.field, self.kind
            )));
        }
        Ok(Some(f))
    }

    /// Adds one document's values.
    pub fn add(&self, acc: &mut Acc, f: &RuntimeField, mut vals: Vec<Value>) -> EsResult<()> {
        acc.ty = Some(f.ty);
        if vals.is_empty() {
            if let Some(m) = self.body.get("missing") {
                vals.push(lode_query::runtime::query_value(f, m)?);
            }
        }
        if self.kind == "terms" {
            let mut seen = std::collections::HashSet::new();
            for v in vals {
                let key = v.to_string();
                if seen.insert(key.clone()) {
                    acc.terms.entry(key).or_insert((v, 0)).1 += 1;
                }
            }
            return Ok(());
        }
        for v in vals {
            acc.count += 1;
            match self.kind.as_str() {
                "cardinality" => {
                    acc.distinct.insert(v.to_string());
                }
                "value_count" => {}
                _ => acc.nums.push(match &v {
                    Value::Bool(b) => f64::from(u8::from(*b)),
                    v => v.as_f64().unwrap_or(0.0),
                }),
            }
        }
        Ok(())
    }

    /// The aggregation's result as ES renders it, under its (typed) name.
    pub fn render(&self, acc: &Acc, typed_keys: bool) -> EsResult<(String, Value)> {
        let ty = acc.ty.unwrap_or(RuntimeType::Double);
        let date = |ms: f64| {
            lode_dates::DateFormat::default_es().format_millis(ms as i64, &lode_dates::Tz::utc())
        };
        let (type_name, v) = match self.kind.as_str() {
            "terms" => self.render_terms(acc, ty)?,
            "value_count" => ("value_count", json!({"value": acc.count})),
            "cardinality" => ("cardinality", json!({"value": acc.distinct.len()})),
            kind => {
                let n = acc.nums.len();
                let sum: f64 = acc.nums.iter().sum();
                let min = acc.nums.iter().copied().reduce(f64::min);
                let max = acc.nums.iter().copied().reduce(f64::max);
                let avg = (n > 0).then(|| sum / n as f64);
                let mut o = Map::new();
                if kind == "stats" {
                    o.insert("count".into(), json!(n));
                }
                let mut put = |k: &str, v: Option<f64>| {
                    o.insert(k.into(), v.map_or(Value::Null, |v| json!(v)));
                    if let (RuntimeType::Date, Some(v)) = (ty, v) {
                        let sk = if k == "value" {
                            "value_as_string".to_string()
                        } else {
                            format!("{k}_as_string")
                        };
                        o.insert(sk, json!(date(v)));
                    }
                };
                let name = match kind {
                    "min" => {
                        put("value", min);
                        "min"
                    }
                    "max" => {
                        put("value", max);
                        "max"
                    }
                    "sum" => {
                        put("value", Some(sum));
                        "sum"
                    }
                    "avg" => {
                        put("value", avg);
                        "avg"
                    }
                    _ => {
                        put("min", min);
                        put("max", max);
                        put("avg", avg);
                        put("sum", Some(sum));
                        "stats"
                    }
                };
                (name, Value::Object(o))
            }
        };
        let key = if typed_keys {
            format!("{type_name}#{}", self.name)
        } else {
            self.name.clone()
        };
        Ok((key, v))
    }

    fn render_terms(&self, acc: &Acc, ty: RuntimeType) -> EsResult<(&'static str, Value)> {
        let int = |k: &str| -> EsResult<i64> {
            let v = &self.body[k];
            v.as_i64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                .filter(|n| *n >= 0)
                .ok_or_else(|| {
                    EsError::parsing(format!(
                        "[{k}] must be a non-negative integer in aggregation [{}]",
                        self.name
                    ))
                })
        };
        let size = if self.body.contains_key("size") {
            int("size")? as usize
        } else {
            10
        };
        if size == 0 {
            return Err(illegal(format!(
                "[size] must be greater than 0. Found [0] in [{}]",
                self.name
            )));
        }
        let min_doc_count = if self.body.contains_key("min_doc_count") {
            int("min_doc_count")? as u64
        } else {
            1
        };
        if min_doc_count == 0 {
            return Err(illegal(format!(
                "[min_doc_count: 0] on runtime field [{}] is not supported by Lode",
                self.field
            )));
        }
        // order: `_count` (default desc, ties by key asc) or `_key`.
        let (by_key, asc) = match self.body.get("order") {
            None => (false, false),
            Some(o) => {
                let o = match o {
                    Value::Array(a) if a.len() == 1 => &a[0],
                    o => o,
                };
                let Some((k, dir)) = o
                    .as_object()
                    .filter(|m| m.len() == 1)
                    .and_then(|m| m.iter().next())
                else {
                    return Err(illegal(format!(
                        "[order] of aggregation [{}] on a runtime field supports one of [_count] or [_key]",
                        self.name
                    )));
                };
                let asc = match dir.as_str() {
                    Some("asc") => true,
                    Some("desc") => false,
                    _ => {
                        return Err(EsError::parsing(format!(
                            "Unknown terms order direction [{dir}] in terms aggregation [{}]",
                            self.name
                        )))
                    }
                };
                match k.as_str() {
                    "_count" => (false, asc),
                    "_key" | "_term" => (true, asc),
                    other => {
                        return Err(illegal(format!(
                            "[order] by [{other}] of aggregation [{}] on a runtime field is not supported by Lode",
                            self.name
                        )))
                    }
                }
            }
        };
        let key_cmp = |a: &Value, b: &Value| match (a, b) {
            (Value::String(x), Value::String(y)) => x.cmp(y),
            (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
            _ => a
                .as_f64()
                .unwrap_or(0.0)
                .total_cmp(&b.as_f64().unwrap_or(0.0)),
        };
        let mut buckets: Vec<&(Value, u64)> = acc
            .terms
            .values()
            .filter(|(_, c)| *c >= min_doc_count)
            .collect();
        buckets.sort_by(|(ka, ca), (kb, cb)| {
            if by_key {
                let o = key_cmp(ka, kb);
                if asc {
                    o
                } else {
                    o.reverse()
                }
            } else {
                let o = if asc { ca.cmp(cb) } else { cb.cmp(ca) };
                o.then_with(|| key_cmp(ka, kb))
            }
        });
        let other: u64 = buckets.iter().skip(size).map(|(_, c)| c).sum();
        let rendered: Vec<Value> = buckets
            .iter()
            .take(size)
            .map(|(k, c)| match (ty, k) {
                (RuntimeType::Boolean, Value::Bool(b)) => {
                    json!({"key": u8::from(*b), "key_as_string": b.to_string(), "doc_count": c})
                }
                (RuntimeType::Date, k) => json!({
                    "key": k,
                    "key_as_string": lode_dates::DateFormat::default_es()
                        .format_millis(k.as_i64().unwrap_or(0), &lode_dates::Tz::utc()),
                    "doc_count": c
                }),
                (_, k) => json!({"key": k, "doc_count": c}),
            })
            .collect();
        let type_name = match ty {
            RuntimeType::Keyword => "sterms",
            RuntimeType::Double => "dterms",
            _ => "lterms",
        };
        Ok((
            type_name,
            json!({
                "doc_count_error_upper_bound": 0,
                "sum_other_doc_count": other,
                "buckets": rendered
            }),
        ))
    }
}

/// One target index: its runtime fields, shard searchers, query and mapped fields.
pub type Target<'a> = (
    &'a RuntimeFields,
    &'a [lode_engine::shard::ShardSearcher],
    &'a dyn tantivy::query::Query,
    lode_query::script::Fields,
);

/// Runs the runtime aggregations over the matching documents of every target: each
/// target's query is collected (`DocSetCollector`), and its documents evaluated per segment.
pub fn run(
    aggs: &[RuntimeAgg],
    targets: &[Target<'_>],
    typed_keys: bool,
) -> EsResult<Map<String, Value>> {
    let mut accs: Vec<Acc> = aggs.iter().map(|_| Acc::default()).collect();
    for (runtime, shards, query, fields) in targets {
        let fs: Vec<Option<&Arc<RuntimeField>>> = aggs
            .iter()
            .map(|a| a.field(runtime))
            .collect::<EsResult<_>>()?;
        if fs.iter().all(Option::is_none) {
            continue;
        }
        for s in shards.iter() {
            let found = s
                .searcher
                .search(*query, &tantivy::collector::DocSetCollector)?;
            let mut by_segment: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
            for a in found {
                by_segment.entry(a.segment_ord).or_default().push(a.doc_id);
            }
            for (seg, mut docs_ids) in by_segment {
                docs_ids.sort_unstable();
                let reader = s.searcher.segment_reader(seg);
                let mut docs = lode_query::DocColumns::new(reader, fields.clone())
                    .with_runtime((*runtime).clone());
                for d in docs_ids {
                    docs.doc = d;
                    for ((agg, f), acc) in aggs.iter().zip(&fs).zip(accs.iter_mut()) {
                        if let Some(f) = f {
                            let vals = f.values(&mut docs).map_err(super::search_phase_error)?;
                            agg.add(acc, f, vals)?;
                        }
                    }
                }
            }
        }
    }
    let mut out = Map::new();
    for (agg, acc) in aggs.iter().zip(&accs) {
        let (k, v) = agg.render(acc, typed_keys)?;
        out.insert(k, v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> RuntimeFields {
        lode_query::runtime::parse_runtime_mappings(&json!({
            "k": {"type": "keyword"}, "n": {"type": "long"}
        }))
        .unwrap()
    }

    #[test]
    fn split_takes_top_level_runtime_aggs_only() {
        let r = rt();
        let (rt_aggs, rest) = split(
            &json!({"a": {"terms": {"field": "k"}}, "b": {"max": {"field": "x"}}}),
            &[&r],
        )
        .unwrap();
        assert_eq!(rt_aggs.len(), 1);
        assert_eq!(rt_aggs[0].name, "a");
        assert_eq!(rest, Some(json!({"b": {"max": {"field": "x"}}})));
        for bad in [
            json!({"a": {"terms": {"field": "k"}, "aggs": {"m": {"max": {"field": "x"}}}}}),
            json!({"a": {"histogram": {"field": "n", "interval": 2}}}),
            json!({"a": {"terms": {"field": "k", "exclude": "x"}}}),
        ] {
            let e = split(&bad, &[&r]).err().expect("refused");
            assert_eq!(e.kind, "illegal_argument_exception");
        }
    }

    #[test]
    fn terms_count_each_value_once_per_doc_and_render_as_es() {
        let r = rt();
        let (aggs, _) = split(&json!({"a": {"terms": {"field": "n", "size": 1}}}), &[&r]).unwrap();
        let f = aggs[0].field(&r).unwrap().unwrap();
        let mut acc = Acc::default();
        aggs[0]
            .add(&mut acc, f, vec![json!(3), json!(3), json!(4)])
            .unwrap();
        aggs[0].add(&mut acc, f, vec![json!(4)]).unwrap();
        let (k, v) = aggs[0].render(&acc, true).unwrap();
        assert_eq!(k, "lterms#a");
        assert_eq!(
            v,
            json!({"doc_count_error_upper_bound": 0, "sum_other_doc_count": 1,
                   "buckets": [{"key": 4, "doc_count": 2}]})
        );
    }
}
