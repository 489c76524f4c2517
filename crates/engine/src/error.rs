//! The one error type every layer returns: it knows its Elasticsearch `type` and HTTP status,
//! so the HTTP layer renders it once, at the boundary.

use serde_json::{json, Map, Value};
use std::fmt;

/// An Elasticsearch-shaped failure: `{"error":{"root_cause":[..],"type":..,"reason":..},"status":N}`.
#[derive(Debug, Clone)]
pub struct EsError {
    pub status: u16,
    pub kind: String,
    pub reason: String,
    /// Extra keys ES puts beside `type` and `reason` (`index`, `index_uuid`, `resource.id`, ...).
    pub extra: Map<String, Value>,
    pub caused_by: Option<Box<EsError>>,
    /// When not empty, the `root_cause` entries differ from the error itself (e.g. a search
    /// phase failure: one per group of shard failures, as ES's `guessRootCauses`).
    pub root_causes: Vec<EsError>,
}

pub type EsResult<T> = Result<T, EsError>;

impl EsError {
    pub fn new(status: u16, kind: &str, reason: impl Into<String>) -> EsError {
        EsError {
            status,
            kind: kind.to_string(),
            reason: reason.into(),
            extra: Map::new(),
            caused_by: None,
            root_causes: Vec::new(),
        }
    }

    pub fn bad_request(kind: &str, reason: impl Into<String>) -> EsError {
        EsError::new(400, kind, reason)
    }

    pub fn illegal_argument(reason: impl Into<String>) -> EsError {
        EsError::new(400, "illegal_argument_exception", reason)
    }

    pub fn parsing(reason: impl Into<String>) -> EsError {
        EsError::new(400, "parsing_exception", reason)
    }

    pub fn x_content_parse(reason: impl Into<String>) -> EsError {
        EsError::new(400, "x_content_parse_exception", reason)
    }

    /// An `ObjectParser`'s unknown key, as ES's `SuggestingErrorOnUnknown` words it:
    /// `x_content_parse_exception` "[parser] unknown field [key] did you mean [k]?", the
    /// suggestions being the parser's declared `fields` close to `key` (see [`did_you_mean`]).
    pub fn unknown_field(parser: &str, key: &str, fields: &[&str]) -> EsError {
        EsError::x_content_parse(format!(
            "[{parser}] unknown field [{key}]{}",
            did_you_mean(key, fields)
        ))
    }

    pub fn internal(reason: impl Into<String>) -> EsError {
        EsError::new(500, "exception", reason)
    }

    pub fn index_not_found(index: &str) -> EsError {
        EsError::new(
            404,
            "index_not_found_exception",
            "no such index [".to_string() + index + "]",
        )
        .with("resource.type", "index_or_alias")
        .with("resource.id", index)
        .with("index_uuid", "_na_")
        .with("index", index)
    }

    /// ES's `NoShardAvailableActionException` (503): no started copy of a shard to read from.
    pub fn no_shard_available(reason: impl Into<String>) -> EsError {
        EsError::new(503, "no_shard_available_action_exception", reason)
    }

    pub fn index_closed(index: &str, uuid: &str) -> EsError {
        EsError::new(400, "index_closed_exception", "closed")
            .with("index_uuid", uuid)
            .with("index", index)
    }

    pub fn version_conflict(
        index: &str,
        uuid: &str,
        shard: usize,
        id: &str,
        reason: String,
    ) -> EsError {
        EsError::new(
            409,
            "version_conflict_engine_exception",
            format!("[{id}]: {reason}"),
        )
        .with("index_uuid", uuid)
        .with("shard", shard.to_string())
        .with("index", index)
    }

    pub fn with_reason(mut self, reason: impl Into<String>) -> EsError {
        self.reason = reason.into();
        self
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> EsError {
        self.extra.insert(key.to_string(), value.into());
        self
    }

    pub fn caused_by(mut self, cause: EsError) -> EsError {
        self.caused_by = Some(Box::new(cause));
        self
    }

    pub fn with_root_cause(mut self, cause: EsError) -> EsError {
        self.root_causes = vec![cause];
        self
    }

    /// The inner object (`type`, `reason`, extras, `caused_by`), without `root_cause`.
    pub fn to_cause_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), Value::String(self.kind.clone()));
        m.insert("reason".into(), Value::String(self.reason.clone()));
        for (k, v) in &self.extra {
            m.insert(k.clone(), v.clone());
        }
        if let Some(c) = &self.caused_by {
            m.insert("caused_by".into(), c.to_cause_json());
        }
        Value::Object(m)
    }

    /// A `root_cause` entry: the error without its cause, as ES renders root causes with
    /// `rest.exception.cause.skip` (`ElasticsearchException#generateFailureXContent`).
    fn to_root_json(&self) -> Value {
        let mut own = self.to_cause_json();
        if let Some(o) = own.as_object_mut() {
            o.remove("caused_by");
        }
        own
    }

    /// The `error` object as ES renders it, with `root_cause`.
    pub fn to_error_json(&self) -> Value {
        let roots: Vec<Value> = if self.root_causes.is_empty() {
            vec![self.to_root_json()]
        } else {
            self.root_causes.iter().map(EsError::to_root_json).collect()
        };
        let mut body = self.to_cause_json();
        let obj = body.as_object_mut().unwrap();
        let mut out = Map::new();
        out.insert("root_cause".into(), Value::Array(roots));
        for (k, v) in std::mem::take(obj) {
            out.insert(k, v);
        }
        Value::Object(out)
    }

    /// The full response body: `{"error":{..},"status":N}`.
    pub fn to_response_json(&self) -> Value {
        json!({"error": self.to_error_json(), "status": self.status})
    }
}

