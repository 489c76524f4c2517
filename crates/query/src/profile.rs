//! The query profiler (`"profile": true`), as Elasticsearch's `QueryProfiler`: every node of
//! the planned query (one per Query DSL node) is wrapped in a [`ProfiledQuery`] whose weight
//! and scorers time each call into the node (weight creation, scorer building, `next_doc`,
//! `advance`, `score`, counting) with `Instant`, and count them. Only a profiled search plans
//! these wrappers: the normal path has no profiling code in its per-document loops.
//!
//! A wrapped node's time includes its children's (as in Elasticsearch, where a parent's
//! `next_doc` drives its children's). Breakdown keys that have no counterpart in tantivy's
//! execution (`match`: two-phase iteration; `shallow_advance`, `compute_max_score`,
//! `set_min_competitive_score`: Lucene's block-max impacts API) stay 0.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader, Term};

/// Elasticsearch's `QueryTimingType`s, in the order its breakdown lists them.
pub const BREAKDOWN_KEYS: [&str; 10] = [
    "set_min_competitive_score",
    "match",
    "shallow_advance",
    "next_doc",
    "score",
    "compute_max_score",
    "build_scorer",
    "advance",
    "create_weight",
    "count_weight",
];

const NEXT_DOC: usize = 3;
const SCORE: usize = 4;
const BUILD_SCORER: usize = 6;
const ADVANCE: usize = 7;
const CREATE_WEIGHT: usize = 8;
const COUNT_WEIGHT: usize = 9;

/// One profiled query node: its Lucene-like class name and description, its timings and
/// its children.
pub struct ProfileNode {
    pub type_name: String,
    pub description: String,
    nanos: [AtomicU64; 10],
    counts: [AtomicU64; 10],
    pub children: Vec<Arc<ProfileNode>>,
}

impl fmt::Debug for ProfileNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ProfileNode({} {})", self.type_name, self.description)
    }
}

impl ProfileNode {
    pub fn new(type_name: String, description: String, children: Vec<Arc<ProfileNode>>) -> Self {
        ProfileNode {
            type_name,
            description,
            nanos: Default::default(),
            counts: Default::default(),
            children,
        }
    }

    #[inline]
    fn record(&self, slot: usize, started: Instant) {
        self.nanos[slot].fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.counts[slot].fetch_add(1, Ordering::Relaxed);
    }

    /// Nanoseconds and call count of one breakdown key.
    pub fn timing(&self, key: &str) -> (u64, u64) {
        match BREAKDOWN_KEYS.iter().position(|k| *k == key) {
            Some(i) => (
                self.nanos[i].load(Ordering::Relaxed),
                self.counts[i].load(Ordering::Relaxed),
            ),
            None => (0, 0),
        }
    }

    /// The node's total time: the sum of its breakdown.
    pub fn time_in_nanos(&self) -> u64 {
        self.nanos.iter().map(|n| n.load(Ordering::Relaxed)).sum()
    }

    /// Elasticsearch's rendering of the node (`ProfileResult`).
    pub fn to_json(&self) -> serde_json::Value {
        let mut breakdown = serde_json::Map::new();
        for (i, key) in BREAKDOWN_KEYS.iter().enumerate() {
            breakdown.insert(
                (*key).to_string(),
                self.nanos[i].load(Ordering::Relaxed).into(),
            );
            breakdown.insert(
                format!("{key}_count"),
                self.counts[i].load(Ordering::Relaxed).into(),
            );
        }
        let mut out = serde_json::json!({
            "type": self.type_name,
            "description": self.description,
            "time_in_nanos": self.time_in_nanos(),
            "breakdown": breakdown,
        });
        if !self.children.is_empty() {
            out["children"] = self.children.iter().map(|c| c.to_json()).collect();
        }
        out
    }
}

/// The profiling frames of a planner: the children planned so far at each open level.
#[derive(Default)]
pub(crate) struct Frames(Mutex<Vec<Vec<Arc<ProfileNode>>>>);

impl Frames {
    pub fn open(&self) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Vec::new());
    }

    /// Closes the current level; its children are returned.
    pub fn close(&self) -> Vec<Arc<ProfileNode>> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop()
            .unwrap_or_default()
    }

    /// Adds a node to the current level (the root when none is open).
    pub fn add(&self, node: Arc<ProfileNode>) {
        let mut frames = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(top) = frames.last_mut() {
            top.push(node);
        } else {
            frames.push(vec![node]);
        }
    }
}

