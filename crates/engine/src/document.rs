//! Turns a JSON `_source` into a tantivy document under a mapping, or into the dynamic
//! mapping update that must be applied first.

use crate::doc_location::fail_at;
use crate::error::{EsError, EsResult};
use crate::mapping::{
    infer_dynamic, template_field, template_object, Dynamic, FieldDef, FieldType, Mapping,
    ObjectDef, Storage, Templated,
};
use crate::schema::{nested_parent_term, MetaFields, NESTED_CHILD};
use lode_dates::Tz;
use serde_json::{Map, Value};
use std::net::{IpAddr, Ipv6Addr};
use tantivy::schema::Schema;
use tantivy::TantivyDocument;

/// The outcome of parsing one document.
pub enum Parsed {
    Doc(Box<ParsedDoc>),
    /// New fields were found: merge this `mappings` JSON and parse again.
    MappingUpdate(Value),
}

/// ES 8.8+ reports values that do not fit the mapping as `document_parsing_exception`
/// (`mapper_parsing_exception` stays for invalid mapping definitions).
fn parse_error(reason: String) -> EsError {
    EsError::bad_request("document_parsing_exception", reason)
}

/// A parsed document: the root, and one hidden document per object under a `nested` path
/// (in post-order: an object's nested children come before it), which must be added right
/// before the root, in one batch, so they stay a contiguous block (Lucene's block join).
pub struct ParsedDoc {
    pub root: TantivyDocument,
    pub nested: Vec<TantivyDocument>,
}

/// ES's default `index.mapping.nested_objects.limit`.
pub const DEFAULT_NESTED_OBJECTS_LIMIT: usize = 10_000;

pub struct DocParser<'a> {
    pub mapping: &'a Mapping,
    pub schema: &'a Schema,
    pub meta: MetaFields,
    /// `index.mapping.nested_objects.limit`.
    pub nested_objects_limit: usize,
}

struct Walk<'a> {
    p: &'a DocParser<'a>,
    id: &'a str,
    doc: TantivyDocument,
    /// Paths of the mapped fields present, for `_field_names` (borrowed from the mapping).
    field_names: Vec<&'a str>,
    /// Paths of the fields whose value was skipped, for `_ignored`.
    ignored: Vec<&'a str>,
    update: Map<String, Value>,
    /// New fields under `dynamic: runtime`: runtime fields (read from `_source`).
    runtime_update: Map<String, Value>,
    /// The documents enclosing the nested object being walked (root first), each with its
    /// `_field_names` and nested path ("" = root).
    outer: Vec<(TantivyDocument, Vec<&'a str>, &'a str)>,
    /// Finished nested documents, in post-order.
    nested: Vec<TantivyDocument>,
}

impl<'a> DocParser<'a> {
    /// Parses `source` (a JSON object) for document `id`.
    pub fn parse(&'a self, id: &'a str, source: &Value) -> EsResult<Parsed> {
        crate::doc_location::reset();
        let obj = source
            .as_object()
            .ok_or_else(|| parse_error("failed to parse, document is empty".to_string()))?;
        let mut w = Walk {
            p: self,
            id,
            doc: TantivyDocument::default(),
            field_names: Vec::new(),
            ignored: Vec::new(),
            update: Map::new(),
            runtime_update: Map::new(),
            outer: Vec::new(),
            nested: Vec::new(),
        };
        w.object("", obj)?;
        if !w.update.is_empty() || !w.runtime_update.is_empty() {
            let mut update = Map::new();
            if !w.update.is_empty() {
                update.insert("properties".into(), Value::Object(w.update));
            }
            if !w.runtime_update.is_empty() {
                update.insert("runtime".into(), Value::Object(w.runtime_update));
            }
            return Ok(Parsed::MappingUpdate(Value::Object(update)));
        }
        add_field_names(&mut w.doc, self.meta, std::mem::take(&mut w.field_names));
        fill_constant_keywords(self.mapping, self.schema, &mut w.doc);
        if let Some(f) = self.meta.ignored {
            let mut ignored = std::mem::take(&mut w.ignored);
            ignored.sort_unstable();
            ignored.dedup();
            for n in ignored {
                w.doc.add_text(f, n);
            }
        }
        Ok(Parsed::Doc(Box::new(ParsedDoc {
            root: w.doc,
            nested: w.nested,
        })))
    }
}

/// Every root document holds the value of each `constant_keyword` field (outside nested
/// objects) that has one, sent or not. Searches no longer read these terms and column values
/// (queries decide on the mapping's value, doc values are a constant column:
/// `index::register_constant_columns`); they keep segments as earlier Lode versions wrote them.
fn fill_constant_keywords(mapping: &Mapping, schema: &Schema, doc: &mut TantivyDocument) {
    for def in mapping.fields.values() {
        let Some(value) = def.value.as_deref() else {
            continue;
        };
        if def.ty != FieldType::ConstantKeyword || mapping.nested_scope(&def.path).is_some() {
            continue;
        }
        if let Ok(field) = schema.get_field(&def.path) {
            doc.add_text(field, value);
        }
    }
}

fn add_field_names(doc: &mut TantivyDocument, meta: MetaFields, mut names: Vec<&str>) {
    names.sort_unstable();
    names.dedup();
    for n in names {
        doc.add_text(meta.field_names, n);
    }
}

/// Copies the mapped field values of `from` into `to` (`include_in_parent`/`include_in_root`).
fn copy_fields(from: &TantivyDocument, to: &mut TantivyDocument) {
    for (field, value) in from.field_values() {
        to.add_field_value(field, value);
    }
}

impl<'a> Walk<'a> {
    fn object(&mut self, prefix: &str, obj: &Map<String, Value>) -> EsResult<()> {
        for (k, v) in obj {
            if k.is_empty() {
                return Err(parse_error(
                    "field name cannot be an empty string".to_string(),
                ));
            }
            let joined;
            let path = if prefix.is_empty() {
                k.as_str()
            } else {
                joined = format!("{prefix}.{k}");
                joined.as_str()
            };
            if prefix.is_empty() && k.starts_with('_') && is_metadata_field(k) {
                return Err(parse_error(format!(
                    "Field [{k}] is a metadata field and cannot be added inside a document. Use the index API request parameters."
                )));
            }
            self.value(path, v)?;
        }
        Ok(())
    }

    /// One object under a `nested` path: its fields go to a new hidden document (and to the
    /// parent and root documents too with `include_in_parent`/`include_in_root`).
    fn nested_object(&mut self, obj: &'a ObjectDef, m: &Map<String, Value>) -> EsResult<()> {
        let p: &'a DocParser<'a> = self.p;
        if self.nested.len() >= p.nested_objects_limit {
            return Err(EsError::bad_request(
                "document_parsing_exception",
                format!(
                    "The number of nested documents has exceeded the allowed limit of [{}]. This limit can be set by changing the [index.mapping.nested_objects.limit] index level setting.",
                    p.nested_objects_limit
                ),
            ));
        }
        let parent_doc = std::mem::take(&mut self.doc);
        let parent_names = std::mem::take(&mut self.field_names);
        self.outer
            .push((parent_doc, parent_names, obj.path.as_str()));
        let walked = self.object(&obj.path, m);
        let (parent_doc, parent_names, _) = self.outer.pop().expect("pushed above");
        let mut child = std::mem::replace(&mut self.doc, parent_doc);
        let child_names = std::mem::replace(&mut self.field_names, parent_names);
        walked?;
        if obj.include_in_parent {
            copy_fields(&child, &mut self.doc);
            self.field_names.extend(child_names.iter().copied());
        }
        if obj.include_in_root && !(obj.include_in_parent && self.outer.is_empty()) {
            match self.outer.first_mut() {
                Some(root) => {
                    copy_fields(&child, &mut root.0);
                    root.1.extend(child_names.iter().copied());
                }
                None => {
                    copy_fields(&child, &mut self.doc);
                    self.field_names.extend(child_names.iter().copied());
                }
            }
        }
        add_field_names(&mut child, p.meta, child_names);
        if let Some(f) = p.meta.nested {
            child.add_text(f, NESTED_CHILD);
            child.add_text(f, &obj.path);
            child.add_text(f, nested_parent_term(self.id));
        }
        self.nested.push(child);
        Ok(())
    }

