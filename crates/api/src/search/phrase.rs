//! Elasticsearch's phrase suggester (`PhraseSuggester` on `NoisyChannelSpellChecker`), per
//! shard: the text is analyzed, each token becomes a candidate set (the original term and
//! the candidates of every `direct_generator`, drawn with the term suggester's
//! `DirectSpellChecker`, scored `distance * (ttf + 1) / (sumTtf + 1)`, merged and cut to
//! `shard_size`), then `CandidateScorer` walks the combinations with at most `max_errors`
//! corrections, scoring each path with the `WordScorer` of the smoothing model (n-gram
//! frequencies read from the suggest field: joined n-grams only exist in shingle fields, so
//! other fields back off to unigrams), keeping those above `confidence` times the input's
//! score. The shards' options are merged by text (highest score), sorted and cut to `size`.

use std::sync::Arc;

use lode_engine::index::IndexService;
use lode_engine::object_parser::{At, Field, ObjectParser, Style, Token};
use lode_engine::shard::ShardSearcher;
use lode_engine::{EsError, EsResult};
use serde_json::{json, Map, Value};
use tantivy::postings::Postings;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocSet, TERMINATED};

use super::body;
use super::suggest::{self, SuggestMode, TermSuggestion};

#[derive(Clone, Debug, PartialEq)]
pub enum Smoothing {
    StupidBackoff {
        discount: f64,
    },
    Laplace {
        alpha: f64,
    },
    Linear {
        trigram: f64,
        bigram: f64,
        unigram: f64,
    },
}

#[derive(Clone, Debug)]
pub struct PhraseSuggestion {
    pub field: String,
    pub analyzer: Option<String>,
    pub size: usize,
    pub shard_size: Option<usize>,
    pub real_word_error_likelihood: f64,
    pub confidence: f64,
    pub max_errors: f64,
    pub separator: String,
    pub gram_size: usize,
    pub force_unigrams: bool,
    pub token_limit: usize,
    pub generators: Vec<TermSuggestion>,
    pub smoothing: Smoothing,
    pub highlight: Option<(String, String)>,
}

fn parsing(reason: String) -> EsError {
    EsError::parsing(reason)
}

/// A positive integer, else "`name` must be positive".
fn positive(v: &Value, name: &str) -> EsResult<usize> {
    let n = body::read_int(v)?;
    if n <= 0 {
        return Err(EsError::illegal_argument(format!(
            "{name} must be positive"
        )));
    }
    Ok(n as usize)
}

fn float(v: &Value) -> EsResult<f32> {
    body::read_float(v).map(|f| f as f32)
}

/// ES's `DirectCandidateGeneratorBuilder` parser (a generator's field as read beside it);
/// `pre_filter` and `post_filter` are refused.
static GENERATOR: ObjectParser<(TermSuggestion, Option<String>)> = ObjectParser {
    name: "direct_generator",
    style: Style::Object,
    fields: &[&[
        Field::new("field", "*", |(_, field), _, v| {
            *field = v.as_str().map(str::to_string);
            Ok(())
        }),
        Field::new("pre_filter", "*", generator_option_not_supported),
        Field::new("post_filter", "*", generator_option_not_supported),
        Field::new("suggest_mode", "*", |(t, _), _, v| {
            t.mode = match v.as_str().unwrap_or_default().to_lowercase().as_str() {
                "missing" => SuggestMode::Missing,
                "popular" => SuggestMode::Popular,
                "always" => SuggestMode::Always,
                other => {
                    return Err(EsError::illegal_argument(format!(
                        "Illegal suggest mode {other}"
                    )))
                }
            };
            Ok(())
        }),
        Field::new("accuracy", "*", |(t, _), _, v| {
            t.accuracy = float(v)?;
            Ok(())
        }),
        Field::new("size", "*", |(t, _), _, v| {
            t.size = positive(v, "size")?;
            Ok(())
        }),
        Field::new("sort", "*", generator_sort_option),
        Field::new("string_distance", "*", generator_sort_option),
        Field::new("max_edits", "*", |(t, _), _, v| {
            let n = body::read_int(v)?;
            if !(1..=2).contains(&n) {
                return Err(EsError::illegal_argument(format!(
                    "Illegal max_edits value {n}"
                )));
            }
            t.max_edits = n as u8;
            Ok(())
        }),
        Field::new("max_inspections", "*", |(t, _), _, v| {
            t.max_inspections = body::read_int(v)?.max(0) as usize;
            Ok(())
        }),
        Field::new("max_term_freq", "*", |(t, _), _, v| {
            t.max_term_freq = float(v)?;
            Ok(())
        }),
        Field::new("prefix_length", "*", |(t, _), _, v| {
            t.prefix_length = body::read_int(v)?.max(0) as usize;
            Ok(())
        }),
        Field::new("min_word_length", "*", |(t, _), _, v| {
            t.min_word_length = body::read_int(v)?.max(1) as usize;
            Ok(())
        }),
        Field::new("min_doc_freq", "*", |(t, _), _, v| {
            t.min_doc_freq = float(v)?;
            Ok(())
        }),
    ]],
};

