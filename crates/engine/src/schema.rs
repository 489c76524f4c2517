//! The tantivy schema of a shard: a few metadata fields plus one field per mapped leaf,
//! named by its dotted path. Schemas only ever grow: `extend` keeps every existing field at
//! its id, so segments written before a mapping update stay readable.

use crate::mapping::{FieldDef, Mapping, Storage};
use tantivy::schema::{
    BytesOptions, Field, FieldEntry, IndexRecordOption, IpAddrOptions, NumericOptions, Schema,
    SchemaBuilder, TextFieldIndexing, TextOptions, FAST,
};

pub const ID: &str = "_id";
pub const SOURCE: &str = "_source";
pub const SEQ_NO: &str = "_seq_no";
pub const VERSION: &str = "_version";
pub const FIELD_NAMES: &str = "_field_names";
pub const ROUTING: &str = "_routing";
/// Hidden nested documents' markers (present only in indices with `nested` mappings): every
/// nested document holds [`NESTED_CHILD`], its nested path, and [`nested_parent_term`] of its
/// root's `_id` (so deleting the root by id deletes the whole block). Root documents hold none.
pub const NESTED: &str = "_nested";
/// The term every nested (child) document holds in [`NESTED`].
pub const NESTED_CHILD: &str = "\u{0}";

/// The term of [`NESTED`] that ties a nested document to its root's `_id`.
pub fn nested_parent_term(id: &str) -> String {
    format!("\u{1}{id}")
}

pub const IGNORED: &str = "_ignored";

/// Handles to the metadata fields every shard schema has.
#[derive(Debug, Clone, Copy)]
pub struct MetaFields {
    pub id: Field,
    pub source: Field,
    pub seq_no: Field,
    pub version: Field,
    pub field_names: Field,
    pub routing: Field,
    /// [`NESTED`], when the index has `nested` mappings.
    pub nested: Option<Field>,
    /// `_ignored`: the fields whose values were skipped (`ignore_malformed`, `ignore_above`).
    /// Absent from indices created before Lode had it.
    pub ignored: Option<Field>,
}

impl MetaFields {
    pub fn of(schema: &Schema) -> MetaFields {
        let f = |n: &str| schema.get_field(n).expect("metadata field present");
        MetaFields {
            id: f(ID),
            source: f(SOURCE),
            seq_no: f(SEQ_NO),
            version: f(VERSION),
            field_names: f(FIELD_NAMES),
            routing: f(ROUTING),
            nested: schema.get_field(NESTED).ok(),
            ignored: schema.get_field(IGNORED).ok(),
        }
    }
}

fn base_builder() -> SchemaBuilder {
    let mut b = Schema::builder();
    // No column: ES 8 refuses fielddata on `_id` (sorting and aggregating on it), and a column of
    // unique strings would cost indexing, merging and disk for nothing. Indices created before keep theirs.
    // `_id`, `_source` and `_routing` are kept by the source store plugin (`source_store`),
    // not tantivy's doc store; indices created before it keep them stored there.
    b.add_text_field(ID, exact_terms());
    b.add_bytes_field(SOURCE, BytesOptions::default());
    // Read from their columns only (`ShardSearcher::seq_no_version`): not stored.
    b.add_u64_field(SEQ_NO, FAST);
    b.add_u64_field(VERSION, FAST);
    b.add_text_field(FIELD_NAMES, exact_terms());
    b.add_text_field(ROUTING, exact_terms());
    // Searched (`term`, `exists`), aggregated (`terms`) and returned in hits from its column.
    b.add_text_field(IGNORED, exact_terms().set_fast("raw"));
    b
}

/// Untokenized terms without norms (tantivy's `STRING` keeps a norm byte per document):
/// metadata fields are matched, never scored by length, as Lucene omits their norms.
fn exact_terms() -> TextOptions {
    TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("raw")
            .set_index_option(IndexRecordOption::Basic)
            .set_fieldnorms(false),
    )
}

