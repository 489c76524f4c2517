//! Plan tests: a small in-RAM index built through the engine's own mapping, schema and
//! document code, queried with ES JSON; expected hits follow Elasticsearch semantics.

use super::{build_query, is_match_all, parse_query, uses_now, FieldStatistics, QueryContext};
use lode_analysis::AnalysisRegistry;
use lode_engine::document::{DocParser, Parsed};
use lode_engine::mapping::{self, Mapping};
use lode_engine::schema::{self, MetaFields};
use lode_engine::{EsError, EsResult};
use serde_json::{json, Value};
use tantivy::collector::TopDocs;
use tantivy::schema::Schema;
use tantivy::{IndexReader, IndexWriter};

struct TestIndex {
    mapping: Mapping,
    schema: Schema,
    analysis: AnalysisRegistry,
    reader: IndexReader,
    meta: MetaFields,
    max_terms_count: usize,
    max_regex_length: usize,
    max_clause_count: usize,
}

/// 2020-06-01T00:00:00Z, the fixed "now" of these tests.
const NOW: i64 = 1_590_969_600_000;

impl TestIndex {
    fn new(mapping_json: Value, docs: &[(&str, Value)]) -> TestIndex {
        let analysis = AnalysisRegistry::new(None).unwrap();
        let mapping = mapping::compile(&mapping_json, &analysis).unwrap();
        let schema = schema::extend(None, &mapping);
        let index = lode_engine::source_store::create_in_ram(schema.clone()).unwrap();
        lode_engine::index::register_tokenizers(&analysis, &mapping, &index);
        let meta = MetaFields::of(&schema);
        let parser = DocParser {
            mapping: &mapping,
            schema: &schema,
            meta,
            nested_objects_limit: lode_engine::document::DEFAULT_NESTED_OBJECTS_LIMIT,
        };
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        for (id, src) in docs {
            match parser.parse(id, src).unwrap() {
                Parsed::Doc(d) => {
                    let mut d = *d;
                    d.root.add_text(meta.id, id);
                    let block = d.nested.into_iter().chain(std::iter::once(d.root));
                    writer
                        .run(
                            block
                                .map(tantivy::indexer::UserOperation::Add)
                                .collect::<Vec<_>>(),
                        )
                        .unwrap();
                }
                Parsed::MappingUpdate(u) => panic!("test doc {id} needs a mapping update: {u}"),
            }
        }
        writer.commit().unwrap();
        let reader = index.reader().unwrap();
        reader.reload().unwrap();
        TestIndex {
            mapping,
            schema,
            analysis,
            reader,
            meta,
            max_terms_count: 65_536,
            max_regex_length: 1000,
            max_clause_count: crate::MAX_CLAUSE_COUNT,
        }
    }

    fn ctx(&self) -> QueryContext<'_> {
        QueryContext {
            mapping: &self.mapping,
            schema: &self.schema,
            meta: self.meta,
            analysis: &self.analysis,
            now_millis: NOW,
            max_terms_count: self.max_terms_count,
            max_regex_length: self.max_regex_length,
            max_clause_count: self.max_clause_count,
            query_string_lenient: false,
            default_fields: Default::default(),
            terms_lookups: None,
            script_errors: Default::default(),
            runtime: Default::default(),
            allow_expensive_queries: true,
        }
    }

    fn run(&self, q: &Value) -> EsResult<Vec<(String, f32)>> {
        let parsed = parse_query(q)?;
        let query = crate::nested::non_nested(build_query(&parsed, &self.ctx())?, self.meta.nested);
        let searcher = self.reader.searcher();
        let top = FieldStatistics::new(&searcher)
            .search(
                &searcher,
                &*query,
                &TopDocs::with_limit(100).order_by_score(),
            )
            .map_err(EsError::from)?;
        Ok(top
            .into_iter()
            .map(|(score, addr)| {
                let store = lode_engine::source_store::SegmentStore::open(
                    searcher.segment_reader(addr.segment_ord),
                )
                .unwrap();
                (store.get(addr.doc_id).unwrap().id.unwrap(), score)
            })
            .collect())
    }

    /// Matching ids, sorted.
    fn ids(&self, q: Value) -> Vec<String> {
        let mut ids: Vec<String> = self
            .run(&q)
            .unwrap_or_else(|e| panic!("{q}: {e}"))
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        ids.sort();
        ids
    }

    fn scores(&self, q: Value) -> Vec<(String, f32)> {
        self.run(&q).unwrap_or_else(|e| panic!("{q}: {e}"))
    }

    fn score_of(&self, q: Value, id: &str) -> f32 {
        self.scores(q)
            .into_iter()
            .find(|(i, _)| i == id)
            .map(|(_, s)| s)
            .expect("doc matches")
    }

    fn err(&self, q: Value) -> EsError {
        self.run(&q).expect_err(&q.to_string())
    }
}