fn generator_option_not_supported(
    _: &mut (TermSuggestion, Option<String>),
    at: &At<'_>,
    _: &Value,
) -> EsResult<()> {
    Err(body::not_supported(&format!("direct_generator.{}", at.key)))
}

/// `sort` and `string_distance`, read (and refused) as the term suggester reads them.
fn generator_sort_option(
    (t, _): &mut (TermSuggestion, Option<String>),
    at: &At<'_>,
    v: &Value,
) -> EsResult<()> {
    let parsed = suggest::parse_term(
        &[
            (at.key.to_string(), v.clone()),
            ("field".to_string(), json!("x")),
        ]
        .into_iter()
        .collect(),
    )?;
    t.sort = parsed.sort;
    t.distance = parsed.distance;
    Ok(())
}

fn generator(o: &Map<String, Value>) -> EsResult<TermSuggestion> {
    let mut g = (TermSuggestion::new(String::new()), None);
    GENERATOR.parse_into(&mut g, o)?;
    let (mut t, field) = g;
    let Some(field) = field else {
        return Err(EsError::illegal_argument(
            "[direct_generator] requires field",
        ));
    };
    t.field = field;
    // The generator's `size` is the spell checker's number of suggestions.
    t.shard_size = Some(t.size);
    Ok(t)
}

/// The `smoothing` object as read: the last model written (ES's `SmoothingModel.fromXContent`).
#[derive(Default)]
struct SmoothingSpec {
    model: Option<Smoothing>,
}

/// `smoothing` keys are the models, each an object; ES's wording for another key or token.
static SMOOTHING: ObjectParser<SmoothingSpec> = ObjectParser {
    name: "smoothing",
    style: Style::Custom {
        unknown: |at, t, _| smoothing_refusal(at, t),
        wrong_token: smoothing_refusal,
    },
    fields: &[&[
        Field::new("stupid_backoff", "o", |s, _, v| {
            let m = model(&STUPID_BACKOFF, v)?;
            s.model = Some(Smoothing::StupidBackoff {
                discount: m.discount.unwrap_or(0.4),
            });
            Ok(())
        }),
        Field::new("laplace", "o", |s, _, v| {
            let m = model(&LAPLACE, v)?;
            s.model = Some(Smoothing::Laplace {
                alpha: m.alpha.unwrap_or(0.5),
            });
            Ok(())
        }),
        Field::new("linear_interpolation", "o", |s, _, v| {
            let m = model(&LINEAR_INTERPOLATION, v)?;
            let (t, b, u) = (
                m.trigram.unwrap_or(0.0),
                m.bigram.unwrap_or(0.0),
                m.unigram.unwrap_or(0.0),
            );
            if (t + b + u - 1.0).abs() > 0.001 {
                return Err(EsError::illegal_argument(
                    "linear smoothing lambdas must sum to 1",
                ));
            }
            s.model = Some(Smoothing::Linear {
                trigram: t,
                bigram: b,
                unigram: u,
            });
            Ok(())
        }),
    ]],
};

fn smoothing_refusal(at: &At<'_>, t: Token) -> EsError {
    if t == Token::Object {
        EsError::illegal_argument(format!(
            "suggester[phrase] doesn't support object field [{}]",
            at.key
        ))
    } else {
        parsing(format!(
            "[smoothing] unknown token [{}] after [{}]",
            t.es_name(),
            at.key
        ))
    }
}

/// A model's parameters as read.
#[derive(Default)]
struct ModelSpec {
    discount: Option<f64>,
    alpha: Option<f64>,
    trigram: Option<f64>,
    bigram: Option<f64>,
    unigram: Option<f64>,
}

fn model(p: &ObjectParser<ModelSpec>, v: &Value) -> EsResult<ModelSpec> {
    p.parse(v.as_object().expect("an object, as declared"))
}

/// `stupid_backoff` and `laplace` read their one parameter; Lode refuses another key (ES's
/// parsers skip it) in the wording of the linear model's refusal.
const MODEL: Style = Style::Custom {
    unknown: |at, _, _| model_refusal(at),
    wrong_token: |at, _| model_refusal(at),
};

fn model_refusal(at: &At<'_>) -> EsError {
    parsing(format!(
        "suggester[phrase][smoothing] doesn't support field [{}]",
        at.key
    ))
}

static STUPID_BACKOFF: ObjectParser<ModelSpec> = ObjectParser {
    name: "stupid_backoff",
    style: MODEL,
    fields: &[&[Field::new("discount", "v", |m, _, v| {
        m.discount = Some(body::read_float(v)?);
        Ok(())
    })]],
};

static LAPLACE: ObjectParser<ModelSpec> = ObjectParser {
    name: "laplace",
    style: MODEL,
    fields: &[&[Field::new("alpha", "v", |m, _, v| {
        m.alpha = Some(body::read_float(v)?);
        Ok(())
    })]],
};

