//! `composite` over computed keys: sources tantivy's composite cannot read from a column
//! (`date_histogram` in a time zone, with an `offset` or with a variable calendar interval,
//! `script` and runtime-field sources, `geotile_grid`, `missing_bucket` on a histogram).
//!
//! tantivy 0.27's composite aggregation opens its sources' physical columns itself and does not
//! consult the value-source registry, so these run on the `terms` aggregation instead, in two
//! steps per shard:
//!
//! 1. [`shard_page`] walks the query's matches once and keeps, in a map bounded at `size`,
//!    the shard's first `size` composite keys after `after` (every combination of the
//!    document's per-source values, as ES's `CompositeValuesCollectorQueue`). A key that is
//!    among the first `size` of all shards is among the first `size` of every shard that has
//!    it, so each shard's page holds every key of the final page it has.
//! 2. [`CompositeKeysProvider`] is a `Str` value source whose terms are the page's keys,
//!    each encoded so that byte order is the composite order (per source: the missing
//!    bucket's place, then the value, inverted for `desc`), hex-encoded (UTF-8, same order)
//!    and followed by `|` and the key's values as JSON for rendering. tantivy's `terms`
//!    counts the documents of each key with the sub-aggregations, merges segments and shards,
//!    and orders by key; rendering cuts to `size`.

use super::geogrid::Cells;
use super::rounding::DateRounding;
use lode_painless::{DocField, DocLookup};
use lode_query::runtime::{RuntimeFields, RuntimeType};
use lode_query::script::Fields;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use tantivy::aggregation::{ValueSource, ValueSourceDictionary, ValueSourceProvider};
use tantivy::columnar::{Cardinality, Column, ColumnType, RowId};
use tantivy::query::{EnableScoring, Query};
use tantivy::{DocId, DocSet, Searcher, SegmentReader, TERMINATED};

use lode_engine::{EsError, EsResult};

/// One value of a composite key.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum KeyVal {
    Missing,
    Str(String),
    I64(i64),
    F64(f64),
    Bool(bool),
    /// A geotile's long (`zoom << 58 | x << 29 | y`), rendered `"z/x/y"`.
    Tile(u64),
    /// An address, ordered by its 16 bytes (IPv4 mapped), as ES orders its encoded bytes.
    Ip(std::net::Ipv6Addr),
}

/// Where a source reads its values.
#[derive(Debug, Clone)]
pub(crate) enum Read {
    /// A mapped field's doc values (keyword, numeric, date, boolean).
    Mapped(String),
    /// A runtime field, or an aggregation script's stand-in runtime field.
    Runtime(String),
    /// A `geo_point` column.
    Geo(String),
    /// An `ip` column.
    Ip(String),
    /// A field no document has.
    Unmapped,
}

/// How a source turns a value into its key.
#[derive(Debug, Clone)]
pub(crate) enum Bucketing {
    /// `terms`: the value itself.
    Raw,
    /// `histogram`: `floor(v / interval) * interval`.
    Histogram(f64),
    /// `date_histogram`: the start of the value's bucket, in UTC milliseconds.
    Date(DateRounding),
    /// `geotile_grid`: the point's tile.
    Tile(Cells),
}

#[derive(Debug, Clone)]
pub(crate) struct KeySource {
    pub read: Read,
    pub bucketing: Bucketing,
    pub asc: bool,
    pub missing_bucket: bool,
    pub missing_first: bool,
}

#[derive(Debug)]
pub(crate) struct KeySpec {
    pub sources: Vec<KeySource>,
    pub size: usize,
    /// The encoded `after` key: only keys after it are collected.
    pub after: Option<Vec<u8>>,
    /// The documents of the rendered buckets' keys, per segment, for [`CompositeKeyQuery`].
    pub bucket_docs: std::sync::Mutex<BucketDocs>,
}

/// Each segment keyed once for all the buckets that re-read their documents.
#[derive(Default)]
pub(crate) struct BucketDocs {
    /// The keys of the rendered page.
    wanted: Option<Arc<std::collections::HashSet<Vec<u8>>>>,
    segments: std::collections::HashMap<tantivy::index::SegmentId, Arc<SegmentBuckets>>,
}

type SegmentBuckets = std::collections::HashMap<Vec<u8>, Vec<DocId>>;

