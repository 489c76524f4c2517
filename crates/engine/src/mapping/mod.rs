//! Mappings: the Elasticsearch JSON is the source of truth (so `GET _mapping` shows what the
//! user gave), compiled into a lookup of leaf fields (multi-fields included) by dotted path.
//!
//! Every leaf field becomes one tantivy field named by its path. tantivy's schema is fixed per
//! index, so a mapping update appends fields to the schema (see `crate::schema`): field ids of
//! existing fields never move, and older segments simply have no data for newer fields.

mod configured;
mod dynamic;
mod index_options;
mod limits;
mod meta;
mod parse;
mod stored;
mod templates;

pub use dynamic::{infer_dynamic, template_field, template_object, Templated};
pub use index_options::{schema_has_positions, IndexOptions};
pub use limits::{check_dynamic_update, check_limits, MappingLimits};
pub use meta::check_meta;
pub use parse::{compile, compile_with, merge};
pub use stored::{compile_stored, drop_unknown, Dropped};
pub use templates::{DetectedType, DynamicTemplate};

use lode_dates::DateFormat;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    Text,
    /// ES's `match_only_text`: analyzed text indexed without frequencies, positions or norms;
    /// every query on it scores constantly (see docs/compatibility.md).
    MatchOnlyText,
    Keyword,
    /// ES's `wildcard`: a keyword column and terms, queried with constant scores.
    Wildcard,
    /// ES's `constant_keyword`: one value for the whole index ([`FieldDef::value`]).
    ConstantKeyword,
    Long,
    Integer,
    Short,
    Byte,
    UnsignedLong,
    Double,
    Float,
    HalfFloat,
    ScaledFloat,
    Boolean,
    Date,
    DateNanos,
    Ip,
    Binary,
    Object,
    Nested,
    Flattened,
    /// ES's `completion` field: analyzed inputs with weights, for the completion suggester.
    Completion,
    /// ES's `token_count`: the number of positions of the analyzed value, indexed as an
    /// integer (see [`TokenCountOptions`]).
    TokenCount,
    /// `integer_range`, `long_range`, `float_range`, `double_range`, `date_range`, `ip_range`
    /// (see `crate::range_field`).
    Range(crate::range_field::RangeKind),
    /// ES's `search_as_you_type`: analyzed text with shingle and prefix subfields (see
    /// [`SaytField`]).
    SearchAsYouType,
    /// ES's `geo_point`: one packed `u64` column value per point (`crate::geo`).
    GeoPoint,
    /// Types Lode accepts and keeps in `_source` (and for `exists`) but does not index yet.
    SourceOnly(&'static str),
}

/// Elasticsearch types that are accepted as `SourceOnly` (see docs/compatibility.md).
const SOURCE_ONLY_TYPES: &[&str] = &[
    "geo_shape",
    "point",
    "shape",
    "percolator",
    "rank_feature",
    "rank_features",
    "dense_vector",
    "sparse_vector",
    "histogram",
    "alias",
    "version",
    "murmur3",
];

