//! A search script evaluated per document over a reused [`Scratch`] allocates nothing once its
//! buffers have grown: counted by a global allocator wrapper for this test binary.

use lode_painless::{DocField, DocLookup, Scratch, SearchScript};
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

/// Columns of numbers, dates and booleans, one value or none per document, written into the
/// caller's vectors as a column reader does.
struct Docs {
    doc: i64,
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
            other => return Err(format!("No field found for [{other}] in mapping")),
        }
        Ok(())
    }

    fn contains(&self, name: &str) -> bool {
        matches!(name, "sell_time" | "sold" | "n" | "price")
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
    let mut docs = Docs { doc: 0 };
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
    let mut docs = Docs { doc: 0 };
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
