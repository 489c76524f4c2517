//! Elasticsearch's `dynamic_templates`: parsed and validated as ES's `DynamicTemplate` and
//! `RootObjectMapper` do, and matched against the new fields of a document.

use crate::error::{EsError, EsResult};
use serde_json::{Map, Value};

/// The type of a new value as ES's `XContentFieldType` detects it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DetectedType {
    Object,
    String,
    Long,
    Double,
    Boolean,
    Date,
    Binary,
}

const ALL_TYPES: [DetectedType; 7] = [
    DetectedType::Object,
    DetectedType::String,
    DetectedType::Long,
    DetectedType::Double,
    DetectedType::Boolean,
    DetectedType::Date,
    DetectedType::Binary,
];

impl DetectedType {
    pub fn name(self) -> &'static str {
        match self {
            DetectedType::Object => "object",
            DetectedType::String => "string",
            DetectedType::Long => "long",
            DetectedType::Double => "double",
            DetectedType::Boolean => "boolean",
            DetectedType::Date => "date",
            DetectedType::Binary => "binary",
        }
    }

    fn parse(s: &str) -> EsResult<DetectedType> {
        ALL_TYPES
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = ALL_TYPES.iter().map(|t| t.name()).collect();
                EsError::illegal_argument(format!(
                    "No field type matched on [{s}], possible values are [{}]",
                    names.join(", ")
                ))
            })
    }

    /// `{dynamic_type}` of a mapped field, as ES's `defaultMappingType`.
    pub fn default_mapping_type(self) -> &'static str {
        match self {
            DetectedType::String => "text",
            DetectedType::Double => "float",
            other => other.name(),
        }
    }

    /// `{dynamic_type}` of a runtime field, as ES's `defaultRuntimeMappingType`.
    pub fn default_runtime_type(self) -> &'static str {
        match self {
            DetectedType::String => "keyword",
            other => other.name(),
        }
    }

    fn supports_runtime(self) -> bool {
        !matches!(self, DetectedType::Object | DetectedType::Binary)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MatchKind {
    /// No `match_pattern`: simple wildcards.
    Default,
    Simple,
    Regex,
}

#[derive(Debug, Clone)]
enum Pattern {
    Simple(String),
    Regex(regex::Regex),
}

impl Pattern {
    fn matches(&self, value: &str) -> bool {
        match self {
            Pattern::Simple(p) => simple_match(p, value),
            Pattern::Regex(r) => r.is_match(value),
        }
    }
}

/// ES's `Regex.simpleMatch`: `*` matches any run of characters, everything else itself.
pub fn simple_match(pattern: &str, value: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == value;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !value.starts_with(first) || value.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &value[first.len()..value.len() - last.len()];
    if !value.ends_with(last) {
        return false;
    }
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

/// One compiled entry of `dynamic_templates`.
#[derive(Debug, Clone)]
pub struct DynamicTemplate {
    pub name: String,
    path_match: Vec<Pattern>,
    path_unmatch: Vec<Pattern>,
    matches: Vec<Pattern>,
    unmatch: Vec<Pattern>,
    types: Vec<DetectedType>,
    mapping: Map<String, Value>,
    pub runtime: bool,
}

fn mapper_parsing(reason: impl Into<String>) -> EsError {
    EsError::bad_request("mapper_parsing_exception", reason)
}

/// The `Failed to parse mapping` wrapping ES's `MapperService` gives a parse error.
fn failed(cause: EsError) -> EsError {
    mapper_parsing(format!("Failed to parse mapping: {}", cause.reason)).caused_by(cause)
}

/// Parses `dynamic_templates` (an array of single-key objects) as ES's `RootObjectMapper`.
/// `validate` compiles a template's mapping for a field (ES's check that it is valid for at
/// least one of its types).
pub fn parse_templates(
    v: &Value,
    validate: &dyn Fn(&DynamicTemplate, DetectedType) -> EsResult<()>,
) -> EsResult<Vec<DynamicTemplate>> {
    let syntax = || {
        failed(mapper_parsing(
            "Dynamic template syntax error. An array of named objects is expected.",
        ))
    };
    let items = v.as_array().ok_or_else(syntax)?;
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let obj = item.as_object().ok_or_else(syntax)?;
        if obj.len() != 1 {
            return Err(failed(mapper_parsing(
                "A dynamic template must be defined with a name",
            )));
        }
        let (name, conf) = obj.iter().next().expect("one entry");
        let conf = conf.as_object().ok_or_else(syntax)?;
        let template = DynamicTemplate::parse(name, conf).map_err(failed)?;
        template.validate(item, validate)?;
        out.push(template);
    }
    Ok(out)
}

fn pattern_list(key: &str, v: &Value, out: &mut Vec<String>) -> EsResult<()> {
    match v {
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::String(s) => out.push(s.clone()),
                    _ => {
                        return Err(mapper_parsing(format!(
                        "[{key}] values must either be a string or list of strings, but was [{}]",
                        java_list(items)
                    )))
                    }
                }
            }
        }
        Value::String(s) => out.push(s.clone()),
        other => out.push(other.to_string()),
    }
    Ok(())
}

