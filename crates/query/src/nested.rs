//! Nested documents (Lucene's block join): an object under a `nested` path is indexed as a
//! hidden document placed right before its parent (the enclosing nested object, or the root,
//! which comes last), in one contiguous block (`lode_engine::shard`'s `add_block`). Nested
//! documents hold the terms [`NESTED_CHILD`] and their path in [`lode_engine::schema::NESTED`];
//! roots hold none.
//!
//! - [`non_nested`]: the filter ES adds to every top-level search of an index with nested
//!   mappings (`Queries.newNonNestedFilter`), so only roots match.
//! - [`ToParentQuery`]: the `nested` query (`ToParentBlockJoinQuery`): the inner query runs
//!   on the nested documents of one path, and each match is joined to the next document of
//!   the parent level (the nested scope the query runs in: the root, or an enclosing nested
//!   path), scored by `score_mode`.
//! - [`parent_docs`] and [`children_of`]: the per-segment parent set and the reverse walk,
//!   for aggregations, sorts and inner hits.

use lode_engine::schema::NESTED_CHILD;
use tantivy::query::{
    BooleanQuery, EnableScoring, Explanation, Occur, Query, Scorer, TermQuery, Weight,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Score, SegmentReader, Term, TERMINATED};

/// How a parent's score is computed from its matching nested documents' scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScoreMode {
    Avg,
    Max,
    Min,
    Sum,
    None,
}

impl ScoreMode {
    pub fn parse(s: &str) -> Option<ScoreMode> {
        Some(match s {
            "avg" => ScoreMode::Avg,
            "max" => ScoreMode::Max,
            "min" => ScoreMode::Min,
            "sum" => ScoreMode::Sum,
            "none" => ScoreMode::None,
            _ => return None,
        })
    }
}

/// Matches the nested documents (of any path).
pub fn nested_docs_query(nested: Field) -> Box<dyn Query> {
    Box::new(TermQuery::new(
        Term::from_field_text(nested, NESTED_CHILD),
        IndexRecordOption::Basic,
    ))
}

/// Matches the nested documents of `path`.
pub fn path_query(nested: Field, path: &str) -> Box<dyn Query> {
    Box::new(TermQuery::new(
        Term::from_field_text(nested, path),
        IndexRecordOption::Basic,
    ))
}

/// `q` restricted to root documents when the index has nested documents (`nested` field in
/// the schema); `q` itself otherwise, so indices without nested mappings keep every fast path.
pub fn non_nested(q: Box<dyn Query>, nested: Option<Field>) -> Box<dyn Query> {
    match nested {
        None => q,
        Some(f) => Box::new(BooleanQuery::new(vec![
            (Occur::Must, q),
            (Occur::MustNot, nested_docs_query(f)),
        ])),
    }
}

fn postings(reader: &SegmentReader, term: &Term, out: &mut Vec<DocId>) -> tantivy::Result<()> {
    let inv = reader.inverted_index(term.field())?;
    if let Some(mut p) = inv.read_postings(term, IndexRecordOption::Basic)? {
        let mut d = p.doc();
        while d != TERMINATED {
            out.push(d);
            d = p.advance();
        }
    }
    Ok(())
}

/// The documents of a segment at one nesting level, deleted ones included: the nested
/// documents of `path`, or the roots (every document that is not a nested one).
pub fn level_docs(
    reader: &SegmentReader,
    nested: Field,
    path: Option<&str>,
) -> tantivy::Result<tantivy::BitSet> {
    let max = reader.max_doc().max(1);
    let mut docs = Vec::new();
    match path {
        Some(path) => {
            postings(reader, &Term::from_field_text(nested, path), &mut docs)?;
            let mut set = tantivy::BitSet::with_max_value(max);
            for d in docs {
                set.insert(d);
            }
            Ok(set)
        }
        None => {
            postings(
                reader,
                &Term::from_field_text(nested, NESTED_CHILD),
                &mut docs,
            )?;
            let mut set = tantivy::BitSet::with_max_value_and_full(max);
            for d in docs {
                set.remove(d);
            }
            Ok(set)
        }
    }
}