fn ids(list: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = list.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

fn fixture() -> TestIndex {
    TestIndex::new(
        json!({"properties": {
            "title": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
            "body": {"type": "text"},
            "tag": {"type": "keyword"},
            "tag_lc": {"type": "keyword", "normalizer": "lowercase"},
            "age": {"type": "integer"},
            "price": {"type": "float"},
            "ratio": {"type": "scaled_float", "scaling_factor": 100},
            "active": {"type": "boolean"},
            "ip": {"type": "ip"},
            "date": {"type": "date"},
            "day": {"type": "date", "format": "yyyy-MM-dd"},
            "hidden_num": {"type": "long", "index": false},
            "hidden_kw": {"type": "keyword", "index": false},
            "user": {"properties": {"name": {"type": "keyword"}, "age": {"type": "integer"}}},
            "comments": {"type": "nested", "include_in_parent": true, "properties": {"author": {"type": "keyword"}, "text": {"type": "text"}}},
            "cjk": {"type": "text"}
        }}),
        &[
            (
                "1",
                json!({"title": "The quick brown fox", "body": "jumps over the lazy dog", "tag": "animal",
                       "tag_lc": "Animal", "age": 5, "price": 1.1, "ratio": 0.5, "active": true,
                       "ip": "192.168.1.10", "date": "2020-01-01T10:00:00Z", "day": "2020-01-01",
                       "hidden_num": 10, "hidden_kw": "secret", "user": {"name": "kimchy", "age": 30},
                       "comments": [{"author": "a1", "text": "nice fox"}], "cjk": "江苏省"}),
            ),
            (
                "2",
                json!({"title": "Quick brown dogs", "body": "the quick dog barks", "tag": "pet", "tag_lc": "PET",
                       "age": 10, "price": 2.5, "active": false, "ip": "10.0.0.1",
                       "date": "2020-01-02T00:00:00Z", "day": "2020-01-15", "hidden_num": 20,
                       "user": {"name": "Bob"}, "cjk": "千米"}),
            ),
            (
                "3",
                json!({"title": "Lazy cats sleep", "body": "cats are not dogs", "tag": ["animal", "pet"],
                       "age": 15, "price": 3.0, "active": true, "ip": "2001:db8::1",
                       "date": "2020-02-01T00:00:00Z", "cjk": "北京"}),
            ),
            (
                "4",
                json!({"title": "A fox in the garden", "tag": "plant", "age": 20, "date": "2021-06-15T12:00:00Z"}),
            ),
            ("5", json!({"body": "lonely"})),
            ("6", json!({"title": "quick quick quick", "tag": "Animal"})),
        ],
    )
}

#[test]
fn match_all_none_and_unknown_fields() {
    let ix = fixture();
    assert_eq!(
        ix.ids(json!({"match_all": {}})),
        ids(&["1", "2", "3", "4", "5", "6"])
    );
    assert_eq!(ix.ids(json!({"match_none": {}})), ids(&[]));
    assert_eq!(ix.ids(json!({"term": {"nope": "x"}})), ids(&[]));
    assert_eq!(ix.ids(json!({"match": {"nope": "x"}})), ids(&[]));
    assert_eq!(ix.ids(json!({"range": {"nope": {"gte": 1}}})), ids(&[]));
    assert_eq!(
        ix.ids(json!({"term": {"user": "kimchy"}})),
        ids(&[]),
        "an object path is not a field"
    );
    let s = ix.scores(json!({"match_all": {"boost": 2.5}}));
    assert!(s.iter().all(|(_, sc)| (*sc - 2.5).abs() < 1e-6));
}

#[test]
fn term_queries() {
    let ix = fixture();
    assert_eq!(ix.ids(json!({"term": {"tag": "animal"}})), ids(&["1", "3"]));
    assert_eq!(ix.ids(json!({"term": {"tag": "Animal"}})), ids(&["6"]));
    assert_eq!(
        ix.ids(json!({"term": {"tag_lc": "ANIMAL"}})),
        ids(&["1"]),
        "keyword normalizer applies to the query"
    );
    assert_eq!(
        ix.ids(json!({"term": {"title": "quick"}})),
        ids(&["1", "2", "6"])
    );
    assert_eq!(
        ix.ids(json!({"term": {"title": "Quick"}})),
        ids(&[]),
        "term queries are not analyzed"
    );
    assert_eq!(
        ix.ids(json!({"term": {"title.raw": "Quick brown dogs"}})),
        ids(&["2"])
    );
    assert_eq!(ix.ids(json!({"term": {"age": 10}})), ids(&["2"]));
    assert_eq!(ix.ids(json!({"term": {"age": "10"}})), ids(&["2"]));
    assert_eq!(ix.ids(json!({"term": {"age": 10.5}})), ids(&[]));
    assert_eq!(ix.ids(json!({"term": {"age": 3_000_000_000i64}})), ids(&[]));
    assert_eq!(
        ix.ids(json!({"term": {"price": 1.1}})),
        ids(&["1"]),
        "float precision"
    );
    assert_eq!(ix.ids(json!({"term": {"ratio": 0.5}})), ids(&["1"]));
    assert_eq!(ix.ids(json!({"term": {"active": true}})), ids(&["1", "3"]));
    assert_eq!(ix.ids(json!({"term": {"active": "false"}})), ids(&["2"]));
    assert_eq!(ix.ids(json!({"term": {"ip": "192.168.1.10"}})), ids(&["1"]));
    assert_eq!(
        ix.ids(json!({"term": {"ip": "192.168.0.0/16"}})),
        ids(&["1"])
    );
    assert_eq!(ix.ids(json!({"term": {"ip": "10.0.0.0/8"}})), ids(&["2"]));
    assert_eq!(
        ix.ids(json!({"term": {"ip": "2001:db8::/32"}})),
        ids(&["3"])
    );
    assert_eq!(
        ix.ids(json!({"term": {"date": "2020-01-01"}})),
        ids(&["1"]),
        "a date term covers its whole day"
    );
    assert_eq!(
        ix.ids(json!({"term": {"date": "2020-01-02T00:00:00Z"}})),
        ids(&["2"])
    );
    assert_eq!(
        ix.ids(json!({"term": {"date": 1577923200000i64}})),
        ids(&["2"]),
        "epoch millis"
    );
    assert_eq!(ix.ids(json!({"term": {"_id": "3"}})), ids(&["3"]));
    assert_eq!(
        ix.ids(json!({"term": {"user.name": "kimchy"}})),
        ids(&["1"])
    );
    assert_eq!(
        ix.ids(json!({"term": {"tag": {"value": "ANIMAL", "case_insensitive": true}}})),
        ids(&["1", "3", "6"])
    );
    // index:false fields with doc values are searched through the fast column.
    assert_eq!(ix.ids(json!({"term": {"hidden_num": 20}})), ids(&["2"]));
    assert_eq!(
        ix.ids(json!({"term": {"hidden_kw": "secret"}})),
        ids(&["1"])
    );

    let e = ix.err(json!({"term": {"age": "abc"}}));
    assert_eq!(e.kind, "query_shard_exception");
    assert_eq!(
        e.reason,
        "failed to create query: For input string: \"abc\""
    );
    assert_eq!(
        ix.err(json!({"term": {"ip": "nope"}})).kind,
        "query_shard_exception"
    );
    assert_eq!(
        ix.err(json!({"term": {"date": "yesterday"}})).kind,
        "parse_exception"
    );
    assert_eq!(
        ix.err(json!({"term": {"active": "yes"}})).kind,
        "query_shard_exception"
    );
}

#[test]
fn terms_queries() {
    let ix = fixture();
    assert_eq!(
        ix.ids(json!({"terms": {"tag": ["plant", "pet"]}})),
        ids(&["2", "3", "4"])
    );
    assert_eq!(
        ix.ids(json!({"terms": {"tag_lc": ["pet", "ANIMAL"]}})),
        ids(&["1", "2"])
    );
    assert_eq!(
        ix.ids(json!({"terms": {"age": [5, "20", 99, 1.5]}})),
        ids(&["1", "4"])
    );
    assert_eq!(
        ix.ids(json!({"terms": {"_id": ["1", "5", "x"]}})),
        ids(&["1", "5"])
    );
    assert_eq!(
        ix.ids(json!({"terms": {"date": ["2020-01-01", "2020-02-01T00:00:00Z"]}})),
        ids(&["1", "3"])
    );
    assert_eq!(
        ix.ids(json!({"terms": {"ip": ["10.0.0.1", "192.168.0.0/16"]}})),
        ids(&["1", "2"])
    );
    assert_eq!(
        ix.ids(json!({"terms": {"hidden_num": [10, 20]}})),
        ids(&["1", "2"])
    );
    assert_eq!(
        ix.ids(json!({"terms": {"title": ["fox", "Quick"]}})),
        ids(&["1", "4"])
    );
    assert_eq!(ix.ids(json!({"terms": {"tag": []}})), ids(&[]));
    // Constant score.
    let s = ix.scores(json!({"terms": {"tag": ["pet"], "boost": 3}}));
    assert!(s.iter().all(|(_, sc)| (*sc - 3.0).abs() < 1e-6), "{s:?}");

    let mut small = fixture();
    small.max_terms_count = 2;
    let e = small.err(json!({"terms": {"tag": ["a", "b", "c"]}}));
    assert_eq!(e.kind, "illegal_argument_exception");
    assert_eq!(
        e.reason,
        "The number of terms [3] used in the Terms Query request has exceeded the allowed maximum of [2]. \
         This maximum can be set by changing the [index.max_terms_count] index level setting."
    );
    let e = ix.err(json!({"terms": {"tag": {"index": "i", "id": "1", "path": "tags"}}}));
    assert_eq!(e.kind, "illegal_argument_exception");
}

#[test]
fn numeric_and_keyword_ranges() {
    let ix = fixture();
    assert_eq!(
        ix.ids(json!({"range": {"age": {"gte": 10, "lt": 20}}})),
        ids(&["2", "3"])
    );
    assert_eq!(
        ix.ids(json!({"range": {"age": {"gt": 5, "lte": 15}}})),
        ids(&["2", "3"])
    );
    assert_eq!(
        ix.ids(json!({"range": {"age": {"from": 5, "to": 10, "include_upper": false}}})),
        ids(&["1"])
    );
    assert_eq!(
        ix.ids(json!({"range": {"age": {"gt": 4.5, "lt": "10.5"}}})),
        ids(&["1", "2"])
    );
    assert_eq!(
        ix.ids(json!({"range": {"age": {}}})),
        ids(&["1", "2", "3", "4"]),
        "an open range needs a value"
    );
    assert_eq!(ix.ids(json!({"range": {"age": {"gte": 30}}})), ids(&[]));
    assert_eq!(
        ix.ids(json!({"range": {"user.age": {"gte": 30}}})),
        ids(&["1"])
    );
    assert_eq!(
        ix.ids(json!({"range": {"price": {"gte": 2.5}}})),
        ids(&["2", "3"])
    );
    assert_eq!(
        ix.ids(json!({"range": {"price": {"lte": 1.1}}})),
        ids(&["1"]),
        "bounds use the float's precision"
    );
    assert_eq!(
        ix.ids(json!({"range": {"price": {"gt": 1.1, "lt": 3}}})),
        ids(&["2"])
    );
    assert_eq!(
        ix.ids(json!({"range": {"ratio": {"gte": 0.5}}})),
        ids(&["1"])
    );
    assert_eq!(ix.ids(json!({"range": {"ratio": {"gt": 0.5}}})), ids(&[]));
    assert_eq!(
        ix.ids(json!({"range": {"tag": {"gte": "b", "lt": "q"}}})),
        ids(&["2", "3", "4"])
    );
    assert_eq!(
        ix.ids(json!({"range": {"tag": {"gt": "pet"}}})),
        ids(&["4"])
    );
    assert_eq!(
        ix.ids(json!({"range": {"ip": {"gte": "10.0.0.0", "lte": "10.255.255.255"}}})),
        ids(&["2"])
    );
    assert_eq!(
        ix.ids(json!({"range": {"active": {"gte": true}}})),
        ids(&["1", "3"])
    );
    assert_eq!(
        ix.ids(json!({"range": {"hidden_num": {"gte": 15}}})),
        ids(&["2"])
    );
    assert_eq!(
        ix.ids(json!({"range": {"_id": {"gte": "2", "lte": "3"}}})),
        ids(&["2", "3"])
    );
    let s = ix.scores(json!({"range": {"age": {"gte": 10, "boost": 2}}}));
    assert!(s.iter().all(|(_, sc)| (*sc - 2.0).abs() < 1e-6), "{s:?}");
    assert_eq!(
        ix.err(json!({"range": {"age": {"gte": "ten"}}})).kind,
        "query_shard_exception"
    );
}

#[test]
fn date_ranges() {
    let ix = fixture();
    let r = |body: Value| ix.ids(json!({"range": {"date": body}}));
    assert_eq!(
        r(json!({"gte": "2020-01-01", "lt": "2020-02-01"})),
        ids(&["1", "2"])
    );
    // gt rounds up: after the whole of 2020-01-01; lte rounds up: through its end.
    assert_eq!(r(json!({"gt": "2020-01-01"})), ids(&["2", "3", "4"]));
    assert_eq!(r(json!({"lte": "2020-01-01"})), ids(&["1"]));
    assert_eq!(
        r(json!({"gte": "2020-01-02||-1d/d", "lte": "2020-01-01||/d"})),
        ids(&["1"])
    );
    assert_eq!(
        r(json!({"gt": "2020-01-01T10:00:00Z||/M"})),
        ids(&["3", "4"])
    );
    // time_zone applies to dates without an offset.
    assert_eq!(
        r(json!({"gte": "2020-01-01T11:00:00", "time_zone": "+02:00", "lt": "2020-01-02"})),
        ids(&["1"])
    );
    assert_eq!(
        r(json!({"gte": "2020-01-01T11:00:00", "lt": "2020-01-02"})),
        ids(&[])
    );
    // format overrides the field's.
    assert_eq!(
        r(json!({"gte": "01/2020", "lt": "02/2020", "format": "MM/yyyy"})),
        ids(&["1", "2"])
    );
    assert_eq!(r(json!({"gte": 1577923200000i64})), ids(&["2", "3", "4"]));
    // now = 2020-06-01.
    assert_eq!(
        r(json!({"gte": "now-1y", "lt": "now/d"})),
        ids(&["1", "2", "3"])
    );
    assert_eq!(r(json!({"gt": "now"})), ids(&["4"]));
    assert_eq!(
        ix.ids(json!({"range": {"day": {"gte": "2020-01-10"}}})),
        ids(&["2"])
    );
    assert_eq!(
        ix.err(json!({"range": {"date": {"gte": "garbage"}}})).kind,
        "parse_exception"
    );
    assert!(uses_now(
        &parse_query(&json!({"bool": {"filter": {"range": {"date": {"gte": "now-1d"}}}}})).unwrap()
    ));
    assert!(!uses_now(
        &parse_query(&json!({"range": {"date": {"gte": "2020-01-01"}}})).unwrap()
    ));
}

#[test]
fn match_queries() {
    let ix = fixture();
    assert_eq!(
        ix.ids(json!({"match": {"title": "quick fox"}})),
        ids(&["1", "2", "4", "6"])
    );
    assert_eq!(
        ix.ids(json!({"match": {"title": {"query": "quick fox", "operator": "and"}}})),
        ids(&["1"])
    );
    assert_eq!(
        ix.ids(json!({"match": {"title": {"query": "quick fox", "minimum_should_match": "100%"}}})),
        ids(&["1"])
    );
    assert_eq!(
        ix.ids(json!({"match": {"title": {"query": "the fox garden", "minimum_should_match": 2}}})),
        ids(&["1", "4"])
    );
    assert_eq!(
        ix.ids(
            json!({"match": {"title": {"query": "the fox garden", "minimum_should_match": "-1"}}})
        ),
        ids(&["1", "4"])
    );
    assert_eq!(ix.ids(json!({"match": {"title": {"query": "the fox garden", "minimum_should_match": "3<90%"}}})), ids(&["4"]));
    assert_eq!(
        ix.ids(json!({"match": {"title": {"query": "quick fox", "minimum_should_match": 3}}})),
        ids(&[])
    );
    assert_eq!(
        ix.ids(json!({"match": {"title": "QUICK!"}})),
        ids(&["1", "2", "6"])
    );
    assert_eq!(
        ix.ids(json!({"match": {"tag": "animal"}})),
        ids(&["1", "3"]),
        "not analyzed on keyword"
    );
    assert_eq!(ix.ids(json!({"match": {"tag_lc": "PeT"}})), ids(&["2"]));
    assert_eq!(ix.ids(json!({"match": {"age": "10"}})), ids(&["2"]));
    assert_eq!(ix.ids(json!({"match": {"age": 15}})), ids(&["3"]));
    assert_eq!(ix.ids(json!({"match": {"active": true}})), ids(&["1", "3"]));
    assert_eq!(
        ix.ids(json!({"match": {"age": {"query": "abc", "lenient": true}}})),
        ids(&[])
    );
    assert_eq!(
        ix.err(json!({"match": {"age": "abc"}})).kind,
        "query_shard_exception"
    );
    assert_eq!(
        ix.ids(json!({"match": {"title": {"query": "quikc", "fuzziness": "AUTO"}}})),
        ids(&["1", "2", "6"])
    );
    assert_eq!(
        ix.ids(json!({"match": {"title": {"query": "quikc", "fuzziness": 0}}})),
        ids(&[])
    );
    assert_eq!(
        ix.ids(json!({"match": {"tag": {"query": "anmal", "fuzziness": 1}}})),
        ids(&["1", "3"])
    );
    assert_eq!(
        ix.ids(json!({"match": {"title": {"query": "the", "analyzer": "stop"}}})),
        ids(&[])
    );
    assert_eq!(
        ix.ids(json!({"match": {"title": {"query": "the", "analyzer": "stop", "zero_terms_query": "all"}}})).len(),
        6
    );
    assert_eq!(ix.ids(json!({"match": {"_id": "4"}})), ids(&["4"]));
    assert_eq!(
        ix.ids(json!({"match_bool_prefix": {"title": "fox qu"}})),
        ids(&["1", "2", "4", "6"])
    );
    assert_eq!(
        ix.ids(json!({"match_bool_prefix": {"title": {"query": "brown qu", "operator": "and"}}})),
        ids(&["1", "2"])
    );
    assert_eq!(
        ix.err(json!({"match": {"title": {"query": "x", "analyzer": "nope"}}}))
            .reason,
        "[match] analyzer [nope] not found"
    );
}

#[test]
fn cjk_match_uses_unigrams() {
    let ix = fixture();
    // The standard analyzer emits one token per Han character: 江 苏 千 米.
    assert_eq!(
        ix.ids(json!({"match": {"cjk": "江苏千米"}})),
        ids(&["1", "2"])
    );
    assert_eq!(
        ix.ids(json!({"match": {"cjk": {"query": "江苏千米", "operator": "and"}}})),
        ids(&[])
    );
    assert_eq!(
        ix.ids(json!({"match_phrase": {"cjk": "江苏"}})),
        ids(&["1"])
    );
    assert_eq!(ix.ids(json!({"match_phrase": {"cjk": "苏江"}})), ids(&[]));
    assert_eq!(
        ix.ids(json!({"query_string": {"query": "江苏千米", "default_field": "cjk"}})),
        ids(&["1", "2"])
    );
}

#[test]
fn phrase_queries() {
    let ix = fixture();
    assert_eq!(
        ix.ids(json!({"match_phrase": {"title": "quick brown"}})),
        ids(&["1", "2"])
    );
    assert_eq!(
        ix.ids(json!({"match_phrase": {"title": "brown quick"}})),
        ids(&[])
    );
    assert_eq!(
        ix.ids(json!({"match_phrase": {"title": {"query": "brown quick", "slop": 2}}})),
        ids(&["1", "2"])
    );
    assert_eq!(
        ix.ids(json!({"match_phrase": {"title": "quick fox"}})),
        ids(&[])
    );
    assert_eq!(
        ix.ids(json!({"match_phrase": {"title": {"query": "quick fox", "slop": 1}}})),
        ids(&["1"])
    );
    assert_eq!(
        ix.ids(json!({"match_phrase": {"title": "fox"}})),
        ids(&["1", "4"])
    );
    assert_eq!(
        ix.ids(json!({"match_phrase": {"title.raw": "Lazy cats sleep"}})),
        ids(&["3"])
    );
    assert_eq!(
        ix.ids(json!({"match_phrase_prefix": {"title": "quick br"}})),
        ids(&["1", "2"])
    );
    assert_eq!(
        ix.ids(json!({"match_phrase_prefix": {"title": "la"}})),
        ids(&["3"])
    );
    assert_eq!(
        ix.ids(json!({"match_phrase_prefix": {"tag": "pl"}})),
        ids(&["4"])
    );
}

#[test]
fn multi_match_queries() {
    let ix = fixture();
    let mm = |body: Value| ix.ids(json!({"multi_match": body}));
    assert_eq!(
        mm(json!({"query": "fox", "fields": ["title", "body"]})),
        ids(&["1", "4"])
    );
    assert_eq!(
        mm(json!({"query": "dog", "fields": ["title", "body"]})),
        ids(&["1", "2"])
    );
    assert_eq!(
        mm(json!({"query": "fox", "fields": ["tit*"]})),
        ids(&["1", "4"])
    );
    assert_eq!(
        mm(json!({"query": "fox"})),
        ids(&["1", "4"]),
        "all fields, lenient"
    );
    assert_eq!(
        mm(json!({"query": "10", "fields": ["age", "title"]})),
        ids(&["2"])
    );
    assert_eq!(
        mm(json!({"query": "quick brown", "type": "phrase", "fields": ["title", "body"]})),
        ids(&["1", "2"])
    );
    assert_eq!(
        mm(json!({"query": "quick br", "type": "phrase_prefix", "fields": ["title", "body"]})),
        ids(&["1", "2"])
    );
    assert_eq!(
        mm(
            json!({"query": "quick dog", "type": "most_fields", "operator": "and", "fields": ["title", "body"]})
        ),
        ids(&["2"])
    );
    assert_eq!(
        mm(
            json!({"query": "quick dog", "type": "cross_fields", "operator": "and", "fields": ["title", "body"]})
        ),
        ids(&["1", "2"])
    );
    assert_eq!(
        mm(json!({"query": "fox la", "type": "bool_prefix", "fields": ["title", "body"]})),
        ids(&["1", "3", "4"])
    );
    assert_eq!(ix.ids(json!({"combined_fields": {"query": "quick dog", "operator": "and", "fields": ["title", "body"]}})), ids(&["1", "2"]));
    assert_eq!(
        ix.err(json!({"multi_match": {"query": "abc", "fields": ["age"]}}))
            .kind,
        "query_shard_exception"
    );
    assert_eq!(
        mm(json!({"query": "abc", "fields": ["age", "title"], "lenient": true})),
        ids(&[])
    );

    // best_fields takes the best field's score (plus tie_breaker × the others).
    let title = ix.score_of(json!({"match": {"title": "fox"}}), "1");
    let comments = ix.score_of(json!({"match": {"comments.text": "fox"}}), "1");
    let best = ix.score_of(
        json!({"multi_match": {"query": "fox", "fields": ["title", "comments.text"]}}),
        "1",
    );
    assert!(
        (best - title.max(comments)).abs() < 1e-5,
        "{best} vs {title}/{comments}"
    );
    let tie = ix.score_of(json!({"multi_match": {"query": "fox", "fields": ["title", "comments.text"], "tie_breaker": 0.5}}), "1");
    assert!((tie - (title.max(comments) + 0.5 * title.min(comments))).abs() < 1e-5);
    let most = ix.score_of(json!({"multi_match": {"query": "fox", "type": "most_fields", "fields": ["title", "comments.text"]}}), "1");
    assert!((most - (title + comments)).abs() < 1e-5);
    let boosted = ix.score_of(
        json!({"multi_match": {"query": "fox", "fields": ["title^3"]}}),
        "1",
    );
    assert!((boosted - 3.0 * title).abs() < 1e-5);
}

#[test]
fn bool_queries() {
    let ix = fixture();
    let b = |body: Value| ix.ids(json!({"bool": body}));
    assert_eq!(
        b(json!({"must": {"match": {"title": "quick"}}, "filter": {"term": {"tag": "animal"}}})),
        ids(&["1"])
    );
    assert_eq!(
        b(json!({"must_not": {"term": {"tag": "animal"}}})),
        ids(&["2", "4", "5", "6"])
    );
    assert_eq!(
        b(json!({"should": [{"term": {"tag": "pet"}}, {"term": {"tag": "plant"}}]})),
        ids(&["2", "3", "4"])
    );
    assert_eq!(
        b(json!({"must": {"match": {"title": "quick"}}, "should": {"term": {"tag": "plant"}}})),
        ids(&["1", "2", "6"])
    );
    assert_eq!(
        b(
            json!({"must": {"match": {"title": "quick"}}, "should": {"term": {"tag": "pet"}}, "minimum_should_match": 1})
        ),
        ids(&["2"])
    );
    assert_eq!(
        b(json!({"filter": {"match": {"title": "quick"}}, "should": {"term": {"tag": "pet"}}})),
        ids(&["1", "2", "6"])
    );
    assert_eq!(
        b(
            json!({"should": [{"term": {"tag": "animal"}}, {"term": {"tag": "pet"}}, {"range": {"age": {"gte": 15}}}],
                 "minimum_should_match": 2})
        ),
        ids(&["3"])
    );
    assert_eq!(
        b(
            json!({"should": [{"term": {"tag": "animal"}}, {"term": {"tag": "pet"}}, {"range": {"age": {"gte": 15}}}],
                 "minimum_should_match": "-50%"})
        ),
        ids(&["3"]),
        "-50% of 3 truncates to -1: two clauses required"
    );
    assert_eq!(
        b(
            json!({"should": [{"term": {"tag": "animal"}}, {"term": {"tag": "pet"}}, {"range": {"age": {"gte": 15}}}],
                 "minimum_should_match": "-67%"})
        ),
        ids(&["1", "2", "3", "4"])
    );
    assert_eq!(
        b(json!({"must": {"match_all": {}}, "minimum_should_match": 1})),
        ids(&[])
    );
    assert_eq!(b(json!({})).len(), 6);
    assert_eq!(b(json!({"must": [], "filter": []})).len(), 6);
    assert_eq!(
        b(
            json!({"must": [{"match": {"title": "quick"}}, {"range": {"age": {"gte": 6}}}], "must_not": [{"term": {"_id": "6"}}]})
        ),
        ids(&["2"])
    );
    assert_eq!(
        b(
            json!({"filter": [{"bool": {"should": [{"term": {"tag": "pet"}}, {"term": {"tag": "plant"}}]}}]})
        ),
        ids(&["2", "3", "4"])
    );

    // Filter and must_not do not score; a pure must_not bool scores 0; an empty bool 1.
    for (_, s) in ix.scores(json!({"bool": {"filter": {"term": {"tag": "pet"}}}})) {
        assert_eq!(s, 0.0);
    }
    for (_, s) in ix.scores(json!({"bool": {"must_not": {"term": {"tag": "pet"}}}})) {
        assert_eq!(s, 0.0);
    }
    for (_, s) in ix.scores(json!({"bool": {}})) {
        assert_eq!(s, 1.0);
    }
    let must = ix.score_of(json!({"match": {"title": "quick"}}), "2");
    let with_filter = ix.score_of(
        json!({"bool": {"must": {"match": {"title": "quick"}}, "filter": {"term": {"tag": "pet"}}, "boost": 2}}),
        "2",
    );
    assert!(
        (with_filter - 2.0 * must).abs() < 1e-5,
        "{with_filter} vs {must}"
    );
    let with_should = ix.score_of(
        json!({"bool": {"must": {"match": {"title": "quick"}}, "should": {"constant_score": {"filter": {"term": {"tag": "pet"}}, "boost": 3}}}}),
        "2",
    );
    assert!((with_should - (must + 3.0)).abs() < 1e-5);
}

#[test]
fn ids_exists_and_multi_term_queries() {
    let ix = fixture();
    assert_eq!(
        ix.ids(json!({"ids": {"values": ["1", "4", "nope"]}})),
        ids(&["1", "4"])
    );
    assert_eq!(ix.ids(json!({"ids": {"values": []}})), ids(&[]));
    assert_eq!(
        ix.ids(json!({"exists": {"field": "title"}})),
        ids(&["1", "2", "3", "4", "6"])
    );
    assert_eq!(
        ix.ids(json!({"exists": {"field": "ip"}})),
        ids(&["1", "2", "3"])
    );
    assert_eq!(
        ix.ids(json!({"exists": {"field": "user"}})),
        ids(&["1", "2"])
    );
    assert_eq!(
        ix.ids(json!({"exists": {"field": "user.*"}})),
        ids(&["1", "2"])
    );
    assert_eq!(
        ix.ids(json!({"exists": {"field": "comments"}})),
        ids(&["1"])
    );
    assert_eq!(
        ix.ids(json!({"exists": {"field": "title.raw"}})),
        ids(&["1", "2", "3", "4", "6"])
    );
    assert_eq!(ix.ids(json!({"exists": {"field": "nope"}})), ids(&[]));
    assert_eq!(ix.ids(json!({"exists": {"field": "_id"}})).len(), 6);
    assert_eq!(ix.ids(json!({"exists": {"field": "_index"}})).len(), 6);
    assert_eq!(ix.ids(json!({"exists": {"field": "_seq_no"}})).len(), 6);
    assert_eq!(ix.ids(json!({"exists": {"field": "_routing"}})), ids(&[]));
    assert_eq!(
        ix.err(json!({"exists": {"field": "_source"}})).kind,
        "query_shard_exception"
    );
    assert_eq!(
        ix.ids(json!({"bool": {"must_not": {"exists": {"field": "age"}}}})),
        ids(&["5", "6"])
    );

    assert_eq!(
        ix.ids(json!({"prefix": {"title": "qu"}})),
        ids(&["1", "2", "6"])
    );
    assert_eq!(ix.ids(json!({"prefix": {"tag_lc": "ANI"}})), ids(&["1"]));
    assert_eq!(
        ix.ids(json!({"prefix": {"tag": {"value": "ANI", "case_insensitive": true}}})),
        ids(&["1", "3", "6"])
    );
    assert_eq!(ix.ids(json!({"prefix": {"hidden_kw": "sec"}})), ids(&["1"]));
    assert_eq!(ix.ids(json!({"prefix": {"_id": "4"}})), ids(&["4"]));
    let e = ix.err(json!({"prefix": {"age": "1"}}));
    assert_eq!(e.kind, "query_shard_exception");
    assert!(e.reason.contains("Can only use prefix queries on keyword, text and wildcard fields - not on [age] which is of type [integer]"), "{}", e.reason);

    assert_eq!(
        ix.ids(json!({"wildcard": {"title": "q*k"}})),
        ids(&["1", "2", "6"])
    );
    assert_eq!(
        ix.ids(json!({"wildcard": {"tag": "p?t"}})),
        ids(&["2", "3"])
    );
    assert_eq!(
        ix.ids(json!({"wildcard": {"tag": "*an*"}})),
        ids(&["1", "3", "4"])
    );
    assert_eq!(
        ix.ids(json!({"wildcard": {"tag": "pet"}})),
        ids(&["2", "3"])
    );
    assert_eq!(
        ix.ids(json!({"wildcard": {"tag": {"value": "AN*", "case_insensitive": true}}})),
        ids(&["1", "3", "6"])
    );
    assert_eq!(
        ix.ids(json!({"wildcard": {"title.raw": "The quick*"}})),
        ids(&["1"])
    );

    assert_eq!(
        ix.ids(json!({"regexp": {"tag": "p.*"}})),
        ids(&["2", "3", "4"])
    );
    assert_eq!(
        ix.ids(json!({"regexp": {"tag": "an[a-z]+al"}})),
        ids(&["1", "3"])
    );
    assert_eq!(
        ix.ids(json!({"regexp": {"tag": {"value": "ANIMAL", "case_insensitive": true}}})),
        ids(&["1", "3", "6"])
    );
    assert_eq!(
        ix.ids(json!({"regexp": {"title": "qu.c?k"}})),
        ids(&["1", "2", "6"])
    );
    assert_eq!(
        ix.err(json!({"regexp": {"age": "1.*"}})).kind,
        "query_shard_exception"
    );
    let long = "a".repeat(1110);
    let e = ix.err(json!({"regexp": {"nope": long}}));
    assert_eq!(
        e.reason,
        "The length of regex [1110] used in the Regexp Query request has exceeded the allowed maximum of [1000]. \
         This maximum can be set by changing the [index.max_regex_length] index level setting."
    );
    let e = ix.err(json!({"query_string": {"query": format!("/{long}/")}}));
    assert!(
        e.reason.starts_with("The length of regex [1110]"),
        "{}",
        e.reason
    );

    assert_eq!(ix.ids(json!({"fuzzy": {"tag": "animl"}})), ids(&["1", "3"]));
    assert_eq!(
        ix.ids(json!({"fuzzy": {"title": {"value": "quack", "fuzziness": 1}}})),
        ids(&["1", "2", "6"])
    );
    assert_eq!(
        ix.ids(json!({"fuzzy": {"title": {"value": "qk", "fuzziness": "AUTO"}}})),
        ids(&[])
    );
    // Exact matches outrank fuzzy ones.
    let s = ix.scores(json!({"fuzzy": {"tag": "pet"}}));
    assert_eq!(s.len(), 2);
    let s = ix.scores(json!({"match": {"title": {"query": "fix", "fuzziness": 1}}}));
    assert_eq!(
        s.iter().map(|(i, _)| i.as_str()).collect::<Vec<_>>().len(),
        2
    );
}

#[test]
fn compound_queries() {
    let ix = fixture();
    let s =
        ix.scores(json!({"constant_score": {"filter": {"match": {"title": "quick"}}, "boost": 2}}));
    assert_eq!(s.len(), 3);
    assert!(s.iter().all(|(_, sc)| (*sc - 2.0).abs() < 1e-6));
    assert_eq!(
        ix.ids(
            json!({"dis_max": {"queries": [{"term": {"tag": "pet"}}, {"match": {"title": "fox"}}]}})
        ),
        ids(&["1", "2", "3", "4"])
    );
    let plain = ix.scores(json!({"match": {"title": "quick"}}));
    let boosted = ix.scores(
        json!({"boosting": {"positive": {"match": {"title": "quick"}},
        "negative": {"term": {"tag": "pet"}}, "negative_boost": 0.5}}),
    );
    assert_eq!(boosted.len(), plain.len());
    for (id, s) in &plain {
        let b = boosted.iter().find(|(i, _)| i == id).unwrap().1;
        let expected = if id == "2" { s * 0.5 } else { *s };
        assert!((b - expected).abs() < 1e-5, "{id}: {b} vs {expected}");
    }
    assert_eq!(
        ix.ids(
            json!({"nested": {"path": "comments", "query": {"match": {"comments.text": "fox"}}}})
        ),
        ids(&["1"])
    );
    assert_eq!(
        ix.err(json!({"nested": {"path": "user", "query": {"match_all": {}}}}))
            .kind,
        "query_shard_exception"
    );
    assert_eq!(
        ix.err(json!({"nested": {"path": "nope", "query": {"match_all": {}}}}))
            .kind,
        "query_shard_exception"
    );
    assert_eq!(
        ix.ids(
            json!({"nested": {"path": "nope", "query": {"match_all": {}}, "ignore_unmapped": true}})
        ),
        ids(&[])
    );
}

#[test]
fn query_strings() {
    let ix = fixture();
    let qs = |q: &str| ix.ids(json!({"query_string": {"query": q}}));
    let qs_title =
        |q: &str| ix.ids(json!({"query_string": {"query": q, "default_field": "title"}}));
    assert_eq!(qs("title:quick AND tag:pet"), ids(&["2"]));
    assert_eq!(qs("title:(quick fox)"), ids(&["1", "2", "4", "6"]));
    assert_eq!(qs("age:>=10"), ids(&["2", "3", "4"]));
    assert_eq!(qs("age:[5 TO 10]"), ids(&["1", "2"]));
    assert_eq!(qs("age:{5 TO 15]"), ids(&["2", "3"]));
    assert_eq!(qs("date:[2020-01-01 TO 2020-01-31]"), ids(&["1", "2"]));
    assert_eq!(qs("_exists_:ip"), ids(&["1", "2", "3"]));
    assert_eq!(qs("tit*:fox"), ids(&["1", "4"]));
    assert_eq!(qs("fox"), ids(&["1", "4"]), "all fields by default");
    assert_eq!(qs("*"), ids(&["1", "2", "3", "4", "5", "6"]));
    assert_eq!(qs("*:*"), ids(&["1", "2", "3", "4", "5", "6"]));
    assert_eq!(qs("ip:*"), ids(&["1", "2", "3"]));
    assert_eq!(qs_title("quick -fox"), ids(&["2", "6"]));
    assert_eq!(qs_title("NOT fox"), ids(&["2", "3", "5", "6"]));
    assert_eq!(qs_title("+quick +brown"), ids(&["1", "2"]));
    assert_eq!(qs_title("qu*"), ids(&["1", "2", "6"]));
    assert_eq!(qs_title("Qu?ck"), ids(&["1", "2", "6"]));
    assert_eq!(qs_title("\"quick brown\""), ids(&["1", "2"]));
    assert_eq!(qs_title("\"brown quick\"~2"), ids(&["1", "2"]));
    assert_eq!(qs_title("quikc~"), ids(&["1", "2", "6"]));
    assert_eq!(qs_title("/qu.*k/"), ids(&["1", "2", "6"]));
    assert_eq!(qs_title("(quick AND dogs) OR garden"), ids(&["2", "4"]));
    assert_eq!(qs_title(""), ids(&[]));
    assert_eq!(
        ix.ids(json!({"query_string": {"query": "quick fox", "default_field": "title", "default_operator": "AND"}})),
        ids(&["1"])
    );
    assert_eq!(
        ix.ids(json!({"query_string": {"query": "quick garden fox", "default_field": "title", "minimum_should_match": 2}})),
        ids(&["1", "4"])
    );
    assert_eq!(
        ix.ids(json!({"query_string": {"query": "fox dog", "fields": ["title", "body"]}})),
        ids(&["1", "2", "4"])
    );
    assert_eq!(
        ix.ids(json!({"query_string": {"query": "age:abc", "lenient": true}})),
        ids(&[])
    );
    assert_eq!(
        ix.err(json!({"query_string": {"query": "age:abc", "lenient": false}}))
            .kind,
        "query_shard_exception"
    );
    assert_eq!(
        ix.err(json!({"query_string": {"query": "title:(quick"}}))
            .kind,
        "query_shard_exception"
    );
    let boosted = ix.score_of(json!({"query_string": {"query": "title:fox^2"}}), "1");
    let plain = ix.score_of(json!({"match": {"title": "fox"}}), "1");
    assert!((boosted - 2.0 * plain).abs() < 1e-5);
}

#[test]
fn simple_query_strings() {
    let ix = fixture();
    let sqs = |q: &str| ix.ids(json!({"simple_query_string": {"query": q, "fields": ["title"]}}));
    assert_eq!(sqs("quick +fox"), ids(&["1"]));
    assert_eq!(sqs("-fox"), ids(&["2", "3", "5", "6"]));
    assert_eq!(sqs("qu*"), ids(&["1", "2", "6"]));
    assert_eq!(sqs("\"quick brown\""), ids(&["1", "2"]));
    assert_eq!(sqs("quikc~1"), ids(&["1", "2", "6"]));
    assert_eq!(sqs("(lazy | garden) + cats"), ids(&["3"]));
    assert_eq!(
        sqs("quick (fox"),
        ids(&["1", "2", "4", "6"]),
        "unbalanced syntax is ignored"
    );
    assert_eq!(
        ix.ids(json!({"simple_query_string": {"query": "fox | dog", "fields": ["title", "body"]}})),
        ids(&["1", "2", "4"])
    );
    assert_eq!(
        ix.ids(json!({"simple_query_string": {"query": "fox"}})),
        ids(&["1", "4"])
    );
    assert_eq!(
        ix.ids(json!({"simple_query_string": {"query": "quick fox", "fields": ["title"], "default_operator": "and"}})),
        ids(&["1"])
    );
}

#[test]
fn bm25_scores_match_elasticsearch() {
    // Every document has the field, so tantivy's statistics equal Lucene's.
    let ix = TestIndex::new(
        json!({"properties": {"t": {"type": "text"}}}),
        &[
            ("1", json!({"t": "the quick brown fox"})),
            ("2", json!({"t": "quick brown dogs"})),
            ("3", json!({"t": "lazy cats sleep"})),
            ("4", json!({"t": "a fox in the garden"})),
            ("5", json!({"t": "quick quick quick"})),
        ],
    );
    // ES (LegacyBM25Similarity, the default): idf = ln(1 + (N - n + 0.5) / (n + 0.5)),
    // score = idf · tf · (k1 + 1) / (tf + k1 · (1 - b + b · dl / avgdl)).
    let es = |n: f32, tf: f32, dl: f32| {
        let idf = (1.0 + (5.0 - n + 0.5) / (n + 0.5)).ln();
        let avgdl = 18.0 / 5.0;
        idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))
    };
    let s1 = ix.score_of(json!({"match": {"t": "fox"}}), "1");
    assert!(
        (s1 - es(2.0, 1.0, 4.0)).abs() < 1e-3,
        "{s1} vs {}",
        es(2.0, 1.0, 4.0)
    );
    let s4 = ix.score_of(json!({"match": {"t": "fox"}}), "4");
    assert!(
        (s4 - es(2.0, 1.0, 5.0)).abs() < 1e-3,
        "{s4} vs {}",
        es(2.0, 1.0, 5.0)
    );
    let s5 = ix.score_of(json!({"term": {"t": "quick"}}), "5");
    assert!(
        (s5 - es(3.0, 3.0, 3.0)).abs() < 1e-3,
        "{s5} vs {}",
        es(3.0, 3.0, 3.0)
    );
    let both = ix.score_of(json!({"match": {"t": "quick fox"}}), "1");
    assert!((both - (es(2.0, 1.0, 4.0) + es(3.0, 1.0, 4.0))).abs() < 1e-3);
}

