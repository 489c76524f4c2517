//! Elasticsearch's completion suggester (`CompletionSuggester` on Lucene's `NRTSuggester`).
//!
//! A `completion` field indexes each input of a document as one term (see
//! `lode_engine::mapping::CompletionOptions`): the analyzed key, a NUL, the weight, then the
//! input. A prefix is answered per segment by the range of the term dictionary that starts
//! with the analyzed prefix; `fuzzy` scans the range sharing the exact `prefix_length` and
//! keeps the keys of which a prefix is within the edit distance (Lucene's
//! `FuzzyCompletionQuery`: optimal-string-alignment distance with `transpositions`, in
//! bytes unless `unicode_aware`); `regex` keeps the keys of which a prefix matches. Each
//! shard keeps, per live document, its best matching input (highest score, then text), as
//! `TopDocumentsCollector`; options sort by score (the weight, times the fuzzy boost) then
//! text, then shard and document, and are trimmed to `size` after `skip_duplicates`.

use std::sync::Arc;

use lode_engine::index::IndexService;
use lode_engine::mapping::{CompletionOptions, FieldType};
use lode_engine::object_parser::{Field, ObjectParser, Style};
use lode_engine::shard::ShardSearcher;
use lode_engine::{EsError, EsResult};
use lode_hits::source::SourceFilter;
use serde_json::{json, Map, Value};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocSet, TERMINATED};

use super::body;

#[derive(Clone, Debug, PartialEq)]
pub struct Fuzzy {
    pub fuzziness: u8,
    pub transpositions: bool,
    pub min_length: usize,
    pub prefix_length: usize,
    pub unicode_aware: bool,
}

impl Default for Fuzzy {
    /// `FuzzyCompletionQuery`'s defaults.
    fn default() -> Self {
        Fuzzy {
            fuzziness: 1,
            transpositions: true,
            min_length: 3,
            prefix_length: 1,
            unicode_aware: false,
        }
    }
}

#[derive(Clone, Debug)]
pub struct CompletionSuggestion {
    pub field: String,
    pub size: usize,
    pub shard_size: Option<usize>,
    pub skip_duplicates: bool,
    pub fuzzy: Option<Fuzzy>,
    /// Set when the suggestion names a `regex` (flags and state limit checked).
    pub regex_options: bool,
}

fn int_of(v: &Value) -> EsResult<i64> {
    body::read_int(v)
}

/// A non-negative integer, else "`name` must not be negative".
fn not_negative(v: &Value, name: &str) -> EsResult<usize> {
    let n = int_of(v)?;
    if n < 0 {
        return Err(EsError::illegal_argument(format!(
            "{name} must not be negative"
        )));
    }
    Ok(n as usize)
}

/// A strictly positive integer, else "`name` must be positive".
fn positive(v: &Value, name: &str) -> EsResult<usize> {
    let n = int_of(v)?;
    if n <= 0 {
        return Err(EsError::illegal_argument(format!(
            "{name} must be positive"
        )));
    }
    Ok(n as usize)
}

/// ES's `FuzzyOptions` parser; an unknown key fails the completion parser's `fuzzy` field.
static FUZZY: ObjectParser<Fuzzy> = ObjectParser {
    name: "fuzzy",
    style: Style::Custom {
        unknown: |at, _, names| {
            EsError::x_content_parse("[completion] failed to parse field [fuzzy]")
                .caused_by(EsError::unknown_field(at.parser, at.key, names))
        },
        wrong_token: |_, _| EsError::parsing("[completion] failed to parse field [fuzzy]"),
    },
    fields: &[&[
        Field::<Fuzzy>::new("fuzziness", "*", |f, _, v| {
            f.fuzziness = match v {
                Value::String(s) if s.eq_ignore_ascii_case("auto") => 1,
                other => {
                    let n = match other {
                        Value::String(s) => s.trim().parse::<f64>().map_err(|_| {
                            EsError::illegal_argument(format!("Invalid fuzziness value: {s}"))
                        })?,
                        Value::Number(n) => n.as_f64().unwrap_or(-1.0),
                        _ => -1.0,
                    };
                    if !(0.0..=2.0).contains(&n) {
                        return Err(EsError::illegal_argument(
                            "fuzziness must be between 0 and 2",
                        ));
                    }
                    n as u8
                }
            };
            Ok(())
        })
        .aliases(&["edit_distance"]),
        Field::new("transpositions", "*", |f, at, v| {
            f.transpositions = body::read_bool(v, at.key)?;
            Ok(())
        }),
        Field::new("min_length", "*", |f, _, v| {
            f.min_length = not_negative(v, "fuzzyMinLength")?;
            Ok(())
        }),
        Field::new("prefix_length", "*", |f, _, v| {
            f.prefix_length = not_negative(v, "fuzzyPrefixLength")?;
            Ok(())
        }),
        Field::new("unicode_aware", "*", |f, at, v| {
            f.unicode_aware = body::read_bool(v, at.key)?;
            Ok(())
        }),
        Field::new("max_determinized_states", "*", |_, _, v| {
            not_negative(v, "maxDeterminizedStates").map(drop)
        }),
    ]],
};

