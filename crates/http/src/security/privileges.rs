//! Privileges as Elasticsearch names them: cluster and index privileges, each a set of action
//! name patterns (ES's `ClusterPrivilegeResolver` and `IndexPrivilege`), role descriptors, the
//! built-in roles, and the check of one action against a set of roles.

use lode_engine::field_security::{patterns_subset, FieldGrant, FieldPermissions};
use lode_engine::{EsError, EsResult};
use serde_json::{json, Map, Value};

/// ES's wildcard patterns (`*`, `?`) over index names and action names.
pub use lode_engine::mapping::wildcard_match as glob;

/// The cluster privileges Lode knows, with the action patterns each grants (and, for `manage`,
/// the security actions it does not grant, as ES excludes them).
const CLUSTER_PRIVILEGES: &[(&str, &[&str])] = &[
    ("none", &[]),
    ("all", &["cluster:*"]),
    ("monitor", &["cluster:monitor/*"]),
    ("manage", &["cluster:*"]),
    (
        "manage_security",
        &["cluster:admin/xpack/security/*", "cluster:monitor/*"],
    ),
    ("read_security", &["cluster:admin/xpack/security/*/get"]),
    (
        "manage_api_key",
        &["cluster:admin/xpack/security/api_key/*"],
    ),
    (
        "manage_own_api_key",
        &["cluster:admin/xpack/security/api_key/*"],
    ),
    ("manage_index_templates", &["indices:admin/template/*"]),
    ("manage_ingest_pipelines", &["cluster:admin/ingest/*"]),
    ("manage_pipeline", &["cluster:admin/ingest/*"]),
    ("monitor_snapshot", &["cluster:admin/snapshot/get"]),
    ("manage_slm", &["cluster:admin/slm/*"]),
    ("manage_ilm", &["cluster:admin/ilm/*"]),
    ("read_ilm", &["cluster:admin/ilm/get"]),
    ("create_snapshot", &["cluster:admin/snapshot/create"]),
    ("cancel_task", &["cluster:admin/tasks/cancel"]),
    ("transport_client", &["cluster:monitor/nodes/liveness"]),
];

/// The index privileges, with the action patterns each grants (ES's `IndexPrivilege`).
const INDEX_PRIVILEGES: &[(&str, &[&str])] = &[
    ("none", &[]),
    ("all", &["indices:*"]),
    ("read", &["indices:data/read/*"]),
    (
        "read_cross_cluster",
        &["internal:transport/proxy/indices:data/read/*"],
    ),
    (
        "write",
        &["indices:data/write/*", "indices:admin/mapping/auto_put"],
    ),
    (
        "index",
        &[
            "indices:data/write/index*",
            "indices:data/write/update*",
            "indices:data/write/bulk*",
            "indices:admin/mapping/auto_put",
        ],
    ),
    (
        "create",
        &[
            "indices:data/write/index*",
            "indices:data/write/bulk*",
            "indices:admin/mapping/auto_put",
        ],
    ),
    (
        "create_doc",
        &[
            "indices:data/write/index*",
            "indices:data/write/bulk*",
            "indices:admin/mapping/auto_put",
        ],
    ),
    (
        "delete",
        &["indices:data/write/delete*", "indices:data/write/bulk*"],
    ),
    (
        "create_index",
        &["indices:admin/create", "indices:admin/auto_create"],
    ),
    ("delete_index", &["indices:admin/delete"]),
    ("manage", &["indices:monitor/*", "indices:admin/*"]),
    ("monitor", &["indices:monitor/*"]),
    (
        "maintenance",
        &[
            "indices:admin/refresh*",
            "indices:admin/flush*",
            "indices:admin/synced_flush",
            "indices:admin/forcemerge*",
        ],
    ),
    (
        "view_index_metadata",
        &[
            "indices:admin/aliases/get",
            "indices:admin/get",
            "indices:admin/mappings/get",
            "indices:admin/mappings/fields/get",
            "indices:monitor/settings/get",
            "indices:admin/resolve/index",
            "indices:admin/analyze",
        ],
    ),
    ("manage_follow_index", &["indices:admin/xpack/ccr/*"]),
    ("auto_configure", &["indices:admin/auto_create"]),
];

