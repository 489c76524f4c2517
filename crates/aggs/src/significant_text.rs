//! `significant_text`: Elasticsearch's `SignificantTextAggregator`. The bucket's documents
//! (every match, as ES collects them when not wrapped in a `sampler`) are read from
//! `_source`, the field's values re-analyzed with its index analyzer, and each distinct term
//! of a document counted once (the foreground). The background is counted as
//! `significant_terms`' (`significant.rs`): every live document, a term's frequency its
//! live document frequency in the field's postings, or with a `background_filter` the
//! filter's documents and, per term, those of them holding it. Terms are scored with JLH.

use super::dsl::{build_dsl, DslQuery};
use super::exec::Exec;
use super::render::Scope;
use super::request::{IncludeExclude, TermsReq};
use super::top_hits::bucket_query;
use lode_engine::mapping::Storage;
use lode_engine::{EsError, EsResult};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use tantivy::collector::{Count, DocSetCollector};
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocAddress, DocSet, Term, TERMINATED};

/// The request: the `terms` parameters it shares with `significant_terms` (`field`, `size`,
/// `min_doc_count` default 3, `include`/`exclude`) and an optional `background_filter`.
pub(crate) struct SignificantTextReq {
    pub terms: TermsReq,
    pub background_filter: Option<Box<DslQuery>>,
    /// `filter_duplicate_text`: ES's `DeDuplicatingTokenFilter` on every value.
    pub filter_duplicate_text: bool,
    /// `source_fields`: the `_source` paths analyzed instead of the field's own.
    pub source_fields: Option<Vec<String>>,
    pub heuristic: super::significant::Heuristic,
}

/// One scored term.
pub(crate) struct Scored {
    pub key: String,
    pub doc_count: u64,
    pub bg_count: u64,
    pub score: f64,
}

/// The aggregation's result for one bucket: its size, the background's, the kept terms.
pub(crate) struct TextResult {
    pub subset_size: u64,
    pub superset_size: u64,
    pub buckets: Vec<Scored>,
}

fn internal(e: tantivy::TantivyError) -> EsError {
    EsError::internal(format!("significant_text failure: {e}"))
}

fn io(e: std::io::Error) -> EsError {
    EsError::internal(format!("significant_text failure: {e}"))
}

/// Whether `term` passes `include` and `exclude` (a regular expression matches the whole
/// term, as Lucene's `RegExp`).
fn accepted(term: &str, include: &[Filter], exclude: &[Filter]) -> bool {
    let hit = |f: &Filter| match f {
        Filter::Regex(r) => r.is_match(term),
        Filter::Values(v) => v.contains(term),
        Filter::Partition(p, n) => super::plan::partition_accepts(
            super::plan::TermsKind::String,
            false,
            &tantivy::aggregation::Key::Str(term.to_string()),
            *p,
            *n,
        ),
    };
    (include.is_empty() || include.iter().any(hit)) && !exclude.iter().any(hit)
}

enum Filter {
    Regex(regex::Regex),
    Values(HashSet<String>),
    Partition(u32, u32),
}

