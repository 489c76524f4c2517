//! Hits' `_source` as the stored bytes, as Elasticsearch returns it: parsing each document
//! into a tree only for it to be printed again cost about a quarter of a search's CPU.
//!
//! The fetch phase keeps a hit's stored bytes aside and puts a marker string where its
//! `_source` goes; the route serializes the response once and [`RawSources::splice`]s the
//! bytes in place of the markers. A marker is a random 128-bit nonce, drawn per response, and
//! the hit's number: nothing in the tree but the markers can hold the nonce, so no document
//! content (ids, highlights, sort values, aggregation keys...) can pass for one.
//!
//! Only a route that serializes the response itself may ask for markers
//! ([`super::HitSources::Raw`]); every other caller gets real trees. `_search`, scroll,
//! `_msearch` (one `RawSources` for all its searches) and `_mget` (its documents) use it.

use crate::rest::RestResponse;
use lode_engine::{EsError, EsResult};
use memchr::memmem;
use serde_json::Value;

/// The answer `out`, with the kept sources spliced in when there are any (else the tree as
/// it is, for the HTTP layer to print).
pub(crate) fn respond(out: Value, raw: Option<RawSources>) -> EsResult<RestResponse> {
    respond_with(out, raw, false)
}

/// [`respond`]; with `big_integers`, integers beyond 64 bits that scripts handed back (marked
/// strings, see `big_integers`) are written as their digits.
pub(crate) fn respond_with(
    out: Value,
    raw: Option<RawSources>,
    big_integers: bool,
) -> EsResult<RestResponse> {
    match raw.filter(|r| !r.is_empty()) {
        None if !big_integers => Ok(RestResponse::ok(out)),
        None => Ok(RestResponse::json_bytes(
            200,
            crate::big_integers::restore(&out),
        )),
        Some(raw) => {
            let json = if big_integers {
                crate::big_integers::restore(&out)
            } else {
                serde_json::to_vec(&out).map_err(|e| EsError::internal(e.to_string()))?
            };
            Ok(RestResponse::json_bytes(200, raw.splice(&json)))
        }
    }
}

/// The stored sources of one response's hits, in the order their markers were handed out.
pub struct RawSources {
    /// What every marker starts with once serialized: the opening quote, a fixed word and the
    /// nonce.
    prefix: String,
    sources: Vec<Vec<u8>>,
}

impl RawSources {
    /// With a nonce of its own, drawn from the thread's CSPRNG.
    pub fn fresh() -> RawSources {
        RawSources::with_nonce(rand::random::<u128>())
    }

    fn with_nonce(nonce: u128) -> RawSources {
        RawSources {
            prefix: format!("\"lode-source:{nonce:032x}:"),
            sources: Vec::new(),
        }
    }

    /// Whether `bytes` can go into a response as they are: a JSON object (every write path
    /// stores one, checked by a strict parse or written by serde_json); anything else takes
    /// the tree path, which reads what it can.
    pub fn can_splice(bytes: &[u8]) -> bool {
        let b = bytes.trim_ascii();
        b.first() == Some(&b'{') && b.last() == Some(&b'}')
    }

