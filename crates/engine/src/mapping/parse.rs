//! Compiles and merges mapping JSON, with Elasticsearch's validation errors.

use super::templates::{self, DetectedType, DynamicTemplate};
use super::{
    CompletionOptions, Dynamic, FieldDef, FieldDefaults, FieldType, IndexOptions, Mapping,
    ObjectDef, SaytField, SaytRole, TokenCountOptions, SAYT_DEFAULT_MAX_SHINGLE_SIZE,
};
use crate::error::{EsError, EsResult};
use lode_analysis::AnalysisRegistry;
use lode_dates::DateFormat;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

fn mapper_parsing(reason: impl Into<String>) -> EsError {
    EsError::bad_request("mapper_parsing_exception", reason)
}

pub(super) const ROOT_KEYS: &[&str] = &[
    "properties",
    "dynamic",
    "_source",
    "date_detection",
    "numeric_detection",
    "dynamic_date_formats",
    "dynamic_templates",
    "_meta",
    "_routing",
    "_field_names",
    "enabled",
    "runtime",
    "_doc_count",
    "subobjects",
];

/// Compiles `mappings` JSON (already unwrapped from any `_doc` type level) into a `Mapping`.
pub fn compile(json: &Value, analysis: &AnalysisRegistry) -> EsResult<Mapping> {
    compile_with(json, analysis, FieldDefaults::default())
}

/// [`compile`] with the index's defaults of field parameters.
pub fn compile_with(
    json: &Value,
    analysis: &AnalysisRegistry,
    defaults: FieldDefaults,
) -> EsResult<Mapping> {
    let root = match json {
        Value::Object(m) => m,
        Value::Null => &Map::new(),
        _ => return Err(mapper_parsing("Root mapping definition must be an object")),
    };
    let unknown: Vec<String> = root
        .iter()
        .filter(|(k, _)| !ROOT_KEYS.contains(&k.as_str()))
        .map(|(k, v)| format!("{k} : {}", render_scalar(v)))
        .collect();
    if !unknown.is_empty() {
        return Err(mapper_parsing(format!(
            "Root mapping definition has unsupported parameters:  [{}]",
            unknown.join("] [")
        )));
    }
    let dynamic = match root.get("dynamic") {
        None => Dynamic::True,
        Some(v) => Dynamic::parse(v).ok_or_else(|| {
            mapper_parsing(format!(
                "Could not convert [dynamic] to boolean or strict: {v}"
            ))
        })?,
    };
    let source_enabled = root
        .get("_source")
        .and_then(|s| s.get("enabled"))
        .map(|v| v.as_bool() != Some(false) && v.as_str() != Some("false"))
        .unwrap_or(true);
    let date_detection = root.get("date_detection").map(as_bool).unwrap_or(true);
    let numeric_detection = root.get("numeric_detection").map(as_bool).unwrap_or(false);
    let dynamic_date_formats = match root.get("dynamic_date_formats") {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str())
            .map(|s| DateFormat::parse(s).map_err(|e| mapper_parsing(e.reason)))
            .collect::<EsResult<Vec<_>>>()?,
        _ => vec![
            DateFormat::parse("strict_date_optional_time").expect("builtin format"),
            DateFormat::parse("yyyy/MM/dd HH:mm:ss||yyyy/MM/dd").expect("builtin format"),
        ],
    };
    let dynamic_templates = match root.get("dynamic_templates") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => {
            templates::parse_templates(v, &|t, ty| validate_template(t, ty, analysis, defaults))?
        }
    };
    let mut mapping = Mapping {
        json: json.clone(),
        dynamic_templates: Arc::new(dynamic_templates),
        fields: BTreeMap::new(),
        objects: BTreeMap::new(),
        dynamic,
        source_enabled,
        date_detection,
        numeric_detection,
        dynamic_date_formats,
        defaults,
        source_filter: None,
    };
    if let Some(props) = root.get("properties") {
        let props = props.as_object().ok_or_else(|| {
            mapper_parsing("Expected map for property [properties] on field [_doc]")
        })?;
        compile_properties("", props, analysis, &mut mapping)?;
    }
    Ok(mapping)
}

/// ES's check of a template against one of its types: its mapping, for a field named
/// `__dynamic__<template>`, must compile.
fn validate_template(
    t: &DynamicTemplate,
    ty: DetectedType,
    analysis: &AnalysisRegistry,
    defaults: FieldDefaults,
) -> EsResult<()> {
    let name = format!("__dynamic__{}", t.name);
    let def = t.definition(&name, ty);
    if t.runtime {
        let ty = def.get("type").map(render_scalar).unwrap_or_default();
        if !RUNTIME_TYPES.contains(&ty.as_str()) {
            return Err(EsError::illegal_argument(format!(
                "No runtime field found for type [{ty}]"
            )));
        }
        return Ok(());
    }
    compile_with(&json!({"properties": {name: def}}), analysis, defaults).map(|_| ())
}

/// The runtime field types Lode has (ES 8's `ip`, `geo_point`, `composite` and `lookup`
/// are refused, as in a mapping's `runtime` section).
const RUNTIME_TYPES: &[&str] = &["boolean", "date", "double", "keyword", "long"];

fn as_bool(v: &Value) -> bool {
    v.as_bool().unwrap_or_else(|| v.as_str() == Some("true"))
}

fn render_scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn compile_properties(
    prefix: &str,
    props: &Map<String, Value>,
    analysis: &AnalysisRegistry,
    mapping: &mut Mapping,
) -> EsResult<()> {
    for (name, def) in props {
        if name.is_empty() {
            let why = "field name cannot be an empty string";
            return Err(mapper_parsing(format!("Failed to parse mapping: {why}"))
                .caused_by(EsError::illegal_argument(why)));
        }
        // ES's ObjectMapper splits a name on dots: a name of dots only has no part left.
        if name.chars().all(|c| c == '.') {
            let why = "field name cannot contain only dots";
            return Err(mapper_parsing(format!("Failed to parse mapping: {why}"))
                .caused_by(EsError::illegal_argument(why)));
        }
        // A root property named as a metadata field collides with its mapper, as in ES's
        // MappingLookup (and would collide with the tantivy field of the same name).
        if prefix.is_empty() && METADATA_FIELDS.contains(&name.as_str()) {
            return Err(mapper_parsing(format!(
                "Field [{name}] is defined more than once"
            )));
        }
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        let def = def.as_object().ok_or_else(|| {
            mapper_parsing(format!("Expected map for property [fields] on field [{name}] but got a class java.lang.String"))
        })?;
        compile_field(&path, def, None, analysis, mapping)?;
    }
    Ok(())
}

/// Elasticsearch 8's metadata field mappers.
const METADATA_FIELDS: &[&str] = &[
    "_id",
    "_index",
    "_source",
    "_routing",
    "_ignored",
    "_field_names",
    "_seq_no",
    "_version",
    "_doc_count",
    "_tier",
    "_data_stream_timestamp",
    "_feature",
];

const COMMON_PARAMS: &[&str] = &["type", "meta", "copy_to", "store", "fields", "similarity"];

/// The parameters of an `object` or `nested` field.
pub(super) const OBJECT_PARAMS: &[&str] = &[
    "type",
    "properties",
    "dynamic",
    "enabled",
    "include_in_parent",
    "include_in_root",
    "subobjects",
];

/// Whether `k` is a parameter of a leaf field of type `ty`; any other is refused as unknown.
/// The types whose ES mappers declare their parameters take only theirs (no common ones).
pub(super) fn is_leaf_param(ty: FieldType, k: &str) -> bool {
    match ty {
        FieldType::SourceOnly(_) => true,
        _ if has_declared_params(ty) => k == "type" || allowed_params(ty).contains(&k),
        _ => COMMON_PARAMS.contains(&k) || allowed_params(ty).contains(&k),
    }
}

fn has_declared_params(ty: FieldType) -> bool {
    matches!(
        ty,
        FieldType::MatchOnlyText | FieldType::Wildcard | FieldType::ConstantKeyword
    )
}

/// Parameters ES parses on `ty` but builds without (they are dropped without a word there);
/// Lode refuses them in requests rather than ignore them.
pub(super) fn ignored_by_es(ty: FieldType, k: &str) -> bool {
    ty == FieldType::ConstantKeyword && matches!(k, "fields" | "copy_to")
}

