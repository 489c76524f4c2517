//! Top hits of a sort led by a numeric, date or keyword field, read in sort order from the
//! field's points index (for a keyword: its term ordinals, in term order) instead of scanning
//! every match.
//!
//! A page sorted on a field ("newest 10 of 300,000 matches") needs only the matches nearest
//! the competitive end of the field's values. Lucene skips the others with its points index
//! (`NumericComparator`'s competitive iterator); here each segment walks its
//! [`SortedPoints`] from that end in chunks of positions, keeps the documents the query
//! matches (one `seek` each in a fresh scorer, since a chunk's documents are in value order)
//! and stops once `limit` matches are found. A one-key sort takes them in walked order (value,
//! then doc id, as the collector would); with more keys they go through the ordinary
//! [`FieldSortCollector`], so later keys and `search_after` keep their one implementation.
//! A keyword's values are the segment's term ordinals: the terms that bound a segment (the
//! worst hit held, `search_after`) are placed among them first ([`crate::ords`]).
//!
//! Exactness: chunks end on a change of value, so the walked positions are every value up to
//! some bound; a document outside them sorts after every walked match, and at least `limit`
//! of those exist. Where the walk would cost more than scanning the matches (a selective
//! query, or matches far from the competitive end), the segment is scanned instead.

use crate::lead_select::{self, LeadColumn, LeadRange};
use crate::sort::{FieldSortCollector, FieldSortSegment, SortKind, SortMode, SortValue, SortedHit};
use crate::term_table::SegmentTerms;
use lode_engine::mapping::Storage;
use lode_query::points::{sorted_points, SortedPoints};
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::MonotonicallyMappableToU64;
use tantivy::query::{EnableScoring, Query, Scorer, Weight};
use tantivy::schema::Field;
use tantivy::{DocId, DocSet, Score, Searcher, SeekDangerResult, SegmentReader, TERMINATED};

/// Segments smaller than this are scanned: their points would cost more than they save.
const MIN_SEGMENT_DOCS: u32 = 4_096;
/// What walking one position costs, in scan steps (large chunks go into doc order through a
/// bitset, so a position costs about two: measured with `scripts/bench-page-shapes.py`).
const WALK_STEP_COST: u64 = 2;
/// How many positions a walk over a bitset of the matches may take per match before the
/// scan is cheaper: a position costs a sequential read and a bit test, a scanned match
/// reading and comparing its sort value (a random column read) and the collector's work.
const BITS_WALK_GAIN: u64 = 8;
/// Positions a bitset walk takes between checks of the request's cancellation.
const CANCEL_EVERY: usize = 1 << 16;
/// A lead value held by more documents than this many times the hits wanted (and at least
/// [`TIE_MIN_DOCS`]) is walked on the second sort key ([`Walk::tie_walk`]).
const TIE_FACTOR: usize = 8;
const TIE_MIN_DOCS: usize = 1_024;
/// The smallest chunk of positions walked at once.
const MIN_CHUNK: usize = 256;
/// From how many hits a scanned sort of several keys first selects its matches on the lead
/// value ([`crate::lead_select`]); fewer are held by the collector's threshold as cheaply.
const SELECT_MIN_LIMIT: usize = 256;

/// `search_after`'s lead value: a point, or a keyword's term (each segment has its ordinals).
#[derive(Clone, Copy)]
enum After<'a> {
    Point(u64),
    Term(&'a str),
}

/// The lead sort key, when the walk can serve it.
struct Lead {
    field: Field,
    name: String,
    storage: Storage,
    desc: bool,
}

/// The top `collector.limit` hits of `query`, walking the lead key's points where that is
/// cheaper; `None` when the sort does not qualify (the caller then runs the collector).
/// `bounds` are the inclusive bounds the query's required clauses put on the lead field
/// (see `lode_query::required_point_bounds`), in the points' `u64` mapping. Scores, when the
/// collector keeps them, are computed with `stats`.
pub fn top_hits(
    searcher: &Searcher,
    stats: &lode_query::FieldStatistics,
    query: &dyn Query,
    collector: &FieldSortCollector,
    bounds: Option<(u64, u64)>,
) -> tantivy::Result<Option<Vec<SortedHit>>> {
    let Some(lead) = lead_key(searcher, collector) else {
        return Ok(None);
    };
    // `search_after` on a missing lead value starts among the documents without one.
    let after = match collector.after.as_ref().map(|a| &a[0]) {
        None => None,
        // A term is placed among each segment's ordinals in turn.
        Some(SortValue::Str(term)) if lead.storage == Storage::Keyword => Some(After::Term(term)),
        Some(v) => match v.to_point(lead.storage) {
            Some(point) => Some(After::Point(point)),
            None => return Ok(None),
        },
    };
    let scoring = collector.requires_scoring();
    let weight = query.weight(if scoring {
        stats.scoring(searcher)
    } else {
        EnableScoring::disabled_from_searcher(searcher)
    })?;
    // With more keys, a lead value many documents share is walked on the second key.
    let second = collector
        .keys
        .get(1)
        .and_then(|key| walk_key(searcher, key));
    let mut best: Vec<SortedHit> = Vec::new();
    // Largest segments first: their hits set the bar the smaller ones must pass.
    let mut order: Vec<(usize, &SegmentReader)> =
        searcher.segment_readers().iter().enumerate().collect();
    order.sort_by_key(|(_, r)| std::cmp::Reverse(r.num_docs()));
    for (ord, reader) in order {
        // A keyword's points are the segment's term ordinals: its terms resolve them.
        let terms = match lead.storage {
            Storage::Keyword => reader
                .fast_fields()
                .str(&lead.name)?
                .map(|c| SegmentTerms::new(c, reader.segment_id(), &lead.name)),
            _ => None,
        };
        // Once `limit` hits are held, a later segment only contributes values at least as
        // good as the worst of them (equal ones may still win on a later key).
        let held_row = (best.len() >= collector.limit)
            .then(|| best.last())
            .flatten();
        let held = held_row.map(|h| &h.values[0]);
        let bottom = match (held, &terms) {
            (Some(SortValue::Str(term)), Some(terms)) => {
                match crate::ords::bound_ord(&terms.column, term, lead.desc)? {
                    Some(ord) => Some(ord),
                    // Every term of the segment sorts after the worst hit held.
                    None => continue,
                }
            }
            // Nor does a segment without the keyword hold a value to compete with a term.
            (Some(SortValue::Str(_)), None) => continue,
            (Some(v), _) => v.to_point(lead.storage),
            (None, _) => None,
        };
        let (after, after_tie) = match (after, &terms) {
            (Some(After::Point(point)), _) => (Some(point), Some(point)),
            (Some(After::Term(term)), Some(terms)) => (
                crate::ords::after_ord(&terms.column, term, lead.desc)?,
                terms.column.dictionary().term_ord(term)?,
            ),
            // Every document of the segment lacks the keyword: all sort after the term.
            (Some(After::Term(_)), None) | (None, _) => (None, None),
        };
        let walk = Walk {
            lead: &lead,
            weight: &*weight,
            reader,
            limit: collector.limit,
            // The query's bounds are numbers; a keyword's points are term ordinals.
            bounds: bounds.filter(|_| lead.storage != Storage::Keyword),
            after,
            after_tie,
            bottom,
            scoring,
            tie: None,
        };
        let tied = match &second {
            Some(second) => match second_after(collector, second, reader)? {
                Some(after) => walk.tie_walk(second, after)?,
                None => None,
            },
            None => None,
        };
        let found = match tied {
            Some(found) => Some(found),
            None => walk.run()?,
        };
        // A numeric second key: rows of integers instead of the collector's.
        let ranked = match collector.keys.get(1) {
            Some(key) if collector.keys.len() == 2 => lead_select::NumericSecond::new(key, reader)?
                .and_then(|second| {
                    let after_second = match collector.after.as_ref() {
                        None => None,
                        Some(a) => Some(second.after_rank(a.get(1)?)?),
                    };
                    Some((second, after_second))
                }),
            _ => None,
        };
        let range = LeadRange {
            desc: lead.desc,
            after,
            after_tie,
            bottom,
        };
        let fruit = match (found, ranked) {
            (found, Some((second, after_second))) => {
                let column = lead_column(reader, &lead)?;
                let mut rows = lead_select::RankedRows::new(
                    column.as_ref(),
                    &range,
                    &second,
                    after_second,
                    collector.limit,
                );
                match found {
                    Some(mut found) => {
                        #[cfg(test)]
                        tests::WALKED.with(|n| n.set(n.get() + 1));
                        found.sort_unstable_by_key(|c| c.doc);
                        for c in found {
                            rows.collect(c.doc, c.score);
                        }
                    }
                    None => {
                        #[cfg(test)]
                        tests::RANKED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        lead_select::for_each_match(&*weight, reader, scoring, |d, s| {
                            rows.collect(d, s)
                        })?;
                    }
                }
                let mut hits = rows.harvest(ord as u32, lead.storage);
                if let Some(terms) = &terms {
                    crate::ords::resolve(terms, &mut hits, 0);
                }
                hits
            }
            (Some(mut found), None) => {
                #[cfg(test)]
                tests::WALKED.with(|n| n.set(n.get() + 1));
                if collector.keys.len() == 1 {
                    // The lead value is the whole sort: the hits are the candidates in order.
                    let mut hits = first_in_order(found, &walk, ord as u32);
                    if let Some(terms) = &terms {
                        crate::ords::resolve(terms, &mut hits, 0);
                    }
                    hits
                } else {
                    found.sort_unstable_by_key(|c| c.doc);
                    let mut segment = collector.for_segment(ord as u32, reader)?;
                    if let Some(h) = held_row {
                        segment.bar_with(&h.values)?;
                    }
                    for c in found {
                        segment.collect(c.doc, c.score);
                    }
                    segment.harvest()
                }
            }
            (None, None) if collector.keys.len() > 1 && collector.limit >= SELECT_MIN_LIMIT => {
                // Scanned, and only the matches whose lead value can make the page go on to
                // the collector's rows ([`crate::lead_select`]).
                let column = lead_column(reader, &lead)?;
                let docs = lead_select::candidates(
                    &*weight,
                    reader,
                    column.as_ref(),
                    &range,
                    collector.limit,
                    scoring,
                )?;
                #[cfg(test)]
                tests::SELECTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let mut segment = collector.for_segment(ord as u32, reader)?;
                if let Some(h) = held_row {
                    segment.bar_with(&h.values)?;
                }
                for (doc, score) in docs {
                    segment.collect(doc, score);
                }
                segment.harvest()
            }
            (None, None) => {
                // Scanned, but every document worse than the bottom is rejected on one read.
                let mut segment = collector.for_segment(ord as u32, reader)?;
                if let Some(b) = bottom {
                    segment.bound_lead(b);
                }
                if let Some(h) = held_row {
                    segment.bar_with(&h.values)?;
                }
                scan(&mut segment, &*weight, reader, scoring)?;
                segment.harvest()
            }
        };
        best = collector.merge_fruits(vec![best, fruit])?;
    }
    Ok(Some(best))
}