impl FieldType {
    pub fn parse(s: &str) -> Option<FieldType> {
        Some(match s {
            "text" => FieldType::Text,
            "match_only_text" => FieldType::MatchOnlyText,
            "keyword" => FieldType::Keyword,
            "wildcard" => FieldType::Wildcard,
            "constant_keyword" => FieldType::ConstantKeyword,
            "long" => FieldType::Long,
            "integer" => FieldType::Integer,
            "short" => FieldType::Short,
            "byte" => FieldType::Byte,
            "unsigned_long" => FieldType::UnsignedLong,
            "double" => FieldType::Double,
            "float" => FieldType::Float,
            "half_float" => FieldType::HalfFloat,
            "scaled_float" => FieldType::ScaledFloat,
            "boolean" => FieldType::Boolean,
            "date" => FieldType::Date,
            "date_nanos" => FieldType::DateNanos,
            "ip" => FieldType::Ip,
            "binary" => FieldType::Binary,
            "object" => FieldType::Object,
            "nested" => FieldType::Nested,
            "flattened" => FieldType::Flattened,
            "completion" => FieldType::Completion,
            "token_count" => FieldType::TokenCount,
            "search_as_you_type" => FieldType::SearchAsYouType,
            "geo_point" => FieldType::GeoPoint,
            other if crate::range_field::RangeKind::parse(other).is_some() => {
                FieldType::Range(crate::range_field::RangeKind::parse(other)?)
            }
            other => FieldType::SourceOnly(SOURCE_ONLY_TYPES.iter().find(|t| **t == other)?),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            FieldType::Text => "text",
            FieldType::MatchOnlyText => "match_only_text",
            FieldType::Keyword => "keyword",
            FieldType::Wildcard => "wildcard",
            FieldType::ConstantKeyword => "constant_keyword",
            FieldType::Long => "long",
            FieldType::Integer => "integer",
            FieldType::Short => "short",
            FieldType::Byte => "byte",
            FieldType::UnsignedLong => "unsigned_long",
            FieldType::Double => "double",
            FieldType::Float => "float",
            FieldType::HalfFloat => "half_float",
            FieldType::ScaledFloat => "scaled_float",
            FieldType::Boolean => "boolean",
            FieldType::Date => "date",
            FieldType::DateNanos => "date_nanos",
            FieldType::Ip => "ip",
            FieldType::Binary => "binary",
            FieldType::Object => "object",
            FieldType::Nested => "nested",
            FieldType::Flattened => "flattened",
            FieldType::Completion => "completion",
            FieldType::TokenCount => "token_count",
            FieldType::SearchAsYouType => "search_as_you_type",
            FieldType::Range(kind) => kind.type_name(),
            FieldType::GeoPoint => "geo_point",
            FieldType::SourceOnly(name) => name,
        }
    }

    pub fn is_integer(self) -> bool {
        matches!(
            self,
            FieldType::Long
                | FieldType::Integer
                | FieldType::Short
                | FieldType::Byte
                | FieldType::UnsignedLong
                | FieldType::TokenCount
        )
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            FieldType::Double | FieldType::Float | FieldType::HalfFloat | FieldType::ScaledFloat
        )
    }

    pub fn is_numeric(self) -> bool {
        self.is_integer() || self.is_float()
    }

    /// Whether every query on the field scores a constant (its boost), as ES's
    /// `match_only_text` and `wildcard` wrap their queries in `ConstantScoreQuery` and
    /// `constant_keyword` answers with match-all or match-none.
    pub fn constant_score(self) -> bool {
        matches!(
            self,
            FieldType::MatchOnlyText | FieldType::Wildcard | FieldType::ConstantKeyword
        )
    }

    pub fn is_date(self) -> bool {
        matches!(self, FieldType::Date | FieldType::DateNanos)
    }

    /// Whether this type holds values itself (rather than child fields).
    pub fn is_leaf(self) -> bool {
        !matches!(self, FieldType::Object | FieldType::Nested)
    }

    /// How the value is kept in tantivy.
    pub fn storage(self) -> Storage {
        match self {
            FieldType::Text | FieldType::MatchOnlyText | FieldType::SearchAsYouType => {
                Storage::Text
            }
            FieldType::Keyword
            | FieldType::Wildcard
            | FieldType::ConstantKeyword
            | FieldType::Flattened => Storage::Keyword,
            t if t.is_integer() => Storage::I64,
            t if t.is_float() => Storage::F64,
            t if t.is_date() => Storage::I64,
            FieldType::Boolean => Storage::Bool,
            FieldType::Ip => Storage::Ip,
            FieldType::Completion => Storage::Completion,
            FieldType::Range(_) => Storage::Range,
            FieldType::GeoPoint => Storage::GeoPoint,
            _ => Storage::None,
        }
    }
}

/// The tantivy representation of a leaf field's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// Analyzed text with positions (BM25).
    Text,
    /// Untokenized string, a fast string column for sorts and aggregations.
    Keyword,
    /// Integers and dates (epoch milliseconds).
    I64,
    F64,
    Bool,
    Ip,
    /// Completion keys: one untokenized term per input (see [`CompletionOptions`]).
    Completion,
    /// Ranges: a bytes column of encoded bounds (`crate::range_field`).
    Range,
    /// Geo points: a multi-valued `u64` column of packed quantized points (`crate::geo`).
    GeoPoint,
    /// Kept in `_source` only (binary, disabled objects).
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dynamic {
    True,
    False,
    Strict,
    Runtime,
}

