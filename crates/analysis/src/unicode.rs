//! Character classes and case mappings that follow Java/Lucene semantics
//! (`Character.isLetter`, `Character.isWhitespace`, `Character.toLowerCase`, ...),
//! plus the script ranges the standard tokenizer needs.

use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};

/// Java's `Character.isLetter`: general category L (Lu, Ll, Lt, Lm, Lo).
#[inline]
pub(crate) fn is_letter(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphabetic();
    }
    c.general_category_group() == GeneralCategoryGroup::Letter
}

/// Java's `Character.isDigit`: general category Nd.
#[inline]
pub(crate) fn is_digit(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_digit();
    }
    c.general_category() == unicode_properties::GeneralCategory::DecimalNumber
}

/// Java's `Character.isWhitespace`: space/line/paragraph separators except the
/// non-breaking ones (U+00A0, U+2007, U+202F), plus U+0009..U+000D and U+001C..U+001F.
#[inline]
pub(crate) fn is_java_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{9}'..='\u{d}'
            | '\u{1c}'..='\u{20}'
            | '\u{1680}'
            | '\u{2000}'..='\u{2006}'
            | '\u{2008}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// Java's `Character.toLowerCase(int)` (simple, context-free case mapping).
#[inline]
pub(crate) fn to_lower(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    if is_caseless_cjk(c) {
        return c;
    }
    // Rust's full mapping only differs from the simple one for U+0130 ("i̇"), whose simple
    // lowercase is a plain 'i': taking the first char gives exactly that.
    c.to_lowercase().next().unwrap_or(c)
}

/// Java's `Character.toUpperCase(int)` (simple, context-free case mapping).
#[inline]
pub(crate) fn to_upper(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_uppercase();
    }
    if is_caseless_cjk(c) {
        return c;
    }
    let mut it = c.to_uppercase();
    let first = it.next().unwrap_or(c);
    if it.next().is_none() {
        return first;
    }
    // Multi-char full mappings (ß → SS, ŉ → ʼN, ...): Java keeps the simple mapping, which
    // exists only for the Greek letters with ypogegrammeni/prosgegrammeni.
    simple_upper_of_special(c).unwrap_or(c)
}

/// CJK radicals, symbols, kana, ideographs, Yi and Hangul: large blocks without case
/// mappings (or combining marks), checked first to keep CJK text on a fast path.
#[inline]
fn is_caseless_cjk(c: char) -> bool {
    matches!(c as u32, 0x2E80..=0xA4CF | 0xAC00..=0xD7FF)
}

/// Simple uppercase mappings of characters whose full uppercase mapping has several chars.
fn simple_upper_of_special(c: char) -> Option<char> {
    let cp = c as u32;
    let mapped = match cp {
        0x1F80..=0x1F87 | 0x1F90..=0x1F97 | 0x1FA0..=0x1FA7 => cp + 8,
        0x1F88..=0x1F8F | 0x1F98..=0x1F9F | 0x1FA8..=0x1FAF => cp,
        0x1FB3 | 0x1FC3 | 0x1FF3 => cp + 9,
        0x1FBC | 0x1FCC | 0x1FFC => cp,
        _ => return None,
    };
    char::from_u32(mapped)
}

/// Appends the Java-lowercased form of `src` to `dst`.
#[inline]
pub(crate) fn push_lower(src: &str, dst: &mut String) {
    if src.is_ascii() {
        dst.push_str(src);
        // Safe on ASCII-only content: lowercasing keeps it valid UTF-8 of the same length.
        let start = dst.len() - src.len();
        dst[start..].make_ascii_lowercase();
        return;
    }
    dst.extend(src.chars().map(to_lower));
}

/// Appends the Java-uppercased form of `src` to `dst`.
#[inline]
pub(crate) fn push_upper(src: &str, dst: &mut String) {
    if src.is_ascii() {
        dst.push_str(src);
        let start = dst.len() - src.len();
        dst[start..].make_ascii_uppercase();
        return;
    }
    dst.extend(src.chars().map(to_upper));
}

