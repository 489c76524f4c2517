//! A segment's keyword terms decoded once, in ordinal order, for the sorted pages that follow.
//!
//! A keyword sort hands its hits back as segment ordinals, and each page turns them into terms
//! ([`crate::ords::resolve`]). The column dictionary stores its terms in zstd-compressed
//! blocks of prefix-delta-encoded keys: a page of 1,000 hits sorted on an identifier (150,000
//! terms per segment) lands on nearly every block, so each request decompressed and walked
//! the whole dictionary of each segment (half of such a request's time). A segment's
//! dictionary never changes, so its terms are decoded on first use and kept, keyed by segment
//! id and field, as Lucene keeps a segment's terms index (and Elasticsearch its fielddata) for
//! the segment's lifetime: resolving an ordinal is then a slice of memory.
//!
//! What the tables take is bounded ([`CACHE_BYTES`], least recently used out first: the
//! tables of segments merged away age out); a dictionary too large for a table
//! ([`MAX_TABLE_BYTES`]) is read from its blocks as before.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use tantivy::columnar::StrColumn;
use tantivy::index::SegmentId;

/// What all tables may take together.
const CACHE_BYTES: usize = 128 << 20;
/// The largest table built; a larger dictionary is read from its blocks.
const MAX_TABLE_BYTES: usize = 32 << 20;

/// Every term of a keyword column, by ordinal.
pub struct TermTable {
    bytes: Vec<u8>,
    /// Where each term ends in `bytes` (a term starts where the previous one ends).
    ends: Vec<u32>,
}

impl TermTable {
    /// Decodes `column`'s dictionary; `None` past [`MAX_TABLE_BYTES`].
    fn build(column: &StrColumn) -> std::io::Result<Option<TermTable>> {
        let terms = column.num_terms();
        if terms.saturating_mul(4) > MAX_TABLE_BYTES {
            return Ok(None);
        }
        let mut table = TermTable {
            bytes: Vec::new(),
            ends: Vec::with_capacity(terms),
        };
        let mut stream = column.dictionary().stream()?;
        while stream.advance() {
            table.bytes.extend_from_slice(stream.key());
            if table.bytes() > MAX_TABLE_BYTES {
                return Ok(None);
            }
            table.ends.push(table.bytes.len() as u32);
        }
        table.bytes.shrink_to_fit();
        Ok(Some(table))
    }

    /// The term of ordinal `ord`, if the column has one.
    pub fn term(&self, ord: u64) -> Option<&[u8]> {
        let i = usize::try_from(ord).ok()?;
        let end = *self.ends.get(i)? as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        Some(&self.bytes[start..end])
    }

    fn bytes(&self) -> usize {
        self.bytes.len() + self.ends.len() * 4
    }
}

struct Entry {
    table: Option<Arc<TermTable>>,
    bytes: usize,
    used: u64,
}

/// Tables by segment and field; `None` entries remember a dictionary too large for one.
static CACHE: OnceLock<Mutex<HashMap<(SegmentId, String), Entry>>> = OnceLock::new();
static CLOCK: AtomicU64 = AtomicU64::new(0);

/// The table of `field`'s column `column` in segment `segment`, cached or built now; `None`
/// when the dictionary is too large for one (or unreadable: the caller reads its blocks).
pub fn term_table(segment: SegmentId, field: &str, column: &StrColumn) -> Option<Arc<TermTable>> {
    let cache = CACHE.get_or_init(Default::default);
    let key = (segment, field.to_string());
    let now = CLOCK.fetch_add(1, Ordering::Relaxed);
    if let Some(entry) = cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_mut(&key)
    {
        entry.used = now;
        return entry.table.clone();
    }
    // Built outside the lock: two requests meeting a new segment at once may both build it.
    let table = TermTable::build(column).ok().flatten().map(Arc::new);
    let bytes = table.as_ref().map_or(0, |t| t.bytes());
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    cache.insert(
        key,
        Entry {
            table: table.clone(),
            bytes,
            used: now,
        },
    );
    let mut total: usize = cache.values().map(|e| e.bytes).sum();
    while total > CACHE_BYTES {
        let Some(oldest) = cache
            .iter()
            .min_by_key(|(_, e)| e.used)
            .map(|(k, _)| k.clone())
        else {
            break;
        };
        total -= cache.remove(&oldest).map_or(0, |e| e.bytes);
    }
    table
}

