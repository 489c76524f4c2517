//! Role mappings (`/_security/role_mapping/{name}`), as ES's `ExpressionRoleMapping` and its
//! rules expressions (`field`, `any`, `all`, `except`) over a user's `username`, `dn`,
//! `groups`, `realm.name` and `metadata.*`.
//!
//! As in Elasticsearch, role mappings assign roles to users of the realms that do not store
//! roles themselves (LDAP, Active Directory, PKI, SAML, OIDC, JWT, Kerberos): the native and
//! file realms (and the reserved realm of `elastic`) take their users' roles from the users
//! alone, so a mapping never changes what a native user may do. Lode has only those realms:
//! mappings are stored, validated, listed and deleted as ES does, and [`Mapping::roles_for`]
//! evaluates them for a user model, ready for a realm that maps.

use lode_engine::{EsError, EsResult};
use serde_json::{json, Map, Value};

fn parse_error(msg: impl Into<String>) -> EsError {
    EsError::bad_request("parse_exception", msg)
}

/// A rules expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Rule {
    Any(Vec<Rule>),
    All(Vec<Rule>),
    Except(Box<Rule>),
    /// a field and the values any of which it may match
    Field(String, Vec<Value>),
}

/// What a rule is evaluated against: ES's `ExpressionModel` of a user.
#[derive(Clone, Debug, Default)]
pub struct UserModel {
    pub username: String,
    pub dn: Option<String>,
    pub groups: Vec<String>,
    pub realm_name: String,
    pub metadata: Map<String, Value>,
}

impl UserModel {
    fn values(&self, field: &str) -> Vec<Value> {
        match field {
            "username" => vec![json!(self.username)],
            "dn" => self.dn.iter().map(|d| json!(d)).collect(),
            "groups" => self.groups.iter().map(|g| json!(g)).collect(),
            "realm.name" => vec![json!(self.realm_name)],
            f => match f.strip_prefix("metadata.") {
                Some(k) => match self.metadata.get(k) {
                    Some(Value::Array(a)) => a.clone(),
                    Some(v) => vec![v.clone()],
                    None => vec![Value::Null],
                },
                None => vec![],
            },
        }
    }
}

/// Whether `value` (a user's) matches the rule's `pattern`: strings as `/regex/` (anchored,
/// as Lucene's automata) or wildcards (`*`, `?`), other values by equality.
fn value_matches(pattern: &Value, value: &Value) -> bool {
    match (pattern, value) {
        (Value::String(p), Value::String(v)) => {
            if p.len() >= 2 && p.starts_with('/') && p.ends_with('/') {
                regex::Regex::new(&format!("^(?:{})$", &p[1..p.len() - 1]))
                    .is_ok_and(|r| r.is_match(v))
            } else {
                wildcard(p.as_bytes(), v.as_bytes())
            }
        }
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (a, b) => a == b,
    }
}

fn wildcard(p: &[u8], v: &[u8]) -> bool {
    match p.split_first() {
        None => v.is_empty(),
        Some((b'*', rest)) => (0..=v.len()).any(|i| wildcard(rest, &v[i..])),
        Some((b'?', rest)) => !v.is_empty() && wildcard(rest, &v[1..]),
        Some((c, rest)) => v.first() == Some(c) && wildcard(rest, &v[1..]),
    }
}

impl Rule {
    pub fn parse(v: &Value) -> EsResult<Rule> {
        let obj = v.as_object().ok_or_else(|| {
            parse_error(format!(
                "failed to parse rules expression. expected an object but found [{v}] instead"
            ))
        })?;
        if obj.len() != 1 {
            return Err(parse_error(format!(
                "failed to parse rules expression. expected a single field but found [{}] fields",
                obj.len()
            )));
        }
        let (k, val) = obj.iter().next().expect("one field");
        match k.as_str() {
            "any" | "all" => {
                let arr = val.as_array().ok_or_else(|| {
                    parse_error(format!(
                        "failed to parse rules expression. field [{k}] must be an array"
                    ))
                })?;
                let rules = arr.iter().map(Rule::parse).collect::<EsResult<Vec<_>>>()?;
                Ok(if k == "any" {
                    Rule::Any(rules)
                } else {
                    Rule::All(rules)
                })
            }
            "except" => Ok(Rule::Except(Box::new(Rule::parse(val)?))),
            "field" => {
                let f = val.as_object().ok_or_else(|| {
                    parse_error("failed to parse rules expression. field [field] must be an object")
                })?;
                if f.len() != 1 {
                    return Err(parse_error(format!(
                        "failed to parse rules expression. expected a single field but found [{}] fields",
                        f.len()
                    )));
                }
                let (name, values) = f.iter().next().expect("one field");
                let values = match values {
                    Value::Array(a) => a.clone(),
                    Value::Object(_) => {
                        return Err(parse_error(format!(
                            "failed to parse rules expression. expected a field value but found [{values}] instead"
                        )))
                    }
                    v => vec![v.clone()],
                };
                for v in &values {
                    if matches!(v, Value::Object(_) | Value::Array(_)) {
                        return Err(parse_error(format!(
                            "failed to parse rules expression. expected a field value but found [{v}] instead"
                        )));
                    }
                }
                Ok(Rule::Field(name.clone(), values))
            }
            other => Err(parse_error(format!(
                "failed to parse rules expression. field [{other}] is not recognised"
            ))),
        }
    }

