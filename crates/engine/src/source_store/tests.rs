use std::collections::HashMap;

use tantivy::schema::{BytesOptions, Schema, STRING};
use tantivy::{doc, Index, IndexWriter, Term};

use super::*;

fn schema() -> Schema {
    let mut b = Schema::builder();
    b.add_text_field(ID, STRING);
    b.add_bytes_field(SOURCE, BytesOptions::default());
    b.add_text_field(ROUTING, STRING);
    b.build()
}

/// A JSON-like source whose size and content vary with `i` (some repeats, some noise).
fn source_of(i: u64) -> Vec<u8> {
    let noise: String = (0..(i % 97) * 3)
        .map(|k| char::from(b'a' + ((i * 31 + k * 7) % 26) as u8))
        .collect();
    format!(
        r#"{{"acctId":"A{:011}","status":{},"balance":{}.{:02},"remark":"{}","n":{}}}"#,
        i * 7919 % 1_000_003,
        i % 3,
        i * 13 % 10_000,
        i % 100,
        noise,
        i
    )
    .into_bytes()
}

fn index(codec: StoreCodec) -> Index {
    Index::builder()
        .schema(schema())
        .register_plugin(SourcePlugin::new(codec))
        .create_in_ram()
        .unwrap()
}

fn add(writer: &mut IndexWriter, s: &Schema, i: u64) {
    let id = s.get_field(ID).unwrap();
    let source = s.get_field(SOURCE).unwrap();
    let routing = s.get_field(ROUTING).unwrap();
    let mut d = doc!(id => i.to_string(), source => source_of(i));
    if i.is_multiple_of(5) {
        d.add_text(routing, format!("r{i}"));
    }
    writer.add_document(d).unwrap();
}

/// Reads every live document of every segment; checks each against `source_of`.
fn check_all(index: &Index, expected_live: usize) {
    let reader = index.reader().unwrap();
    let searcher = reader.searcher();
    let mut seen = HashMap::new();
    for seg in searcher.segment_readers() {
        let store = SegmentStore::open(seg).unwrap();
        assert!(matches!(store, SegmentStore::Blocks(_)));
        for doc in 0..seg.max_doc() {
            if seg.alive_bitset().is_some_and(|a| !a.is_alive(doc)) {
                continue;
            }
            let d = store.get(doc).unwrap();
            let i: u64 = d.id.as_deref().unwrap().parse().unwrap();
            assert_eq!(d.source.as_deref(), Some(&source_of(i)[..]), "doc {i}");
            let routing = i.is_multiple_of(5).then(|| format!("r{i}"));
            assert_eq!(d.routing, routing);
            assert!(seen.insert(i, ()).is_none(), "doc {i} twice");
        }
    }
    assert_eq!(seen.len(), expected_live);
}

fn sections(index: &Index) -> Vec<usize> {
    let searcher = index.reader().unwrap().searcher();
    searcher
        .segment_readers()
        .iter()
        .map(|seg| match SegmentStore::open(seg).unwrap() {
            SegmentStore::Blocks(r) => r.num_sections(),
            _ => panic!("legacy store"),
        })
        .collect()
}

#[test]
fn records_round_trip() {
    let mut out = Vec::new();
    for (id, routing, source) in [
        (Some("1"), None, Some(&b"{}"[..])),
        (None, None, None),
        (Some(""), Some("r"), Some(&b""[..])),
        (Some("\u{4e2d}"), Some("x"), None),
    ] {
        encode_record(id, routing, source, &mut out);
        let d = decode_record(&out).unwrap();
        assert_eq!(d.id.as_deref(), id);
        assert_eq!(d.routing.as_deref(), routing);
        assert_eq!(d.source.as_deref(), source);
    }
    assert!(decode_record(&[HAS_ID, 9, b'a']).is_err());
    assert!(decode_record(&[]).is_err());
}

#[test]
fn segments_read_back_through_merges_and_deletes() {
    for codec in [StoreCodec::DEFAULT, StoreCodec::BEST_COMPRESSION] {
        let index = index(codec);
        let s = index.schema();
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 50_000_000).unwrap();
        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        // Two large segments (a dictionary each, stacked by the merge), three small ones.
        for (start, end) in [
            (0, 30_000),
            (30_000, 60_000),
            (60_000, 60_050),
            (60_050, 60_051),
        ] {
            for i in start..end {
                add(&mut writer, &s, i);
            }
            writer.commit().unwrap();
        }
        writer.commit().unwrap();
        check_all(&index, 60_051);

        let ids = index.searchable_segment_ids().unwrap();
        writer.merge(&ids).wait().unwrap();
        check_all(&index, 60_051);
        // The two large segments were stacked (their sections copied), the small ones encoded.
        assert_eq!(sections(&index), vec![3]);

        // Deletes: the merge recompresses the segment that has them.
        let id = s.get_field(ID).unwrap();
        for i in (0..60_051).step_by(3) {
            writer.delete_term(Term::from_field_text(id, &i.to_string()));
        }
        for i in 60_051..60_100 {
            add(&mut writer, &s, i);
        }
        writer.commit().unwrap();
        let ids = index.searchable_segment_ids().unwrap();
        writer.merge(&ids).wait().unwrap();
        writer.wait_merging_threads().unwrap();
        check_all(&index, 60_051 - 20_017 + 49);
        // Deletes everywhere: one section, encoded afresh.
        assert_eq!(sections(&index), vec![1]);
    }
}

