//! End-to-end tests through the public API. Expected tokens come from the Elasticsearch
//! reference docs and were cross-checked against Lucene 9.12 (`tools/Oracle.java`).

use serde_json::{json, Value};
use tantivy_tokenizer_api::{TokenStream, Tokenizer as _};

use crate::{AnalysisError, AnalysisRegistry, AnalyzedToken, Analyzer};

const FOX: &str = "The 2 QUICK Brown-Foxes jumped over the lazy dog's bone.";

fn registry() -> AnalysisRegistry {
    AnalysisRegistry::new(None).unwrap()
}

fn terms(analyzer: &Analyzer, text: &str) -> Vec<String> {
    analyzer
        .analyze(text)
        .into_iter()
        .map(|t| t.token)
        .collect()
}

fn builtin(name: &str, text: &str) -> Vec<String> {
    terms(&registry().analyzer(name).unwrap(), text)
}

/// `(token, start, end, type, position)` tuples for compact assertions.
fn full(tokens: Vec<AnalyzedToken>) -> Vec<(String, usize, usize, String, usize)> {
    tokens
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

fn tok(t: &str, s: usize, e: usize, ty: &str, p: usize) -> (String, usize, usize, String, usize) {
    (t.to_string(), s, e, ty.to_string(), p)
}

fn chain(tokenizer: Value, filters: &[Value]) -> Analyzer {
    registry().build_custom(&tokenizer, filters, &[]).unwrap()
}

fn err(result: Result<impl std::fmt::Debug, AnalysisError>) -> String {
    let e = result.unwrap_err();
    assert_eq!(e.kind, "illegal_argument_exception");
    e.reason
}

// ---------------------------------------------------------------- built-in analyzers

#[test]
fn standard_analyzer_docs_example() {
    let a = registry().analyzer("standard").unwrap();
    assert_eq!(
        terms(&a, FOX),
        ["the", "2", "quick", "brown", "foxes", "jumped", "over", "the", "lazy", "dog's", "bone"]
    );
    let tokens = full(a.analyze(FOX));
    assert_eq!(tokens[0], tok("the", 0, 3, "<ALPHANUM>", 0));
    assert_eq!(tokens[1], tok("2", 4, 5, "<NUM>", 1));
    assert_eq!(tokens[9], tok("dog's", 45, 50, "<ALPHANUM>", 9));
    assert_eq!(tokens[10], tok("bone", 51, 55, "<ALPHANUM>", 10));
}

#[test]
fn standard_analyzer_chinese_unigrams() {
    let a = registry().analyzer("standard").unwrap();
    assert_eq!(
        full(a.analyze("我是中国人")),
        vec![
            tok("我", 0, 1, "<IDEOGRAPHIC>", 0),
            tok("是", 1, 2, "<IDEOGRAPHIC>", 1),
            tok("中", 2, 3, "<IDEOGRAPHIC>", 2),
            tok("国", 3, 4, "<IDEOGRAPHIC>", 3),
            tok("人", 4, 5, "<IDEOGRAPHIC>", 4),
        ]
    );
    let company = terms(&a, "江苏千米网络科技有限公司");
    assert_eq!(
        company,
        ["江", "苏", "千", "米", "网", "络", "科", "技", "有", "限", "公", "司"]
    );
}

#[test]
fn long_han_run_keeps_every_character() {
    // tantivy's default tokenizer makes this one 60-byte token and then drops it.
    let text = "中华人民共和国国务院总理在北京人民大会堂会见了代表团成员";
    let run: String = text.chars().take(20).collect();
    let tokens = registry().analyzer("standard").unwrap().analyze(&run);
    assert_eq!(tokens.len(), 20);
    assert!(tokens.iter().all(|t| t.token_type == "<IDEOGRAPHIC>"));
    assert_eq!(
        tokens.iter().map(|t| t.position).collect::<Vec<_>>(),
        (0..20).collect::<Vec<_>>()
    );
    assert_eq!(tokens[19].end_offset, 20);
}

#[test]
fn standard_mixed_scripts_and_types() {
    let a = registry().analyzer("standard").unwrap();
    assert_eq!(
        full(a.analyze("Lode是ES兼容的搜索引擎，支持中文。")),
        vec![
            tok("lode", 0, 4, "<ALPHANUM>", 0),
            tok("是", 4, 5, "<IDEOGRAPHIC>", 1),
            tok("es", 5, 7, "<ALPHANUM>", 2),
            tok("兼", 7, 8, "<IDEOGRAPHIC>", 3),
            tok("容", 8, 9, "<IDEOGRAPHIC>", 4),
            tok("的", 9, 10, "<IDEOGRAPHIC>", 5),
            tok("搜", 10, 11, "<IDEOGRAPHIC>", 6),
            tok("索", 11, 12, "<IDEOGRAPHIC>", 7),
            tok("引", 12, 13, "<IDEOGRAPHIC>", 8),
            tok("擎", 13, 14, "<IDEOGRAPHIC>", 9),
            tok("支", 15, 16, "<IDEOGRAPHIC>", 10),
            tok("持", 16, 17, "<IDEOGRAPHIC>", 11),
            tok("中", 17, 18, "<IDEOGRAPHIC>", 12),
            tok("文", 18, 19, "<IDEOGRAPHIC>", 13),
        ]
    );
    let std = chain(json!("standard"), &[]);
    assert_eq!(
        full(std.analyze("東京スカイツリーは2012年に開業 서울특별시 ภาษาไทย 😀 a")),
        vec![
            tok("東", 0, 1, "<IDEOGRAPHIC>", 0),
            tok("京", 1, 2, "<IDEOGRAPHIC>", 1),
            tok("スカイツリー", 2, 8, "<KATAKANA>", 2),
            tok("は", 8, 9, "<HIRAGANA>", 3),
            tok("2012", 9, 13, "<NUM>", 4),
            tok("年", 13, 14, "<IDEOGRAPHIC>", 5),
            tok("に", 14, 15, "<HIRAGANA>", 6),
            tok("開", 15, 16, "<IDEOGRAPHIC>", 7),
            tok("業", 16, 17, "<IDEOGRAPHIC>", 8),
            tok("서울특별시", 18, 23, "<HANGUL>", 9),
            tok("ภาษาไทย", 24, 31, "<SOUTHEAST_ASIAN>", 10),
            tok("😀", 32, 34, "<EMOJI>", 11),
            tok("a", 35, 36, "<ALPHANUM>", 12),
        ]
    );
}

#[test]
fn standard_tokenizer_word_rules() {
    let std = chain(json!("standard"), &[]);
    assert_eq!(
        terms(
            &std,
            "It's 3.14159, or 1,000,000.00; v1.2.3-beta U.S.A. e.g. foo_bar _x __ foo:bar"
        ),
        [
            "It's",
            "3.14159",
            "or",
            "1,000,000.00",
            "v1.2.3",
            "beta",
            "U.S.A",
            "e.g",
            "foo_bar",
            "_x",
            "foo:bar"
        ]
    );
    assert_eq!(
        terms(
            &std,
            "Visit https://www.example.com/path?q=1 or mail john.doe@example.com"
        ),
        [
            "Visit",
            "https",
            "www.example.com",
            "path",
            "q",
            "1",
            "or",
            "mail",
            "john.doe",
            "example.com"
        ]
    );
    assert_eq!(
        terms(&std, "👨‍👩‍👧‍👦 🇯🇵🇺🇸 👍🏽 ❤️ 1️⃣ ☕coffee © ²"),
        ["👨‍👩‍👧‍👦", "🇯🇵", "🇺🇸", "👍🏽", "❤️", "1️⃣", "☕", "coffee", "©"]
    );
    assert!(std.analyze("  ,;: !? -- ").is_empty());
}

#[test]
fn standard_max_token_length_splits_instead_of_dropping() {
    // ES docs: standard tokenizer with max_token_length 5.
    let five = chain(json!({"type": "standard", "max_token_length": 5}), &[]);
    assert_eq!(
        terms(&five, FOX),
        [
            "The", "2", "QUICK", "Brown", "Foxes", "jumpe", "d", "over", "the", "lazy", "dog's",
            "bone"
        ]
    );
    // Lucene emits the longest token that fits and rescans (no trailing '.' or '\'').
    assert_eq!(
        terms(&five, "john.doe rock'n'roll 1,000,000.00"),
        ["john", "doe", "rock", "n'rol", "l", "1,000", "000.0", "0"]
    );

    let long = "a".repeat(300);
    let tokens = registry().analyzer("standard").unwrap().analyze(&long);
    assert_eq!(tokens.len(), 2);
    assert_eq!(
        (
            tokens[0].token.len(),
            tokens[0].start_offset,
            tokens[0].end_offset
        ),
        (255, 0, 255)
    );
    assert_eq!(
        (
            tokens[1].token.len(),
            tokens[1].start_offset,
            tokens[1].end_offset
        ),
        (45, 255, 300)
    );
    assert_eq!((tokens[0].position, tokens[1].position), (0, 1));
}

#[test]
fn simple_whitespace_keyword_analyzers() {
    assert_eq!(
        builtin("simple", FOX),
        ["the", "quick", "brown", "foxes", "jumped", "over", "the", "lazy", "dog", "s", "bone"]
    );
    assert_eq!(
        builtin("whitespace", FOX),
        [
            "The",
            "2",
            "QUICK",
            "Brown-Foxes",
            "jumped",
            "over",
            "the",
            "lazy",
            "dog's",
            "bone."
        ]
    );
    assert_eq!(builtin("keyword", FOX), [FOX]);
    let kw = registry().analyzer("keyword").unwrap().analyze("");
    assert_eq!(full(kw), vec![tok("", 0, 0, "word", 0)]);
}

#[test]
fn stop_analyzer_leaves_position_gaps() {
    let a = registry().analyzer("stop").unwrap();
    let tokens = full(a.analyze(FOX));
    assert_eq!(
        tokens,
        vec![
            tok("quick", 6, 11, "word", 1),
            tok("brown", 12, 17, "word", 2),
            tok("foxes", 18, 23, "word", 3),
            tok("jumped", 24, 30, "word", 4),
            tok("over", 31, 35, "word", 5),
            tok("lazy", 40, 44, "word", 7),
            tok("dog", 45, 48, "word", 8),
            tok("s", 49, 50, "word", 9),
            tok("bone", 51, 55, "word", 10),
        ]
    );
}

// ---------------------------------------------------------------- tokenizers

#[test]
fn letter_lowercase_whitespace_tokenizers() {
    assert_eq!(
        terms(&chain(json!("letter"), &[]), FOX),
        ["The", "QUICK", "Brown", "Foxes", "jumped", "over", "the", "lazy", "dog", "s", "bone"]
    );
    assert_eq!(
        terms(&chain(json!("lowercase"), &[]), FOX),
        ["the", "quick", "brown", "foxes", "jumped", "over", "the", "lazy", "dog", "s", "bone"]
    );
    let ws = chain(json!("whitespace"), &[]);
    assert_eq!(
        full(ws.analyze("a\u{a0}b\tc\u{3000}d")),
        vec![
            tok("a\u{a0}b", 0, 3, "word", 0),
            tok("c", 4, 5, "word", 1),
            tok("d", 6, 7, "word", 2),
        ]
    );
    let ws4 = chain(json!({"type": "whitespace", "max_token_length": 4}), &[]);
    assert_eq!(terms(&ws4, "abcdefghij xy"), ["abcd", "efgh", "ij", "xy"]);
    // Java's Character.isLetter: combining vowel signs split Hindi words like in Lucene.
    assert_eq!(terms(&chain(json!("letter"), &[]), "नमस्ते"), ["नमस", "त"]);
}

#[test]
fn char_group_tokenizer_docs_example() {
    let a = chain(
        json!({"type": "char_group", "tokenize_on_chars": ["whitespace", "-", "\n"]}),
        &[],
    );
    assert_eq!(
        terms(&a, "The QUICK brown-fox"),
        ["The", "QUICK", "brown", "fox"]
    );
    let p = chain(
        json!({"type": "char_group", "tokenize_on_chars": ["punctuation", "\\n"]}),
        &[],
    );
    assert_eq!(terms(&p, "a.b,c\nd e"), ["a", "b", "c", "d e"]);
}

#[test]
fn ngram_tokenizers_docs_examples() {
    assert_eq!(
        terms(&chain(json!("ngram"), &[]), "Quick Fox"),
        [
            "Q", "Qu", "u", "ui", "i", "ic", "c", "ck", "k", "k ", " ", " F", "F", "Fo", "o", "ox",
            "x"
        ]
    );
    let tri = chain(
        json!({"type": "ngram", "min_gram": 3, "max_gram": 3, "token_chars": ["letter", "digit"]}),
        &[],
    );
    assert_eq!(
        terms(&tri, "2 Quick Foxes."),
        ["Qui", "uic", "ick", "Fox", "oxe", "xes"]
    );
    assert_eq!(
        terms(&chain(json!("edge_ngram"), &[]), "Quick Fox"),
        ["Q", "Qu"]
    );
    let edge = chain(
        json!({"type": "edge_ngram", "min_gram": 2, "max_gram": 10, "token_chars": ["letter", "digit"]}),
        &[],
    );
    assert_eq!(
        terms(&edge, "2 Quick Foxes."),
        ["Qu", "Qui", "Quic", "Quick", "Fo", "Fox", "Foxe", "Foxes"]
    );
    let positions: Vec<usize> = edge
        .analyze("2 Quick Foxes.")
        .iter()
        .map(|t| t.position)
        .collect();
    assert_eq!(positions, (0..8).collect::<Vec<_>>());
}

// ---------------------------------------------------------------- token filters

#[test]
fn lowercase_uppercase_filters_use_java_case_mapping() {
    let lower = chain(json!("standard"), &[json!("lowercase")]);
    assert_eq!(
        terms(&lower, "THE Quick FoX JUMPs"),
        ["the", "quick", "fox", "jumps"]
    );
    assert_eq!(
        terms(&lower, "İSTANBUL ΣΊΣΥΦΟΣ Straße"),
        ["istanbul", "σίσυφοσ", "straße"]
    );
    let upper = chain(json!("standard"), &[json!("uppercase")]);
    assert_eq!(
        terms(&upper, "the Quick FoX JUMPs"),
        ["THE", "QUICK", "FOX", "JUMPS"]
    );
    assert_eq!(terms(&upper, "straße ﬁne ᾳ"), ["STRAßE", "ﬁNE", "ᾼ"]);
}

#[test]
fn asciifolding_filter_docs_examples() {
    let fold = chain(json!("standard"), &[json!("asciifolding")]);
    assert_eq!(
        terms(&fold, "açaí à la carte"),
        ["acai", "a", "la", "carte"]
    );
    let keep = chain(
        json!("whitespace"),
        &[json!({"type": "asciifolding", "preserve_original": true})],
    );
    assert_eq!(
        full(keep.analyze("açaí à la carte")),
        vec![
            tok("acai", 0, 4, "word", 0),
            tok("açaí", 0, 4, "word", 0),
            tok("a", 5, 6, "word", 1),
            tok("à", 5, 6, "word", 1),
            tok("la", 7, 9, "word", 2),
            tok("carte", 10, 15, "word", 3),
        ]
    );
}

#[test]
fn stop_filter_variants() {
    let std = |filter: Value| chain(json!("standard"), &[json!("lowercase"), filter]);
    let default = std(json!("stop"));
    assert_eq!(
        full(default.analyze("The quick and the dead")),
        vec![
            tok("quick", 4, 9, "<ALPHANUM>", 1),
            tok("dead", 18, 22, "<ALPHANUM>", 4)
        ]
    );
    let custom = chain(
        json!("whitespace"),
        &[json!({"type": "stop", "stopwords": ["and", "is", "THE"], "ignore_case": true})],
    );
    assert_eq!(
        terms(&custom, "The cat and The Hat is here"),
        ["cat", "Hat", "here"]
    );
    let case_sensitive = chain(
        json!("whitespace"),
        &[json!({"type": "stop", "stopwords": ["the"]})],
    );
    assert_eq!(
        terms(&case_sensitive, "The cat the hat"),
        ["The", "cat", "hat"]
    );
    let none = std(json!({"type": "stop", "stopwords": "_none_"}));
    assert_eq!(terms(&none, "the a an"), ["the", "a", "an"]);
    let mixed = std(json!({"type": "stop", "stopwords": ["_english_", "quick"]}));
    assert_eq!(terms(&mixed, "the quick brown fox"), ["brown", "fox"]);
    let trailing = std(json!({"type": "stop", "remove_trailing": false}));
    assert_eq!(terms(&trailing, "find the"), ["find", "the"]);
    assert_eq!(terms(&trailing, "find the "), ["find"]);
    assert!(err(registry().build_custom(
        &json!("standard"),
        &[json!({"type": "stop", "stopwords": "_french_"})],
        &[]
    ))
    .contains("_french_"));
}

#[test]
fn length_trim_truncate_unique_reverse_filters() {
    let length = chain(
        json!("whitespace"),
        &[json!({"type": "length", "min": 0, "max": 4})],
    );
    let tokens = length.analyze("the quick brown fox jumps over the lazy dog");
    assert_eq!(
        tokens
            .iter()
            .map(|t| (t.token.as_str(), t.position))
            .collect::<Vec<_>>(),
        [
            ("the", 0),
            ("fox", 3),
            ("over", 5),
            ("the", 6),
            ("lazy", 7),
            ("dog", 8)
        ]
    );
    let trim = chain(json!("keyword"), &[json!("trim")]);
    assert_eq!(
        full(trim.analyze("  fox \t")),
        vec![tok("fox", 0, 7, "word", 0)]
    );
    let truncate = chain(
        json!("whitespace"),
        &[json!({"type": "truncate", "length": 3})],
    );
    assert_eq!(terms(&truncate, "quick brown ox"), ["qui", "bro", "ox"]);
    assert_eq!(
        terms(
            &chain(json!("whitespace"), &[json!("truncate")]),
            "antidisestablishmentarianism"
        ),
        ["antidisest"]
    );
    // ES's UniqueTokenFilter drops duplicates without leaving a position gap.
    let unique = chain(json!("whitespace"), &[json!("unique")]);
    let tokens = unique.analyze("the quick fox jumps the lazy fox");
    assert_eq!(
        tokens
            .iter()
            .map(|t| (t.token.as_str(), t.position))
            .collect::<Vec<_>>(),
        [
            ("the", 0),
            ("quick", 1),
            ("fox", 2),
            ("jumps", 3),
            ("lazy", 4)
        ]
    );
    assert_eq!(
        terms(
            &chain(json!("whitespace"), &[json!("reverse")]),
            "quick fox"
        ),
        ["kciuq", "xof"]
    );
}

#[test]
fn ngram_filters_docs_examples() {
    let edge = chain(
        json!("whitespace"),
        &[json!({"type": "edge_ngram", "min_gram": 1, "max_gram": 3})],
    );
    assert_eq!(
        terms(&edge, "the quick brown fox jumps"),
        [
            "t", "th", "the", "q", "qu", "qui", "b", "br", "bro", "f", "fo", "fox", "j", "ju",
            "jum"
        ]
    );
    let positions: Vec<usize> = edge
        .analyze("the quick")
        .iter()
        .map(|t| t.position)
        .collect();
    assert_eq!(positions, [0, 0, 0, 1, 1, 1]);
    let ngram = chain(json!("whitespace"), &[json!("ngram")]);
    assert_eq!(
        terms(&ngram, "Quick fox"),
        ["Q", "Qu", "u", "ui", "i", "ic", "c", "ck", "k", "f", "fo", "o", "ox", "x"]
    );
    let keep = chain(
        json!("whitespace"),
        &[json!({"type": "edge_ngram", "min_gram": 2, "max_gram": 3, "preserve_original": true})],
    );
    assert_eq!(terms(&keep, "a quick"), ["a", "qu", "qui", "quick"]);
}

// ---------------------------------------------------------------- char filters

#[test]
fn html_strip_maps_offsets_back() {
    let a = registry()
        .build_custom(
            &json!("standard"),
            &[json!("lowercase")],
            &[json!("html_strip")],
        )
        .unwrap();
    assert_eq!(
        full(a.analyze("<p>I&apos;m so <b>happy</b>!</p>")),
        vec![
            tok("i'm", 3, 11, "<ALPHANUM>", 0),
            tok("so", 12, 14, "<ALPHANUM>", 1),
            tok("happy", 18, 27, "<ALPHANUM>", 2),
        ]
    );
    let escaped = registry()
        .build_custom(
            &json!("keyword"),
            &[],
            &[json!({"type": "html_strip", "escaped_tags": ["b"]})],
        )
        .unwrap();
    assert_eq!(
        terms(&escaped, "<p>I'm so <b>happy</b>!</p>"),
        ["\nI'm so <b>happy</b>!\n"]
    );
}

#[test]
fn mapping_char_filter() {
    let a = registry()
        .build_custom(
            &json!("standard"),
            &[],
            &[json!({"type": "mapping", "mappings": ["٠ => 0", "١ => 1", "٢ => 2", ":) => _happy_"]})],
        )
        .unwrap();
    assert_eq!(
        full(a.analyze("My license plate is ٢٥٠١٥ :)")),
        vec![
            tok("My", 0, 2, "<ALPHANUM>", 0),
            tok("license", 3, 10, "<ALPHANUM>", 1),
            tok("plate", 11, 16, "<ALPHANUM>", 2),
            tok("is", 17, 19, "<ALPHANUM>", 3),
            tok("2٥01٥", 20, 25, "<NUM>", 4),
            tok("_happy_", 26, 28, "<ALPHANUM>", 5),
        ]
    );
}

// ---------------------------------------------------------------- offsets and tantivy

#[test]
fn analyze_reports_utf16_offsets() {
    let a = registry().analyzer("standard").unwrap();
    // 😀 is 4 bytes but 2 UTF-16 units; é is 2 bytes but 1 unit.
    assert_eq!(
        full(a.analyze("😀 café 中")),
        vec![
            tok("😀", 0, 2, "<EMOJI>", 0),
            tok("café", 3, 7, "<ALPHANUM>", 1),
            tok("中", 8, 9, "<IDEOGRAPHIC>", 2),
        ]
    );
}

#[test]
fn tantivy_stream_uses_byte_offsets_and_es_positions() {
    let mut a = registry().analyzer("stop").unwrap();
    let text = "😀 The café is open";
    for _ in 0..2 {
        // Twice, to exercise buffer reuse.
        let mut stream = a.token_stream(text);
        let mut seen = Vec::new();
        while stream.advance() {
            let t = stream.token();
            assert_eq!(&text[t.offset_from..t.offset_to].to_lowercase(), &t.text);
            seen.push((t.text.clone(), t.offset_from, t.offset_to, t.position));
        }
        assert_eq!(
            seen,
            [
                ("café".to_string(), 9, 14, 1),
                ("open".to_string(), 18, 22, 3)
            ]
        );
    }
    let mut html = registry()
        .build_custom(&json!("standard"), &[], &[json!("html_strip")])
        .unwrap();
    let text = "<b>héllo</b> wörld";
    let mut stream = html.token_stream(text);
    let mut seen = Vec::new();
    stream.process(&mut |t| seen.push(text[t.offset_from..t.offset_to].to_string()));
    assert_eq!(seen, ["héllo</b>", "wörld"]);
}

#[test]
fn analyzer_is_clone_send_sync_static() {
    fn assert_traits<T: Clone + Send + Sync + 'static>() {}
    assert_traits::<Analyzer>();
    assert_traits::<AnalysisRegistry>();
}

// ---------------------------------------------------------------- registry

fn index_settings() -> Value {
    json!({
        "analyzer": {
            "my_analyzer": {
                "type": "custom",
                "tokenizer": "my_tokenizer",
                "char_filter": ["html_strip"],
                "filter": ["lowercase", "my_stop", "asciifolding"]
            },
            "no_type": {"tokenizer": "whitespace", "filter": "uppercase"},
            "std_stop": {"type": "standard", "stopwords": "_english_", "max_token_length": 4},
            "default": {"type": "simple"},
            "gap": {"tokenizer": "standard", "position_increment_gap": 10}
        },
        "tokenizer": {"my_tokenizer": {"type": "standard", "max_token_length": 10}},
        "filter": {"my_stop": {"type": "stop", "stopwords": ["foo", "bar"]}},
        "normalizer": {
            "my_normalizer": {"type": "custom", "filter": ["lowercase", "asciifolding"]},
            "folding": {"filter": [{"no": "inline"}]}
        }
    })
}

#[test]
fn custom_analyzers_from_index_settings() {
    let mut settings = index_settings();
    settings["normalizer"]
        .as_object_mut()
        .unwrap()
        .remove("folding");
    let r = AnalysisRegistry::new(Some(&settings)).unwrap();
    let a = r.analyzer("my_analyzer").unwrap();
    assert_eq!(a.name(), "my_analyzer");
    assert_eq!(
        full(a.analyze("<b>Foo</b> Café Bar Déjà")),
        vec![
            tok("cafe", 11, 15, "<ALPHANUM>", 1),
            tok("deja", 20, 24, "<ALPHANUM>", 3)
        ]
    );
    assert_eq!(
        terms(&r.analyzer("no_type").unwrap(), "a b-c"),
        ["A", "B-C"]
    );
    assert_eq!(
        terms(&r.analyzer("std_stop").unwrap(), "The jumped fox"),
        ["jump", "ed", "fox"]
    );
    assert_eq!(
        terms(&r.analyzer("default").unwrap(), "Dog's"),
        ["dog", "s"]
    );
    assert_eq!(
        terms(&r.analyzer("default_search").unwrap(), "Dog's"),
        ["dog", "s"]
    );
    assert_eq!(r.analyzer("gap").unwrap().position_increment_gap(), 10);
    assert_eq!(
        r.analyzer("standard").unwrap().position_increment_gap(),
        100
    );
    assert_eq!(
        r.analyzer_names(),
        [
            "default",
            "gap",
            "ik_max_word",
            "ik_smart",
            "keyword",
            "my_analyzer",
            "no_type",
            "simple",
            "smartcn",
            "standard",
            "std_stop",
            "stop",
            "whitespace"
        ]
    );
    let n = r.normalizer("my_normalizer").unwrap();
    assert_eq!(n.normalize("Déjà Vu"), "deja vu");
    assert_eq!(full(n.analyze("ÀB")), vec![tok("ab", 0, 2, "word", 0)]);
    assert_eq!(
        r.normalizer("lowercase").unwrap().normalize("MiXeD Case"),
        "mixed case"
    );
}

#[test]
fn default_analyzer_without_settings_is_standard() {
    let r = registry();
    assert_eq!(terms(&r.analyzer("default").unwrap(), "Dog's"), ["dog's"]);
    assert_eq!(
        r.analyzer_names(),
        [
            "ik_max_word",
            "ik_smart",
            "keyword",
            "simple",
            "smartcn",
            "standard",
            "stop",
            "whitespace"
        ]
    );
}

#[test]
fn flat_dotted_settings_are_accepted() {
    let settings = json!({
        "analyzer.folded.tokenizer": "standard",
        "analyzer.folded.filter": ["lowercase", "asciifolding"]
    });
    let r = AnalysisRegistry::new(Some(&settings)).unwrap();
    assert_eq!(
        terms(&r.analyzer("folded").unwrap(), "Crème Brûlée"),
        ["creme", "brulee"]
    );
}

#[test]
fn normalizer_preserve_original_is_ignored() {
    let settings = json!({
        "filter": {"keep": {"type": "asciifolding", "preserve_original": true}},
        "normalizer": {"n": {"filter": ["keep"]}}
    });
    let r = AnalysisRegistry::new(Some(&settings)).unwrap();
    assert_eq!(terms(&r.normalizer("n").unwrap(), "Ärger"), ["Arger"]);
}

#[test]
fn es_error_messages() {
    let r = registry();
    assert_eq!(err(r.analyzer("nope")), "failed to find analyzer [nope]");
    assert_eq!(
        err(r.normalizer("nope")),
        "failed to find normalizer under [nope]"
    );
    let new = |v: Value| AnalysisRegistry::new(Some(&v));
    assert_eq!(
        err(new(json!({"analyzer": {"a": {"tokenizer": "t"}}}))),
        "Custom Analyzer [a] failed to find tokenizer under name [t]"
    );
    assert_eq!(
        err(new(
            json!({"analyzer": {"a": {"type": "custom", "tokenizer": "standard", "filter": ["lowercase", "f"]}}})
        )),
        "Custom Analyzer [a] failed to find filter under name [f]"
    );
    assert_eq!(
        err(new(
            json!({"analyzer": {"a": {"tokenizer": "standard", "char_filter": ["c"]}}})
        )),
        "Custom Analyzer [a] failed to find char_filter under name [c]"
    );
    assert_eq!(
        err(new(json!({"analyzer": {"a": {"type": "custom"}}}))),
        "Custom Analyzer [a] must be configured with a tokenizer"
    );
    assert_eq!(
        err(new(json!({"analyzer": {"a": {"filter": ["lowercase"]}}}))),
        "analyzer [a] must specify either an analyzer type, or a tokenizer"
    );
    assert_eq!(
        err(new(json!({"analyzer": {"a": {"type": "fancy"}}}))),
        "Unknown analyzer type [fancy] for [a]"
    );
    assert_eq!(
        err(new(json!({"tokenizer": {"t": {"type": "nope"}}}))),
        "Unknown tokenizer type [nope] for [t]"
    );
    assert_eq!(
        err(new(json!({"filter": {"f": {"type": "nope"}}}))),
        "Unknown filter type [nope] for [f]"
    );
    assert_eq!(
        err(new(json!({"char_filter": {"c": {"type": "nope"}}}))),
        "Unknown char_filter type [nope] for [c]"
    );
    assert_eq!(
        err(new(json!({"filter": {"f": {"stopwords": ["a"]}}}))),
        "filter [f] must specify either an analyzer type, or a tokenizer"
    );
    assert_eq!(
        err(new(json!({"normalizer": {"n": {"filter": ["stop"]}}}))),
        "Custom normalizer [n] may not use filter [stop]"
    );
    assert_eq!(
        err(new(json!({"normalizer": {"n": {"filter": ["zzz"]}}}))),
        "Custom normalizer [n] failed to find filter under name [zzz]"
    );
    assert_eq!(
        err(new(json!({"normalizer": {"n": {"type": "other"}}}))),
        "Unknown normalizer type [other] for [n]"
    );
    assert_eq!(
        err(new(
            json!({"tokenizer": {"t": {"type": "standard", "max_token_length": "x"}}})
        )),
        "Failed to parse int setting [max_token_length] with value [x]"
    );
    assert_eq!(
        err(new(json!({"analyzer": {"_a": {"tokenizer": "standard"}}}))),
        "analyzer name must not start with '_'. got \"_a\""
    );
    assert_eq!(
        err(new(index_settings())),
        "setting [filter] must be a list of strings"
    );
}

#[test]
fn build_custom_errors_and_inline_definitions() {
    let r = registry();
    assert_eq!(
        err(r.build_custom(&json!("nope"), &[], &[])),
        "failed to find tokenizer under [nope]"
    );
    assert_eq!(
        err(r.build_custom(&json!("standard"), &[json!("nope")], &[])),
        "failed to find filter under [nope]"
    );
    assert_eq!(
        err(r.build_custom(&json!("standard"), &[], &[json!("nope")])),
        "failed to find char_filter under [nope]"
    );
    assert_eq!(
        err(r.build_custom(&json!({"type": "zzz"}), &[], &[])),
        "failed to find global tokenizer under [zzz]"
    );
    assert!(
        err(r.build_custom(&json!({"max_token_length": 3}), &[], &[]))
            .starts_with("Missing [type] setting for anonymous tokenizer")
    );
    // A filter-only request runs on the keyword tokenizer, like ES.
    let a = r
        .build_custom(&Value::Null, &[json!("uppercase")], &[])
        .unwrap();
    assert_eq!(terms(&a, "a b"), ["A B"]);
    assert_eq!(a.name(), "_anonymous_");
}

// ---------------------------------------------------------------- robustness

#[test]
fn random_input_never_panics_and_offsets_stay_valid() {
    const ALPHABET: &[&str] = &[
        "a", "Z", "0", "9", "_", ":", ".", "'", ",", ";", "-", "/", " ", "\t", "\n", "\"", "<",
        ">", "&", "&amp;", "<p>", "</b>", "<!--", "é", "\u{301}", "\u{200D}", "中", "か", "カ",
        "한", "ไ", "ြ", "😀", "🏽", "🇺", "١", "Я", "ß", "İ", "\u{3000}", "\u{a0}",
    ];
    let r = registry();
    let chains = [
        r.analyzer("standard").unwrap(),
        r.analyzer("simple").unwrap(),
        r.analyzer("whitespace").unwrap(),
        chain(
            json!({"type": "standard", "max_token_length": 3}),
            &[json!("asciifolding")],
        ),
        chain(
            json!({"type": "whitespace", "max_token_length": 2}),
            &[json!("unique")],
        ),
        chain(json!({"type": "ngram", "min_gram": 1, "max_gram": 3}), &[]),
        chain(
            json!("keyword"),
            &[json!("trim"), json!({"type": "truncate", "length": 2})],
        ),
        chain(
            json!("standard"),
            &[
                json!({"type": "asciifolding", "preserve_original": true}),
                json!("stop"),
                json!("edge_ngram"),
            ],
        ),
        r.build_custom(
            &json!("standard"),
            &[json!("lowercase")],
            &[
                json!("html_strip"),
                json!({"type": "mapping", "mappings": ["& => and or", "ü => ue", "a => "]}),
            ],
        )
        .unwrap(),
    ];
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..3000 {
        let len = (next() % 24) as usize;
        let text: String = (0..len)
            .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
            .collect();
        let units = text.encode_utf16().count();
        for analyzer in &chains {
            for t in analyzer.analyze(&text) {
                assert!(
                    t.start_offset <= t.end_offset && t.end_offset <= units,
                    "{text:?} {t:?}"
                );
            }
            let mut a = analyzer.clone();
            let mut stream = a.token_stream(&text);
            let mut last_position = 0;
            while stream.advance() {
                let t = stream.token();
                assert!(
                    text.get(t.offset_from..t.offset_to).is_some(),
                    "{text:?} {t:?}"
                );
                assert!(t.position + 1 >= last_position, "{text:?} {t:?}");
                last_position = t.position;
            }
        }
    }
}

#[test]
fn ik_tokenizer_settings() {
    let settings = json!({
        "tokenizer": {"smart_max": {"type": "ik_max_word", "use_smart": true}},
        "analyzer": {
            "a": {"tokenizer": "smart_max"},
            "max": {"tokenizer": "ik_max_word"},
            "smart": {"tokenizer": "ik_smart"}
        }
    });
    let r = AnalysisRegistry::new(Some(&settings)).unwrap();
    let text = "中华人民共和国国歌";
    // `use_smart` wins over the type: the coarse segmentation, not the overlapping one.
    assert_eq!(
        terms(&r.analyzer("a").unwrap(), text),
        terms(&r.analyzer("smart").unwrap(), text)
    );
    assert_ne!(
        terms(&r.analyzer("a").unwrap(), text),
        terms(&r.analyzer("max").unwrap(), text)
    );
    for bad in [
        json!({"type": "ik_smart", "enable_lowercase": false}),
        json!({"type": "ik_smart", "keep_punctuation": true}),
        json!({"type": "ik_max_word", "ext_dict": "x.dic"}),
    ] {
        let settings = json!({"tokenizer": {"t": bad}, "analyzer": {"a": {"tokenizer": "t"}}});
        let e = err(AnalysisRegistry::new(Some(&settings)));
        assert!(e.contains("not supported by Lode"), "{e}");
    }
}

// ---------------------------------------------------------------- shingle

/// `(token, start, end, type, position, positionLength)`.
fn shingled(filters: &[Value], text: &str) -> Vec<(String, usize, usize, String, usize, usize)> {
    chain(json!("whitespace"), filters)
        .analyze(text)
        .into_iter()
        .map(|t| {
            (
                t.token,
                t.start_offset,
                t.end_offset,
                t.token_type,
                t.position,
                t.position_length,
            )
        })
        .collect()
}

fn sh(
    t: &str,
    s: usize,
    e: usize,
    ty: &str,
    p: usize,
    len: usize,
) -> (String, usize, usize, String, usize, usize) {
    (t.to_string(), s, e, ty.to_string(), p, len)
}

#[test]
fn shingle_defaults_bigrams_with_unigrams() {
    // Lucene ShingleFilter(2, 2) with unigrams: each unigram, then the bigram starting at it.
    assert_eq!(
        shingled(&[json!("shingle")], "please divide this sentence"),
        vec![
            sh("please", 0, 6, "word", 0, 1),
            sh("please divide", 0, 13, "shingle", 0, 2),
            sh("divide", 7, 13, "word", 1, 1),
            sh("divide this", 7, 18, "shingle", 1, 2),
            sh("this", 14, 18, "word", 2, 1),
            sh("this sentence", 14, 27, "shingle", 2, 2),
            sh("sentence", 19, 27, "word", 3, 1),
        ]
    );
}

#[test]
fn shingle_two_to_three_without_unigrams() {
    // The ES reference example: min 2, max 3, output_unigrams false.
    let f = json!({"type": "shingle", "min_shingle_size": 2, "max_shingle_size": 3, "output_unigrams": false});
    assert_eq!(
        shingled(&[f], "quick brown fox jumps"),
        vec![
            sh("quick brown", 0, 11, "shingle", 0, 1),
            sh("quick brown fox", 0, 15, "shingle", 0, 2),
            sh("brown fox", 6, 15, "shingle", 1, 1),
            sh("brown fox jumps", 6, 21, "shingle", 1, 2),
            sh("fox jumps", 12, 21, "shingle", 2, 1),
        ]
    );
    // Exactly one size: what search_as_you_type's n-gram subfields index.
    let f = json!({"type": "shingle", "min_shingle_size": 3, "max_shingle_size": 3, "output_unigrams": false});
    let t: Vec<String> = shingled(&[f], "a b c d").into_iter().map(|t| t.0).collect();
    assert_eq!(t, vec!["a b c", "b c d"]);
}

#[test]
fn shingle_fillers_for_position_gaps() {
    // The ES reference `filler_token` example.
    let filters = [
        json!({"type": "stop", "stopwords": ["a"]}),
        json!({"type": "shingle", "filler_token": "+"}),
    ];
    assert_eq!(
        shingled(&filters, "fox jumps a lazy dog"),
        vec![
            sh("fox", 0, 3, "word", 0, 1),
            sh("fox jumps", 0, 9, "shingle", 0, 2),
            sh("jumps", 4, 9, "word", 1, 1),
            sh("jumps +", 4, 12, "shingle", 1, 2),
            sh("+ lazy", 12, 16, "shingle", 2, 2),
            sh("lazy", 12, 16, "word", 3, 1),
            sh("lazy dog", 12, 20, "shingle", 3, 2),
            sh("dog", 17, 20, "word", 4, 1),
        ]
    );
}

#[test]
fn shingle_separator_and_unigrams_if_no_shingles() {
    let f = json!({"type": "shingle", "token_separator": "", "output_unigrams": false});
    let t: Vec<String> = shingled(&[f], "a b c").into_iter().map(|t| t.0).collect();
    assert_eq!(t, vec!["ab", "bc"]);
    let f = json!({"type": "shingle", "output_unigrams": false, "output_unigrams_if_no_shingles": true});
    assert_eq!(
        shingled(std::slice::from_ref(&f), "fox"),
        vec![sh("fox", 0, 3, "word", 0, 1)]
    );
    let t: Vec<String> = shingled(&[f], "fox dog").into_iter().map(|t| t.0).collect();
    assert_eq!(t, vec!["fox dog"]);
}

#[test]
fn shingle_validation_matches_elasticsearch() {
    let build = |f: Value| registry().build_custom(&json!("whitespace"), &[f], &[]);
    assert_eq!(
        err(build(json!({"type": "shingle", "max_shingle_size": 5}))),
        "In Shingle TokenFilter the difference between max_shingle_size and min_shingle_size (and +1 if outputting unigrams) must be less than or equal to: [3] but was [4]. This limit can be set by changing the [index.max_shingle_diff] index level setting."
    );
    assert_eq!(
        err(build(json!({"type": "shingle", "min_shingle_size": 1}))),
        "Min shingle size must be >= 2"
    );
    assert_eq!(
        err(build(
            json!({"type": "shingle", "min_shingle_size": 3, "max_shingle_size": 2})
        )),
        "Min shingle size must be <= max shingle size"
    );
    let roomy = AnalysisRegistry::with_limits(None, 10).unwrap();
    assert!(roomy
        .build_custom(
            &json!("whitespace"),
            &[json!({"type": "shingle", "max_shingle_size": 5})],
            &[]
        )
        .is_ok());
}

#[test]
fn search_as_you_type_subfield_analyzers() {
    let reg = registry();
    let two = reg
        .analyzer(&crate::sayt_shingle_analyzer("standard", 2))
        .unwrap();
    assert_eq!(
        terms(&two, "Quick Brown fox"),
        vec!["quick brown", "brown fox"]
    );
    assert!(terms(&two, "quick").is_empty());
    let prefix = reg
        .analyzer(&crate::sayt_prefix_analyzer("standard", 3))
        .unwrap();
    let toks = prefix.analyze("Quick Fox");
    let grams: Vec<(&str, usize)> = toks
        .iter()
        .map(|t| (t.token.as_str(), t.position))
        .collect();
    // "quick fox " (padded to three tokens), then "fox  ", each cut into edge n-grams.
    assert_eq!(
        grams,
        vec![
            ("q", 0),
            ("qu", 0),
            ("qui", 0),
            ("quic", 0),
            ("quick", 0),
            ("quick ", 0),
            ("quick f", 0),
            ("quick fo", 0),
            ("quick fox", 0),
            ("quick fox ", 0),
            ("f", 1),
            ("fo", 1),
            ("fox", 1),
            ("fox ", 1),
            ("fox  ", 1),
        ]
    );
    let long = terms(&prefix, "abcdefghijklmnopqrstuvwxyz");
    assert_eq!(long.len(), 21);
    assert_eq!(long[19], "abcdefghijklmnopqrst");
    assert_eq!(long[20], "abcdefghijklmnopqrstuvwxyz  ");
    assert!(reg.analyzer("standard#sayt_shingle_9").is_err());
}

#[test]
fn search_as_you_type_prefix_matches_elasticsearch_analyzer_tests() {
    // ES's `SearchAsYouTypeAnalyzerTests#testMultiTermPrefix`, shingle size 3, `simple`.
    let prefix = registry()
        .analyzer(&crate::sayt_prefix_analyzer("simple", 3))
        .unwrap();
    let grams = |s: &str| -> Vec<String> {
        s.char_indices()
            .map(|(i, c)| s[..i + c.len_utf8()].to_string())
            .collect()
    };
    let mut want = Vec::new();
    for shingle in [
        "quick red fox",
        "red fox lazy",
        "fox lazy brown",
        "lazy brown ",
        "brown  ",
    ] {
        want.extend(grams(shingle));
    }
    assert_eq!(terms(&prefix, "quick red fox lazy brown"), want);
}

#[test]
fn analyzers_that_keep_every_word() {
    let reg = AnalysisRegistry::new(Some(&json!({
        "filter": {"min3": {"type": "length", "min": 3}},
        "analyzer": {
            "plain": {"type": "custom", "tokenizer": "standard", "filter": ["lowercase", "asciifolding"]},
            "stripped": {"type": "custom", "tokenizer": "standard", "char_filter": ["html_strip"]},
            "short": {"type": "custom", "tokenizer": "standard", "filter": ["min3"]},
            "stopped": {"type": "standard", "stopwords": "_english_"}
        }
    })))
    .unwrap();
    let yes = |name: &str| reg.analyzer(name).unwrap().keeps_every_word();
    assert!(yes("standard") && yes("default") && yes("whitespace") && yes("plain"));
    // A char filter can remove the letters, a filter can drop the token, a letter
    // tokenizer skips digits, a keyword tokenizer keeps "" as a token of length 0.
    for name in ["stripped", "short", "stopped", "stop", "simple", "keyword"] {
        assert!(!yes(name), "{name}");
    }
    // Each claimed analyzer does yield a token for a value with one ASCII letter or digit.
    for name in ["standard", "whitespace", "plain"] {
        for text in ["a", "-7-", "!x!", " Z "] {
            assert!(
                !reg.analyzer(name).unwrap().analyze(text).is_empty(),
                "{name} {text}"
            );
        }
    }
}
