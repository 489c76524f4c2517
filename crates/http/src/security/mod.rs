//! The security layer (ES's x-pack security), an HTTP-layer gate before routing: every request
//! is authenticated (`Authorization: Basic` against the native realm, or `ApiKey`), classified
//! into Elasticsearch's action name and the indices it names, and authorized against the
//! subject's roles before it reaches `lode-api`. Wildcards in an index expression are expanded
//! to the indices and aliases the subject may use, as ES's `IndicesAndAliasesResolver` does;
//! `_bulk`, `_mget` and `_msearch` items are checked one by one (`items.rs`). The native realm
//! APIs (`/_security/...`) are answered here (`rest.rs`). When security is disabled, the gate
//! is not installed at all.

pub mod items;
pub mod privileges;
pub mod rest;
pub mod role_mapping;
mod splice_items;
pub mod store;
pub mod tls;

use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderValue, Request, Response};
use lode_api::rest::RestResponse;
use lode_engine::node::ResolveOptions;
use lode_engine::{EsError, Node};
use parking_lot::Mutex;
use privileges::Role;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::Store;

/// Failed logins allowed per user and remote address within [`FAILURE_WINDOW`] before that
/// pair is answered 401 without checking, for [`LOCKOUT`].
pub const MAX_FAILURES: u32 = 5;
pub const FAILURE_WINDOW: Duration = Duration::from_secs(60);
pub const LOCKOUT: Duration = Duration::from_secs(30);

struct Failures {
    count: u32,
    since: Instant,
    locked_until: Option<Instant>,
}

pub struct Security {
    pub store: Store,
    pub node: Arc<Node>,
    failures: Mutex<HashMap<(String, IpAddr), Failures>>,
    /// SHA-256 of the password last verified per user (ES's realm cache), so argon2 runs once
    /// per user and password, not per request; emptied for a user whose password, roles or
    /// state change.
    verified: Mutex<HashMap<String, String>>,
    /// Who opened each scroll (scroll id → owner, last use), so only they continue or clear it,
    /// as ES's `SecuritySearchOperationListener`.
    scroll_owners: Mutex<HashMap<String, (String, Instant)>>,
}

/// How long an unused scroll's owner is remembered (`search.max_keep_alive`'s default).
const SCROLL_OWNER_TTL: Duration = Duration::from_secs(24 * 3600);

/// Who a request runs as.
#[derive(Clone, Debug)]
pub struct Subject {
    pub username: String,
    /// role names (for messages and `_authenticate`)
    pub role_names: Vec<String>,
    pub roles: Vec<Role>,
    /// for an API key with `role_descriptors`: the owner's roles, which also bound it
    pub limited_by: Option<Vec<Role>>,
    pub api_key: Option<(String, String)>,
    pub realm: (&'static str, &'static str),
    pub full_name: Option<String>,
    pub email: Option<String>,
    pub metadata: serde_json::Map<String, Value>,
}

impl Subject {
    fn both(&self, f: impl Fn(&Role) -> bool) -> bool {
        self.roles.iter().any(&f) && self.limited_by.as_ref().is_none_or(|l| l.iter().any(&f))
    }

    pub fn can_cluster(&self, action: &str) -> bool {
        self.both(|r| r.grants_cluster(action))
    }

    pub fn can_index(&self, action: &str, name: &str) -> bool {
        self.both(|r| r.grants_index(action, name))
    }

    /// Whether any of the subject's roles restricts documents (a role `query`).
    pub fn has_dls(&self) -> bool {
        let any = |roles: &[Role]| {
            roles
                .iter()
                .any(|r| r.indices.iter().any(|i| i.query.is_some()))
        };
        any(self.roles.as_slice()) || self.limited_by.as_deref().is_some_and(any)
    }

    /// Whether any of the subject's roles restricts fields (a role `field_security` that
    /// does not grant every field).
    pub fn has_fls(&self) -> bool {
        let any = |roles: &[Role]| {
            roles.iter().any(|r| {
                r.indices
                    .iter()
                    .any(|i| i.field_security.as_ref().is_some_and(|f| !f.is_total()))
            })
        };
        any(self.roles.as_slice()) || self.limited_by.as_deref().is_some_and(any)
    }

    /// The field-level security for `action` on `index` (reached through `aliases`): the
    /// union of the grants of the entries granting the action, as ES's
    /// subject's roles' grants, intersected with its API key owner's (ES's
    /// `limitFieldPermissions`). `None`: every field is readable.
    pub fn field_permissions(
        &self,
        action: &str,
        index: &str,
        aliases: &[String],
    ) -> Option<lode_engine::field_security::FieldPermissions> {
        let mut names: Vec<&str> = vec![index];
        names.extend(aliases.iter().map(String::as_str));
        let own = privileges::fls_permissions(&self.roles, &names, action);
        let owner = self
            .limited_by
            .as_ref()
            .and_then(|l| privileges::fls_permissions(l, &names, action));
        lode_engine::field_security::FieldPermissions::intersect(own, owner)
    }