impl Dynamic {
    pub fn parse(v: &Value) -> Option<Dynamic> {
        match v {
            Value::Bool(true) => Some(Dynamic::True),
            Value::Bool(false) => Some(Dynamic::False),
            Value::String(s) => match s.as_str() {
                "true" => Some(Dynamic::True),
                "false" => Some(Dynamic::False),
                "strict" => Some(Dynamic::Strict),
                "runtime" => Some(Dynamic::Runtime),
                _ => None,
            },
            _ => None,
        }
    }
}

/// One leaf field (a multi-field is a leaf of its own, e.g. `userName.analyzed`).
#[derive(Debug, Clone)]
pub struct FieldDef {
    pub path: String,
    pub ty: FieldType,
    pub index: bool,
    /// What the postings record (`index_options`, or the type's default).
    pub index_options: IndexOptions,
    pub doc_values: bool,
    pub store: bool,
    pub analyzer: String,
    pub search_analyzer: String,
    pub search_quote_analyzer: String,
    pub normalizer: Option<String>,
    pub ignore_above: Option<usize>,
    pub null_value: Option<Value>,
    pub date_format: DateFormat,
    pub scaling_factor: f64,
    pub coerce: bool,
    pub ignore_malformed: bool,
    /// A `geo_point`'s `ignore_z_value` (default true).
    pub ignore_z_value: bool,
    /// Paths of this field's multi-fields.
    pub multi_fields: Vec<String>,
    /// Set when this is a multi-field: the path of the field whose value it indexes.
    pub parent: Option<String>,
    pub copy_to: Vec<String>,
    /// A `completion` field's options.
    pub completion: Option<CompletionOptions>,
    /// A `token_count` field's options.
    pub token_count: Option<TokenCountOptions>,
    /// A `search_as_you_type` field or one of its subfields.
    pub sayt: Option<SaytField>,
    /// A `text` field whose index analyzer yields a token for every value holding a word
    /// character (`lode_analysis::Analyzer::keeps_every_word`): such values are found by
    /// `exists` through their norms and are not listed in `_field_names`.
    pub keeps_every_word: bool,
    /// A `constant_keyword`'s `value`: set in the mapping, or by the first document that
    /// sends one (a mapping update); `None` until then.
    pub value: Option<String>,
}

/// ES's default `max_shingle_size` of a `search_as_you_type` field.
pub const SAYT_DEFAULT_MAX_SHINGLE_SIZE: usize = 3;

/// The suffix of a `search_as_you_type` field's prefix subfield.
pub const SAYT_INDEX_PREFIX: &str = "._index_prefix";

/// A `search_as_you_type` field (ES's `SearchAsYouTypeFieldMapper`): the root field indexes
/// the value with the field's analyzer; `._2gram` .. `._{max}gram` index shingles of exactly
/// that many tokens; `._index_prefix` indexes edge n-grams of the shingles of the largest
/// size (see `lode_analysis::sayt_prefix_analyzer`). The subfields are leaf fields of their
/// own, fed the root's value like multi-fields, and not shown in `GET _mapping`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SaytField {
    pub max_shingle_size: usize,
    pub role: SaytRole,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaytRole {
    Root,
    /// `._{n}gram`.
    Shingle(usize),
    /// `._index_prefix`.
    IndexPrefix,
}

impl SaytField {
    /// The subfield suffixes of a root field, shingles first.
    pub fn subfields(max_shingle_size: usize) -> Vec<(String, SaytRole)> {
        let mut out: Vec<(String, SaytRole)> = (2..=max_shingle_size)
            .map(|n| (format!("._{n}gram"), SaytRole::Shingle(n)))
            .collect();
        out.push((SAYT_INDEX_PREFIX.to_string(), SaytRole::IndexPrefix));
        out
    }
}

/// A `token_count` field's options (ES's `TokenCountFieldMapper`).
#[derive(Debug, Clone)]
pub struct TokenCountOptions {
    pub analyzer: lode_analysis::Analyzer,
    pub enable_position_increments: bool,
}

