//! `_source` filtering (`_source: false`, includes/excludes with wildcards), as GET, search
//! and top_hits apply it.

use lode_engine::mapping::wildcard_match;
use serde_json::{json, Map, Value};

/// What part of `_source` a response carries.
#[derive(Debug, Clone, Default)]
pub struct SourceFilter {
    pub fetch: bool,
    pub includes: Vec<String>,
    pub excludes: Vec<String>,
}

impl SourceFilter {
    pub fn all() -> SourceFilter {
        SourceFilter {
            fetch: true,
            ..Default::default()
        }
    }

    /// From a search body's `_source` value: bool, string, array, or {includes, excludes}.
    pub fn from_json(v: Option<&Value>) -> SourceFilter {
        match v {
            None => SourceFilter::all(),
            Some(Value::Bool(b)) => SourceFilter {
                fetch: *b,
                ..Default::default()
            },
            Some(Value::String(s)) => SourceFilter {
                fetch: true,
                includes: vec![s.clone()],
                excludes: vec![],
            },
            Some(Value::Array(a)) => SourceFilter {
                fetch: true,
                includes: strings(a),
                excludes: vec![],
            },
            Some(Value::Object(o)) => {
                let get = |k: &str, alt: &str| match o.get(k).or_else(|| o.get(alt)) {
                    Some(Value::String(s)) => vec![s.clone()],
                    Some(Value::Array(a)) => strings(a),
                    _ => vec![],
                };
                SourceFilter {
                    fetch: true,
                    includes: get("includes", "include"),
                    excludes: get("excludes", "exclude"),
                }
            }
            Some(_) => SourceFilter::all(),
        }
    }

    /// From URL parameters `_source`, `_source_includes`, `_source_excludes`.
    pub fn from_params(
        source: Option<&str>,
        includes: Option<&str>,
        excludes: Option<&str>,
    ) -> SourceFilter {
        // Comma-separated lists, as every ES list parameter.
        let split = |s: Option<&str>| -> Vec<String> {
            s.into_iter()
                .flat_map(|s| s.split(','))
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .map(str::to_string)
                .collect()
        };
        let mut f = match source {
            Some("false") => SourceFilter::default(),
            Some("true") | Some("") | None => SourceFilter::all(),
            Some(list) => SourceFilter {
                fetch: true,
                includes: split(Some(list)),
                excludes: vec![],
            },
        };
        if includes.is_some() || excludes.is_some() {
            f.fetch = true;
            f.includes.extend(split(includes));
            f.excludes.extend(split(excludes));
        }
        f
    }

    pub fn is_identity(&self) -> bool {
        self.fetch && self.includes.is_empty() && self.excludes.is_empty()
    }

    /// Applies the filter; `None` when no `_source` should be returned.
    pub fn apply(&self, source: &Value) -> Option<Value> {
        if !self.fetch {
            return None;
        }
        if self.is_identity() {
            return Some(source.clone());
        }
        Some(filter_value(source, &self.includes, &self.excludes))
    }
}

