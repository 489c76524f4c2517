//! Integers beyond 64 bits kept as written when Lode rebuilds a document from its parts.
//!
//! serde_json (without `arbitrary_precision`, which would turn every number of every parsed
//! document into a heap string) reads such an integer as a double, so a partial `_update`
//! merging trees would store `1.2345678901234568e29` where ES keeps the `BigInteger`'s digits.
//! Before such a merge the JSON text has each of those integers replaced by a marked string
//! ([`protect`]); the merged tree is serialized and the marked strings turned back into the
//! digits ([`restore`]). Documents without them (nearly all) are not touched.

use crate::rest::parse_json;
use lode_engine::EsResult;
use serde_json::Value;

/// What a marked string starts with: the mark `lode-painless` reads as a `BigInteger`.
const MARK: &str = lode_painless::BIG_INTEGER_MARK;
/// [`MARK`] as serde_json writes it inside a string.
const MARK_JSON: &str = "\"\\u0000lode-big-integer:";

/// `raw` parsed with each integer beyond 64 bits as a marked string; `None` when it has none.
pub fn protect(raw: &[u8]) -> EsResult<Option<Value>> {
    let Some(text) = protect_text(raw) else {
        return Ok(None);
    };
    parse_json(text.as_bytes()).map(Some)
}

/// A stored source as an update script's `ctx._source`: its integers beyond 64 bits marked,
/// so that the script sees them as `BigInteger`s and writes them back as they were.
pub fn script_source(stored: &[u8]) -> EsResult<Value> {
    match protect(stored)? {
        Some(v) => Ok(v),
        None => parse_json(stored),
    }
}

/// The source an update script left: the bytes to store (marked integers as digits) and the
/// tree to index, which holds them as the indexing of those bytes would (doubles).
pub fn script_result(v: Value) -> EsResult<(Vec<u8>, Value)> {
    if !contains_mark(&v) {
        return Ok((serde_json::to_vec(&v).expect("a JSON value serializes"), v));
    }
    let bytes = restore(&v);
    let tree = parse_json(&bytes)?;
    Ok((bytes, tree))
}

/// Gives the script `params` of a parsed request `body` their integers beyond 64 bits as
/// written in `raw` (its text): ES's scripts get their params as Jackson reads them, such an
/// integer a `java.math.BigInteger` (a marked string here, which `lode-painless` reads as
/// one), where serde_json gave a double. A script is an object with `source` or `id`; only
/// its `params` are touched (a query's own numbers stay numbers). Returns whether some
/// params were given such an integer (a script may hand one back: see [`restore`]).
pub fn exact_script_params(raw: &[u8], body: &mut Value) -> EsResult<bool> {
    match protect(raw)? {
        Some(marked) => Ok(take_marked_params(body, &marked)),
        None => Ok(false),
    }
}

/// [`exact_script_params`] over a tree and its marked twin (the same tree but for the marks).
fn take_marked_params(v: &mut Value, marked: &Value) -> bool {
    match (v, marked) {
        (Value::Object(o), Value::Object(m)) => {
            let script = o.contains_key("source") || o.contains_key("id");
            let mut any = false;
            for (k, child) in o.iter_mut() {
                let Some(twin) = m.get(k) else { continue };
                if script && k == "params" {
                    if contains_mark(twin) {
                        *child = twin.clone();
                        any = true;
                    }
                } else {
                    any |= take_marked_params(child, twin);
                }
            }
            any
        }
        (Value::Array(a), Value::Array(m)) => a
            .iter_mut()
            .zip(m)
            .fold(false, |any, (x, twin)| take_marked_params(x, twin) | any),
        _ => false,
    }
}

/// Whether a marked string is anywhere in `v`.
fn contains_mark(v: &Value) -> bool {
    match v {
        Value::String(s) => s.starts_with(MARK),
        Value::Array(a) => a.iter().any(contains_mark),
        Value::Object(o) => o.values().any(contains_mark),
        _ => false,
    }
}

