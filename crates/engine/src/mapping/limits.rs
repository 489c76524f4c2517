//! Elasticsearch's mapping limits (`index.mapping.*.limit`), checked as `MappingLookup` checks
//! them: on index creation and `PUT _mapping` against the whole merged mapping, and for a
//! dynamic update field by field, in document order, so that the first field over the limit
//! names how many fields the document was adding.

use super::Mapping;
use crate::error::{EsError, EsResult};
use serde_json::Value;

/// The mapping limits of an index (defaults as in ES 8's `MapperService`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MappingLimits {
    /// `index.mapping.total_fields.limit`.
    pub total_fields: u64,
    /// `index.mapping.depth.limit`.
    pub depth: u64,
    /// `index.mapping.field_name_length.limit`.
    pub field_name_length: u64,
}

impl Default for MappingLimits {
    fn default() -> Self {
        MappingLimits {
            total_fields: 1000,
            depth: 20,
            field_name_length: i64::MAX as u64,
        }
    }
}

impl Mapping {
    /// The number of fields ES counts against `index.mapping.total_fields.limit`: every field
    /// (multi-fields and aliases included), every object field (not the root) and every
    /// runtime field; metadata fields are not counted.
    pub fn total_fields_count(&self) -> u64 {
        let runtime = self
            .json
            .get("runtime")
            .and_then(Value::as_object)
            .map_or(0, |m| m.len());
        (self.fields.len() + self.objects.len() + runtime) as u64
    }
}

/// Checks a whole mapping against the limits (`MappingLookup#checkLimits`): the errors are
/// `illegal_argument_exception`s with ES's messages.
pub fn check_limits(mapping: &Mapping, limits: &MappingLimits) -> EsResult<()> {
    if mapping.total_fields_count() > limits.total_fields {
        return Err(EsError::illegal_argument(format!(
            "Limit of total fields [{}] has been exceeded",
            limits.total_fields
        )));
    }
    Ok(())
}

/// Checks the fields a dynamic update adds, one at a time in the order the document
/// introduced them, as `DocumentParserContext#addDynamicMapper` does: an object counts one,
/// a leaf field one plus its multi-fields. `already_added` counts fields this same document
/// added in an earlier pass. The error is the cause ES wraps in its document parsing error.
pub fn check_dynamic_update(
    mapping: &Mapping,
    update: &Value,
    already_added: u64,
    limits: &MappingLimits,
) -> EsResult<u64> {
    let existing = mapping.total_fields_count();
    let mut added = already_added;
    let mut err = None;
    if let Some(props) = update.get("properties") {
        walk_new(mapping, "", props, &mut |_path, size| {
            added += size;
            if err.is_none() && existing + added - already_added > limits.total_fields {
                err = Some(EsError::illegal_argument(format!(
                    "Limit of total fields [{}] has been exceeded while adding new fields [{added}]",
                    limits.total_fields
                )));
            }
        });
    }
    match err {
        Some(e) => Err(e),
        None => Ok(added),
    }
}

/// Calls `visit(path, size)` for every field of `props` that `mapping` does not have yet, a
/// parent before its children.
fn walk_new(mapping: &Mapping, prefix: &str, props: &Value, visit: &mut dyn FnMut(&str, u64)) {
    let Some(props) = props.as_object() else {
        return;
    };
    for (name, def) in props {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        let known = mapping.fields.contains_key(&path) || mapping.objects.contains_key(&path);
        if let Some(children) = def.get("properties") {
            if !known {
                visit(&path, 1);
            }
            walk_new(mapping, &path, children, visit);
        } else if !known {
            let multi = def
                .get("fields")
                .and_then(Value::as_object)
                .map_or(0, |m| m.len() as u64);
            visit(&path, 1 + multi);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::compile;
    use lode_analysis::AnalysisRegistry;
    use serde_json::json;

    fn mapping(j: Value) -> Mapping {
        let reg = AnalysisRegistry::new(None).unwrap();
        let m = compile(&j, &reg).unwrap();
        Mapping { json: j, ..m }
    }

    fn limits(total: u64) -> MappingLimits {
        MappingLimits {
            total_fields: total,
            ..MappingLimits::default()
        }
    }

    #[test]
    fn counts_fields_objects_multi_fields_and_runtime_fields() {
        let m = mapping(json!({
            "runtime": {"r": {"type": "long"}},
            "properties": {
                "a": {"type": "text", "fields": {"k": {"type": "keyword"}, "w": {"type": "text"}}},
                "o": {"properties": {"x": {"type": "long"}, "p": {"properties": {"y": {"type": "alias", "path": "a"}}}}}
            }
        }));
        // a, a.k, a.w, o, o.x, o.p, o.p.y, r
        assert_eq!(m.total_fields_count(), 8);
        assert!(check_limits(&m, &limits(8)).is_ok());
        let e = check_limits(&m, &limits(7)).unwrap_err();
        assert_eq!(e.kind, "illegal_argument_exception");
        assert_eq!(e.reason, "Limit of total fields [7] has been exceeded");
    }

    #[test]
    fn dynamic_updates_count_new_fields_in_document_order() {
        let m = mapping(json!({"properties": {"o": {"properties": {"x": {"type": "long"}}}}}));
        assert_eq!(m.total_fields_count(), 2);
        let text = json!({"type": "text", "fields": {"keyword": {"type": "keyword"}}});
        // o exists (not counted again); o.s is 2, n is 1 (object), n.v is 1.
        let update = json!({"properties": {
            "o": {"properties": {"s": text}},
            "n": {"properties": {"v": {"type": "long"}}}
        }});
        assert_eq!(check_dynamic_update(&m, &update, 0, &limits(6)).unwrap(), 4);
        let e = check_dynamic_update(&m, &update, 0, &limits(4)).unwrap_err();
        assert_eq!(
            e.reason,
            "Limit of total fields [4] has been exceeded while adding new fields [3]"
        );
        // Fields added by an earlier pass of the same document are in the mapping already
        // and count in the reported number.
        let e = check_dynamic_update(&m, &update, 5, &limits(4)).unwrap_err();
        assert_eq!(
            e.reason,
            "Limit of total fields [4] has been exceeded while adding new fields [8]"
        );
    }
}