/// A planned query node that times what runs through it.
pub struct ProfiledQuery {
    inner: Box<dyn Query>,
    pub node: Arc<ProfileNode>,
}

impl Clone for ProfiledQuery {
    fn clone(&self) -> Self {
        ProfiledQuery {
            inner: self.inner.box_clone(),
            node: self.node.clone(),
        }
    }
}

impl fmt::Debug for ProfiledQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Profiled({:?})", self.inner)
    }
}

impl ProfiledQuery {
    pub fn new(inner: Box<dyn Query>, node: Arc<ProfileNode>) -> Self {
        ProfiledQuery { inner, node }
    }

    pub fn inner(&self) -> &dyn Query {
        &*self.inner
    }
}

impl Query for ProfiledQuery {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let started = Instant::now();
        let inner = self.inner.weight(enable_scoring);
        self.node.record(CREATE_WEIGHT, started);
        Ok(Box::new(ProfiledWeight {
            inner: inner?,
            node: self.node.clone(),
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        self.inner.query_terms(visitor)
    }
}

struct ProfiledWeight {
    inner: Box<dyn Weight>,
    node: Arc<ProfileNode>,
}

impl Weight for ProfiledWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let started = Instant::now();
        let inner = self.inner.scorer(reader, boost);
        self.node.record(BUILD_SCORER, started);
        Ok(Box::new(ProfiledScorer {
            inner: inner?,
            node: self.node.clone(),
        }))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        self.inner.explain(reader, doc)
    }

    fn count(&self, reader: &SegmentReader) -> tantivy::Result<u32> {
        let started = Instant::now();
        let n = self.inner.count(reader);
        self.node.record(COUNT_WEIGHT, started);
        n
    }
}

struct ProfiledScorer {
    inner: Box<dyn Scorer>,
    node: Arc<ProfileNode>,
}

impl DocSet for ProfiledScorer {
    fn advance(&mut self) -> DocId {
        let started = Instant::now();
        let d = self.inner.advance();
        self.node.record(NEXT_DOC, started);
        d
    }

    fn seek(&mut self, target: DocId) -> DocId {
        let started = Instant::now();
        let d = self.inner.seek(target);
        self.node.record(ADVANCE, started);
        d
    }

    fn doc(&self) -> DocId {
        self.inner.doc()
    }

    fn size_hint(&self) -> u32 {
        self.inner.size_hint()
    }

    fn cost(&self) -> u64 {
        self.inner.cost()
    }
}

impl Scorer for ProfiledScorer {
    fn score(&mut self) -> Score {
        let started = Instant::now();
        let s = self.inner.score();
        self.node.record(SCORE, started);
        s
    }
}