impl TokenCountOptions {
    /// ES's `TokenCountFieldMapper#countPositions`: with position increments, the sum of the
    /// tokens' increments (the last token's position + 1, so a removed stop word between two
    /// tokens counts); without, one per position.
    pub fn count(&self, text: &str) -> i64 {
        let tokens = self.analyzer.analyze(text);
        if self.enable_position_increments {
            tokens.last().map_or(0, |t| t.position as i64 + 1)
        } else {
            let mut positions: Vec<usize> = tokens.iter().map(|t| t.position).collect();
            positions.dedup();
            positions.len() as i64
        }
    }
}

/// The suffix of a `date_nanos` field's nanosecond column (see [`FieldDef::nanos_path`]).
pub const NANOS_SUFFIX: &str = "#nanos";

/// The suffix of a `flattened` field's keyed companion, holding `key\0value` terms (ES's
/// `._keyed` field), which queries and aggregations on `field.key` read.
pub const KEYED_SUFFIX: &str = "#keyed";

/// Lucene's `CompletionAnalyzer.SEP_LABEL`: joins the tokens of a completion key.
pub const COMPLETION_SEP: char = '\u{1f}';

/// A `completion` field's options (ES's `CompletionFieldMapper`). Each input of a document
/// is indexed as one term: its key (the input analyzed, tokens joined by
/// [`COMPLETION_SEP`], or concatenated without `preserve_separators`), a NUL, the weight as
/// ten digits, then the input itself (the option's text). A prefix of the key is answered
/// by a range of the term dictionary.
#[derive(Debug, Clone)]
pub struct CompletionOptions {
    pub analyzer: lode_analysis::Analyzer,
    pub search_analyzer: lode_analysis::Analyzer,
    pub preserve_separators: bool,
    pub preserve_position_increments: bool,
    pub max_input_length: usize,
}

impl CompletionOptions {
    /// The key of `text` under `analyzer`: its tokens joined by the separator; with
    /// `preserve_position_increments`, a position left empty (a removed stop word) adds a
    /// separator too.
    pub fn key(&self, analyzer: &lode_analysis::Analyzer, text: &str) -> String {
        let mut out = String::new();
        let mut last: Option<usize> = None;
        for t in analyzer.analyze(text) {
            if let Some(p) = last {
                if t.position == p {
                    continue;
                }
                if self.preserve_separators {
                    out.push(COMPLETION_SEP);
                    if self.preserve_position_increments {
                        for _ in p + 1..t.position {
                            out.push(COMPLETION_SEP);
                        }
                    }
                }
            }
            out.push_str(&t.token);
            last = Some(t.position);
        }
        out
    }

    /// The indexed term of one input.
    pub fn term(key: &str, weight: u32, input: &str) -> String {
        format!("{key}\u{0}{weight:010}{input}")
    }

    /// Splits an indexed term into key, weight and input.
    pub fn split_term(term: &[u8]) -> Option<(&[u8], u32, &str)> {
        let nul = term.iter().position(|b| *b == 0)?;
        let rest = term.get(nul + 1..)?;
        let digits = std::str::from_utf8(rest.get(..10)?).ok()?;
        let weight = digits.parse().ok()?;
        let input = std::str::from_utf8(&rest[10..]).ok()?;
        Some((&term[..nul], weight, input))
    }
}

impl FieldDef {
    /// The definition of the `_ignored` metadata field (a keyword with doc values), for the
    /// APIs that read it as a field (`terms` aggregations).
    pub fn ignored_meta() -> FieldDef {
        FieldDef {
            path: crate::schema::IGNORED.to_string(),
            ty: FieldType::Keyword,
            index: true,
            index_options: IndexOptions::Docs,
            doc_values: true,
            store: false,
            analyzer: "standard".into(),
            search_analyzer: "standard".into(),
            search_quote_analyzer: "standard".into(),
            normalizer: None,
            ignore_above: None,
            null_value: None,
            date_format: DateFormat::default_es(),
            scaling_factor: 1.0,
            coerce: true,
            ignore_malformed: false,
            ignore_z_value: true,
            multi_fields: Vec::new(),
            parent: None,
            copy_to: Vec::new(),
            completion: None,
            token_count: None,
            sayt: None,
            keeps_every_word: false,
            value: None,
        }
    }