#[test]
fn match_all_detection() {
    let p = |v: Value| parse_query(&v).unwrap();
    assert!(is_match_all(&p(json!({"match_all": {}}))));
    assert!(is_match_all(&p(json!({"bool": {}}))));
    assert!(is_match_all(&p(
        json!({"bool": {"filter": {"match_all": {}}}})
    )));
    assert!(is_match_all(&p(
        json!({"constant_score": {"filter": {"match_all": {}}}})
    )));
    assert!(is_match_all(&p(json!({"query_string": {"query": "*:*"}}))));
    assert!(!is_match_all(&p(
        json!({"bool": {"must_not": {"match_all": {}}}})
    )));
    assert!(!is_match_all(&p(
        json!({"bool": {"should": {"term": {"a": "b"}}}})
    )));
    assert!(!is_match_all(&p(json!({"term": {"a": "b"}}))));
}

#[test]
fn bm25_uses_the_fields_document_count() {
    // Document 5 has no title: Lucene's docCount for `title` is 5, not 6.
    let ix = fixture();
    // Title lengths: 4, 3, 3, 5, (none), 3 → avgdl 18 / 5.
    let es = |n: f32, tf: f32, dl: f32| {
        let idf = (1.0 + (5.0 - n + 0.5) / (n + 0.5)).ln();
        idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / (18.0 / 5.0)))
    };
    let s = ix.score_of(json!({"match": {"title": "fox"}}), "1");
    assert!(
        (s - es(2.0, 1.0, 4.0)).abs() < 1e-3,
        "{s} vs {}",
        es(2.0, 1.0, 4.0)
    );
    let s = ix.score_of(json!({"match": {"title": "quick"}}), "6");
    assert!(
        (s - es(3.0, 3.0, 3.0)).abs() < 1e-3,
        "{s} vs {}",
        es(3.0, 3.0, 3.0)
    );
    // Keyword fields (no norms): tag has values in 5 documents, 6 values in all.
    let kw = ix.score_of(json!({"term": {"tag": "plant"}}), "4");
    let idf = (1.0f32 + (5.0 - 1.0 + 0.5) / 1.5).ln();
    let expected = idf * 2.2 / (1.0 + 1.2 * (0.25 + 0.75 / (6.0 / 5.0)));
    assert!((kw - expected).abs() < 1e-3, "{kw} vs {expected}");
}