impl std::fmt::Debug for BucketDocs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BucketDocs")
            .field("segments", &self.segments.len())
            .finish()
    }
}

impl KeySpec {
    /// Records the keys of a rendered page (a composite under `nested` renders one page per
    /// enclosing bucket): a segment is keyed once for all of them.
    pub fn want(&self, keys: std::collections::HashSet<Vec<u8>>) {
        let mut g = self.bucket_docs.lock().unwrap_or_else(|p| p.into_inner());
        let mut all = g.wanted.as_deref().cloned().unwrap_or_default();
        let before = all.len();
        all.extend(keys);
        if all.len() != before || g.wanted.is_none() {
            g.wanted = Some(Arc::new(all));
            g.segments.clear();
        }
    }

    /// The sortable encoding of a key (one value per source).
    pub fn encode(&self, key: &[KeyVal]) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 * key.len());
        for (v, s) in key.iter().zip(&self.sources) {
            encode_component(&mut out, v, s);
        }
        out
    }
}

fn encode_component(out: &mut Vec<u8>, v: &KeyVal, s: &KeySource) {
    if *v == KeyVal::Missing {
        out.push(if s.missing_first { 0 } else { 2 });
        return;
    }
    out.push(1);
    let start = out.len();
    match v {
        KeyVal::Missing => {}
        // Escaped (0 → 0 0xFF) and terminated by 0 0: byte order stays string order and no
        // encoding is a prefix of another.
        KeyVal::Str(x) => {
            for &b in x.as_bytes() {
                out.push(b);
                if b == 0 {
                    out.push(0xFF);
                }
            }
            out.extend([0, 0]);
        }
        KeyVal::I64(x) => out.extend(((*x as u64) ^ (1 << 63)).to_be_bytes()),
        KeyVal::F64(x) => {
            let b = x.to_bits();
            let k = if b >> 63 == 1 { !b } else { b | (1 << 63) };
            out.extend(k.to_be_bytes());
        }
        KeyVal::Bool(b) => out.push(u8::from(*b)),
        KeyVal::Tile(t) => out.extend(t.to_be_bytes()),
        KeyVal::Ip(ip) => out.extend(ip.octets()),
    }
    if !s.asc {
        for b in &mut out[start..] {
            *b = !*b;
        }
    }
}