impl fmt::Display for EsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.reason)
    }
}

impl std::error::Error for EsError {}

impl From<tantivy::TantivyError> for EsError {
    fn from(e: tantivy::TantivyError) -> Self {
        EsError::internal(format!("engine failure: {e}"))
    }
}

impl From<std::io::Error> for EsError {
    fn from(e: std::io::Error) -> Self {
        EsError::internal(format!("io failure: {e}"))
    }
}

/// ES's `SuggestingErrorOnUnknown#suggest`: the candidates whose Lucene Levenshtein
/// similarity to `unknown` is above 0.5, most similar first (then by name), as
/// `" did you mean [a]?"` or `" did you mean any of [a, b]?"`; empty when none is close.
pub fn did_you_mean(unknown: &str, candidates: &[&str]) -> String {
    let mut scored: Vec<(f32, &str)> = candidates
        .iter()
        .map(|c| (similarity(unknown, c), *c))
        .filter(|(s, _)| *s > 0.5)
        .collect();
    scored.sort_by(|a, b| {
        b.0.partial_cmp(&a.0)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.1.cmp(b.1))
    });
    scored.dedup_by(|a, b| a.1 == b.1);
    match scored.as_slice() {
        [] => String::new(),
        [(_, one)] => format!(" did you mean [{one}]?"),
        many => format!(
            " did you mean any of [{}]?",
            many.iter().map(|s| s.1).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Lucene's `LevenshteinDistance#getDistance`: 1 - edits / max(length), over characters.
pub fn similarity(a: &str, b: &str) -> f32 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.is_empty() || b.is_empty() {
        return if a == b { 1.0 } else { 0.0 };
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    1.0 - prev[b.len()] as f32 / a.len().max(b.len()) as f32
}

#[cfg(test)]
mod did_you_mean_tests {
    use super::*;

    #[test]
    fn suggestions_as_elasticsearch_words_them() {
        // "feilds" vs "fields": 2 edits over 6 characters, similarity 0.67 > 0.5
        assert_eq!(
            did_you_mean("feilds", &["fields", "order", "type"]),
            " did you mean [fields]?"
        );
        // nothing close: no suggestion at all
        assert_eq!(did_you_mean("zzz", &["fields", "order"]), "");
        // several: most similar first, then by name
        assert_eq!(
            did_you_mean("sizes", &["size", "sizer", "from"]),
            " did you mean any of [size, sizer]?"
        );
        assert_eq!(
            did_you_mean("ab", &["abc", "abd"]),
            " did you mean any of [abc, abd]?"
        );
        let e = EsError::unknown_field("collapse", "feild", &["field", "inner_hits"]);
        assert_eq!(
            (e.status, e.kind.as_str()),
            (400, "x_content_parse_exception")
        );
        assert_eq!(
            e.reason,
            "[collapse] unknown field [feild] did you mean [field]?"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ES renders root causes with `rest.exception.cause.skip`: their own type, reason and
    /// metadata (index, resource...), never a `caused_by`; the error itself keeps its causes.
    #[test]
    fn root_causes_have_no_cause() {
        let inner = EsError::bad_request("script_exception", "runtime error")
            .with("lang", "painless")
            .caused_by(EsError::illegal_argument("boom"));
        let mut outer = EsError::new(400, "search_phase_execution_exception", "all shards failed")
            .caused_by(inner.clone());
        let plain =
            EsError::new(404, "index_not_found_exception", "no such index [x]").with("index", "x");
        outer.root_causes = vec![inner.clone(), plain];
        let body = outer.to_response_json();
        assert_eq!(
            body["error"]["root_cause"],
            json!([{"type": "script_exception", "reason": "runtime error", "lang": "painless"},
                   {"type": "index_not_found_exception", "reason": "no such index [x]", "index": "x"}])
        );
        assert_eq!(body["error"]["caused_by"]["caused_by"]["reason"], "boom");
        // without explicit root causes, the error is its own root cause, without its cause
        let own = inner.to_response_json();
        assert_eq!(
            own["error"]["root_cause"],
            json!([{"type": "script_exception", "reason": "runtime error", "lang": "painless"}])
        );
        assert_eq!(
            own["error"]["caused_by"]["type"],
            "illegal_argument_exception"
        );
    }
}