/// The schema for `mapping`, keeping `previous` fields (if any) at their ids.
pub fn extend(previous: Option<&Schema>, mapping: &Mapping) -> Schema {
    let mut b = match previous {
        None => base_builder(),
        Some(prev) => {
            let mut b = Schema::builder();
            for (_, entry) in prev.fields() {
                b.add_field(entry.clone());
            }
            b
        }
    };
    let existing: std::collections::HashSet<String> = previous
        .map(|p| p.fields().map(|(_, e)| e.name().to_string()).collect())
        .unwrap_or_default();
    for def in mapping.fields.values() {
        if !existing.contains(&def.path) {
            if let Some(entry) = field_entry(def) {
                b.add_field(entry);
            }
        }
        if let Some(keyed) = def.keyed_path().filter(|n| !existing.contains(n)) {
            let mut keyed_def = def.as_ref().clone();
            keyed_def.path = keyed;
            if let Some(e) = field_entry(&keyed_def) {
                b.add_field(e);
            }
        }
        if let Some(nanos) = def.nanos_path().filter(|n| !existing.contains(n)) {
            let mut nanos_def = def.as_ref().clone();
            nanos_def.path = nanos;
            if let Some(e) = field_entry(&nanos_def) {
                b.add_field(e);
            }
        }
    }
    if mapping.has_nested() && !existing.contains(NESTED) {
        b.add_text_field(NESTED, exact_terms());
    }
    b.build()
}

/// Whether `mapping` has leaf fields that `schema` lacks.
pub fn needs_extension(schema: &Schema, mapping: &Mapping) -> bool {
    (mapping.has_nested() && schema.get_field(NESTED).is_err())
        || mapping.fields.values().any(|d| {
            (d.storage() != Storage::None && schema.get_field(&d.path).is_err())
                || d.nanos_path()
                    .is_some_and(|n| schema.get_field(&n).is_err())
                || d.keyed_path()
                    .is_some_and(|n| schema.get_field(&n).is_err())
        })
}

fn field_entry(def: &FieldDef) -> Option<FieldEntry> {
    let name = def.path.clone();
    Some(match def.storage() {
        Storage::Text => {
            let mut opts = TextOptions::default();
            if def.index {
                opts = opts.set_indexing_options(
                    TextFieldIndexing::default()
                        .set_tokenizer(&def.tokenizer_name())
                        .set_index_option(def.index_options.record_option())
                        // ES's match_only_text omits norms: it never scores by length.
                        .set_fieldnorms(def.ty != crate::mapping::FieldType::MatchOnlyText),
                );
            }
            FieldEntry::new_text(name, opts)
        }
        Storage::Keyword => {
            let tokenizer = def.tokenizer_name();
            let mut opts = TextOptions::default();
            if def.index {
                opts = opts.set_indexing_options(
                    TextFieldIndexing::default()
                        .set_tokenizer(&tokenizer)
                        .set_index_option(def.index_options.record_option())
                        .set_fieldnorms(false),
                );
            }
            if def.doc_values {
                opts = opts.set_fast(&tokenizer);
            }
            FieldEntry::new_text(name, opts)
        }
        Storage::I64 | Storage::F64 | Storage::Bool => {
            let mut opts = NumericOptions::default();
            if def.inverted() {
                opts = opts.set_indexed();
            }
            if def.doc_values {
                opts = opts.set_fast();
            }
            match def.storage() {
                Storage::I64 => FieldEntry::new_i64(name, opts),
                Storage::F64 => FieldEntry::new_f64(name, opts),
                _ => FieldEntry::new_bool(name, opts),
            }
        }
        Storage::Ip => {
            let mut opts = IpAddrOptions::default();
            if def.index {
                opts = opts.set_indexed();
            }
            if def.doc_values {
                opts = opts.set_fast();
            }
            FieldEntry::new_ip_addr(name, opts)
        }
        Storage::Completion => FieldEntry::new_text(
            name,
            TextOptions::default().set_indexing_options(
                TextFieldIndexing::default()
                    .set_tokenizer("raw")
                    .set_index_option(IndexRecordOption::Basic)
                    .set_fieldnorms(false),
            ),
        ),
        // Ranges are read from their column only (`crate::range_field`).
        Storage::Range => {
            FieldEntry::new_bytes(name, tantivy::schema::BytesOptions::default().set_fast())
        }
        // Read from their column only (`crate::geo`), as ES answers geo queries from doc values too.
        Storage::GeoPoint => FieldEntry::new_u64(name, NumericOptions::default().set_fast()),
        Storage::None => return None,
    })
}

