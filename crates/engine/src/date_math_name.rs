//! Date math index names (`<logstash-{now/d}>`, `<logs-{now/M{uuuu.MM}}>`,
//! `<logs-{now/d{uuuu.MM.dd|+12:00}}>`), resolved as Elasticsearch's
//! `IndexNameExpressionResolver.DateMathExpressionResolver` does: static text is kept,
//! each `{math{format|time_zone}}` section becomes the formatted date, `\` escapes a brace.

use crate::error::{EsError, EsResult};
use lode_dates::{parse_date_math, DateFormat, Tz};
use std::borrow::Cow;

const DEFAULT_FORMAT: &str = "uuuu.MM.dd";

fn parse_error(reason: String) -> EsError {
    EsError::bad_request("parse_exception", reason)
}

/// The index name an expression stands for: itself unless it is `<...>`.
pub fn resolve(expr: &str, now: i64) -> EsResult<Cow<'_, str>> {
    match expr.strip_prefix('<').and_then(|e| e.strip_suffix('>')) {
        Some(inner) => resolve_inner(expr, inner, now).map(Cow::Owned),
        None => Ok(Cow::Borrowed(expr)),
    }
}

fn resolve_inner(whole: &str, inner: &str, now: i64) -> EsResult<String> {
    let invalid =
        |why: String| parse_error(format!("invalid dynamic name expression [{inner}]. {why}"));
    let chars: Vec<char> = inner.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' if i + 1 < chars.len() => {
                out.push(chars[i + 1]);
                i += 2;
                continue;
            }
            '}' => {
                return Err(invalid(format!(
                    "invalid character at position [{i}]. `{{` and `}}` are reserved characters and should be escaped when used as part of the index name using `\\` (e.g. `\\{{text\\}}`)"
                )))
            }
            '{' => {}
            _ => {
                out.push(c);
                i += 1;
                continue;
            }
        }
        // A `{math{format|tz}}` section: the math up to `{` or `}`, then an optional pattern.
        let start = i + 1;
        let mut j = start;
        let mut math = String::new();
        let mut pattern: Option<String> = None;
        let mut closed = false;
        while j < chars.len() {
            match chars[j] {
                '\\' if j + 1 < chars.len() => {
                    math.push(chars[j + 1]);
                    j += 2;
                }
                '{' => {
                    let mut p = String::new();
                    j += 1;
                    let mut done = false;
                    while j < chars.len() {
                        match chars[j] {
                            '\\' if j + 1 < chars.len() => {
                                p.push(chars[j + 1]);
                                j += 2;
                            }
                            '}' => {
                                done = true;
                                j += 1;
                                break;
                            }
                            '{' => {
                                return Err(invalid(
                                    "nested `{` is not allowed in date math format".into(),
                                ))
                            }
                            ch => {
                                p.push(ch);
                                j += 1;
                            }
                        }
                    }
                    if !done {
                        return Err(invalid("missing closing `}` for date math format".into()));
                    }
                    if p.is_empty() {
                        return Err(invalid("missing date format".into()));
                    }
                    pattern = Some(p);
                }
                '}' => {
                    closed = true;
                    j += 1;
                    break;
                }
                ch => {
                    if pattern.is_some() {
                        return Err(invalid(format!(
                            "invalid character in placeholder at position [{j}]"
                        )));
                    }
                    math.push(ch);
                    j += 1;
                }
            }
        }
        if !closed {
            return Err(invalid("date math placeholder is open ended".to_string()));
        }
        if math.is_empty() {
            return Err(invalid("missing date math expression".to_string()));
        }
        let (format, tz) = match pattern.as_deref() {
            None => (DEFAULT_FORMAT, None),
            Some(p) => match p.split_once('|') {
                Some((f, tz)) => (f, Some(tz)),
                None => (p, None),
            },
        };
        let tz = match tz {
            Some(tz) => Tz::parse(tz).map_err(|e| parse_error(e.to_string()))?,
            None => Tz::utc(),
        };
        let format = DateFormat::parse(if format.is_empty() {
            DEFAULT_FORMAT
        } else {
            format
        })
        .map_err(|e| parse_error(format!("invalid date format in [{whole}]: {e}")))?;
        let millis = parse_date_math(&math, now, &format, &tz, false)
            .map_err(|e| parse_error(format!("failed to parse date field [{math}]: {e}")))?;
        out.push_str(&format.format_millis(millis, &tz));
        i = j;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // 2024-03-22T10:15:30Z
    const NOW: i64 = 1_711_102_530_000;

    #[test]
    fn plain_names_are_kept() {
        assert_eq!(resolve("logs", NOW).unwrap(), "logs");
        assert_eq!(resolve("<logs", NOW).unwrap(), "<logs");
    }

    #[test]
    fn date_math_sections_become_formatted_dates() {
        assert_eq!(
            resolve("<logstash-{now/d}>", NOW).unwrap(),
            "logstash-2024.03.22"
        );
        assert_eq!(
            resolve("<logstash-{now/M}>", NOW).unwrap(),
            "logstash-2024.03.01"
        );
        assert_eq!(
            resolve("<logstash-{now/M{uuuu.MM}}>", NOW).unwrap(),
            "logstash-2024.03"
        );
        assert_eq!(
            resolve("<logstash-{now-1d/d}>", NOW).unwrap(),
            "logstash-2024.03.21"
        );
        assert_eq!(
            resolve("<logstash-{now/d{uuuu.MM.dd|+12:00}}>", NOW).unwrap(),
            "logstash-2024.03.22"
        );
        assert_eq!(
            resolve("<logstash-{now{uuuu.MM.dd.HH|-11:00}}>", NOW).unwrap(),
            "logstash-2024.03.21.23"
        );
        assert_eq!(
            resolve("<elastic\\{ON\\}-{now/M}>", NOW).unwrap(),
            "elastic{ON}-2024.03.01"
        );
    }

    #[test]
    fn malformed_sections_are_parse_errors() {
        for bad in ["<a-{now/d>", "<a}>", "<a-{}>", "<a-{now/d{}}>"] {
            let e = resolve(bad, NOW).unwrap_err();
            assert_eq!(e.kind, "parse_exception", "{bad}");
        }
    }
}