fn allowed_params(ty: FieldType) -> &'static [&'static str] {
    match ty {
        FieldType::TokenCount => &[
            "analyzer",
            "enable_position_increments",
            "null_value",
            "index",
            "doc_values",
        ],
        FieldType::Text => &[
            "analyzer",
            "search_analyzer",
            "search_quote_analyzer",
            "index",
            "index_options",
            "index_phrases",
            "index_prefixes",
            "norms",
            "position_increment_gap",
            "term_vector",
            "fielddata",
            "fielddata_frequency_filter",
            "eager_global_ordinals",
        ],
        FieldType::SearchAsYouType => &[
            "analyzer",
            "search_analyzer",
            "search_quote_analyzer",
            "index",
            "index_options",
            "norms",
            "term_vector",
            "max_shingle_size",
        ],
        FieldType::Keyword | FieldType::Flattened => &[
            "ignore_above",
            "null_value",
            "index",
            "doc_values",
            "normalizer",
            "index_options",
            "norms",
            "eager_global_ordinals",
            "split_queries_on_whitespace",
            "value",
            "depth_limit",
            "time_series_dimension",
        ],
        t if t.is_numeric() => &[
            "null_value",
            "index",
            "doc_values",
            "coerce",
            "ignore_malformed",
            "scaling_factor",
            "time_series_metric",
            "time_series_dimension",
        ],
        t if t.is_date() => &[
            "format",
            "locale",
            "null_value",
            "index",
            "doc_values",
            "ignore_malformed",
            "print_format",
        ],
        FieldType::Boolean | FieldType::Ip => {
            &["null_value", "index", "doc_values", "ignore_malformed"]
        }
        FieldType::Binary => &["doc_values"],
        FieldType::Range(crate::range_field::RangeKind::Date) => {
            &["format", "locale", "index", "doc_values", "coerce"]
        }
        FieldType::Range(_) => &["index", "doc_values", "coerce"],
        FieldType::GeoPoint => &[
            "index",
            "doc_values",
            "ignore_malformed",
            "ignore_z_value",
            "null_value",
        ],
        // ES's parameters of these types, checked by `check_builder_params`.
        FieldType::MatchOnlyText => &["meta", "fields", "copy_to"],
        FieldType::Wildcard => &["ignore_above", "null_value", "meta", "fields", "copy_to"],
        FieldType::ConstantKeyword => &["value", "meta", "fields", "copy_to"],
        FieldType::Completion => &[
            "analyzer",
            "search_analyzer",
            "preserve_separators",
            "preserve_position_increments",
            "max_input_length",
            "contexts",
        ],
        _ => &[],
    }
}