fn known_cluster(name: &str) -> bool {
    CLUSTER_PRIVILEGES.iter().any(|(n, _)| *n == name)
}

fn known_index(name: &str) -> bool {
    INDEX_PRIVILEGES.iter().any(|(n, _)| *n == name)
}

/// Whether cluster privilege (or action pattern) `privilege` grants `action`.
pub fn cluster_grants(privilege: &str, action: &str) -> bool {
    if privilege == "manage" && action.starts_with("cluster:admin/xpack/security/") {
        return false;
    }
    match CLUSTER_PRIVILEGES.iter().find(|(n, _)| *n == privilege) {
        Some((_, patterns)) => patterns.iter().any(|p| glob(p, action)),
        // an action pattern (`cluster:monitor/*`) given as a privilege
        None => privilege.contains(':') && glob(privilege, action),
    }
}

/// Whether index privilege (or action pattern) `privilege` grants `action`.
pub fn index_grants(privilege: &str, action: &str) -> bool {
    match INDEX_PRIVILEGES.iter().find(|(n, _)| *n == privilege) {
        Some((_, patterns)) => patterns.iter().any(|p| glob(p, action)),
        None => privilege.contains(':') && glob(privilege, action),
    }
}

/// The index privileges that grant `action`, as ES lists them in its 403 message ("this
/// action is granted by the index privileges [read,all]").
pub fn index_privileges_granting(action: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = INDEX_PRIVILEGES
        .iter()
        .filter(|(n, p)| *n != "none" && p.iter().any(|p| glob(p, action)))
        .map(|(n, _)| *n)
        .collect();
    // ES lists `all` last
    out.sort_by_key(|n| *n == "all");
    out
}

/// The cluster privileges that grant `action` (for the 403 message).
pub fn cluster_privileges_granting(action: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = CLUSTER_PRIVILEGES
        .iter()
        .filter(|(n, _)| *n != "none" && cluster_grants(n, action))
        .map(|(n, _)| *n)
        .collect();
    out.sort_by_key(|n| *n == "all");
    out
}

