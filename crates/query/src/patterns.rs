//! ES wildcard patterns and Lucene regular expressions, rewritten for tantivy's `RegexQuery`
//! (the Rust `regex-syntax` dialect, implicitly anchored at both ends like Lucene's).

/// `(?s)` so that `.` matches any character, as in Lucene.
const DOT_ALL: &str = "(?s)";

/// `*` → any sequence, `?` → any one character, `\` escapes the next character.
pub fn wildcard_to_regex(pattern: &str, case_insensitive: bool) -> String {
    let mut out = String::with_capacity(pattern.len() + 8);
    out.push_str(if case_insensitive { "(?is)" } else { DOT_ALL });
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '*' => out.push_str(".*"),
            '?' => out.push('.'),
            '\\' => {
                if let Some(n) = chars.next() {
                    push_literal(&mut out, n);
                }
            }
            c => push_literal(&mut out, c),
        }
    }
    out
}

/// The literal text of a wildcard pattern when it has no wildcard at all.
pub fn wildcard_literal(pattern: &str) -> Option<String> {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '*' | '?' => return None,
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    Some(out)
}

/// The prefix of a wildcard pattern whose only wildcard is one trailing `*`.
pub fn wildcard_prefix(pattern: &str) -> Option<String> {
    let body = pattern.strip_suffix('*')?;
    if body.ends_with('\\') && !body.ends_with("\\\\") {
        return None;
    }
    wildcard_literal(body)
}

/// An exact match of `text`, optionally case-insensitive.
pub fn literal_regex(text: &str, case_insensitive: bool, prefix: bool) -> String {
    let mut out = String::from(if case_insensitive { "(?is)" } else { DOT_ALL });
    for c in text.chars() {
        push_literal(&mut out, c);
    }
    if prefix {
        out.push_str(".*");
    }
    out
}

fn push_literal(out: &mut String, c: char) {
    let mut buf = [0u8; 4];
    out.push_str(&regex::escape(c.encode_utf8(&mut buf)));
}

/// Translates Lucene `RegExp` syntax (with the optional operators ES enables by default):
/// `.`, `?`, `*`, `+`, `{n,m}`, `|`, `(..)`, `[..]`/`[^..]`, `"literal"`, `\` escapes, `@`
/// (any string) and `<n-m>` (numeric interval). `^` and `$` are literals in Lucene.
/// Complement `~`, intersection `&` and the empty language `#` have no equivalent here.
pub fn lucene_to_regex(pattern: &str, case_insensitive: bool) -> Result<String, String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    out.push_str(if case_insensitive { "(?is)" } else { DOT_ALL });
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                i += 1;
                match chars.get(i) {
                    Some(&n) if matches!(n, 'd' | 'D' | 's' | 'S' | 'w' | 'W') => {
                        out.push('\\');
                        out.push(n);
                    }
                    Some(&n) => push_literal(&mut out, n),
                    None => return Err(format!("expected character after '\\' at position {i}")),
                }
            }
            '"' => {
                let end = chars[i + 1..]
                    .iter()
                    .position(|&c| c == '"')
                    .ok_or_else(|| format!("expected '\"' at position {}", chars.len()))?;
                out.push_str("(?:");
                for &l in &chars[i + 1..i + 1 + end] {
                    push_literal(&mut out, l);
                }
                out.push(')');
                i += end + 1;
            }
            '.' | '*' | '+' | '?' | '|' => out.push(c),
            '(' => out.push_str("(?:"),
            ')' => out.push(')'),
            '{' => {
                let end = chars[i..]
                    .iter()
                    .position(|&c| c == '}')
                    .ok_or_else(|| format!("expected '}}' at position {}", chars.len()))?;
                let body: String = chars[i + 1..i + end].iter().collect();
                let valid = !body.is_empty()
                    && body.chars().all(|c| c.is_ascii_digit() || c == ',')
                    && body.matches(',').count() <= 1
                    && !body.starts_with(',');
                if !valid {
                    return Err(format!("integer expected at position {}", i + 1));
                }
                out.push('{');
                out.push_str(&body);
                out.push('}');
                i += end;
            }
            '[' => {
                i = class(&chars, i, &mut out)?;
            }
            '@' => out.push_str(".*"),
            '<' => {
                let end = chars[i..]
                    .iter()
                    .position(|&c| c == '>')
                    .ok_or_else(|| format!("expected '>' at position {}", chars.len()))?;
                let body: String = chars[i + 1..i + end].iter().collect();
                out.push_str(&numeric_interval(&body)?);
                i += end;
            }
            '~' | '&' | '#' => {
                return Err(format!(
                    "regular expression operator [{c}] is not supported"
                ));
            }
            c => push_literal(&mut out, c),
        }
        i += 1;
    }
    Ok(out)
}

