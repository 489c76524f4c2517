//! `filter_path`: keeps only the response paths matching comma-separated patterns, with `*`
//! (one level, or part of a key), `**` (any depth) and `-` exclusions.

use serde_json::{Map, Value};

pub fn apply(v: &Value, spec: &str) -> Value {
    let (excl, incl): (Vec<&str>, Vec<&str>) = spec
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .partition(|s| s.starts_with('-'));
    let mut out = if incl.is_empty() {
        v.clone()
    } else {
        let patterns: Vec<Vec<&str>> = incl.iter().map(|p| p.split('.').collect()).collect();
        include(v, &patterns).unwrap_or(Value::Object(Map::new()))
    };
    for e in excl {
        let parts: Vec<&str> = e.trim_start_matches('-').split('.').collect();
        exclude(&mut out, &parts);
    }
    out
}

fn key_match(pat: &str, key: &str) -> bool {
    lode_engine::mapping::wildcard_match(pat, key)
}

fn include(v: &Value, patterns: &[Vec<&str>]) -> Option<Value> {
    if patterns.iter().any(|p| p.is_empty()) {
        return Some(v.clone());
    }
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, child) in m {
                let mut next: Vec<Vec<&str>> = Vec::new();
                for p in patterns {
                    if p[0] == "**" {
                        next.push(p.clone());
                        if p.len() > 1 && key_match(p[1], k) {
                            next.push(p[2..].to_vec());
                        }
                    } else if key_match(p[0], k) {
                        next.push(p[1..].to_vec());
                    }
                }
                if next.is_empty() {
                    continue;
                }
                if let Some(c) = include(child, &next) {
                    out.insert(k.clone(), c);
                }
            }
            if out.is_empty() {
                None
            } else {
                Some(Value::Object(out))
            }
        }
        Value::Array(items) => {
            let kept: Vec<Value> = items.iter().filter_map(|i| include(i, patterns)).collect();
            if kept.is_empty() {
                None
            } else {
                Some(Value::Array(kept))
            }
        }
        _ => {
            if patterns.iter().any(|p| p.iter().all(|s| *s == "**")) {
                Some(v.clone())
            } else {
                None
            }
        }
    }
}

fn exclude(v: &mut Value, parts: &[&str]) {
    if parts.is_empty() {
        return;
    }
    if parts[0] == "**" {
        // Any depth: the rest of the pattern here, and `**` again below every child.
        exclude(v, &parts[1..]);
        match v {
            Value::Object(m) => m.values_mut().for_each(|c| exclude(c, parts)),
            Value::Array(items) => items.iter_mut().for_each(|c| exclude(c, parts)),
            _ => {}
        }
        return;
    }
    match v {
        Value::Object(m) => {
            if parts.len() == 1 {
                m.retain(|k, _| !key_match(parts[0], k));
            } else {
                for (k, child) in m.iter_mut() {
                    if key_match(parts[0], k) {
                        exclude(child, &parts[1..]);
                    }
                }
            }
        }
        Value::Array(items) => {
            for i in items {
                exclude(i, parts);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::apply;
    use serde_json::json;

    #[test]
    fn filters() {
        let v = json!({"took":1,"hits":{"total":{"value":3},"hits":[{"_id":"1","_source":{"a":1}},{"_id":"2"}]}});
        assert_eq!(
            apply(&v, "hits.hits._id"),
            json!({"hits":{"hits":[{"_id":"1"},{"_id":"2"}]}})
        );
        assert_eq!(
            apply(&v, "took,hits.total.value"),
            json!({"took":1,"hits":{"total":{"value":3}}})
        );
        assert_eq!(
            apply(&v, "**._id"),
            json!({"hits":{"hits":[{"_id":"1"},{"_id":"2"}]}})
        );
        assert_eq!(apply(&v, "-hits"), json!({"took":1}));
        assert_eq!(
            apply(&v, "-**._source.a,**._source"),
            json!({"hits":{"hits":[{"_source":{}}]}})
        );
        assert_eq!(
            apply(&v, "-**.value"),
            json!({"took":1,"hits":{"total":{},"hits":[{"_id":"1","_source":{"a":1}},{"_id":"2"}]}})
        );
    }
}
