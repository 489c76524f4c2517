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
    /// `index.mapping.nested_fields.limit`: distinct `nested` mappings.
    pub nested_fields: u64,
    /// `index.mapping.nested_objects.limit`: nested objects in one document.
    pub nested_objects: u64,
}

impl Default for MappingLimits {
    fn default() -> Self {
        MappingLimits {
            total_fields: 1000,
            depth: 20,
            field_name_length: i64::MAX as u64,
            nested_fields: 50,
            nested_objects: 10_000,
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
    if mapping.nested_paths().count() as u64 > limits.nested_fields {
        return Err(EsError::illegal_argument(format!(
            "Limit of nested fields [{}] has been exceeded",
            limits.nested_fields
        )));
    }
    for path in mapping.objects.keys() {
        check_depth(path, limits)?;
    }
    let names = mapping.objects.keys().chain(mapping.fields.keys());
    for path in names {
        let name = path.rsplit('.').next().unwrap_or(path);
        // Java counts UTF-16 code units.
        if name.encode_utf16().count() as u64 > limits.field_name_length {
            return Err(EsError::illegal_argument(format!(
                "Field name [{name}] is longer than the limit of [{}] characters",
                limits.field_name_length
            )));
        }
    }
    Ok(())
}

/// `MappingLookup#checkObjectDepthLimit`: an object at `a.b` is at depth 3 (the root is 1).
fn check_depth(object_path: &str, limits: &MappingLimits) -> EsResult<()> {
    let depth = object_path.matches('.').count() as u64 + 2;
    if depth > limits.depth {
        return Err(EsError::illegal_argument(format!(
            "Limit of mapping depth [{}] has been exceeded due to object field [{object_path}]",
            limits.depth
        )));
    }
    Ok(())
}

/// Checks the fields a dynamic update adds, one at a time in the order the document
/// introduced them, as `DocumentParserContext#addDynamicMapper` does (the depth of a new
/// object first, then the total fields limit): an object counts one,
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
        walk_new(mapping, "", props, &mut |path, size, object| {
            if err.is_some() {
                return;
            }
            if object {
                if let Err(e) = check_depth(path, limits) {
                    err = Some(e);
                    return;
                }
            }
            added += size;
            if existing + added - already_added > limits.total_fields {
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

/// Calls `visit(path, size, is_object)` for every field of `props` that `mapping` does not
/// have yet, a parent before its children.
fn walk_new(
    mapping: &Mapping,
    prefix: &str,
    props: &Value,
    visit: &mut dyn FnMut(&str, u64, bool),
) {
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
                visit(&path, 1, true);
            }
            walk_new(mapping, &path, children, visit);
        } else if !known {
            let multi = def
                .get("fields")
                .and_then(Value::as_object)
                .map_or(0, |m| m.len() as u64);
            visit(&path, 1 + multi, false);
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
    fn depth_and_field_name_length() {
        let m = mapping(
            json!({"properties": {"a": {"properties": {"b": {"properties": {
            "c": {"type": "keyword", "fields": {"longer_name": {"type": "keyword"}}}}}}}}}),
        );
        let l = |depth, name| MappingLimits {
            depth,
            field_name_length: name,
            ..MappingLimits::default()
        };
        // a is at depth 2, a.b at 3.
        assert!(check_limits(&m, &l(3, 11)).is_ok());
        assert_eq!(
            check_limits(&m, &l(2, 11)).unwrap_err().reason,
            "Limit of mapping depth [2] has been exceeded due to object field [a.b]"
        );
        assert_eq!(
            check_limits(&m, &l(3, 10)).unwrap_err().reason,
            "Field name [longer_name] is longer than the limit of [10] characters"
        );
        // A dynamic object deeper than the limit fails before the total is counted.
        let update = json!({"properties": {"a": {"properties": {"b": {"properties": {
            "n": {"properties": {"v": {"type": "long"}}}}}}}}});
        assert_eq!(
            check_dynamic_update(&m, &update, 0, &l(3, 100))
                .unwrap_err()
                .reason,
            "Limit of mapping depth [3] has been exceeded due to object field [a.b.n]"
        );
        assert_eq!(check_dynamic_update(&m, &update, 0, &l(4, 100)).unwrap(), 2);
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