/// The segment's lead column, read as its points are ([`lead_select::LeadColumn`]).
fn lead_column(reader: &SegmentReader, lead: &Lead) -> tantivy::Result<Option<LeadColumn>> {
    let ff = reader.fast_fields();
    Ok(match lead.storage {
        Storage::I64 => ff.column_opt::<i64>(&lead.name)?.map(LeadColumn::I64),
        Storage::F64 => ff.column_opt::<f64>(&lead.name)?.map(LeadColumn::F64),
        Storage::Keyword => ff.str(&lead.name)?.map(LeadColumn::Ord),
        _ => None,
    })
}

/// `search_after`'s value for the second key in `reader`'s terms: `Some(None)` without one
/// (or when every value of the segment sorts after it), `None` when a walk cannot place it.
fn second_after(
    collector: &FieldSortCollector,
    second: &Lead,
    reader: &SegmentReader,
) -> tantivy::Result<Option<Option<u64>>> {
    let Some(after) = collector.after.as_ref() else {
        return Ok(Some(None));
    };
    Ok(match (after.get(1), second.storage) {
        (Some(SortValue::Str(term)), Storage::Keyword) => {
            match reader.fast_fields().str(&second.name)? {
                Some(col) => Some(crate::ords::after_ord(&col, term, second.desc)?),
                // Documents without the keyword sort after every term.
                None => Some(None),
            }
        }
        (Some(v), _) => v.to_point(second.storage).map(Some),
        (None, _) => None,
    })
}

/// The first `limit` candidates of a segment by (lead value, doc id), past `search_after`,
/// as hits: what the collector would keep for a one-key sort, without its per-hit work (a
/// keyword's values are still the segment's ordinals, for [`crate::ords::resolve`]).
fn first_in_order(mut found: Vec<Candidate>, walk: &Walk, segment_ord: u32) -> Vec<SortedHit> {
    if walk.lead.desc {
        found.sort_unstable_by_key(|c| (std::cmp::Reverse(c.value), c.doc));
    } else {
        found.sort_unstable_by_key(|c| (c.value, c.doc));
    }
    found
        .into_iter()
        .filter(|c| walk.past_after(c.value))
        .take(walk.limit)
        .map(|c| SortedHit {
            values: vec![match walk.lead.storage {
                Storage::F64 => SortValue::F64(f64::from_u64(c.value)),
                Storage::Keyword => SortValue::Ord(c.value),
                _ => SortValue::I64(i64::from_u64(c.value)),
            }],
            score: c.score,
            addr: tantivy::DocAddress::new(segment_ord, c.doc),
        })
        .collect()
}

/// Feeds every live match of the segment to `segment` (tantivy's own collection loop).
fn scan(
    segment: &mut FieldSortSegment,
    weight: &dyn Weight,
    reader: &SegmentReader,
    scoring: bool,
) -> tantivy::Result<()> {
    let alive = reader.alive_bitset();
    if scoring {
        weight.for_each(reader, &mut |doc, score| {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                segment.collect(doc, score);
            }
        })
    } else {
        weight.for_each_no_score(reader, &mut |docs| {
            for &doc in docs {
                if alive.is_none_or(|a| a.is_alive(doc)) {
                    segment.collect(doc, 0.0);
                }
            }
        })
    }
}

fn lead_key(searcher: &Searcher, collector: &FieldSortCollector) -> Option<Lead> {
    if collector.limit == 0 {
        return None;
    }
    walk_key(searcher, collector.keys.first()?)
}

/// `key` as a walk's lead, when its points can serve it.
fn walk_key(searcher: &Searcher, key: &crate::sort::SortKey) -> Option<Lead> {
    let SortKind::Field { name, storage, .. } = &key.kind else {
        return None;
    };
    // A document's sort value must be the first of its values met walking in sort order:
    // the minimum ascending, the maximum descending.
    let mode_fits = match key.mode {
        None => true,
        Some(SortMode::Min) => !key.desc,
        Some(SortMode::Max) => key.desc,
        Some(_) => false,
    };
    if key.nested.is_some()
        || key.missing_first
        || key.missing_value.is_some()
        || !mode_fits
        || !matches!(storage, Storage::I64 | Storage::F64 | Storage::Keyword)
    {
        return None;
    }
    Some(Lead {
        field: searcher.schema().get_field(name).ok()?,
        name: name.clone(),
        storage: *storage,
        desc: key.desc,
    })
}

