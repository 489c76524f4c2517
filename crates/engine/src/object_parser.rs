//! Declarative parsing of JSON request objects, as Elasticsearch's `ObjectParser`: a parser is
//! a static description (its name, and per field its name, deprecated alternative names, the
//! JSON tokens it accepts and a setter), and one walk over the object applies it. A key that is
//! not declared, or that carries a token its field does not accept, is refused with the
//! parser's error, so strictness follows from the declaration instead of per-request checks;
//! the declared names are also the did-you-mean candidates of the unknown-field error.
//!
//! The setters do the value-level work (number formats, enumerations) and give the messages
//! Elasticsearch gives for bad values; requirements across fields (a missing `query`, two
//! options that exclude each other) are checked by the caller after [`ObjectParser::parse_into`].

use crate::error::{EsError, EsResult};
use serde_json::{Map, Value};

/// A JSON token as Elasticsearch's XContent parser names it in errors.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Token {
    String,
    Number,
    Boolean,
    Null,
    Object,
    Array,
}

impl Token {
    pub fn of(v: &Value) -> Token {
        match v {
            Value::String(_) => Token::String,
            Value::Number(_) => Token::Number,
            Value::Bool(_) => Token::Boolean,
            Value::Null => Token::Null,
            Value::Object(_) => Token::Object,
            Value::Array(_) => Token::Array,
        }
    }

    pub fn es_name(self) -> &'static str {
        match self {
            Token::String => "VALUE_STRING",
            Token::Number => "VALUE_NUMBER",
            Token::Boolean => "VALUE_BOOLEAN",
            Token::Null => "VALUE_NULL",
            Token::Object => "START_OBJECT",
            Token::Array => "START_ARRAY",
        }
    }

    /// A scalar, as `XContentParser.Token#isValue` (null included).
    pub fn is_value(self) -> bool {
        !matches!(self, Token::Object | Token::Array)
    }

    const fn bit(self) -> u8 {
        match self {
            Token::String => 1,
            Token::Number => 2,
            Token::Boolean => 4,
            Token::Null => 8,
            Token::Object => 16,
            Token::Array => 32,
        }
    }
}

/// The set of tokens a field accepts (ES's `ObjectParser.ValueType`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Tokens(u8);

impl Tokens {
    /// Written as letters: `v` a value (string, number or boolean), or just `s` a string, `d` a
    /// number, `b` a boolean; `n` null, `o` an object, `a` an array, `*` any token (the
    /// setter judges the value).
    pub const fn of(spec: &str) -> Tokens {
        let b = spec.as_bytes();
        let mut bits = 0u8;
        let mut i = 0;
        while i < b.len() {
            bits |= match b[i] {
                b'v' => 1 | 2 | 4,
                b's' => 1,
                b'd' => 2,
                b'b' => 4,
                b'n' => 8,
                b'o' => 16,
                b'a' => 32,
                b'*' => 63,
                _ => panic!("token letters are v, s, d, b, n, o, a and *"),
            };
            i += 1;
        }
        Tokens(bits)
    }

    pub fn accepts(self, t: Token) -> bool {
        self.0 & t.bit() != 0
    }
}

/// Where a setter is: the parser's name (as the request spelled it, for parsers shared by
/// several names such as `match` and `match_bool_prefix`) and the key as written.
#[derive(Clone, Copy, Debug)]
pub struct At<'a> {
    pub parser: &'a str,
    pub key: &'a str,
}

pub type Setter<T> = fn(&mut T, &At<'_>, &Value) -> EsResult<()>;

/// One declared field.
pub struct Field<T: 'static> {
    pub name: &'static str,
    /// Deprecated alternative names, accepted as the name itself.
    pub aliases: &'static [&'static str],
    pub tokens: Tokens,
    pub set: Setter<T>,
    /// Answers to every key no other field declares (ES's unknown-field consumer: the
    /// field-keyed queries such as `terms`, the named functions of `function_score`).
    pub other: bool,
}

impl<T> Field<T> {
    /// A field accepting the tokens written as in [`Tokens::of`].
    pub const fn new(name: &'static str, tokens: &str, set: Setter<T>) -> Field<T> {
        Field {
            name,
            aliases: &[],
            tokens: Tokens::of(tokens),
            set,
            other: false,
        }
    }