    /// Whether document- or field-level security applies to `action` on `index` for this
    /// subject (its own roles or, for an API key, its owner's): ES then refuses updates.
    pub fn dls_or_fls_for(&self, action: &str, index: &str) -> bool {
        let names = [index];
        privileges::dls_or_fls_for(&self.roles, &names, action)
            || self
                .limited_by
                .as_ref()
                .is_some_and(|l| privileges::dls_or_fls_for(l, &names, action))
    }

    /// The document-level security filter on `index` (reached through `aliases`): the
    /// subject's roles' filter, and for an API key with `role_descriptors` its owner's too.
    pub fn doc_filter(&self, index: &str, aliases: &[String]) -> Option<Value> {
        let mut names: Vec<&str> = vec![index];
        names.extend(aliases.iter().map(String::as_str));
        let own = privileges::dls_filter(&self.roles, &names);
        let owner = self
            .limited_by
            .as_ref()
            .and_then(|l| privileges::dls_filter(l, &names));
        match (own, owner) {
            (None, None) => None,
            (Some(q), None) | (None, Some(q)) => Some(q),
            (Some(a), Some(b)) => Some(json!({"bool": {"filter": [a, b]}})),
        }
    }

    /// Who owns what this subject creates (scrolls): the API key, else the user of its realm.
    pub fn owner_key(&self) -> String {
        match &self.api_key {
            Some((id, _)) => format!("api_key:{id}"),
            None => format!("{}:{}", self.realm.0, self.username),
        }
    }

    fn who(&self) -> String {
        match &self.api_key {
            Some((id, _)) => format!("API key id [{id}] of user [{}]", self.username),
            None => {
                let mut r = self.role_names.clone();
                r.sort();
                format!(
                    "user [{}] with effective roles [{}]",
                    self.username,
                    r.join(",")
                )
            }
        }
    }

    /// ES's 403 for a cluster action.
    pub fn cluster_denied(&self, action: &str) -> EsError {
        EsError::new(
            403,
            "security_exception",
            format!(
                "action [{action}] is unauthorized for {}, this action is granted by the cluster privileges [{}]",
                self.who(),
                privileges::cluster_privileges_granting(action).join(",")
            ),
        )
    }

    /// ES's 403 for an index action.
    pub fn index_denied(&self, action: &str, indices: &[String]) -> EsError {
        EsError::new(
            403,
            "security_exception",
            format!(
                "action [{action}] is unauthorized for {} on indices [{}], this action is granted by the index privileges [{}]",
                self.who(),
                indices.join(","),
                privileges::index_privileges_granting(action).join(",")
            ),
        )
    }
}

/// ES's `WWW-Authenticate` challenges (realm, then API keys).
pub const CHALLENGES: [&str; 2] = ["Basic realm=\"security\" charset=\"UTF-8\"", "ApiKey"];

fn unauthorized(reason: String) -> EsError {
    EsError::new(401, "security_exception", reason)
        .with("header", json!({"WWW-Authenticate": CHALLENGES}))
}

/// A 401 or 403 (or any error) as the response, with the challenge headers on a 401.
pub fn error_response(e: &EsError, params: &BTreeMap<String, String>) -> Response<Body> {
    head_error_response(e, params, false)
}

/// [`error_response`], without a body for a HEAD request.
pub fn head_error_response(
    e: &EsError,
    params: &BTreeMap<String, String>,
    head: bool,
) -> Response<Body> {
    let mut r = crate::render(RestResponse::error(e), params, head);
    if e.status == 401 {
        for c in CHALLENGES {
            r.headers_mut()
                .append("www-authenticate", HeaderValue::from_static(c));
        }
    }
    r
}

pub enum AuthError {
    Missing,
    Failed(EsError),
}

impl Security {
    pub fn new(store: Store, node: Arc<Node>) -> Security {
        Security {
            store,
            node,
            failures: Mutex::new(HashMap::new()),
            verified: Mutex::new(HashMap::new()),
            scroll_owners: Mutex::new(HashMap::new()),
        }
    }

    /// Records the owner of the scroll a response opened or continued.
    pub fn record_scroll(&self, subject: &Subject, response: &RestResponse) {
        let id = match &response.body {
            lode_api::rest::RestBody::Json(v) => v
                .get("_scroll_id")
                .and_then(Value::as_str)
                .map(str::to_string),
            // The id is the response's first key; anywhere else the text may be a hit's
            // stored `_source`, which the client wrote.
            lode_api::rest::RestBody::JsonBytes(b) => {
                const KEY: &[u8] = b"{\"_scroll_id\":\"";
                b.strip_prefix(KEY).and_then(|rest| {
                    let end = rest.iter().position(|c| *c == b'"')?;
                    String::from_utf8(rest[..end].to_vec()).ok()
                })
            }
            _ => None,
        };
        if let Some(id) = id {
            let now = Instant::now();
            let mut owners = self.scroll_owners.lock();
            if owners.len() > 10_000 {
                owners.retain(|_, (_, used)| now.duration_since(*used) < SCROLL_OWNER_TTL);
            }
            owners.insert(id, (subject.owner_key(), now));
        }
    }

