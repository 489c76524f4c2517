//! `fuzzy` (and `match` / `multi_match` / `query_string` with `fuzziness`) as Lucene's
//! `FuzzyQuery` rewrites it.
//!
//! The terms of the field within the edit distance (sharing the first `prefix_length`
//! characters) are found per shard, each with Lucene's `FuzzyTermsEnum` boost
//! `1 - edits / min(len(term), len(query term))` (in code points; the exact term 1). The
//! `rewrite` method then decides what the query is: by default
//! (`top_terms_blended_freqs_{max_expansions}`) the `max_expansions` terms of highest boost
//! (ties: the smaller term first), each a BM25 term query boosted by its fuzzy boost and
//! scored with the largest document frequency of the expansions (Lucene's
//! `BlendedTermQuery`), summed; `top_terms_N` leaves each term its own frequency,
//! `top_terms_boost_N` scores each matching term its boost, `scoring_boolean` takes every
//! term, and the `constant_score*` methods match every term with the query's boost.

use levenshtein_automata::{Distance, LevenshteinAutomatonBuilder, DFA};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use tantivy::query::{
    AutomatonWeight, Bm25StatisticsProvider, BooleanQuery, BoostQuery, ConstScoreQuery, EmptyQuery,
    EnableScoring, Occur, Query, TermQuery, Weight,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{Searcher, Term};
use tantivy_fst::Automaton;

/// A multi-term query's `rewrite` (ES's `QueryParsers#parseRewriteMethod`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rewrite {
    /// `constant_score`, `constant_score_blended`, `constant_score_boolean`: every term,
    /// scored the query's boost.
    ConstantScore,
    /// `scoring_boolean`: every term, each BM25 with its own statistics times its boost.
    ScoringBoolean,
    /// `top_terms_N`: the N best terms, scored as `scoring_boolean`.
    TopTerms(usize),
    /// `top_terms_boost_N`: the N best terms, each scoring its boost.
    TopTermsBoost(usize),
    /// `top_terms_blended_freqs_N`: the N best terms, BM25 over their largest frequency.
    TopTermsBlendedFreqs(usize),
}

impl Rewrite {
    /// ES's names; `Err` carries ES's message for a name it does not know.
    pub fn parse(name: &str) -> Result<Rewrite, String> {
        match name {
            "constant_score" | "constant_score_blended" | "constant_score_boolean" => {
                return Ok(Rewrite::ConstantScore)
            }
            "scoring_boolean" => return Ok(Rewrite::ScoringBoolean),
            _ => {}
        }
        let failed = || format!("Failed to parse rewrite_method [{name}]");
        let Some(digit) = name.find(|c: char| c.is_ascii_digit()) else {
            return Err(failed());
        };
        let (method, size) = name.split_at(digit);
        // Java's `Integer.parseInt` of the rest: a malformed size is its own error.
        let size: i32 = size
            .parse()
            .map_err(|_| format!("For input string: \"{size}\""))?;
        let size = size.max(0) as usize;
        match method {
            "top_terms_" => Ok(Rewrite::TopTerms(size)),
            "top_terms_boost_" => Ok(Rewrite::TopTermsBoost(size)),
            "top_terms_blended_freqs_" => Ok(Rewrite::TopTermsBlendedFreqs(size)),
            _ => Err(failed()),
        }
    }

    /// Whether the rewritten query scores with the query's boost alone.
    pub fn is_constant(self) -> bool {
        self == Rewrite::ConstantScore
    }
}

/// Terms of one field within `distance` edits of `term`, rewritten by `rewrite`.
#[derive(Debug, Clone)]
pub struct FuzzyQuery {
    term: Term,
    /// The term's text.
    text: String,
    distance: u8,
    prefix_length: usize,
    transpositions: bool,
    rewrite: Rewrite,
    /// Lucene's `IndexSearcher#getMaxClauseCount`: the cap of the top-terms queues and the
    /// limit of `scoring_boolean`.
    max_clause_count: usize,
}

impl FuzzyQuery {
    pub fn new(
        term: Term,
        distance: u8,
        prefix_length: usize,
        transpositions: bool,
        rewrite: Rewrite,
        max_clause_count: usize,
    ) -> FuzzyQuery {
        let text = term.value().as_str().unwrap_or_default().to_string();
        FuzzyQuery {
            term,
            text,
            distance: distance.min(2),
            prefix_length,
            transpositions,
            rewrite,
            max_clause_count,
        }
    }