    /// The field of every key not otherwise declared; its setter reads the key from `At`.
    pub const fn other(tokens: &str, set: Setter<T>) -> Field<T> {
        Field {
            name: "*",
            aliases: &[],
            tokens: Tokens::of(tokens),
            set,
            other: true,
        }
    }

    pub const fn aliases(self, aliases: &'static [&'static str]) -> Field<T> {
        Field { aliases, ..self }
    }

    fn answers_to(&self, key: &str) -> bool {
        !self.other && (self.name == key || self.aliases.contains(&key))
    }
}

/// A setter for a declared key whose value is accepted and not used.
pub fn ignore<T>(_: &mut T, _: &At<'_>, _: &Value) -> EsResult<()> {
    Ok(())
}

/// ES's unknown-field refusal of a whole request body it parses with positions: Lode keeps
/// none, so the error names `[1:2]`, the position of a body's first key (a `Style::Custom`
/// `unknown`).
pub fn unknown_field_at_first_key(at: &At<'_>, _: Token, names: &[&str]) -> EsError {
    EsError::x_content_parse(format!(
        "[1:2] [{}] unknown field [{}]{}",
        at.parser,
        at.key,
        crate::error::did_you_mean(at.key, names)
    ))
}

/// How a parser words its refusals.
#[derive(Clone, Copy)]
pub enum Style {
    /// ES's `ObjectParser`: an unknown key is `x_content_parse_exception` "[p] unknown field
    /// [k] did you mean [..]?" (see [`EsError::unknown_field`]), a wrong token is
    /// `x_content_parse_exception` "[p] k doesn't support values of type: TOKEN".
    Object,
    /// A query's hand-written `fromXContent`: both are `parsing_exception` "[p] query does not
    /// support [k]".
    Query,
    /// Any other wording: `unknown(at, token, candidates)` for an undeclared key,
    /// `wrong_token(at, token)` for a declared key with a token it does not accept.
    Custom {
        unknown: fn(&At<'_>, Token, &[&str]) -> EsError,
        wrong_token: fn(&At<'_>, Token) -> EsError,
    },
}

/// A parser: a name, its fields in groups (a request type's own fields, then field lists shared
/// by several request types, such as the `boost` and `_name` of every query) and its wording.
pub struct ObjectParser<T: 'static> {
    pub name: &'static str,
    pub style: Style,
    pub fields: &'static [&'static [Field<T>]],
}

impl<T> ObjectParser<T> {
    /// The declared field answering to `key` (its name or an alias), else the field of
    /// other keys if one is declared.
    pub fn field(&self, key: &str) -> Option<&Field<T>> {
        let mut all = self.fields.iter().flat_map(|g| g.iter());
        all.clone()
            .find(|f| f.answers_to(key))
            .or_else(|| all.find(|f| f.other))
    }

    /// Every declared name, aliases included (ES's candidates for did-you-mean).
    pub fn names(&self) -> Vec<&'static str> {
        self.fields
            .iter()
            .flat_map(|g| g.iter())
            .filter(|f| !f.other)
            .flat_map(|f| std::iter::once(f.name).chain(f.aliases.iter().copied()))
            .collect()
    }

    /// Applies every key of `body`, in order, to `target`; the first refused key is the error.
    pub fn parse_into(&self, target: &mut T, body: &Map<String, Value>) -> EsResult<()> {
        self.parse_named(self.name, target, body)
    }

    /// As [`parse_into`](Self::parse_into), under the name the request used.
    pub fn parse_named(
        &self,
        name: &str,
        target: &mut T,
        body: &Map<String, Value>,
    ) -> EsResult<()> {
        for (key, v) in body {
            let at = At { parser: name, key };
            let token = Token::of(v);
            let Some(field) = self.field(key) else {
                return Err(self.unknown(&at, token));
            };
            if !field.tokens.accepts(token) {
                return Err(match self.style {
                    Style::Object => EsError::x_content_parse(format!(
                        "[{name}] {key} doesn't support values of type: {}",
                        token.es_name()
                    )),
                    Style::Query => unsupported(&at),
                    Style::Custom { wrong_token, .. } => wrong_token(&at, token),
                });
            }
            (field.set)(target, &at, v)?;
        }
        Ok(())
    }

    /// A fresh `T` with every key of `body` applied.
    pub fn parse(&self, body: &Map<String, Value>) -> EsResult<T>
    where
        T: Default,
    {
        let mut t = T::default();
        self.parse_into(&mut t, body)?;
        Ok(t)
    }

    fn unknown(&self, at: &At<'_>, token: Token) -> EsError {
        match self.style {
            Style::Object => EsError::unknown_field(at.parser, at.key, &self.names()),
            Style::Query => unsupported(at),
            Style::Custom { unknown, .. } => unknown(at, token, &self.names()),
        }
    }
}

