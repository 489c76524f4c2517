//! The indexing thread hands each full segment to a thread of its own to be written while it
//! fills the next one (vendored tantivy, LODE-PATCHES.md 11). Deletes queued meanwhile must
//! reach the segment being written, and a commit must wait for every segment, in order.

use std::collections::BTreeMap;

use tantivy::indexer::NoMergePolicy;
use tantivy::query::{Query, TermQuery};
use tantivy::schema::{IndexRecordOption, Schema, FAST, STRING, TEXT};
use tantivy::{doc, Index, IndexWriter, Term};

#[test]
fn segments_written_beside_indexing_keep_every_write_and_delete() {
    let mut sb = Schema::builder();
    let id = sb.add_text_field("id", STRING);
    let body = sb.add_text_field("body", TEXT);
    let n = sb.add_i64_field("n", FAST);
    let index = Index::create_in_ram(sb.build());
    // The smallest budget tantivy takes, so that a few thousand documents fill several segments.
    let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
    writer.set_merge_policy(Box::new(NoMergePolicy));

    // The oracle: the value of each live id.
    let mut live: BTreeMap<String, i64> = BTreeMap::new();
    let mut state: u64 = 7;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    };
    for round in 0..2 {
        for i in 0..40_000i64 {
            let key = format!("d{}", next() % 30_000);
            // Distinct words keep the in-memory term table growing, so budgets fill.
            let words: Vec<String> = (0..12)
                .map(|_| format!("w{}", next() % 2_000_000))
                .collect();
            // An update: the older copy is deleted, possibly inside a segment being written.
            writer.delete_term(Term::from_field_text(id, &key));
            writer
                .add_document(doc!(id => key.clone(), body => words.join(" "), n => i))
                .unwrap();
            live.insert(key, i);
            if i % 11 == 0 {
                let gone = format!("d{}", next() % 30_000);
                writer.delete_term(Term::from_field_text(id, &gone));
                live.remove(&gone);
            }
        }
        writer.commit().unwrap();
        let reader = index.reader().unwrap();
        let searcher = reader.searcher();
        assert!(
            searcher.segment_readers().len() >= 3 * (round + 1),
            "the budget must have closed several segments, got {}",
            searcher.segment_readers().len()
        );
        assert_eq!(searcher.num_docs(), live.len() as u64, "round {round}");
        for key in (0..30_000).step_by(97).map(|k| format!("d{k}")) {
            let q = TermQuery::new(Term::from_field_text(id, &key), IndexRecordOption::Basic);
            let found = q.count(&searcher).unwrap();
            assert_eq!(found, usize::from(live.contains_key(&key)), "{key}");
            if let Some(v) = live.get(&key) {
                let q = tantivy::query::BooleanQuery::intersection(vec![
                    Box::new(q),
                    Box::new(TermQuery::new(
                        Term::from_field_i64(n, *v),
                        IndexRecordOption::Basic,
                    )),
                ]);
                assert_eq!(q.count(&searcher).unwrap(), 1, "{key} holds {v}");
            }
        }
    }
}
