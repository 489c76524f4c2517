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
    is_digit, is_emoji_base, is_extend, is_extra_aletter, is_han, is_hangul, is_hiragana,
    is_katakana, is_regional_indicator, is_southeast_asian, utf16_len,
};

/// Lucene's default (and Elasticsearch's) `max_token_length`.
pub(crate) const DEFAULT_MAX_TOKEN_LENGTH: usize = 255;

/// Tokenizes `text` into `out` with Lucene `StandardTokenizer` rules.
///
/// ASCII whitespace always separates words under UAX#29, so the text is cut there first;
/// pure-ASCII pieces (most of Latin-script text) take a fast path that applies the ASCII
/// subset of the word rules, the others go through the full UAX#29 segmenter.
pub(crate) fn tokenize(text: &str, max_token_length: usize, out: &mut TokList) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        while i < bytes.len() && is_ascii_space(bytes[i]) {
            i += 1;
        }
        let start = i;
        let mut ascii = true;
        while i < bytes.len() && !is_ascii_space(bytes[i]) {
            ascii &= bytes[i].is_ascii();
            i += 1;
        }
        if start == i {
            break;
        }
        if ascii {
            tokenize_ascii(&text[start..i], start, max_token_length, out);
        } else {
            tokenize_cjk_aware(&text[start..i], start, max_token_length, out);
        }
    }
}

/// Emits Han and Hiragana characters (with their combining marks) directly, as UAX#29
/// always breaks around them, and hands the stretches between them to the other paths.
fn tokenize_cjk_aware(text: &str, base: usize, max_token_length: usize, out: &mut TokList) {
    let flush = |from: usize, to: usize, ascii: bool, out: &mut TokList| {
        if from < to {
            if ascii {
                tokenize_ascii(&text[from..to], base + from, max_token_length, out);
            } else {
                tokenize_unicode(&text[from..to], base + from, max_token_length, out);
            }
        }
    };
    let mut pending = 0;
    let mut pending_ascii = true;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let kind = if c.is_ascii() {
            None
        } else if is_han(c) {
            Some(TokenType::Ideographic)
        } else if is_hiragana(c) {
            Some(TokenType::Hiragana)
        } else {
            None
        };
        let Some(kind) = kind else {
            pending_ascii &= c.is_ascii();
            continue;
        };
        flush(pending, i, pending_ascii, out);
        let mut end = i + c.len_utf8();
        while let Some(&(j, next)) = chars.peek() {
            if !is_extend(next) {
                break;
            }
            end = j + next.len_utf8();
            chars.next();
        }
        out.push(&text[i..end], base + i, base + end, 1, kind);
        pending = end;
        pending_ascii = true;
    }
    flush(pending, text.len(), pending_ascii, out);
}

#[inline]
fn is_ascii_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C)
}

/// UAX#29 word classes of ASCII characters.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ascii {
    Letter,
    Digit,
    /// `_` (ExtendNumLet).
    Underscore,
    /// `:` (MidLetter).
    MidLetter,
    /// `.` and `'` (MidNumLet, Single_Quote).
    MidNumLet,
    /// `,` and `;` (MidNum).
    MidNum,
    Other,
}

#[inline]
fn ascii_class(b: u8) -> Ascii {
    match b {
        b'a'..=b'z' | b'A'..=b'Z' => Ascii::Letter,
        b'0'..=b'9' => Ascii::Digit,
        b'_' => Ascii::Underscore,
        b':' => Ascii::MidLetter,
        b'.' | b'\'' => Ascii::MidNumLet,
        b',' | b';' => Ascii::MidNum,
        _ => Ascii::Other,
    }
}

/// The ASCII-only path: same result as the UAX#29 segmenter on ASCII text without spaces.
fn tokenize_ascii(text: &str, base: usize, max_token_length: usize, out: &mut TokList) {
    let bytes = text.as_bytes();
    let class = |i: usize| bytes.get(i).map_or(Ascii::Other, |&b| ascii_class(b));
    let mut i = 0;
    while i < bytes.len() {
        let first = class(i);
        if !matches!(first, Ascii::Letter | Ascii::Digit | Ascii::Underscore) {
            i += 1;
            continue;
        }
        let start = i;
        let mut prev = first;
        i += 1;
        loop {
            match class(i) {
                // WB5, WB8-10, WB13a/b: letters, digits and '_' stick together.
                c @ (Ascii::Letter | Ascii::Digit | Ascii::Underscore) => {
                    prev = c;
                    i += 1;
                }
                // WB6/7: letter (':' | '.' | '\'') letter; WB11/12: digit (',' | ';' | '.' | '\'') digit.
                mid @ (Ascii::MidLetter | Ascii::MidNumLet | Ascii::MidNum) => {
                    let next = class(i + 1);
                    let letters =
                        prev == Ascii::Letter && next == Ascii::Letter && mid != Ascii::MidNum;
                    let digits =
                        prev == Ascii::Digit && next == Ascii::Digit && mid != Ascii::MidLetter;
                    if !(letters || digits) {
                        break;
                    }
                    prev = next;
                    i += 2;
                }
                Ascii::Other => break,
            }
        }
        emit_word(&text[start..i], base + start, max_token_length, out);
    }
}

