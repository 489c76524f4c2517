//! Token filters: rewrite, drop or add tokens after the tokenizer, like Lucene's filters.
//!
//! Filters work on the whole token list of one text at once; removing filters keep the
//! position gaps Lucene leaves (`stop`, `length`), expanding ones emit the extra tokens at the
//! same position (`asciifolding` with `preserve_original`, n-grams).

pub(crate) mod ascii_folding;
pub(crate) mod porter;
pub(crate) mod shingle;
pub(crate) mod stopwords;

use std::collections::HashSet;
use std::sync::Arc;

use crate::token::{Tok, TokList};
use crate::unicode::{is_java_whitespace, push_lower, push_upper, utf16_len};
pub(crate) use stopwords::StopWords;

/// A configured token filter.
#[derive(Debug, Clone)]
pub(crate) enum TokenFilter {
    Lowercase,
    Uppercase,
    AsciiFolding {
        preserve_original: bool,
    },
    Stop {
        words: Arc<StopWords>,
        remove_trailing: bool,
    },
    /// Keeps tokens whose UTF-16 length is within `min..=max`.
    Length {
        min: usize,
        max: usize,
    },
    Trim,
    Unique {
        only_on_same_position: bool,
    },
    /// Cuts tokens to `length` UTF-16 units.
    Truncate {
        length: usize,
    },
    Reverse,
    /// Lucene's `PorterStemFilter` (`porter_stem`).
    PorterStem,
    NGram {
        min_gram: usize,
        max_gram: usize,
        preserve_original: bool,
        edge: bool,
    },
    /// Lucene's `ShingleFilter`.
    Shingle(Box<shingle::Shingle>),
    /// What a `search_as_you_type` field indexes in `._index_prefix`: the shingles of exactly
    /// `size` tokens starting at each token (padded with empty tokens at the end, as ES's
    /// `TrailingShingleTokenFilter` + `FixedShingleFilter`), cut into edge n-grams of
    /// 1 to 20 characters.
    SaytPrefix {
        size: usize,
    },
}

/// Reusable buffers a filter may need.
pub(crate) struct FilterScratch<'a> {
    /// Second token list for filters that emit more tokens than they read.
    pub spare: &'a mut TokList,
    pub text: &'a mut String,
    /// Length of the tokenized text (end offset of the input), for `remove_trailing`.
    pub input_len: usize,
}

impl TokenFilter {
    /// Whether Elasticsearch allows this filter in a normalizer.
    pub(crate) fn allowed_in_normalizer(&self) -> bool {
        matches!(
            self,
            TokenFilter::Lowercase
                | TokenFilter::Uppercase
                | TokenFilter::AsciiFolding { .. }
                | TokenFilter::Trim
        )
    }

    /// The form used inside a normalizer, which must emit exactly one token.
    pub(crate) fn for_normalizer(&self) -> TokenFilter {
        match self {
            TokenFilter::AsciiFolding { .. } => TokenFilter::AsciiFolding {
                preserve_original: false,
            },
            other => other.clone(),
        }
    }