#[test]
fn bm25_document_count_leaves_out_nested_documents() {
    // Seven Lucene documents: three roots, two of them with `tag`, and four nested objects,
    // all with `c.x`. Lucene's docCount for `tag` is 2, for `c.x` 4.
    let ix = TestIndex::new(
        json!({"properties": {
            "tag": {"type": "keyword"},
            "c": {"type": "nested", "properties": {"x": {"type": "keyword"}}}
        }}),
        &[
            ("1", json!({"tag": "a", "c": [{"x": "a"}, {"x": "b"}]})),
            ("2", json!({"tag": "b", "c": [{"x": "a"}]})),
            ("3", json!({"c": [{"x": "c"}]})),
        ],
    );
    // One value per document: avgdl = dl = 1, so the score is the IDF.
    let idf = |doc_count: f32, df: f32| (1.0 + (doc_count - df + 0.5) / (df + 0.5)).ln();
    let s = ix.score_of(json!({"term": {"tag": "a"}}), "1");
    assert!((s - idf(2.0, 1.0)).abs() < 1e-6, "{s}");
    let s = ix.score_of(
        json!({"nested": {"path": "c", "query": {"term": {"c.x": "a"}}, "score_mode": "max"}}),
        "2",
    );
    assert!((s - idf(4.0, 2.0)).abs() < 1e-6, "{s}");
    // A scoring wrapper in filter context (min_score) scores with the same statistics.
    let hits = ix.ids(json!({"bool": {"filter": {"function_score": {
        "query": {"term": {"tag": "a"}}, "min_score": idf(2.0, 1.0) - 1e-4
    }}}}));
    assert_eq!(hits, vec!["1".to_string()]);
    let hits = ix.ids(json!({"bool": {"filter": {"function_score": {
        "query": {"term": {"tag": "a"}}, "min_score": idf(2.0, 1.0) + 1e-4
    }}}}));
    assert!(hits.is_empty());
}

