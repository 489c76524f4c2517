//! The shard request cache, as Elasticsearch has it: results of `size: 0` searches (counts and
//! aggregations, what dashboards repeat) are kept and served again while the searched data is
//! unchanged. The key holds the request and every searched shard's reader generation, so a
//! refresh that changes a shard makes its old entries unreachable (they age out). Requests
//! with `now` in them are not cached (their answer changes with the clock), as in ES.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use serde_json::Value;

/// Cache memory bound by default, in bytes of the cached answers as they sit in memory (see
/// [`heap_bytes`]), not as JSON text: a parsed answer takes several times its text. ES's
/// default is 1% of the JVM heap (about 80 MiB with an 8 GiB heap); the node setting
/// `indices.requests.cache.size` changes it ([`set_max_bytes`]).
pub const DEFAULT_MAX_BYTES: usize = 64 << 20;

static MAX_BYTES: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_BYTES);

/// Sets the cache's memory bound (`indices.requests.cache.size`, a static node setting):
/// applied at start, before any search.
pub fn set_max_bytes(bytes: usize) {
    MAX_BYTES.store(bytes, Ordering::Relaxed);
}

fn max_bytes() -> usize {
    MAX_BYTES.load(Ordering::Relaxed)
}

#[derive(Default, Clone, Copy, Debug)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub memory_bytes: u64,
}

/// One searched shard's reader, as a cache entry depends on it: (index uuid, shard number)
/// and the view of the shard the answer was computed on (`ShardSearcher::view`: newer views
/// compare greater).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShardReader {
    pub uuid: String,
    pub shard: usize,
    pub view: (u64, u64),
}

struct Entry {
    value: Value,
    bytes: usize,
    readers: Vec<ShardReader>,
}

#[derive(Default)]
struct Cache {
    entries: HashMap<String, Entry>,
    order: VecDeque<String>,
    bytes: usize,
    /// The newest reader generation seen per (index uuid, shard): an entry computed on an
    /// older one can never be asked for again.
    newest: HashMap<(String, usize), (u64, u64)>,
    /// Per index uuid.
    stats: HashMap<String, CacheStats>,
}

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

impl Cache {
    /// Records the readers a request searches; when one is newer than the shard's last seen
    /// reader (a refresh changed the shard), the entries of the shard's older readers are
    /// dropped now (ES cleans the entries of closed readers too) instead of waiting to be
    /// pushed out by newer ones: under steady writes they would fill the cache with answers
    /// nobody can reach.
    fn observe(&mut self, readers: &[ShardReader]) {
        let mut replaced = false;
        for r in readers {
            match self.newest.get_mut(&(r.uuid.clone(), r.shard)) {
                Some(newest) if r.view > *newest => {
                    *newest = r.view;
                    replaced = true;
                }
                Some(_) => {}
                None => {
                    self.newest.insert((r.uuid.clone(), r.shard), r.view);
                }
            }
        }
        if !replaced {
            return;
        }
        let newest = &self.newest;
        let stale: Vec<String> = self
            .entries
            .iter()
            .filter(|(_, e)| {
                e.readers.iter().any(|r| {
                    newest
                        .get(&(r.uuid.clone(), r.shard))
                        .is_some_and(|&n| r.view < n)
                })
            })
            .map(|(k, _)| k.clone())
            .collect();
        for k in stale {
            self.remove(&k, true);
        }
        self.order.retain(|k| self.entries.contains_key(k));
    }

    fn remove(&mut self, key: &str, evicted: bool) {
        if let Some(e) = self.entries.remove(key) {
            self.bytes -= e.bytes;
            let mut owners: Vec<&String> = e.readers.iter().map(|r| &r.uuid).collect();
            owners.dedup();
            for u in owners {
                let s = self.stats.entry(u.clone()).or_default();
                if evicted {
                    s.evictions += 1;
                }
                s.memory_bytes = s.memory_bytes.saturating_sub(e.bytes as u64);
            }
        }
    }
}

/// The indices (uuids, once each) whose shards `readers` are.
fn owners(readers: &[ShardReader]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in readers {
        if !out.contains(&r.uuid) {
            out.push(r.uuid.clone());
        }
    }
    out
}

/// Looks `key` (computed on `readers`) up, counting a hit or a miss for each searched index.
pub fn get(key: &str, readers: &[ShardReader]) -> Option<Value> {
    let mut guard = cache().lock().unwrap();
    let c = &mut *guard;
    c.observe(readers);
    let found = c.entries.get(key).map(|e| e.value.clone());
    for u in owners(readers) {
        let s = c.stats.entry(u).or_default();
        match found {
            Some(_) => s.hits += 1,
            None => s.misses += 1,
        }
    }
    found
}