    fn value(&mut self, path: &str, v: &Value) -> EsResult<()> {
        let mapping: &'a Mapping = self.p.mapping;
        if let Some(obj) = mapping.objects.get(path) {
            if !obj.enabled {
                return Ok(());
            }
            return match v {
                Value::Object(m) if obj.nested => self.nested_object(obj, m),
                Value::Object(m) => self.object(path, m),
                Value::Array(items) => {
                    for item in items {
                        self.value(path, item)?;
                    }
                    Ok(())
                }
                Value::Null => Ok(()),
                other => Err(fail_at(
                    other,
                    parse_error(format!(
                        "object mapping for [{path}] tried to parse field [{path}] as object, but found a concrete value"
                    ))
                    .with("preview", other.to_string()),
                )),
            };
        }
        if let Some(def) = mapping.fields.get(path) {
            return match v {
                // A completion array is one set of inputs (deduplicated by input).
                Value::Array(_) if def.ty == FieldType::Completion => self.leaf(def, v),
                // `[lon, lat]` is one point; other arrays are lists of points.
                Value::Array(_)
                    if def.ty == FieldType::GeoPoint && crate::geo::is_coordinate_array(v) =>
                {
                    self.leaf(def, v)
                }
                Value::Array(items) => {
                    for item in items {
                        self.leaf(def, item)?;
                    }
                    Ok(())
                }
                _ => self.leaf(def, v),
            };
        }
        // A runtime field of the mapping shadows the path: its value stays in `_source`
        // only and is not mapped dynamically (as ES's `NoOpFieldMapper`).
        if mapping
            .json
            .get("runtime")
            .and_then(|r| r.get(path))
            .is_some()
        {
            return Ok(());
        }
        // A dotted name under a leaf field (`{"n.x": 1}` with `n` a long) cannot become an
        // object of that leaf: ES's DocumentParser refuses it whatever `dynamic` says. A
        // flattened field takes dotted keys as its own.
        for (i, _) in path.match_indices('.') {
            if let Some(leaf) = mapping.fields.get(&path[..i]) {
                if leaf.ty != FieldType::Flattened {
                    return Err(fail_at(
                        v,
                        parse_error(format!(
                            "Could not dynamically add mapping for field [{path}]. Existing mapping for [{}] must be of type object but found [{}].",
                            &path[..i],
                            leaf.ty.name()
                        )),
                    ));
                }
            }
        }
        // An unmapped path: dynamic mapping decides.
        let parent = match path.rfind('.') {
            Some(i) => &path[..i],
            None => "",
        };
        match self.p.mapping.dynamic_for(parent) {
            Dynamic::False => Ok(()),
            Dynamic::Runtime => {
                runtime_defs(
                    self.p.mapping,
                    path,
                    v,
                    &mut self.runtime_update,
                    &mut self.update,
                );
                Ok(())
            }
            Dynamic::Strict => Err(EsError::bad_request(
                "strict_dynamic_mapping_exception",
                format!(
                    "[1:2] mapping set to strict, dynamic introduction of [{}] within [{}] is not allowed",
                    path.rsplit('.').next().unwrap_or(path),
                    if parent.is_empty() { "_doc" } else { parent }
                ),
            )),
            Dynamic::True => {
                // An object is mapped with all its children (and an array of objects with
                // the children of every element) in the same update, so a document's new
                // fields are checked against the limits, and rejected, together.
                if let Some(def) = dynamic_def(self.p.mapping, path, v, &mut self.runtime_update) {
                    insert_path(Some(self.p.mapping), &mut self.update, path, def);
                }
                Ok(())
            }
        }
    }

    fn leaf(&mut self, def: &'a FieldDef, v: &Value) -> EsResult<()> {
        if def.ty == FieldType::ConstantKeyword {
            return self.constant_keyword(def, v);
        }
        if def.ty == FieldType::TokenCount {
            return self.token_count(def, v);
        }
        // ES's `NumberFieldMapper#value`: with `coerce`, an empty string is a null.
        let v = match v {
            Value::String(s) if s.is_empty() && def.coerce && def.ty.is_numeric() => &Value::Null,
            other => other,
        };
        let v = match v {
            Value::Null => match &def.null_value {
                Some(nv) => nv,
                None => return Ok(()),
            },
            other => other,
        };
        if def.ty == FieldType::Flattened {
            return self.flattened(def, v);
        }
        if def.ty == FieldType::Completion {
            return self.completion(def, v);
        }
        if let FieldType::Range(kind) = def.ty {
            return self.range_value(def, kind, v);
        }
        if def.ty == FieldType::GeoPoint {
            return self.geo_point(def, v);
        }
        if def.storage() == Storage::None {
            // Kept in `_source` only (binary, geo, range...), but `exists` still finds it.
            self.field_names.push(&def.path);
            return Ok(());
        }
        if matches!(v, Value::Object(_)) {
            // ES 8 skips an object under `ignore_malformed` as any malformed value.
            if def.ignore_malformed {
                self.ignored.push(&def.path);
                return Ok(());
            }
            return Err(fail_at(v, parse_error(format!(
                "failed to parse field [{}] of type [{}] in document with id '{}'. Preview of field's value: '{}'",
                def.path,
                def.ty.name(),
                self.id,
                v
            ))));
        }
        if let Value::Array(items) = v {
            for item in items {
                self.leaf(def, item)?;
            }
            return Ok(());
        }
        match self.index_value(def, v) {
            Ok(()) => {}
            // As ES's mappers: the value is left out and the field listed in `_ignored`.
            Err(_) if def.ignore_malformed => {
                self.ignored.push(&def.path);
                return Ok(());
            }
            Err(e) => return Err(e),
        }
        if def.parent.is_none() {
            let mapping: &'a Mapping = self.p.mapping;
            for sub in def.multi_fields.iter().chain(&def.copy_to) {
                if let Some(sub_def) = mapping.fields.get(sub) {
                    self.leaf(sub_def, v)?;
                } else if def.copy_to.contains(sub) {
                    // An unmapped target is mapped dynamically, as ES's `copy_to` does.
                    self.value(sub, v)?;
                }
            }
        }
        Ok(())
    }

    /// ES's `ConstantKeywordFieldMapper#parseCreateField`: a value must be the mapping's; the
    /// first one sent while the mapping has none becomes it (a mapping update, after which
    /// the document is parsed again). The column itself is filled for every document by
    /// [`fill_constant_keywords`].
    fn constant_keyword(&mut self, def: &'a FieldDef, v: &Value) -> EsResult<()> {
        let value = match v {
            Value::Null => {
                return Err(self.bad_value(
                    def,
                    v,
                    &format!(
                        "[constant_keyword] field [{}] doesn't accept [null] values",
                        def.path
                    ),
                ))
            }
            Value::String(s) => s.clone(),
            Value::Number(_) | Value::Bool(_) => v.to_string(),
            _ => {
                return Err(self.bad_value(
                    def,
                    v,
                    &format!("Current token ({}) not of a scalar type", json_token(v)),
                ))
            }
        };
        match &def.value {
            None => {
                let update = serde_json::json!({"type": "constant_keyword", "value": value});
                insert_path(Some(self.p.mapping), &mut self.update, &def.path, update);
                Ok(())
            }
            Some(expected) if *expected == value => Ok(()),
            Some(expected) => Err(self.bad_value(
                def,
                v,
                &format!(
                    "[constant_keyword] field [{}] only accepts values that are equal to the value defined in the mappings [{expected}], but got [{value}]",
                    def.path
                ),
            )),
        }
    }

    /// A `date_nanos` value in epoch nanoseconds, refused outside what ES can store
    /// (`DateUtils#toLong`: from 1970 to 2262-04-11T23:47:16.854775807Z).
    fn date_nanos(&self, def: &FieldDef, v: &Value) -> EsResult<i64> {
        let failed = |reason: String| {
            self.bad_value(
                def,
                v,
                &format!(
                    "failed to parse date field [{}] with format [{}]",
                    scalar_string(v),
                    def.date_format.spec()
                ),
            )
            .caused_by(EsError::illegal_argument(reason))
        };
        match def.date_format.parse_json_nanos(v, &Tz::utc()) {
            Ok(n) if n < 0 => Err(self.bad_value(
                def,
                v,
                &format!(
                    "date[{}] is before the epoch in 1970 and cannot be stored in nanosecond resolution",
                    lode_dates::DateFormat::parse("strict_date_optional_time_nanos")
                        .map(|f| f.format_nanos(n, &Tz::utc()))
                        .unwrap_or_default()
                ),
            )),
            Ok(n) => Ok(n),
            // A date the millisecond parser reads but nanoseconds cannot hold.
            Err(e) => match def.date_format.parse_json(v, &Tz::utc()) {
                Ok(ms) if ms > 0 => Err(self.bad_value(
                    def,
                    v,
                    &format!(
                        "date[{}] is after 2262-04-11T23:47:16.854775807 and cannot be stored in nanosecond resolution",
                        def.date_format.format_millis(ms, &Tz::utc())
                    ),
                )),
                Ok(_) => Err(self.bad_value(
                    def,
                    v,
                    "date is before the epoch in 1970 and cannot be stored in nanosecond resolution",
                )),
                Err(_) => Err(failed(e.reason)),
            },
        }
    }