fn compile_field(
    path: &str,
    def: &Map<String, Value>,
    parent: Option<&str>,
    analysis: &AnalysisRegistry,
    mapping: &mut Mapping,
) -> EsResult<()> {
    let short = path.rsplit('.').next().unwrap_or(path);
    let ty = match def.get("type") {
        None => {
            if def.contains_key("properties") || parent.is_none() {
                FieldType::Object
            } else {
                return Err(mapper_parsing(format!(
                    "No type specified for field [{short}]"
                )));
            }
        }
        Some(Value::String(t)) => FieldType::parse(t).ok_or_else(|| {
            mapper_parsing(format!(
                "No handler for type [{t}] declared on field [{short}]"
            ))
        })?,
        Some(other) => {
            return Err(mapper_parsing(format!(
                "No handler for type [{other}] declared on field [{short}]"
            )))
        }
    };
    if !ty.is_leaf() {
        if parent.is_some() {
            return Err(mapper_parsing(format!(
                "Type [{}] cannot be used in multi field",
                ty.name()
            )));
        }
        let unknown: Vec<String> = def
            .iter()
            .filter(|(k, _)| !OBJECT_PARAMS.contains(&k.as_str()))
            .map(|(k, v)| format!("{k} : {}", render_scalar(v)))
            .collect();
        if !unknown.is_empty() {
            return Err(mapper_parsing(format!(
                "Mapping definition for [{short}] has unsupported parameters:  [{}]",
                unknown.join("] [")
            )));
        }
        let dynamic = match def.get("dynamic") {
            None => None,
            Some(v) => Some(Dynamic::parse(v).ok_or_else(|| {
                mapper_parsing(format!("Could not convert [{short}.dynamic] to boolean"))
            })?),
        };
        let enabled = def.get("enabled").map(as_bool).unwrap_or(true);
        mapping.objects.insert(
            path.to_string(),
            ObjectDef {
                path: path.to_string(),
                dynamic,
                enabled,
                nested: ty == FieldType::Nested,
                include_in_parent: ty == FieldType::Nested
                    && def.get("include_in_parent").is_some_and(as_bool),
                include_in_root: ty == FieldType::Nested
                    && def.get("include_in_root").is_some_and(as_bool),
            },
        );
        if enabled {
            if let Some(props) = def.get("properties") {
                let props = props.as_object().ok_or_else(|| {
                    mapper_parsing(format!(
                        "Expected map for property [properties] on field [{short}]"
                    ))
                })?;
                compile_properties(path, props, analysis, mapping)?;
            }
        }
        return Ok(());
    }

    check_builder_params(short, ty, def)?;
    let allowed = allowed_params(ty);
    let unknown: Vec<String> = def
        .iter()
        .filter(|(k, _)| !is_leaf_param(ty, k))
        .map(|(k, v)| format!("{k} : {}", render_scalar(v)))
        .collect();
    if !unknown.is_empty() {
        return Err(mapper_parsing(format!(
            "Mapping definition for [{short}] has unsupported parameters:  [{}]",
            unknown.join("] [")
        )));
    }
    // Not built: refused rather than left unindexed.
    if ty == FieldType::GeoPoint
        && def
            .get("fields")
            .is_some_and(|f| f.as_object().is_some_and(|o| !o.is_empty()))
    {
        return Err(mapper_parsing(format!(
            "Multi-fields on [geo_point] field [{short}] are not supported by Lode"
        )));
    }
    // A numeric or boolean null_value must be a value of the field's type (ES parses it
    // with the field's own parser when the mapping is parsed).
    if let Some(v) = def.get("null_value").filter(|v| !v.is_null()) {
        let ok = if ty.is_numeric() {
            v.is_number() || v.as_str().is_some_and(|s| s.trim().parse::<f64>().is_ok())
        } else if ty == FieldType::GeoPoint {
            crate::geo::parse_point(v, true).is_ok()
        } else if ty == FieldType::Boolean {
            v.is_boolean() || matches!(v.as_str(), Some("true" | "false" | ""))
        } else {
            true
        };
        if !ok {
            return Err(mapper_parsing(format!(
                "Failed to parse mapping: Error parsing [null_value] on field [{short}]: For input string: \"{}\"",
                render_scalar(v)
            )));
        }
    }
    // ES's `meta` parameter: checked for every field type, kept as given.
    match def.get("meta") {
        None => {}
        Some(Value::Null) => {
            return Err(mapper_parsing(format!(
                "Failed to parse mapping: [meta] on mapper [{short}] of type [{}] must not have a [null] value",
                ty.name()
            )))
        }
        Some(v) => super::check_meta(short, v).map_err(|e| {
            mapper_parsing(format!("Failed to parse mapping: {}", e.reason))
        })?,
    }
    // Dates print and parse month and day names in English only: another language's locale
    // would change them, so it is refused rather than ignored (as for runtime fields).
    if let Some(v) = def.get("locale") {
        lode_dates::check_locale(v).map_err(|reason| {
            mapper_parsing(format!(
                "Failed to parse mapping: Error parsing [locale] on field [{short}]: {reason}"
            ))
        })?;
    }
    let bool_param = |k: &str, default: bool| -> EsResult<bool> {
        match def.get(k) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(Value::String(s)) if s == "true" => Ok(true),
            Some(Value::String(s)) if s == "false" => Ok(false),
            Some(v) => Err(mapper_parsing(format!(
                "Failed to parse mapping: Cannot parse value [{}] as only [true] or [false] are allowed.",
                render_scalar(v)
            ))),
        }
    };
    // The index settings apply to the types that have the parameter.
    let field_defaults = FieldDefaults {
        coerce: mapping.defaults.coerce || !allowed.contains(&"coerce"),
        ignore_malformed: mapping.defaults.ignore_malformed
            && allowed.contains(&"ignore_malformed"),
    };
    let index = bool_param("index", true)?;
    let index_options = IndexOptions::parse(ty, def.get("index_options"))?;
    check_positions_needed(short, def, ty, index, index_options, &bool_param)?;
    let doc_values = !matches!(
        ty,
        FieldType::Text | FieldType::MatchOnlyText | FieldType::SearchAsYouType
    ) && bool_param("doc_values", ty != FieldType::Binary)?;
    let store = bool_param("store", false)?;
    let text_analyzer = |k: &str| -> EsResult<Option<String>> {
        match def.get(k) {
            None => Ok(None),
            Some(Value::String(a)) => {
                analysis.analyzer(a).map_err(|_| {
                    mapper_parsing(format!(
                        "analyzer [{a}] has not been configured in mappings"
                    ))
                })?;
                Ok(Some(a.clone()))
            }
            Some(v) => Err(mapper_parsing(format!(
                "analyzer [{v}] has not been configured in mappings"
            ))),
        }
    };
    // A completion field analyzes with `simple` unless told.
    let default_analyzer = if ty == FieldType::Completion {
        "simple"
    } else {
        "standard"
    };
    let analyzer = text_analyzer("analyzer")?.unwrap_or_else(|| default_analyzer.to_string());
    let search_analyzer = text_analyzer("search_analyzer")?.unwrap_or_else(|| analyzer.clone());
    let search_quote_analyzer =
        text_analyzer("search_quote_analyzer")?.unwrap_or_else(|| search_analyzer.clone());
    let normalizer = match def.get("normalizer") {
        None | Some(Value::Null) => None,
        Some(Value::String(n)) => {
            analysis.normalizer(n).map_err(|_| {
                mapper_parsing(format!("normalizer [{n}] not found for field [{short}]"))
            })?;
            Some(n.clone())
        }
        Some(v) => {
            return Err(mapper_parsing(format!(
                "normalizer [{v}] not found for field [{short}]"
            )))
        }
    };
    let ignore_above = match def.get("ignore_above") {
        None => None,
        Some(v) => Some(
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                .ok_or_else(|| {
                    mapper_parsing(format!(
                        "Failed to parse mapping: [ignore_above] must be a number: {v}"
                    ))
                })? as usize,
        ),
    };
    let date_format = match def.get("format") {
        Some(Value::String(f))
            if ty.is_date() || ty == FieldType::Range(crate::range_field::RangeKind::Date) =>
        {
            DateFormat::parse(f).map_err(|e| {
                mapper_parsing(format!(
                    "Failed to parse mapping: Invalid format: [{f}]: {}",
                    e.reason
                ))
            })?
        }
        // ES's `DateFieldMapper.DEFAULT_DATE_TIME_NANOS_FORMATTER`.
        _ if ty == FieldType::DateNanos => {
            DateFormat::parse("strict_date_optional_time_nanos||epoch_millis")
                .expect("builtin format")
        }
        _ => DateFormat::default_es(),
    };
    let scaling_factor = match def.get("scaling_factor") {
        Some(v) => v
            .as_f64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            .ok_or_else(|| {
                mapper_parsing("Failed to parse mapping: [scaling_factor] must be a number")
            })?,
        None if ty == FieldType::ScaledFloat => return Err(scaling_factor_required()),
        None => 1.0,
    };
    let copy_to = match def.get("copy_to") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => vec![],
    };
    let mut multi_fields = Vec::new();
    if let Some(fields) = def.get("fields") {
        let fields = fields.as_object().ok_or_else(|| {
            mapper_parsing(format!(
                "Expected map for property [fields] on field [{short}]"
            ))
        })?;
        for (sub, sub_def) in fields {
            let sub_path = format!("{path}.{sub}");
            let sub_def = sub_def.as_object().ok_or_else(|| {
                mapper_parsing(format!(
                    "Expected map for property [fields] on field [{sub}]"
                ))
            })?;
            compile_field(&sub_path, sub_def, Some(path), analysis, mapping)?;
            multi_fields.push(sub_path);
        }
    }
    let completion = if ty == FieldType::Completion {
        if def.contains_key("contexts") {
            return Err(mapper_parsing(
                "[contexts] of a [completion] field is not supported by Lode",
            ));
        }
        let max_input_length = match def.get("max_input_length") {
            None => 50,
            Some(v) => v
                .as_i64()
                .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    mapper_parsing(format!(
                        "Failed to parse mapping: [max_input_length] must be > 0 but was [{}]",
                        render_scalar(v)
                    ))
                })? as usize,
        };
        let resolve = |name: &str| {
            analysis.analyzer(name).map_err(|_| {
                mapper_parsing(format!(
                    "analyzer [{name}] has not been configured in mappings"
                ))
            })
        };
        Some(CompletionOptions {
            analyzer: resolve(&analyzer)?,
            search_analyzer: resolve(&search_analyzer)?,
            preserve_separators: bool_param("preserve_separators", true)?,
            preserve_position_increments: bool_param("preserve_position_increments", true)?,
            max_input_length,
        })
    } else {
        None
    };
    let token_count = if ty == FieldType::TokenCount {
        // ES's `TokenCountFieldMapper.Builder#build`: the analyzer has no default.
        if !def.contains_key("analyzer") {
            return Err(mapper_parsing(format!(
                "Failed to parse mapping: Analyzer must be set for field [{short}] but wasn't."
            )));
        }
        if let Some(v) = def.get("null_value").filter(|v| !v.is_null()) {
            let ok = v.as_i64().is_some_and(|n| i32::try_from(n).is_ok())
                || v.as_str().is_some_and(|s| s.trim().parse::<i32>().is_ok());
            if !ok {
                return Err(mapper_parsing(format!(
                    "Failed to parse mapping: Error parsing [null_value] on field [{short}]: For input string: \"{}\"",
                    render_scalar(v)
                )));
            }
        }
        Some(TokenCountOptions {
            analyzer: analysis.analyzer(&analyzer).map_err(|_| {
                mapper_parsing(format!(
                    "analyzer [{analyzer}] has not been configured in mappings"
                ))
            })?,
            enable_position_increments: bool_param("enable_position_increments", true)?,
        })
    } else {
        None
    };
    let sayt = if ty == FieldType::SearchAsYouType {
        if parent.is_some() {
            return Err(mapper_parsing(
                "Type [search_as_you_type] cannot be used in multi field",
            ));
        }
        let max_shingle_size = match def.get("max_shingle_size") {
            None => SAYT_DEFAULT_MAX_SHINGLE_SIZE,
            Some(v) => {
                let n = v
                    .as_i64()
                    .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                    .ok_or_else(|| {
                        mapper_parsing(format!(
                            "Failed to parse mapping: For input string: \"{}\"",
                            render_scalar(v)
                        ))
                    })?;
                if !(2..=4).contains(&n) {
                    return Err(mapper_parsing(format!(
                        "Failed to parse mapping: [max_shingle_size] must be at least [2] and at most [4], got [{n}]"
                    )));
                }
                n as usize
            }
        };
        Some(SaytField {
            max_shingle_size,
            role: SaytRole::Root,
        })
    } else {
        None
    };
    let keeps_every_word = ty == FieldType::Text
        && analysis
            .analyzer(&analyzer)
            .is_ok_and(|a| a.keeps_every_word());
    let mut sayt_subfields = Vec::new();
    if let Some(root) = sayt {
        // ES's `SearchAsYouTypeFieldMapper.Builder#build`: each subfield wraps the root's
        // index and search analyzers; `store` and doc values are the root's alone.
        for (suffix, role) in SaytField::subfields(root.max_shingle_size) {
            let derive = |base: &str| match role {
                SaytRole::Shingle(n) => lode_analysis::sayt_shingle_analyzer(base, n),
                _ => lode_analysis::sayt_prefix_analyzer(base, root.max_shingle_size),
            };
            // The prefix field is searched with shingles of the largest size, unpadded.
            let derive_search = |base: &str| match role {
                SaytRole::IndexPrefix => {
                    lode_analysis::sayt_shingle_analyzer(base, root.max_shingle_size)
                }
                _ => derive(base),
            };
            let sub_path = format!("{path}{suffix}");
            mapping.fields.insert(
                sub_path.clone(),
                Arc::new(FieldDef {
                    path: sub_path.clone(),
                    ty,
                    index,
                    // ES's subfields share the root's index options (the prefix field too).
                    index_options,
                    doc_values: false,
                    store: false,
                    analyzer: derive(&analyzer),
                    search_analyzer: derive_search(&search_analyzer),
                    search_quote_analyzer: derive_search(&search_quote_analyzer),
                    normalizer: None,
                    ignore_above: None,
                    null_value: None,
                    date_format: DateFormat::default_es(),
                    scaling_factor: 1.0,
                    coerce: true,
                    ignore_malformed: false,
                    multi_fields: Vec::new(),
                    parent: Some(path.to_string()),
                    copy_to: Vec::new(),
                    completion: None,
                    token_count: None,
                    keeps_every_word: false,
                    ignore_z_value: true,
                    sayt: Some(SaytField {
                        max_shingle_size: root.max_shingle_size,
                        role,
                    }),
                    value: None,
                }),
            );
            sayt_subfields.push(sub_path);
        }
    }
    sayt_subfields.extend(multi_fields);
    let multi_fields = sayt_subfields;
    mapping.fields.insert(
        path.to_string(),
        Arc::new(FieldDef {
            path: path.to_string(),
            ty,
            index,
            index_options,
            doc_values,
            store,
            analyzer,
            search_analyzer,
            search_quote_analyzer,
            normalizer,
            ignore_above,
            null_value: def.get("null_value").filter(|v| !v.is_null()).cloned(),
            date_format,
            scaling_factor,
            coerce: bool_param("coerce", field_defaults.coerce)?,
            ignore_malformed: bool_param("ignore_malformed", field_defaults.ignore_malformed)?,
            ignore_z_value: bool_param("ignore_z_value", true)?,
            multi_fields,
            parent: parent.map(str::to_string),
            copy_to,
            completion,
            token_count,
            sayt,
            keeps_every_word,
            value: constant_value(short, def)?,
        }),
    );
    Ok(())
}