/// Keeps the answer `value` to `key`, computed on `readers`.
pub fn put(key: String, value: Value, readers: Vec<ShardReader>) {
    let size = key.len() + heap_bytes(&value) + readers.len() * std::mem::size_of::<ShardReader>();
    let max = max_bytes();
    // One answer may take a sixteenth of the cache at most: a giant one would push out
    // everything else.
    if size > max / 16 {
        return;
    }
    let mut guard = cache().lock().unwrap();
    let c = &mut *guard;
    c.observe(&readers);
    if c.entries.contains_key(&key) {
        return;
    }
    while c.bytes + size > max {
        let Some(old) = c.order.pop_front() else {
            break;
        };
        c.remove(&old, true);
    }
    for u in owners(&readers) {
        c.stats.entry(u).or_default().memory_bytes += size as u64;
    }
    c.bytes += size;
    c.order.push_back(key.clone());
    c.entries.insert(
        key,
        Entry {
            value,
            bytes: size,
            readers,
        },
    );
}

/// The memory a parsed JSON value takes: its nodes, strings and maps (serde_json's
/// `preserve_order` maps are an `IndexMap`: an entry vector plus a hash index).
pub fn heap_bytes(v: &Value) -> usize {
    const NODE: usize = std::mem::size_of::<Value>();
    const MAP_ENTRY: usize =
        std::mem::size_of::<String>() + NODE + 2 * std::mem::size_of::<usize>();
    NODE + children_bytes(v, MAP_ENTRY)
}

fn children_bytes(v: &Value, map_entry: usize) -> usize {
    match v {
        Value::String(s) => s.capacity(),
        Value::Array(a) => {
            a.capacity() * std::mem::size_of::<Value>()
                + a.iter()
                    .map(|x| children_bytes(x, map_entry))
                    .sum::<usize>()
        }
        Value::Object(m) => m
            .iter()
            .map(|(k, x)| map_entry + k.capacity() + children_bytes(x, map_entry))
            .sum(),
        _ => 0,
    }
}

/// Drops every entry of an index (`POST /{index}/_cache/clear`, index deletion).
pub fn clear(uuid: &str) {
    let mut guard = cache().lock().unwrap();
    let c = &mut *guard;
    let doomed: Vec<String> = c
        .entries
        .iter()
        .filter(|(_, e)| e.readers.iter().any(|r| r.uuid == uuid))
        .map(|(k, _)| k.clone())
        .collect();
    for k in doomed {
        c.remove(&k, false);
    }
    c.order.retain(|k| c.entries.contains_key(k));
    c.newest.retain(|(u, _), _| u != uuid);
}

pub fn stats(uuid: &str) -> CacheStats {
    cache()
        .lock()
        .unwrap()
        .stats
        .get(uuid)
        .copied()
        .unwrap_or_default()
}

/// Whether a request's text mentions the clock (date math on `now`).
pub fn uses_now(body: &str) -> bool {
    body.contains("now")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reader(uuid: &str, shard: usize, view: (u64, u64)) -> ShardReader {
        ShardReader {
            uuid: uuid.into(),
            shard,
            view,
        }
    }

    #[test]
    fn a_newer_view_of_a_shard_drops_the_entries_of_older_ones() {
        let (a, b) = ("rc-test-stale-a", "rc-test-stale-b");
        put(
            "k1".into(),
            json!({"n": 1}),
            vec![reader(a, 0, (1, 1)), reader(b, 0, (1, 1))],
        );
        put("k2".into(), json!({"n": 2}), vec![reader(a, 1, (1, 1))]);
        put("k3".into(), json!({"n": 3}), vec![reader(b, 0, (1, 1))]);
        let before = stats(a).memory_bytes;
        assert!(before > 0);
        // Shard 0 of `a` refreshed: k1 is unreachable (its key named the old view) and goes;
        // k2 (another shard) and k3 (another index) stay.
        assert_eq!(get("k1-new", &[reader(a, 0, (1, 2))]), None);
        assert_eq!(get("k2", &[reader(a, 1, (1, 1))]), Some(json!({"n": 2})));
        assert_eq!(get("k3", &[reader(b, 0, (1, 1))]), Some(json!({"n": 3})));
        assert!(stats(a).memory_bytes < before);
        assert_eq!(stats(a).evictions, 1);
        assert!(!cache().lock().unwrap().entries.contains_key("k1"));
        // A reopened reader (a new reader id) is newer whatever its generation.
        put("k4".into(), json!(4), vec![reader(b, 0, (1, 9))]);
        assert_eq!(get("k4-new", &[reader(b, 0, (2, 0))]), None);
        assert!(!cache().lock().unwrap().entries.contains_key("k4"));
        assert!(!cache().lock().unwrap().entries.contains_key("k3"));
        clear(a);
        clear(b);
        assert_eq!(stats(a).memory_bytes, 0);
        assert_eq!(stats(b).memory_bytes, 0);
    }

    #[test]
    fn memory_counts_the_parsed_answer_not_its_text() {
        let buckets: Vec<Value> = (0..100)
            .map(|i| json!({"key": format!("k{i}"), "doc_count": i}))
            .collect();
        let v = json!({"aggregations": {"t": {"buckets": buckets}}});
        let text = v.to_string().len();
        let heap = heap_bytes(&v);
        // 100 buckets of two map entries, each entry a key string and a value node.
        let floor = 100 * 2 * (std::mem::size_of::<String>() + std::mem::size_of::<Value>());
        assert!(
            heap > floor && heap > text,
            "heap {heap} text {text} floor {floor}"
        );
    }
}