/// A match found by a walk, with the lead value it was met at.
struct Candidate {
    doc: DocId,
    value: u64,
    score: Score,
}

/// One segment's walk.
struct Walk<'a> {
    lead: &'a Lead,
    weight: &'a dyn Weight,
    reader: &'a SegmentReader,
    limit: usize,
    bounds: Option<(u64, u64)>,
    after: Option<u64>,
    /// The lead value of documents equal to `search_after`'s lead value, when the segment
    /// has it (a keyword's `after` is a neighbouring ordinal when the segment lacks the term).
    after_tie: Option<u64>,
    bottom: Option<u64>,
    scoring: bool,
    /// Walks only the documents whose previous key holds one value.
    tie: Option<&'a Tie>,
}

/// The documents of a segment whose (single-valued) lead key holds `value`.
struct Tie {
    column: TieColumn,
    value: u64,
}

enum TieColumn {
    I64(tantivy::columnar::Column<i64>),
    F64(tantivy::columnar::Column<f64>),
    /// A keyword's term ordinals.
    Ord(tantivy::columnar::Column<u64>),
}

impl Tie {
    fn new(reader: &SegmentReader, lead: &Lead, value: u64) -> tantivy::Result<Option<Tie>> {
        let ff = reader.fast_fields();
        let column = match lead.storage {
            Storage::I64 => ff.column_opt::<i64>(&lead.name)?.map(TieColumn::I64),
            Storage::F64 => ff.column_opt::<f64>(&lead.name)?.map(TieColumn::F64),
            Storage::Keyword => ff
                .str(&lead.name)?
                .map(|c| TieColumn::Ord(c.ords().clone())),
            _ => None,
        };
        Ok(column.map(|column| Tie { column, value }))
    }

    fn holds(&self, doc: DocId) -> bool {
        let value = match &self.column {
            TieColumn::I64(c) => c.first(doc).map(|v| v.to_u64()),
            TieColumn::F64(c) => c.first(doc).map(|v| v.to_u64()),
            TieColumn::Ord(c) => c.first(doc),
        };
        value == Some(self.value)
    }

    fn misses(tie: Option<&Tie>, doc: DocId) -> bool {
        tie.is_some_and(|t| !t.holds(doc))
    }
}

impl Walk<'_> {
    /// Whether a document whose lead value is `value` sorts after `search_after`'s lead
    /// value (one equal to it may still fall before it on a later key).
    fn past_after(&self, value: u64) -> bool {
        match self.after {
            None => true,
            Some(a) if self.lead.desc => value < a,
            Some(a) => value > a,
        }
    }

    /// The positions of `points` that can hold a competitive lead value (within the query's
    /// bounds, past `search_after`, no worse than the worst hit held), and whether exhausting
    /// them is conclusive (no document without a value can be needed: the query requires a
    /// value, every document has one, or `limit` better hits exist).
    fn competitive_span(&self, points: &SortedPoints) -> (std::ops::Range<usize>, bool) {
        let desc = self.lead.desc;
        let (mut lo, mut hi) = self.bounds.unwrap_or((0, u64::MAX));
        // A document of several values may sort on a value outside the query's bounds or
        // before `after` while matching through another: the walk then starts at the end.
        if points.multi_valued() {
            (lo, hi) = (0, u64::MAX);
            if let Some((blo, bhi)) = self.bounds {
                if desc {
                    lo = blo;
                } else {
                    hi = bhi;
                }
            }
        } else if let Some(a) = self.after {
            if desc {
                hi = hi.min(a);
            } else {
                lo = lo.max(a);
            }
        }
        if let Some(b) = self.bottom {
            if desc {
                lo = lo.max(b);
            } else {
                hi = hi.min(b);
            }
        }
        let conclusive = self.bounds.is_some() || self.bottom.is_some() || points.full();
        let span = if lo <= hi { points.span(lo, hi) } else { 0..0 };
        (span, conclusive)
    }

    /// The segment's candidate documents, or `None` to scan it.
    fn run(&self) -> tantivy::Result<Option<Vec<Candidate>>> {
        let max_doc = self.reader.max_doc();
        if max_doc < MIN_SEGMENT_DOCS {
            return Ok(None);
        }
        let points = sorted_points(self.reader, self.lead.field)?;
        let desc = self.lead.desc;
        let (span, conclusive) = self.competitive_span(&points);
        if span.is_empty() {
            return Ok(conclusive.then(Vec::new));
        }
        // The walk checks the request's cancellation itself, per chunk.
        let (scorer, token) = lode_query::unwatched(self.weight.scorer(self.reader, 1.0)?);
        if scorer.doc() == TERMINATED {
            return Ok(Some(Vec::new()));
        }
        if !self.scoring && !points.multi_valued() {
            if let Some(words) = lode_query::points::held_bitset(&*scorer) {
                let token = token.as_ref();
                return Ok(self.walk_bits(&points, span, &words, scorer.cost(), token, conclusive));
            }
        }
        // A scan steps through the documents of the query's leading clause (its `cost`); a
        // walked position costs a few scan steps (a sort and a seek). Walk at most a quarter
        // as many positions, and not at all when `limit` positions are already more (unless
        // the competitive span is smaller still).
        let budget = (scorer.cost() / WALK_STEP_COST) as usize;
        if self.limit > budget && span.len() > budget {
            return Ok(None);
        }
        let alive = self.reader.alive_bitset();
        let mut seen = points
            .multi_valued()
            .then(|| vec![0u64; (max_doc as usize).div_ceil(64)]);
        let n = span.len();
        let at = |i: usize| {
            if desc {
                span.end - 1 - i
            } else {
                span.start + i
            }
        };
        let mut found: Vec<Candidate> = Vec::new();
        // Matches sure to sort after `search_after`.
        let mut counted = 0usize;
        let mut walked = 0usize;
        let mut chunk = (2 * self.limit).max(MIN_CHUNK).min(n);
        let mut batch: Vec<(DocId, u64)> = Vec::new();
        let mut order = DocOrder::default();
        let mut first = Some(scorer);
        while walked < n {
            if token.as_ref().is_some_and(|t| t.cancelled()) {
                // The query phase answers the cancellation; what was found is dropped.
                return Ok(Some(found));
            }
            let end = chunk_end(&points, &span, desc, walked, chunk);
            let mut scorer = match first.take() {
                Some(s) => s,
                None => lode_query::unwatched(self.weight.scorer(self.reader, 1.0)?).0,
            };
            // Where the new scorer stands: its first match (any earlier document misses).
            let first_match = scorer.doc();
            if seen.is_none() && !self.scoring && (end - walked) * 8 >= order.words(max_doc) {
                // A large chunk goes through a bitset into doc order: linear where a sort
                // is not, and a chunk of misses (a query anti-correlated with the sort) is
                // what a walk meets most.
                let positions = (walked..end).map(at);
                let docs = positions
                    .clone()
                    .map(|pos| points.doc(pos))
                    .filter(|&doc| !Tie::misses(self.tie, doc));
                order.check(docs, alive, |doc| {
                    check(&mut *scorer, first_match, doc, false)
                });
                for pos in positions {
                    let doc = points.doc(pos);
                    if order.take_match(doc) {
                        let value = points.value(pos);
                        found.push(Candidate {
                            doc,
                            value,
                            score: 0.0,
                        });
                        if self.past_after(value) {
                            counted += 1;
                        }
                    }
                }
            } else {
                batch.clear();
                for i in walked..end {
                    let pos = at(i);
                    let doc = points.doc(pos);
                    if alive.is_some_and(|a| !a.is_alive(doc)) || Tie::misses(self.tie, doc) {
                        continue;
                    }
                    if let Some(seen) = seen.as_mut() {
                        let (w, bit) = (doc as usize / 64, 1u64 << (doc % 64));
                        if seen[w] & bit != 0 {
                            continue;
                        }
                        seen[w] |= bit;
                    }
                    batch.push((doc, points.value(pos)));
                }
                batch.sort_unstable_by_key(|&(doc, _)| doc);
                for &(doc, value) in &batch {
                    match check(&mut *scorer, first_match, doc, self.scoring) {
                        Check::Match => {}
                        Check::Miss => continue,
                        Check::End => break,
                    }
                    found.push(Candidate {
                        doc,
                        value,
                        score: if self.scoring { scorer.score() } else { 0.0 },
                    });
                    if self.past_after(value) {
                        counted += 1;
                    }
                }
            }
            walked = end;
            if counted >= self.limit {
                return Ok(Some(found));
            }
            if walked >= n {
                break;
            }
            // The next chunk aims at the share of positions matching so far, and grows at
            // least twofold: when the matches lie away from the competitive end (the query
            // anti-correlated with the sort) the walk reaches them in a few chunks, or
            // reaches its budget and gives up for the scan. Walking never exceeds the
            // budget, so a futile walk costs at most about what the scan costs.
            if walked >= budget {
                return Ok(None);
            }
            let rate = (found.len().max(1) as f64) / walked as f64;
            let want = ((self.limit - counted) as f64 / rate * 1.25) as usize;
            if want > budget - walked {
                // At the rate met so far (an optimistic one: at least one match), the walk
                // would run out of budget before `limit` matches: scan now rather than walk
                // up to the budget first (a sort anti-correlated with a filter on another
                // field walked a third of the segment for nothing).
                return Ok(None);
            }
            chunk = want.clamp(chunk * 2, chunk * 4).min(budget - walked);
        }
        if !conclusive {
            return Ok(None);
        }
        Ok(Some(found))
    }
}