    /// A `token_count` value as ES's `TokenCountFieldMapper#parseCreateField`: the text's
    /// position count under the field's analyzer, indexed as an integer; `null` indexes
    /// `null_value` (itself a count) or nothing. Numbers and booleans are read as their text.
    fn token_count(&mut self, def: &'a FieldDef, v: &Value) -> EsResult<()> {
        let Some(opts) = def.token_count.as_ref() else {
            return Ok(());
        };
        let count = match v {
            Value::Null => match &def.null_value {
                Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
                Some(Value::String(s)) => s.trim().parse().unwrap_or(0),
                _ => return Ok(()),
            },
            Value::Array(items) => {
                for item in items {
                    self.token_count(def, item)?;
                }
                return Ok(());
            }
            Value::Object(_) => {
                return Err(self.bad_value(def, v, "Can't get text on a START_OBJECT"))
            }
            other => opts.count(&scalar_string(other)),
        };
        self.index_value(def, &Value::from(count))?;
        if def.parent.is_none() {
            let mapping: &'a Mapping = self.p.mapping;
            for sub in def.multi_fields.iter().chain(&def.copy_to) {
                if let Some(sub_def) = mapping.fields.get(sub) {
                    self.leaf(sub_def, v)?;
                } else if def.copy_to.contains(sub) {
                    // An unmapped target is mapped dynamically, as ES's `copy_to` does.
                    self.value(sub, v)?;
                }
            }
        }
        Ok(())
    }

    /// A `geo_point` value as ES's `GeoPointFieldMapper`: a point in any of ES's formats
    /// (`crate::geo::parse_point`), or an array of them. Out of range, it is refused, or
    /// with `ignore_malformed` wrapped onto the globe (`GeoUtils#normalizePoint`); a value
    /// that is not a point is refused or, with `ignore_malformed`, skipped into `_ignored`.
    fn geo_point(&mut self, def: &'a FieldDef, v: &Value) -> EsResult<()> {
        if let Value::Array(items) = v {
            if !crate::geo::is_coordinate_array(v) {
                for item in items {
                    let item = match item {
                        Value::Null => match &def.null_value {
                            Some(nv) => nv,
                            None => continue,
                        },
                        other => other,
                    };
                    self.geo_point(def, item)?;
                }
                return Ok(());
            }
        }
        let parsed = crate::geo::parse_point(v, def.ignore_z_value).and_then(|(lat, lon)| {
            if lat.is_nan() || lon.is_nan() || lat.is_infinite() || lon.is_infinite() {
                return Err("cannot normalize the point - not a number".to_string());
            }
            if def.ignore_malformed {
                Ok(crate::geo::normalize(lat, lon))
            } else {
                crate::geo::check_range(lat, lon, &def.path).map(|_| (lat, lon))
            }
        });
        let (lat, lon) = match parsed {
            Ok(p) => p,
            Err(_) if def.ignore_malformed => {
                self.ignored.push(&def.path);
                return Ok(());
            }
            Err(detail) => {
                let mut e = self.bad_value(def, v, "");
                e = e.caused_by(if detail.starts_with("illegal ") {
                    EsError::illegal_argument(detail)
                } else {
                    EsError::bad_request("parse_exception", detail)
                });
                return Err(e);
            }
        };
        if let Ok(field) = self.p.schema.get_field(&def.path) {
            if def.doc_values || def.index {
                self.doc.add_u64(field, crate::geo::encode(lat, lon));
            }
        }
        self.field_names.push(&def.path);
        if def.parent.is_none() {
            let mapping: &'a Mapping = self.p.mapping;
            for sub in &def.copy_to {
                if let Some(sub_def) = mapping.fields.get(sub) {
                    self.leaf(sub_def, v)?;
                } else if def.copy_to.contains(sub) {
                    // An unmapped target is mapped dynamically, as ES's `copy_to` does.
                    self.value(sub, v)?;
                }
            }
        }
        Ok(())
    }

    /// A range value (`crate::range_field`): one column value per range, listed in
    /// `_field_names` for `exists`.
    fn range_value(
        &mut self,
        def: &'a FieldDef,
        kind: crate::range_field::RangeKind,
        v: &Value,
    ) -> EsResult<()> {
        let encoded = crate::range_field::parse_document_range(kind, def, v)
            .map_err(|d| self.bad_value(def, v, &d))?;
        if let Ok(field) = self.p.schema.get_field(&def.path) {
            if def.doc_values || def.index {
                self.doc.add_bytes(field, &encoded);
            }
        }
        self.field_names.push(&def.path);
        Ok(())
    }

    /// A `completion` value as ES's `CompletionFieldMapper#parse`: a string, an object
    /// `{"input": string|[strings], "weight": int, "contexts": ..}`, or an array of those;
    /// an input given twice keeps its highest weight. Inputs are cut to `max_input_length`
    /// UTF-16 units; blank ones are skipped.
    fn completion(&mut self, def: &'a FieldDef, v: &Value) -> EsResult<()> {
        let Some(opts) = def.completion.as_ref() else {
            return Ok(());
        };
        let mut inputs: Vec<(String, u32)> = Vec::new();
        match v {
            Value::Array(items) => {
                for item in items {
                    if !item.is_null() {
                        self.completion_entry(def, item, &mut inputs)?;
                    }
                }
            }
            other => self.completion_entry(def, other, &mut inputs)?,
        }
        // An index created before completion fields were indexed has none in its schema:
        // the value stays in `_source` only, as it was.
        let field = self.p.schema.get_field(&def.path).ok();
        for (input, weight) in &inputs {
            let Some(field) = field else {
                break;
            };
            if input.trim().is_empty() {
                continue;
            }
            let input = truncate_utf16(input, opts.max_input_length);
            let key = opts.key(&opts.analyzer, input);
            let term = crate::mapping::CompletionOptions::term(&key, *weight, input);
            check_term_length(&def.path, term.as_bytes())?;
            self.doc.add_text(field, term);
        }
        self.field_names.push(&def.path);
        if def.parent.is_none() {
            let mapping: &'a Mapping = self.p.mapping;
            for sub in def.multi_fields.iter().chain(&def.copy_to) {
                if let Some(sub_def) = mapping.fields.get(sub) {
                    for (input, _) in &inputs {
                        self.leaf(sub_def, &Value::String(input.clone()))?;
                    }
                }
            }
        }
        Ok(())
    }

    fn completion_entry(
        &self,
        def: &FieldDef,
        v: &Value,
        inputs: &mut Vec<(String, u32)>,
    ) -> EsResult<()> {
        // As `CompletionFieldMapper`: a string input is put with weight 1; an object's
        // inputs replace an entry of lower weight.
        let mut add = |input: &str, weight: u32, string: bool| match inputs
            .iter_mut()
            .find(|(i, _)| i.as_str() == input)
        {
            Some(e) if string || e.1 < weight => e.1 = weight,
            Some(_) => {}
            None => inputs.push((input.to_string(), weight)),
        };
        match v {
            Value::String(s) => {
                add(s, 1, true);
                Ok(())
            }
            Value::Object(m) => {
                let mut weight = 1u32;
                let mut given: Vec<&str> = Vec::new();
                for (k, val) in m {
                    match k.as_str() {
                        "input" => match val {
                            Value::String(s) => given.push(s),
                            Value::Array(a) => {
                                for x in a {
                                    match x {
                                        Value::String(s) => given.push(s),
                                        other => {
                                            return Err(self.bad_value(
                                                def,
                                                v,
                                                &format!(
                                                    "input array must have string values, but was [{}]",
                                                    json_token(other)
                                                ),
                                            ))
                                        }
                                    }
                                }
                            }
                            other => {
                                return Err(self.bad_value(
                                    def,
                                    v,
                                    &format!(
                                        "input must be a string or array, but was [{}]",
                                        json_token(other)
                                    ),
                                ))
                            }
                        },
                        "weight" => {
                            let n: i64 = match val {
                                Value::String(s) => s.parse().map_err(|_| {
                                    self.bad_value(
                                        def,
                                        v,
                                        &format!("weight must be an integer, but was [{s}]"),
                                    )
                                })?,
                                Value::Number(n) => match n.as_i64() {
                                    Some(i) => i,
                                    None => {
                                        return Err(self.bad_value(
                                            def,
                                            v,
                                            &format!("weight must be an integer, but was [{n}]"),
                                        ))
                                    }
                                },
                                other => {
                                    return Err(self.bad_value(
                                        def,
                                        v,
                                        &format!(
                                            "weight must be a number or string, but was [{}]",
                                            json_token(other)
                                        ),
                                    ))
                                }
                            };
                            if !(0..=i64::from(i32::MAX)).contains(&n) {
                                return Err(self.bad_value(
                                    def,
                                    v,
                                    &format!(
                                        "weight must be in the interval [0..2147483647], but was [{n}]"
                                    ),
                                ));
                            }
                            weight = n as u32;
                        }
                        "contexts" => {
                            return Err(self.bad_value(
                                def,
                                v,
                                &format!("contexts field is not supported for field: [{}]", def.path),
                            ))
                        }
                        other => {
                            return Err(self.bad_value(
                                def,
                                v,
                                &format!(
                                    "unknown field name [{other}], must be one of [input, weight, contexts]"
                                ),
                            ))
                        }
                    }
                }
                for s in given {
                    add(s, weight, false);
                }
                Ok(())
            }
            other => Err(self.bad_value(
                def,
                v,
                &format!(
                    "failed to parse [{}]: expected text or object, but got {}",
                    def.path,
                    json_token(other)
                ),
            )),
        }
    }

