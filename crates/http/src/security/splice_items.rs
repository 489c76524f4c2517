//! Refused items put back into a serialized response's top-level array without reading the
//! rest of it into a tree: an `_mget` or `_msearch` answer carries stored `_source` bytes,
//! which a tree would print again (integers beyond 64 bits as doubles, other spellings).

use serde_json::Value;

/// Where the array under a top-level key lies: its `[`, each element's first byte, its `]`.
struct ArraySpan {
    open: usize,
    starts: Vec<usize>,
    close: usize,
}

/// The index just past the string starting at `json[at]` (a `"`).
fn string_end(json: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    while i < json.len() {
        match json[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// Scans the JSON object `json` for the array under its top-level `key`. Only strings and
/// brackets are told apart: enough in a document serde_json or a client wrote.
fn find_array(json: &[u8], key: &str) -> Option<ArraySpan> {
    let mut depth = 0usize;
    let mut expect_key = false;
    let mut key_matches = false;
    let mut span: Option<ArraySpan> = None;
    let mut expect_element = false;
    let mut i = 0;
    while i < json.len() {
        let b = json[i];
        let in_array = span.is_some() && depth == 2;
        if in_array && expect_element && !b.is_ascii_whitespace() && b != b']' {
            span.as_mut()?.starts.push(i);
            expect_element = false;
        }
        match b {
            b'"' => {
                let end = string_end(json, i)?;
                if depth == 1 && expect_key {
                    key_matches = &json[i + 1..end - 1] == key.as_bytes();
                    expect_key = false;
                }
                i = end;
                continue;
            }
            b'{' | b'[' => {
                depth += 1;
                if depth == 1 {
                    expect_key = b == b'{';
                } else if depth == 2 && b == b'[' && key_matches && span.is_none() {
                    span = Some(ArraySpan {
                        open: i,
                        starts: Vec::new(),
                        close: 0,
                    });
                    expect_element = true;
                }
            }
            b'}' | b']' => {
                if in_array {
                    let mut s = span?;
                    s.close = i;
                    return Some(s);
                }
                depth = depth.checked_sub(1)?;
            }
            b',' if depth == 1 => {
                expect_key = true;
                key_matches = false;
            }
            b',' if in_array => expect_element = true,
            _ => {}
        }
        i += 1;
    }
    None
}

/// `json` with each `(position, item)` inserted, in order, into the array under its top-level
/// `key` as `Vec::insert` would (a position past the end appends); `None` when `json` has no
/// such array.
pub fn insert_items(json: &[u8], key: &str, items: &[(usize, Value)]) -> Option<Vec<u8>> {
    let span = find_array(json, key)?;
    let mut pieces: Vec<Vec<u8>> = Vec::with_capacity(span.starts.len() + items.len());
    for (k, &start) in span.starts.iter().enumerate() {
        let end = match span.starts.get(k + 1) {
            // the separating comma, and the whitespace before it
            Some(&next) => start + json[start..next].iter().rposition(|c| *c == b',')?,
            None => span.close,
        };
        pieces.push(json[start..end].trim_ascii_end().to_vec());
    }
    for (pos, item) in items {
        let at = (*pos).min(pieces.len());
        pieces.insert(at, serde_json::to_vec(item).ok()?);
    }
    let mut out = Vec::with_capacity(json.len() + 64 * items.len());
    out.extend_from_slice(&json[..=span.open]);
    out.extend_from_slice(&pieces.join(&b","[..]));
    out.extend_from_slice(&json[span.close..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn insert(json: &str, key: &str, items: &[(usize, Value)]) -> Option<String> {
        insert_items(json.as_bytes(), key, items).map(|b| String::from_utf8(b).unwrap())
    }

    #[test]
    fn items_go_where_vec_insert_puts_them() {
        let json = r#"{"docs":[{"_source":{"big":18446744073709551616, "f" : 1.0}},{"a":"]"}]}"#;
        let e = json!({"error": {"type": "security_exception"}});
        let out = insert(
            json,
            "docs",
            &[(0, e.clone()), (2, e.clone()), (9, e.clone())],
        )
        .unwrap();
        let err = r#"{"error":{"type":"security_exception"}}"#;
        assert_eq!(
            out,
            format!(
                r#"{{"docs":[{err},{{"_source":{{"big":18446744073709551616, "f" : 1.0}}}},{err},{{"a":"]"}},{err}]}}"#
            )
        );
    }

    #[test]
    fn the_array_is_found_after_other_keys_and_inside_no_string() {
        let json = "{\"took\":3,\"x\":{\"responses\":[1]},\"s\":\"\\\"responses\\\":[\",\n \"responses\" : [ {\"a\":[1,2]} ,\n 7 ]}";
        let out = insert(json, "responses", &[(1, json!("e"))]).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["responses"], json!([{"a": [1, 2]}, "e", 7]));
        assert_eq!(v["x"], json!({"responses": [1]}));
    }

    #[test]
    fn an_empty_array_and_a_missing_one() {
        assert_eq!(
            insert(r#"{"docs":[]}"#, "docs", &[(3, json!(1)), (0, json!(2))]).unwrap(),
            r#"{"docs":[2,1]}"#
        );
        assert_eq!(insert(r#"{"docs":{}}"#, "docs", &[(0, json!(1))]), None);
        assert_eq!(insert(r#"{"other":[1]}"#, "docs", &[(0, json!(1))]), None);
        assert_eq!(insert(r#"{"docs":[1"#, "docs", &[(0, json!(1))]), None);
    }
}