fn strings(a: &[Value]) -> Vec<String> {
    a.iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

fn included(path: &str, includes: &[String]) -> bool {
    includes
        .iter()
        .any(|p| wildcard_match(p, path) || wildcard_match(&format!("{p}.*"), path))
}

/// Whether some pattern could match a descendant of `path` (ES's `FilterPath` leaving filters
/// for the property's contents).
fn may_match_child(path: &str, patterns: &[String]) -> bool {
    patterns.iter().any(|p| {
        p.starts_with(&format!("{path}.")) || p.starts_with('*') || {
            let prefix = p.split('*').next().unwrap_or("");
            prefix.len() <= path.len() + 1
                && format!("{path}.").starts_with(prefix)
                && p.contains('*')
        }
    })
}

/// ES 8 filters `_source` bytes with Jackson's `FilteringParserDelegate` and its
/// `FilterPathBasedFilter`: the excludes first, then the includes over what they left. A
/// property a pattern matches is taken whole (includes) or dropped (excludes); one no pattern
/// can reach is kept whole by the excludes and dropped by the includes; the others are
/// filtered ([`Stage`]). The whole source filtered away is `{}`.
fn filter_value(v: &Value, includes: &[String], excludes: &[String]) -> Value {
    // ES's `SourceFilter#canFilterBytes`: a wildcard in the excludes (a Jackson bug ES works
    // around) sends the source through `XContentMapValues#filter` instead.
    if excludes.iter().any(|e| e.contains('*')) {
        let Value::Object(m) = v else {
            return v.clone();
        };
        let includes = (!includes.is_empty()).then_some(includes);
        return Value::Object(map_filter::object(m, "", includes, excludes));
    }
    let mut out = Some(v.clone());
    if !excludes.is_empty() {
        out = out.and_then(|v| Stage::Excludes(excludes).filter(&v, ""));
    }
    if !includes.is_empty() {
        out = out.and_then(|v| Stage::Includes(includes).filter(&v, ""));
    }
    out.unwrap_or_else(|| json!({}))
}

/// One of the two filters, applied to an object or array whose contents are filtered (some
/// pattern reaches into them). As ES's `FilterPathBasedFilter`: scalars are kept by the
/// excludes and dropped by the includes (`_includeScalar`); an object or array left empty is
/// dropped, except, for the excludes, one that was empty to begin with
/// (`includeEmptyObject`/`includeEmptyArray`). Arrays add nothing to the path.
#[derive(Clone, Copy)]
enum Stage<'a> {
    Includes(&'a [String]),
    Excludes(&'a [String]),
}

impl Stage<'_> {
    fn filter(self, v: &Value, path: &str) -> Option<Value> {
        match v {
            Value::Object(m) => {
                let mut out = Map::new();
                for (k, child) in m {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    if let Some(kept) = self.property(child, &p) {
                        out.insert(k.clone(), kept);
                    }
                }
                self.keep_if_empty(m.is_empty(), out.is_empty())
                    .then_some(Value::Object(out))
            }
            Value::Array(items) => {
                let out: Vec<Value> = items.iter().filter_map(|i| self.filter(i, path)).collect();
                self.keep_if_empty(items.is_empty(), out.is_empty())
                    .then_some(Value::Array(out))
            }
            scalar => matches!(self, Stage::Excludes(_)).then(|| scalar.clone()),
        }
    }

    /// A property at `path`: matched, out of every pattern's reach, or filtered.
    fn property(self, v: &Value, path: &str) -> Option<Value> {
        let (patterns, matched_keeps) = match self {
            Stage::Includes(p) => (p, true),
            Stage::Excludes(p) => (p, false),
        };
        if included(path, patterns) {
            return matched_keeps.then(|| v.clone());
        }
        if !may_match_child(path, patterns) {
            return (!matched_keeps).then(|| v.clone());
        }
        self.filter(v, path)
    }

    fn keep_if_empty(self, was_empty: bool, is_empty: bool) -> bool {
        !is_empty || (was_empty && matches!(self, Stage::Excludes(_)))
    }
}

/// ES's `XContentMapValues#filter` over a parsed source. Unlike the byte filter, an object or
/// array a matched include leaves empty is kept, and inside arrays empty objects and arrays are
/// always dropped. `includes` is `None` once an include matched (ES's match-all automaton).
mod map_filter {
    use super::may_match_child;
    use lode_engine::mapping::wildcard_match;
    use serde_json::{Map, Value};

    fn accepts(path: &str, patterns: &[String]) -> bool {
        patterns.iter().any(|p| wildcard_match(p, path))
    }

    pub(super) fn object(
        m: &Map<String, Value>,
        path: &str,
        includes: Option<&[String]>,
        excludes: &[String],
    ) -> Map<String, Value> {
        let mut out = Map::new();
        for (k, v) in m {
            let p = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            if let Some(inc) = includes {
                if !accepts(&p, inc) && !may_match_child(&p, inc) {
                    continue;
                }
            }
            if accepts(&p, excludes) {
                continue;
            }
            let included = includes.is_none_or(|inc| accepts(&p, inc));
            let mut sub = includes;
            if included {
                if !may_match_child(&p, excludes) {
                    out.insert(k.clone(), v.clone());
                    continue;
                }
                sub = None;
            }
            match v {
                Value::Object(o) => {
                    if sub.is_some_and(|inc| !may_match_child(&p, inc)) {
                        continue;
                    }
                    let f = object(o, &p, sub, excludes);
                    if included || !f.is_empty() {
                        out.insert(k.clone(), Value::Object(f));
                    }
                }
                Value::Array(items) => {
                    let f = array(items, &p, sub, excludes, included);
                    if included || !f.is_empty() {
                        out.insert(k.clone(), Value::Array(f));
                    }
                }
                leaf => {
                    if included {
                        out.insert(k.clone(), leaf.clone());
                    }
                }
            }
        }
        out
    }

    fn array(
        items: &[Value],
        path: &str,
        includes: Option<&[String]>,
        excludes: &[String],
        included: bool,
    ) -> Vec<Value> {
        let mut out = Vec::new();
        for item in items {
            match item {
                Value::Object(o) => {
                    let f = object(o, path, includes, excludes);
                    if !f.is_empty() {
                        out.push(Value::Object(f));
                    }
                }
                Value::Array(a) => {
                    let f = array(a, path, includes, excludes, included);
                    if !f.is_empty() {
                        out.push(Value::Array(f));
                    }
                }
                scalar => {
                    if included {
                        out.push(scalar.clone());
                    }
                }
            }
        }
        out
    }
}

/// The objects at `path` in `source`, in document order (arrays flattened), as the nested
/// documents of that path were indexed.
pub fn objects_at<'v>(source: &'v Value, path: &str, out: &mut Vec<&'v Value>) {
    let (head, rest) = match path.split_once('.') {
        Some((h, r)) => (h, Some(r)),
        None => (path, None),
    };
    let visit = |v: &'v Value, out: &mut Vec<&'v Value>| match rest {
        Some(r) => objects_at(v, r, out),
        None => {
            if v.is_object() {
                out.push(v)
            }
        }
    };
    match source {
        Value::Object(m) => {
            // A dotted key holding the whole rest of the path counts too.
            if let Some(v) = m.get(path).filter(|_| rest.is_some()) {
                push_all(v, out);
            }
            if let Some(v) = m.get(head) {
                match v {
                    Value::Array(items) => {
                        for i in items {
                            visit(i, out);
                        }
                    }
                    other => visit(other, out),
                }
            }
        }
        Value::Array(items) => {
            for i in items {
                objects_at(i, path, out);
            }
        }
        _ => {}
    }
}