fn parse_fuzzy(v: &Value) -> EsResult<Option<Fuzzy>> {
    match v {
        Value::Bool(true) => Ok(Some(Fuzzy::default())),
        Value::Bool(false) => Ok(None),
        Value::Object(o) => FUZZY.parse(o).map(Some),
        _ => Err(EsError::parsing(
            "[completion] failed to parse field [fuzzy]",
        )),
    }
}

/// ES's `RegexOptions` parser; an unknown key fails the completion parser's `regex` field.
static REGEX: ObjectParser<()> = ObjectParser {
    name: "regex",
    style: Style::Custom {
        unknown: |at, _, names| {
            EsError::x_content_parse("[completion] failed to parse field [regex]")
                .caused_by(EsError::unknown_field(at.parser, at.key, names))
        },
        wrong_token: |_, _| EsError::parsing("[completion] failed to parse field [regex]"),
    },
    fields: &[&[
        Field::new("flags", "*", |_, _, v| {
            let flags = v.as_str().unwrap_or_default().to_ascii_uppercase();
            if !flags.split('|').all(|f| f.trim() == "ALL" || f.is_empty()) {
                return Err(body::not_supported(&format!("regex flags [{flags}]")));
            }
            Ok(())
        }),
        Field::new("max_determinized_states", "*", |_, _, v| {
            not_negative(v, "maxDeterminizedStates").map(drop)
        }),
    ]],
};

/// `CompletionSuggestionBuilder`'s parser; `contexts` and `analyzer` are refused.
static COMPLETION: ObjectParser<(CompletionSuggestion, Option<String>)> = ObjectParser {
    name: "completion",
    style: Style::Object,
    fields: &[&[
        Field::new("field", "*", |(_, field), _, v| {
            *field = Some(v.as_str().map(str::to_string).unwrap_or(v.to_string()));
            Ok(())
        }),
        Field::new("analyzer", "*", |_, _, _| {
            Err(body::not_supported("completion.analyzer"))
        }),
        Field::new("size", "*", |(c, _), _, v| {
            c.size = positive(v, "size")?;
            Ok(())
        }),
        Field::new("shard_size", "*", |(c, _), _, v| {
            c.shard_size = Some(positive(v, "shardSize")?);
            Ok(())
        }),
        Field::new("skip_duplicates", "*", |(c, _), at, v| {
            c.skip_duplicates = body::read_bool(v, at.key)?;
            Ok(())
        }),
        Field::new("fuzzy", "*", |(c, _), _, v| {
            c.fuzzy = parse_fuzzy(v)?;
            Ok(())
        }),
        Field::new("regex", "*", |(c, _), _, v| {
            let Value::Object(r) = v else {
                return Err(EsError::parsing(
                    "[completion] failed to parse field [regex]",
                ));
            };
            REGEX.parse_into(&mut (), r)?;
            c.regex_options = true;
            Ok(())
        }),
        Field::new("contexts", "*", |_, _, _| {
            Err(body::not_supported("completion.contexts"))
        }),
    ]],
};

/// Parses the `completion` object as `CompletionSuggestionBuilder#fromXContent`.
pub fn parse(o: &Map<String, Value>) -> EsResult<CompletionSuggestion> {
    let mut c = (
        CompletionSuggestion {
            field: String::new(),
            size: 5,
            shard_size: None,
            skip_duplicates: false,
            fuzzy: None,
            regex_options: false,
        },
        None,
    );
    COMPLETION.parse_into(&mut c, o)?;
    let (mut c, field) = c;
    let Some(field) = field else {
        return Err(EsError::bad_request(
            "parse_exception",
            "the required field option [field] is missing",
        ));
    };
    c.field = field;
    Ok(c)
}

/// What the suggestion looks for.
#[derive(Clone, Debug)]
pub enum Lookup {
    Prefix(String),
    Regex(String),
}

/// One option found on a shard.
#[derive(Clone, Debug)]
struct Found {
    score: f32,
    text: String,
    target: usize,
    shard: usize,
    segment: u32,
    doc: u32,
}