    fn flattened(&mut self, def: &'a FieldDef, v: &Value) -> EsResult<()> {
        let keyed = def
            .keyed_path()
            .and_then(|p| self.p.schema.get_field(&p).ok());
        // ES's `depth_limit` (default 20): the depth of the value's nested objects.
        let mut spec = Some(&self.p.mapping.json);
        for part in def.path.split('.') {
            spec = spec
                .and_then(|m| m.get("properties"))
                .and_then(|p| p.get(part));
        }
        let limit = spec
            .and_then(|d| d.get("depth_limit"))
            .and_then(|l| {
                l.as_u64()
                    .or_else(|| l.as_str().and_then(|s| s.parse().ok()))
            })
            .unwrap_or(20) as usize;
        if object_depth(v) > limit {
            return Err(self.bad_value(
                def,
                v,
                &format!(
                    "The provided [flattened] field [{}] exceeds the maximum depth limit of [{limit}].",
                    def.path
                ),
            ));
        }
        self.flattened_at(def, keyed, &mut String::new(), v)
    }

    /// Each leaf of a `flattened` value: its value in the root field, `key\0value` (the key
    /// its dotted path under the field) in the keyed companion, as ES's `FlattenedFieldParser`.
    fn flattened_at(
        &mut self,
        def: &'a FieldDef,
        keyed: Option<tantivy::schema::Field>,
        key: &mut String,
        v: &Value,
    ) -> EsResult<()> {
        match v {
            Value::Object(m) => {
                for (k, val) in m {
                    let len = key.len();
                    if !key.is_empty() {
                        key.push('.');
                    }
                    key.push_str(k);
                    let r = self.flattened_at(def, keyed, key, val);
                    key.truncate(len);
                    r?;
                }
                Ok(())
            }
            Value::Array(a) => {
                for val in a {
                    self.flattened_at(def, keyed, key, val)?;
                }
                Ok(())
            }
            // ES substitutes `null_value` for the nulls inside the object too.
            Value::Null => match &def.null_value {
                Some(nv) if !nv.is_null() => self.flattened_at(def, keyed, key, nv),
                _ => Ok(()),
            },
            other => {
                let s = scalar_string(other);
                if def
                    .ignore_above
                    .is_some_and(|limit| s.chars().count() > limit)
                {
                    self.ignored.push(&def.path);
                    return Ok(());
                }
                self.index_value(def, &Value::String(s.clone()))?;
                if let (Some(f), false) = (keyed, key.is_empty()) {
                    let term = format!("{key}\0{s}");
                    if def.index {
                        check_term_length(&def.path, term.as_bytes())?;
                    }
                    self.doc.add_text(f, term);
                }
                Ok(())
            }
        }
    }

    /// ES's "failed to parse field" error about `v`, located at it (`doc_location`).
    fn bad_value(&self, def: &FieldDef, v: &Value, detail: &str) -> EsError {
        let preview = scalar_string(v);
        let mut e = parse_error(format!(
            "failed to parse field [{}] of type [{}] in document with id '{}'. Preview of field's value: '{}'",
            def.path,
            def.ty.name(),
            self.id,
            preview
        ));
        if !detail.is_empty() {
            e = e.caused_by(EsError::illegal_argument(detail.to_string()));
        }
        fail_at(v, e)
    }

    fn index_value(&mut self, def: &'a FieldDef, v: &Value) -> EsResult<()> {
        let field = match self.p.schema.get_field(&def.path) {
            Ok(f) => f,
            Err(_) => {
                if def.storage() == Storage::None {
                    return Ok(());
                }
                return Err(EsError::internal(format!(
                    "field [{}] missing from schema",
                    def.path
                )));
            }
        };
        match def.storage() {
            Storage::Text => {
                let s = scalar_string(v);
                let found_by_norms = def.exists_from_norms(&s)
                    && self.p.schema.get_field_entry(field).has_fieldnorms();
                self.doc.add_text(field, s);
                if found_by_norms {
                    return Ok(());
                }
            }
            Storage::Keyword => {
                let s = scalar_string(v);
                if let Some(limit) = def.ignore_above {
                    if s.chars().count() > limit {
                        self.ignored.push(&def.path);
                        return Ok(());
                    }
                }
                if def.index {
                    check_term_length(&def.path, s.as_bytes())?;
                }
                self.doc.add_text(field, s);
            }
            Storage::I64 if def.ty == FieldType::DateNanos => {
                let nanos = self.date_nanos(def, v)?;
                self.doc.add_i64(field, nanos.div_euclid(1_000_000));
                if let Some(nf) = def
                    .nanos_path()
                    .and_then(|p| self.p.schema.get_field(&p).ok())
                {
                    self.doc.add_i64(nf, nanos);
                }
            }
            Storage::I64 => {
                let n = if def.ty.is_date() {
                    def.date_format.parse_json(v, &Tz::utc()).map_err(|e| {
                        self.bad_value(
                            def,
                            v,
                            &format!(
                                "failed to parse date field [{}] with format [{}]",
                                scalar_string(v),
                                def.date_format.spec()
                            ),
                        )
                        .caused_by(EsError::illegal_argument(e.reason))
                    })?
                } else {
                    parse_integer(def, v).map_err(|d| self.bad_value(def, v, &d))?
                };
                self.doc.add_i64(field, n);
            }
            Storage::F64 => {
                let x = parse_float(def, v).map_err(|d| self.bad_value(def, v, &d))?;
                self.doc.add_f64(field, x);
            }
            Storage::Bool => {
                let b = match v {
                    Value::Bool(b) => *b,
                    Value::String(s) if s == "true" => true,
                    Value::String(s) if s == "false" || s.is_empty() => false,
                    _ => {
                        return Err(self.bad_value(
                            def,
                            v,
                            &format!(
                                "Failed to parse value [{}] as only [true] or [false] are allowed.",
                                scalar_string(v)
                            ),
                        ))
                    }
                };
                self.doc.add_bool(field, b);
            }
            Storage::Ip => {
                let s = scalar_string(v);
                let ip: IpAddr = s.parse().map_err(|_| {
                    self.bad_value(def, v, &format!("'{s}' is not an IP string literal."))
                })?;
                self.doc.add_ip_addr(field, to_v6(ip));
            }
            Storage::None | Storage::Completion | Storage::Range | Storage::GeoPoint => {
                return Ok(())
            }
        }
        if !def.exists_from_column() {
            self.field_names.push(&def.path);
        }
        Ok(())
    }
}

/// The name of the JSON token a value starts with, as Jackson names it.
fn json_token(v: &Value) -> &'static str {
    match v {
        Value::Null => "VALUE_NULL",
        Value::Bool(_) => "VALUE_BOOLEAN",
        Value::Number(_) => "VALUE_NUMBER",
        Value::String(_) => "VALUE_STRING",
        Value::Array(_) => "START_ARRAY",
        Value::Object(_) => "START_OBJECT",
    }
}

/// The first `max` UTF-16 units of `s` (a surrogate pair is kept whole), as
/// `CompletionFieldMapper` truncates an input.
fn truncate_utf16(s: &str, max: usize) -> &str {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        if units >= max {
            return &s[..i];
        }
        units += c.len_utf16();
    }
    s
}

/// Lucene's `IndexWriter.MAX_TERM_LENGTH`: the longest term, in UTF-8 bytes.
pub const MAX_TERM_LENGTH: usize = 32766;

/// Refuses a term longer than Lucene accepts, with the error ES returns for it (Lucene's
/// message, caused by its `MaxBytesLengthExceededException`).
pub fn check_term_length(field: &str, term: &[u8]) -> EsResult<()> {
    if term.len() <= MAX_TERM_LENGTH {
        return Ok(());
    }
    // Java's `Arrays.toString(byte[])` of the first 30 bytes (signed).
    let prefix: Vec<String> = term[..30].iter().map(|b| (*b as i8).to_string()).collect();
    let original = format!(
        "bytes can be at most {MAX_TERM_LENGTH} in length; got {}",
        term.len()
    );
    Err(EsError::illegal_argument(format!(
        "Document contains at least one immense term in field=\"{field}\" (whose UTF8 encoding is longer than the max length {MAX_TERM_LENGTH}), all of which were skipped.  Please correct the analyzer to not produce such terms.  The prefix of the first immense term is: '[{}]...', original message: {original}",
        prefix.join(", ")
    ))
    .caused_by(EsError::bad_request(
        "max_bytes_length_exceeded_exception",
        original,
    )))
}

/// Java's `Float.toString`/`Double.toString` for the values ES puts in its messages
/// (`Infinity`, `70000.0`, `1.0E7`).
pub fn java_float_string(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let a = x.abs();
    if a == 0.0 || (1e-3..1e7).contains(&a) {
        return format!("{x:?}");
    }
    let e = format!("{x:e}");
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    if mantissa.contains('.') {
        format!("{mantissa}E{exp}")
    } else {
        format!("{mantissa}.0E{exp}")
    }
}