#[test]
fn function_score_queries() {
    let ix = fixture();
    let scores = |q: Value| -> Vec<(String, f32)> {
        let mut s = ix.scores(json!({ "function_score": q }));
        s.sort_by(|a, b| a.0.cmp(&b.0));
        s
    };
    let close = |a: f32, b: f32| (a - b).abs() < 1e-4;

    // A filtered weight; documents no function applies to keep factor 1.
    let s = scores(
        json!({"functions": [{"filter": {"term": {"tag": "pet"}}, "weight": 3}], "boost_mode": "replace"}),
    );
    assert_eq!(s.len(), 6);
    for (id, sc) in &s {
        assert!(
            close(*sc, if id == "2" || id == "3" { 3.0 } else { 1.0 }),
            "{id}: {sc}"
        );
    }
    // field_value_factor, multiplied into the query score by default.
    let s = scores(
        json!({"query": {"constant_score": {"filter": {"exists": {"field": "age"}}, "boost": 2}},
        "field_value_factor": {"field": "age", "factor": 0.5}}),
    );
    let by_id: std::collections::HashMap<_, _> = s.into_iter().collect();
    assert!(
        close(by_id["1"], 2.0 * 2.5) && close(by_id["4"], 2.0 * 10.0),
        "{by_id:?}"
    );
    let s = scores(
        json!({"field_value_factor": {"field": "age", "modifier": "ln1p", "missing": 1}, "boost_mode": "replace"}),
    );
    let by_id: std::collections::HashMap<_, _> = s.into_iter().collect();
    assert!(
        close(by_id["2"], 11f32.ln()) && close(by_id["5"], 2f32.ln()),
        "{by_id:?}"
    );
    // Decay: the score is `decay` at `scale` from the origin (+ offset).
    for shape in ["gauss", "exp", "linear"] {
        let s = scores(
            json!({"functions": [{ shape: {"age": {"origin": 10, "scale": 5, "decay": 0.5}}}], "boost_mode": "replace"}),
        );
        let by_id: std::collections::HashMap<_, _> = s.into_iter().collect();
        assert!(
            close(by_id["2"], 1.0) && close(by_id["1"], 0.5) && close(by_id["3"], 0.5),
            "{shape}: {by_id:?}"
        );
        assert!(close(by_id["5"], 1.0), "missing values do not decay");
    }
    let s = scores(
        json!({"gauss": {"date": {"origin": "2020-01-01T10:00:00Z", "scale": "14h", "decay": 0.5}}, "boost_mode": "replace"}),
    );
    let by_id: std::collections::HashMap<_, _> = s.into_iter().collect();
    assert!(
        close(by_id["1"], 1.0) && close(by_id["2"], 0.5),
        "{by_id:?}"
    );
    // score_mode, max_boost, min_score.
    let funcs = json!([{"filter": {"term": {"tag": "pet"}}, "weight": 2}, {"filter": {"term": {"tag": "animal"}}, "weight": 5}]);
    let s = scores(json!({"functions": funcs, "score_mode": "sum", "boost_mode": "replace"}));
    assert!(close(s.iter().find(|(i, _)| i == "3").unwrap().1, 7.0));
    let s = scores(
        json!({"functions": funcs, "score_mode": "max", "boost_mode": "replace", "max_boost": 4}),
    );
    assert!(close(s.iter().find(|(i, _)| i == "3").unwrap().1, 4.0));
    let s = scores(json!({"functions": funcs, "score_mode": "avg", "boost_mode": "replace"}));
    assert!(
        close(s.iter().find(|(i, _)| i == "3").unwrap().1, 7.0 / 7.0 * 1.0),
        "{s:?}"
    );
    let s = scores(json!({"functions": funcs, "score_mode": "first", "boost_mode": "sum"}));
    assert!(close(
        s.iter().find(|(i, _)| i == "3").unwrap().1,
        1.0 + 2.0
    ));
    let min = json!({"field_value_factor": {"field": "age", "factor": 2}, "boost_mode": "replace", "min_score": 15});
    assert_eq!(
        ix.ids(json!({"function_score": min.clone()})),
        ids(&["2", "3", "4"])
    );
    assert_eq!(
        ix.ids(json!({"bool": {"filter": {"function_score": min}}})),
        ids(&["2", "3", "4"])
    );
    // random_score with a seed is repeatable and in [0, 1).
    let a = scores(json!({"random_score": {"seed": 42}, "boost_mode": "replace"}));
    let b = scores(json!({"random_score": {"seed": 42}, "boost_mode": "replace"}));
    assert_eq!(a, b);
    assert!(a.iter().all(|(_, s)| (0.0..1.0).contains(s)));
    // The query's own boost applies on top.
    let s = scores(json!({"query": {"term": {"_id": "1"}}, "weight": 2, "boost": 3}));
    assert!(close(s[0].1, 6.0), "{s:?}");

    assert_eq!(
        ix.err(json!({"function_score": {"field_value_factor": {"field": "nope"}}}))
            .kind,
        "query_shard_exception"
    );
    assert_eq!(
        ix.err(json!({"function_score": {"field_value_factor": {"field": "tag"}}}))
            .kind,
        "query_shard_exception"
    );
    assert!(uses_now(
        &parse_query(&json!({"function_score": {"random_score": {}}})).unwrap()
    ));
}