    /// Keeps a hit's stored source and gives the marker that stands for it in the tree.
    pub fn keep(&mut self, source: Vec<u8>) -> Value {
        let n = self.sources.len();
        self.sources.push(source);
        Value::String(format!("{}{n}", &self.prefix[1..]))
    }

    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// `json` (the serialized response) with each marker, quotes included, replaced by its
    /// source trimmed of surrounding whitespace. One pass over `json`.
    pub fn splice(&self, json: &[u8]) -> Vec<u8> {
        let total: usize = self.sources.iter().map(Vec::len).sum();
        let mut out = Vec::with_capacity(json.len() + total);
        let prefix = self.prefix.as_bytes();
        let mut rest = json;
        for at in memmem::find_iter(json, prefix) {
            let start = json.len() - rest.len();
            if at < start {
                continue; // inside a marker already replaced (cannot happen: no nested quotes)
            }
            let after = &json[at + prefix.len()..];
            let digits = after.iter().take_while(|b| b.is_ascii_digit()).count();
            let source = (after.get(digits) == Some(&b'"'))
                .then(|| {
                    std::str::from_utf8(&after[..digits])
                        .ok()?
                        .parse::<usize>()
                        .ok()
                })
                .flatten()
                .and_then(|n| self.sources.get(n));
            let Some(source) = source else {
                continue;
            };
            out.extend_from_slice(&json[start..at]);
            out.extend_from_slice(source.trim_ascii());
            rest = &after[digits + 1..];
        }
        out.extend_from_slice(rest);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn serialized(v: &Value) -> Vec<u8> {
        serde_json::to_vec(v).unwrap()
    }

    #[test]
    fn markers_are_replaced_in_order_by_their_sources() {
        let mut raw = RawSources::with_nonce(7);
        let a = raw.keep(b" {\"a\": 1}\n".to_vec());
        let b = raw.keep(b"{\"b\":[18446744073709551616, 1.0]}".to_vec());
        let tree = json!({"hits": [{"_id": "1", "_source": a}, {"_id": "2", "_source": b}]});
        let out = raw.splice(&serialized(&tree));
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"hits":[{"_id":"1","_source":{"a": 1}},{"_id":"2","_source":{"b":[18446744073709551616, 1.0]}}]}"#
        );
    }

    #[test]
    fn a_marker_left_out_of_the_tree_is_skipped() {
        let mut raw = RawSources::with_nonce(7);
        let _dropped = raw.keep(b"{\"a\":1}".to_vec());
        let b = raw.keep(b"{\"b\":2}".to_vec());
        let tree = json!({"hits": [{"_source": b}]});
        assert_eq!(
            raw.splice(&serialized(&tree)),
            br#"{"hits":[{"_source":{"b":2}}]}"#
        );
    }

    #[test]
    fn without_markers_the_json_is_unchanged() {
        let raw = RawSources::with_nonce(7);
        let json = br#"{"hits":[{"_id":"lode-source:","x":"\"lode-source:"}]}"#;
        assert_eq!(raw.splice(json), json.to_vec());
        assert!(raw.is_empty());
    }

    #[test]
    fn content_resembling_a_marker_is_left_alone() {
        let mut raw = RawSources::with_nonce(0xabc);
        let real = raw.keep(b"{\"ok\":true}".to_vec());
        let real_text = real.as_str().unwrap().to_string();
        // another response's nonce, a truncated marker, a marker without its closing quote or
        // number, and a number out of range
        let other = RawSources::with_nonce(0xabd).prefix[1..].to_string() + "0";
        let truncated = real_text[..real_text.len() - 3].to_string();
        let tree = json!({
            "a": other,
            "b": truncated,
            "c": format!("{real_text}x"),
            "d": raw.prefix[1..].to_string(),
            "e": format!("{}9", &raw.prefix[1..]),
            "_source": real,
        });
        let json = serialized(&tree);
        let out = raw.splice(&json);
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["_source"], json!({"ok": true}));
        for k in ["a", "b", "c", "d", "e"] {
            assert_eq!(v[k], tree[k], "{k}");
        }
    }

    #[test]
    fn empty_sources_and_many_hits() {
        let mut raw = RawSources::with_nonce(u128::MAX);
        let hits: Vec<Value> = (0..1000)
            .map(|i| {
                let src = if i % 2 == 0 {
                    format!("{{\"i\":{i}}}").into_bytes()
                } else {
                    b"  {}  ".to_vec()
                };
                json!({"_source": raw.keep(src)})
            })
            .collect();
        let out = raw.splice(&serialized(&Value::Array(hits)));
        let v: Value = serde_json::from_slice(&out).unwrap();
        for (i, h) in v.as_array().unwrap().iter().enumerate() {
            let want = if i % 2 == 0 {
                json!({"i": i})
            } else {
                json!({})
            };
            assert_eq!(h["_source"], want);
        }
    }

    #[test]
    fn only_json_objects_are_spliced() {
        assert!(RawSources::can_splice(b" {\"a\":1}\r\n"));
        assert!(RawSources::can_splice(b"{}"));
        assert!(!RawSources::can_splice(b""));
        assert!(!RawSources::can_splice(b"[1]"));
        assert!(!RawSources::can_splice(b"\"x\""));
    }
}
