//! [`TopScoreCarried`] (each segment starts at the k-th best score of the segments before
//! it) against every live match scored one by one, over random term, `bool` (should, must,
//! `minimum_should_match`, must_not), `dis_max`, boosted and constant-score queries, on five
//! segments with deleted documents and many equal scores (repeated texts, constant scores),
//! alone and beside a `Count`.
//!
//! Both sides score with tantivy's own statistics: what is compared is the collection.
#![allow(clippy::disallowed_methods)]

use tantivy::collector::{Count, TopDocs};
use tantivy::query::{
    BooleanQuery, BoostQuery, ConstScoreQuery, DisjunctionMaxQuery, EnableScoring, Occur, Query,
    TermQuery,
};
use tantivy::schema::{IndexRecordOption, Schema, INDEXED, TEXT};
use tantivy::{doc, DocAddress, DocSet, Index, IndexWriter, Score, Searcher, Term, TERMINATED};

use crate::top_score::TopScoreCarried;

/// A small deterministic generator (xorshift), so a failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: [&str; 6] = ["alpha", "beta", "gamma", "delta", "eps", "zeta"];
/// Texts repeated in every segment: equal scores across segments.
const REPEATED: [&str; 3] = ["alpha beta", "gamma alpha delta", "beta beta eps zeta"];
const SEGMENTS: usize = 5;

struct Fixture {
    index: Index,
    body: tantivy::schema::Field,
}

/// Five segments of random `body` texts (skewed word frequencies, lengths 1 to 30), one
/// document in four a repeated text; about one document in ten deleted.
fn fixture(seed: u64) -> Fixture {
    let mut schema = Schema::builder();
    let body = schema.add_text_field("body", TEXT);
    let id = schema.add_u64_field("id", INDEXED);
    let index = Index::create_in_ram(schema.build());
    let mut writer: IndexWriter = index
        .writer_with_num_threads(1, 50_000_000)
        .expect("writer");
    // Segments stay as committed: the test needs several (a background merge joins them).
    writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
    let mut rng = Rng(seed | 1);
    let mut next_id = 0u64;
    for _segment in 0..SEGMENTS {
        for _ in 0..(600 + rng.below(900)) {
            let text = if rng.below(4) == 0 {
                REPEATED[rng.below(REPEATED.len() as u64) as usize].to_string()
            } else {
                let len = 1 + rng.below(30) as usize;
                let words: Vec<&str> = (0..len)
                    .map(|_| WORDS[(63 - rng.below(64)).leading_zeros() as usize % WORDS.len()])
                    .collect();
                words.join(" ")
            };
            writer
                .add_document(doc!(body => text, id => next_id))
                .expect("add");
            next_id += 1;
        }
        writer.commit().expect("commit");
    }
    for _ in 0..next_id / 10 {
        writer.delete_term(Term::from_field_u64(id, rng.below(next_id)));
    }
    writer.commit().expect("commit deletes");
    Fixture { index, body }
}

fn term(f: &Fixture, rng: &mut Rng) -> Box<dyn Query> {
    let word = WORDS[rng.below(WORDS.len() as u64) as usize];
    Box::new(TermQuery::new(
        Term::from_field_text(f.body, word),
        IndexRecordOption::WithFreqs,
    ))
}

/// A term, boosted or under a constant score (all its matches tie), now and then.
fn leaf(f: &Fixture, rng: &mut Rng) -> Box<dyn Query> {
    match rng.below(6) {
        0 => Box::new(BoostQuery::new(term(f, rng), 2.5)),
        1 => Box::new(ConstScoreQuery::new(term(f, rng), 1.0)),
        _ => term(f, rng),
    }
}

/// A random scored query over the shapes with their own pruning paths.
fn query(f: &Fixture, rng: &mut Rng) -> Box<dyn Query> {
    let leaves =
        |n: usize, rng: &mut Rng| -> Vec<Box<dyn Query>> { (0..n).map(|_| leaf(f, rng)).collect() };
    let n = 2 + rng.below(3) as usize;
    match rng.below(7) {
        0 => term(f, rng),
        1 => Box::new(BooleanQuery::new(
            leaves(n, rng)
                .into_iter()
                .map(|q| (Occur::Should, q))
                .collect(),
        )),
        2 => Box::new(BooleanQuery::new(vec![
            (Occur::Must, term(f, rng)),
            (Occur::Must, term(f, rng)),
        ])),
        3 => {
            let n = 3 + rng.below(3) as usize;
            let msm = 2 + rng.below((n - 2) as u64) as usize;
            let clauses = leaves(n, rng)
                .into_iter()
                .map(|q| (Occur::Should, q))
                .collect();
            Box::new(BooleanQuery::with_minimum_required_clauses(clauses, msm))
        }
        4 => Box::new(DisjunctionMaxQuery::with_tie_breaker(leaves(n, rng), 0.3)),
        5 => Box::new(BooleanQuery::new(vec![
            (Occur::Should, term(f, rng)),
            (Occur::Should, term(f, rng)),
            (Occur::MustNot, term(f, rng)),
        ])),
        _ => Box::new(BoostQuery::new(
            Box::new(BooleanQuery::new(vec![
                (Occur::Must, term(f, rng)),
                (Occur::Should, term(f, rng)),
            ])),
            0.5,
        )),
    }
}

