//! `wildcard`, `regexp` and case-insensitive `term`/`prefix` on a keyword field with doc
//! values: the pattern's automaton runs over the column's term dictionary instead of the
//! inverted index's FST.
//!
//! A pattern without a literal prefix (`*123`) must test every term of a segment, as Lucene's
//! `AutomatonQuery` does. Streaming tantivy's FST through an automaton decodes nodes and keeps
//! a state stack per byte (~60 ns a term: 65 ms for the 1.12M `acctId`s of the reference
//! index); the column's dictionary is a block-encoded sorted table whose keys are
//! prefix-delta coded, so the automaton only steps the bytes that differ from the previous key
//! (as Lucene's block tree feeds its `IntersectTermsEnum`), and blocks no key of which can
//! match are skipped. A pattern whose first byte may be almost anything (`*123`) can skip no
//! block: its automaton steps each key's new bytes straight off the dictionary's deltas
//! (`Dictionary::for_each_delta`, a vendored tantivy-sstable patch), a dead state ending a key
//! early. The column and the inverted index hold the same terms (one tokenizer
//! feeds both), so a matching key's ordinal in the column is its ordinal in the term
//! dictionary, whose postings are then read directly. A segment where the two do not count the
//! same terms streams the FST as before.
//!
//! A pattern that ends in fewer ways than it starts (`*596`) is, from a segment's second such
//! query on, a walk of the segment's reversed terms from the reversed pattern's literal start
//! ([`crate::reversed_terms`]): a few thousand keys instead of all of them. One open at both
//! ends that must contain a literal (`*596*`) searches the segment's terms laid end to end for
//! it ([`crate::term_arena`]) and runs the automaton only on the terms it falls inside.