/// A segment's keyword column with its [`TermTable`], fetched on first need.
pub struct SegmentTerms {
    pub column: StrColumn,
    segment: SegmentId,
    field: String,
    table: OnceLock<Option<Arc<TermTable>>>,
}

impl SegmentTerms {
    pub fn new(column: StrColumn, segment: SegmentId, field: &str) -> SegmentTerms {
        SegmentTerms {
            column,
            segment,
            field: field.to_string(),
            table: OnceLock::new(),
        }
    }

    /// Terms read from the dictionary's blocks only (the path of a dictionary too large for a
    /// table).
    #[cfg(test)]
    pub fn blocks_only(column: StrColumn) -> SegmentTerms {
        SegmentTerms {
            column,
            segment: SegmentId::generate_random(),
            field: String::new(),
            table: OnceLock::from(None),
        }
    }

    /// The decoded table, when the dictionary has (or gets) one.
    pub fn table(&self) -> Option<&TermTable> {
        self.table
            .get_or_init(|| term_table(self.segment, &self.field, &self.column))
            .as_deref()
    }

    /// Ordinal `ord`'s term into `out` (left empty when the column has none, or it is not
    /// UTF-8, as `StrColumn::ord_to_str` leaves it).
    pub fn term_into(&self, ord: u64, out: &mut String) {
        out.clear();
        match self.table() {
            Some(table) => {
                if let Some(t) = table.term(ord).and_then(|b| std::str::from_utf8(b).ok()) {
                    out.push_str(t);
                }
            }
            None => {
                let _ = self.column.ord_to_str(ord, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::schema::{Schema, FAST, STRING};
    use tantivy::{Index, TantivyDocument};

    #[test]
    fn a_table_holds_every_term_of_the_dictionary_by_ordinal() {
        let mut sb = Schema::builder();
        let k = sb.add_text_field("k", STRING | FAST);
        let index = Index::create_in_ram(sb.build());
        let mut w = index.writer_with_num_threads(1, 20_000_000).unwrap();
        // Terms sharing long prefixes, over many dictionary blocks, and the empty term.
        let terms: Vec<String> = (0..5_000)
            .map(|i| format!("acct-{:06}-{}", (i * 7919) % 5_000, "x".repeat(i % 13)))
            .chain([String::new()])
            .collect();
        for t in &terms {
            let mut d = TantivyDocument::default();
            d.add_text(k, t);
            w.add_document(d).unwrap();
        }
        w.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let reader = &searcher.segment_readers()[0];
        let col = reader.fast_fields().str("k").unwrap().unwrap();
        let terms_of = SegmentTerms::new(col.clone(), reader.segment_id(), "k");
        let table = terms_of.table().expect("a small dictionary gets a table");
        // The oracle: the distinct terms, sorted as bytes.
        let mut want = terms.clone();
        want.sort();
        want.dedup();
        assert_eq!(col.num_terms(), want.len());
        let mut s = String::new();
        for (ord, t) in want.iter().enumerate() {
            assert_eq!(table.term(ord as u64), Some(t.as_bytes()), "ord {ord}");
            terms_of.term_into(ord as u64, &mut s);
            assert_eq!(&s, t);
        }
        assert_eq!(table.term(want.len() as u64), None);
        // The second lookup is the cached table.
        let again = term_table(reader.segment_id(), "k", &col).unwrap();
        assert!(std::ptr::eq(&*again, table));
    }
}
