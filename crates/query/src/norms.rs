//! What a text field's norms say about presence: a document whose value yielded at least one
//! token has a norm above 0 (tantivy's fieldnorm id 0 is length 0). Lucene answers `exists`
//! on a text field from its norms (`FieldExistsQuery`), and its BM25 `docCount` is the
//! number of documents with a term in the field, which is the same set. Values that yielded
//! no token (`""`, only stopwords) have norm 0 like documents without the field; ES's
//! `exists` still matches them, so the engine lists those in `_field_names` (see
//! `FieldDef::exists_from_norms`), and `exists` is the union of both.

use std::collections::HashMap;
use std::sync::Mutex;
use tantivy::index::SegmentId;
use tantivy::query::{
    AllScorer, BitSetDocSet, ConstScorer, EmptyScorer, EnableScoring, Explanation, Query, Scorer,
    Weight,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{BitSet, DocId, DocSet, Score, SegmentReader, TantivyError, Term, TERMINATED};

/// Whether `field` keeps norms in `reader`'s schema (an indexed text field with norms).
pub fn has_norms(reader_schema: &tantivy::schema::Schema, field: Field) -> bool {
    let entry = reader_schema.get_field_entry(field);
    entry.is_indexed() && entry.has_fieldnorms()
}

/// The documents of one segment whose norm for `field` is above 0, or `None` when the
/// segment has no norms for it.
fn with_tokens(reader: &SegmentReader, field: Field) -> tantivy::Result<Option<BitSet>> {
    let Some(norms) = reader.fieldnorms_readers().get_field(field)? else {
        return Ok(None);
    };
    let max_doc = reader.max_doc();
    let mut bits = BitSet::with_max_value(max_doc);
    for doc in 0..max_doc {
        if norms.fieldnorm_id(doc) != 0 {
            bits.insert(doc);
        }
    }
    Ok(Some(bits))
}

/// ES's `exists` on a text field with norms: the documents whose value yielded a token
/// (their norm is above 0), and those `_field_names` lists for it (a value that yielded
/// none), deleted ones included as everywhere in a segment (collectors skip them).
///
/// Like Lucene's `FieldExistsQuery`, it answers from segment metadata where it can: a
/// segment where every document has a token is matched by an all-documents scorer (Lucene
/// rewrites to `MatchAllDocsQuery` then), which the aggregations' whole-segment shortcuts
/// recognise, and its `count` is the segment's cached norm count (less deleted documents)
/// when `_field_names` lists no document for the field there.
#[derive(Debug, Clone)]
pub struct NormsExistQuery {
    field: Field,
    /// The field's `_field_names` term.
    listed: Term,
}

impl NormsExistQuery {
    pub fn new(field: Field, listed: Term) -> NormsExistQuery {
        NormsExistQuery { field, listed }
    }

    /// Whether every document of `reader` yielded a token for the field.
    fn everywhere(&self, reader: &SegmentReader) -> tantivy::Result<bool> {
        Ok(reader.max_doc() > 0
            && documents_with_tokens(reader, self.field)? == u64::from(reader.max_doc()))
    }

    /// The segment's documents matched, deleted ones included (`None`: none).
    fn matched(&self, reader: &SegmentReader) -> tantivy::Result<Option<BitSet>> {
        let mut bits = with_tokens(reader, self.field)?;
        let inverted = reader.inverted_index(self.listed.field())?;
        if let Some(info) = inverted.get_term_info(&self.listed)? {
            let mut postings =
                inverted.read_postings_from_terminfo(&info, IndexRecordOption::Basic)?;
            let bits = bits.get_or_insert_with(|| BitSet::with_max_value(reader.max_doc()));
            let mut doc = postings.doc();
            while doc != TERMINATED {
                bits.insert(doc);
                doc = postings.advance();
            }
        }
        Ok(bits)
    }
}

impl Query for NormsExistQuery {
    fn weight(&self, _: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        visitor(&self.listed, false);
    }
}

impl Weight for NormsExistQuery {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        if self.everywhere(reader)? {
            let all = AllScorer::new(reader.max_doc());
            return Ok(if boost == 1.0 {
                Box::new(all)
            } else {
                Box::new(ConstScorer::new(all, boost))
            });
        }
        Ok(match self.matched(reader)? {
            Some(bits) => Box::new(ConstScorer::new(BitSetDocSet::from(bits), boost)),
            None => Box::new(EmptyScorer),
        })
    }

    fn count(&self, reader: &SegmentReader) -> tantivy::Result<u32> {
        if self.everywhere(reader)? {
            return Ok(reader.num_docs());
        }
        let listed = reader
            .inverted_index(self.listed.field())?
            .doc_freq(&self.listed)?;
        match (listed, reader.alive_bitset()) {
            // Only the norms say which documents have the field: their cached count.
            (0, None) => Ok(documents_with_tokens(reader, self.field)? as u32),
            _ => crate::early_stop::scan_count(self, reader),
        }
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut scorer = self.scorer(reader, 1.0)?;
        if doc < reader.max_doc() && scorer.seek(doc) == doc {
            return Ok(Explanation::new("NormsExistQuery", 1.0));
        }
        Err(TantivyError::InvalidArgument(format!(
            "Document #({doc}) does not match"
        )))
    }
}

