//! [`AnalysisRegistry`]: the built-in analyzers and components plus the custom ones defined in
//! an index's `settings.index.analysis`, resolved by name like Elasticsearch does.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::analyzer::{Analyzer, Chain, DEFAULT_POSITION_INCREMENT_GAP};
use crate::char_filters::{CharFilter, HtmlStrip, MappingTable};
use crate::error::{illegal, AnalysisError};
use crate::filters::shingle::Shingle;
use crate::filters::{StopWords, TokenFilter};
use crate::settings::{
    as_object, expand_dotted, get_bool, get_list, get_str, get_usize, reject_path, Obj,
};
use crate::tokenizer::{chars, standard, CharGroup, NGramTokenizer, TokenChars, Tokenizer};

/// Built-in analyzers, also usable as `type` of a configured analyzer. `ik_smart`,
/// `ik_max_word` (the IK plugin's) and `smartcn` (analysis-smartcn's) are built in.
const BUILTIN_ANALYZERS: [&str; 8] = [
    "standard",
    "simple",
    "whitespace",
    "keyword",
    "stop",
    "ik_smart",
    "ik_max_word",
    "smartcn",
];

/// Elasticsearch's default `index.max_shingle_diff`.
pub const DEFAULT_MAX_SHINGLE_DIFF: usize = 3;

/// Lucene's hard upper bound for `max_token_length`.
const MAX_TOKEN_LENGTH_LIMIT: usize = 1024 * 1024;

/// Name given to chains built by [`AnalysisRegistry::build_custom`].
const ANONYMOUS: &str = "_anonymous_";

/// Built-in plus index-defined analyzers, normalizers, tokenizers, token filters and char
/// filters. Cheap to clone and shareable between threads.
#[derive(Clone, Debug)]
pub struct AnalysisRegistry {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    analyzers: BTreeMap<String, Analyzer>,
    normalizers: BTreeMap<String, Analyzer>,
    tokenizers: HashMap<String, Tokenizer>,
    filters: HashMap<String, TokenFilter>,
    char_filters: HashMap<String, CharFilter>,
    /// `index.max_shingle_diff` (ES default 3).
    max_shingle_diff: usize,
}

impl AnalysisRegistry {
    /// Builds the registry from the built-ins plus `analysis_settings`, the JSON object found
    /// at `settings.index.analysis` (`analyzer`, `tokenizer`, `filter`, `char_filter`,
    /// `normalizer`; flat dotted keys are accepted too). Every definition is validated now,
    /// so an invalid one fails here as index creation fails in Elasticsearch.
    pub fn new(analysis_settings: Option<&Value>) -> Result<Self, AnalysisError> {
        Self::with_limits(analysis_settings, DEFAULT_MAX_SHINGLE_DIFF)
    }

    /// As [`AnalysisRegistry::new`] with the index's `index.max_shingle_diff`.
    pub fn with_limits(
        analysis_settings: Option<&Value>,
        max_shingle_diff: usize,
    ) -> Result<Self, AnalysisError> {
        let mut inner = Inner {
            max_shingle_diff,
            ..Inner::default()
        };
        let no_params = Map::new();
        for name in BUILTIN_ANALYZERS {
            let chain = builtin_analyzer(name, name, &no_params)?;
            inner
                .analyzers
                .insert(name.to_string(), Analyzer::new(chain));
        }
        inner.normalizers.insert(
            "lowercase".to_string(),
            Analyzer::new(Chain {
                name: "lowercase".to_string(),
                char_filters: Vec::new(),
                tokenizer: Tokenizer::Keyword,
                filters: vec![TokenFilter::Lowercase],
                position_increment_gap: DEFAULT_POSITION_INCREMENT_GAP,
            }),
        );

        let settings = match analysis_settings.map(expand_dotted) {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(o)) => o,
            Some(other) => {
                return Err(illegal(format!(
                    "analysis settings must be an object, got [{other}]"
                )))
            }
        };

