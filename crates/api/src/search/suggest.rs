//! The `suggest` section of a search: Elasticsearch's term suggester (`TermSuggester` on
//! Lucene's `DirectSpellChecker`). Each shard proposes, per analyzed token of the text, the
//! terms of the field's term dictionary within `max_edits` (found with a Levenshtein automaton
//! over the dictionary's FST, after an exact `prefix_length`), filtered and scored as
//! `DirectSpellChecker#suggestSimilar`; the coordinator merges the shards' options by text
//! (highest score, summed frequencies), sorts and trims them to `size`, as `Suggest#reduce`.
//! The phrase and completion suggesters are refused by name.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use levenshtein_automata::{Distance, LevenshteinAutomatonBuilder, DFA, SINK_STATE};
use lode_engine::index::IndexService;
use lode_engine::mapping::FieldType;
use lode_engine::object_parser::{At, Field, ObjectParser, Style, Token};
use lode_engine::shard::ShardSearcher;
use lode_engine::{EsError, EsResult};
use serde_json::{json, Map, Value};

use super::body;

/// The parsed `suggest` section.
#[derive(Clone, Debug, Default)]
pub struct SuggestRequest {
    pub global_text: Option<String>,
    pub suggestions: Vec<(String, Suggestion)>,
}

#[derive(Clone, Debug)]
pub struct Suggestion {
    pub text: Option<String>,
    /// The completion suggester's `prefix` and `regex` (which take the place of `text`).
    pub prefix: Option<String>,
    pub regex: Option<String>,
    pub kind: SuggestKind,
}