/// A lambda: a number, not negative (ES's `LinearInterpolation.fromXContent`).
fn lambda(at: &At<'_>, v: &Value) -> EsResult<f64> {
    let x = body::read_float(v)?;
    if x < 0.0 {
        return Err(EsError::illegal_argument(format!(
            "{} must be positive",
            at.key
        )));
    }
    Ok(x)
}

static LINEAR_INTERPOLATION: ObjectParser<ModelSpec> = ObjectParser {
    name: "linear_interpolation",
    style: Style::Custom {
        unknown: |at, t, _| linear_refusal(at, t),
        wrong_token: linear_refusal,
    },
    fields: &[&[
        Field::new("trigram_lambda", "v", |m, at, v| {
            m.trigram = Some(lambda(at, v)?);
            Ok(())
        }),
        Field::new("bigram_lambda", "v", |m, at, v| {
            m.bigram = Some(lambda(at, v)?);
            Ok(())
        }),
        Field::new("unigram_lambda", "v", |m, at, v| {
            m.unigram = Some(lambda(at, v)?);
            Ok(())
        }),
    ]],
};

fn linear_refusal(at: &At<'_>, t: Token) -> EsError {
    if t.is_value() {
        EsError::illegal_argument(format!(
            "suggester[phrase][smoothing][linear] doesn't support field [{}]",
            at.key
        ))
    } else {
        parsing(format!(
            "[linear_interpolation] unknown token [{}] after [{}]",
            t.es_name(),
            at.key
        ))
    }
}

fn smoothing(o: &Map<String, Value>) -> EsResult<Smoothing> {
    SMOOTHING
        .parse(o)?
        .model
        .ok_or_else(|| EsError::illegal_argument("smoothing model must be set"))
}

/// A `phrase` object as read: the suggestion, its field and whether `smoothing` was given.
struct PhraseSpec {
    p: PhraseSuggestion,
    field: Option<String>,
    smoothing_set: bool,
}

/// `PhraseSuggestionBuilder#fromXContent`'s refusals: an object or array under a key that
/// does not take one, or an unknown value key.
fn phrase_refusal(at: &At<'_>, t: Token) -> EsError {
    if matches!(t, Token::Object | Token::Array) {
        parsing(format!(
            "suggester[phrase]  doesn't support array field [{}]",
            at.key
        ))
    } else {
        parsing(format!(
            "suggester[phrase] doesn't support field [{}]",
            at.key
        ))
    }
}

/// A `phrase` suggester's value of at least (or above) a bound.
fn phrase_float(v: &Value) -> EsResult<f32> {
    Ok(body::read_float(v)? as f32)
}

/// The `phrase` suggester (`PhraseSuggestionBuilder#fromXContent`); `collate` is refused.
static PHRASE: ObjectParser<PhraseSpec> = ObjectParser {
    name: "phrase",
    style: Style::Custom {
        unknown: |at, t, _| phrase_refusal(at, t),
        wrong_token: phrase_refusal,
    },
    fields: &[&[
        Field::new("direct_generator", "a", |s, _, v| {
            for g in v.as_array().into_iter().flatten() {
                let Value::Object(g) = g else {
                    return Err(parsing(
                        "suggester[phrase] direct_generator must be objects".into(),
                    ));
                };
                s.p.generators.push(generator(g)?);
            }
            Ok(())
        }),
        Field::new("smoothing", "o", |s, _, v| {
            if s.smoothing_set {
                return Err(parsing("only one smoothing model supported".to_string()));
            }
            s.smoothing_set = true;
            s.p.smoothing = smoothing(v.as_object().expect("an object, as declared"))?;
            Ok(())
        }),
        Field::new("highlight", "o", |s, _, v| {
            let mut tags = (None, None);
            HIGHLIGHT.parse_into(&mut tags, v.as_object().expect("an object, as declared"))?;
            s.p.highlight = match tags {
                (Some(a), Some(b)) => Some((a, b)),
                (None, None) => None,
                _ => {
                    return Err(EsError::illegal_argument(
                        "Pre and post tag must both be null or both not be null.",
                    ))
                }
            };
            Ok(())
        }),
        Field::new("collate", "*", |_, _, _| {
            Err(body::not_supported("phrase suggester collate"))
        }),
        Field::new("analyzer", "vn", |s, _, v| {
            s.p.analyzer = v.as_str().map(str::to_string);
            Ok(())
        }),
        Field::new("field", "vn", |s, _, v| {
            s.field = v.as_str().map(str::to_string);
            Ok(())
        }),
        Field::new("size", "vn", |s, _, v| {
            s.p.size = positive(v, "size")?;
            Ok(())
        }),
        Field::new("shard_size", "vn", |s, _, v| {
            s.p.shard_size = Some(positive(v, "shardSize")?);
            Ok(())
        }),
        Field::new("real_word_error_likelihood", "vn", |s, _, v| {
            let x = phrase_float(v)?;
            if x <= 0.0 {
                return Err(EsError::illegal_argument(
                    "real_word_error_likelihood must be > 0.0",
                ));
            }
            s.p.real_word_error_likelihood = f64::from(x);
            Ok(())
        }),
        Field::new("confidence", "vn", |s, _, v| {
            let x = phrase_float(v)?;
            if x < 0.0 {
                return Err(EsError::illegal_argument("confidence must be >= 0.0"));
            }
            s.p.confidence = f64::from(x);
            Ok(())
        }),
        Field::new("max_errors", "vn", |s, _, v| {
            let x = phrase_float(v)?;
            if x <= 0.0 {
                return Err(EsError::illegal_argument("max_error must be > 0.0"));
            }
            s.p.max_errors = f64::from(x);
            Ok(())
        }),
        Field::new("separator", "vn", |s, _, v| match v.as_str() {
            Some(sep) => {
                s.p.separator = sep.to_string();
                Ok(())
            }
            None => Err(EsError::illegal_argument("separator cannot be set to null")),
        }),
        Field::new("gram_size", "vn", |s, _, v| {
            let n = body::read_int(v)?;
            if n < 1 {
                return Err(EsError::illegal_argument("gramSize must be >= 1"));
            }
            s.p.gram_size = n as usize;
            Ok(())
        }),
        Field::new("force_unigrams", "vn", |s, at, v| {
            s.p.force_unigrams = body::read_bool(v, at.key)?;
            Ok(())
        }),
        Field::new("token_limit", "vn", |s, _, v| {
            let n = body::read_int(v)?;
            if n <= 0 {
                return Err(EsError::illegal_argument("token_limit must be >= 1"));
            }
            s.p.token_limit = n as usize;
            Ok(())
        }),
    ]],
};

