//! A segment's candidates for a sort of several keys, chosen on the lead value alone when
//! its walk does not pay (a selective query: `bool.should` of two terms under `acctType asc,
//! balance desc`, from 9,990).
//!
//! The ordinary collector builds and compares a row of sort values for every match until
//! its threshold tightens, and with a deep page (`limit` 10,000) that takes most matches. A
//! page of `limit` hits needs only the matches whose lead value is among the `limit` best:
//! one read of the lead per match gives `(lead, doc)` pairs, a partial selection
//! (`select_nth_unstable`) finds the lead value `B` of the `limit`-th best, and only the
//! matches with a lead value no worse than `B` go on to the collector, which orders them on
//! the later keys (any kind, `missing`, `mode`, `search_after`: its one implementation).
//!
//! When the page has two keys and the second is a plain number or date ([`NumericSecond`]),
//! the rows need no collector at all: [`RankedRows`] holds each match as integers (the lead
//! value, the second's value in an order-preserving `u64` mapping, the doc id), keeps the best
//! `limit` by partial selection and compares against the worst kept on integers, where the
//! collector builds a row of [`SortValue`]s per match and compares it key by key
//! (`cmp_values` was the largest item of a profile of deep pages).
//!
//! Exactness: a match whose lead value is worse than `B` sorts after the `limit` matches at
//! or before `B`. A match whose lead value equals `search_after`'s may fall either side of it,
//! so it never counts toward the `limit` (the collector decides it); one whose lead sorts
//! before `search_after`'s is dropped. A match without a lead value sorts last.

use crate::sort::{SortKey, SortKind, SortMode, SortValue, SortedHit};
use lode_engine::mapping::Storage;
use tantivy::columnar::{Column, MonotonicallyMappableToU64, StrColumn};
use tantivy::query::Weight;
use tantivy::{DocAddress, DocId, Score, SegmentReader};

/// A segment's lead column, read as the walk reads points: a keyword's term ordinals, a
/// number in its `u64` mapping (both in sort order).
pub enum LeadColumn {
    I64(Column<i64>),
    F64(Column<f64>),
    Ord(StrColumn),
}

impl LeadColumn {
    /// A document's lead value: its smallest value ascending, largest descending (ES's
    /// `mode` min/max for a multi-valued field); `None` without one.
    fn value(&self, doc: DocId, desc: bool) -> Option<u64> {
        fn pick(it: impl Iterator<Item = u64>, desc: bool) -> Option<u64> {
            if desc {
                it.max()
            } else {
                it.min()
            }
        }
        match self {
            LeadColumn::I64(c) => pick(c.values_for_doc(doc).map(|v| v.to_u64()), desc),
            LeadColumn::F64(c) => pick(c.values_for_doc(doc).map(|v| v.to_u64()), desc),
            LeadColumn::Ord(c) => pick(c.term_ords(doc), desc),
        }
    }
}

/// Where the segment's page starts and ends on the lead key, in [`LeadColumn`] values.
pub struct LeadRange {
    pub desc: bool,
    /// Values strictly past this sort after `search_after`'s lead value.
    pub after: Option<u64>,
    /// `search_after`'s own lead value, when the segment holds it: its documents may fall
    /// either side of `search_after`.
    pub after_tie: Option<u64>,
    /// The worst lead value other segments' held hits leave competitive (inclusive).
    pub bottom: Option<u64>,
}

impl LeadRange {
    /// A value's place in sort order (smaller sorts first).
    fn rank(&self, value: u64) -> u64 {
        if self.desc {
            !value
        } else {
            value
        }
    }

    /// The value of a rank.
    fn unrank(&self, rank: u64) -> u64 {
        self.rank(rank)
    }

    fn past_after(&self, value: u64) -> bool {
        match self.after {
            None => true,
            Some(a) if self.desc => value < a,
            Some(a) => value > a,
        }
    }

    fn within_bottom(&self, value: u64) -> bool {
        match self.bottom {
            None => true,
            Some(b) if self.desc => value >= b,
            Some(b) => value <= b,
        }
    }
}

/// Every live match of `weight` in `reader` (with its score when `scoring`), in doc order.
pub fn for_each_match(
    weight: &dyn Weight,
    reader: &SegmentReader,
    scoring: bool,
    mut take: impl FnMut(DocId, Score),
) -> tantivy::Result<()> {
    let alive = reader.alive_bitset();
    if scoring {
        weight.for_each(reader, &mut |doc, score| {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                take(doc, score);
            }
        })
    } else {
        weight.for_each_no_score(reader, &mut |docs| {
            for &doc in docs {
                if alive.is_none_or(|a| a.is_alive(doc)) {
                    take(doc, 0.0);
                }
            }
        })
    }
}