/// The documents of a segment that can be parents at a nesting level, deleted ones included
/// (blocks are deleted whole): the roots, plus the nested documents of `levels` (the parent
/// path and its enclosing nested paths; empty for the root level). Sorted.
pub fn parent_docs(
    reader: &SegmentReader,
    nested: Field,
    levels: &[String],
) -> tantivy::Result<Vec<DocId>> {
    let mut children = Vec::new();
    postings(
        reader,
        &Term::from_field_text(nested, NESTED_CHILD),
        &mut children,
    )?;
    let mut out = Vec::with_capacity(reader.max_doc() as usize - children.len());
    let mut next = children.iter().peekable();
    for d in 0..reader.max_doc() {
        if next.peek() == Some(&&d) {
            next.next();
        } else {
            out.push(d);
        }
    }
    if !levels.is_empty() {
        for l in levels {
            postings(reader, &Term::from_field_text(nested, l), &mut out)?;
        }
        out.sort_unstable();
        out.dedup();
    }
    Ok(out)
}

/// The doc id range holding the nested documents of the parent `parent` (sorted
/// `parents` as from [`parent_docs`]): from the previous parent (excluded) to `parent`.
pub fn children_of(parents: &[DocId], parent: DocId) -> std::ops::Range<DocId> {
    let i = parents.partition_point(|&p| p < parent);
    let start = if i == 0 { 0 } else { parents[i - 1] + 1 };
    start..parent
}

/// ES's `nested` query: `child` (already restricted to the nested path's documents) joined
/// to the parent level `levels` (see [`parent_docs`]).
#[derive(Debug)]
pub struct ToParentQuery {
    child: Box<dyn Query>,
    nested: Field,
    levels: Vec<String>,
    score_mode: ScoreMode,
}

impl Clone for ToParentQuery {
    fn clone(&self) -> Self {
        ToParentQuery {
            child: self.child.box_clone(),
            nested: self.nested,
            levels: self.levels.clone(),
            score_mode: self.score_mode,
        }
    }
}

impl ToParentQuery {
    pub fn new(
        child: Box<dyn Query>,
        nested: Field,
        levels: Vec<String>,
        score_mode: ScoreMode,
    ) -> ToParentQuery {
        ToParentQuery {
            child,
            nested,
            levels,
            score_mode,
        }
    }
}

