//! A scroll's remaining hits. Lode runs a scroll's query once and keeps every hit it has not
//! returned yet (Elasticsearch keeps the last one returned and searches again per page), so
//! they are kept compact: 24 bytes a hit, with sort values only when the scroll sorts on
//! fields, and the memory is given back as pages are returned.

use super::Candidate;
use lode_hits::sort::SortValue;
use std::collections::VecDeque;
use tantivy::DocAddress;

/// A hit without what a scroll never has: a `collapse` group (ES refuses `collapse` in a
/// scroll context).
struct Hit {
    index: u32,
    shard: u32,
    addr: DocAddress,
    score: Option<f32>,
}

const _: () = assert!(std::mem::size_of::<Hit>() <= 24);

pub(super) struct ScrollHits {
    hits: VecDeque<Hit>,
    /// One entry per hit when the scroll is sorted on fields, else empty.
    sort: VecDeque<Vec<SortValue>>,
}

/// Estimated bytes of one hit's sort values (a `Vec` and its values; strings a little more).
fn sort_bytes(values: &[SortValue]) -> usize {
    std::mem::size_of::<Vec<SortValue>>() + std::mem::size_of_val(values)
}

impl ScrollHits {
    pub(super) fn new(rest: Vec<Candidate>) -> ScrollHits {
        let sorted = rest.iter().any(|c| c.sort.is_some());
        let mut hits = VecDeque::with_capacity(rest.len());
        let mut sort = VecDeque::with_capacity(if sorted { rest.len() } else { 0 });
        for c in rest {
            debug_assert!(c.group.is_none(), "collapse is refused in a scroll context");
            hits.push_back(Hit {
                index: c.index as u32,
                shard: c.shard as u32,
                addr: c.addr,
                score: c.score,
            });
            if sorted {
                sort.push_back(c.sort.unwrap_or_default());
            }
        }
        ScrollHits { hits, sort }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.hits.len()
    }

    /// Estimated memory held, for the `request` breaker.
    pub(super) fn bytes(&self) -> i64 {
        let hits = self.hits.capacity() * std::mem::size_of::<Hit>();
        let sort: usize = self.sort.iter().map(|v| sort_bytes(v)).sum();
        (hits + sort) as i64
    }

    /// The next `n` hits (fewer at the end), giving back the queue's memory once it is mostly
    /// empty.
    pub(super) fn take(&mut self, n: usize) -> Vec<Candidate> {
        let n = n.min(self.hits.len());
        let sorted = !self.sort.is_empty();
        let mut sort = self.sort.drain(..if sorted { n } else { 0 });
        let page = self
            .hits
            .drain(..n)
            .map(|h| Candidate {
                index: h.index as usize,
                shard: h.shard as usize,
                addr: h.addr,
                score: h.score,
                sort: if sorted { sort.next() } else { None },
                group: None,
            })
            .collect();
        drop(sort);
        if self.hits.capacity() > 1024 && self.hits.len() * 4 < self.hits.capacity() {
            self.hits.shrink_to(self.hits.len() * 2);
            self.sort.shrink_to(self.sort.len() * 2);
        }
        page
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(doc: u32, sort: Option<Vec<SortValue>>) -> Candidate {
        Candidate {
            index: 1,
            shard: 2,
            addr: DocAddress::new(3, doc),
            score: Some(doc as f32),
            sort,
            group: None,
        }
    }

    #[test]
    fn pages_come_back_in_order_with_their_sort_values() {
        let rest: Vec<Candidate> = (0..10)
            .map(|d| candidate(d, Some(vec![SortValue::I64(d as i64)])))
            .collect();
        let mut hits = ScrollHits::new(rest);
        let mut seen = Vec::new();
        while hits.len() > 0 {
            for c in hits.take(3) {
                assert_eq!((c.index, c.shard, c.addr.segment_ord), (1, 2, 3));
                assert_eq!(c.score, Some(c.addr.doc_id as f32));
                assert_eq!(c.sort, Some(vec![SortValue::I64(c.addr.doc_id as i64)]));
                seen.push(c.addr.doc_id);
            }
        }
        assert_eq!(seen, (0..10).collect::<Vec<_>>());
        assert!(hits.take(3).is_empty());
    }

    #[test]
    fn unsorted_hits_keep_no_sort_values_and_memory_shrinks_as_pages_go() {
        let mut hits = ScrollHits::new((0..100_000).map(|d| candidate(d, None)).collect());
        let full = hits.bytes();
        assert!(full <= 100_000 * 24 + 4096, "{full}");
        let page = hits.take(10);
        assert!(page.iter().all(|c| c.sort.is_none()));
        while hits.len() > 1000 {
            hits.take(1000);
        }
        assert!(hits.bytes() < full / 10, "{} of {full}", hits.bytes());
    }
}
