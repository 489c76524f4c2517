//! ES's `[line:column] ` in front of a document parsing error: the XContent location of the
//! token the document parser was on when it failed (`DocumentParsingException` takes
//! `parser.getTokenLocation()`).
//!
//! Lode parses documents as a `serde_json::Value` tree, which keeps no positions. The parser
//! notes which value of the tree an error is about ([`fail_at`], the value's address: cheap,
//! and only on failure); [`locate`] then finds that value's path in the tree and walks the
//! document's JSON text along it to the value's first byte. Jackson reads bytes, so the
//! column counts bytes; it is one past the token's 1-based column, as Jackson reports the
//! position after the token's first character (`{"c":"v"}` fails at `[1:7]`).

use crate::error::EsError;
use serde_json::Value;
use std::cell::Cell;

thread_local! {
    /// The address of the value the last document parsing error on this thread is about.
    static FAILED_AT: Cell<usize> = const { Cell::new(0) };
}

/// Notes that `e` is about `v` (a value of the document being parsed) and answers it.
pub(crate) fn fail_at(v: &Value, e: EsError) -> EsError {
    FAILED_AT.with(|c| c.set(v as *const Value as usize));
    e
}

/// Forgets a previous document's failure (a new parse starts).
pub(crate) fn reset() {
    FAILED_AT.with(|c| c.set(0));
}

/// `e` with the location of the value it is about in `raw`, the JSON `source` was parsed
/// from, when the document parser noted one.
pub fn locate(mut e: EsError, source: &Value, raw: &[u8]) -> EsError {
    let addr = FAILED_AT.with(|c| c.replace(0));
    if addr == 0 {
        return e;
    }
    let mut path = Vec::new();
    if !path_to(source, addr, &mut path) {
        return e;
    }
    if let Some((line, column)) = position(raw, &path) {
        e.reason = format!("[{line}:{column}] {}", e.reason);
    }
    e
}

enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

fn path_to<'a>(v: &'a Value, addr: usize, path: &mut Vec<Step<'a>>) -> bool {
    if v as *const Value as usize == addr {
        return true;
    }
    match v {
        Value::Object(m) => m.iter().any(|(k, x)| {
            path.push(Step::Key(k));
            path_to(x, addr, path) || {
                path.pop();
                false
            }
        }),
        Value::Array(a) => a.iter().enumerate().any(|(i, x)| {
            path.push(Step::Index(i));
            path_to(x, addr, path) || {
                path.pop();
                false
            }
        }),
        _ => false,
    }
}

/// The line and Jackson's column of the value at `path` in the JSON text `raw`.
fn position(raw: &[u8], path: &[Step]) -> Option<(usize, usize)> {
    let mut s = Scanner { raw, at: 0 };
    s.ws();
    for step in path {
        match step {
            Step::Key(key) => {
                s.expect(b'{')?;
                loop {
                    s.ws();
                    let name = s.string()?;
                    s.ws();
                    s.expect(b':')?;
                    s.ws();
                    if name == *key {
                        break;
                    }
                    s.skip_value()?;
                    s.ws();
                    s.expect(b',')?;
                }
            }
            Step::Index(i) => {
                s.expect(b'[')?;
                s.ws();
                for _ in 0..*i {
                    s.skip_value()?;
                    s.ws();
                    s.expect(b',')?;
                    s.ws();
                }
            }
        }
    }
    let before = &raw[..s.at];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n' || b == b'\r')
        .map_or(0, |i| i + 1);
    let lines = 1
        + before.iter().filter(|&&b| b == b'\n').count()
        + before
            .windows(2)
            .filter(|w| w[0] == b'\r' && w[1] != b'\n')
            .count()
        + usize::from(before.last() == Some(&b'\r'));
    Some((lines, s.at - line_start + 2))
}

struct Scanner<'a> {
    raw: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn ws(&mut self) {
        while matches!(self.raw.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn expect(&mut self, b: u8) -> Option<()> {
        (self.raw.get(self.at) == Some(&b)).then(|| self.at += 1)
    }

    /// A string token, decoded (keys may hold escapes).
    fn string(&mut self) -> Option<String> {
        let start = self.at;
        self.expect(b'"')?;
        let mut escaped = false;
        while let Some(&b) = self.raw.get(self.at) {
            self.at += 1;
            match b {
                b'\\' => {
                    escaped = true;
                    self.at += 1;
                }
                b'"' => {
                    let token = &self.raw[start..self.at];
                    return if escaped {
                        serde_json::from_slice(token).ok()
                    } else {
                        std::str::from_utf8(&token[1..token.len() - 1])
                            .ok()
                            .map(str::to_string)
                    };
                }
                _ => {}
            }
        }
        None
    }

    fn skip_value(&mut self) -> Option<()> {
        match self.raw.get(self.at)? {
            b'"' => self.string().map(|_| ()),
            open @ (b'{' | b'[') => {
                let close = if *open == b'{' { b'}' } else { b']' };
                self.at += 1;
                self.ws();
                if self.expect(close).is_some() {
                    return Some(());
                }
                loop {
                    if *open == b'{' {
                        self.string()?;
                        self.ws();
                        self.expect(b':')?;
                        self.ws();
                    }
                    self.skip_value()?;
                    self.ws();
                    if self.expect(close).is_some() {
                        return Some(());
                    }
                    self.expect(b',')?;
                    self.ws();
                }
            }
            _ => {
                while let Some(b) = self.raw.get(self.at) {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.at += 1;
                }
                Some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(raw: &str, path: &[Step]) -> Option<(usize, usize)> {
        position(raw.as_bytes(), path)
    }

    #[test]
    fn positions_are_jacksons() {
        // ES answers `[1:7]` for the value of `{"c":"metrics"}`.
        assert_eq!(at(r#"{"c":"metrics"}"#, &[Step::Key("c")]), Some((1, 7)));
        assert_eq!(at(r#"{"age": "abc"}"#, &[Step::Key("age")]), Some((1, 10)));
        let raw = "{\n  \"a\": {\"x\": [1, {\"y\": 2}]},\r\n  \"b\\u0041\": [true, \"é\", 3]\n}";
        assert_eq!(
            at(
                raw,
                &[
                    Step::Key("a"),
                    Step::Key("x"),
                    Step::Index(1),
                    Step::Key("y")
                ]
            ),
            Some((2, 25))
        );
        assert_eq!(at(raw, &[Step::Key("bA"), Step::Index(2)]), Some((3, 28)));
        assert_eq!(at(raw, &[Step::Key("missing")]), None);
    }

    #[test]
    fn an_error_is_located_at_its_value() {
        let raw = br#"{"a": 1, "b": [2, "x"]}"#;
        let source: Value = serde_json::from_slice(raw).unwrap();
        reset();
        let e = fail_at(
            &source["b"][1],
            EsError::bad_request("document_parsing_exception", "bad"),
        );
        assert_eq!(locate(e, &source, raw).reason, "[1:20] bad");
        let e = locate(
            EsError::bad_request("document_parsing_exception", "bad"),
            &source,
            raw,
        );
        assert_eq!(e.reason, "bad");
    }
}