use crate::points::const_scorer;
use crate::term_set::gather_postings;
use std::sync::Arc;
use tantivy::postings::TermInfo;
use tantivy::query::{EmptyScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::Field;
use tantivy::{DocId, Score, SegmentReader, TantivyError};
use tantivy_fst::{Automaton, IntoStreamer, Regex, Streamer};

/// Documents with a term of `field` that `regex` matches entirely; scores constant.
#[derive(Clone, Debug)]
pub struct KeywordPatternQuery {
    field: Field,
    /// The field's column name (its path).
    column: String,
    regex: Arc<Regex>,
    /// For a pattern that leads anywhere, its automaton as one table.
    flat: Option<Arc<FlatDfa>>,
    /// For a pattern that ends in fewer ways than it starts (`*596`, `a*596`
    /// case-insensitively), the automaton of its reverse, to walk the segment's reversed
    /// terms ([`crate::reversed_terms`]).
    reversed: Option<Arc<Regex>>,
    /// For a pattern open at both ends, a literal every match contains (`596` in `*596*`),
    /// to search the segment's terms laid end to end ([`crate::term_arena`]).
    inner_literal: Option<Vec<u8>>,
}

/// An automaton as one transition table, `next[state << 8 | byte]`, with state 0 dead (it
/// steps to itself): a step over a dictionary key's byte is one load.
#[derive(Debug)]
struct FlatDfa {
    start: u32,
    next: Vec<u32>,
    accepting: Vec<bool>,
}

impl FlatDfa {
    /// `regex`'s states reachable from its start, numbered as they are found.
    fn new(regex: &Regex) -> FlatDfa {
        let mut next = vec![0u32; 256];
        let mut accepting = vec![false];
        let mut ids = std::collections::HashMap::new();
        let mut found: Vec<usize> = Vec::new();
        let mut id = |s: Option<usize>, found: &mut Vec<usize>, accepting: &mut Vec<bool>| match s {
            None => 0,
            Some(s) => *ids.entry(s).or_insert_with(|| {
                found.push(s);
                accepting.push(regex.is_match(&Some(s)));
                found.len() as u32
            }),
        };
        let start = id(regex.start(), &mut found, &mut accepting);
        let mut i = 0;
        while i < found.len() {
            let from = Some(found[i]);
            for b in 0..=u8::MAX {
                let to = id(regex.accept(&from, b), &mut found, &mut accepting);
                next.push(to);
            }
            i += 1;
        }
        FlatDfa {
            start,
            next,
            accepting,
        }
    }
}

impl FlatDfa {
    fn accepts(&self, key: &[u8]) -> bool {
        let mut state = self.start;
        for &b in key {
            state = self.next[(state as usize) << 8 | b as usize];
            if state == 0 {
                return false;
            }
        }
        self.accepting[state as usize]
    }
}

impl KeywordPatternQuery {
    /// `pattern` in the `regex-syntax` dialect tantivy's `RegexQuery` takes.
    /// Errors as `RegexQuery::from_pattern` does.
    pub fn new(field: Field, column: &str, pattern: &str) -> tantivy::Result<Self> {
        let regex = Regex::new(pattern)
            .map_err(|e| TantivyError::InvalidArgument(format!("RegexQueryError: {e}")))?;
        let flat = leads_anywhere(&regex).then(|| Arc::new(FlatDfa::new(&regex)));
        let forward_width = openings(&regex);
        let reversed = crate::reversed_terms::reversed_pattern(pattern)
            .and_then(|p| Regex::new(&p).ok())
            .filter(|r| openings(r) < forward_width)
            .map(Arc::new);
        let inner_literal = flat
            .as_ref()
            .filter(|_| reversed.is_none())
            .and_then(|_| crate::term_arena::required_literal(pattern));
        Ok(KeywordPatternQuery {
            field,
            column: column.to_string(),
            regex: Arc::new(regex),
            flat,
            reversed,
            inner_literal,
        })
    }

    /// The term infos of the matching terms, from the column's dictionary when it lists the
    /// same terms as the term dictionary.
    fn matching_terms(&self, reader: &SegmentReader) -> tantivy::Result<Vec<TermInfo>> {
        let index = reader.inverted_index(self.field)?;
        let terms = index.terms();
        let fast = reader.schema().get_field_entry(self.field).is_fast();
        if let Some(column) = fast
            .then(|| reader.fast_fields().str(&self.column))
            .transpose()?
            .flatten()
        {
            let dictionary = column.dictionary();
            if dictionary.num_terms() == terms.num_terms() {
                let mut infos = Vec::new();
                let reversed = match &self.reversed {
                    Some(pattern) => crate::reversed_terms::reversed_terms(
                        reader.segment_id(),
                        &self.column,
                        &column,
                    )?
                    .map(|terms| (pattern, terms)),
                    None => None,
                };
                let arena = match (&self.inner_literal, &self.flat) {
                    (Some(literal), Some(dfa)) => {
                        crate::term_arena::term_arena(reader.segment_id(), &self.column, &column)?
                            .map(|arena| (literal, dfa, arena))
                    }
                    _ => None,
                };
                if let Some((literal, dfa, arena)) = arena {
                    let ords = arena.matching(literal, |key| dfa.accepts(key));
                    infos.extend(ords.into_iter().map(|ord| terms.term_info_from_ord(ord)));
                } else if let Some((pattern, terms_back)) = reversed {
                    let mut ords = Vec::new();
                    let mut stream = terms_back.search(&**pattern).into_stream();
                    while let Some((_, ord)) = stream.next() {
                        ords.push(ord);
                    }
                    ords.sort_unstable();
                    infos.extend(ords.into_iter().map(|ord| terms.term_info_from_ord(ord)));
                } else if let Some(dfa) = &self.flat {
                    // `states[i]`: the automaton after the current key's first `i` bytes.
                    let mut states = vec![dfa.start];
                    dictionary.for_each_delta(|ord, keep, suffix| {
                        states.truncate(keep + 1);
                        let mut state = states[keep];
                        for &b in suffix {
                            state = dfa.next[(state as usize) << 8 | b as usize];
                            states.push(state);
                        }
                        if dfa.accepting[state as usize] {
                            infos.push(terms.term_info_from_ord(ord));
                        }
                    })?;
                } else {
                    let mut stream = dictionary.search(&*self.regex).into_stream()?;
                    while stream.advance() {
                        infos.push(terms.term_info_from_ord(stream.term_ord()));
                    }
                }
                return Ok(infos);
            }
        }
        let mut stream = terms.search(&*self.regex).into_stream()?;
        let mut infos = Vec::new();
        while stream.advance() {
            infos.push(stream.value().clone());
        }
        Ok(infos)
    }
}

impl Query for KeywordPatternQuery {
    fn weight(&self, _scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for KeywordPatternQuery {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let infos = self.matching_terms(reader)?;
        let index = reader.inverted_index(self.field)?;
        Ok(match gather_postings(&index, &infos, reader.max_doc())? {
            Some(gathered) => const_scorer(gathered, boost),
            None => Box::new(EmptyScorer),
        })
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        crate::explain_by_seek(self, reader, doc, "AutomatonScorer")
    }
}

/// How many byte strings of up to three bytes start a match of the pattern: few when it
/// starts with a literal (1 + 1 + 1 for `abc.*`), many when it leads anywhere. Compared with
/// its reverse's, it says from which end the pattern narrows the terms sooner.
fn openings(regex: &Regex) -> u64 {
    const DEPTH: usize = 3;
    let mut level: std::collections::HashMap<usize, u64> =
        regex.start().into_iter().map(|s| (s, 1)).collect();
    let mut total = 0;
    for _ in 0..DEPTH {
        let mut next = std::collections::HashMap::new();
        for (&state, &paths) in &level {
            for b in 0..=u8::MAX {
                if let Some(to) = regex.accept(&Some(state), b) {
                    *next.entry(to).or_insert(0) += paths;
                }
            }
        }
        total += next.values().sum::<u64>();
        level = next;
    }
    total
}

/// Whether the pattern's first byte may be any of many (`*123`, `?12`, `.*x`): few blocks
/// of the dictionary can be ruled out from their keys' range, so about every key is
/// stepped, and a scan of the keys' deltas does that with the least work per key. A
/// pattern with a literal start (`A00*`, or `a00*` case-insensitively: two first bytes)
/// streams the blocks its automaton can reach.
fn leads_anywhere(regex: &Regex) -> bool {
    const FEW_FIRST_BYTES: usize = 8;
    let start = regex.start();
    (0..=u8::MAX)
        .filter(|&b| regex.accept(&start, b).is_some())
        .nth(FEW_FIRST_BYTES)
        .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patterns::wildcard_to_regex;
    use std::collections::BTreeSet;
    use tantivy::collector::DocSetCollector;
    use tantivy::schema::{Schema, FAST, STORED, STRING};
    use tantivy::{doc, Index, IndexWriter, Term};

    fn value(i: u32) -> String {
        format!("A{:08}", i * 7919 % 100_003)
    }

    /// Documents `i` in 0..3000 hold `value(i)` (and `x{i % 5}` on odd `i`) in both fields,
    /// over three segments, with every document holding `value(i)` for `i % 11 == 0` deleted.
    fn index() -> (Index, Field, Field) {
        let mut sb = Schema::builder();
        let kw = sb.add_text_field("kw", STRING | FAST | STORED);
        let plain = sb.add_text_field("plain", STRING);
        let index = Index::create_in_ram(sb.build());
        let mut w: IndexWriter = index.writer_with_num_threads(1, 20_000_000).unwrap();
        for i in 0..3000u32 {
            let mut d = doc!(kw => value(i), plain => value(i));
            if i % 2 == 1 {
                d.add_text(kw, format!("x{}", i % 5));
                d.add_text(plain, format!("x{}", i % 5));
            }
            w.add_document(d).unwrap();
            if i % 1000 == 999 {
                w.commit().unwrap();
            }
        }
        for i in (0..3000u32).step_by(11) {
            w.delete_term(Term::from_field_text(kw, &value(i)));
        }
        w.commit().unwrap();
        (index, kw, plain)
    }

    /// The live document numbers (insertion order) whose values `pattern` matches, by the
    /// `regex` crate over the values as written.
    fn oracle(pattern: &str) -> BTreeSet<u32> {
        let re = regex::Regex::new(&format!("^(?:{pattern})$")).unwrap();
        (0..3000u32)
            .filter(|i| i % 11 != 0)
            .filter(|&i| {
                re.is_match(&value(i)) || (i % 2 == 1 && re.is_match(&format!("x{}", i % 5)))
            })
            .collect()
    }

    #[test]
    fn matches_what_the_pattern_matches_on_column_and_fallback_paths() {
        let (index, kw, plain) = index();
        let searcher = index.reader().unwrap().searcher();
        assert!(searcher.segment_readers().len() >= 3);
        // `kw` takes the column's dictionary (same terms), `plain` the FST.
        for seg in searcher.segment_readers() {
            let column = seg.fast_fields().str("kw").unwrap().unwrap();
            let terms = seg.inverted_index(kw).unwrap().terms().num_terms();
            assert_eq!(column.dictionary().num_terms(), terms);
        }
        // Each document's position in insertion order, from its value.
        let number = |addr: tantivy::DocAddress| -> u32 {
            let d: tantivy::TantivyDocument = searcher.doc(addr).unwrap();
            use tantivy::schema::Value;
            let v = d
                .get_all(kw)
                .filter_map(|v| v.as_str())
                .find(|s| s.starts_with('A'))
                .unwrap()
                .to_string();
            (0..3000u32).find(|&i| value(i) == v).unwrap()
        };
        let reversed = |w: &str| {
            KeywordPatternQuery::new(kw, "kw", &wildcard_to_regex(w, false))
                .unwrap()
                .reversed
                .is_some()
        };
        assert!(reversed("*123") && reversed("*1?3") && !reversed("*x*") && !reversed("A0*"));
        assert!(reversed("A*123") && !reversed("A00*3") && !reversed("*") && !reversed("x3"));
        let inner = |w: &str| {
            KeywordPatternQuery::new(kw, "kw", &wildcard_to_regex(w, false))
                .unwrap()
                .inner_literal
        };
        assert_eq!(inner("*12?3*"), Some(b"12".to_vec()));
        assert_eq!(
            (inner("*1*"), inner("*123"), inner("A*12*")),
            (None, None, None)
        );
        for wildcard in [
            "*123", "*1?3", "A000*9", "*", "x3", "*x*", "A0001*", "*zz", "?3", "*3", "*[0-2]",
            "*00*", "*12?3*", "*0*9*", "?0001*",
        ] {
            let pattern = wildcard_to_regex(wildcard, false);
            let want = oracle(&pattern);
            // Twice on the column: a segment's second pattern query walks its reversed terms.
            for (field, name) in [(kw, "kw"), (kw, "kw"), (plain, "plain")] {
                let q = KeywordPatternQuery::new(field, name, &pattern).unwrap();
                let got: BTreeSet<u32> = crate::FieldStatistics::new(&searcher)
                    .search(&searcher, &q, &DocSetCollector)
                    .unwrap()
                    .into_iter()
                    .filter(|a| !searcher.segment_reader(a.segment_ord).is_deleted(a.doc_id))
                    .map(number)
                    .collect();
                assert_eq!(got, want, "{wildcard} on {name}");
            }
        }
    }

    #[test]
    fn case_insensitive_patterns() {
        let (index, kw, _) = index();
        let searcher = index.reader().unwrap().searcher();
        let pattern = wildcard_to_regex("a*77", true);
        let q = KeywordPatternQuery::new(kw, "kw", &pattern).unwrap();
        let got = crate::FieldStatistics::new(&searcher)
            .search(&searcher, &q, &tantivy::collector::Count)
            .unwrap();
        assert_eq!(got, oracle(&wildcard_to_regex("A*77", false)).len());
    }
}
