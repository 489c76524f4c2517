//! Painless scripts for the update APIs (`_update`, `_bulk` update items, `_update_by_query`)
//! and for search ([`SearchScript`]: the `script` query).
//!
//! This is a hand-written interpreter for the subset of Painless that update scripts use in
//! practice: no maintained Rust crate implements Painless, and the language is small enough
//! here (dynamically typed over JSON-like values) that a lexer, a recursive-descent parser and a
//! tree-walking evaluator are simpler than any binding. Supported: statements (`;` or line
//! separated), blocks, `if`/`else`, `while`, `do`/`while`, classic and for-each `for`,
//! `break`/`continue`/`return`, `throw new XxxException(msg)`, typed and `def` locals; the Java
//! operators with Java numeric semantics, `?.`, `?:`, casts and `instanceof`; list/map literals,
//! `new ArrayList/HashMap/HashSet`; the common `String`, `List`, `Set`, `Map` methods and
//! `Math`, `Integer`, `Long`, `Double`, `Boolean`, `String`, `Collections`, `Objects`,
//! `System.currentTimeMillis()` statics. Not supported: lambdas and functions, arrays, regexes
//! (`=~`, `==~`), `try`/`catch`, user classes, and the `field()`/`metadata()` APIs.
//!
//! Search scripts see `params`, `_score` and `doc`: `doc['f']` (also `doc.f`, `doc.get('f')`,
//! `doc.containsKey('f')`) is ES's `ScriptDocValues` over the field's column, read through a
//! [`DocLookup`] the caller provides, only for the fields the script touches: `.value` (ES's
//! `IllegalStateException` when the document has none), `[i]`/`.get(i)`, `.size()`,
//! `.length`, `.empty`/`.isEmpty()`, `.contains(x)` and for-each. Integers read as `long`,
//! floating point as `double`, keywords as `String`, and dates as a `ZonedDateTime` in UTC with
//! `.millis`, `.getMillis()`, `.toInstant().toEpochMilli()`, `isAfter`/`isBefore`/`compareTo`;
//! comparing it with a number with `>` fails as in ES.
//!
//! Aggregation scripts ([`AggScript`]): `bucket_script` / `bucket_selector` see `params` (the
//! script's params and the bucket's values); `moving_fn` sees `params` and `values`, a
//! `double[]` (`.length`, `[i]`, for-each), and ES's `MovingFunctions` class
//! ([`moving_functions`]), which no other context knows.
//!
//! Known differences: numbers are 64-bit (`int` does not wrap at 32 bits), string indexes
//! count chars rather than UTF-16 units, and map keys are always strings.
//!
//! Errors render as Elasticsearch does: a script that does not compile answers 400
//! `script_exception` "compile error", one that fails while running "runtime error", each with
//! `script_stack`, `script`, `lang`, `position` and the Java exception as `caused_by`.
//!
//! A script cannot hang or exhaust the server: a run stops after 1,000,000 statements and loop
//! iterations (Painless's own loop limit), 100,000,000 element operations or 64 MiB allocated,
//! strings stop at 16 MiB, and nesting is bounded at compile time so that parsing and
//! evaluation (both recursive) fit comfortably in a request thread's stack.

// `EsError` is the workspace-wide error type; its size is a deliberate trade-off.
#![allow(clippy::result_large_err)]

mod eval;
mod lexer;
pub mod moving_functions;
mod parser;
#[cfg(test)]
mod tests;

pub use eval::{DocField, DocLookup, Emitted, Scratch};

/// A JSON string starting with this stands for the integer written after it, one beyond 64
/// bits, which serde_json (without `arbitrary_precision`) can only read as a double. A caller
/// that hands a script such a string (the update APIs mark the stored source's big integers
/// this way) gets it as a `java.math.BigInteger`, and a `BigInteger` beyond 64 bits comes
/// back marked the same way, for the caller to write out as digits. A NUL first: no prefix
/// a document's own strings have.
pub const BIG_INTEGER_MARK: &str = "\u{0}lode-big-integer:";
use eval::{Interp, OMap, Obj, Val};
use lode_engine::object_parser::{ignore, Field, ObjectParser, Style};
use lode_engine::{EsError, EsResult};
use parser::{Program, CTX_SLOT, DOC_SLOT, PARAMS_SLOT, SCORE_SLOT, VALUE_SLOT};
use serde_json::{json, Map, Value};

