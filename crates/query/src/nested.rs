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
        let mut s = self.scorer(reader, 1.0)?;
        if s.seek(doc) != doc {
            return Err(tantivy::TantivyError::InvalidArgument(format!(
                "Document #({doc}) does not match"
            )));
        }
        Ok(Explanation::new(
            "Score based on child doc range",
            s.score(),
        ))
    }
}

/// The nested documents of `path` whose root matches `parent` (a top-level `nested`
/// aggregation's documents; Lucene's `ToChildBlockJoinQuery` from the root level). Scores are 0.
#[derive(Debug)]
pub struct ToChildQuery {
    parent: Box<dyn Query>,
    nested: Field,
    path: String,
}

impl Clone for ToChildQuery {
    fn clone(&self) -> Self {
        ToChildQuery {
            parent: self.parent.box_clone(),
            nested: self.nested,
            path: self.path.clone(),
        }
    }
}

impl ToChildQuery {
    pub fn new(parent: Box<dyn Query>, nested: Field, path: &str) -> ToChildQuery {
        ToChildQuery {
            parent,
            nested,
            path: path.to_string(),
        }
    }
}

impl Query for ToChildQuery {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let disabled = match enable_scoring.searcher() {
            Some(s) => EnableScoring::disabled_from_searcher(s),
            None => EnableScoring::disabled_from_schema(enable_scoring.schema()),
        };
        Ok(Box::new(ToChildWeight {
            parent: self.parent.weight(disabled)?,
            nested: self.nested,
            path: self.path.clone(),
        }))
    }
}

struct ToChildWeight {
    parent: Box<dyn Weight>,
    nested: Field,
    path: String,
}

impl Weight for ToChildWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let mut parent = self.parent.scorer(reader, boost)?;
        let mut out = Vec::new();
        if parent.doc() != TERMINATED {
            let roots = parent_docs(reader, self.nested, &[])?;
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
                    let range = children_of(&roots, d);
                    let from = children.partition_point(|&c| c < range.start);
                    let to = children.partition_point(|&c| c < range.end);
                    out.extend(children[from..to].iter().map(|&c| (c, 0.0)));
                }
                d = parent.advance();
            }
        }
        Ok(Box::new(VecScorer::new(out)))
    }

    fn explain(&self, _reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let _ = doc;
        Ok(Explanation::new("nested document", 0.0))
    }
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