        for (name, def) in section(&settings, "char_filter")? {
            let obj = as_object("char_filter", name, def)?;
            let ty = component_type("char_filter", name, obj)?;
            let cf = char_filter_from_def(ty, obj)?
                .ok_or_else(|| illegal(format!("Unknown char_filter type [{ty}] for [{name}]")))?;
            inner.char_filters.insert(name.clone(), cf);
        }
        for (name, def) in section(&settings, "tokenizer")? {
            let obj = as_object("tokenizer", name, def)?;
            let ty = component_type("tokenizer", name, obj)?;
            let t = tokenizer_from_def(ty, obj)?
                .ok_or_else(|| illegal(format!("Unknown tokenizer type [{ty}] for [{name}]")))?;
            inner.tokenizers.insert(name.clone(), t);
        }
        for (name, def) in section(&settings, "filter")? {
            let obj = as_object("filter", name, def)?;
            let ty = component_type("filter", name, obj)?;
            let f = filter_from_def(ty, obj, max_shingle_diff)?
                .ok_or_else(|| illegal(format!("Unknown filter type [{ty}] for [{name}]")))?;
            inner.filters.insert(name.clone(), f);
        }
        for (name, def) in section(&settings, "analyzer")? {
            if name.starts_with('_') {
                return Err(illegal(format!(
                    "analyzer name must not start with '_'. got \"{name}\""
                )));
            }
            let chain = inner.analyzer_from_def(name, def)?;
            inner.analyzers.insert(name.clone(), Analyzer::new(chain));
        }
        for (name, def) in section(&settings, "normalizer")? {
            let chain = inner.normalizer_from_def(name, def)?;
            inner.normalizers.insert(name.clone(), Analyzer::new(chain));
        }
        Ok(AnalysisRegistry {
            inner: Arc::new(inner),
        })
    }

    /// The analyzer registered under `name` (custom definitions shadow built-ins).
    /// `default` is the index default (the `standard` analyzer unless configured) and
    /// `default_search` falls back to `default`.
    ///
    /// The names [`sayt_shingle_analyzer`] and [`sayt_prefix_analyzer`] make resolve to the
    /// named analyzer wrapped as a `search_as_you_type` subfield's.
    pub fn analyzer(&self, name: &str) -> Result<Analyzer, AnalysisError> {
        if let Some((base, derived)) = name.split_once(SAYT_MARK) {
            let size = |s: &str| s.parse::<usize>().ok().filter(|n| (2..=4).contains(n));
            let filter = if let Some(n) = derived.strip_prefix("shingle_").and_then(size) {
                TokenFilter::Shingle(Box::new(Shingle::new(n, n, false)))
            } else if let Some(n) = derived.strip_prefix("prefix_").and_then(size) {
                TokenFilter::SaytPrefix { size: n }
            } else {
                return Err(illegal(format!("failed to find analyzer [{name}]")));
            };
            return Ok(self.analyzer(base)?.with_filter(name.to_string(), filter));
        }
        let analyzers = &self.inner.analyzers;
        let found = match name {
            "default" => analyzers
                .get("default")
                .or_else(|| analyzers.get("standard")),
            "default_search" => analyzers
                .get("default_search")
                .or_else(|| analyzers.get("default"))
                .or_else(|| analyzers.get("standard")),
            _ => analyzers.get(name),
        };
        found
            .cloned()
            .ok_or_else(|| illegal(format!("failed to find analyzer [{name}]")))
    }

    /// The normalizer registered under `name` (`lowercase` is built in).
    pub fn normalizer(&self, name: &str) -> Result<Analyzer, AnalysisError> {
        self.inner
            .normalizers
            .get(name)
            .cloned()
            .ok_or_else(|| illegal(format!("failed to find normalizer under [{name}]")))
    }

    /// Names of all analyzers: built-ins and custom ones, sorted.
    pub fn analyzer_names(&self) -> Vec<String> {
        self.inner.analyzers.keys().cloned().collect()
    }

    /// Names of all normalizers, sorted.
    pub fn normalizer_names(&self) -> Vec<String> {
        self.inner.normalizers.keys().cloned().collect()
    }

    /// Builds an ad-hoc chain for `POST _analyze`: `tokenizer` is a name, an inline
    /// definition object, or `null` (keyword tokenizer, as ES does for filter-only requests);
    /// `filters` and `char_filters` are names or inline definitions.
    pub fn build_custom(
        &self,
        tokenizer: &Value,
        filters: &[Value],
        char_filters: &[Value],
    ) -> Result<Analyzer, AnalysisError> {
        let inner = &self.inner;
        let tokenizer = match tokenizer {
            Value::Null => Tokenizer::Keyword,
            Value::String(name) => inner
                .tokenizer(name)
                .ok_or_else(|| illegal(format!("failed to find tokenizer under [{name}]")))?,
            Value::Object(obj) => {
                let ty = anonymous_type("tokenizer", obj)?;
                tokenizer_from_def(ty, obj)?.ok_or_else(|| {
                    illegal(format!("failed to find global tokenizer under [{ty}]"))
                })?
            }
            other => {
                return Err(illegal(format!(
                    "tokenizer must be a name or an object, got [{other}]"
                )))
            }
        };
        let filters = filters
            .iter()
            .map(|f| match f {
                Value::String(name) => inner
                    .filter(name)
                    .ok_or_else(|| illegal(format!("failed to find filter under [{name}]"))),
                Value::Object(obj) => {
                    let ty = anonymous_type("filter", obj)?;
                    filter_from_def(ty, obj, inner.max_shingle_diff)?.ok_or_else(|| {
                        illegal(format!("failed to find global filter under [{ty}]"))
                    })
                }
                other => Err(illegal(format!(
                    "filter must be a name or an object, got [{other}]"
                ))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let char_filters = char_filters
            .iter()
            .map(|c| match c {
                Value::String(name) => inner
                    .char_filter(name)
                    .ok_or_else(|| illegal(format!("failed to find char_filter under [{name}]"))),
                Value::Object(obj) => {
                    let ty = anonymous_type("char_filter", obj)?;
                    char_filter_from_def(ty, obj)?.ok_or_else(|| {
                        illegal(format!("failed to find global char_filter under [{ty}]"))
                    })
                }
                other => Err(illegal(format!(
                    "char_filter must be a name or an object, got [{other}]"
                ))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Analyzer::new(Chain {
            name: ANONYMOUS.to_string(),
            char_filters,
            tokenizer,
            filters,
            position_increment_gap: DEFAULT_POSITION_INCREMENT_GAP,
        }))
    }
}

/// Marks the name of an analyzer derived for a `search_as_you_type` subfield.
const SAYT_MARK: &str = "#sayt_";

/// The analyzer of a `search_as_you_type` field's `._{size}gram` subfield: `base` followed by
/// shingles of exactly `size` tokens (ES's `SearchAsYouTypeAnalyzer.withShingle`).
pub fn sayt_shingle_analyzer(base: &str, size: usize) -> String {
    format!("{base}{SAYT_MARK}shingle_{size}")
}

/// The analyzer of a `search_as_you_type` field's `._index_prefix` subfield: `base`, then
/// shingles of `size` tokens with trailing padding, then edge n-grams of 1 to 20 characters
/// (ES's `SearchAsYouTypeAnalyzer.withShingleAndPrefix`).
pub fn sayt_prefix_analyzer(base: &str, size: usize) -> String {
    format!("{base}{SAYT_MARK}prefix_{size}")
}

/// Entries of one section (`analyzer`, `filter`, ...) of the analysis settings.
fn section<'a>(
    settings: &'a Obj,
    key: &str,
) -> Result<Vec<(&'a String, &'a Value)>, AnalysisError> {
    match settings.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(o)) => Ok(o.iter().collect()),
        Some(other) => Err(illegal(format!(
            "analysis [{key}] settings must be an object, got [{other}]"
        ))),
    }
}

/// The `type` of a named component definition, with Elasticsearch's (odd but exact) error.
fn component_type<'a>(component: &str, name: &str, obj: &'a Obj) -> Result<&'a str, AnalysisError> {
    get_str(obj, "type").ok_or_else(|| {
        illegal(format!(
            "{component} [{name}] must specify either an analyzer type, or a tokenizer"
        ))
    })
}