/// The phrase suggester's `highlight` (`pre_tag`, `post_tag`).
static HIGHLIGHT: ObjectParser<(Option<String>, Option<String>)> = ObjectParser {
    name: "highlight",
    style: Style::Custom {
        unknown: |at, _, _| {
            parsing(format!(
                "suggester[phrase][highlight] doesn't support field [{}]",
                at.key
            ))
        },
        wrong_token: |at, _| {
            parsing(format!(
                "suggester[phrase][highlight] doesn't support field [{}]",
                at.key
            ))
        },
    },
    fields: &[&[
        Field::new("pre_tag", "*", |(pre, _), _, v| {
            *pre = v.as_str().map(str::to_string);
            Ok(())
        }),
        Field::new("post_tag", "*", |(_, post), _, v| {
            *post = v.as_str().map(str::to_string);
            Ok(())
        }),
    ]],
};

/// Parses the `phrase` object as `PhraseSuggestionBuilder#fromXContent`.
pub fn parse(o: &Map<String, Value>) -> EsResult<PhraseSuggestion> {
    let mut s = PhraseSpec {
        p: PhraseSuggestion {
            field: String::new(),
            analyzer: None,
            size: 5,
            shard_size: None,
            real_word_error_likelihood: 0.95,
            confidence: 1.0,
            max_errors: 1.0,
            separator: " ".to_string(),
            gram_size: 1,
            force_unigrams: true,
            token_limit: 10,
            generators: Vec::new(),
            smoothing: Smoothing::StupidBackoff { discount: 0.4 },
            highlight: None,
        },
        field: None,
        smoothing_set: false,
    };
    PHRASE.parse_into(&mut s, o)?;
    let PhraseSpec { mut p, field, .. } = s;
    let Some(field) = field else {
        return Err(EsError::bad_request(
            "parse_exception",
            "the required field option [field] is missing",
        ));
    };
    if p.generators.is_empty() {
        let mut g = TermSuggestion::new(field.clone());
        g.shard_size = Some(g.size);
        p.generators.push(g);
    }
    p.field = field;
    Ok(p)
}

impl PhraseSuggestion {
    /// `shard_size` defaults to `max(size, 5)`.
    fn shard_size(&self) -> usize {
        self.shard_size.unwrap_or(self.size.max(5))
    }
}

/// A field's statistics on one shard, as Lucene's `MultiTerms` gives them.
struct FieldStats {
    field: tantivy::schema::Field,
    freqs: bool,
    sum_ttf: u64,
    /// `Terms#size`: known for one segment only (-1 for `MultiTerms`).
    num_terms: i64,
}

fn internal(e: impl std::fmt::Display) -> EsError {
    EsError::internal(e.to_string())
}

fn field_stats(shard: &ShardSearcher, name: &str) -> EsResult<Option<FieldStats>> {
    let Ok(field) = shard.schema.get_field(name) else {
        return Ok(None);
    };
    let freqs = match shard.schema.get_field_entry(field).field_type() {
        tantivy::schema::FieldType::Str(o) => o
            .get_indexing_options()
            .is_some_and(|i| i.index_option().has_freq()),
        _ => return Ok(None),
    };
    let mut sum = 0u64;
    let mut with_terms = Vec::new();
    for seg in shard.searcher.segment_readers() {
        let inv = seg.inverted_index(field).map_err(internal)?;
        let n = inv.terms().num_terms();
        if n == 0 {
            continue;
        }
        with_terms.push(n as i64);
        if freqs {
            sum += inv.total_num_tokens();
        } else {
            // Docs-only fields: Lucene's `sumTotalTermFreq` is `sumDocFreq`.
            let mut s = inv.terms().stream().map_err(internal)?;
            while s.advance() {
                sum += u64::from(s.value().doc_freq);
            }
        }
    }
    if with_terms.is_empty() {
        return Ok(None);
    }
    let num_terms = if with_terms.len() == 1 {
        with_terms[0]
    } else {
        -1
    };
    Ok(Some(FieldStats {
        field,
        freqs,
        sum_ttf: sum,
        num_terms,
    }))
}

