//! Chinese word segmentation built in: the `ik_smart` / `ik_max_word` tokenizers (as the IK
//! plugin registers them) and `smartcn_tokenizer` (as the analysis-smartcn plugin does).
//!
//! Words come from jieba-rs and its bundled dictionary (the jieba project's `dict.txt`),
//! loaded once per process on first use ([`jieba`]). The plugins have dictionaries of their
//! own, so some segmentations differ; everything around the dictionary follows the plugins:
//!
//! - **IK** (`elasticsearch-analysis-ik`): the text is regularized per character (full-width
//!   forms to half-width, the ideographic space to a space, ASCII letters lowercased), then
//!   - runs of Chinese characters (CJK Unified Ideographs, Extension A, Compatibility
//!     Ideographs) are segmented: `ik_max_word` emits *every* dictionary word of two or more
//!     characters found in the run (overlapping, `CN_WORD`); `ik_smart` emits jieba's precise
//!     segmentation without the HMM (the coarsest split the dictionary gives; characters the
//!     dictionary does not join stay single);
//!   - IK's letter segmenter: runs of `a-z` (`ENGLISH`), runs of digits that may contain `,`
//!     and `.` between digits (`ARABIC`), runs of letters and digits joined by `# & + - . @ _`
//!     (`LETTER`, connectors at the end included, as IK does); a `LETTER` span equal to an
//!     `ENGLISH` or `ARABIC` one is dropped. `ik_max_word` keeps them all; `ik_smart` keeps,
//!     among overlapping ones, the set that covers most characters with fewest tokens (IK's
//!     arbitrator);
//!   - tokens are ordered by start, longer first, and numbered one position each; walking
//!     them, characters left between the end of a token and the start of the next are
//!     emitted singly (`CN_CHAR` for Chinese, `OTHER_CJK` for kana, hangul and other
//!     half/full-width forms), exactly as IK's `AnalyzeContext.outputToResult` does (so
//!     `ik_max_word` repeats the `国` of `共和国` before `国歌`);
//!   - IK's stop words (its `stopword.dic`, the English stop words) are removed without
//!     leaving position gaps; everything else (punctuation, whitespace) is dropped.
//!
//!   IK's Chinese numeral and quantifier segmenter (`TYPE_CNUM`, `TYPE_COUNT`) is not built:
//!   Chinese numerals are segmented by the dictionary like other words.
//! - **smartcn** (`HMMChineseTokenizer`): Chinese runs are segmented with jieba's precise mode
//!   without HMM (smartcn's own model is a bigram HHMM over another dictionary); full-width
//!   letters and digits fold to half-width; runs of ASCII letters (lowercased) and runs of
//!   digits are tokens of their own; whitespace is skipped; every punctuation or symbol
//!   character becomes the token `,` (smartcn's common delimiter, which the `smartcn` analyzer's
//!   stop set removes, leaving a position gap); any other character is a token by itself.
//!   All tokens have the type `word`.

use std::sync::LazyLock;

use jieba_rs::Jieba;
use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};

use crate::token::{TokList, TokenType};

/// The process-wide segmenter: the dictionary is parsed once, on first use.
static JIEBA: LazyLock<Jieba> = LazyLock::new(Jieba::new);

/// The shared jieba segmenter with its bundled dictionary.
pub(crate) fn jieba() -> &'static Jieba {
    &JIEBA
}

/// IK's stop words (`config/stopword.dic` of the IK plugin: the English stop words).
pub(crate) const IK_STOP_WORDS: [&str; 33] = crate::filters::stopwords::ENGLISH_STOP_WORDS;

/// The stop set of the smartcn analyzer (Lucene's `smartcn/stopwords.txt`: punctuation only).
pub(crate) const SMARTCN_STOP_WORDS: [&str; 53] = [
    ",", ".", "`", "-", "_", "=", "?", "'", "|", "\"", "(", ")", "{", "}", "[", "]", "<", ">", "*",
    "#", "&", "^", "$", "@", "!", "~", ":", ";", "+", "/", "\\", "《", "》", "—", "－", "，", "。",
    "、", "：", "；", "！", "·", "？", "“", "”", "）", "（", "【", "】", "［", "］", "●",
    "\u{3000}",
];

/// IK's character classes (`CharacterUtil.identifyCharType`), on regularized characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IkChar {
    Arabic,
    English,
    Chinese,
    OtherCjk,
    Useless,
}

