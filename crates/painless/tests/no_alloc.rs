//! A search script evaluated per document over a reused [`Scratch`] allocates nothing once its
//! buffers have grown: filters, scores, keyword doc values (interned per scratch), a runtime
//! field's `emit`s into a reused [`Emitted`] and value scripts' `_value`. Counted by a global
//! allocator wrapper for this test binary; `crates/query/tests/no_alloc.rs` does the same over
//! a real segment.

use lode_painless::{DocField, DocLookup, Emitted, Scratch, ScriptValue, SearchScript};
use serde_json::json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCS.with(Cell::get)
}

const TAGS: [&str; 5] = ["red", "green", "blue", "cyan", "magenta"];

/// Columns of numbers, dates, booleans and keywords, one value or none per document, written into the
/// caller's vectors as a column reader does.
struct Docs {
    doc: i64,
    /// Strings a document with fewer keywords left over (as `SegmentDocs` keeps them).
    spare: Vec<String>,
}

impl DocLookup for Docs {
    fn field(&mut self, name: &str) -> Result<DocField, String> {
        let mut out = DocField::Long(Vec::new());
        self.field_into(name, &mut out)?;
        Ok(out)
    }

    fn field_into(&mut self, name: &str, out: &mut DocField) -> Result<(), String> {
        let d = self.doc;
        fn reuse_i64(out: &mut DocField, date: bool) -> &mut Vec<i64> {
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
                _ => unreachable!(),
            }
        }
        match name {
            "sell_time" => reuse_i64(out, false).push(1000 + d),
            "sold" => reuse_i64(out, true).push(1_700_000_000_000 + d),
            // every third document has no `n`
            "n" => {
                let v = reuse_i64(out, false);
                if d % 3 != 0 {
                    v.push(d);
                    v.push(d * 2);
                }
            }
            "price" => {
                if !matches!(out, DocField::Double(_)) {
                    *out = DocField::Double(Vec::new());
                }
                if let DocField::Double(v) = out {
                    v.clear();
                    v.push(d as f64 / 4.0);
                }
            }
            // keywords written into the caller's kept strings, as `SegmentDocs` does
            "tag" => {
                if !matches!(out, DocField::Str(_)) {
                    *out = DocField::Str(Vec::new());
                }
                if let DocField::Str(v) = out {
                    let want = if d % 4 == 0 { 2 } else { 1 };
                    while v.len() < want {
                        v.push(self.spare.pop().unwrap_or_default());
                    }
                    self.spare.extend(v.drain(want..));
                    for (i, s) in v.iter_mut().enumerate() {
                        s.clear();
                        s.push_str(TAGS[(d as usize + i) % TAGS.len()]);
                    }
                }
            }
            other => return Err(format!("No field found for [{other}] in mapping")),
        }
        Ok(())
    }

    fn contains(&self, name: &str) -> bool {
        matches!(name, "sell_time" | "sold" | "n" | "price" | "tag")
    }
}

#[test]
fn filters_and_scores_allocate_nothing_per_document() {
    let filter = SearchScript::compile(
        &json!({"source": "doc['sell_time'].value > params.now && doc['n'].size() > 0 && doc['n'][1] >= doc['n'].get(0) && !doc['sold'].empty && doc['sold'].value.millis > params.t",
                "params": {"now": 1010, "t": 0, "unused": [1, 2, 3]}}),
        None,
    )
    .unwrap();
    let score = SearchScript::compile(
        &json!({"source": "_score * params.f + doc['price'].value", "params": {"f": 2}}),
        None,
    )
    .unwrap();
    let (mut sf, mut ss) = (Scratch::default(), Scratch::default());
    let mut docs = Docs {
        doc: 0,
        spare: Vec::new(),
    };
    let mut want_hits = 0;
    // warm-up: the buffers grow to the largest document
    for d in 0..100 {
        docs.doc = d;
        filter.filter_in(&mut sf, &mut docs).unwrap();
        score.score_in(&mut ss, &mut docs, 1.0).unwrap();
    }
    let before = allocations();
    let mut hits = 0;
    let mut total = 0.0;
    for d in 0..1000 {
        docs.doc = d;
        if filter.filter_in(&mut sf, &mut docs).unwrap() {
            hits += 1;
        }
        total += score.score_in(&mut ss, &mut docs, 1.5).unwrap();
    }
    assert_eq!(allocations() - before, 0, "allocations over 1000 documents");
    for d in 0..1000i64 {
        if 1000 + d > 1010 && d % 3 != 0 {
            want_hits += 1;
        }
    }
    assert_eq!(hits, want_hits);
    let want: f64 = (0..1000).map(|d| 1.5 * 2.0 + d as f64 / 4.0).sum();
    assert!((total - want).abs() < 1e-6, "{total} {want}");
}