/// How a key is matched, prepared once per index.
enum Matcher {
    Prefix(Vec<u8>),
    Fuzzy {
        query: Vec<u32>,
        exact: Vec<u8>,
        prefix_units: usize,
        max_edits: usize,
        transpositions: bool,
        unicode: bool,
    },
    Regex(regex::Regex),
}

fn units(bytes: &[u8], unicode: bool) -> Vec<u32> {
    if unicode {
        String::from_utf8_lossy(bytes)
            .chars()
            .map(|c| c as u32)
            .collect()
    } else {
        bytes.iter().map(|b| *b as u32).collect()
    }
}

impl Matcher {
    /// The bytes every matching key starts with (the range to scan).
    fn range_prefix(&self) -> &[u8] {
        match self {
            Matcher::Prefix(p) => p,
            Matcher::Fuzzy { exact, .. } => exact,
            Matcher::Regex(_) => &[],
        }
    }

    /// The boost of a matching key (0 when exact), or `None` when it does not match.
    fn matches(&self, key: &[u8]) -> Option<f32> {
        match self {
            Matcher::Prefix(p) => key.starts_with(p).then_some(0.0),
            Matcher::Fuzzy {
                query,
                prefix_units,
                max_edits,
                transpositions,
                unicode,
                ..
            } => {
                let k = units(key, *unicode);
                if k.len() < *prefix_units || k[..*prefix_units] != query[..*prefix_units] {
                    return None;
                }
                let longest = longest_accepted_prefix(
                    &query[*prefix_units..],
                    &k[*prefix_units..],
                    *max_edits,
                    *transpositions,
                )?;
                // `FuzzyCompletionWeight`'s boost: the longest run of leading units the
                // matched path shares with the query.
                let path = &k[..*prefix_units + longest];
                let common = path.iter().zip(query).take_while(|(a, b)| a == b).count();
                Some(common as f32)
            }
            Matcher::Regex(re) => {
                let s = std::str::from_utf8(key).ok()?;
                re.is_match(s).then_some(0.0)
            }
        }
    }
}

/// The length of the longest prefix of `key` within `max` edits of `query` (optimal string
/// alignment when `transpositions`), if any.
fn longest_accepted_prefix(
    query: &[u32],
    key: &[u32],
    max: usize,
    transpositions: bool,
) -> Option<usize> {
    let m = query.len();
    // d[i][j]: distance between query[..i] and key[..j]; filled column by column.
    let n = key.len();
    let mut d = vec![vec![0usize; n + 1]; m + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, v) in d[0].iter_mut().enumerate() {
        *v = j;
    }
    let mut best = (d[m][0] <= max).then_some(0);
    for j in 1..=n {
        for i in 1..=m {
            let cost = usize::from(query[i - 1] != key[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if transpositions
                && i > 1
                && j > 1
                && query[i - 1] == key[j - 2]
                && query[i - 2] == key[j - 1]
            {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
        if d[m][j] <= max {
            best = Some(j);
        }
        // Every later column is at least the column's minimum: stop once past reach.
        if (0..=m).all(|i| d[i][j] > max) {
            break;
        }
    }
    best
}

/// Translates a Lucene `RegExp` (the operators common to both syntaxes) into a Rust regex
/// anchored at the key's start; Lucene's own operators are refused.
fn lucene_regex(pattern: &str) -> EsResult<regex::Regex> {
    let mut out = String::from("(?s)^(?:");
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e) if e.is_ascii_alphanumeric() => {
                    if matches!(e, 'd' | 'D' | 's' | 'S' | 'w' | 'W') {
                        out.push('\\');
                        out.push(e);
                    } else {
                        out.push_str(&regex::escape(&e.to_string()));
                    }
                }
                Some(e) => out.push_str(&regex::escape(&e.to_string())),
                None => {
                    return Err(EsError::illegal_argument(format!(
                        "invalid regular expression [{pattern}]"
                    )))
                }
            },
            '@' | '&' | '~' | '<' | '>' | '#' => {
                return Err(body::not_supported(&format!("regex operator [{c}]")))
            }
            '"' => return Err(body::not_supported("regex operator [\"]")),
            '^' | '$' => out.push_str(&regex::escape(&c.to_string())),
            other => out.push(other),
        }
    }
    out.push(')');
    regex::Regex::new(&out)
        .map_err(|_| EsError::illegal_argument(format!("invalid regular expression [{pattern}]")))
}

