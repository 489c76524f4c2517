//! Field-level security (a role's `indices[].field_security`), as Elasticsearch's
//! `FieldPermissions` and `FieldSubsetReader` define it: which field paths a subject may read,
//! the `_source` filtered to them, and the mapping a search plans against with the other
//! fields left out (so they do not exist for that subject: queries on them match nothing,
//! aggregations see no values).
//!
//! ES compiles the patterns into one Lucene automaton; here a permission is kept as its
//! grant/except groups and a field is checked against them, and the one question that needs
//! automata (is `except` a subset of `grant`, asked when a role is parsed) is answered by a
//! small subset construction over the wildcard patterns ([`patterns_subset`]): no crate
//! offers language inclusion of glob patterns.

use crate::mapping::{wildcard_match, Mapping};
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashSet, VecDeque};

/// One `field_security` entry: `grant` (`None`: every field) minus `except`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldGrant {
    pub grant: Option<Vec<String>>,
    pub except: Vec<String>,
}

impl FieldGrant {
    /// Whether this entry grants every field (no grant list, or a `*` in it, and no except).
    pub fn is_total(&self) -> bool {
        self.except.is_empty() && self.grant_all()
    }

    fn grant_all(&self) -> bool {
        match &self.grant {
            None => true,
            Some(g) => g.iter().any(|p| p == "*"),
        }
    }

    /// Whether `field` (a dotted path) is granted: it matches a grant pattern, or is a
    /// metadata field (`_` prefix, always granted unless the grant is total, as ES's
    /// automaton), and matches no except pattern.
    pub fn allows(&self, field: &str) -> bool {
        let granted = self.grant_all()
            || field.starts_with('_')
            || self
                .grant
                .iter()
                .flatten()
                .any(|p| wildcard_match(p, field));
        granted && !self.except.iter().any(|p| wildcard_match(p, field))
    }
}

/// What a subject may read of one index: the union of its roles' groups, intersected with
/// an API key owner's union when the key has role descriptors (ES's `limitFieldPermissions`).
/// Each element of `limits` is one union; a field must be allowed by every union.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldPermissions {
    pub limits: Vec<Vec<FieldGrant>>,
}

impl FieldPermissions {
    /// The permissions of one union of groups, `None` when they grant every field (no
    /// field-level security).
    pub fn union(groups: Vec<FieldGrant>) -> Option<FieldPermissions> {
        if groups.is_empty() || groups.iter().any(FieldGrant::is_total) {
            return None;
        }
        Some(FieldPermissions {
            limits: vec![groups],
        })
    }

    /// Both restrictions at once (an API key's own and its owner's).
    pub fn intersect(a: Option<FieldPermissions>, b: Option<FieldPermissions>) -> Option<Self> {
        match (a, b) {
            (None, x) | (x, None) => x,
            (Some(mut a), Some(b)) => {
                a.limits.extend(b.limits);
                Some(a)
            }
        }
    }

    /// Whether `field` (a dotted path) may be read.
    pub fn allows(&self, field: &str) -> bool {
        self.limits
            .iter()
            .all(|groups| groups.iter().any(|g| g.allows(field)))
    }

    /// `_source` as the subject sees it, as ES's `FieldSubsetReader#filter`: a leaf value is
    /// kept when its path is allowed, objects and arrays keep what remains of their contents
    /// and are dropped when nothing remains.
    pub fn filter_source(&self, source: &Value) -> Value {
        match source {
            Value::Object(m) => Value::Object(self.filter_map(m, "")),
            other => other.clone(),
        }
    }

    fn filter_map(&self, map: &Map<String, Value>, prefix: &str) -> Map<String, Value> {
        let mut out = Map::new();
        for (k, v) in map {
            let path = format!("{prefix}{k}");
            if let Some(v) = self.filter_value(v, &path) {
                out.insert(k.clone(), v);
            }
        }
        out
    }

    fn filter_value(&self, v: &Value, path: &str) -> Option<Value> {
        match v {
            Value::Object(m) => {
                let inner = self.filter_map(m, &format!("{path}."));
                (!inner.is_empty()).then_some(Value::Object(inner))
            }
            Value::Array(a) => {
                let kept: Vec<Value> = a
                    .iter()
                    .filter_map(|e| self.filter_value(e, path))
                    .collect();
                (!kept.is_empty()).then_some(Value::Array(kept))
            }
            leaf => self.allows(path).then(|| leaf.clone()),
        }
    }

    /// `_source` bytes filtered ([`Self::filter_source`]); bytes that are not JSON are kept.
    pub fn filter_source_bytes(&self, source: &[u8]) -> Vec<u8> {
        match serde_json::from_slice::<Value>(source) {
            Ok(v) => serde_json::to_vec(&self.filter_source(&v)).unwrap_or_default(),
            Err(_) => source.to_vec(),
        }
    }