/// The general path: UAX#29 segments of `text` (which starts at byte `base` of the input).
fn tokenize_unicode(text: &str, base: usize, max_token_length: usize, out: &mut TokList) {
    let mut from = 0;
    'rescan: while from < text.len() {
        let mut segments = text[from..].split_word_bound_indices().peekable();
        while let Some((rel, segment)) = segments.next() {
            let start = from + rel;
            let Some(first) = segment.chars().next() else {
                continue;
            };
            let emitted = if is_southeast_asian(first) {
                // UAX#29 breaks between these characters; Lucene keeps the whole run.
                let mut end = start + segment.len();
                while let Some(&(next_rel, next)) = segments.peek() {
                    let joins = from + next_rel == end
                        && next.chars().next().is_some_and(is_southeast_asian);
                    if !joins {
                        break;
                    }
                    end += next.len();
                    segments.next();
                }
                let run = &text[start..end];
                emit_split(
                    run,
                    base + start,
                    max_token_length,
                    TokenType::SoutheastAsian,
                    out,
                );
                true
            } else if let Some(split) = zwj_emoji_split(segment, first) {
                // UAX#29 (WB3c) glues `ZWJ + emoji` to a preceding word; Lucene's grammar
                // ends the word after the ZWJ and starts an emoji token.
                emit_word(&segment[..split], base + start, max_token_length, out);
                from = start + split;
                continue 'rescan;
            } else {
                emit_segment(segment, first, base + start, max_token_length, out)
            };
            // Lucene skips an unmatched character on its own and rescans what follows, so the
            // combining marks or emoji modifiers glued to a dropped character still count.
            let rest = &segment[first.len_utf8()..];
            if !emitted && rest.chars().any(|c| !c.is_whitespace()) {
                from = start + first.len_utf8();
                continue 'rescan;
            }
        }
        break;
    }
}

/// In a word segment, the byte offset just after a ZWJ that is followed by an emoji.
fn zwj_emoji_split(segment: &str, first: char) -> Option<usize> {
    if first.is_ascii() && segment.is_ascii() || first == '\u{200D}' || is_emoji_base(first) {
        return None;
    }
    let mut chars = segment.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\u{200D}' && i > 0 && chars.peek().is_some_and(|&(_, n)| is_emoji_base(n)) {
            return Some(i + c.len_utf8());
        }
    }
    None
}

fn is_emoji_modifier(c: char) -> bool {
    matches!(c, '\u{1F3FB}'..='\u{1F3FF}')
}