fn patterns_of<'a>(table: &'a [(&'a str, &'a [&'a str])], name: &'a str) -> Vec<&'a str> {
    match table.iter().find(|(n, _)| *n == name) {
        Some((_, p)) => p.to_vec(),
        None if name.contains(':') => vec![name],
        None => vec![],
    }
}

/// Whether `roles` together hold cluster privilege `privilege` (each of its action patterns is
/// covered by a pattern of a privilege they grant), for `_has_privileges`.
pub fn roles_have_cluster(roles: &[Role], privilege: &str) -> bool {
    if roles
        .iter()
        .any(|r| r.cluster.iter().any(|g| g == privilege || g == "all"))
    {
        return true;
    }
    let wanted = patterns_of(CLUSTER_PRIVILEGES, privilege);
    if wanted.is_empty() && privilege != "none" {
        return false;
    }
    wanted.iter().all(|w| {
        roles.iter().any(|r| {
            r.cluster.iter().any(|g| {
                // `manage` never covers a pattern that reaches the security actions
                !(g == "manage"
                    && (w.starts_with("cluster:admin/xpack/security/")
                        || glob(w, "cluster:admin/xpack/security/x")))
                    && patterns_of(CLUSTER_PRIVILEGES, g)
                        .iter()
                        .any(|gp| glob(gp, w))
            })
        })
    })
}

/// Whether `roles` together hold index privilege `privilege` on the index, alias or pattern
/// `name` (each of its action patterns covered by a privilege of an entry naming it).
pub fn roles_have_index(roles: &[Role], privilege: &str, name: &str) -> bool {
    let wanted = patterns_of(INDEX_PRIVILEGES, privilege);
    if wanted.is_empty() && privilege != "none" {
        return false;
    }
    wanted.iter().all(|w| {
        roles.iter().any(|r| {
            r.indices.iter().any(|ip| {
                ip.names.iter().any(|n| glob(n, name))
                    && ip.privileges.iter().any(|g| {
                        patterns_of(INDEX_PRIVILEGES, g)
                            .iter()
                            .any(|gp| glob(gp, w))
                    })
            })
        })
    })
}

/// One `indices` entry of a role.
#[derive(Clone, Debug, PartialEq)]
pub struct IndicesPrivileges {
    pub names: Vec<String>,
    pub privileges: Vec<String>,
    pub allow_restricted_indices: bool,
    /// document-level security: the query (a JSON object) documents must match
    pub query: Option<Value>,
    /// field-level security: the fields the entry grants (`None`: every field)
    pub field_security: Option<FieldGrant>,
}

/// A role descriptor (`cluster`, `indices`; `metadata` kept as given).
#[derive(Clone, Debug, PartialEq)]
pub struct Role {
    pub cluster: Vec<String>,
    pub indices: Vec<IndicesPrivileges>,
    pub run_as: Vec<String>,
    pub metadata: Value,
    pub transient_metadata_enabled: bool,
}

fn string_list(v: &Value, field: &str, role: &str) -> EsResult<Vec<String>> {
    match v {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(a) => a
            .iter()
            .map(|x| {
                x.as_str().map(str::to_string).ok_or_else(|| {
                    EsError::parsing(format!(
                        "failed to parse role [{role}]. could not parse [{field}] field. expected a string array"
                    ))
                })
            })
            .collect(),
        _ => Err(EsError::parsing(format!(
            "failed to parse role [{role}]. could not parse [{field}] field. expected a string array"
        ))),
    }
}

impl Role {
    /// Parses a role descriptor as ES's `RoleDescriptor.parse`, refusing unknown fields and
    /// unknown privileges with ES's errors.
    pub fn parse(name: &str, v: &Value) -> EsResult<Role> {
        let obj = v.as_object().ok_or_else(|| {
            EsError::parsing(format!(
                "failed to parse role [{name}]. expected an object but found [{v}] instead"
            ))
        })?;
        let mut role = Role {
            cluster: vec![],
            indices: vec![],
            run_as: vec![],
            metadata: json!({}),
            transient_metadata_enabled: true,
        };
        for (k, val) in obj {
            match k.as_str() {
                "cluster" => role.cluster = string_list(val, "cluster", name)?,
                "run_as" => role.run_as = string_list(val, "run_as", name)?,
                "metadata" => role.metadata = val.clone(),
                "transient_metadata" => {}
                "description" => {}
                "indices" | "index" => {
                    let arr = val.as_array().ok_or_else(|| {
                        EsError::parsing(format!(
                            "failed to parse indices privileges for role [{name}]. expected field [{k}] value to be an array, but found [{val}] instead"
                        ))
                    })?;
                    for e in arr {
                        role.indices.push(parse_indices(name, e)?);
                    }
                }
                "applications" | "global" | "remote_indices" | "remote_cluster" => {
                    let empty = val.as_array().is_some_and(|a| a.is_empty())
                        || val.as_object().is_some_and(|o| o.is_empty());
                    if !empty {
                        return Err(EsError::illegal_argument(format!(
                            "[{k}] privileges in role descriptors are not supported by Lode"
                        )));
                    }
                }
                other => {
                    return Err(EsError::parsing(format!(
                        "failed to parse role [{name}]. unexpected field [{other}]"
                    )))
                }
            }
        }
        for c in &role.cluster {
            if !known_cluster(c) && !c.starts_with("cluster:") {
                return Err(EsError::illegal_argument(format!(
                    "unknown cluster privilege [{c}]. a privilege must be either one of the predefined cluster privilege names [{}] or a pattern over one of the available cluster actions",
                    CLUSTER_PRIVILEGES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(",")
                )));
            }
        }
        Ok(role)
    }

    pub fn to_json(&self) -> Value {
        json!({
            "cluster": self.cluster,
            "indices": self.indices.iter().map(|i| {
                let mut o = json!({
                    "names": i.names,
                    "privileges": i.privileges,
                    "allow_restricted_indices": i.allow_restricted_indices,
                });
                if let Some(fs) = &i.field_security {
                    let mut f = json!({});
                    if let Some(g) = &fs.grant {
                        f["grant"] = json!(g);
                    }
                    if !fs.except.is_empty() {
                        f["except"] = json!(fs.except);
                    }
                    o["field_security"] = f;
                }
                if let Some(q) = &i.query {
                    // ES returns the query as the string it stores
                    o["query"] = json!(q.to_string());
                }
                o
            }).collect::<Vec<_>>(),
            "applications": [],
            "run_as": self.run_as,
            "metadata": self.metadata,
            "transient_metadata": {"enabled": self.transient_metadata_enabled},
        })
    }

    /// Whether this role grants cluster `action`.
    pub fn grants_cluster(&self, action: &str) -> bool {
        self.cluster.iter().any(|p| cluster_grants(p, action))
    }

    /// Whether this role grants index `action` on the index, alias or pattern `name`.
    pub fn grants_index(&self, action: &str, name: &str) -> bool {
        self.indices.iter().any(|ip| {
            ip.names.iter().any(|n| glob(n, name))
                && (!name.starts_with(".security") || ip.allow_restricted_indices)
                && ip.privileges.iter().any(|p| index_grants(p, action))
        })
    }
}

fn parse_indices(role: &str, v: &Value) -> EsResult<IndicesPrivileges> {
    let obj = v.as_object().ok_or_else(|| {
        EsError::parsing(format!(
            "failed to parse indices privileges for role [{role}]. expected field [indices] value to be an array of objects"
        ))
    })?;
    let mut out = IndicesPrivileges {
        names: vec![],
        privileges: vec![],
        allow_restricted_indices: false,
        query: None,
        field_security: None,
    };
    for (k, val) in obj {
        match k.as_str() {
            "names" => out.names = string_list(val, "names", role)?,
            "privileges" => out.privileges = string_list(val, "privileges", role)?,
            "allow_restricted_indices" => {
                out.allow_restricted_indices = val.as_bool().ok_or_else(|| {
                    EsError::parsing(format!(
                        "failed to parse indices privileges for role [{role}]. expected field [allow_restricted_indices] value to be a boolean"
                    ))
                })?
            }
            "query" => out.query = parse_dls_query(role, val)?,
            "field_security" => out.field_security = parse_field_security(role, val)?,
            other => {
                return Err(EsError::parsing(format!(
                    "failed to parse indices privileges for role [{role}]. unexpected field [{other}]"
                )))
            }
        }
    }
    if out.names.is_empty() {
        return Err(EsError::parsing(format!(
            "failed to parse indices privileges for role [{role}]. missing required [names] field"
        )));
    }
    if out.privileges.is_empty() {
        return Err(EsError::parsing(format!(
            "failed to parse indices privileges for role [{role}]. missing required [privileges] field"
        )));
    }
    for n in &out.names {
        if n.starts_with('/') {
            return Err(EsError::illegal_argument(format!(
                "regular expression index patterns [{n}] are not supported by Lode"
            )));
        }
    }
    for p in &out.privileges {
        if !known_index(p) && !p.starts_with("indices:") {
            return Err(EsError::illegal_argument(format!(
                "unknown index privilege [{p}]. a privilege must be either one of the predefined fixed indices privileges [{}] or a pattern over one of the available index actions",
                INDEX_PRIVILEGES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(",")
            )));
        }
    }
    Ok(out)
}

/// A role's `field_security`: `grant` and `except`, each a string array (ES's
/// `RoleDescriptor#parseIndex`); `except` must be a subset of `grant`.
fn parse_field_security(role: &str, v: &Value) -> EsResult<Option<FieldGrant>> {
    let parse_err = |msg: String| {
        EsError::new(
            400,
            "parse_exception",
            format!("failed to parse indices privileges for role [{role}]. {msg}"),
        )
    };
    let obj = match v {
        Value::Null => return Ok(None),
        Value::Object(o) => o,
        other => {
            return Err(parse_err(format!(
                "expected START_OBJECT but got {} in \"field_security\".",
                token_name(other)
            )))
        }
    };
    if obj.is_empty() {
        return Err(parse_err("\"field_security\" must not be empty.".into()));
    }
    let list = |field: &str, val: &Value| -> EsResult<Vec<String>> {
        let not_strings = |x: &Value| {
            parse_err(format!(
                "could not parse [{field}] field. expected a string array but found [{}] instead",
                token_name(x)
            ))
        };
        match val {
            Value::Null => Err(parse_err(format!("{field} must not be null."))),
            Value::String(s) => Ok(vec![s.clone()]),
            Value::Array(a) => a
                .iter()
                .map(|x| x.as_str().map(str::to_string).ok_or_else(|| not_strings(x)))
                .collect(),
            other => Err(not_strings(other)),
        }
    };
    let mut grant: Option<Vec<String>> = None;
    let mut except: Option<Vec<String>> = None;
    for (k, val) in obj {
        match k.as_str() {
            "grant" => grant = Some(list("grant", val)?),
            "except" => except = Some(list("except", val)?),
            other => {
                return Err(parse_err(format!(
                    "\"field_security\" only accepts options grant and except, but got: {other}"
                )))
            }
        }
    }
    if grant.is_none() && except.is_some() {
        return Err(parse_err(
            "field_security requires grant if except is given".to_string(),
        ));
    }
    let except = except.unwrap_or_default();
    for p in grant.iter().flatten().chain(&except) {
        if p.starts_with('/') {
            return Err(EsError::illegal_argument(format!(
                "regular expression field patterns [{p}] are not supported by Lode"
            )));
        }
    }
    let grant_patterns = grant.clone().unwrap_or_else(|| vec!["*".to_string()]);
    if !patterns_subset(&except, &grant_patterns) {
        // ES's `checkIfExceptFieldsIsSubsetOfGrantedFields`
        return Err(EsError::new(
            400,
            "parse_exception",
            format!(
                "failed to parse indices privileges for role [{role}] - Exceptions for field permissions must be a subset of the granted fields but {} is not a subset of {}",
                except.join(","),
                grant_patterns.join(",")
            ),
        ));
    }
    Ok(Some(FieldGrant { grant, except }))
}

/// The name of the JSON token a value starts with, as Jackson's `JsonToken` (ES's messages).
fn token_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "VALUE_NULL",
        Value::Bool(true) => "VALUE_TRUE",
        Value::Bool(false) => "VALUE_FALSE",
        Value::Number(n) if n.is_f64() => "VALUE_NUMBER_FLOAT",
        Value::Number(_) => "VALUE_NUMBER_INT",
        Value::String(_) => "VALUE_STRING",
        Value::Array(_) => "START_ARRAY",
        Value::Object(_) => "START_OBJECT",
    }
}

