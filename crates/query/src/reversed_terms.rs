//! A keyword column's terms written backwards, per segment, so that a pattern with a literal
//! end (`*596`, `*.log`, `.*[0-9]x`) is a prefix walk instead of a scan of every term.
//!
//! A leading wildcard must test every term of the forward dictionary (Lucene's
//! `AutomatonQuery` does too). Reversed, its literal end becomes a literal start: the reversed
//! pattern's automaton walks an FST of the reversed terms from that prefix only, as Solr's
//! `ReversedWildcardFilter` and ES's `wildcard` field avoid the scan. Keys are reversed by
//! characters, so they stay UTF-8 and the reversed pattern is an ordinary regex over them.
//!
//! A segment's terms never change, so the FST is built from its column dictionary once and
//! kept ([`crate::derived_terms`]).

use regex_syntax::hir::{Class, Hir, HirKind, Repetition};
use std::sync::Arc;
use tantivy::columnar::StrColumn;
use tantivy::index::SegmentId;
use tantivy_fst::Map;

/// The pattern (in the `regex-syntax` dialect tantivy's `RegexQuery` takes) that matches the
/// character-reversed strings of what `pattern` matches. `None` for look-around assertions
/// (never produced from ES patterns, which match whole terms) and non-UTF-8 byte classes.
pub(crate) fn reversed_pattern(pattern: &str) -> Option<String> {
    let hir = regex_syntax::Parser::new().parse(pattern).ok()?;
    Some(reverse(&hir)?.to_string())
}

fn reverse(hir: &Hir) -> Option<Hir> {
    Some(match hir.kind() {
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(literal) => {
            let text = std::str::from_utf8(&literal.0).ok()?;
            Hir::literal(text.chars().rev().collect::<String>().into_bytes())
        }
        HirKind::Class(Class::Unicode(_)) => hir.clone(),
        // A byte class is one character only while its bytes are ASCII.
        HirKind::Class(Class::Bytes(bytes)) => {
            if bytes.ranges().iter().any(|r| r.end() > 0x7F) {
                return None;
            }
            hir.clone()
        }
        HirKind::Look(_) => return None,
        HirKind::Repetition(rep) => Hir::repetition(Repetition {
            sub: Box::new(reverse(&rep.sub)?),
            ..rep.clone()
        }),
        HirKind::Capture(capture) => reverse(&capture.sub)?,
        HirKind::Concat(subs) => {
            Hir::concat(subs.iter().rev().map(reverse).collect::<Option<_>>()?)
        }
        HirKind::Alternation(subs) => {
            Hir::alternation(subs.iter().map(reverse).collect::<Option<_>>()?)
        }
    })
}

/// A segment's terms of one column, reversed, each to its ordinal in the column.
pub(crate) type ReversedTerms = Map<Vec<u8>>;

/// The reversed terms of `column` in segment `segment`: `None` the first time it is asked
/// for (the caller scans), built on the second ([`crate::derived_terms`]).
pub(crate) fn reversed_terms(
    segment: SegmentId,
    field: &str,
    column: &StrColumn,
) -> std::io::Result<Option<Arc<ReversedTerms>>> {
    crate::derived_terms::derived(
        segment,
        field,
        |terms: &ReversedTerms| terms.as_fst().size(),
        || build(column),
    )
}

/// The column's terms reversed by characters, in order, each to its ordinal.
fn build(column: &StrColumn) -> std::io::Result<ReversedTerms> {
    let dictionary = column.dictionary();
    let mut bytes: Vec<u8> = Vec::new();
    let mut spans: Vec<(u32, u32)> = Vec::with_capacity(dictionary.num_terms());
    let mut key: Vec<u8> = Vec::new();
    let mut invalid = false;
    dictionary.for_each_delta(|_ord, keep, suffix| {
        key.truncate(keep);
        key.extend_from_slice(suffix);
        let start = bytes.len();
        if key.is_ascii() {
            bytes.extend(key.iter().rev());
        } else if let Ok(text) = std::str::from_utf8(&key) {
            for c in text.chars().rev() {
                bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            }
        } else {
            invalid = true;
        }
        spans.push((start as u32, (bytes.len() - start) as u32));
    })?;
    if invalid || bytes.len() > u32::MAX as usize {
        return Err(std::io::Error::other("keyword terms not reversible"));
    }
    let text = |(start, len): (u32, u32)| &bytes[start as usize..(start + len) as usize];
    let mut order: Vec<u32> = (0..spans.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| text(spans[a as usize]).cmp(text(spans[b as usize])));
    let mut builder = tantivy_fst::MapBuilder::memory();
    for ord in order {
        builder
            .insert(text(spans[ord as usize]), u64::from(ord))
            .map_err(std::io::Error::other)?;
    }
    let fst = builder.into_inner().map_err(std::io::Error::other)?;
    Map::from_bytes(fst).map_err(std::io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, text: &str) -> bool {
        regex::Regex::new(&format!("^(?:{pattern})$"))
            .unwrap()
            .is_match(text)
    }

    #[test]
    fn reversed_patterns_match_reversed_texts() {
        let texts = [
            "",
            "a",
            "ab",
            "abc",
            "A00596",
            "x.log",
            "日本語",
            "語本日x",
            "aaa",
            "ba",
            "über",
            "a\nb",
        ];
        let patterns = [
            "(?s).*596",
            "(?s)a.*",
            "(?s).*\\.log",
            "ab|c",
            "(?i)(?s).*B",
            "[a-c]{2,3}",
            "(?s)..*本日",
            "a(b|c)*",
            "(?s)ü.*",
            "x?",
            "(?s).",
        ];
        for pattern in patterns {
            let reversed = reversed_pattern(pattern).unwrap();
            for text in texts {
                let back: String = text.chars().rev().collect();
                assert_eq!(
                    matches(pattern, text),
                    matches(&reversed, &back),
                    "{pattern} / {reversed} on {text:?}"
                );
            }
        }
        assert_eq!(reversed_pattern("^a"), None);
    }
}