/// A planned node's Lucene class name and `toString`, from its DSL node and what it planned
/// into. `described` gives the descriptions of DSL children already planned.
pub(crate) fn describe(
    q: &crate::Query,
    built: &dyn Query,
    schema: &tantivy::schema::Schema,
    described: &dyn Fn(&crate::Query) -> Option<String>,
) -> (String, String) {
    use crate::Query as D;
    let child = |c: &crate::Query| described(c).unwrap_or_else(|| "*:*".to_string());
    let scalar = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let lucene = built_description(built, schema);
    let boosted = |d: String, b: f32| if b == 1.0 { d } else { format!("({d})^{b:?}") };
    let (t, d): (&str, String) = match q {
        D::MatchAll { .. } => ("MatchAllDocsQuery", "*:*".into()),
        D::MatchNone => ("MatchNoDocsQuery", "MatchNoDocsQuery(\"\")".into()),
        D::Bool(b) => {
            let mut parts = Vec::new();
            for (prefix, list) in [
                ("+", &b.must),
                ("#", &b.filter),
                ("", &b.should),
                ("-", &b.must_not),
            ] {
                for c in list {
                    let d = child(c);
                    let d = if matches!(c, D::Bool(_)) {
                        format!("({d})")
                    } else {
                        d
                    };
                    parts.push(format!("{prefix}{d}"));
                }
            }
            let mut d = parts.join(" ");
            if let Some(m) = &b.minimum_should_match {
                d = format!("({d})~{m}");
            }
            ("BooleanQuery", d)
        }
        D::ConstantScore { filter, .. } => (
            "ConstantScoreQuery",
            format!("ConstantScore({})", child(filter)),
        ),
        D::DisMax {
            queries,
            tie_breaker,
            ..
        } => {
            let inner: Vec<String> = queries.iter().map(child).collect();
            let mut d = format!("({})", inner.join(" | "));
            if *tie_breaker != 0.0 {
                d.push_str(&format!("~{tie_breaker:?}"));
            }
            ("DisjunctionMaxQuery", d)
        }
        D::Boosting {
            positive,
            negative,
            negative_boost,
            ..
        } => (
            "BoostingQuery",
            format!("{}/{}/{negative_boost:?}", child(positive), child(negative)),
        ),
        D::FunctionScore(f) => (
            "FunctionScoreQuery",
            format!("function score ({})", child(&f.query)),
        ),
        D::ScriptScore { query, .. } => (
            "ScriptScoreQuery",
            format!("script_score ({})", child(query)),
        ),
        D::Script { script, .. } => (
            "ScriptQuery",
            format!("ScriptQuery(Script{{{}}})", script.json),
        ),
        D::Nested { path, query, .. } => (
            "ESToParentBlockJoinQuery",
            format!("ToParentBlockJoinQuery ({}) [path={path}]", child(query)),
        ),
        D::Exists { field, .. } => (
            "FieldExistsQuery",
            format!("FieldExistsQuery [field={field}]"),
        ),
        D::Ids { values, .. } => ("TermInSetQuery", format!("_id:({})", values.join(" "))),
        D::Terms(t) if lucene.is_none() => (
            "TermInSetQuery",
            format!(
                "{}:({})",
                t.field,
                t.values.iter().map(scalar).collect::<Vec<_>>().join(" ")
            ),
        ),
        D::Prefix(p) => ("PrefixQuery", format!("{}:{}*", p.field, p.value)),
        D::Wildcard(p) => ("WildcardQuery", format!("{}:{}", p.field, p.value)),
        D::Regexp(p) => ("RegexpQuery", format!("{}:/{}/", p.field, p.value)),
        D::Fuzzy(f) => {
            let v = scalar(&f.value);
            (
                "FuzzyQuery",
                format!("{}:{v}~{}", f.field, f.fuzziness.distance(&v)),
            )
        }
        D::MatchPhrase(p) => (
            "PhraseQuery",
            lucene
                .clone()
                .map_or_else(|| format!("{}:\"{}\"", p.field, scalar(&p.query)), |l| l.1),
        ),
        D::MatchPhrasePrefix(p) => (
            "MultiPhrasePrefixQuery",
            format!("{}:\"{}*\"", p.field, scalar(&p.query)),
        ),
        D::Term(t) if lucene.is_none() => (
            "TermQuery",
            boosted(format!("{}:{}", t.field, scalar(&t.value)), t.boost),
        ),
        D::Match(m) if lucene.is_none() => (
            "BooleanQuery",
            boosted(format!("{}:{}", m.field, scalar(&m.query)), m.boost),
        ),
        D::Range(r) if lucene.is_none() => {
            let lo = r.from.as_ref().map_or("*".to_string(), scalar);
            let hi = r.to.as_ref().map_or("*".to_string(), scalar);
            let (open, close) = (
                if r.include_lower { "[" } else { "{" },
                if r.include_upper { "]" } else { "}" },
            );
            (
                "TermRangeQuery",
                format!("{}:{open}{lo} TO {hi}{close}", r.field),
            )
        }
        _ => match &lucene {
            Some((t, d)) => (*t, d.clone()),
            None => ("Query", format!("{built:?}")),
        },
    };
    match (q, lucene) {
        // what the mapping made of a leaf (a numeric term is a point range) names its class
        (
            D::Term(_)
            | D::Terms(_)
            | D::Range(_)
            | D::Match(_)
            | D::MatchBoolPrefix(_)
            | D::MultiMatch(_)
            | D::QueryString(_)
            | D::SimpleQueryString(_),
            Some((lt, ld)),
        ) => (lt.to_string(), ld),
        _ => (t.to_string(), d),
    }
}

fn term_text(term: &Term, schema: &tantivy::schema::Schema) -> String {
    let field = schema.get_field_name(term.field());
    let v = term.value();
    let text = if let Some(s) = v.as_str() {
        s.to_string()
    } else if let Some(i) = v.as_i64() {
        i.to_string()
    } else if let Some(u) = v.as_u64() {
        u.to_string()
    } else if let Some(f) = v.as_f64() {
        f.to_string()
    } else if let Some(b) = v.as_bool() {
        b.to_string()
    } else {
        format!("{:?}", v.as_serialized())
    };
    format!("{field}:{text}")
}

