//! Lucene's `StandardTokenizer`: Unicode UAX#29 word boundaries with Lucene's token rules.
//!
//! Word boundaries come from `unicode-segmentation`; on top of them this module applies what
//! Lucene's JFlex grammar adds:
//! - every Han ideograph and every Hiragana character is a token of its own
//!   (`<IDEOGRAPHIC>`, `<HIRAGANA>`), so unspaced Chinese yields unigrams;
//! - runs of Thai/Lao/Myanmar/Khmer characters stay one `<SOUTHEAST_ASIAN>` token;
//! - emoji (with modifiers, ZWJ sequences, flags and keycaps) are `<EMOJI>` tokens;
//! - segments without a letter or digit (punctuation, spaces, symbols) are dropped;
//! - the remaining words are `<NUM>` (no letters), `<HANGUL>`, `<KATAKANA>` or `<ALPHANUM>`;
//! - tokens longer than `max_token_length` UTF-16 units are split into pieces of that length.

use unicode_segmentation::UnicodeSegmentation;

use crate::token::{TokList, TokenType};
use crate::unicode::{
    is_digit, is_emoji_base, is_extend, is_extra_aletter, is_han, is_hangul, is_hiragana, is_katakana,
    is_regional_indicator, is_southeast_asian, utf16_len,
};

/// Lucene's default (and Elasticsearch's) `max_token_length`.
pub(crate) const DEFAULT_MAX_TOKEN_LENGTH: usize = 255;

/// Tokenizes `text` into `out` with Lucene `StandardTokenizer` rules.
pub(crate) fn tokenize(text: &str, max_token_length: usize, out: &mut TokList) {
    let mut segments = text.split_word_bound_indices().peekable();
    while let Some((start, segment)) = segments.next() {
        let Some(first) = segment.chars().next() else {
            continue;
        };
        if first.is_ascii() {
            if first.is_ascii_alphanumeric() || first == '_' {
                emit_word(segment, start, max_token_length, out);
            }
            // Keycaps: digit / '#' / '*' + U+FE0F? + U+20E3.
            else if (first == '#' || first == '*') && segment.contains('\u{20E3}') {
                out.push(segment, start, start + segment.len(), 1, TokenType::Emoji);
            }
            continue;
        }
        if is_han(first) {
            out.push(segment, start, start + segment.len(), 1, TokenType::Ideographic);
        } else if is_hiragana(first) {
            out.push(segment, start, start + segment.len(), 1, TokenType::Hiragana);
        } else if is_southeast_asian(first) {
            // UAX#29 breaks between these characters; Lucene keeps the whole run.
            let mut end = start + segment.len();
            while let Some(&(next_start, next)) = segments.peek() {
                let joins = next_start == end && next.chars().next().is_some_and(is_southeast_asian);
                if !joins {
                    break;
                }
                end += next.len();
                segments.next();
            }
            emit_split(&text[start..end], start, max_token_length, TokenType::SoutheastAsian, out);
        } else if is_regional_indicator(first) {
            if segment.chars().filter(|&c| is_regional_indicator(c)).count() >= 2 {
                out.push(segment, start, start + segment.len(), 1, TokenType::Emoji);
            }
        } else if is_emoji_base(first) {
            out.push(segment, start, start + segment.len(), 1, TokenType::Emoji);
        } else {
            emit_word(segment, start, max_token_length, out);
        }
    }
}

/// Classifies a word segment; `None` when it has neither a letter nor a digit.
fn classify(segment: &str) -> Option<TokenType> {
    let mut has_letter = false;
    let mut has_digit = false;
    let mut all_hangul = true;
    let mut all_katakana = true;
    for c in segment.chars() {
        if c.is_ascii() {
            if c.is_ascii_alphabetic() {
                has_letter = true;
            } else if c.is_ascii_digit() {
                has_digit = true;
            }
            // ASCII letters, digits and joiners ('_', '.', ':', '\'') all rule out the
            // Hangul/Katakana-only types.
            all_hangul = false;
            all_katakana = false;
            continue;
        }
        if is_extend(c) {
            continue;
        }
        if is_digit(c) || c == '\u{066B}' {
            has_digit = true;
            all_hangul = false;
            all_katakana = false;
        } else if c.is_alphabetic() || is_extra_aletter(c) {
            has_letter = true;
            all_hangul &= is_hangul(c);
            all_katakana &= is_katakana(c);
        } else if is_katakana(c) {
            // U+30FC (prolonged sound mark) and friends are not Alphabetic but are Katakana.
            has_letter = true;
            all_hangul = false;
        } else {
            all_hangul = false;
            all_katakana = false;
        }
    }
    if has_letter {
        Some(if all_hangul {
            TokenType::Hangul
        } else if all_katakana {
            TokenType::Katakana
        } else {
            TokenType::Alphanum
        })
    } else if has_digit {
        Some(TokenType::Num)
    } else {
        None
    }
}

fn emit_word(segment: &str, start: usize, max_token_length: usize, out: &mut TokList) {
    if let Some(kind) = classify(segment) {
        emit_split(segment, start, max_token_length, kind, out);
    }
}

/// Pushes `token`, split into pieces of at most `max_len` UTF-16 units like Lucene's
/// scanner buffer does (pieces are re-typed as the scanner would re-scan them).
fn emit_split(token: &str, start: usize, max_len: usize, kind: TokenType, out: &mut TokList) {
    if token.len() <= max_len || utf16_len(token) <= max_len {
        out.push(token, start, start + token.len(), 1, kind);
        return;
    }
    let mut piece_start = 0;
    let mut units = 0;
    for (i, c) in token.char_indices() {
        let w = c.len_utf16();
        if units + w > max_len && i > piece_start {
            push_piece(&token[piece_start..i], start + piece_start, kind, out);
            piece_start = i;
            units = 0;
        }
        units += w;
    }
    push_piece(&token[piece_start..], start + piece_start, kind, out);
}

fn push_piece(piece: &str, start: usize, kind: TokenType, out: &mut TokList) {
    let kind = match kind {
        TokenType::Alphanum | TokenType::Num | TokenType::Hangul | TokenType::Katakana => {
            match classify(piece) {
                Some(k) => k,
                None => return,
            }
        }
        other => other,
    };
    out.push(piece, start, start + piece.len(), 1, kind);
}
