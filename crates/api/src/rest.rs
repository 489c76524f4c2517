//! The request and response types every API handler speaks: a routed REST request with its
//! path and query parameters and raw body, and a response of status plus JSON or text.

use lode_engine::{EsError, EsResult};
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Post,
    Put,
    Delete,
}

#[derive(Debug)]
pub struct RestRequest {
    pub method: Method,
    pub path: String,
    /// Query-string parameters.
    pub params: BTreeMap<String, String>,
    pub body: Vec<u8>,
    /// Document-level security, set by the security gate for a subject whose roles restrict
    /// documents (`None`: every document may be read).
    pub doc_security: Option<DocSecurity>,
    /// Field-level security, set by the security gate for a subject whose roles restrict
    /// fields (`None`: every field may be read).
    pub field_security: Option<FieldSecurity>,
    /// With security enabled, whether the request's subject holds an index action on an index
    /// or alias name, for the APIs that filter what they list (`_cat/aliases`).
    pub authorized: Option<IndexAuthorization>,
}

/// Action and index (or alias) name → whether the subject holds the action on it, with the
/// subject's 403 for an action it does not hold.
#[derive(Clone)]
pub struct IndexAuthorization(
    pub std::sync::Arc<IndexAuthorizationFn>,
    pub std::sync::Arc<IndexDeniedFn>,
);

/// Action and index (or alias) name → whether the subject holds the action on it.
pub type IndexAuthorizationFn = dyn Fn(&str, &str) -> bool + Send + Sync;

/// Action and the names it was refused on → ES's 403 `security_exception` for the subject.
pub type IndexDeniedFn = dyn Fn(&str, &[String]) -> EsError + Send + Sync;

impl IndexAuthorization {
    pub fn allows(&self, action: &str, name: &str) -> bool {
        (self.0)(action, name)
    }

    /// The subject's 403 unless it holds `action` on `name`, for the requests a handler
    /// makes on the subject's behalf (a `terms` lookup's get).
    pub fn require(&self, action: &str, name: &str) -> EsResult<()> {
        if self.allows(action, name) {
            Ok(())
        } else {
            Err((self.1)(action, &[name.to_string()]))
        }
    }
}

impl std::fmt::Debug for IndexAuthorization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IndexAuthorization")
    }
}

/// Document-level security (ES's role `query`): for a concrete index and the aliases a
/// request reached it through, the query its documents must match to be seen (`None`: no
/// restriction on that index). Searches, counts, aggregations and by-query requests combine
/// it as a filter, as the alias filters; gets answer a hidden document as missing.
#[derive(Clone)]
pub struct DocSecurity(pub std::sync::Arc<DocFilterFn>);

/// Index name and the aliases it was reached through → the role query its documents must match.
pub type DocFilterFn = dyn Fn(&str, &[String]) -> Option<Value> + Send + Sync;

impl DocSecurity {
    pub fn filter(&self, index: &str, aliases: &[String]) -> Option<Value> {
        (self.0)(index, aliases)
    }
}

/// Field-level security (ES's role `field_security`): for a concrete index and the aliases a
/// request reached it through, the fields the subject may read (`None`: every field).
/// Searches plan against the mapping without the other fields and filter `_source`; gets
/// filter `_source` and stored fields.
#[derive(Clone)]
pub struct FieldSecurity(pub std::sync::Arc<FieldPermissionsFn>);

/// Action, index name and the aliases it was reached through → the fields the subject may
/// read (ES computes them from the role entries that grant the action).
pub type FieldPermissionsFn = dyn Fn(&str, &str, &[String]) -> Option<lode_engine::field_security::FieldPermissions>
    + Send
    + Sync;

impl FieldSecurity {
    /// For reading documents (search, get).
    pub fn permissions(
        &self,
        index: &str,
        aliases: &[String],
    ) -> Option<lode_engine::field_security::FieldPermissions> {
        (self.0)("indices:data/read/search", index, aliases)
    }

    /// For another action (`indices:admin/mappings/get`, ...).
    pub fn permissions_for(
        &self,
        action: &str,
        index: &str,
    ) -> Option<lode_engine::field_security::FieldPermissions> {
        (self.0)(action, index, &[])
    }
}

