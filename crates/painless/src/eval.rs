//! The tree-walking interpreter. Lists and maps live in a per-run arena and values refer to
//! them by index, which gives Java's reference semantics (`def t = ctx._source.tags; t.add(x)`
//! changes the document) without `Rc<RefCell<..>>` cycles that could leak.

use super::parser::{BinOp, Expr, ExprKind, NewKind, Program, Stmt, StmtKind, Ty, UnOp};
use serde_json::{Map, Number, Value};
use std::cell::Cell;
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Statements plus loop iterations one run may execute, as Painless's loop counter.
pub(crate) const MAX_STEPS: u64 = 1_000_000;
/// Elements scanned, compared or copied by one run. With the step limit alone a loop of
/// `list.contains(..)` over a large list could still run for minutes.
const MAX_WORK: u64 = 100_000_000;
/// Bytes one run may allocate in total (strings, collections), so that a doubling loop
/// (`l.addAll(l)`, `s = s + s`) fails instead of exhausting the server's memory.
const MAX_BYTES: u64 = 64 << 20;
const MAX_STRING_LEN: usize = 16 << 20;
const VAL_BYTES: usize = 24;
const ENTRY_BYTES: usize = 48;
const OBJ_BYTES: usize = 64;
/// How deep `toString`/`equals` follow nested collections before giving up (they can be cyclic).
const MAX_WALK_DEPTH: usize = 100;
/// serde_json refuses to parse deeper documents, so none deeper is written.
const MAX_JSON_DEPTH: usize = 127;

/// A call's arguments: inline up to four, so that a method call allocates nothing.
pub(crate) type Args = smallvec::SmallVec<[Val; 4]>;

#[derive(Debug, Clone, Default)]
pub(crate) enum Val {
    #[default]
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Arc<str>),
    Obj(usize),
}

pub(crate) enum Obj {
    List(Vec<Val>),
    Set(VSet),
    Map(OMap),
    Entry(Val, Val),
    /// Search scripts: the `doc` map (fields load on first access).
    Doc,
    /// One field's values for the current document (ES's `ScriptDocValues`); `kind` is the
    /// Java class name.
    DocValues {
        kind: &'static str,
        items: Vec<Val>,
    },
    /// A `date` field's value: a `ZonedDateTime` in UTC, held as epoch milliseconds.
    Date(i64),
    /// A JSON integer beyond `long` (a `java.math.BigInteger`, as Jackson reads one), held as
    /// its decimal digits so that a script that only passes it along writes it back exactly.
    BigInteger(Arc<str>),
}

/// Where a search script's `doc` reads a field's values for the current document.
pub trait DocLookup {
    /// The field's values, or ES's `IllegalArgumentException` reason (unmapped field, text
    /// field without fielddata).
    fn field(&mut self, name: &str) -> Result<DocField, String>;
    /// The same values written into `out`, whose vectors a lookup may reuse (a column's
    /// values then cost no allocation once `out` has grown to the document's value count).
    fn field_into(&mut self, name: &str, out: &mut DocField) -> Result<(), String> {
        *out = self.field(name)?;
        Ok(())
    }
    /// `doc.containsKey(name)`: whether the mapping has the field.
    fn contains(&self, name: &str) -> bool;
    /// The document's `_source` (`params._source`); null where there is none.
    fn source(&mut self) -> Result<Value, String> {
        Ok(Value::Null)
    }
}

/// One field's values, as the column holds them.
pub enum DocField {
    Long(Vec<i64>),
    Double(Vec<f64>),
    Str(Vec<String>),
    Bool(Vec<bool>),
    /// Epoch milliseconds.
    Date(Vec<i64>),
}

/// A Java `double[]` (the `values` of a `moving_fn` script) is held as doc values of this
/// class name: indexable, `.length`, iterable, and no methods.
pub(crate) const DOUBLE_ARRAY: &str = "double[]";

const NO_VALUE: &str = "A document doesn't have a value for a field! Use doc[<field>].size()==0 to check if a document is missing a field!";

/// `yyyy-MM-ddTHH:mm:ss[.SSS]Z`, as `ZonedDateTime.toString()` in UTC.
pub(crate) fn iso_millis(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let (h, mi, sec, milli) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    if milli == 0 {
        format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{sec:02}Z")
    } else {
        format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{sec:02}.{milli:03}Z")
    }
}

/// A set keeps insertion order; strings, numbers and booleans are also hashed so that
/// `contains` and `add` stay O(1) for them. Collections as members are compared one by one.
#[derive(Default)]
pub(crate) struct VSet {
    items: Vec<Val>,
    scalars: HashSet<Scalar>,
}

#[derive(Hash, PartialEq, Eq)]
enum Scalar {
    Null,
    Bool(bool),
    Int(i64),
    Float(u64),
    Str(Arc<str>),
}

/// The hash key of a value that Java's `equals` compares by value; `None` for collections.
fn scalar(v: &Val) -> Option<Scalar> {
    Some(match v {
        Val::Null => Scalar::Null,
        Val::Bool(b) => Scalar::Bool(*b),
        Val::Int(i) => Scalar::Int(*i),
        Val::Float(f) if f.is_nan() => Scalar::Float(f64::NAN.to_bits()),
        Val::Float(f) => Scalar::Float(f.to_bits()),
        Val::Str(s) => Scalar::Str(s.clone()),
        Val::Obj(_) => return None,
    })
}

/// An insertion-ordered map (documents keep their field order) with O(1) lookups. Removal
/// leaves a hole that is compacted once holes outnumber live entries.
#[derive(Default)]
pub(crate) struct OMap {
    entries: Vec<Option<(Arc<str>, Val)>>,
    index: HashMap<Arc<str>, usize>,
}

impl OMap {
    pub(crate) fn get(&self, k: &str) -> Option<&Val> {
        self.index
            .get(k)
            .and_then(|&i| self.entries[i].as_ref().map(|e| &e.1))
    }

    pub(crate) fn insert(&mut self, k: Arc<str>, v: Val) -> Option<Val> {
        if let Some(&i) = self.index.get(&k) {
            let slot = self.entries[i].as_mut().expect("indexed entry");
            return Some(std::mem::replace(&mut slot.1, v));
        }
        self.index.insert(k.clone(), self.entries.len());
        self.entries.push(Some((k, v)));
        None
    }

    fn remove(&mut self, k: &str) -> Option<Val> {
        let i = self.index.remove(k)?;
        let old = self.entries[i].take().map(|e| e.1);
        if self.entries.len() > 2 * self.index.len() + 8 {
            self.entries.retain(Option::is_some);
            for (i, e) in self.entries.iter().enumerate() {
                let (k, _) = e.as_ref().expect("compacted");
                self.index.insert(k.clone(), i);
            }
        }
        old
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &Val)> {
        self.entries.iter().flatten().map(|(k, v)| (k, v))
    }

    fn len(&self) -> usize {
        self.index.len()
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.index.clear();
    }
}

/// A runtime failure: the Java exception's ES type name, its message, and where it happened.
#[derive(Debug)]
pub(crate) struct Fail {
    pub kind: &'static str,
    pub reason: String,
    pub pos: Option<usize>,
}

impl Fail {
    fn new(kind: &'static str, reason: impl Into<String>) -> Fail {
        Fail {
            kind,
            reason: reason.into(),
            pos: None,
        }
    }

    fn at(mut self, pos: usize) -> Fail {
        self.pos.get_or_insert(pos);
        self
    }
}

fn npe(reason: impl Into<String>) -> Fail {
    Fail::new("null_pointer_exception", reason)
}

fn class_cast(reason: impl Into<String>) -> Fail {
    Fail::new("class_cast_exception", reason)
}

fn illegal_arg(reason: impl Into<String>) -> Fail {
    Fail::new("illegal_argument_exception", reason)
}

fn string_too_long() -> Fail {
    Fail::new(
        "painless_error",
        format!("string length exceeds the limit of [{MAX_STRING_LEN}] bytes"),
    )
}

fn out_of_bounds(index: i64, len: usize) -> Fail {
    Fail::new(
        "index_out_of_bounds_exception",
        format!("Index {index} out of bounds for length {len}"),
    )
}

enum Flow {
    Normal,
    Break,
    Continue,
    Return,
}

enum Place {
    Slot(usize),
    Key(usize, Arc<str>),
    Elem(usize, usize),
}

enum Num {
    I(i64),
    F(f64),
}

pub(crate) struct Interp<'p> {
    prog: &'p Program,
    slots: Vec<Val>,
    heap: Vec<Obj>,
    steps: u64,
    work: Cell<u64>,
    bytes: Cell<u64>,
    input_bytes: u64,
    /// The value of `return` or of the script's last expression.
    ret: Val,
    lookup: Option<&'p mut dyn DocLookup>,
    doc_cache: Vec<(Arc<str>, Val)>,
    /// The values a runtime field's script emitted.
    pub(crate) emitted: Emitted,
    /// Keyword values by content, shared by the runs over one segment (a scratch's runs
    /// only): `doc['k']` and `_value` then cost no allocation for a value seen before.
    pub(crate) strings: Option<Interner>,
    /// Emptied value vectors of a previous run's doc values, reused by `doc[name]`.
    spare: Vec<Vec<Val>>,
    /// Where the lookup writes a field's values (its vectors reused run after run).
    field_buf: DocField,
    /// Objects below this index (a scratch's `params` and `doc`) outlive the run; a run
    /// that changes one sets `touched_kept`, and the scratch then loads them afresh.
    kept: usize,
    touched_kept: bool,
}

/// The buffers of a search script's runs on one segment, reused from document to document so
/// that a run allocates nothing once they have grown (see [`crate::SearchScript::filter_in`]):
/// the slots, the arena (holding `params` and `doc`, loaded once, below `base`), the doc-value
/// vectors, the field cache. `params` is shared by the runs as ES shares a leaf's params map.
#[derive(Default)]
pub struct Scratch {
    slots: Vec<Val>,
    heap: Vec<Obj>,
    doc_cache: Vec<(Arc<str>, Val)>,
    spare: Vec<Vec<Val>>,
    field_buf: Option<DocField>,
    /// The arena's length after `params` and `doc` were loaded; `None` before the first run.
    base: Option<usize>,
    /// The program the kept `params` and `doc` were loaded for.
    owner: usize,
    params: Val,
    doc: Val,
    input_bytes: u64,
    strings: Interner,
}

/// The distinct keyword values a segment's runs met, each one shared string: a value seen
/// before costs a hash lookup, not an allocation. Bounded (a high-cardinality field past the
/// bound allocates per value, as before, instead of holding the whole dictionary).
#[derive(Default)]
pub(crate) struct Interner {
    set: HashSet<Arc<str>>,
    bytes: usize,
}

const INTERN_MAX_BYTES: usize = 4 << 20;
const INTERN_MAX_ENTRIES: usize = 1 << 16;

impl Interner {
    pub(crate) fn get(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.set.get(s) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(s);
        if self.bytes + s.len() <= INTERN_MAX_BYTES && self.set.len() < INTERN_MAX_ENTRIES {
            self.bytes += s.len();
            self.set.insert(a.clone());
        }
        a
    }
}

/// A shared string for `s`: interned when the run has a segment's table.
pub(crate) fn intern(strings: &mut Option<Interner>, s: &str) -> Arc<str> {
    match strings {
        Some(t) => t.get(s),
        None => Arc::from(s),
    }
}

/// The values a runtime field's script emitted (or an aggregation script returned), as JSON
/// scalars, written over a reused buffer: a slot that held a string keeps its buffer for the
/// next string, so that filling it again allocates nothing once it has grown.
#[derive(Default, Debug)]
pub struct Emitted {
    vals: Vec<Value>,
    len: usize,
}