/// A JSON array as Java's `List.toString` prints it.
fn java_list(items: &[Value]) -> String {
    let parts: Vec<String> = items
        .iter()
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

impl DynamicTemplate {
    fn parse(name: &str, conf: &Map<String, Value>) -> EsResult<DynamicTemplate> {
        let (mut matches, mut path_match, mut unmatch, mut path_unmatch) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut match_types, mut unmatch_types) = (Vec::new(), Vec::new());
        let mut match_pattern = None;
        let mut mapping: Option<(Map<String, Value>, bool)> = None;
        for (key, v) in conf {
            match key.as_str() {
                "match" => pattern_list(key, v, &mut matches)?,
                "path_match" => pattern_list(key, v, &mut path_match)?,
                "unmatch" => pattern_list(key, v, &mut unmatch)?,
                "path_unmatch" => pattern_list(key, v, &mut path_unmatch)?,
                "match_mapping_type" => pattern_list(key, v, &mut match_types)?,
                "unmatch_mapping_type" => pattern_list(key, v, &mut unmatch_types)?,
                "match_pattern" => {
                    match_pattern = Some(match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                }
                "mapping" | "runtime" => {
                    if mapping.is_some() {
                        return Err(mapper_parsing(format!(
                            "mapping and runtime cannot be both specified in the same dynamic template [{name}]"
                        )));
                    }
                    let m = v.as_object().ok_or_else(|| {
                        mapper_parsing(format!(
                            "template [{name}] must have either mapping or runtime set"
                        ))
                    })?;
                    mapping = Some((m.clone(), key == "runtime"));
                }
                other => {
                    return Err(EsError::illegal_argument(format!(
                        "Illegal dynamic template parameter: [{other}]"
                    )))
                }
            }
        }
        let (mapping, runtime) = mapping.ok_or_else(|| {
            mapper_parsing(format!(
                "template [{name}] must have either mapping or runtime set"
            ))
        })?;
        // `match`, `path_match` and `unmatch_mapping_type` imply `match_mapping_type: *`.
        let wildcard = (match_types.is_empty()
            && !(matches.is_empty() && path_match.is_empty() && unmatch_types.is_empty()))
            || (match_types.len() == 1 && match_types[0] == "*");
        let candidates: Vec<DetectedType> = if wildcard {
            ALL_TYPES
                .into_iter()
                .filter(|t| !runtime || t.supports_runtime())
                .collect()
        } else {
            let types = match_types
                .iter()
                .map(|t| DetectedType::parse(t))
                .collect::<EsResult<Vec<_>>>()?;
            let unsupported: Vec<&str> = types
                .iter()
                .filter(|t| runtime && !t.supports_runtime())
                .map(|t| t.name())
                .collect();
            if !unsupported.is_empty() {
                let (s, verb) = if unsupported.len() == 1 {
                    ("", "is")
                } else {
                    ("s", "are")
                };
                return Err(mapper_parsing(format!(
                    "Dynamic template [{name}] defines a runtime field but type{s} [{}] {verb} not supported as runtime field",
                    unsupported.join(", ")
                )));
            }
            types
        };
        let unmatched = unmatch_types
            .iter()
            .map(|t| DetectedType::parse(t))
            .collect::<EsResult<Vec<_>>>()?;
        let types = candidates
            .into_iter()
            .filter(|t| !unmatched.contains(t))
            .collect();
        let kind = match match_pattern.as_deref() {
            None | Some("default") => MatchKind::Default,
            Some("simple") => MatchKind::Simple,
            Some("regex") => MatchKind::Regex,
            Some(other) => {
                return Err(EsError::illegal_argument(format!(
                    "No matching pattern matched on [{other}]"
                )))
            }
        };
        let compile = |list: Vec<String>| -> EsResult<Vec<Pattern>> {
            list.into_iter()
                .map(|p| match kind {
                    MatchKind::Regex => regex::Regex::new(&format!("^(?:{p})$"))
                        .map(Pattern::Regex)
                        .map_err(|_| {
                            mapper_parsing(format!(
                                "Pattern [{p}] of type [regex] is invalid. Cannot create dynamic template [{name}]."
                            ))
                        }),
                    MatchKind::Default | MatchKind::Simple => Ok(Pattern::Simple(p)),
                })
                .collect()
        };
        Ok(DynamicTemplate {
            name: name.to_string(),
            matches: compile(matches)?,
            path_match: compile(path_match)?,
            unmatch: compile(unmatch)?,
            path_unmatch: compile(path_unmatch)?,
            types,
            mapping,
            runtime,
        })
    }

    /// ES's `validateDynamicTemplate`: the mapping must compile for at least one of the
    /// template's types (unless it names `{name}`, which cannot be guessed up front).
    fn validate(
        &self,
        item: &Value,
        compile: &dyn Fn(&DynamicTemplate, DetectedType) -> EsResult<()>,
    ) -> EsResult<()> {
        if contains_name(&Value::Object(self.mapping.clone())) || self.types.is_empty() {
            return Ok(());
        }
        let mut last = None;
        for &t in &self.types {
            match compile(self, t) {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(e),
            }
        }
        let names: Vec<&str> = self.types.iter().map(|t| t.name()).collect();
        let reason = format!(
            "dynamic template [{}] has invalid content [{}], attempted to validate it with the following match_mapping_type: [{}]",
            self.name,
            item.get(&self.name).map(|v| v.to_string()).unwrap_or_default(),
            names.join(", ")
        );
        let mut cause = EsError::illegal_argument(reason);
        if let Some(e) = last {
            cause = cause.caused_by(e);
        }
        Err(failed(cause))
    }

    /// ES's `DynamicTemplate.match`: every given condition must hold.
    pub fn matches(&self, path: &str, name: &str, ty: DetectedType) -> bool {
        (self.path_match.is_empty() || self.path_match.iter().any(|p| p.matches(path)))
            && (self.matches.is_empty() || self.matches.iter().any(|p| p.matches(name)))
            && !self.path_unmatch.iter().any(|p| p.matches(path))
            && !self.unmatch.iter().any(|p| p.matches(name))
            && self.types.contains(&ty)
            && (!self.runtime || ty.supports_runtime())
    }

    /// The field's definition: the template's mapping with `{name}` and `{dynamic_type}`
    /// replaced, and the type (the detected one when the mapping has none) set.
    pub fn definition(&self, name: &str, ty: DetectedType) -> Map<String, Value> {
        let dynamic_type = if self.runtime {
            ty.default_runtime_type()
        } else {
            ty.default_mapping_type()
        };
        let mut out = match substitute(&Value::Object(self.mapping.clone()), name, dynamic_type) {
            Value::Object(m) => m,
            _ => unreachable!("an object stays an object"),
        };
        if !out.contains_key("type") {
            out.insert("type".into(), Value::String(dynamic_type.to_string()));
        }
        out
    }
}

fn contains_name(v: &Value) -> bool {
    match v {
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| k.contains("{name}") || contains_name(v)),
        Value::Array(a) => a.iter().any(contains_name),
        Value::String(s) => s.contains("{name}"),
        _ => false,
    }
}