/// The field-level security of a set of roles for `action` on an index reached by `names`,
/// as ES's `IndicesPermission`: the union of the `field_security` of the entries granting
/// the action on one of the names; an entry without it grants every field. `None`: no
/// restriction.
pub fn fls_permissions(roles: &[Role], names: &[&str], action: &str) -> Option<FieldPermissions> {
    let mut groups: Vec<FieldGrant> = Vec::new();
    for r in roles {
        for ip in &r.indices {
            if !names.iter().any(|n| ip.names.iter().any(|p| glob(p, n))) {
                continue;
            }
            if !ip.privileges.iter().any(|p| index_grants(p, action)) {
                continue;
            }
            match &ip.field_security {
                None => return None,
                Some(g) => {
                    if !groups.contains(g) {
                        groups.push(g.clone())
                    }
                }
            }
        }
    }
    FieldPermissions::union(groups)
}

/// Whether document- or field-level security restricts what `roles` grant for `action` on an
/// index reached by `names`, as ES's `IndicesAccessControl` for that action: among the
/// entries granting it, all have a query, or their `field_security` together does not grant
/// every field. ES refuses updates then (`UpdateRequestInterceptor`,
/// `BulkShardRequestInterceptor`): they would write back what the subject cannot see.
pub fn dls_or_fls_for(roles: &[Role], names: &[&str], action: &str) -> bool {
    let entries: Vec<&IndicesPrivileges> = roles
        .iter()
        .flat_map(|r| &r.indices)
        .filter(|ip| names.iter().any(|n| ip.names.iter().any(|p| glob(p, n))))
        .filter(|ip| ip.privileges.iter().any(|p| index_grants(p, action)))
        .collect();
    if entries.is_empty() {
        return false;
    }
    let dls = entries.iter().all(|ip| ip.query.is_some());
    let fls = entries
        .iter()
        .map(|ip| ip.field_security.clone())
        .collect::<Option<Vec<FieldGrant>>>()
        .and_then(FieldPermissions::union)
        .is_some();
    dls || fls
}