/// The types whose ES mappers declare their parameters (`FieldMapper.Builder#getParameters`)
/// refuse any other with ES's "unknown parameter" (the first in the definition's order).
fn check_builder_params(short: &str, ty: FieldType, def: &Map<String, Value>) -> EsResult<()> {
    if !has_declared_params(ty) {
        return Ok(());
    }
    let refuse = |why: String| {
        Err(mapper_parsing(format!("Failed to parse mapping: {why}"))
            .caused_by(mapper_parsing(why)))
    };
    for (k, v) in def {
        if !is_leaf_param(ty, k) {
            return refuse(format!(
                "unknown parameter [{k}] on mapper [{short}] of type [{}]",
                ty.name()
            ));
        }
        // `null_value` of a wildcard accepts null; `fields`, `copy_to` and `meta` are
        // checked where they are read.
        if v.is_null() && k == "value" {
            return refuse(format!(
                "[{k}] on mapper [{short}] of type [{}] must not have a [null] value",
                ty.name()
            ));
        }
    }
    // ES's constant_keyword mapper parses `fields` and `copy_to` but builds without them
    // (they would be dropped without a word): refused instead.
    if let Some(k) = def.keys().find(|k| ignored_by_es(ty, k)) {
        return Err(mapper_parsing(format!(
            "[{k}] on field [{short}] of type [{}] is not supported by Lode (Elasticsearch ignores it)",
            ty.name()
        )));
    }
    Ok(())
}

/// ES's `ScaledFloatFieldMapper.Builder` validator of its required parameter.
fn scaling_factor_required() -> EsError {
    let why = "Field [scaling_factor] is required";
    mapper_parsing(format!("Failed to parse mapping: {why}"))
        .caused_by(EsError::illegal_argument(why))
}

/// A `constant_keyword`'s `value`: a string or a number, as text (ES's `Parameter` parser
/// takes `toString()` of either).
fn constant_value(short: &str, def: &Map<String, Value>) -> EsResult<Option<String>> {
    if def.get("type").and_then(Value::as_str) != Some("constant_keyword") {
        return Ok(None);
    }
    match def.get("value") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(other) => {
            let why = format!(
                "Property [value] on field [{short}] must be a number or a string, but got [{}]",
                render_scalar(other)
            );
            Err(mapper_parsing(format!("Failed to parse mapping: {why}"))
                .caused_by(mapper_parsing(why)))
        }
    }
}

/// The text parameters that need positions, refused without them as ES's
/// `TextFieldMapper.Builder` refuses them (an unindexed field has none either).
fn check_positions_needed(
    short: &str,
    def: &Map<String, Value>,
    ty: FieldType,
    index: bool,
    options: IndexOptions,
    bool_param: &dyn Fn(&str, bool) -> EsResult<bool>,
) -> EsResult<()> {
    if ty != FieldType::Text {
        return Ok(());
    }
    let positions = index && options.has_positions();
    let refuse = |why: String| {
        Err(mapper_parsing(format!("Failed to parse mapping: {why}"))
            .caused_by(EsError::illegal_argument(why)))
    };
    if def.contains_key("position_increment_gap") && !positions {
        return refuse(format!(
            "Cannot set position_increment_gap on field [{short}] without positions enabled"
        ));
    }
    if bool_param("index_phrases", false)? {
        if !index {
            return refuse(format!(
                "Cannot set index_phrases on unindexed field [{short}]"
            ));
        }
        if !positions {
            return refuse(format!(
                "Cannot set index_phrases on field [{short}] if positions are not enabled"
            ));
        }
    }
    Ok(())
}

/// Merges a `PUT _mapping` body (or a dynamic update) into existing mapping JSON.
/// New fields are added; an existing field may gain multi-fields or change updatable
/// parameters; a type change is refused as Elasticsearch refuses it.
pub fn merge(existing: &Value, update: &Value) -> EsResult<Value> {
    let mut out = existing.clone();
    if !out.is_object() {
        out = Value::Object(Map::new());
    }
    let upd = update
        .as_object()
        .ok_or_else(|| mapper_parsing("Root mapping definition must be an object"))?;
    let out_obj = out.as_object_mut().unwrap();
    for (k, v) in upd {
        if k == "properties" {
            let target = out_obj
                .entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
            merge_properties("", target, v)?;
        } else if k == "runtime" {
            // As ES's: a runtime field replaces one of the same name; `null` removes it.
            let upd = v.as_object().ok_or_else(|| {
                mapper_parsing("Expected map for runtime block but got a non-object")
            })?;
            let target = out_obj
                .entry("runtime")
                .or_insert_with(|| Value::Object(Map::new()));
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            let tgt = target.as_object_mut().unwrap();
            for (name, def) in upd {
                if def.is_null() {
                    tgt.remove(name);
                } else {
                    tgt.insert(name.clone(), def.clone());
                }
            }
            if tgt.is_empty() {
                out_obj.remove("runtime");
            }
        } else {
            out_obj.insert(k.clone(), v.clone());
        }
    }
    sort_properties(&mut out);
    super::configured::drop_stated_defaults(&mut out);
    Ok(out)
}

fn merge_properties(prefix: &str, target: &mut Value, update: &Value) -> EsResult<()> {
    let upd = update
        .as_object()
        .ok_or_else(|| mapper_parsing("Expected map for property [properties]"))?;
    let tgt = target
        .as_object_mut()
        .ok_or_else(|| mapper_parsing("Expected map for property [properties]"))?;
    for (name, def) in upd {
        // A dotted name is shorthand for objects: `a.b: X` is `a: {properties: {b: X}}`.
        let (name, def) = match name.split_once('.') {
            Some((head, rest)) if !head.is_empty() && !rest.is_empty() => {
                (head.to_string(), json!({"properties": {rest: def}}))
            }
            _ => (name.clone(), def.clone()),
        };
        let def = expand_dotted(&def);
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        match tgt.get_mut(&name) {
            None => {
                tgt.insert(name, def);
            }
            Some(existing) => merge_field(&path, existing, &def)?,
        }
    }
    Ok(())
}