fn anonymous_type<'a>(component: &str, obj: &'a Obj) -> Result<&'a str, AnalysisError> {
    get_str(obj, "type").ok_or_else(|| {
        illegal(format!(
            "Missing [type] setting for anonymous {component}: {}",
            Value::Object(obj.clone())
        ))
    })
}

impl Inner {
    fn tokenizer(&self, name: &str) -> Option<Tokenizer> {
        self.tokenizers
            .get(name)
            .cloned()
            .or_else(|| tokenizer_from_def(name, &Map::new()).ok().flatten())
    }

    fn filter(&self, name: &str) -> Option<TokenFilter> {
        self.filters.get(name).cloned().or_else(|| {
            filter_from_def(name, &Map::new(), self.max_shingle_diff)
                .ok()
                .flatten()
        })
    }

    fn char_filter(&self, name: &str) -> Option<CharFilter> {
        self.char_filters.get(name).cloned().or_else(|| match name {
            "html_strip" => Some(CharFilter::HtmlStrip(HtmlStrip::default())),
            _ => None,
        })
    }

    fn analyzer_from_def(&self, name: &str, def: &Value) -> Result<Chain, AnalysisError> {
        let obj = as_object("analyzer", name, def)?;
        match get_str(obj, "type") {
            None if obj.contains_key("tokenizer") => self.custom_analyzer(name, obj),
            None => Err(illegal(format!(
                "analyzer [{name}] must specify either an analyzer type, or a tokenizer"
            ))),
            Some("custom") => self.custom_analyzer(name, obj),
            Some(ty) if BUILTIN_ANALYZERS.contains(&ty) => builtin_analyzer(ty, name, obj),
            Some(ty) => Err(illegal(format!(
                "Unknown analyzer type [{ty}] for [{name}]"
            ))),
        }
    }