#[test]
fn empty_and_tiny_segments() {
    let index = index(StoreCodec::DEFAULT);
    let s = index.schema();
    let mut writer: IndexWriter = index.writer_with_num_threads(1, 50_000_000).unwrap();
    add(&mut writer, &s, 7);
    writer.commit().unwrap();
    check_all(&index, 1);
    let id = s.get_field(ID).unwrap();
    writer.delete_term(Term::from_field_text(id, "7"));
    writer.commit().unwrap();
    let ids = index.searchable_segment_ids().unwrap();
    if !ids.is_empty() {
        writer.merge(&ids).wait().unwrap();
    }
    check_all(&index, 0);
}

/// 5000 records: the first 2500 in one codec's section, the rest in the other's.
fn two_codec_file(first: StoreCodec, second: StoreCodec) -> Vec<u8> {
    let mut file = FileWriter::new(Vec::new()).unwrap();
    let mut rec = Vec::new();
    for (codec, range) in [(first, 0..2500), (second, 2500..5000)] {
        let mut enc = format::Encoder::new(codec);
        for i in range {
            encode_record(Some(&i.to_string()), None, Some(&source_of(i)), &mut rec);
            enc.push(&rec, &mut file).unwrap();
        }
        enc.finish(&mut file).unwrap();
    }
    file.finish().unwrap()
}

#[test]
fn sections_of_both_codecs_read_back() {
    use tantivy::directory::OwnedBytes;
    let (lz4, zstd) = (StoreCodec::DEFAULT, StoreCodec::BEST_COMPRESSION);
    for (a, b) in [(lz4, zstd), (zstd, lz4), (lz4, lz4)] {
        let r = SourceReader::open(OwnedBytes::new(two_codec_file(a, b))).unwrap();
        assert_eq!(r.num_sections(), 2);
        for doc in (0..5000).rev() {
            let d = r.with_record(doc, decode_record).unwrap().unwrap();
            assert_eq!(d.source.unwrap(), source_of(u64::from(doc)));
        }
    }
}

#[test]
fn corrupt_files_are_errors_not_panics() {
    use tantivy::directory::OwnedBytes;
    let bytes = two_codec_file(StoreCodec::DEFAULT, StoreCodec::BEST_COMPRESSION);
    let ok = SourceReader::open(OwnedBytes::new(bytes.clone())).unwrap();
    assert_eq!(ok.num_docs(), 5000);
    let d = ok.with_record(4321, decode_record).unwrap().unwrap();
    assert_eq!(d.source.unwrap(), source_of(4321));
    for cut in [0, 3, 10, bytes.len() / 2, bytes.len() - 1] {
        assert!(SourceReader::open(OwnedBytes::new(bytes[..cut].to_vec())).is_err());
    }
    // Flipped bytes inside the blocks: every read answers, some with errors.
    for at in (100..bytes.len() - 2000).step_by(997) {
        let mut bad = bytes.clone();
        bad[at] ^= 0x5a;
        if let Ok(r) = SourceReader::open(OwnedBytes::new(bad)) {
            for doc in (0..5000).step_by(250) {
                let _ = r.with_record(doc, decode_record);
            }
        }
    }
    assert!(ok.with_record(5000, decode_record).is_err());
}

#[test]
fn indices_from_before_the_plugin_read_from_tantivys_store() {
    use tantivy::schema::STORED;
    let mut b = Schema::builder();
    let id = b.add_text_field(ID, STRING | STORED);
    let source = b.add_bytes_field(SOURCE, STORED);
    let routing = b.add_text_field(ROUTING, STRING | STORED);
    let schema = b.build();
    assert!(!uses_plugin(&schema));
    let index = Index::create_in_ram(schema);
    let mut writer: IndexWriter = index.writer_with_num_threads(1, 50_000_000).unwrap();
    writer
        .add_document(doc!(id => "a", source => b"{\"x\":1}".to_vec(), routing => "r"))
        .unwrap();
    writer.add_document(doc!(id => "b")).unwrap();
    writer.commit().unwrap();
    let searcher = index.reader().unwrap().searcher();
    let store = SegmentStore::open(&searcher.segment_readers()[0]).unwrap();
    assert!(matches!(store, SegmentStore::Legacy { .. }));
    assert_eq!(
        store.get(0).unwrap(),
        StoredFields {
            id: Some("a".into()),
            routing: Some("r".into()),
            source: Some(b"{\"x\":1}".to_vec()),
        }
    );
    assert_eq!(
        store.get(1).unwrap(),
        StoredFields {
            id: Some("b".into()),
            ..StoredFields::default()
        }
    );
    assert!(uses_plugin(&crate::schema::extend(
        None,
        &crate::mapping::Mapping::empty()
    )));
}