fn filter(f: &Option<IncludeExclude>) -> EsResult<Vec<Filter>> {
    Ok(match f {
        None => Vec::new(),
        Some(IncludeExclude::Regex(r)) => vec![Filter::Regex(
            regex::Regex::new(&format!("^(?:{r})$")).map_err(|e| {
                EsError::illegal_argument(format!("Invalid regular expression [{r}]: {e}"))
            })?,
        )],
        Some(IncludeExclude::Values(v)) => vec![Filter::Values(
            v.iter()
                .map(|x| match x {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect(),
        )],
        Some(IncludeExclude::Partition {
            partition,
            num_partitions,
        }) => vec![Filter::Partition(*partition, *num_partitions)],
    })
}

/// Validates the include/exclude patterns at planning.
pub(crate) fn check_filters(req: &SignificantTextReq) -> EsResult<()> {
    filter(&req.terms.include)?;
    filter(&req.terms.exclude)?;
    Ok(())
}

/// Counts, scores and selects the terms of the bucket `scope`.
pub(crate) fn run(exec: &Exec, req: &SignificantTextReq, scope: &Scope) -> EsResult<TextResult> {
    let field = &req.terms.field;
    let include = filter(&req.terms.include)?;
    let exclude = filter(&req.terms.exclude)?;
    // The foreground: each matching document's distinct terms.
    let mut subset_size = 0u64;
    let mut counts: HashMap<String, u64> = HashMap::new();
    for pt in &exec.targets {
        let query = bucket_query(pt, scope)?;
        let def = pt
            .target
            .ctx
            .mapping
            .field(field)
            .filter(|d| d.storage() == Storage::Text);
        let analyzer = def
            .map(|d| pt.target.ctx.analysis.analyzer(&d.analyzer))
            .transpose()
            .map_err(|e| EsError::new(400, e.kind, e.reason))?;
        for shard in pt.target.shards {
            let mut docs: Vec<DocAddress> = lode_query::FieldStatistics::new(&shard.searcher)
                .search(&shard.searcher, &*query, &DocSetCollector)
                .map_err(internal)?
                .into_iter()
                .collect();
            docs.sort();
            subset_size += docs.len() as u64;
            let (Some(def), Some(analyzer)) = (def, &analyzer) else {
                continue;
            };
            let mut in_doc: HashSet<String> = HashSet::new();
            // One spotter per shard and bucket, as ES keeps one per owning bucket.
            let mut spotter = req.filter_duplicate_text.then(Spotter::default);
            for addr in docs {
                let doc = shard.stored(addr)?;
                let source: Value =
                    serde_json::from_slice(doc.source_bytes()).unwrap_or(Value::Null);
                in_doc.clear();
                let values = match &req.source_fields {
                    None => lode_hits::docvalues::source_raw(&source, def),
                    Some(paths) => {
                        let mut out = Vec::new();
                        for p in paths {
                            extract(&source, &p.split('.').collect::<Vec<_>>(), &mut out);
                        }
                        out
                    }
                };
                for v in values {
                    let text = match v {
                        Value::String(s) => s,
                        Value::Null | Value::Object(_) | Value::Array(_) => continue,
                        other => other.to_string(),
                    };
                    let tokens = analyzer.analyze_bytes(&text).into_iter().map(|t| t.token);
                    match &mut spotter {
                        None => in_doc.extend(tokens),
                        Some(sp) => in_doc.extend(dedup(tokens.collect(), sp)),
                    }
                }
                if let Some(sp) = &mut spotter {
                    sp.start_new_sequence();
                }
                for t in in_doc.drain() {
                    *counts.entry(t).or_default() += 1;
                }
            }
        }
    }
    let candidates: Vec<(String, u64)> = counts
        .into_iter()
        .filter(|(t, n)| *n >= req.terms.min_doc_count && accepted(t, &include, &exclude))
        .collect();
    let (superset_size, bg) = background(
        exec,
        field,
        req.background_filter.as_deref(),
        candidates.iter().map(|(t, _)| t.as_str()),
    )?;
    let mut buckets: Vec<Scored> = Vec::new();
    for (key, doc_count) in candidates {
        let bg_count = bg.get(&key).copied().unwrap_or(0);
        let score = req
            .heuristic
            .score(doc_count, subset_size, bg_count, superset_size)?;
        // ES's reduce keeps the terms scored above 0.
        if score > 0.0 {
            buckets.push(Scored {
                key,
                doc_count,
                bg_count,
                score,
            });
        }
    }
    buckets.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.key.cmp(&b.key)));
    buckets.truncate(req.terms.size);
    Ok(TextResult {
        subset_size,
        superset_size,
        buckets,
    })
}

/// The background's size and each term's frequency in it, over every shard of every target.
fn background<'a>(
    exec: &Exec,
    field: &str,
    filter: Option<&DslQuery>,
    terms: impl Iterator<Item = &'a str> + Clone,
) -> EsResult<(u64, HashMap<String, u64>)> {
    let mut size = 0u64;
    let mut freqs: HashMap<String, u64> = HashMap::new();
    for pt in &exec.targets {
        let nested = pt.target.ctx.meta.nested;
        let query: Box<dyn Query> = match filter {
            Some(q) => lode_query::nested::non_nested(build_dsl(q, pt.target.ctx)?, nested),
            None => lode_query::nested::non_nested(Box::new(tantivy::query::AllQuery), nested),
        };
        for shard in pt.target.shards {
            let searcher = &shard.searcher;
            size += match (filter, nested) {
                (None, None) => searcher.num_docs(),
                _ => query.count(searcher).map_err(internal)? as u64,
            };
            let Ok(schema_field) = shard.schema.get_field(field) else {
                continue;
            };
            for term in terms.clone() {
                let t = Term::from_field_text(schema_field, term);
                let n = match filter {
                    Some(_) => {
                        let q = BooleanQuery::new(vec![
                            (Occur::Must, query.box_clone()),
                            (
                                Occur::Must,
                                Box::new(TermQuery::new(t, IndexRecordOption::Basic)),
                            ),
                        ]);
                        lode_query::FieldStatistics::new(searcher)
                            .search(searcher, &q, &Count)
                            .map_err(internal)? as u64
                    }
                    None => live_doc_freq(searcher, &t)?,
                };
                if n > 0 {
                    *freqs.entry(term.to_string()).or_default() += n;
                }
            }
        }
    }
    Ok((size, freqs))
}