/// Per segment and field: the documents with a norm above 0. A segment never changes, so
/// the count is computed once (a scan of one byte per document).
type Counts = HashMap<(SegmentId, Field), u64>;
static COUNTS: Mutex<Option<Counts>> = Mutex::new(None);
/// Entries kept before the cache starts over (segments merged away leave theirs behind).
const COUNTS_MAX: usize = 4096;

/// The documents of `reader` whose value of `field` yielded a token (0 without norms).
pub fn documents_with_tokens(reader: &SegmentReader, field: Field) -> tantivy::Result<u64> {
    let key = (reader.segment_id(), field);
    if let Some(n) = COUNTS
        .lock()
        .expect("norm counts")
        .as_ref()
        .and_then(|m| m.get(&key).copied())
    {
        return Ok(n);
    }
    let n = match reader.fieldnorms_readers().get_field(field)? {
        Some(norms) => (0..reader.max_doc())
            .filter(|&doc| norms.fieldnorm_id(doc) != 0)
            .count() as u64,
        None => 0,
    };
    let mut cache = COUNTS.lock().expect("norm counts");
    let map = cache.get_or_insert_with(HashMap::new);
    if map.len() >= COUNTS_MAX {
        map.clear();
    }
    map.insert(key, n);
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::collector::{Count, DocSetCollector};
    use tantivy::schema::Value as _;
    use tantivy::schema::{Schema, STORED, STRING, TEXT};
    use tantivy::{Index, IndexWriter, TantivyDocument};

    /// Three segments: every document with a token; some without the field; some whose value
    /// yielded no token (listed in `_field_names`). Each document has an `id` to delete it by.
    #[test]
    fn counts_and_matches_as_the_documents_say() {
        let mut sb = Schema::builder();
        let text = sb.add_text_field("remark", TEXT);
        let names = sb.add_text_field("_field_names", STRING);
        let id = sb.add_text_field("id", STRING | STORED);
        let index = Index::create_in_ram(sb.build());
        let mut w: IndexWriter = index.writer_with_num_threads(1, 20_000_000).unwrap();
        // (segment, has a token, listed) per document; the oracle is this list.
        let mut docs = Vec::new();
        for seg in 0..3u32 {
            for i in 0..100u32 {
                let (token, listed) = match seg {
                    0 => (true, false),
                    1 => (i % 3 == 0, false),
                    _ => (i % 4 == 0, i % 4 == 1),
                };
                let key = format!("{seg}-{i}");
                let mut d = TantivyDocument::default();
                d.add_text(id, &key);
                if token {
                    d.add_text(text, "some words");
                }
                if listed {
                    d.add_text(text, "");
                    d.add_text(names, "remark");
                }
                w.add_document(d).unwrap();
                docs.push((key, token || listed));
            }
            w.commit().unwrap();
        }
        let q = NormsExistQuery::new(text, Term::from_field_text(names, "remark"));
        let check = |docs: &[(String, bool)]| {
            let searcher = index.reader().unwrap().searcher();
            let wanted = docs.iter().filter(|(_, has)| *has).count();
            let stats = crate::FieldStatistics::new(&searcher);
            assert_eq!(stats.search(&searcher, &q, &Count).unwrap(), wanted);
            let matched = stats.search(&searcher, &q, &DocSetCollector).unwrap();
            assert_eq!(matched.len(), wanted);
            for addr in matched {
                let d: TantivyDocument = searcher.doc(addr).unwrap();
                let key = d
                    .get_first(id)
                    .and_then(|v| v.as_str())
                    .unwrap()
                    .to_string();
                assert!(docs.iter().any(|(k, has)| *k == key && *has), "{key}");
            }
            // The segment where every document has a token is matched by an AllScorer.
            let weight = q
                .weight(EnableScoring::disabled_from_searcher(&searcher))
                .unwrap();
            let all = searcher
                .segment_readers()
                .iter()
                .filter(|r| crate::matches_every_doc(&*weight.scorer(r, 1.0).unwrap()))
                .count();
            assert_eq!(all, 1);
        };
        check(&docs);
        // Deletes in every segment: counts go through the alive bitset.
        for key in ["0-0", "0-99", "1-3", "1-4", "2-0", "2-1", "2-2"] {
            w.delete_term(Term::from_field_text(id, key));
            docs.retain(|(k, _)| k != key);
        }
        w.commit().unwrap();
        check(&docs);
    }
}
