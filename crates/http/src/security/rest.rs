//! The native realm APIs (`/_security/...`), as Elasticsearch's security REST handlers answer
//! them: users, roles, `_authenticate` and API keys. Each names its ES action, authorized like
//! any other cluster action (`manage_security`, `manage_api_key`, `manage_own_api_key`, ...).

use super::privileges::{self, Role, BUILTIN_ROLES};
use super::store::{self, ApiKey, User};
use super::{Security, Subject};
use axum::body::Body;
use axum::http::{Method as M, Request, Response};
use http_body_util::BodyExt;
use lode_api::rest::{parse_json, RestResponse};
use lode_engine::{EsError, EsResult};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

pub async fn handle(
    sec: Arc<Security>,
    subject: Arc<Subject>,
    req: Request<Body>,
    segs: &[&str],
    params: BTreeMap<String, String>,
) -> Response<Body> {
    let method = req.method().clone();
    let segs: Vec<String> = segs.iter().map(|s| s.to_string()).collect();
    let body = match http_body_util::Limited::new(req.into_body(), 1 << 20)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes().to_vec(),
        Err(_) => {
            let e = EsError::illegal_argument("failed to read the request body");
            return super::error_response(&e, &params);
        }
    };
    let p2 = params.clone();
    let out = tokio::task::spawn_blocking(move || {
        let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
        route(&sec, &subject, &method, &segs, &body, &p2)
    })
    .await
    .unwrap_or_else(|_| Err(EsError::internal("security request handler failed")));
    match out {
        Ok(r) => crate::render(r, &params, false),
        Err(e) => super::error_response(&e, &params),
    }
}

fn body_json(body: &[u8]) -> EsResult<Value> {
    if body.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(EsError::bad_request(
            "parse_exception",
            "request body is required",
        ));
    }
    parse_json(body)
}

fn validation(msg: &str) -> EsError {
    EsError::bad_request(
        "action_request_validation_exception",
        format!("Validation Failed: 1: {msg};"),
    )
}

fn require(subject: &Subject, action: &str) -> EsResult<()> {
    if subject.can_cluster(action) {
        Ok(())
    } else {
        Err(subject.cluster_denied(action))
    }
}

const RESERVED_USERS: &[&str] = &[
    "elastic",
    "kibana",
    "kibana_system",
    "logstash_system",
    "beats_system",
    "apm_system",
    "remote_monitoring_user",
];

fn route(
    sec: &Security,
    subject: &Subject,
    m: &M,
    s: &[&str],
    body: &[u8],
    params: &BTreeMap<String, String>,
) -> EsResult<RestResponse> {
    let get = m == M::GET || m == M::HEAD;
    let put = m == M::PUT || m == M::POST;
    check_params(m, s, params)?;
    match s {
        ["_security", "_authenticate"] if get => Ok(RestResponse::ok(authenticate(subject))),
        ["_security", "user", "_has_privileges"] if get || m == M::POST => {
            has_privileges(subject, body)
        }
        ["_security", "user", "_privileges"] if get => {
            Ok(RestResponse::ok(user_privileges(subject)))
        }
        ["_security", "user"] if get => get_users(sec, subject, None),
        ["_security", "user", names] if get => get_users(sec, subject, Some(names)),
        ["_security", "user", name] if put => put_user(sec, subject, name, body),
        ["_security", "user", name] if m == M::DELETE => delete_user(sec, subject, name),
        ["_security", "user", "_password"] if put => {
            let me = subject.username.clone();
            change_password(sec, subject, &me, body)
        }
        ["_security", "user", name, "_password"] if put => {
            change_password(sec, subject, name, body)
        }
        ["_security", "user", name, which @ ("_enable" | "_disable")] if put => {
            set_enabled(sec, subject, name, *which == "_enable")
        }
        ["_security", "role"] if get => get_roles(sec, subject, None),
        ["_security", "role", names] if get => get_roles(sec, subject, Some(names)),
        ["_security", "role", name] if put => put_role(sec, subject, name, body),
        ["_security", "role", name] if m == M::DELETE => delete_role(sec, subject, name),
        ["_security", "api_key"] if put => create_api_key(sec, subject, body),
        ["_security", "api_key"] if get => get_api_keys(sec, subject, params),
        ["_security", "api_key"] if m == M::DELETE => invalidate_api_keys(sec, subject, body),
        ["_security", "role_mapping"] if get => get_role_mappings(sec, subject, None),
        ["_security", "role_mapping", names] if get => get_role_mappings(sec, subject, Some(names)),
        ["_security", "role_mapping", name] if put => put_role_mapping(sec, subject, name, body),
        ["_security", "role_mapping", name] if m == M::DELETE => {
            delete_role_mapping(sec, subject, name)
        }
        _ => Err(EsError::illegal_argument(format!(
            "request [/{}] contains unrecognized parameters or path",
            s.join("/")
        ))),
    }
}