/// What the update does with the document once the script has run (`ctx.op`).
#[derive(Debug, PartialEq, Eq)]
pub enum ScriptOp {
    Index,
    Noop,
    Delete,
}

/// Resolves a stored script id (`"script": {"id": ..}`) to the stored body: a source string or
/// an object with `source` (and optionally `lang`), or the whole `{"script": {..}}` as stored.
pub type StoredScripts<'a> = &'a dyn Fn(&str) -> Option<Value>;

/// The metadata an update script sees besides `ctx._source`. Every field is optional; absent
/// metadata reads as `null`.
#[derive(Default, Clone, Copy)]
pub struct UpdateContext<'a> {
    pub index: Option<&'a str>,
    pub id: Option<&'a str>,
    pub routing: Option<&'a str>,
    pub version: Option<i64>,
    /// `ctx._now`; the current time when `None`.
    pub now_millis: Option<i64>,
    /// A scripted upsert: `ctx.op` starts as `create`, and `noop` skips the insert.
    pub upsert: bool,
    pub stored_scripts: Option<StoredScripts<'a>>,
}

/// Runs an update script against `source` (the document's `ctx._source`).
pub fn apply_update_script(script: &Value, source: &mut Value) -> EsResult<ScriptOp> {
    apply_update_script_with(script, source, &UpdateContext::default())
}

/// As [`apply_update_script`], with document metadata and stored scripts.
pub fn apply_update_script_with(
    script: &Value,
    source: &mut Value,
    ctx: &UpdateContext,
) -> EsResult<ScriptOp> {
    Script::compile(script, ctx.stored_scripts)?.run_update(source, ctx)
}

/// A compiled script with its params; compile once and run per document (`_update_by_query`).
#[derive(Debug)]
pub struct Script {
    source: String,
    params: Map<String, Value>,
    program: Program,
}

/// A parse or resolution failure at a byte offset of the source.
#[derive(Debug)]
pub(crate) struct CompileError {
    pos: usize,
    msg: String,
}

impl CompileError {
    fn new(pos: usize, msg: impl Into<String>) -> CompileError {
        CompileError {
            pos,
            msg: msg.into(),
        }
    }
}

/// Scripts compiled since the process started (`_nodes/stats` `script.compilations`). Lode
/// keeps no compiled-script cache: every request compiles the scripts it uses (parsing is
/// cheap next to running them), so each one counts, and nothing is ever evicted or limited.
static COMPILATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many scripts have been compiled since the process started.
pub fn compilations() -> u64 {
    COMPILATIONS.load(std::sync::atomic::Ordering::Relaxed)
}

const CTX_KEYS: &[&str] = &[
    "_index", "_id", "_version", "_routing", "_now", "op", "_source",
];

impl Script {
    /// Reads a `script` value (a source string, or an object with `source`/`inline` or `id`,
    /// `lang` and `params`) and compiles it.
    pub fn compile(script: &Value, stored: Option<StoredScripts>) -> EsResult<Script> {
        Script::compile_as(script, stored, parser::Kind::Update)
    }