    pub fn to_json(&self) -> Value {
        match self {
            Rule::Any(r) => json!({"any": r.iter().map(Rule::to_json).collect::<Vec<_>>()}),
            Rule::All(r) => json!({"all": r.iter().map(Rule::to_json).collect::<Vec<_>>()}),
            Rule::Except(r) => json!({"except": r.to_json()}),
            Rule::Field(name, values) => {
                let v = if values.len() == 1 {
                    values[0].clone()
                } else {
                    Value::Array(values.clone())
                };
                json!({"field": {name: v}})
            }
        }
    }

    pub fn matches(&self, user: &UserModel) -> bool {
        match self {
            Rule::Any(r) => r.iter().any(|x| x.matches(user)),
            Rule::All(r) => r.iter().all(|x| x.matches(user)),
            Rule::Except(r) => !r.matches(user),
            Rule::Field(name, patterns) => {
                let values = user.values(name);
                patterns
                    .iter()
                    .any(|p| values.iter().any(|v| value_matches(p, v)))
            }
        }
    }
}

/// A role mapping.
#[derive(Clone, Debug, PartialEq)]
pub struct Mapping {
    pub enabled: bool,
    pub roles: Vec<String>,
    pub rules: Rule,
    pub metadata: Map<String, Value>,
}

impl Mapping {
    /// Parses a mapping as ES's `ExpressionRoleMapping.parse` (`role_templates`, which need
    /// Mustache scripts, is refused).
    pub fn parse(name: &str, v: &Value) -> EsResult<Mapping> {
        let obj = v.as_object().ok_or_else(|| {
            EsError::parsing(format!(
                "failed to parse role-mapping [{name}]. expected an object"
            ))
        })?;
        let (mut enabled, mut roles, mut rules, mut metadata) = (None, None, None, Map::new());
        for (k, val) in obj {
            match k.as_str() {
                "enabled" => {
                    enabled = Some(val.as_bool().ok_or_else(|| {
                        EsError::parsing(format!(
                            "[role-mapping] enabled doesn't support values of type: {}",
                            json_kind(val)
                        ))
                    })?)
                }
                "roles" => {
                    let arr = val.as_array().ok_or_else(|| {
                        EsError::parsing(format!(
                            "[role-mapping] roles doesn't support values of type: {}",
                            json_kind(val)
                        ))
                    })?;
                    let mut out = Vec::new();
                    for r in arr {
                        out.push(r.as_str().map(str::to_string).ok_or_else(|| {
                            EsError::parsing("[role-mapping] failed to parse field [roles]")
                        })?);
                    }
                    roles = Some(out);
                }
                "rules" => rules = Some(Rule::parse(val)?),
                "metadata" => {
                    metadata = val.as_object().cloned().ok_or_else(|| {
                        EsError::parsing("[role-mapping] failed to parse field [metadata]")
                    })?
                }
                "role_templates" => {
                    return Err(EsError::illegal_argument(
                        "[role_templates] in role mappings (Mustache role names) are not supported by Lode",
                    ))
                }
                other => {
                    return Err(EsError::parsing(format!(
                        "[role-mapping] unknown field [{other}]"
                    )))
                }
            }
        }
        let missing = |f: &str| {
            EsError::parsing(format!(
                "failed to parse role-mapping [{name}]. missing field [{f}]"
            ))
        };
        let roles = roles.ok_or_else(|| missing("roles"))?;
        let rules = rules.ok_or_else(|| missing("rules"))?;
        let enabled = enabled.ok_or_else(|| missing("enabled"))?;
        if metadata.keys().any(|k| k.starts_with('_')) {
            return Err(EsError::bad_request(
                "action_request_validation_exception",
                "Validation Failed: 1: metadata keys may not start with [_];",
            ));
        }
        Ok(Mapping {
            enabled,
            roles,
            rules,
            metadata,
        })
    }