/// A role's `query`: an object, or a string holding one (as ES stores it); `null` is no query.
/// Templates (`{"template": ...}`, Mustache) are refused.
fn parse_dls_query(role: &str, v: &Value) -> EsResult<Option<Value>> {
    let q = match v {
        Value::Null => return Ok(None),
        Value::String(s) if s.trim().is_empty() => return Ok(None),
        Value::String(s) => serde_json::from_str::<Value>(s).map_err(|e| {
            EsError::parsing(format!(
                "failed to parse indices privileges for role [{role}]. could not parse [query] field: {e}"
            ))
        })?,
        other => other.clone(),
    };
    let Some(obj) = q.as_object() else {
        return Err(EsError::parsing(format!(
            "failed to parse indices privileges for role [{role}]. expected field [query] value to be a string or an object, but found [{v}] instead"
        )));
    };
    if obj.contains_key("template") {
        return Err(EsError::illegal_argument(
            "templated role queries ([query.template]) are not supported by Lode",
        ));
    }
    Ok(Some(q))
}

/// The document-level security filter of a set of roles on an index reached by `names` (the
/// index and the aliases through which the request reached it), as ES's
/// `IndicesPermission`: among the entries granting the read action on one of the names, any
/// without a query leaves the index unrestricted; otherwise a document must match one of the
/// queries. `None`: no restriction.
pub fn dls_filter(roles: &[Role], names: &[&str]) -> Option<Value> {
    let mut queries: Vec<Value> = Vec::new();
    for r in roles {
        for ip in &r.indices {
            if !names.iter().any(|n| ip.names.iter().any(|p| glob(p, n))) {
                continue;
            }
            if !ip
                .privileges
                .iter()
                .any(|p| index_grants(p, "indices:data/read/search"))
            {
                continue;
            }
            match &ip.query {
                None => return None,
                Some(q) => {
                    if !queries.contains(q) {
                        queries.push(q.clone())
                    }
                }
            }
        }
    }
    match queries.len() {
        0 => None,
        1 => queries.pop(),
        _ => Some(json!({"bool": {"should": queries, "minimum_should_match": 1}})),
    }
}

