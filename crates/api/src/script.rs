//! A small interpreter for the Painless statements update scripts use most:
//! `ctx._source.f = expr`, `+=`, `-=`, `++`, `ctx._source.remove('f')`, `ctx.op = 'noop'|'delete'`,
//! with `params.x`, literals and `ctx._source.x` in expressions. Anything else answers
//! `script_exception` (400) instead of guessing.

use lode_engine::{EsError, EsResult};
use serde_json::{Map, Value};

#[derive(Debug, PartialEq, Eq)]
pub enum ScriptOp {
    Index,
    Noop,
    Delete,
}

fn script_error(src: &str, why: &str) -> EsError {
    EsError::bad_request("script_exception", format!("compile error: {why}"))
        .with(
            "script_stack",
            Value::Array(vec![Value::String(src.to_string())]),
        )
        .with("script", src.to_string())
        .with("lang", "painless")
}

/// Runs an update script against `source` (the document's `ctx._source`).
pub fn apply_update_script(script: &Value, source: &mut Value) -> EsResult<ScriptOp> {
    let (src, params) = match script {
        Value::String(s) => (s.clone(), Map::new()),
        Value::Object(o) => (
            o.get("source")
                .or(o.get("inline"))
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_string(),
            o.get("params")
                .and_then(|p| p.as_object())
                .cloned()
                .unwrap_or_default(),
        ),
        _ => return Err(script_error("", "script must be a string or an object")),
    };
    let mut op = ScriptOp::Index;
    for stmt in split_statements(&src) {
        let stmt = stmt.trim();
        if stmt.is_empty() {
            continue;
        }
        if let Some(rest) = stmt.strip_prefix("ctx.op") {
            let v = eval(
                rest.trim().trim_start_matches('=').trim(),
                source,
                &params,
                &src,
            )?;
            op = match v.as_str() {
                Some("noop") | Some("none") => ScriptOp::Noop,
                Some("delete") => ScriptOp::Delete,
                _ => ScriptOp::Index,
            };
            continue;
        }
        let Some(rest) = stmt.strip_prefix("ctx._source") else {
            return Err(script_error(
                &src,
                &format!("unsupported statement [{stmt}]"),
            ));
        };
        if let Some(arg) = rest
            .strip_prefix(".remove(")
            .and_then(|r| r.strip_suffix(')'))
        {
            let key = eval(arg, source, &params, &src)?;
            if let (Some(k), Some(o)) = (key.as_str(), source.as_object_mut()) {
                o.remove(k);
            }
            continue;
        }
        let (path, operator, rhs) = split_assignment(rest)
            .ok_or_else(|| script_error(&src, &format!("unsupported statement [{stmt}]")))?;
        let path: Vec<String> = parse_path(path);
        let current = get_path(source, &path).cloned().unwrap_or(Value::Null);
        let value = match operator {
            "=" => eval(rhs, source, &params, &src)?,
            "++" => arith(&current, &Value::from(1), '+'),
            "--" => arith(&current, &Value::from(1), '-'),
            "+=" => arith(&current, &eval(rhs, source, &params, &src)?, '+'),
            "-=" => arith(&current, &eval(rhs, source, &params, &src)?, '-'),
            _ => return Err(script_error(&src, "unsupported operator")),
        };
        set_path(source, &path, value);
    }
    Ok(op)
}

fn split_statements(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    for c in src.chars() {
        match (quote, c) {
            (None, '\'') | (None, '"') => {
                quote = Some(c);
                cur.push(c);
            }
            (Some(q), c) if c == q => {
                quote = None;
                cur.push(c);
            }
            (None, ';') => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn split_assignment(rest: &str) -> Option<(&str, &'static str, &str)> {
    let rest = rest.trim();
    if let Some(p) = rest.strip_suffix("++") {
        return Some((p, "++", ""));
    }
    if let Some(p) = rest.strip_suffix("--") {
        return Some((p, "--", ""));
    }
    for op in ["+=", "-="] {
        if let Some(i) = rest.find(op) {
            return Some((
                &rest[..i],
                if op == "+=" { "+=" } else { "-=" },
                &rest[i + 2..],
            ));
        }
    }
    let i = rest.find('=')?;
    Some((&rest[..i], "=", &rest[i + 1..]))
}

fn parse_path(p: &str) -> Vec<String> {
    let mut out = Vec::new();
    let p = p.trim();
    let mut rest = p;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            out.push(r[..end].to_string());
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']').unwrap_or(r.len());
            out.push(
                r[..end]
                    .trim()
                    .trim_matches(|c| c == '\'' || c == '"')
                    .to_string(),
            );
            rest = r.get(end + 1..).unwrap_or("");
        } else {
            break;
        }
    }
    out
}

