//! A keyword `terms` aggregation's `include` / `exclude` (a regular expression or a list of
//! terms) applied to counts taken by term ordinal ([`crate::term_counts`]).
//!
//! Elasticsearch filters a keyword's buckets by global ordinal: the accepted ordinals are the
//! terms the filter's automaton matches in the terms dictionary, and only those are counted
//! (`IncludeExclude.OrdinalsFilter`). Here each segment's counts are taken for every ordinal,
//! then those of rejected ordinals dropped, which gives the same buckets (a bucket's count
//! does not depend on other buckets) before the shard's cut. The regular expression is
//! compiled once per request (a DFA: tantivy's collector built one per segment) and matched
//! as tantivy's collector matches it, over the segment's dictionary, so that the two paths
//! agree on every term.

use crate::term_counts::SegmentCounts;
use serde_json::Value;
use std::collections::HashSet;
use tantivy::columnar::StrColumn;
use tantivy_fst::{Automaton, Regex};

/// One side of the filter.
enum Matcher {
    Regex(Regex),
    Values(HashSet<Vec<u8>>),
}

impl Matcher {
    /// From the form the plan hands tantivy: a regex string or an array of terms. `None` for
    /// a regex the automaton cannot take (tantivy's collector then reports it).
    fn of(v: &Value) -> Option<Matcher> {
        match v {
            Value::String(r) => Regex::new(r).ok().map(Matcher::Regex),
            Value::Array(vals) => Some(Matcher::Values(
                vals.iter()
                    .filter_map(|v| v.as_str().map(|s| s.as_bytes().to_vec()))
                    .collect(),
            )),
            _ => None,
        }
    }

    fn matches(&self, term: &[u8]) -> bool {
        match self {
            Matcher::Values(set) => set.contains(term),
            Matcher::Regex(re) => {
                let mut state = re.start();
                for &b in term {
                    if !re.can_match(&state) {
                        return false;
                    }
                    state = re.accept(&state, b);
                }
                re.is_match(&state)
            }
        }
    }
}

/// A node's keyword `include` and `exclude`.
pub(crate) struct TermFilter {
    include: Option<Matcher>,
    exclude: Option<Matcher>,
}

impl TermFilter {
    /// The filter of a node's `include` / `exclude` as the plan gives them to tantivy:
    /// `Some(None)` without either, `None` when one cannot be matched here.
    pub(crate) fn of(
        include: Option<&Value>,
        exclude: Option<&Value>,
    ) -> Option<Option<TermFilter>> {
        if include.is_none() && exclude.is_none() {
            return Some(None);
        }
        let include = match include {
            Some(v) => Some(Matcher::of(v)?),
            None => None,
        };
        let exclude = match exclude {
            Some(v) => Some(Matcher::of(v)?),
            None => None,
        };
        Some(Some(TermFilter { include, exclude }))
    }

    pub(crate) fn accepts(&self, term: &[u8]) -> bool {
        self.include.as_ref().is_none_or(|m| m.matches(term))
            && !self.exclude.as_ref().is_some_and(|m| m.matches(term))
    }

    /// Per ordinal of `column`, whether its term passes.
    fn accepted_ords(&self, column: &StrColumn) -> std::io::Result<Vec<bool>> {
        let mut accepted = Vec::with_capacity(column.num_terms());
        let mut stream = column.dictionary().stream()?;
        while stream.advance() {
            accepted.push(self.accepts(stream.key()));
        }
        Ok(accepted)
    }

    /// `counts` (of `column`'s segment) without the terms the filter rejects.
    pub(crate) fn apply(
        &self,
        column: Option<&StrColumn>,
        counts: SegmentCounts,
    ) -> std::io::Result<SegmentCounts> {
        Ok(match counts {
            SegmentCounts::Terms(mut terms) => {
                terms.retain(|(t, _)| self.accepts(t.as_bytes()));
                SegmentCounts::Terms(terms)
            }
            SegmentCounts::Ords(mut per_ord) => {
                let Some(column) = column else {
                    return Ok(SegmentCounts::Ords(Vec::new()));
                };
                let accepted = self.accepted_ords(column)?;
                for (n, ok) in per_ord.iter_mut().zip(accepted) {
                    if !ok {
                        *n = 0;
                    }
                }
                SegmentCounts::Ords(per_ord)
            }
            SegmentCounts::SparseOrds(mut pairs) => {
                let Some(column) = column else {
                    return Ok(SegmentCounts::SparseOrds(Vec::new()));
                };
                // A few matches in a large dictionary: only their terms are read.
                let ords: Vec<u64> = pairs.iter().map(|&(o, _)| u64::from(o)).collect();
                let mut accepted = Vec::with_capacity(ords.len());
                column
                    .dictionary()
                    .sorted_ords_to_term_cb(&ords, |t| accepted.push(self.accepts(t)))?;
                accepted.resize(pairs.len(), false);
                let mut keep = accepted.into_iter();
                pairs.retain(|_| keep.next().unwrap_or(false));
                SegmentCounts::SparseOrds(pairs)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn regexes_match_whole_terms_and_lists_match_exactly() {
        let f = TermFilter::of(Some(&json!("退款.*")), Some(&json!(["退款冲正"])))
            .unwrap()
            .unwrap();
        for (term, want) in [
            ("退款", true),
            ("退款冲正", false),
            ("退款x", true),
            ("x退款", false),
            ("", false),
        ] {
            assert_eq!(f.accepts(term.as_bytes()), want, "{term}");
        }
        let f = TermFilter::of(None, Some(&json!(".*费|a[0-9]+")))
            .unwrap()
            .unwrap();
        for (term, want) in [
            ("服务费", false),
            ("a12", false),
            ("a12b", true),
            ("费用", true),
        ] {
            assert_eq!(f.accepts(term.as_bytes()), want, "{term}");
        }
        assert!(TermFilter::of(None, None).unwrap().is_none());
    }
}