/// Copies a `[...]` class starting at `chars[start]`; returns the index of the closing `]`.
fn class(chars: &[char], start: usize, out: &mut String) -> Result<usize, String> {
    let mut i = start + 1;
    out.push('[');
    if chars.get(i) == Some(&'^') {
        out.push('^');
        i += 1;
    }
    let mut empty = true;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ']' if !empty => {
                out.push(']');
                return Ok(i);
            }
            '\\' => {
                i += 1;
                let n = *chars.get(i).ok_or("expected character after '\\'")?;
                if matches!(n, 'd' | 'D' | 's' | 'S' | 'w' | 'W') {
                    out.push('\\');
                    out.push(n);
                } else {
                    class_literal(out, n);
                }
            }
            '-' if !empty && chars.get(i + 1).is_some_and(|&n| n != ']') => out.push('-'),
            c => class_literal(out, c),
        }
        empty = false;
        i += 1;
    }
    Err(format!("expected ']' at position {}", chars.len()))
}

fn class_literal(out: &mut String, c: char) {
    if matches!(c, '[' | ']' | '\\' | '^' | '-' | '&' | '~') {
        out.push('\\');
    }
    out.push(c);
}

/// `<n-m>`: any decimal integer in the interval, as an alternation.
fn numeric_interval(body: &str) -> Result<String, String> {
    let bad = || format!("interval syntax error: <{body}>");
    let (a, b) = body.split_once('-').ok_or_else(bad)?;
    let lo: u64 = a.parse().map_err(|_| bad())?;
    let hi: u64 = b.parse().map_err(|_| bad())?;
    let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
    if hi - lo > 10_000 {
        return Err(format!("numeric interval <{body}> is too large"));
    }
    let alts: Vec<String> = (lo..=hi).map(|n| n.to_string()).collect();
    Ok(format!("(?:{})", alts.join("|")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(re: &str, s: &str) -> bool {
        regex::Regex::new(&format!("^(?:{re})$"))
            .unwrap()
            .is_match(s)
    }

    #[test]
    fn wildcards() {
        let re = wildcard_to_regex("ki*y", false);
        assert!(matches(&re, "kimchy"));
        assert!(matches(&re, "kiy"));
        assert!(!matches(&re, "kimch"));
        let re = wildcard_to_regex("k?y.+", false);
        assert!(matches(&re, "key.+"));
        assert!(!matches(&re, "key.."));
        let re = wildcard_to_regex("a\\*b*", false);
        assert!(matches(&re, "a*bc"));
        assert!(!matches(&re, "axbc"));
        assert!(matches(&wildcard_to_regex("KI*", true), "kimchy"));
        assert_eq!(wildcard_literal("a\\*b"), Some("a*b".to_string()));
        assert_eq!(wildcard_literal("a*b"), None);
        assert_eq!(wildcard_prefix("abc*"), Some("abc".to_string()));
        assert_eq!(wildcard_prefix("a?c*"), None);
        assert_eq!(wildcard_prefix("abc\\*"), None);
    }

    #[test]
    fn lucene_regexps() {
        let t = |p: &str| lucene_to_regex(p, false).unwrap();
        assert!(matches(&t("joh?n(ath[oa]n)"), "jonathon"));
        assert!(matches(&t("ab{2,3}c"), "abbc"));
        assert!(matches(&t("[^a-c]x"), "dx"));
        assert!(!matches(&t("[^a-c]x"), "bx"));
        assert!(matches(&t("a\"+.\"b"), "a+.b"));
        assert!(matches(&t("a@"), "anything"));
        assert!(matches(&t("foo<1-100>"), "foo42"));
        assert!(!matches(&t("foo<1-100>"), "foo420"));
        assert!(matches(&t("a^b$"), "a^b$"));
        assert!(matches(&t("x\\.y"), "x.y"));
        assert!(!matches(&t("x\\.y"), "xzy"));
        assert!(matches(&t("[a\\-z]"), "-"));
        assert!(matches(&t("\\d+"), "123"));
        assert!(matches(&lucene_to_regex("ABC.*", true).unwrap(), "abcdef"));
        assert!(lucene_to_regex("a~b", false).is_err());
        assert!(lucene_to_regex("[ab", false).is_err());
        assert!(lucene_to_regex("a{x}", false).is_err());
    }
}