impl Emitted {
    pub fn clear(&mut self) {
        self.len = 0;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn values(&self) -> &[Value] {
        &self.vals[..self.len]
    }

    pub fn values_mut(&mut self) -> &mut [Value] {
        &mut self.vals[..self.len]
    }

    /// Appends a value (a string's buffer in the slot is dropped: use [`Emitted::push_str`]).
    pub fn push(&mut self, v: Value) {
        if let Value::String(s) = v {
            return self.push_str(&s);
        }
        if self.len < self.vals.len() {
            // a string slot keeps its buffer: a spare non-string slot takes its place
            if self.vals[self.len].is_string() {
                let other = (self.len + 1..self.vals.len()).find(|&j| !self.vals[j].is_string());
                match other {
                    Some(j) => self.vals.swap(self.len, j),
                    None => {
                        // the string moves to the end (the buffer grows once to the largest
                        // mix of strings and other values a document needs)
                        let s = std::mem::replace(&mut self.vals[self.len], v);
                        self.vals.push(s);
                        self.len += 1;
                        return;
                    }
                }
            }
            self.vals[self.len] = v;
        } else {
            self.vals.push(v);
        }
        self.len += 1;
    }

    /// Appends a string, written into a kept string buffer when there is one.
    pub fn push_str(&mut self, s: &str) {
        self.push_string_with(|b| b.push_str(s));
    }

    /// Appends a string written by `write` into a kept (cleared) buffer.
    pub fn push_string_with(&mut self, write: impl FnOnce(&mut String)) {
        if self.len < self.vals.len() {
            if let Some(j) = (self.len..self.vals.len()).find(|&j| self.vals[j].is_string()) {
                self.vals.swap(self.len, j);
                if let Value::String(b) = &mut self.vals[self.len] {
                    b.clear();
                    write(b);
                }
                self.len += 1;
                return;
            }
        }
        let mut b = String::new();
        write(&mut b);
        if self.len < self.vals.len() {
            self.vals[self.len] = Value::String(b);
        } else {
            self.vals.push(Value::String(b));
        }
        self.len += 1;
    }

    /// Rewrites value `i` as the string `write` gives, in a kept buffer when there is one.
    pub fn set_string_with(&mut self, i: usize, write: impl FnOnce(&mut String)) {
        if !self.vals[i].is_string() {
            let spare = (self.len..self.vals.len()).find(|&j| self.vals[j].is_string());
            match spare {
                Some(j) => self.vals.swap(i, j),
                None => self.vals[i] = Value::String(String::new()),
            }
        }
        if let Value::String(b) = &mut self.vals[i] {
            b.clear();
            write(b);
        }
    }

    /// Keeps the values `keep` accepts (it may rewrite them in place), in order; the others'
    /// buffers stay for reuse.
    pub fn retain(&mut self, mut keep: impl FnMut(&mut Value) -> bool) {
        let mut w = 0;
        for i in 0..self.len {
            if keep(&mut self.vals[i]) {
                self.vals.swap(w, i);
                w += 1;
            }
        }
        self.len = w;
    }
}

impl<'p> Interp<'p> {
    pub(crate) fn new(prog: &'p Program) -> Interp<'p> {
        Interp {
            prog,
            slots: vec![Val::Null; prog.slot_types.len()],
            heap: Vec::new(),
            steps: 0,
            work: Cell::new(0),
            bytes: Cell::new(0),
            input_bytes: 0,
            ret: Val::Null,
            lookup: None,
            emitted: Emitted::default(),
            strings: None,
            doc_cache: Vec::new(),
            spare: Vec::new(),
            field_buf: DocField::Long(Vec::new()),
            kept: 0,
            touched_kept: false,
        }
    }

    /// Notes a change to a kept object (see `kept`).
    fn touch(&mut self, id: usize) {
        if id < self.kept {
            self.touched_kept = true;
        }
    }

    /// An interpreter over a scratch's buffers: the arena cut back to `params` and `doc`
    /// (the doc-value vectors above them kept for reuse), the slots cleared, `params`, `doc`
    /// and `_score` set. [`Interp::into_scratch`] gives the buffers back.
    pub(crate) fn from_scratch(
        prog: &'p Program,
        sc: &mut Scratch,
        load_params: impl FnOnce(&mut Interp<'p>) -> Val,
        params_slot: usize,
        doc_slot: usize,
    ) -> Interp<'p> {
        let owner = prog as *const Program as usize;
        if sc.owner != owner {
            sc.owner = owner;
            sc.base = None;
        }
        let mut it = Interp::new_empty(prog);
        it.heap = std::mem::take(&mut sc.heap);
        it.spare = std::mem::take(&mut sc.spare);
        if let Some(base) = sc.base {
            for o in it.heap.drain(base..) {
                match o {
                    Obj::DocValues { mut items, .. } | Obj::List(mut items) => {
                        items.clear();
                        it.spare.push(items);
                    }
                    _ => {}
                }
            }
        }
        it.slots = std::mem::take(&mut sc.slots);
        it.slots.clear();
        it.slots.resize(prog.slot_types.len(), Val::Null);
        it.doc_cache = std::mem::take(&mut sc.doc_cache);
        it.doc_cache.clear();
        if let Some(f) = sc.field_buf.take() {
            it.field_buf = f;
        }
        it.strings = Some(std::mem::take(&mut sc.strings));
        if sc.base.is_none() {
            it.heap.clear();
            sc.params = load_params(&mut it);
            sc.doc = it.alloc(Obj::Doc);
            sc.base = Some(it.heap.len());
            sc.input_bytes = it.input_bytes;
        }
        it.input_bytes = sc.input_bytes;
        it.kept = sc.base.unwrap_or(0);
        it.slots[params_slot] = sc.params.clone();
        it.slots[doc_slot] = sc.doc.clone();
        it
    }

    /// Gives the buffers back to the scratch for the next run.
    pub(crate) fn into_scratch(mut self, sc: &mut Scratch) {
        if self.touched_kept {
            // the script changed `params` (or stored a run's object in it): reload it
            sc.base = None;
        }
        self.slots.clear();
        sc.slots = std::mem::take(&mut self.slots);
        sc.heap = std::mem::take(&mut self.heap);
        self.doc_cache.clear();
        sc.doc_cache = std::mem::take(&mut self.doc_cache);
        sc.spare = std::mem::take(&mut self.spare);
        if let Some(t) = self.strings.take() {
            sc.strings = t;
        }
        sc.field_buf = Some(std::mem::replace(
            &mut self.field_buf,
            DocField::Long(Vec::new()),
        ));
    }

    fn new_empty(prog: &'p Program) -> Interp<'p> {
        Interp {
            prog,
            slots: Vec::new(),
            heap: Vec::new(),
            steps: 0,
            work: Cell::new(0),
            bytes: Cell::new(0),
            input_bytes: 0,
            ret: Val::Null,
            lookup: None,
            emitted: Emitted::default(),
            strings: None,
            doc_cache: Vec::new(),
            spare: Vec::new(),
            field_buf: DocField::Long(Vec::new()),
            kept: 0,
            touched_kept: false,
        }
    }

    pub(crate) fn set_lookup(&mut self, lookup: &'p mut dyn DocLookup) {
        self.lookup = Some(lookup);
    }

    /// Runs the script and answers its value: what `return` gave, else the value of a final
    /// expression statement, else `null`.
    pub(crate) fn run_value(&mut self) -> Result<Val, Fail> {
        let prog = self.prog;
        let last = prog.body.len().checked_sub(1);
        for (i, st) in prog.body.iter().enumerate() {
            if Some(i) == last {
                if let StmtKind::Expr(e) = &st.kind {
                    self.step().map_err(|f| f.at(st.pos))?;
                    return self.eval(e).map_err(|f| f.at(st.pos));
                }
            }
            if let Flow::Return = self.exec(st)? {
                return Ok(std::mem::replace(&mut self.ret, Val::Null));
            }
        }
        Ok(Val::Null)
    }

    /// `doc[name]`: the field's values, read once per run.
    fn doc_field(&mut self, name: &Val) -> Result<Val, Fail> {
        let name = match name {
            Val::Str(s) => s.clone(),
            other => Arc::from(self.java_string(other)),
        };
        if let Some((_, v)) = self.doc_cache.iter().find(|(k, _)| *k == name) {
            return Ok(v.clone());
        }
        let Some(lookup) = self.lookup.as_mut() else {
            return Err(illegal_arg(format!(
                "No field found for [{name}] in mapping"
            )));
        };
        lookup
            .field_into(&name, &mut self.field_buf)
            .map_err(illegal_arg)?;
        let mut items = self.spare.pop().unwrap_or_default();
        let kind = match &self.field_buf {
            DocField::Long(v) => {
                items.extend(v.iter().map(|&i| Val::Int(i)));
                "org.elasticsearch.index.fielddata.ScriptDocValues$Longs"
            }
            DocField::Double(v) => {
                items.extend(v.iter().map(|&f| Val::Float(f)));
                "org.elasticsearch.index.fielddata.ScriptDocValues$Doubles"
            }
            DocField::Str(v) => {
                items.extend(v.iter().map(|s| Val::Str(intern(&mut self.strings, s))));
                "org.elasticsearch.index.fielddata.ScriptDocValues$Strings"
            }
            DocField::Bool(v) => {
                items.extend(v.iter().map(|&b| Val::Bool(b)));
                "org.elasticsearch.index.fielddata.ScriptDocValues$Booleans"
            }
            DocField::Date(v) => {
                for i in 0..v.len() {
                    let DocField::Date(v) = &self.field_buf else {
                        unreachable!("a date field")
                    };
                    let ms = v[i];
                    let d = self.alloc(Obj::Date(ms));
                    items.push(d);
                }
                "org.elasticsearch.index.fielddata.ScriptDocValues$Dates"
            }
        };
        let v = self.alloc(Obj::DocValues { kind, items });
        self.doc_cache.push((name, v.clone()));
        Ok(v)
    }

    fn is_doc(&self, v: &Val) -> bool {
        matches!(v, Val::Obj(id) if matches!(self.heap[*id], Obj::Doc))
    }

    pub(crate) fn set_slot(&mut self, slot: usize, v: Val) {
        self.slots[slot] = v;
    }

    /// Allocates without charging the budget: for the document and params the script gets.
    pub(crate) fn alloc(&mut self, o: Obj) -> Val {
        self.heap.push(o);
        Val::Obj(self.heap.len() - 1)
    }

    /// Allocates on behalf of the script.
    fn new_obj(&mut self, o: Obj) -> Result<Val, Fail> {
        let size = match &o {
            Obj::List(items) => items.len() * VAL_BYTES,
            Obj::Set(set) => set.items.len() * VAL_BYTES,
            Obj::Map(m) => m.len() * ENTRY_BYTES,
            Obj::Entry(..) | Obj::Doc | Obj::Date(_) | Obj::BigInteger(_) => 0,
            Obj::DocValues { items, .. } => items.len() * VAL_BYTES,
        };
        self.charge_bytes(OBJ_BYTES + size)?;
        Ok(self.alloc(o))
    }

    fn new_str(&self, s: String) -> Result<Val, Fail> {
        if s.len() > MAX_STRING_LEN {
            return Err(string_too_long());
        }
        self.charge_bytes(s.len())?;
        Ok(Val::Str(s.into()))
    }

    fn charge_bytes(&self, n: usize) -> Result<(), Fail> {
        self.bytes.set(self.bytes.get().saturating_add(n as u64));
        self.check_budget()
    }

    fn charge_work(&self, n: usize) -> Result<(), Fail> {
        self.note_work(n);
        self.check_budget()
    }

    /// For callers that cannot fail; the next check reports the overrun.
    fn note_work(&self, n: usize) {
        self.work.set(self.work.get().saturating_add(n as u64));
    }

    fn check_budget(&self) -> Result<(), Fail> {
        if self.bytes.get() > MAX_BYTES {
            return Err(Fail::new(
                "painless_error",
                format!("The script allocated more than the limit of [{MAX_BYTES}] bytes."),
            ));
        }
        if self.work.get() > MAX_WORK {
            return Err(Fail::new(
                "painless_error",
                format!(
                    "The script exceeded the limit of [{MAX_WORK}] operations on collections and strings."
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn map(&self, v: &Val) -> Option<&OMap> {
        match v {
            Val::Obj(id) => match &self.heap[*id] {
                Obj::Map(m) => Some(m),
                _ => None,
            },
            _ => None,
        }
    }

    pub(crate) fn run(&mut self) -> Result<(), Fail> {
        let prog = self.prog;
        self.exec_block(&prog.body).map(|_| ())
    }

    pub(crate) fn load_json(&mut self, v: &Value) -> Val {
        self.input_bytes += VAL_BYTES as u64;
        match v {
            Value::Null => Val::Null,
            Value::Bool(b) => Val::Bool(*b),
            Value::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => Val::Int(i),
                (None, Some(u)) => self.alloc(Obj::BigInteger(u.to_string().into())),
                (None, None) => Val::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) if s.starts_with(crate::BIG_INTEGER_MARK) => {
                let digits = &s[crate::BIG_INTEGER_MARK.len()..];
                self.alloc(Obj::BigInteger(digits.into()))
            }
            Value::String(s) => {
                self.input_bytes += s.len() as u64;
                Val::Str(s.as_str().into())
            }
            Value::Array(a) => {
                let items = a.iter().map(|x| self.load_json(x)).collect();
                self.alloc(Obj::List(items))
            }
            Value::Object(o) => self.load_json_map(o),
        }
    }

    pub(crate) fn load_json_map(&mut self, o: &Map<String, Value>) -> Val {
        let mut m = OMap::default();
        for (k, v) in o {
            let v = self.load_json(v);
            m.insert(k.as_str().into(), v);
        }
        self.alloc(Obj::Map(m))
    }

    /// Fails when a collection contains itself, which JSON cannot express, nests deeper than
    /// the JSON parser will read back, or would be far larger than what the script was given
    /// plus what it may allocate (a value shared many times over is written out each time, so
    /// `l = [l, l]` in a loop doubles the output while allocating almost nothing).
    pub(crate) fn to_json(&self, v: &Val) -> Result<Value, String> {
        let size = self.json_size(v, &mut Vec::new(), &mut HashMap::new())?;
        if size > 2 * self.input_bytes + MAX_BYTES {
            return Err("The script's result is too large to be written as a document".into());
        }
        Ok(self.build_json(v))
    }

    /// The output size in the units `load_json` counts, memoized per object so that shared
    /// values cost one visit; also where cycles and depth are checked.
    fn json_size(
        &self,
        v: &Val,
        open: &mut Vec<usize>,
        memo: &mut HashMap<usize, u64>,
    ) -> Result<u64, String> {
        let id = match v {
            Val::Obj(id) => *id,
            Val::Str(s) => return Ok((VAL_BYTES + s.len()) as u64),
            _ => return Ok(VAL_BYTES as u64),
        };
        if let Some(size) = memo.get(&id) {
            return Ok(*size);
        }
        if open.contains(&id) {
            return Err("Iterable object is self-referencing itself".into());
        }
        if open.len() >= MAX_JSON_DEPTH {
            return Err(format!(
                "The document is nested more than [{MAX_JSON_DEPTH}] levels deep"
            ));
        }
        open.push(id);
        let mut size = VAL_BYTES as u64;
        match &self.heap[id] {
            Obj::List(items) | Obj::Set(VSet { items, .. }) => {
                for x in items {
                    size = size.saturating_add(self.json_size(x, open, memo)?);
                }
            }
            Obj::Map(m) => {
                for (k, x) in m.iter() {
                    size = size
                        .saturating_add(k.len() as u64)
                        .saturating_add(self.json_size(x, open, memo)?);
                }
            }
            Obj::Entry(k, x) => {
                size = size
                    .saturating_add(self.json_size(k, open, memo)?)
                    .saturating_add(self.json_size(x, open, memo)?);
            }
            Obj::DocValues { items, .. } => {
                for x in items {
                    size = size.saturating_add(self.json_size(x, open, memo)?);
                }
            }
            Obj::Doc | Obj::Date(_) | Obj::BigInteger(_) => {}
        }
        open.pop();
        memo.insert(id, size);
        Ok(size)
    }

    /// An aggregation script's answer appended to `out` as its values: nothing for `null`,
    /// a collection's scalar members (dates as ISO strings) one by one, else the value.
    pub(crate) fn push_result(&self, v: &Val, out: &mut Emitted) {
        fn scalar(it: &Interp, v: &Val, out: &mut Emitted) {
            match v {
                Val::Null => {}
                Val::Str(s) => out.push_str(s),
                Val::Obj(id) => match &it.heap[*id] {
                    Obj::Date(ms) => out.push_string_with(|b| b.push_str(&iso_millis(*ms))),
                    Obj::BigInteger(_) => out.push(it.build_json(v)),
                    _ => {}
                },
                v => out.push(it.build_json(v)),
            }
        }
        match v {
            Val::Obj(id) => match &self.heap[*id] {
                Obj::List(items) | Obj::Set(VSet { items, .. }) | Obj::DocValues { items, .. } => {
                    for x in items {
                        scalar(self, x, out);
                    }
                }
                _ => scalar(self, v, out),
            },
            v => scalar(self, v, out),
        }
    }

    fn build_json(&self, v: &Val) -> Value {
        match v {
            Val::Null => Value::Null,
            Val::Bool(b) => Value::Bool(*b),
            Val::Int(i) => Value::from(*i),
            Val::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Val::Str(s) => Value::String(s.to_string()),
            Val::Obj(id) => match &self.heap[*id] {
                Obj::List(items) | Obj::Set(VSet { items, .. }) => {
                    Value::Array(items.iter().map(|x| self.build_json(x)).collect())
                }
                Obj::Map(m) => Value::Object(
                    m.iter()
                        .map(|(k, x)| (k.to_string(), self.build_json(x)))
                        .collect(),
                ),
                Obj::Entry(k, x) => {
                    let mut out = Map::new();
                    out.insert(self.java_string(k), self.build_json(x));
                    Value::Object(out)
                }
                Obj::DocValues { items, .. } => {
                    Value::Array(items.iter().map(|x| self.build_json(x)).collect())
                }
                Obj::Doc => Value::Object(Map::new()),
                Obj::Date(ms) => Value::String(iso_millis(*ms)),
                Obj::BigInteger(digits) => big_integer_json(digits),
            },
        }
    }

    fn step(&mut self) -> Result<(), Fail> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(Fail::new(
                "painless_error",
                "The maximum number of statements that can be executed in a loop has been reached.",
            ));
        }
        self.check_budget()
    }

    fn exec_block(&mut self, stmts: &[Stmt]) -> Result<Flow, Fail> {
        for s in stmts {
            match self.exec(s)? {
                Flow::Normal => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Normal)
    }

    fn exec(&mut self, s: &Stmt) -> Result<Flow, Fail> {
        self.exec_inner(s).map_err(|f| f.at(s.pos))
    }

    /// Dispatches to one function per statement kind, for the same stack-size reason as
    /// [`Self::eval_inner`].
    fn exec_inner(&mut self, s: &Stmt) -> Result<Flow, Fail> {
        self.step()?;
        match &s.kind {
            StmtKind::Empty => Ok(Flow::Normal),
            StmtKind::Expr(e) => self.exec_expr(e),
            StmtKind::Decl(vars) => self.exec_decl(vars),
            StmtKind::Block(b) => self.exec_block(b),
            StmtKind::If(c, a, b) => self.exec_if(c, a, b.as_deref()),
            StmtKind::While(c, body) => self.exec_while(c, body),
            StmtKind::DoWhile(body, c) => self.exec_do_while(body, c),
            StmtKind::For {
                init,
                cond,
                update,
                body,
            } => self.exec_for(init.as_deref(), cond.as_ref(), update, body),
            StmtKind::ForEach {
                slot,
                iterable,
                body,
            } => self.exec_for_each(*slot, iterable, body),
            StmtKind::Return(e) => self.exec_return(e.as_ref()),
            StmtKind::Break => Ok(Flow::Break),
            StmtKind::Continue => Ok(Flow::Continue),
            StmtKind::Throw(kind, msg) => self.exec_throw(kind, msg.as_ref()),
        }
    }

    fn exec_expr(&mut self, e: &Expr) -> Result<Flow, Fail> {
        self.eval(e)?;
        Ok(Flow::Normal)
    }

    fn exec_decl(&mut self, vars: &[(usize, Option<Expr>)]) -> Result<Flow, Fail> {
        for (slot, init) in vars {
            let ty = self.prog.slot_types[*slot];
            let v = match init {
                Some(e) => {
                    let v = self.eval(e)?;
                    self.coerce(ty, v, false).map_err(|f| f.at(e.pos))?
                }
                None => default_of(ty),
            };
            self.slots[*slot] = v;
        }
        Ok(Flow::Normal)
    }

    fn exec_if(&mut self, c: &Expr, a: &Stmt, b: Option<&Stmt>) -> Result<Flow, Fail> {
        if self.condition(c)? {
            self.exec(a)
        } else if let Some(b) = b {
            self.exec(b)
        } else {
            Ok(Flow::Normal)
        }
    }

    fn exec_while(&mut self, c: &Expr, body: &Stmt) -> Result<Flow, Fail> {
        loop {
            self.step()?;
            if !self.condition(c)? {
                return Ok(Flow::Normal);
            }
            match self.exec(body)? {
                Flow::Break => return Ok(Flow::Normal),
                Flow::Return => return Ok(Flow::Return),
                Flow::Normal | Flow::Continue => {}
            }
        }
    }

    fn exec_do_while(&mut self, body: &Stmt, c: &Expr) -> Result<Flow, Fail> {
        loop {
            self.step()?;
            match self.exec(body)? {
                Flow::Break => return Ok(Flow::Normal),
                Flow::Return => return Ok(Flow::Return),
                Flow::Normal | Flow::Continue => {}
            }
            if !self.condition(c)? {
                return Ok(Flow::Normal);
            }
        }
    }

    fn exec_for(
        &mut self,
        init: Option<&Stmt>,
        cond: Option<&Expr>,
        update: &[Expr],
        body: &Stmt,
    ) -> Result<Flow, Fail> {
        if let Some(init) = init {
            self.exec(init)?;
        }
        loop {
            self.step()?;
            if let Some(c) = cond {
                if !self.condition(c)? {
                    return Ok(Flow::Normal);
                }
            }
            match self.exec(body)? {
                Flow::Break => return Ok(Flow::Normal),
                Flow::Return => return Ok(Flow::Return),
                Flow::Normal | Flow::Continue => {}
            }
            for u in update {
                self.eval(u)?;
            }
        }
    }

    fn exec_for_each(&mut self, slot: usize, iterable: &Expr, body: &Stmt) -> Result<Flow, Fail> {
        let coll = self.eval(iterable)?;
        // the snapshot is held in a spare vector, given back after the loop
        let mut items = self.spare.pop().unwrap_or_default();
        if let Err(f) = self.iteration(&coll, &mut items) {
            items.clear();
            self.spare.push(items);
            return Err(f.at(iterable.pos));
        }
        let r = self.for_each_item(slot, &items, body);
        items.clear();
        self.spare.push(items);
        r
    }

    fn for_each_item(&mut self, slot: usize, items: &[Val], body: &Stmt) -> Result<Flow, Fail> {
        let ty = self.prog.slot_types[slot];
        for item in items {
            self.step()?;
            self.slots[slot] = self.coerce(ty, item.clone(), false)?;
            match self.exec(body)? {
                Flow::Break => break,
                Flow::Return => return Ok(Flow::Return),
                Flow::Normal | Flow::Continue => {}
            }
        }
        Ok(Flow::Normal)
    }

    fn exec_return(&mut self, e: Option<&Expr>) -> Result<Flow, Fail> {
        if let Some(e) = e {
            self.ret = self.eval(e)?;
        }
        Ok(Flow::Return)
    }

    fn exec_throw(&mut self, kind: &'static str, msg: Option<&Expr>) -> Result<Flow, Fail> {
        let reason = match msg {
            Some(e) => {
                let v = self.eval(e)?;
                self.java_string(&v)
            }
            None => "null".to_string(),
        };
        Err(Fail::new(kind, reason))
    }

    /// Iterates a snapshot, so changing the collection inside the loop cannot invalidate it.
    fn iteration(&self, coll: &Val, out: &mut Vec<Val>) -> Result<(), Fail> {
        match coll {
            Val::Null => Err(npe("Cannot iterate over null")),
            Val::Obj(id) => match &self.heap[*id] {
                Obj::List(items) | Obj::Set(VSet { items, .. }) | Obj::DocValues { items, .. } => {
                    self.charge_work(items.len())?;
                    out.extend(items.iter().cloned());
                    Ok(())
                }
                _ => Err(illegal_arg(format!(
                    "Cannot iterate over [{}]",
                    self.type_name(coll)
                ))),
            },
            other => Err(illegal_arg(format!(
                "Cannot iterate over [{}]",
                self.type_name(other)
            ))),
        }
    }

    fn condition(&mut self, e: &Expr) -> Result<bool, Fail> {
        let v = self.eval(e)?;
        self.as_bool(&v).map_err(|f| f.at(e.pos))
    }

    fn as_bool(&self, v: &Val) -> Result<bool, Fail> {
        match v {
            Val::Bool(b) => Ok(*b),
            Val::Null => Err(npe("Cannot unbox null value to [boolean]")),
            other => Err(class_cast(format!(
                "Cannot cast from [{}] to [boolean].",
                self.type_name(other)
            ))),
        }
    }

    fn eval(&mut self, e: &Expr) -> Result<Val, Fail> {
        let mut r = self.eval_inner(e);
        if let Err(f) = &mut r {
            f.pos.get_or_insert(e.pos);
        }
        r
    }

    fn eval_args(&mut self, args: &[Expr]) -> Result<Args, Fail> {
        args.iter().map(|a| self.eval(a)).collect()
    }

    /// Every arm is a tail call into its own function: unoptimized builds give a function one
    /// stack slot per temporary of every arm, and this frame is on the stack once per level of
    /// expression nesting.
    fn eval_inner(&mut self, e: &Expr) -> Result<Val, Fail> {
        match &*e.kind {
            ExprKind::Null
            | ExprKind::Bool(_)
            | ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Str(_)
            | ExprKind::Var(_) => Ok(self.eval_leaf(e)),
            ExprKind::ListLit(_) => self.eval_list(e),
            ExprKind::MapLit(_) => self.eval_map(e),
            ExprKind::New(..) => self.eval_new(e),
            ExprKind::Field { .. } => self.eval_field(e),
            ExprKind::Index { .. } => self.eval_index(e),
            ExprKind::Call { .. } => self.eval_call(e),
            ExprKind::Static { .. } => self.eval_static(e),
            ExprKind::Unary(..) => self.eval_unary(e),
            ExprKind::Binary(..) => self.eval_binary(e),
            ExprKind::And(..) | ExprKind::Or(..) => self.eval_logic(e),
            ExprKind::Cond(..) => self.eval_cond(e),
            ExprKind::Elvis(..) => self.eval_elvis(e),
            ExprKind::Assign { .. } => self.eval_assign(e),
            ExprKind::IncDec { .. } => self.eval_incdec(e),
            ExprKind::Cast(..) => self.eval_cast(e),
            ExprKind::InstanceOf(..) => self.eval_instanceof(e),
        }
    }

    fn eval_leaf(&self, e: &Expr) -> Val {
        match &*e.kind {
            ExprKind::Bool(b) => Val::Bool(*b),
            ExprKind::Int(i) => Val::Int(*i),
            ExprKind::Float(f) => Val::Float(*f),
            ExprKind::Str(s) => Val::Str(s.clone()),
            ExprKind::Var(slot) => self.slots[*slot].clone(),
            _ => Val::Null,
        }
    }

    fn eval_list(&mut self, e: &Expr) -> Result<Val, Fail> {
        let ExprKind::ListLit(items) = &*e.kind else {
            unreachable!()
        };
        let items = self.eval_args(items)?;
        self.new_obj(Obj::List(items.into_vec()))
    }

    fn eval_map(&mut self, e: &Expr) -> Result<Val, Fail> {
        let ExprKind::MapLit(pairs) = &*e.kind else {
            unreachable!()
        };
        let mut m = OMap::default();
        for (k, v) in pairs {
            let k = self.eval(k)?;
            let v = self.eval(v)?;
            m.insert(self.key(&k), v);
        }
        self.new_obj(Obj::Map(m))
    }

    fn eval_new(&mut self, e: &Expr) -> Result<Val, Fail> {
        let ExprKind::New(kind, args) = &*e.kind else {
            unreachable!()
        };
        let args = self.eval_args(args)?;
        self.construct(*kind, args)
    }

    fn eval_field(&mut self, e: &Expr) -> Result<Val, Fail> {
        let ExprKind::Field {
            obj,
            name,
            null_safe,
        } = &*e.kind
        else {
            unreachable!()
        };
        let o = self.eval(obj)?;
        if *null_safe && matches!(o, Val::Null) {
            return Ok(Val::Null);
        }
        if self.is_doc(&o) {
            return self.doc_field(&Val::Str(name.clone()));
        }
        self.get_field(&o, name)
    }

    fn eval_index(&mut self, e: &Expr) -> Result<Val, Fail> {
        let ExprKind::Index { obj, idx } = &*e.kind else {
            unreachable!()
        };
        let o = self.eval(obj)?;
        let i = self.eval(idx)?;
        if self.is_doc(&o) {
            return self.doc_field(&i);
        }
        self.get_index(&o, &i)
    }

    fn eval_call(&mut self, e: &Expr) -> Result<Val, Fail> {
        let ExprKind::Call {
            obj,
            method,
            args,
            null_safe,
        } = &*e.kind
        else {
            unreachable!()
        };
        let o = self.eval(obj)?;
        if *null_safe && matches!(o, Val::Null) {
            return Ok(Val::Null);
        }
        let args = self.eval_args(args)?;
        self.call_method(o, method, args)
    }

    fn eval_static(&mut self, e: &Expr) -> Result<Val, Fail> {
        let ExprKind::Static {
            class,
            method,
            args,
        } = &*e.kind
        else {
            unreachable!()
        };
        let args = self.eval_args(args)?;
        self.call_static(class, method, args)
    }

    fn eval_unary(&mut self, e: &Expr) -> Result<Val, Fail> {
        let ExprKind::Unary(op, x) = &*e.kind else {
            unreachable!()
        };
        let v = self.eval(x)?;
        self.unary(*op, v)
    }

    fn eval_binary(&mut self, e: &Expr) -> Result<Val, Fail> {
        let ExprKind::Binary(op, a, b) = &*e.kind else {
            unreachable!()
        };
        let a = self.eval(a)?;
        let b = self.eval(b)?;
        self.binary(*op, a, b)
    }

    fn eval_logic(&mut self, e: &Expr) -> Result<Val, Fail> {
        let (and, a, b) = match &*e.kind {
            ExprKind::And(a, b) => (true, a, b),
            ExprKind::Or(a, b) => (false, a, b),
            _ => unreachable!(),
        };
        let first = self.condition(a)?;
        if first != and {
            return Ok(Val::Bool(first));
        }
        Ok(Val::Bool(self.condition(b)?))
    }

    fn eval_cond(&mut self, e: &Expr) -> Result<Val, Fail> {
        let ExprKind::Cond(c, a, b) = &*e.kind else {
            unreachable!()
        };
        if self.condition(c)? {
            self.eval(a)
        } else {
            self.eval(b)
        }
    }

    fn eval_elvis(&mut self, e: &Expr) -> Result<Val, Fail> {
        let ExprKind::Elvis(a, b) = &*e.kind else {
            unreachable!()
        };
        match self.eval(a)? {
            Val::Null => self.eval(b),
            v => Ok(v),
        }
    }

    fn eval_assign(&mut self, e: &Expr) -> Result<Val, Fail> {
        let ExprKind::Assign { target, op, value } = &*e.kind else {
            unreachable!()
        };
        let op = *op;
        let place = self.place(target).map_err(|f| f.at(target.pos))?;
        let v = match op {
            None => self.eval(value)?,
            Some(op) => {
                let cur = self.read(&place)?;
                let rhs = self.eval(value)?;
                self.binary(op, cur, rhs)?
            }
        };
        self.write(place, v, op.is_some())
    }

    fn eval_incdec(&mut self, e: &Expr) -> Result<Val, Fail> {
        let ExprKind::IncDec {
            target,
            delta,
            prefix,
        } = &*e.kind
        else {
            unreachable!()
        };
        let (delta, prefix) = (*delta, *prefix);
        let place = self.place(target).map_err(|f| f.at(target.pos))?;
        let cur = self.read(&place)?;
        let next = match cur {
            Val::Int(i) => Val::Int(i.wrapping_add(delta)),
            Val::Float(f) => Val::Float(f + delta as f64),
            Val::Null => return Err(npe("Cannot increment a null value")),
            ref other => {
                return Err(class_cast(format!(
                    "Cannot apply [{}] operation to type [{}].",
                    if delta > 0 { "++" } else { "--" },
                    self.type_name(other)
                )))
            }
        };
        let stored = self.write(place, next, true)?;
        Ok(if prefix { stored } else { cur })
    }

    fn eval_cast(&mut self, e: &Expr) -> Result<Val, Fail> {
        let ExprKind::Cast(ty, x) = &*e.kind else {
            unreachable!()
        };
        let v = self.eval(x)?;
        self.cast(*ty, v)
    }

    fn eval_instanceof(&mut self, e: &Expr) -> Result<Val, Fail> {
        let ExprKind::InstanceOf(x, ty) = &*e.kind else {
            unreachable!()
        };
        let v = self.eval(x)?;
        Ok(Val::Bool(self.instance_of(&v, *ty)))
    }

    fn place(&mut self, t: &Expr) -> Result<Place, Fail> {
        match &*t.kind {
            ExprKind::Var(slot) => Ok(Place::Slot(*slot)),
            ExprKind::Field { obj, name, .. } => {
                let o = self.eval(obj)?;
                match &o {
                    Val::Obj(id) if matches!(self.heap[*id], Obj::Map(_)) => {
                        Ok(Place::Key(*id, name.clone()))
                    }
                    Val::Null => Err(npe(format!(
                        "Cannot set field [{name}] because the object is null"
                    ))),
                    other => Err(illegal_arg(format!(
                        "dynamic setter [{}, {name}] not found",
                        self.type_name(other)
                    ))),
                }
            }
            ExprKind::Index { obj, idx } => {
                let o = self.eval(obj)?;
                let i = self.eval(idx)?;
                match &o {
                    Val::Obj(id) => match &self.heap[*id] {
                        Obj::Map(_) => Ok(Place::Key(*id, self.key(&i))),
                        Obj::List(items) => {
                            let at = self.list_index(&i, items.len(), true)?;
                            Ok(Place::Elem(*id, at))
                        }
                        _ => Err(illegal_arg(format!(
                            "Attempting to address a non-array-like type [{}] as an array.",
                            self.type_name(&o)
                        ))),
                    },
                    Val::Null => Err(npe("Cannot store to an index of a null value")),
                    other => Err(illegal_arg(format!(
                        "Attempting to address a non-array-like type [{}] as an array.",
                        self.type_name(other)
                    ))),
                }
            }
            _ => Err(illegal_arg("invalid assignment target")),
        }
    }

    fn read(&self, p: &Place) -> Result<Val, Fail> {
        match p {
            Place::Slot(s) => Ok(self.slots[*s].clone()),
            Place::Key(id, k) => Ok(match &self.heap[*id] {
                Obj::Map(m) => m.get(k).cloned().unwrap_or(Val::Null),
                _ => Val::Null,
            }),
            Place::Elem(id, i) => match &self.heap[*id] {
                Obj::List(items) => items
                    .get(*i)
                    .cloned()
                    .ok_or_else(|| out_of_bounds(*i as i64, items.len())),
                _ => Ok(Val::Null),
            },
        }
    }

    /// Stores `v` and answers the value stored (after conversion to a typed local's type).
    fn write(&mut self, p: Place, v: Val, compound: bool) -> Result<Val, Fail> {
        match p {
            Place::Slot(s) => {
                let v = self.coerce(self.prog.slot_types[s], v, compound)?;
                self.slots[s] = v.clone();
                Ok(v)
            }
            Place::Key(id, k) => {
                self.touch(id);
                if let Obj::Map(m) = &mut self.heap[id] {
                    if m.insert(k, v.clone()).is_none() {
                        self.charge_bytes(ENTRY_BYTES)?;
                    }
                }
                Ok(v)
            }
            Place::Elem(id, i) => {
                self.touch(id);
                if let Obj::List(items) = &mut self.heap[id] {
                    let len = items.len();
                    *items
                        .get_mut(i)
                        .ok_or_else(|| out_of_bounds(i as i64, len))? = v.clone();
                }
                Ok(v)
            }
        }
    }

    /// `list[i]` accepts negative indexes from the end, as Painless does; `get(i)` does not.
    /// `doc['f'][i]` / `.get(i)`: ES refuses any index of an empty field with the same error
    /// as `.value`.
    fn doc_value_at(&self, items: &[Val], i: &Val) -> Result<Val, Fail> {
        if items.is_empty() {
            return Err(Fail::new("illegal_state_exception", NO_VALUE));
        }
        Ok(items[self.list_index(i, items.len(), false)?].clone())
    }

    fn list_index(&self, i: &Val, len: usize, negative: bool) -> Result<usize, Fail> {
        let raw = match i {
            Val::Int(i) => *i,
            Val::Null => return Err(npe("Cannot use a null index")),
            other => {
                return Err(class_cast(format!(
                    "Cannot cast from [{}] to [int].",
                    self.type_name(other)
                )))
            }
        };
        let at = if negative && raw < 0 {
            raw + len as i64
        } else {
            raw
        };
        if at < 0 || at >= len as i64 {
            return Err(out_of_bounds(raw, len));
        }
        Ok(at as usize)
    }

    fn key(&self, k: &Val) -> Arc<str> {
        match k {
            Val::Str(s) => s.clone(),
            other => self.java_string(other).into(),
        }
    }

    fn construct(&mut self, kind: NewKind, args: Args) -> Result<Val, Fail> {
        let copy = match args.first() {
            None | Some(Val::Int(_)) => None,
            Some(v @ Val::Obj(_)) => Some(v.clone()),
            Some(Val::Null) => return Err(npe("Cannot copy a null collection")),
            Some(other) => {
                return Err(class_cast(format!(
                    "Cannot cast from [{}] to [java.util.Collection].",
                    self.type_name(other)
                )))
            }
        };
        let obj = match (kind, copy) {
            (NewKind::List, None) => Obj::List(vec![]),
            (NewKind::Set, None) => Obj::Set(VSet::default()),
            (NewKind::Map, None) => Obj::Map(OMap::default()),
            (NewKind::Map, Some(src)) => match self.map(&src) {
                Some(m) => {
                    let mut out = OMap::default();
                    for (k, v) in m.iter() {
                        out.insert(k.clone(), v.clone());
                    }
                    Obj::Map(out)
                }
                None => {
                    return Err(class_cast(format!(
                        "Cannot cast from [{}] to [java.util.Map].",
                        self.type_name(&src)
                    )))
                }
            },
            (NewKind::List, Some(src)) => Obj::List(self.collection_items(&src)?),
            (NewKind::Set, Some(src)) => {
                let items = self.collection_items(&src)?;
                let set = self.new_obj(Obj::Set(VSet::default()))?;
                let Val::Obj(id) = set else {
                    unreachable!("new_obj answers an object")
                };
                for x in items {
                    self.set_insert(id, x)?;
                }
                return Ok(set);
            }
        };
        self.new_obj(obj)
    }

    fn set_contains(&self, id: usize, v: &Val) -> bool {
        let set = self.set(id);
        match scalar(v) {
            Some(k) => set.scalars.contains(&k),
            None => {
                self.note_work(set.items.len());
                set.items
                    .iter()
                    .any(|x| matches!(x, Val::Obj(_)) && self.equals(x, v))
            }
        }
    }

    fn set_insert(&mut self, id: usize, v: Val) -> Result<bool, Fail> {
        if self.set_contains(id, &v) {
            return Ok(false);
        }
        self.charge_bytes(VAL_BYTES)?;
        let set = self.set_mut(id);
        if let Some(k) = scalar(&v) {
            set.scalars.insert(k);
        }
        set.items.push(v);
        Ok(true)
    }

    fn set_remove(&mut self, id: usize, v: &Val) -> Result<bool, Fail> {
        if !self.set_contains(id, v) {
            return Ok(false);
        }
        self.charge_work(self.set(id).items.len())?;
        let at = self.set(id).items.iter().position(|x| self.equals(x, v));
        let set = self.set_mut(id);
        if let Some(at) = at {
            set.items.remove(at);
        }
        if let Some(k) = scalar(v) {
            set.scalars.remove(&k);
        }
        Ok(at.is_some())
    }

    fn collection_items(&self, v: &Val) -> Result<Vec<Val>, Fail> {
        match v {
            Val::Obj(id) => match &self.heap[*id] {
                Obj::List(items) | Obj::Set(VSet { items, .. }) => {
                    self.charge_work(items.len())?;
                    Ok(items.clone())
                }
                _ => Err(class_cast(format!(
                    "Cannot cast from [{}] to [java.util.Collection].",
                    self.type_name(v)
                ))),
            },
            Val::Null => Err(npe("Collection argument is null")),
            other => Err(class_cast(format!(
                "Cannot cast from [{}] to [java.util.Collection].",
                self.type_name(other)
            ))),
        }
    }

    fn get_field(&self, o: &Val, name: &str) -> Result<Val, Fail> {
        match o {
            Val::Null => Err(npe(format!(
                "Cannot access field [{name}] because the object is null"
            ))),
            Val::Obj(id) => match (&self.heap[*id], name) {
                (Obj::Map(m), _) => Ok(m.get(name).cloned().unwrap_or(Val::Null)),
                (Obj::Entry(k, _), "key") => Ok(k.clone()),
                (Obj::Entry(_, v), "value") => Ok(v.clone()),
                (Obj::List(items) | Obj::Set(VSet { items, .. }), "empty") => {
                    Ok(Val::Bool(items.is_empty()))
                }
                (
                    Obj::DocValues {
                        kind: DOUBLE_ARRAY,
                        items,
                    },
                    "length",
                ) => Ok(Val::Int(items.len() as i64)),
                (
                    Obj::DocValues {
                        kind: DOUBLE_ARRAY, ..
                    },
                    _,
                ) => Err(illegal_arg(format!(
                    "dynamic getter [{}, {name}] not found",
                    self.type_name(o)
                ))),
                (Obj::DocValues { items, .. }, "value") => items
                    .first()
                    .cloned()
                    .ok_or_else(|| Fail::new("illegal_state_exception", NO_VALUE)),
                (Obj::DocValues { items, .. }, "empty") => Ok(Val::Bool(items.is_empty())),
                (Obj::DocValues { items, .. }, "length") => Ok(Val::Int(items.len() as i64)),
                (Obj::Date(ms), "millis") => Ok(Val::Int(*ms)),
                _ => Err(illegal_arg(format!(
                    "dynamic getter [{}, {name}] not found",
                    self.type_name(o)
                ))),
            },
            Val::Str(s) if name == "empty" => Ok(Val::Bool(s.is_empty())),
            other => Err(illegal_arg(format!(
                "dynamic getter [{}, {name}] not found",
                self.type_name(other)
            ))),
        }
    }

    fn get_index(&self, o: &Val, i: &Val) -> Result<Val, Fail> {
        match o {
            Val::Null => Err(npe("Cannot load from an index of a null value")),
            Val::Obj(id) => match &self.heap[*id] {
                Obj::Map(m) => Ok(m.get(&self.key(i)).cloned().unwrap_or(Val::Null)),
                Obj::List(items) => Ok(items[self.list_index(i, items.len(), true)?].clone()),
                Obj::DocValues {
                    kind: DOUBLE_ARRAY,
                    items,
                } => Ok(items[self.list_index(i, items.len(), false)?].clone()),
                Obj::DocValues { items, .. } => self.doc_value_at(items, i),
                _ => Err(illegal_arg(format!(
                    "Attempting to address a non-array-like type [{}] as an array.",
                    self.type_name(o)
                ))),
            },
            other => Err(illegal_arg(format!(
                "Attempting to address a non-array-like type [{}] as an array.",
                self.type_name(other)
            ))),
        }
    }

    pub(crate) fn type_name(&self, v: &Val) -> &'static str {
        match v {
            Val::Null => "null",
            Val::Bool(_) => "java.lang.Boolean",
            Val::Int(i) if i32::try_from(*i).is_ok() => "java.lang.Integer",
            Val::Int(_) => "java.lang.Long",
            Val::Float(_) => "java.lang.Double",
            Val::Str(_) => "java.lang.String",
            Val::Obj(id) => match &self.heap[*id] {
                Obj::List(_) => "java.util.ArrayList",
                Obj::Set(_) => "java.util.HashSet",
                Obj::Map(_) => "java.util.HashMap",
                Obj::Entry(..) => "java.util.Map$Entry",
                Obj::Doc => "org.elasticsearch.search.lookup.LeafDocLookup",
                Obj::DocValues { kind, .. } => kind,
                Obj::Date(_) => "java.time.ZonedDateTime",
                Obj::BigInteger(_) => "java.math.BigInteger",
            },
        }
    }

    fn instance_of(&self, v: &Val, ty: Ty) -> bool {
        let obj = |v: &Val| match v {
            Val::Obj(id) => Some(&self.heap[*id]),
            _ => None,
        };
        match ty {
            Ty::Def | Ty::Object => !matches!(v, Val::Null),
            Ty::Int => matches!(v, Val::Int(i) if i32::try_from(*i).is_ok()),
            Ty::Long => matches!(v, Val::Int(i) if i32::try_from(*i).is_err()),
            Ty::Double => matches!(v, Val::Float(_)),
            Ty::Number => {
                matches!(v, Val::Int(_) | Val::Float(_))
                    || matches!(obj(v), Some(Obj::BigInteger(_)))
            }
            Ty::Boolean => matches!(v, Val::Bool(_)),
            Ty::String => matches!(v, Val::Str(_)),
            Ty::List => matches!(obj(v), Some(Obj::List(_))),
            Ty::Set => matches!(obj(v), Some(Obj::Set(_))),
            Ty::Collection => matches!(obj(v), Some(Obj::List(_) | Obj::Set(_))),
            Ty::Map => matches!(obj(v), Some(Obj::Map(_))),
            Ty::Short | Ty::Byte | Ty::Char | Ty::Float => false,
        }
    }

    /// Implicit conversion into a typed local; `narrow` is Java's hidden cast in `i += 1.5`.
    fn coerce(&self, ty: Ty, v: Val, narrow: bool) -> Result<Val, Fail> {
        let ok = match (ty, &v) {
            (Ty::Def | Ty::Object, _) => true,
            (Ty::Int | Ty::Long | Ty::Short | Ty::Byte, Val::Int(_)) => true,
            (Ty::Int | Ty::Long | Ty::Short | Ty::Byte, Val::Float(f)) if narrow => {
                return Ok(Val::Int(*f as i64))
            }
            (Ty::Double | Ty::Float, Val::Int(i)) => return Ok(Val::Float(*i as f64)),
            (Ty::Double | Ty::Float, Val::Float(_)) => true,
            (Ty::Boolean, Val::Bool(_)) => true,
            (Ty::Char, Val::Str(s)) => s.chars().count() == 1,
            (
                Ty::String | Ty::Number | Ty::List | Ty::Set | Ty::Collection | Ty::Map,
                Val::Null,
            ) => true,
            (
                Ty::Int
                | Ty::Long
                | Ty::Short
                | Ty::Byte
                | Ty::Double
                | Ty::Float
                | Ty::Boolean
                | Ty::Char,
                Val::Null,
            ) => {
                return Err(npe(format!("Cannot unbox null value to [{}]", ty.name())));
            }
            _ => self.instance_of(&v, ty) || (ty == Ty::Number && matches!(v, Val::Int(_))),
        };
        if ok {
            Ok(v)
        } else {
            Err(class_cast(format!(
                "Cannot cast from [{}] to [{}].",
                self.type_name(&v),
                ty.name()
            )))
        }
    }

    fn cast(&self, ty: Ty, v: Val) -> Result<Val, Fail> {
        let int = |i: i64| -> i64 {
            match ty {
                Ty::Int => i as i32 as i64,
                Ty::Short => i as i16 as i64,
                Ty::Byte => i as i8 as i64,
                _ => i,
            }
        };
        match (ty, &v) {
            (Ty::Int | Ty::Long | Ty::Short | Ty::Byte, Val::Int(i)) => Ok(Val::Int(int(*i))),
            // Rust's saturating float-to-int conversion is Java's.
            (Ty::Int, Val::Float(f)) => Ok(Val::Int(*f as i32 as i64)),
            (Ty::Long | Ty::Short | Ty::Byte, Val::Float(f)) => Ok(Val::Int(int(*f as i64))),
            (Ty::Int | Ty::Long | Ty::Short | Ty::Byte, Val::Str(s)) if s.chars().count() == 1 => {
                Ok(Val::Int(int(s.chars().next().unwrap_or('\0') as i64)))
            }
            (Ty::Double, Val::Int(i)) => Ok(Val::Float(*i as f64)),
            (Ty::Float, Val::Int(i)) => Ok(Val::Float(*i as f32 as f64)),
            (Ty::Float, Val::Float(f)) => Ok(Val::Float(*f as f32 as f64)),
            (Ty::Char, Val::Int(i)) => Ok(Val::Str(
                char::from_u32(*i as u32)
                    .unwrap_or('\u{fffd}')
                    .to_string()
                    .into(),
            )),
            _ => self.coerce(ty, v, false),
        }
    }

    fn unary(&self, op: UnOp, v: Val) -> Result<Val, Fail> {
        Ok(match (op, &v) {
            (UnOp::Neg, Val::Int(i)) => Val::Int(i.wrapping_neg()),
            (UnOp::Neg, Val::Float(f)) => Val::Float(-f),
            (UnOp::Plus, Val::Int(_) | Val::Float(_)) => v,
            (UnOp::Not, _) => Val::Bool(!self.as_bool(&v)?),
            (UnOp::BitNot, Val::Int(i)) => Val::Int(!i),
            (_, Val::Null) => return Err(npe("Cannot apply a unary operator to null")),
            (op, other) => {
                let sym = match op {
                    UnOp::Neg => "-",
                    UnOp::Plus => "+",
                    UnOp::Not => "!",
                    UnOp::BitNot => "~",
                };
                return Err(class_cast(format!(
                    "Cannot apply [{sym}] operation to type [{}].",
                    self.type_name(other)
                )));
            }
        })
    }

    fn binary(&self, op: BinOp, a: Val, b: Val) -> Result<Val, Fail> {
        use BinOp::*;
        match op {
            Eq => return Ok(Val::Bool(self.loose_eq(&a, &b))),
            Ne => return Ok(Val::Bool(!self.loose_eq(&a, &b))),
            RefEq | RefNe => {
                let same = match (&a, &b) {
                    (Val::Obj(x), Val::Obj(y)) => x == y,
                    _ => self.loose_eq(&a, &b),
                };
                return Ok(Val::Bool(same == (op == RefEq)));
            }
            Add if matches!(a, Val::Str(_)) || matches!(b, Val::Str(_)) => {
                let mut s = self.java_string(&a);
                s.push_str(&self.java_string(&b));
                return self.new_str(s);
            }
            BitAnd | BitOr | BitXor => {
                if let (Val::Bool(x), Val::Bool(y)) = (&a, &b) {
                    return Ok(Val::Bool(match op {
                        BitAnd => x & y,
                        BitOr => x | y,
                        _ => x ^ y,
                    }));
                }
            }
            _ => {}
        }
        let (x, y) = match (num(&a), num(&b)) {
            (Some(x), Some(y)) => (x, y),
            _ => {
                let msg = format!(
                    "Cannot apply [{}] operation to types [{}] and [{}].",
                    op.symbol(),
                    self.type_name(&a),
                    self.type_name(&b)
                );
                return Err(if matches!(a, Val::Null) || matches!(b, Val::Null) {
                    npe(msg)
                } else {
                    class_cast(msg)
                });
            }
        };
        let cmp = |o: Option<Ordering>, f: fn(Ordering) -> bool| Val::Bool(o.is_some_and(f));
        Ok(match (x, y) {
            (Num::I(x), Num::I(y)) => match op {
                Add => Val::Int(x.wrapping_add(y)),
                Sub => Val::Int(x.wrapping_sub(y)),
                Mul => Val::Int(x.wrapping_mul(y)),
                Div | Rem if y == 0 => {
                    return Err(Fail::new("arithmetic_exception", "/ by zero"));
                }
                Div => Val::Int(x.wrapping_div(y)),
                Rem => Val::Int(x.wrapping_rem(y)),
                Shl => Val::Int(x.wrapping_shl(y as u32 & 63)),
                Shr => Val::Int(x.wrapping_shr(y as u32 & 63)),
                Ushr => Val::Int(((x as u64) >> (y as u32 & 63)) as i64),
                BitAnd => Val::Int(x & y),
                BitOr => Val::Int(x | y),
                BitXor => Val::Int(x ^ y),
                Lt => Val::Bool(x < y),
                Le => Val::Bool(x <= y),
                Gt => Val::Bool(x > y),
                Ge => Val::Bool(x >= y),
                Eq | Ne | RefEq | RefNe => unreachable!("handled above"),
            },
            (x, y) => {
                let (x, y) = (x.f(), y.f());
                match op {
                    Add => Val::Float(x + y),
                    Sub => Val::Float(x - y),
                    Mul => Val::Float(x * y),
                    Div => Val::Float(x / y),
                    Rem => Val::Float(x % y),
                    Lt => cmp(x.partial_cmp(&y), Ordering::is_lt),
                    Le => cmp(x.partial_cmp(&y), Ordering::is_le),
                    Gt => cmp(x.partial_cmp(&y), Ordering::is_gt),
                    Ge => cmp(x.partial_cmp(&y), Ordering::is_ge),
                    _ => {
                        return Err(class_cast(format!(
                            "Cannot apply [{}] operation to types [{}] and [{}].",
                            op.symbol(),
                            self.type_name(&a),
                            self.type_name(&b)
                        )))
                    }
                }
            }
        })
    }

    /// Painless `==`: numbers compare by value across int and double, the rest as `equals`.
    fn loose_eq(&self, a: &Val, b: &Val) -> bool {
        match (num(a), num(b)) {
            (Some(Num::I(x)), Some(Num::I(y))) => x == y,
            (Some(x), Some(y)) => x.f() == y.f(),
            _ => self.equals(a, b),
        }
    }

    /// Java `equals`, used by `contains`, `indexOf`, `remove` and map keys: `1` is not `1.0`.
    pub(crate) fn equals(&self, a: &Val, b: &Val) -> bool {
        self.equals_at(a, b, 0)
    }

    fn equals_at(&self, a: &Val, b: &Val, depth: usize) -> bool {
        self.note_work(1);
        if depth > MAX_WALK_DEPTH {
            return false;
        }
        match (a, b) {
            (Val::Null, Val::Null) => true,
            (Val::Bool(x), Val::Bool(y)) => x == y,
            (Val::Int(x), Val::Int(y)) => x == y,
            (Val::Float(x), Val::Float(y)) => {
                x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
            }
            (Val::Str(x), Val::Str(y)) => x == y,
            (Val::Obj(x), Val::Obj(y)) if x == y => true,
            (Val::Obj(x), Val::Obj(y)) => match (&self.heap[*x], &self.heap[*y]) {
                (Obj::List(p), Obj::List(q)) => {
                    p.len() == q.len()
                        && p.iter()
                            .zip(q)
                            .all(|(a, b)| self.equals_at(a, b, depth + 1))
                }
                (Obj::Set(p), Obj::Set(q)) => {
                    p.items.len() == q.items.len()
                        && p.items.iter().all(|a| match scalar(a) {
                            Some(k) => q.scalars.contains(&k),
                            None => q.items.iter().any(|b| self.equals_at(a, b, depth + 1)),
                        })
                }
                (Obj::Map(p), Obj::Map(q)) => {
                    p.len() == q.len()
                        && p.iter()
                            .all(|(k, v)| q.get(k).is_some_and(|w| self.equals_at(v, w, depth + 1)))
                }
                (Obj::Entry(k1, v1), Obj::Entry(k2, v2)) => {
                    self.equals_at(k1, k2, depth + 1) && self.equals_at(v1, v2, depth + 1)
                }
                (Obj::Date(a), Obj::Date(b)) => a == b,
                (Obj::BigInteger(a), Obj::BigInteger(b)) => a == b,
                _ => false,
            },
            _ => false,
        }
    }

    /// `String.valueOf` as Java prints it: `1.0`, `[a, b]`, `{k=v}`.
    pub(crate) fn java_string(&self, v: &Val) -> String {
        let mut out = String::new();
        self.write_java_string(v, &mut out, 0);
        out
    }

    fn java_string_val(&self, v: &Val) -> Result<Val, Fail> {
        match v {
            Val::Str(_) => Ok(v.clone()),
            other => self.new_str(self.java_string(other)),
        }
    }

    fn write_java_string(&self, v: &Val, out: &mut String, depth: usize) {
        if depth > MAX_WALK_DEPTH || out.len() > MAX_STRING_LEN {
            out.push_str("...");
            return;
        }
        self.note_work(1);
        match v {
            Val::Null => out.push_str("null"),
            Val::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Val::Int(i) => out.push_str(&i.to_string()),
            Val::Float(f) => out.push_str(&java_double(*f)),
            Val::Str(s) => out.push_str(s),
            Val::Obj(id) => match &self.heap[*id] {
                Obj::List(items) | Obj::Set(VSet { items, .. }) => {
                    out.push('[');
                    for (i, x) in items.iter().enumerate() {
                        if i > 0 {
                            out.push_str(", ");
                        }
                        self.write_java_string(x, out, depth + 1);
                    }
                    out.push(']');
                }
                Obj::Map(m) => {
                    out.push('{');
                    for (i, (k, x)) in m.iter().enumerate() {
                        if i > 0 {
                            out.push_str(", ");
                        }
                        out.push_str(k);
                        out.push('=');
                        self.write_java_string(x, out, depth + 1);
                    }
                    out.push('}');
                }
                Obj::Entry(k, x) => {
                    self.write_java_string(k, out, depth + 1);
                    out.push('=');
                    self.write_java_string(x, out, depth + 1);
                }
                Obj::DocValues { items, .. } => {
                    out.push('[');
                    for (i, x) in items.iter().enumerate() {
                        if i > 0 {
                            out.push_str(", ");
                        }
                        self.write_java_string(x, out, depth + 1);
                    }
                    out.push(']');
                }
                Obj::Doc => out.push_str("{}"),
                Obj::Date(ms) => out.push_str(&iso_millis(*ms)),
                Obj::BigInteger(digits) => out.push_str(digits),
            },
        }
    }

    fn no_method(&self, recv: &Val, name: &str, n: usize) -> Fail {
        illegal_arg(format!(
            "dynamic method [{}, {name}/{n}] not found",
            self.type_name(recv)
        ))
    }

    fn call_method(&mut self, recv: Val, name: &str, args: Args) -> Result<Val, Fail> {
        match (name, args.len()) {
            ("toString", 0) if !matches!(recv, Val::Null) => return self.java_string_val(&recv),
            ("equals", 1) if !matches!(recv, Val::Null) => {
                return Ok(Val::Bool(self.equals(&recv, &args[0])))
            }
            _ => {}
        }
        match &recv {
            Val::Null => Err(npe(format!(
                "Cannot invoke [{name}] because the receiver is null"
            ))),
            Val::Str(s) => self.string_method(&recv, s.clone(), name, &args),
            Val::Int(_) | Val::Float(_) => {
                let n = num(&recv).expect("numeric");
                match (name, args.as_slice()) {
                    ("intValue", []) => Ok(Val::Int(n.i() as i32 as i64)),
                    ("longValue", []) => Ok(Val::Int(n.i())),
                    ("doubleValue" | "floatValue", []) => Ok(Val::Float(n.f())),
                    ("compareTo", [other]) => {
                        let o = num(other).ok_or_else(|| {
                            class_cast(format!(
                                "Cannot cast from [{}] to [java.lang.Number].",
                                self.type_name(other)
                            ))
                        })?;
                        Ok(Val::Int(match n.f().partial_cmp(&o.f()) {
                            Some(Ordering::Less) => -1,
                            Some(Ordering::Greater) => 1,
                            _ => 0,
                        }))
                    }
                    _ => Err(self.no_method(&recv, name, args.len())),
                }
            }
            Val::Bool(b) => match (name, args.len()) {
                ("booleanValue", 0) => Ok(Val::Bool(*b)),
                _ => Err(self.no_method(&recv, name, args.len())),
            },
            Val::Obj(id) => {
                let id = *id;
                match &self.heap[id] {
                    Obj::List(_) => self.list_method(&recv, id, name, args),
                    Obj::Set(_) => self.set_method(&recv, id, name, args),
                    Obj::Map(_) => self.map_method(&recv, id, name, args),
                    Obj::Entry(k, v) => match (name, args.len()) {
                        ("getKey", 0) => Ok(k.clone()),
                        ("getValue", 0) => Ok(v.clone()),
                        _ => Err(self.no_method(&recv, name, args.len())),
                    },
                    Obj::Doc => match (name, args.as_slice()) {
                        ("get", [k]) => self.doc_field(k),
                        ("containsKey", [k]) => {
                            let k = self.java_string(k);
                            Ok(Val::Bool(
                                self.lookup.as_ref().is_some_and(|l| l.contains(&k)),
                            ))
                        }
                        _ => Err(self.no_method(&recv, name, args.len())),
                    },
                    Obj::BigInteger(digits) => match (name, args.as_slice()) {
                        ("intValue", []) => Ok(Val::Int(big_low_bits(digits) as i32 as i64)),
                        ("longValue", []) => Ok(Val::Int(big_low_bits(digits))),
                        ("doubleValue" | "floatValue", []) => {
                            Ok(Val::Float(digits.parse().unwrap_or(f64::NAN)))
                        }
                        _ => Err(self.no_method(&recv, name, args.len())),
                    },
                    Obj::DocValues {
                        kind: DOUBLE_ARRAY, ..
                    } => Err(self.no_method(&recv, name, args.len())),
                    Obj::DocValues { items, .. } => match (name, args.as_slice()) {
                        ("size" | "getLength", []) => Ok(Val::Int(items.len() as i64)),
                        ("isEmpty", []) => Ok(Val::Bool(items.is_empty())),
                        ("getValue", []) => items
                            .first()
                            .cloned()
                            .ok_or_else(|| Fail::new("illegal_state_exception", NO_VALUE)),
                        ("get", [i]) => self.doc_value_at(items, i),
                        ("contains", [x]) => {
                            Ok(Val::Bool(items.iter().any(|y| self.loose_eq(y, x))))
                        }
                        _ => Err(self.no_method(&recv, name, args.len())),
                    },
                    Obj::Date(ms) => {
                        let ms = *ms;
                        let other = |v: &Val| {
                            match v {
                            Val::Obj(id) => match self.heap[*id] {
                                Obj::Date(o) => Ok(o),
                                _ => Err(class_cast(format!(
                                    "Cannot cast from [{}] to [java.time.chrono.ChronoZonedDateTime].",
                                    self.type_name(v)
                                ))),
                            },
                            Val::Null => Err(npe("Cannot compare to null")),
                            _ => Err(class_cast(format!(
                                "Cannot cast from [{}] to [java.time.chrono.ChronoZonedDateTime].",
                                self.type_name(v)
                            ))),
                        }
                        };
                        match (name, args.as_slice()) {
                            ("getMillis" | "toEpochMilli", []) => Ok(Val::Int(ms)),
                            ("toInstant", []) => Ok(recv.clone()),
                            ("getEpochSecond", []) => Ok(Val::Int(ms.div_euclid(1000))),
                            ("isAfter", [o]) => Ok(Val::Bool(ms > other(o)?)),
                            ("isBefore", [o]) => Ok(Val::Bool(ms < other(o)?)),
                            ("isEqual", [o]) => Ok(Val::Bool(ms == other(o)?)),
                            ("compareTo", [o]) => Ok(Val::Int(match ms.cmp(&other(o)?) {
                                Ordering::Less => -1,
                                Ordering::Equal => 0,
                                Ordering::Greater => 1,
                            })),
                            _ => Err(self.no_method(&recv, name, args.len())),
                        }
                    }
                }
            }
        }
    }

    fn str_arg(&self, v: &Val) -> Result<Arc<str>, Fail> {
        match v {
            Val::Str(s) => Ok(s.clone()),
            Val::Null => Err(npe("String argument is null")),
            other => Err(class_cast(format!(
                "Cannot cast from [{}] to [java.lang.String].",
                self.type_name(other)
            ))),
        }
    }

    fn int_arg(&self, v: &Val) -> Result<i64, Fail> {
        match v {
            Val::Int(i) => Ok(*i),
            Val::Null => Err(npe("Cannot unbox null value to [int]")),
            other => Err(class_cast(format!(
                "Cannot cast from [{}] to [int].",
                self.type_name(other)
            ))),
        }
    }

    /// Indexes count chars, not UTF-16 units as Java does; they agree outside the astral planes.
    fn string_method(
        &mut self,
        recv: &Val,
        s: Arc<str>,
        name: &str,
        args: &[Val],
    ) -> Result<Val, Fail> {
        let chars = || s.chars().count();
        let char_pos = |byte: usize| s[..byte].chars().count() as i64;
        let byte_at = |ci: usize| s.char_indices().nth(ci).map_or(s.len(), |(b, _)| b);
        self.charge_work(s.len())?;
        let out = match (name, args) {
            ("length", []) => Val::Int(chars() as i64),
            ("isEmpty", []) => Val::Bool(s.is_empty()),
            ("contains", [x]) => Val::Bool(s.contains(&*self.str_arg(x)?)),
            ("startsWith", [x]) => Val::Bool(s.starts_with(&*self.str_arg(x)?)),
            ("endsWith", [x]) => Val::Bool(s.ends_with(&*self.str_arg(x)?)),
            ("toLowerCase", []) => Val::Str(s.to_lowercase().into()),
            ("toUpperCase", []) => Val::Str(s.to_uppercase().into()),
            ("trim", []) => Val::Str(s.trim_matches(|c: char| c <= ' ').into()),
            ("equalsIgnoreCase", [x]) => Val::Bool(match x {
                Val::Str(o) => s.to_lowercase() == o.to_lowercase(),
                _ => false,
            }),
            ("concat", [x]) => Val::Str(format!("{s}{}", self.str_arg(x)?).into()),
            ("substring", [a, rest @ ..]) if rest.len() <= 1 => {
                let len = chars() as i64;
                let begin = self.int_arg(a)?;
                let end = match rest.first() {
                    Some(b) => self.int_arg(b)?,
                    None => len,
                };
                if begin < 0 || end > len || begin > end {
                    return Err(Fail::new(
                        "string_index_out_of_bounds_exception",
                        format!("begin {begin}, end {end}, length {len}"),
                    ));
                }
                let (b, e) = (byte_at(begin as usize), byte_at(end as usize));
                Val::Str(s[b..e].into())
            }
            ("charAt", [i]) => {
                let i = self.int_arg(i)?;
                match usize::try_from(i).ok().and_then(|i| s.chars().nth(i)) {
                    Some(c) => Val::Str(c.to_string().into()),
                    None => {
                        return Err(Fail::new(
                            "string_index_out_of_bounds_exception",
                            format!("Index {i} out of bounds for length {}", chars()),
                        ))
                    }
                }
            }
            ("indexOf", [x, rest @ ..]) if rest.len() <= 1 => {
                let needle = self.str_arg(x)?;
                let from = match rest.first() {
                    Some(f) => self.int_arg(f)?.clamp(0, chars() as i64) as usize,
                    None => 0,
                };
                let start = byte_at(from);
                Val::Int(
                    s[start..]
                        .find(&*needle)
                        .map_or(-1, |b| char_pos(start + b)),
                )
            }
            ("lastIndexOf", [x]) => {
                let needle = self.str_arg(x)?;
                Val::Int(s.rfind(&*needle).map_or(-1, char_pos))
            }
            ("replace", [a, b]) => {
                let (a, b) = (self.str_arg(a)?, self.str_arg(b)?);
                let grows = s.matches(&*a).count().saturating_mul(b.len());
                if grows.saturating_add(s.len()) > MAX_STRING_LEN {
                    return Err(string_too_long());
                }
                Val::Str(s.replace(&*a, &b).into())
            }
            ("compareTo", [x]) => {
                let o = self.str_arg(x)?;
                let mismatch = s.chars().zip(o.chars()).find(|(p, q)| p != q);
                Val::Int(match mismatch {
                    Some((p, q)) => p as i64 - q as i64,
                    None => chars() as i64 - o.chars().count() as i64,
                })
            }
            ("split", [x]) => {
                let pattern = self.str_arg(x)?;
                let re = regex::Regex::new(&pattern)
                    .map_err(|e| Fail::new("pattern_syntax_exception", e.to_string()))?;
                let mut parts: Vec<&str> = re.split(&s).collect();
                // Java drops trailing empty strings, and a leading one left by a zero-width match
                while parts.len() > 1 && parts.last() == Some(&"") {
                    parts.pop();
                }
                if parts == [""] && !s.is_empty() {
                    parts.clear();
                }
                let items = parts.into_iter().map(|p| Val::Str(p.into())).collect();
                self.charge_bytes(s.len())?;
                self.new_obj(Obj::List(items))?
            }
            ("splitOnToken", [x, rest @ ..]) if rest.len() <= 1 => {
                let token = self.str_arg(x)?;
                if token.is_empty() {
                    return Err(illegal_arg("Cannot split on an empty token"));
                }
                let limit = match rest.first() {
                    Some(l) => self.int_arg(l)?,
                    None => 0,
                };
                let parts: Vec<Val> = if limit > 0 {
                    s.splitn(limit as usize, &*token)
                        .map(|p| Val::Str(p.into()))
                        .collect()
                } else {
                    s.split(&*token).map(|p| Val::Str(p.into())).collect()
                };
                self.charge_bytes(s.len())?;
                self.new_obj(Obj::List(parts))?
            }
            _ => return Err(self.no_method(recv, name, args.len())),
        };
        if let Val::Str(x) = &out {
            self.charge_bytes(x.len())?;
        }
        Ok(out)
    }

    fn list_method(&mut self, recv: &Val, id: usize, name: &str, args: Args) -> Result<Val, Fail> {
        let len = self.list(id).len();
        let position = |me: &Self, v: &Val, from_end: bool| -> Result<Option<usize>, Fail> {
            me.charge_work(len)?;
            let mut it = me.list(id).iter();
            Ok(if from_end {
                it.rposition(|x| me.equals(x, v))
            } else {
                it.position(|x| me.equals(x, v))
            })
        };
        Ok(match (name, args.as_slice()) {
            ("size", []) => Val::Int(len as i64),
            ("isEmpty", []) => Val::Bool(len == 0),
            ("get", [i]) => {
                let i = self.list_index(i, len, false)?;
                self.list(id)[i].clone()
            }
            ("set", [i, v]) => {
                let i = self.list_index(i, len, false)?;
                std::mem::replace(&mut self.list_mut(id)[i], v.clone())
            }
            ("add", [v]) => {
                self.charge_bytes(VAL_BYTES)?;
                self.list_mut(id).push(v.clone());
                Val::Bool(true)
            }
            ("add", [i, v]) => {
                let at = self.int_arg(i)?;
                if at < 0 || at > len as i64 {
                    return Err(out_of_bounds(at, len));
                }
                self.charge_bytes(VAL_BYTES)?;
                self.charge_work(len)?;
                self.list_mut(id).insert(at as usize, v.clone());
                Val::Null
            }
            ("addAll", [c]) => {
                let items = self.collection_items(c)?;
                self.charge_bytes(items.len() * VAL_BYTES)?;
                let changed = !items.is_empty();
                self.list_mut(id).extend(items);
                Val::Bool(changed)
            }
            // Java's List.remove(int) removes by index; any other argument removes by value.
            ("remove", [Val::Int(i)]) => {
                let i = self.list_index(&Val::Int(*i), len, false)?;
                self.charge_work(len)?;
                self.list_mut(id).remove(i)
            }
            ("remove", [v]) => {
                let at = position(self, v, false)?;
                if let Some(at) = at {
                    self.list_mut(id).remove(at);
                }
                Val::Bool(at.is_some())
            }
            ("contains", [v]) => Val::Bool(position(self, v, false)?.is_some()),
            ("containsAll", [c]) => {
                let items = self.collection_items(c)?;
                self.charge_work(len.saturating_mul(items.len()))?;
                let list = self.list(id);
                Val::Bool(items.iter().all(|v| list.iter().any(|x| self.equals(x, v))))
            }
            ("indexOf", [v]) => Val::Int(position(self, v, false)?.map_or(-1, |i| i as i64)),
            ("lastIndexOf", [v]) => Val::Int(position(self, v, true)?.map_or(-1, |i| i as i64)),
            ("clear", []) => {
                self.list_mut(id).clear();
                Val::Null
            }
            ("subList", [a, b]) => {
                let (a, b) = (self.int_arg(a)?, self.int_arg(b)?);
                if a < 0 || b > len as i64 || a > b {
                    return Err(Fail::new(
                        "index_out_of_bounds_exception",
                        format!("fromIndex: {a}, toIndex: {b}, size: {len}"),
                    ));
                }
                let items = self.list(id)[a as usize..b as usize].to_vec();
                self.new_obj(Obj::List(items))?
            }
            _ => return Err(self.no_method(recv, name, args.len())),
        })
    }

    fn set_method(&mut self, recv: &Val, id: usize, name: &str, args: Args) -> Result<Val, Fail> {
        let len = self.set(id).items.len();
        Ok(match (name, args.as_slice()) {
            ("size", []) => Val::Int(len as i64),
            ("isEmpty", []) => Val::Bool(len == 0),
            ("contains", [v]) => Val::Bool(self.set_contains(id, v)),
            ("add", [v]) => Val::Bool(self.set_insert(id, v.clone())?),
            ("addAll", [c]) => {
                let mut changed = false;
                for v in self.collection_items(c)? {
                    changed |= self.set_insert(id, v)?;
                }
                Val::Bool(changed)
            }
            ("remove", [v]) => Val::Bool(self.set_remove(id, v)?),
            ("containsAll", [c]) => {
                let items = self.collection_items(c)?;
                Val::Bool(items.iter().all(|v| self.set_contains(id, v)))
            }
            ("clear", []) => {
                *self.set_mut(id) = VSet::default();
                Val::Null
            }
            _ => return Err(self.no_method(recv, name, args.len())),
        })
    }

    fn map_method(&mut self, recv: &Val, id: usize, name: &str, args: Args) -> Result<Val, Fail> {
        let len = self.omap(id).len();
        Ok(match (name, args.as_slice()) {
            ("size", []) => Val::Int(len as i64),
            ("isEmpty", []) => Val::Bool(len == 0),
            ("get", [k]) => {
                let k = self.key(k);
                self.omap(id).get(&k).cloned().unwrap_or(Val::Null)
            }
            ("getOrDefault", [k, d]) => {
                let k = self.key(k);
                self.omap(id).get(&k).cloned().unwrap_or_else(|| d.clone())
            }
            ("containsKey", [k]) => {
                let k = self.key(k);
                Val::Bool(self.omap(id).get(&k).is_some())
            }
            ("containsValue", [v]) => {
                self.charge_work(len)?;
                Val::Bool(self.omap(id).iter().any(|(_, x)| self.equals(x, v)))
            }
            ("put", [k, v]) => {
                let k = self.key(k);
                match self.omap_mut(id).insert(k, v.clone()) {
                    Some(old) => old,
                    None => {
                        self.charge_bytes(ENTRY_BYTES)?;
                        Val::Null
                    }
                }
            }
            ("putIfAbsent", [k, v]) => {
                let k = self.key(k);
                match self.omap(id).get(&k) {
                    Some(Val::Null) | None => {
                        self.charge_bytes(ENTRY_BYTES)?;
                        self.omap_mut(id).insert(k, v.clone());
                        Val::Null
                    }
                    Some(cur) => cur.clone(),
                }
            }
            ("putAll", [m]) => {
                let pairs: Vec<(Arc<str>, Val)> = match self.map(m) {
                    Some(src) => src.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                    None => {
                        return Err(class_cast(format!(
                            "Cannot cast from [{}] to [java.util.Map].",
                            self.type_name(m)
                        )))
                    }
                };
                self.charge_bytes(pairs.len() * ENTRY_BYTES)?;
                for (k, v) in pairs {
                    self.omap_mut(id).insert(k, v);
                }
                Val::Null
            }
            ("remove", [k]) => {
                let k = self.key(k);
                self.omap_mut(id).remove(&k).unwrap_or(Val::Null)
            }
            ("clear", []) => {
                self.omap_mut(id).clear();
                Val::Null
            }
            ("keySet", []) => {
                let mut keys = VSet::default();
                for (k, _) in self.omap(id).iter() {
                    keys.scalars.insert(Scalar::Str(k.clone()));
                    keys.items.push(Val::Str(k.clone()));
                }
                self.new_obj(Obj::Set(keys))?
            }
            ("values", []) => {
                let values = self.omap(id).iter().map(|(_, v)| v.clone()).collect();
                self.new_obj(Obj::List(values))?
            }
            ("entrySet", []) => {
                let pairs: Vec<(Arc<str>, Val)> = self
                    .omap(id)
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let mut entries = VSet::default();
                for (k, v) in pairs {
                    entries
                        .items
                        .push(self.new_obj(Obj::Entry(Val::Str(k), v))?);
                }
                self.new_obj(Obj::Set(entries))?
            }
            _ => return Err(self.no_method(recv, name, args.len())),
        })
    }

    fn list(&self, id: usize) -> &Vec<Val> {
        match &self.heap[id] {
            Obj::List(v) => v,
            _ => unreachable!("checked by the caller"),
        }
    }

    fn list_mut(&mut self, id: usize) -> &mut Vec<Val> {
        self.touch(id);
        match &mut self.heap[id] {
            Obj::List(v) => v,
            _ => unreachable!("checked by the caller"),
        }
    }

    fn set(&self, id: usize) -> &VSet {
        match &self.heap[id] {
            Obj::Set(v) => v,
            _ => unreachable!("checked by the caller"),
        }
    }

    fn set_mut(&mut self, id: usize) -> &mut VSet {
        self.touch(id);
        match &mut self.heap[id] {
            Obj::Set(v) => v,
            _ => unreachable!("checked by the caller"),
        }
    }

    fn omap(&self, id: usize) -> &OMap {
        match &self.heap[id] {
            Obj::Map(m) => m,
            _ => unreachable!("checked by the caller"),
        }
    }

    fn omap_mut(&mut self, id: usize) -> &mut OMap {
        self.touch(id);
        match &mut self.heap[id] {
            Obj::Map(m) => m,
            _ => unreachable!("checked by the caller"),
        }
    }

    fn num_arg(&self, v: &Val) -> Result<Num, Fail> {
        num(v).ok_or_else(|| match v {
            Val::Null => npe("Cannot unbox null value to [double]"),
            other => class_cast(format!(
                "Cannot cast from [{}] to [double].",
                self.type_name(other)
            )),
        })
    }

    /// ES's `MovingFunctions`: the first argument is the window (a `double[]`, or any list of
    /// numbers), the others doubles, an int period and a boolean.
    fn moving_function(&self, method: &str, args: &[Val]) -> Result<Val, Fail> {
        use crate::moving_functions as mf;
        let items: &[Val] = match &args[0] {
            Val::Obj(id) => match &self.heap[*id] {
                Obj::DocValues { items, .. } | Obj::List(items) => items,
                _ => {
                    return Err(class_cast(format!(
                        "Cannot cast from [{}] to [double[]].",
                        self.type_name(&args[0])
                    )))
                }
            },
            Val::Null => return Err(npe("Cannot pass a null array")),
            other => {
                return Err(class_cast(format!(
                    "Cannot cast from [{}] to [double[]].",
                    self.type_name(other)
                )))
            }
        };
        let values = items
            .iter()
            .map(|v| self.num_arg(v).map(|n| n.f()))
            .collect::<Result<Vec<f64>, Fail>>()?;
        let f = |i: usize| self.num_arg(&args[i]).map(|n| n.f());
        let out = match method {
            "max" => mf::max(&values),
            "min" => mf::min(&values),
            "sum" => mf::sum(&values),
            "unweightedAvg" => mf::unweighted_avg(&values),
            "linearWeightedAvg" => mf::linear_weighted_avg(&values),
            "stdDev" => mf::std_dev(&values, f(1)?),
            "ewma" => mf::ewma(&values, f(1)?),
            "holt" => mf::holt(&values, f(1)?, f(2)?),
            "holtWinters" => {
                let period = match &args[4] {
                    Val::Int(i) => *i,
                    other => {
                        return Err(class_cast(format!(
                            "Cannot cast from [{}] to [int].",
                            self.type_name(other)
                        )))
                    }
                };
                let multiplicative = match &args[5] {
                    Val::Bool(b) => *b,
                    other => {
                        return Err(class_cast(format!(
                            "Cannot cast from [{}] to [boolean].",
                            self.type_name(other)
                        )))
                    }
                };
                mf::holt_winters(&values, f(1)?, f(2)?, f(3)?, period, multiplicative)
                    .map_err(illegal_arg)?
            }
            other => unreachable!("MovingFunctions.{other} is resolved at compile time"),
        };
        Ok(Val::Float(out))
    }

    fn call_static(&mut self, class: &str, method: &str, args: Args) -> Result<Val, Fail> {
        let f = |me: &Self, i: usize| me.num_arg(&args[i]).map(|n| n.f());
        let float = |x: f64| Ok(Val::Float(x));
        match (class, method) {
            ("", "emit") => {
                match &args[0] {
                    Val::Str(s) => self.emitted.push_str(s),
                    Val::Int(i) => self.emitted.push(Value::from(*i)),
                    Val::Bool(b) => self.emitted.push(Value::Bool(*b)),
                    v @ (Val::Float(_) | Val::Null) => {
                        let v = self.build_json(v);
                        self.emitted.push(v)
                    }
                    v => {
                        let v = self.to_json(v).map_err(|e| Fail {
                            kind: "illegal_argument_exception",
                            reason: e,
                            pos: None,
                        })?;
                        self.emitted.push(v);
                    }
                }
                Ok(Val::Null)
            }
            ("Math", "max" | "min") => {
                let (a, b) = (self.num_arg(&args[0])?, self.num_arg(&args[1])?);
                let max = method == "max";
                Ok(match (a, b) {
                    (Num::I(a), Num::I(b)) => Val::Int(if max { a.max(b) } else { a.min(b) }),
                    (a, b) => Val::Float(if max {
                        a.f().max(b.f())
                    } else {
                        a.f().min(b.f())
                    }),
                })
            }
            ("Math", "abs") => Ok(match self.num_arg(&args[0])? {
                Num::I(i) => Val::Int(i.wrapping_abs()),
                Num::F(x) => Val::Float(x.abs()),
            }),
            ("Math", "round") => Ok(match self.num_arg(&args[0])? {
                Num::I(i) => Val::Int(i),
                Num::F(x) if x.is_nan() => Val::Int(0),
                Num::F(x) => Val::Int((x + 0.5).floor() as i64),
            }),
            ("Math", "floorDiv" | "floorMod") => {
                let (a, b) = (self.int_arg(&args[0])?, self.int_arg(&args[1])?);
                if b == 0 {
                    return Err(Fail::new("arithmetic_exception", "/ by zero"));
                }
                let q = a.wrapping_div(b);
                let q = if a.wrapping_rem(b) != 0 && ((a < 0) != (b < 0)) {
                    q.wrapping_sub(1)
                } else {
                    q
                };
                Ok(Val::Int(if method == "floorDiv" {
                    q
                } else {
                    a.wrapping_sub(q.wrapping_mul(b))
                }))
            }
            ("Math", "floor") => float(f(self, 0)?.floor()),
            ("Math", "ceil") => float(f(self, 0)?.ceil()),
            ("Math", "rint") => float(f(self, 0)?.round_ties_even()),
            ("Math", "sqrt") => float(f(self, 0)?.sqrt()),
            ("Math", "cbrt") => float(f(self, 0)?.cbrt()),
            ("Math", "log") => float(f(self, 0)?.ln()),
            ("Math", "log10") => float(f(self, 0)?.log10()),
            ("Math", "exp") => float(f(self, 0)?.exp()),
            ("Math", "sin") => float(f(self, 0)?.sin()),
            ("Math", "cos") => float(f(self, 0)?.cos()),
            ("Math", "tan") => float(f(self, 0)?.tan()),
            ("Math", "atan") => float(f(self, 0)?.atan()),
            ("Math", "toRadians") => float(f(self, 0)?.to_radians()),
            ("Math", "toDegrees") => float(f(self, 0)?.to_degrees()),
            ("Math", "signum") => {
                let x = f(self, 0)?;
                float(if x == 0.0 || x.is_nan() {
                    x
                } else {
                    x.signum()
                })
            }
            ("Math", "pow") => float(f(self, 0)?.powf(f(self, 1)?)),
            ("Math", "hypot") => float(f(self, 0)?.hypot(f(self, 1)?)),
            ("Math", "atan2") => float(f(self, 0)?.atan2(f(self, 1)?)),
            ("Integer" | "Long", "parseInt" | "parseLong" | "valueOf") => {
                let int = class == "Integer";
                match &args[0] {
                    Val::Int(i) if method == "valueOf" => Ok(Val::Int(*i)),
                    v => {
                        let s = self.str_arg(v)?;
                        let parsed = if int {
                            s.parse::<i32>().map(i64::from).ok()
                        } else {
                            s.parse::<i64>().ok()
                        };
                        parsed.map(Val::Int).ok_or_else(|| {
                            Fail::new(
                                "number_format_exception",
                                format!("For input string: \"{s}\""),
                            )
                        })
                    }
                }
            }
            ("Double" | "Float", "parseDouble" | "parseFloat" | "valueOf") => match &args[0] {
                Val::Int(i) if method == "valueOf" => Ok(Val::Float(*i as f64)),
                Val::Float(x) if method == "valueOf" => Ok(Val::Float(*x)),
                v => {
                    let s = self.str_arg(v)?;
                    parse_java_double(&s).map(Val::Float).ok_or_else(|| {
                        let msg = if s.trim().is_empty() {
                            "empty String".to_string()
                        } else {
                            format!("For input string: \"{s}\"")
                        };
                        Fail::new("number_format_exception", msg)
                    })
                }
            },
            ("Integer" | "Long" | "Double" | "Boolean", "toString") | ("String", "valueOf") => {
                self.java_string_val(&args[0])
            }
            ("Double", "isNaN") => Ok(Val::Bool(f(self, 0)?.is_nan())),
            ("Boolean", "parseBoolean") => Ok(Val::Bool(match &args[0] {
                Val::Str(s) => s.eq_ignore_ascii_case("true"),
                _ => false,
            })),
            ("Boolean", "valueOf") => Ok(Val::Bool(match &args[0] {
                Val::Bool(b) => *b,
                Val::Str(s) => s.eq_ignore_ascii_case("true"),
                _ => false,
            })),
            ("String", "join") => {
                let sep = self.str_arg(&args[0])?;
                let items = self.collection_items(&args[1])?;
                let parts: Vec<String> = items.iter().map(|x| self.java_string(x)).collect();
                self.new_str(parts.join(&sep))
            }
            ("System", "currentTimeMillis") => Ok(Val::Int(now_millis())),
            ("Collections", "sort" | "reverse") => {
                let Val::Obj(id) = args[0] else {
                    return Err(self
                        .collection_items(&args[0])
                        .err()
                        .unwrap_or_else(|| class_cast("Cannot cast to [java.util.List].")));
                };
                if !matches!(self.heap[id], Obj::List(_)) {
                    return Err(class_cast(format!(
                        "Cannot cast from [{}] to [java.util.List].",
                        self.type_name(&args[0])
                    )));
                }
                if method == "reverse" {
                    self.list_mut(id).reverse();
                    return Ok(Val::Null);
                }
                let n = self.list(id).len();
                self.charge_work(n.saturating_mul(n.max(2).ilog2() as usize))?;
                let mut items = std::mem::take(self.list_mut(id));
                let mut failed = None;
                items.sort_by(|a, b| match self.natural_order(a, b) {
                    Ok(o) => o,
                    Err(e) => {
                        failed.get_or_insert(e);
                        Ordering::Equal
                    }
                });
                *self.list_mut(id) = items;
                failed.map_or(Ok(Val::Null), Err)
            }
            ("Objects", "equals") => Ok(Val::Bool(self.equals(&args[0], &args[1]))),
            ("Objects", "isNull") => Ok(Val::Bool(matches!(args[0], Val::Null))),
            ("Objects", "nonNull") => Ok(Val::Bool(!matches!(args[0], Val::Null))),
            ("MovingFunctions", _) => self.moving_function(method, &args),
            _ => Err(illegal_arg(format!(
                "unknown call [{method}] with [{}] arguments on type [{class}]",
                args.len()
            ))),
        }
    }

    fn natural_order(&self, a: &Val, b: &Val) -> Result<Ordering, Fail> {
        match (a, b) {
            (Val::Str(x), Val::Str(y)) => Ok(x.cmp(y)),
            (Val::Bool(x), Val::Bool(y)) => Ok(x.cmp(y)),
            (Val::Int(x), Val::Int(y)) => Ok(x.cmp(y)),
            (Val::Float(x), Val::Float(y)) => Ok(x.total_cmp(y)),
            (Val::Null, _) | (_, Val::Null) => Err(npe("Cannot compare null values")),
            _ => Err(class_cast(format!(
                "[{}] cannot be compared to [{}]",
                self.type_name(a),
                self.type_name(b)
            ))),
        }
    }
}

/// A `BigInteger`'s JSON: a number when it fits 64 bits (unsigned included), else the
/// caller's marked string ([`crate::BIG_INTEGER_MARK`]), which serde_json cannot hold.
fn big_integer_json(digits: &str) -> Value {
    if let Ok(u) = digits.parse::<u64>() {
        return Value::from(u);
    }
    if let Ok(i) = digits.parse::<i64>() {
        return Value::from(i);
    }
    Value::String(format!("{}{digits}", crate::BIG_INTEGER_MARK))
}

/// Java's `BigInteger#longValue`: the low 64 bits of the two's complement.
fn big_low_bits(digits: &str) -> i64 {
    let (negative, magnitude) = match digits.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, digits),
    };
    let low = magnitude.bytes().fold(0u64, |acc, d| {
        acc.wrapping_mul(10)
            .wrapping_add(u64::from(d.wrapping_sub(b'0')))
    });
    if negative {
        low.wrapping_neg() as i64
    } else {
        low as i64
    }
}

fn num(v: &Val) -> Option<Num> {
    match v {
        Val::Int(i) => Some(Num::I(*i)),
        Val::Float(f) => Some(Num::F(*f)),
        _ => None,
    }
}

impl Num {
    fn f(&self) -> f64 {
        match self {
            Num::I(i) => *i as f64,
            Num::F(f) => *f,
        }
    }

    fn i(&self) -> i64 {
        match self {
            Num::I(i) => *i,
            Num::F(f) => *f as i64,
        }
    }
}

fn default_of(ty: Ty) -> Val {
    match ty {
        Ty::Int | Ty::Long | Ty::Short | Ty::Byte => Val::Int(0),
        Ty::Double | Ty::Float => Val::Float(0.0),
        Ty::Boolean => Val::Bool(false),
        Ty::Char => Val::Str("\0".into()),
        _ => Val::Null,
    }
}

pub(crate) fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// `Double.toString`: shortest round-trip digits, `.0` on integral values, and scientific
/// notation outside [1e-3, 1e7).
pub(crate) fn java_double(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    if (1e-3..1e7).contains(&f.abs()) {
        let s = format!("{f}");
        return if s.contains('.') { s } else { s + ".0" };
    }
    let s = format!("{f:e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    if mantissa.contains('.') {
        format!("{mantissa}E{exp}")
    } else {
        format!("{mantissa}.0E{exp}")
    }
}

/// `Double.parseDouble`: surrounding whitespace and a trailing `d`/`f` are allowed.
fn parse_java_double(s: &str) -> Option<f64> {
    let t = s.trim_matches(|c: char| c <= ' ');
    let t = t
        .strip_suffix(['d', 'D', 'f', 'F'])
        .filter(|r| !r.is_empty())
        .unwrap_or(t);
    match t {
        "NaN" => return Some(f64::NAN),
        "Infinity" | "+Infinity" => return Some(f64::INFINITY),
        "-Infinity" => return Some(f64::NEG_INFINITY),
        _ => {}
    }
    if t.is_empty()
        || !t
            .bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b))
    {
        return None;
    }
    t.parse().ok()
}