/// A field definition with the dotted names of its `properties` expanded into objects.
fn expand_dotted(def: &Value) -> Value {
    let Some(props) = def.get("properties").and_then(Value::as_object) else {
        return def.clone();
    };
    let mut expanded = Value::Object(Map::new());
    // Merging into an empty map expands every level; conflicts between two spellings of one
    // field are reported when the whole mapping merges.
    if merge_properties("", &mut expanded, &Value::Object(props.clone())).is_err() {
        return def.clone();
    }
    let mut out = def.clone();
    out["properties"] = expanded;
    out
}

fn type_of(def: &Value) -> &str {
    match def.get("type").and_then(|t| t.as_str()) {
        Some(t) => t,
        None => "object",
    }
}

fn merge_field(path: &str, existing: &mut Value, update: &Value) -> EsResult<()> {
    let (old_ty, new_ty) = (type_of(existing).to_string(), type_of(update).to_string());
    if old_ty != new_ty {
        return Err(EsError::illegal_argument(format!(
            "mapper [{path}] cannot be changed from type [{old_ty}] to [{new_ty}]"
        )));
    }
    let upd = update
        .as_object()
        .ok_or_else(|| mapper_parsing(format!("Expected map for property [{path}]")))?;
    let ex = existing
        .as_object_mut()
        .ok_or_else(|| mapper_parsing(format!("Expected map for property [{path}]")))?;
    let is_object = matches!(new_ty.as_str(), "object" | "nested");
    for (k, v) in upd {
        match k.as_str() {
            "properties" => {
                let target = ex
                    .entry("properties")
                    .or_insert_with(|| Value::Object(Map::new()));
                merge_properties(path, target, v)?;
            }
            "fields" => {
                let target = ex
                    .entry("fields")
                    .or_insert_with(|| Value::Object(Map::new()));
                let sub_fields = v.as_object().ok_or_else(|| {
                    mapper_parsing(format!(
                        "Expected map for property [fields] on field [{path}]"
                    ))
                })?;
                let tgt = target.as_object_mut().ok_or_else(|| {
                    mapper_parsing(format!(
                        "Expected map for property [fields] on field [{path}]"
                    ))
                })?;
                for (sub, sub_def) in sub_fields {
                    match tgt.get_mut(sub) {
                        None => {
                            tgt.insert(sub.clone(), sub_def.clone());
                        }
                        Some(old) => merge_field(&format!("{path}.{sub}"), old, sub_def)?,
                    }
                }
            }
            "type" => {}
            // ES's constant_keyword `value` may be set once, from nothing (by a mapping update
            // or the first document that sends one), and never changed after.
            "value"
                if new_ty == "constant_keyword"
                    && ex.get(k).is_none_or(|old| {
                        old.is_null() || render_scalar(old) == render_scalar(v)
                    }) =>
            {
                ex.insert(k.clone(), v.clone());
            }
            // Compared by effective value, as ES compares the parameter: stating the type's
            // default on a field that left it out is no change, and a conflict names it.
            "index_options" => {
                // The update is parsed before it merges: a value its type refuses is that
                // refusal, not a conflict.
                if let Some(t) = FieldType::parse(&new_ty) {
                    IndexOptions::parse(t, Some(v))?;
                }
                let old = IndexOptions::effective_name(&old_ty, ex.get(k));
                let new = IndexOptions::effective_name(&new_ty, Some(v));
                if old != new {
                    return Err(EsError::illegal_argument(format!(
                        "Mapper for [{path}] conflicts with existing mapper:\n\tCannot update parameter [{k}] from [{old}] to [{new}]"
                    )));
                }
                ex.insert(k.clone(), v.clone());
            }
            "dynamic" => {
                ex.insert(k.clone(), v.clone());
            }
            "enabled" if ex.get(k) == Some(v) => {}
            // ES lets norms be disabled, never enabled again.
            "norms" if !as_flag(v) => {
                ex.insert(k.clone(), v.clone());
            }
            k2 if !is_object && UPDATEABLE.contains(&k2) => {
                ex.insert(k.clone(), v.clone());
            }
            _ => match ex.get(k) {
                // Compared as ES compares the parsed values (`en-us` is `en_US`, `"true"` true).
                Some(old) if old == v || (!is_object && same_value(&new_ty, k, old, v)) => {}
                // Stating a fixed parameter's default on a field that left it out is no change.
                None if !is_object
                    && default_value(&new_ty, k).is_some_and(|d| same_value(&new_ty, k, v, &d)) =>
                {
                    ex.insert(k.clone(), v.clone());
                }
                old => {
                    // A parameter left out (or taken out as its default) has its default.
                    let old = old
                        .cloned()
                        .or_else(|| (!is_object).then(|| default_value(&new_ty, k)).flatten());
                    let render = |x: Option<&Value>| match x {
                        Some(x) if k == "locale" => locale_name(x),
                        Some(x) => render_scalar(x),
                        None => "null".into(),
                    };
                    return Err(EsError::illegal_argument(format!(
                        "Mapper for [{path}] conflicts with existing mapper:\n\tCannot update parameter [{k}] from [{}] to [{}]",
                        render(old.as_ref()),
                        render(Some(v))
                    )));
                }
            },
        }
    }
    if !is_object {
        merge_omitted(path, &new_ty, ex, upd)?;
    }
    Ok(())
}

/// The parameters of a leaf field an update may change (ES's `updateable` parameters).
const UPDATEABLE: &[&str] = &[
    "copy_to",
    "ignore_above",
    "eager_global_ordinals",
    "split_queries_on_whitespace",
    "meta",
    "search_analyzer",
    "search_quote_analyzer",
    "fielddata",
    "fielddata_frequency_filter",
    "ignore_malformed",
    "coerce",
    "ignore_z_value",
];

/// The default of a fixed leaf parameter, as ES renders it in a conflict; `None` for the
/// parameters whose defaults Lode does not compare (their value is kept when left out).
pub(super) fn default_value(ty: &str, k: &str) -> Option<Value> {
    Some(match k {
        "norms" => Value::Bool(matches!(ty, "text" | "search_as_you_type")),
        "index" => Value::Bool(true),
        "doc_values" => Value::Bool(ty != "binary"),
        "store" | "index_phrases" => Value::Bool(false),
        "null_value" | "normalizer" => Value::Null,
        "analyzer" => Value::String("default".into()),
        "term_vector" => Value::String("no".into()),
        "index_options" => Value::String(IndexOptions::effective_name(ty, None)),
        // ES 8's `DateFieldMapper` (and `RangeFieldMapper` for `date_range`): the default
        // pattern of the field's resolution, and `DEFAULT_LOCALE` (English).
        "format" => match ty {
            "date" | "date_range" => {
                Value::String("strict_date_optional_time||epoch_millis".into())
            }
            "date_nanos" => Value::String("strict_date_optional_time_nanos||epoch_millis".into()),
            _ => return None,
        },
        "locale" if matches!(ty, "date" | "date_nanos" | "date_range") => {
            Value::String("en".into())
        }
        // `TextParams.similarity`: no similarity (the index's default) unless set.
        "similarity" => Value::Null,
        // `POSITION_INCREMENT_GAP_USE_ANALYZER`: the analyzer's own gap.
        "position_increment_gap" if ty == "text" => Value::from(-1),
        "max_shingle_size" if ty == "search_as_you_type" => Value::from(3),
        "enable_position_increments" if ty == "token_count" => Value::Bool(true),
        "preserve_separators" | "preserve_position_increments" if ty == "completion" => {
            Value::Bool(true)
        }
        "time_series_dimension" => Value::Bool(false),
        "time_series_metric" => Value::Null,
        _ => return None,
    })
}

/// A locale as Java's `Locale#toString` renders what ES's `LocaleUtils.parse` made of it:
/// `root` is the empty root locale, language lowercase, country uppercase, joined by `_`.
fn locale_name(v: &Value) -> String {
    let text = render_scalar(v);
    if text.eq_ignore_ascii_case("root") {
        return String::new();
    }
    let mut parts = text.split(['_', '-']);
    let mut out = parts.next().unwrap_or_default().to_lowercase();
    for (i, p) in parts.enumerate() {
        out.push('_');
        out.push_str(&if i == 0 {
            p.to_uppercase()
        } else {
            p.to_string()
        });
    }
    out
}