    /// The mapping with the fields the subject may not read left out (leaf fields, and
    /// objects with no readable field under them), so that a search planned against it
    /// treats them as unmapped: queries on them match nothing, aggregations see no values,
    /// `fields` patterns do not reach them.
    pub fn filter_mapping(&self, mapping: &Mapping) -> Mapping {
        let mut m = mapping.clone();
        m.source_filter = Some(std::sync::Arc::new(self.clone()));
        m.fields.retain(|path, _| self.allows(path));
        let kept: Vec<String> = m.fields.keys().cloned().collect();
        m.objects.retain(|path, _| {
            let prefix = format!("{path}.");
            kept.iter().any(|f| f.starts_with(&prefix))
        });
        if let Some(props) = m.json.get_mut("properties").and_then(Value::as_object_mut) {
            self.filter_properties(props, "");
        }
        m
    }

    /// The `properties` of a mapping's JSON with what the subject may not read left out (an
    /// object stays while a field under it is readable), as ES's `MapperPlugin#getFieldFilter`
    /// filters get mapping and field capabilities.
    pub fn filter_properties(&self, props: &mut Map<String, Value>, prefix: &str) {
        props.retain(|name, def| {
            let path = format!("{prefix}{name}");
            let sub_props = def.get_mut("properties").and_then(Value::as_object_mut);
            if let Some(sub) = sub_props {
                self.filter_properties(sub, &format!("{path}."));
                return !sub.is_empty();
            }
            if !self.allows(&path) {
                return false;
            }
            if let Some(fields) = def.get_mut("fields").and_then(Value::as_object_mut) {
                fields.retain(|sub, _| self.allows(&format!("{path}.{sub}")));
            }
            true
        });
    }
}

