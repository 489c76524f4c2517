//! `index_options`: what a field's postings record, as ES's `TextParams#textIndexOptions` and
//! `#keywordIndexOptions` define it per type, and the tantivy record option it becomes.
//!
//! tantivy records no offsets: `offsets` indexes positions, which is all Lode reads (its
//! highlighter re-analyzes `_source`, see docs/compatibility.md).

use super::FieldType;
use crate::error::{EsError, EsResult};
use serde_json::Value;
use tantivy::schema::{Field, FieldType as TantivyType, IndexRecordOption, Schema};

/// Lucene's `IndexOptions` as ES names them; ordered as Lucene's (each records what the
/// previous one does, and more).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum IndexOptions {
    Docs,
    Freqs,
    Positions,
    Offsets,
}

impl IndexOptions {
    pub fn name(self) -> &'static str {
        match self {
            IndexOptions::Docs => "docs",
            IndexOptions::Freqs => "freqs",
            IndexOptions::Positions => "positions",
            IndexOptions::Offsets => "offsets",
        }
    }

    fn from_name(s: &str) -> Option<IndexOptions> {
        Some(match s {
            "docs" => IndexOptions::Docs,
            "freqs" => IndexOptions::Freqs,
            "positions" => IndexOptions::Positions,
            "offsets" => IndexOptions::Offsets,
            _ => return None,
        })
    }

    /// The values `ty` accepts, in the order ES's refusal lists them; `None` for types
    /// without the parameter.
    pub fn accepted(ty: FieldType) -> Option<&'static [IndexOptions]> {
        use IndexOptions::*;
        match ty {
            FieldType::Text | FieldType::SearchAsYouType => {
                Some(&[Positions, Docs, Freqs, Offsets])
            }
            FieldType::Keyword | FieldType::Flattened => Some(&[Docs, Freqs]),
            _ => None,
        }
    }

    /// ES's default: positions for analyzed text, docs for keywords (and anything else).
    pub fn default_for(ty: FieldType) -> IndexOptions {
        match ty {
            FieldType::Text | FieldType::SearchAsYouType => IndexOptions::Positions,
            _ => IndexOptions::Docs,
        }
    }

    /// The field's `index_options` parameter: its value, or the type's default when absent.
    /// A value the type does not accept is refused with ES's `mapper_parsing_exception`.
    pub fn parse(ty: FieldType, v: Option<&Value>) -> EsResult<IndexOptions> {
        let (Some(v), Some(accepted)) = (v, IndexOptions::accepted(ty)) else {
            return Ok(IndexOptions::default_for(ty));
        };
        let rendered = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        v.as_str()
            .and_then(IndexOptions::from_name)
            .filter(|o| accepted.contains(o))
            .ok_or_else(|| {
                let names: Vec<&str> = accepted.iter().map(|o| o.name()).collect();
                EsError::bad_request(
                    "mapper_parsing_exception",
                    format!(
                        "Failed to parse mapping: Unknown value [{rendered}] for field [index_options] - accepted values are [{}]",
                        names.join(", ")
                    ),
                )
            })
    }

    /// The effective value of a field definition's `index_options` as JSON gives it, for
    /// comparing two definitions of one field (an absent value is the type's default).
    pub fn effective_name(ty: &str, v: Option<&Value>) -> String {
        match v {
            Some(v) => match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            },
            None => FieldType::parse(ty)
                .map(IndexOptions::default_for)
                .unwrap_or(IndexOptions::Docs)
                .name()
                .to_string(),
        }
    }

    pub fn has_positions(self) -> bool {
        self >= IndexOptions::Positions
    }

    /// What tantivy records: it keeps no offsets, so `offsets` records positions.
    pub fn record_option(self) -> IndexRecordOption {
        match self {
            IndexOptions::Docs => IndexRecordOption::Basic,
            IndexOptions::Freqs => IndexRecordOption::WithFreqs,
            IndexOptions::Positions | IndexOptions::Offsets => {
                IndexRecordOption::WithFreqsAndPositions
            }
        }
    }
}

/// Whether `field` of `schema` has positions: what a phrase query needs.
///
/// Queries ask the schema rather than the mapping: a shard's schema is what its segments
/// were written with, and indices created before `index_options` was honoured indexed every
/// text field with positions whatever their mapping said. Those phrases keep working (the
/// data to answer them exactly is there) and score with the frequencies they have, so the
/// check, the postings read and the scores agree with each other.
pub fn schema_has_positions(schema: &Schema, field: Field) -> bool {
    match schema.get_field_entry(field).field_type() {
        TantivyType::Str(o) => o
            .get_indexing_options()
            .is_some_and(|i| i.index_option().has_positions()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_and_accepted_values_per_type() {
        assert_eq!(
            IndexOptions::parse(FieldType::Text, None).unwrap(),
            IndexOptions::Positions
        );
        assert_eq!(
            IndexOptions::parse(FieldType::Keyword, None).unwrap(),
            IndexOptions::Docs
        );
        assert_eq!(
            IndexOptions::parse(FieldType::Keyword, Some(&json!("freqs"))).unwrap(),
            IndexOptions::Freqs
        );
        assert_eq!(
            IndexOptions::parse(FieldType::SearchAsYouType, Some(&json!("offsets"))).unwrap(),
            IndexOptions::Offsets
        );
        let e = IndexOptions::parse(FieldType::Keyword, Some(&json!("positions"))).unwrap_err();
        assert_eq!(e.kind, "mapper_parsing_exception");
        assert_eq!(
            e.reason,
            "Failed to parse mapping: Unknown value [positions] for field [index_options] - accepted values are [docs, freqs]"
        );
        let e = IndexOptions::parse(FieldType::Text, Some(&json!(3))).unwrap_err();
        assert_eq!(
            e.reason,
            "Failed to parse mapping: Unknown value [3] for field [index_options] - accepted values are [positions, docs, freqs, offsets]"
        );
    }

    #[test]
    fn record_options_follow_lucene_order() {
        assert_eq!(IndexOptions::Docs.record_option(), IndexRecordOption::Basic);
        assert_eq!(
            IndexOptions::Freqs.record_option(),
            IndexRecordOption::WithFreqs
        );
        assert_eq!(
            IndexOptions::Offsets.record_option(),
            IndexRecordOption::WithFreqsAndPositions
        );
        assert!(!IndexOptions::Freqs.has_positions());
        assert!(IndexOptions::Offsets.has_positions());
        assert_eq!(IndexOptions::effective_name("keyword", None), "docs");
        assert_eq!(IndexOptions::effective_name("text", None), "positions");
    }
}