fn unsupported(at: &At<'_>) -> EsError {
    EsError::parsing(format!(
        "[{}] query does not support [{}]",
        at.parser, at.key
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Default, Debug, PartialEq)]
    struct Collapse {
        field: String,
        max_concurrent: i64,
        inner: Vec<Value>,
        named: Option<String>,
    }

    type F = Field<Collapse>;

    static SHARED: &[F] = &[F::new("_name", "v", |c, _, v| {
        c.named = v.as_str().map(str::to_string);
        Ok(())
    })];

    static COLLAPSE: ObjectParser<Collapse> = ObjectParser {
        name: "collapse",
        style: Style::Object,
        fields: &[
            &[
                F::new("field", "v", |c, _, v| {
                    c.field = v.as_str().unwrap_or_default().to_string();
                    Ok(())
                }),
                F::new("max_concurrent_group_searches", "v", |c, at, v| {
                    c.max_concurrent = v.as_i64().ok_or_else(|| {
                        EsError::x_content_parse(format!(
                            "[{}] failed to parse field [{}]",
                            at.parser, at.key
                        ))
                    })?;
                    Ok(())
                })
                .aliases(&["max_concurrent"]),
                F::new("inner_hits", "oa", |c, _, v| {
                    c.inner.push(v.clone());
                    Ok(())
                }),
                F::new("ignored", "*", ignore),
            ],
            SHARED,
        ],
    };

    fn parse(p: &ObjectParser<Collapse>, v: Value) -> EsResult<Collapse> {
        p.parse(v.as_object().unwrap())
    }

    #[test]
    fn fields_aliases_and_shared_groups_apply() {
        let c = parse(
            &COLLAPSE,
            json!({"field": "f", "max_concurrent": 3, "inner_hits": {}, "_name": "n", "ignored": [1]}),
        )
        .unwrap();
        assert_eq!(
            c,
            Collapse {
                field: "f".into(),
                max_concurrent: 3,
                inner: vec![json!({})],
                named: Some("n".into()),
            }
        );
        assert!(COLLAPSE.names().contains(&"max_concurrent"));
        assert!(COLLAPSE.names().contains(&"_name"));
    }

    #[test]
    fn unknown_key_suggests_declared_names() {
        let e = parse(&COLLAPSE, json!({"feild": "f"})).unwrap_err();
        assert_eq!(
            (e.status, e.kind.as_str()),
            (400, "x_content_parse_exception")
        );
        assert_eq!(
            e.reason,
            "[collapse] unknown field [feild] did you mean [field]?"
        );
        let e = parse(&COLLAPSE, json!({"zzz": 1})).unwrap_err();
        assert_eq!(e.reason, "[collapse] unknown field [zzz]");
    }

    #[test]
    fn wrong_token_is_refused_before_the_setter() {
        let e = parse(&COLLAPSE, json!({"field": {"a": 1}})).unwrap_err();
        assert_eq!(e.kind, "x_content_parse_exception");
        assert_eq!(
            e.reason,
            "[collapse] field doesn't support values of type: START_OBJECT"
        );
        let e = parse(&COLLAPSE, json!({"inner_hits": 5})).unwrap_err();
        assert_eq!(
            e.reason,
            "[collapse] inner_hits doesn't support values of type: VALUE_NUMBER"
        );
        // null is a token of its own: not a value unless declared
        assert!(parse(&COLLAPSE, json!({"field": null})).is_err());
    }

    #[test]
    fn setter_errors_propagate_with_the_key_as_written() {
        let e = parse(&COLLAPSE, json!({"field": "f", "max_concurrent": "x"})).unwrap_err();
        assert_eq!(
            e.reason,
            "[collapse] failed to parse field [max_concurrent]"
        );
        // the first refused key wins, in the body's order
        let e = parse(&COLLAPSE, json!({"nope": 1, "max_concurrent": "x"})).unwrap_err();
        assert_eq!(e.reason, "[collapse] unknown field [nope]");
    }

    #[test]
    fn query_and_custom_styles_word_their_refusals() {
        static Q: ObjectParser<Collapse> = ObjectParser {
            name: "bool",
            style: Style::Query,
            fields: &[SHARED],
        };
        let mut c = Collapse::default();
        let e = Q
            .parse_named("bool", &mut c, json!({"must": 1}).as_object().unwrap())
            .unwrap_err();
        assert_eq!(
            (e.kind.as_str(), e.reason.as_str()),
            ("parsing_exception", "[bool] query does not support [must]")
        );
        let e = parse(&Q, json!({"_name": {}})).unwrap_err();
        assert_eq!(e.reason, "[bool] query does not support [_name]");

        static C: ObjectParser<Collapse> = ObjectParser {
            name: "body",
            style: Style::Custom {
                unknown: |at, t, _| {
                    EsError::parsing(format!(
                        "Unknown key for a {} in [{}].",
                        t.es_name(),
                        at.key
                    ))
                },
                wrong_token: |at, t| {
                    EsError::parsing(format!(
                        "Unknown key for a {} in [{}].",
                        t.es_name(),
                        at.key
                    ))
                },
            },
            fields: &[SHARED],
        };
        let e = parse(&C, json!({"_name": []})).unwrap_err();
        assert_eq!(e.reason, "Unknown key for a START_ARRAY in [_name].");
        let e = parse(&C, json!({"x": true})).unwrap_err();
        assert_eq!(e.reason, "Unknown key for a VALUE_BOOLEAN in [x].");
    }

    #[test]
    fn other_keys_go_to_the_declared_consumer() {
        #[derive(Default)]
        struct Terms {
            field: Option<(String, Value)>,
            boost: f32,
        }
        type T = Field<Terms>;
        static P: ObjectParser<Terms> = ObjectParser {
            name: "terms",
            style: Style::Query,
            fields: &[&[
                T::new("boost", "v", |t, _, v| {
                    t.boost = v.as_f64().unwrap_or(0.0) as f32;
                    Ok(())
                }),
                T::other("oa", |t, at, v| {
                    if t.field.is_some() {
                        return Err(EsError::parsing(
                            "[terms] query does not support multiple fields",
                        ));
                    }
                    t.field = Some((at.key.to_string(), v.clone()));
                    Ok(())
                }),
            ]],
        };
        let t = P
            .parse(json!({"boost": 2, "user": ["a"]}).as_object().unwrap())
            .unwrap();
        assert_eq!(
            (t.boost, t.field),
            (2.0, Some(("user".into(), json!(["a"]))))
        );
        // declared names win over the consumer, its tokens still apply
        let e = P
            .parse(json!({"user": "a"}).as_object().unwrap())
            .err()
            .unwrap();
        assert_eq!(e.reason, "[terms] query does not support [user]");
        let e = P
            .parse(json!({"a": [], "b": []}).as_object().unwrap())
            .err()
            .unwrap();
        assert_eq!(e.reason, "[terms] query does not support multiple fields");
        assert_eq!(P.names(), vec!["boost"]);
    }

    #[test]
    fn token_letters() {
        let s = Tokens::of("sn");
        assert!(s.accepts(Token::String) && s.accepts(Token::Null) && !s.accepts(Token::Number));
        let t = Tokens::of("vn");
        assert!(t.accepts(Token::String) && t.accepts(Token::Null) && t.accepts(Token::Boolean));
        assert!(!t.accepts(Token::Object) && !t.accepts(Token::Array));
        let all = Tokens::of("*");
        assert!([Token::Object, Token::Array, Token::Null, Token::Number]
            .iter()
            .all(|t| all.accepts(*t)));
    }
}