/// Length of `s` in UTF-16 code units (Java `String.length()`).
#[inline]
pub(crate) fn utf16_len(s: &str) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    s.chars().map(char::len_utf16).sum()
}

/// `Script=Han` (CJK ideographs, radicals), minus the iteration marks that UAX#29 counts
/// as letters (々 U+3005, 〻 U+303B).
#[inline]
pub(crate) fn is_han(c: char) -> bool {
    matches!(c as u32,
        0x2E80..=0x2E99 | 0x2E9B..=0x2EF3 | 0x2F00..=0x2FD5 | 0x3007 | 0x3021..=0x3029
        | 0x3038..=0x303A | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFA6D | 0xFA70..=0xFAD9
        | 0x16FF0..=0x16FF1 | 0x20000..=0x2A6DF | 0x2A700..=0x2EE5F
        | 0x2F800..=0x2FA1D | 0x30000..=0x323AF)
}

/// `Script=Hiragana`.
#[inline]
pub(crate) fn is_hiragana(c: char) -> bool {
    matches!(c as u32, 0x3041..=0x3096 | 0x309D..=0x309F | 0x1B001..=0x1B11F | 0x1B132 | 0x1B150..=0x1B152 | 0x1F200)
}

/// `Word_Break=Katakana`.
#[inline]
pub(crate) fn is_katakana(c: char) -> bool {
    matches!(c as u32,
        0x3031..=0x3035 | 0x309B..=0x309C | 0x30A0..=0x30FA | 0x30FC..=0x30FF | 0x31F0..=0x31FF
        | 0x32D0..=0x32FE | 0x3300..=0x3357 | 0xFF66..=0xFF9D | 0x1AFF0..=0x1AFFE | 0x1B000
        | 0x1B120..=0x1B122 | 0x1B155 | 0x1B164..=0x1B167)
}

/// `Script=Hangul`.
#[inline]
pub(crate) fn is_hangul(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF | 0x302E..=0x302F | 0x3131..=0x318E | 0x3200..=0x321E | 0x3260..=0x327E
        | 0xA960..=0xA97C | 0xAC00..=0xD7A3 | 0xD7B0..=0xD7C6 | 0xD7CB..=0xD7FB | 0xFFA0..=0xFFDC)
}

/// `Line_Break=Complex_Context` (Thai, Lao, Myanmar, Khmer, Tai scripts): Lucene keeps runs
/// of these together as one `<SOUTHEAST_ASIAN>` token.
#[inline]
pub(crate) fn is_southeast_asian(c: char) -> bool {
    matches!(c as u32,
        0x0E01..=0x0E3A | 0x0E40..=0x0E4E | 0x0E81..=0x0ECF | 0x0EDC..=0x0EDF
        | 0x1000..=0x103F | 0x1050..=0x108F | 0x109A..=0x109F | 0x1780..=0x17D3 | 0x17D7
        | 0x17DC..=0x17DD | 0x1950..=0x1974 | 0x1980..=0x19CF | 0x19DA..=0x19DF
        | 0x1A20..=0x1A5E | 0x1A60..=0x1A7C | 0x1AA0..=0x1AAD | 0xA9E0..=0xA9EF | 0xA9FA..=0xA9FE
        | 0xAA60..=0xAAC2 | 0xAADB..=0xAADF | 0x11700..=0x1171A | 0x1171D..=0x1172B)
}