/// CJK Unified Ideographs, Extension A and Compatibility Ideographs: what IK calls Chinese.
fn is_chinese(c: char) -> bool {
    matches!(c, '\u{4E00}'..='\u{9FFF}' | '\u{3400}'..='\u{4DBF}' | '\u{F900}'..='\u{FAFF}')
}

fn ik_char_type(c: char) -> IkChar {
    match c {
        '0'..='9' => IkChar::Arabic,
        'a'..='z' | 'A'..='Z' => IkChar::English,
        c if is_chinese(c) => IkChar::Chinese,
        // Halfwidth and Fullwidth Forms, Hangul Syllables, Hangul Jamo, Hangul Compatibility
        // Jamo, Hiragana, Katakana, Katakana Phonetic Extensions.
        '\u{FF00}'..='\u{FFEF}'
        | '\u{AC00}'..='\u{D7AF}'
        | '\u{1100}'..='\u{11FF}'
        | '\u{3130}'..='\u{318F}'
        | '\u{3040}'..='\u{309F}'
        | '\u{30A0}'..='\u{30FF}'
        | '\u{31F0}'..='\u{31FF}' => IkChar::OtherCjk,
        _ => IkChar::Useless,
    }
}

/// IK's `CharacterUtil.regularize` with lowercasing on (the plugin's default).
fn ik_regularize(c: char) -> char {
    let c = match c {
        '\u{3000}' => ' ',
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
        c => c,
    };
    c.to_ascii_lowercase()
}

/// One character of the input: byte offset, regularized char, class.
#[derive(Debug, Clone, Copy)]
struct Ch {
    at: usize,
    c: char,
    ty: IkChar,
}

/// A candidate token over characters `begin..end` (indices into the `Ch` list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Lexeme {
    begin: usize,
    end: usize,
    kind: TokenType,
}

impl Lexeme {
    fn len(&self) -> usize {
        self.end - self.begin
    }
}

/// Tokenizes `text` as the IK tokenizers do; `smart` selects `ik_smart`.
pub(crate) fn ik(text: &str, smart: bool, out: &mut TokList) {
    let chars: Vec<Ch> = text
        .char_indices()
        .map(|(at, c)| {
            let c = ik_regularize(c);
            Ch {
                at,
                c,
                ty: ik_char_type(c),
            }
        })
        .collect();
    let mut lexemes = letter_lexemes(&chars);
    if smart {
        lexemes = arbitrate(lexemes);
    }
    chinese_lexemes(text, &chars, smart, &mut lexemes);
    lexemes.sort_by(|a, b| a.begin.cmp(&b.begin).then(b.len().cmp(&a.len())));

    let byte_at = |i: usize| chars.get(i).map_or(text.len(), |ch| ch.at);
    let emit = |lx: &Lexeme, out: &mut TokList| {
        let word: String = chars[lx.begin..lx.end].iter().map(|ch| ch.c).collect();
        if !IK_STOP_WORDS.contains(&word.as_str()) {
            out.push(&word, byte_at(lx.begin), byte_at(lx.end), 1, lx.kind);
        }
    };
    let singles = |from: usize, to: usize, out: &mut TokList| {
        for (i, ch) in chars.iter().enumerate().take(to).skip(from) {
            let kind = match ch.ty {
                IkChar::Chinese => TokenType::CnChar,
                IkChar::OtherCjk => TokenType::OtherCjk,
                _ => continue,
            };
            let mut buf = [0u8; 4];
            out.push(
                ch.c.encode_utf8(&mut buf),
                byte_at(i),
                byte_at(i + 1),
                1,
                kind,
            );
        }
    };
    // IK's output walk: `index` is the end of the last token emitted (not the furthest end).
    let mut index = 0;
    for lx in &lexemes {
        if lx.begin > index {
            singles(index, lx.begin, out);
        }
        emit(lx, out);
        index = lx.end;
    }
    singles(index, chars.len(), out);
}

