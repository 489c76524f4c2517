//! The `script` query: a Painless filter run per document. It is a verification step, not an
//! iterator: inside a conjunction its cost is the highest of all clauses, so tantivy's
//! intersection leads with the other clauses and only asks it (`seek_danger`) about the
//! documents they matched; a script filter after a selective query costs per matching
//! document, not per index document. Alone, it walks every document.
//!
//! A script that fails at runtime cannot fail the scorer (tantivy scorers do not return
//! errors): the first error is kept in the request's [`ScriptErrors`] slot, the scorer stops,
//! and the caller turns the slot into the 400 `script_exception` once the search returns.

use lode_engine::mapping::{FieldDef, FieldType, Storage};
use lode_engine::EsError;
use lode_painless::{DocField, DocLookup, Scratch, SearchScript};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use tantivy::columnar::{Column, StrColumn};
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SeekDangerResult, SegmentReader, TERMINATED};

/// The first runtime error of any script in the request.
pub type ScriptErrors = Arc<Mutex<Option<EsError>>>;

/// The mapping's fields, shared by every segment's lookup.
pub type Fields = Arc<FieldsMap>;

/// A mapping's fields, and the field-level security filter of the search's `_source`
/// (`params._source`, runtime fields without a script read it filtered).
#[derive(Debug, Default)]
pub struct FieldsMap {
    pub map: BTreeMap<String, Arc<FieldDef>>,
    pub source_filter: Option<Arc<lode_engine::field_security::FieldPermissions>>,
}

impl std::ops::Deref for FieldsMap {
    type Target = BTreeMap<String, Arc<FieldDef>>;
    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

/// The fields scripts of a search over `mapping` read.
pub fn fields_of(mapping: &lode_engine::mapping::Mapping) -> Fields {
    Arc::new(FieldsMap {
        map: mapping.fields.clone(),
        source_filter: mapping.source_filter.clone(),
    })
}

/// `doc` for one document of a segment, as `script_fields` reads it.
pub type DocColumns = SegmentDocs;

/// What a per-document filter checks: a filter script, or a predicate over a runtime
/// field's values.
#[derive(Clone)]
pub(crate) enum DocFilter {
    Script(Arc<SearchScript>),
    Runtime(Arc<crate::runtime::RuntimeField>, crate::runtime::Pred),
}

impl DocFilter {
    fn source(&self) -> &str {
        match self {
            DocFilter::Script(s) => s.source(),
            DocFilter::Runtime(f, _) => &f.name,
        }
    }

    fn test(&self, docs: &mut SegmentDocs, scratch: &mut Scratch) -> Result<bool, EsError> {
        match self {
            DocFilter::Script(s) => s.filter_in(scratch, docs),
            DocFilter::Runtime(f, pred) => f.with_values(docs, |v| pred(v)),
        }
    }
}

#[derive(Clone)]
pub(crate) struct ScriptQuery {
    pub script: DocFilter,
    pub fields: Fields,
    pub runtime: crate::runtime::RuntimeFields,
    pub errors: ScriptErrors,
    pub boost: f32,
    /// On an index with nested documents, the nesting level the query is planned at (the
    /// nested field, and the enclosing `nested` query's path or `None` for the roots): the
    /// script runs on that level's documents only, as ES runs it on the documents its query
    /// is built for (a root's script never sees a nested object's empty fields).
    pub level: Option<(tantivy::schema::Field, Option<String>)>,
}

impl std::fmt::Debug for ScriptQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ScriptQuery({:?})", self.script.source())
    }
}