/// `(docFreq, totalTermFreq)` of a term (deleted documents included, as Lucene).
fn term_stats(shard: &ShardSearcher, fs: &FieldStats, term: &[u8]) -> EsResult<(u64, u64)> {
    let (mut df, mut ttf) = (0u64, 0u64);
    for seg in shard.searcher.segment_readers() {
        let inv = seg.inverted_index(fs.field).map_err(internal)?;
        let Some(info) = inv.terms().get(term).map_err(internal)? else {
            continue;
        };
        df += u64::from(info.doc_freq);
        if fs.freqs {
            let mut p = inv
                .read_postings_from_terminfo(&info, IndexRecordOption::WithFreqs)
                .map_err(internal)?;
            let mut d = p.doc();
            while d != TERMINATED {
                ttf += u64::from(p.term_freq());
                d = p.advance();
            }
        } else {
            ttf += u64::from(info.doc_freq);
        }
    }
    Ok((df, ttf))
}

#[derive(Clone, Debug)]
struct Candidate {
    term: String,
    ttf: u64,
    distance: f64,
    score: f64,
    user_input: bool,
}

fn candidate_score(ttf: u64, distance: f64, dictionary: u64) -> f64 {
    distance * ((ttf as f64 + 1.0) / (dictionary as f64 + 1.0))
}

struct CandidateSet {
    original: Candidate,
    candidates: Vec<Candidate>,
}

/// `WordScorer` with its smoothing model, over the suggest field of one shard.
struct WordScorer<'a> {
    shard: &'a ShardSearcher,
    stats: FieldStats,
    vocabulary: f64,
    num_terms: f64,
    rwel: f64,
    separator: String,
    smoothing: Smoothing,
    cache: std::cell::RefCell<std::collections::HashMap<String, u64>>,
}

impl WordScorer<'_> {
    fn frequency(&self, term: &str) -> EsResult<u64> {
        if let Some(f) = self.cache.borrow().get(term) {
            return Ok(*f);
        }
        let (_, ttf) = term_stats(self.shard, &self.stats, term.as_bytes())?;
        self.cache.borrow_mut().insert(term.to_string(), ttf);
        Ok(ttf)
    }

    fn join(&self, parts: &[&str]) -> String {
        parts.join(&self.separator)
    }

    fn channel(&self, c: &Candidate) -> f64 {
        if c.distance == 1.0 {
            self.rwel
        } else {
            c.distance
        }
    }

    fn unigram(&self, w: &Candidate) -> EsResult<f64> {
        let f = self.frequency(&w.term)? as f64;
        Ok(match self.smoothing {
            Smoothing::Laplace { alpha } => {
                (alpha + f) / (self.vocabulary + alpha * self.num_terms)
            }
            _ => (1.0 + f) / (self.vocabulary + self.num_terms),
        })
    }

    fn bigram(&self, w: &Candidate, w1: &Candidate) -> EsResult<f64> {
        let count = self.frequency(&self.join(&[&w1.term, &w.term]))? as f64;
        Ok(match self.smoothing {
            Smoothing::StupidBackoff { discount } => {
                if count < 1.0 {
                    discount * self.unigram(w)?
                } else {
                    count / (w1.ttf as f64 + 0.00000000001)
                }
            }
            Smoothing::Laplace { alpha } => {
                (alpha + count) / (w1.ttf as f64 + alpha * self.num_terms)
            }
            Smoothing::Linear {
                trigram,
                bigram,
                unigram,
            } => {
                let sum = trigram + bigram + unigram;
                let (b, u) = (bigram / sum, unigram / sum);
                if count < 1.0 {
                    u * self.unigram(w)?
                } else {
                    b * (count / (0.5 + w1.ttf as f64)) + u * self.unigram(w)?
                }
            }
        })
    }

    fn trigram(&self, w: &Candidate, w1: &Candidate, w2: &Candidate) -> EsResult<f64> {
        Ok(match self.smoothing {
            Smoothing::StupidBackoff { discount } => {
                let bi = self.frequency(&self.join(&[&w1.term, &w.term]))? as f64;
                if bi < 1.0 {
                    return Ok(discount * self.unigram(w)?);
                }
                let tri = self.frequency(&self.join(&[&w2.term, &w1.term, &w.term]))? as f64;
                if tri < 1.0 {
                    discount * (bi / (w1.ttf as f64 + 0.00000000001))
                } else {
                    tri / (bi + 0.00000000001)
                }
            }
            Smoothing::Laplace { alpha } => {
                let tri = self.frequency(&self.join(&[&w2.term, &w1.term, &w.term]))? as f64;
                let bi = self.frequency(&self.join(&[&w1.term, &w.term]))? as f64;
                (alpha + tri) / (bi + alpha * self.num_terms)
            }
            Smoothing::Linear {
                trigram,
                bigram,
                unigram,
            } => {
                // ES joins these n-grams in reverse order (w, w-1, w-2).
                let count = self.frequency(&self.join(&[&w.term, &w1.term, &w2.term]))? as f64;
                if count < 1.0 {
                    return self.bigram(w, w1);
                }
                let t = trigram / (trigram + bigram + unigram);
                let bi = self.frequency(&self.join(&[&w.term, &w1.term]))? as f64;
                t * (count / (1.0 + bi)) + self.bigram(w, w1)?
            }
        })
    }

    fn score(
        &self,
        path: &[Candidate],
        sets: &[CandidateSet],
        at: usize,
        gram: usize,
    ) -> EsResult<f64> {
        let channel = self.channel(&path[at]);
        let _ = &sets[at].original;
        let p = if at == 0 || gram == 1 {
            self.unigram(&path[at])?
        } else if at == 1 || gram == 2 {
            self.bigram(&path[at], &path[at - 1])?
        } else {
            self.trigram(&path[at], &path[at - 1], &path[at - 2])?
        };
        Ok((channel * p).log10())
    }
}