/// The built-in (reserved) roles Lode defines, as ES's `ReservedRolesStore`.
pub fn builtin(name: &str) -> Option<Role> {
    let idx = |names: &[&str], privileges: &[&str], restricted: bool| IndicesPrivileges {
        names: names.iter().map(|s| s.to_string()).collect(),
        privileges: privileges.iter().map(|s| s.to_string()).collect(),
        allow_restricted_indices: restricted,
        query: None,
        field_security: None,
    };
    let role = |cluster: &[&str], indices: Vec<IndicesPrivileges>| Role {
        cluster: cluster.iter().map(|s| s.to_string()).collect(),
        indices,
        run_as: vec![],
        metadata: json!({"_reserved": true}),
        transient_metadata_enabled: true,
    };
    Some(match name {
        "superuser" => {
            let mut r = role(&["all"], vec![idx(&["*"], &["all"], true)]);
            r.run_as = vec!["*".into()];
            r
        }
        "viewer" => role(
            &["read_ilm", "read_security"],
            vec![idx(&["*"], &["read", "view_index_metadata"], false)],
        ),
        "editor" => role(
            &["read_ilm", "read_security"],
            vec![idx(&["*"], &["all"], false)],
        ),
        "monitoring_user" => role(&["monitor"], vec![idx(&["*"], &["monitor"], false)]),
        "remote_monitoring_collector" => role(&["monitor"], vec![idx(&["*"], &["monitor"], false)]),
        "kibana_system" => role(
            &["monitor", "manage_index_templates", "manage_api_key"],
            vec![idx(&[".kibana*"], &["all"], false)],
        ),
        "ingest_admin" => role(&["manage_index_templates", "manage_pipeline"], vec![]),
        _ => return None,
    })
}

pub const BUILTIN_ROLES: &[&str] = &[
    "superuser",
    "viewer",
    "editor",
    "monitoring_user",
    "remote_monitoring_collector",
    "kibana_system",
    "ingest_admin",
];