impl Walk<'_> {
    /// Candidates for a sort of several keys whose competitive lead value many documents
    /// share (`status` then `createdTime`): the lead's walk would take every document of
    /// that value (a chunk never splits a value) and the collector compare them all on the
    /// next key, the whole segment when one value covers most of it. Instead each lead
    /// value in turn, in sort order, walks the second key's points among the documents
    /// holding it, until `limit` matches are found: Lucene gets there by comparing the
    /// second key only against the bottom of its queue, which still visits every tied
    /// document. A value few documents hold takes them all, as the lead's walk does.
    /// `None` where this does not apply or cannot conclude (the caller then walks the lead
    /// or scans).
    fn tie_walk(
        &self,
        second: &Lead,
        second_after: Option<u64>,
    ) -> tantivy::Result<Option<Vec<Candidate>>> {
        if self.reader.max_doc() < MIN_SEGMENT_DOCS {
            return Ok(None);
        }
        let points = sorted_points(self.reader, self.lead.field)?;
        if points.multi_valued() {
            return Ok(None);
        }
        let (span, conclusive) = self.competitive_span(&points);
        let desc = self.lead.desc;
        let n = span.len();
        let at = |i: usize| {
            if desc {
                span.end - 1 - i
            } else {
                span.start + i
            }
        };
        // Where the value at walk step `from` ends, in walk steps.
        let value_end = |from: usize| chunk_end(&points, &span, desc, from, 1);
        let small = (TIE_FACTOR * self.limit).max(TIE_MIN_DOCS);
        if n == 0 || value_end(0) <= small {
            return Ok(None);
        }
        // Values few documents hold are checked document by document; past this many
        // documents the lead's own walk (or the scan) serves better.
        let direct_budget = (self.reader.max_doc() / 4) as usize;
        let mut direct = 0;
        let mut found = Vec::new();
        let mut counted = 0;
        let mut walked = 0;
        while walked < n && counted < self.limit {
            let end = value_end(walked);
            let value = points.value(at(walked));
            let (matched, past) = if end - walked <= small {
                direct += end - walked;
                if direct > direct_budget {
                    return Ok(None);
                }
                let docs = (walked..end).map(|i| points.doc(at(i))).collect();
                let matched = self.check_docs(docs, value)?;
                // Documents equal to `search_after`'s lead value may still sort before it.
                let past = if self.past_after(value) {
                    matched.len()
                } else {
                    0
                };
                (matched, past)
            } else if !self.past_after(value) && self.after_tie != Some(value) {
                // A keyword's `search_after` term the segment lacks: this value's documents
                // all sort before it.
                (Vec::new(), 0)
            } else {
                let Some(tie) = Tie::new(self.reader, self.lead, value)? else {
                    return Ok(None);
                };
                // A column read other than as the points were built would walk nothing.
                if !tie.holds(points.doc(at(walked))) {
                    return Ok(None);
                }
                let sub = Walk {
                    lead: second,
                    weight: self.weight,
                    reader: self.reader,
                    limit: self.limit - counted,
                    bounds: None,
                    // Documents of `search_after`'s lead value continue after its second.
                    after: if self.after_tie == Some(value) {
                        second_after
                    } else {
                        None
                    },
                    after_tie: None,
                    bottom: None,
                    scoring: self.scoring,
                    tie: Some(&tie),
                };
                let Some(matched) = sub.run()? else {
                    return Ok(None);
                };
                let past = matched.iter().filter(|c| sub.past_after(c.value)).count();
                (matched, past)
            };
            counted += past;
            found.extend(matched);
            walked = end;
        }
        if counted < self.limit && !conclusive {
            return Ok(None);
        }
        #[cfg(test)]
        tests::TIE_WALKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(Some(found))
    }

    /// The live matches among `docs`, whose lead value is `value`.
    fn check_docs(&self, mut docs: Vec<DocId>, value: u64) -> tantivy::Result<Vec<Candidate>> {
        docs.sort_unstable();
        let alive = self.reader.alive_bitset();
        let (mut scorer, _) = lode_query::unwatched(self.weight.scorer(self.reader, 1.0)?);
        let first_match = scorer.doc();
        let mut out = Vec::new();
        for doc in docs {
            if alive.is_some_and(|a| !a.is_alive(doc)) {
                continue;
            }
            match check(&mut *scorer, first_match, doc, self.scoring) {
                Check::Match => out.push(Candidate {
                    doc,
                    value,
                    score: if self.scoring { scorer.score() } else { 0.0 },
                }),
                Check::Miss => {}
                Check::End => break,
            }
        }
        Ok(out)
    }

    /// The walk when the query's matches are a bitset (`matches` of them): a walked position
    /// then costs a bit test, where a scanned match costs reading and comparing its sort
    /// value, so the walk may go [`BITS_WALK_GAIN`] times as many positions as there are
    /// matches before the scan is cheaper. Candidates come in walked order, and the walk
    /// stops at the end of the value where the `limit`-th one stands (ties sort by doc id).
    fn walk_bits(
        &self,
        points: &SortedPoints,
        span: std::ops::Range<usize>,
        words: &[u64],
        matches: u64,
        token: Option<&lode_query::TokenCheck>,
        conclusive: bool,
    ) -> Option<Vec<Candidate>> {
        #[cfg(test)]
        tests::BIT_WALKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let budget = matches
            .saturating_mul(BITS_WALK_GAIN)
            .max(self.limit as u64 * 4) as usize;
        let alive = self.reader.alive_bitset();
        let mut found = Vec::new();
        let mut counted = 0;
        let mut last: Option<u64> = None;
        for i in 0..span.len() {
            if i >= budget {
                return None;
            }
            if i % CANCEL_EVERY == 0 && token.is_some_and(|t| t.cancelled()) {
                // The query phase answers the cancellation; what was found is dropped.
                return Some(found);
            }
            let pos = if self.lead.desc {
                span.end - 1 - i
            } else {
                span.start + i
            };
            let value = points.value(pos);
            if last.is_some_and(|l| l != value) {
                return Some(found);
            }
            let doc = points.doc(pos);
            if (words[doc as usize / 64] >> (doc % 64)) & 1 == 0
                || alive.is_some_and(|a| !a.is_alive(doc))
                || Tie::misses(self.tie, doc)
            {
                continue;
            }
            found.push(Candidate {
                doc,
                value,
                score: 0.0,
            });
            if self.past_after(value) {
                counted += 1;
                if counted >= self.limit {
                    last = Some(value);
                }
            }
        }
        conclusive.then_some(found)
    }
}