/// The term tantivy's `terms` sees for a key: its encoding in hex, `|`, its values as JSON.
pub(crate) fn term(encoded: &[u8], key: &[KeyVal]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(encoded.len() * 2 + 16);
    for &b in encoded {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
    s.push('|');
    let values: Vec<Value> = key
        .iter()
        .map(|v| match v {
            KeyVal::Missing => Value::Null,
            KeyVal::Str(x) => Value::String(x.clone()),
            KeyVal::I64(x) => serde_json::json!({ "l": x }),
            KeyVal::F64(x) => serde_json::json!({ "d": x }),
            KeyVal::Bool(x) => Value::Bool(*x),
            KeyVal::Tile(x) => serde_json::json!({ "t": x }),
            KeyVal::Ip(x) => serde_json::json!({ "i": x.to_string() }),
        })
        .collect();
    s.push_str(&Value::Array(values).to_string());
    s
}

/// The encoded key and the key values of a term made by [`term`].
pub(crate) fn decode_term(term: &str) -> Option<(Vec<u8>, Vec<KeyVal>)> {
    let (hex, json) = term.split_once('|')?;
    let encoded = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    let Value::Array(values) = serde_json::from_str(json).ok()? else {
        return None;
    };
    let values = values
        .into_iter()
        .map(|v| {
            Some(match v {
                Value::Null => KeyVal::Missing,
                Value::String(s) => KeyVal::Str(s),
                Value::Bool(b) => KeyVal::Bool(b),
                Value::Object(o) => {
                    if let Some(x) = o.get("l") {
                        KeyVal::I64(x.as_i64()?)
                    } else if let Some(x) = o.get("d") {
                        KeyVal::F64(x.as_f64()?)
                    } else if let Some(x) = o.get("i") {
                        KeyVal::Ip(x.as_str()?.parse().ok()?)
                    } else {
                        KeyVal::Tile(o.get("t")?.as_u64()?)
                    }
                }
                _ => return None,
            })
        })
        .collect::<Option<Vec<KeyVal>>>()?;
    Some((encoded, values))
}

fn date_key(r: &DateRounding, t: i64) -> i64 {
    match r {
        DateRounding::Native { interval, offset } => {
            (t - offset).div_euclid(*interval) * interval + offset
        }
        DateRounding::Indexed(r) => r.key_of(r.bucket_of(t).0),
    }
}

/// One segment's key computation.
struct SegmentKeys {
    spec: Arc<KeySpec>,
    docs: lode_query::DocColumns,
    runtime: RuntimeFields,
    geo: Vec<Option<Column<u64>>>,
    ips: Vec<Option<Column<std::net::Ipv6Addr>>>,
    per_source: Vec<Vec<KeyVal>>,
}

impl SegmentKeys {
    fn new(
        spec: Arc<KeySpec>,
        reader: &SegmentReader,
        fields: Fields,
        runtime: RuntimeFields,
    ) -> tantivy::Result<SegmentKeys> {
        let mut geo = Vec::with_capacity(spec.sources.len());
        let mut ips = Vec::with_capacity(spec.sources.len());
        for s in &spec.sources {
            geo.push(match &s.read {
                Read::Geo(f) => reader.fast_fields().column_opt::<u64>(f)?,
                _ => None,
            });
            ips.push(match &s.read {
                Read::Ip(f) => reader.fast_fields().column_opt::<std::net::Ipv6Addr>(f)?,
                _ => None,
            });
        }
        Ok(SegmentKeys {
            per_source: vec![Vec::new(); spec.sources.len()],
            docs: lode_query::DocColumns::new(reader, fields).with_runtime(runtime.clone()),
            runtime,
            geo,
            ips,
            spec,
        })
    }

    /// The source's keys for `doc` into `self.per_source[i]`.
    fn source_values(&mut self, i: usize, doc: DocId) -> EsResult<()> {
        let s = &self.spec.sources[i];
        let mut raw: Vec<KeyVal> = Vec::new();
        match &s.read {
            Read::Unmapped => {}
            Read::Mapped(name) => {
                self.docs.doc = doc;
                let f = self.docs.field(name).map_err(EsError::illegal_argument)?;
                match f {
                    DocField::Str(v) => raw.extend(v.into_iter().map(KeyVal::Str)),
                    DocField::Long(v) | DocField::Date(v) => {
                        raw.extend(v.into_iter().map(KeyVal::I64))
                    }
                    DocField::Double(v) => raw.extend(v.into_iter().map(KeyVal::F64)),
                    DocField::Bool(v) => raw.extend(v.into_iter().map(KeyVal::Bool)),
                }
            }
            Read::Runtime(name) => {
                let Some(f) = self.runtime.get(name).cloned() else {
                    return Err(EsError::internal("composite: runtime field not found"));
                };
                self.docs.doc = doc;
                f.with_values(&mut self.docs, |vals| {
                    for v in vals {
                        let k = match f.ty {
                            RuntimeType::Keyword => v.as_str().map(|x| KeyVal::Str(x.to_string())),
                            RuntimeType::Long | RuntimeType::Date => v
                                .as_i64()
                                .or_else(|| v.as_f64().map(|x| x as i64))
                                .map(KeyVal::I64),
                            RuntimeType::Double => v.as_f64().map(KeyVal::F64),
                            RuntimeType::Boolean => v.as_bool().map(KeyVal::Bool),
                        };
                        raw.extend(k);
                    }
                })?;
            }
            Read::Ip(_) => {
                if let Some(col) = &self.ips[i] {
                    raw.extend(col.values_for_doc(doc).map(KeyVal::Ip));
                }
            }
            Read::Geo(_) => {
                if let (Some(col), Bucketing::Tile(cells)) = (&self.geo[i], &s.bucketing) {
                    raw.extend(
                        col.values_for_doc(doc)
                            .filter_map(|v| cells.of(v))
                            .map(KeyVal::Tile),
                    );
                }
            }
        }
        let out = &mut self.per_source[i];
        out.clear();
        for v in raw {
            let k = match (&s.bucketing, v) {
                (Bucketing::Histogram(interval), KeyVal::I64(x)) => {
                    KeyVal::F64((x as f64 / interval).floor() * interval)
                }
                (Bucketing::Histogram(interval), KeyVal::F64(x)) => {
                    KeyVal::F64((x / interval).floor() * interval)
                }
                (Bucketing::Histogram(_), _) => continue,
                (Bucketing::Date(r), KeyVal::I64(t)) => KeyVal::I64(date_key(r, t)),
                (Bucketing::Date(r), KeyVal::F64(t)) => KeyVal::I64(date_key(r, t as i64)),
                (Bucketing::Date(_), _) => continue,
                (_, KeyVal::F64(x)) if !x.is_finite() => continue,
                (_, v) => v,
            };
            out.push(k);
        }
        if out.is_empty() && s.missing_bucket {
            out.push(KeyVal::Missing);
        }
        Ok(())
    }

    /// Every composite key of `doc` after `after`, encoded, with its values (unsorted, may
    /// repeat).
    fn doc_keys(&mut self, doc: DocId, out: &mut Vec<(Vec<u8>, Vec<KeyVal>)>) -> EsResult<()> {
        out.clear();
        for i in 0..self.spec.sources.len() {
            self.source_values(i, doc)?;
            if self.per_source[i].is_empty() {
                return Ok(());
            }
        }
        // Every combination, as ES's multi-valued sources produce them.
        let n = self.per_source.len();
        let mut at = vec![0usize; n];
        loop {
            let key: Vec<KeyVal> = (0..n).map(|i| self.per_source[i][at[i]].clone()).collect();
            let encoded = self.spec.encode(&key);
            if self.spec.after.as_ref().is_none_or(|a| encoded > *a) {
                out.push((encoded, key));
            }
            let mut i = n;
            loop {
                if i == 0 {
                    return Ok(());
                }
                i -= 1;
                at[i] += 1;
                if at[i] < self.per_source[i].len() {
                    break;
                }
                at[i] = 0;
            }
        }
    }
}

/// A shard's first `size` keys after `after`, in order.
#[derive(Debug, Default)]
pub(crate) struct Page {
    keys: Vec<Vec<u8>>,
    terms: Vec<String>,
}

/// Step 1: the shard's page of keys over the documents of `query`.
pub(crate) fn shard_page(
    spec: &Arc<KeySpec>,
    searcher: &Searcher,
    query: &dyn Query,
    fields: Fields,
    runtime: RuntimeFields,
) -> EsResult<Page> {
    let internal = |e: tantivy::TantivyError| EsError::internal(e.to_string());
    let weight = query
        .weight(EnableScoring::disabled_from_searcher(searcher))
        .map_err(internal)?;
    let mut best: BTreeMap<Vec<u8>, Vec<KeyVal>> = BTreeMap::new();
    let mut keys = Vec::new();
    for reader in searcher.segment_readers() {
        let mut seg = SegmentKeys::new(spec.clone(), reader, fields.clone(), runtime.clone())
            .map_err(internal)?;
        let alive = reader.alive_bitset();
        let mut scorer = weight.scorer(reader, 1.0).map_err(internal)?;
        let mut doc = scorer.doc();
        while doc != TERMINATED {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                seg.doc_keys(doc, &mut keys)?;
                for (encoded, key) in keys.drain(..) {
                    if best.len() >= spec.size {
                        match best.last_key_value() {
                            Some((last, _)) if encoded >= *last => continue,
                            _ => {}
                        }
                    }
                    best.insert(encoded, key);
                    if best.len() > spec.size {
                        best.pop_last();
                    }
                }
            }
            doc = scorer.advance();
        }
    }
    let mut page = Page::default();
    for (encoded, key) in best {
        page.terms.push(term(&encoded, &key));
        page.keys.push(encoded);
    }
    Ok(page)
}