/// Parses `role_descriptors` (an object of role name → descriptor) as given to create an API key.
pub fn parse_role_descriptors(v: Option<&Value>) -> EsResult<Vec<(String, Role)>> {
    let Some(v) = v else { return Ok(vec![]) };
    let obj: &Map<String, Value> = v.as_object().ok_or_else(|| {
        EsError::parsing(
            "failed to parse api key request. expected [role_descriptors] to be an object",
        )
    })?;
    obj.iter()
        .map(|(k, d)| Ok((k.clone(), Role::parse(k, d)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_matches_as_es_index_patterns() {
        assert!(glob("logs-*", "logs-a"));
        assert!(glob("*", "anything"));
        assert!(glob("a*c*e", "abcde"));
        assert!(!glob("logs-*", "metrics"));
        assert!(glob("logs-a", "logs-a"));
        assert!(!glob("logs-a", "logs-ab"));
        assert!(glob("cluster:monitor/*", "cluster:monitor/health"));
    }

    #[test]
    fn index_privileges_grant_es_actions() {
        assert!(index_grants("read", "indices:data/read/search"));
        assert!(!index_grants("read", "indices:data/write/index"));
        assert!(index_grants("write", "indices:data/write/bulk"));
        assert!(index_grants("index", "indices:data/write/update"));
        assert!(!index_grants("index", "indices:data/write/delete"));
        assert!(index_grants("create_index", "indices:admin/create"));
        assert!(index_grants("manage", "indices:admin/mappings/get"));
        assert!(!index_grants("manage", "indices:data/read/search"));
        assert!(index_grants("all", "indices:data/read/search"));
        assert!(index_grants(
            "view_index_metadata",
            "indices:admin/mappings/get"
        ));
        assert!(index_grants("indices:data/read/*", "indices:data/read/get"));
        assert_eq!(
            index_privileges_granting("indices:data/read/search"),
            vec!["read", "all"]
        );
    }

    #[test]
    fn cluster_manage_excludes_security() {
        assert!(cluster_grants("manage", "cluster:admin/settings/update"));
        assert!(!cluster_grants(
            "manage",
            "cluster:admin/xpack/security/user/put"
        ));
        assert!(cluster_grants(
            "manage_security",
            "cluster:admin/xpack/security/user/put"
        ));
        assert!(cluster_grants("monitor", "cluster:monitor/health"));
        assert!(!cluster_grants("monitor", "cluster:admin/settings/update"));
        assert!(cluster_grants(
            "all",
            "cluster:admin/xpack/security/user/put"
        ));
    }

    #[test]
    fn privileges_are_held_when_covered() {
        let r = Role::parse(
            "r",
            &json!({"cluster": ["manage"], "indices": [
                {"names": ["logs-*"], "privileges": ["read"]},
                {"names": ["logs-a"], "privileges": ["all"]}]}),
        )
        .unwrap();
        let roles = [r];
        assert!(roles_have_cluster(&roles, "monitor"));
        assert!(roles_have_cluster(&roles, "manage"));
        assert!(!roles_have_cluster(&roles, "manage_security"));
        assert!(!roles_have_cluster(&roles, "all"));
        assert!(roles_have_index(&roles, "read", "logs-b"));
        assert!(!roles_have_index(&roles, "write", "logs-b"));
        assert!(roles_have_index(&roles, "write", "logs-a"));
        assert!(roles_have_index(&roles, "manage", "logs-a"));
        assert!(!roles_have_index(&roles, "read", "metrics"));
        assert!(!roles_have_index(&roles, "bogus", "logs-a"));
    }

    #[test]
    fn roles_parse_and_check() {
        let r = Role::parse(
            "r",
            &json!({"cluster": ["monitor"], "indices": [{"names": ["logs-a*"], "privileges": ["read"]}]}),
        )
        .unwrap();
        assert!(r.grants_index("indices:data/read/search", "logs-a"));
        assert!(!r.grants_index("indices:data/read/search", "logs-b"));
        assert!(!r.grants_index("indices:data/write/index", "logs-a"));
        assert!(r.grants_cluster("cluster:monitor/health"));
        let e = Role::parse("r", &json!({"cluster": ["bogus"]})).unwrap_err();
        assert_eq!(e.kind, "illegal_argument_exception");
        assert!(e.reason.starts_with("unknown cluster privilege [bogus]"));
        let e = Role::parse(
            "r",
            &json!({"indices": [{"names": ["x"], "privileges": ["rd"]}]}),
        )
        .unwrap_err();
        assert!(e.reason.starts_with("unknown index privilege [rd]"));
        let e = Role::parse("r", &json!({"clusterx": []})).unwrap_err();
        assert_eq!(e.kind, "parsing_exception");
        assert!(builtin("superuser")
            .unwrap()
            .grants_index("indices:admin/delete", "x"));
        assert!(!builtin("viewer")
            .unwrap()
            .grants_index("indices:data/write/index", "x"));
        assert!(builtin("editor")
            .unwrap()
            .grants_index("indices:data/write/index", "x"));
    }

    const READ: &str = "indices:data/read/search";

    #[test]
    fn field_security_parses_as_es() {
        let r = Role::parse(
            "r",
            &json!({"indices": [
                {"names": ["logs-*"], "privileges": ["read"],
                 "field_security": {"grant": ["customer.*", "title"], "except": ["customer.handle"]}},
                {"names": ["logs-*"], "privileges": ["read"],
                 "field_security": {"grant": ["body"]}},
                {"names": ["open"], "privileges": ["read"]},
                {"names": ["open", "meta"], "privileges": ["view_index_metadata"],
                 "field_security": {"grant": []}}]}),
        )
        .unwrap();
        assert_eq!(
            r.to_json()["indices"][0]["field_security"],
            json!({"grant": ["customer.*", "title"], "except": ["customer.handle"]})
        );
        assert_eq!(
            r.to_json()["indices"][1]["field_security"],
            json!({"grant": ["body"]})
        );
        assert!(r.to_json()["indices"][2].get("field_security").is_none());
        let roles = [r];
        let p = fls_permissions(&roles, &["logs-a"], READ).unwrap();
        assert!(p.allows("title") && p.allows("body") && p.allows("customer.email"));
        assert!(!p.allows("customer.handle") && !p.allows("secret"));
        // an entry without field_security grants every field
        assert!(fls_permissions(&roles, &["open"], READ).is_none());
        // entries that do not grant reading do not restrict
        assert!(fls_permissions(&roles, &["meta"], READ).is_none());

        let err = |fs: Value| {
            Role::parse(
                "r",
                &json!({"indices": [{"names": ["a"], "privileges": ["read"], "field_security": fs}]}),
            )
            .unwrap_err()
        };
        let e = err(json!({"grant": ["f1", "f2"], "except": ["f3"]}));
        assert_eq!(e.kind, "parse_exception");
        assert_eq!(
            e.reason,
            "failed to parse indices privileges for role [r] - Exceptions for field permissions must be a subset of the granted fields but f3 is not a subset of f1,f2"
        );
        let p = "failed to parse indices privileges for role [r]. ";
        assert_eq!(
            err(json!({"except": ["f3"]})).reason,
            format!("{p}field_security requires grant if except is given")
        );
        assert_eq!(
            err(json!({"grant": ["a"], "other": []})).reason,
            format!("{p}\"field_security\" only accepts options grant and except, but got: other")
        );
        assert_eq!(
            err(json!({})).reason,
            format!("{p}\"field_security\" must not be empty.")
        );
        assert_eq!(
            err(json!({"grant": null})).reason,
            format!("{p}grant must not be null.")
        );
        assert!(err(json!({"grant": [1]}))
            .reason
            .contains("expected a string array but found [VALUE_NUMBER_INT]"));
        assert_eq!(
            err(json!(["a"])).reason,
            format!("{p}expected START_OBJECT but got START_ARRAY in \"field_security\".")
        );
        // metadata fields are always granted: excepting one is not a subset of the grant
        assert!(err(json!({"grant": ["field*"], "except": ["_id"]}))
            .reason
            .contains("must be a subset"));
        // except inside a wildcard grant is fine
        assert!(Role::parse(
            "r",
            &json!({"indices": [{"names": ["a"], "privileges": ["read"],
                "field_security": {"grant": ["*"], "except": ["customer.handle", "x*"]}}]}),
        )
        .is_ok());
    }
}
