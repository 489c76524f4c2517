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
    /// When set, the `root_cause` differs from the error itself (e.g. a search phase failure).
    pub root_cause: Option<Box<EsError>>,
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
            root_cause: None,
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
        self.root_cause = Some(Box::new(cause));
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

    /// The `error` object as ES renders it, with `root_cause`.
    pub fn to_error_json(&self) -> Value {
        let root = match &self.root_cause {
            Some(r) => r.to_cause_json(),
            None => {
                let mut own = self.to_cause_json();
                if let Some(o) = own.as_object_mut() {
                    o.remove("caused_by");
                }
                own
            }
        };
        let mut body = self.to_cause_json();
        let obj = body.as_object_mut().unwrap();
        let mut out = Map::new();
        out.insert("root_cause".into(), json!([root]));
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