    fn compile_as(
        script: &Value,
        stored: Option<StoredScripts>,
        kind: parser::Kind,
    ) -> EsResult<Script> {
        let (source, params) = resolve(script, stored)?;
        let program = parser::parse(&source, kind).map_err(|e| {
            script_exception(
                "compile error",
                &source,
                e.pos,
                EsError::illegal_argument(e.msg),
            )
        })?;
        COMPILATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(Script {
            source,
            params,
            program,
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// Runs the script as an update script: `ctx._source` is `source`, which is replaced by the
    /// script's result when the answer is [`ScriptOp::Index`].
    pub fn run_update(&self, source: &mut Value, uctx: &UpdateContext) -> EsResult<ScriptOp> {
        let mut it = Interp::new(&self.program);
        let src = it.load_json(source);
        let params = it.load_json_map(&self.params);
        let opt_str = |v: Option<&str>| v.map_or(Val::Null, |s| Val::Str(s.into()));
        let meta = [
            ("_index", opt_str(uctx.index)),
            ("_id", opt_str(uctx.id)),
            ("_version", uctx.version.map_or(Val::Null, Val::Int)),
            ("_routing", opt_str(uctx.routing)),
            (
                "_now",
                Val::Int(uctx.now_millis.unwrap_or_else(eval::now_millis)),
            ),
        ];
        let mut ctx = OMap::default();
        for (k, v) in &meta {
            ctx.insert((*k).into(), v.clone());
        }
        ctx.insert(
            "op".into(),
            Val::Str(if uctx.upsert { "create" } else { "index" }.into()),
        );
        ctx.insert("_source".into(), src);
        let ctx = it.alloc(Obj::Map(ctx));
        it.set_slot(CTX_SLOT, ctx.clone());
        it.set_slot(PARAMS_SLOT, params);
        it.run().map_err(|f| {
            let cause = EsError::bad_request(f.kind, f.reason);
            script_exception("runtime error", &self.source, f.pos.unwrap_or(0), cause)
        })?;

        let out = it.map(&ctx).expect("ctx is read-only");
        for (key, before) in &meta {
            if out.get(key).is_none_or(|after| !it.equals(before, after)) {
                return Err(EsError::illegal_argument(format!(
                    "Modifying [{key}] not allowed"
                )));
            }
        }
        let op = match out.get("op") {
            Some(Val::Str(s)) => s.to_string(),
            Some(other) => it.java_string(other),
            None => "null".to_string(),
        };
        let op = match (op.as_str(), uctx.upsert) {
            ("noop" | "none", _) => ScriptOp::Noop,
            ("index", _) | ("create", true) => ScriptOp::Index,
            ("delete", false) => ScriptOp::Delete,
            (other, upsert) => {
                return Err(EsError::illegal_argument(format!(
                    "Operation type [{other}] not allowed, only [{}] are allowed",
                    if upsert {
                        "noop, create"
                    } else {
                        "noop, index, delete"
                    }
                )))
            }
        };
        let junk: Vec<&str> = out
            .iter()
            .map(|(k, _)| &**k)
            .filter(|k| !CTX_KEYS.contains(k))
            .collect();
        if !junk.is_empty() {
            return Err(EsError::illegal_argument(format!(
                "Invalid fields added to context [{}]",
                junk.join(",")
            )));
        }
        if op != ScriptOp::Index {
            return Ok(op);
        }
        let new_source = out.get("_source").cloned().unwrap_or(Val::Null);
        if it.map(&new_source).is_none() {
            return Err(EsError::illegal_argument(format!(
                "ctx._source must be a map, not [{}]",
                it.type_name(&new_source)
            )));
        }
        *source = it.to_json(&new_source).map_err(EsError::illegal_argument)?;
        Ok(op)
    }
}

/// A value given to a script as `_value` (an aggregation's value script), borrowed from the
/// column's values.
#[derive(Debug, Clone, Copy)]
pub enum ScriptValue<'a> {
    Long(i64),
    Double(f64),
    Bool(bool),
    Str(&'a str),
}

/// A search script (the `script` query, `script_score`): `params`, `doc` (the document's
/// column values, ES's `ScriptDocValues`, read through a [`DocLookup`] for only the fields
/// the script touches) and `_score`. Compiled once per request, run per document.
#[derive(Debug)]
pub struct SearchScript {
    script: Script,
}

impl SearchScript {
    pub fn compile(script: &Value, stored: Option<StoredScripts>) -> EsResult<SearchScript> {
        Ok(SearchScript {
            script: Script::compile_as(script, stored, parser::Kind::Search)?,
        })
    }

    /// A runtime field's script (`emit(value)` defined).
    pub fn compile_runtime(script: &Value) -> EsResult<SearchScript> {
        Ok(SearchScript {
            script: Script::compile_as(script, None, parser::Kind::Runtime)?,
        })
    }

    /// An aggregation's script (`_value` defined: the field's value for a value script).
    pub fn compile_agg(script: &Value, stored: Option<StoredScripts>) -> EsResult<SearchScript> {
        Ok(SearchScript {
            script: Script::compile_as(script, stored, parser::Kind::AggValue)?,
        })
    }

    pub fn source(&self) -> &str {
        &self.script.source
    }

    /// An aggregation script's value on a document, with `_value` the field's value (a value
    /// script) or null: JSON (a list when the script returns several).
    pub fn agg_value(&self, doc: &mut dyn DocLookup, value: Option<&Value>) -> EsResult<Value> {
        self.run_with(doc, 0.0, true, value, |it, v| {
            it.to_json(&v)
                .map_err(|e| ("illegal_argument_exception", e))
        })
    }

    /// Runs a runtime field's script on a document: the values it emitted, in order.
    pub fn emit(&self, doc: &mut dyn DocLookup) -> EsResult<Vec<Value>> {
        self.run_val(doc, 0.0, true, |it, _| Ok(it.emitted.values().to_vec()))
    }

    /// Whether the script reads `params._source`: its params then differ per document, and
    /// it runs on fresh buffers with the document's source (which allocates anyway).
    fn reads_source(&self) -> bool {
        self.script.source.contains("_source")
    }

    /// [`SearchScript::emit`] over a segment's reused buffers (see [`SearchScript::filter_in`]):
    /// the emitted values are appended to `out`, whose slots (strings included) are reused.
    pub fn emit_in(
        &self,
        sc: &mut Scratch,
        doc: &mut dyn DocLookup,
        out: &mut Emitted,
    ) -> EsResult<()> {
        if self.reads_source() {
            return self.run_val(doc, 0.0, true, |it, _| {
                for v in it.emitted.values() {
                    out.push(v.clone());
                }
                Ok(())
            });
        }
        self.run_in_ext(sc, doc, 0.0, None, Some(out), |_, _| Ok(()))
    }

    /// [`SearchScript::agg_value`] over a segment's reused buffers: the script's values
    /// (a collection's members one by one, `null` none) appended to `out`.
    pub fn agg_value_in(
        &self,
        sc: &mut Scratch,
        doc: &mut dyn DocLookup,
        value: Option<ScriptValue>,
        out: &mut Emitted,
    ) -> EsResult<()> {
        if self.reads_source() {
            let value = value.map(|v| match v {
                ScriptValue::Long(i) => Value::from(i),
                ScriptValue::Double(f) => Value::from(f),
                ScriptValue::Bool(b) => Value::Bool(b),
                ScriptValue::Str(s) => Value::from(s),
            });
            let v = self.agg_value(doc, value.as_ref())?;
            match v {
                Value::Array(a) => a
                    .into_iter()
                    .filter(|v| !v.is_null())
                    .for_each(|v| out.push(v)),
                Value::Null => {}
                v => out.push(v),
            }
            return Ok(());
        }
        self.run_in_ext(sc, doc, 0.0, value, None, |it, v| {
            it.push_result(&v, out);
            Ok(())
        })
    }

    /// [`SearchScript::value`] over a segment's reused buffers (`script_fields`): only the
    /// answer, the returned JSON, is new.
    pub fn value_in(
        &self,
        sc: &mut Scratch,
        doc: &mut dyn DocLookup,
        score: f64,
    ) -> EsResult<Value> {
        if self.reads_source() {
            return self.value(doc, score);
        }
        self.run_in(sc, doc, score, |it, v| {
            it.to_json(&v)
                .map_err(|e| ("illegal_argument_exception", e))
        })
    }

    fn run_val<T>(
        &self,
        doc: &mut dyn DocLookup,
        score: f64,
        with_source: bool,
        out: impl FnOnce(&Interp, Val) -> Result<T, (&'static str, String)>,
    ) -> EsResult<T> {
        self.run_with(doc, score, with_source, None, out)
    }

    fn run_with<T>(
        &self,
        doc: &mut dyn DocLookup,
        score: f64,
        with_source: bool,
        value: Option<&Value>,
        out: impl FnOnce(&Interp, Val) -> Result<T, (&'static str, String)>,
    ) -> EsResult<T> {
        let s = &self.script;
        let mut it = Interp::new(&s.program);
        // `params._source`: the document's source, read only by a script that names it.
        let params = if with_source && s.source.contains("_source") {
            let mut p = s.params.clone();
            let src = doc
                .source()
                .map_err(|e| EsError::bad_request("illegal_state_exception", e))?;
            p.insert("_source".into(), src);
            it.load_json_map(&p)
        } else {
            it.load_json_map(&s.params)
        };
        it.set_slot(PARAMS_SLOT, params);
        let d = it.alloc(Obj::Doc);
        it.set_slot(DOC_SLOT, d);
        it.set_slot(SCORE_SLOT, Val::Float(score));
        if let Some(v) = value {
            let v = it.load_json(v);
            it.set_slot(VALUE_SLOT, v);
        }
        it.set_lookup(doc);
        let fail = |kind: &'static str, reason: String, pos: Option<usize>| {
            let cause = EsError::bad_request(kind, reason);
            script_exception("runtime error", &s.source, pos.unwrap_or(0), cause)
        };
        let v = it.run_value().map_err(|f| fail(f.kind, f.reason, f.pos))?;
        out(&it, v).map_err(|(kind, reason)| fail(kind, reason, None))
    }

    /// The script's value as JSON (`script_fields`).
    pub fn value(&self, doc: &mut dyn DocLookup, score: f64) -> EsResult<Value> {
        self.run_val(doc, score, true, |it, v| {
            it.to_json(&v)
                .map_err(|e| ("illegal_argument_exception", e))
        })
    }

    /// A filter script's answer: it must return a boolean.
    /// [`SearchScript::filter`] over a segment's reused buffers: `params` and `doc` are
    /// loaded on the first run only, and a run allocates nothing once the buffers have grown
    /// (keyword values are interned per scratch: a value seen before is shared, not copied).
    /// One scratch per script and segment (a scratch met by another script starts over).
    pub fn filter_in(&self, sc: &mut Scratch, doc: &mut dyn DocLookup) -> EsResult<bool> {
        self.run_in(sc, doc, 0.0, |it, v| match v {
            Val::Bool(b) => Ok(b),
            other => Err((
                "class_cast_exception",
                format!("Cannot cast from [{}] to [boolean].", it.type_name(&other)),
            )),
        })
    }

    /// [`SearchScript::score`] over a segment's reused buffers (see [`SearchScript::filter_in`]).
    pub fn score_in(&self, sc: &mut Scratch, doc: &mut dyn DocLookup, score: f64) -> EsResult<f64> {
        self.run_in(sc, doc, score, |it, v| match v {
            Val::Int(i) => Ok(i as f64),
            Val::Float(f) => Ok(f),
            other => Err((
                "class_cast_exception",
                format!("Cannot cast from [{}] to [double].", it.type_name(&other)),
            )),
        })
    }

    fn run_in<T>(
        &self,
        sc: &mut Scratch,
        doc: &mut dyn DocLookup,
        score: f64,
        out: impl FnOnce(&Interp, Val) -> Result<T, (&'static str, String)>,
    ) -> EsResult<T> {
        self.run_in_ext(sc, doc, score, None, None, out)
    }

    /// A run over the scratch's buffers with `_value` set and the `emit`s appended to
    /// `emitted`, when given.
    fn run_in_ext<T>(
        &self,
        sc: &mut Scratch,
        doc: &mut dyn DocLookup,
        score: f64,
        value: Option<ScriptValue>,
        emitted: Option<&mut Emitted>,
        out: impl FnOnce(&Interp, Val) -> Result<T, (&'static str, String)>,
    ) -> EsResult<T> {
        let s = &self.script;
        let mut it = Interp::from_scratch(
            &s.program,
            sc,
            |it| it.load_json_map(&s.params),
            PARAMS_SLOT,
            DOC_SLOT,
        );
        it.set_slot(SCORE_SLOT, Val::Float(score));
        if let Some(v) = value {
            let v = match v {
                ScriptValue::Long(i) => Val::Int(i),
                ScriptValue::Double(f) => Val::Float(f),
                ScriptValue::Bool(b) => Val::Bool(b),
                ScriptValue::Str(x) => Val::Str(eval::intern(&mut it.strings, x)),
            };
            it.set_slot(VALUE_SLOT, v);
        }
        let mut emitted = emitted;
        if let Some(e) = emitted.as_deref_mut() {
            it.emitted = std::mem::take(e);
        }
        it.set_lookup(doc);
        let fail = |kind: &'static str, reason: String, pos: Option<usize>| {
            let cause = EsError::bad_request(kind, reason);
            script_exception("runtime error", &s.source, pos.unwrap_or(0), cause)
        };
        let r = match it.run_value() {
            Ok(v) => out(&it, v).map_err(|(kind, reason)| fail(kind, reason, None)),
            Err(f) => Err(fail(f.kind, f.reason, f.pos)),
        };
        if let Some(e) = emitted {
            *e = std::mem::take(&mut it.emitted);
        }
        it.into_scratch(sc);
        r
    }

    pub fn filter(&self, doc: &mut dyn DocLookup) -> EsResult<bool> {
        self.run_val(doc, 0.0, false, |it, v| match v {
            Val::Bool(b) => Ok(b),
            other => Err((
                "class_cast_exception",
                format!("Cannot cast from [{}] to [boolean].", it.type_name(&other)),
            )),
        })
    }

    /// A `_script` sort of type `string`: the script must return a string (ES's
    /// `StringSortScript`).
    /// [`SearchScript::string`] over a segment's reused buffers (see [`SearchScript::filter_in`]);
    /// the answer itself is a new string.
    pub fn string_in(
        &self,
        sc: &mut Scratch,
        doc: &mut dyn DocLookup,
        score: f64,
    ) -> EsResult<String> {
        self.run_in(sc, doc, score, |it, v| match v {
            Val::Str(s) => Ok(s.to_string()),
            other => Err((
                "class_cast_exception",
                format!("Cannot cast from [{}] to [String].", it.type_name(&other)),
            )),
        })
    }

    pub fn string(&self, doc: &mut dyn DocLookup, score: f64) -> EsResult<String> {
        self.run_val(doc, score, false, |it, v| match v {
            Val::Str(s) => Ok(s.to_string()),
            other => Err((
                "class_cast_exception",
                format!("Cannot cast from [{}] to [String].", it.type_name(&other)),
            )),
        })
    }

    /// A score script's answer: it must return a number.
    pub fn score(&self, doc: &mut dyn DocLookup, score: f64) -> EsResult<f64> {
        self.run_val(doc, score, false, |it, v| match v {
            Val::Int(i) => Ok(i as f64),
            Val::Float(f) => Ok(f),
            other => Err((
                "class_cast_exception",
                format!("Cannot cast from [{}] to [double].", it.type_name(&other)),
            )),
        })
    }
}

/// The scripts of the pipeline aggregations, compiled once per aggregation and run per bucket:
/// `bucket_script` and `bucket_selector` (ES's `BucketAggregationScript` and
/// `BucketAggregationSelectorScript`: `params` holds the script's params with the bucket's
/// values added by variable name) and `moving_fn` (`MovingFunctionScript`: `params`, and
/// `values`, the window as a `double[]`, with the `MovingFunctions` class).
#[derive(Debug)]
pub struct AggScript {
    script: Script,
}

impl AggScript {
    /// A `bucket_script` / `bucket_selector` script.
    pub fn compile_bucket(script: &Value, stored: Option<StoredScripts>) -> EsResult<AggScript> {
        Ok(AggScript {
            script: Script::compile_as(script, stored, parser::Kind::Bucket)?,
        })
    }

    /// A `moving_fn` script.
    pub fn compile_moving_fn(script: &Value, stored: Option<StoredScripts>) -> EsResult<AggScript> {
        Ok(AggScript {
            script: Script::compile_as(script, stored, parser::Kind::MovingFn)?,
        })
    }

    pub fn source(&self) -> &str {
        &self.script.source
    }

    fn run<T>(
        &self,
        vars: &[(&str, f64)],
        ints: &[(&str, i64)],
        values: Option<&[f64]>,
        out: impl FnOnce(&Interp, Val) -> Result<T, (&'static str, String)>,
    ) -> EsResult<T> {
        let s = &self.script;
        let mut it = Interp::new(&s.program);
        let mut params = OMap::default();
        for (k, v) in &s.params {
            let v = it.load_json(v);
            params.insert(k.as_str().into(), v);
        }
        for (k, v) in vars {
            params.insert((*k).into(), Val::Float(*v));
        }
        for (k, v) in ints {
            params.insert((*k).into(), Val::Int(*v));
        }
        let params = it.alloc(Obj::Map(params));
        it.set_slot(PARAMS_SLOT, params);
        if let Some(values) = values {
            let items = values.iter().map(|v| Val::Float(*v)).collect();
            let arr = it.alloc(Obj::DocValues {
                kind: eval::DOUBLE_ARRAY,
                items,
            });
            it.set_slot(parser::VALUES_SLOT, arr);
        }
        let fail = |kind: &'static str, reason: String, pos: Option<usize>| {
            let cause = EsError::bad_request(kind, reason);
            script_exception("runtime error", &s.source, pos.unwrap_or(0), cause)
        };
        let v = it.run_value().map_err(|f| fail(f.kind, f.reason, f.pos))?;
        out(&it, v).map_err(|(kind, reason)| fail(kind, reason, None))
    }

    /// `bucket_script`: the script's number, `None` when it returns `null`.
    pub fn number(&self, vars: &[(&str, f64)]) -> EsResult<Option<f64>> {
        self.run(vars, &[], None, |it, v| match v {
            Val::Null => Ok(None),
            Val::Int(i) => Ok(Some(i as f64)),
            Val::Float(f) => Ok(Some(f)),
            other => Err((
                "class_cast_exception",
                format!(
                    "Cannot cast from [{}] to [java.lang.Number].",
                    it.type_name(&other)
                ),
            )),
        })
    }

    /// `bucket_selector`: the script must return a boolean.
    pub fn select(&self, vars: &[(&str, f64)]) -> EsResult<bool> {
        self.run(vars, &[], None, |it, v| match v {
            Val::Bool(b) => Ok(b),
            other => Err((
                "class_cast_exception",
                format!("Cannot cast from [{}] to [boolean].", it.type_name(&other)),
            )),
        })
    }

    /// `script_heuristic` (ES's `SignificantTermsHeuristicScoreScript`, a `params`-only
    /// script as `bucket_script`): the script's double, from the long `params` given.
    pub fn heuristic(&self, ints: &[(&str, i64)]) -> EsResult<f64> {
        self.run(&[], ints, None, |it, v| match v {
            Val::Int(i) => Ok(i as f64),
            Val::Float(f) => Ok(f),
            other => Err((
                "class_cast_exception",
                format!("Cannot cast from [{}] to [double].", it.type_name(&other)),
            )),
        })
    }

    /// `moving_fn`: the script's double over one window.
    pub fn moving(&self, values: &[f64]) -> EsResult<f64> {
        self.run(&[], &[], Some(values), |it, v| match v {
            Val::Int(i) => Ok(i as f64),
            Val::Float(f) => Ok(f),
            other => Err((
                "class_cast_exception",
                format!("Cannot cast from [{}] to [double].", it.type_name(&other)),
            )),
        })
    }
}

/// A script object as read (ES's `Script.PARSER`): `source` (or its old name `inline`) or
/// `id`, checked once the walk is done, `lang` (only `painless`), `params` and `options`.
#[derive(Default)]
struct ScriptSpec {
    source: Option<Value>,
    id: Option<Value>,
    params: Map<String, Value>,
}

static SCRIPT: ObjectParser<ScriptSpec> = ObjectParser {
    name: "script",
    style: Style::Object,
    fields: &[&[
        Field::<ScriptSpec>::new("source", "*", |s, _, v| {
            s.source = Some(v.clone());
            Ok(())
        })
        .aliases(&["inline"]),
        Field::new("id", "*", |s, _, v| {
            s.id = Some(v.clone());
            Ok(())
        }),
        Field::new("lang", "*", |_, _, v| check_lang(Some(v))),
        Field::new("params", "*", |s, _, v| {
            s.params = match v {
                Value::Null => Map::new(),
                Value::Object(p) => p.clone(),
                _ => return Err(EsError::parsing("Value must be of type object: [params]")),
            };
            Ok(())
        }),
        Field::new("options", "*", ignore),
    ]],
};

fn resolve(
    script: &Value,
    stored: Option<StoredScripts>,
) -> EsResult<(String, Map<String, Value>)> {
    let o = match script {
        Value::String(s) => return Ok((s.clone(), Map::new())),
        Value::Object(o) => o,
        _ => {
            return Err(EsError::parsing(
                "Expected one of [VALUE_STRING, START_OBJECT] for [script]",
            ))
        }
    };
    let ScriptSpec { source, id, params } = SCRIPT.parse(o)?;
    let either = "must specify either [source] for an inline script or [id] for a stored script";
    let source = match (source.as_ref(), id.as_ref()) {
        (Some(Value::String(s)), None) => s.clone(),
        (Some(_), None) => {
            return Err(EsError::illegal_argument(
                "[source] of a painless script must be a string",
            ))
        }
        (None, Some(Value::String(id))) => stored_source(id, stored)?,
        _ => return Err(EsError::illegal_argument(either)),
    };
    Ok((source, params))
}

fn check_lang(lang: Option<&Value>) -> EsResult<()> {
    match lang {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(l)) if l == "painless" => Ok(()),
        Some(Value::String(l)) => Err(EsError::illegal_argument(format!(
            "script_lang not supported [{l}]"
        ))),
        Some(other) => Err(EsError::illegal_argument(format!(
            "script_lang not supported [{other}]"
        ))),
    }
}

/// Rewrites a reference to a stored script (`{"id": ..., "params": ...}`) as the inline script
/// it names, so that a request's scripts can be compiled later by code that has no access to
/// the node's stored scripts. Anything else is left as it is (and fails, if it is wrong, where
/// it is compiled).
pub fn inline_stored(script: &mut Value, stored: StoredScripts) -> EsResult<()> {
    let Value::Object(o) = script else {
        return Ok(());
    };
    let Some(Value::String(id)) = o.get("id") else {
        return Ok(());
    };
    if o.contains_key("source") || o.contains_key("inline") {
        return Ok(());
    }
    let source = stored_source(&id.clone(), Some(stored))?;
    o.remove("id");
    o.insert("source".into(), Value::String(source));
    Ok(())
}

fn stored_source(id: &str, stored: Option<StoredScripts>) -> EsResult<String> {
    let missing = || {
        EsError::new(
            404,
            "resource_not_found_exception",
            format!("unable to find script [{id}] in cluster state"),
        )
    };
    let body = stored.and_then(|f| f(id)).ok_or_else(missing)?;
    let body = match body {
        Value::Object(mut o) if o.contains_key("script") => o.remove("script").unwrap_or_default(),
        other => other,
    };
    match body {
        Value::String(s) => Ok(s),
        Value::Object(o) => {
            check_lang(o.get("lang"))?;
            match o.get("source") {
                Some(Value::String(s)) => Ok(s.clone()),
                _ => Err(missing()),
            }
        }
        _ => Err(missing()),
    }
}

/// Elasticsearch's `ScriptException`: the source, a window of 25 characters either side of the
/// failure with a pointer under it, and the position in characters.
fn script_exception(reason: &str, src: &str, byte_pos: usize, cause: EsError) -> EsError {
    let chars: Vec<char> = src.chars().collect();
    let offset = src
        .get(..byte_pos.min(src.len()))
        .map_or(0, |s| s.chars().count());
    let start = offset.saturating_sub(25);
    let end = (offset + 25).min(chars.len());
    let mut snippet = String::new();
    let mut pointer = String::new();
    if start > 0 {
        snippet.push_str("... ");
        pointer.push_str("    ");
    }
    snippet.extend(&chars[start..end]);
    if end < chars.len() {
        snippet.push_str(" ...");
    }
    pointer.push_str(&" ".repeat(offset - start));
    pointer.push_str("^---- HERE");
    EsError::bad_request("script_exception", reason)
        .with("script_stack", json!([snippet, pointer]))
        .with("script", src)
        .with("lang", "painless")
        .with(
            "position",
            json!({"offset": offset, "start": start, "end": end}),
        )
        .caused_by(cause)
}