fn replace(s: &str, name: &str, dynamic_type: &str) -> String {
    s.replace("{name}", name)
        .replace("{dynamic_type}", dynamic_type)
        .replace("{dynamicType}", dynamic_type)
}

fn substitute(v: &Value, name: &str, dynamic_type: &str) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    (
                        replace(k, name, dynamic_type),
                        substitute(v, name, dynamic_type),
                    )
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|v| substitute(v, name, dynamic_type))
                .collect(),
        ),
        Value::String(s) => Value::String(replace(s, name, dynamic_type)),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> EsResult<Vec<DynamicTemplate>> {
        parse_templates(&v, &|_, _| Ok(()))
    }

    #[test]
    fn simple_patterns_match_as_es_simple_match() {
        assert!(simple_match("*", "anything"));
        assert!(simple_match("long_*", "long_a"));
        assert!(simple_match("*_text", "a_text"));
        assert!(simple_match("a*b*c", "aXbYc"));
        assert!(!simple_match("a*b*c", "aXc"));
        assert!(!simple_match("ab*ba", "aba"));
        assert!(simple_match("exact", "exact"));
        assert!(!simple_match("exact", "exactly"));
    }

    #[test]
    fn conditions_all_hold_and_types_follow_es_defaults() {
        let t = &parse(json!([{"t": {"match": ["a*", "b*"], "unmatch": "*_x", "mapping": {}}}]))
            .unwrap()[0];
        // `match` implies every type.
        assert!(t.matches("o.a1", "a1", DetectedType::Long));
        assert!(t.matches("b1", "b1", DetectedType::Object));
        assert!(!t.matches("a_x", "a_x", DetectedType::String));
        assert!(!t.matches("c", "c", DetectedType::String));
        // A template with a mapping only matches nothing, as in ES.
        let t = &parse(json!([{"t": {"mapping": {}}}])).unwrap()[0];
        assert!(!t.matches("a", "a", DetectedType::String));
        let t = &parse(json!([{"t": {"path_match": "o.*", "unmatch_mapping_type": "long", "match_pattern": "simple", "mapping": {}}}]))
            .unwrap()[0];
        assert!(t.matches("o.a", "a", DetectedType::String));
        assert!(!t.matches("o.a", "a", DetectedType::Long));
        assert!(!t.matches("a", "a", DetectedType::String));
    }

    #[test]
    fn regex_patterns_match_the_whole_name() {
        let t = &parse(
            json!([{"t": {"match_pattern": "regex", "match": "^n\\d+$|x.", "mapping": {}}}]),
        )
        .unwrap()[0];
        assert!(t.matches("n12", "n12", DetectedType::String));
        assert!(t.matches("xy", "xy", DetectedType::String));
        assert!(!t.matches("xyz", "xyz", DetectedType::String));
        let e = parse(json!([{"t": {"match_pattern": "regex", "match": "(", "mapping": {}}}]))
            .unwrap_err();
        assert_eq!(
            e.reason,
            "Failed to parse mapping: Pattern [(] of type [regex] is invalid. Cannot create dynamic template [t]."
        );
    }

    #[test]
    fn definitions_replace_placeholders_and_default_the_type() {
        let t = &parse(json!([{"t": {"match_mapping_type": "*", "mapping": {"fields": {"{name}_raw": {"type": "{dynamic_type}"}}, "copy_to": ["all_{name}"]}}}]))
            .unwrap()[0];
        assert_eq!(
            Value::Object(t.definition("f", DetectedType::Double)),
            json!({"fields": {"f_raw": {"type": "float"}}, "copy_to": ["all_f"], "type": "float"})
        );
        let t = &parse(json!([{"t": {"match_mapping_type": "string", "runtime": {}}}])).unwrap()[0];
        assert!(t.runtime);
        assert_eq!(
            Value::Object(t.definition("f", DetectedType::String)),
            json!({"type": "keyword"})
        );
    }

    #[test]
    fn invalid_templates_are_refused_with_es_messages() {
        let cases = [
            (json!({"t": {}}), "Dynamic template syntax error. An array of named objects is expected."),
            (json!([{"a": {"mapping": {}}, "b": {"mapping": {}}}]), "A dynamic template must be defined with a name"),
            (json!([{"t": {"match": "a", "foo": 1, "mapping": {}}}]), "Illegal dynamic template parameter: [foo]"),
            (json!([{"t": {"match": "a"}}]), "template [t] must have either mapping or runtime set"),
            (json!([{"t": {"mapping": {}, "runtime": {}}}]), "mapping and runtime cannot be both specified in the same dynamic template [t]"),
            (json!([{"t": {"match_mapping_type": "text", "mapping": {}}}]), "No field type matched on [text], possible values are [object, string, long, double, boolean, date, binary]"),
            (json!([{"t": {"match_mapping_type": ["object", "binary"], "runtime": {}}}]), "Dynamic template [t] defines a runtime field but types [object, binary] are not supported as runtime field"),
            (json!([{"t": {"match": ["a", 1], "mapping": {}}}]), "[match] values must either be a string or list of strings, but was [[a, 1]]"),
            (json!([{"t": {"match": "a", "match_pattern": "glob", "mapping": {}}}]), "No matching pattern matched on [glob]"),
        ];
        for (v, reason) in cases {
            let e = parse(v).unwrap_err();
            assert_eq!(e.kind, "mapper_parsing_exception");
            assert_eq!(e.reason, format!("Failed to parse mapping: {reason}"));
        }
    }
}
