//! Runtime fields, aggregation value scripts, `doc['runtime']` in a script and
//! `script_fields` evaluated per document over a segment's reused state allocate nothing once
//! the buffers have grown (the values a caller keeps excepted): counted by a global allocator
//! wrapper for this test binary, over a real in-RAM segment built through the engine's own
//! mapping and document code. Expected values come from the documents, computed here.

use lode_engine::document::{DocParser, Parsed};
use lode_engine::mapping;
use lode_engine::schema::{self, MetaFields};
use lode_painless::{Scratch, SearchScript};
use lode_query::runtime::{parse_runtime_mappings, RuntimeField, RuntimeFields, RuntimeType};
use lode_query::script::{fields_of, ScriptErrors, SegmentDocs};
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

const N: i64 = 1000;
const TAGS: [&str; 7] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf",
];

/// Document `d`'s values: `n` (a long; none on every fifth document), `price` (a double) and
/// `tag` (one keyword, a second one on every third document).
fn n_of(d: i64) -> Option<i64> {
    (d % 5 != 0).then_some(d * 3)
}
fn price_of(d: i64) -> f64 {
    d as f64 / 4.0
}
fn tags_of(d: i64) -> Vec<&'static str> {
    let mut t = vec![TAGS[(d % 7) as usize]];
    if d % 3 == 0 {
        t.push(TAGS[((d + 2) % 7) as usize]);
    }
    t
}

struct Segment {
    reader: tantivy::IndexReader,
    mapping: mapping::Mapping,
}

fn segment() -> Segment {
    let analysis = lode_analysis::AnalysisRegistry::new(None).unwrap();
    let mapping = mapping::compile(
        &json!({"properties": {"n": {"type": "long"}, "price": {"type": "double"},
                               "tag": {"type": "keyword"}}}),
        &analysis,
    )
    .unwrap();
    let schema = schema::extend(None, &mapping);
    let index = lode_engine::source_store::create_in_ram(schema.clone()).unwrap();
    let meta = MetaFields::of(&schema);
    let parser = DocParser {
        mapping: &mapping,
        schema: &schema,
        meta,
        nested_objects_limit: lode_engine::document::DEFAULT_NESTED_OBJECTS_LIMIT,
    };
    let mut writer: tantivy::IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
    for d in 0..N {
        let mut src = json!({"price": price_of(d), "tag": tags_of(d)});
        if let Some(n) = n_of(d) {
            src["n"] = json!(n);
        }
        let id = d.to_string();
        match parser.parse(&id, &src).unwrap() {
            Parsed::Doc(doc) => {
                let mut doc = *doc;
                doc.root.add_text(meta.id, &id);
                writer.add_document(doc.root).unwrap();
            }
            Parsed::MappingUpdate(u) => panic!("needs a mapping update: {u}"),
        }
    }
    writer.commit().unwrap();
    let reader = index.reader().unwrap();
    reader.reload().unwrap();
    assert_eq!(reader.searcher().segment_readers().len(), 1);
    Segment { reader, mapping }
}

impl Segment {
    /// `doc` over the segment with these runtime fields, and the segment's documents in
    /// index order mapped back to `d` (read from `price`).
    fn docs(&self, runtime: &RuntimeFields) -> (SegmentDocs, Vec<i64>) {
        let searcher = self.reader.searcher();
        let seg = searcher.segment_reader(0);
        let price = seg.fast_fields().f64("price").unwrap();
        let ids = (0..seg.max_doc())
            // `price` is d / 4 exactly
            .map(|doc| (price.first(doc).unwrap() * 4.0) as i64)
            .collect();
        let docs = SegmentDocs::new(seg, fields_of(&self.mapping)).with_runtime(runtime.clone());
        (docs, ids)
    }
}