    pub(crate) fn apply(&self, toks: &mut TokList, scratch: &mut FilterScratch<'_>) {
        match self {
            TokenFilter::Lowercase => {
                for t in toks.as_mut_slice() {
                    if t.text.is_ascii() {
                        t.text.make_ascii_lowercase();
                    } else {
                        rewrite(t, scratch.text, push_lower);
                    }
                }
            }
            TokenFilter::Uppercase => {
                for t in toks.as_mut_slice() {
                    if t.text.is_ascii() {
                        t.text.make_ascii_uppercase();
                    } else {
                        rewrite(t, scratch.text, push_upper);
                    }
                }
            }
            TokenFilter::AsciiFolding {
                preserve_original: false,
            } => {
                for t in toks.as_mut_slice() {
                    if !t.text.is_ascii() {
                        rewrite(t, scratch.text, |src, dst| {
                            ascii_folding::fold_into(src, dst);
                        });
                    }
                }
            }
            TokenFilter::AsciiFolding {
                preserve_original: true,
            } => {
                if toks.as_slice().iter().all(|t| t.text.is_ascii()) {
                    return;
                }
                let out = &mut *scratch.spare;
                out.clear();
                for t in toks.as_slice() {
                    let slot = out.next_slot();
                    let changed = ascii_folding::fold_into(&t.text, &mut slot.text);
                    slot.start = t.start;
                    slot.end = t.end;
                    slot.pos_inc = t.pos_inc;
                    slot.kind = t.kind;
                    if changed {
                        out.push_copy(t, 0);
                    }
                }
                std::mem::swap(toks, out);
            }
            TokenFilter::Stop {
                words,
                remove_trailing,
            } => {
                if words.is_empty() {
                    return;
                }
                let keep_last = !remove_trailing
                    && toks
                        .as_slice()
                        .last()
                        .is_some_and(|t| t.end >= scratch.input_len);
                let last = toks.len().wrapping_sub(1);
                let mut index = 0;
                let text = &mut *scratch.text;
                toks.retain(true, |t| {
                    let i = index;
                    index += 1;
                    (keep_last && i == last) || !words.contains(&t.text, text)
                });
            }
            TokenFilter::Length { min, max } => toks.retain(true, |t| {
                let len = utf16_len(&t.text);
                *min <= len && len <= *max
            }),
            TokenFilter::Trim => {
                for t in toks.as_mut_slice() {
                    let start = t.text.len() - t.text.trim_start_matches(is_java_whitespace).len();
                    let end = t.text.trim_end_matches(is_java_whitespace).len();
                    if end <= start {
                        t.text.clear();
                    } else if start > 0 || end < t.text.len() {
                        t.text.truncate(end);
                        t.text.drain(..start);
                    }
                }
            }
            TokenFilter::Unique {
                only_on_same_position,
            } => {
                let mut seen: HashSet<String> = HashSet::new();
                toks.retain(false, |t| {
                    if *only_on_same_position && t.pos_inc > 0 {
                        seen.clear();
                    }
                    let duplicate = if *only_on_same_position {
                        t.pos_inc == 0 && seen.contains(&t.text)
                    } else {
                        seen.contains(&t.text)
                    };
                    if !duplicate {
                        seen.insert(t.text.clone());
                    }
                    !duplicate
                });
            }
            TokenFilter::Truncate { length } => {
                for t in toks.as_mut_slice() {
                    truncate_utf16(&mut t.text, *length);
                }
            }
            TokenFilter::Reverse => {
                for t in toks.as_mut_slice() {
                    rewrite(t, scratch.text, |src, dst| dst.extend(src.chars().rev()));
                }
            }
            TokenFilter::PorterStem => {
                for t in toks.as_mut_slice() {
                    if porter::stem(&t.text, scratch.text) {
                        std::mem::swap(&mut t.text, scratch.text);
                    }
                }
            }
            TokenFilter::NGram {
                min_gram,
                max_gram,
                preserve_original,
                edge,
            } => ngrams(
                toks,
                scratch.spare,
                *min_gram,
                *max_gram,
                *preserve_original,
                *edge,
            ),
            TokenFilter::Shingle(cfg) => shingle::shingles(cfg, toks, scratch.spare),
            TokenFilter::SaytPrefix { size } => shingle::sayt_prefixes(*size, toks, scratch.spare),
        }
    }
}

/// Replaces the token text with `f(text)` using `scratch` as the output buffer.
#[inline]
fn rewrite(t: &mut Tok, scratch: &mut String, f: impl FnOnce(&str, &mut String)) {
    scratch.clear();
    f(&t.text, scratch);
    std::mem::swap(&mut t.text, scratch);
}

fn truncate_utf16(s: &mut String, max_units: usize) {
    if s.len() <= max_units {
        return;
    }
    let mut units = 0;
    for (i, c) in s.char_indices() {
        units += c.len_utf16();
        if units > max_units {
            s.truncate(i);
            return;
        }
    }
}

/// Lucene `NGramTokenFilter` / `EdgeNGramTokenFilter`: grams keep the token's offsets; the
/// first gram of a token takes its position increment (plus those of tokens that produced
/// nothing), the others sit at the same position.
fn ngrams(
    toks: &mut TokList,
    out: &mut TokList,
    min: usize,
    max: usize,
    preserve_original: bool,
    edge: bool,
) {
    out.clear();
    let mut bounds: Vec<usize> = Vec::new();
    let mut pending_inc = 0;
    for t in toks.as_slice() {
        pending_inc += t.pos_inc;
        bounds.clear();
        bounds.extend(t.text.char_indices().map(|(i, _)| i));
        bounds.push(t.text.len());
        let chars = bounds.len() - 1;
        let starts = if edge { chars.min(1) } else { chars };
        for from in 0..starts {
            for len in min..=max {
                if from + len > chars {
                    break;
                }
                let slot = out.next_slot();
                slot.text
                    .push_str(&t.text[bounds[from]..bounds[from + len]]);
                slot.start = t.start;
                slot.end = t.end;
                slot.kind = t.kind;
                slot.pos_inc = pending_inc;
                pending_inc = 0;
            }
        }
        if preserve_original && (chars < min || chars > max) {
            out.push_copy(t, pending_inc);
            pending_inc = 0;
        }
    }
    std::mem::swap(toks, out);
}
