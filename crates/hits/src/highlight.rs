//! `highlight`: the fetch sub-phase that marks the query's matches in a hit's fields, with
//! Elasticsearch's `unified` (default) and `plain` highlighters.
//!
//! Lode keeps no term vectors or offsets in the index, so, as ES does for fields without
//! them, a field is re-analyzed from `_source` with its index analyzer and each token is
//! checked against what the query looks for in that field: exact terms (taken from the planned
//! tantivy query, so every analyzer and query parser is honoured), phrases (matched on token
//! positions; the unified highlighter marks a whole phrase occurrence as one span, as ES 8's
//! weight-matches mode does), and prefix, wildcard, regexp and fuzzy patterns.
//!
//! Fragments: `number_of_fragments: 0` returns every matching value whole. The unified
//! highlighter builds passages on sentence (or word) boundaries bounded by `fragment_size`,
//! scores them as Lucene's `PassageScorer` (BM25 over the passage, earlier passages favoured)
//! and returns the best in text order (`order: score`: best first); the plain highlighter cuts
//! values into `fragment_size` windows at token boundaries and returns those with the most
//! distinct matched terms first.

use lode_analysis::{AnalysisRegistry, AnalyzedToken};
use lode_engine::mapping::{FieldDef, FieldType, Mapping, Storage};
use lode_engine::object_parser::{At, Field, ObjectParser, Style};
use lode_engine::{EsError, EsResult};
use lode_query::{Fuzziness, Query, QueryContext};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};

// ---------------------------------------------------------------------------------------------
// The request

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Unified,
    Plain,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scanner {
    Sentence,
    Word,
}

/// Options of the highlight section and of each field (a field's override the section's).
#[derive(Clone, Debug, Default)]
pub struct Options {
    kind: Option<Kind>,
    pre_tags: Option<Vec<String>>,
    post_tags: Option<Vec<String>>,
    fragment_size: Option<usize>,
    number_of_fragments: Option<usize>,
    require_field_match: Option<bool>,
    highlight_query: Option<Query>,
    no_match_size: Option<usize>,
    order_by_score: Option<bool>,
    html: Option<bool>,
    max_analyzed_offset: Option<usize>,
    scanner: Option<Scanner>,
}

impl Options {
    fn or(&self, base: &Options) -> Options {
        Options {
            kind: self.kind.or(base.kind),
            pre_tags: self.pre_tags.clone().or_else(|| base.pre_tags.clone()),
            post_tags: self.post_tags.clone().or_else(|| base.post_tags.clone()),
            fragment_size: self.fragment_size.or(base.fragment_size),
            number_of_fragments: self.number_of_fragments.or(base.number_of_fragments),
            require_field_match: self.require_field_match.or(base.require_field_match),
            highlight_query: self
                .highlight_query
                .clone()
                .or_else(|| base.highlight_query.clone()),
            no_match_size: self.no_match_size.or(base.no_match_size),
            order_by_score: self.order_by_score.or(base.order_by_score),
            html: self.html.or(base.html),
            max_analyzed_offset: self.max_analyzed_offset.or(base.max_analyzed_offset),
            scanner: self.scanner.or(base.scanner),
        }
    }
}

/// A parsed `highlight` section.
#[derive(Clone, Debug)]
pub struct HighlightRequest {
    options: Options,
    /// Field names or patterns, in request order.
    fields: Vec<(String, Options)>,
}

fn parse_error(msg: impl Into<String>) -> EsError {
    EsError::x_content_parse(msg.into())
}

fn int(v: &Value, key: &str) -> EsResult<i64> {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .ok_or_else(|| parse_error(format!("[highlight] failed to parse field [{key}]")))
}

fn count(v: &Value, key: &str) -> EsResult<usize> {
    let n = int(v, key)?;
    usize::try_from(n)
        .map_err(|_| parse_error(format!("[highlight] failed to parse field [{key}]")))
}

fn boolean(v: &Value, key: &str) -> EsResult<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" || s == "false" => Ok(s == "true"),
        _ => Err(parse_error(format!(
            "[highlight] failed to parse field [{key}]"
        ))),
    }
}

fn tags(v: &Value, key: &str) -> EsResult<Vec<String>> {
    let list = match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .map(|t| t.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| parse_error(format!("[highlight] failed to parse field [{key}]")))?,
        _ => {
            return Err(parse_error(format!(
                "[highlight] failed to parse field [{key}]"
            )))
        }
    };
    Ok(list)
}

const STYLED_PRE: [&str; 10] = [
    "<em class=\"hlt1\">",
    "<em class=\"hlt2\">",
    "<em class=\"hlt3\">",
    "<em class=\"hlt4\">",
    "<em class=\"hlt5\">",
    "<em class=\"hlt6\">",
    "<em class=\"hlt7\">",
    "<em class=\"hlt8\">",
    "<em class=\"hlt9\">",
    "<em class=\"hlt10\">",
];

/// A highlight section or one field's options under construction (`fields` only at the top).
#[derive(Default)]
struct Hl {
    opts: Options,
    fields: Vec<(String, Options)>,
}

type HlField = Field<Hl>;