/// Whether every string matched by one of `sub` is matched by one of `sup` (wildcards `*` and
/// `?`), as ES checks that a role's `except` is a subset of its `grant`. The patterns are
/// Thompson automata over their positions; the product of `sub`'s and `sup`'s determinized
/// state sets is walked over the characters the patterns name plus one standing for every
/// other character.
pub fn patterns_subset(sub: &[String], sup: &[String]) -> bool {
    let sub: Vec<Vec<char>> = sub.iter().map(|p| p.chars().collect()).collect();
    let sup: Vec<Vec<char>> = sup.iter().map(|p| p.chars().collect()).collect();
    // a character no pattern names stands for all such characters
    let named: BTreeSet<char> = sub
        .iter()
        .chain(&sup)
        .flatten()
        .copied()
        .filter(|c| *c != '*' && *c != '?')
        .collect();
    let other = (0u32..)
        .filter_map(char::from_u32)
        .find(|c| !named.contains(c))
        .unwrap_or('\u{10FFFF}');
    let alphabet: Vec<char> = named.iter().copied().chain([other]).collect();

    type States = BTreeSet<(usize, usize)>;
    // (pattern, position) states, closed over `*` (which may match nothing)
    let close = |pats: &[Vec<char>], mut s: States| -> States {
        let mut stack: Vec<(usize, usize)> = s.iter().copied().collect();
        while let Some((p, i)) = stack.pop() {
            if pats[p].get(i) == Some(&'*') && s.insert((p, i + 1)) {
                stack.push((p, i + 1));
            }
        }
        s
    };
    let step = |pats: &[Vec<char>], s: &States, c: char| -> States {
        let mut next = States::new();
        for &(p, i) in s {
            match pats[p].get(i) {
                Some('*') => {
                    next.insert((p, i));
                }
                Some('?') => {
                    next.insert((p, i + 1));
                }
                Some(x) if *x == c => {
                    next.insert((p, i + 1));
                }
                _ => {}
            }
        }
        close(pats, next)
    };
    let accepts = |pats: &[Vec<char>], s: &States| s.iter().any(|&(p, i)| i == pats[p].len());

    let start_sub = close(&sub, (0..sub.len()).map(|p| (p, 0)).collect());
    let start_sup = close(&sup, (0..sup.len()).map(|p| (p, 0)).collect());
    let mut seen: HashSet<(States, States)> = HashSet::new();
    let mut queue = VecDeque::from([(start_sub, start_sup)]);
    while let Some((a, b)) = queue.pop_front() {
        if !seen.insert((a.clone(), b.clone())) {
            continue;
        }
        if accepts(&sub, &a) && !accepts(&sup, &b) {
            return false;
        }
        for &c in &alphabet {
            let na = step(&sub, &a, c);
            if na.is_empty() {
                continue;
            }
            queue.push_back((na, step(&sup, &b, c)));
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn grant(g: &[&str], e: &[&str]) -> FieldGrant {
        FieldGrant {
            grant: Some(s(g)),
            except: s(e),
        }
    }

    #[test]
    fn subset_of_wildcard_patterns() {
        assert!(patterns_subset(
            &s(&["customer.handle"]),
            &s(&["customer.*"])
        ));
        assert!(patterns_subset(&s(&["a.b*"]), &s(&["a.*"])));
        assert!(patterns_subset(&s(&["a.b.c*"]), &s(&["a.b*"])));
        assert!(!patterns_subset(&s(&["f3"]), &s(&["f1", "f2"])));
        assert!(!patterns_subset(&s(&["a*"]), &s(&["a.*"])));
        assert!(patterns_subset(&s(&["x?z"]), &s(&["x*"])));
        assert!(!patterns_subset(&s(&["x*"]), &s(&["x?"])));
        assert!(patterns_subset(&s(&["ab", "ac"]), &s(&["a?"])));
        assert!(patterns_subset(&s(&[]), &s(&["a"])));
        assert!(patterns_subset(&s(&["anything*"]), &s(&["*"])));
        assert!(!patterns_subset(&s(&["*_field3"]), &s(&["field*"])));
        assert!(patterns_subset(&s(&["f*o"]), &s(&["f*", "*o"])));
        // a union of grants covering the except between them
        assert!(patterns_subset(&s(&["a*"]), &s(&["ab*", "a", "a?*"])));
    }

    #[test]
    fn grants_and_excepts() {
        let g = grant(&["customer.*", "title"], &["customer.handle"]);
        assert!(g.allows("title"));
        assert!(g.allows("customer.email"));
        assert!(!g.allows("customer.handle"));
        assert!(!g.allows("body"));
        // metadata fields are always readable
        assert!(g.allows("_id"));
        assert!(g.allows("_routing"));
        // granting an object's name alone does not grant its sub-fields (ES's automaton)
        assert!(!grant(&["customer"], &[]).allows("customer.handle"));
        // an empty grant leaves only metadata fields
        assert!(!grant(&[], &[]).allows("title"));
        assert!(grant(&[], &[]).allows("_index"));
        assert!(grant(&["*"], &[]).is_total());
        assert!(!grant(&["*"], &["x"]).is_total());
        assert!(FieldPermissions::union(vec![grant(&["a"], &[]), grant(&["*"], &[])]).is_none());
    }

    #[test]
    fn roles_unite_and_api_keys_intersect() {
        // ES's documented example: a.* except a.b* united with a.b* except a.b.c*
        let p = FieldPermissions::union(vec![
            grant(&["a.*"], &["a.b*"]),
            grant(&["a.b*"], &["a.b.c*"]),
        ])
        .unwrap();
        assert!(p.allows("a.x"));
        assert!(p.allows("a.b"));
        assert!(p.allows("a.bx"));
        assert!(!p.allows("a.b.c"));
        assert!(!p.allows("a.b.cd"));
        let owner = FieldPermissions::union(vec![grant(&["a.x", "a.b"], &[])]);
        let both = FieldPermissions::intersect(Some(p), owner).unwrap();
        assert!(both.allows("a.x"));
        assert!(!both.allows("a.bx"));
        assert!(both.allows("_id"));
    }

    #[test]
    fn source_is_filtered_as_field_subset_reader() {
        let p = FieldPermissions::union(vec![grant(
            &["customer.*", "tags", "n"],
            &["customer.handle"],
        )])
        .unwrap();
        let src = json!({
            "customer": {"handle": "Jim", "email": "jim@x", "address": {"city": "X"}},
            "tags": ["a", "b"],
            "secret": {"x": 1},
            "n": null,
            "items": [{"a": 1}],
            "empty": {},
            "customer.handle": "dotted"
        });
        assert_eq!(
            p.filter_source(&src),
            json!({
                "customer": {"email": "jim@x", "address": {"city": "X"}},
                "tags": ["a", "b"],
                "n": null
            })
        );
        let q = FieldPermissions::union(vec![grant(&["items.a"], &[])]).unwrap();
        assert_eq!(
            q.filter_source(&json!({"items": [{"a": 1, "b": 2}, {"b": 3}], "c": 1})),
            json!({"items": [{"a": 1}]})
        );
    }

    #[test]
    fn mapping_properties_keep_objects_with_readable_fields() {
        let p = FieldPermissions::union(vec![grant(&["a.x", "t", "t.raw"], &[])]).unwrap();
        let mut props = json!({
            "a": {"properties": {"x": {"type": "keyword"}, "y": {"type": "long"}}},
            "b": {"properties": {"z": {"type": "keyword"}}},
            "t": {"type": "text", "fields": {"raw": {"type": "keyword"}, "other": {"type": "keyword"}}},
            "u": {"type": "long"}
        });
        p.filter_properties(props.as_object_mut().unwrap(), "");
        assert_eq!(
            props,
            json!({
                "a": {"properties": {"x": {"type": "keyword"}}},
                "t": {"type": "text", "fields": {"raw": {"type": "keyword"}}}
            })
        );
    }
}
