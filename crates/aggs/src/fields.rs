//! The declarations aggregation bodies share (`lode_engine::object_parser`, ES's
//! `ObjectParser`): how an aggregation's parser words its refusals ([`AGG`]) and the field
//! groups of ES's `ValuesSourceAggregationBuilder` (`field`, `script`, `value_type`,
//! `missing`, `format`), declared once and added to each aggregation's own fields.
//!
//! A body under construction carries the aggregation's name (for the messages that name it)
//! and a [`Source`], which the shared setters fill; what depends on several keys (a `field`
//! or a `script` is required, a script's `value_type`) is checked after the walk by
//! [`Source::field_or_script`] and [`Source::required_field`].

use super::request::{field_or_script_of, required_field_of, string};
use lode_engine::object_parser::{At, Field, Style, Token};
use lode_engine::{EsError, EsResult};
use serde_json::Value;

/// ES's `ObjectParser` wording (unknown field with did-you-mean, "[agg] key doesn't support
/// values of type: TOKEN"), except for a `script` the aggregation does not declare, which is
/// refused as ES's non-scriptable values-source builders refuse it.
pub(crate) const AGG: Style = Style::Custom {
    unknown: agg_unknown,
    wrong_token: agg_wrong_token,
};

fn agg_unknown(at: &At<'_>, _: Token, names: &[&str]) -> EsError {
    if at.key == "script" {
        return EsError::illegal_argument(format!(
            "[script] is not supported in [{}] aggregations",
            at.parser
        ));
    }
    EsError::unknown_field(at.parser, at.key, names)
}

fn agg_wrong_token(at: &At<'_>, t: Token) -> EsError {
    EsError::x_content_parse(format!(
        "[{}] {} doesn't support values of type: {}",
        at.parser,
        at.key,
        t.es_name()
    ))
}

/// The values-source keys of a body, as written (checked once the walk is done).
#[derive(Default)]
pub(crate) struct Source {
    pub field: Option<Value>,
    pub script: Option<Value>,
    pub value_type: Option<Value>,
    pub missing: Option<Value>,
    pub format: Option<String>,
}

impl Source {
    /// The `field`, or the field name standing for the `script` (see `ScriptSpec`).
    pub fn field_or_script(&self, keys: bool, date: bool) -> EsResult<String> {
        field_or_script_of(
            self.field.as_ref(),
            self.script.as_ref(),
            self.value_type.as_ref(),
            keys,
            date,
        )
    }

    /// The `field`, required (for aggregations without a `script`).
    pub fn required_field(&self) -> EsResult<String> {
        required_field_of(self.field.as_ref())
    }

    /// A `value_type` outside a script is only checked to be a value (Lode reads the
    /// mapped type).
    pub fn check_value_type(&self, ty: &str) -> EsResult<()> {
        if let Some(v) = &self.value_type {
            string(ty, "value_type", v)?;
        }
        Ok(())
    }
}

/// A body with a values source.
pub(crate) trait Sourced {
    fn source(&mut self) -> &mut Source;
}

/// `field` (checked to be a string once the walk is done).
pub(crate) const fn field<T: Sourced>() -> [Field<T>; 1] {
    [Field::new("field", "*", |t: &mut T, _, v| {
        t.source().field = Some(v.clone());
        Ok(())
    })]
}

/// `value_type`: a script's value type (else only checked, Lode reads the mapped type).
pub(crate) const fn value_type<T: Sourced>() -> [Field<T>; 1] {
    [Field::new("value_type", "*", |t: &mut T, _, v| {
        t.source().value_type = Some(v.clone());
        Ok(())
    })]
}

/// `script` (with or without a `field`: a value script, or the script's values).
pub(crate) const fn script<T: Sourced>() -> [Field<T>; 1] {
    [Field::new("script", "*", |t: &mut T, _, v| {
        t.source().script = Some(v.clone());
        Ok(())
    })]
}

/// `missing`: the value of documents without one, as written.
pub(crate) const fn missing<T: Sourced>() -> [Field<T>; 1] {
    [Field::new("missing", "*", |t: &mut T, _, v| {
        t.source().missing = Some(v.clone());
        Ok(())
    })]
}

/// `format`: a string (a number is taken as its text).
pub(crate) const fn format<T: Sourced>() -> [Field<T>; 1] {
    [Field::new("format", "*", |t: &mut T, at, v| {
        t.source().format = Some(string(at.parser, at.key, v)?);
        Ok(())
    })]
}

/// `field`, `script`, `value_type`, `missing` and `format`: a numeric metric's values source.
pub(crate) const fn values_source<T: Sourced>() -> [Field<T>; 5] {
    let [f] = field::<T>();
    let [vt] = value_type::<T>();
    let [s] = script::<T>();
    let [m] = missing::<T>();
    let [fm] = format::<T>();
    [f, vt, s, m, fm]
}

/// `missing` as a scalar (ES's `XContentParser#objectText`: a string, a number or a
/// boolean; any other token is refused by [`AGG`]).
pub(crate) const fn missing_scalar<T: Sourced>() -> [Field<T>; 1] {
    [Field::new("missing", "v", |t: &mut T, _, v| {
        t.source().missing = Some(v.clone());
        Ok(())
    })]
}