    /// ES's 404 `search_context_missing_exception` when a scroll id was opened by someone else.
    pub fn check_scrolls(&self, subject: &Subject, ids: &[String]) -> Result<(), EsError> {
        let owners = self.scroll_owners.lock();
        for id in ids {
            if let Some((owner, _)) = owners.get(id) {
                if *owner != subject.owner_key() {
                    return Err(EsError::new(
                        404,
                        "search_context_missing_exception",
                        format!("No search context found for id [{id}]"),
                    ));
                }
            }
        }
        Ok(())
    }

    pub fn forget_scrolls(&self, ids: &[String]) {
        let mut owners = self.scroll_owners.lock();
        for id in ids {
            owners.remove(id);
        }
    }

    pub fn forget(&self, username: &str) {
        self.verified.lock().remove(username);
    }

    fn roles_of(&self, names: &[String]) -> Vec<Role> {
        names.iter().filter_map(|n| self.store.role(n)).collect()
    }

    /// Whether authenticating this header would run argon2 (a `Basic` password not verified
    /// before); API keys and remembered passwords are checked with one SHA-256.
    pub fn needs_hashing(&self, authorization: Option<&str>) -> bool {
        let Some(h) = authorization else { return false };
        let (scheme, cred) = h.trim().split_once(' ').unwrap_or((h, ""));
        if !scheme.eq_ignore_ascii_case("basic") {
            return false;
        }
        match store::decode_basic(cred) {
            Some((user, password)) => {
                self.verified.lock().get(&user) != Some(&store::sha256_hex(password.as_bytes()))
            }
            None => false,
        }
    }

    /// Authenticates the `Authorization` header. `uri` names the request in the messages.
    pub fn authenticate(
        &self,
        authorization: Option<&str>,
        uri: &str,
        remote: IpAddr,
    ) -> Result<Subject, AuthError> {
        let Some(h) = authorization else {
            return Err(AuthError::Missing);
        };
        let (scheme, cred) = h.trim().split_once(' ').unwrap_or((h, ""));
        if scheme.eq_ignore_ascii_case("basic") {
            let Some((user, password)) = store::decode_basic(cred) else {
                return Err(AuthError::Failed(unauthorized(format!(
                    "unable to authenticate user [] for REST request [{uri}]"
                ))));
            };
            self.authenticate_user(&user, &password, uri, remote)
                .map_err(AuthError::Failed)
        } else if scheme.eq_ignore_ascii_case("apikey") {
            self.authenticate_api_key(cred, remote)
                .map_err(AuthError::Failed)
        } else {
            Err(AuthError::Missing)
        }
    }

    fn authenticate_user(
        &self,
        user: &str,
        password: &str,
        uri: &str,
        remote: IpAddr,
    ) -> Result<Subject, EsError> {
        let failed = || {
            unauthorized(format!(
                "unable to authenticate user [{user}] for REST request [{uri}]"
            ))
        };
        let key = (user.to_string(), remote);
        {
            let mut f = self.failures.lock();
            if let Some(state) = f.get_mut(&key) {
                if let Some(until) = state.locked_until {
                    if Instant::now() < until {
                        tracing::warn!(user, remote = %remote, "authentication refused without checking: too many failed attempts");
                        return Err(failed());
                    }
                    f.remove(&key);
                }
            }
        }
        let found = self.store.data.lock().users.get(user).cloned();
        let digest = store::sha256_hex(password.as_bytes());
        let ok = match &found {
            Some(u) if u.enabled => match &u.password_hash {
                Some(h) => {
                    if self.verified.lock().get(user) == Some(&digest) {
                        true
                    } else if store::verify_password(h, password) {
                        self.verified.lock().insert(user.to_string(), digest);
                        true
                    } else {
                        false
                    }
                }
                None => false,
            },
            _ => false,
        };
        if !ok {
            self.record_failure(key, user, remote);
            return Err(failed());
        }
        self.failures.lock().remove(&key);
        let u = found.expect("checked above");
        Ok(Subject {
            username: user.to_string(),
            roles: self.roles_of(&u.roles),
            role_names: u.roles.clone(),
            limited_by: None,
            api_key: None,
            realm: if user == "elastic" {
                ("reserved", "reserved")
            } else {
                ("default_native", "native")
            },
            full_name: u.full_name.clone(),
            email: u.email.clone(),
            metadata: u.metadata.clone(),
        })
    }

    fn record_failure(&self, key: (String, IpAddr), user: &str, remote: IpAddr) {
        let now = Instant::now();
        let mut f = self.failures.lock();
        // bounded: forget stale entries when the table grows
        if f.len() > 10_000 {
            f.retain(|_, s| now.duration_since(s.since) < FAILURE_WINDOW);
        }
        let state = f.entry(key).or_insert(Failures {
            count: 0,
            since: now,
            locked_until: None,
        });
        if now.duration_since(state.since) > FAILURE_WINDOW {
            state.count = 0;
            state.since = now;
        }
        state.count += 1;
        tracing::warn!(user, remote = %remote, failures = state.count, "authentication failed");
        if state.count >= MAX_FAILURES {
            state.locked_until = Some(now + LOCKOUT);
            tracing::warn!(user, remote = %remote, lockout_secs = LOCKOUT.as_secs(), "too many failed logins: refusing this user from this address without checking");
        }
    }