/// URL parameters, as ES's REST specification names them for each security API: `refresh`
/// is accepted (the store is written before the answer, so every change is visible at once);
/// anything else is ES's unrecognized-parameter error.
fn check_params(m: &M, s: &[&str], params: &BTreeMap<String, String>) -> EsResult<()> {
    let mut allowed: Vec<&str> = lode_api::url_params::GLOBAL.to_vec();
    let writes = m != M::GET && m != M::HEAD;
    if writes {
        allowed.push("refresh");
    }
    if s.get(1) == Some(&"api_key") && !writes {
        allowed.extend([
            "id",
            "name",
            "username",
            "realm_name",
            "owner",
            "with_limited_by",
            "active_only",
            "with_profile_uid",
        ]);
    }
    for k in params.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(EsError::illegal_argument(format!(
                "request [/{}] contains unrecognized parameter: [{k}]",
                s.join("/")
            )));
        }
    }
    Ok(())
}

fn authenticate(subject: &Subject) -> Value {
    let mut v = json!({
        "username": subject.username,
        "roles": subject.role_names,
        "full_name": subject.full_name,
        "email": subject.email,
        "metadata": subject.metadata,
        "enabled": true,
        "authentication_realm": {"name": subject.realm.0, "type": subject.realm.1},
        "lookup_realm": {"name": subject.realm.0, "type": subject.realm.1},
        "authentication_type": if subject.api_key.is_some() { "api_key" } else { "realm" },
    });
    if let Some((id, name)) = &subject.api_key {
        v["api_key"] = json!({"id": id, "name": name});
        v["roles"] = json!([]);
    }
    v
}

/// `_has_privileges`: whether the subject holds each named cluster and index privilege.
fn has_privileges(subject: &Subject, body: &[u8]) -> EsResult<RestResponse> {
    let v = body_json(body)?;
    let obj = v
        .as_object()
        .ok_or_else(|| EsError::parsing("expected an object"))?;
    let both = |f: &dyn Fn(&[Role]) -> bool| {
        f(&subject.roles) && subject.limited_by.as_deref().is_none_or(f)
    };
    let mut all = true;
    let mut cluster = Map::new();
    let mut index = Map::new();
    for (k, val) in obj {
        match k.as_str() {
            "cluster" => {
                for p in string_array(val, "cluster")? {
                    let has = both(&|r: &[Role]| privileges::roles_have_cluster(r, &p));
                    all &= has;
                    cluster.insert(p, json!(has));
                }
            }
            "index" => {
                for entry in val.as_array().into_iter().flatten() {
                    let names = string_array(entry.get("names").unwrap_or(&Value::Null), "names")?;
                    let privs = string_array(
                        entry.get("privileges").unwrap_or(&Value::Null),
                        "privileges",
                    )?;
                    for n in names {
                        let slot = index
                            .entry(n.clone())
                            .or_insert_with(|| json!({}))
                            .as_object_mut()
                            .expect("an object");
                        for p in &privs {
                            let has = both(&|r: &[Role]| privileges::roles_have_index(r, p, &n));
                            all &= has;
                            slot.insert(p.clone(), json!(has));
                        }
                    }
                }
            }
            "application" => {
                if val.as_array().is_some_and(|a| !a.is_empty()) {
                    return Err(EsError::illegal_argument(
                        "application privileges are not supported by Lode",
                    ));
                }
            }
            other => {
                return Err(EsError::parsing(format!(
                    "failed to parse privilege check. unexpected field [{other}]"
                )))
            }
        }
    }
    Ok(RestResponse::ok(json!({
        "username": subject.username,
        "has_all_requested": all,
        "cluster": cluster,
        "index": index,
        "application": {},
    })))
}

