//! Named stop word lists (`_english_`, `_none_`) and the `stopwords` setting parser.

use std::collections::HashSet;

use serde_json::Value;

use crate::error::{illegal, AnalysisError};
use crate::unicode::push_lower;

/// Lucene's `EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`, which Elasticsearch calls `_english_`.
pub(crate) const ENGLISH_STOP_WORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];

/// Named lists Elasticsearch knows but Lode does not ship; naming one is an error rather
/// than a silently different result.
const UNSUPPORTED_NAMED_LISTS: [&str; 36] = [
    "_arabic_",
    "_armenian_",
    "_basque_",
    "_bengali_",
    "_brazilian_",
    "_bulgarian_",
    "_catalan_",
    "_cjk_",
    "_czech_",
    "_danish_",
    "_dutch_",
    "_estonian_",
    "_finnish_",
    "_french_",
    "_galician_",
    "_german_",
    "_greek_",
    "_hindi_",
    "_hungarian_",
    "_indonesian_",
    "_irish_",
    "_italian_",
    "_latvian_",
    "_lithuanian_",
    "_norwegian_",
    "_persian_",
    "_portuguese_",
    "_romanian_",
    "_russian_",
    "_serbian_",
    "_sorani_",
    "_spanish_",
    "_swedish_",
    "_thai_",
    "_turkish_",
    "_ukrainian_",
];

/// A stop word set; with `ignore_case` the words are stored lowercased.
#[derive(Debug, Clone, Default)]
pub(crate) struct StopWords {
    words: HashSet<String>,
    ignore_case: bool,
}

impl StopWords {
    pub(crate) fn from_words<'a>(
        words: impl IntoIterator<Item = &'a str>,
        ignore_case: bool,
    ) -> Self {
        let words = words
            .into_iter()
            .map(|w| {
                if ignore_case {
                    let mut lower = String::with_capacity(w.len());
                    push_lower(w, &mut lower);
                    lower
                } else {
                    w.to_string()
                }
            })
            .collect();
        StopWords { words, ignore_case }
    }

    /// Parses an Elasticsearch `stopwords` value: `"_english_"`, `"_none_"`, a single word,
    /// or an array whose entries may themselves be named lists. `None` means `default`.
    pub(crate) fn parse(
        value: Option<&Value>,
        default: &[&str],
        ignore_case: bool,
    ) -> Result<Self, AnalysisError> {
        let entries: Vec<&str> = match value {
            None | Some(Value::Null) => {
                return Ok(Self::from_words(default.iter().copied(), ignore_case))
            }
            Some(Value::String(s)) if s == "_none_" => return Ok(Self::default()),
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .ok_or_else(|| illegal(format!("stop words must be strings, got [{v}]")))
                })
                .collect::<Result<_, _>>()?,
            Some(other) => return Err(illegal(format!("unsupported stopwords value [{other}]"))),
        };
        let mut words = Vec::new();
        for entry in entries {
            if entry == "_english_" {
                words.extend(ENGLISH_STOP_WORDS.iter().copied());
            } else if UNSUPPORTED_NAMED_LISTS.contains(&entry) {
                return Err(illegal(format!(
                    "stopwords [{entry}] are not supported by Lode; list the words explicitly"
                )));
            } else {
                words.push(entry);
            }
        }
        Ok(Self::from_words(words, ignore_case))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Whether `term` is a stop word; `scratch` is reused to lowercase when ignoring case.
    #[inline]
    pub(crate) fn contains(&self, term: &str, scratch: &mut String) -> bool {
        if self.ignore_case {
            scratch.clear();
            push_lower(term, scratch);
            self.words.contains(scratch.as_str())
        } else {
            self.words.contains(term)
        }
    }
}