    fn authenticate_api_key(&self, cred: &str, remote: IpAddr) -> Result<Subject, EsError> {
        let generic = |detail: String| {
            tracing::warn!(remote = %remote, "API key authentication failed: {detail}");
            unauthorized(
                "unable to authenticate with provided credentials and anonymous access is not allowed for this request".into(),
            )
            .with("additional_unsuccessful_credentials", format!("API key: {detail}"))
        };
        let Some((id, secret)) = store::decode_api_key(cred) else {
            return Err(generic("invalid API key credentials".into()));
        };
        let key = self.store.data.lock().api_keys.get(&id).cloned();
        let Some(key) = key else {
            return Err(generic(format!("unable to find apikey with id {id}")));
        };
        if !store::same_digest(&key.hash, &store::sha256_hex(secret.as_bytes())) {
            return Err(generic(format!("invalid credentials for API key [{id}]")));
        }
        if key.invalidated {
            return Err(generic(format!("api key [{id}] has been invalidated")));
        }
        if key.expiration.is_some_and(|e| e <= store::now_millis()) {
            return Err(generic(format!("api key [{id}] has expired")));
        }
        let parse = |m: &serde_json::Map<String, Value>| -> Vec<Role> {
            m.iter()
                .filter_map(|(n, v)| Role::parse(n, v).ok())
                .collect()
        };
        let owner = parse(&key.limited_by);
        let (roles, limited_by) = if key.role_descriptors.is_empty() {
            (owner, None)
        } else {
            (parse(&key.role_descriptors), Some(owner))
        };
        Ok(Subject {
            username: key.username.clone(),
            role_names: key.role_descriptors.keys().cloned().collect(),
            roles,
            limited_by,
            api_key: Some((id, key.name.clone())),
            realm: ("_es_api_key", "_es_api_key"),
            full_name: None,
            email: None,
            metadata: serde_json::Map::new(),
        })
    }
}

