//! Multi-term queries (`wildcard`, `regexp`, `fuzzy`, case-insensitive `term` and `prefix`)
//! on a keyword field searched through its doc values alone (`index: false`): ES's
//! `StringScriptFieldWildcardQuery` and kin over `SortedSetDocValuesStringFieldScript`,
//! which test every value of every document. Here each distinct value of a segment (the
//! column's dictionary) is tested once, then the documents holding a matching ordinal are
//! gathered in one pass over the column.

use crate::points::{const_scorer, Gathered};
use std::fmt;
use std::sync::Arc;
use tantivy::query::{EmptyScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, Score, SegmentReader, TantivyError};
use tantivy_fst::{Automaton, Regex};

/// Which values of the column match.
#[derive(Clone)]
pub enum ValueMatcher {
    /// The whole value matches the regex (tantivy's `RegexQuery` dialect).
    Regex(Arc<Regex>),
    /// Within `distance` edits of `term` (in characters), sharing its first `prefix` characters:
    /// Lucene's `FuzzyQuery` automaton (`transpositions`: a swap of adjacent characters is one
    /// edit, Damerau's restricted distance).
    Fuzzy {
        term: Vec<char>,
        distance: u8,
        prefix: usize,
        transpositions: bool,
    },
}

impl ValueMatcher {
    /// `pattern` in the `regex-syntax` dialect tantivy's `RegexQuery` takes.
    pub fn regex(pattern: &str) -> tantivy::Result<ValueMatcher> {
        let re = Regex::new(pattern)
            .map_err(|e| TantivyError::InvalidArgument(format!("RegexQueryError: {e}")))?;
        Ok(ValueMatcher::Regex(Arc::new(re)))
    }

    fn matches(&self, value: &[u8]) -> bool {
        match self {
            ValueMatcher::Regex(re) => {
                let mut state = re.start();
                for b in value {
                    state = re.accept(&state, *b);
                    if !re.can_match(&state) {
                        return false;
                    }
                }
                re.is_match(&state)
            }
            ValueMatcher::Fuzzy {
                term,
                distance,
                prefix,
                transpositions,
            } => {
                let Ok(value) = std::str::from_utf8(value) else {
                    return false;
                };
                let value: Vec<char> = value.chars().collect();
                let shared = (*prefix).min(term.len());
                value.len() >= shared
                    && value[..shared] == term[..shared]
                    && within_edits(
                        &term[shared..],
                        &value[shared..],
                        usize::from(*distance),
                        *transpositions,
                    )
            }
        }
    }
}

/// Whether `a` and `b` are at most `max` edits apart (insertions, deletions, substitutions,
/// and with `transpositions` swaps of two adjacent characters: optimal string alignment, the
/// distance Lucene's Levenshtein automata accept).
fn within_edits(a: &[char], b: &[char], max: usize, transpositions: bool) -> bool {
    if a.len().abs_diff(b.len()) > max {
        return false;
    }
    let width = b.len() + 1;
    let mut before: Vec<usize> = vec![0; width];
    let mut prev: Vec<usize> = (0..width).collect();
    let mut row: Vec<usize> = vec![0; width];
    for i in 1..=a.len() {
        row[0] = i;
        for j in 1..width {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(row[j - 1] + 1).min(prev[j - 1] + cost);
            if transpositions && i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            row[j] = d;
        }
        if row.iter().min().is_some_and(|m| *m > max) {
            return false;
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut row);
    }
    prev[b.len()] <= max
}

/// Documents with a value in the keyword column `column` that `matcher` accepts; scores
/// constant.
#[derive(Clone)]
pub struct ColumnTermsQuery {
    column: String,
    matcher: ValueMatcher,
}

impl fmt::Debug for ColumnTermsQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ColumnTermsQuery")
            .field("column", &self.column)
            .finish_non_exhaustive()
    }
}

impl ColumnTermsQuery {
    pub fn new(column: &str, matcher: ValueMatcher) -> ColumnTermsQuery {
        ColumnTermsQuery {
            column: column.to_string(),
            matcher,
        }
    }

    fn matching_docs(&self, reader: &SegmentReader) -> tantivy::Result<Vec<DocId>> {
        let Some(column) = reader.fast_fields().str(&self.column)? else {
            return Ok(Vec::new());
        };
        let dictionary = column.dictionary();
        let mut wanted = vec![false; dictionary.num_terms()];
        let mut any = false;
        let mut stream = dictionary.stream()?;
        while stream.advance() {
            if self.matcher.matches(stream.key()) {
                wanted[stream.term_ord() as usize] = true;
                any = true;
            }
        }
        if !any {
            return Ok(Vec::new());
        }
        Ok((0..reader.max_doc())
            .filter(|doc| column.term_ords(*doc).any(|ord| wanted[ord as usize]))
            .collect())
    }
}

