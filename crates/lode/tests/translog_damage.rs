//! A damaged translog tail after a crash: garbage appended, a torn (truncated) last record, a
//! flipped byte. Elasticsearch's contract: the node comes back, every acknowledged operation
//! recorded before the damaged region is there, and the shard takes writes again (and those
//! survive the next crash too).
//!
//! The index uses `refresh_interval: -1` and an explicit mapping, so no tantivy commit happens
//! between the initial one and the crash: what the node has after restart comes from the
//! translog alone. Files: `path.data/indices/<uuid>/<shard>/translog/translog-<gen>.tlog`,
//! records `[len u32][crc32 u32][payload]` (see `crates/engine/src/translog.rs`).

mod common;

use common::{newest_translog, shard_dirs, Node};
use serde_json::{json, Value};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

const INDEX: &str = "torn";

fn create(n: &Node) {
    let (s, v) = n.req(
        "PUT",
        &format!("/{INDEX}"),
        Some(&json!({
            "settings": {"number_of_shards": 1, "refresh_interval": "-1"},
            "mappings": {"properties": {"i": {"type": "long"}, "tag": {"type": "keyword"}}}
        })),
    );
    assert_eq!(s, 200, "{v}");
}

/// Indexes docs `range` one by one (durability `request`: each is fsynced when acknowledged);
/// returns the highest `_seq_no`.
fn write(n: &Node, range: std::ops::Range<u64>, tag: &str) -> u64 {
    let mut max_seq = 0;
    for i in range {
        let (s, v) = n.req(
            "PUT",
            &format!("/{INDEX}/_doc/{i}"),
            Some(&json!({"i": i, "tag": tag})),
        );
        assert_eq!(s, 201, "index {i}: {v}");
        max_seq = max_seq.max(v["_seq_no"].as_u64().unwrap());
    }
    max_seq
}

/// Realtime GET: `Some(source)` or `None` (404).
fn get(n: &Node, i: u64) -> Option<Value> {
    let (s, v) = n.req("GET", &format!("/{INDEX}/_doc/{i}"), None);
    match s {
        200 => Some(v["_source"].clone()),
        404 => {
            assert_eq!(v["found"], false, "{v}");
            None
        }
        _ => panic!("GET {i}: {s} {v}"),
    }
}

fn assert_present(n: &Node, range: std::ops::Range<u64>, tag: &str, what: &str) {
    for i in range {
        assert_eq!(
            get(n, i),
            Some(json!({"i": i, "tag": tag})),
            "{what}: acknowledged doc {i} is missing or wrong after restart"
        );
    }
}

fn count(n: &Node) -> u64 {
    let (s, v) = n.req("POST", &format!("/{INDEX}/_refresh"), None);
    assert_eq!(s, 200, "{v}");
    let (s, v) = n.req("GET", &format!("/{INDEX}/_count"), None);
    assert_eq!(s, 200, "{v}");
    v["count"].as_u64().unwrap()
}

fn translog_of(data: &Path) -> std::path::PathBuf {
    let shards = shard_dirs(data, INDEX);
    assert_eq!(shards.len(), 1, "{shards:?}");
    let p = newest_translog(&shards[0]);
    let len = std::fs::metadata(&p).unwrap().len();
    assert!(
        len > 0,
        "the newest translog generation {} is empty",
        p.display()
    );
    p
}

fn append(p: &Path, bytes: &[u8]) {
    let mut f = OpenOptions::new().append(true).open(p).unwrap();
    f.write_all(bytes).unwrap();
    f.sync_all().unwrap();
}

/// `(start, end)` of every whole record in a translog file.
fn records(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + 8 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[pos..pos + 4].try_into().unwrap()) as usize;
        if pos + 8 + len > bytes.len() {
            break;
        }
        out.push((pos, pos + 8 + len));
        pos += 8 + len;
    }
    out
}

fn truncate_by(p: &Path, n: u64) {
    let len = std::fs::metadata(p).unwrap().len();
    let f = OpenOptions::new().write(true).open(p).unwrap();
    f.set_len(len - n).unwrap();
    f.sync_all().unwrap();
}