impl std::fmt::Debug for FieldSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FieldSecurity")
    }
}

impl std::fmt::Debug for DocSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DocSecurity")
    }
}

#[derive(Debug)]
pub enum RestBody {
    Json(Value),
    /// A JSON body already serialized (compact): large responses built item by item skip the
    /// `Value` tree. Rendered as is unless `pretty` or `filter_path` needs the tree.
    JsonBytes(Vec<u8>),
    Text(String),
    Empty,
}

#[derive(Debug)]
pub struct RestResponse {
    pub status: u16,
    pub body: RestBody,
}

impl RestResponse {
    pub fn ok(v: Value) -> RestResponse {
        RestResponse {
            status: 200,
            body: RestBody::Json(v),
        }
    }

    pub fn json(status: u16, v: Value) -> RestResponse {
        RestResponse {
            status,
            body: RestBody::Json(v),
        }
    }

    pub fn json_bytes(status: u16, bytes: Vec<u8>) -> RestResponse {
        RestResponse {
            status,
            body: RestBody::JsonBytes(bytes),
        }
    }

    pub fn text(status: u16, t: String) -> RestResponse {
        RestResponse {
            status,
            body: RestBody::Text(t),
        }
    }

    pub fn empty(status: u16) -> RestResponse {
        RestResponse {
            status,
            body: RestBody::Empty,
        }
    }

    pub fn error(e: &EsError) -> RestResponse {
        RestResponse::json(e.status, e.to_response_json())
    }
}

impl RestRequest {
    /// A POST of `body` to `path` with no parameters and no security context (unit tests).
    #[cfg(test)]
    pub(crate) fn test_post(path: &str, body: &str) -> RestRequest {
        RestRequest {
            doc_security: None,
            field_security: None,
            authorized: None,
            method: Method::Post,
            path: path.to_string(),
            params: Default::default(),
            body: body.as_bytes().to_vec(),
        }
    }

    pub fn param(&self, k: &str) -> Option<&str> {
        self.params.get(k).map(String::as_str)
    }

    pub fn has(&self, k: &str) -> bool {
        self.params.contains_key(k)
    }

    /// A boolean parameter: absent → default; present with no value or "true" → true.
    pub fn bool_param(&self, k: &str, default: bool) -> EsResult<bool> {
        match self.param(k) {
            None => Ok(default),
            Some("") | Some("true") => Ok(true),
            Some("false") => Ok(false),
            Some(v) => Err(EsError::illegal_argument(format!(
                "Failed to parse value [{v}] as only [true] or [false] are allowed."
            ))),
        }
    }

    pub fn usize_param(&self, k: &str) -> EsResult<Option<usize>> {
        match self.param(k) {
            None => Ok(None),
            Some(v) => v.parse::<usize>().map(Some).map_err(|_| {
                EsError::illegal_argument(format!(
                    "Failed to parse int parameter [{k}] with value [{v}]"
                ))
            }),
        }
    }

    pub fn i64_param(&self, k: &str) -> EsResult<Option<i64>> {
        match self.param(k) {
            None => Ok(None),
            Some(v) => v.parse::<i64>().map(Some).map_err(|_| {
                EsError::illegal_argument(format!(
                    "Failed to parse long parameter [{k}] with value [{v}]"
                ))
            }),
        }
    }

    pub fn has_body(&self) -> bool {
        self.body.iter().any(|b| !b.is_ascii_whitespace())
    }

    /// The body as JSON, `None` when empty.
    pub fn json_body(&self) -> EsResult<Option<Value>> {
        if !self.has_body() {
            return Ok(None);
        }
        parse_json(&self.body).map(Some)
    }

    /// The body as JSON, failing as ES does when it is required.
    pub fn required_body(&self) -> EsResult<Value> {
        self.json_body()?
            .ok_or_else(|| EsError::bad_request("parse_exception", "request body is required"))
    }
}

/// Parses JSON, answering malformed input with Elasticsearch's parse error.
pub fn parse_json(bytes: &[u8]) -> EsResult<Value> {
    strict_json(bytes).map_err(|e| {
        EsError::x_content_parse(format!(
            "[{}:{}] {}",
            e.line(),
            e.column(),
            json_error_text(&e)
        ))
        .caused_by(EsError::bad_request(
            "json_parse_exception",
            json_error_text(&e),
        ))
    })
}

