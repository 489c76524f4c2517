//! Development aid: reads `CHAR_FILTERS;TOKENIZER[:MAX];FILTERS<TAB>TEXT` lines on stdin and
//! prints the tokens as `[["term",start,end,"type",position],...]`, the format of
//! `tools/Oracle.java`, so Lode's output can be diffed against Lucene's.
//! Filters: `lowercase`, `uppercase`, `asciifolding[:preserve]`, `stop`, `length:MIN:MAX`,
//! `trim`, `truncate:N`. In TEXT, `\n`, `\t` and `\uXXXX` are unescaped.

use std::io::{BufRead, Write};

use lode_analysis::AnalysisRegistry;
use serde_json::{json, Value};

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let unit = u32::from_str_radix(&hex, 16).expect("hex escape");
                out.push(char::from_u32(unit).unwrap_or('\u{fffd}'));
            }
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

fn main() {
    let registry = AnalysisRegistry::new(None).expect("builtins");
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line.expect("stdin");
        let Some((spec, text)) = line.split_once('\t') else {
            continue;
        };
        let parts: Vec<&str> = spec.split(';').collect();
        let char_filters: Vec<Value> = parts[0]
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| json!(s))
            .collect();
        let mut tk = parts[1].split(':');
        let tk_name = tk.next().unwrap_or("standard");
        let tokenizer = match tk.next() {
            Some(max) => json!({"type": tk_name, "max_token_length": max.parse::<u64>().unwrap()}),
            None => json!(tk_name),
        };
        let filters: Vec<Value> = parts
            .get(2)
            .unwrap_or(&"")
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|f| {
                let p: Vec<&str> = f.split(':').collect();
                match p[0] {
                    "asciifolding" if p.len() > 1 => json!({"type": "asciifolding", "preserve_original": true}),
                    "length" => json!({"type": "length", "min": p[1].parse::<u64>().unwrap(), "max": p[2].parse::<u64>().unwrap()}),
                    "truncate" => json!({"type": "truncate", "length": p[1].parse::<u64>().unwrap()}),
                    name => json!(name),
                }
            })
            .collect();
        let analyzer = registry
            .build_custom(&tokenizer, &filters, &char_filters)
            .expect("valid spec");
        let tokens: Vec<Value> = analyzer
            .analyze(&unescape(text))
            .into_iter()
            .map(|t| {
                json!([
                    t.token,
                    t.start_offset,
                    t.end_offset,
                    t.token_type,
                    t.position
                ])
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string(&tokens).unwrap()).unwrap();
    }
}