/// The fields ES's `AbstractHighlighterBuilder` declares for both levels.
static COMMON_FIELDS: &[HlField] = &[
    HlField::new("pre_tags", "*", |h, at, v| {
        h.opts.pre_tags = Some(tags(v, at.key)?);
        Ok(())
    }),
    HlField::new("post_tags", "*", |h, at, v| {
        h.opts.post_tags = Some(tags(v, at.key)?);
        Ok(())
    }),
    HlField::new("order", "*", |h, _, v| {
        h.opts.order_by_score = Some(match v.as_str() {
            Some("score") => true,
            Some("none") => false,
            _ => {
                return Err(EsError::illegal_argument(format!(
                    "Unknown order [{}]",
                    v.as_str().unwrap_or_default()
                )))
            }
        });
        Ok(())
    }),
    // Options of the fast vector highlighter or deprecated ones, validated: they change
    // nothing for the unified and plain highlighters, in ES as here.
    HlField::new("highlight_filter", "*", |_, at, v| {
        boolean(v, at.key).map(drop)
    }),
    HlField::new("fragment_size", "*", |h, at, v| {
        h.opts.fragment_size = Some(count(v, at.key)?);
        Ok(())
    }),
    HlField::new("number_of_fragments", "*", |h, at, v| {
        h.opts.number_of_fragments = Some(count(v, at.key)?);
        Ok(())
    }),
    HlField::new("require_field_match", "*", |h, at, v| {
        h.opts.require_field_match = Some(boolean(v, at.key)?);
        Ok(())
    }),
    HlField::new("boundary_scanner", "*", |h, _, v| {
        h.opts.scanner = Some(match v.as_str().map(str::to_ascii_lowercase).as_deref() {
            Some("sentence") => Scanner::Sentence,
            Some("word") => Scanner::Word,
            Some("chars") => {
                return Err(EsError::illegal_argument(
                    "[boundary_scanner] [chars] applies to the fast vector highlighter, which Lode does not have",
                ))
            }
            _ => {
                return Err(EsError::illegal_argument(format!(
                    "Invalid boundary_scanner [{}]",
                    v.as_str().unwrap_or_default()
                )))
            }
        });
        Ok(())
    }),
    HlField::new("boundary_max_scan", "*", |_, at, v| {
        int(v, at.key).map(drop)
    }),
    HlField::new("boundary_chars", "*", text_option),
    HlField::new("boundary_scanner_locale", "*", text_option),
    HlField::new("type", "*", |h, _, v| {
        h.opts.kind = Some(match v.as_str() {
            Some("unified") => Kind::Unified,
            Some("plain") => Kind::Plain,
            Some("fvh") => {
                return Err(EsError::illegal_argument(
                    "the fast vector highlighter [fvh] needs term vectors with positions and offsets, which Lode does not store: use [unified] or [plain]",
                ))
            }
            Some(other) => {
                return Err(EsError::illegal_argument(format!(
                    "unknown highlighter type [{other}]"
                )))
            }
            None => return Err(parse_error("[highlight] failed to parse field [type]")),
        });
        Ok(())
    }),
    HlField::new("fragmenter", "*", |_, _, v| match v.as_str() {
        Some("simple" | "span") => Ok(()),
        _ => Err(EsError::illegal_argument(format!(
            "unknown fragmenter option [{}]",
            v.as_str().unwrap_or_default()
        ))),
    }),
    HlField::new("no_match_size", "*", |h, at, v| {
        h.opts.no_match_size = Some(count(v, at.key)?);
        Ok(())
    }),
    HlField::new("force_source", "*", |_, at, v| boolean(v, at.key).map(drop)),
    HlField::new("phrase_limit", "*", |_, at, v| int(v, at.key).map(drop)),
    HlField::new("max_analyzed_offset", "*", |h, at, v| {
        let n = int(v, at.key)?;
        if n <= 0 && n != -1 {
            return Err(EsError::illegal_argument(
                "[max_analyzed_offset] must be a positive integer, or -1",
            ));
        }
        h.opts.max_analyzed_offset = (n > 0).then_some(n as usize);
        Ok(())
    }),
    // Options for custom highlighters (plugins); Lode has only its own two.
    HlField::new("options", "*", |_, _, _| {
        Err(EsError::illegal_argument(
            "[options] of a highlighter is not supported by Lode",
        ))
    }),
    HlField::new("highlight_query", "*", |h, _, v| {
        h.opts.highlight_query = Some(lode_query::parse_query(v)?);
        Ok(())
    }),
];

fn text_option(_: &mut Hl, at: &At<'_>, v: &Value) -> EsResult<()> {
    v.as_str()
        .map(drop)
        .ok_or_else(|| parse_error(format!("[highlight] failed to parse field [{}]", at.key)))
}

/// `HighlightBuilder`: the section.
static HIGHLIGHT: ObjectParser<Hl> = ObjectParser {
    name: "highlight",
    style: Style::Object,
    fields: &[
        COMMON_FIELDS,
        &[
            HlField::new("encoder", "*", |h, _, v| {
                h.opts.html = Some(match v.as_str() {
                    Some("html") => true,
                    Some("default") => false,
                    _ => return Err(parse_error("[highlight] failed to parse field [encoder]")),
                });
                Ok(())
            }),
            HlField::new("tags_schema", "*", |h, _, v| {
                match v.as_str() {
                    Some("styled") => {
                        h.opts.pre_tags = Some(STYLED_PRE.iter().map(|s| s.to_string()).collect());
                        h.opts.post_tags = Some(vec!["</em>".to_string()]);
                    }
                    Some("default") => {}
                    other => {
                        return Err(EsError::illegal_argument(format!(
                            "Unknown tag schema [{}]",
                            other.unwrap_or_default()
                        )))
                    }
                }
                Ok(())
            }),
            HlField::new("fields", "*", |h, _, v| {
                match v {
                    Value::Object(m) => {
                        for (name, f) in m {
                            h.fields.push((name.clone(), field_options(f)?));
                        }
                    }
                    Value::Array(a) => {
                        for entry in a {
                            match entry.as_object() {
                                Some(m) if m.len() == 1 => {
                                    let (name, f) = m.iter().next().expect("one entry");
                                    h.fields.push((name.clone(), field_options(f)?));
                                }
                                _ => {
                                    return Err(parse_error(
                                        "[highlight] failed to parse field [fields]: each entry of an array of fields must be an object with one field",
                                    ))
                                }
                            }
                        }
                    }
                    _ => return Err(parse_error("[highlight] failed to parse field [fields]")),
                }
                Ok(())
            }),
        ],
    ],
};