/// Puts a chunk of walked documents into doc order through a bitset of the segment (the
/// chunk's documents, then the matches among them), reused across chunks.
#[derive(Default)]
struct DocOrder {
    marks: Vec<u64>,
    matched: Vec<u64>,
}

impl DocOrder {
    /// The bitset's length in words: what one pass over it costs.
    fn words(&self, max_doc: DocId) -> usize {
        (max_doc as usize).div_ceil(64)
    }

    /// Checks the live `docs` in increasing order with `check`, remembering the matches for
    /// [`DocOrder::take_match`].
    fn check(
        &mut self,
        docs: impl Iterator<Item = DocId>,
        alive: Option<&tantivy::fastfield::AliveBitSet>,
        mut check: impl FnMut(DocId) -> Check,
    ) {
        let (mut lo, mut hi) = (usize::MAX, 0);
        for doc in docs {
            if alive.is_some_and(|a| !a.is_alive(doc)) {
                continue;
            }
            let w = doc as usize / 64;
            if self.marks.len() <= w {
                self.marks.resize(w + 1, 0);
                self.matched.resize(w + 1, 0);
            }
            self.marks[w] |= 1 << (doc % 64);
            (lo, hi) = (lo.min(w), hi.max(w));
        }
        if lo > hi {
            return;
        }
        'words: for w in lo..=hi {
            let mut bits = std::mem::take(&mut self.marks[w]);
            while bits != 0 {
                let doc = (w * 64) as DocId + bits.trailing_zeros();
                bits &= bits - 1;
                match check(doc) {
                    Check::Match => self.matched[w] |= 1 << (doc % 64),
                    Check::Miss => {}
                    Check::End => break 'words,
                }
            }
        }
        self.marks[lo..=hi].fill(0);
    }

    /// Whether `doc` matched in the last [`DocOrder::check`]; forgets it.
    fn take_match(&mut self, doc: DocId) -> bool {
        let (w, bit) = (doc as usize / 64, 1u64 << (doc % 64));
        match self.matched.get_mut(w) {
            Some(word) if *word & bit != 0 => {
                *word &= !bit;
                true
            }
            _ => false,
        }
    }
}

enum Check {
    Match,
    Miss,
    /// No later document matches either.
    End,
}

/// Whether `doc` matches, for increasing `doc`s, on a scorer created at `first_match`.
/// Without scores, `seek_danger` answers with a point lookup (a column checks the
/// document's own value) where `seek` would scan forward to the next match; it may leave the
/// scorer between documents, so only targets past its first match go to it. Scores need the
/// scorer positioned, so they take `seek`.
fn check(scorer: &mut dyn Scorer, first_match: DocId, doc: DocId, scoring: bool) -> Check {
    let next = if doc <= first_match {
        first_match
    } else if scoring {
        let mut cur = scorer.doc();
        if cur < doc {
            cur = scorer.seek(doc);
        }
        cur
    } else {
        match scorer.seek_danger(doc) {
            SeekDangerResult::Found => doc,
            SeekDangerResult::SeekLowerBound(next) => next,
        }
    };
    match next {
        d if d == doc => Check::Match,
        TERMINATED => Check::End,
        _ => Check::Miss,
    }
}