/// A second sort key that is a plain number or date: its value in an order-preserving `u64`
/// mapping, so that rows compare as integers.
pub struct NumericSecond {
    column: Option<SecondColumn>,
    storage: Storage,
    desc: bool,
    /// Whether a multi-valued field sorts on its largest value (`mode`, else the order's).
    pick_max: bool,
    missing_first: bool,
    /// `missing`: the value (as given, and mapped) that replaces an absent one.
    missing_value: Option<(SortValue, u64)>,
}

enum SecondColumn {
    I64(Column<i64>),
    F64(Column<f64>),
}

/// A second key's place in sort order: a class (missing values first or last) and the
/// value's `u64`, reversed descending.
type SecondRank = (u8, u64);

impl NumericSecond {
    /// `key` when it is a number or date field without `nested` whose `mode` picks one of
    /// the values (min/max); `None` otherwise (the collector then builds its rows).
    pub fn new(key: &SortKey, reader: &SegmentReader) -> tantivy::Result<Option<NumericSecond>> {
        let SortKind::Field { name, storage, .. } = &key.kind else {
            return Ok(None);
        };
        let pick_max = match key.mode {
            None => key.desc,
            Some(SortMode::Max) => true,
            Some(SortMode::Min) => false,
            Some(_) => return Ok(None),
        };
        if key.nested.is_some() {
            return Ok(None);
        }
        let missing_value = match &key.missing_value {
            None => None,
            Some(v) => match v.to_point(*storage) {
                Some(point) => Some((v.clone(), point)),
                None => return Ok(None),
            },
        };
        let ff = reader.fast_fields();
        let column = match storage {
            Storage::I64 => ff.column_opt::<i64>(name)?.map(SecondColumn::I64),
            Storage::F64 => ff.column_opt::<f64>(name)?.map(SecondColumn::F64),
            _ => return Ok(None),
        };
        Ok(Some(NumericSecond {
            column,
            storage: *storage,
            desc: key.desc,
            pick_max,
            missing_first: key.missing_first,
            missing_value,
        }))
    }

    /// A document's value in the column's `u64` mapping (`-0.0` as `0.0`: they compare equal).
    fn point(&self, doc: DocId) -> Option<u64> {
        fn pick(it: impl Iterator<Item = u64>, max: bool) -> Option<u64> {
            if max {
                it.max()
            } else {
                it.min()
            }
        }
        match self.column.as_ref()? {
            SecondColumn::I64(c) => pick(c.values_for_doc(doc).map(|v| v.to_u64()), self.pick_max),
            SecondColumn::F64(c) => pick(
                c.values_for_doc(doc).map(|v| (v + 0.0).to_u64()),
                self.pick_max,
            ),
        }
    }

    fn rank_of(&self, point: Option<u64>) -> SecondRank {
        match point.or(self.missing_value.as_ref().map(|m| m.1)) {
            Some(p) if self.desc => (1, !p),
            Some(p) => (1, p),
            // Missing sorts last whatever the order, unless asked first.
            None if self.missing_first => (0, 0),
            None => (2, 0),
        }
    }

    /// `search_after`'s value for this key, ranked; `None` when it is not a number.
    pub fn after_rank(&self, after: &SortValue) -> Option<SecondRank> {
        match after {
            SortValue::Missing => Some(self.rank_of(None)),
            SortValue::F64(f) if self.storage == Storage::F64 => {
                Some(self.rank_of(Some((f + 0.0).to_u64())))
            }
            v => v.to_point(self.storage).map(|p| self.rank_of(Some(p))),
        }
    }

    fn value(&self, point: Option<u64>) -> SortValue {
        match (point, &self.missing_value) {
            (None, Some((v, _))) => v.clone(),
            (None, None) => SortValue::Missing,
            (Some(p), _) if self.storage == Storage::F64 => SortValue::F64(f64::from_u64(p)),
            (Some(p), _) => SortValue::I64(i64::from_u64(p)),
        }
    }
}

/// One match as integers, in sort order: the lead's rank (missing last), the second key's,
/// then the doc id.
#[derive(Clone, Copy)]
struct Row {
    key: ((bool, u64), SecondRank, DocId),
    /// The second key's value as read (`None`: missing).
    point: Option<u64>,
    score: Score,
}