/// What a request does, in ES's action names.
#[derive(Debug, PartialEq)]
pub enum Target {
    /// a cluster action
    Cluster(&'static str),
    /// an index action on the index expression at path segment `seg` (`None`: the request
    /// names no index, i.e. every index, and the path gains one after `insert_at` segments)
    Indices {
        action: &'static str,
        seg: Option<usize>,
        insert_at: usize,
    },
    /// a `_cat` API over indices: the cluster action (`cluster:monitor/state`), then the
    /// index action on the expression at segment 2 (none: every index), as `Indices`
    CatIndices {
        action: &'static str,
        seg: Option<usize>,
    },
    /// an index action whose indices are in the body, checked item by item (`items.rs`)
    Items(&'static str),
    /// any authenticated subject may (scrolls are bound to the search that opened them,
    /// `_authenticate`, changing one's own password)
    Authenticated,
    /// the security APIs, answered by `rest.rs`
    SecurityApi,
    /// a path no route serves: the route table answers it
    Unknown,
}

/// The scroll ids a scroll request names: in the path, the `scroll_id` parameter or the body.
pub fn scroll_ids(segs: &[String], params: &BTreeMap<String, String>, body: &[u8]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    if let Some(p) = segs.get(2) {
        ids.extend(p.split(',').map(str::to_string));
    }
    if let Some(p) = params.get("scroll_id") {
        ids.extend(p.split(',').map(str::to_string));
    }
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        match v.get("scroll_id") {
            Some(Value::String(s)) => ids.push(s.clone()),
            Some(Value::Array(a)) => {
                ids.extend(a.iter().filter_map(Value::as_str).map(str::to_string))
            }
            _ => {}
        }
    }
    ids
}

/// Classifies a request by method and (decoded) path segments, as the route table routes it.
pub fn classify(method: &axum::http::Method, s: &[&str]) -> Target {
    use axum::http::Method as M;
    use Target::*;
    let m = method;
    let get = m == M::GET || m == M::HEAD;
    let ix = |action: &'static str| Indices {
        action,
        seg: Some(0),
        insert_at: 0,
    };
    let all = |action: &'static str| Indices {
        action,
        seg: None,
        insert_at: 0,
    };
    match s {
        [] => Cluster("cluster:monitor/main"),
        ["_security", ..] => SecurityApi,
        ["_cluster", "settings"] if get => Cluster("cluster:monitor/settings"),
        ["_cluster", "settings"] => Cluster("cluster:admin/settings/update"),
        ["_cluster", "health", ..] => Cluster("cluster:monitor/health"),
        ["_cluster", "allocation", "explain"] => Cluster("cluster:monitor/allocation/explain"),
        ["_nodes", rest @ ..] if rest.contains(&"stats") => Cluster("cluster:monitor/nodes/stats"),
        ["_nodes", ..] => Cluster("cluster:monitor/nodes/info"),
        ["_cat", api @ ("indices" | "count" | "shards" | "segments" | "recovery"), rest @ ..]
            if rest.len() <= 1 =>
        {
            CatIndices {
                action: match *api {
                    "count" => "indices:data/read/search",
                    "segments" => "indices:monitor/segments",
                    "recovery" => "indices:monitor/recovery",
                    _ => "indices:monitor/stats",
                },
                seg: (!rest.is_empty()).then_some(2),
            }
        }
        // as ES's `RestAliasAction`, a get aliases request only: the handler lists the
        // aliases the subject holds `indices:admin/aliases/get` on (index and alias name)
        ["_cat", "aliases", rest @ ..] if rest.len() <= 1 => Authenticated,
        ["_cat", ..] => Cluster("cluster:monitor/state"),
        ["_prometheus", ..] => Cluster("cluster:monitor/prometheus/metrics"),
        ["_lode", ..] => Cluster("cluster:monitor/lode/console"),
        ["_aliases"] if m == M::POST => Items("indices:admin/aliases"),
        ["_alias" | "_aliases", ..] => all("indices:admin/aliases/get"),
        ["_scripts", ..] if get => Cluster("cluster:admin/script/get"),
        ["_scripts", ..] if m == M::DELETE => Cluster("cluster:admin/script/delete"),
        ["_scripts", ..] => Cluster("cluster:admin/script/put"),
        ["_tasks"] => Cluster("cluster:monitor/tasks/lists"),
        ["_tasks", "_cancel"] | ["_tasks", _, "_cancel"] => Cluster("cluster:admin/tasks/cancel"),
        ["_tasks", _] => Cluster("cluster:monitor/task/get"),
        [_, _, "_rethrottle"] => Cluster("cluster:admin/reindex/rethrottle"),
        ["_analyze"] => Cluster("cluster:admin/analyze"),
        ["_search", "scroll", ..] => Authenticated,
        ["_bulk"] | [_, "_bulk"] => Items("indices:data/write/bulk"),
        ["_mget"] | [_, "_mget"] => Items("indices:data/read/mget"),
        ["_msearch"] | [_, "_msearch"] => Items("indices:data/read/msearch"),
        ["_search"] | ["_count"] => all("indices:data/read/search"),
        ["_stats", ..] => all("indices:monitor/stats"),
        ["_segments"] => all("indices:monitor/segments"),
        ["_mapping"] => all("indices:admin/mappings/get"),
        ["_settings", ..] if get => all("indices:monitor/settings/get"),
        ["_settings"] => all("indices:admin/settings/update"),
        ["_cache", "clear"] => all("indices:admin/cache/clear"),
        ["_refresh"] => all("indices:admin/refresh"),
        ["_flush"] => all("indices:admin/flush"),
        ["_forcemerge"] => all("indices:admin/forcemerge"),
        ["_delete_by_query"] => all("indices:data/write/delete/byquery"),
        ["_update_by_query"] => all("indices:data/write/update/byquery"),
        [_, "_pit"] | ["_pit"] => Unknown,
        [i] if i.starts_with('_') => Unknown,
        [_] if m == M::PUT => ix("indices:admin/create"),
        [_] if m == M::DELETE => ix("indices:admin/delete"),
        [_] => ix("indices:admin/get"),
        [_, "_alias" | "_aliases", ..] if get => ix("indices:admin/aliases/get"),
        [_, "_alias" | "_aliases", _] => Items("indices:admin/aliases"),
        [_, "_mapping"] if get => ix("indices:admin/mappings/get"),
        [_, "_mapping"] => ix("indices:admin/mapping/put"),
        [_, "_settings", ..] if get => ix("indices:monitor/settings/get"),
        [_, "_settings"] => ix("indices:admin/settings/update"),
        [_, "_refresh"] => ix("indices:admin/refresh"),
        [_, "_flush"] => ix("indices:admin/flush"),
        [_, "_forcemerge"] => ix("indices:admin/forcemerge"),
        [_, "_close"] => ix("indices:admin/close"),
        [_, "_open"] => ix("indices:admin/open"),
        [_, "_block", _] => ix("indices:admin/block/add"),
        [_, "_analyze"] => ix("indices:admin/analyze"),
        [_, "_stats", ..] => ix("indices:monitor/stats"),
        [_, "_segments"] => ix("indices:monitor/segments"),
        [_, "_disk_usage"] => ix("indices:admin/analyze_disk_usage"),
        [_, "_cache", "clear"] => ix("indices:admin/cache/clear"),
        [_, "_search" | "_count"] => ix("indices:data/read/search"),
        [_, "_delete_by_query"] => ix("indices:data/write/delete/byquery"),
        [_, "_update_by_query"] => ix("indices:data/write/update/byquery"),
        [_, "_doc"] => ix("indices:data/write/index"),
        [_, "_create", _] => ix("indices:data/write/index"),
        [_, "_doc", _] if get => ix("indices:data/read/get"),
        [_, "_doc", _] if m == M::DELETE => ix("indices:data/write/delete"),
        [_, "_doc", _] => ix("indices:data/write/index"),
        [_, "_source", _] => ix("indices:data/read/get"),
        [_, "_update", _] => ix("indices:data/write/update"),
        _ => Unknown,
    }
}

/// Resolves an index expression for `action` as ES's security does: explicit names (indices
/// or aliases, as named) must be authorized, else the whole request is refused (403); a
/// wildcard expands only to the indices and aliases the subject is authorized for. Returns
/// the rewritten expression (`None`: unchanged).
pub fn authorize_expression(
    node: &Node,
    subject: &Subject,
    action: &str,
    expr: &str,
) -> Result<Option<String>, EsError> {
    authorize_expression_with(node, subject, action, expr, ResolveOptions::default())
}