/// The class and `toString` of the tantivy queries whose parts are visible.
fn built_description(
    q: &dyn Query,
    schema: &tantivy::schema::Schema,
) -> Option<(&'static str, String)> {
    use tantivy::query::{AllQuery, BooleanQuery, EmptyQuery, Occur, PhraseQuery, TermQuery};
    if let Some(p) = q.downcast_ref::<ProfiledQuery>() {
        return Some(("Query", p.node.description.clone()));
    }
    if let Some(t) = q.downcast_ref::<TermQuery>() {
        return Some(("TermQuery", term_text(t.term(), schema)));
    }
    if q.downcast_ref::<AllQuery>().is_some() {
        return Some(("MatchAllDocsQuery", "*:*".into()));
    }
    if q.downcast_ref::<EmptyQuery>().is_some() {
        return Some(("MatchNoDocsQuery", "MatchNoDocsQuery(\"\")".into()));
    }
    if let Some(p) = q.downcast_ref::<PhraseQuery>() {
        let terms: Vec<String> = p
            .phrase_terms()
            .iter()
            .map(|t| {
                term_text(t, schema)
                    .split_once(':')
                    .map(|(_, v)| v.to_string())
                    .unwrap_or_default()
            })
            .collect();
        return Some((
            "PhraseQuery",
            format!(
                "{}:\"{}\"",
                schema.get_field_name(p.field()),
                terms.join(" ")
            ),
        ));
    }
    if let Some(r) = q.downcast_ref::<crate::points::PointRangeQuery>() {
        return Some(("IndexOrDocValuesQuery", r.describe(schema)));
    }
    if let Some(b) = q.downcast_ref::<BooleanQuery>() {
        let mut parts = Vec::new();
        for (occur, c) in b.clauses() {
            let (t, d) = built_description(&**c, schema)?;
            let d = if t == "BooleanQuery" {
                format!("({d})")
            } else {
                d
            };
            let prefix = match occur {
                Occur::Must => "+",
                Occur::Should => "",
                Occur::MustNot => "-",
            };
            parts.push(format!("{prefix}{d}"));
        }
        let mut d = parts.join(" ");
        // tantivy's disjunction asks for one match where Lucene's asks for none (the same
        // matches without a required clause): Lucene's `~n` shows only what changes them.
        let min = b.get_minimum_number_should_match();
        let required = b.clauses().iter().any(|(o, _)| *o == Occur::Must);
        if (min > 1 || (min == 1 && required))
            && b.clauses().iter().any(|(o, _)| *o == Occur::Should)
        {
            d = format!("({d})~{min}");
        }
        return Some(("BooleanQuery", d));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::collector::Count;
    use tantivy::schema::{Schema, STRING};
    use tantivy::{doc, Index};

    #[test]
    fn profiled_query_times_and_counts_what_runs_through_it() {
        let mut schema = Schema::builder();
        let f = schema.add_text_field("t", STRING);
        let index = Index::create_in_ram(schema.build());
        let mut w: tantivy::IndexWriter = index.writer(15_000_000).unwrap();
        for v in ["a", "b", "a", "c", "a"] {
            w.add_document(doc!(f => v)).unwrap();
        }
        w.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let node = Arc::new(ProfileNode::new("TermQuery".into(), "t:a".into(), vec![]));
        let q = ProfiledQuery::new(
            Box::new(tantivy::query::TermQuery::new(
                Term::from_field_text(f, "a"),
                tantivy::schema::IndexRecordOption::Basic,
            )),
            node.clone(),
        );
        let top = tantivy::collector::TopDocs::with_limit(10).order_by_score();
        let (n, hits) = crate::FieldStatistics::new(&searcher)
            .search(&searcher, &q, &(Count, top))
            .unwrap();
        assert_eq!((n, hits.len()), (3, 3));
        assert_eq!(node.timing("create_weight").1, 1);
        assert_eq!(node.timing("build_scorer").1, 1);
        // three matches, then the end
        assert_eq!(node.timing("next_doc").1, 3);
        assert_eq!(node.timing("score").1, 3);
        assert!(node.time_in_nanos() > 0);
        let j = node.to_json();
        assert_eq!(j["type"], "TermQuery");
        assert_eq!(j["breakdown"]["match"], 0);
        assert_eq!(j["breakdown"].as_object().unwrap().len(), 20);
    }
}