#[derive(Clone, Debug)]
struct Correction {
    score: f64,
    candidates: Vec<Candidate>,
}

/// `Correction#compareTo`: lower scores first; on a tie later terms are weaker.
fn correction_cmp(
    a_score: f64,
    a: &[Candidate],
    b_score: f64,
    b: &[Candidate],
) -> std::cmp::Ordering {
    if a_score == b_score {
        for (x, y) in a.iter().zip(b) {
            let c = x.term.as_bytes().cmp(y.term.as_bytes());
            if c.is_ne() {
                return c.reverse();
            }
        }
        a.len().cmp(&b.len())
    } else {
        a_score.total_cmp(&b_score)
    }
}

struct Finder<'a, 'b> {
    scorer: &'a WordScorer<'b>,
    sets: &'a [CandidateSet],
    gram: usize,
    max: usize,
    cutoff: f64,
    queue: Vec<Correction>,
}

impl Finder<'_, '_> {
    fn update_top(&mut self, path: &[Candidate], score: f64) {
        let score = score.exp();
        if score <= self.cutoff {
            return;
        }
        if self.queue.len() < self.max {
            self.queue.push(Correction {
                score,
                candidates: path.to_vec(),
            });
            return;
        }
        // The weakest correction (the priority queue's top).
        let (wi, _) = self
            .queue
            .iter()
            .enumerate()
            .min_by(|(_, a), (_, b)| correction_cmp(a.score, &a.candidates, b.score, &b.candidates))
            .expect("non-empty queue");
        let w = &self.queue[wi];
        if correction_cmp(w.score, &w.candidates, score, path).is_lt() {
            self.queue[wi] = Correction {
                score,
                candidates: path.to_vec(),
            };
        }
    }

    fn find(
        &mut self,
        path: &mut Vec<Candidate>,
        ord: usize,
        left: usize,
        path_score: f64,
    ) -> EsResult<()> {
        let current = &self.sets[ord];
        let last = ord == self.sets.len() - 1;
        let mut options: Vec<(&Candidate, usize)> = vec![(&current.original, left)];
        if left > 0 {
            for c in &current.candidates {
                options.push((c, if last { left } else { left - 1 }));
            }
        }
        for (c, next_left) in options {
            path.truncate(ord);
            path.push(c.clone());
            let s = path_score + self.scorer.score(path, self.sets, ord, self.gram)?;
            if last {
                self.update_top(path, s);
            } else {
                self.find(path, ord + 1, next_left, s)?;
            }
        }
        Ok(())
    }
}

fn draw_candidates(
    shard: &ShardSearcher,
    gen: &TermSuggestion,
    stats: &FieldStats,
    set: &mut CandidateSet,
) -> EsResult<()> {
    let original = &set.original;
    let mut g = gen.clone();
    if gen.mode != SuggestMode::Always {
        let (df, _) = term_stats(shard, stats, original.term.as_bytes())?;
        let max_doc: u64 = shard
            .searcher
            .segment_readers()
            .iter()
            .map(|s| u64::from(s.max_doc()))
            .sum();
        let plateau = if gen.min_doc_freq >= 1.0 {
            gen.min_doc_freq as i64
        } else {
            (max_doc as f32 * gen.min_doc_freq) as i64
        };
        let threshold = if df > 0 {
            let x = df as f64 * ((df as f64 - plateau as f64).log10() * (1.0 / 5f64.log10())) + 1.0;
            x.round().max(0.0) as i64
        } else {
            0
        };
        if threshold >= i64::from(i32::MAX) {
            return Ok(());
        }
        if gen.min_doc_freq < threshold as f32 {
            g.min_doc_freq = threshold as f32;
        }
    }
    let words = suggest::suggest_similar(shard, &g, &original.term)?;
    let mut new: Vec<Candidate> = Vec::new();
    for w in words {
        let (_, ttf) = term_stats(shard, stats, w.text.as_bytes())?;
        let distance = f64::from(w.score);
        new.push(Candidate {
            score: candidate_score(ttf, distance, stats.sum_ttf),
            term: w.text,
            ttf,
            distance,
            user_input: false,
        });
    }
    for c in std::mem::take(&mut set.candidates) {
        if !new.iter().any(|n| n.term == c.term) {
            new.push(c);
        }
    }
    new.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.term.as_bytes().cmp(b.term.as_bytes()))
    });
    set.candidates = new;
    Ok(())
}