/// Characters that start an `<EMOJI>` token: `Extended_Pictographic`, as in the Unicode
/// version of Lucene's scanner (checked against Lucene 9.12 one code point at a time).
#[inline]
pub(crate) fn is_emoji_base(c: char) -> bool {
    matches!(c as u32,
        0xA9 | 0xAE | 0x203C | 0x2049 | 0x2122 | 0x2139 | 0x2194..=0x2199 | 0x21A9..=0x21AA
        | 0x231A..=0x231B | 0x2328 | 0x2388 | 0x23CF | 0x23E9..=0x23F3 | 0x23F8..=0x23FA | 0x24C2
        | 0x25AA..=0x25AB | 0x25B6 | 0x25C0 | 0x25FB..=0x25FE | 0x2600..=0x2605 | 0x2607..=0x2612
        | 0x2614..=0x2685 | 0x2690..=0x2705 | 0x2708..=0x2712 | 0x2714 | 0x2716 | 0x271D | 0x2721
        | 0x2728 | 0x2733..=0x2734 | 0x2744 | 0x2747 | 0x274C | 0x274E | 0x2753..=0x2755 | 0x2757
        | 0x2763..=0x2767 | 0x2795..=0x2797 | 0x27A1 | 0x27B0 | 0x27BF | 0x2934..=0x2935
        | 0x2B05..=0x2B07 | 0x2B1B..=0x2B1C | 0x2B50 | 0x2B55 | 0x3030 | 0x303D | 0x3297 | 0x3299
        | 0x1F000..=0x1F0FF | 0x1F10D..=0x1F10F | 0x1F12F | 0x1F16C..=0x1F171 | 0x1F17E..=0x1F17F
        | 0x1F18E | 0x1F191..=0x1F19A | 0x1F1AD..=0x1F1E5 | 0x1F201..=0x1F20F | 0x1F21A | 0x1F22F
        | 0x1F232..=0x1F23A | 0x1F23C..=0x1F23F | 0x1F249..=0x1F53D | 0x1F546..=0x1F64F
        | 0x1F680..=0x1F6FF | 0x1F774..=0x1F77F | 0x1F7D5..=0x1F7FF | 0x1F80C..=0x1F80F
        | 0x1F848..=0x1F84F | 0x1F85A..=0x1F85F | 0x1F888..=0x1F88F | 0x1F8AE..=0x1F8FF
        | 0x1F90C..=0x1F93A | 0x1F93C..=0x1F945 | 0x1F947..=0x1FFFD)
}

/// Non-alphabetic characters that UAX#29 nevertheless counts as letters (`ALetter`):
/// spacing modifier letters and a few Armenian/Hebrew marks.
#[inline]
pub(crate) fn is_extra_aletter(c: char) -> bool {
    matches!(c as u32,
        0x02C2..=0x02C5 | 0x02D2..=0x02D7 | 0x02DE..=0x02DF | 0x02ED | 0x02EF..=0x02FF
        | 0x055B..=0x055C | 0x055E | 0x05F3 | 0xA720..=0xA721 | 0xA789..=0xA78A | 0xAB5B)
}

#[inline]
pub(crate) fn is_regional_indicator(c: char) -> bool {
    matches!(c, '\u{1F1E6}'..='\u{1F1FF}')
}

/// Combining marks and format characters that attach to the previous character
/// (`Word_Break` Extend/Format/ZWJ, approximated by general categories M and Cf).
#[inline]
pub(crate) fn is_extend(c: char) -> bool {
    if c.is_ascii() {
        return false;
    }
    // Fast path for ideographs, kana and Hangul syllables (none of which is a mark).
    if matches!(c as u32, 0x3041..=0x3096 | 0x30A0..=0x30FF | 0x3400..=0x9FFF | 0xAC00..=0xD7A3) {
        return false;
    }
    if matches!(c, '\u{1F3FB}'..='\u{1F3FF}') {
        // Emoji skin tone modifiers are Word_Break=Extend.
        return true;
    }
    matches!(
        c.general_category(),
        unicode_properties::GeneralCategory::NonspacingMark
            | unicode_properties::GeneralCategory::SpacingMark
            | unicode_properties::GeneralCategory::EnclosingMark
            | unicode_properties::GeneralCategory::Format
    )
}
