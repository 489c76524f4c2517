//! Whether a query may search a mapped field, as ES's field types decide it before building
//! a query (`MappedFieldType#failIfNotIndexed`, `#failIfNotIndexedNorDocValuesFallback`).
//!
//! - Keyword, numeric, date, boolean and ip fields (and `geo_point` for geo queries) fall
//!   back to their doc values: with `index: false` they are searched through their column,
//!   and only a field with neither is refused ("... not indexed nor has doc values.").
//! - Text, `search_as_you_type`, `flattened` and range fields search their index only:
//!   `index: false` is refused ("... not indexed.") whatever their doc values.
//!
//! ES throws an `IllegalArgumentException` while the shard builds the query, which
//! `SearchExecutionContext#toQuery` wraps as `failed to create query: ...`.

use lode_engine::mapping::{FieldDef, FieldType, Storage};
use lode_engine::EsError;

/// Whether the field's type answers from doc values when it is not indexed.
fn falls_back_to_doc_values(def: &FieldDef) -> bool {
    def.ty == FieldType::Keyword
        || matches!(
            def.storage(),
            Storage::I64 | Storage::F64 | Storage::Bool | Storage::Ip | Storage::GeoPoint
        )
}

/// Whether the field is searched through its column alone (`index: false` with doc values,
/// on a type with a doc-values fallback).
pub fn doc_values_only(def: &FieldDef) -> bool {
    !def.index && def.doc_values && falls_back_to_doc_values(def)
}

/// ES's refusal of a query on `def`, or `None` when the field can be searched.
pub fn refusal(def: &FieldDef) -> Option<EsError> {
    if def.index || def.ty == FieldType::ConstantKeyword {
        return None;
    }
    let why = if falls_back_to_doc_values(def) {
        if def.doc_values {
            return None;
        }
        format!(
            "Cannot search on field [{}] since it is not indexed nor has doc values.",
            def.path
        )
    } else if matches!(
        def.storage(),
        Storage::Text | Storage::Keyword | Storage::Range
    ) {
        format!(
            "Cannot search on field [{}] since it is not indexed.",
            def.path
        )
    } else {
        return None;
    };
    Some(refused(why))
}

/// `why` as ES reports it from the shard: a `query_shard_exception` caused by the
/// `illegal_argument_exception`.
pub fn refused(why: String) -> EsError {
    EsError::bad_request(
        "query_shard_exception",
        format!("failed to create query: {why}"),
    )
    .caused_by(EsError::illegal_argument(why))
}

/// Whether `err` is a refusal of [`refusal`] (which `lenient` queries turn into no match,
/// as ES's `MatchQueryParser` and `QueryStringQueryParser` catch it).
pub fn is_refusal(err: &EsError) -> bool {
    err.kind == "query_shard_exception"
        && err
            .reason
            .starts_with("failed to create query: Cannot search on field [")
}

#[cfg(test)]
mod tests {
    use super::*;
    use lode_engine::mapping::Mapping;

    fn field(mapping: serde_json::Value) -> FieldDef {
        let registry = lode_analysis::AnalysisRegistry::new(None).unwrap();
        let m: Mapping = lode_engine::mapping::compile(
            &serde_json::json!({"properties": {"f": mapping}}),
            &registry,
        )
        .unwrap();
        (**m.field("f").unwrap()).clone()
    }

    fn reason(mapping: serde_json::Value) -> Option<String> {
        refusal(&field(mapping)).map(|e| e.reason)
    }

    #[test]
    fn doc_values_fallback_types_refuse_only_without_doc_values() {
        for ty in [
            "keyword",
            "long",
            "double",
            "date",
            "boolean",
            "ip",
            "scaled_float",
        ] {
            let mut m = serde_json::json!({"type": ty, "index": false});
            if ty == "scaled_float" {
                m["scaling_factor"] = 10.into();
            }
            assert_eq!(reason(m.clone()), None, "{ty}");
            assert!(doc_values_only(&field(m.clone())), "{ty}");
            m["doc_values"] = false.into();
            assert_eq!(
                reason(m).as_deref(),
                Some(
                    "failed to create query: Cannot search on field [f] since it is not indexed nor has doc values."
                ),
                "{ty}"
            );
        }
    }

    #[test]
    fn index_only_types_refuse_when_not_indexed() {
        for m in [
            serde_json::json!({"type": "text", "index": false}),
            serde_json::json!({"type": "integer_range", "index": false}),
            serde_json::json!({"type": "flattened", "index": false}),
        ] {
            assert_eq!(
                reason(m.clone()).as_deref(),
                Some("failed to create query: Cannot search on field [f] since it is not indexed."),
                "{m}"
            );
            assert!(!doc_values_only(&field(m)));
        }
        assert_eq!(reason(serde_json::json!({"type": "text"})), None);
    }

    #[test]
    fn a_refusal_is_recognised_and_caused_by_an_illegal_argument() {
        let e = refusal(&field(
            serde_json::json!({"type": "keyword", "index": false, "doc_values": false}),
        ))
        .unwrap();
        assert!(is_refusal(&e));
        assert_eq!(e.status, 400);
        let cause = e.caused_by.as_ref().unwrap();
        assert_eq!(cause.kind, "illegal_argument_exception");
        assert_eq!(
            cause.reason,
            "Cannot search on field [f] since it is not indexed nor has doc values."
        );
    }
}