/// One shard's options and cutoff score.
fn shard_suggest(
    index: &IndexService,
    shard: &ShardSearcher,
    p: &PhraseSuggestion,
    text: &str,
) -> EsResult<Vec<(String, Option<String>, f32)>> {
    if shard.searcher.num_docs() == 0 {
        return Ok(Vec::new());
    }
    let mut gens = Vec::new();
    for g in &p.generators {
        if let Some(s) = field_stats(shard, &g.field)? {
            gens.push((g, s));
        }
    }
    let Some(suggest_stats) = field_stats(shard, &p.field)? else {
        return Ok(Vec::new());
    };
    if gens.is_empty() {
        return Ok(Vec::new());
    }
    let mut t = TermSuggestion::new(p.field.clone());
    t.analyzer = p.analyzer.clone();
    let tokens = suggest::analyze(index, &t, text)?;
    if tokens.is_empty() || tokens.len() >= p.token_limit {
        return Ok(Vec::new());
    }
    let (g0, s0) = &gens[0];
    let _ = g0;
    let mut sets = Vec::with_capacity(tokens.len());
    for (tok, _, _) in &tokens {
        let (_, ttf) = term_stats(shard, s0, tok.as_bytes())?;
        sets.push(CandidateSet {
            original: Candidate {
                term: tok.clone(),
                ttf,
                distance: 1.0,
                score: candidate_score(ttf, 1.0, s0.sum_ttf),
                user_input: true,
            },
            candidates: Vec::new(),
        });
    }
    let num_candidates = p.shard_size();
    for set in &mut sets {
        for (g, s) in &gens {
            draw_candidates(shard, g, s, set)?;
        }
        if set.candidates.len() > num_candidates {
            set.candidates.sort_by(|a, b| b.score.total_cmp(&a.score));
            set.candidates.truncate(num_candidates);
        }
    }
    let vocabulary = suggest_stats.sum_ttf as f64;
    let num_terms = if vocabulary + suggest_stats.num_terms as f64 > 1.0 {
        suggest_stats.num_terms as f64
    } else {
        0.0
    };
    let scorer = WordScorer {
        shard,
        stats: suggest_stats,
        vocabulary,
        num_terms,
        rwel: p.real_word_error_likelihood,
        separator: p.separator.clone(),
        smoothing: p.smoothing.clone(),
        cache: Default::default(),
    };
    // Java's `Double.MIN_VALUE`.
    let mut cutoff = f64::from_bits(1);
    if p.confidence > 0.0 {
        let originals: Vec<Candidate> = sets.iter().map(|s| s.original.clone()).collect();
        let mut sum = 0.0;
        for i in 0..sets.len() {
            sum += scorer.score(&originals, &sets, i, p.gram_size)?;
        }
        cutoff = sum.exp() * p.confidence;
    }
    let misspellings = if p.max_errors >= 1.0 {
        p.max_errors as usize
    } else {
        (p.max_errors * sets.len() as f64).round() as usize
    };
    let mut finder = Finder {
        scorer: &scorer,
        sets: &sets,
        gram: p.gram_size,
        max: p.shard_size(),
        cutoff,
        queue: Vec::new(),
    };
    finder.find(&mut Vec::new(), 0, misspellings.max(1), 0.0)?;
    let mut corrections = finder.queue;
    corrections.sort_by(|a, b| correction_cmp(b.score, &b.candidates, a.score, &a.candidates));
    let mut out = Vec::new();
    for c in corrections {
        let score = c.score as f32;
        if f64::from(score) <= cutoff {
            continue;
        }
        let text = c
            .candidates
            .iter()
            .map(|x| x.term.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let highlighted = p.highlight.as_ref().map(|(pre, post)| {
            let n = c.candidates.len();
            c.candidates
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    if x.user_input {
                        return x.term.clone();
                    }
                    let mut s = String::new();
                    if i == 0 || c.candidates[i - 1].user_input {
                        s.push_str(pre);
                    }
                    s.push_str(&x.term);
                    if i + 1 == n || c.candidates[i + 1].user_input {
                        s.push_str(post);
                    }
                    s
                })
                .collect::<Vec<_>>()
                .join(" ")
        });
        out.push((text, highlighted, score));
    }
    Ok(out)
}

