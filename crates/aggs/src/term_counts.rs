//! `terms` buckets counted from the term dictionary instead of the documents.
//!
//! When the search query matches every document of a segment (`match_all`, or a range that
//! covers the segment's whole [min, max] — tantivy then hands out an `AllScorer`), a keyword
//! field's bucket counts are its terms' document frequencies, corrected for the segment's
//! deleted documents (whose terms are read back from the column). The cost is the number of
//! distinct terms plus the number of deleted documents, not the number of documents; this is
//! the shortcut Elasticsearch takes for the same shape (its terms aggregator reads
//! `TermsEnum.docFreq()` when the query matches everything).
//!
//! The counts become the same intermediate result tantivy's terms collector produces, so
//! shard pruning, merging, ordering and rendering stay one code path.

use super::plan::{Op, PlanNode};
use super::request::AggKind;
use lode_engine::mapping::Storage;
use std::collections::HashMap;
use tantivy::aggregation::intermediate_agg_result::{
    IntermediateAggregationResult, IntermediateBucketResult, IntermediateTermBucketResult,
};
use tantivy::schema::{Field, Schema};
use tantivy::termdict::TermStreamer;
use tantivy::{DocId, SegmentReader};

/// The keyword field whose buckets `node` may count from document frequencies, if its shape
/// allows it: a `terms` aggregation without sub-aggregations, `missing`, `include`/`exclude`
/// or `min_doc_count: 0` (which lists terms no matching document has), on an indexed keyword
/// field with doc values (the column serves deleted documents' terms).
pub(crate) fn countable_field(node: &PlanNode, schema: &Schema) -> Option<Field> {
    let Op::Terms(op) = &node.op else {
        return None;
    };
    let AggKind::Terms(req) = &node.req.kind else {
        return None;
    };
    let def = op.field.def.as_ref()?;
    let plain = node.subs.is_empty()
        && req.missing.is_none()
        && req.include.is_none()
        && req.exclude.is_none()
        && req.min_doc_count > 0
        && op.numeric_include.is_none()
        && op.numeric_exclude.is_none();
    if !plain || def.storage() != Storage::Keyword || !def.index || !def.doc_values {
        return None;
    }
    schema.get_field(&op.field.name).ok()
}

/// Per term of `field`, the number of live documents of `segment` that have it (terms no live
/// document has are left out, as the collector leaves them out).
pub(crate) fn live_term_counts(
    segment: &SegmentReader,
    field: Field,
    field_name: &str,
) -> tantivy::Result<Vec<(String, u64)>> {
    let inverted = segment.inverted_index(field)?;
    let mut stream: TermStreamer = inverted.terms().stream()?;
    let mut counts: Vec<(String, u64)> = Vec::new();
    while stream.advance() {
        let term = String::from_utf8_lossy(stream.key()).into_owned();
        counts.push((term, u64::from(stream.value().doc_freq)));
    }
    if let Some(alive) = segment.alive_bitset() {
        let deleted: Vec<DocId> = (0..segment.max_doc())
            .filter(|&d| !alive.is_alive(d))
            .collect();
        subtract_deleted(segment, field_name, &deleted, &mut counts)?;
    }
    counts.retain(|(_, n)| *n > 0);
    Ok(counts)
}

/// Document frequencies count deleted documents until a merge drops them: take each deleted
/// document's distinct terms (from the column) off the counts.
fn subtract_deleted(
    segment: &SegmentReader,
    field_name: &str,
    deleted: &[DocId],
    counts: &mut [(String, u64)],
) -> tantivy::Result<()> {
    if deleted.is_empty() {
        return Ok(());
    }
    let Some(column) = segment.fast_fields().str(field_name)? else {
        return Ok(());
    };
    let position: HashMap<&str, usize> = counts
        .iter()
        .enumerate()
        .map(|(i, (t, _))| (t.as_str(), i))
        .collect();
    let mut minus = vec![0u64; counts.len()];
    let mut ords: Vec<u64> = Vec::new();
    let mut text = String::new();
    for &doc in deleted {
        ords.clear();
        ords.extend(column.term_ords(doc));
        ords.sort_unstable();
        ords.dedup();
        for &ord in &ords {
            text.clear();
            if column.ord_to_str(ord, &mut text)? {
                if let Some(&i) = position.get(text.as_str()) {
                    minus[i] += 1;
                }
            }
        }
    }
    for ((_, n), m) in counts.iter_mut().zip(minus) {
        *n = n.saturating_sub(m);
    }
    Ok(())
}

/// The intermediate `terms` result tantivy's collector would have produced for these counts.
///
/// tantivy keeps the fields of `IntermediateTermBucketResult` private and offers no
/// constructor, but the type is `Deserialize`: it is built through serde. YAML (already a
/// dependency) because the bucket keys are enums, which JSON cannot carry as map keys.
pub(crate) fn terms_result(
    counts: Vec<(String, u64)>,
) -> tantivy::Result<IntermediateAggregationResult> {
    use serde_yaml::value::{Mapping, Tag, TaggedValue};
    use serde_yaml::Value as Y;
    let empty_subs = || {
        let mut m = Mapping::new();
        m.insert(Y::from("aggs_res"), Y::Mapping(Mapping::new()));
        Y::Mapping(m)
    };
    let mut entries = Mapping::with_capacity(counts.len());
    for (term, doc_count) in counts {
        let key = Y::Tagged(Box::new(TaggedValue {
            tag: Tag::new("Str"),
            value: Y::String(term),
        }));
        let mut entry = Mapping::new();
        entry.insert(Y::from("doc_count"), Y::from(doc_count));
        entry.insert(Y::from("sub_aggregation"), empty_subs());
        entries.insert(key, Y::Mapping(entry));
    }
    let mut result = Mapping::new();
    result.insert(Y::from("entries"), Y::Mapping(entries));
    result.insert(Y::from("sum_other_doc_count"), Y::from(0u64));
    result.insert(Y::from("doc_count_error_upper_bound"), Y::from(0u64));
    let buckets: IntermediateTermBucketResult = serde_yaml::from_value(Y::Mapping(result))
        .map_err(|e| tantivy::TantivyError::InternalError(format!("terms counts: {e}")))?;
    Ok(IntermediateAggregationResult::Bucket(
        IntermediateBucketResult::Terms { buckets },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::aggregation::intermediate_agg_result::IntermediateKey;

    #[test]
    fn terms_result_carries_every_count() {
        let res = terms_result(vec![("b".into(), 3), ("a".into(), 7), ("中文".into(), 1)]).unwrap();
        let IntermediateAggregationResult::Bucket(IntermediateBucketResult::Terms { buckets }) =
            res
        else {
            panic!("not a terms result");
        };
        let mut got: Vec<(String, u64)> = buckets
            .entries()
            .iter()
            .map(|(k, e)| match k {
                IntermediateKey::Str(s) => (s.clone(), e.doc_count),
                other => panic!("key {other:?}"),
            })
            .collect();
        got.sort();
        assert_eq!(
            got,
            vec![("a".into(), 7), ("b".into(), 3), ("中文".into(), 1)]
        );
        assert_eq!(buckets.sum_other_doc_count(), 0);
    }
}