    fn text(&self) -> &str {
        &self.text
    }

    /// Lucene's `SingleTermsEnum` case: no edits allowed, or a prefix covering the term.
    fn exact_only(&self) -> bool {
        self.distance == 0 || self.prefix_length >= self.text().chars().count()
    }

    fn automaton(&self) -> PrefixedLevenshtein {
        let text = self.text();
        let split = text
            .char_indices()
            .nth(self.prefix_length)
            .map_or(text.len(), |(i, _)| i);
        let (prefix, suffix) = text.split_at(split);
        PrefixedLevenshtein {
            prefix: prefix.as_bytes().to_vec(),
            dfa: builder(self.distance, self.transpositions).build_dfa(suffix),
        }
    }

    /// Every term of the shard within reach, with its boost.
    fn expansions(&self, searcher: &Searcher) -> tantivy::Result<Vec<(Vec<u8>, f32)>> {
        let field = self.term.field();
        let text = self.text();
        if self.exact_only() {
            return Ok(vec![(text.as_bytes().to_vec(), 1.0)]);
        }
        let automaton = self.automaton();
        let query_len = text.chars().count();
        let mut found: HashMap<Vec<u8>, f32> = HashMap::new();
        for reader in searcher.segment_readers() {
            let index = reader.inverted_index(field)?;
            let mut stream = index.terms().search(&automaton).into_stream()?;
            while stream.advance() {
                let key = stream.key();
                if found.contains_key(key) {
                    continue;
                }
                let edits = automaton.edits(key);
                found.insert(key.to_vec(), fuzzy_boost(edits, key, query_len));
            }
        }
        Ok(found.into_iter().collect())
    }

    /// The best `n` expansions (Lucene's `TopTermsRewrite` queue: higher boost first, then the
    /// smaller term).
    fn top(&self, mut terms: Vec<(Vec<u8>, f32)>, n: usize) -> Vec<(Vec<u8>, f32)> {
        terms.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        terms.truncate(n.min(self.max_clause_count));
        terms
    }

    /// A text term, as the query's own (its type shows in explanations); the dictionary of
    /// a string field holds UTF-8.
    fn term(&self, bytes: &[u8]) -> Term {
        match std::str::from_utf8(bytes) {
            Ok(text) => Term::from_field_text(self.term.field(), text),
            Err(_) => Term::from_field_bytes(self.term.field(), bytes),
        }
    }
}

/// Lucene's `FuzzyTermsEnum` boost of a term `edits` away from a query term of `query_len`
/// code points.
fn fuzzy_boost(edits: u8, term: &[u8], query_len: usize) -> f32 {
    if edits == 0 {
        return 1.0;
    }
    let term_len = String::from_utf8_lossy(term).chars().count();
    let min_len = term_len.min(query_len);
    1.0 - f32::from(edits) / min_len as f32
}

/// One Levenshtein builder per distance and transposition cost (building one for distance 2
/// is costly; tantivy's `FuzzyTermQuery` caches them the same way).
fn builder(distance: u8, transpositions: bool) -> &'static LevenshteinAutomatonBuilder {
    static BUILDERS: [[OnceLock<LevenshteinAutomatonBuilder>; 2]; 3] = [
        [OnceLock::new(), OnceLock::new()],
        [OnceLock::new(), OnceLock::new()],
        [OnceLock::new(), OnceLock::new()],
    ];
    BUILDERS[usize::from(distance.min(2))][usize::from(transpositions)]
        .get_or_init(|| LevenshteinAutomatonBuilder::new(distance.min(2), transpositions))
}

/// Lucene's fuzzy automaton: the prefix literally, then the Levenshtein DFA of the rest.
/// States below `prefix.len()` walk the prefix; the others are the DFA's, shifted.
struct PrefixedLevenshtein {
    prefix: Vec<u8>,
    dfa: DFA,
}

const SINK: u32 = u32::MAX;