impl ValueSourceDictionary for Page {
    fn num_terms(&self) -> u64 {
        self.terms.len() as u64
    }

    fn sorted_ords_to_term_cb(
        &self,
        sorted_ords: &[u64],
        callback: &mut dyn FnMut(&[u8]),
    ) -> std::io::Result<bool> {
        for &o in sorted_ords {
            match self.terms.get(o as usize) {
                Some(t) => callback(t.as_bytes()),
                None => return Ok(false),
            }
        }
        Ok(true)
    }
}

/// Step 2: each document's keys that are on the shard's page, as ords of the page.
pub(crate) struct CompositeKeysProvider {
    pub spec: Arc<KeySpec>,
    pub page: Arc<Page>,
    pub fields: Fields,
    pub runtime: RuntimeFields,
}

impl ValueSourceProvider for CompositeKeysProvider {
    fn for_segment(
        &self,
        reader: &SegmentReader,
        _allowed: Option<&[ColumnType]>,
    ) -> tantivy::Result<Option<Box<dyn ValueSource>>> {
        Ok(Some(Box::new(CompositeKeysSource {
            keys: SegmentKeys::new(
                self.spec.clone(),
                reader,
                self.fields.clone(),
                self.runtime.clone(),
            )?,
            page: self.page.clone(),
            buf: Vec::new(),
        })))
    }
}