    fn custom_analyzer(&self, name: &str, obj: &Obj) -> Result<Chain, AnalysisError> {
        let tokenizer_name = get_str(obj, "tokenizer").ok_or_else(|| {
            illegal(format!(
                "Custom Analyzer [{name}] must be configured with a tokenizer"
            ))
        })?;
        let tokenizer = self.tokenizer(tokenizer_name).ok_or_else(|| {
            illegal(format!(
                "Custom Analyzer [{name}] failed to find tokenizer under name [{tokenizer_name}]"
            ))
        })?;
        let char_filters = get_list(obj, "char_filter")?
            .iter()
            .map(|cf| {
                self.char_filter(cf).ok_or_else(|| {
                    illegal(format!(
                        "Custom Analyzer [{name}] failed to find char_filter under name [{cf}]"
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let filters = get_list(obj, "filter")?
            .iter()
            .map(|f| {
                self.filter(f).ok_or_else(|| {
                    illegal(format!(
                        "Custom Analyzer [{name}] failed to find filter under name [{f}]"
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Chain {
            name: name.to_string(),
            char_filters,
            tokenizer,
            filters,
            position_increment_gap: get_usize(
                obj,
                "position_increment_gap",
                DEFAULT_POSITION_INCREMENT_GAP,
            )?,
        })
    }

    fn normalizer_from_def(&self, name: &str, def: &Value) -> Result<Chain, AnalysisError> {
        let obj = as_object("normalizer", name, def)?;
        match get_str(obj, "type") {
            None | Some("custom") => {}
            Some(ty) => {
                return Err(illegal(format!(
                    "Unknown normalizer type [{ty}] for [{name}]"
                )))
            }
        }
        if obj.contains_key("tokenizer") {
            return Err(illegal(format!(
                "Custom normalizer [{name}] cannot configure a tokenizer"
            )));
        }
        let char_filters = get_list(obj, "char_filter")?
            .iter()
            .map(|cf| {
                let found = self.char_filter(cf).ok_or_else(|| {
                    illegal(format!(
                        "Custom normalizer [{name}] failed to find char_filter under name [{cf}]"
                    ))
                })?;
                match found {
                    CharFilter::HtmlStrip(_) => Err(illegal(format!(
                        "Custom normalizer [{name}] may not use char filter [{cf}]"
                    ))),
                    ok => Ok(ok),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let filters = get_list(obj, "filter")?
            .iter()
            .map(|f| {
                let found = self.filter(f).ok_or_else(|| {
                    illegal(format!(
                        "Custom normalizer [{name}] failed to find filter under name [{f}]"
                    ))
                })?;
                if !found.allowed_in_normalizer() {
                    return Err(illegal(format!(
                        "Custom normalizer [{name}] may not use filter [{f}]"
                    )));
                }
                Ok(found.for_normalizer())
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Chain {
            name: name.to_string(),
            char_filters,
            tokenizer: Tokenizer::Keyword,
            filters,
            position_increment_gap: DEFAULT_POSITION_INCREMENT_GAP,
        })
    }
}

/// A built-in analyzer (`standard`, `simple`, `whitespace`, `keyword`, `stop`) with params.
fn builtin_analyzer(kind: &str, name: &str, params: &Obj) -> Result<Chain, AnalysisError> {
    let chain = |tokenizer, filters| Chain {
        name: name.to_string(),
        char_filters: Vec::new(),
        tokenizer,
        filters,
        position_increment_gap: DEFAULT_POSITION_INCREMENT_GAP,
    };
    let stop = |default: &[&str]| -> Result<Option<TokenFilter>, AnalysisError> {
        reject_path(params, "stopwords_path")?;
        let words = StopWords::parse(params.get("stopwords"), default, false)?;
        Ok((!words.is_empty()).then(|| TokenFilter::Stop {
            words: Arc::new(words),
            remove_trailing: true,
        }))
    };
    Ok(match kind {
        "standard" => {
            let max = max_token_length(params, standard::DEFAULT_MAX_TOKEN_LENGTH)?;
            let mut filters = vec![TokenFilter::Lowercase];
            filters.extend(stop(&[])?);
            chain(
                Tokenizer::Standard {
                    max_token_length: max,
                },
                filters,
            )
        }
        "simple" => chain(Tokenizer::Letter { lowercase: true }, Vec::new()),
        "whitespace" => {
            let max = max_token_length(params, chars::DEFAULT_MAX_WORD_LEN)?;
            chain(
                Tokenizer::Whitespace {
                    max_token_length: max,
                },
                Vec::new(),
            )
        }
        "keyword" => chain(Tokenizer::Keyword, Vec::new()),
        "ik_smart" => chain(Tokenizer::Ik { smart: true }, Vec::new()),
        "ik_max_word" => chain(Tokenizer::Ik { smart: false }, Vec::new()),
        // Lucene's SmartChineseAnalyzer: HMMChineseTokenizer, PorterStemFilter, StopFilter
        // with its punctuation stop set.
        "smartcn" => chain(
            Tokenizer::Smartcn,
            vec![TokenFilter::PorterStem, smartcn_stop(None)?],
        ),
        "stop" => chain(
            Tokenizer::Letter { lowercase: true },
            stop(&crate::filters::stopwords::ENGLISH_STOP_WORDS)?
                .into_iter()
                .collect(),
        ),
        other => {
            return Err(illegal(format!(
                "Unknown analyzer type [{other}] for [{name}]"
            )))
        }
    })
}

/// The `smartcn_stop` filter: the smartcn analyzer's stop set unless `stopwords` says
/// otherwise (`_smartcn_` names the default list, as in the plugin).
fn smartcn_stop(stopwords: Option<&Value>) -> Result<TokenFilter, AnalysisError> {
    use crate::tokenizer::chinese::SMARTCN_STOP_WORDS;
    let words = match stopwords {
        Some(Value::String(s)) if s == "_smartcn_" => {
            StopWords::parse(None, &SMARTCN_STOP_WORDS, false)?
        }
        Some(Value::Array(list)) if list.iter().any(|v| v == "_smartcn_") => {
            let mut all: Vec<Value> = list.iter().filter(|v| *v != "_smartcn_").cloned().collect();
            all.extend(
                SMARTCN_STOP_WORDS
                    .iter()
                    .map(|w| Value::String(w.to_string())),
            );
            StopWords::parse(Some(&Value::Array(all)), &[], false)?
        }
        other => StopWords::parse(other, &SMARTCN_STOP_WORDS, false)?,
    };
    Ok(TokenFilter::Stop {
        words: Arc::new(words),
        remove_trailing: true,
    })
}

fn max_token_length(params: &Obj, default: usize) -> Result<usize, AnalysisError> {
    let max = get_usize(params, "max_token_length", default)?;
    if max == 0 {
        return Err(illegal("maxTokenLength must be greater than zero"));
    }
    if max > MAX_TOKEN_LENGTH_LIMIT {
        return Err(illegal(format!(
            "maxTokenLength may not exceed {MAX_TOKEN_LENGTH_LIMIT}"
        )));
    }
    Ok(max)
}

/// Builds a tokenizer of type `ty`; `Ok(None)` when the type is unknown.
fn tokenizer_from_def(ty: &str, p: &Obj) -> Result<Option<Tokenizer>, AnalysisError> {
    Ok(Some(match ty {
        "standard" => Tokenizer::Standard {
            max_token_length: max_token_length(p, standard::DEFAULT_MAX_TOKEN_LENGTH)?,
        },
        "letter" => Tokenizer::Letter { lowercase: false },
        "lowercase" => Tokenizer::Letter { lowercase: true },
        "whitespace" => Tokenizer::Whitespace {
            max_token_length: max_token_length(p, chars::DEFAULT_MAX_WORD_LEN)?,
        },
        "keyword" => Tokenizer::Keyword,
        "ik_smart" | "ik_max_word" => ik_tokenizer(ty, p)?,
        "smartcn_tokenizer" => Tokenizer::Smartcn,
        "char_group" => Tokenizer::CharGroup {
            group: char_group(p)?,
            max_token_length: max_token_length(p, chars::DEFAULT_MAX_WORD_LEN)?,
        },
        "ngram" | "edge_ngram" => {
            let edge = ty == "edge_ngram";
            let (min_gram, max_gram) = gram_sizes(p)?;
            Tokenizer::NGram(NGramTokenizer {
                min_gram,
                max_gram,
                edge,
                token_chars: token_chars(p)?,
            })
        }
        _ => return Ok(None),
    }))
}

/// IK's tokenizer settings: `use_smart` picks the segmentation whatever the type says; the
/// others change output Lode does not reproduce, so they are refused unless left at IK's
/// defaults.
fn ik_tokenizer(ty: &str, p: &Obj) -> Result<Tokenizer, AnalysisError> {
    let smart = get_bool(p, "use_smart", ty == "ik_smart")?;
    if !get_bool(p, "enable_lowercase", true)? {
        return Err(illegal(
            "[enable_lowercase: false] of the IK tokenizer is not supported by Lode",
        ));
    }
    if get_bool(p, "keep_punctuation", false)? {
        return Err(illegal(
            "[keep_punctuation: true] of the IK tokenizer is not supported by Lode",
        ));
    }
    if p.contains_key("enable_remote_dict") || p.contains_key("ext_dict") {
        return Err(illegal(
            "custom or remote IK dictionaries are not supported by Lode",
        ));
    }
    Ok(Tokenizer::Ik { smart })
}

fn gram_sizes(p: &Obj) -> Result<(usize, usize), AnalysisError> {
    let min = get_usize(p, "min_gram", 1)?;
    let max = get_usize(p, "max_gram", 2)?;
    if min < 1 {
        return Err(illegal("minGram must be greater than zero"));
    }
    if min > max {
        return Err(illegal("minGram must not be greater than maxGram"));
    }
    Ok((min, max))
}

fn char_group(p: &Obj) -> Result<CharGroup, AnalysisError> {
    let mut group = CharGroup::default();
    for entry in get_list(p, "tokenize_on_chars")? {
        let mut chars = entry.chars();
        match (chars.next(), chars.next()) {
            (None, _) => {
                return Err(illegal(
                    "[tokenize_on_chars] cannot contain empty characters",
                ));
            }
            (Some(c), None) => group.chars.push(c),
            (Some('\\'), Some(_)) => group.chars.push(parse_escaped_char(&entry)?),
            _ => match entry.as_str() {
                "whitespace" => group.whitespace = true,
                "letter" => group.letter = true,
                "digit" => group.digit = true,
                "punctuation" => group.punctuation = true,
                "symbol" => group.symbol = true,
                _ => return Err(illegal(format!("Invalid escaped char in [{entry}]"))),
            },
        }
    }
    Ok(group)
}

fn parse_escaped_char(s: &str) -> Result<char, AnalysisError> {
    let invalid = || illegal(format!("Invalid escaped char in [{s}]"));
    match &s[1..] {
        "n" => Ok('\n'),
        "t" => Ok('\t'),
        "r" => Ok('\r'),
        "b" => Ok('\u{8}'),
        "f" => Ok('\u{c}'),
        "\\" => Ok('\\'),
        "'" => Ok('\''),
        "\"" => Ok('"'),
        rest => match rest.strip_prefix('u') {
            Some(hex) if hex.len() == 4 => u32::from_str_radix(hex, 16)
                .ok()
                .and_then(char::from_u32)
                .ok_or_else(invalid),
            _ => Err(invalid()),
        },
    }
}

fn token_chars(p: &Obj) -> Result<TokenChars, AnalysisError> {
    let mut tc = TokenChars::default();
    for class in get_list(p, "token_chars")? {
        match class.as_str() {
            "letter" => tc.letter = true,
            "digit" => tc.digit = true,
            "whitespace" => tc.whitespace = true,
            "punctuation" => tc.punctuation = true,
            "symbol" => tc.symbol = true,
            "custom" => {
                let custom = get_str(p, "custom_token_chars").unwrap_or_default();
                if custom.is_empty() {
                    return Err(illegal(
                        "Token type: 'custom' requires setting `custom_token_chars`",
                    ));
                }
                tc.custom.extend(custom.chars());
            }
            other => {
                return Err(illegal(format!(
                    "Unknown token type: '{other}', must be one of [letter, digit, whitespace, punctuation, symbol, custom]"
                )))
            }
        }
    }
    Ok(tc)
}

/// Builds a token filter of type `ty`; `Ok(None)` when the type is unknown.
fn filter_from_def(
    ty: &str,
    p: &Obj,
    max_shingle_diff: usize,
) -> Result<Option<TokenFilter>, AnalysisError> {
    Ok(Some(match ty {
        "shingle" => TokenFilter::Shingle(Box::new(shingle_filter(p, max_shingle_diff)?)),
        "lowercase" => match get_str(p, "language") {
            None => TokenFilter::Lowercase,
            Some(lang) => {
                return Err(illegal(format!(
                    "lowercase filter language [{lang}] is not supported by Lode"
                )))
            }
        },
        "uppercase" => TokenFilter::Uppercase,
        "asciifolding" => TokenFilter::AsciiFolding {
            preserve_original: get_bool(p, "preserve_original", false)?,
        },
        "stop" => {
            reject_path(p, "stopwords_path")?;
            let ignore_case = get_bool(p, "ignore_case", false)?;
            let words = StopWords::parse(
                p.get("stopwords"),
                &crate::filters::stopwords::ENGLISH_STOP_WORDS,
                ignore_case,
            )?;
            TokenFilter::Stop {
                words: Arc::new(words),
                remove_trailing: get_bool(p, "remove_trailing", true)?,
            }
        }
        "length" => {
            let min = get_usize(p, "min", 0)?;
            let max = get_usize(p, "max", i32::MAX as usize)?;
            if min > max {
                return Err(illegal(
                    "maximum length must not be greater than minimum length",
                ));
            }
            TokenFilter::Length { min, max }
        }
        "smartcn_stop" => {
            reject_path(p, "stopwords_path")?;
            smartcn_stop(p.get("stopwords"))?
        }
        "porter_stem" => TokenFilter::PorterStem,
        "trim" => TokenFilter::Trim,
        "unique" => TokenFilter::Unique {
            only_on_same_position: get_bool(p, "only_on_same_position", false)?,
        },
        "truncate" => {
            let length = get_usize(p, "length", 10)?;
            if length == 0 {
                return Err(illegal("length parameter must be a positive number: 0"));
            }
            TokenFilter::Truncate { length }
        }
        "reverse" => TokenFilter::Reverse,
        "ngram" | "edge_ngram" => {
            let (min_gram, max_gram) = gram_sizes(p)?;
            if ty == "edge_ngram" && get_str(p, "side").is_some_and(|s| s != "front") {
                return Err(illegal(
                    "edge_ngram side [back] is not supported; use the reverse filter",
                ));
            }
            TokenFilter::NGram {
                min_gram,
                max_gram,
                preserve_original: get_bool(p, "preserve_original", false)?,
                edge: ty == "edge_ngram",
            }
        }
        _ => return Ok(None),
    }))
}

/// Builds a char filter of type `ty`; `Ok(None)` when the type is unknown.
fn char_filter_from_def(ty: &str, p: &Obj) -> Result<Option<CharFilter>, AnalysisError> {
    Ok(Some(match ty {
        "html_strip" => CharFilter::HtmlStrip(HtmlStrip {
            escaped_tags: get_list(p, "escaped_tags")?
                .into_iter()
                .map(|t| t.to_ascii_lowercase())
                .collect(),
        }),
        "mapping" => {
            reject_path(p, "mappings_path")?;
            let rules =
                match p.get("mappings") {
                    Some(Value::Array(rules)) => rules.clone(),
                    Some(Value::String(rule)) => vec![Value::String(rule.clone())],
                    _ => return Err(illegal(
                        "mapping requires either `mappings` or `mappings_path` to be configured",
                    )),
                };
            CharFilter::Mapping(Arc::new(MappingTable::parse(&rules)?))
        }
        _ => return Ok(None),
    }))
}

/// ES's `ShingleTokenFilterFactory`: the size difference check against
/// `index.max_shingle_diff` first, then Lucene's `ShingleFilter` checks.
fn shingle_filter(p: &Obj, max_shingle_diff: usize) -> Result<Shingle, AnalysisError> {
    let max = get_usize(p, "max_shingle_size", 2)?;
    let min = get_usize(p, "min_shingle_size", 2)?;
    let output_unigrams = get_bool(p, "output_unigrams", true)?;
    let diff = max as i64 - min as i64 + i64::from(output_unigrams);
    if diff > max_shingle_diff as i64 {
        return Err(illegal(format!(
            "In Shingle TokenFilter the difference between max_shingle_size and min_shingle_size (and +1 if outputting unigrams) must be less than or equal to: [{max_shingle_diff}] but was [{diff}]. This limit can be set by changing the [index.max_shingle_diff] index level setting."
        )));
    }
    if max < 2 {
        return Err(illegal("Max shingle size must be >= 2"));
    }
    if min < 2 {
        return Err(illegal("Min shingle size must be >= 2"));
    }
    if min > max {
        return Err(illegal("Min shingle size must be <= max shingle size"));
    }
    let mut cfg = Shingle::new(min, max, output_unigrams);
    cfg.output_unigrams_if_no_shingles = get_bool(p, "output_unigrams_if_no_shingles", false)?;
    if let Some(sep) = get_str(p, "token_separator") {
        cfg.token_separator = sep.to_string();
    }
    if let Some(filler) = get_str(p, "filler_token") {
        cfg.filler_token = filler.to_string();
    }
    Ok(cfg)
}