impl PrefixedLevenshtein {
    fn dfa_state(&self, state: u32) -> Option<u32> {
        let plen = self.prefix.len() as u32;
        (state != SINK && state >= plen).then(|| state - plen)
    }

    /// The edit distance of an accepted term (the prefix matched literally).
    fn edits(&self, term: &[u8]) -> u8 {
        match self.dfa.eval(&term[self.prefix.len().min(term.len())..]) {
            Distance::Exact(d) => d,
            Distance::AtLeast(d) => d,
        }
    }
}

impl Automaton for PrefixedLevenshtein {
    type State = u32;

    fn start(&self) -> u32 {
        if self.prefix.is_empty() {
            self.dfa.initial_state()
        } else {
            0
        }
    }

    fn is_match(&self, state: &u32) -> bool {
        self.dfa_state(*state)
            .is_some_and(|s| matches!(self.dfa.distance(s), Distance::Exact(_)))
    }

    fn can_match(&self, state: &u32) -> bool {
        match self.dfa_state(*state) {
            Some(s) => s != levenshtein_automata::SINK_STATE,
            None => *state != SINK,
        }
    }

    fn accept(&self, state: &u32, byte: u8) -> u32 {
        let plen = self.prefix.len() as u32;
        if let Some(s) = self.dfa_state(*state) {
            return plen + self.dfa.transition(s, byte);
        }
        if *state == SINK || self.prefix[*state as usize] != byte {
            return SINK;
        }
        if *state + 1 == plen {
            plen + self.dfa.initial_state()
        } else {
            *state + 1
        }
    }
}

/// Every expansion's document frequency reported as the largest among them (Lucene's
/// `BlendedTermQuery`; its summed total term frequency does not enter BM25); everything else
/// from the shard's statistics.
struct BlendedStatistics<'a> {
    inner: &'a dyn Bm25StatisticsProvider,
    field: Field,
    doc_freq: u64,
}

impl Bm25StatisticsProvider for BlendedStatistics<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        self.inner.total_num_tokens(field)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        self.inner.total_num_docs()
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        if term.field() == self.field {
            Ok(self.doc_freq)
        } else {
            self.inner.doc_freq(term)
        }
    }
}

impl Query for FuzzyQuery {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let field = self.term.field();
        let Some(searcher) = enable_scoring.searcher() else {
            // Without a searcher (a filter built from the schema alone) the shard's terms
            // cannot be ranked: every term within reach matches.
            return Ok(Box::new(AutomatonWeight::new(field, self.automaton())));
        };
        let (limit, scoring) = match self.rewrite {
            Rewrite::ConstantScore if !self.exact_only() => {
                return ConstScoreQuery::new(
                    Box::new(AutomatonMatch(field, Arc::new(self.automaton()))),
                    1.0,
                )
                .weight(enable_scoring);
            }
            Rewrite::ConstantScore => (usize::MAX, Rewrite::ConstantScore),
            Rewrite::ScoringBoolean => (usize::MAX, Rewrite::ScoringBoolean),
            Rewrite::TopTerms(n) | Rewrite::TopTermsBoost(n) | Rewrite::TopTermsBlendedFreqs(n) => {
                (n, self.rewrite)
            }
        };
        let all = self.expansions(searcher)?;
        if scoring == Rewrite::ScoringBoolean && all.len() > self.max_clause_count {
            return Err(tantivy::TantivyError::InvalidArgument(format!(
                "maxClauseCount is set to {}",
                self.max_clause_count
            )));
        }
        let terms = self.top(all, limit);
        if terms.is_empty() {
            return EmptyQuery.weight(enable_scoring);
        }
        let EnableScoring::Enabled {
            statistics_provider,
            ..
        } = enable_scoring
        else {
            let terms = terms.iter().map(|(t, _)| self.term(t)).collect();
            return crate::term_set::TermSetLookup::new(terms).weight(enable_scoring);
        };
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .map(|(bytes, boost)| {
                let q: Box<dyn Query> = match scoring {
                    Rewrite::ConstantScore => Box::new(ConstScoreQuery::new(
                        Box::new(TermQuery::new(self.term(bytes), IndexRecordOption::Basic)),
                        1.0,
                    )),
                    Rewrite::TopTermsBoost(_) => Box::new(ConstScoreQuery::new(
                        Box::new(TermQuery::new(self.term(bytes), IndexRecordOption::Basic)),
                        *boost,
                    )),
                    _ => {
                        let tq = Box::new(TermQuery::new(
                            self.term(bytes),
                            IndexRecordOption::WithFreqs,
                        ));
                        if *boost == 1.0 {
                            tq
                        } else {
                            Box::new(BoostQuery::new(tq, *boost))
                        }
                    }
                };
                (Occur::Should, q)
            })
            .collect();
        // One term (the common case of a short or exact term) is its term query alone: a
        // boolean of one clause scores the same but hides the term scorer's block maxima.
        let query: Box<dyn Query> = if clauses.len() == 1 {
            clauses.pop().expect("one clause").1
        } else {
            Box::new(BooleanQuery::new(clauses))
        };
        if let Rewrite::TopTermsBlendedFreqs(_) = scoring {
            let mut doc_freq = 0;
            for (bytes, _) in &terms {
                doc_freq = doc_freq.max(statistics_provider.doc_freq(&self.term(bytes))?);
            }
            let blended = BlendedStatistics {
                inner: statistics_provider,
                field,
                doc_freq,
            };
            return query.weight(EnableScoring::enabled_from_statistics_provider(
                &blended, searcher,
            ));
        }
        query.weight(enable_scoring)
    }
}