struct CompositeKeysSource {
    keys: SegmentKeys,
    page: Arc<Page>,
    buf: Vec<(Vec<u8>, Vec<KeyVal>)>,
}

impl std::fmt::Debug for CompositeKeysSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompositeKeysSource")
            .field("page", &self.page.keys.len())
            .finish()
    }
}

impl ValueSource for CompositeKeysSource {
    fn column_type(&self) -> ColumnType {
        ColumnType::Str
    }

    fn load_block(
        &mut self,
        docs: &[DocId],
        values: &mut Vec<u64>,
        docids: &mut Vec<DocId>,
        _row_ids: &mut Vec<RowId>,
    ) -> Cardinality {
        values.clear();
        docids.clear();
        if self.page.keys.is_empty() {
            return Cardinality::Multivalued;
        }
        for &doc in docs {
            // The page was built from these documents: an error there failed the request.
            if self.keys.doc_keys(doc, &mut self.buf).is_err() {
                continue;
            }
            let first = values.len();
            for (encoded, _) in &self.buf {
                if let Ok(ord) = self.page.keys.binary_search(encoded) {
                    values.push(ord as u64);
                }
            }
            values[first..].sort_unstable();
            let mut keep = first;
            for i in first..values.len() {
                if i == first || values[i] != values[keep - 1] {
                    values[keep] = values[i];
                    keep += 1;
                }
            }
            values.truncate(keep);
            docids.extend(std::iter::repeat_n(doc, values.len() - first));
        }
        Cardinality::Multivalued
    }

    fn to_f64(self: Box<Self>) -> Box<dyn ValueSource> {
        self
    }

    fn term_dictionary(&self) -> Option<&dyn ValueSourceDictionary> {
        Some(&*self.page as _)
    }
}

/// The documents having one composite key (a computed composite bucket, for the aggregations
/// that re-query their bucket): each segment's documents keyed and tested, into a bit set.
#[derive(Clone)]
pub(crate) struct CompositeKeyQuery {
    pub spec: Arc<KeySpec>,
    pub key: Arc<Vec<u8>>,
    pub fields: Fields,
    pub runtime: RuntimeFields,
}

impl std::fmt::Debug for CompositeKeyQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompositeKeyQuery").finish()
    }
}

impl CompositeKeyQuery {
    fn doc_set(&self, reader: &SegmentReader) -> tantivy::Result<tantivy::BitSet> {
        let max_doc = reader.max_doc();
        let mut set = tantivy::BitSet::with_max_value(max_doc.max(1));
        let mut g = self
            .spec
            .bucket_docs
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        // A key no page recorded is keyed on its own, uncached.
        let wanted = g.wanted.clone().filter(|w| w.contains(&*self.key));
        let buckets = match g.segments.get(&reader.segment_id()) {
            Some(b) if wanted.is_some() => b.clone(),
            _ => {
                let mut keys = SegmentKeys::new(
                    self.spec.clone(),
                    reader,
                    self.fields.clone(),
                    self.runtime.clone(),
                )?;
                let mut buckets = SegmentBuckets::new();
                let mut buf = Vec::new();
                for doc in 0..max_doc {
                    if keys.doc_keys(doc, &mut buf).is_err() {
                        continue;
                    }
                    for (k, _) in buf.drain(..) {
                        let keep = match &wanted {
                            Some(w) => w.contains(&k),
                            None => k == *self.key,
                        };
                        if keep {
                            let docs = buckets.entry(k).or_default();
                            if docs.last() != Some(&doc) {
                                docs.push(doc);
                            }
                        }
                    }
                }
                let buckets = Arc::new(buckets);
                if wanted.is_some() {
                    g.segments.insert(reader.segment_id(), buckets.clone());
                }
                buckets
            }
        };
        drop(g);
        for &doc in buckets.get(&*self.key).into_iter().flatten() {
            set.insert(doc);
        }
        Ok(set)
    }
}