fn get_path<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    Some(cur)
}

fn set_path(v: &mut Value, path: &[String], value: Value) {
    let mut cur = v;
    for (i, p) in path.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let obj = cur.as_object_mut().unwrap();
        if i == path.len() - 1 {
            obj.insert(p.clone(), value);
            return;
        }
        cur = obj
            .entry(p.clone())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

fn arith(a: &Value, b: &Value, op: char) -> Value {
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return Value::from(if op == '+' { x + y } else { x - y });
    }
    if let (Some(x), Some(y)) = (a.as_f64(), b.as_f64()) {
        return serde_json::Number::from_f64(if op == '+' { x + y } else { x - y })
            .map(Value::Number)
            .unwrap_or(Value::Null);
    }
    if op == '+' {
        let s = |v: &Value| match v {
            Value::String(s) => s.clone(),
            Value::Null => "null".into(),
            o => o.to_string(),
        };
        return Value::String(s(a) + &s(b));
    }
    Value::Null
}

fn eval(expr: &str, source: &Value, params: &Map<String, Value>, src: &str) -> EsResult<Value> {
    let e = expr.trim();
    for op in [" + ", " - "] {
        if let Some(i) = e.rfind(op) {
            let l = eval(&e[..i], source, params, src)?;
            let r = eval(&e[i + 3..], source, params, src)?;
            return Ok(arith(&l, &r, op.trim().chars().next().unwrap()));
        }
    }
    if (e.starts_with('\'') && e.ends_with('\'') || e.starts_with('"') && e.ends_with('"'))
        && e.len() >= 2
    {
        return Ok(Value::String(e[1..e.len() - 1].to_string()));
    }
    if let Some(p) = e.strip_prefix("params") {
        return Ok(get_path(&Value::Object(params.clone()), &parse_path(p))
            .cloned()
            .unwrap_or(Value::Null));
    }
    if let Some(p) = e.strip_prefix("ctx._source") {
        return Ok(get_path(source, &parse_path(p))
            .cloned()
            .unwrap_or(Value::Null));
    }
    match e {
        "true" => return Ok(Value::Bool(true)),
        "false" => return Ok(Value::Bool(false)),
        "null" => return Ok(Value::Null),
        _ => {}
    }
    if let Ok(i) = e.parse::<i64>() {
        return Ok(Value::from(i));
    }
    if let Ok(f) = e.trim_end_matches(['d', 'f']).parse::<f64>() {
        return Ok(serde_json::json!(f));
    }
    serde_json::from_str(e).map_err(|_| script_error(src, &format!("cannot evaluate [{e}]")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn common_update_scripts() {
        let mut doc = json!({"count": 1, "tags": "a"});
        let op = apply_update_script(&json!({"source": "ctx._source.count += params.n; ctx._source.x = 'y'", "params": {"n": 4}}), &mut doc).unwrap();
        assert_eq!(op, ScriptOp::Index);
        assert_eq!(doc, json!({"count": 5, "tags": "a", "x": "y"}));
        apply_update_script(
            &json!("ctx._source.remove('tags'); ctx._source.count++"),
            &mut doc,
        )
        .unwrap();
        assert_eq!(doc, json!({"count": 6, "x": "y"}));
        assert_eq!(
            apply_update_script(&json!("ctx.op = 'delete'"), &mut doc).unwrap(),
            ScriptOp::Delete
        );
        assert!(apply_update_script(&json!("for (x in y) {}"), &mut doc).is_err());
    }
}