/// Every live match scored one by one, best first (ties by address), and how many.
fn exhaustive(searcher: &Searcher, q: &dyn Query, k: usize) -> (usize, Vec<(Score, DocAddress)>) {
    let weight = q
        .weight(EnableScoring::enabled_from_searcher(searcher))
        .expect("weight");
    let mut all = Vec::new();
    for (ord, seg) in searcher.segment_readers().iter().enumerate() {
        let mut scorer = weight.scorer(seg, 1.0).expect("scorer");
        let mut doc = scorer.doc();
        while doc != TERMINATED {
            if seg.alive_bitset().is_none_or(|a| a.is_alive(doc)) {
                all.push((scorer.score(), DocAddress::new(ord as u32, doc)));
            }
            doc = scorer.advance();
        }
    }
    let count = all.len();
    all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    all.truncate(k);
    (count, all)
}

/// The same documents in the same order, the scores equal but for the last bits: a pruning
/// path (block-max WAND) sums a disjunction's clauses in another order than its scorer.
fn same_hits(got: &[(Score, DocAddress)], want: &[(Score, DocAddress)], context: &str) {
    let addresses = |hits: &[(Score, DocAddress)]| hits.iter().map(|h| h.1).collect::<Vec<_>>();
    assert_eq!(addresses(got), addresses(want), "{context}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g.0 - w.0).abs() <= 1e-5 * w.0.abs(),
            "{context}: {g:?} {w:?}"
        );
    }
}

fn check(seed: u64) {
    let f = fixture(seed);
    let searcher = f.index.reader().expect("reader").searcher();
    assert_eq!(searcher.segment_readers().len(), SEGMENTS);
    assert!(searcher.segment_readers().iter().all(|s| s.has_deletes()));
    let mut rng = Rng(seed.wrapping_mul(31) | 1);
    for round in 0..80 {
        let q = query(&f, &mut rng);
        let k = [1usize, 2, 5, 10, 40, 100][rng.below(6) as usize];
        let (count, expected) = exhaustive(&searcher, &*q, k);
        let carried = searcher
            .search(&*q, &TopScoreCarried::new(k))
            .expect("search");
        let context = format!("seed {seed}, round {round}: {q:?} k {k}");
        same_hits(&carried, &expected, &context);
        // What tantivy's own collection finds (each segment from scratch, the same pruning
        // paths): the same hits. Not bit for bit: block-max WAND sums a document's clause
        // scores in the order its cursors stand in, which the threshold moves.
        let fresh = searcher
            .search(&*q, &TopDocs::with_limit(k).order_by_score())
            .expect("search");
        same_hits(
            &carried,
            &fresh,
            &format!("against tantivy's collector: {context}"),
        );
        // Beside a count, tantivy feeds every match to the segment collector.
        let (c, hits) = searcher
            .search(&*q, &(Count, TopScoreCarried::new(k)))
            .expect("search");
        assert_eq!(c, count, "count: {context}");
        same_hits(&hits, &expected, &format!("with count: {context}"));
    }
}

#[test]
fn carried_top_hits_equal_exhaustive_scoring() {
    for seed in [7, 19, 211] {
        check(seed);
    }
}

/// The threshold a segment starts at is the k-th best score of the segments before it,
/// ties included: documents of a repeated text tie across every segment.
#[test]
fn a_segment_starts_at_the_kth_best_score_before_it() {
    let f = fixture(3);
    let searcher = f.index.reader().expect("reader").searcher();
    let q = TermQuery::new(
        Term::from_field_text(f.body, "alpha"),
        IndexRecordOption::WithFreqs,
    );
    for k in [1usize, 10, 300] {
        let collector = TopScoreCarried::new(k);
        searcher.search(&q, &collector).expect("search");
        for ord in 0..SEGMENTS as u32 {
            let (_, before) = exhaustive(&searcher, &q, usize::MAX);
            let before: Vec<Score> = before
                .iter()
                .filter(|(_, a)| a.segment_ord < ord)
                .map(|(s, _)| *s)
                .collect();
            assert_eq!(
                collector.carried_threshold(ord),
                before.get(k - 1).copied(),
                "k {k}, segment {ord}"
            );
        }
    }
}

#[test]
fn no_hits_asked_no_hits_given() {
    let f = fixture(5);
    let searcher = f.index.reader().expect("reader").searcher();
    let q = TermQuery::new(
        Term::from_field_text(f.body, "beta"),
        IndexRecordOption::WithFreqs,
    );
    assert!(searcher
        .search(&q, &TopScoreCarried::new(0))
        .expect("search")
        .is_empty());
}