/// The best `limit` matches of a segment under a lead and a [`NumericSecond`] key, kept as
/// integers: the collector's algorithm (buffer, select the best `limit`, reject what sorts
/// after the worst of them) without its rows of [`SortValue`]s.
pub struct RankedRows<'a> {
    lead: Option<&'a LeadColumn>,
    range: &'a LeadRange,
    second: &'a NumericSecond,
    /// `search_after`'s second value, ranked: documents of its lead value sort after it only
    /// past this.
    after_second: Option<SecondRank>,
    limit: usize,
    rows: Vec<Row>,
    /// The worst row kept at the last selection: a later document must sort before it.
    worst: Option<((bool, u64), SecondRank, DocId)>,
}

impl<'a> RankedRows<'a> {
    pub fn new(
        lead: Option<&'a LeadColumn>,
        range: &'a LeadRange,
        second: &'a NumericSecond,
        after_second: Option<SecondRank>,
        limit: usize,
    ) -> RankedRows<'a> {
        RankedRows {
            lead,
            range,
            second,
            after_second,
            limit,
            rows: Vec::new(),
            worst: None,
        }
    }

    /// Takes a live match (documents in increasing order).
    pub fn collect(&mut self, doc: DocId, score: Score) {
        let lead = match self.lead.and_then(|c| c.value(doc, self.range.desc)) {
            // Without a lead value a document sorts after every held hit and `search_after`.
            None if self.range.bottom.is_some() => return,
            None => (true, 0),
            Some(v) if !self.range.within_bottom(v) => return,
            Some(v) if self.range.past_after(v) => (false, self.range.rank(v)),
            Some(v) if self.range.after_tie == Some(v) => (false, self.range.rank(v)),
            Some(_) => return,
        };
        if let Some(w) = self.worst {
            if lead > w.0 {
                return;
            }
        }
        let point = self.second.point(doc);
        let rank = self.second.rank_of(point);
        // A document of `search_after`'s lead value sorts after it on the second key only.
        if !lead.0 && self.range.after_tie == Some(self.range.unrank(lead.1)) {
            match self.after_second {
                Some(a) if rank > a => {}
                _ => return,
            }
        }
        let key = (lead, rank, doc);
        if self.worst.is_some_and(|w| key > w) {
            return;
        }
        self.rows.push(Row { key, point, score });
        if self.rows.len() >= self.limit.saturating_mul(2).max(1024) {
            self.select();
        }
    }

    /// Keeps the best `limit` rows (unordered) and remembers the worst of them.
    fn select(&mut self) {
        if self.rows.len() > self.limit {
            let nth = self.limit - 1;
            self.rows.select_nth_unstable_by_key(nth, |r| r.key);
            self.rows.truncate(self.limit);
            self.worst = Some(self.rows[nth].key);
        }
    }

    /// The rows kept, in sort order, as hits of segment `segment_ord` (a keyword lead's
    /// values as ordinals, for [`crate::ords::resolve`]).
    pub fn harvest(mut self, segment_ord: u32, lead_storage: Storage) -> Vec<SortedHit> {
        self.select();
        self.rows.sort_unstable_by_key(|r| r.key);
        let range = self.range;
        let second = self.second;
        self.rows
            .into_iter()
            .map(|r| {
                let ((missing, rank), _, doc) = r.key;
                let lead = if missing {
                    SortValue::Missing
                } else {
                    let v = range.unrank(rank);
                    match lead_storage {
                        Storage::F64 => SortValue::F64(f64::from_u64(v)),
                        Storage::Keyword => SortValue::Ord(v),
                        _ => SortValue::I64(i64::from_u64(v)),
                    }
                };
                SortedHit {
                    values: vec![lead, second.value(r.point)],
                    score: r.score,
                    addr: DocAddress::new(segment_ord, doc),
                }
            })
            .collect()
    }
}