/// IK's `LetterSegmenter`: ENGLISH, ARABIC and LETTER lexemes, duplicates removed.
fn letter_lexemes(chars: &[Ch]) -> Vec<Lexeme> {
    let mut out = Vec::new();
    let n = chars.len();
    let is_letter_connector = |c: char| matches!(c, '#' | '&' | '+' | '-' | '.' | '@' | '_');
    let is_num_connector = |c: char| matches!(c, ',' | '.');
    // English: runs of letters.
    let mut i = 0;
    while i < n {
        if chars[i].ty == IkChar::English {
            let start = i;
            while i < n && chars[i].ty == IkChar::English {
                i += 1;
            }
            out.push(Lexeme {
                begin: start,
                end: i,
                kind: TokenType::English,
            });
        } else {
            i += 1;
        }
    }
    // Arabic numbers: digits, with `,` / `.` allowed in between (not at the end).
    // Mixed letters: letters and digits, with connectors (kept at the end).
    for (accept_type, connector, kind) in [
        (
            &(|t: IkChar| t == IkChar::Arabic) as &dyn Fn(IkChar) -> bool,
            &is_num_connector as &dyn Fn(char) -> bool,
            TokenType::Arabic,
        ),
        (
            &|t: IkChar| matches!(t, IkChar::Arabic | IkChar::English),
            &is_letter_connector,
            TokenType::Letter,
        ),
    ] {
        let mut i = 0;
        while i < n {
            if !accept_type(chars[i].ty) {
                i += 1;
                continue;
            }
            let start = i;
            let mut end = i;
            i += 1;
            while i < n {
                let ch = chars[i];
                if accept_type(ch.ty) {
                    end = i;
                } else if ch.ty == IkChar::Useless && connector(ch.c) {
                    if kind == TokenType::Letter {
                        end = i;
                    }
                } else {
                    break;
                }
                i += 1;
            }
            let lx = Lexeme {
                begin: start,
                end: end + 1,
                kind,
            };
            // IK's sorted set refuses a second lexeme with the same span.
            if !out.iter().any(|o| o.begin == lx.begin && o.end == lx.end) {
                out.push(lx);
            }
        }
    }
    out
}

/// IK's smart arbitration among overlapping lexemes: per group of lexemes that overlap
/// (transitively), the non-overlapping subset covering most characters, then with fewest
/// lexemes (`LexemePath.compareTo`).
fn arbitrate(mut lexemes: Vec<Lexeme>) -> Vec<Lexeme> {
    lexemes.sort_by(|a, b| a.begin.cmp(&b.begin).then(b.len().cmp(&a.len())));
    let mut out = Vec::new();
    let mut group: Vec<Lexeme> = Vec::new();
    let mut group_end = 0;
    for lx in lexemes {
        if !group.is_empty() && lx.begin >= group_end {
            out.extend(best_path(&group));
            group.clear();
        }
        group_end = if group.is_empty() {
            lx.end
        } else {
            group_end.max(lx.end)
        };
        group.push(lx);
    }
    out.extend(best_path(&group));
    out
}

/// Weighted interval scheduling over one small group (sorted by begin, longer first).
fn best_path(group: &[Lexeme]) -> Vec<Lexeme> {
    if group.len() <= 1 {
        return group.to_vec();
    }
    // best[i] = best (payload, -count, chosen) using lexemes from i on.
    let n = group.len();
    let mut best: Vec<(usize, isize, Vec<usize>)> = vec![(0, 0, Vec::new()); n + 1];
    for i in (0..n).rev() {
        let skip = best[i + 1].clone();
        let next = (i + 1..n)
            .find(|&j| group[j].begin >= group[i].end)
            .unwrap_or(n);
        let (p, c, ref chosen) = best[next];
        let mut take_chosen = vec![i];
        take_chosen.extend(chosen);
        let take = (p + group[i].len(), c - 1, take_chosen);
        best[i] = if (take.0, take.1) >= (skip.0, skip.1) {
            take
        } else {
            skip
        };
    }
    best[0].2.iter().map(|&i| group[i]).collect()
}

/// Dictionary lexemes of every run of Chinese characters.
fn chinese_lexemes(text: &str, chars: &[Ch], smart: bool, out: &mut Vec<Lexeme>) {
    let mut i = 0;
    while i < chars.len() {
        if chars[i].ty != IkChar::Chinese {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && chars[i].ty == IkChar::Chinese {
            i += 1;
        }
        let run_end = chars.get(i).map_or(text.len(), |ch| ch.at);
        let run = &text[chars[start].at..run_end];
        if smart {
            for t in jieba().cut(run, false) {
                out.push(Lexeme {
                    begin: start + t.start,
                    end: start + t.end,
                    kind: if t.end - t.start > 1 {
                        TokenType::CnWord
                    } else {
                        TokenType::CnChar
                    },
                });
            }
        } else {
            for t in jieba().cut_all(run) {
                if t.end - t.start > 1 {
                    out.push(Lexeme {
                        begin: start + t.start,
                        end: start + t.end,
                        kind: TokenType::CnWord,
                    });
                }
            }
        }
    }
}

/// smartcn's character classes (`Utility.getCharType`), after folding full-width forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CnChar {
    Hanzi,
    Letter,
    Digit,
    Space,
    Delimiter,
    Other,
}

