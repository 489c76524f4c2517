//! Lucene's `CharTokenizer` family: a token is a maximal run of "token characters".
//! Used by the `letter`, `lowercase`, `whitespace` and `char_group` tokenizers.

use crate::token::{TokList, TokenType};
use crate::unicode::{is_digit, is_java_whitespace, is_letter, push_lower};

/// Lucene `CharTokenizer.DEFAULT_MAX_WORD_LEN`.
pub(crate) const DEFAULT_MAX_WORD_LEN: usize = 255;

/// Tokenizes `text` into runs of characters accepted by `is_token_char`.
///
/// Like Lucene, a run is cut once it reaches `max_len` UTF-16 units and the rest of the run
/// starts a new token. With `lowercase` each character is lowercased (`lowercase` tokenizer).
pub(crate) fn tokenize(
    text: &str,
    max_len: usize,
    lowercase: bool,
    is_token_char: impl Fn(char) -> bool,
    out: &mut TokList,
) {
    let mut start = None::<usize>;
    let mut units = 0;
    let emit = |from: usize, to: usize, out: &mut TokList| {
        let slot = out.next_slot();
        if lowercase {
            push_lower(&text[from..to], &mut slot.text);
        } else {
            slot.text.push_str(&text[from..to]);
        }
        slot.start = from;
        slot.end = to;
        slot.kind = TokenType::Word;
    };
    for (i, c) in text.char_indices() {
        if is_token_char(c) {
            let from = *start.get_or_insert(i);
            units += c.len_utf16();
            if units >= max_len {
                emit(from, i + c.len_utf8(), out);
                start = None;
                units = 0;
            }
        } else if let Some(from) = start.take() {
            emit(from, i, out);
            units = 0;
        }
    }
    if let Some(from) = start {
        emit(from, text.len(), out);
    }
}

/// What the `char_group` tokenizer splits on.
#[derive(Debug, Clone, Default)]
pub(crate) struct CharGroup {
    pub whitespace: bool,
    pub letter: bool,
    pub digit: bool,
    pub punctuation: bool,
    pub symbol: bool,
    pub chars: Vec<char>,
}

impl CharGroup {
    pub(crate) fn is_split_char(&self, c: char) -> bool {
        use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};
        (self.whitespace && is_java_whitespace(c))
            || (self.letter && is_letter(c))
            || (self.digit && is_digit(c))
            || (self.punctuation && c.general_category_group() == GeneralCategoryGroup::Punctuation)
            || (self.symbol && c.general_category_group() == GeneralCategoryGroup::Symbol)
            || self.chars.contains(&c)
    }
}
