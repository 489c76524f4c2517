//! Global ordinals: one numbering of a keyword field's terms across a shard's segments, so
//! that per-segment counts by term ordinal add up in one array, as Elasticsearch's
//! `GlobalOrdinalsStringTermsAggregator` does.
//!
//! Adding up `terms` counts of a high-cardinality keyword (a name, 150k terms per segment)
//! term by term merges every segment's term list as text on each request; with global
//! ordinals a request adds integer arrays and reads back only the terms of the buckets it
//! keeps. Like Elasticsearch's (built lazily after each refresh unless
//! `eager_global_ordinals`), the mapping is built on first use for a set of segments, by one
//! k-way merge of their column dictionaries, and kept for the requests that follow: a
//! segment's dictionary never changes, so the set of segment ids keys it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex};
use tantivy::columnar::StrColumn;
use tantivy::index::SegmentId;

/// A keyword field's global ordinals over some segments.
pub(crate) struct GlobalOrds {
    /// Per segment, the global ordinal of each of its ordinals.
    maps: Vec<Vec<u32>>,
    /// Per global ordinal (in term order), a segment holding the term and its ordinal there.
    holders: Vec<(u32, u32)>,
}

impl GlobalOrds {
    /// Numbers the terms of `columns` (one per segment, `None` where a segment lacks the
    /// field) in term order. `None` past `u32` ordinals.
    fn build(columns: &[Option<StrColumn>]) -> std::io::Result<Option<GlobalOrds>> {
        let mut streams = Vec::with_capacity(columns.len());
        let mut maps = Vec::with_capacity(columns.len());
        for column in columns {
            match column {
                Some(c) => {
                    maps.push(Vec::with_capacity(c.num_terms()));
                    streams.push(Some(c.dictionary().stream()?));
                }
                None => {
                    maps.push(Vec::new());
                    streams.push(None);
                }
            }
        }
        // The head term of each segment's stream; a popped head's buffer takes its next term.
        let mut heap: BinaryHeap<Reverse<(Vec<u8>, usize)>> = BinaryHeap::new();
        for (seg, stream) in streams.iter_mut().enumerate() {
            if let Some(s) = stream.as_mut() {
                if s.advance() {
                    heap.push(Reverse((s.key().to_vec(), seg)));
                }
            }
        }
        let mut holders: Vec<(u32, u32)> = Vec::new();
        let mut last: Vec<u8> = Vec::new();
        while let Some(Reverse((mut key, seg))) = heap.pop() {
            if holders.is_empty() || key != last {
                if holders.len() >= u32::MAX as usize {
                    return Ok(None);
                }
                holders.push((seg as u32, maps[seg].len() as u32));
                last.clear();
                last.extend_from_slice(&key);
            }
            maps[seg].push((holders.len() - 1) as u32);
            if let Some(s) = streams[seg].as_mut() {
                if s.advance() {
                    key.clear();
                    key.extend_from_slice(s.key());
                    heap.push(Reverse((key, seg)));
                }
            }
        }
        Ok(Some(GlobalOrds { maps, holders }))
    }

    /// The number of global ordinals (distinct terms).
    pub fn len(&self) -> usize {
        self.holders.len()
    }

    /// The global ordinal of ordinal `ord` of segment `seg`.
    pub fn global(&self, seg: usize, ord: usize) -> u32 {
        self.maps[seg][ord]
    }

    /// A segment holding global ordinal `global`'s term, and its ordinal there.
    pub fn holder(&self, global: u32) -> (usize, u64) {
        let (seg, ord) = self.holders[global as usize];
        (seg as usize, u64::from(ord))
    }

    fn bytes(&self) -> usize {
        self.maps.iter().map(|m| m.len() * 4).sum::<usize>() + self.holders.len() * 8
    }
}

/// Built global ordinals, most recently used last: entries whose segments were merged away
/// age out.
static CACHE: Mutex<Vec<(Key, Arc<GlobalOrds>)>> = Mutex::new(Vec::new());
/// What the cached global ordinals may take (12 bytes per term and segment: ~20 MiB for a
/// name field of the 1.12M-document reference index in ten segments).
const CACHE_BYTES: usize = 256 << 20;

type Key = (Vec<SegmentId>, String);

/// The global ordinals of `field` over the segments `ids` (whose columns are `columns`),
/// cached or built now.
pub(crate) fn global_ords(
    ids: Vec<SegmentId>,
    field: &str,
    columns: &[Option<StrColumn>],
) -> std::io::Result<Option<Arc<GlobalOrds>>> {
    let key = (ids, field.to_string());
    {
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = cache.iter().position(|(k, _)| *k == key) {
            let entry = cache.remove(i);
            let ords = entry.1.clone();
            cache.push(entry);
            return Ok(Some(ords));
        }
    }
    let Some(built) = GlobalOrds::build(columns)? else {
        return Ok(None);
    };
    let built = Arc::new(built);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    cache.push((key, built.clone()));
    let mut total: usize = cache.iter().map(|(_, o)| o.bytes()).sum();
    while total > CACHE_BYTES && cache.len() > 1 {
        total -= cache.remove(0).1.bytes();
    }
    Ok(Some(built))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::schema::{Schema, FAST, STRING};
    use tantivy::{doc, Index, IndexWriter};

    #[test]
    fn numbers_every_term_once_in_term_order() {
        let mut sb = Schema::builder();
        let f = sb.add_text_field("k", STRING | FAST);
        let index = Index::create_in_ram(sb.build());
        let mut w: IndexWriter = index.writer_with_num_threads(1, 20_000_000).unwrap();
        let segments: [&[&str]; 3] = [&["b", "d", "f"], &["a", "d", "z"], &[]];
        for terms in segments {
            for t in terms {
                w.add_document(doc!(f => *t)).unwrap();
            }
            w.add_document(doc!()).unwrap();
            w.commit().unwrap();
        }
        let searcher = index.reader().unwrap().searcher();
        let columns: Vec<Option<StrColumn>> = searcher
            .segment_readers()
            .iter()
            .map(|s| s.fast_fields().str("k").unwrap())
            .collect();
        let ords = GlobalOrds::build(&columns).unwrap().unwrap();
        let all = ["a", "b", "d", "f", "z"];
        assert_eq!(ords.len(), all.len());
        for (seg, column) in columns.iter().enumerate() {
            let Some(column) = column else { continue };
            for ord in 0..column.num_terms() {
                let mut term = String::new();
                column.ord_to_str(ord as u64, &mut term).unwrap();
                let global = ords.global(seg, ord);
                assert_eq!(all[global as usize], term);
                let (s, o) = ords.holder(global);
                let mut held = String::new();
                columns[s]
                    .as_ref()
                    .unwrap()
                    .ord_to_str(o, &mut held)
                    .unwrap();
                assert_eq!(held, term);
            }
        }
    }
}