fn smartcn_fold(c: char) -> char {
    match c {
        '\u{FF10}'..='\u{FF19}' | '\u{FF21}'..='\u{FF3A}' | '\u{FF41}'..='\u{FF5A}' => {
            char::from_u32(c as u32 - 0xFEE0).unwrap_or(c)
        }
        c => c,
    }
}

fn smartcn_type(c: char) -> CnChar {
    if is_chinese(c) {
        CnChar::Hanzi
    } else if c.is_ascii_alphabetic() {
        CnChar::Letter
    } else if c.is_ascii_digit() {
        CnChar::Digit
    } else if c.is_whitespace() {
        CnChar::Space
    } else if matches!(
        c.general_category_group(),
        GeneralCategoryGroup::Punctuation | GeneralCategoryGroup::Symbol
    ) || c.is_ascii_punctuation()
    {
        CnChar::Delimiter
    } else {
        CnChar::Other
    }
}

/// Tokenizes `text` as the `smartcn_tokenizer` does (see the module documentation).
pub(crate) fn smartcn(text: &str, out: &mut TokList) {
    let chars: Vec<(usize, char, CnChar)> = text
        .char_indices()
        .map(|(at, c)| {
            let c = smartcn_fold(c);
            (at, c, smartcn_type(c))
        })
        .collect();
    let byte_at = |i: usize| chars.get(i).map_or(text.len(), |ch| ch.0);
    let mut i = 0;
    while i < chars.len() {
        let (at, c, ty) = chars[i];
        match ty {
            CnChar::Space => i += 1,
            CnChar::Delimiter => {
                out.push(",", at, byte_at(i + 1), 1, TokenType::Word);
                i += 1;
            }
            CnChar::Other => {
                let slot = out.next_slot();
                slot.text.extend(c.to_lowercase());
                slot.start = at;
                slot.end = byte_at(i + 1);
                slot.kind = TokenType::Word;
                i += 1;
            }
            CnChar::Letter | CnChar::Digit => {
                let start = i;
                while i < chars.len() && chars[i].2 == ty {
                    i += 1;
                }
                let slot = out.next_slot();
                slot.text
                    .extend(chars[start..i].iter().map(|ch| ch.1.to_ascii_lowercase()));
                slot.start = at;
                slot.end = byte_at(i);
                slot.kind = TokenType::Word;
            }
            CnChar::Hanzi => {
                let start = i;
                while i < chars.len() && chars[i].2 == CnChar::Hanzi {
                    i += 1;
                }
                let run = &text[at..byte_at(i)];
                for t in jieba().cut(run, false) {
                    out.push(
                        t.word,
                        at + t.byte_start,
                        at + t.byte_end,
                        1,
                        TokenType::Word,
                    );
                }
                debug_assert!(i > start);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::jieba;
    use crate::{AnalysisRegistry, Analyzer};

    type T = (String, usize, usize, String, usize);

    fn tok(t: &str, s: usize, e: usize, ty: &str, p: usize) -> T {
        (t.to_string(), s, e, ty.to_string(), p)
    }

    fn run(analyzer: &Analyzer, text: &str) -> Vec<T> {
        analyzer
            .analyze(text)
            .into_iter()
            .map(|t| {
                (
                    t.token,
                    t.start_offset,
                    t.end_offset,
                    t.token_type,
                    t.position,
                )
            })
            .collect()
    }

    fn analyzer(name: &str) -> Analyzer {
        AnalysisRegistry::new(None).unwrap().analyzer(name).unwrap()
    }

    fn tokenizer(name: &str) -> Analyzer {
        AnalysisRegistry::new(None)
            .unwrap()
            .build_custom(&json!(name), &[], &[])
            .unwrap()
    }

    /// The documented `ik_max_word` rule computed independently of the tokenizer, for a text
    /// of Chinese characters only: every dictionary word of 2+ characters (looked up one by
    /// one), ordered by start then longer first, characters between the end of one word and
    /// the start of the next as `CN_CHAR`.
    fn max_word_oracle(text: &str) -> Vec<T> {
        let chars: Vec<char> = text.chars().collect();
        let mut words = Vec::new();
        for i in 0..chars.len() {
            for j in (i + 2..=chars.len()).rev() {
                let w: String = chars[i..j].iter().collect();
                if jieba().has_word(&w) {
                    words.push((i, j));
                }
            }
        }
        let mut out = Vec::new();
        let mut index = 0;
        let push = |out: &mut Vec<T>, i: usize, j: usize, ty: &str| {
            let p = out.len();
            out.push(tok(&chars[i..j].iter().collect::<String>(), i, j, ty, p));
        };
        for (i, j) in words {
            for k in index..i {
                push(&mut out, k, k + 1, "CN_CHAR");
            }
            push(&mut out, i, j, "CN_WORD");
            index = j;
        }
        for k in index..chars.len() {
            push(&mut out, k, k + 1, "CN_CHAR");
        }
        out
    }

    #[test]
    fn ik_max_word_emits_every_dictionary_word() {
        let a = analyzer("ik_max_word");
        // The IK plugin's own README example, token for token (its dictionary agrees here),
        // including the `国` repeated before `国歌`.
        assert_eq!(
            run(&a, "中华人民共和国国歌"),
            vec![
                tok("中华人民共和国", 0, 7, "CN_WORD", 0),
                tok("中华人民", 0, 4, "CN_WORD", 1),
                tok("中华", 0, 2, "CN_WORD", 2),
                tok("华人", 1, 3, "CN_WORD", 3),
                tok("人民共和国", 2, 7, "CN_WORD", 4),
                tok("人民", 2, 4, "CN_WORD", 5),
                tok("共和国", 4, 7, "CN_WORD", 6),
                tok("共和", 4, 6, "CN_WORD", 7),
                tok("国", 6, 7, "CN_CHAR", 8),
                tok("国歌", 7, 9, "CN_WORD", 9),
            ]
        );
        assert_eq!(
            run(&a, "我爱北京天安门"),
            vec![
                tok("我", 0, 1, "CN_CHAR", 0),
                tok("爱", 1, 2, "CN_CHAR", 1),
                tok("北京", 2, 4, "CN_WORD", 2),
                tok("天安门", 4, 7, "CN_WORD", 3),
                tok("天安", 4, 6, "CN_WORD", 4),
                tok("门", 6, 7, "CN_CHAR", 5),
            ]
        );
        for text in [
            "中华人民共和国国歌",
            "我爱北京天安门",
            "研究生命起源",
            "南京市长江大桥",
            "全文检索引擎支持中文分词",
            "结婚的和尚未结婚的",
        ] {
            assert_eq!(run(&a, text), max_word_oracle(text), "{text}");
        }
    }

    #[test]
    fn ik_smart_is_the_coarsest_segmentation() {
        let a = analyzer("ik_smart");
        assert_eq!(
            run(&a, "中华人民共和国国歌"),
            vec![
                tok("中华人民共和国", 0, 7, "CN_WORD", 0),
                tok("国歌", 7, 9, "CN_WORD", 1),
            ]
        );
        assert_eq!(
            run(&a, "我爱北京天安门"),
            vec![
                tok("我", 0, 1, "CN_CHAR", 0),
                tok("爱", 1, 2, "CN_CHAR", 1),
                tok("北京", 2, 4, "CN_WORD", 2),
                tok("天安门", 4, 7, "CN_WORD", 3),
            ]
        );
        // Every multi-character token is a dictionary word, tokens tile the text.
        let text = "南京市长江大桥欢迎您";
        let toks = run(&a, text);
        assert_eq!(toks.iter().map(|t| t.0.as_str()).collect::<String>(), text);
        for t in &toks {
            if t.0.chars().count() > 1 {
                assert!(jieba().has_word(&t.0), "{}", t.0);
                assert_eq!(t.3, "CN_WORD");
            }
        }
    }

    #[test]
    fn ik_mixed_latin_digits_and_punctuation() {
        let text = "Lode 2.0 支持中文分词！";
        let smart = vec![
            tok("lode", 0, 4, "ENGLISH", 0),
            tok("2.0", 5, 8, "ARABIC", 1),
            tok("支持", 9, 11, "CN_WORD", 2),
            tok("中文", 11, 13, "CN_WORD", 3),
            tok("分词", 13, 15, "CN_WORD", 4),
        ];
        assert_eq!(run(&analyzer("ik_smart"), text), smart);
        assert_eq!(run(&analyzer("ik_max_word"), text), smart);
        assert_eq!(run(&tokenizer("ik_smart"), text), smart);

        // Letters and digits together: LETTER, plus its parts in ik_max_word.
        let text = "iPhone15 的 Wi-Fi";
        assert_eq!(
            run(&analyzer("ik_max_word"), text),
            vec![
                tok("iphone15", 0, 8, "LETTER", 0),
                tok("iphone", 0, 6, "ENGLISH", 1),
                tok("15", 6, 8, "ARABIC", 2),
                tok("的", 9, 10, "CN_CHAR", 3),
                tok("wi-fi", 11, 16, "LETTER", 4),
                tok("wi", 11, 13, "ENGLISH", 5),
                tok("fi", 14, 16, "ENGLISH", 6),
            ]
        );
        assert_eq!(
            run(&analyzer("ik_smart"), text),
            vec![
                tok("iphone15", 0, 8, "LETTER", 0),
                tok("的", 9, 10, "CN_CHAR", 1),
                tok("wi-fi", 11, 16, "LETTER", 2),
            ]
        );
        // Digits with a thousands separator: ARABIC covers most in ik_smart.
        assert_eq!(
            run(&analyzer("ik_smart"), "1,000元"),
            vec![
                tok("1,000", 0, 5, "ARABIC", 0),
                tok("元", 5, 6, "CN_CHAR", 1),
            ]
        );
        // Full-width letters fold and lowercase; IK's stop words go without a gap.
        assert_eq!(
            run(&analyzer("ik_smart"), "ＡＢＣ the 北京"),
            vec![
                tok("abc", 0, 3, "ENGLISH", 0),
                tok("北京", 8, 10, "CN_WORD", 1),
            ]
        );
        // Offsets are UTF-16 units: an astral character counts two and is dropped.
        assert_eq!(
            run(&analyzer("ik_smart"), "😀北京"),
            vec![tok("北京", 2, 4, "CN_WORD", 0)]
        );
        // Kana are single OTHER_CJK tokens.
        assert_eq!(
            run(&analyzer("ik_smart"), "カナ"),
            vec![
                tok("カ", 0, 1, "OTHER_CJK", 0),
                tok("ナ", 1, 2, "OTHER_CJK", 1)
            ]
        );
    }

    #[test]
    fn smartcn_analyzer_and_tokenizer() {
        // Lucene's TestSmartChineseAnalyzer sentences (its dictionary agrees on these).
        let a = analyzer("smartcn");
        assert_eq!(
            run(&a, "我购买了道具和服装。"),
            vec![
                tok("我", 0, 1, "word", 0),
                tok("购买", 1, 3, "word", 1),
                tok("了", 3, 4, "word", 2),
                tok("道具", 4, 6, "word", 3),
                tok("和", 6, 7, "word", 4),
                tok("服装", 7, 9, "word", 5),
            ]
        );
        // Punctuation is a stop word (position gap), English is lowercased and stemmed.
        assert_eq!(
            run(&a, "Title:San"),
            vec![tok("titl", 0, 5, "word", 0), tok("san", 6, 9, "word", 2)]
        );
        let words = |an: &Analyzer, text: &str| -> Vec<String> {
            an.analyze(text).into_iter().map(|t| t.token).collect()
        };
        assert_eq!(
            words(&a, "我购买 Ｔｅｓｔｓ 了道具和服装１２３４"),
            ["我", "购买", "test", "了", "道具", "和", "服装", "1234"]
        );
        // The tokenizer alone: delimiters become `,`, no stemming.
        let t = tokenizer("smartcn_tokenizer");
        assert_eq!(
            words(&t, "我购买了道具和服装。Tests"),
            ["我", "购买", "了", "道具", "和", "服装", ",", "tests"]
        );
    }

    #[test]
    fn custom_analyzers_use_them() {
        let registry = AnalysisRegistry::new(Some(&json!({
            "analyzer": {
                "cn": {"tokenizer": "ik_max_word", "filter": ["uppercase"]},
                "typed": {"type": "ik_smart"},
                "sc": {"type": "smartcn"}
            },
            "filter": {"cnstop": {"type": "smartcn_stop", "stopwords": ["_smartcn_", "的"]}}
        })))
        .unwrap();
        let cn = registry.analyzer("cn").unwrap();
        assert_eq!(cn.analyze("lode北京")[0].token, "LODE");
        let typed = registry.analyzer("typed").unwrap();
        assert_eq!(typed.analyze("北京").len(), 1);
        let stop = registry
            .build_custom(&json!("smartcn_tokenizer"), &[json!("cnstop")], &[])
            .unwrap();
        let toks: Vec<String> = stop
            .analyze("我的书，")
            .into_iter()
            .map(|t| t.token)
            .collect();
        assert_eq!(toks, ["我", "书"]);
    }
}