/// `GET _security/user/_privileges`: the subject's privileges, merged over its roles.
fn user_privileges(subject: &Subject) -> Value {
    let mut cluster: Vec<String> = subject
        .roles
        .iter()
        .flat_map(|r| r.cluster.iter().cloned())
        .collect();
    cluster.sort();
    cluster.dedup();
    let indices: Vec<Value> = subject
        .roles
        .iter()
        .flat_map(|r| r.indices.iter())
        .map(|ip| {
            json!({
                "names": ip.names,
                "privileges": ip.privileges,
                "allow_restricted_indices": ip.allow_restricted_indices,
            })
        })
        .collect();
    let run_as: Vec<String> = subject
        .roles
        .iter()
        .flat_map(|r| r.run_as.iter().cloned())
        .collect();
    json!({
        "cluster": cluster,
        "global": [],
        "indices": indices,
        "applications": [],
        "run_as": run_as,
    })
}

fn user_json(name: &str, u: &User) -> Value {
    json!({
        "username": name,
        "roles": u.roles,
        "full_name": u.full_name,
        "email": u.email,
        "metadata": u.metadata,
        "enabled": u.enabled,
    })
}

fn get_users(sec: &Security, subject: &Subject, names: Option<&str>) -> EsResult<RestResponse> {
    require(subject, "cluster:admin/xpack/security/user/get")?;
    let d = sec.store.data.lock();
    let mut out = Map::new();
    match names {
        None => {
            for (n, u) in &d.users {
                out.insert(n.clone(), user_json(n, u));
            }
        }
        Some(list) => {
            for n in list.split(',') {
                if let Some(u) = d.users.get(n) {
                    out.insert(n.to_string(), user_json(n, u));
                }
            }
        }
    }
    if out.is_empty() && names.is_some() {
        return Ok(RestResponse::json(404, json!({})));
    }
    Ok(RestResponse::ok(Value::Object(out)))
}

fn check_password(p: &str) -> EsResult<()> {
    if p.chars().count() < 6 {
        return Err(validation("passwords must be at least [6] characters long"));
    }
    Ok(())
}

fn string_array(v: &Value, field: &str) -> EsResult<Vec<String>> {
    match v {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(a) => a
            .iter()
            .map(|x| {
                x.as_str().map(str::to_string).ok_or_else(|| {
                    EsError::parsing(format!("[{field}] must be an array of strings"))
                })
            })
            .collect(),
        _ => Err(EsError::parsing(format!(
            "[{field}] must be an array of strings"
        ))),
    }
}