/// `HighlightBuilder.Field`: one field's options.
static HIGHLIGHT_FIELD: ObjectParser<Hl> = ObjectParser {
    name: "highlight_field",
    style: Style::Object,
    fields: &[
        COMMON_FIELDS,
        &[
            HlField::new("fragment_offset", "*", |_, at, v| int(v, at.key).map(drop)),
            HlField::new("matched_fields", "*", |_, _, _| {
                Err(EsError::illegal_argument(
                    "[matched_fields] applies to the fast vector highlighter, which Lode does not have",
                ))
            }),
        ],
    ],
};

fn field_options(v: &Value) -> EsResult<Options> {
    match v {
        Value::Object(o) => Ok(HIGHLIGHT_FIELD.parse(o)?.opts),
        _ => Err(parse_error("[highlight] failed to parse field [fields]")),
    }
}

impl HighlightRequest {
    pub fn parse(v: &Value) -> EsResult<HighlightRequest> {
        let Value::Object(o) = v else {
            return Err(EsError::parsing("[highlight] must be an object"));
        };
        let Hl {
            opts: options,
            fields,
        } = HIGHLIGHT.parse(o)?;
        if fields.is_empty() && !o.contains_key("fields") {
            return Err(parse_error("[highlight] requires [fields]"));
        }
        // Tags as each field ends up with them: its own, else the section's.
        let tags_of = |f: &Options| (f.pre_tags.is_some(), f.post_tags.is_some());
        let all =
            std::iter::once(options.clone()).chain(fields.iter().map(|(_, f)| f.or(&options)));
        for (pre, post) in all.map(|f| tags_of(&f)) {
            if pre && !post {
                return Err(EsError::bad_request(
                    "action_request_validation_exception",
                    "Validation Failed: 1: pre_tags are set but post_tags are not set;",
                ));
            }
        }
        Ok(HighlightRequest { options, fields })
    }
}

// ---------------------------------------------------------------------------------------------
// What the query looks for

enum Pattern {
    Prefix(String),
    Regex(regex::Regex),
    Fuzzy {
        term: Vec<char>,
        edits: usize,
        prefix: usize,
        transpositions: bool,
    },
}

impl Pattern {
    fn matches(&self, token: &str) -> bool {
        match self {
            Pattern::Prefix(p) => token.starts_with(p.as_str()),
            Pattern::Regex(r) => r.is_match(token),
            Pattern::Fuzzy {
                term,
                edits,
                prefix,
                transpositions,
            } => {
                let t: Vec<char> = token.chars().collect();
                t.len() >= *prefix
                    && term.len() >= *prefix
                    && t[..*prefix] == term[..*prefix]
                    && edit_distance(term, &t, *transpositions) <= *edits
            }
        }
    }
}