/// After restart: the write path works and continues the seq_no sequence.
fn assert_writable(n: &Node, id: &str, after_seq: u64) {
    let (s, v) = n.req(
        "PUT",
        &format!("/{INDEX}/_doc/{id}"),
        Some(&json!({"i": -1, "tag": "after"})),
    );
    assert_eq!(s, 201, "write after recovery: {v}");
    assert!(
        v["_seq_no"].as_u64().unwrap() > after_seq,
        "seq_no went backwards after recovery: {v} (previous max {after_seq})"
    );
    let (s, v) = n.req("GET", &format!("/{INDEX}/_doc/{id}"), None);
    assert_eq!((s, &v["_source"]["tag"]), (200, &json!("after")), "{v}");
}

#[test]
fn garbage_appended_to_the_translog_is_cut_off() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut n = Node::start_on(&data, &[]);
    create(&n);
    let seq = write(&n, 0..20, "a");
    n.kill();
    let p = translog_of(&data);
    let before = std::fs::metadata(&p).unwrap().len();
    // A plausible-looking header (length within the file, wrong crc) and random-ish bytes.
    let mut junk = Vec::new();
    junk.extend_from_slice(&12u32.to_le_bytes());
    junk.extend_from_slice(&0xDEAD_BEEFu32.to_le_bytes());
    junk.extend((0..41u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    append(&p, &junk);

    let mut n = Node::start_on(&data, &[]);
    assert_present(&n, 0..20, "a", "garbage tail");
    assert_eq!(count(&n), 20);
    assert_writable(&n, "x1", seq);
    // More acknowledged writes, then a second crash: they survive, the garbage is gone for good.
    write(&n, 20..30, "a");
    n.kill();
    let n = Node::start_on(&data, &[]);
    assert_present(&n, 0..30, "a", "second crash after a garbage tail");
    assert_eq!(count(&n), 31);
    assert!(
        !p.exists() || std::fs::metadata(&p).unwrap().len() <= before,
        "the damaged generation still holds the garbage"
    );
}

#[test]
fn zero_bytes_appended_to_the_translog_are_cut_off() {
    // Zero-filled blocks are what a file system may leave after a crash during an append;
    // `[len 0][crc 0]` even passes the crc check of an empty payload.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut n = Node::start_on(&data, &[]);
    create(&n);
    let seq = write(&n, 0..15, "z");
    n.kill();
    append(&translog_of(&data), &[0u8; 4096]);
    let mut n = Node::start_on(&data, &[]);
    assert_present(&n, 0..15, "z", "zero-filled tail");
    assert_eq!(count(&n), 15);
    assert_writable(&n, "x1", seq);
    write(&n, 15..20, "z");
    n.kill();
    let n = Node::start_on(&data, &[]);
    assert_present(&n, 0..20, "z", "second crash after a zero-filled tail");
    assert_eq!(count(&n), 21);
}

#[test]
fn torn_last_record_is_dropped_and_everything_before_it_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut n = Node::start_on(&data, &[]);
    create(&n);
    let seq = write(&n, 0..20, "t");
    n.kill();
    // Tear the last record (doc 19): a few bytes of it never reached the disk.
    truncate_by(&translog_of(&data), 5);

    let mut n = Node::start_on(&data, &[]);
    assert_present(&n, 0..19, "t", "torn tail");
    // Doc 19's record is damaged: it is lost (nothing else could have kept it, as no refresh
    // committed it), and never half-applied.
    assert_eq!(get(&n, 19), None, "doc 19 was recovered from a torn record");
    assert_eq!(count(&n), 19);
    // The write path works; the id of the lost record can be written again.
    assert_writable(&n, "x1", seq - 1);
    let (s, v) = n.req(
        "PUT",
        &format!("/{INDEX}/_doc/19"),
        Some(&json!({"i": 19, "tag": "t"})),
    );
    assert_eq!((s, v["_version"].as_u64()), (201, Some(1)), "{v}");
    // Tear again, this time inside the length/crc header of the last record.
    write(&n, 20..25, "t");
    n.kill();
    let p = translog_of(&data);
    let bytes = std::fs::read(&p).unwrap();
    let recs = records(&bytes);
    assert_eq!(
        recs.last().unwrap().1,
        bytes.len(),
        "the file ends with a whole record"
    );
    let (start, end) = *recs.last().unwrap();
    // Keep only 3 bytes of the last record: its length field itself is torn.
    truncate_by(&p, (end - start - 3) as u64);
    let mut n = Node::start_on(&data, &[]);
    assert_present(&n, 0..24, "t", "header torn");
    assert_eq!(get(&n, 24), None);
    assert_eq!(count(&n), 25); // 0..24 and x1
    write(&n, 24..26, "t");
    n.kill();
    let n = Node::start_on(&data, &[]);
    assert_present(&n, 0..26, "t", "crash after two torn tails");
    assert_eq!(count(&n), 27);
}