    pub fn storage(&self) -> Storage {
        self.ty.storage()
    }

    /// A `date_nanos` field's second column, of epoch nanoseconds (the field's own column
    /// holds epoch milliseconds, for aggregations and scripts): sorts, `search_after`,
    /// queries and fetched values read it.
    pub fn nanos_path(&self) -> Option<String> {
        (self.ty == FieldType::DateNanos).then(|| format!("{}{NANOS_SUFFIX}", self.path))
    }

    /// The keyed companion field of a `flattened` field (see [`KEYED_SUFFIX`]).
    pub fn keyed_path(&self) -> Option<String> {
        (self.ty == FieldType::Flattened).then(|| format!("{}{KEYED_SUFFIX}", self.path))
    }

    /// Whether the tantivy field carries an inverted index (terms and postings). A searchable
    /// number or date with doc values is answered from its points index, built from the
    /// column (`lode_query::points`), as Lucene answers it from BKD points: terms for it
    /// would only cost indexing time, merge time and disk.
    pub fn inverted(&self) -> bool {
        self.index && !(self.doc_values && matches!(self.storage(), Storage::I64 | Storage::F64))
    }

    /// Whether `exists` reads the field's column: numbers, dates, booleans, IPs and keywords
    /// with doc values, as ES 7+ answers from doc values (and indexes `_field_names` only
    /// for fields with neither doc values nor norms). Text values are found through their
    /// norms ([`FieldDef::exists_from_norms`]); other fields are listed in `_field_names`.
    pub fn exists_from_column(&self) -> bool {
        self.doc_values
            && (matches!(
                self.storage(),
                Storage::I64 | Storage::F64 | Storage::Bool | Storage::Ip
            ) || self.ty == FieldType::Keyword)
    }

    /// Whether `exists` finds this text value through the field's norms (a norm above 0:
    /// the value yielded a token). tantivy gives a document without the field and one whose
    /// value yielded no token (`""`, only punctuation, only stopwords) the same norm 0, while
    /// ES's `exists` matches both of the latter: values that may yield no token are still
    /// listed in `_field_names`. Only for a field whose schema entry keeps norms.
    pub fn exists_from_norms(&self, value: &str) -> bool {
        self.ty == FieldType::Text
            && self.index
            && self.keeps_every_word
            && lode_analysis::has_word_character(value)
    }

    /// Whether exact values are looked up in the points index rather than as terms.
    pub fn points(&self) -> bool {
        self.doc_values && matches!(self.storage(), Storage::I64 | Storage::F64)
    }

    /// The tokenizer name registered in tantivy for this field (text analyzers and keyword
    /// normalizers share the index's tokenizer manager).
    pub fn tokenizer_name(&self) -> String {
        match self.ty.storage() {
            Storage::Text => self.analyzer.clone(),
            _ => match &self.normalizer {
                Some(n) => normalizer_tokenizer_name(n),
                None => "raw".to_string(),
            },
        }
    }
}

pub fn normalizer_tokenizer_name(normalizer: &str) -> String {
    format!("normalizer:{normalizer}")
}

/// An object (or nested) field: its own `dynamic` setting governs unknown children.
#[derive(Debug, Clone)]
pub struct ObjectDef {
    pub path: String,
    pub dynamic: Option<Dynamic>,
    pub enabled: bool,
    pub nested: bool,
    /// `nested` only: whether the objects' fields are also indexed in the parent (the
    /// enclosing nested object, or the root) and in the root document.
    pub include_in_parent: bool,
    pub include_in_root: bool,
}

/// A compiled mapping.
#[derive(Debug, Clone)]
pub struct Mapping {
    /// The `mappings` JSON as `GET _mapping` returns it.
    pub json: Value,
    pub fields: BTreeMap<String, Arc<FieldDef>>,
    pub objects: BTreeMap<String, ObjectDef>,
    pub dynamic: Dynamic,
    pub source_enabled: bool,
    pub date_detection: bool,
    pub numeric_detection: bool,
    pub dynamic_date_formats: Vec<DateFormat>,
    /// `dynamic_templates`, in order: the first to match a new field maps it.
    pub dynamic_templates: Arc<Vec<DynamicTemplate>>,
    /// The index-level defaults of field parameters.
    pub defaults: FieldDefaults,
    /// Field-level security: set on a search's copy of the mapping without the fields its
    /// subject may not read, so that what reads `_source` for that search (scripts'
    /// `params._source`, runtime fields without a script) filters it the same way.
    pub source_filter: Option<Arc<crate::field_security::FieldPermissions>>,
}