/// JSON → `Value` refusing duplicate keys, as Elasticsearch's parser does
/// (`JsonParser.Feature.STRICT_DUPLICATE_DETECTION`: "Duplicate field 'size'"); serde_json
/// itself keeps the last value silently.
fn strict_json(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    use serde::de::DeserializeSeed;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let v = Strict.deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

struct Strict;

impl<'de> serde::de::DeserializeSeed<'de> for Strict {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Strict)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(k) = map.next_key::<String>()? {
            // One hash per key: every field of every bulk document comes through here.
            match out.entry(k) {
                serde_json::map::Entry::Occupied(e) => {
                    return Err(serde::de::Error::custom(format!(
                        "Duplicate field '{}'",
                        e.key()
                    )));
                }
                serde_json::map::Entry::Vacant(e) => {
                    e.insert(map.next_value_seed(Strict)?);
                }
            }
        }
        Ok(Value::Object(out))
    }
}

fn json_error_text(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.find(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Comma-separated list parameter.
pub fn list_param(v: Option<&str>) -> Vec<String> {
    v.map(|s| {
        s.split(',')
            .map(|x| x.trim().to_string())
            .filter(|x| !x.is_empty())
            .collect()
    })
    .unwrap_or_default()
}

/// `_shards` header for a request that touched `n` shards successfully.
pub fn shards_header(total: usize) -> Value {
    serde_json::json!({"total": total, "successful": total, "failed": 0})
}

pub type Params = BTreeMap<String, String>;

/// Elasticsearch's "contains unrecognized metric: [x] -> did you mean [y]?" error.
pub fn unrecognized(
    req: &RestRequest,
    invalid: &[String],
    candidates: &[&str],
    what: &str,
) -> EsError {
    let mut msg = format!(
        "request [{}] contains unrecognized {}{}: ",
        req.path,
        what,
        if invalid.len() > 1 { "s" } else { "" }
    );
    for (n, bad) in invalid.iter().enumerate() {
        if n > 0 {
            msg.push_str(", ");
        }
        msg.push_str(&format!("[{bad}]"));
        let mut scored: Vec<(f32, &str)> = candidates
            .iter()
            .map(|c| (lode_engine::error::similarity(bad, c), *c))
            .filter(|(s, _)| *s > 0.5)
            .collect();
        scored.sort_by(|a, b| {
            b.0.partial_cmp(&a.0)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.1.cmp(b.1))
        });
        match scored.len() {
            0 => {}
            1 => msg.push_str(&format!(" -> did you mean [{}]?", scored[0].1)),
            _ => msg.push_str(&format!(
                " -> did you mean any of [{}]?",
                scored.iter().map(|s| s.1).collect::<Vec<_>>().join(", ")
            )),
        }
    }
    EsError::illegal_argument(msg)
}

#[cfg(test)]
mod strict_json_tests {
    use super::parse_json;
    use serde_json::json;

    #[test]
    fn duplicate_keys_are_refused_at_any_depth() {
        let e = parse_json(br#"{"size": 1, "size": 2}"#).unwrap_err();
        assert_eq!(
            (e.status, e.kind.as_str()),
            (400, "x_content_parse_exception")
        );
        assert!(e.reason.ends_with("Duplicate field 'size'"), "{}", e.reason);
        assert!(e.reason.starts_with("[1:"), "{}", e.reason);
        let e = parse_json(br#"{"q": [{"a": {"b": 1, "b": 1}}]}"#).unwrap_err();
        assert!(e.reason.ends_with("Duplicate field 'b'"), "{}", e.reason);
        // the same key in sibling objects is fine, and values parse as serde_json's own
        let v = parse_json(
            br#"{"a": {"k": 1}, "b": {"k": [1.5, -2, 18446744073709551615, null, true, "s"]}}"#,
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"a": {"k": 1}, "b": {"k": [1.5, -2, 18446744073709551615u64, null, true, "s"]}})
        );
        assert!(parse_json(b"{} x").is_err());
        assert!(parse_json(&[b'['; 10_000]).is_err());
    }
}
