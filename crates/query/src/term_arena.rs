//! A keyword column's terms as one flat text, per segment, so that a pattern that must
//! contain a literal somewhere (`*596*`) tests only the terms that contain it.
//!
//! A pattern open at both ends narrows from neither: the dictionary scan steps every term
//! (its blocks decompressed, its keys delta-decoded on every query). Laid end to end, the
//! terms are one text a substring search (`memchr::memmem`, vectorised) runs over at memory
//! speed; only a term the literal falls inside is given to the automaton. Built once per
//! segment and column and kept ([`crate::derived_terms`]).

use regex_syntax::hir::HirKind;
use std::sync::Arc;
use tantivy::columnar::StrColumn;
use tantivy::index::SegmentId;

/// A segment's terms of one column, end to end in ordinal order.
pub(crate) struct TermArena {
    bytes: Vec<u8>,
    /// Where each term ends in `bytes` (it starts where the one before ends).
    ends: Vec<u32>,
}

impl TermArena {
    fn build(column: &StrColumn) -> std::io::Result<TermArena> {
        let dictionary = column.dictionary();
        let mut bytes: Vec<u8> = Vec::new();
        let mut ends: Vec<u32> = Vec::with_capacity(dictionary.num_terms());
        // Where the term before starts: a term is its first `keep` bytes and then `suffix`.
        let mut before = 0;
        dictionary.for_each_delta(|_ord, keep, suffix| {
            let start = bytes.len();
            bytes.extend_from_within(before..before + keep);
            bytes.extend_from_slice(suffix);
            before = start;
            ends.push(bytes.len() as u32);
        })?;
        if bytes.len() > u32::MAX as usize {
            return Err(std::io::Error::other(
                "keyword terms too long for one arena",
            ));
        }
        Ok(TermArena { bytes, ends })
    }

    fn size(&self) -> usize {
        self.bytes.len() + self.ends.len() * 4
    }

    /// The ordinals of the terms that contain `literal` and that `accepts`, ascending.
    pub fn matching(&self, literal: &[u8], accepts: impl Fn(&[u8]) -> bool) -> Vec<u64> {
        let finder = memchr::memmem::Finder::new(literal);
        let mut ords = Vec::new();
        let mut term = 0usize;
        let mut from = 0usize;
        while let Some(hit) = finder.find(&self.bytes[from..]) {
            let at = from + hit;
            while self.ends[term] as usize <= at {
                term += 1;
            }
            let end = self.ends[term] as usize;
            if at + literal.len() <= end {
                let start = if term == 0 {
                    0
                } else {
                    self.ends[term - 1] as usize
                };
                if accepts(&self.bytes[start..end]) {
                    ords.push(term as u64);
                }
                from = end;
            } else {
                from = at + 1;
            }
        }
        ords
    }
}

/// The arena of `column` in segment `segment`: `None` the first time it is asked for (the
/// caller scans), built on the second.
pub(crate) fn term_arena(
    segment: SegmentId,
    field: &str,
    column: &StrColumn,
) -> std::io::Result<Option<Arc<TermArena>>> {
    crate::derived_terms::derived(segment, field, TermArena::size, || TermArena::build(column))
}

/// The longest literal every match of `pattern` contains, from its top-level concatenation
/// (`ab` in `.*ab.*`); `None` under two bytes, where nearly every term would hold it.
pub(crate) fn required_literal(pattern: &str) -> Option<Vec<u8>> {
    let hir = regex_syntax::Parser::new().parse(pattern).ok()?;
    let literal = match hir.kind() {
        HirKind::Literal(l) => Some(l.0.to_vec()),
        HirKind::Concat(subs) => subs
            .iter()
            .filter_map(|s| match s.kind() {
                HirKind::Literal(l) => Some(l.0.to_vec()),
                _ => None,
            })
            .max_by_key(|l| l.len()),
        _ => None,
    };
    literal.filter(|l| l.len() >= 2)
}
