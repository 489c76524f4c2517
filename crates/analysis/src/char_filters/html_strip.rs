//! The `html_strip` char filter, modelled on Lucene's `HTMLStripCharFilter`:
//! - tags are removed; block-level tags (`<p>`, `<div>`, `<br>`, `<li>`, `<td>`, ...) and
//!   whole `<script>`/`<style>` elements become a newline;
//! - comments, processing instructions and `<!DOCTYPE ...>` are removed; CDATA content is kept;
//! - HTML 4 named entities, `&apos;` and numeric references are decoded;
//! - tags listed in `escaped_tags` are left as they are.

use super::html_entities::ENTITIES;
use super::OffsetMap;

/// Lucene's list of block-level elements, replaced by a newline.
const BLOCK_LEVEL: [&str; 37] = [
    "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "fieldset",
    "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
    "hgroup", "hr", "li", "noscript", "ol", "output", "p", "pre", "section", "table", "tbody",
    "td", "tfoot", "th", "thead", "tr",
];
const BLOCK_LEVEL_EXTRA: [&str; 2] = ["ul", "video"];

#[derive(Debug, Clone, Default)]
pub(crate) struct HtmlStrip {
    /// Lowercased tag names that are kept.
    pub escaped_tags: Vec<String>,
}

fn is_block_level(name: &str) -> bool {
    BLOCK_LEVEL.contains(&name) || BLOCK_LEVEL_EXTRA.contains(&name)
}

fn find_ci(haystack: &str, from: usize, needle: &str) -> Option<usize> {
    let hay = haystack.as_bytes();
    let n = needle.as_bytes();
    (from..hay.len().saturating_sub(n.len() - 1))
        .find(|&i| hay[i..i + n.len()].eq_ignore_ascii_case(n))
}

impl HtmlStrip {
    pub(crate) fn apply(&self, input: &str, out: &mut String, map: &mut OffsetMap) {
        let bytes = input.as_bytes();
        let mut i = 0;
        // Replaces input[i..end] with `with`, recording the offset correction.
        let replace = |out: &mut String, map: &mut OffsetMap, with: &str, end: usize| {
            out.push_str(with);
            map.add(out.len(), end);
        };
        while i < input.len() {
            let Some(rel) = input[i..].find(['<', '&']) else {
                out.push_str(&input[i..]);
                break;
            };
            out.push_str(&input[i..i + rel]);
            i += rel;
            let rest = &input[i..];
            if bytes[i] == b'&' {
                match decode_entity(rest) {
                    Some((c, len)) => {
                        let mut buf = [0u8; 4];
                        replace(out, map, c.encode_utf8(&mut buf), i + len);
                        i += len;
                    }
                    None => {
                        out.push('&');
                        i += 1;
                    }
                }
                continue;
            }
            // '<'
            if rest.starts_with("<!--") {
                let end = input[i + 4..].find("-->").map_or(input.len(), |p| i + 4 + p + 3);
                replace(out, map, "", end);
                i = end;
            } else if rest.starts_with("<![CDATA[") {
                map.add(out.len(), i + 9);
                let content_end = input[i + 9..].find("]]>").map_or(input.len(), |p| i + 9 + p);
                out.push_str(&input[i + 9..content_end]);
                let end = (content_end + 3).min(input.len());
                replace(out, map, "", end);
                i = end;
            } else if rest.starts_with("<?") {
                let end = input[i + 2..].find("?>").map_or(input.len(), |p| i + 2 + p + 2);
                replace(out, map, "", end);
                i = end;
            } else if rest.starts_with("<!") {
                let end = input[i + 2..].find('>').map_or(input.len(), |p| i + 2 + p + 1);
                replace(out, map, "", end);
                i = end;
            } else if let Some(tag) = parse_tag(input, i) {
                let name = tag.name.to_ascii_lowercase();
                if self.escaped_tags.iter().any(|t| *t == name) {
                    out.push_str(&input[i..tag.end]);
                } else if !tag.closing && (name == "script" || name == "style") {
                    let close = format!("</{name}");
                    let end = find_ci(input, tag.end, &close)
                        .map(|p| input[p..].find('>').map_or(input.len(), |q| p + q + 1))
                        .unwrap_or(input.len());
                    replace(out, map, "\n", end);
                    i = end;
                    continue;
                } else if is_block_level(&name) {
                    replace(out, map, "\n", tag.end);
                } else {
                    replace(out, map, "", tag.end);
                }
                i = tag.end;
            } else {
                out.push('<');
                i += 1;
            }
        }
    }
}