impl Query for ScriptQuery {
    fn weight(&self, _scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl ScriptQuery {
    /// The segment's documents of the query's nesting level, when the index has nested ones.
    fn level_docs(&self, reader: &SegmentReader) -> tantivy::Result<Option<tantivy::BitSet>> {
        match &self.level {
            Some((field, path)) => {
                crate::nested::level_docs(reader, *field, path.as_deref()).map(Some)
            }
            None => Ok(None),
        }
    }
}

impl Weight for ScriptQuery {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let mut s = ScriptScorer {
            query: self.clone(),
            docs: SegmentDocs::new(reader, self.fields.clone()).with_runtime(self.runtime.clone()),
            scratch: Scratch::default(),
            max_doc: reader.max_doc(),
            doc: 0,
            score: boost * self.boost,
            level: self.level_docs(reader)?,
        };
        if s.max_doc == 0 {
            s.doc = TERMINATED;
        } else if !s.matches(0) {
            s.advance();
        }
        Ok(Box::new(s))
    }

    /// In a conjunction, starts at the candidate the other clauses propose instead of running
    /// the script on every document before its first match.
    fn scorer_danger(
        &self,
        reader: &SegmentReader,
        target: DocId,
        boost: Score,
    ) -> tantivy::Result<(SeekDangerResult, Box<dyn Scorer>)> {
        let mut s = ScriptScorer {
            query: self.clone(),
            docs: SegmentDocs::new(reader, self.fields.clone()).with_runtime(self.runtime.clone()),
            scratch: Scratch::default(),
            max_doc: reader.max_doc(),
            doc: target,
            score: boost * self.boost,
            level: self.level_docs(reader)?,
        };
        let found = s.seek_danger(target);
        Ok((found, Box::new(s)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut docs =
            SegmentDocs::new(reader, self.fields.clone()).with_runtime(self.runtime.clone());
        docs.doc = doc;
        match self.script.test(&mut docs, &mut Scratch::default()) {
            Ok(true) => Ok(Explanation::new("ScriptQuery", self.boost)),
            _ => Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} does not match the script"
            ))),
        }
    }
}

struct ScriptScorer {
    query: ScriptQuery,
    docs: SegmentDocs,
    /// The script's buffers on this segment, reused from document to document.
    scratch: Scratch,
    max_doc: DocId,
    doc: DocId,
    score: Score,
    /// The documents of the query's nesting level (see [`ScriptQuery::level`]).
    level: Option<tantivy::BitSet>,
}

impl ScriptScorer {
    /// Runs the script on `doc`; an error is recorded and ends the scorer.
    fn matches(&mut self, doc: DocId) -> bool {
        if self.level.as_ref().is_some_and(|l| !l.contains(doc)) {
            return false;
        }
        self.docs.doc = doc;
        match self.query.script.test(&mut self.docs, &mut self.scratch) {
            Ok(b) => b,
            Err(e) => {
                self.query.errors.lock().get_or_insert(e);
                self.max_doc = 0;
                false
            }
        }
    }

    fn failed(&self) -> bool {
        self.max_doc == 0
    }
}

impl DocSet for ScriptScorer {
    fn advance(&mut self) -> DocId {
        let mut d = self.doc;
        loop {
            d = d.saturating_add(1);
            if d >= self.max_doc || self.failed() {
                self.doc = TERMINATED;
                return TERMINATED;
            }
            if self.matches(d) {
                self.doc = d;
                return d;
            }
        }
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc >= target {
            return self.doc;
        }
        if target >= self.max_doc || self.failed() {
            self.doc = TERMINATED;
            return TERMINATED;
        }
        if self.matches(target) {
            self.doc = target;
            return target;
        }
        self.doc = target;
        self.advance()
    }

    /// Checks `target` alone: the caller (an intersection) moves on to its next candidate.
    fn seek_danger(&mut self, target: DocId) -> SeekDangerResult {
        if target >= self.max_doc || self.failed() {
            self.doc = TERMINATED;
            return SeekDangerResult::SeekLowerBound(TERMINATED);
        }
        if self.matches(target) {
            self.doc = target;
            SeekDangerResult::Found
        } else if self.failed() {
            self.doc = TERMINATED;
            SeekDangerResult::SeekLowerBound(TERMINATED)
        } else {
            SeekDangerResult::SeekLowerBound(target + 1)
        }
    }

    fn doc(&self) -> DocId {
        self.doc
    }

    fn size_hint(&self) -> u32 {
        self.max_doc
    }

    /// Far above any iterator's, so that conjunctions only verify their candidates with it.
    fn cost(&self) -> u64 {
        u64::from(self.max_doc).saturating_mul(1000).max(1) + u64::from(u32::MAX)
    }
}

impl Scorer for ScriptScorer {
    fn score(&mut self) -> Score {
        self.score
    }
}

enum Col {
    /// A `match_only_text` field's values, read from `_source` (ES's
    /// `SourceValueFetcherSortedBinaryIndexFieldData`, which scripts may read).
    Source(Arc<crate::runtime::RuntimeField>),
    I64(Option<Column<i64>>, bool),
    F64(Option<Column<f64>>),
    Bool(Option<Column<bool>>),
    Str(Option<StrColumn>, OrdCache),
}