#[test]
fn a_script_that_changes_params_sees_them_afresh_next_document() {
    // `params.seen` grows within a run; the next document starts from the request's params,
    // as the per-document evaluation did.
    let s = SearchScript::compile(
        &json!({"source": "params.seen.add(1); params.seen.size() == 1", "params": {"seen": []}}),
        None,
    )
    .unwrap();
    let mut sc = Scratch::default();
    let mut docs = Docs {
        doc: 0,
        spare: Vec::new(),
    };
    for d in 0..5 {
        docs.doc = d;
        assert!(s.filter_in(&mut sc, &mut docs).unwrap());
    }
    // an error leaves the scratch usable
    let bad = SearchScript::compile(&json!("doc['nope'].value > 1"), None).unwrap();
    let mut sc2 = Scratch::default();
    assert!(bad.filter_in(&mut sc2, &mut docs).is_err());
    assert!(bad.filter_in(&mut sc2, &mut docs).is_err());
}

/// Runs `each` over documents 0..1000 twice: a warm-up, then a counted pass that must
/// allocate nothing.
fn counted(docs: &mut Docs, mut each: impl FnMut(&mut Docs, i64)) {
    for d in 0..1000 {
        docs.doc = d;
        each(docs, d);
    }
    let before = allocations();
    for d in 0..1000 {
        docs.doc = d;
        each(docs, d);
    }
    assert_eq!(allocations() - before, 0, "allocations over 1000 documents");
}

#[test]
fn keyword_doc_values_are_shared_strings_without_an_allocation() {
    let s = SearchScript::compile(
        &json!("doc['tag'].value == 'blue' || doc['tag'].value.length() > 5"),
        None,
    )
    .unwrap();
    let mut sc = Scratch::default();
    let mut docs = Docs {
        doc: 0,
        spare: Vec::new(),
    };
    let mut hits = 0;
    counted(&mut docs, |docs, _| {
        hits += usize::from(s.filter_in(&mut sc, docs).unwrap());
    });
    let want = (0..1000)
        .filter(|d| {
            let t = TAGS[*d as usize % TAGS.len()];
            t == "blue" || t.len() > 5
        })
        .count();
    assert_eq!(hits, 2 * want);
}

#[test]
fn emitted_values_go_into_a_reused_buffer() {
    // a long and a keyword runtime field's scripts
    let long = SearchScript::compile_runtime(
        &json!({"source": "for (def v : doc['n']) { emit(v * params.f) }", "params": {"f": 3}}),
    )
    .unwrap();
    let kw =
        SearchScript::compile_runtime(&json!("for (String t : doc['tag']) { emit(t) }")).unwrap();
    let (mut sl, mut sk) = (Scratch::default(), Scratch::default());
    let (mut ol, mut ok) = (Emitted::default(), Emitted::default());
    let mut docs = Docs {
        doc: 0,
        spare: Vec::new(),
    };
    let (mut sum, mut chars) = (0i64, 0usize);
    counted(&mut docs, |docs, d| {
        ol.clear();
        long.emit_in(&mut sl, docs, &mut ol).unwrap();
        let want: &[i64] = if d % 3 == 0 { &[] } else { &[d * 3, d * 6] };
        assert!(ol
            .values()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .eq(want.iter().copied()));
        sum += ol.values().iter().map(|v| v.as_i64().unwrap()).sum::<i64>();
        ok.clear();
        kw.emit_in(&mut sk, docs, &mut ok).unwrap();
        let n = if d % 4 == 0 { 2 } else { 1 };
        assert_eq!(ok.len(), n);
        for (i, v) in ok.values().iter().enumerate() {
            assert_eq!(v.as_str(), Some(TAGS[(d as usize + i) % TAGS.len()]));
            chars += v.as_str().unwrap().len();
        }
    });
    let want_sum: i64 = (0..1000).filter(|d| d % 3 != 0).map(|d| d * 9).sum();
    assert_eq!(sum, 2 * want_sum);
    let want_chars: usize = (0..1000usize)
        .map(|d| {
            (0..if d % 4 == 0 { 2 } else { 1 })
                .map(|i| TAGS[(d + i) % TAGS.len()].len())
                .sum::<usize>()
        })
        .sum();
    assert_eq!(chars, 2 * want_chars);
}

#[test]
fn value_scripts_take_a_borrowed_value() {
    let s =
        SearchScript::compile_agg(&json!("_value.length() + doc['price'].value"), None).unwrap();
    let num = SearchScript::compile_agg(
        &json!({"source": "_value * params.f", "params": {"f": 2}}),
        None,
    )
    .unwrap();
    let mut sc = Scratch::default();
    let mut sn = Scratch::default();
    let mut out = Emitted::default();
    let mut docs = Docs {
        doc: 0,
        spare: Vec::new(),
    };
    let mut total = 0.0;
    counted(&mut docs, |docs, d| {
        out.clear();
        let tag = TAGS[d as usize % TAGS.len()];
        s.agg_value_in(&mut sc, docs, Some(ScriptValue::Str(tag)), &mut out)
            .unwrap();
        num.agg_value_in(&mut sn, docs, Some(ScriptValue::Long(d)), &mut out)
            .unwrap();
        assert_eq!(out.len(), 2);
        total += out
            .values()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .sum::<f64>();
    });
    let want: f64 = (0..1000)
        .map(|d| TAGS[d as usize % TAGS.len()].len() as f64 + d as f64 / 4.0 + 2.0 * d as f64)
        .sum();
    assert!((total - 2.0 * want).abs() < 1e-6, "{total} {want}");
}