#[test]
fn filter_context_matches_the_same_documents() {
    let ix = fixture();
    let queries = [
        json!({"bool": {"should": [{"match": {"title": "quick fox"}}, {"range": {"age": {"gte": 15}}}],
                        "must_not": {"term": {"_id": "4"}}}}),
        json!({"multi_match": {"query": "fox dog", "fields": ["title", "body"], "type": "cross_fields"}}),
        json!({"query_string": {"query": "title:qu* OR tag:plant OR nomatch*:x"}}),
        json!({"boosting": {"positive": {"match": {"title": "quick"}}, "negative": {"term": {"tag": "pet"}}, "negative_boost": 0.1}}),
        json!({"dis_max": {"queries": [{"term": {"tag": "pet"}}, {"fuzzy": {"title": "fix"}}]}}),
    ];
    let searcher = ix.reader.searcher();
    for q in queries {
        let parsed = parse_query(&q).unwrap();
        let filter = super::build_filter(&parsed, &ix.ctx()).unwrap();
        let n = FieldStatistics::new(&searcher)
            .search(&searcher, &*filter, &tantivy::collector::Count)
            .unwrap();
        assert_eq!(n, ix.ids(q.clone()).len(), "{q}");
    }
}

#[test]
fn regex_length_and_clause_limits() {
    let mut ix = TestIndex::new(
        json!({"properties": {"title": {"type": "keyword"}}}),
        &[("1", json!({"title": "a"}))],
    );
    ix.max_regex_length = 3;
    assert_eq!(ix.ids(json!({"regexp": {"title": "a.?"}})), ids(&["1"]));
    let e = ix.err(json!({"regexp": {"title": "a.??"}}));
    assert_eq!(
        e.reason,
        "The length of regex [4] used in the Regexp Query request has exceeded the allowed maximum of [3]. \
         This maximum can be set by changing the [index.max_regex_length] index level setting."
    );
    ix.max_clause_count = 3;
    let term = json!({"term": {"title": "a"}});
    let flat = |n: usize| json!({"bool": {"should": vec![term.clone(); n]}});
    assert_eq!(ix.ids(flat(3)), ids(&["1"]));
    let e = ix.err(flat(4));
    assert_eq!(
        (e.kind.as_str(), e.reason.as_str()),
        (
            "query_shard_exception",
            "failed to create query: maxClauseCount is set to 3"
        )
    );
    assert_eq!(e.caused_by.unwrap().kind, "too_many_clauses");
    // Nested: Lucene fails at a leaf once more than maxClauseCount leaves came before it,
    // so maxClauseCount + 1 leaves still pass.
    let nested = |n: usize| json!({"bool": {"should": (0..n).map(|_| json!({"bool": {"must": [term.clone()]}})).collect::<Vec<_>>()}});
    let two_levels = json!({"bool": {"must": [flat(2), flat(2)]}});
    assert_eq!(ix.ids(two_levels), ids(&["1"]));
    let e = ix.err(json!({"bool": {"must": [flat(3), flat(2)]}}));
    assert_eq!(
        (e.kind.as_str(), e.reason.as_str()),
        (
            "too_many_nested_clauses",
            "Query contains too many nested clauses; maxClauseCount is set to 3"
        )
    );
    assert_eq!(ix.ids(nested(3)), ids(&["1"]));
}