/// A term's live document frequency: the postings' count, less the deleted documents.
fn live_doc_freq(searcher: &tantivy::Searcher, term: &Term) -> EsResult<u64> {
    let mut n = 0u64;
    for segment in searcher.segment_readers() {
        let inverted = segment.inverted_index(term.field()).map_err(internal)?;
        match segment.alive_bitset() {
            None => n += inverted.doc_freq(term).map_err(io)? as u64,
            Some(alive) => {
                let Some(mut postings) = inverted
                    .read_postings(term, IndexRecordOption::Basic)
                    .map_err(io)?
                else {
                    continue;
                };
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    if alive.is_alive(doc) {
                        n += 1;
                    }
                    doc = postings.advance();
                }
            }
        }
    }
    Ok(n)
}

/// The values at a dotted `_source` path (ES's `XContentMapValues.extractRawValues`): keys
/// may hold dots themselves, arrays are flattened.
fn extract(v: &Value, parts: &[&str], out: &mut Vec<Value>) {
    match v {
        Value::Array(a) => {
            for e in a {
                extract(e, parts, out);
            }
        }
        _ if parts.is_empty() => out.push(v.clone()),
        Value::Object(o) => {
            for i in 1..=parts.len() {
                if let Some(child) = o.get(&parts[..i].join(".")) {
                    extract(child, &parts[i..], out);
                }
            }
        }
        _ => {}
    }
}

/// The length of the token sequences `filter_duplicate_text` looks for
/// (`DuplicateByteSequenceSpotter.TREE_DEPTH`).
const WINDOW: usize = 6;

/// ES's `DuplicateByteSequenceSpotter`: how many times each sequence of [`WINDOW`] bytes
/// (one byte per token) was seen before, counting up to 255.
#[derive(Default)]
struct Spotter {
    seen: HashMap<[u8; WINDOW], u8>,
    buffer: [u8; WINDOW],
    next: usize,
    filled: bool,
}

impl Spotter {
    fn start_new_sequence(&mut self) {
        self.filled = false;
        self.next = 0;
    }

    /// Adds a byte; returns the prior sightings of the sequence it ends.
    fn add_byte(&mut self, b: u8) -> u16 {
        self.buffer[self.next] = b;
        self.next += 1;
        if self.next >= WINDOW {
            self.next = 0;
            self.filled = true;
        }
        if !self.filled {
            return 0;
        }
        let seq: [u8; WINDOW] = std::array::from_fn(|i| self.buffer[(self.next + i) % WINDOW]);
        let count = self.seen.entry(seq).or_insert(0);
        let prior = *count;
        *count = count.saturating_add(1);
        prior as u16
    }
}