/// The index settings that give field parameters their defaults: `index.mapping.coerce`
/// and `index.mapping.ignore_malformed` (ES's `NumberFieldMapper`, `DateFieldMapper`, ...
/// read them when a field does not set its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldDefaults {
    pub coerce: bool,
    pub ignore_malformed: bool,
}

impl Default for FieldDefaults {
    fn default() -> Self {
        FieldDefaults {
            coerce: true,
            ignore_malformed: false,
        }
    }
}

impl Mapping {
    pub fn empty() -> Mapping {
        compile(
            &serde_json::json!({}),
            &lode_analysis::AnalysisRegistry::new(None).unwrap(),
        )
        .expect("empty mapping compiles")
    }

    pub fn field(&self, path: &str) -> Option<&Arc<FieldDef>> {
        self.fields.get(path)
    }

    /// Whether any object is mapped as `nested` (its objects are then indexed as hidden child
    /// documents, and top-level searches match root documents only).
    pub fn has_nested(&self) -> bool {
        self.objects.values().any(|o| o.nested)
    }

    /// The paths of the `nested` objects, in path order.
    pub fn nested_paths(&self) -> impl Iterator<Item = &str> {
        self.objects
            .values()
            .filter(|o| o.nested)
            .map(|o| o.path.as_str())
    }

    /// The nearest `nested` object strictly enclosing `path` ("" = the root document).
    pub fn nested_parent<'m>(&'m self, path: &str) -> &'m str {
        let mut p = path;
        while let Some(i) = p.rfind('.') {
            p = &p[..i];
            if let Some(o) = self.objects.get(p).filter(|o| o.nested) {
                return o.path.as_str();
            }
        }
        ""
    }

    /// The nearest `nested` object holding the field at `path` (itself included), if any.
    pub fn nested_scope<'m>(&'m self, path: &str) -> Option<&'m str> {
        let mut p = path;
        loop {
            if let Some(o) = self.objects.get(p) {
                if o.nested {
                    return Some(o.path.as_str());
                }
            }
            p = &p[..p.rfind('.')?];
        }
    }

    /// The `dynamic` setting that applies to a new child of `parent_path` ("" = root),
    /// inherited from the nearest enclosing object that sets it.
    pub fn dynamic_for(&self, parent_path: &str) -> Dynamic {
        let mut p = parent_path;
        loop {
            if p.is_empty() {
                return self.dynamic;
            }
            if let Some(o) = self.objects.get(p) {
                if let Some(d) = o.dynamic {
                    return d;
                }
            }
            p = match p.rfind('.') {
                Some(i) => &p[..i],
                None => "",
            };
        }
    }

    /// Field paths matching a pattern with `*` wildcards (as `fields` in multi_match,
    /// `docvalue_fields` and `_source` filtering use them).
    pub fn matching_fields(&self, pattern: &str) -> Vec<Arc<FieldDef>> {
        if !pattern.contains('*') {
            return self.fields.get(pattern).cloned().into_iter().collect();
        }
        self.fields
            .values()
            .filter(|f| wildcard_match(pattern, &f.path))
            .cloned()
            .collect()
    }
}

/// Simple `*` glob matching as Elasticsearch uses for field and index patterns.
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0usize, 0usize);
    let (mut star, mut mark) = (None, 0usize);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == t[ti] || p[pi] == '?') && p[pi] != '*' {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            pi += 1;
            mark = ti;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::wildcard_match;

    #[test]
    fn wildcards() {
        assert!(wildcard_match("user*", "userName.analyzed"));
        assert!(wildcard_match("*.analyzed", "userName.analyzed"));
        assert!(!wildcard_match("acct", "acctId"));
        assert!(wildcard_match("*", "x"));
    }
}