/// Damerau (optimal string alignment) or Levenshtein distance.
fn edit_distance(a: &[char], b: &[char], transpositions: bool) -> usize {
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if transpositions && i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// A phrase: its terms at their relative positions.
struct Phrase {
    terms: Vec<(usize, String)>,
    slop: usize,
}

/// What the query looks for in one field.
#[derive(Default)]
struct Wanted {
    terms: HashSet<String>,
    phrases: Vec<Phrase>,
    patterns: Vec<Pattern>,
}

impl Wanted {
    fn is_empty(&self) -> bool {
        self.terms.is_empty() && self.phrases.is_empty() && self.patterns.is_empty()
    }
}

/// Per field name; the key `""` collects everything when fields need not match.
type WantedByField = HashMap<String, Wanted>;

fn extract(q: &Query, ctx: &QueryContext, out: &mut WantedByField) -> EsResult<()> {
    match q {
        Query::Bool(b) => {
            for c in b.must.iter().chain(&b.should).chain(&b.filter) {
                extract(c, ctx, out)?;
            }
        }
        Query::ConstantScore { filter, .. } => extract(filter, ctx, out)?,
        Query::DisMax { queries, .. } => {
            for c in queries {
                extract(c, ctx, out)?;
            }
        }
        Query::Boosting { positive, .. } => extract(positive, ctx, out)?,
        Query::FunctionScore(f) => extract(&f.query, ctx, out)?,
        Query::Nested { query, .. } => extract(query, ctx, out)?,
        Query::MatchPhrase(p) => phrase(p, ctx, out, false)?,
        Query::MatchPhrasePrefix(p) => phrase(p, ctx, out, true)?,
        Query::Prefix(p) => pattern(out, &p.field, Pattern::Prefix(p.value.clone())),
        Query::Wildcard(p) => {
            let mut re = String::from("^");
            for c in p.value.chars() {
                match c {
                    '*' => re.push_str(".*"),
                    '?' => re.push('.'),
                    c => re.push_str(&regex::escape(&c.to_string())),
                }
            }
            re.push('$');
            if let Ok(r) = regex::RegexBuilder::new(&re)
                .case_insensitive(p.case_insensitive)
                .build()
            {
                pattern(out, &p.field, Pattern::Regex(r));
            }
        }
        Query::Regexp(p) => {
            if let Ok(r) = regex::RegexBuilder::new(&format!("^(?:{})$", p.value))
                .case_insensitive(p.case_insensitive)
                .build()
            {
                pattern(out, &p.field, Pattern::Regex(r));
            }
        }
        Query::Fuzzy(f) => {
            let term = match &f.value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let edits = fuzzy_edits(f.fuzziness, term.chars().count());
            pattern(
                out,
                &f.field,
                Pattern::Fuzzy {
                    term: term.chars().collect(),
                    edits,
                    prefix: f.prefix_length as usize,
                    transpositions: f.transpositions,
                },
            );
        }
        Query::Match(m) | Query::MatchBoolPrefix(m) if m.fuzziness.is_some() => {
            // Analyzed terms, each matched within its edit distance.
            let mut terms = Vec::new();
            leaf_terms(q, ctx, &mut |field, term| terms.push((field, term)))?;
            for (field, term) in terms {
                let edits = fuzzy_edits(m.fuzziness.expect("fuzzy"), term.chars().count());
                pattern(
                    out,
                    &field,
                    Pattern::Fuzzy {
                        term: term.chars().collect(),
                        edits,
                        prefix: m.prefix_length as usize,
                        transpositions: m.fuzzy_transpositions,
                    },
                );
            }
        }
        // Each leaf as the query it plans as: prefixes and wildcards highlight every term they
        // expand to, as ES's.
        Query::QueryString(_) | Query::SimpleQueryString(_) => {
            for leaf in lode_query::query_string_leaves(q, ctx) {
                extract(&leaf, ctx, out)?;
            }
        }
        Query::MatchAll { .. } | Query::MatchNone | Query::Range(_) | Query::Exists { .. } => {}
        Query::Ids { .. } => {}
        _ => leaf_terms(q, ctx, &mut |field, term| {
            out.entry(field).or_default().terms.insert(term);
        })?,
    }
    Ok(())
}

fn fuzzy_edits(f: Fuzziness, len: usize) -> usize {
    match f {
        Fuzziness::Edits(n) => n as usize,
        Fuzziness::Auto { low, .. } if len < low => 0,
        Fuzziness::Auto { high, .. } if len < high => 1,
        Fuzziness::Auto { .. } => 2,
    }
}

fn pattern(out: &mut WantedByField, field: &str, p: Pattern) {
    out.entry(field.to_string()).or_default().patterns.push(p);
}

/// The exact terms a query leaf asks for, from its planned tantivy query.
fn leaf_terms(q: &Query, ctx: &QueryContext, add: &mut dyn FnMut(String, String)) -> EsResult<()> {
    let planned = match lode_query::build_query(q, ctx) {
        Ok(p) => p,
        // A leaf that cannot be planned on this index matches nothing here.
        Err(_) => return Ok(()),
    };
    planned.query_terms(&mut |term, _| {
        let field = ctx.schema.get_field_name(term.field()).to_string();
        if let Some(text) = term.value().as_str() {
            add(field, text.to_string());
        }
    });
    Ok(())
}

fn phrase(
    p: &lode_query::PhraseQuery,
    ctx: &QueryContext,
    out: &mut WantedByField,
    prefix_last: bool,
) -> EsResult<()> {
    let Some(def) = ctx.mapping.field(&p.field) else {
        return Ok(());
    };
    let text = match &p.query {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let analyzer_name = p.analyzer.as_deref().unwrap_or(&def.search_quote_analyzer);
    let analyzer = match def.storage() {
        Storage::Text => ctx.analysis.analyzer(analyzer_name),
        _ => {
            return leaf_terms(&Query::MatchPhrase(p.clone()), ctx, &mut |f, t| {
                out.entry(f).or_default().terms.insert(t);
            })
        }
    }
    .map_err(|e| EsError::new(400, e.kind, e.reason))?;
    let tokens = analyzer.analyze_bytes(&text);
    let Some(first) = tokens.first().map(|t| t.position) else {
        return Ok(());
    };
    let mut terms: Vec<(usize, String)> = tokens
        .iter()
        .map(|t| (t.position - first, t.token.clone()))
        .collect();
    let wanted = out.entry(p.field.clone()).or_default();
    if prefix_last {
        let (_, last) = terms.pop().expect("one token");
        wanted.patterns.push(Pattern::Prefix(last));
        wanted.terms.extend(terms.into_iter().map(|(_, t)| t));
        return Ok(());
    }
    if terms.len() == 1 {
        wanted.terms.insert(terms.remove(0).1);
    } else {
        wanted.phrases.push(Phrase {
            terms,
            slop: p.slop as usize,
        });
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Highlighting one hit

/// Everything a request's highlighting needs, prepared once per index.
pub struct Highlighter<'a> {
    req: &'a HighlightRequest,
    mapping: &'a Mapping,
    analysis: &'a AnalysisRegistry,
    /// Per field option set: what its query looks for (the search query unless the field or
    /// section has a `highlight_query`).
    wanted: Vec<WantedByField>,
    /// `index.highlight.max_analyzed_offset`.
    index_max_offset: usize,
    index_name: &'a str,
}

impl<'a> Highlighter<'a> {
    pub fn new(
        req: &'a HighlightRequest,
        query: Option<&Query>,
        ctx: &'a QueryContext,
        index_max_offset: usize,
        index_name: &'a str,
    ) -> EsResult<Highlighter<'a>> {
        let mut wanted = Vec::new();
        for (_, f) in &req.fields {
            let opts = f.or(&req.options);
            let mut w = WantedByField::new();
            if let Some(q) = opts.highlight_query.as_ref().or(query) {
                extract(q, ctx, &mut w)?;
            }
            if !opts.require_field_match.unwrap_or(true) {
                let mut all = Wanted::default();
                for (_, v) in w.drain() {
                    all.terms.extend(v.terms);
                    all.phrases.extend(v.phrases);
                    all.patterns.extend(v.patterns);
                }
                w.insert(String::new(), all);
            }
            wanted.push(w);
        }
        Ok(Highlighter {
            req,
            mapping: ctx.mapping,
            analysis: ctx.analysis,
            wanted,
            index_max_offset,
            index_name,
        })
    }

    /// The hit's `highlight` object, `None` when nothing was highlighted.
    pub fn highlight(&self, source: &Value, id: &str) -> EsResult<Option<Value>> {
        let mut out = Map::new();
        for ((pattern, f), wanted) in self.req.fields.iter().zip(&self.wanted) {
            let opts = f.or(&self.req.options);
            let mut defs = self.mapping.matching_fields(pattern);
            defs.sort_by(|a, b| a.path.cmp(&b.path));
            for def in defs {
                if out.contains_key(&def.path) || !highlightable(&def) {
                    continue;
                }
                let w = wanted.get(if wanted.contains_key("") {
                    ""
                } else {
                    def.path.as_str()
                });
                let values = source_values(source, &def);
                if values.is_empty() {
                    continue;
                }
                let max_offset = opts.max_analyzed_offset.unwrap_or(self.index_max_offset);
                let frags = match w.filter(|w| !w.is_empty()) {
                    Some(w) => self.field_fragments(&def, &values, w, &opts, max_offset, id)?,
                    None => Vec::new(),
                };
                let frags = if frags.is_empty() {
                    no_match(&values, &opts)
                } else {
                    frags
                };
                if !frags.is_empty() {
                    out.insert(def.path.clone(), json!(frags));
                }
            }
        }
        Ok((!out.is_empty()).then_some(Value::Object(out)))
    }

    fn field_fragments(
        &self,
        def: &FieldDef,
        values: &[String],
        wanted: &Wanted,
        opts: &Options,
        max_offset: usize,
        id: &str,
    ) -> EsResult<Vec<String>> {
        let analyzer = match def.storage() {
            Storage::Text => Some(
                self.analysis
                    .analyzer(&def.analyzer)
                    .map_err(|e| EsError::new(400, e.kind, e.reason))?,
            ),
            _ => def
                .normalizer
                .as_ref()
                .map(|n| self.analysis.normalizer(n))
                .transpose()
                .map_err(|e| EsError::new(400, e.kind, e.reason))?,
        };
        let kind = opts.kind.unwrap_or(Kind::Unified);
        let mut passages: Vec<Passage> = Vec::new();
        let mut offset_base = 0usize;
        for (vi, value) in values.iter().enumerate() {
            let len16: usize = value.encode_utf16().count();
            if offset_base + len16 > max_offset && opts.max_analyzed_offset.is_none() {
                return Err(EsError::illegal_argument(format!(
                    "The length [{}] of field [{}] in doc[{id}]/index[{}] exceeds the [index.highlight.max_analyzed_offset] limit [{max_offset}]. To avoid this error, set the query parameter [max_analyzed_offset] to a value less than index setting [{max_offset}] and this will tolerate long field values by truncating them.",
                    offset_base + len16,
                    def.path,
                    self.index_name
                )));
            }
            offset_base += len16 + 1;
            let analyzed = match (&analyzer, def.storage()) {
                (Some(a), Storage::Text) => a.analyze_bytes(value),
                (Some(a), _) => vec![AnalyzedToken {
                    token: a.normalize(value),
                    start_offset: 0,
                    end_offset: value.len(),
                    token_type: "word".into(),
                    position: 0,
                    position_length: 1,
                }],
                (None, _) => vec![AnalyzedToken {
                    token: value.clone(),
                    start_offset: 0,
                    end_offset: value.len(),
                    token_type: "word".into(),
                    position: 0,
                    position_length: 1,
                }],
            };
            let tokens: Vec<&AnalyzedToken> = match opts.max_analyzed_offset {
                Some(m) => analyzed.iter().filter(|t| t.end_offset <= m).collect(),
                None => analyzed.iter().collect(),
            };
            let spans = matches(&tokens, wanted, kind == Kind::Unified);
            if spans.is_empty() {
                continue;
            }
            let fragment_size = opts.fragment_size.unwrap_or(100);
            match (opts.number_of_fragments.unwrap_or(5), kind) {
                (0, _) => passages.push(Passage::whole(vi, value, spans)),
                (_, Kind::Unified) => passages.extend(unified_passages(
                    vi,
                    value,
                    spans,
                    fragment_size,
                    opts.scanner.unwrap_or(Scanner::Sentence),
                )),
                (_, Kind::Plain) => {
                    passages.extend(plain_passages(vi, value, spans, &tokens, fragment_size))
                }
            }
        }
        let n = opts.number_of_fragments.unwrap_or(5);
        if n > 0 {
            passages.sort_by(|a, b| {
                b.score
                    .partial_cmp(&a.score)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(a.value.cmp(&b.value))
                    .then(a.start.cmp(&b.start))
            });
            passages.truncate(n);
            let by_score = opts.order_by_score.unwrap_or(false) || kind == Kind::Plain;
            if !by_score {
                passages.sort_by_key(|p| (p.value, p.start));
            }
        }
        let pre = opts.pre_tags.clone().unwrap_or_else(|| vec!["<em>".into()]);
        let post = opts
            .post_tags
            .clone()
            .unwrap_or_else(|| vec!["</em>".into()]);
        let html = opts.html.unwrap_or(false);
        Ok(passages
            .iter()
            .map(|p| {
                p.render(
                    values,
                    &pre[0],
                    post.first().map_or("</em>", |s| s.as_str()),
                    html,
                )
            })
            .collect())
    }
}

/// Field types ES highlights.
fn highlightable(def: &FieldDef) -> bool {
    matches!(def.ty, FieldType::Text | FieldType::Keyword) || def.storage() == Storage::Text
}

/// A field's values from `_source` as text (multi-fields read their parent's).
fn source_values(source: &Value, def: &FieldDef) -> Vec<String> {
    crate::docvalues::source_raw(source, def)
        .into_iter()
        .filter_map(|v| match v {
            Value::String(s) => Some(s),
            Value::Null | Value::Object(_) | Value::Array(_) => None,
            other => Some(other.to_string()),
        })
        .collect()
}

/// A matched span of a value, in bytes, with the term(s) it stands for.
#[derive(Clone, Debug)]
struct Span {
    start: usize,
    end: usize,
    term: String,
}

/// The spans of `tokens` the query looks for, in order. `merge_phrases` marks a phrase
/// occurrence as one span.
fn matches(tokens: &[&AnalyzedToken], wanted: &Wanted, merge_phrases: bool) -> Vec<Span> {
    let mut spans: Vec<Span> = tokens
        .iter()
        .filter(|t| {
            wanted.terms.contains(&t.token) || wanted.patterns.iter().any(|p| p.matches(&t.token))
        })
        .map(|t| Span {
            start: t.start_offset,
            end: t.end_offset,
            term: t.token.clone(),
        })
        .collect();
    for phrase in &wanted.phrases {
        for occurrence in phrase_occurrences(tokens, phrase) {
            if merge_phrases {
                let first = tokens[occurrence[0]];
                let last = tokens[*occurrence.last().expect("phrase")];
                spans.push(Span {
                    start: first.start_offset,
                    end: last.end_offset,
                    term: phrase
                        .terms
                        .iter()
                        .map(|(_, t)| t.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                });
            } else {
                spans.extend(occurrence.iter().map(|&i| Span {
                    start: tokens[i].start_offset,
                    end: tokens[i].end_offset,
                    term: tokens[i].token.clone(),
                }));
            }
        }
    }
    spans.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    // Overlaps (a term inside a phrase span, synonyms at one position) become one span.
    let mut out: Vec<Span> = Vec::with_capacity(spans.len());
    for s in spans {
        match out.last_mut() {
            Some(last) if s.start < last.end => last.end = last.end.max(s.end),
            _ => out.push(s),
        }
    }
    out
}

/// Token indexes of each occurrence of a phrase: in order, each term within `slop` extra
/// positions of where the phrase puts it.
fn phrase_occurrences(tokens: &[&AnalyzedToken], phrase: &Phrase) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let (first_rel, first_term) = &phrase.terms[0];
    for (i, t) in tokens.iter().enumerate() {
        if &t.token != first_term {
            continue;
        }
        let base = t.position as isize - *first_rel as isize;
        let mut used = vec![i];
        let mut budget = phrase.slop as isize;
        let mut last = t.position as isize;
        let mut ok = true;
        for (rel, term) in &phrase.terms[1..] {
            let want = base + *rel as isize;
            let found = tokens.iter().enumerate().find(|(_, c)| {
                &c.token == term
                    && (c.position as isize) > last
                    && ((c.position as isize) - want).abs() <= budget
            });
            match found {
                Some((j, c)) => {
                    budget -= ((c.position as isize) - want).abs();
                    last = c.position as isize;
                    used.push(j);
                }
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if ok {
            out.push(used);
        }
    }
    out
}

/// A fragment: a byte range of one value and the spans inside it.
#[derive(Debug)]
struct Passage {
    value: usize,
    start: usize,
    end: usize,
    spans: Vec<Span>,
    score: f32,
}

impl Passage {
    fn whole(value: usize, text: &str, spans: Vec<Span>) -> Passage {
        Passage {
            value,
            start: 0,
            end: text.len(),
            spans,
            score: 0.0,
        }
    }

    fn render(&self, values: &[String], pre: &str, post: &str, html: bool) -> String {
        let text = &values[self.value];
        let enc = |s: &str| if html { html_escape(s) } else { s.to_string() };
        let mut out = String::new();
        let mut at = self.start;
        for s in &self.spans {
            out.push_str(&enc(&text[at..s.start]));
            out.push_str(pre);
            out.push_str(&enc(&text[s.start..s.end]));
            out.push_str(post);
            at = s.end;
        }
        out.push_str(&enc(&text[at..self.end]));
        out
    }
}

fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            '/' => out.push_str("&#x2F;"),
            c => out.push(c),
        }
    }
    out
}

/// Lucene's `PassageScorer`: BM25 of the passage's matches (k1 1.2, b 0.75, pivot 87),
/// times a norm favouring passages near the start.
fn passage_score(spans: &[Span], start_chars: usize, len_chars: usize) -> f32 {
    const K1: f32 = 1.2;
    const B: f32 = 0.75;
    const PIVOT: f32 = 87.0;
    let mut tf: HashMap<&str, f32> = HashMap::new();
    for s in spans {
        *tf.entry(s.term.as_str()).or_default() += 1.0;
    }
    let norm_len = K1 * ((1.0 - B) + B * (len_chars as f32 / PIVOT));
    let score: f32 = tf.values().map(|f| (K1 + 1.0) * f / (norm_len + f)).sum();
    score * (1.0 + 1.0 / (PIVOT + start_chars as f32).ln())
}

/// Sentence boundaries (byte offsets where sentences start) of `text`, plus `text.len()`.
fn sentence_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if matches!(c, b'.' | b'!' | b'?' | b'\n') {
            let mut j = i + 1;
            while j < bytes.len() && matches!(bytes[j], b'.' | b'!' | b'?' | b'"' | b'\'' | b')') {
                j += 1;
            }
            let ws_start = j;
            while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                j += 1;
            }
            if (j > ws_start || c == b'\n') && j < bytes.len() {
                starts.push(j);
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    starts.push(text.len());
    starts.dedup();
    starts
}

/// The word boundary at or before `at` (a char boundary), for cutting long sentences.
fn word_start_before(text: &str, at: usize) -> usize {
    text[..at]
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace())
        .map_or(0, |(i, c)| i + c.len_utf8())
}