fn put_user(sec: &Security, subject: &Subject, name: &str, body: &[u8]) -> EsResult<RestResponse> {
    require(subject, "cluster:admin/xpack/security/user/put")?;
    if RESERVED_USERS.contains(&name) {
        return Err(validation(&format!(
            "Username [{name}] is reserved and may not be used."
        )));
    }
    let v = body_json(body)?;
    let obj = v
        .as_object()
        .ok_or_else(|| EsError::parsing("expected an object"))?;
    let mut password = None;
    let mut roles = None;
    let mut full_name = None;
    let mut email = None;
    let mut metadata = None;
    let mut enabled = None;
    for (k, val) in obj {
        match k.as_str() {
            "password" => {
                password = Some(
                    val.as_str()
                        .ok_or_else(|| EsError::parsing("[password] must be a string"))?
                        .to_string(),
                )
            }
            "roles" => roles = Some(string_array(val, "roles")?),
            "full_name" => full_name = val.as_str().map(str::to_string),
            "email" => email = val.as_str().map(str::to_string),
            "metadata" => {
                metadata = Some(
                    val.as_object()
                        .cloned()
                        .ok_or_else(|| EsError::parsing("[metadata] must be an object"))?,
                )
            }
            "enabled" => {
                enabled = Some(
                    val.as_bool()
                        .ok_or_else(|| EsError::parsing("[enabled] must be a boolean"))?,
                )
            }
            "password_hash" => {
                return Err(EsError::illegal_argument(
                    "[password_hash] is not supported by Lode: send [password]",
                ))
            }
            other => {
                return Err(EsError::bad_request(
                    "x_content_parse_exception",
                    format!("[user] unknown field [{other}]"),
                ))
            }
        }
    }
    if let Some(p) = &password {
        check_password(p)?;
    }
    let hash = password.as_deref().map(store::hash_password);
    let mut d = sec.store.data.lock();
    let created = !d.users.contains_key(name);
    if created && hash.is_none() {
        return Err(validation(
            "password must be specified unless you are updating an existing user",
        ));
    }
    if created && roles.is_none() {
        return Err(validation("roles are missing"));
    }
    let u = d.users.entry(name.to_string()).or_insert_with(|| User {
        password_hash: None,
        roles: vec![],
        full_name: None,
        email: None,
        metadata: Map::new(),
        enabled: true,
    });
    if let Some(h) = hash {
        u.password_hash = Some(h);
    }
    if let Some(r) = roles {
        u.roles = r;
    }
    if full_name.is_some() {
        u.full_name = full_name;
    }
    if email.is_some() {
        u.email = email;
    }
    if let Some(m) = metadata {
        u.metadata = m;
    }
    if let Some(e) = enabled {
        u.enabled = e;
    }
    sec.store.save(&d)?;
    drop(d);
    sec.forget(name);
    Ok(RestResponse::ok(json!({"created": created})))
}

fn delete_user(sec: &Security, subject: &Subject, name: &str) -> EsResult<RestResponse> {
    require(subject, "cluster:admin/xpack/security/user/delete")?;
    if RESERVED_USERS.contains(&name) {
        return Err(validation(&format!(
            "user [{name}] is reserved and cannot be deleted"
        )));
    }
    let mut d = sec.store.data.lock();
    let found = d.users.remove(name).is_some();
    if found {
        sec.store.save(&d)?;
    }
    drop(d);
    sec.forget(name);
    Ok(RestResponse::json(
        if found { 200 } else { 404 },
        json!({"found": found}),
    ))
}

fn change_password(
    sec: &Security,
    subject: &Subject,
    name: &str,
    body: &[u8],
) -> EsResult<RestResponse> {
    // anyone may change their own password (not through an API key)
    if !(name == subject.username && subject.api_key.is_none()) {
        require(subject, "cluster:admin/xpack/security/user/change_password")?;
    }
    let v = body_json(body)?;
    let Some(p) = v.get("password").and_then(Value::as_str) else {
        return Err(validation("password must be specified"));
    };
    check_password(p)?;
    if !sec.store.data.lock().users.contains_key(name) {
        return Err(validation(&format!("user [{name}] does not exist")));
    }
    sec.store.set_password(name, p, None)?;
    sec.forget(name);
    Ok(RestResponse::ok(json!({})))
}