/// Block join: a `nested` query matches per object, never across two objects of one
/// document; fields of nested objects are not on the root; score modes; nested in nested.
#[test]
fn nested_queries_join_per_object() {
    let ix = TestIndex::new(
        json!({"properties": {
            "name": {"type": "keyword"},
            "users": {"type": "nested", "properties": {
                "first": {"type": "keyword"}, "last": {"type": "keyword"}, "age": {"type": "integer"},
                "pets": {"type": "nested", "properties": {"kind": {"type": "keyword"}}}
            }}
        }}),
        &[
            (
                "1",
                json!({"name": "a", "users": [{"first": "john", "last": "smith", "age": 30},
                                               {"first": "alice", "last": "white", "age": 40,
                                                "pets": [{"kind": "cat"}, {"kind": "dog"}]}]}),
            ),
            (
                "2",
                json!({"name": "b", "users": [{"first": "john", "last": "white", "age": 20,
                                               "pets": {"kind": "cat"}}]}),
            ),
            ("3", json!({"name": "c"})),
            (
                "4",
                json!({"name": "d", "users": [{"first": "alice", "last": "smith",
                                               "pets": [{"kind": "dog"}]}]}),
            ),
        ],
    );
    let both = |first: &str, last: &str| {
        json!({"nested": {"path": "users", "query": {"bool": {"must": [
            {"term": {"users.first": first}}, {"term": {"users.last": last}}]}}}})
    };
    assert_eq!(ix.ids(both("john", "smith")), ids(&["1"]));
    assert_eq!(ix.ids(both("john", "white")), ids(&["2"]));
    // john and white are both in document 1, but in two different objects.
    assert_eq!(ix.ids(both("alice", "smith")), ids(&["4"]));
    // The nested fields are not on the root document; the root's own fields are.
    assert_eq!(ix.ids(json!({"term": {"users.first": "john"}})), ids(&[]));
    assert_eq!(ix.ids(json!({"match_all": {}})), ids(&["1", "2", "3", "4"]));
    assert_eq!(
        ix.ids(json!({"bool": {"must_not": {"term": {"name": "a"}}}})),
        ids(&["2", "3", "4"])
    );
    // Nested in nested: pets of a user named alice.
    let pets = |kind: &str| {
        json!({"nested": {"path": "users", "query": {"bool": {"must": [
            {"term": {"users.first": "alice"}},
            {"nested": {"path": "users.pets", "query": {"term": {"users.pets.kind": kind}}}}]}}}})
    };
    assert_eq!(ix.ids(pets("cat")), ids(&["1"]));
    assert_eq!(ix.ids(pets("dog")), ids(&["1", "4"]));
    // A deeper path straight from the root joins to the root.
    assert_eq!(
        ix.ids(
            json!({"nested": {"path": "users.pets", "query": {"term": {"users.pets.kind": "cat"}}}})
        ),
        ids(&["1", "2"])
    );
    // Score modes over the matching objects' constant scores (2 objects in doc 1).
    let sm = |mode: &str| {
        ix.score_of(
            json!({"nested": {"path": "users", "score_mode": mode, "query": {"function_score": {
                "query": {"match_all": {}}, "functions": [{"field_value_factor": {"field": "users.age", "missing": 1}}],
                "boost_mode": "replace"}}}}),
            "1",
        )
    };
    assert!((sm("avg") - 35.0).abs() < 1e-4, "{}", sm("avg"));
    assert!((sm("sum") - 70.0).abs() < 1e-4);
    assert!((sm("max") - 40.0).abs() < 1e-4);
    assert!((sm("min") - 30.0).abs() < 1e-4);
    assert_eq!(sm("none"), 0.0);
}

#[test]
fn profiled_plans_match_the_same_documents_and_name_lucene_classes() {
    let ix = fixture();
    let q = json!({"bool": {
        "must": [{"match": {"title": "quick"}}],
        "filter": [{"range": {"age": {"gte": 3}}}],
        "must_not": [{"term": {"tag": "plant"}}],
        "should": [{"constant_score": {"filter": {"terms": {"tag": ["pet", "animal"]}}}}]}});
    let parsed = parse_query(&q).unwrap();
    let ctx = ix.ctx();
    let (profiled, root) = super::build_query_profiled(&parsed, &ctx).unwrap();
    let searcher = ix.reader.searcher();
    let collector = TopDocs::with_limit(100).order_by_score();
    let plain = build_query(&parsed, &ctx).unwrap();
    let ids = |q: &dyn tantivy::query::Query| {
        let mut v: Vec<_> = FieldStatistics::new(&searcher)
            .search(&searcher, q, &collector)
            .unwrap()
            .into_iter()
            .map(|(_, a)| (a.segment_ord, a.doc_id))
            .collect();
        v.sort();
        v
    };
    assert_eq!(ids(&*profiled), ids(&*plain));
    assert_eq!(root.type_name, "BooleanQuery");
    let kinds: Vec<&str> = root.children.iter().map(|c| c.type_name.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "TermQuery",
            "IndexOrDocValuesQuery",
            "ConstantScoreQuery",
            "TermQuery"
        ]
    );
    assert_eq!(root.children[0].description, "title:quick");
    // an integer field: Lucene's IntPoint bounds
    assert_eq!(root.children[1].description, "age:[3 TO 2147483647]");
    assert_eq!(root.children[2].children[0].type_name, "TermInSetQuery");
    assert!(root.description.starts_with("+title:quick #age:[3 TO "));
    assert!(root.description.ends_with("-tag:plant"));
    assert_eq!(root.timing("create_weight").1, 1);
    assert!(root.timing("build_scorer").1 >= 1);
}

#[test]
fn search_as_you_type_fields_and_queries() {
    let ix = TestIndex::new(
        json!({"properties": {"t": {"type": "search_as_you_type"}}}),
        &[
            ("1", json!({"t": "quick brown fox jumps"})),
            ("2", json!({"t": "brown quick fox"})),
            ("3", json!({"t": "Quicksilver"})),
            ("4", json!({"t": "lazy dog"})),
        ],
    );
    for sub in ["t._2gram", "t._3gram", "t._index_prefix"] {
        assert!(ix.mapping.field(sub).is_some(), "{sub}");
    }
    assert!(ix.mapping.field("t._4gram").is_none());
    // Shingle subfields hold shingles of exactly their size.
    assert_eq!(
        ix.ids(json!({"term": {"t._2gram": "quick brown"}})),
        ids(&["1"])
    );
    assert_eq!(ix.ids(json!({"term": {"t._2gram": "quick"}})), ids(&[]));
    assert_eq!(
        ix.ids(json!({"term": {"t._3gram": "brown quick fox"}})),
        ids(&["2"])
    );
    // The prefix field: edge n-grams of the 3-token shingles (padded at the end).
    assert_eq!(
        ix.ids(json!({"term": {"t._index_prefix": "quick b"}})),
        ids(&["1"])
    );
    assert_eq!(
        ix.ids(json!({"term": {"t._index_prefix": "fox "}})),
        ids(&["1", "2"])
    );
    assert_eq!(
        ix.ids(json!({"prefix": {"t": "qui"}})),
        ids(&["1", "2", "3"])
    );
    assert_eq!(
        ix.ids(json!({"prefix": {"t": "quicksilverquicksilverx"}})),
        ids(&[])
    );
    // A prefix on a shingle field reads the prefix field too (ES's `ShingleFieldType`).
    assert_eq!(
        ix.ids(json!({"prefix": {"t._2gram": "quick b"}})),
        ids(&["1"])
    );
    assert_eq!(
        ix.ids(json!({"prefix": {"t._2gram": "quic"}})),
        ids(&["1", "2", "3"])
    );
    assert_eq!(
        ix.ids(json!({"match_phrase_prefix": {"t": "quick b"}})),
        ids(&["1"])
    );
    assert_eq!(
        ix.ids(json!({"match_phrase_prefix": {"t": "quick f"}})),
        ids(&["2"])
    );
    assert_eq!(
        ix.ids(json!({"match_phrase_prefix": {"t": "quick brown fox j"}})),
        ids(&["1"])
    );
    assert_eq!(
        ix.ids(
            json!({"multi_match": {"query": "brown q", "type": "bool_prefix",
            "fields": ["t._2gram", "t._3gram"]}})
        ),
        ids(&["2"])
    );
    // Field patterns leave the internal subfields out: "qu" is no word of any document
    // (the prefix field's "qu" term must not match).
    assert_eq!(
        ix.ids(json!({"multi_match": {"query": "qu", "fields": ["t*"]}})),
        ids(&[])
    );
    assert_eq!(ix.ids(json!({"query_string": {"query": "qu"}})), ids(&[]));
    assert_eq!(
        ix.ids(
            json!({"multi_match": {"query": "lazy", "type": "bool_prefix",
            "fields": ["t", "t._2gram", "t._3gram"]}})
        ),
        ids(&["4"])
    );
}

