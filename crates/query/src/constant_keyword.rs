//! Queries on a `constant_keyword` field, as ES's `ConstantFieldType` and
//! `ConstantKeywordFieldType` answer them: the field holds one value for the whole index, so a
//! query is decided once, against that value, and matches every document or none (scored by
//! its boost). A field without a value yet matches nothing.
//!
//! ES compares `term`, `terms`, `prefix` and `wildcard` with `Regex#simpleMatch`, where `*`
//! (and only `*`) is a wildcard even in a `term`'s value; `range`, `fuzzy` and `regexp` test
//! the value itself. `match` and the phrase queries read the whole input as one term
//! (the field's search analyzer is the keyword analyzer).

use crate::parse::{FuzzyQuery, MatchQuery, PatternQuery, PhraseQuery, Query, RangeQuery};
use crate::patterns::lucene_to_regex;
use lode_engine::mapping::{FieldDef, FieldType, Mapping};
use lode_engine::{EsError, EsResult};
use serde_json::Value;

/// What a query on a constant_keyword field matches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Decided {
    /// Every document, scored `boost`.
    All(f32),
    None,
}

/// The decision for `q` when it is a leaf query on a mapped `constant_keyword` field;
/// `None` for any other query.
pub(crate) fn decide(q: &Query, mapping: &Mapping) -> Option<EsResult<Decided>> {
    let (field, boost) = leaf_field(q)?;
    let def = mapping.field(field)?;
    if def.ty != FieldType::ConstantKeyword {
        return None;
    }
    let Some(value) = def.value.as_deref() else {
        return Some(Ok(Decided::None));
    };
    Some(matches(q, value).map(|m| {
        if m {
            Decided::All(boost)
        } else {
            Decided::None
        }
    }))
}

/// Whether an exact value (a `term`, or a `match` on the field, as `multi_match` and
/// `query_string` plan them per field) matches a constant_keyword field.
pub(crate) fn exact_matches(def: &FieldDef, v: &Value) -> bool {
    def.value
        .as_deref()
        .is_some_and(|value| simple_match(&scalar(v), value, false))
}

fn leaf_field(q: &Query) -> Option<(&str, f32)> {
    Some(match q {
        Query::Term(t) => (&t.field, t.boost),
        Query::Terms(t) if t.lookup.is_none() => (&t.field, t.boost),
        Query::Range(r) => (&r.field, r.boost),
        Query::Match(m) | Query::MatchBoolPrefix(m) => (&m.field, m.boost),
        Query::MatchPhrase(p) | Query::MatchPhrasePrefix(p) => (&p.field, p.boost),
        Query::Prefix(p) | Query::Wildcard(p) | Query::Regexp(p) => (&p.field, p.boost),
        Query::Fuzzy(f) => (&f.field, f.boost),
        Query::Exists { field, boost } => (field, *boost),
        _ => return None,
    })
}