impl Query for CompositeKeyQuery {
    fn weight(
        &self,
        _scoring: EnableScoring<'_>,
    ) -> tantivy::Result<Box<dyn tantivy::query::Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl tantivy::query::Weight for CompositeKeyQuery {
    fn scorer(
        &self,
        reader: &SegmentReader,
        boost: tantivy::Score,
    ) -> tantivy::Result<Box<dyn tantivy::query::Scorer>> {
        let set = self.doc_set(reader)?;
        Ok(Box::new(tantivy::query::ConstScorer::new(
            tantivy::query::BitSetDocSet::from(set),
            boost,
        )))
    }

    fn explain(
        &self,
        reader: &SegmentReader,
        doc: DocId,
    ) -> tantivy::Result<tantivy::query::Explanation> {
        if self.doc_set(reader)?.contains(doc) {
            Ok(tantivy::query::Explanation::new("CompositeKeyQuery", 1.0))
        } else {
            Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(asc: bool, missing_first: bool) -> KeySource {
        KeySource {
            read: Read::Unmapped,
            bucketing: Bucketing::Raw,
            asc,
            missing_bucket: true,
            missing_first,
        }
    }

    fn spec(sources: Vec<KeySource>) -> KeySpec {
        KeySpec {
            sources,
            size: 10,
            after: None,
            bucket_docs: Default::default(),
        }
    }

    #[test]
    fn encoding_orders_as_the_composite_order() {
        let s = spec(vec![src(true, true), src(false, false)]);
        let mut keys = vec![
            vec![KeyVal::Str("b".into()), KeyVal::I64(-5)],
            vec![KeyVal::Str("a\u{0}".into()), KeyVal::I64(3)],
            vec![KeyVal::Str("a".into()), KeyVal::I64(3)],
            vec![KeyVal::Str("a".into()), KeyVal::I64(7)],
            vec![KeyVal::Missing, KeyVal::I64(1)],
            vec![KeyVal::Str("a".into()), KeyVal::Missing],
            vec![KeyVal::Str("".into()), KeyVal::I64(i64::MIN)],
        ];
        keys.sort_by_key(|k| s.encode(k));
        let expected = vec![
            vec![KeyVal::Missing, KeyVal::I64(1)],
            vec![KeyVal::Str("".into()), KeyVal::I64(i64::MIN)],
            vec![KeyVal::Str("a".into()), KeyVal::I64(7)],
            vec![KeyVal::Str("a".into()), KeyVal::I64(3)],
            vec![KeyVal::Str("a".into()), KeyVal::Missing],
            vec![KeyVal::Str("a\u{0}".into()), KeyVal::I64(3)],
            vec![KeyVal::Str("b".into()), KeyVal::I64(-5)],
        ];
        assert_eq!(keys, expected);
    }

    #[test]
    fn doubles_sort_numerically_and_terms_round_trip() {
        let s = spec(vec![src(true, true)]);
        let mut xs = [3.5, -0.5, -10.0, 0.0, 1e300, -1e-300];
        xs.sort_by_key(|x| s.encode(&[KeyVal::F64(*x)]));
        assert_eq!(xs, [-10.0, -0.5, -1e-300, 0.0, 3.5, 1e300]);
        let key = vec![
            KeyVal::F64(2.0),
            KeyVal::I64(-3),
            KeyVal::Str("x|y".into()),
            KeyVal::Bool(true),
            KeyVal::Tile(7),
            KeyVal::Ip("::ffff:10.0.0.1".parse().unwrap()),
            KeyVal::Missing,
        ];
        let t = term(b"\x01\xff", &key);
        assert!(t.starts_with("01ff|"));
        assert_eq!(decode_term(&t), Some((vec![1, 255], key)));
    }

    #[test]
    fn hex_terms_keep_the_byte_order() {
        let s = spec(vec![src(true, true)]);
        let a = s.encode(&[KeyVal::Str("ab".into())]);
        let b = s.encode(&[KeyVal::Str("b".into())]);
        assert!(term(&a, &[]) < term(&b, &[]));
    }
}