/// [`authorize_expression`] with the request's wildcard options (`expand_wildcards`).
pub fn authorize_expression_with(
    node: &Node,
    subject: &Subject,
    action: &str,
    expr: &str,
    opts: ResolveOptions,
) -> Result<Option<String>, EsError> {
    // a subject granted the action on every name (`*`) needs no rewriting
    if subject.can_index(action, "*") {
        return Ok(None);
    }
    let parts: Vec<&str> = if expr.trim().is_empty() || expr == "_all" {
        vec!["*"]
    } else {
        expr.split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect()
    };
    let mut out: Vec<String> = Vec::new();
    let mut changed = expr == "_all" || expr.trim().is_empty();
    let mut denied: Vec<String> = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 && part.starts_with('-') {
            out.push(part.to_string());
            continue;
        }
        if part.contains('*') {
            changed = true;
            // every index and alias the wildcard reaches, kept when authorized
            let mut names: Vec<String> = Vec::new();
            if let Ok(resolved) = node.resolve_detailed(part, opts) {
                for r in resolved {
                    match r.via_aliases {
                        None => names.push(r.index.name.clone()),
                        Some(v) => names.extend(v.into_iter().map(|(a, _)| a)),
                    }
                    if privileges::glob(part, &r.index.name) && !names.contains(&r.index.name) {
                        names.push(r.index.name.clone());
                    }
                }
            }
            names.sort();
            names.dedup();
            for n in names {
                if subject.can_index(action, &n) && !out.contains(&n) {
                    out.push(n);
                }
            }
        } else if subject.can_index(action, part) {
            out.push(part.to_string());
        } else {
            denied.push(part.to_string());
        }
    }
    if !denied.is_empty() {
        return Err(subject.index_denied(action, &denied));
    }
    if !changed {
        return Ok(None);
    }
    if out.iter().all(|p| p.starts_with('-')) {
        // nothing authorized: an expression that resolves to no index, as ES's `*,-*`
        return Ok(Some("*,-*".into()));
    }
    Ok(Some(out.join(",")))
}

/// Whether document- or field-level security restricts `action` on `name` (an index, or an
/// alias: checked on it and on its indices) for the subject.
pub fn update_restricted(node: &Node, subject: &Subject, action: &str, name: &str) -> bool {
    subject.dls_or_fls_for(action, name)
        || node
            .alias_indices(name)
            .iter()
            .any(|i| subject.dls_or_fls_for(action, &i.name))
}

fn remote_of(req: &Request<Body>) -> IpAddr {
    req.extensions()
        .get::<ConnectInfo<crate::connections::ConnInfo>>()
        .map(|c| c.0.remote.ip())
        .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED))
}

fn query_params(req: &Request<Body>) -> BTreeMap<String, String> {
    crate::parse_query_string(req.uri().query())
}