pub fn to_v6(ip: IpAddr) -> Ipv6Addr {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    }
}

fn is_metadata_field(k: &str) -> bool {
    matches!(
        k,
        "_id"
            | "_index"
            | "_source"
            | "_routing"
            | "_seq_no"
            | "_version"
            | "_primary_term"
            | "_field_names"
            | "_ignored"
            | "_doc_count"
            | "_tier"
            | "_data_stream_timestamp"
    )
}

/// The string form ES indexes for a scalar: strings as they are, numbers and booleans as text.
pub fn scalar_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "null".to_string(),
        other => other.to_string(),
    }
}

fn parse_integer(def: &FieldDef, v: &Value) -> Result<i64, String> {
    let (min, max): (i64, i64) = match def.ty {
        FieldType::Integer | FieldType::TokenCount => (i32::MIN as i64, i32::MAX as i64),
        FieldType::Short => (i16::MIN as i64, i16::MAX as i64),
        FieldType::Byte => (i8::MIN as i64, i8::MAX as i64),
        FieldType::UnsignedLong => (0, i64::MAX),
        _ => (i64::MIN, i64::MAX),
    };
    let out_of_range = |s: &str| {
        format!(
            "Value [{s}] is out of range for {}",
            match def.ty {
                FieldType::Integer | FieldType::TokenCount => "an integer",
                FieldType::Short => "a short",
                FieldType::Byte => "a byte",
                _ => "a long",
            }
        )
    };
    // 2^63 is the first value a long cannot hold; comparing as f64 is exact at that bound.
    let long_bound = 9_223_372_036_854_775_808f64;
    let n: i64 = match v {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i
            } else if n.is_u64() {
                return Err(out_of_range(&n.to_string()));
            } else if let Some(f) = n.as_f64() {
                // `AbstractXContentParser#ensureNumberConversion`.
                if !def.coerce && f.fract() != 0.0 {
                    return Err(format!(
                        "{} cannot be converted to {} without data loss",
                        java_float_string(f),
                        java_number_class(def.ty)
                    ));
                }
                // An integer literal below -2^63 reaches here as a double too (serde_json
                // keeps no arbitrary precision), rounded to -2^63 itself: refused.
                if f <= -long_bound || f < min as f64 || f > max as f64 || f >= long_bound {
                    return Err(out_of_range(&n.to_string()));
                }
                f.trunc() as i64
            } else {
                return Err(out_of_range(&n.to_string()));
            }
        }
        Value::String(s) if def.coerce => {
            let t = s.trim();
            if let Ok(i) = t.parse::<i64>() {
                i
            } else if t.parse::<i128>().is_ok() {
                return Err(out_of_range(t));
            } else if let Some(f) = t.parse::<f64>().ok().filter(|f| f.is_finite()) {
                if f < min as f64 || f > max as f64 || f >= long_bound {
                    return Err(out_of_range(t));
                }
                f.trunc() as i64
            } else {
                return Err(format!("For input string: \"{s}\""));
            }
        }
        // `AbstractXContentParser#checkCoerceString`.
        Value::String(_) => {
            return Err(format!(
                "{} value passed as String",
                java_number_class(def.ty)
            ))
        }
        Value::Bool(_) => return Err(format!("Current token ({}) not numeric", scalar_string(v))),
        _ => return Err("not a number".into()),
    };
    if n < min || n > max {
        return Err(out_of_range(&n.to_string()));
    }
    Ok(n)
}

/// The Java class ES's parser names in its coercion errors for a numeric type (`byte` and
/// `short` are read as ints).
fn java_number_class(ty: FieldType) -> &'static str {
    match ty {
        FieldType::Long | FieldType::UnsignedLong => "Long",
        FieldType::Float | FieldType::HalfFloat => "Float",
        FieldType::Double | FieldType::ScaledFloat => "Double",
        _ => "Integer",
    }
}

fn parse_float(def: &FieldDef, v: &Value) -> Result<f64, String> {
    let x = match v {
        Value::Number(n) => n.as_f64().ok_or("not a number")?,
        Value::String(s) if def.coerce => s
            .trim()
            .parse::<f64>()
            .map_err(|_| format!("For input string: \"{s}\""))?,
        Value::String(_) => {
            return Err(format!(
                "{} value passed as String",
                java_number_class(def.ty)
            ))
        }
        _ => return Err(format!("Current token ({}) not numeric", scalar_string(v))),
    };
    // ES parses a float field's value as a Java float (so 1e39 is Infinity) and checks that
    // it stays finite in the field's own precision (`NumberType#validateParsed`).
    let parsed = match def.ty {
        FieldType::Float | FieldType::HalfFloat => x as f32 as f64,
        _ => x,
    };
    let stored = match def.ty {
        FieldType::HalfFloat => half_round(parsed),
        FieldType::ScaledFloat => (x * def.scaling_factor).round() / def.scaling_factor,
        _ => parsed,
    };
    if !parsed.is_finite() || !stored.is_finite() {
        return Err(format!(
            "[{}] supports only finite values, but got [{}]",
            def.ty.name(),
            java_float_string(parsed)
        ));
    }
    Ok(stored)
}

/// Rounds to the nearest IEEE half-precision value (what a `half_float` field keeps).
fn half_round(x: f64) -> f64 {
    let f = x as f32;
    if f == 0.0 || !f.is_finite() {
        return f as f64;
    }
    // 65520 and above round to infinity in IEEE half precision (max finite 65504).
    if f.abs() >= 65520.0 {
        return if f > 0.0 {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        };
    }
    let exp = f.abs().log2().floor().clamp(-14.0, 15.0);
    let ulp = 2f32.powf(exp - 10.0);
    ((f / ulp).round() * ulp) as f64
}

/// The dynamic mapping of a new field at `path` first seen with `v`: an object with the
/// mappings of its children, an array as the merged mappings of its elements (the first
/// element to decide a leaf's type wins, as ES maps it from the first value). A matching
/// dynamic template decides first; a runtime one adds its field to `runtime` instead.
fn dynamic_def(
    mapping: &Mapping,
    path: &str,
    v: &Value,
    runtime: &mut Map<String, Value>,
) -> Option<Value> {
    match v {
        Value::Object(m) => {
            let mut def = template_object(mapping, path).unwrap_or_default();
            // A template may map the object as a leaf (`flattened`, ...): it takes the
            // whole value, so its children are not mapped.
            if let Some(ty) = def.get("type").and_then(Value::as_str) {
                if FieldType::parse(ty).is_some_and(FieldType::is_leaf) {
                    return Some(Value::Object(def));
                }
            }
            // An object template that sets its own `dynamic` (not `true`) decides for the
            // children: they are left to the document's next parse under the new mapping.
            if def
                .get("dynamic")
                .is_some_and(|d| Dynamic::parse(d) != Some(Dynamic::True))
            {
                def.entry("properties")
                    .or_insert_with(|| Value::Object(Map::new()));
                return Some(Value::Object(def));
            }
            let mut props = match def.remove("properties") {
                Some(Value::Object(p)) => p,
                _ => Map::new(),
            };
            for (k, child) in m {
                if let Some(d) = dynamic_def(mapping, &format!("{path}.{k}"), child, runtime) {
                    insert_path(None, &mut props, k, d);
                }
            }
            def.insert("properties".into(), Value::Object(props));
            Some(Value::Object(def))
        }
        Value::Array(items) => {
            let mut out: Option<Value> = None;
            for item in items {
                match (&mut out, dynamic_def(mapping, path, item, runtime)) {
                    (_, None) => {}
                    (None, Some(def)) => out = Some(def),
                    (Some(acc), Some(def)) => merge_dynamic(acc, def),
                }
            }
            out
        }
        other => match template_field(mapping, path, other) {
            Some(Templated::Mapped(def)) => Some(def),
            Some(Templated::Runtime(def)) => {
                runtime.entry(path.to_string()).or_insert(def);
                None
            }
            None => infer_dynamic(mapping, other),
        },
    }
}

/// Adds the children of a second dynamic object definition to the first (leaves keep the
/// first definition).
fn merge_dynamic(acc: &mut Value, def: Value) {
    let (Some(Value::Object(into)), Value::Object(mut from)) = (acc.get_mut("properties"), def)
    else {
        return;
    };
    let Some(Value::Object(from)) = from.remove("properties") else {
        return;
    };
    for (k, d) in from {
        match into.get_mut(&k) {
            None => {
                into.insert(k, d);
            }
            Some(existing) => merge_dynamic(existing, d),
        }
    }
}