fn set_enabled(sec: &Security, subject: &Subject, name: &str, on: bool) -> EsResult<RestResponse> {
    require(subject, "cluster:admin/xpack/security/user/set_enabled")?;
    if !on && name == subject.username {
        return Err(validation(
            "users may not update the enabled status of their own account",
        ));
    }
    let mut d = sec.store.data.lock();
    let Some(u) = d.users.get_mut(name) else {
        return Err(EsError::new(
            404,
            "resource_not_found_exception",
            format!("user [{name}] does not exist"),
        ));
    };
    u.enabled = on;
    sec.store.save(&d)?;
    drop(d);
    sec.forget(name);
    Ok(RestResponse::ok(json!({})))
}

fn get_roles(sec: &Security, subject: &Subject, names: Option<&str>) -> EsResult<RestResponse> {
    require(subject, "cluster:admin/xpack/security/role/get")?;
    let mut out = Map::new();
    let wanted: Vec<String> = match names {
        Some(l) => l.split(',').map(str::to_string).collect(),
        None => {
            let mut all: Vec<String> = BUILTIN_ROLES.iter().map(|s| s.to_string()).collect();
            all.extend(sec.store.data.lock().roles.keys().cloned());
            all
        }
    };
    for n in wanted {
        if let Some(r) = sec.store.role(&n) {
            out.insert(n, r.to_json());
        }
    }
    if out.is_empty() && names.is_some() {
        return Ok(RestResponse::json(404, json!({})));
    }
    Ok(RestResponse::ok(Value::Object(out)))
}

fn put_role(sec: &Security, subject: &Subject, name: &str, body: &[u8]) -> EsResult<RestResponse> {
    require(subject, "cluster:admin/xpack/security/role/put")?;
    if privileges::builtin(name).is_some() {
        return Err(validation(&format!(
            "Role [{name}] is reserved and may not be used."
        )));
    }
    let v = body_json(body)?;
    let role = Role::parse(name, &v)?;
    let mut d = sec.store.data.lock();
    let created = d.roles.insert(name.to_string(), role.to_json()).is_none();
    sec.store.save(&d)?;
    Ok(RestResponse::ok(json!({"role": {"created": created}})))
}

fn delete_role(sec: &Security, subject: &Subject, name: &str) -> EsResult<RestResponse> {
    require(subject, "cluster:admin/xpack/security/role/delete")?;
    if privileges::builtin(name).is_some() {
        return Err(validation(&format!(
            "role [{name}] is reserved and cannot be deleted"
        )));
    }
    let mut d = sec.store.data.lock();
    let found = d.roles.remove(name).is_some();
    if found {
        sec.store.save(&d)?;
    }
    Ok(RestResponse::json(
        if found { 200 } else { 404 },
        json!({"found": found}),
    ))
}

fn get_role_mappings(
    sec: &Security,
    subject: &Subject,
    names: Option<&str>,
) -> EsResult<RestResponse> {
    require(subject, "cluster:admin/xpack/security/role_mapping/get")?;
    let d = sec.store.data.lock();
    let mut out = Map::new();
    match names {
        Some(l) => {
            for n in l.split(',') {
                if let Some(m) = d.role_mappings.get(n) {
                    out.insert(n.to_string(), m.clone());
                }
            }
            if out.is_empty() {
                return Ok(RestResponse::json(404, json!({})));
            }
        }
        None => {
            for (n, m) in &d.role_mappings {
                out.insert(n.clone(), m.clone());
            }
        }
    }
    Ok(RestResponse::ok(Value::Object(out)))
}

fn put_role_mapping(
    sec: &Security,
    subject: &Subject,
    name: &str,
    body: &[u8],
) -> EsResult<RestResponse> {
    require(subject, "cluster:admin/xpack/security/role_mapping/put")?;
    let v = body_json(body)?;
    let mapping = super::role_mapping::Mapping::parse(name, &v)?;
    let mut d = sec.store.data.lock();
    let created = d
        .role_mappings
        .insert(name.to_string(), mapping.to_json())
        .is_none();
    sec.store.save(&d)?;
    Ok(RestResponse::ok(
        json!({"role_mapping": {"created": created}}),
    ))
}