/// Runs `each` on every document twice: a warm-up pass (the buffers grow), then the counted
/// pass, which must allocate nothing.
fn counted(docs: &mut SegmentDocs, ids: &[i64], mut each: impl FnMut(&mut SegmentDocs, i64)) {
    for (doc, &d) in ids.iter().enumerate() {
        docs.doc = doc as u32;
        each(docs, d);
    }
    let before = allocations();
    for (doc, &d) in ids.iter().enumerate() {
        docs.doc = doc as u32;
        each(docs, d);
    }
    assert_eq!(allocations() - before, 0, "allocations over {N} documents");
}

#[test]
fn long_runtime_field_allocates_nothing_per_document() {
    let seg = segment();
    let rt = parse_runtime_mappings(&json!({
        "twice": {"type": "long", "script": {
            "source": "for (def v : doc['n']) { emit(v * params.f); emit(v + 1) }",
            "params": {"f": 2}}}
    }))
    .unwrap();
    let (mut docs, ids) = seg.docs(&rt);
    let field = rt["twice"].clone();
    let (mut sum, mut count) = (0i64, 0usize);
    counted(&mut docs, &ids, |docs, d| {
        field
            .with_values(docs, |vals| {
                // emitted in order: n * 2, n + 1
                match n_of(d) {
                    Some(n) => {
                        assert_eq!(vals.len(), 2);
                        assert_eq!(vals[0].as_i64(), Some(n * 2));
                        assert_eq!(vals[1].as_i64(), Some(n + 1));
                    }
                    None => assert!(vals.is_empty()),
                }
                for v in vals {
                    sum += v.as_i64().unwrap();
                    count += 1;
                }
            })
            .unwrap();
    });
    let want: i64 = (0..N).filter_map(n_of).map(|n| n * 3 + 1).sum();
    let want_count = (0..N).filter_map(n_of).count() * 2;
    assert_eq!((sum, count), (2 * want, 2 * want_count));
}

#[test]
fn keyword_runtime_field_allocates_nothing_per_document() {
    let seg = segment();
    let rt = parse_runtime_mappings(&json!({
        "tags": {"type": "keyword", "script":
            "for (String t : doc['tag']) { if (t != 'golf') { emit(t) } }"}
    }))
    .unwrap();
    let (mut docs, ids) = seg.docs(&rt);
    let field = rt["tags"].clone();
    let mut counts = [0usize; TAGS.len()];
    // doc values come sorted, as the column holds them (computed before counting)
    let expected: Vec<Vec<&str>> = (0..N)
        .map(|d| {
            let mut want = tags_of(d);
            want.sort_unstable();
            want.dedup();
            want.retain(|t| *t != "golf");
            want
        })
        .collect();
    counted(&mut docs, &ids, |docs, d| {
        field
            .with_values(docs, |vals| {
                let want = &expected[d as usize];
                assert!(
                    vals.iter()
                        .map(|v| v.as_str().unwrap())
                        .eq(want.iter().copied()),
                    "doc {d}: {vals:?} {want:?}"
                );
                for v in vals {
                    let i = TAGS.iter().position(|t| *t == v.as_str().unwrap()).unwrap();
                    counts[i] += 1;
                }
            })
            .unwrap();
    });
    let mut want = [0usize; TAGS.len()];
    for d in 0..N {
        let mut t = tags_of(d);
        t.sort_unstable();
        t.dedup();
        for x in t.into_iter().filter(|t| *t != "golf") {
            want[TAGS.iter().position(|t| *t == x).unwrap()] += 2;
        }
    }
    assert_eq!(counts, want);
}