#[test]
fn corrupted_byte_stops_replay_at_the_damaged_record() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut n = Node::start_on(&data, &[]);
    create(&n);
    let seq = write(&n, 0..20, "c");
    n.kill();
    let p = translog_of(&data);
    let mut bytes = std::fs::read(&p).unwrap();
    // Flip one byte inside the payload of the 15th record (doc 14): the crc catches it.
    let recs = records(&bytes);
    assert_eq!(recs.len(), 20, "one record per acknowledged write");
    bytes[recs[14].0 + 8 + 20] ^= 0x5a;
    std::fs::write(&p, &bytes).unwrap();

    let mut n = Node::start_on(&data, &[]);
    assert_present(&n, 0..14, "c", "corrupted record");
    // Elasticsearch would fail the shard on a corrupted translog; Lode truncates at the first
    // bad record. Either way nothing at or after the damage may come back altered.
    let mut found = 14;
    for i in 14..20 {
        match get(&n, i) {
            None => {}
            Some(src) => {
                assert_eq!(src, json!({"i": i, "tag": "c"}));
                found += 1;
            }
        }
    }
    assert_eq!(count(&n), found);
    assert!(seq >= 19);
    assert_writable(&n, "x1", 13);
    n.kill();
    let n = Node::start_on(&data, &[]);
    assert_present(&n, 0..14, "c", "crash after a corrupted record");
    assert_eq!(get(&n, 0), Some(json!({"i": 0, "tag": "c"})));
    let (s, v) = n.req("GET", &format!("/{INDEX}/_doc/x1"), None);
    assert_eq!(s, 200, "the write acknowledged after recovery is lost: {v}");
}

/// A crash in the middle of a tantivy commit leaves files behind that `.managed.json` lists
/// but no `meta.json` references, such as `<segment>.<opstamp>.del`. Recovery replays the
/// translog and commits again, reaching the same opstamps: those leftovers must not make the
/// commit (and so the whole index) fail to open. Planted here for a range of opstamps.
#[test]
fn leftovers_of_an_unfinished_commit_do_not_block_recovery() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut n = Node::start_on(&data, &[]);
    create(&n);
    write(&n, 0..5, "old");
    // Commit the docs into a segment, then overwrite them: replay will delete from it.
    let (s, v) = n.req("POST", &format!("/{INDEX}/_refresh"), None);
    assert_eq!(s, 200, "{v}");
    write_over(&n, 0..5, "new");
    n.kill();

    let index_dir = shard_dirs(&data, INDEX)[0].join("index");
    let meta: Value =
        serde_json::from_slice(&std::fs::read(index_dir.join("meta.json")).unwrap()).unwrap();
    let opstamp = meta["opstamp"].as_u64().unwrap();
    let managed_path = index_dir.join(".managed.json");
    let mut managed: Vec<String> =
        serde_json::from_slice(&std::fs::read(&managed_path).unwrap()).unwrap();
    let mut planted = 0;
    for seg in meta["segments"].as_array().unwrap() {
        let id = seg["segment_id"].as_str().unwrap().replace('-', "");
        for stamp in opstamp + 1..opstamp + 200 {
            let name = format!("{id}.{stamp}.del");
            std::fs::write(index_dir.join(&name), b"left over by a crashed commit").unwrap();
            managed.push(name);
            planted += 1;
        }
    }
    assert!(planted > 0, "no committed segment in {meta}");
    std::fs::write(&managed_path, serde_json::to_vec(&managed).unwrap()).unwrap();

    let n = Node::start_on(&data, &[]);
    for i in 0..5 {
        assert_eq!(
            get(&n, i),
            Some(json!({"i": i, "tag": "new"})),
            "doc {i} after recovery over leftover files"
        );
    }
    assert_eq!(count(&n), 5);
    assert_writable(&n, "x1", 9);
}

/// Overwrites docs `range` (each must already exist).
fn write_over(n: &Node, range: std::ops::Range<u64>, tag: &str) {
    for i in range {
        let (s, v) = n.req(
            "PUT",
            &format!("/{INDEX}/_doc/{i}"),
            Some(&json!({"i": i, "tag": tag})),
        );
        assert_eq!(s, 200, "overwrite {i}: {v}");
    }
}