fn delete_role_mapping(sec: &Security, subject: &Subject, name: &str) -> EsResult<RestResponse> {
    require(subject, "cluster:admin/xpack/security/role_mapping/delete")?;
    let mut d = sec.store.data.lock();
    let found = d.role_mappings.remove(name).is_some();
    if found {
        sec.store.save(&d)?;
    }
    Ok(RestResponse::json(
        if found { 200 } else { 404 },
        json!({"found": found}),
    ))
}

/// Whether the subject manages every API key (else only its own, `manage_own_api_key`).
fn manages_all_keys(subject: &Subject) -> bool {
    subject.can_cluster("cluster:admin/xpack/security/api_key/invalidate")
        && subject.roles.iter().any(|r| {
            r.cluster
                .iter()
                .any(|p| matches!(p.as_str(), "all" | "manage_security" | "manage_api_key"))
        })
}

fn create_api_key(sec: &Security, subject: &Subject, body: &[u8]) -> EsResult<RestResponse> {
    require(subject, "cluster:admin/xpack/security/api_key/create")?;
    if subject.api_key.is_some() {
        return Err(EsError::illegal_argument(
            "creating derived api keys requires an explicit role descriptor that is empty (has no privileges)",
        ));
    }
    let v = body_json(body)?;
    let obj = v
        .as_object()
        .ok_or_else(|| EsError::parsing("expected an object"))?;
    for k in obj.keys() {
        if !matches!(
            k.as_str(),
            "name" | "expiration" | "role_descriptors" | "metadata"
        ) {
            return Err(EsError::bad_request(
                "x_content_parse_exception",
                format!("[api_key_request] unknown field [{k}]"),
            ));
        }
    }
    let name = match obj.get("name") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err(validation("api key name is required")),
    };
    let expiration = match obj.get("expiration") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            let ms = lode_engine::settings::parse_time(s, "expiration")?;
            if ms <= 0 {
                return Err(validation("api key must not have negative expiration"));
            }
            Some(store::now_millis() + ms)
        }
        Some(_) => return Err(EsError::parsing("[expiration] must be a time value")),
    };
    let descriptors = privileges::parse_role_descriptors(obj.get("role_descriptors"))?;
    let role_descriptors: Map<String, Value> = descriptors
        .iter()
        .map(|(n, r)| (n.clone(), r.to_json()))
        .collect();
    let limited_by: Map<String, Value> = subject
        .role_names
        .iter()
        .zip(subject.roles.iter())
        .map(|(n, r)| (n.clone(), r.to_json()))
        .collect();
    let metadata = obj
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let id = store::random_token();
    let secret = store::random_token();
    let key = ApiKey {
        name: name.clone(),
        hash: store::sha256_hex(secret.as_bytes()),
        username: subject.username.clone(),
        realm: subject.realm.0.to_string(),
        creation: store::now_millis(),
        expiration,
        invalidated: false,
        invalidation: None,
        role_descriptors,
        limited_by,
        metadata,
    };
    let mut d = sec.store.data.lock();
    d.api_keys.insert(id.clone(), key);
    sec.store.save(&d)?;
    let mut out = json!({
        "id": id,
        "name": name,
        "api_key": secret,
        "encoded": store::encode_api_key(&id, &secret),
    });
    if let Some(e) = expiration {
        out["expiration"] = json!(e);
    }
    Ok(RestResponse::ok(out))
}

fn key_json(id: &str, k: &ApiKey) -> Value {
    let mut v = json!({
        "id": id,
        "name": k.name,
        "type": "rest",
        "creation": k.creation,
        "invalidated": k.invalidated,
        "username": k.username,
        "realm": k.realm,
        "metadata": k.metadata,
        "role_descriptors": k.role_descriptors,
    });
    if let Some(e) = k.expiration {
        v["expiration"] = json!(e);
    }
    if let Some(i) = k.invalidation {
        v["invalidation"] = json!(i);
    }
    v
}