/// A keyword column's terms by ordinal, read from the dictionary once per segment (a
/// dictionary lookup decodes a block, which allocates): a document's keywords are then copied
/// from here into the caller's kept strings. Bounded; past the bound a term is looked up each
/// time.
#[derive(Default)]
struct OrdCache {
    terms: std::collections::HashMap<u64, Box<str>>,
    bytes: usize,
}

const ORD_CACHE_MAX_BYTES: usize = 4 << 20;

impl OrdCache {
    /// Writes term `ord` into `out` (cleared).
    fn write(&mut self, c: &StrColumn, ord: u64, out: &mut String) {
        out.clear();
        if let Some(t) = self.terms.get(&ord) {
            out.push_str(t);
            return;
        }
        let _ = c.ord_to_str(ord, out);
        if self.bytes + out.len() <= ORD_CACHE_MAX_BYTES {
            self.bytes += out.len();
            self.terms.insert(ord, out.as_str().into());
        }
    }
}

/// `doc` over one segment's columns: each field's column opens on first use.
pub struct SegmentDocs {
    reader: SegmentReader,
    fields: Fields,
    cols: Vec<(String, Col)>,
    pub doc: DocId,
    store: Option<lode_engine::source_store::SegmentStore>,
    /// The search's runtime fields, read by `doc['name']` (they shadow mapped fields).
    runtime: crate::runtime::RuntimeFields,
    /// How many runtime fields are being evaluated inside one another (cycle guard).
    depth: u8,
    /// Each runtime field's evaluation state on this segment, by the field's address.
    rt_states: Vec<(usize, crate::runtime::RtState)>,
    /// Strings of a keyword column's values that a document with fewer values left over,
    /// kept for the next document's.
    spare_strings: Vec<String>,
}

impl SegmentDocs {
    pub fn new(reader: &SegmentReader, fields: Fields) -> SegmentDocs {
        SegmentDocs {
            reader: reader.clone(),
            fields,
            cols: Vec::new(),
            doc: 0,
            store: None,
            runtime: Default::default(),
            depth: 0,
            rt_states: Vec::new(),
            spare_strings: Vec::new(),
        }
    }

    /// `doc['name']` reads these runtime fields (shadowing mapped fields of the same name).
    pub fn with_runtime(mut self, runtime: crate::runtime::RuntimeFields) -> SegmentDocs {
        self.runtime = runtime;
        self
    }

    /// The evaluation state of the runtime field at `key` on this segment (a new one the
    /// first time); [`SegmentDocs::put_rt_state`] gives it back.
    pub(crate) fn take_rt_state(&mut self, key: usize) -> crate::runtime::RtState {
        match self.rt_states.iter_mut().find(|(k, _)| *k == key) {
            Some((_, st)) => std::mem::take(st),
            None => Default::default(),
        }
    }

    pub(crate) fn put_rt_state(&mut self, key: usize, st: crate::runtime::RtState) {
        match self.rt_states.iter_mut().find(|(k, _)| *k == key) {
            Some((_, slot)) => *slot = st,
            None => self.rt_states.push((key, st)),
        }
    }