/// Elasticsearch 8 refuses to sort or aggregate on `_id` (`indices.id_field_data.enabled` is
/// false by default, and Lode has no `_id` column to enable).
pub fn id_fielddata_error() -> crate::EsError {
    crate::EsError::illegal_argument(
        "Fielddata access on the _id field is disallowed, you can re-enable it by updating the dynamic cluster setting: indices.id_field_data.enabled",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::compile;
    use lode_analysis::AnalysisRegistry;
    use serde_json::json;

    fn record_option(schema: &Schema, name: &str) -> Option<IndexRecordOption> {
        let f = schema.get_field(name).unwrap();
        schema
            .get_field_entry(f)
            .field_type()
            .get_index_record_option()
    }

    #[test]
    fn index_options_choose_what_postings_record() {
        let mapping = compile(
            &json!({"properties": {
                "t": {"type": "text", "fields": {
                    "docs": {"type": "text", "index_options": "docs"},
                    "k": {"type": "keyword", "index_options": "freqs"}}},
                "tf": {"type": "text", "index_options": "freqs"},
                "to": {"type": "text", "index_options": "offsets"},
                "k": {"type": "keyword"},
                "s": {"type": "search_as_you_type", "index_options": "docs"},
                "f": {"type": "flattened", "index_options": "freqs"}
            }}),
            &AnalysisRegistry::new(None).unwrap(),
        )
        .unwrap();
        let schema = extend(None, &mapping);
        let option = |n| record_option(&schema, n);
        use IndexRecordOption::*;
        assert_eq!(option("t"), Some(WithFreqsAndPositions));
        assert_eq!(option("t.docs"), Some(Basic));
        assert_eq!(option("t.k"), Some(WithFreqs));
        assert_eq!(option("tf"), Some(WithFreqs));
        assert_eq!(option("to"), Some(WithFreqsAndPositions));
        assert_eq!(option("k"), Some(Basic));
        for sub in ["s", "s._2gram", "s._3gram", "s._index_prefix"] {
            assert_eq!(option(sub), Some(Basic), "{sub}");
        }
        assert_eq!(option("f"), Some(WithFreqs));
        assert_eq!(option("f#keyed"), Some(WithFreqs));
        assert!(crate::mapping::schema_has_positions(
            &schema,
            schema.get_field("to").unwrap()
        ));
        assert!(!crate::mapping::schema_has_positions(
            &schema,
            schema.get_field("tf").unwrap()
        ));
        assert!(!crate::mapping::schema_has_positions(
            &schema,
            schema.get_field("k").unwrap()
        ));
    }

    #[test]
    fn an_existing_field_keeps_its_record_option_when_the_schema_grows() {
        let reg = AnalysisRegistry::new(None).unwrap();
        let before = extend(
            None,
            &compile(&json!({"properties": {"t": {"type": "text"}}}), &reg).unwrap(),
        );
        // An index created before `index_options` was honoured: its mapping said `docs`
        // but its segments have positions, and the schema keeps saying so.
        let after = extend(
            Some(&before),
            &compile(
                &json!({"properties": {"t": {"type": "text", "index_options": "docs"},
                                       "u": {"type": "text", "index_options": "docs"}}}),
                &reg,
            )
            .unwrap(),
        );
        assert!(crate::mapping::schema_has_positions(
            &after,
            after.get_field("t").unwrap()
        ));
        assert!(!crate::mapping::schema_has_positions(
            &after,
            after.get_field("u").unwrap()
        ));
    }
}
