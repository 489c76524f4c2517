//! Per-field disk usage of a shard (Elasticsearch's `_disk_usage`, `IndexDiskUsageAnalyzer`),
//! measured from tantivy's per-segment, per-field space usage.
//!
//! Each schema field is named by its Elasticsearch path (`schema.rs`), so tantivy's field names
//! are the response's field names, metadata fields (`_id`, `_source`, `_seq_no`, `_version`,
//! `_field_names`, `_routing`) included. The components map to ES's categories:
//!
//! - term dictionary + postings + positions → `inverted_index`;
//! - fast-field columns → `doc_values`;
//! - field norms → `norms`;
//! - the document store → `stored_fields`. tantivy compresses whole documents into blocks, so
//!   the store has no per-field size: its bytes (data and block index) are split between the
//!   stored fields (`_id`, `_source`, `_routing`) in proportion to their uncompressed bytes,
//!   counted by reading every stored document (live or deleted: both occupy the store).
//! - `points` stay 0: Lode's points index (`points.rs`) is built in memory from the column on
//!   first use and never written to the store. Term vectors and knn vectors do not exist in Lode.

use crate::error::{EsError, EsResult};
use crate::schema::{ID, ROUTING, SOURCE};
use std::collections::BTreeMap;
use tantivy::index::SegmentComponent;
use tantivy::schema::Value;
use tantivy::space_usage::PerFieldSpaceUsage;
use tantivy::{Searcher, SegmentReader, TantivyDocument};

/// The bytes of one field, by Elasticsearch's categories.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FieldDiskUsage {
    pub inverted_index: u64,
    pub stored_fields: u64,
    pub doc_values: u64,
    pub points: u64,
    pub norms: u64,
    pub term_vectors: u64,
    pub knn_vectors: u64,
}

impl FieldDiskUsage {
    pub fn total(&self) -> u64 {
        self.inverted_index
            + self.stored_fields
            + self.doc_values
            + self.points
            + self.norms
            + self.term_vectors
            + self.knn_vectors
    }

    pub fn add(&mut self, o: &FieldDiskUsage) {
        self.inverted_index += o.inverted_index;
        self.stored_fields += o.stored_fields;
        self.doc_values += o.doc_values;
        self.points += o.points;
        self.norms += o.norms;
        self.term_vectors += o.term_vectors;
        self.knn_vectors += o.knn_vectors;
    }
}

/// Per-field usage of every segment a searcher holds, keyed by field name.
pub fn analyze(searcher: &Searcher) -> EsResult<BTreeMap<String, FieldDiskUsage>> {
    let mut out: BTreeMap<String, FieldDiskUsage> = BTreeMap::new();
    for seg in searcher.segment_readers() {
        analyze_segment(seg, &mut out)?;
    }
    Ok(out)
}

/// The inverted-index bytes (terms, postings, positions) of the named fields over every
/// segment a searcher holds: what a `completion` field's suggester structure costs.
pub fn inverted_index_bytes(
    searcher: &Searcher,
    fields: &[&str],
) -> EsResult<BTreeMap<String, u64>> {
    let mut out: BTreeMap<String, u64> = fields.iter().map(|f| (f.to_string(), 0)).collect();
    for seg in searcher.segment_readers() {
        let usage = seg.space_usage().map_err(io_err)?;
        for per_field in [usage.termdict(), usage.postings(), usage.positions()] {
            for f in per_field.fields() {
                if let Some(total) = out.get_mut(f.field_name()) {
                    *total += f.total().get_bytes();
                }
            }
        }
    }
    Ok(out)
}

fn io_err(e: impl std::fmt::Display) -> EsError {
    EsError::internal(format!("disk usage analysis failed: {e}"))
}