    /// `doc['name']` of a runtime field: its values, sorted, written into `out`'s vectors.
    fn runtime_field(
        &mut self,
        f: &crate::runtime::RuntimeField,
        out: &mut DocField,
    ) -> Result<(), String> {
        use crate::runtime::RuntimeType;
        use serde_json::Value;
        if self.depth >= 16 {
            return Err(format!(
                "Cycle detected. Make sure that there is no cycle between runtime fields: [{}]",
                f.name
            ));
        }
        fn ints(out: &mut DocField, date: bool) -> &mut Vec<i64> {
            let mut v = match std::mem::replace(out, DocField::Long(Vec::new())) {
                DocField::Long(v) | DocField::Date(v) => v,
                _ => Vec::new(),
            };
            v.clear();
            *out = if date {
                DocField::Date(v)
            } else {
                DocField::Long(v)
            };
            match out {
                DocField::Long(v) | DocField::Date(v) => v,
                _ => unreachable!("just set"),
            }
        }
        self.depth += 1;
        let mut spare = std::mem::take(&mut self.spare_strings);
        let r = f.with_values(self, |vals| match f.ty {
            RuntimeType::Keyword => {
                let mut v = match std::mem::replace(out, DocField::Long(Vec::new())) {
                    DocField::Str(v) => v,
                    _ => Vec::new(),
                };
                let mut n = 0;
                for s in vals.iter().filter_map(Value::as_str) {
                    if n == v.len() {
                        v.push(spare.pop().unwrap_or_default());
                    }
                    v[n].clear();
                    v[n].push_str(s);
                    n += 1;
                }
                spare.extend(v.drain(n..));
                v.sort_unstable();
                *out = DocField::Str(v);
            }
            RuntimeType::Long | RuntimeType::Date => {
                let v = ints(out, f.ty == RuntimeType::Date);
                v.extend(vals.iter().filter_map(Value::as_i64));
                v.sort_unstable();
            }
            RuntimeType::Double => {
                let mut v = match std::mem::replace(out, DocField::Long(Vec::new())) {
                    DocField::Double(v) => v,
                    _ => Vec::new(),
                };
                v.clear();
                v.extend(vals.iter().filter_map(Value::as_f64));
                v.sort_unstable_by(f64::total_cmp);
                *out = DocField::Double(v);
            }
            RuntimeType::Boolean => {
                let mut v = match std::mem::replace(out, DocField::Long(Vec::new())) {
                    DocField::Bool(v) => v,
                    _ => Vec::new(),
                };
                v.clear();
                v.extend(vals.iter().filter_map(Value::as_bool));
                v.sort_unstable();
                *out = DocField::Bool(v);
            }
        });
        self.depth -= 1;
        self.spare_strings.append(&mut spare);
        r.map_err(|e| match e.caused_by {
            Some(c) if e.kind == "script_exception" => c.reason,
            _ => e.reason,
        })
    }

    /// A field the index maps but field-level security hides from this search: a column
    /// without values of its kind, as ES's `FieldSubsetReader` leaves it mapped without doc
    /// values (`doc['f'].size() == 0`).
    fn hidden(&self, name: &str) -> Option<Col> {
        use tantivy::schema::FieldType as T;
        let p = self.fields.source_filter.as_ref()?;
        if p.allows(name) {
            return None;
        }
        let schema = self.reader.schema();
        let field = schema.get_field(name).ok()?;
        Some(match schema.get_field_entry(field).field_type() {
            T::I64(_) | T::Date(_) => Col::I64(None, false),
            T::F64(_) => Col::F64(None),
            T::Bool(_) => Col::Bool(None),
            _ => Col::Str(None, OrdCache::default()),
        })
    }

    /// The current document's stored `_source` (null when it has none), as ES's
    /// `params._source`: read per document, as a runtime field without a script reads it.
    pub fn source(&mut self) -> Result<serde_json::Value, String> {
        if self.store.is_none() {
            self.store = Some(
                lode_engine::source_store::SegmentStore::open(&self.reader)
                    .map_err(|e| e.to_string())?,
            );
        }
        let doc = self
            .store
            .as_ref()
            .expect("opened")
            .get(self.doc)
            .map_err(|e| e.to_string())?;
        let src = doc
            .source
            .filter(|b| !b.is_empty())
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(serde_json::Value::Null);
        // field-level security: the hidden fields are not in the script's `_source`
        Ok(match &self.fields.source_filter {
            Some(p) => p.filter_source(&src),
            None => src,
        })
    }

    fn open(&self, name: &str) -> Result<Col, String> {
        let Some(def) = self.fields.get(name) else {
            return self
                .hidden(name)
                .ok_or_else(|| format!("No field found for [{name}] in mapping"));
        };
        let ff = self.reader.fast_fields();
        let io = |e: tantivy::TantivyError| e.to_string();
        let unsupported = || {
            format!(
                "Can't load fielddata on [{name}] because fielddata is unsupported on fields of type [{}]. Use doc values instead.",
                def.ty.name()
            )
        };
        if def.ty == FieldType::SearchAsYouType {
            return Err(format!(
                "Fielddata is not supported on field [{name}] of type [search_as_you_type]"
            ));
        }
        if def.ty == FieldType::MatchOnlyText {
            let source_path = def.parent.as_deref().unwrap_or(&def.path);
            return Ok(Col::Source(Arc::new(
                crate::runtime::RuntimeField::from_source_keyword(source_path),
            )));
        }
        if def.ty == FieldType::Text {
            return Err(format!(
                "Text fields are not optimised for operations that require per-document field data like aggregations and sorting, so these operations are disabled by default. Please use a keyword field instead. Alternatively, set fielddata=true on [{name}] in order to load field data by uninverting the inverted index. Note that this can use significant memory."
            ));
        }
        if !def.doc_values {
            return Err(unsupported());
        }
        let path = def.path.as_str();
        Ok(match def.storage() {
            Storage::I64 => Col::I64(ff.column_opt::<i64>(path).map_err(io)?, def.ty.is_date()),
            Storage::F64 => Col::F64(ff.column_opt::<f64>(path).map_err(io)?),
            Storage::Bool => Col::Bool(ff.column_opt::<bool>(path).map_err(io)?),
            Storage::Keyword => Col::Str(ff.str(path).map_err(io)?, OrdCache::default()),
            _ => return Err(unsupported()),
        })
    }
}