/// ES's `DeDuplicatingTokenFilter` over one value's tokens: each token hashed to a byte
/// (the low byte of MurmurHash3's first 64 bits), fed to the spotter; the tokens of a
/// sequence of [`WINDOW`] seen before are dropped.
fn dedup(tokens: Vec<String>, spotter: &mut Spotter) -> Vec<String> {
    let mut slots: [Option<usize>; WINDOW] = [None; WINDOW];
    let mut sightings = [0u16; WINDOW];
    let mut kept = Vec::with_capacity(tokens.len());
    let mut cursor = 0;
    let mut wrapped = false;
    let mut record = |p: usize, slots: &[Option<usize>; WINDOW], sightings: &mut [u16; WINDOW]| {
        let n = std::mem::take(&mut sightings[p]);
        if let (Some(t), 0) = (slots[p], n) {
            kept.push(t);
        }
    };
    for (i, t) in tokens.iter().enumerate() {
        let n = spotter.add_byte(murmur3_h1(t.as_bytes()) as u8);
        slots[cursor] = Some(i);
        if n >= 1 {
            for k in 0..WINDOW {
                let p = (cursor + WINDOW - k) % WINDOW;
                sightings[p] = sightings[p].max(n);
            }
        }
        cursor += 1;
        if cursor >= WINDOW {
            cursor = 0;
            wrapped = true;
        }
        if wrapped && slots[cursor].is_some() {
            record(cursor, &slots, &mut sightings);
        }
    }
    let mut p = if wrapped { (cursor + 1) % WINDOW } else { 0 };
    while p != cursor {
        record(p, &slots, &mut sightings);
        p = (p + 1) % WINDOW;
    }
    let mut tokens: Vec<Option<String>> = tokens.into_iter().map(Some).collect();
    kept.into_iter().filter_map(|i| tokens[i].take()).collect()
}

/// MurmurHash3 x64 128 with seed 0, its first 64 bits (ES's `MurmurHash3.hash128(..).h1`):
/// the `murmur3` crate gives `h2 << 64 | h1`.
fn murmur3_h1(data: &[u8]) -> u64 {
    let mut source = data;
    // Reading a byte slice cannot fail.
    murmur3::murmur3_x64_128(&mut source, 0).map_or(0, |h| h as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_paths() {
        let src =
            serde_json::json!({"a": {"b": ["x", "y"]}, "c.d": "z", "e": [{"f": "u"}, {"f": "v"}]});
        let get = |p: &str| {
            let mut out = Vec::new();
            extract(&src, &p.split('.').collect::<Vec<_>>(), &mut out);
            out
        };
        assert_eq!(
            get("a.b"),
            vec![serde_json::json!("x"), serde_json::json!("y")]
        );
        assert_eq!(get("c.d"), vec![serde_json::json!("z")]);
        assert_eq!(
            get("e.f"),
            vec![serde_json::json!("u"), serde_json::json!("v")]
        );
        assert!(get("nope").is_empty());
    }

    #[test]
    fn murmur3_known_values() {
        // The reference implementation's x64 128-bit hash of "hello", seed 0.
        assert_eq!(murmur3_h1(b"hello"), 0xcbd8_a7b3_41bd_9b02);
        assert_eq!(murmur3_h1(b""), 0);
        // Longer than one 16-byte block, with a tail of each length (the reference's values).
        assert_eq!(
            murmur3_h1(b"The quick brown fox jumps over the lazy dog"),
            0xe34b_bc7b_bc07_1b6c
        );
        // One block exactly, a block and one byte, a block and nine (both tail words).
        assert_eq!(murmur3_h1(b"abcdefghijklmnop"), 0xc4ca_3ca3_224c_b723);
        assert_eq!(murmur3_h1(b"abcdefghijklmnopq"), 0x7564_747f_88bd_a657);
        assert_eq!(
            murmur3_h1(b"abcdefghijklmnopqrstuvwxy"),
            0x71e7_cba4_2f07_960f
        );
    }

    #[test]
    fn duplicate_sequences_are_dropped_from_later_documents() {
        let words = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let mut sp = Spotter::default();
        let first = dedup(words("a b c d e f g"), &mut sp);
        assert_eq!(first, words("a b c d e f g"));
        sp.start_new_sequence();
        // "b c d e f g" was seen: those six go, the rest stay.
        let second = dedup(words("x b c d e f g y"), &mut sp);
        assert_eq!(second, words("x y"));
        sp.start_new_sequence();
        // Five in a row are not a duplicate sequence.
        let third = dedup(words("b c d e f z"), &mut sp);
        assert_eq!(third, words("b c d e f z"));
    }

    #[test]
    fn include_exclude_match_whole_terms() {
        let inc = vec![Filter::Regex(regex::Regex::new("^(?:sp.*)$").unwrap())];
        let exc = vec![Filter::Values(["spam".to_string()].into_iter().collect())];
        assert!(accepted("space", &inc, &exc));
        assert!(!accepted("spam", &inc, &exc));
        assert!(!accepted("aspen", &inc, &exc));
        assert!(accepted("anything", &[], &[]));
    }
}