    pub fn to_json(&self) -> Value {
        json!({
            "enabled": self.enabled,
            "roles": self.roles,
            "rules": self.rules.to_json(),
            "metadata": self.metadata,
        })
    }

    /// The roles this mapping gives `user`: its roles when it is enabled and its rules match.
    pub fn roles_for(&self, user: &UserModel) -> &[String] {
        if self.enabled && self.rules.matches(user) {
            &self.roles
        } else {
            &[]
        }
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "VALUE_NULL",
        Value::Bool(_) => "VALUE_BOOLEAN",
        Value::Number(_) => "VALUE_NUMBER",
        Value::String(_) => "VALUE_STRING",
        Value::Array(_) => "START_ARRAY",
        Value::Object(_) => "START_OBJECT",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user() -> UserModel {
        UserModel {
            username: "jdoe".into(),
            dn: Some("cn=jdoe,ou=people,dc=example,dc=com".into()),
            groups: vec!["admins".into(), "dev".into()],
            realm_name: "ldap1".into(),
            metadata: json!({"department": "sales", "level": 3})
                .as_object()
                .unwrap()
                .clone(),
        }
    }

    fn rule(v: Value) -> Rule {
        Rule::parse(&v).unwrap()
    }

    #[test]
    fn rules_match_as_es_expressions() {
        let u = user();
        assert!(rule(json!({"field": {"username": "*"}})).matches(&u));
        assert!(rule(json!({"field": {"username": "j?oe"}})).matches(&u));
        assert!(!rule(json!({"field": {"username": "admin"}})).matches(&u));
        assert!(rule(json!({"field": {"groups": ["ops", "dev"]}})).matches(&u));
        assert!(rule(json!({"field": {"dn": "/cn=.*,ou=people,.*/"}})).matches(&u));
        assert!(!rule(json!({"field": {"dn": "/ou=people/"}})).matches(&u));
        assert!(rule(json!({"field": {"realm.name": "ldap1"}})).matches(&u));
        assert!(rule(json!({"field": {"metadata.level": 3}})).matches(&u));
        assert!(rule(json!({"field": {"metadata.missing": null}})).matches(&u));
        let all = json!({"all": [
            {"field": {"groups": "admins"}},
            {"except": {"field": {"metadata.department": "hr"}}}
        ]});
        assert!(rule(all).matches(&u));
        let any = json!({"any": [{"field": {"username": "x"}}, {"field": {"groups": "y"}}]});
        assert!(!rule(any).matches(&u));
        assert!(!rule(json!({"except": {"field": {"username": "jdoe"}}})).matches(&u));
    }

    #[test]
    fn mappings_parse_and_refuse_as_es() {
        let m = Mapping::parse(
            "m",
            &json!({"roles": ["r1"], "enabled": true, "rules": {"field": {"groups": "dev"}}}),
        )
        .unwrap();
        assert_eq!(m.roles_for(&user()), ["r1".to_string()]);
        let off = Mapping {
            enabled: false,
            ..m.clone()
        };
        assert!(off.roles_for(&user()).is_empty());
        assert_eq!(Mapping::parse("m", &m.to_json()).unwrap(), m, "round trip");
        let e = Mapping::parse("m", &json!({"roles": ["r"], "enabled": true})).unwrap_err();
        assert_eq!(
            e.reason,
            "failed to parse role-mapping [m]. missing field [rules]"
        );
        let e = Mapping::parse(
            "m",
            &json!({"roles": ["r"], "rules": {"field": {"username": "*"}}}),
        )
        .unwrap_err();
        assert_eq!(
            e.reason,
            "failed to parse role-mapping [m]. missing field [enabled]"
        );
        let e = Rule::parse(&json!({"nope": 1})).unwrap_err();
        assert_eq!(e.kind, "parse_exception");
        assert!(Rule::parse(&json!({"field": {"a": 1, "b": 2}})).is_err());
        assert!(Mapping::parse("m", &json!({"roles": [], "enabled": true, "rules": {"field": {"username": "*"}}, "bogus": 1})).is_err());
    }
}