impl DocLookup for SegmentDocs {
    fn field(&mut self, name: &str) -> Result<DocField, String> {
        let mut out = DocField::Long(Vec::new());
        self.field_into(name, &mut out)?;
        Ok(out)
    }

    /// The column's values for the current document written into `out`'s vectors, reused
    /// (a runtime field's values are computed, as before).
    fn field_into(&mut self, name: &str, out: &mut DocField) -> Result<(), String> {
        if let Some(f) = self.runtime.get(name).cloned() {
            return self.runtime_field(&f, out);
        }
        let i = match self.cols.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None => {
                let col = self.open(name)?;
                self.cols.push((name.to_string(), col));
                self.cols.len() - 1
            }
        };
        if let Col::Source(f) = &self.cols[i].1 {
            let f = f.clone();
            return self.runtime_field(&f, out);
        }
        let doc = self.doc;
        match &mut self.cols[i].1 {
            // answered above, from `_source`
            Col::Source(_) => {}
            Col::I64(c, date) => {
                let mut v = match std::mem::replace(out, DocField::Long(Vec::new())) {
                    DocField::Long(v) | DocField::Date(v) => v,
                    _ => Vec::new(),
                };
                v.clear();
                v.extend(c.iter().flat_map(|c| c.values_for_doc(doc)));
                v.sort_unstable();
                *out = if *date {
                    DocField::Date(v)
                } else {
                    DocField::Long(v)
                };
            }
            Col::F64(c) => {
                let mut v = match std::mem::replace(out, DocField::Long(Vec::new())) {
                    DocField::Double(v) => v,
                    _ => Vec::new(),
                };
                v.clear();
                v.extend(c.iter().flat_map(|c| c.values_for_doc(doc)));
                v.sort_unstable_by(f64::total_cmp);
                *out = DocField::Double(v);
            }
            Col::Bool(c) => {
                let mut v = match std::mem::replace(out, DocField::Long(Vec::new())) {
                    DocField::Bool(v) => v,
                    _ => Vec::new(),
                };
                v.clear();
                v.extend(c.iter().flat_map(|c| c.values_for_doc(doc)));
                *out = DocField::Bool(v);
            }
            Col::Str(c, cache) => {
                let mut v = match std::mem::replace(out, DocField::Long(Vec::new())) {
                    DocField::Str(v) => v,
                    _ => Vec::new(),
                };
                let mut n = 0;
                if let Some(c) = c {
                    // the strings' buffers are kept and written over
                    for ord in c.term_ords(doc) {
                        if n == v.len() {
                            v.push(self.spare_strings.pop().unwrap_or_default());
                        }
                        cache.write(c, ord, &mut v[n]);
                        n += 1;
                    }
                }
                // sorted and distinct, as ES's `SortedSetDocValues` (the removed strings'
                // buffers move past the live ones and stay for the next document)
                v[..n].sort_unstable();
                let mut keep = 0;
                for i in 0..n {
                    if keep == 0 || v[i] != v[keep - 1] {
                        v.swap(keep, i);
                        keep += 1;
                    }
                }
                self.spare_strings.extend(v.drain(keep..));
                *out = DocField::Str(v);
            }
        }
        Ok(())
    }

    fn contains(&self, name: &str) -> bool {
        self.fields.contains_key(name) || self.runtime.contains_key(name)
    }

    fn source(&mut self) -> Result<serde_json::Value, String> {
        SegmentDocs::source(self)
    }
}