#[derive(Clone, Debug)]
pub enum SuggestKind {
    Term(TermSuggestion),
    Completion(super::completion::CompletionSuggestion),
    Phrase(Box<super::phrase::PhraseSuggestion>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SuggestMode {
    Missing,
    Popular,
    Always,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortBy {
    Score,
    Frequency,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StringDistance {
    Internal,
    DamerauLevenshtein,
    Levenshtein,
    JaroWinkler,
    Ngram,
}

/// A term suggestion's options, with ES's defaults (`DirectSpellcheckerSettings`).
#[derive(Clone, Debug)]
pub struct TermSuggestion {
    pub field: String,
    pub analyzer: Option<String>,
    pub size: usize,
    pub shard_size: Option<usize>,
    pub sort: SortBy,
    pub mode: SuggestMode,
    pub accuracy: f32,
    pub max_edits: u8,
    pub max_inspections: usize,
    pub max_term_freq: f32,
    pub prefix_length: usize,
    pub min_word_length: usize,
    pub min_doc_freq: f32,
    pub distance: StringDistance,
    pub lowercase_terms: bool,
}

impl TermSuggestion {
    pub(super) fn new(field: String) -> Self {
        TermSuggestion {
            field,
            analyzer: None,
            size: 5,
            shard_size: None,
            sort: SortBy::Score,
            mode: SuggestMode::Missing,
            accuracy: 0.5,
            max_edits: 2,
            max_inspections: 5,
            max_term_freq: 0.01,
            prefix_length: 1,
            min_word_length: 4,
            min_doc_freq: 0.0,
            distance: StringDistance::Internal,
            lowercase_terms: false,
        }
    }

    /// `shard_size` defaults to `max(size, 5)` (`SuggestionBuilder#populateCommonFields`).
    fn shard_size(&self) -> usize {
        self.shard_size.unwrap_or(self.size.max(5))
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn token_name(v: &Value) -> &'static str {
    body::Token::of(v).es_name()
}

/// `SuggestBuilder#fromXContent`'s refusals: an array under a name, or a value under a name
/// other than `text`.
fn suggest_refusal(at: &At<'_>, t: Token) -> EsError {
    if t == Token::Array {
        EsError::parsing(format!("unexpected token [START_ARRAY] after [{}]", at.key))
    } else {
        EsError::illegal_argument(format!("[suggest] does not support [{}]", at.key))
    }
}

fn add_suggestion(out: &mut SuggestRequest, at: &At<'_>, v: &Value) -> EsResult<()> {
    let s = parse_suggestion(v.as_object().expect("an object, as declared"))?;
    out.suggestions.push((at.key.to_string(), s));
    Ok(())
}

/// The `suggest` section (`SuggestBuilder#fromXContent`): the global `text`, and each other
/// key names a suggestion object (so may `text`, with an object).
static SUGGEST: ObjectParser<SuggestRequest> = ObjectParser {
    name: "suggest",
    style: Style::Custom {
        unknown: |at, t, _| suggest_refusal(at, t),
        wrong_token: suggest_refusal,
    },
    fields: &[&[
        Field::new("text", "vno", |out, at, v| {
            if v.is_object() {
                return add_suggestion(out, at, v);
            }
            // `parser.text()` of a null is null: no global text.
            out.global_text = Some(v).filter(|v| !v.is_null()).map(text_of);
            Ok(())
        }),
        Field::other("o", add_suggestion),
    ]],
};

/// Parses the `suggest` object as `SuggestBuilder#fromXContent`.
pub fn parse(v: &Value) -> EsResult<SuggestRequest> {
    let Value::Object(m) = v else {
        return Err(EsError::parsing(format!(
            "Expected [START_OBJECT] but found [{}]",
            token_name(v)
        )));
    };
    SUGGEST.parse(m)
}

/// A suggestion as read: its texts and its one suggester.
#[derive(Default)]
struct SuggestionSpec {
    text: Option<String>,
    prefix: Option<String>,
    regex: Option<String>,
    kind: Option<SuggestKind>,
}

/// `SuggestionBuilder#fromXContent`'s refusals: an object under a name that is not a
/// suggester is an unknown named object, anything else an unsupported key.
fn suggestion_refusal(at: &At<'_>, t: Token) -> EsError {
    if t == Token::Object {
        EsError::new(
            400,
            "named_object_not_found_exception",
            format!("unknown field [{}]", at.key),
        )
    } else {
        EsError::parsing(format!("suggestion does not support [{}]", at.key))
    }
}

/// `parser.text()` of a null is null: the global text applies.
fn text_or_null(v: &Value) -> Option<String> {
    Some(v).filter(|v| !v.is_null()).map(text_of)
}

/// A suggestion (`SuggestionBuilder#fromXContent`): `text`, `prefix` and `regex` values, and
/// one suggester object by its name.
static SUGGESTION: ObjectParser<SuggestionSpec> = ObjectParser {
    name: "suggestion",
    style: Style::Custom {
        unknown: |at, t, _| suggestion_refusal(at, t),
        wrong_token: suggestion_refusal,
    },
    fields: &[&[
        Field::new("text", "vn", |s, _, v| {
            s.text = text_or_null(v);
            Ok(())
        }),
        Field::new("prefix", "vn", |s, _, v| {
            s.prefix = text_or_null(v);
            Ok(())
        }),
        Field::new("regex", "vn", |s, _, v| {
            s.regex = text_or_null(v);
            Ok(())
        }),
        Field::new("term", "o", |s, _, v| {
            s.kind = Some(SuggestKind::Term(parse_term(object(v))?));
            Ok(())
        }),
        Field::new("completion", "o", |s, _, v| {
            s.kind = Some(SuggestKind::Completion(super::completion::parse(object(
                v,
            ))?));
            Ok(())
        }),
        Field::new("phrase", "o", |s, _, v| {
            s.kind = Some(SuggestKind::Phrase(Box::new(super::phrase::parse(
                object(v),
            )?)));
            Ok(())
        }),
    ]],
};

/// The object a field declared as taking only objects was given.
fn object(v: &Value) -> &Map<String, Value> {
    v.as_object().expect("an object, as declared")
}

fn parse_suggestion(o: &Map<String, Value>) -> EsResult<Suggestion> {
    let SuggestionSpec {
        text,
        prefix,
        regex,
        kind,
    } = SUGGESTION.parse(o)?;
    let Some(kind) = kind else {
        return Err(EsError::illegal_argument("missing suggestion object"));
    };
    Ok(Suggestion {
        text,
        prefix,
        regex,
        kind,
    })
}

fn positive_fraction_or_count(v: f32, name: &str) -> EsResult<f32> {
    if v < 0.0 {
        return Err(EsError::illegal_argument(format!(
            "{name} must be positive"
        )));
    }
    if v > 1.0 && v != v.floor() {
        return Err(EsError::illegal_argument(format!(
            "if {name} is greater than 1, it must not be a fraction"
        )));
    }
    Ok(v)
}

/// A term suggestion as read, with its field.
type TermSpec = (TermSuggestion, Option<String>);

fn term_int(v: &Value) -> EsResult<i64> {
    body::read_int(v)
}

fn term_float(v: &Value) -> EsResult<f32> {
    body::read_float(v).map(|f| f as f32)
}

/// `TermSuggestionBuilder#fromXContent`'s refusals: an object or array under any key, or an
/// unknown value key.
fn term_refusal(at: &At<'_>, t: Token) -> EsError {
    if matches!(t, Token::Object | Token::Array) {
        EsError::parsing(format!("suggester[term] parsing failed on [{}]", at.key))
    } else {
        EsError::parsing(format!(
            "suggester[term] doesn't support field [{}]",
            at.key
        ))
    }
}

/// `TermSuggestionBuilder#fromXContent`, with the setters' checks in document order.
static TERM: ObjectParser<TermSpec> = ObjectParser {
    name: "term",
    style: Style::Custom {
        unknown: |at, t, _| term_refusal(at, t),
        wrong_token: term_refusal,
    },
    fields: &[&[
        Field::new("analyzer", "vn", |(t, _), _, v| {
            t.analyzer = Some(text_of(v));
            Ok(())
        }),
        Field::new("field", "vn", |(_, field), _, v| {
            *field = Some(text_of(v));
            Ok(())
        }),
        Field::new("size", "vn", |(t, _), _, v| {
            let n = term_int(v)?;
            if n <= 0 {
                return Err(EsError::illegal_argument("size must be positive"));
            }
            t.size = n as usize;
            Ok(())
        }),
        Field::new("shard_size", "vn", |(t, _), _, v| {
            let n = term_int(v)?;
            if n <= 0 {
                return Err(EsError::illegal_argument("shardSize must be positive"));
            }
            t.shard_size = Some(n as usize);
            Ok(())
        }),
        Field::new("suggest_mode", "vn", |(t, _), _, v| {
            t.mode = match text_of(v).to_lowercase().as_str() {
                "missing" => SuggestMode::Missing,
                "popular" => SuggestMode::Popular,
                "always" => SuggestMode::Always,
                _ => {
                    return Err(EsError::illegal_argument(format!(
                        "Illegal suggest mode {}",
                        text_of(v)
                    )))
                }
            };
            Ok(())
        }),
        Field::new("accuracy", "vn", |(t, _), _, v| {
            let a = term_float(v)?;
            if !(0.0..=1.0).contains(&a) {
                return Err(EsError::illegal_argument(
                    "accuracy must be between 0 and 1",
                ));
            }
            t.accuracy = a;
            Ok(())
        }),
        Field::new("sort", "vn", |(t, _), _, v| {
            t.sort = match text_of(v).to_lowercase().as_str() {
                "score" => SortBy::Score,
                "frequency" => SortBy::Frequency,
                _ => {
                    return Err(EsError::illegal_argument(format!(
                        "Illegal suggest sort {}",
                        text_of(v)
                    )))
                }
            };
            Ok(())
        }),
        Field::new("string_distance", "vn", |(t, _), _, v| {
            t.distance = match text_of(v).to_lowercase().as_str() {
                "internal" => StringDistance::Internal,
                "damerau_levenshtein" => StringDistance::DamerauLevenshtein,
                "levenshtein" => StringDistance::Levenshtein,
                "jaro_winkler" => StringDistance::JaroWinkler,
                "ngram" => StringDistance::Ngram,
                _ => {
                    return Err(EsError::illegal_argument(format!(
                        "Illegal distance option {}",
                        text_of(v)
                    )))
                }
            };
            Ok(())
        }),
        Field::new("max_edits", "vn", |(t, _), _, v| {
            let n = term_int(v)?;
            if !(1..=2).contains(&n) {
                return Err(EsError::illegal_argument(format!(
                    "Illegal max_edits value {n}"
                )));
            }
            t.max_edits = n as u8;
            Ok(())
        }),
        Field::new("max_inspections", "vn", |(t, _), _, v| {
            let n = term_int(v)?;
            if n < 0 {
                return Err(EsError::illegal_argument("maxInspections must be positive"));
            }
            t.max_inspections = n as usize;
            Ok(())
        }),
        Field::new("max_term_freq", "vn", |(t, _), _, v| {
            t.max_term_freq = positive_fraction_or_count(term_float(v)?, "maxTermFreq")?;
            Ok(())
        }),
        Field::<TermSpec>::new("prefix_length", "vn", |(t, _), _, v| {
            let n = term_int(v)?;
            if n < 0 {
                return Err(EsError::illegal_argument("prefixLength must be positive"));
            }
            t.prefix_length = n as usize;
            Ok(())
        })
        .aliases(&["prefix_len"]),
        Field::<TermSpec>::new("min_word_length", "vn", |(t, _), _, v| {
            let n = term_int(v)?;
            if n < 1 {
                return Err(EsError::illegal_argument(
                    "minWordLength must be greater or equal to 1",
                ));
            }
            t.min_word_length = n as usize;
            Ok(())
        })
        .aliases(&["min_word_len"]),
        Field::new("min_doc_freq", "vn", |(t, _), _, v| {
            t.min_doc_freq = positive_fraction_or_count(term_float(v)?, "minDocFreq")?;
            Ok(())
        }),
        Field::new("lowercase_terms", "vn", |(t, _), at, v| {
            t.lowercase_terms = body::read_bool(v, at.key)?;
            Ok(())
        }),
    ]],
};

pub(super) fn parse_term(o: &Map<String, Value>) -> EsResult<TermSuggestion> {
    let mut spec = (TermSuggestion::new(String::new()), None);
    TERM.parse_into(&mut spec, o)?;
    let (mut t, field) = spec;
    let Some(field) = field else {
        return Err(EsError::bad_request(
            "parse_exception",
            "the required field option [field] is missing",
        ));
    };
    t.field = field;
    Ok(t)
}

/// One option of a suggestion entry.
#[derive(Clone, Debug, PartialEq)]
pub struct TermOption {
    pub text: String,
    pub score: f32,
    pub freq: u64,
}

/// One analyzed token of the suggest text with its options.
#[derive(Clone, Debug)]
struct Entry {
    text: String,
    offset: usize,
    length: usize,
    options: Vec<TermOption>,
}

/// ES's option order: score, then frequency, then text (or frequency first).
fn compare(sort: SortBy, a: &TermOption, b: &TermOption) -> std::cmp::Ordering {
    let by_score = b.score.total_cmp(&a.score);
    let by_freq = b.freq.cmp(&a.freq);
    match sort {
        SortBy::Score => by_score.then(by_freq),
        SortBy::Frequency => by_freq.then(by_score),
    }
    .then_with(|| a.text.cmp(&b.text))
}

/// Runs every suggestion over the shards of every target index and renders the `suggest`
/// section.
/// The fields a suggestion reads terms of (its field, and a phrase suggester's generators').
pub fn fields_read(s: &Suggestion) -> Vec<String> {
    match &s.kind {
        SuggestKind::Term(t) => vec![t.field.clone()],
        SuggestKind::Completion(c) => vec![c.field.clone()],
        SuggestKind::Phrase(p) => std::iter::once(p.field.clone())
            .chain(p.generators.iter().map(|g| g.field.clone()))
            .collect(),
    }
}

pub fn run(
    req: &SuggestRequest,
    targets: &[(&Arc<IndexService>, &[ShardSearcher])],
    typed_keys: bool,
    source: &lode_hits::source::SourceFilter,
) -> EsResult<Value> {
    let mut out = Map::new();
    for (name, s) in &req.suggestions {
        let text = s.text.as_ref().or(req.global_text.as_ref());
        let t = match &s.kind {
            SuggestKind::Term(t) => t,
            SuggestKind::Completion(c) => {
                use super::completion::Lookup;
                // `CompletionSuggestionContext#toQuery`: the prefix, else the regex, else
                // the text as a prefix.
                let lookup = match (&s.prefix, &s.regex, text) {
                    (Some(p), _, _) => Lookup::Prefix(p.clone()),
                    (None, Some(r), _) => Lookup::Regex(r.clone()),
                    (None, None, Some(t)) => Lookup::Prefix(t.clone()),
                    (None, None, None) => {
                        return Err(EsError::illegal_argument(
                            "The required text option is missing",
                        ))
                    }
                };
                let key = if typed_keys {
                    format!("completion#{name}")
                } else {
                    name.clone()
                };
                out.insert(key, super::completion::run(c, &lookup, targets, source)?);
                continue;
            }
            SuggestKind::Phrase(p) => {
                if s.prefix.is_some() || s.regex.is_some() {
                    let k = if s.prefix.is_some() {
                        "prefix"
                    } else {
                        "regex"
                    };
                    return Err(EsError::illegal_argument(format!(
                        "[{k}] is only supported by the completion suggester"
                    )));
                }
                let Some(text) = text else {
                    return Err(EsError::illegal_argument(
                        "The required text option is missing",
                    ));
                };
                let key = if typed_keys {
                    format!("phrase#{name}")
                } else {
                    name.clone()
                };
                out.insert(key, super::phrase::run(p, text, targets)?);
                continue;
            }
        };
        if s.prefix.is_some() || s.regex.is_some() {
            let k = if s.prefix.is_some() {
                "prefix"
            } else {
                "regex"
            };
            return Err(EsError::illegal_argument(format!(
                "[{k}] is only supported by the completion suggester"
            )));
        }
        let Some(text) = text else {
            return Err(EsError::illegal_argument(
                "The required text option is missing",
            ));
        };
        // One list of entries per shard; every shard analyzes the same text the same way
        // unless indices differ in analysis, as in ES (which then fails the reduce).
        let mut merged: Option<Vec<Entry>> = None;
        // An index given no shards (its field hidden by field-level security) still analyzes
        // the text: its entries have no options.
        let mut unread: Option<Vec<Entry>> = None;
        for (index, shards) in targets {
            let tokens = analyze(index, t, text)?;
            if shards.is_empty() && unread.is_none() {
                unread = Some(
                    tokens
                        .iter()
                        .map(|(tok, offset, length)| Entry {
                            text: tok.clone(),
                            offset: *offset,
                            length: *length,
                            options: Vec::new(),
                        })
                        .collect(),
                );
            }
            for shard in shards.iter() {
                // A shard without live documents answers its entries without options
                // (`Suggester#execute`'s empty suggestion), whatever its terms still count.
                let empty = shard.searcher.num_docs() == 0;
                let entries: Vec<Entry> = tokens
                    .iter()
                    .map(|(tok, offset, length)| {
                        Ok(Entry {
                            text: tok.clone(),
                            offset: *offset,
                            length: *length,
                            options: if empty {
                                Vec::new()
                            } else {
                                suggest_similar(shard, t, tok)?
                            },
                        })
                    })
                    .collect::<EsResult<_>>()?;
                merged = Some(match merged {
                    None => entries,
                    Some(mut acc) => {
                        if acc.len() != entries.len() {
                            return Err(EsError::new(
                                500,
                                "illegal_state_exception",
                                format!(
                                    "Can't merge suggest result, this might be caused by suggest calls across multiple indices with different analysis chains. Suggest entries have different sizes actual [{}] expected [{}]",
                                    entries.len(),
                                    acc.len()
                                ),
                            ));
                        }
                        for (a, e) in acc.iter_mut().zip(entries) {
                            for o in e.options {
                                match a.options.iter_mut().find(|x| x.text == o.text) {
                                    Some(x) => {
                                        x.score = x.score.max(o.score);
                                        x.freq += o.freq;
                                    }
                                    None => a.options.push(o),
                                }
                            }
                        }
                        acc
                    }
                });
            }
        }
        let entries: Vec<Value> = merged
            .or(unread)
            .unwrap_or_default()
            .into_iter()
            .map(|mut e| {
                e.options.sort_by(|a, b| compare(t.sort, a, b));
                e.options.truncate(t.size);
                json!({
                    "text": e.text,
                    "offset": e.offset,
                    "length": e.length,
                    "options": e.options.iter().map(|o| json!({
                        "text": o.text, "score": lode_engine::float::float_value(o.score), "freq": o.freq,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let key = if typed_keys {
            format!("term#{name}")
        } else {
            name.clone()
        };
        out.insert(key, Value::Array(entries));
    }
    Ok(Value::Object(out))
}

/// The suggest text's tokens with their UTF-16 offset and length, analyzed by the
/// suggestion's `analyzer` or the field's search analyzer (a keyword field's normalizer; the
/// whole text for other types, as Lucene's keyword analyzer).
pub(super) fn analyze(
    index: &IndexService,
    t: &TermSuggestion,
    text: &str,
) -> EsResult<Vec<(String, usize, usize)>> {
    let state = index.mapping_state();
    let Some(def) = state.mapping.field(&t.field) else {
        return Err(
            EsError::illegal_argument(format!("no mapping found for field [{}]", t.field))
                .with("index", index.name.clone()),
        );
    };
    let analyzer = match (&t.analyzer, def.ty) {
        (Some(name), _) => Some(index.analysis.analyzer(name).map_err(|_| {
            EsError::illegal_argument(format!("analyzer [{name}] doesn't exists"))
                .with("index", index.name.clone())
        })?),
        (None, FieldType::Text) => Some(
            index
                .analysis
                .analyzer(&def.search_analyzer)
                .map_err(|e| EsError::illegal_argument(e.to_string()))?,
        ),
        (None, FieldType::Keyword) => match &def.normalizer {
            Some(n) => {
                let norm = index
                    .analysis
                    .normalizer(n)
                    .map_err(|e| EsError::illegal_argument(e.to_string()))?;
                let len = text.encode_utf16().count();
                return Ok(vec![(norm.normalize(text), 0, len)]);
            }
            None => None,
        },
        _ => None,
    };
    Ok(match analyzer {
        Some(a) => a
            .analyze(text)
            .into_iter()
            .map(|t| (t.token, t.start_offset, t.end_offset - t.start_offset))
            .collect(),
        None => vec![(text.to_string(), 0, text.encode_utf16().count())],
    })
}

fn builders() -> &'static [LevenshteinAutomatonBuilder; 2] {
    static B: OnceLock<[LevenshteinAutomatonBuilder; 2]> = OnceLock::new();
    B.get_or_init(|| {
        [
            LevenshteinAutomatonBuilder::new(1, true),
            LevenshteinAutomatonBuilder::new(2, true),
        ]
    })
}

/// Terms that start with `prefix` exactly and whose rest is within the DFA's distance of the
/// query's rest (Lucene's `FuzzyAutomatonBuilder`: a literal prefix, then a Levenshtein
/// automaton with transpositions).
struct PrefixedLevenshtein<'a> {
    prefix: &'a [u8],
    dfa: &'a DFA,
}

#[derive(Clone, Copy)]
enum FuzzyState {
    Prefix(usize),
    Dfa(u32),
    Dead,
}

impl tantivy_fst::Automaton for PrefixedLevenshtein<'_> {
    type State = FuzzyState;

    fn start(&self) -> FuzzyState {
        if self.prefix.is_empty() {
            FuzzyState::Dfa(self.dfa.initial_state())
        } else {
            FuzzyState::Prefix(0)
        }
    }

    fn is_match(&self, s: &FuzzyState) -> bool {
        matches!(s, FuzzyState::Dfa(d) if matches!(self.dfa.distance(*d), Distance::Exact(_)))
    }

    fn can_match(&self, s: &FuzzyState) -> bool {
        match s {
            FuzzyState::Dead => false,
            FuzzyState::Dfa(d) => *d != SINK_STATE,
            FuzzyState::Prefix(_) => true,
        }
    }

    fn accept(&self, s: &FuzzyState, b: u8) -> FuzzyState {
        match *s {
            FuzzyState::Prefix(i) if self.prefix[i] == b => {
                if i + 1 == self.prefix.len() {
                    FuzzyState::Dfa(self.dfa.initial_state())
                } else {
                    FuzzyState::Prefix(i + 1)
                }
            }
            FuzzyState::Dfa(d) => FuzzyState::Dfa(self.dfa.transition(d, b)),
            _ => FuzzyState::Dead,
        }
    }
}

/// A candidate in the priority queue of `DirectSpellChecker#suggestSimilar`.
struct ScoreTerm {
    term: String,
    /// The competitive value (Lucene's `boost`): the score once the distance is applied.
    boost: f32,
    freq: u64,
}

/// The queue's head: the lowest boost, and among equal boosts the greatest term
/// (`ScoreTerm#compareTo`).
fn weakest(q: &[ScoreTerm]) -> Option<usize> {
    (0..q.len()).min_by(|&a, &b| {
        q[a].boost
            .total_cmp(&q[b].boost)
            .then_with(|| q[b].term.cmp(&q[a].term))
    })
}

/// One shard's doc frequency of `term` in `field` (deleted documents included, as Lucene's
/// `docFreq` until a merge), and its `maxDoc`.
pub(super) fn doc_freq(
    shard: &ShardSearcher,
    field: tantivy::schema::Field,
    term: &[u8],
) -> EsResult<u64> {
    let mut df = 0u64;
    for seg in shard.searcher.segment_readers() {
        let inv = seg
            .inverted_index(field)
            .map_err(|e| EsError::internal(e.to_string()))?;
        if let Some(info) = inv
            .terms()
            .get(term)
            .map_err(|e| EsError::internal(e.to_string()))?
        {
            df += u64::from(info.doc_freq);
        }
    }
    Ok(df)
}

/// `DirectSpellChecker#suggestSimilar(term, shardSize, reader, mode)` on one shard.
pub(super) fn suggest_similar(
    shard: &ShardSearcher,
    t: &TermSuggestion,
    token: &str,
) -> EsResult<Vec<TermOption>> {
    let num_sug = t.shard_size();
    if token.chars().count() < t.min_word_length {
        return Ok(Vec::new());
    }
    let Ok(field) = shard.schema.get_field(&t.field) else {
        return Ok(Vec::new());
    };
    if !matches!(
        shard.schema.get_field_entry(field).field_type(),
        tantivy::schema::FieldType::Str(_)
    ) {
        return Ok(Vec::new());
    }
    let term = if t.lowercase_terms {
        token.to_lowercase()
    } else {
        token.to_string()
    };
    let max_doc: u64 = shard
        .searcher
        .segment_readers()
        .iter()
        .map(|s| u64::from(s.max_doc()))
        .sum();
    let mut df = doc_freq(shard, field, term.as_bytes())?;
    if t.mode == SuggestMode::Missing && df > 0 {
        return Ok(Vec::new());
    }
    let mtf = t.max_term_freq;
    if (mtf >= 1.0 && df as f32 > mtf) || df as f64 > (mtf * max_doc as f32).ceil() as f64 {
        return Ok(Vec::new());
    }
    if t.mode != SuggestMode::Popular {
        df = 0;
    }
    if t.min_doc_freq >= 1.0 {
        df = df.max(t.min_doc_freq as u64);
    } else if t.min_doc_freq > 0.0 {
        let v = (t.min_doc_freq * max_doc as f32) as i64 - 1;
        df = df.max(v.max(0) as u64);
    }
    let inspections = num_sug.saturating_mul(t.max_inspections);
    // Try one edit first; then the full distance if that left room.
    let mut terms = pass(shard, field, t, &term, inspections, df, 1)?;
    if t.max_edits > 1 && terms.len() < inspections {
        for st in pass(shard, field, t, &term, inspections, df, t.max_edits)? {
            if !terms.iter().any(|x| x.term == st.term) {
                terms.push(st);
            }
        }
    }
    let mut out: Vec<TermOption> = terms
        .into_iter()
        .map(|s| TermOption {
            text: s.term,
            score: s.boost,
            freq: s.freq,
        })
        .collect();
    out.sort_by(|a, b| compare(t.sort, a, b));
    out.truncate(num_sug);
    Ok(out)
}

/// One `suggestSimilar(term, numSug, reader, docfreq, editDistance, accuracy)` pass: the
/// field's terms (in order, across the shard's segments) within `edits` of `term` after a
/// prefix of `max(prefix_length, edits - 1)` code points, kept in a queue of `num_sug`.
fn pass(
    shard: &ShardSearcher,
    field: tantivy::schema::Field,
    t: &TermSuggestion,
    term: &str,
    num_sug: usize,
    docfreq: u64,
    edits: u8,
) -> EsResult<Vec<ScoreTerm>> {
    let term_len = term.chars().count();
    let prefix_chars = t.prefix_length.max(edits as usize - 1).min(term_len);
    let split = term
        .char_indices()
        .nth(prefix_chars)
        .map_or(term.len(), |(i, _)| i);
    let (prefix, rest) = term.split_at(split);
    let dfa = builders()[edits as usize - 1].build_dfa(rest);
    // Candidates merged across segments, in term order.
    let mut cands: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    for seg in shard.searcher.segment_readers() {
        let inv = seg
            .inverted_index(field)
            .map_err(|e| EsError::internal(e.to_string()))?;
        let aut = PrefixedLevenshtein {
            prefix: prefix.as_bytes(),
            dfa: &dfa,
        };
        let mut stream = inv
            .terms()
            .search(aut)
            .into_stream()
            .map_err(|e| EsError::internal(e.to_string()))?;
        while stream.advance() {
            *cands.entry(stream.key().to_vec()).or_default() += u64::from(stream.value().doc_freq);
        }
    }
    let mut queue: Vec<ScoreTerm> = Vec::new();
    // FuzzyTermsEnum lowers its edit distance once the queue's bottom beats every score a
    // larger distance could reach.
    let mut max_edits = edits as u32;
    for (bytes, freq) in cands {
        let Ok(cand) = std::str::from_utf8(&bytes) else {
            continue;
        };
        let Distance::Exact(ed) = dfa.eval(&cand[prefix.len()..]) else {
            continue;
        };
        let ed = u32::from(ed);
        if ed > max_edits {
            continue;
        }
        let boost = if ed == 0 {
            1.0f32
        } else {
            let min_len = cand.chars().count().min(term_len);
            1.0f32 - ed as f32 / min_len as f32
        };
        if queue.len() >= num_sug {
            if let Some(w) = weakest(&queue) {
                if boost <= queue[w].boost {
                    continue;
                }
            }
        }
        if cand == term {
            continue;
        }
        if freq <= docfreq {
            continue;
        }
        let score = match t.distance {
            StringDistance::Internal => boost,
            d => distance(d, term, cand),
        };
        if score < t.accuracy {
            continue;
        }
        queue.push(ScoreTerm {
            term: cand.to_string(),
            boost: score,
            freq,
        });
        if queue.len() > num_sug {
            if let Some(w) = weakest(&queue) {
                queue.swap_remove(w);
            }
        }
        if queue.len() >= num_sug {
            if let Some(w) = weakest(&queue) {
                let bottom = queue[w].boost;
                while max_edits > 0 {
                    let max_boost = 1.0f32 - max_edits as f32 / term_len as f32;
                    if bottom < max_boost {
                        break;
                    }
                    max_edits -= 1;
                }
            }
        }
    }
    Ok(queue)
}

/// Lucene's `StringDistance` implementations as ES names them.
pub fn distance(d: StringDistance, target: &str, other: &str) -> f32 {
    match d {
        StringDistance::Internal | StringDistance::DamerauLevenshtein => {
            lucene_levenshtein(target, other)
        }
        StringDistance::Levenshtein => levenshtein(target, other),
        StringDistance::JaroWinkler => jaro_winkler(target, other),
        StringDistance::Ngram => ngram_distance(target, other, 2),
    }
}

/// `LuceneLevenshteinDistance`: optimal string alignment over code points, normalized by the
/// shorter length.
fn lucene_levenshtein(target: &str, other: &str) -> f32 {
    let s: Vec<char> = target.chars().collect();
    let t: Vec<char> = other.chars().collect();
    let (n, m) = (s.len(), t.len());
    if n == 0 || m == 0 {
        return if n == m { 0.0 } else { n.max(m) as f32 };
    }
    let mut d = vec![vec![0usize; m + 1]; n + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, v) in d[0].iter_mut().enumerate() {
        *v = j;
    }
    for j in 1..=m {
        for i in 1..=n {
            let cost = usize::from(s[i - 1] != t[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && s[i - 1] == t[j - 2] && s[i - 2] == t[j - 1] {
                v = v.min(d[i - 2][j - 2] + cost);
            }
            d[i][j] = v;
        }
    }
    1.0 - d[n][m] as f32 / n.min(m) as f32
}

/// `LevenshteinDistance`: plain edit distance over UTF-16 units, normalized by the longer.
fn levenshtein(target: &str, other: &str) -> f32 {
    let s: Vec<u16> = target.encode_utf16().collect();
    let t: Vec<u16> = other.encode_utf16().collect();
    let (n, m) = (s.len(), t.len());
    if n == 0 || m == 0 {
        return if n == m { 1.0 } else { 0.0 };
    }
    let mut p: Vec<usize> = (0..=n).collect();
    let mut d = vec![0usize; n + 1];
    for j in 1..=m {
        d[0] = j;
        for i in 1..=n {
            let cost = usize::from(s[i - 1] != t[j - 1]);
            d[i] = (d[i - 1] + 1).min(p[i] + 1).min(p[i - 1] + cost);
        }
        std::mem::swap(&mut p, &mut d);
    }
    1.0 - p[n] as f32 / n.max(m) as f32
}

/// Lucene's `JaroWinklerDistance` (threshold 0.7), over UTF-16 units.
fn jaro_winkler(s1: &str, s2: &str) -> f32 {
    let a: Vec<u16> = s1.encode_utf16().collect();
    let b: Vec<u16> = s2.encode_utf16().collect();
    let (max, min) = if a.len() > b.len() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    let range = (max.len() / 2).saturating_sub(1);
    let mut match_indexes = vec![-1i64; min.len()];
    let mut match_flags = vec![false; max.len()];
    let mut matches = 0usize;
    for (mi, c1) in min.iter().enumerate() {
        let lo = mi.saturating_sub(range);
        let hi = (mi + range + 1).min(max.len());
        for xi in lo..hi {
            if !match_flags[xi] && *c1 == max[xi] {
                match_indexes[mi] = xi as i64;
                match_flags[xi] = true;
                matches += 1;
                break;
            }
        }
    }
    let mut ms1 = Vec::with_capacity(matches);
    let mut ms2 = Vec::with_capacity(matches);
    for (i, c) in min.iter().enumerate() {
        if match_indexes[i] != -1 {
            ms1.push(*c);
        }
    }
    for (i, c) in max.iter().enumerate() {
        if match_flags[i] {
            ms2.push(*c);
        }
    }
    let transpositions = ms1.iter().zip(&ms2).filter(|(x, y)| x != y).count();
    let mut prefix = 0;
    for (x, y) in min.iter().zip(max.iter()) {
        if x == y {
            prefix += 1;
        } else {
            break;
        }
    }
    if matches == 0 {
        return 0.0;
    }
    let m = matches as f32;
    let j = (m / a.len() as f32 + m / b.len() as f32 + (m - (transpositions / 2) as f32) / m) / 3.0;
    if j < 0.7 {
        j
    } else {
        j + (0.1f32).min(1.0 / max.len() as f32) * prefix as f32 * (1.0 - j)
    }
}

/// Lucene's `NGramDistance` (Kondrak's n-gram similarity, n = 2), over UTF-16 units.
fn ngram_distance(source: &str, target: &str, n: usize) -> f32 {
    let s: Vec<u16> = source.encode_utf16().collect();
    let t: Vec<u16> = target.encode_utf16().collect();
    let (sl, tl) = (s.len(), t.len());
    if sl == 0 || tl == 0 {
        return if sl == tl { 1.0 } else { 0.0 };
    }
    let mut cost = 0usize;
    if sl < n || tl < n {
        let ni = sl.min(tl);
        for i in 0..ni {
            if s[i] == t[i] {
                cost += 1;
            }
        }
        return cost as f32 / sl.max(tl) as f32;
    }
    let mut sa = vec![0u16; sl + n - 1];
    sa[n - 1..].copy_from_slice(&s);
    let mut p: Vec<f32> = (0..=sl).map(|i| i as f32).collect();
    let mut d = vec![0f32; sl + 1];
    let mut t_j = vec![0u16; n];
    for j in 1..=tl {
        if j < n {
            t_j[..n - j].fill(0);
            for ti in n - j..n {
                t_j[ti] = t[ti - (n - j)];
            }
        } else {
            t_j.copy_from_slice(&t[j - n..j]);
        }
        d[0] = j as f32;
        for i in 1..=sl {
            cost = 0;
            let mut tn = n;
            for ni in 0..n {
                if sa[i - 1 + ni] != t_j[ni] {
                    cost += 1;
                } else if sa[i - 1 + ni] == 0 {
                    tn -= 1;
                }
            }
            let ec = cost as f32 / tn as f32;
            d[i] = (d[i - 1] + 1.0).min(p[i] + 1.0).min(p[i - 1] + ec);
        }
        std::mem::swap(&mut p, &mut d);
    }
    1.0 - p[sl] / sl.max(tl) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_with_defaults_and_refuses_bad_options() {
        let r = parse(&json!({"text": "x", "a": {"term": {"field": "f"}}})).unwrap();
        assert_eq!(r.global_text.as_deref(), Some("x"));
        let SuggestKind::Term(t) = &r.suggestions[0].1.kind else {
            panic!("a term suggestion")
        };
        assert_eq!(
            (
                t.size,
                t.shard_size(),
                t.max_edits,
                t.prefix_length,
                t.min_word_length
            ),
            (5, 5, 2, 1, 4)
        );
        let err = |v: Value| parse(&v).unwrap_err();
        let e = err(json!({"a": {"term": {"field": "f", "max_edits": 3}}}));
        assert_eq!(
            (e.kind.as_str(), e.reason.as_str()),
            ("illegal_argument_exception", "Illegal max_edits value 3")
        );
        let e = err(json!({"a": {"term": {"max_edits": 1}}}));
        assert_eq!(e.reason, "the required field option [field] is missing");
        let e = err(json!({"a": {"term": {"field": "f", "bogus": 1}}}));
        assert_eq!(e.reason, "suggester[term] doesn't support field [bogus]");
        let e = err(json!({"a": {"term": {"field": "f", "min_doc_freq": 2.5}}}));
        assert_eq!(
            e.reason,
            "if minDocFreq is greater than 1, it must not be a fraction"
        );
        let e = err(json!({"a": {"completion": {"field": "f", "contexts": {}}}}));
        assert!(e.reason.contains("not supported by Lode"));
        let e = err(json!({"a": {"phrase": {"field": "f", "collate": {}}}}));
        assert!(e.reason.contains("not supported by Lode"));
        let e = err(json!({"a": {"text": "x"}}));
        assert_eq!(e.reason, "missing suggestion object");
        let e = err(json!({"size": 3}));
        assert_eq!(e.reason, "[suggest] does not support [size]");
    }

    #[test]
    fn string_distances_as_lucene() {
        // OSA: a transposition is one edit; normalized by the shorter length.
        assert!((lucene_levenshtein("abcd", "abdc") - 0.75).abs() < 1e-6);
        assert!((lucene_levenshtein("abc", "abcde") - (1.0 - 2.0 / 3.0)).abs() < 1e-6);
        // Levenshtein: a transposition is two edits; normalized by the longer length.
        assert!((levenshtein("abcd", "abdc") - 0.5).abs() < 1e-6);
        assert!((levenshtein("abc", "abcde") - 0.6).abs() < 1e-6);
        assert_eq!(levenshtein("", ""), 1.0);
        // Jaro-Winkler of MARTHA / MARHTA is 0.961.
        assert!((jaro_winkler("MARTHA", "MARHTA") - 0.9611).abs() < 1e-3);
        assert_eq!(ngram_distance("abcd", "abcd", 2), 1.0);
        assert!(ngram_distance("abcd", "abce", 2) < 1.0);
    }

    #[test]
    fn the_automaton_keeps_the_prefix_exact() {
        use tantivy_fst::Automaton;
        let dfa = builders()[0].build_dfa("ple");
        let a = PrefixedLevenshtein {
            prefix: b"ap",
            dfa: &dfa,
        };
        let run = |s: &str| {
            let mut st = a.start();
            for b in s.bytes() {
                st = a.accept(&st, b);
            }
            a.is_match(&st)
        };
        assert!(run("apple"));
        assert!(run("appl"));
        assert!(run("aple"));
        assert!(!run("bpple"));
        assert!(!run("apxyz"));
    }
}
