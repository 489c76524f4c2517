//! Tokens of the Painless subset. Offsets are byte offsets into the source; `nl_before` lets
//! the parser accept a line break where Painless wants a `;`.

use super::CompileError;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    Ident(String),
    Int(i64),
    Float(f64),
    Str(String),
    Punct(&'static str),
    Eof,
}

#[derive(Debug, Clone)]
pub(crate) struct Token {
    pub tok: Tok,
    pub pos: usize,
    pub nl_before: bool,
}

/// Longest first, so that `>>>=` wins over `>>` and `>`.
const PUNCTS: &[&str] = &[
    ">>>=", "===", "!==", ">>>", "<<=", ">>=", "?.", "?:", "==", "!=", "<=", ">=", "&&", "||",
    "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<", ">>", "->", "(", ")", "[",
    "]", "{", "}", ".", ",", ";", ":", "?", "=", "<", ">", "+", "-", "*", "/", "%", "!", "~", "&",
    "|", "^",
];

pub(crate) fn tokenize(src: &str) -> Result<Vec<Token>, CompileError> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut nl_before = false;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\n' {
            nl_before = true;
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if src[i..].starts_with("//") {
            i = src[i..].find('\n').map(|n| i + n).unwrap_or(bytes.len());
            continue;
        }
        if src[i..].starts_with("/*") {
            let end = src[i + 2..]
                .find("*/")
                .ok_or_else(|| CompileError::new(i, "unterminated comment"))?;
            if src[i..i + 2 + end].contains('\n') {
                nl_before = true;
            }
            i += end + 4;
            continue;
        }
        let start = i;
        let tok = if c.is_ascii_digit()
            || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let (tok, len) = number(&src[i..]).map_err(|m| CompileError::new(start, m))?;
            i += len;
            tok
        } else if c == b'\'' || c == b'"' {
            let (s, len) =
                string(&src[i..]).ok_or_else(|| CompileError::new(start, "unterminated string"))?;
            i += len;
            Tok::Str(s)
        } else if c.is_ascii_alphabetic() || c == b'_' || c == b'$' {
            let len = src[i..]
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_' || ch == '$'))
                .unwrap_or(src.len() - i);
            i += len;
            Tok::Ident(src[start..i].to_string())
        } else if let Some(p) = PUNCTS.iter().find(|p| src[i..].starts_with(**p)) {
            i += p.len();
            Tok::Punct(p)
        } else {
            let ch = src[i..].chars().next().unwrap_or('?');
            return Err(CompileError::new(
                start,
                format!("unexpected character [{ch}]"),
            ));
        };
        out.push(Token {
            tok,
            pos: start,
            nl_before,
        });
        nl_before = false;
    }
    out.push(Token {
        tok: Tok::Eof,
        pos: src.len(),
        nl_before: true,
    });
    Ok(out)
}

fn number(s: &str) -> Result<(Tok, usize), String> {
    let b = s.as_bytes();
    if s.starts_with("0x") || s.starts_with("0X") {
        let len = 2 + s[2..]
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(s.len() - 2);
        let v = i64::from_str_radix(&s[2..len], 16)
            .map_err(|_| format!("invalid int constant [{}]", &s[..len]))?;
        let suffix = matches!(b.get(len), Some(b'l' | b'L')) as usize;
        return Ok((Tok::Int(v), len + suffix));
    }
    let mut i = 0;
    let mut float = false;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if i < b.len() && b[i] == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        float = true;
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            float = true;
            i = j;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        }
    }
    let text = &s[..i];
    match b.get(i) {
        Some(b'f' | b'F' | b'd' | b'D') => {
            let v: f64 = text
                .parse()
                .map_err(|_| format!("invalid float constant [{text}]"))?;
            Ok((Tok::Float(v), i + 1))
        }
        _ if float => {
            let v: f64 = text
                .parse()
                .map_err(|_| format!("invalid double constant [{text}]"))?;
            Ok((Tok::Float(v), i))
        }
        suffix => {
            let long = matches!(suffix, Some(b'l' | b'L'));
            // Java reads a leading 0 as octal.
            let v = if text.len() > 1 && text.starts_with('0') {
                i64::from_str_radix(&text[1..], 8)
            } else {
                text.parse::<i64>()
            }
            .map_err(|_| format!("invalid int constant [{text}]"))?;
            Ok((Tok::Int(v), i + long as usize))
        }
    }
}

fn string(s: &str) -> Option<(String, usize)> {
    let quote = s.chars().next()?;
    let mut out = String::new();
    let mut chars = s.char_indices().skip(1);
    while let Some((i, c)) = chars.next() {
        if c == quote {
            return Some((out, i + 1));
        }
        if c == '\\' {
            let (_, e) = chars.next()?;
            out.push(match e {
                'n' => '\n',
                't' => '\t',
                'r' => '\r',
                other => other,
            });
        } else {
            out.push(c);
        }
    }
    None
}