/// Emits the token(s) of one UAX#29 segment; returns false when the segment is dropped.
fn emit_segment(
    segment: &str,
    first: char,
    start: usize,
    max_token_length: usize,
    out: &mut TokList,
) -> bool {
    let whole = |kind, out: &mut TokList| {
        out.push(segment, start, start + segment.len(), 1, kind);
        true
    };
    if first.is_ascii() {
        // Keycaps: digit / '#' / '*' + U+FE0F? + U+20E3.
        let keycap = matches!(first, '0'..='9' | '#' | '*')
            && !segment.is_ascii()
            && segment.contains('\u{20E3}');
        if keycap {
            return whole(TokenType::Emoji, out);
        }
        return (first.is_ascii_alphanumeric() || first == '_')
            && emit_word(segment, start, max_token_length, out);
    }
    if is_han(first) {
        whole(TokenType::Ideographic, out)
    } else if is_hiragana(first) {
        whole(TokenType::Hiragana, out)
    } else if is_regional_indicator(first) {
        let pair = segment
            .chars()
            .filter(|&c| is_regional_indicator(c))
            .count()
            >= 2;
        pair && whole(TokenType::Emoji, out)
    } else if is_emoji_base(first)
        || (first == '\u{200D}'
            && segment
                .chars()
                .find(|&c| c != '\u{200D}')
                .is_some_and(|c| is_emoji_base(c) && !is_emoji_modifier(c)))
    {
        whole(TokenType::Emoji, out)
    } else {
        emit_word(segment, start, max_token_length, out)
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

fn emit_word(segment: &str, start: usize, max_token_length: usize, out: &mut TokList) -> bool {
    if segment.len() <= max_token_length || utf16_len(segment) <= max_token_length {
        return emit_classified(segment, start, out);
    }
    // Lucene's scanner buffer holds `max_token_length` chars: it emits the longest token that
    // fits (which may end before a trailing `.` or `'`), then rescans from its end.
    let mut pos = 0;
    let mut emitted = false;
    while pos < segment.len() {
        let rest = &segment[pos..];
        if utf16_len(rest) <= max_token_length {
            for (i, piece) in rest.split_word_bound_indices() {
                emitted |= emit_classified(piece, start + pos + i, out);
            }
            return emitted;
        }
        let window = prefix_utf16(rest, max_token_length);
        let first = window.split_word_bounds().next().unwrap_or(window);
        if emit_classified(first, start + pos, out) {
            emitted = true;
            pos += first.len();
        } else {
            // No token fits at this position: the scanner skips a single character.
            pos += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    emitted
}

/// Pushes a word segment (minus leading combining marks, which Lucene drops) if it has a
/// letter or digit; returns whether it did.
fn emit_classified(segment: &str, start: usize, out: &mut TokList) -> bool {
    let trimmed = segment.trim_start_matches(is_extend);
    let start = start + (segment.len() - trimmed.len());
    match classify(trimmed) {
        Some(kind) => {
            out.push(trimmed, start, start + trimmed.len(), 1, kind);
            true
        }
        None => false,
    }
}

/// The longest prefix of `s` with at most `max_units` UTF-16 units (at least one char).
fn prefix_utf16(s: &str, max_units: usize) -> &str {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        units += c.len_utf16();
        if units > max_units {
            return &s[..if i == 0 { c.len_utf8() } else { i }];
        }
    }
    s
}

/// Pushes `token`, split into pieces of at most `max_len` UTF-16 units (used for
/// `<SOUTHEAST_ASIAN>` runs, where any character may end a token).
fn emit_split(token: &str, start: usize, max_len: usize, kind: TokenType, out: &mut TokList) {
    let mut pos = 0;
    while pos < token.len() {
        let piece = prefix_utf16(&token[pos..], max_len);
        out.push(piece, start + pos, start + pos + piece.len(), 1, kind);
        pos += piece.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(text, start, end, type)` in byte offsets.
    fn run(text: &str, max: usize) -> Vec<(String, usize, usize, &'static str)> {
        let mut out = TokList::default();
        tokenize(text, max, &mut out);
        out.as_slice()
            .iter()
            .map(|t| (t.text.clone(), t.start, t.end, t.kind.as_str()))
            .collect()
    }

    fn texts(text: &str, max: usize) -> Vec<String> {
        run(text, max).into_iter().map(|t| t.0).collect()
    }

    // Expected values below were produced by Lucene 9.12's StandardTokenizer.

    #[test]
    fn emoji_modifiers_and_zwj_sequences() {
        // A skin tone modifier glued to a dropped '/' is rescanned on its own.
        assert_eq!(texts("a/🏽 b", 255), ["a", "🏽", "b"]);
        // Modifiers extend Hangul/Katakana words without changing their type.
        assert_eq!(
            run("한🏽 カ🏽", 255),
            [
                ("한🏽".into(), 0, 7, "<HANGUL>"),
                ("カ🏽".into(), 8, 15, "<KATAKANA>")
            ]
        );
        // A word ends after a ZWJ that precedes an emoji.
        assert_eq!(texts("Я한\u{200D}😀", 255), ["Я한\u{200D}", "😀"]);
        assert_eq!(
            run("x \u{200D}👍", 255)[1],
            ("\u{200D}👍".into(), 2, 9, "<EMOJI>")
        );
    }

    #[test]
    fn combining_marks() {
        assert_eq!(
            run("中\u{301}文 か\u{3099}", 255),
            [
                ("中\u{301}".into(), 0, 5, "<IDEOGRAPHIC>"),
                ("文".into(), 5, 8, "<IDEOGRAPHIC>"),
                ("か\u{3099}".into(), 9, 15, "<HIRAGANA>")
            ]
        );
        // Myanmar vowel signs after a space still start a Southeast Asian token.
        assert_eq!(texts("x ြြ y", 255), ["x", "ြြ", "y"]);
    }

    #[test]
    fn ascii_fast_path_matches_uax29() {
        assert_eq!(
            texts(
                "a.b a..b 1,2 1,,2 a:b 1:2 a'b 1'2 a_1 _ __a a. .a 'x' x;y 2;3",
                255
            ),
            [
                "a.b", "a", "b", "1,2", "1", "2", "a:b", "1", "2", "a'b", "1'2", "a_1", "__a", "a",
                "a", "x", "x", "y", "2;3"
            ]
        );
        assert_eq!(
            run("x-y", 255),
            [
                ("x".into(), 0, 1, "<ALPHANUM>"),
                ("y".into(), 2, 3, "<ALPHANUM>")
            ]
        );
    }

    #[test]
    fn short_max_token_length_rescans_like_lucene() {
        assert_eq!(
            run("_a''.'_____b.", 4),
            [
                ("_a".into(), 0, 2, "<ALPHANUM>"),
                ("___b".into(), 8, 12, "<ALPHANUM>")
            ]
        );
        // Regression (found by fuzzing against Lucene): must not panic on a multi-byte
        // character right after the window.
        assert_eq!(texts("x\u{301}b🏽 y", 3)[0], "x\u{301}b");
        assert_eq!(texts("ภาษาไทย", 3), ["ภาษ", "าไท", "ย"]);
    }
}
