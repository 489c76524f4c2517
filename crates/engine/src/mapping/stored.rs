//! Reading back a stored mapping: requests are parsed strictly, but a mapping read from disk
//! was accepted when it was written, so it is parsed leniently, as ES parses the mappings of
//! indices created by an older version (`FieldMapper.Builder#parse`: an unknown parameter on
//! such an index is removed with "Parameter [x] has no effect on type [y] and will be removed
//! in future" instead of failing the parse).
//!
//! What is dropped: a parameter the field's type does not have today (unknown to a leaf type,
//! to an object, or at the mapping's root), and the parameters ES itself builds without
//! (`constant_keyword`'s `fields` and `copy_to`). No code of today's Lode reads such a
//! parameter, so dropping it cannot change how the stored data is read; refusing it would
//! leave the data unreachable.
//!
//! What still fails the open: everything else, e.g. an unknown field type or analyzer, or a
//! known parameter with a value refused today (`index_options: positions` on a keyword, a
//! locale other than English). Those decide how the stored terms and columns are read;
//! guessing a replacement would reinterpret the data silently.
//!
//! Dropped parameters (and parameters stated with their default, as for a request: see
//! `configured`) are gone from the compiled mapping's JSON too, so `GET _mapping` shows
//! the mapping the index is served with (ES serializes mappings from its mappers, where the
//! parameter never arrived), and the next state write stores it without them.

use super::parse::{ignored_by_es, is_leaf_param, OBJECT_PARAMS, ROOT_KEYS};
use super::{compile_with, FieldDefaults, FieldType, Mapping};
use crate::error::EsResult;
use lode_analysis::AnalysisRegistry;
use serde_json::{Map, Value};

/// A parameter dropped from a stored mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// The field's dotted path (`_doc` for the mapping's root).
    pub field: String,
    /// The field's type, as ES names it in its warning.
    pub ty: String,
    pub parameter: String,
}

/// Compiles the mapping stored with index `index`, dropping (with a warning naming the index,
/// field and parameter) what the module documentation lists.
pub fn compile_stored(
    index: &str,
    json: &Value,
    analysis: &AnalysisRegistry,
    defaults: FieldDefaults,
) -> EsResult<Mapping> {
    let mut json = json.clone();
    super::configured::drop_stated_defaults(&mut json);
    for d in drop_unknown(&mut json) {
        tracing::warn!(
            index,
            field = %d.field,
            parameter = %d.parameter,
            "stored mapping: parameter [{}] has no effect on type [{}] and is dropped; the index opens without it",
            d.parameter,
            d.ty
        );
    }
    let mapping = match compile_with(&json, analysis, defaults) {
        Ok(m) => m,
        // Templates are validated since ES 8 (and Lode applies them since then): an index
        // stored with templates now refused ran without them, and opens without them.
        Err(e) if json.get("dynamic_templates").is_some() => {
            let mut without = json.clone();
            if let Some(root) = without.as_object_mut() {
                root.remove("dynamic_templates");
            }
            let m = compile_with(&without, analysis, defaults).map_err(|_| e.clone())?;
            tracing::warn!(index, error = %e.reason,
                "stored mapping: dynamic_templates are invalid; the index opens without them");
            json = without;
            m
        }
        Err(e) => return Err(e),
    };
    Ok(Mapping { json, ..mapping })
}

/// Removes from a stored mapping the parameters its fields' types do not have, and returns
/// them. Definitions of unknown types or of an unexpected shape are left as they are, for the
/// compiler to refuse.
pub fn drop_unknown(json: &mut Value) -> Vec<Dropped> {
    let mut dropped = Vec::new();
    let Some(root) = json.as_object_mut() else {
        return dropped;
    };
    retain(root, "_doc", "_doc", &mut dropped, |k| {
        ROOT_KEYS.contains(&k)
    });
    if let Some(Value::Object(props)) = root.get_mut("properties") {
        drop_in_properties("", props, &mut dropped);
    }
    dropped
}

fn drop_in_properties(prefix: &str, props: &mut Map<String, Value>, out: &mut Vec<Dropped>) {
    for (name, def) in props.iter_mut() {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        if let Value::Object(def) = def {
            drop_in_field(&path, def, false, out);
        }
    }
}