/// `script_score`: the inner query's matches, each scored `script(_score) * boost`; documents
/// below `min_score` are left out. The inner query is always scored (the script reads
/// `_score`), even when the caller only counts.
pub(crate) struct ScriptScoreQuery {
    pub query: Box<dyn Query>,
    pub script: Arc<SearchScript>,
    pub fields: Fields,
    pub runtime: crate::runtime::RuntimeFields,
    pub errors: ScriptErrors,
    pub min_score: Option<f32>,
    pub boost: f32,
}

impl Clone for ScriptScoreQuery {
    fn clone(&self) -> Self {
        ScriptScoreQuery {
            query: self.query.box_clone(),
            script: self.script.clone(),
            fields: self.fields.clone(),
            runtime: self.runtime.clone(),
            errors: self.errors.clone(),
            min_score: self.min_score,
            boost: self.boost,
        }
    }
}

impl std::fmt::Debug for ScriptScoreQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ScriptScoreQuery({:?}, {:?})",
            self.query,
            self.script.source()
        )
    }
}

impl Query for ScriptScoreQuery {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let stats;
        let scoring = match (scoring.is_scoring_enabled(), scoring.searcher()) {
            (false, Some(searcher)) => {
                stats = crate::FieldStatistics::new(searcher);
                stats.scoring(searcher)
            }
            _ => scoring,
        };
        Ok(Box::new(ScriptScoreWeight {
            weight: self.query.weight(scoring)?,
            query: self.clone(),
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a tantivy::Term, bool)) {
        self.query.query_terms(visitor);
    }
}

struct ScriptScoreWeight {
    weight: Box<dyn Weight>,
    query: ScriptScoreQuery,
}

impl Weight for ScriptScoreWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let mut s = ScriptScoreScorer {
            inner: self.weight.scorer(reader, 1.0)?,
            docs: SegmentDocs::new(reader, self.query.fields.clone())
                .with_runtime(self.query.runtime.clone()),
            scratch: Scratch::default(),
            query: self.query.clone(),
            boost: boost * self.query.boost,
            score: 0.0,
            failed: false,
        };
        s.settle();
        Ok(Box::new(s))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut s = self.scorer(reader, 1.0)?;
        if s.seek(doc) != doc {
            return Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )));
        }
        let mut e = Explanation::new("script score function, computed with script", s.score());
        e.add_detail(self.weight.explain(reader, doc)?);
        Ok(e)
    }
}

struct ScriptScoreScorer {
    inner: Box<dyn Scorer>,
    docs: SegmentDocs,
    /// The script's buffers on this segment, reused from document to document.
    scratch: Scratch,
    query: ScriptScoreQuery,
    boost: Score,
    score: Score,
    failed: bool,
}

impl ScriptScoreScorer {
    /// Scores the current document, moving on while it is below `min_score`.
    fn settle(&mut self) -> DocId {
        loop {
            let doc = self.inner.doc();
            if doc == TERMINATED {
                return doc;
            }
            if self.failed {
                return self.inner.seek(TERMINATED);
            }
            self.docs.doc = doc;
            let inner = self.inner.score();
            match self
                .query
                .script
                .score_in(&mut self.scratch, &mut self.docs, f64::from(inner))
            {
                Ok(v) if v < 0.0 || v.is_nan() => {
                    self.query.errors.lock().get_or_insert(EsError::illegal_argument(format!(
                        "script_score script returned an invalid score [{v:?}] for doc [{doc}]. Must be a non-negative score!"
                    )));
                    self.failed = true;
                }
                Ok(v) => {
                    self.score = v as f32 * self.boost;
                    if self.query.min_score.is_none_or(|m| self.score >= m) {
                        return doc;
                    }
                    self.inner.advance();
                }
                Err(e) => {
                    self.query.errors.lock().get_or_insert(e);
                    self.failed = true;
                }
            }
        }
    }
}

impl DocSet for ScriptScoreScorer {
    fn advance(&mut self) -> DocId {
        self.inner.advance();
        self.settle()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.inner.doc() >= target {
            return self.inner.doc();
        }
        self.inner.seek(target);
        self.settle()
    }

    fn doc(&self) -> DocId {
        self.inner.doc()
    }

    fn size_hint(&self) -> u32 {
        self.inner.size_hint()
    }
}

impl Scorer for ScriptScoreScorer {
    fn score(&mut self) -> Score {
        self.score
    }
}
