//! The `mapping` char filter: replaces every occurrence of a key with its value, preferring
//! the longest key at each position (Lucene's `MappingCharFilter`).

use std::collections::HashMap;

use serde_json::Value;

use super::OffsetMap;
use crate::error::{illegal, AnalysisError};

#[derive(Debug, Clone, Default)]
pub(crate) struct MappingTable {
    /// Rules by the key's first char, longest key first.
    by_first: HashMap<char, Vec<(String, String)>>,
}

impl MappingTable {
    /// Parses Elasticsearch `mappings` rules such as `"ph => f"` or `"\\u0660 => 0"`.
    pub(crate) fn parse(rules: &[Value]) -> Result<Self, AnalysisError> {
        let mut table = MappingTable::default();
        for rule in rules {
            let rule = rule
                .as_str()
                .ok_or_else(|| illegal(format!("Invalid Mapping Rule : [{rule}]")))?;
            let (key, value) = rule
                .split_once("=>")
                .ok_or_else(|| illegal(format!("Invalid Mapping Rule : [{rule}]")))?;
            let key = unescape(key.trim());
            let value = unescape(value.trim());
            let Some(first) = key.chars().next() else {
                return Err(illegal(format!("Invalid Mapping Rule : [{rule}]")));
            };
            let rules = table.by_first.entry(first).or_default();
            rules.retain(|(k, _)| *k != key);
            rules.push((key, value));
            rules.sort_by_key(|rule| std::cmp::Reverse(rule.0.len()));
        }
        Ok(table)
    }

    pub(crate) fn apply(&self, input: &str, out: &mut String, map: &mut OffsetMap) {
        let mut i = 0;
        while let Some(c) = input[i..].chars().next() {
            let hit = self.by_first.get(&c).and_then(|rules| {
                rules
                    .iter()
                    .find(|(k, _)| input[i..].starts_with(k.as_str()))
            });
            match hit {
                Some((key, value)) => {
                    let out_start = out.len();
                    out.push_str(value);
                    i += key.len();
                    if key != value {
                        // Offsets inside the replacement map to the end of the key, so a
                        // token never starts or ends in the middle of the original text.
                        for (b, _) in value.char_indices().skip(1) {
                            map.add(out_start + b, i);
                        }
                        map.add(out.len(), i);
                    }
                }
                None => {
                    out.push(c);
                    i += c.len_utf8();
                }
            }
        }
    }
}

/// Elasticsearch's escapes in mapping rules: `\\`, `\n`, `\t`, `\r`, `\b`, `\f`, `\uXXXX`.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(ch) => out.push(ch),
                    None => {
                        out.push_str("\\u");
                        out.push_str(&hex);
                    }
                }
            }
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn longest_key_wins_and_offsets_map_back() {
        let table =
            MappingTable::parse(&[json!("ph => f"), json!("p => b"), json!(":) => _happy_")])
                .unwrap();
        let mut out = String::new();
        let mut map = OffsetMap::default();
        table.apply("phone pop :)", &mut out, &mut map);
        assert_eq!(out, "fone bob _happy_");
        assert_eq!(map.correct(1), 2); // after "f" = after "ph"
        assert_eq!(map.correct(4), 5);
    }

    #[test]
    fn longer_and_multibyte_replacements_map_inside_to_key_end() {
        let table = MappingTable::parse(&[json!("& => and or"), json!("ü => ue")]).unwrap();
        let mut out = String::new();
        let mut map = OffsetMap::default();
        table.apply("x&yü", &mut out, &mut map);
        assert_eq!(out, "xand oryue");
        assert_eq!(map.correct(1), 1); // start of "and"
        assert_eq!(map.correct(4), 2); // inside the replacement: end of "&"
        assert_eq!(map.correct(8), 3); // "y" ends at 3
        assert_eq!(map.correct(9), 5); // inside "ue": end of "ü" (2 bytes)
        assert_eq!(map.correct(10), 5);
    }

    #[test]
    fn unicode_escapes() {
        let table = MappingTable::parse(&[json!("\\u0660 => 0")]).unwrap();
        let mut out = String::new();
        table.apply("٠1", &mut out, &mut OffsetMap::default());
        assert_eq!(out, "01");
    }

    #[test]
    fn invalid_rule() {
        let err = MappingTable::parse(&[json!("nope")]).unwrap_err();
        assert_eq!(err.reason, "Invalid Mapping Rule : [nope]");
    }
}