fn push_all<'v>(v: &'v Value, out: &mut Vec<&'v Value>) {
    match v {
        Value::Array(items) => out.extend(items.iter().filter(|i| i.is_object())),
        Value::Object(_) => out.push(v),
        _ => {}
    }
}

/// `{path: obj}` (nested by the path's dots), so `_source` filters name full paths.
pub fn wrap(path: &str, obj: Value) -> Value {
    path.rsplit('.').fold(obj, |acc, k| json!({ k: acc }))
}

pub fn unwrap(path: &str, v: Value) -> Value {
    let mut cur = v;
    for k in path.split('.') {
        cur = match cur {
            Value::Object(mut m) => m.remove(k).unwrap_or_else(|| json!({})),
            _ => json!({}),
        };
    }
    cur
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_in_document_order() {
        let src = json!({"a": [{"x": 1}, {"x": 2}], "o": {"b": [{"y": 1}]}, "c": {"z": 1}});
        let mut out = Vec::new();
        objects_at(&src, "a", &mut out);
        assert_eq!(out, vec![&json!({"x": 1}), &json!({"x": 2})]);
        let mut out = Vec::new();
        objects_at(&src, "o.b", &mut out);
        assert_eq!(out, vec![&json!({"y": 1})]);
        let mut out = Vec::new();
        objects_at(&src, "c", &mut out);
        assert_eq!(out, vec![&json!({"z": 1})]);
        assert_eq!(unwrap("o.b", wrap("o.b", json!({"y": 1}))), json!({"y": 1}));
    }

    #[test]
    fn includes_and_excludes() {
        let src = json!({"a":1,"b":{"c":2,"d":3},"e":[{"f":1,"g":2}]});
        let f =
            SourceFilter::from_json(Some(&json!({"includes":["b.*","e.f"],"excludes":["b.d"]})));
        assert_eq!(f.apply(&src).unwrap(), json!({"b":{"c":2},"e":[{"f":1}]}));
        let f = SourceFilter::from_json(Some(&json!("a")));
        assert_eq!(f.apply(&src).unwrap(), json!({"a":1}));
        let f = SourceFilter::from_json(Some(&json!(false)));
        assert!(f.apply(&src).is_none());
        let f = SourceFilter::from_json(Some(&json!(["b"])));
        assert_eq!(f.apply(&src).unwrap(), json!({"b":{"c":2,"d":3}}));
    }

    fn filtered(src: Value, includes: &[&str], excludes: &[&str]) -> Value {
        let f = SourceFilter::from_json(Some(&json!({"includes": includes, "excludes": excludes})));
        f.apply(&src).unwrap()
    }

    #[test]
    fn empty_objects_and_arrays_as_es_filtering_parser_keeps_them() {
        let src = json!({"a": [{}, [], {"b": 1, "c": 2}, 3, [{"b": 4}]], "e": {}, "f": []});
        // A matched property is taken whole.
        assert_eq!(filtered(src.clone(), &["a"], &[]), json!({"a": src["a"]}));
        // Reaching into it: scalars and empty objects and arrays are dropped.
        assert_eq!(
            filtered(src.clone(), &["a.b", "e.x", "f.x"], &[]),
            json!({"a": [{"b": 1}, [{"b": 4}]]})
        );
        // The excludes keep what was empty, drop what they emptied.
        assert_eq!(
            filtered(src.clone(), &[], &["a.b", "a.c", "e.x"]),
            json!({"a": [{}, [], 3], "e": {}, "f": []})
        );
        assert_eq!(filtered(json!({"o": {"x": 1}}), &[], &["o.x"]), json!({}));
        assert_eq!(filtered(json!({"o": [{"x": 1}]}), &[], &["o.x"]), json!({}));
        // The includes see what the excludes left.
        assert_eq!(
            filtered(json!({"o": {"x": 1}, "p": 1}), &["o"], &["o.x"]),
            json!({})
        );
        assert_eq!(filtered(json!({"x": 1}), &["y"], &[]), json!({}));
    }

    #[test]
    fn a_wildcard_exclude_filters_as_x_content_map_values() {
        // ES's SourceFilterTests#testCombinedIncludesAndExcludes
        let src = json!({"requests": {"count": 10, "foo": "bar"},
            "meta": {"name": "Some metric", "description": "d", "other": {"foo": "one", "baz": "two"}}});
        assert_eq!(
            filtered(
                src,
                &["*.count", "meta.*"],
                &["meta.description", "meta.other.*"]
            ),
            json!({"requests": {"count": 10}, "meta": {"name": "Some metric", "other": {}}})
        );
        let src = json!({"a": [{}, [], {"b": 1}, 3], "e": {}, "x": 1});
        assert_eq!(
            filtered(src.clone(), &[], &["x*"]),
            json!({"a": [{}, [], {"b": 1}, 3], "e": {}})
        );
        assert_eq!(
            filtered(src, &["a"], &["a.c*"]),
            json!({"a": [{"b": 1}, 3]})
        );
    }
}