/// Inserts a dynamic definition at a dotted path inside a `properties` map.
/// `dynamic: runtime`: the runtime fields (no script: read from `_source`) for a new value at
/// `path`, as ES's `DynamicFieldsBuilder.DYNAMIC_RUNTIME` types them; an object's leaves
/// become runtime fields of their dotted paths. A matching dynamic template decides first,
/// as ES's `DYNAMIC_RUNTIME` builder looks templates up too (a `mapping` one maps the field
/// in `props`).
fn runtime_defs(
    mapping: &Mapping,
    path: &str,
    v: &Value,
    out: &mut Map<String, Value>,
    props: &mut Map<String, Value>,
) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                runtime_defs(mapping, &format!("{path}.{k}"), child, out, props);
            }
        }
        Value::Array(items) => {
            for item in items {
                runtime_defs(mapping, path, item, out, props);
            }
        }
        leaf => {
            match template_field(mapping, path, leaf) {
                Some(Templated::Mapped(def)) => {
                    return insert_path(Some(mapping), props, path, def);
                }
                Some(Templated::Runtime(def)) => {
                    out.entry(path.to_string()).or_insert(def);
                    return;
                }
                None => {}
            }
            let mapped = mapping
                .json
                .get("runtime")
                .and_then(|r| r.get(path))
                .is_some();
            if mapped || out.contains_key(path) {
                return;
            }
            let ty = match infer_dynamic(mapping, leaf)
                .as_ref()
                .and_then(|d| d.get("type"))
            {
                Some(t) if t == "boolean" => "boolean",
                Some(t) if t == "long" => "long",
                Some(t) if t == "float" => "double",
                // a date of the default format; other detected formats stay keywords
                Some(t)
                    if t == "date"
                        && infer_dynamic(mapping, leaf)
                            .unwrap()
                            .get("format")
                            .is_none() =>
                {
                    "date"
                }
                Some(_) => "keyword",
                None => return,
            };
            out.insert(path.to_string(), serde_json::json!({"type": ty}));
        }
    }
}

fn insert_path(mapping: Option<&Mapping>, props: &mut Map<String, Value>, path: &str, def: Value) {
    let mut parts = path.split('.').peekable();
    let mut cur = props;
    let mut prefix = String::new();
    while let Some(part) = parts.next() {
        if !prefix.is_empty() {
            prefix.push('.');
        }
        prefix.push_str(part);
        if parts.peek().is_none() {
            match cur.get_mut(part) {
                None => {
                    cur.insert(part.to_string(), def);
                }
                Some(existing) => merge_dynamic(existing, def),
            }
            return;
        }
        // An enclosing `nested` object keeps its type (an update without one means `object`).
        let entry = cur.entry(part.to_string()).or_insert_with(|| {
            match mapping
                .and_then(|m| m.objects.get(prefix.as_str()))
                .filter(|o| o.nested)
            {
                Some(_) => serde_json::json!({"type": "nested", "properties": {}}),
                None => serde_json::json!({"properties": {}}),
            }
        });
        if entry.get("properties").is_none() {
            entry
                .as_object_mut()
                .unwrap()
                .insert("properties".into(), Value::Object(Map::new()));
        }
        cur = entry
            .get_mut("properties")
            .unwrap()
            .as_object_mut()
            .unwrap();
    }
}