/// The end (exclusive, in walk steps) of the chunk starting at `from`: `chunk` steps, then on
/// to the next change of value so that a value's documents are never split.
fn chunk_end(
    points: &SortedPoints,
    span: &std::ops::Range<usize>,
    desc: bool,
    from: usize,
    chunk: usize,
) -> usize {
    let n = span.len();
    let end = from.saturating_add(chunk).min(n);
    let last_pos = if desc {
        span.end - end
    } else {
        span.start + end - 1
    };
    let last = points.value(last_pos);
    let group = points.span(last, last);
    let group_end = if desc {
        span.end - group.start.max(span.start)
    } else {
        group.end.min(span.end) - span.start
    };
    group_end.max(end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sort::SortKey;
    use lode_query::conjunction::FilterConjunction;
    use lode_query::points::PointRangeQuery;
    use tantivy::collector::Collector;
    use tantivy::query::{AllQuery, BooleanQuery, Occur, RangeQuery, TermQuery};
    use tantivy::schema::{IndexRecordOption, Schema, FAST, INDEXED, STRING};
    use tantivy::{Index, TantivyDocument, Term};

    thread_local! {
        /// Segments answered by a walk (the rest were scanned), per test thread.
        pub static WALKED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }
    /// Segments answered by walking the second key among a lead value's documents.
    pub static TIE_WALKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    /// Segments walked over a bitset of the matches.
    pub static BIT_WALKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    /// Segments scanned into [`crate::lead_select::RankedRows`].
    pub static RANKED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    /// Segments scanned through [`crate::lead_select::candidates`].
    pub static SELECTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    fn collector(
        keys: &[SortKey],
        limit: usize,
        after: Option<Vec<SortValue>>,
    ) -> FieldSortCollector {
        FieldSortCollector {
            keys: keys.to_vec(),
            limit,
            after,
            shard_id: 0,
            track_scores: false,
        }
    }

    /// `search_after` rows to continue from: those of the hits at `at` (a shallow and a deep
    /// one), and, when the lead is a term, one placed after the first's lead term by `suffix`
    /// (a term no segment holds, between two of them).
    fn search_afters(expected: &[SortedHit], at: [usize; 2], suffix: &str) -> Vec<Vec<SortValue>> {
        let mut afters: Vec<Vec<SortValue>> = at
            .iter()
            .filter_map(|&i| expected.get(i))
            .map(|h| h.values.clone())
            .collect();
        if let Some(SortValue::Str(t)) = afters.first().map(|a| a[0].clone()) {
            let mut between = afters[0].clone();
            between[0] = SortValue::Str(format!("{t}{suffix}"));
            afters.push(between);
        }
        afters
    }

    fn key(name: &str, storage: Storage, desc: bool) -> SortKey {
        SortKey {
            kind: SortKind::Field {
                name: name.into(),
                storage,
                is_date: false,
            },
            desc,
            missing_first: false,
            missing_value: None,
            mode: None,
            nested: None,
        }
    }

    /// Three segments of 20,000 documents: `t` with many ties and some documents without a
    /// value, `m` multi-valued, `f` a float, `s` a status, `g` (and `c`, as a keyword) a
    /// status most documents share; some documents deleted.
    fn index() -> Index {
        let mut sb = Schema::builder();
        let t = sb.add_i64_field("t", INDEXED | FAST);
        let m = sb.add_i64_field("m", INDEXED | FAST);
        let f = sb.add_f64_field("f", INDEXED | FAST);
        let s = sb.add_u64_field("s", INDEXED | FAST);
        let k = sb.add_text_field("k", STRING | FAST);
        let g = sb.add_i64_field("g", INDEXED | FAST);
        let h = sb.add_i64_field("h", INDEXED | FAST);
        let c = sb.add_text_field("c", STRING | FAST);
        let index = Index::create_in_ram(sb.build());
        let mut w = index.writer_with_num_threads(1, 50_000_000).unwrap();
        let mut x: u64 = 12345;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        };
        for i in 0..60_000u64 {
            let mut d = TantivyDocument::default();
            d.add_u64(s, i % 4);
            let v = (next() % 5_000) as i64;
            if i % 97 != 0 {
                d.add_i64(t, v);
                d.add_f64(f, v as f64 / 3.0 - 100.0);
            }
            // A status-like lead: most documents hold 0, many 1, a few one of 50 others.
            if i % 101 != 0 {
                let r = next() % 10;
                let v = match r {
                    0..=6 => 0,
                    7 | 8 => 1,
                    _ => 2 + (next() % 50) as i64,
                };
                d.add_i64(g, v);
                // The same as a keyword (`c0`..`c51`).
                d.add_text(c, format!("c{v}"));
            }
            d.add_i64(h, (next() % 4) as i64);
            d.add_i64(m, (next() % 10_000) as i64);
            if i % 3 == 0 {
                d.add_i64(m, (next() % 10_000) as i64);
            }
            // Keywords: ~3,000 distinct, some documents with two, some with none.
            if i % 89 != 0 {
                d.add_text(k, format!("k{:04}", next() % 3_000));
                if i % 7 == 0 {
                    d.add_text(k, format!("k{:04}", next() % 3_000));
                }
            }
            w.add_document(d).unwrap();
            if i % 20_000 == 19_999 {
                w.commit().unwrap();
            }
        }
        for v in [7u64, 11] {
            w.delete_term(Term::from_field_u64(s, 3));
            w.delete_term(Term::from_field_i64(t, v as i64));
        }
        w.commit().unwrap();
        index
    }

    /// Selective queries under a lead many documents share and a numeric tie-break (the
    /// walks give up, the segment is scanned and its matches selected on the lead first:
    /// [`crate::lead_select`]) give the collector's hits: both orders on both keys, a second
    /// key multi-valued (`m`) or missing (`t`, `f`), deep limits, `search_after` within a
    /// lead value and past one, deletes (the index has them).
    #[test]
    fn selected_leads_equal_the_collector() {
        let index = index();
        let searcher = index.reader().unwrap().searcher();
        let schema = index.schema();
        let field = |n: &str| schema.get_field(n).unwrap();
        let term = |f: &str, v: i64| -> (Occur, Box<dyn Query>) {
            (
                Occur::Should,
                Box::new(TermQuery::new(
                    Term::from_field_i64(field(f), v),
                    IndexRecordOption::Basic,
                )),
            )
        };
        let queries: Vec<(&str, Box<dyn Query>)> = vec![
            // Two of the four `h` values: half the documents, the bench's `should` shape.
            (
                "h=1 or h=3",
                Box::new(BooleanQuery::new(vec![term("h", 1), term("h", 3)])),
            ),
            // A few hundred documents of one `h` value with the `g` lead's rarer values.
            (
                "g=1 or g=5 and h=2",
                Box::new(BooleanQuery::new(vec![
                    (
                        Occur::Must,
                        Box::new(BooleanQuery::new(vec![term("g", 1), term("g", 5)])),
                    ),
                    (Occur::Must, term("h", 2).1),
                ])),
            ),
        ];
        let mut m_max = key("m", Storage::I64, false);
        m_max.mode = Some(SortMode::Max);
        let mut t_missing_first = key("t", Storage::I64, false);
        t_missing_first.missing_first = true;
        let sorts = [
            vec![
                key("c", Storage::Keyword, false),
                key("t", Storage::I64, true),
            ],
            vec![key("c", Storage::Keyword, false), t_missing_first],
            vec![
                key("c", Storage::Keyword, true),
                key("f", Storage::F64, false),
            ],
            vec![key("c", Storage::Keyword, false), m_max],
            vec![
                key("c", Storage::Keyword, true),
                key("m", Storage::I64, true),
            ],
            vec![key("g", Storage::I64, false), key("t", Storage::I64, false)],
            vec![
                key("g", Storage::I64, true),
                key("f", Storage::F64, true),
                key("m", Storage::I64, false),
            ],
            // A keyword second key: the collector orders the selected matches.
            vec![
                key("c", Storage::Keyword, false),
                key("k", Storage::Keyword, true),
            ],
        ];
        let before = SELECTED.load(std::sync::atomic::Ordering::Relaxed);
        let ranked_before = RANKED.load(std::sync::atomic::Ordering::Relaxed);
        for (name, q) in &queries {
            for keys in &sorts {
                for limit in [300, 1_000, 5_000, 40_000] {
                    let coll = |after: Option<Vec<SortValue>>| collector(keys, limit, after);
                    let stats = lode_query::FieldStatistics::new(&searcher);
                    let expected = stats.search(&searcher, &**q, &coll(None)).unwrap();
                    let got = top_hits(&searcher, &stats, &**q, &coll(None), None)
                        .unwrap()
                        .expect("the lead key qualifies");
                    let what = format!("{name} {keys:?} limit={limit}");
                    let addr = |h: &[SortedHit]| h.iter().map(|x| x.addr).collect::<Vec<_>>();
                    assert_eq!(addr(&got), addr(&expected), "{what}");
                    // After a shallow and a deep hit (within a lead value), and after a
                    // lead term no segment holds.
                    for after in search_afters(&expected, [7, limit / 2], "!") {
                        let expected = stats.search(&searcher, &**q, &coll(Some(after.clone())));
                        let got = top_hits(&searcher, &stats, &**q, &coll(Some(after)), None)
                            .unwrap()
                            .unwrap();
                        assert_eq!(addr(&got), addr(&expected.unwrap()), "{what} after");
                    }
                }
            }
        }
        let selected = SELECTED.load(std::sync::atomic::Ordering::Relaxed) - before;
        assert!(
            selected >= 20,
            "only {selected} segments selected on the lead"
        );
        let ranked = RANKED.load(std::sync::atomic::Ordering::Relaxed) - ranked_before;
        assert!(ranked >= 100, "only {ranked} segments ranked as integers");
    }

    /// The worst hit held bars later segments' documents (`FieldSortSegment::bar_with`) where
    /// its keyword terms are ones the segment lacks: each segment holds its own terms only
    /// (`w` is `wNNN` with NNN = the segment's number modulo 3), so every bar places a term
    /// between two ordinals; `v` has four terms every segment holds, so that rows equal to
    /// the bar come up (they win the tie in a segment ordered before the bar's). The hits
    /// equal the collector's alone, every order, every limit.
    #[test]
    fn a_held_row_bars_later_segments_between_their_terms() {
        // Segments are walked largest first: each order of sizes puts a segment walked later
        // before (in segment order) the one holding the bar in some cases.
        for sizes in [
            [800u64, 5_000, 1_500, 3_000],
            [5_000, 800, 3_000, 1_500],
            [1_500, 3_000, 5_000, 800],
        ] {
            barred_segments_equal_the_collector(sizes);
        }
    }

    fn barred_segments_equal_the_collector(sizes: [u64; 4]) {
        let mut sb = Schema::builder();
        let w = sb.add_text_field("w", STRING | FAST);
        let n = sb.add_i64_field("n", INDEXED | FAST);
        let v = sb.add_text_field("v", STRING | FAST);
        let index = Index::create_in_ram(sb.build());
        let mut wr = index.writer_with_num_threads(1, 50_000_000).unwrap();
        let mut x: u64 = 99;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        };
        for (seg, docs) in sizes.into_iter().enumerate() {
            for i in 0..docs {
                let mut d = TantivyDocument::default();
                if i % 17 != 0 {
                    let t = 3 * (next() % 40) + seg as u64 % 3;
                    d.add_text(w, format!("w{t:03}"));
                }
                d.add_i64(n, (next() % 30) as i64);
                d.add_text(v, format!("v{}", next() % 4));
                wr.add_document(d).unwrap();
            }
            wr.commit().unwrap();
        }
        let searcher = index.reader().unwrap().searcher();
        let stats = lode_query::FieldStatistics::new(&searcher);
        let sorts = [
            vec![
                key("w", Storage::Keyword, false),
                key("n", Storage::I64, true),
            ],
            vec![
                key("w", Storage::Keyword, true),
                key("n", Storage::I64, false),
            ],
            vec![
                key("n", Storage::I64, true),
                key("w", Storage::Keyword, false),
            ],
            vec![
                key("n", Storage::I64, false),
                key("w", Storage::Keyword, true),
            ],
            // Terms every segment holds: rows equal to the bar in a segment ordered before
            // the bar's win the tie.
            vec![
                key("v", Storage::Keyword, false),
                key("n", Storage::I64, true),
            ],
            vec![
                key("n", Storage::I64, true),
                key("v", Storage::Keyword, true),
            ],
        ];
        for keys in &sorts {
            for limit in [1, 7, 100, 2_000, 9_000] {
                let coll = collector(keys, limit, None);
                let expected = stats.search(&searcher, &AllQuery, &coll).unwrap();
                let got = top_hits(&searcher, &stats, &AllQuery, &coll, None)
                    .unwrap()
                    .expect("the lead key qualifies");
                let addr = |h: &[SortedHit]| h.iter().map(|x| x.addr).collect::<Vec<_>>();
                assert_eq!(addr(&got), addr(&expected), "{keys:?} limit={limit}");
            }
        }
    }

    /// A keyword lead walks the segment's term ordinals, later segments only those that can
    /// still beat the worst term held (placed in each segment's dictionary): the same hits as
    /// the collector alone, ascending and descending, shallow and deep, one- and
    /// multi-valued, with missing values and deleted documents, under a filter (stepped or a
    /// bitset), with a second key, and continued with `search_after`.
    #[test]
    fn walked_keyword_top_hits_equal_the_collector() {
        let index = index();
        let searcher = index.reader().unwrap().searcher();
        let s = index.schema().get_field("s").unwrap();
        let s_is = |v: u64| -> Box<dyn Query> {
            let fallback = TermQuery::new(Term::from_field_u64(s, v), IndexRecordOption::Basic);
            Box::new(PointRangeQuery::new(s, v, v, Box::new(fallback)))
        };
        let queries: Vec<(&str, Box<dyn Query>)> = vec![
            ("all", Box::new(AllQuery)),
            (
                "s=1",
                Box::new(TermQuery::new(
                    Term::from_field_u64(s, 1),
                    IndexRecordOption::Basic,
                )),
            ),
            (
                "s=2 as a bitset",
                Box::new(FilterConjunction::new(vec![s_is(2), s_is(2)])),
            ),
        ];
        let sorts = [
            vec![key("k", Storage::Keyword, false)],
            vec![key("k", Storage::Keyword, true)],
            vec![
                key("k", Storage::Keyword, false),
                key("m", Storage::I64, true),
            ],
            vec![
                key("k", Storage::Keyword, true),
                key("t", Storage::I64, false),
            ],
        ];
        let view = |h: &[SortedHit]| {
            h.iter()
                .map(|x| (x.addr, x.values.clone()))
                .collect::<Vec<_>>()
        };
        let before = WALKED.with(|n| n.get());
        for (name, q) in &queries {
            for keys in &sorts {
                for limit in [1, 10, 1_010, 12_000] {
                    let coll = |after: Option<Vec<SortValue>>| collector(keys, limit, after);
                    let stats = lode_query::FieldStatistics::new(&searcher);
                    let expected = stats.search(&searcher, &**q, &coll(None)).unwrap();
                    let got = top_hits(&searcher, &stats, &**q, &coll(None), None)
                        .unwrap()
                        .expect("a keyword lead qualifies");
                    let what = format!("{name} {keys:?} limit={limit}");
                    assert_eq!(view(&got), view(&expected), "{what}");
                    // Continue after a shallow and a deep hit, and after a term no segment
                    // holds (between two of them).
                    for after in search_afters(&expected, [4, limit / 2], "~") {
                        let after = coll(Some(after));
                        let expected = stats.search(&searcher, &**q, &after).unwrap();
                        let got = top_hits(&searcher, &stats, &**q, &after, None)
                            .unwrap()
                            .expect("a keyword lead qualifies after a term");
                        assert_eq!(view(&got), view(&expected), "{what} after");
                    }
                }
            }
        }
        let walked = WALKED.with(|n| n.get()) - before;
        assert!(walked >= 100, "only {walked} segments were walked");
        // The collector above is the oracle only if it is right itself: check a deep
        // descending page against the stored terms once (a document sorts on its largest).
        let hits = top_hits(
            &searcher,
            &lode_query::FieldStatistics::new(&searcher),
            &AllQuery,
            &FieldSortCollector {
                keys: vec![key("k", Storage::Keyword, true)],
                limit: 1_010,
                after: None,
                shard_id: 0,
                track_scores: false,
            },
            None,
        )
        .unwrap()
        .unwrap();
        let mut all: Vec<String> = Vec::new();
        for seg in searcher.segment_readers() {
            let col = seg.fast_fields().str("k").unwrap().unwrap();
            for d in 0..seg.max_doc() {
                if seg.is_deleted(d) {
                    continue;
                }
                let terms = col.term_ords(d).map(|o| {
                    let mut t = String::new();
                    col.ord_to_str(o, &mut t).unwrap();
                    t
                });
                all.extend(terms.max());
            }
        }
        all.sort_unstable_by(|a, b| b.cmp(a));
        let got: Vec<String> = hits
            .iter()
            .map(|h| match &h.values[0] {
                SortValue::Str(t) => t.clone(),
                v => panic!("value {v:?}"),
            })
            .collect();
        assert_eq!(got, all[..1_010]);
    }

    /// A keyword's `missing` term sorts among the other terms (the collector compares terms
    /// then, not ordinals): checked against the stored terms.
    #[test]
    fn a_keyword_missing_term_sorts_among_the_terms() {
        let index = index();
        let searcher = index.reader().unwrap().searcher();
        // Terms near the competitive end, so that the documents without one are on the page.
        for (desc, missing) in [(false, "k0020"), (true, "k2980")] {
            let mut k = key("k", Storage::Keyword, desc);
            k.missing_value = Some(SortValue::Str(missing.into()));
            let coll = FieldSortCollector {
                keys: vec![k],
                limit: 2_000,
                after: None,
                shard_id: 0,
                track_scores: false,
            };
            let stats = lode_query::FieldStatistics::new(&searcher);
            assert!(top_hits(&searcher, &stats, &AllQuery, &coll, None)
                .unwrap()
                .is_none());
            let hits = stats.search(&searcher, &AllQuery, &coll).unwrap();
            let mut all: Vec<String> = Vec::new();
            for seg in searcher.segment_readers() {
                let col = seg.fast_fields().str("k").unwrap().unwrap();
                for d in (0..seg.max_doc()).filter(|&d| !seg.is_deleted(d)) {
                    let terms = col.term_ords(d).map(|o| {
                        let mut t = String::new();
                        col.ord_to_str(o, &mut t).unwrap();
                        t
                    });
                    let v = if desc { terms.max() } else { terms.min() };
                    all.push(v.unwrap_or_else(|| missing.into()));
                }
            }
            all.sort_unstable();
            if desc {
                all.reverse();
            }
            let got: Vec<String> = hits
                .iter()
                .map(|h| match &h.values[0] {
                    SortValue::Str(t) => t.clone(),
                    v => panic!("value {v:?}"),
                })
                .collect();
            assert_eq!(got, all[..2_000], "desc={desc}");
        }
    }

    #[test]
    fn walked_top_hits_equal_the_collector() {
        let index = index();
        let searcher = index.reader().unwrap().searcher();
        let schema = index.schema();
        let field = |n: &str| schema.get_field(n).unwrap();
        let status = |v: u64| -> Box<dyn Query> {
            Box::new(TermQuery::new(
                Term::from_field_u64(field("s"), v),
                IndexRecordOption::Basic,
            ))
        };
        let t_below = |hi: i64| -> Box<dyn Query> {
            Box::new(RangeQuery::new(
                std::ops::Bound::Unbounded,
                std::ops::Bound::Excluded(Term::from_field_i64(field("t"), hi)),
            ))
        };
        // The engine's own filters: ranges on the points, ANDed as bitsets (the walk then
        // tests bits).
        let s_is = |v: u64| -> Box<dyn Query> {
            let fallback = TermQuery::new(
                Term::from_field_u64(field("s"), v),
                IndexRecordOption::Basic,
            );
            Box::new(PointRangeQuery::new(field("s"), v, v, Box::new(fallback)))
        };
        let t_under = |hi: i64| -> Box<dyn Query> {
            Box::new(PointRangeQuery::new(
                field("t"),
                i64::MIN.to_u64(),
                (hi - 1).to_u64(),
                t_below(hi),
            ))
        };
        type Case = (&'static str, Box<dyn Query>, Option<(u64, u64)>);
        let queries: Vec<Case> = vec![
            ("all", Box::new(AllQuery), None),
            ("s=1", status(1), None),
            (
                "s=2 and t<1200",
                Box::new(BooleanQuery::new(vec![
                    (Occur::Must, status(2)),
                    (Occur::Must, t_below(1200)),
                ])),
                Some((i64::MIN.to_u64(), 1199i64.to_u64())),
            ),
            (
                "s=2 and t<1200 as bitsets",
                Box::new(FilterConjunction::new(vec![s_is(2), t_under(1200)])),
                Some((i64::MIN.to_u64(), 1199i64.to_u64())),
            ),
            (
                "s=1 and t<4000 as bitsets",
                Box::new(FilterConjunction::new(vec![s_is(1), t_under(4000)])),
                Some((i64::MIN.to_u64(), 3999i64.to_u64())),
            ),
        ];
        let sorts = [
            vec![key("t", Storage::I64, true)],
            vec![key("t", Storage::I64, false)],
            vec![key("f", Storage::F64, true)],
            vec![key("m", Storage::I64, false)],
            vec![key("m", Storage::I64, true)],
            vec![key("t", Storage::I64, false), key("m", Storage::I64, true)],
            // Leads most documents share: the second key walked among them.
            vec![key("g", Storage::I64, false), key("t", Storage::I64, true)],
            vec![key("g", Storage::I64, true), key("f", Storage::F64, false)],
            vec![
                key("g", Storage::I64, false),
                key("k", Storage::Keyword, false),
            ],
            vec![
                key("g", Storage::I64, false),
                key("k", Storage::Keyword, true),
            ],
            vec![key("g", Storage::I64, false), key("m", Storage::I64, true)],
            vec![
                key("g", Storage::I64, false),
                key("h", Storage::I64, false),
                key("t", Storage::I64, true),
            ],
            // A keyword lead most documents share.
            vec![
                key("c", Storage::Keyword, false),
                key("t", Storage::I64, true),
            ],
            vec![
                key("c", Storage::Keyword, true),
                key("f", Storage::F64, false),
            ],
            vec![
                key("c", Storage::Keyword, false),
                key("k", Storage::Keyword, true),
            ],
        ];
        let mut walked = 0;
        let mut keyword_tie_walks = 0;
        for (name, q, bounds) in &queries {
            for keys in &sorts {
                let tie_walks = TIE_WALKS.load(std::sync::atomic::Ordering::Relaxed);
                let bounds = bounds.filter(|_| keys[0].kind == key("t", Storage::I64, true).kind);
                for limit in [1, 10, 1_000, 30_000] {
                    let coll = |after: Option<Vec<SortValue>>| collector(keys, limit, after);
                    let expected = lode_query::FieldStatistics::new(&searcher)
                        .search(&searcher, &**q, &coll(None))
                        .unwrap();
                    let got = top_hits(
                        &searcher,
                        &lode_query::FieldStatistics::new(&searcher),
                        &**q,
                        &coll(None),
                        bounds,
                    )
                    .unwrap()
                    .expect("the lead key qualifies");
                    let what = format!("{name} {keys:?} limit={limit}");
                    let addr = |h: &[SortedHit]| h.iter().map(|x| x.addr).collect::<Vec<_>>();
                    assert_eq!(addr(&got), addr(&expected), "{what}");
                    // The same continued from `after`, as `search_after` does.
                    let continued = |after: Vec<SortValue>, label: &str| {
                        let expected = lode_query::FieldStatistics::new(&searcher)
                            .search(&searcher, &**q, &coll(Some(after.clone())))
                            .unwrap();
                        let got = top_hits(
                            &searcher,
                            &lode_query::FieldStatistics::new(&searcher),
                            &**q,
                            &coll(Some(after)),
                            bounds,
                        )
                        .unwrap()
                        .unwrap();
                        assert_eq!(addr(&got), addr(&expected), "{what} after {label}");
                    };
                    if let Some(h) = expected.get(4) {
                        continued(h.values.clone(), "5th");
                    }
                    // After a keyword lead term no segment holds (between `c0` and `c1`).
                    if keys[0].kind == key("c", Storage::Keyword, false).kind {
                        let mut after = vec![SortValue::Str("c0!".into())];
                        match expected.first() {
                            Some(h) => after.extend(h.values[1..].iter().cloned()),
                            None => after.push(SortValue::Missing),
                        }
                        continued(after, "c0!");
                    }
                    walked += 1;
                }
                if keys[0].kind == key("c", Storage::Keyword, false).kind {
                    keyword_tie_walks +=
                        TIE_WALKS.load(std::sync::atomic::Ordering::Relaxed) - tie_walks;
                }
            }
        }
        assert!(
            keyword_tie_walks >= 100,
            "only {keyword_tie_walks} tie walks under a keyword lead"
        );
        assert_eq!(walked, 5 * sorts.len() * 4);
        let tie_walks = TIE_WALKS.load(std::sync::atomic::Ordering::Relaxed);
        assert!(tie_walks >= 60, "only {tie_walks} tie walks");
        let segments = WALKED.with(|n| n.get());
        assert!(segments >= 150, "only {segments} segments were walked");
        let bit_walks = BIT_WALKS.load(std::sync::atomic::Ordering::Relaxed);
        assert!(bit_walks >= 40, "only {bit_walks} walks over bitsets");
        // The collector above is the oracle only if it is right itself: check it against the
        // stored values once.
        let coll = FieldSortCollector {
            keys: vec![key("t", Storage::I64, true)],
            limit: 50,
            after: None,
            shard_id: 0,
            track_scores: false,
        };
        let hits = top_hits(
            &searcher,
            &lode_query::FieldStatistics::new(&searcher),
            &*status(1),
            &coll,
            None,
        )
        .unwrap()
        .unwrap();
        let mut all: Vec<i64> = Vec::new();
        for seg in searcher.segment_readers() {
            let col = seg.fast_fields().i64("t").unwrap();
            let sf = seg.fast_fields().u64("s").unwrap();
            for d in 0..seg.max_doc() {
                if seg.is_deleted(d) || sf.first(d) != Some(1) {
                    continue;
                }
                all.extend(col.first(d));
            }
        }
        all.sort_unstable_by(|a, b| b.cmp(a));
        let got: Vec<i64> = hits
            .iter()
            .map(|h| match h.values[0] {
                SortValue::I64(v) => v,
                _ => panic!("value"),
            })
            .collect();
        assert_eq!(got, all[..50]);
        let _ = coll.requires_scoring();
    }
}