/// Whether a stated parameter value equals another (booleans may be sent as strings).
pub(super) fn same_value(ty: &str, k: &str, a: &Value, b: &Value) -> bool {
    match k {
        "norms"
        | "index"
        | "doc_values"
        | "store"
        | "index_phrases"
        | "enable_position_increments"
        | "preserve_separators"
        | "preserve_position_increments"
        | "time_series_dimension" => as_flag(a) == as_flag(b),
        "locale" => locale_name(a) == locale_name(b),
        "position_increment_gap" | "max_shingle_size" => {
            let n = |v: &Value| v.as_i64().or_else(|| render_scalar(v).trim().parse().ok());
            n(a) == n(b)
        }
        "index_options" => {
            IndexOptions::effective_name(ty, Some(a)) == IndexOptions::effective_name(ty, Some(b))
        }
        _ => a == b,
    }
}

fn as_flag(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::String(s) => s == "true",
        _ => false,
    }
}

/// ES merges a leaf field with the update's definition, where every parameter the update
/// leaves out has its default (`FieldMapper.Builder#merge`): an updateable parameter left out
/// goes back to its default and `copy_to` is replaced, while a fixed parameter set away from
/// its default conflicts ("Cannot update parameter [doc_values] from [false] to [true]").
/// Multi-fields are merged, so the ones left out stay. Parameters without a default here
/// (`index_prefixes`, `fielddata_frequency_filter`, a completion's analyzers) keep their value.
fn merge_omitted(
    path: &str,
    ty: &str,
    ex: &mut Map<String, Value>,
    upd: &Map<String, Value>,
) -> EsResult<()> {
    let omitted: Vec<String> = ex
        .keys()
        .filter(|k| !upd.contains_key(*k))
        .cloned()
        .collect();
    let conflict = |k: &str, old: String, new: &str| {
        EsError::illegal_argument(format!(
            "Mapper for [{path}] conflicts with existing mapper:\n\tCannot update parameter [{k}] from [{old}] to [{new}]"
        ))
    };
    for k in omitted {
        let old = ex[&k].clone();
        if UPDATEABLE.contains(&k.as_str()) {
            ex.remove(&k);
            continue;
        }
        if k == "norms" && as_flag(&old) && default_value(ty, &k) == Some(Value::Bool(false)) {
            // Norms were enabled on a type without them by default: leaving them out disables
            // them, which ES allows.
            ex.remove(&k);
            continue;
        }
        if k == "scaling_factor" && ty == "scaled_float" {
            // Required: the update alone does not parse.
            return Err(scaling_factor_required());
        }
        if let Some(default) = default_value(ty, &k) {
            if !same_value(ty, &k, &old, &default) {
                let render = |v: &Value| match v {
                    _ if k == "locale" => locale_name(v),
                    Value::String(s) => s.clone(),
                    other => render_scalar(other),
                };
                return Err(conflict(&k, render(&old), &render(&default)));
            }
        }
    }
    Ok(())
}