fn completion_options(index: &IndexService, field: &str) -> EsResult<CompletionOptions> {
    let state = index.mapping_state();
    match state.mapping.field(field) {
        Some(def) if def.ty == FieldType::Completion => Ok(def
            .completion
            .clone()
            .ok_or_else(|| EsError::internal("completion options missing"))?),
        _ => Err(EsError::illegal_argument(format!(
            "Field [{field}] is not a completion suggest field"
        ))),
    }
}

fn matcher(
    opts: &CompletionOptions,
    c: &CompletionSuggestion,
    lookup: &Lookup,
) -> EsResult<Matcher> {
    Ok(match lookup {
        Lookup::Regex(r) => Matcher::Regex(lucene_regex(r)?),
        Lookup::Prefix(p) => {
            let key = opts.key(&opts.search_analyzer, p).into_bytes();
            match &c.fuzzy {
                None => Matcher::Prefix(key),
                Some(f) => {
                    let query = units(&key, f.unicode_aware);
                    // `FuzzyCompletionQuery#toLevenshteinAutomata`: short strings are exact.
                    let (prefix_units, max_edits) =
                        if query.len() <= f.prefix_length || query.len() < f.min_length {
                            (query.len(), 0)
                        } else {
                            (f.prefix_length, f.fuzziness as usize)
                        };
                    let exact = if f.unicode_aware {
                        query[..prefix_units]
                            .iter()
                            .filter_map(|u| char::from_u32(*u))
                            .collect::<String>()
                            .into_bytes()
                    } else {
                        key[..prefix_units].to_vec()
                    };
                    Matcher::Fuzzy {
                        query,
                        exact,
                        prefix_units,
                        max_edits,
                        transpositions: f.transpositions,
                        unicode: f.unicode_aware,
                    }
                }
            }
        }
    })
}

/// `CompletionScorer#score`: the weight times the boost (either alone when the other is 0).
fn score(weight: u32, boost: f32) -> f32 {
    let w = weight as f32;
    if boost == 0.0 {
        w
    } else if w == 0.0 {
        boost
    } else {
        w * boost
    }
}

fn by_rank(a: &Found, b: &Found) -> std::cmp::Ordering {
    b.score
        .total_cmp(&a.score)
        .then_with(|| a.text.encode_utf16().cmp(b.text.encode_utf16()))
        .then(a.target.cmp(&b.target))
        .then(a.shard.cmp(&b.shard))
        .then(a.segment.cmp(&b.segment))
        .then(a.doc.cmp(&b.doc))
}

/// One shard's best options: per live document its best input, ranked, deduplicated by
/// text when asked, trimmed to `limit`.
fn shard_options(
    shard: &ShardSearcher,
    target: usize,
    field_name: &str,
    m: &Matcher,
    skip_duplicates: bool,
    limit: usize,
) -> EsResult<Vec<Found>> {
    let Ok(field) = shard.schema.get_field(field_name) else {
        return Ok(Vec::new());
    };
    let internal = |e: std::io::Error| EsError::internal(e.to_string());
    let mut per_doc: std::collections::HashMap<(u32, u32), Found> = Default::default();
    for (seg_ord, seg) in shard.searcher.segment_readers().iter().enumerate() {
        let inv = seg
            .inverted_index(field)
            .map_err(|e| EsError::internal(e.to_string()))?;
        let start = m.range_prefix();
        let mut stream = inv
            .terms()
            .range()
            .ge(start)
            .into_stream()
            .map_err(internal)?;
        let alive = seg.alive_bitset();
        while stream.advance() {
            let term = stream.key();
            if !term.starts_with(start) {
                break;
            }
            let Some((key, weight, input)) = CompletionOptions::split_term(term) else {
                continue;
            };
            let Some(boost) = m.matches(key) else {
                continue;
            };
            let s = score(weight, boost);
            let mut postings = inv
                .read_postings_from_terminfo(stream.value(), IndexRecordOption::Basic)
                .map_err(internal)?;
            let mut doc = postings.doc();
            while doc != TERMINATED {
                if alive.is_none_or(|a| a.is_alive(doc)) {
                    let f = Found {
                        score: s,
                        text: input.to_string(),
                        target,
                        shard: shard.shard_id,
                        segment: seg_ord as u32,
                        doc,
                    };
                    per_doc
                        .entry((seg_ord as u32, doc))
                        .and_modify(|e| {
                            if by_rank(&f, e).is_lt() {
                                *e = f.clone();
                            }
                        })
                        .or_insert(f);
                }
                doc = postings.advance();
            }
        }
    }
    let mut found: Vec<Found> = per_doc.into_values().collect();
    found.sort_by(by_rank);
    Ok(rank(found, skip_duplicates, limit))
}

