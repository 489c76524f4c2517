//! A keyword column's term ordinals and its terms: where a term falls among a segment's
//! ordinals, and the terms of many ordinals read in one forward pass over the dictionary.
//!
//! Within a segment a keyword sorts by ordinal (ordinals run in term order); across segments
//! only terms compare. A sorted page needs both conversions, as Lucene's
//! `TermOrdValComparator` does: the worst term held so far becomes a later segment's bound on
//! ordinals (its `bottomOrd`, looked up once per segment), and the hits a segment keeps get
//! their terms back: from the segment's decoded terms ([`crate::term_table`]), or where a
//! dictionary is too large for that, in one pass over the hits' sorted ordinals that decodes
//! each dictionary block they need (zstd-compressed) once, where one `ord_to_str` per hit
//! would decode a block per hit.

use crate::sort::{SortValue, SortedHit};
use crate::term_table::SegmentTerms;
use tantivy::columnar::{StrColumn, TermOrdHit};

/// The last ordinal of `column` that can sort no worse than `term`: descending, the smallest
/// ordinal whose term is at least `term`; ascending, the largest whose term is at most `term`.
/// `None` when every term of the column sorts after `term`.
pub fn bound_ord(column: &StrColumn, term: &str, desc: bool) -> std::io::Result<Option<u64>> {
    let dict = column.dictionary();
    let terms = dict.num_terms() as u64;
    // `Next` is the first ordinal past `term`; tantivy answers `u64::MAX` past the last block.
    Ok(match dict.term_ord_or_next(term)? {
        TermOrdHit::Exact(ord) => Some(ord),
        TermOrdHit::Next(next) if desc => Some(next).filter(|&n| n < terms),
        TermOrdHit::Next(next) => next.min(terms).checked_sub(1),
    })
}

/// `search_after`'s `term` as an ordinal of `column` past which (strictly) values sort after
/// it: descending, the first ordinal whose term is at least `term` (the column's term count
/// when there is none); ascending, the last whose term is at most `term`, `None` when every
/// term sorts after it.
pub fn after_ord(column: &StrColumn, term: &str, desc: bool) -> std::io::Result<Option<u64>> {
    let ord = bound_ord(column, term, desc)?;
    Ok(match ord {
        None if desc => Some(column.dictionary().num_terms() as u64),
        ord => ord,
    })
}

/// Replaces the ordinals (`SortValue::Ord`) that key `key` of `hits` holds by their terms in
/// `terms`: from the segment's decoded [`crate::term_table::TermTable`], or, for a dictionary
/// too large for one, decoding each dictionary block the hits need once.
pub fn resolve(terms: &SegmentTerms, hits: &mut [SortedHit], key: usize) {
    if let Some(table) = terms.table() {
        for hit in hits.iter_mut() {
            if let Some(SortValue::Ord(o)) = hit.values.get(key) {
                // Not UTF-8 (or not found): the empty term, as `ord_to_str` leaves it.
                let term = table.term(*o).and_then(|b| std::str::from_utf8(b).ok());
                hit.values[key] = SortValue::Str(term.unwrap_or_default().to_string());
            }
        }
        return;
    }
    let column = &terms.column;
    let mut at: Vec<(u64, usize)> = hits
        .iter()
        .enumerate()
        .filter_map(|(i, h)| match h.values.get(key) {
            Some(SortValue::Ord(o)) => Some((*o, i)),
            _ => None,
        })
        .collect();
    if at.is_empty() {
        return;
    }
    at.sort_unstable();
    let ords: Vec<u64> = at.iter().map(|&(o, _)| o).collect();
    // The callback runs once per entry of `ords` (repeats included), in order.
    let mut next = at.iter();
    let _ = column.dictionary().sorted_ords_to_term_cb(&ords, |bytes| {
        if let Some(&(_, i)) = next.next() {
            // Not UTF-8 (or not found, below): the empty term, as `ord_to_str` leaves it.
            let term = std::str::from_utf8(bytes).unwrap_or_default();
            hits[i].values[key] = SortValue::Str(term.to_string());
        }
    });
    for &(_, i) in next {
        hits[i].values[key] = SortValue::Str(String::new());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::schema::{Schema, FAST, STRING};
    use tantivy::{DocAddress, Index, TantivyDocument};

    /// The `i`th term: a long, varied suffix so that the terms span several dictionary blocks.
    fn term(i: u64) -> String {
        format!("t{i:04}{:016x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }

    /// A one-segment column of the terms of 0, 2, … 1998 (even numbers only).
    fn column() -> (Index, StrColumn) {
        let mut sb = Schema::builder();
        let k = sb.add_text_field("k", STRING | FAST);
        let index = Index::create_in_ram(sb.build());
        let mut w = index.writer_with_num_threads(1, 20_000_000).unwrap();
        for i in (0..2_000).step_by(2) {
            let mut d = TantivyDocument::default();
            d.add_text(k, term(i));
            w.add_document(d).unwrap();
        }
        w.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let col = searcher.segment_readers()[0]
            .fast_fields()
            .str("k")
            .unwrap()
            .unwrap();
        (index, col)
    }

    #[test]
    fn a_term_bounds_the_ordinals_that_can_still_sort_before_it() {
        let (_index, col) = column();
        // The oracle: the terms listed, compared as strings.
        let terms: Vec<String> = (0..2_000).step_by(2).map(term).collect();
        for probe in ["a", "t", "t0000", "t0001", "t0500", "t1998", "t1999", "u"]
            .into_iter()
            .map(String::from)
            .chain([term(0), term(500), term(1998)])
        {
            let asc = terms.iter().rposition(|t| *t <= probe);
            let desc = terms.iter().position(|t| *t >= probe);
            let got = |desc| bound_ord(&col, &probe, desc).unwrap().map(|o| o as usize);
            assert_eq!(got(false), asc, "asc {probe}");
            assert_eq!(got(true), desc, "desc {probe}");
        }
    }

    #[test]
    fn ordinals_resolve_to_their_terms_in_any_order_with_repeats() {
        let (_index, col) = column();
        let ords = [999u64, 3, 500, 3, 0, 128, 129, 998, 500];
        let mut hits: Vec<SortedHit> = ords
            .iter()
            .map(|&o| SortedHit {
                values: vec![SortValue::I64(1), SortValue::Ord(o)],
                score: 0.0,
                addr: DocAddress::new(0, 0),
            })
            .collect();
        hits.push(SortedHit {
            values: vec![SortValue::I64(1), SortValue::Missing],
            score: 0.0,
            addr: DocAddress::new(0, 0),
        });
        let mut by_blocks = hits.clone();
        let segment = tantivy::index::SegmentId::generate_random();
        resolve(&SegmentTerms::new(col.clone(), segment, "k"), &mut hits, 1);
        resolve(&SegmentTerms::blocks_only(col), &mut by_blocks, 1);
        let mut want: Vec<SortValue> = ords.iter().map(|&o| SortValue::Str(term(2 * o))).collect();
        want.push(SortValue::Missing);
        let got: Vec<SortValue> = hits.into_iter().map(|h| h.values[1].clone()).collect();
        assert_eq!(got, want);
        let got: Vec<SortValue> = by_blocks.into_iter().map(|h| h.values[1].clone()).collect();
        assert_eq!(got, want);
    }
}