/// The depth of a `flattened` value's objects (an object of leaves is 1), as ES's
/// `FlattenedFieldParser` counts it against `depth_limit`.
fn object_depth(v: &Value) -> usize {
    match v {
        Value::Object(m) => 1 + m.values().map(object_depth).max().unwrap_or(0),
        Value::Array(a) => a.iter().map(object_depth).max().unwrap_or(0),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::compile;
    use serde_json::json;

    /// A parser with the default nested-objects limit.
    fn test_parser<'a>(
        mapping: &'a Mapping,
        schema: &'a Schema,
        meta: MetaFields,
    ) -> DocParser<'a> {
        DocParser {
            mapping,
            schema,
            meta,
            nested_objects_limit: DEFAULT_NESTED_OBJECTS_LIMIT,
        }
    }

    fn field(ty: &str) -> FieldDef {
        let reg = lode_analysis::AnalysisRegistry::new(None).unwrap();
        let m = compile(&json!({"properties": {"f": {"type": ty}}}), &reg).unwrap();
        (*m.fields["f"]).clone()
    }

    #[test]
    fn constant_keyword_values_set_the_mapping_must_match_it_and_fill_every_document() {
        let reg = lode_analysis::AnalysisRegistry::new(None).unwrap();
        let parse = |mapping: &Value, src: Value| {
            let mapping = compile(mapping, &reg).unwrap();
            let schema = crate::schema::extend(None, &mapping);
            let parser = DocParser {
                mapping: &mapping,
                schema: &schema,
                meta: MetaFields::of(&schema),
                nested_objects_limit: DEFAULT_NESTED_OBJECTS_LIMIT,
            };
            let field = schema.get_field("c").unwrap();
            parser.parse("1", &src).map(|p| match p {
                Parsed::MappingUpdate(u) => Err(u),
                Parsed::Doc(d) => Ok(d
                    .root
                    .get_all(field)
                    .filter_map(|v| tantivy::schema::Value::as_str(&v).map(str::to_string))
                    .collect::<Vec<_>>()),
            })
        };
        let unset = json!({"properties": {"c": {"type": "constant_keyword"}}});
        assert_eq!(
            parse(&unset, json!({"c": 7})).unwrap(),
            Err(json!({"properties": {"c": {"type": "constant_keyword", "value": "7"}}}))
        );
        assert_eq!(parse(&unset, json!({})).unwrap(), Ok(vec![]));
        let set = json!({"properties": {"c": {"type": "constant_keyword", "value": "a"}}});
        assert_eq!(parse(&set, json!({})).unwrap(), Ok(vec!["a".to_string()]));
        assert_eq!(
            parse(&set, json!({"c": ["a", "a"]})).unwrap(),
            Ok(vec!["a".to_string()])
        );
        let e = parse(&set, json!({"c": "b"})).unwrap_err();
        assert_eq!(e.kind, "document_parsing_exception");
        assert_eq!(
            e.reason,
            "failed to parse field [c] of type [constant_keyword] in document with id '1'. Preview of field's value: 'b'"
        );
        let e = parse(&set, json!({"c": null})).unwrap_err();
        assert_eq!(
            e.caused_by.unwrap().reason,
            "[constant_keyword] field [c] doesn't accept [null] values"
        );
    }

    #[test]
    fn malformed_values_are_skipped_and_listed_in_ignored() {
        let reg = lode_analysis::AnalysisRegistry::new(None).unwrap();
        let mapping = crate::mapping::compile_with(
            &json!({"properties": {
                "i": {"type": "integer"},
                "d": {"type": "date"},
                "k": {"type": "keyword", "ignore_above": 2},
                "strict": {"type": "long", "ignore_malformed": false}
            }}),
            &reg,
            crate::mapping::FieldDefaults {
                coerce: true,
                ignore_malformed: true,
            },
        )
        .unwrap();
        let schema = crate::schema::extend(None, &mapping);
        let meta = MetaFields::of(&schema);
        let parser = test_parser(&mapping, &schema, meta);
        let src = json!({"i": ["x", 3, {"a": 1}], "d": "nope", "k": ["ab", "abc"], "strict": ""});
        let Parsed::Doc(parsed) = parser.parse("1", &src).unwrap() else {
            panic!("mapping update")
        };
        let doc = &parsed.root;
        let ignored: Vec<String> = doc
            .get_all(meta.ignored.unwrap())
            .filter_map(|v| tantivy::schema::Value::as_str(&v).map(str::to_string))
            .collect();
        assert_eq!(ignored, vec!["d", "i", "k"]);
        let ints: Vec<i64> = doc
            .get_all(schema.get_field("i").unwrap())
            .filter_map(|v| tantivy::schema::Value::as_i64(&v))
            .collect();
        assert_eq!(ints, vec![3]);
        assert!(parser.parse("2", &json!({"strict": "x"})).is_err());
    }

    #[test]
    fn field_names_lists_only_what_columns_and_norms_cannot_answer() {
        let reg = lode_analysis::AnalysisRegistry::new(None).unwrap();
        let mapping = compile(
            &json!({"properties": {
                "t": {"type": "text"},
                "empty": {"type": "text"},
                "punct": {"type": "text"},
                "cjk": {"type": "text"},
                "accent": {"type": "text"},
                "stopped": {"type": "text", "analyzer": "stop"},
                "k": {"type": "keyword"},
                "kn": {"type": "keyword", "doc_values": false},
                "n": {"type": "long"},
                "b": {"type": "binary"}
            }}),
            &reg,
        )
        .unwrap();
        let schema = crate::schema::extend(None, &mapping);
        let meta = MetaFields::of(&schema);
        let parser = test_parser(&mapping, &schema, meta);
        let src = json!({"t": "fox", "empty": "", "punct": "!?", "cjk": "客户转账", "accent": "é",
                         "stopped": "fox", "k": "", "kn": "x", "n": 1, "b": "AA=="});
        let Parsed::Doc(parsed) = parser.parse("1", &src).unwrap() else {
            panic!("mapping update")
        };
        let mut listed: Vec<String> = parsed
            .root
            .get_all(meta.field_names)
            .filter_map(|v| tantivy::schema::Value::as_str(&v).map(str::to_string))
            .collect();
        listed.sort();
        // "é" yields a token too, but only ASCII letters, digits and ideographs are sure to.
        assert_eq!(
            listed,
            vec!["accent", "b", "empty", "kn", "punct", "stopped"]
        );
    }

    #[test]
    fn coerce_off_refuses_strings_and_decimal_parts() {
        let reg = lode_analysis::AnalysisRegistry::new(None).unwrap();
        let m = compile(
            &json!({"properties": {
                "i": {"type": "integer", "coerce": false},
                "f": {"type": "float", "coerce": false},
                "c": {"type": "short"}
            }}),
            &reg,
        )
        .unwrap();
        assert_eq!(
            parse_integer(&m.fields["i"], &json!("5")).unwrap_err(),
            "Integer value passed as String"
        );
        assert_eq!(
            parse_integer(&m.fields["i"], &json!(1.5)).unwrap_err(),
            "1.5 cannot be converted to Integer without data loss"
        );
        assert_eq!(parse_integer(&m.fields["i"], &json!(2.0)), Ok(2));
        assert_eq!(
            parse_float(&m.fields["f"], &json!("1.5")).unwrap_err(),
            "Float value passed as String"
        );
        // With coerce (the default) strings parse and decimals are truncated.
        assert_eq!(parse_integer(&m.fields["c"], &json!("7.9")), Ok(7));
        assert_eq!(parse_integer(&m.fields["c"], &json!(-7.9)), Ok(-7));
    }

    #[test]
    fn token_count_indexes_position_counts() {
        let reg = lode_analysis::AnalysisRegistry::new(None).unwrap();
        let mapping = compile(
            &json!({"properties": {
                "t": {"type": "token_count", "analyzer": "standard", "null_value": 9},
                "s": {"type": "token_count", "analyzer": "stop"},
                "n": {"type": "token_count", "analyzer": "stop", "enable_position_increments": false}
            }}),
            &reg,
        )
        .unwrap();
        let schema = crate::schema::extend(None, &mapping);
        let parser = DocParser {
            mapping: &mapping,
            schema: &schema,
            meta: MetaFields::of(&schema),
            nested_objects_limit: DEFAULT_NESTED_OBJECTS_LIMIT,
        };
        let src = json!({"t": ["one two three", null, 42], "s": "the fox and the dog", "n": "the fox and the dog"});
        let Parsed::Doc(parsed) = parser.parse("1", &src).unwrap() else {
            panic!("mapping update")
        };
        let doc = &parsed.root;
        let ints = |name: &str| -> Vec<i64> {
            let f = schema.get_field(name).unwrap();
            doc.get_all(f)
                .filter_map(|v| tantivy::schema::Value::as_i64(&v))
                .collect()
        };
        assert_eq!(ints("t"), vec![3, 9, 1]);
        // Stop words removed: 5 positions with increments (fox at 1, dog at 4), 2 without.
        assert_eq!(ints("s"), vec![5]);
        assert_eq!(ints("n"), vec![2]);
        let no_analyzer = compile(&json!({"properties": {"t": {"type": "token_count"}}}), &reg);
        assert!(no_analyzer.is_err());
    }

    #[test]
    fn a_dotted_name_under_a_leaf_is_refused_as_es_refuses_it() {
        let reg = lode_analysis::AnalysisRegistry::new(None).unwrap();
        let mapping = compile(
            &json!({"dynamic": "false", "properties": {
                "n": {"type": "long"},
                "o": {"properties": {"x": {"type": "integer"}}},
                "f": {"type": "flattened"}
            }}),
            &reg,
        )
        .unwrap();
        let schema = crate::schema::extend(None, &mapping);
        let parser = DocParser {
            mapping: &mapping,
            schema: &schema,
            meta: MetaFields::of(&schema),
            nested_objects_limit: DEFAULT_NESTED_OBJECTS_LIMIT,
        };
        for (src, path, leaf, ty) in [
            (json!({"n.x": 1}), "n.x", "n", "long"),
            (json!({"o.x.y": 1}), "o.x.y", "o.x", "integer"),
            (json!({"o": {"x.y": {"z": 1}}}), "o.x.y", "o.x", "integer"),
        ] {
            let e = parser.parse("1", &src).err().expect("refused");
            assert_eq!(
                (e.status, e.kind.as_str()),
                (400, "document_parsing_exception")
            );
            assert_eq!(
                e.reason,
                format!("Could not dynamically add mapping for field [{path}]. Existing mapping for [{leaf}] must be of type object but found [{ty}].")
            );
        }
        // unmapped dotted names under objects, and a flattened field's keys, are fine
        assert!(parser.parse("2", &json!({"o.y": 1, "q.r": 2})).is_ok());
        assert!(parser.parse("3", &json!({"f": {"a.b": "c"}})).is_ok());
    }

    #[test]
    fn completion_values_become_key_weight_input_terms() {
        let reg = lode_analysis::AnalysisRegistry::new(None).unwrap();
        let mapping = compile(
            &json!({"properties": {"s": {"type": "completion", "max_input_length": 8}}}),
            &reg,
        )
        .unwrap();
        let schema = crate::schema::extend(None, &mapping);
        let parser = DocParser {
            mapping: &mapping,
            schema: &schema,
            meta: MetaFields::of(&schema),
            nested_objects_limit: DEFAULT_NESTED_OBJECTS_LIMIT,
        };
        let src = json!({"s": [
            "Nirvana Live",
            {"input": ["Nirvana Live", "Nevermind"], "weight": 7},
            {"input": "  ", "weight": 3}
        ]});
        let Parsed::Doc(doc) = parser.parse("1", &src).unwrap() else {
            panic!("a document")
        };
        let field = schema.get_field("s").unwrap();
        let mut terms: Vec<String> = doc
            .root
            .get_all(field)
            .filter_map(|v| tantivy::schema::Value::as_str(&v).map(str::to_string))
            .collect();
        terms.sort();
        // Cut to 8 UTF-16 units, analyzed by `simple`, the highest weight kept.
        assert_eq!(
            terms,
            vec![
                "nevermin\u{0}0000000007Nevermin".to_string(),
                "nirvana\u{0}0000000007Nirvana ".to_string(),
            ]
        );
        let (key, weight, input) =
            crate::mapping::CompletionOptions::split_term(terms[1].as_bytes()).unwrap();
        assert_eq!((key, weight, input), (&b"nirvana"[..], 7, "Nirvana "));
        let Parsed::Doc(doc) = parser.parse("3", &json!({"s": ["Ab Cd"]})).unwrap() else {
            panic!("a document")
        };
        let t = doc.root.get_first(field).unwrap();
        let t = tantivy::schema::Value::as_str(&t).unwrap().to_string();
        assert_eq!(t, "ab\u{1f}cd\u{0}0000000001Ab Cd");
        let bad = parser.parse("2", &json!({"s": {"input": "a", "weight": -1}}));
        let e = bad.err().unwrap();
        assert_eq!(e.kind, "document_parsing_exception");
        assert_eq!(
            e.caused_by.unwrap().reason,
            "weight must be in the interval [0..2147483647], but was [-1]"
        );
        assert_eq!(truncate_utf16("a😀b", 2), "a😀");
    }

    #[test]
    fn immense_terms_are_refused_with_lucenes_message() {
        assert!(check_term_length("f", &[b'a'; MAX_TERM_LENGTH]).is_ok());
        let mut term = "é".as_bytes().to_vec();
        term.extend(std::iter::repeat_n(b'a', MAX_TERM_LENGTH));
        let e = check_term_length("f", &term).unwrap_err();
        assert_eq!(e.kind, "illegal_argument_exception");
        let prefix = "-61, -87, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97";
        assert_eq!(
            e.reason,
            format!("Document contains at least one immense term in field=\"f\" (whose UTF8 encoding is longer than the max length 32766), all of which were skipped.  Please correct the analyzer to not produce such terms.  The prefix of the first immense term is: '[{prefix}]...', original message: bytes can be at most 32766 in length; got 32768")
        );
        let cause = e.caused_by.unwrap();
        assert_eq!(cause.kind, "max_bytes_length_exceeded_exception");
        assert_eq!(
            cause.reason,
            "bytes can be at most 32766 in length; got 32768"
        );
    }

    #[test]
    fn integer_ranges_per_type() {
        let long = field("long");
        assert_eq!(
            parse_integer(&long, &json!(9223372036854775807u64)),
            Ok(i64::MAX)
        );
        for v in [
            json!(9223372036854775808u64),
            json!("9223372036854775808"),
            json!("9223372036854775808.0"),
            json!(9.3e18),
            serde_json::from_str("-9223372036854775809").unwrap(),
        ] {
            let e = parse_integer(&long, &v).unwrap_err();
            assert!(e.ends_with("is out of range for a long"), "{v}: {e}");
        }
        assert_eq!(
            parse_integer(&long, &json!("9223372036854775808")).unwrap_err(),
            "Value [9223372036854775808] is out of range for a long"
        );
        assert_eq!(
            parse_integer(&long, &json!("-9223372036854775808")),
            Ok(i64::MIN)
        );
        let int = field("integer");
        assert_eq!(parse_integer(&int, &json!(2147483647)), Ok(2147483647));
        assert_eq!(
            parse_integer(&int, &json!(2147483648u64)).unwrap_err(),
            "Value [2147483648] is out of range for an integer"
        );
        assert_eq!(
            parse_integer(&field("short"), &json!("32768")).unwrap_err(),
            "Value [32768] is out of range for a short"
        );
        assert_eq!(parse_integer(&field("byte"), &json!(-128)), Ok(-128));
        assert_eq!(
            parse_integer(&field("byte"), &json!(-129)).unwrap_err(),
            "Value [-129] is out of range for a byte"
        );
    }

    #[test]
    fn floats_must_stay_finite_in_their_precision() {
        assert_eq!(
            parse_float(&field("float"), &json!(1e39)).unwrap_err(),
            "[float] supports only finite values, but got [Infinity]"
        );
        assert_eq!(
            parse_float(&field("half_float"), &json!(70000)).unwrap_err(),
            "[half_float] supports only finite values, but got [70000.0]"
        );
        assert_eq!(
            parse_float(&field("half_float"), &json!(65504)),
            Ok(65504.0)
        );
        assert_eq!(
            parse_float(&field("double"), &json!("1e400")).unwrap_err(),
            "[double] supports only finite values, but got [Infinity]"
        );
        assert_eq!(java_float_string(1e7), "1.0E7");
        assert_eq!(java_float_string(1.5e-5), "1.5E-5");
    }

    /// Nested objects become documents in post-order (an object's nested children first),
    /// marked with the child term, their path and their root's id; their fields stay off
    /// the root unless `include_in_parent`/`include_in_root` copy them.
    #[test]
    fn nested_objects_become_marked_documents_in_post_order() {
        let reg = lode_analysis::AnalysisRegistry::new(None).unwrap();
        let mapping = crate::mapping::compile(
            &json!({"properties": {
                "top": {"type": "keyword"},
                "a": {"type": "nested", "properties": {
                    "x": {"type": "keyword"},
                    "b": {"type": "nested", "include_in_root": true,
                          "properties": {"y": {"type": "keyword"}}}}},
                "c": {"type": "nested", "include_in_parent": true,
                      "properties": {"z": {"type": "keyword"}}}
            }}),
            &reg,
        )
        .unwrap();
        let schema = crate::schema::extend(None, &mapping);
        let meta = MetaFields::of(&schema);
        let nested = meta
            .nested
            .expect("a nested mapping adds the _nested field");
        let parser = DocParser {
            mapping: &mapping,
            schema: &schema,
            meta,
            nested_objects_limit: 5,
        };
        let src = json!({"top": "t", "a": [{"x": "x0", "b": [{"y": "y0"}, {"y": "y1"}]}, {"x": "x1"}],
                         "c": {"z": "z0"}});
        let Parsed::Doc(doc) = parser.parse("7", &src).unwrap() else {
            panic!("a document")
        };
        let strs = |d: &TantivyDocument, f: &str| -> Vec<String> {
            let field = schema.get_field(f).unwrap();
            d.get_all(field)
                .filter_map(|v| tantivy::schema::Value::as_str(&v).map(str::to_string))
                .collect()
        };
        let marks: Vec<Vec<String>> = doc
            .nested
            .iter()
            .map(|d| {
                d.get_all(nested)
                    .filter_map(|v| tantivy::schema::Value::as_str(&v).map(str::to_string))
                    .collect()
            })
            .collect();
        let mark = |p: &str| {
            vec![
                crate::schema::NESTED_CHILD.to_string(),
                p.to_string(),
                crate::schema::nested_parent_term("7"),
            ]
        };
        assert_eq!(
            marks,
            vec![mark("a.b"), mark("a.b"), mark("a"), mark("a"), mark("c")]
        );
        assert_eq!(strs(&doc.nested[0], "a.b.y"), vec!["y0"]);
        assert_eq!(strs(&doc.nested[2], "a.x"), vec!["x0"]);
        assert!(strs(&doc.nested[2], "a.b.y").is_empty());
        assert_eq!(strs(&doc.root, "top"), vec!["t"]);
        assert!(strs(&doc.root, "a.x").is_empty());
        assert_eq!(strs(&doc.root, "a.b.y"), vec!["y0", "y1"]);
        assert_eq!(strs(&doc.root, "c.z"), vec!["z0"]);
        assert!(doc.root.get_first(nested).is_none());
        let over =
            json!({"a": [{"x": "1"}, {"x": "2"}, {"x": "3"}, {"x": "4"}, {"x": "5"}, {"x": "6"}]});
        let err = parser.parse("8", &over).err().expect("over the limit");
        assert_eq!(err.kind, "document_parsing_exception");
        assert!(
            err.reason.contains("allowed limit of [5]"),
            "{}",
            err.reason
        );
    }

    /// Keyword and ip doc values are Lucene's `SORTED_SET` per document (sorted, each value
    /// once, after the normalizer; `copy_to` targets, multi-fields and values copied into the
    /// root by `include_in_root` too), numbers `SORTED_NUMERIC` (duplicates kept). The
    /// tantivy document keeps every value: the inverted index is fed as before.
    #[test]
    fn keyword_and_ip_columns_are_sets_numbers_keep_duplicates() {
        let reg = lode_analysis::AnalysisRegistry::new(None).unwrap();
        let mapping = crate::mapping::compile(
            &json!({"properties": {
                "tag": {"type": "keyword", "copy_to": "all"},
                "other": {"type": "keyword", "copy_to": "all"},
                "all": {"type": "keyword"},
                "lc": {"type": "keyword", "normalizer": "lowercase"},
                "title": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
                "ip": {"type": "ip"},
                "n": {"type": "long"},
                "items": {"type": "nested", "include_in_root": true,
                          "properties": {"k": {"type": "keyword"}}}
            }}),
            &reg,
        )
        .unwrap();
        let schema = crate::schema::extend(None, &mapping);
        let meta = MetaFields::of(&schema);
        let parser = test_parser(&mapping, &schema, meta);
        let src = json!({
            "tag": ["red", "blue", "red"], "other": ["red", "green"],
            "lc": ["Red", "RED", "red"], "title": ["a b", "a b"],
            "ip": ["10.0.0.1", "::ffff:10.0.0.1", "::1"], "n": [5, 5, 1],
            "items": [{"k": ["x", "x"]}, {"k": "x"}]
        });
        let Parsed::Doc(doc) = parser.parse("1", &src).unwrap() else {
            panic!("a document")
        };
        let tag = schema.get_field("tag").unwrap();
        assert_eq!(
            doc.root.get_all(tag).count(),
            3,
            "the document keeps every value"
        );
        let index = crate::source_store::create_in_ram(schema.clone()).unwrap();
        crate::index::register_tokenizers(&reg, &mapping, &index);
        let mut writer: tantivy::IndexWriter =
            index.writer_with_num_threads(1, 15_000_000).unwrap();
        let nested_docs = doc.nested.len();
        let block = doc.nested.into_iter().chain(std::iter::once(doc.root));
        writer
            .run(
                block
                    .map(tantivy::indexer::UserOperation::Add)
                    .collect::<Vec<_>>(),
            )
            .unwrap();
        writer.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let seg = searcher.segment_reader(0);
        let ff = seg.fast_fields();
        let root = nested_docs as u32;
        let strs = |f: &str, doc: u32| -> Vec<String> {
            let col = ff.str(f).unwrap().unwrap();
            col.term_ords(doc)
                .map(|o| {
                    let mut s = String::new();
                    col.ord_to_str(o, &mut s).unwrap();
                    s
                })
                .collect()
        };
        assert_eq!(strs("tag", root), ["blue", "red"]);
        assert_eq!(strs("all", root), ["blue", "green", "red"]);
        assert_eq!(strs("lc", root), ["red"]);
        assert_eq!(strs("title.raw", root), ["a b"]);
        assert_eq!(strs("items.k", 0), ["x"]);
        assert_eq!(strs("items.k", root), ["x"]);
        let ips: Vec<Ipv6Addr> = ff
            .column_opt::<Ipv6Addr>("ip")
            .unwrap()
            .unwrap()
            .values_for_doc(root)
            .collect();
        assert_eq!(
            ips,
            [Ipv6Addr::LOCALHOST, to_v6("10.0.0.1".parse().unwrap())]
        );
        let mut n: Vec<i64> = ff
            .column_opt::<i64>("n")
            .unwrap()
            .unwrap()
            .values_for_doc(root)
            .collect();
        n.sort_unstable();
        assert_eq!(n, [1, 5, 5]);
        let red = tantivy::Term::from_field_text(tag, "red");
        assert_eq!(searcher.doc_freq(&red).unwrap(), 1);
    }
}