#[test]
fn query_string_leaves_are_the_queries_each_clause_plans_as() {
    let ix = fixture();
    let ctx = ix.ctx();
    let q = crate::parse_query(&json!({"query_string": {
        "query": "title:qui* AND (body:\"lazy dog\" OR dogs~1) -title:cats",
        "default_field": "body"}}))
    .unwrap();
    let leaves = crate::query_string_leaves(&q, &ctx);
    let shown: Vec<String> = leaves
        .iter()
        .map(|l| match l {
            crate::Query::Prefix(p) => format!("prefix {} {}", p.field, p.value),
            crate::Query::MatchPhrase(p) => format!("phrase {} {}", p.field, p.query),
            crate::Query::Fuzzy(f) => format!("fuzzy {} {}", f.field, f.value),
            other => format!("{other:?}"),
        })
        .collect();
    // the excluded clause (`-title:cats`) is not a leaf to highlight
    assert_eq!(
        shown,
        vec![
            "prefix title qui".to_string(),
            "phrase body \"lazy dog\"".to_string(),
            "fuzzy body \"dogs\"".to_string(),
        ]
    );
    let simple = crate::parse_query(&json!({"simple_query_string": {
        "query": "br?wn* | fox", "fields": ["title"]}}))
    .unwrap();
    assert_eq!(crate::query_string_leaves(&simple, &ctx).len(), 2);
    let other = crate::parse_query(&json!({"match": {"title": "fox"}})).unwrap();
    assert!(crate::query_string_leaves(&other, &ctx).is_empty());
}

#[test]
fn phrases_need_positions_and_docs_fields_score_with_tf_one() {
    let t = TestIndex::new(
        json!({"properties": {
            "d": {"type": "text", "index_options": "docs"},
            "f": {"type": "text", "index_options": "freqs"},
            "p": {"type": "text"},
            "k": {"type": "keyword", "index_options": "freqs"}
        }}),
        &[
            (
                "1",
                json!({"d": "red red red fox", "f": "red red red fox", "p": "red fox",
                       "k": ["a", "a", "b"]}),
            ),
            (
                "2",
                json!({"d": "red fox blue cat", "f": "red fox blue cat", "p": "blue fox",
                       "k": ["a", "b", "c"]}),
            ),
        ],
    );
    for field in ["d", "f"] {
        let e = t.err(json!({"match_phrase": {field: "red fox"}}));
        assert_eq!(e.kind, "query_shard_exception");
        let why =
            format!("field:[{field}] was indexed without position data; cannot run PhraseQuery");
        assert_eq!(e.reason, format!("failed to create query: {why}"));
        let cause = e.caused_by.expect("cause");
        assert_eq!(
            (cause.kind.as_str(), cause.reason),
            ("illegal_state_exception", why)
        );
        t.err(json!({"match_phrase_prefix": {field: "red f"}}));
        // One term is a term query; a lenient phrase matches nothing.
        assert_eq!(
            t.ids(json!({"match_phrase": {field: "red"}})),
            ids(&["1", "2"])
        );
        assert!(t
            .ids(
                json!({"multi_match": {"query": "red fox", "fields": [field],
                                         "type": "phrase", "lenient": true}})
            )
            .is_empty());
    }
    assert_eq!(
        t.ids(json!({"match_phrase": {"p": "red fox"}})),
        ids(&["1"])
    );
    // Same length, tf 3 against 1: equal without frequencies, not with them.
    let d1 = t.score_of(json!({"match": {"d": "red"}}), "1");
    let d2 = t.score_of(json!({"match": {"d": "red"}}), "2");
    assert_eq!(d1, d2);
    assert!(
        t.score_of(json!({"match": {"f": "red"}}), "1")
            > t.score_of(json!({"match": {"f": "red"}}), "2")
    );
    assert!(
        t.score_of(json!({"term": {"k": "a"}}), "1") > t.score_of(json!({"term": {"k": "a"}}), "2")
    );
}

#[test]
fn phrases_follow_the_shards_schema_not_the_mapping() {
    // An index created before `index_options` was honoured: its mapping says `docs`, but its
    // schema (what its segments hold) has positions, and its phrases keep working.
    let mut t = TestIndex::new(
        json!({"properties": {"p": {"type": "text"}}}),
        &[
            ("1", json!({"p": "red fox"})),
            ("2", json!({"p": "fox red"})),
        ],
    );
    t.mapping = mapping::compile(
        &json!({"properties": {"p": {"type": "text", "index_options": "docs"}}}),
        &t.analysis,
    )
    .unwrap();
    assert_eq!(
        t.ids(json!({"match_phrase": {"p": "red fox"}})),
        ids(&["1"])
    );
}

/// `search.allow_expensive_queries: false` (`crate::expensive`): what the planner refuses,
/// with ES's messages, and what it still plans.
#[test]
fn expensive_queries_refused_while_disallowed() {
    let t = TestIndex::new(
        json!({"properties": {
            "text": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
            "kw": {"type": "keyword"},
            "kw_dv": {"type": "keyword", "index": false},
            "n": {"type": "long"},
            "tp": {"type": "text", "index_prefixes": {"min_chars": 2, "max_chars": 4}},
            "sayt": {"type": "search_as_you_type"},
            "wc": {"type": "wildcard"},
            "nested1": {"type": "nested", "properties": {"foo": {"type": "keyword"}}}
        }}),
        &[(
            "1",
            json!({"text": "cold outside", "kw": "alpha", "kw_dv": "alpha", "n": 1}),
        )],
    );
    let ctx = QueryContext {
        allow_expensive_queries: false,
        ..t.ctx()
    };
    let plan = |q: Value| build_query(&parse_query(&q).unwrap(), &ctx);
    let tail = "cannot be executed when 'search.allow_expensive_queries' is set to false.";
    let prefix = format!(
        "[prefix] queries {tail} For optimised prefix queries on text fields please enable [index_prefixes]."
    );
    let refused = [
        (json!({"prefix": {"text": "out"}}), prefix.clone()),
        (json!({"prefix": {"tp": "outsi"}}), prefix.clone()),
        (json!({"match_bool_prefix": {"kw": "al"}}), prefix.clone()),
        (json!({"fuzzy": {"kw": "alpah"}}), format!("[fuzzy] queries {tail}")),
        (json!({"match": {"text": {"query": "cold", "fuzziness": 0}}}), format!("[fuzzy] queries {tail}")),
        (json!({"query_string": {"query": "al*", "fields": ["kw"]}}), prefix.clone()),
        (json!({"wildcard": {"text.raw": "c*"}}), format!("[wildcard] queries {tail}")),
        (json!({"regexp": {"kw": "a.*"}}), format!("[regexp] queries {tail}")),
        (json!({"range": {"kw": {"gte": "a"}}}), format!("[range] queries on [text] or [keyword] fields {tail}")),
        (json!({"bool": {"filter": [{"nested": {"path": "nested1", "query": {"match_all": {}}}}]}}), format!("[joining] queries {tail}")),
        (json!({"script": {"script": "true"}}), format!("[script] queries {tail}")),
        (json!({"script_score": {"query": {"match_all": {}}, "script": "1"}}), format!("[script score] queries {tail}")),
        (json!({"term": {"kw_dv": "alpha"}}), "Cannot search on field [kw_dv] since it is not indexed and 'search.allow_expensive_queries' is set to false.".to_string()),
    ];
    for (q, why) in refused {
        let e = plan(q.clone())
            .err()
            .unwrap_or_else(|| panic!("{q} was planned"));
        assert_eq!(e.reason, format!("failed to create query: {why}"), "{q}");
        assert_eq!((e.status, e.kind.as_str()), (400, "query_shard_exception"));
        let cause = e.caused_by.as_deref().unwrap();
        assert_eq!(
            (cause.kind.as_str(), cause.reason.as_str()),
            ("exception", why.as_str())
        );
    }
    for q in [
        json!({"term": {"kw": "alpha"}}),
        json!({"term": {"kw": {"value": "ALPHA", "case_insensitive": true}}}),
        json!({"range": {"n": {"gte": 1}}}),
        json!({"exists": {"field": "kw_dv"}}),
        json!({"prefix": {"tp": "o"}}),
        json!({"prefix": {"tp": "outs"}}),
        json!({"prefix": {"sayt": "outside"}}),
        json!({"wildcard": {"wc": "*a"}}),
        json!({"match_phrase_prefix": {"text": "cold out"}}),
        json!({"match": {"text": {"query": "cold", "fuzziness": 1, "lenient": true}}}),
    ] {
        plan(q.clone()).unwrap_or_else(|e| panic!("{q}: {e}"));
    }
}