fn analyze_segment(
    seg: &SegmentReader,
    out: &mut BTreeMap<String, FieldDiskUsage>,
) -> EsResult<()> {
    let usage = seg.space_usage().map_err(io_err)?;
    let mut add = |per_field: &PerFieldSpaceUsage, set: fn(&mut FieldDiskUsage, u64)| {
        for f in per_field.fields() {
            let bytes = f.total().get_bytes();
            if bytes > 0 {
                set(out.entry(f.field_name().to_string()).or_default(), bytes);
            }
        }
    };
    add(usage.termdict(), |u, b| u.inverted_index += b);
    add(usage.postings(), |u, b| u.inverted_index += b);
    add(usage.positions(), |u, b| u.inverted_index += b);
    add(usage.fast_fields(), |u, b| u.doc_values += b);
    add(usage.fieldnorms(), |u, b| u.norms += b);
    let mut store_bytes = usage.store().total().get_bytes();
    let plugin = crate::source_store::uses_plugin(seg.schema());
    if plugin {
        // The source store holds the stored fields; tantivy's store keeps only empty documents.
        store_bytes += seg
            .open_read(SegmentComponent::Custom(
                crate::source_store::EXTENSION.into(),
            ))
            .map_err(io_err)?
            .num_bytes()
            .get_bytes();
    }
    if store_bytes > 0 {
        let raw = if plugin {
            let store = crate::source_store::SegmentStore::open(seg).map_err(io_err)?;
            let sums = store.raw_bytes(seg.max_doc()).map_err(io_err)?;
            let mut raw: Vec<(String, u64)> = sums
                .iter()
                .filter(|(_, n)| *n > 0)
                .map(|(name, n)| (name.to_string(), *n))
                .collect();
            if raw.is_empty() {
                raw.push((SOURCE.to_string(), 1));
            }
            raw
        } else {
            stored_raw_bytes(seg)?
        };
        for (name, bytes) in split_proportionally(store_bytes, &raw) {
            out.entry(name).or_default().stored_fields += bytes;
        }
    }
    Ok(())
}

/// The uncompressed bytes of each stored field over every document of the segment's store.
fn stored_raw_bytes(seg: &SegmentReader) -> EsResult<Vec<(String, u64)>> {
    let schema = seg.schema();
    let store = seg.get_store_reader(1).map_err(io_err)?;
    let mut sums: BTreeMap<String, u64> = BTreeMap::new();
    for doc in store.iter::<TantivyDocument>(None) {
        let doc = doc.map_err(io_err)?;
        for (field, value) in doc.field_values() {
            let n = match (value.as_str(), value.as_bytes()) {
                (Some(s), _) => s.len(),
                (_, Some(b)) => b.len(),
                _ => 8,
            } as u64;
            *sums
                .entry(schema.get_field_name(field).to_string())
                .or_default() += n;
        }
    }
    if sums.is_empty() {
        // A store without documents (every one dropped): its bytes are `_source`'s.
        sums.insert(SOURCE.to_string(), 1);
    }
    Ok(sums.into_iter().collect())
}

/// Splits `total` between names in proportion to their weights; the rounding remainder goes to
/// the heaviest, so the parts add up to `total` exactly.
pub fn split_proportionally(total: u64, weights: &[(String, u64)]) -> Vec<(String, u64)> {
    let sum: u128 = weights.iter().map(|(_, w)| *w as u128).sum();
    if sum == 0 {
        return Vec::new();
    }
    let mut parts: Vec<(String, u64)> = weights
        .iter()
        .map(|(n, w)| (n.clone(), (total as u128 * *w as u128 / sum) as u64))
        .collect();
    let given: u64 = parts.iter().map(|(_, b)| *b).sum();
    if let Some(heaviest) = weights
        .iter()
        .enumerate()
        .max_by_key(|(_, (_, w))| *w)
        .map(|(i, _)| i)
    {
        parts[heaviest].1 += total - given;
    }
    parts
}

/// The stored fields Lode writes (the only ones `stored_fields` bytes can go to).
pub const STORED_FIELDS: [&str; 3] = [ID, SOURCE, ROUTING];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_adds_up_and_follows_weights() {
        let w = vec![("_id".to_string(), 1u64), ("_source".to_string(), 3u64)];
        let parts = split_proportionally(1001, &w);
        assert_eq!(parts.iter().map(|(_, b)| b).sum::<u64>(), 1001);
        assert_eq!(parts[0], ("_id".to_string(), 250));
        assert_eq!(parts[1], ("_source".to_string(), 751));
        assert!(split_proportionally(10, &[]).is_empty());
    }

    #[test]
    fn totals_add_every_category() {
        let mut a = FieldDiskUsage {
            inverted_index: 1,
            stored_fields: 2,
            doc_values: 3,
            points: 4,
            norms: 5,
            term_vectors: 6,
            knn_vectors: 7,
        };
        assert_eq!(a.total(), 28);
        let b = a;
        a.add(&b);
        assert_eq!(a.total(), 56);
    }
}