/// `v` serialized, the marked strings written back as the integers they stand for.
pub fn restore(v: &Value) -> Vec<u8> {
    let json = serde_json::to_string(v).expect("a JSON value serializes");
    let mut out = String::with_capacity(json.len());
    let mut rest = json.as_str();
    while let Some(at) = rest.find(MARK_JSON) {
        out.push_str(&rest[..at]);
        let after = &rest[at + MARK_JSON.len()..];
        let end = after.find('"').unwrap_or(after.len());
        out.push_str(&after[..end]);
        rest = after.get(end + 1..).unwrap_or("");
    }
    out.push_str(rest);
    out.into_bytes()
}

/// The JSON text with every integer literal that fits neither `i64` nor `u64` quoted behind
/// [`MARK`]; `None` when there is none (or the text is not UTF-8: the caller's parse fails).
fn protect_text(raw: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(raw).ok()?;
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                let token = &text[start..i];
                let integer = token
                    .bytes()
                    .skip(usize::from(token.starts_with('-')))
                    .all(|c| c.is_ascii_digit());
                if integer
                    && token.len() > 1
                    && token.parse::<i64>().is_err()
                    && token.parse::<u64>().is_err()
                {
                    out.push_str(&text[copied..start]);
                    out.push('"');
                    out.push_str(&MARK.replace('\u{0}', "\\u0000"));
                    out.push_str(token);
                    out.push('"');
                    copied = i;
                }
            }
            _ => i += 1,
        }
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_script_params_keep_big_integers() {
        let raw = br#"{"query": {"term": {"n": 123456789012345678901234567890}},
            "script_fields": {"f": {"script": {"source": "params.a", "params": {"a": 123456789012345678901234567890, "b": 5, "c": [18446744073709551616]}}}},
            "sort": [{"_script": {"script": {"id": "s", "params": {"x": 1}}}}]}"#;
        let mut body = parse_json(raw).unwrap();
        assert!(exact_script_params(raw, &mut body).unwrap());
        let params = &body["script_fields"]["f"]["script"]["params"];
        assert_eq!(
            params["a"],
            json!(format!("{MARK}123456789012345678901234567890"))
        );
        assert_eq!(params["b"], json!(5));
        assert_eq!(params["c"], json!([format!("{MARK}18446744073709551616")]));
        // the query's number is no script's: it stays the double serde_json reads
        assert!(body["query"]["term"]["n"].is_f64());
        assert_eq!(
            body["sort"][0]["_script"]["script"]["params"],
            json!({"x": 1})
        );
        let mut plain = parse_json(br#"{"script": {"source": "1", "params": {"a": 1}}}"#).unwrap();
        assert!(!exact_script_params(
            br#"{"script": {"source": "1", "params": {"a": 1}}}"#,
            &mut plain
        )
        .unwrap());
    }
    use serde_json::json;

    #[test]
    fn big_integers_survive_a_tree_round_trip() {
        let raw = br#"{"a": 123456789012345678901234567890, "b": [-99999999999999999999, 1.5e300, 7],
            "s": "123456789012345678901234567890 \" 18446744073709551616", "u": 18446744073709551615}"#;
        let mut v = protect(raw).unwrap().unwrap();
        assert_eq!(v["b"][2], json!(7));
        v["c"] = json!(1);
        let out = String::from_utf8(restore(&v)).unwrap();
        assert_eq!(
            out,
            r#"{"a":123456789012345678901234567890,"b":[-99999999999999999999,1.5e+300,7],"s":"123456789012345678901234567890 \" 18446744073709551616","u":18446744073709551615,"c":1}"#
        );
        assert!(protect(br#"{"a": 1, "b": "99999999999999999999999"}"#)
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_script_passes_big_integers_along() {
        let stored = br#"{"big": 123456789012345678901234567890, "m": 1}"#;
        let mut src = script_source(stored).unwrap();
        lode_painless::apply_update_script(&json!("ctx._source.m += 1"), &mut src).unwrap();
        let (bytes, tree) = script_result(src).unwrap();
        assert_eq!(bytes, br#"{"big":123456789012345678901234567890,"m":2}"#);
        assert_eq!(tree, json!({"big": 1.2345678901234568e29, "m": 2}));
        let (bytes, tree) = script_result(json!({"m": 1})).unwrap();
        assert_eq!(
            (bytes.as_slice(), tree),
            (&br#"{"m":1}"#[..], json!({"m": 1}))
        );
    }
}