/// The keys a get or invalidate selects (`id`/`ids`, `name` with `*` wildcards, `username`,
/// `realm_name`, `owner`), restricted to the subject's own unless it manages every key.
fn select(
    sec: &Security,
    subject: &Subject,
    ids: &[String],
    name: Option<&str>,
    username: Option<&str>,
    realm: Option<&str>,
    owner: bool,
) -> EsResult<Vec<String>> {
    let all = manages_all_keys(subject);
    if !all && !owner && username.is_some_and(|u| u != subject.username) {
        return Err(subject.cluster_denied("cluster:admin/xpack/security/api_key/get"));
    }
    let own_only = owner || !all;
    let d = sec.store.data.lock();
    Ok(d.api_keys
        .iter()
        .filter(|(id, k)| {
            (ids.is_empty() || ids.contains(id))
                && name.is_none_or(|n| privileges::glob(n, &k.name))
                && username.is_none_or(|u| u == k.username)
                && realm.is_none_or(|r| r == k.realm)
                && (!own_only || k.username == subject.username)
        })
        .map(|(id, _)| id.clone())
        .collect())
}

fn get_api_keys(
    sec: &Security,
    subject: &Subject,
    params: &BTreeMap<String, String>,
) -> EsResult<RestResponse> {
    require(subject, "cluster:admin/xpack/security/api_key/get")?;
    let ids: Vec<String> = params
        .get("id")
        .map(|s| vec![s.clone()])
        .unwrap_or_default();
    let owner = params
        .get("owner")
        .is_some_and(|v| v.is_empty() || v == "true");
    let selected = select(
        sec,
        subject,
        &ids,
        params.get("name").map(String::as_str),
        params.get("username").map(String::as_str),
        params.get("realm_name").map(String::as_str),
        owner,
    )?;
    let d = sec.store.data.lock();
    let keys: Vec<Value> = selected
        .iter()
        .filter_map(|id| d.api_keys.get(id).map(|k| key_json(id, k)))
        .collect();
    Ok(RestResponse::ok(json!({ "api_keys": keys })))
}

fn invalidate_api_keys(sec: &Security, subject: &Subject, body: &[u8]) -> EsResult<RestResponse> {
    require(subject, "cluster:admin/xpack/security/api_key/invalidate")?;
    let v = body_json(body)?;
    let mut ids: Vec<String> = Vec::new();
    if let Some(id) = v.get("id").and_then(Value::as_str) {
        ids.push(id.to_string());
    }
    if let Some(a) = v.get("ids") {
        ids.extend(string_array(a, "ids")?);
    }
    let name = v.get("name").and_then(Value::as_str);
    let username = v.get("username").and_then(Value::as_str);
    let realm = v.get("realm_name").and_then(Value::as_str);
    let owner = v.get("owner").and_then(Value::as_bool).unwrap_or(false);
    if ids.is_empty() && name.is_none() && username.is_none() && realm.is_none() && !owner {
        return Err(validation(
            "One of [api key id(s), api key name, username, realm name] must be specified if [owner] flag is false",
        ));
    }
    let selected = select(sec, subject, &ids, name, username, realm, owner)?;
    let mut d = sec.store.data.lock();
    let (mut done, mut before) = (Vec::new(), Vec::new());
    let now = store::now_millis();
    for id in selected {
        if let Some(k) = d.api_keys.get_mut(&id) {
            if k.invalidated {
                before.push(id);
            } else {
                k.invalidated = true;
                k.invalidation = Some(now);
                done.push(id);
            }
        }
    }
    if !done.is_empty() {
        sec.store.save(&d)?;
    }
    Ok(RestResponse::ok(json!({
        "invalidated_api_keys": done,
        "previously_invalidated_api_keys": before,
        "error_count": 0,
    })))
}