struct Tag<'a> {
    name: &'a str,
    closing: bool,
    /// Byte offset just after the tag (after `>`, or the end of input if unterminated).
    end: usize,
}

/// Parses `<name ...>` / `</name>` at `start`; `None` when this `<` does not open a tag.
fn parse_tag(input: &str, start: usize) -> Option<Tag<'_>> {
    let bytes = input.as_bytes();
    let mut j = start + 1;
    let closing = bytes.get(j) == Some(&b'/');
    if closing {
        j += 1;
    }
    while j < bytes.len() && bytes[j].is_ascii_whitespace() {
        j += 1;
    }
    if !bytes.get(j).is_some_and(u8::is_ascii_alphabetic) {
        return None;
    }
    let name_start = j;
    while j < bytes.len()
        && (bytes[j].is_ascii_alphanumeric() || matches!(bytes[j], b':' | b'_' | b'-' | b'.'))
    {
        j += 1;
    }
    let name = &input[name_start..j];
    // Attributes: skip to the closing '>' outside quotes.
    let mut quote = None;
    while j < bytes.len() {
        let b = bytes[j];
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'"' || b == b'\'' => quote = Some(b),
            None if b == b'>' => {
                return Some(Tag { name, closing, end: j + 1 });
            }
            None => {}
        }
        j += 1;
    }
    Some(Tag { name, closing, end: input.len() })
}

/// Decodes `&name;`, `&#123;` or `&#x7B;` at the start of `s`: (char, byte length).
fn decode_entity(s: &str) -> Option<(char, usize)> {
    let semi = s[1..].find(';').map(|p| p + 1).filter(|&p| p <= 34)?;
    let body = &s[1..semi];
    let c = if let Some(num) = body.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse::<u32>().ok()?,
        };
        char::from_u32(code)?
    } else {
        let i = ENTITIES.binary_search_by(|(name, _)| (*name).cmp(body)).ok()?;
        match ENTITIES[i].1 {
            // Lucene decodes `&nbsp;` to a plain space.
            '\u{a0}' => ' ',
            c => c,
        }
    };
    Some((c, semi + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip(s: &str) -> String {
        let mut out = String::new();
        let mut map = OffsetMap::default();
        HtmlStrip::default().apply(s, &mut out, &mut map);
        out
    }

    #[test]
    fn strips_like_lucene() {
        // Expected values produced by Lucene 9.12's HTMLStripCharFilter.
        assert_eq!(strip("<p>I&apos;m so <b>happy</b>!</p>"), "\nI'm so happy!\n");
        assert_eq!(
            strip("<div>x</div><span>y</span><li>z</li><h1>t</h1><td>u</td><table>v</table>"),
            "\nx\ny\nz\n\nt\n\nu\n\nv\n"
        );
        assert_eq!(
            strip("a<!-- c -->b<script>var x=1;</script>c<style>p{}</style>d &amp; &lt;e&gt; &nbsp;f &#65;&#x42; &eacute; &bogus; <unclosed"),
            "ab\nc\nd & <e>  f AB é &bogus; "
        );
        assert_eq!(strip("a < b and c > d, 1<2"), "a  d, 1<2");
        assert_eq!(strip("<![CDATA[cd<x>]]> e<?pi x?>f<!DOCTYPE html>g"), "cd<x> efg");
    }

    #[test]
    fn escaped_tags_are_kept() {
        let mut out = String::new();
        let mut map = OffsetMap::default();
        let h = HtmlStrip { escaped_tags: vec!["b".into()] };
        h.apply("<p>I'm so <b>happy</b>!</p>", &mut out, &mut map);
        assert_eq!(out, "\nI'm so <b>happy</b>!\n");
    }
}
