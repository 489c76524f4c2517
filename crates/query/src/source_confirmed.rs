//! Phrases on a `match_only_text` field, as ES's `SourceConfirmedTextQuery` answers them: the
//! field indexes no positions, so the documents holding every term of the phrase are
//! candidates, and each candidate is confirmed by analyzing its `_source` value with the
//! field's index analyzer and matching the phrase on those positions.
//!
//! The match follows Lucene's phrase queries: exact phrases need consecutive positions; a
//! sloppy phrase matches when the terms, each moved back by its place in the phrase, fit in a
//! span of at most `slop` positions (`SloppyPhraseMatcher`'s match length); a phrase prefix's
//! last term matches any token it starts (without `max_expansions`' bound on the expansions).
//! Each value of an array is matched on its own (ES separates them by the field's
//! `position_increment_gap` of 100, which only a slop of 100 or more could cross).

use lode_analysis::Analyzer;
use serde_json::Value;

pub(crate) struct PhraseCheck {
    pub analyzer: Analyzer,
    /// Each phrase term with its offset in the phrase (positions may skip, e.g. stop words).
    pub terms: Vec<(usize, String)>,
    pub slop: u32,
    /// `match_phrase_prefix`: the last term is a prefix.
    pub prefix_last: bool,
}

impl PhraseCheck {
    pub fn matches(&self, values: &[Value]) -> bool {
        values.iter().any(|v| match v {
            Value::String(s) => self.matches_text(s),
            Value::Null => false,
            other => self.matches_text(&other.to_string()),
        })
    }

    fn matches_text(&self, text: &str) -> bool {
        let tokens = self.analyzer.analyze(text);
        let last = self.terms.len().saturating_sub(1);
        // Per phrase term, the positions it matches, moved back by its offset.
        let mut shifted: Vec<Vec<i64>> = Vec::with_capacity(self.terms.len());
        for (i, (offset, term)) in self.terms.iter().enumerate() {
            let hit = |tok: &str| {
                if self.prefix_last && i == last {
                    tok.starts_with(term.as_str())
                } else {
                    tok == term
                }
            };
            let ps: Vec<i64> = tokens
                .iter()
                .filter(|t| hit(&t.token))
                .map(|t| t.position as i64 - *offset as i64)
                .collect();
            if ps.is_empty() {
                return false;
            }
            shifted.push(ps);
        }
        min_span(&shifted) <= i64::from(self.slop)
    }
}

/// The smallest span (max - min) of one value picked from each list.
fn min_span(lists: &[Vec<i64>]) -> i64 {
    let mut events: Vec<(i64, usize)> = lists
        .iter()
        .enumerate()
        .flat_map(|(i, ps)| ps.iter().map(move |p| (*p, i)))
        .collect();
    events.sort_unstable();
    let mut counts = vec![0usize; lists.len()];
    let mut covered = 0;
    let mut best = i64::MAX;
    let mut lo = 0;
    for hi in 0..events.len() {
        let (_, i) = events[hi];
        counts[i] += 1;
        if counts[i] == 1 {
            covered += 1;
        }
        while covered == lists.len() {
            best = best.min(events[hi].0 - events[lo].0);
            let (_, j) = events[lo];
            counts[j] -= 1;
            if counts[j] == 0 {
                covered -= 1;
            }
            lo += 1;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use lode_analysis::AnalysisRegistry;
    use serde_json::json;

    fn check(phrase: &[&str], slop: u32, prefix_last: bool) -> PhraseCheck {
        PhraseCheck {
            analyzer: AnalysisRegistry::new(None)
                .unwrap()
                .analyzer("standard")
                .unwrap(),
            terms: phrase
                .iter()
                .enumerate()
                .map(|(i, t)| (i, t.to_string()))
                .collect(),
            slop,
            prefix_last,
        }
    }

    #[test]
    fn exact_sloppy_and_prefix_phrases() {
        let text = [json!("The quick brown fox")];
        assert!(check(&["quick", "brown"], 0, false).matches(&text));
        assert!(!check(&["quick", "fox"], 0, false).matches(&text));
        assert!(check(&["quick", "fox"], 1, false).matches(&text));
        // reversed order costs two moves, as in Lucene
        assert!(!check(&["brown", "quick"], 1, false).matches(&text));
        assert!(check(&["brown", "quick"], 2, false).matches(&text));
        assert!(check(&["brown", "fo"], 0, true).matches(&text));
        assert!(!check(&["brown", "fo"], 0, false).matches(&text));
        // each value of an array on its own
        let two = [json!("quick one"), json!("brown two")];
        assert!(!check(&["quick", "brown"], 0, false).matches(&two));
    }
}