/// Runs a phrase suggestion over every target's shards and renders its entry.
pub fn run(
    p: &PhraseSuggestion,
    text: &str,
    targets: &[(&Arc<IndexService>, &[ShardSearcher])],
) -> EsResult<Value> {
    let mut merged: Vec<(String, Option<String>, f32)> = Vec::new();
    for (index, shards) in targets {
        let state = index.mapping_state();
        if state.mapping.field(&p.field).is_none() {
            return Err(EsError::illegal_argument(format!(
                "no mapping found for field [{}]",
                p.field
            )));
        }
        for g in &p.generators {
            if state.mapping.field(&g.field).is_none() {
                return Err(EsError::illegal_argument(format!(
                    "No mapping found for field [{}]",
                    g.field
                )));
            }
        }
        for shard in shards.iter() {
            for (t, h, s) in shard_suggest(index, shard, p, text)? {
                match merged.iter_mut().find(|m| m.0 == t) {
                    Some(m) => {
                        if s > m.2 {
                            m.2 = s;
                            m.1 = h;
                        }
                    }
                    None => merged.push((t, h, s)),
                }
            }
        }
    }
    merged.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    merged.truncate(p.size);
    let options: Vec<Value> = merged
        .into_iter()
        .map(|(t, h, s)| {
            let mut o = Map::new();
            o.insert("text".into(), json!(t));
            if let Some(h) = h {
                o.insert("highlighted".into(), json!(h));
            }
            o.insert("score".into(), lode_engine::float::float_value(s));
            Value::Object(o)
        })
        .collect();
    Ok(json!([{
        "text": text,
        "offset": 0,
        "length": text.encode_utf16().count(),
        "options": options,
    }]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_defaults_and_refusals() {
        let p = parse(json!({"field": "body"}).as_object().unwrap()).unwrap();
        assert_eq!(
            (p.size, p.shard_size(), p.gram_size, p.token_limit),
            (5, 5, 1, 10)
        );
        assert_eq!(p.smoothing, Smoothing::StupidBackoff { discount: 0.4 });
        assert_eq!(p.generators.len(), 1);
        assert_eq!(p.generators[0].field, "body");
        let e = parse(
            json!({"field": "b", "collate": {"query": {}}})
                .as_object()
                .unwrap(),
        );
        assert!(e.unwrap_err().reason.contains("not supported by Lode"));
        let e = parse(
            json!({"field": "b", "smoothing": {"linear_interpolation": {"unigram_lambda": 0.5}}})
                .as_object()
                .unwrap(),
        );
        assert_eq!(
            e.unwrap_err().reason,
            "linear smoothing lambdas must sum to 1"
        );
        let smoothing_err = |s: Value| {
            let e = parse(json!({"field": "b", "smoothing": s}).as_object().unwrap()).unwrap_err();
            (e.kind, e.reason)
        };
        assert_eq!(
            smoothing_err(json!({"laplace": {"alpha": 0.2, "discount": 0.1}})),
            (
                "parsing_exception".into(),
                "suggester[phrase][smoothing] doesn't support field [discount]".into()
            )
        );
        assert_eq!(
            smoothing_err(json!({"linear_interpolation": {"alpha": 0.2}})),
            (
                "illegal_argument_exception".into(),
                "suggester[phrase][smoothing][linear] doesn't support field [alpha]".into()
            )
        );
        assert_eq!(
            smoothing_err(json!({"linear_interpolation": {"unigram_lambda": [1]}})).1,
            "[linear_interpolation] unknown token [START_ARRAY] after [unigram_lambda]"
        );
        assert_eq!(
            smoothing_err(json!({"good_turing": {}})),
            (
                "illegal_argument_exception".into(),
                "suggester[phrase] doesn't support object field [good_turing]".into()
            )
        );
        assert_eq!(
            smoothing_err(json!({"laplace": 1})).1,
            "[smoothing] unknown token [VALUE_NUMBER] after [laplace]"
        );
        assert_eq!(
            smoothing_err(json!({"linear_interpolation": {"unigram_lambda": -1}})).1,
            "unigram_lambda must be positive"
        );
        let p = parse(
            json!({"field": "b", "smoothing": {"laplace": {"alpha": 0.2}, "stupid_backoff": {}}})
                .as_object()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(p.smoothing, Smoothing::StupidBackoff { discount: 0.4 });
        let e = parse(
            json!({"field": "b", "highlight": {"pre_tag": "<em>"}})
                .as_object()
                .unwrap(),
        );
        assert!(e.is_err());
    }

    fn c(term: &str) -> Candidate {
        Candidate {
            term: term.into(),
            ttf: 0,
            distance: 1.0,
            score: 0.0,
            user_input: false,
        }
    }

    #[test]
    fn corrections_order_by_score_then_earlier_terms() {
        use std::cmp::Ordering::*;
        assert_eq!(correction_cmp(1.0, &[c("a")], 2.0, &[c("a")]), Less);
        // On a tie, "zzz" is weaker than "aaa".
        assert_eq!(correction_cmp(1.0, &[c("zzz")], 1.0, &[c("aaa")]), Less);
    }
}