fn drop_in_field(path: &str, def: &mut Map<String, Value>, multi: bool, out: &mut Vec<Dropped>) {
    let ty = match def.get("type") {
        None if multi => return,
        None => FieldType::Object,
        Some(Value::String(t)) => match FieldType::parse(t) {
            Some(ty) => ty,
            None => return,
        },
        Some(_) => return,
    };
    let name = ty.name();
    if !ty.is_leaf() {
        retain(def, path, name, out, |k| OBJECT_PARAMS.contains(&k));
        if let Some(Value::Object(props)) = def.get_mut("properties") {
            drop_in_properties(path, props, out);
        }
        return;
    }
    retain(def, path, name, out, |k| {
        is_leaf_param(ty, k) && !ignored_by_es(ty, k)
    });
    if let Some(Value::Object(fields)) = def.get_mut("fields") {
        for (sub, sub_def) in fields.iter_mut() {
            if let Value::Object(sub_def) = sub_def {
                drop_in_field(&format!("{path}.{sub}"), sub_def, true, out);
            }
        }
    }
}

fn retain(
    def: &mut Map<String, Value>,
    path: &str,
    ty: &str,
    out: &mut Vec<Dropped>,
    known: impl Fn(&str) -> bool,
) {
    def.retain(|k, _| {
        let keep = known(k);
        if !keep {
            out.push(Dropped {
                field: path.to_string(),
                ty: ty.to_string(),
                parameter: k.clone(),
            });
        }
        keep
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reg() -> AnalysisRegistry {
        AnalysisRegistry::new(None).unwrap()
    }

    fn dropped(field: &str, ty: &str, parameter: &str) -> Dropped {
        Dropped {
            field: field.into(),
            ty: ty.into(),
            parameter: parameter.into(),
        }
    }

    #[test]
    fn parameters_refused_today_are_dropped_from_a_stored_mapping() {
        let stored = json!({
            "_size": {"enabled": true},
            "properties": {
                "w": {"type": "wildcard", "index_options": "docs"},
                "m": {"type": "match_only_text", "norms": false, "fields": {
                    "raw": {"type": "keyword", "bogus": 1}
                }},
                "c": {"type": "constant_keyword", "value": "x", "copy_to": "all"},
                "o": {"properties": {"n": {"type": "long", "analyzer": "standard"}},
                      "flavour": "x"},
                "t": {"type": "text", "index": true}
            }
        });
        // Today's parser refuses it...
        assert!(super::super::compile(&stored, &reg()).is_err());
        let mut json = stored.clone();
        let mut got = drop_unknown(&mut json);
        json["properties"]["t"] = json!({"type": "text"});
        got.sort_by(|a, b| a.field.cmp(&b.field));
        assert_eq!(
            got,
            vec![
                dropped("_doc", "_doc", "_size"),
                dropped("c", "constant_keyword", "copy_to"),
                dropped("m", "match_only_text", "norms"),
                dropped("m.raw", "keyword", "bogus"),
                dropped("o", "object", "flavour"),
                dropped("o.n", "long", "analyzer"),
                dropped("w", "wildcard", "index_options"),
            ]
        );
        // ...and reads it back without them; what is kept is untouched.
        let m = compile_stored("i", &stored, &reg(), FieldDefaults::default()).unwrap();
        assert_eq!(m.json, json);
        // A parameter stated with its default is not kept (see `configured`).
        assert_eq!(m.json["properties"]["t"], json!({"type": "text"}));
        assert_eq!(
            m.json["properties"]["c"],
            json!({"type": "constant_keyword", "value": "x"})
        );
        assert!(m.fields.contains_key("m.raw"));
    }

    #[test]
    fn refusals_that_change_how_data_is_read_still_fail() {
        let reg = reg();
        for def in [
            json!({"type": "no_such_type"}),
            json!({"type": "text", "analyzer": "no_such_analyzer"}),
            json!({"type": "keyword", "index_options": "positions"}),
            json!({"type": "date", "locale": "de"}),
            json!({"type": "keyword", "fields": {"x": {"bogus": true}}}),
        ] {
            let stored = json!({"properties": {"f": def}});
            assert!(
                compile_stored("i", &stored, &reg, FieldDefaults::default()).is_err(),
                "{def}"
            );
        }
    }

    #[test]
    fn invalid_stored_dynamic_templates_are_dropped_whole() {
        let stored = json!({
            "dynamic_templates": [{"t": {"match": "*", "mapping": {"type": "no_such_type"}}}],
            "properties": {"k": {"type": "keyword"}}
        });
        let m = compile_stored("i", &stored, &reg(), FieldDefaults::default()).unwrap();
        assert!(m.dynamic_templates.is_empty());
        assert!(m.json.get("dynamic_templates").is_none());
        // A mapping failing elsewhere fails with its own error.
        let stored = json!({
            "dynamic_templates": [{"t": {"match": "*", "mapping": {"type": "keyword"}}}],
            "properties": {"k": {"type": "no_such_type"}}
        });
        let e = compile_stored("i", &stored, &reg(), FieldDefaults::default()).unwrap_err();
        assert!(e.reason.contains("no_such_type"), "{}", e.reason);
    }
}