impl Query for ColumnTermsQuery {
    fn weight(&self, _scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for ColumnTermsQuery {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let docs = self.matching_docs(reader)?;
        Ok(if docs.is_empty() {
            Box::new(EmptyScorer)
        } else {
            const_scorer(Gathered::Sorted(docs.into()), boost)
        })
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        crate::explain_by_seek(self, reader, doc, "ColumnTermsQuery")
    }
}

/// Documents with `value` in the boolean column `column` (a boolean searched through its doc
/// values alone: tantivy's column ranges take no booleans).
#[derive(Clone, Debug)]
pub struct ColumnBoolQuery {
    column: String,
    value: bool,
}

impl ColumnBoolQuery {
    pub fn new(column: &str, value: bool) -> ColumnBoolQuery {
        ColumnBoolQuery {
            column: column.to_string(),
            value,
        }
    }
}

impl Query for ColumnBoolQuery {
    fn weight(&self, _scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for ColumnBoolQuery {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let Some(column) = reader.fast_fields().column_opt::<bool>(&self.column)? else {
            return Ok(Box::new(EmptyScorer));
        };
        let docs: Vec<DocId> = (0..reader.max_doc())
            .filter(|doc| column.values_for_doc(*doc).any(|v| v == self.value))
            .collect();
        Ok(if docs.is_empty() {
            Box::new(EmptyScorer)
        } else {
            const_scorer(Gathered::Sorted(docs.into()), boost)
        })
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        crate::explain_by_seek(self, reader, doc, "ColumnBoolQuery")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patterns::wildcard_to_regex;
    use tantivy::collector::DocSetCollector;
    use tantivy::schema::{Schema, FAST, STORED};
    use tantivy::{doc, Index, IndexWriter};

    /// A naive edit distance over every alignment, for the oracle.
    fn distance(a: &[char], b: &[char], transpositions: bool) -> usize {
        if a.is_empty() || b.is_empty() {
            return a.len().max(b.len());
        }
        let sub = distance(&a[1..], &b[1..], transpositions) + usize::from(a[0] != b[0]);
        let del = distance(&a[1..], b, transpositions) + 1;
        let ins = distance(a, &b[1..], transpositions) + 1;
        let mut d = sub.min(del).min(ins);
        if transpositions && a.len() > 1 && b.len() > 1 && a[0] == b[1] && a[1] == b[0] {
            d = d.min(distance(&a[2..], &b[2..], transpositions) + 1);
        }
        d
    }

    #[test]
    fn edit_distance_matches_the_naive_recursion() {
        let words = [
            "", "a", "ab", "ba", "abc", "acb", "bca", "abcd", "xbcd", "héllo", "hello",
        ];
        for a in words {
            for b in words {
                let (ca, cb): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
                for t in [false, true] {
                    let want = distance(&ca, &cb, t);
                    for max in 0..3 {
                        assert_eq!(
                            within_edits(&ca, &cb, max, t),
                            want <= max,
                            "{a} {b} {t} {max}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn matches_documents_whose_column_holds_a_matching_value() {
        let mut sb = Schema::builder();
        // A column without terms, as a keyword with `index: false`.
        let kw = sb.add_text_field("kw", FAST | STORED);
        let index = Index::create_in_ram(sb.build());
        let mut w: IndexWriter = index.writer_with_num_threads(1, 20_000_000).unwrap();
        let values: Vec<Vec<&str>> = vec![
            vec!["apple"],
            vec!["apply", "zebra"],
            vec![],
            vec!["maple"],
            vec!["Apple"],
        ];
        for vs in &values {
            let mut d = doc!();
            for v in vs {
                d.add_text(kw, v);
            }
            w.add_document(d).unwrap();
        }
        w.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let run = |m: ValueMatcher| -> Vec<u32> {
            let mut got: Vec<u32> = crate::FieldStatistics::new(&searcher)
                .search(&searcher, &ColumnTermsQuery::new("kw", m), &DocSetCollector)
                .unwrap()
                .into_iter()
                .map(|a| a.doc_id)
                .collect();
            got.sort();
            got
        };
        let oracle = |f: &dyn Fn(&str) -> bool| -> Vec<u32> {
            (0..values.len() as u32)
                .filter(|i| values[*i as usize].iter().any(|v| f(v)))
                .collect()
        };
        let re = ValueMatcher::regex(&wildcard_to_regex("*ppl?", false)).unwrap();
        assert_eq!(run(re), oracle(&|v| v.len() == 5 && &v[1..4] == "ppl"));
        let ci = ValueMatcher::regex(&wildcard_to_regex("app*", true)).unwrap();
        assert_eq!(run(ci), oracle(&|v| v.to_lowercase().starts_with("app")));
        let fuzzy = ValueMatcher::Fuzzy {
            term: "aple".chars().collect(),
            distance: 1,
            prefix: 1,
            transpositions: true,
        };
        let term: Vec<char> = "aple".chars().collect();
        assert_eq!(
            run(fuzzy),
            oracle(&|v| {
                let c: Vec<char> = v.chars().collect();
                c.first() == Some(&'a') && distance(&term, &c, true) <= 1
            })
        );
    }
}