/// The word boundary at or after `at`.
fn word_end_after(text: &str, at: usize) -> usize {
    let at = (at..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    text[at..]
        .char_indices()
        .find(|(_, c)| c.is_whitespace())
        .map_or(text.len(), |(i, _)| at + i)
}

fn char_len(s: &str) -> usize {
    s.chars().count()
}

/// Passages as ES's unified highlighter forms them with its bounded sentence (or word)
/// scanner: a passage starts at the boundary before its first match (or at a word boundary
/// before the match when the sentence starts more than `fragment_size` earlier), ends at the
/// next boundary within `fragment_size` of its start, else at the first word boundary past
/// `fragment_size`, and takes every match inside.
fn unified_passages(
    value: usize,
    text: &str,
    spans: Vec<Span>,
    fragment_size: usize,
    scanner: Scanner,
) -> Vec<Passage> {
    let bounds = match scanner {
        Scanner::Sentence => sentence_starts(text),
        Scanner::Word => {
            let mut b: Vec<usize> = text
                .char_indices()
                .filter(|(_, c)| c.is_whitespace())
                .map(|(i, c)| i + c.len_utf8())
                .collect();
            b.insert(0, 0);
            b.push(text.len());
            b.dedup();
            b
        }
    };
    let mut out: Vec<Passage> = Vec::new();
    let mut i = 0;
    while i < spans.len() {
        let first = &spans[i];
        let sentence = bounds
            .iter()
            .rev()
            .find(|&&b| b <= first.start)
            .copied()
            .unwrap_or(0);
        let start = if char_len(&text[sentence..first.start]) > fragment_size {
            word_start_before(text, first.start)
        } else {
            sentence
        };
        let limit = text
            .char_indices()
            .skip(char_len(&text[..start]))
            .nth(fragment_size)
            .map_or(text.len(), |(b, _)| b);
        let next_bound = bounds
            .iter()
            .find(|&&b| b > first.start)
            .copied()
            .unwrap_or(text.len());
        let end = match scanner {
            Scanner::Sentence if next_bound <= limit.max(first.end) => {
                // As many whole sentences as fit.
                bounds
                    .iter()
                    .rfind(|&&b| b >= next_bound && b <= limit.max(first.end))
                    .copied()
                    .unwrap_or(next_bound)
            }
            _ => word_end_after(text, limit.max(first.end)),
        };
        let mut inside = Vec::new();
        while i < spans.len() && spans[i].start < end {
            let mut s = spans[i].clone();
            s.end = s.end.min(end);
            inside.push(s);
            i += 1;
        }
        let trimmed_end = start + text[start..end].trim_end().len();
        let score = passage_score(
            &inside,
            char_len(&text[..start]),
            char_len(&text[start..end]),
        );
        out.push(Passage {
            value,
            start,
            end: trimmed_end.max(inside.last().map_or(start, |s| s.end)),
            spans: inside,
            score,
        });
    }
    out
}

/// Lucene's plain highlighter with its simple fragmenter: fragment `k` holds the tokens ending
/// before `(k + 1) * fragment_size` characters, fragments are scored by their distinct matched
/// terms, and those without a match are dropped.
fn plain_passages(
    value: usize,
    text: &str,
    spans: Vec<Span>,
    tokens: &[&AnalyzedToken],
    fragment_size: usize,
) -> Vec<Passage> {
    let size = fragment_size.max(1);
    let chars_at = |b: usize| char_len(&text[..b]);
    let mut frags: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    let mut k = 1;
    for t in tokens {
        if chars_at(t.end_offset) > k * size {
            frags.push((start, t.start_offset));
            start = t.start_offset;
            while chars_at(t.end_offset) > k * size {
                k += 1;
            }
        }
    }
    frags.push((start, text.len()));
    frags
        .into_iter()
        .filter_map(|(s, e)| {
            let inside: Vec<Span> = spans
                .iter()
                .filter(|sp| sp.start >= s && sp.start < e)
                .cloned()
                .collect();
            if inside.is_empty() {
                return None;
            }
            let distinct: HashSet<&str> = inside.iter().map(|sp| sp.term.as_str()).collect();
            let end = s + text[s..e].trim_end().len();
            Some(Passage {
                value,
                start: s,
                end: end.max(inside.last().map_or(s, |sp| sp.end)),
                score: distinct.len() as f32,
                spans: inside,
            })
        })
        .collect()
}

/// `no_match_size`: the start of the first value, cut at a word boundary.
fn no_match(values: &[String], opts: &Options) -> Vec<String> {
    let n = opts.no_match_size.unwrap_or(0);
    let Some(first) = values.first().filter(|_| n > 0) else {
        return Vec::new();
    };
    let cut = first.char_indices().nth(n).map_or(first.len(), |(b, _)| b);
    let text = if cut < first.len() {
        let w = word_start_before(first, cut);
        if w == 0 {
            &first[..cut]
        } else {
            first[..w].trim_end()
        }
    } else {
        first.as_str()
    };
    let html = opts.html.unwrap_or(false);
    vec![if html {
        html_escape(text)
    } else {
        text.to_string()
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_levels_and_suggestions() {
        let parse = |v: Value| HighlightRequest::parse(&v);
        let r = parse(
            json!({"encoder": "html", "fields": {"a": {"fragment_offset": 2, "type": "plain"}}}),
        )
        .unwrap();
        assert_eq!(r.options.html, Some(true));
        assert_eq!(r.fields[0].1.kind, Some(Kind::Plain));
        // each level declares its own keys, as ES's two parsers
        let e = parse(json!({"fragment_offset": 1, "fields": {"a": {}}})).unwrap_err();
        assert_eq!(e.kind, "x_content_parse_exception");
        assert!(e
            .reason
            .starts_with("[highlight] unknown field [fragment_offset] did you mean"));
        let e = parse(json!({"fields": {"a": {"encoder": "html"}}})).unwrap_err();
        assert!(e
            .reason
            .starts_with("[highlight_field] unknown field [encoder]"));
        let e = parse(json!({"feilds": {"a": {}}})).unwrap_err();
        assert_eq!(
            e.reason,
            "[highlight] unknown field [feilds] did you mean [fields]?"
        );
        let e = parse(json!({"fields": {"a": {"fragment_sise": 5}}})).unwrap_err();
        assert_eq!(
            e.reason,
            "[highlight_field] unknown field [fragment_sise] did you mean any of [fragment_size, fragment_offset, fragmenter]?"
        );
    }

    fn tok(token: &str, start: usize, end: usize, position: usize) -> AnalyzedToken {
        AnalyzedToken {
            token: token.into(),
            start_offset: start,
            end_offset: end,
            token_type: "<ALPHANUM>".into(),
            position,
            position_length: 1,
        }
    }

    #[test]
    fn phrases_match_in_order_within_slop() {
        let toks = [
            tok("quick", 0, 5, 0),
            tok("brown", 6, 11, 1),
            tok("fox", 12, 15, 2),
        ];
        let refs: Vec<&AnalyzedToken> = toks.iter().collect();
        let p = Phrase {
            terms: vec![(0, "quick".into()), (1, "fox".into())],
            slop: 0,
        };
        assert!(phrase_occurrences(&refs, &p).is_empty());
        let p = Phrase { slop: 1, ..p };
        assert_eq!(phrase_occurrences(&refs, &p), vec![vec![0, 2]]);
        let w = Wanted {
            phrases: vec![Phrase {
                terms: vec![(0, "quick".into()), (1, "brown".into())],
                slop: 0,
            }],
            ..Default::default()
        };
        let spans = matches(&refs, &w, true);
        assert_eq!((spans.len(), spans[0].start, spans[0].end), (1, 0, 11));
        assert_eq!(matches(&refs, &w, false).len(), 2);
    }

    #[test]
    fn edit_distances() {
        let c = |s: &str| s.chars().collect::<Vec<_>>();
        assert_eq!(edit_distance(&c("quikc"), &c("quick"), true), 1);
        assert_eq!(edit_distance(&c("quikc"), &c("quick"), false), 2);
        assert_eq!(edit_distance(&c(""), &c("ab"), true), 2);
    }

    #[test]
    fn sentences_and_words() {
        let t = "One two. Three four! Five";
        assert_eq!(sentence_starts(t), vec![0, 9, 21, t.len()]);
        assert_eq!(word_start_before(t, 11), 9);
        assert_eq!(word_end_after(t, 10), 14);
    }

    #[test]
    fn rendering_escapes_only_the_text() {
        let p = Passage {
            value: 0,
            start: 0,
            end: 9,
            spans: vec![Span {
                start: 4,
                end: 7,
                term: "b".into(),
            }],
            score: 1.0,
        };
        let v = vec!["a<> b&c d".to_string()];
        assert_eq!(
            p.render(&v, "<em>", "</em>", true),
            "a&lt;&gt; <em>b&amp;c</em> d"
        );
        assert_eq!(p.render(&v, "[", "]", false), "a<> [b&c] d");
    }
}