impl Query for ToParentQuery {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let scoring = enable_scoring.is_scoring_enabled() && self.score_mode != ScoreMode::None;
        let child_scoring = if scoring {
            enable_scoring
        } else {
            match enable_scoring.searcher() {
                Some(s) => EnableScoring::disabled_from_searcher(s),
                None => EnableScoring::disabled_from_schema(enable_scoring.schema()),
            }
        };
        Ok(Box::new(ToParentWeight {
            child: self.child.weight(child_scoring)?,
            nested: self.nested,
            levels: self.levels.clone(),
            score_mode: if scoring {
                self.score_mode
            } else {
                ScoreMode::None
            },
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        self.child.query_terms(visitor);
    }
}

struct ToParentWeight {
    child: Box<dyn Weight>,
    nested: Field,
    levels: Vec<String>,
    score_mode: ScoreMode,
}

impl ToParentWeight {
    /// The matching parents with their scores, in doc order.
    fn join(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Vec<(DocId, Score)>> {
        let mut child = self.child.scorer(reader, boost)?;
        let mut out: Vec<(DocId, Score)> = Vec::new();
        if child.doc() == TERMINATED {
            return Ok(out);
        }
        let parents = parent_docs(reader, self.nested, &self.levels)?;
        let alive = reader.alive_bitset();
        let mut pi = 0usize;
        // (parent, score accumulator, count)
        let mut cur: Option<(DocId, f64, u32)> = None;
        let finish = |c: (DocId, f64, u32), mode: ScoreMode, out: &mut Vec<(DocId, Score)>| {
            let (p, acc, n) = c;
            let score = match mode {
                ScoreMode::Avg => acc / f64::from(n),
                ScoreMode::None => 0.0,
                _ => acc,
            };
            out.push((p, score as Score));
        };
        let mut d = child.doc();
        while d != TERMINATED {
            if alive.is_some_and(|a| !a.is_alive(d)) {
                d = child.advance();
                continue;
            }
            while pi < parents.len() && parents[pi] <= d {
                pi += 1;
            }
            let Some(&parent) = parents.get(pi) else {
                break;
            };
            let s = if self.score_mode == ScoreMode::None {
                0.0
            } else {
                f64::from(child.score())
            };
            match &mut cur {
                Some((p, acc, n)) if *p == parent => {
                    *n += 1;
                    match self.score_mode {
                        ScoreMode::Avg | ScoreMode::Sum => *acc += s,
                        ScoreMode::Max => *acc = acc.max(s),
                        ScoreMode::Min => *acc = acc.min(s),
                        ScoreMode::None => {}
                    }
                }
                _ => {
                    if let Some(c) = cur.take() {
                        finish(c, self.score_mode, &mut out);
                    }
                    cur = Some((parent, s, 1));
                }
            }
            d = child.advance();
        }
        if let Some(c) = cur {
            finish(c, self.score_mode, &mut out);
        }
        Ok(out)
    }
}

impl Weight for ToParentWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        Ok(Box::new(VecScorer::new(self.join(reader, boost)?)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        crate::explain_by_seek(self, reader, doc, "Score based on child doc range")
    }
}

/// The nested documents of `path` under the parents `parent` matches (Lucene's
/// `ToChildBlockJoinQuery`, ES's `NestedAggregator`): a parent's children are the documents of
/// `path` between the previous document of the parent level and the parent. The parent level
/// is `parent_path`'s nested documents (with the roots), or the roots when `None`. Each child
/// scores as its parent (as ES's nested aggregation hands its sub-aggregations the parent's
/// scorer).
#[derive(Debug)]
pub struct ToChildQuery {
    parent: Box<dyn Query>,
    nested: Field,
    parent_path: Option<String>,
    path: String,
}

impl Clone for ToChildQuery {
    fn clone(&self) -> Self {
        ToChildQuery {
            parent: self.parent.box_clone(),
            nested: self.nested,
            parent_path: self.parent_path.clone(),
            path: self.path.clone(),
        }
    }
}

impl ToChildQuery {
    pub fn new(
        parent: Box<dyn Query>,
        nested: Field,
        parent_path: Option<&str>,
        path: &str,
    ) -> ToChildQuery {
        ToChildQuery {
            parent,
            nested,
            parent_path: parent_path.map(str::to_string),
            path: path.to_string(),
        }
    }
}

impl Query for ToChildQuery {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(ToChildWeight {
            parent: self.parent.weight(enable_scoring)?,
            nested: self.nested,
            levels: self.parent_path.iter().cloned().collect(),
            path: self.path.clone(),
            scoring: enable_scoring.is_scoring_enabled(),
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        self.parent.query_terms(visitor);
    }
}

struct ToChildWeight {
    parent: Box<dyn Weight>,
    nested: Field,
    levels: Vec<String>,
    path: String,
    scoring: bool,
}

impl Weight for ToChildWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let mut parent = self.parent.scorer(reader, boost)?;
        let mut out = Vec::new();
        if parent.doc() != TERMINATED {
            let parents = parent_docs(reader, self.nested, &self.levels)?;
            let mut children = Vec::new();
            postings(
                reader,
                &Term::from_field_text(self.nested, &self.path),
                &mut children,
            )?;
            let alive = reader.alive_bitset();
            let mut d = parent.doc();
            while d != TERMINATED {
                if alive.is_none_or(|a| a.is_alive(d)) {
                    let score = if self.scoring { parent.score() } else { 0.0 };
                    let range = children_of(&parents, d);
                    let from = children.partition_point(|&c| c < range.start);
                    let to = children.partition_point(|&c| c < range.end);
                    out.extend(children[from..to].iter().map(|&c| (c, score)));
                }
                d = parent.advance();
            }
        }
        Ok(Box::new(VecScorer::new(out)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        crate::explain_by_seek(self, reader, doc, "Score based on parent document")
    }
}

/// Where nested document `doc` sits in its block, for ES's `_nested` identity: `chain` is
/// the document's nested path and its enclosing nested paths, outermost first. Returns the
/// root and, per level of `chain`, the offset of the document's ancestor (the document
/// itself last) among the objects of that path under its parent, in indexing order (which
/// is `_source` order).
pub fn nested_identity(
    reader: &SegmentReader,
    nested: Field,
    chain: &[String],
    doc: DocId,
) -> tantivy::Result<(DocId, Vec<usize>)> {
    let mut offsets = vec![0; chain.len()];
    let mut cur = doc;
    for k in (0..chain.len()).rev() {
        let levels: Vec<String> = chain[..k].last().cloned().into_iter().collect();
        let parents = parent_docs(reader, nested, &levels)?;
        let Some(&parent) = parents.get(parents.partition_point(|&p| p <= cur)) else {
            break;
        };
        let range = children_of(&parents, parent);
        let mut of_path = Vec::new();
        postings(
            reader,
            &Term::from_field_text(nested, &chain[k]),
            &mut of_path,
        )?;
        let from = of_path.partition_point(|&c| c < range.start);
        let to = of_path.partition_point(|&c| c < cur);
        offsets[k] = to.saturating_sub(from);
        cur = parent;
    }
    Ok((cur, offsets))
}

/// A scorer over precomputed (doc, score) pairs in doc order.
pub struct VecScorer {
    docs: Vec<(DocId, Score)>,
    i: usize,
}

impl VecScorer {
    pub fn new(docs: Vec<(DocId, Score)>) -> VecScorer {
        VecScorer { docs, i: 0 }
    }
}

impl DocSet for VecScorer {
    fn advance(&mut self) -> DocId {
        if self.i < self.docs.len() {
            self.i += 1;
        }
        self.doc()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        let rest = &self.docs[self.i..];
        self.i += rest.partition_point(|(d, _)| *d < target);
        self.doc()
    }

    fn doc(&self) -> DocId {
        self.docs.get(self.i).map_or(TERMINATED, |(d, _)| *d)
    }

    fn size_hint(&self) -> u32 {
        (self.docs.len() - self.i) as u32
    }
}

impl Scorer for VecScorer {
    fn score(&mut self) -> Score {
        self.docs.get(self.i).map_or(0.0, |(_, s)| *s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lode_engine::schema::nested_parent_term;
    use tantivy::indexer::UserOperation;
    use tantivy::schema::{Schema, Value as _, STORED, STRING};
    use tantivy::{Index, IndexWriter, TantivyDocument};

    /// Blocks added with `IndexWriter::run` stay contiguous (children right before their root)
    /// across segments, deletes of whole blocks and a merge of everything.
    #[test]
    fn blocks_stay_contiguous_across_merges_with_deletes() {
        let mut b = Schema::builder();
        let id = b.add_text_field("_id", STRING | STORED);
        let owner = b.add_text_field("owner", STRING | STORED);
        let nested = b.add_text_field("_nested", STRING);
        let index = Index::create_in_ram(b.build());
        let mut w: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        let block = |i: usize| -> Vec<UserOperation> {
            let key = format!("r{i}");
            let mut ops = Vec::new();
            for c in 0..(i % 4) {
                let mut d = TantivyDocument::default();
                d.add_text(owner, &key);
                d.add_text(nested, NESTED_CHILD);
                d.add_text(nested, "p");
                d.add_text(nested, nested_parent_term(&key));
                d.add_text(id, format!("child{c}"));
                ops.push(UserOperation::Add(d));
            }
            let mut root = TantivyDocument::default();
            root.add_text(id, &key);
            root.add_text(owner, &key);
            ops.push(UserOperation::Add(root));
            ops
        };
        for seg in 0..4 {
            for i in seg * 25..(seg + 1) * 25 {
                w.run(block(i)).unwrap();
            }
            w.commit().unwrap();
        }
        // Delete every third block (root by _id, children by their parent term), re-add some.
        for i in (0..100).step_by(3) {
            let key = format!("r{i}");
            w.delete_term(Term::from_field_text(id, &key));
            w.delete_term(Term::from_field_text(nested, &nested_parent_term(&key)));
            if i % 2 == 0 {
                w.run(block(i)).unwrap();
            }
        }
        w.commit().unwrap();
        let segs = index.searchable_segment_ids().unwrap();
        assert!(segs.len() > 1);
        w.merge(&segs).wait().unwrap();
        w.commit().unwrap();
        w.wait_merging_threads().unwrap();
        let reader = index.reader().unwrap();
        let searcher = reader.searcher();
        assert_eq!(searcher.segment_readers().len(), 1);
        let seg = &searcher.segment_readers()[0];
        let parents = parent_docs(seg, nested, &[]).unwrap();
        let store = seg.get_store_reader(0).unwrap();
        let text = |d: DocId, f: Field| -> String {
            let doc: TantivyDocument = store.get(d).unwrap();
            doc.get_first(f)
                .and_then(|v| v.as_str())
                .unwrap()
                .to_string()
        };
        let mut roots = 0;
        for &p in &parents {
            if seg.is_deleted(p) {
                continue;
            }
            roots += 1;
            let key = text(p, owner);
            assert_eq!(text(p, id), key, "a parent is a root");
            let i: usize = key[1..].parse().unwrap();
            let kids: Vec<DocId> = children_of(&parents, p).collect();
            assert_eq!(kids.len(), i % 4, "{key}'s block");
            for k in kids {
                assert!(!seg.is_deleted(k));
                assert_eq!(text(k, owner), key);
            }
        }
        let deleted = (0..100).step_by(3).filter(|i| i % 2 != 0).count();
        assert_eq!(roots, 100 - deleted);
        assert_eq!(
            seg.num_docs() as usize,
            (0..100)
                .filter(|i| i % 3 != 0 || i % 2 == 0)
                .map(|i| 1 + i % 4)
                .sum::<usize>()
        );
    }

    /// Two blocks of users (nested) with pets (nested in users), post-order: a user's pets
    /// precede it, the root comes last. `ToChildQuery` from the roots and from the users,
    /// and `nested_identity` of each pet.
    #[test]
    fn to_child_levels_and_identity() {
        let mut b = Schema::builder();
        let name = b.add_text_field("name", STRING | STORED);
        let nested = b.add_text_field("_nested", STRING);
        let index = Index::create_in_ram(b.build());
        let mut w: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        let doc = |n: &str, path: Option<&str>| {
            let mut d = TantivyDocument::default();
            d.add_text(name, n);
            if let Some(p) = path {
                d.add_text(nested, NESTED_CHILD);
                d.add_text(nested, p);
            }
            UserOperation::Add(d)
        };
        // Block 1: u0 (pets p00, p01), u1 (none), u2 (pet p20); block 2: u0 (pet q00).
        w.run(vec![
            doc("p00", Some("users.pets")),
            doc("p01", Some("users.pets")),
            doc("u0", Some("users")),
            doc("u1", Some("users")),
            doc("p20", Some("users.pets")),
            doc("u2", Some("users")),
            doc("r1", None),
        ])
        .unwrap();
        w.run(vec![
            doc("q00", Some("users.pets")),
            doc("v0", Some("users")),
            doc("r2", None),
        ])
        .unwrap();
        w.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let seg = &searcher.segment_readers()[0];
        let store = seg.get_store_reader(0).unwrap();
        let names = |q: &dyn Query| -> Vec<String> {
            let w = q
                .weight(EnableScoring::disabled_from_searcher(&searcher))
                .unwrap();
            let mut s = w.scorer(seg, 1.0).unwrap();
            let mut out = Vec::new();
            while s.doc() != TERMINATED {
                let d: TantivyDocument = store.get(s.doc()).unwrap();
                out.push(
                    d.get_first(name)
                        .and_then(|v| v.as_str())
                        .unwrap()
                        .to_string(),
                );
                s.advance();
            }
            out
        };
        let term = |n: &str| -> Box<dyn Query> {
            Box::new(TermQuery::new(
                Term::from_field_text(name, n),
                IndexRecordOption::Basic,
            ))
        };
        // From the root: its users, or all its pets (a path two levels down).
        let q = ToChildQuery::new(term("r1"), nested, None, "users");
        assert_eq!(names(&q), ["u0", "u1", "u2"]);
        let q = ToChildQuery::new(term("r1"), nested, None, "users.pets");
        assert_eq!(names(&q), ["p00", "p01", "p20"]);
        // From users: each user's own pets only.
        for (user, pets) in [
            ("u0", vec!["p00", "p01"]),
            ("u1", vec![]),
            ("u2", vec!["p20"]),
            ("v0", vec!["q00"]),
        ] {
            let q = ToChildQuery::new(term(user), nested, Some("users"), "users.pets");
            assert_eq!(names(&q), pets, "{user}");
        }
        // Back up: pets to their users, users to their roots.
        let pets = ToChildQuery::new(term("r1"), nested, None, "users.pets");
        let q = ToParentQuery::new(
            Box::new(pets),
            nested,
            vec!["users".into()],
            ScoreMode::None,
        );
        assert_eq!(names(&q), ["u0", "u2"]);
        // Identity: (root, offsets per level).
        let chain = ["users".to_string(), "users.pets".to_string()];
        assert_eq!(
            nested_identity(seg, nested, &chain, 0).unwrap(),
            (6, vec![0, 0])
        );
        assert_eq!(
            nested_identity(seg, nested, &chain, 1).unwrap(),
            (6, vec![0, 1])
        );
        assert_eq!(
            nested_identity(seg, nested, &chain, 4).unwrap(),
            (6, vec![2, 0])
        );
        assert_eq!(
            nested_identity(seg, nested, &chain, 7).unwrap(),
            (9, vec![0, 0])
        );
        assert_eq!(
            nested_identity(seg, nested, &chain[..1], 3).unwrap(),
            (6, vec![1])
        );
    }

    #[test]
    fn children_ranges_and_vec_scorer() {
        let parents = vec![2, 3, 7];
        assert_eq!(children_of(&parents, 2), 0..2);
        assert_eq!(children_of(&parents, 3), 3..3);
        assert_eq!(children_of(&parents, 7), 4..7);
        let mut s = VecScorer::new(vec![(1, 1.0), (4, 2.0), (9, 3.0)]);
        assert_eq!(s.doc(), 1);
        assert_eq!(s.seek(3), 4);
        assert_eq!(s.score(), 2.0);
        assert_eq!(s.advance(), 9);
        assert_eq!(s.advance(), TERMINATED);
    }
}