/// Elasticsearch renders properties sorted by name.
fn sort_properties(v: &mut Value) {
    if let Value::Object(m) = v {
        for key in ["properties", "fields"] {
            if let Some(Value::Object(props)) = m.get_mut(key) {
                let mut entries: Vec<(String, Value)> = std::mem::take(props).into_iter().collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                for (k, mut def) in entries {
                    sort_properties(&mut def);
                    props.insert(k, def);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reg() -> AnalysisRegistry {
        AnalysisRegistry::new(None).unwrap()
    }

    #[test]
    fn compiles_the_accounts_mapping() {
        let m = compile(
            &json!({"properties":{"userName":{"type":"keyword","fields":{"analyzed":{"type":"text","analyzer":"standard"}}},
                   "createdTime":{"type":"date","format":"epoch_millis"},"obj":{"properties":{"a":{"type":"long"}}}}}),
            &reg(),
        )
        .unwrap();
        assert_eq!(m.fields["userName"].ty, FieldType::Keyword);
        assert_eq!(
            m.fields["userName.analyzed"].parent.as_deref(),
            Some("userName")
        );
        assert_eq!(m.fields["obj.a"].ty, FieldType::Long);
        assert!(m.objects.contains_key("obj"));
    }

    #[test]
    fn meta_is_checked_on_every_field_type() {
        let refuse = |field: Value| {
            let e = compile(&json!({"properties": {"f": field}}), &reg()).unwrap_err();
            assert_eq!(e.kind, "mapper_parsing_exception");
            e.reason
        };
        for ty in [
            "keyword",
            "text",
            "long",
            "date",
            "boolean",
            "geo_point",
            "binary",
        ] {
            assert_eq!(
                refuse(json!({"type": ty, "meta": {"unit": 3}})),
                "Failed to parse mapping: [meta] values can only be strings, but got Integer[3] for field [f]"
            );
            assert!(
                compile(
                    &json!({"properties": {"f": {"type": ty, "meta": {"unit": "ms"}}}}),
                    &reg()
                )
                .is_ok(),
                "{ty}"
            );
        }
        assert_eq!(
            refuse(json!({"type": "keyword", "meta": null})),
            "Failed to parse mapping: [meta] on mapper [f] of type [keyword] must not have a [null] value"
        );
        // multi-fields too, by their own name
        let e = compile(
            &json!({"properties": {"f": {"type": "text", "fields": {"raw": {"type": "keyword", "meta": "x"}}}}}),
            &reg(),
        )
        .unwrap_err();
        assert_eq!(
            e.reason,
            "Failed to parse mapping: [meta] must be an object, got String[x] for field [raw]"
        );
    }

    #[test]
    fn date_locales_other_than_root_and_english_are_refused() {
        for ty in ["date", "date_nanos", "date_range"] {
            for ok in ["ROOT", "en", "en_US", "en-GB"] {
                let m = json!({"properties": {"d": {"type": ty, "locale": ok}}});
                assert!(compile(&m, &reg()).is_ok(), "{ty} {ok}");
            }
            let m = json!({"properties": {"d": {"type": ty, "locale": "fr_FR"}}});
            let e = compile(&m, &reg()).unwrap_err();
            assert_eq!(e.kind, "mapper_parsing_exception");
            assert!(
                e.reason.starts_with(
                    "Failed to parse mapping: Error parsing [locale] on field [d]: locale [fr_FR] is not supported by Lode"
                ),
                "{}",
                e.reason
            );
        }
    }

    #[test]
    fn merging_into_a_malformed_mapping_is_an_error_not_a_panic() {
        for existing in [json!({"properties": null}), json!({"properties": {"a": 5}})] {
            let e = merge(&existing, &json!({"properties": {"a": {}}})).unwrap_err();
            assert_eq!(e.kind, "mapper_parsing_exception");
        }
    }

    #[test]
    fn index_options_per_type_and_what_needs_positions() {
        let ok = |field: Value| {
            compile(&json!({"properties": {"f": field}}), &reg())
                .unwrap()
                .fields["f"]
                .index_options
        };
        let refuse = |field: Value| {
            let e = compile(&json!({"properties": {"f": field}}), &reg()).unwrap_err();
            assert_eq!(e.kind, "mapper_parsing_exception");
            e.reason
        };
        assert_eq!(ok(json!({"type": "text"})), IndexOptions::Positions);
        assert_eq!(ok(json!({"type": "keyword"})), IndexOptions::Docs);
        assert_eq!(
            ok(json!({"type": "keyword", "index_options": "freqs"})),
            IndexOptions::Freqs
        );
        assert_eq!(
            refuse(json!({"type": "keyword", "index_options": "positions"})),
            "Failed to parse mapping: Unknown value [positions] for field [index_options] - accepted values are [docs, freqs]"
        );
        assert_eq!(
            refuse(json!({"type": "flattened", "index_options": "offsets"})),
            "Failed to parse mapping: Unknown value [offsets] for field [index_options] - accepted values are [docs, freqs]"
        );
        assert_eq!(
            refuse(json!({"type": "text", "index_options": "freqs", "index_phrases": true})),
            "Failed to parse mapping: Cannot set index_phrases on field [f] if positions are not enabled"
        );
        assert_eq!(
            refuse(json!({"type": "text", "index": false, "index_phrases": true})),
            "Failed to parse mapping: Cannot set index_phrases on unindexed field [f]"
        );
        assert_eq!(
            refuse(json!({"type": "text", "index_options": "docs", "position_increment_gap": 10})),
            "Failed to parse mapping: Cannot set position_increment_gap on field [f] without positions enabled"
        );
        ok(
            json!({"type": "text", "index_options": "offsets", "index_phrases": true, "position_increment_gap": 0}),
        );
        // The subfields of a search_as_you_type share its options; multi-fields have their own.
        let m = compile(
            &json!({"properties": {"s": {"type": "search_as_you_type", "index_options": "freqs",
                "fields": {"k": {"type": "keyword", "index_options": "freqs"}, "t": {"type": "text"}}}}}),
            &reg(),
        )
        .unwrap();
        assert_eq!(m.fields["s._2gram"].index_options, IndexOptions::Freqs);
        assert_eq!(
            m.fields["s._index_prefix"].index_options,
            IndexOptions::Freqs
        );
        assert_eq!(m.fields["s.k"].index_options, IndexOptions::Freqs);
        assert_eq!(m.fields["s.t"].index_options, IndexOptions::Positions);
    }

    #[test]
    fn index_options_updates_conflict_unless_the_effective_value_is_the_same() {
        let base = json!({"properties": {"t": {"type": "text"}, "k": {"type": "keyword", "index_options": "freqs"}}});
        let conflict = |update: Value| merge(&base, &update).unwrap_err().reason;
        assert_eq!(
            conflict(json!({"properties": {"t": {"type": "text", "index_options": "docs"}}})),
            "Mapper for [t] conflicts with existing mapper:\n\tCannot update parameter [index_options] from [positions] to [docs]"
        );
        assert_eq!(
            conflict(json!({"properties": {"k": {"type": "keyword", "index_options": "docs"}}})),
            "Mapper for [k] conflicts with existing mapper:\n\tCannot update parameter [index_options] from [freqs] to [docs]"
        );
        assert_eq!(
            conflict(json!({"properties": {"k": {"type": "keyword", "index_options": "positions"}}})),
            "Failed to parse mapping: Unknown value [positions] for field [index_options] - accepted values are [docs, freqs]"
        );
        merge(
            &base,
            &json!({"properties": {"t": {"type": "text", "index_options": "positions"}}}),
        )
        .unwrap();
        let same = merge(
            &base,
            &json!({"properties": {"k": {"type": "keyword", "index_options": "freqs"}}}),
        )
        .unwrap();
        assert_eq!(same, base);
    }

    #[test]
    fn fixed_type_parameters_left_out_are_compared_with_es_defaults() {
        let base = json!({"properties": {
            "d": {"type": "date", "format": "yyyy", "locale": "en-us"},
            "g": {"type": "text", "position_increment_gap": 10},
            "f": {"type": "scaled_float", "scaling_factor": 10}
        }});
        let conflict = |update: Value| merge(&base, &update).unwrap_err().reason;
        let message = |f: &str, k: &str, old: &str, new: &str| {
            format!("Mapper for [{f}] conflicts with existing mapper:\n\tCannot update parameter [{k}] from [{old}] to [{new}]")
        };
        assert_eq!(
            conflict(json!({"properties": {"d": {"type": "date", "locale": "en_US"}}})),
            message(
                "d",
                "format",
                "yyyy",
                "strict_date_optional_time||epoch_millis"
            )
        );
        assert_eq!(
            conflict(json!({"properties": {"d": {"type": "date", "format": "yyyy"}}})),
            message("d", "locale", "en_US", "en")
        );
        assert_eq!(
            conflict(json!({"properties": {"g": {"type": "text"}}})),
            message("g", "position_increment_gap", "10", "-1")
        );
        // The same locale spelled otherwise is no change.
        merge(
            &base,
            &json!({"properties": {"d": {"type": "date", "format": "yyyy", "locale": "en_US"}}}),
        )
        .unwrap();
        let e = merge(
            &base,
            &json!({"properties": {"f": {"type": "scaled_float"}}}),
        )
        .unwrap_err();
        assert_eq!(
            e.reason,
            "Failed to parse mapping: Field [scaling_factor] is required"
        );
    }

    #[test]
    fn rejects_bad_index_options_null_values_and_multi_fields_on_update() {
        let e = compile(
            &json!({"properties":{"z":{"type":"text","index_options":"everything"}}}),
            &reg(),
        )
        .unwrap_err();
        assert_eq!(e.kind, "mapper_parsing_exception");
        assert!(e
            .reason
            .contains("Unknown value [everything] for field [index_options]"));
        compile(
            &json!({"properties":{"z":{"type":"text","index_options":"offsets"}}}),
            &reg(),
        )
        .unwrap();
        let e = compile(
            &json!({"properties":{"z":{"type":"long","null_value":"abc"}}}),
            &reg(),
        )
        .unwrap_err();
        assert_eq!(
            e.reason,
            "Failed to parse mapping: Error parsing [null_value] on field [z]: For input string: \"abc\""
        );
        compile(
            &json!({"properties":{"z":{"type":"double","null_value":"1.5"},"b":{"type":"boolean","null_value":false}}}),
            &reg(),
        )
        .unwrap();
        // an update's `fields` that is not an object was skipped, leaving `fields: {}` behind
        let existing = json!({"properties":{"z":{"type":"text"}}});
        let e = merge(
            &existing,
            &json!({"properties":{"z":{"type":"text","fields":[1]}}}),
        )
        .unwrap_err();
        assert_eq!(e.kind, "mapper_parsing_exception");
    }

    #[test]
    fn rejects_dot_only_and_metadata_field_names() {
        let e = compile(&json!({"properties":{"..":{"type":"long"}}}), &reg()).unwrap_err();
        assert_eq!(
            (e.status, e.kind.as_str()),
            (400, "mapper_parsing_exception")
        );
        assert_eq!(
            e.reason,
            "Failed to parse mapping: field name cannot contain only dots"
        );
        // `_id` used to reach tantivy's schema builder twice and panic there
        for meta in ["_id", "_source", "_seq_no", "_routing"] {
            let e = compile(&json!({"properties":{meta:{"type":"keyword"}}}), &reg()).unwrap_err();
            assert_eq!(e.kind, "mapper_parsing_exception");
            assert_eq!(
                e.reason,
                format!("Field [{meta}] is defined more than once")
            );
        }
        // inside an object the same names are ordinary fields
        compile(
            &json!({"properties":{"o":{"properties":{"_id":{"type":"keyword"}}}}}),
            &reg(),
        )
        .unwrap();
    }

    #[test]
    fn search_as_you_type_compiles_to_root_and_subfields() {
        let m = compile(
            &json!({"properties":{"s":{"type":"search_as_you_type","max_shingle_size":2,
                "analyzer":"simple","search_analyzer":"standard","store":true}}}),
            &reg(),
        )
        .unwrap();
        let root = &m.fields["s"];
        assert_eq!(root.ty.name(), "search_as_you_type");
        assert_eq!(root.storage(), super::super::Storage::Text);
        assert!(root.store && !root.doc_values);
        assert_eq!(root.multi_fields, vec!["s._2gram", "s._index_prefix"]);
        let two = &m.fields["s._2gram"];
        assert_eq!(
            two.analyzer,
            lode_analysis::sayt_shingle_analyzer("simple", 2)
        );
        assert_eq!(
            two.search_analyzer,
            lode_analysis::sayt_shingle_analyzer("standard", 2)
        );
        assert_eq!(two.parent.as_deref(), Some("s"));
        assert!(!two.store);
        let prefix = &m.fields["s._index_prefix"];
        assert_eq!(
            prefix.analyzer,
            lode_analysis::sayt_prefix_analyzer("simple", 2)
        );
        assert!(!m.fields.contains_key("s._3gram"));
        for bad in [1, 5] {
            let e = compile(
                &json!({"properties":{"s":{"type":"search_as_you_type","max_shingle_size":bad}}}),
                &reg(),
            )
            .unwrap_err();
            assert_eq!(
                e.reason,
                format!("Failed to parse mapping: [max_shingle_size] must be at least [2] and at most [4], got [{bad}]")
            );
        }
        let e = compile(
            &json!({"properties":{"s":{"type":"search_as_you_type","fielddata":true}}}),
            &reg(),
        )
        .unwrap_err();
        assert_eq!(e.kind, "mapper_parsing_exception");
    }

    #[test]
    fn rejects_bad_definitions() {
        let e = compile(&json!({"properties":{"a":{"type":"nope"}}}), &reg()).unwrap_err();
        assert_eq!(e.kind, "mapper_parsing_exception");
        let e = compile(
            &json!({"properties":{"data":{"type":"keyword","analyzer":"standard"}}}),
            &reg(),
        )
        .unwrap_err();
        assert_eq!(
            e.reason,
            "Mapping definition for [data] has unsupported parameters:  [analyzer : standard]"
        );
    }

    #[test]
    fn special_keyword_and_text_types_take_only_their_mappers_parameters() {
        let refuse = |field: Value| {
            let e = compile(&json!({"properties": {"f": field}}), &reg()).unwrap_err();
            assert_eq!(e.kind, "mapper_parsing_exception");
            e.reason
        };
        for (ty, param) in [
            ("match_only_text", "analyzer"),
            ("match_only_text", "index_options"),
            ("wildcard", "normalizer"),
            ("wildcard", "doc_values"),
            ("constant_keyword", "index"),
        ] {
            assert_eq!(
                refuse(json!({"type": ty, param: "x"})),
                format!("Failed to parse mapping: unknown parameter [{param}] on mapper [f] of type [{ty}]")
            );
        }
        // the first unknown one, in the definition's order
        assert_eq!(
            refuse(json!({"type": "wildcard", "store": true, "index": false})),
            "Failed to parse mapping: unknown parameter [store] on mapper [f] of type [wildcard]"
        );
        assert_eq!(
            refuse(json!({"type": "constant_keyword", "value": ["a"]})),
            "Failed to parse mapping: Property [value] on field [f] must be a number or a string, but got [[\"a\"]]"
        );
        assert!(refuse(json!({"type": "constant_keyword", "fields": {}}))
            .contains("not supported by Lode"));
        let m = compile(
            &json!({"properties": {
                "m": {"type": "match_only_text", "fields": {"k": {"type": "keyword"}}},
                "w": {"type": "wildcard", "ignore_above": 5, "null_value": "n"},
                "c": {"type": "constant_keyword", "value": 5},
                "d": {"type": "constant_keyword"}}}),
            &reg(),
        )
        .unwrap();
        let mot = &m.fields["m"];
        assert_eq!(mot.ty.name(), "match_only_text");
        assert_eq!(mot.storage(), super::super::Storage::Text);
        assert_eq!(mot.index_options, IndexOptions::Docs);
        assert!(!mot.doc_values && mot.ty.constant_score());
        assert_eq!(m.fields["m.k"].parent.as_deref(), Some("m"));
        let w = &m.fields["w"];
        assert_eq!(w.storage(), super::super::Storage::Keyword);
        assert!(w.doc_values && w.ty.constant_score());
        assert_eq!(w.ignore_above, Some(5));
        assert_eq!(m.fields["c"].value.as_deref(), Some("5"));
        assert_eq!(m.fields["d"].value, None);
    }

    #[test]
    fn a_constant_keyword_value_is_set_once() {
        let unset = json!({"properties": {"c": {"type": "constant_keyword"}}});
        let set = merge(
            &unset,
            &json!({"properties": {"c": {"type": "constant_keyword", "value": "a"}}}),
        )
        .unwrap();
        assert_eq!(set["properties"]["c"]["value"], "a");
        merge(
            &set,
            &json!({"properties": {"c": {"type": "constant_keyword", "value": "a"}}}),
        )
        .unwrap();
        let e = merge(
            &set,
            &json!({"properties": {"c": {"type": "constant_keyword", "value": "b"}}}),
        )
        .unwrap_err();
        assert_eq!(e.kind, "illegal_argument_exception");
        assert_eq!(
            e.reason,
            "Mapper for [c] conflicts with existing mapper:\n\tCannot update parameter [value] from [a] to [b]"
        );
    }

    #[test]
    fn merge_replaces_and_removes_runtime_fields() {
        let a = json!({"runtime": {"x": {"type": "long"}, "y": {"type": "keyword"}}});
        let m = merge(
            &a,
            &json!({"runtime": {"x": {"type": "double"}, "z": {"type": "date"}}}),
        )
        .unwrap();
        assert_eq!(
            m["runtime"],
            json!({"x": {"type": "double"}, "y": {"type": "keyword"}, "z": {"type": "date"}})
        );
        let m = merge(&m, &json!({"runtime": {"x": null, "y": null, "z": null}})).unwrap();
        assert!(m.get("runtime").is_none());
        assert!(merge(&a, &json!({"runtime": 3})).is_err());
    }

    #[test]
    fn merge_adds_and_refuses_type_changes() {
        let base = json!({"properties":{"a":{"type":"long"}}});
        let merged = merge(&base, &json!({"properties":{"b":{"type":"keyword"}}})).unwrap();
        assert_eq!(merged["properties"]["b"]["type"], "keyword");
        let e = merge(&base, &json!({"properties":{"a":{"type":"text"}}})).unwrap_err();
        assert_eq!(e.kind, "illegal_argument_exception");
    }
}

/// Generative tests: random and mutated mappings into `compile` and `merge` give Ok or a 4xx,
/// never a panic or a 5xx.
#[cfg(test)]
mod proptests {
    use super::{compile, merge};
    use crate::arb_json::*;
    use lode_analysis::AnalysisRegistry;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    fn seed() -> Value {
        json!({"dynamic": "strict", "properties": {
            "n": {"type": "long", "doc_values": true, "null_value": 0},
            "t": {"type": "text", "analyzer": "standard", "fields": {"raw": {"type": "keyword", "ignore_above": 10}}},
            "d": {"type": "date", "format": "yyyy-MM-dd||epoch_millis"},
            "s": {"type": "scaled_float", "scaling_factor": 100},
            "o": {"properties": {"x": {"type": "integer"}, "y.z": {"type": "ip"}}}}})
    }

    fn check(v: &Value) -> Result<(), TestCaseError> {
        let reg = AnalysisRegistry::new(None).unwrap();
        client_error_or_ok(
            compile(v, &reg)
                .err()
                .map(|e| (e.status, format!("{} {} for {v}", e.kind, e.reason))),
        )
    }

    /// A property definition built from mapping words, so most cases get past the first check.
    fn property() -> impl Strategy<Value = Value> {
        let ty = proptest::sample::select(
            &[
                "text",
                "keyword",
                "long",
                "integer",
                "short",
                "byte",
                "double",
                "float",
                "half_float",
                "scaled_float",
                "date",
                "date_nanos",
                "boolean",
                "ip",
                "object",
                "nested",
                "flattened",
                "geo_point",
                "nope",
            ][..],
        );
        (ty, proptest::collection::vec((word(), json()), 0..3)).prop_map(|(ty, extra)| {
            let mut o = serde_json::Map::new();
            o.insert("type".into(), json!(ty));
            o.extend(extra);
            Value::Object(o)
        })
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn random_json(v in json()) {
            check(&v)?;
        }

        #[test]
        fn random_properties(props in proptest::collection::vec((word(), property()), 0..4)) {
            let props: serde_json::Map<_, _> = props.into_iter().collect();
            check(&json!({"properties": props}))?;
        }

        #[test]
        fn grafted_seed(pick in any::<usize>(), with in json()) {
            check(&graft(&seed(), pick, with))?;
        }

        #[test]
        fn merged_update(pick in any::<usize>(), with in json(), update in json()) {
            let existing = graft(&seed(), pick, with);
            let merged = merge(&existing, &update);
            client_error_or_ok(merged.as_ref().err().map(|e| (e.status, e.reason.clone())))?;
            if let Ok(m) = merged {
                check(&m)?;
            }
        }

        #[test]
        fn byte_mutated_seed(edits in edits()) {
            let bytes = mutate_bytes(seed().to_string().as_bytes(), &edits);
            if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
                check(&v)?;
            }
        }
    }
}
