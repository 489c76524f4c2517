//! Tokenizers: split (char-filtered) text into tokens with offsets and types.

pub(crate) mod chars;
pub(crate) mod chinese;
pub(crate) mod ngram;
pub(crate) mod standard;

use crate::token::{TokList, TokenType};
use crate::unicode::{is_java_whitespace, is_letter};

pub(crate) use chars::CharGroup;
pub(crate) use ngram::{NGramTokenizer, TokenChars};

/// A configured tokenizer.
#[derive(Debug, Clone)]
pub(crate) enum Tokenizer {
    /// UAX#29 words, CJK unigrams (`standard`).
    Standard { max_token_length: usize },
    /// Runs of letters (`letter`); with `lowercase: true` the `lowercase` tokenizer.
    Letter { lowercase: bool },
    /// Runs of non-whitespace (`whitespace`).
    Whitespace { max_token_length: usize },
    /// The whole input as one token (`keyword`).
    Keyword,
    /// Splits on configured character classes (`char_group`).
    CharGroup {
        group: CharGroup,
        max_token_length: usize,
    },
    /// `ngram` / `edge_ngram`.
    NGram(NGramTokenizer),
    /// IK's `ik_smart` (`smart: true`) and `ik_max_word` Chinese word tokenizers.
    Ik { smart: bool },
    /// `smartcn_tokenizer` (Chinese words, analysis-smartcn).
    Smartcn,
}

impl Tokenizer {
    pub(crate) fn tokenize(&self, text: &str, out: &mut TokList) {
        match self {
            Tokenizer::Standard { max_token_length } => {
                standard::tokenize(text, *max_token_length, out)
            }
            Tokenizer::Letter { lowercase } => chars::tokenize(
                text,
                chars::DEFAULT_MAX_WORD_LEN,
                *lowercase,
                is_letter,
                out,
            ),
            Tokenizer::Whitespace { max_token_length } => chars::tokenize(
                text,
                *max_token_length,
                false,
                |c| !is_java_whitespace(c),
                out,
            ),
            Tokenizer::Keyword => out.push(text, 0, text.len(), 1, TokenType::Word),
            Tokenizer::CharGroup {
                group,
                max_token_length,
            } => chars::tokenize(
                text,
                *max_token_length,
                false,
                |c| !group.is_split_char(c),
                out,
            ),
            Tokenizer::NGram(ngram) => ngram.tokenize(text, out),
            Tokenizer::Ik { smart } => chinese::ik(text, *smart, out),
            Tokenizer::Smartcn => chinese::smartcn(text, out),
        }
    }
}