#[test]
fn aggregation_value_script_allocates_nothing_per_document() {
    let seg = segment();
    let rt: RuntimeFields = Default::default();
    let (mut docs, ids) = seg.docs(&rt);
    // `"avg": {"field": "price", "script": "_value * params.f"}` and a keyword value script
    let value = RuntimeField::agg_script(
        "price".into(),
        RuntimeType::Double,
        &json!({"source": "_value * params.f", "params": {"f": 2}}),
        Some("price".into()),
    )
    .unwrap();
    let keyword = RuntimeField::agg_script(
        "tag".into(),
        RuntimeType::Keyword,
        &json!("_value.length()"),
        Some("tag".into()),
    )
    .unwrap();
    let errors = ScriptErrors::default();
    let (mut sum, mut lengths) = (0.0, 0usize);
    counted(&mut docs, &ids, |docs, _| {
        value.with_values_or_record(docs, &errors, |vals| {
            sum += vals.iter().map(|v| v.as_f64().unwrap()).sum::<f64>();
        });
        // a number as a keyword: written as its string into the buffer's kept strings
        keyword.with_values_or_record(docs, &errors, |vals| {
            lengths += vals
                .iter()
                .map(|v| v.as_str().unwrap().parse::<usize>().unwrap())
                .sum::<usize>();
        });
    });
    assert!(errors.lock().is_none());
    let want: f64 = (0..N).map(|d| price_of(d) * 2.0).sum();
    assert!((sum - 2.0 * want).abs() < 1e-6, "{sum} {want}");
    let want_len: usize = (0..N)
        .map(|d| {
            let mut t = tags_of(d);
            t.sort_unstable();
            t.dedup();
            t.iter().map(|t| t.len()).sum::<usize>()
        })
        .sum();
    assert_eq!(lengths, 2 * want_len);
}

#[test]
fn a_script_reading_a_runtime_field_allocates_nothing_per_document() {
    let seg = segment();
    let rt = parse_runtime_mappings(&json!({
        "twice": {"type": "long", "script": "for (def v : doc['n']) { emit(v * 2) }"}
    }))
    .unwrap();
    let (mut docs, ids) = seg.docs(&rt);
    let filter = SearchScript::compile(
        &json!({"source": "doc['twice'].size() > 0 && doc['twice'].value > params.min",
                "params": {"min": 1000}}),
        None,
    )
    .unwrap();
    let mut sc = Scratch::default();
    let mut hits = 0;
    counted(&mut docs, &ids, |docs, d| {
        let want = n_of(d).is_some_and(|n| n * 2 > 1000);
        assert_eq!(filter.filter_in(&mut sc, docs).unwrap(), want, "doc {d}");
        hits += usize::from(want);
    });
    assert_eq!(
        hits,
        2 * (0..N)
            .filter(|&d| n_of(d).is_some_and(|n| n * 2 > 1000))
            .count()
    );
}

#[test]
fn script_fields_allocate_only_the_returned_values() {
    let seg = segment();
    let rt: RuntimeFields = Default::default();
    let (mut docs, ids) = seg.docs(&rt);
    let number = SearchScript::compile(&json!("doc['price'].value * 2 + _score"), None).unwrap();
    let keyword = SearchScript::compile(&json!("doc['tag'].value"), None).unwrap();
    let (mut s1, mut s2) = (Scratch::default(), Scratch::default());
    // a number is returned without an allocation
    counted(&mut docs, &ids, |docs, d| {
        let v = number.value_in(&mut s1, docs, 1.0).unwrap();
        assert_eq!(v.as_f64(), Some(price_of(d) * 2.0 + 1.0));
    });
    // a string is the one allocation per hit: the returned value
    for (doc, _) in ids.iter().enumerate() {
        docs.doc = doc as u32;
        keyword.value_in(&mut s2, &mut docs, 0.0).unwrap();
    }
    let mut got = Vec::with_capacity(ids.len());
    let before = allocations();
    for (doc, _) in ids.iter().enumerate() {
        docs.doc = doc as u32;
        got.push(keyword.value_in(&mut s2, &mut docs, 0.0).unwrap());
    }
    let spent = allocations() - before;
    assert!(
        spent <= N as u64,
        "{spent} allocations for {N} returned strings"
    );
    for (v, &d) in got.iter().zip(&ids) {
        let mut t = tags_of(d);
        t.sort_unstable();
        assert_eq!(v.as_str(), Some(t[0]));
    }
}
