//! The `ngram` and `edge_ngram` tokenizers (Lucene `NGramTokenizer` / `EdgeNGramTokenizer`).
//!
//! Grams are built over runs of "token characters" (all characters when `token_chars` is
//! empty), ordered by start position then length, each at its own position.

use crate::token::{TokList, TokenType};
use crate::unicode::{is_digit, is_java_whitespace, is_letter};

#[derive(Debug, Clone)]
pub(crate) struct NGramTokenizer {
    pub min_gram: usize,
    pub max_gram: usize,
    pub edge: bool,
    pub token_chars: TokenChars,
}

/// ES `token_chars` classes; all false (and no custom chars) means "every character".
#[derive(Debug, Clone, Default)]
pub(crate) struct TokenChars {
    pub letter: bool,
    pub digit: bool,
    pub whitespace: bool,
    pub punctuation: bool,
    pub symbol: bool,
    pub custom: Vec<char>,
}

impl TokenChars {
    fn is_empty(&self) -> bool {
        !(self.letter || self.digit || self.whitespace || self.punctuation || self.symbol)
            && self.custom.is_empty()
    }

    fn accepts(&self, c: char) -> bool {
        use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};
        if self.is_empty() {
            return true;
        }
        (self.letter && is_letter(c))
            || (self.digit && is_digit(c))
            || (self.whitespace && is_java_whitespace(c))
            || (self.punctuation && c.general_category_group() == GeneralCategoryGroup::Punctuation)
            || (self.symbol && c.general_category_group() == GeneralCategoryGroup::Symbol)
            || self.custom.contains(&c)
    }
}

impl NGramTokenizer {
    pub(crate) fn tokenize(&self, text: &str, out: &mut TokList) {
        let mut bounds: Vec<usize> = Vec::new();
        let mut run_start = None::<usize>;
        for (i, c) in text.char_indices() {
            if self.token_chars.accepts(c) {
                run_start.get_or_insert(i);
            } else if let Some(start) = run_start.take() {
                self.grams(text, start, i, &mut bounds, out);
            }
        }
        if let Some(start) = run_start {
            self.grams(text, start, text.len(), &mut bounds, out);
        }
    }

    fn grams(
        &self,
        text: &str,
        start: usize,
        end: usize,
        bounds: &mut Vec<usize>,
        out: &mut TokList,
    ) {
        bounds.clear();
        bounds.extend(text[start..end].char_indices().map(|(i, _)| start + i));
        bounds.push(end);
        let chars = bounds.len() - 1;
        let starts = if self.edge { chars.min(1) } else { chars };
        for from in 0..starts {
            for len in self.min_gram..=self.max_gram {
                if from + len > chars {
                    break;
                }
                let (s, e) = (bounds[from], bounds[from + len]);
                out.push(&text[s..e], s, e, 1, TokenType::Word);
            }
        }
    }
}