/// Matches every term the automaton accepts (the `constant_score` rewrites).
#[derive(Clone)]
struct AutomatonMatch(Field, Arc<PrefixedLevenshtein>);

impl std::fmt::Debug for AutomatonMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AutomatonMatch").finish_non_exhaustive()
    }
}

impl Query for AutomatonMatch {
    fn weight(&self, _: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(AutomatonWeight::<PrefixedLevenshtein>::new(
            self.0,
            self.1.clone(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrite_names() {
        assert_eq!(Rewrite::parse("constant_score"), Ok(Rewrite::ConstantScore));
        assert_eq!(
            Rewrite::parse("constant_score_blended"),
            Ok(Rewrite::ConstantScore)
        );
        assert_eq!(
            Rewrite::parse("scoring_boolean"),
            Ok(Rewrite::ScoringBoolean)
        );
        assert_eq!(Rewrite::parse("top_terms_7"), Ok(Rewrite::TopTerms(7)));
        assert_eq!(
            Rewrite::parse("top_terms_boost_3"),
            Ok(Rewrite::TopTermsBoost(3))
        );
        assert_eq!(
            Rewrite::parse("top_terms_blended_freqs_50"),
            Ok(Rewrite::TopTermsBlendedFreqs(50))
        );
        assert_eq!(
            Rewrite::parse("bogus"),
            Err("Failed to parse rewrite_method [bogus]".to_string())
        );
        assert_eq!(
            Rewrite::parse("top_terms_x5"),
            Err("Failed to parse rewrite_method [top_terms_x5]".to_string())
        );
        assert_eq!(
            Rewrite::parse("top_terms_5x"),
            Err("For input string: \"5x\"".to_string())
        );
    }

    #[test]
    fn boost_is_lucenes_similarity() {
        assert_eq!(fuzzy_boost(0, b"abc", 3), 1.0);
        // "setlement" (9) vs "settlement" (10): one edit over the shorter length.
        assert_eq!(fuzzy_boost(1, b"settlement", 9), 1.0 - 1.0 / 9.0);
        assert_eq!(fuzzy_boost(2, "caf\u{e9}".as_bytes(), 6), 0.5);
    }

    #[test]
    fn automaton_keeps_the_prefix_and_counts_edits() {
        let a = PrefixedLevenshtein {
            prefix: b"se".to_vec(),
            dfa: builder(1, true).build_dfa("tlement"),
        };
        let run = |s: &str| {
            let mut st = a.start();
            for b in s.bytes() {
                st = a.accept(&st, b);
            }
            a.is_match(&st)
        };
        assert!(run("settlement"));
        assert!(run("setlement"));
        assert!(run("seltement"));
        assert!(!run("xetlement"), "the prefix is literal");
        assert!(!run("settlements2"));
        assert_eq!(a.edits(b"settlement"), 1);
        assert_eq!(a.edits(b"setlement"), 0);
    }
}