/// The live matches of `weight` in `reader` that can be among the first `limit` hits by
/// lead value (with their scores when `scoring`), in doc order.
pub fn candidates(
    weight: &dyn Weight,
    reader: &SegmentReader,
    column: Option<&LeadColumn>,
    range: &LeadRange,
    limit: usize,
    scoring: bool,
) -> tantivy::Result<Vec<(DocId, Score)>> {
    // Matches past `search_after` by (rank, doc, score); those tied with it; those without
    // a lead value.
    let mut ranked: Vec<(u64, DocId, Score)> = Vec::new();
    let mut tied: Vec<(DocId, Score)> = Vec::new();
    let mut missing: Vec<(DocId, Score)> = Vec::new();
    let mut take = |doc: DocId, score: Score| match column.and_then(|c| c.value(doc, range.desc)) {
        // Without a lead value a document sorts after every held hit and `search_after`.
        None => {
            if range.bottom.is_none() {
                missing.push((doc, score));
            }
        }
        Some(v) if !range.within_bottom(v) => {}
        Some(v) if range.past_after(v) => ranked.push((range.rank(v), doc, score)),
        Some(v) if range.after_tie == Some(v) => tied.push((doc, score)),
        Some(_) => {}
    };
    for_each_match(weight, reader, scoring, &mut take)?;
    let enough = ranked.len() >= limit;
    if ranked.len() > limit {
        // The lead value of the `limit`-th best; every match at or before it goes on.
        let (_, nth, _) = ranked.select_nth_unstable_by_key(limit - 1, |&(rank, _, _)| rank);
        let worst = nth.0;
        ranked.retain(|&(rank, _, _)| rank <= worst);
    }
    let mut out: Vec<(DocId, Score)> = ranked.into_iter().map(|(_, d, s)| (d, s)).collect();
    out.extend(tied);
    if !enough {
        out.extend(missing);
    }
    out.sort_unstable_by_key(|&(doc, _)| doc);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::query::{AllQuery, EnableScoring, Query};
    use tantivy::schema::{Schema, FAST, INDEXED, STRING};
    use tantivy::{Index, TantivyDocument};

    /// Ten documents: `v` = doc % 5 (doc 9 without one), `k` two keywords each for doc 0.
    fn index() -> Index {
        let mut sb = Schema::builder();
        let v = sb.add_i64_field("v", INDEXED | FAST);
        let k = sb.add_text_field("k", STRING | FAST);
        let index = Index::create_in_ram(sb.build());
        let mut w = index.writer_with_num_threads(1, 15_000_000).unwrap();
        for i in 0..10i64 {
            let mut d = TantivyDocument::default();
            if i != 9 {
                d.add_i64(v, i % 5);
                d.add_text(k, format!("k{}", i % 5));
            }
            if i == 0 {
                d.add_text(k, "k9");
            }
            w.add_document(d).unwrap();
        }
        w.commit().unwrap();
        index
    }

    fn run(column: &str, range: LeadRange, limit: usize) -> Vec<DocId> {
        let index = index();
        let searcher = index.reader().unwrap().searcher();
        let reader = &searcher.segment_readers()[0];
        let ff = reader.fast_fields();
        let col = match column {
            "v" => LeadColumn::I64(ff.column_opt::<i64>("v").unwrap().unwrap()),
            _ => LeadColumn::Ord(ff.str("k").unwrap().unwrap()),
        };
        let weight = AllQuery
            .weight(EnableScoring::disabled_from_searcher(&searcher))
            .unwrap();
        candidates(&*weight, reader, Some(&col), &range, limit, false)
            .unwrap()
            .into_iter()
            .map(|(d, _)| d)
            .collect()
    }

    fn range(desc: bool) -> LeadRange {
        LeadRange {
            desc,
            after: None,
            after_tie: None,
            bottom: None,
        }
    }

    #[test]
    fn keeps_every_match_tied_with_the_limit_th() {
        // Values 0,1,2,3,4,0,1,2,3,4,-: the 3rd best ascending is 1 (docs 1, 6 tie).
        assert_eq!(run("v", range(false), 3), vec![0, 1, 5, 6]);
        assert_eq!(run("v", range(true), 3), vec![3, 4, 8]);
        // Fewer matches with a value than `limit`: the one without goes on too.
        assert_eq!(run("v", range(false), 10).len(), 10);
        assert_eq!(run("v", range(false), 9).len(), 9);
    }

    #[test]
    fn search_after_ties_go_on_without_counting() {
        let after = LeadRange {
            after: Some(1i64.to_u64()),
            after_tie: Some(1i64.to_u64()),
            ..range(false)
        };
        // Past 1 ascending: 2 (docs 2, 7) fills a limit of 2; docs 1, 6 tie with `after`.
        assert_eq!(run("v", after, 2), vec![1, 2, 6, 7]);
    }

    #[test]
    fn a_multi_valued_keyword_sorts_on_its_min_or_max() {
        // Doc 0 holds k0 and k9: first ascending, first descending too.
        assert_eq!(run("k", range(false), 2), vec![0, 5]);
        assert_eq!(run("k", range(true), 1), vec![0]);
        // A bottom at k4 (ordinal 4) descending drops everything below it, and doc 9.
        let bottom = LeadRange {
            bottom: Some(4),
            ..range(true)
        };
        assert_eq!(run("k", bottom, 10), vec![0, 4]);
    }
}
