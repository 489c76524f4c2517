//! The top hits of `minimum_should_match` disjunctions collected with pruning (tantivy's
//! `MinShouldMatchScorer::for_each_pruning`: block bounds, lead and tail) against every match
//! scored one by one, over random clause sets, `msm` values, sizes, several segments and
//! deleted documents. Term clauses on a field with frequencies and norms carry block maxima;
//! keyword terms (no frequencies, no norms) and constant scores fall back to their global
//! bound.
//!
//! Both sides score with tantivy's own statistics: what is compared is the pruning, under
//! the same statistics, not Lode's statistics.
#![allow(clippy::disallowed_methods)]

use tantivy::collector::TopDocs;
use tantivy::query::{
    BooleanQuery, BoostQuery, ConstScoreQuery, EnableScoring, Occur, Query, TermQuery,
};
use tantivy::schema::{
    IndexRecordOption, Schema, TextFieldIndexing, TextOptions, INDEXED, STRING, TEXT,
};
use tantivy::{doc, DocAddress, DocSet, Index, IndexWriter, Score, Searcher, Term, TERMINATED};

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
const KINDS: [&str; 3] = ["basic", "gold", "plat"];

struct Fixture {
    index: Index,
    body: tantivy::schema::Field,
    kind: tantivy::schema::Field,
}

/// Four segments of random documents: `body` words drawn with skewed frequencies and
/// lengths from 1 to 30 (so norms and frequencies vary), `kind` a keyword without norms or
/// frequencies; about one document in twelve deleted.
fn fixture(seed: u64) -> Fixture {
    let mut schema = Schema::builder();
    let body = schema.add_text_field("body", TEXT);
    let keyword = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("raw")
            .set_index_option(IndexRecordOption::Basic)
            .set_fieldnorms(false),
    );
    let kind = schema.add_text_field("kind", keyword);
    let id = schema.add_u64_field("id", INDEXED);
    let _ = STRING;
    let index = Index::create_in_ram(schema.build());
    let mut writer: IndexWriter = index.writer(50_000_000).expect("writer");
    // Segments stay as committed: the test needs several (a background merge joined them).
    writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
    let mut rng = Rng(seed | 1);
    let mut next_id = 0u64;
    for _segment in 0..4 {
        for _ in 0..1500 {
            let len = 1 + rng.below(30) as usize;
            let text: Vec<&str> = (0..len)
                .map(|_| {
                    // Word i appears with probability falling as i grows.
                    let r = rng.below(64);
                    WORDS[(63 - r).leading_zeros() as usize % WORDS.len()]
                })
                .collect();
            let k = KINDS[rng.below(KINDS.len() as u64) as usize];
            writer
                .add_document(doc!(body => text.join(" "), kind => k, id => next_id))
                .expect("add");
            next_id += 1;
        }
        writer.commit().expect("commit");
    }
    for _ in 0..next_id / 12 {
        writer.delete_term(Term::from_field_u64(id, rng.below(next_id)));
    }
    writer.commit().expect("commit deletes");
    Fixture { index, body, kind }
}

/// A random clause: a text term (block maxima), a keyword term (a constant score without
/// norms), a constant score, or a boosted text term.
fn clause(f: &Fixture, rng: &mut Rng) -> Box<dyn Query> {
    let word = WORDS[rng.below(WORDS.len() as u64) as usize];
    let text = || {
        Box::new(TermQuery::new(
            Term::from_field_text(f.body, word),
            IndexRecordOption::WithFreqs,
        )) as Box<dyn Query>
    };
    match rng.below(4) {
        0 | 1 => text(),
        2 => Box::new(TermQuery::new(
            Term::from_field_text(f.kind, KINDS[rng.below(KINDS.len() as u64) as usize]),
            IndexRecordOption::Basic,
        )),
        _ if rng.below(2) == 0 => Box::new(ConstScoreQuery::new(text(), 0.75)),
        _ => Box::new(BoostQuery::new(text(), 1.5)),
    }
}

/// Every live match scored one by one, best first (ties by address).
fn exhaustive(searcher: &Searcher, q: &dyn Query, k: usize) -> Vec<(Score, DocAddress)> {
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
    all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    all.truncate(k);
    all
}

fn check(seed: u64, with_required: bool) {
    let f = fixture(seed);
    let searcher = f.index.reader().expect("reader").searcher();
    assert!(searcher.segment_readers().len() >= 4);
    let mut rng = Rng(seed.wrapping_mul(31) | 1);
    for round in 0..60 {
        let n = 3 + rng.below(4) as usize;
        let msm = 2 + rng.below((n - 2) as u64) as usize;
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = (0..n)
            .map(|_| (Occur::Should, clause(&f, &mut rng)))
            .collect();
        if with_required {
            let word = WORDS[rng.below(3) as usize];
            let term = TermQuery::new(
                Term::from_field_text(f.body, word),
                IndexRecordOption::WithFreqs,
            );
            // A filter (scores 0), a scoring must, or a must_not.
            match rng.below(3) {
                0 => clauses.push((
                    Occur::Must,
                    Box::new(ConstScoreQuery::new(Box::new(term), 0.0)),
                )),
                1 => clauses.push((Occur::Must, Box::new(term))),
                _ => clauses.push((Occur::MustNot, Box::new(term))),
            }
        }
        let q = BooleanQuery::with_minimum_required_clauses(clauses, msm);
        let k = [1usize, 3, 10, 50][rng.below(4) as usize];
        let pruned = searcher
            .search(&q, &TopDocs::with_limit(k).order_by_score())
            .expect("search");
        let expected = exhaustive(&searcher, &q, k);
        assert_eq!(
            pruned, expected,
            "seed {seed}, round {round}: {q:?} msm {msm} k {k}"
        );
    }
}

#[test]
fn pruned_top_hits_equal_exhaustive_scoring() {
    for seed in [3, 17, 101] {
        check(seed, false);
    }
}

#[test]
fn pruned_top_hits_with_must_filter_and_must_not() {
    for seed in [5, 23] {
        check(seed, true);
    }
}