/// The gate: authenticate, classify, authorize, then route (or answer a security API).
pub async fn gate(
    State(sec): State<Arc<Security>>,
    mut req: Request<Body>,
    next: axum::middleware::Next,
) -> Response<Body> {
    let uri = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| req.uri().path().to_string());
    let remote = remote_of(&req);
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let params = query_params(&req);
    let head = req.method() == axum::http::Method::HEAD;
    // argon2 is CPU work: off the async workers, unless the password is the one last verified
    let authn = if sec.needs_hashing(auth.as_deref()) {
        let s2 = sec.clone();
        let uri2 = uri.clone();
        tokio::task::spawn_blocking(move || s2.authenticate(auth.as_deref(), &uri2, remote))
            .await
            .unwrap_or_else(|_| Err(AuthError::Missing))
    } else {
        sec.authenticate(auth.as_deref(), &uri, remote)
    };
    let subject = match authn {
        Ok(s) => Arc::new(s),
        Err(AuthError::Missing) => {
            let e = unauthorized(format!(
                "missing authentication credentials for REST request [{uri}]"
            ));
            return head_error_response(&e, &params, head);
        }
        Err(AuthError::Failed(e)) => return head_error_response(&e, &params, head),
    };
    // a malformed query string is a bad request, answered before authorization (ES
    // dispatches it as such, to no handler)
    if let Err(e) = crate::parse_query_string_strict(req.uri().query()) {
        return head_error_response(&e, &BTreeMap::new(), head);
    }
    // run-as (`es-security-runas-user`) is not implemented: refused, never ignored
    if req.headers().contains_key("es-security-runas-user") {
        let e = EsError::illegal_argument(
            "run as ([es-security-runas-user] header) is not supported by Lode",
        );
        return head_error_response(&e, &params, head);
    }
    let path = req.uri().path().to_string();
    let raw: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let segs: Vec<String> = raw.iter().map(|s| crate::decode(s)).collect();
    let seg_refs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let mut target = classify(req.method(), &seg_refs);
    if let Target::CatIndices { action, seg } = target {
        // the cluster privilege first, then only the indices the subject may see
        let cluster = "cluster:monitor/state";
        if !subject.can_cluster(cluster) {
            return head_error_response(&subject.cluster_denied(cluster), &params, head);
        }
        target = Target::Indices {
            action,
            seg,
            insert_at: 2,
        };
    }
    match target {
        Target::Cluster(action) => {
            if !subject.can_cluster(action) {
                return head_error_response(&subject.cluster_denied(action), &params, head);
            }
        }
        Target::CatIndices { .. } => unreachable!("resolved above"),
        Target::Indices {
            action,
            seg,
            insert_at,
        } => {
            let expr = seg.map(|i| segs[i].clone()).unwrap_or_default();
            let opts = match params.get("expand_wildcards") {
                Some(v) => match ResolveOptions::default().expand_wildcards(v) {
                    Ok(o) => o,
                    Err(e) => return head_error_response(&e, &params, head),
                },
                None => ResolveOptions::default(),
            };
            match authorize_expression_with(&sec.node, &subject, action, &expr, opts) {
                Err(e) => return head_error_response(&e, &params, head),
                Ok(None) => {}
                Ok(Some(new_expr)) => {
                    let mut parts: Vec<String> = raw.iter().map(|s| s.to_string()).collect();
                    match seg {
                        Some(i) => parts[i] = new_expr,
                        None => parts.insert(insert_at, new_expr),
                    }
                    let mut new_uri = format!("/{}", parts.join("/"));
                    if let Some(q) = req.uri().query() {
                        new_uri.push('?');
                        new_uri.push_str(q);
                    }
                    match new_uri.parse() {
                        Ok(u) => *req.uri_mut() = u,
                        Err(_) => {
                            return error_response(
                                &EsError::internal("failed to rewrite the index expression"),
                                &params,
                            )
                        }
                    }
                }
            }
            // ES's `UpdateRequestInterceptor`: an update would write back a document the
            // subject sees only part of
            if action == "indices:data/write/update"
                && seg == Some(0)
                && update_restricted(&sec.node, &subject, action, &segs[0])
            {
                let e = EsError::new(
                    400,
                    "security_exception",
                    "Can't execute an update request if field or document level security is enabled",
                );
                return head_error_response(&e, &params, head);
            }
            // a write that would create its index also needs the index creation privilege
            if action.starts_with("indices:data/write/")
                && seg == Some(0)
                && !segs[0].contains('*')
                && sec.node.get(&segs[0]).is_none()
                && sec.node.alias_indices(&segs[0]).is_empty()
                && !subject.can_index("indices:admin/auto_create", &segs[0])
            {
                return head_error_response(
                    &subject.index_denied("indices:admin/auto_create", &[segs[0].clone()]),
                    &params,
                    head,
                );
            }
        }
        Target::Items(_) | Target::Authenticated | Target::Unknown => {}
        Target::SecurityApi => {
            return rest::handle(sec, subject, req, &seg_refs, params).await;
        }
    }
    req.extensions_mut().insert(subject);
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Method as M;

    fn subject(role: Value) -> Subject {
        Subject {
            username: "u".into(),
            role_names: vec!["r".into()],
            roles: vec![Role::parse("r", &role).unwrap()],
            limited_by: None,
            api_key: None,
            realm: ("default_native", "native"),
            full_name: None,
            email: None,
            metadata: Default::default(),
        }
    }

    #[test]
    fn cat_apis_over_indices_are_filtered_per_index() {
        let c = |p: &str| {
            let segs: Vec<&str> = p.split('/').filter(|s| !s.is_empty()).collect();
            classify(&M::GET, &segs)
        };
        assert_eq!(
            c("/_cat/indices"),
            Target::CatIndices {
                action: "indices:monitor/stats",
                seg: None
            }
        );
        assert_eq!(
            c("/_cat/count/logs-*"),
            Target::CatIndices {
                action: "indices:data/read/search",
                seg: Some(2)
            }
        );
        assert_eq!(c("/_cat/health"), Target::Cluster("cluster:monitor/state"));
        assert_eq!(c("/_cat/aliases"), Target::Authenticated);
        assert_eq!(c("/_cat/aliases/a*"), Target::Authenticated);
    }

    #[test]
    fn document_level_security_filters_combine_as_es() {
        let q1 = json!({"term": {"team": "a"}});
        let q2 = json!({"term": {"team": "b"}});
        let s = subject(json!({"indices": [
            {"names": ["logs-*"], "privileges": ["read"], "query": q1},
            {"names": ["logs-1"], "privileges": ["read"], "query": q2.to_string()},
            {"names": ["open"], "privileges": ["read"]},
            {"names": ["open", "meta"], "privileges": ["read"], "query": q1},
            {"names": ["meta"], "privileges": ["view_index_metadata"]},
        ]}));
        assert!(s.has_dls());
        assert_eq!(s.doc_filter("logs-2", &[]), Some(q1.clone()));
        assert_eq!(
            s.doc_filter("logs-1", &[]),
            Some(json!({"bool": {"should": [q1, q2], "minimum_should_match": 1}}))
        );
        // an entry without a query leaves the index unrestricted
        assert_eq!(s.doc_filter("open", &[]), None);
        // entries that do not grant reading do not lift the restriction
        assert_eq!(s.doc_filter("meta", &[]), Some(q1.clone()));
        // reached through an alias the role names
        assert_eq!(s.doc_filter("x", &["logs-a".to_string()]), Some(q1.clone()));
        assert!(!subject(json!({"indices": [{"names": ["*"], "privileges": ["read"]}]})).has_dls());
        // the query is shown as ES stores it, a string
        let r = Role::parse(
            "r",
            &json!({"indices": [{"names": ["a"], "privileges": ["read"], "query": q1}]}),
        )
        .unwrap();
        assert_eq!(r.to_json()["indices"][0]["query"], json!(q1.to_string()));
        assert!(Role::parse("r", &json!({"indices": [{"names": ["a"], "privileges": ["read"], "query": {"template": {"source": "{}"}}}]})).is_err());
        assert!(Role::parse(
            "r",
            &json!({"indices": [{"names": ["a"], "privileges": ["read"], "query": 5}]})
        )
        .is_err());
    }

    #[test]
    fn requests_classify_to_es_actions() {
        let c = |m: M, p: &str| {
            let segs: Vec<&str> = p.split('/').filter(|s| !s.is_empty()).collect();
            classify(&m, &segs)
        };
        let ix = |action| Target::Indices {
            action,
            seg: Some(0),
            insert_at: 0,
        };
        assert_eq!(c(M::GET, "/"), Target::Cluster("cluster:monitor/main"));
        assert_eq!(c(M::GET, "/logs/_search"), ix("indices:data/read/search"));
        assert_eq!(
            c(M::POST, "/_search"),
            Target::Indices {
                action: "indices:data/read/search",
                seg: None,
                insert_at: 0
            }
        );
        assert_eq!(c(M::PUT, "/logs"), ix("indices:admin/create"));
        assert_eq!(c(M::DELETE, "/logs"), ix("indices:admin/delete"));
        assert_eq!(c(M::PUT, "/logs/_doc/1"), ix("indices:data/write/index"));
        assert_eq!(c(M::GET, "/logs/_doc/1"), ix("indices:data/read/get"));
        assert_eq!(c(M::PUT, "/logs/_mapping"), ix("indices:admin/mapping/put"));
        assert_eq!(
            c(M::PUT, "/_cluster/settings"),
            Target::Cluster("cluster:admin/settings/update")
        );
        assert_eq!(
            c(M::GET, "/_cluster/health"),
            Target::Cluster("cluster:monitor/health")
        );
        assert_eq!(
            c(M::POST, "/_bulk"),
            Target::Items("indices:data/write/bulk")
        );
        assert_eq!(
            c(M::PUT, "/logs/_alias/a"),
            Target::Items("indices:admin/aliases")
        );
        assert_eq!(c(M::GET, "/_security/user"), Target::SecurityApi);
        assert_eq!(c(M::GET, "/_search/scroll"), Target::Authenticated);
    }

    #[test]
    fn api_keys_are_bounded_by_their_owner() {
        let mut s = subject(json!({"indices": [{"names": ["logs-*"], "privileges": ["read"]}]}));
        assert!(s.can_index("indices:data/read/search", "logs-b"));
        s.limited_by = Some(vec![Role::parse(
            "owner",
            &json!({"indices": [{"names": ["logs-a"], "privileges": ["all"]}]}),
        )
        .unwrap()]);
        assert!(s.can_index("indices:data/read/search", "logs-a"));
        assert!(!s.can_index("indices:data/read/search", "logs-b"));
        assert!(!s.can_index("indices:data/write/index", "logs-a"));
    }

    #[test]
    fn denials_use_es_messages() {
        let s = subject(json!({"cluster": ["monitor"]}));
        let e = s.index_denied("indices:data/read/search", &["logs-b".into()]);
        assert_eq!((e.status, e.kind.as_str()), (403, "security_exception"));
        assert_eq!(e.reason, "action [indices:data/read/search] is unauthorized for user [u] with effective roles [r] on indices [logs-b], this action is granted by the index privileges [read,all]");
        let e = s.cluster_denied("cluster:admin/settings/update");
        assert_eq!(e.reason, "action [cluster:admin/settings/update] is unauthorized for user [u] with effective roles [r], this action is granted by the cluster privileges [manage,all]");
    }

    #[test]
    fn wildcards_expand_to_authorized_indices() {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(dir.path()).unwrap();
        for name in ["logs-a", "logs-b"] {
            node.create_index(name, &json!({}), &json!({})).unwrap();
        }
        let s = subject(json!({"indices": [{"names": ["logs-a"], "privileges": ["read"]}]}));
        let a = "indices:data/read/search";
        assert_eq!(
            authorize_expression(&node, &s, a, "logs-*").unwrap(),
            Some("logs-a".into())
        );
        assert_eq!(
            authorize_expression(&node, &s, a, "_all").unwrap(),
            Some("logs-a".into())
        );
        assert_eq!(authorize_expression(&node, &s, a, "logs-a").unwrap(), None);
        assert_eq!(
            authorize_expression(&node, &s, a, "other-*").unwrap(),
            Some("*,-*".into())
        );
        let e = authorize_expression(&node, &s, a, "logs-a,logs-b").unwrap_err();
        assert_eq!(e.status, 403);
        assert!(e.reason.contains("on indices [logs-b]"));
    }
}