fn matches(q: &Query, value: &str) -> EsResult<bool> {
    Ok(match q {
        Query::Term(t) => simple_match(&scalar(&t.value), value, t.case_insensitive),
        Query::Terms(t) => t
            .values
            .iter()
            .any(|v| simple_match(&scalar(v), value, false)),
        Query::Range(r) => in_range(r, value),
        Query::Match(m) => match_query(m, value, false),
        Query::MatchBoolPrefix(m) => match_query(m, value, true),
        Query::MatchPhrase(p) => phrase(p, value, false),
        Query::MatchPhrasePrefix(p) => phrase(p, value, true),
        Query::Prefix(p) => simple_match(&format!("{}*", p.value), value, p.case_insensitive),
        Query::Wildcard(PatternQuery {
            value: pattern,
            case_insensitive,
            ..
        }) => simple_match(pattern, value, *case_insensitive),
        Query::Regexp(p) => regexp(p, value)?,
        Query::Fuzzy(f) => fuzzy(f, value),
        Query::Exists { .. } => true,
        _ => false,
    })
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// ES's `Regex#simpleMatch`: `*` matches any run of characters, everything else itself
/// (both sides lowercased when case-insensitive).
pub(crate) fn simple_match(pattern: &str, value: &str, case_insensitive: bool) -> bool {
    if case_insensitive {
        return simple_match(&pattern.to_lowercase(), &value.to_lowercase(), false);
    }
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == value;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if value.len() < first.len() + last.len() || !value.starts_with(first) || !value.ends_with(last)
    {
        return false;
    }
    let mut rest = &value[first.len()..value.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

/// `ConstantKeywordFieldType#rangeQuery`: bounds compared with the value as UTF-8 bytes.
fn in_range(r: &RangeQuery, value: &str) -> bool {
    let lower_ok = r.from.as_ref().is_none_or(|lo| {
        let lo = scalar(lo);
        if r.include_lower {
            lo.as_str() <= value
        } else {
            lo.as_str() < value
        }
    });
    let upper_ok = r.to.as_ref().is_none_or(|hi| {
        let hi = scalar(hi);
        if r.include_upper {
            value <= hi.as_str()
        } else {
            value < hi.as_str()
        }
    });
    lower_ok && upper_ok
}

fn match_query(m: &MatchQuery, value: &str, prefix: bool) -> bool {
    let input = scalar(&m.query);
    if prefix {
        return simple_match(&format!("{input}*"), value, false);
    }
    match m.fuzziness {
        Some(f) if f.distance(&input) > 0 => within_edits(
            &input,
            value,
            f.distance(&input),
            m.prefix_length as usize,
            m.fuzzy_transpositions,
        ),
        _ => simple_match(&input, value, false),
    }
}

fn phrase(p: &PhraseQuery, value: &str, prefix: bool) -> bool {
    let input = scalar(&p.query);
    if prefix {
        simple_match(&format!("{input}*"), value, false)
    } else {
        simple_match(&input, value, false)
    }
}

fn regexp(p: &PatternQuery, value: &str) -> EsResult<bool> {
    let re = lucene_to_regex(&p.value, p.case_insensitive)
        .map_err(|e| EsError::bad_request("query_shard_exception", e))?;
    let re = regex::Regex::new(&format!("^(?:{re})$")).map_err(|e| {
        EsError::bad_request(
            "query_shard_exception",
            format!("invalid regular expression: {e}"),
        )
    })?;
    Ok(re.is_match(value))
}

fn fuzzy(f: &FuzzyQuery, value: &str) -> bool {
    let term = scalar(&f.value);
    let edits = f.fuzziness.distance(&term);
    within_edits(
        &term,
        value,
        edits,
        f.prefix_length as usize,
        f.transpositions,
    )
}

/// Lucene's `LevenshteinAutomata` with a fixed prefix: `value` starts with the first
/// `prefix_len` code points of `term` and the rests are within `edits` (adjacent
/// transpositions counting one when allowed).
fn within_edits(
    term: &str,
    value: &str,
    edits: u8,
    prefix_len: usize,
    transpositions: bool,
) -> bool {
    let t: Vec<char> = term.chars().collect();
    let v: Vec<char> = value.chars().collect();
    let p = prefix_len.min(t.len());
    if v.len() < p || t[..p] != v[..p] {
        return false;
    }
    distance(&t[p..], &v[p..], transpositions) <= edits as usize
}

fn distance(a: &[char], b: &[char], transpositions: bool) -> usize {
    let (n, m) = (a.len(), b.len());
    let mut d = vec![vec![0usize; m + 1]; n + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    d[0] = (0..=m).collect();
    for i in 1..=n {
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if transpositions && i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[n][m]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_match_has_only_the_star() {
        assert!(simple_match("*", "logs", false));
        assert!(simple_match("lo*", "logs", false));
        assert!(simple_match("*g*s", "logs", false));
        assert!(simple_match("l*o*g*s", "logs", false));
        assert!(!simple_match("lo?s", "logs", false));
        assert!(!simple_match("logs*x", "logs", false));
        assert!(simple_match("LOGS", "logs", true));
        assert!(!simple_match("LOGS", "logs", false));
        assert!(simple_match("lo?s", "lo?s", false));
    }

    #[test]
    fn edits_count_as_lucene_does() {
        assert!(within_edits("lgos", "logs", 1, 0, true));
        assert!(!within_edits("lgos", "logs", 1, 0, false));
        assert!(within_edits("lgos", "logs", 2, 0, false));
        assert!(!within_edits("xogs", "logs", 2, 1, true));
        assert!(within_edits("log", "logs", 1, 3, true));
    }
}