fn rank(found: Vec<Found>, skip_duplicates: bool, limit: usize) -> Vec<Found> {
    let mut seen = std::collections::HashSet::new();
    found
        .into_iter()
        .filter(|f| !skip_duplicates || seen.insert(f.text.clone()))
        .take(limit)
        .collect()
}

/// Runs a completion suggestion over every target's shards and renders its entries.
pub fn run(
    c: &CompletionSuggestion,
    lookup: &Lookup,
    targets: &[(&Arc<IndexService>, &[ShardSearcher])],
    source: &SourceFilter,
) -> EsResult<Value> {
    let mut all = Vec::new();
    for (ti, (index, shards)) in targets.iter().enumerate() {
        let opts = completion_options(index, &c.field)?;
        let m = matcher(&opts, c, lookup)?;
        let limit = c.shard_size.unwrap_or(c.size);
        for shard in shards.iter() {
            all.extend(shard_options(
                shard,
                ti,
                &c.field,
                &m,
                c.skip_duplicates,
                limit,
            )?);
        }
    }
    all.sort_by(by_rank);
    let top = rank(all, c.skip_duplicates, c.size);
    let mut options = Vec::with_capacity(top.len());
    for f in top {
        let (index, shards) = &targets[f.target];
        let shard = shards
            .iter()
            .find(|s| s.shard_id == f.shard)
            .expect("shard searcher");
        let doc = shard.stored(tantivy::DocAddress::new(f.segment, f.doc))?;
        let id = doc.id.clone().unwrap_or_default();
        let mut o = Map::new();
        o.insert("text".into(), json!(f.text));
        o.insert("_index".into(), json!(index.name));
        o.insert("_id".into(), json!(id));
        o.insert("_score".into(), lode_engine::float::float_value(f.score));
        if source.fetch {
            let bytes = doc.source_bytes();
            if !bytes.is_empty() {
                let src: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
                if let Some(filtered) = source.apply(&src) {
                    o.insert("_source".into(), filtered);
                }
            }
        }
        options.push(Value::Object(o));
    }
    let text = match lookup {
        Lookup::Prefix(t) | Lookup::Regex(t) => t,
    };
    Ok(json!([{
        "text": text,
        "offset": 0,
        "length": text.encode_utf16().count(),
        "options": options,
    }]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Vec<u32> {
        s.bytes().map(u32::from).collect()
    }

    #[test]
    fn longest_prefix_within_the_distance() {
        assert_eq!(
            longest_accepted_prefix(&u("irv"), &u("irvana"), 1, true),
            Some(4)
        );
        assert_eq!(
            longest_accepted_prefix(&u("rvi"), &u("irvana"), 1, true),
            None
        );
        assert_eq!(
            longest_accepted_prefix(&u("riv"), &u("irvana"), 1, true),
            Some(3)
        );
        assert_eq!(
            longest_accepted_prefix(&u("riv"), &u("irvana"), 1, false),
            None
        );
        assert_eq!(longest_accepted_prefix(&u("xyz"), &u("abc"), 1, true), None);
    }

    #[test]
    fn fuzzy_boost_counts_the_shared_leading_units() {
        let m = Matcher::Fuzzy {
            query: u("nirv"),
            exact: b"n".to_vec(),
            prefix_units: 1,
            max_edits: 1,
            transpositions: true,
            unicode: false,
        };
        assert_eq!(m.matches(b"nirvana"), Some(4.0));
        assert_eq!(m.matches(b"nerva"), Some(1.0));
        assert_eq!(m.matches(b"mirvana"), None);
    }

    #[test]
    fn lucene_regexes_translate_or_are_refused() {
        let r = lucene_regex("n[ai]r.*").unwrap();
        assert!(r.is_match("nirvana") && !r.is_match("anirvana"));
        assert!(lucene_regex("a@").is_err());
        assert!(lucene_regex("a^b").unwrap().is_match("a^b"));
    }

    #[test]
    fn parses_fuzzy_and_refuses_contexts() {
        let o = json!({"field": "s", "fuzzy": {"fuzziness": "AUTO", "prefix_length": 0}});
        let c = parse(o.as_object().unwrap()).unwrap();
        assert_eq!(c.fuzzy.unwrap().prefix_length, 0);
        let o = json!({"field": "s", "contexts": {}});
        assert!(parse(o.as_object().unwrap()).is_err());
        let o = json!({"size": 3});
        assert_eq!(
            parse(o.as_object().unwrap()).unwrap_err().kind,
            "parse_exception"
        );
    }
}
