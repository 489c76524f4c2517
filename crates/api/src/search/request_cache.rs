//! The shard request cache, as Elasticsearch has it: results of `size: 0` searches (counts and
//! aggregations, what dashboards repeat) are kept and served again while the searched data is
//! unchanged. The key holds the request and every searched shard's reader generation, so a
//! refresh that changes a shard makes its old entries unreachable (they age out). Requests
//! with `now` in them are not cached (their answer changes with the clock), as in ES.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, OnceLock};

use serde_json::Value;

/// Cache memory bound (ES's default is 1% of the heap).
const MAX_BYTES: usize = 64 << 20;

#[derive(Default, Clone, Copy, Debug)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub memory_bytes: u64,
}

#[derive(Default)]
struct Cache {
    entries: HashMap<String, (Value, usize, Vec<String>)>,
    order: VecDeque<String>,
    bytes: usize,
    /// Per index uuid.
    stats: HashMap<String, CacheStats>,
}

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Looks `key` up, counting a hit or a miss for each index in `uuids`.
pub fn get(key: &str, uuids: &[String]) -> Option<Value> {
    let mut guard = cache().lock().unwrap();
    let c = &mut *guard;
    let found = c.entries.get(key).map(|(v, _, _)| v.clone());
    for u in uuids {
        let s = c.stats.entry(u.clone()).or_default();
        match found {
            Some(_) => s.hits += 1,
            None => s.misses += 1,
        }
    }
    found
}

pub fn put(key: String, value: Value, uuids: Vec<String>) {
    let size = key.len() + value.to_string().len();
    if size > MAX_BYTES / 16 {
        return;
    }
    let mut guard = cache().lock().unwrap();
    let c = &mut *guard;
    if c.entries.contains_key(&key) {
        return;
    }
    while c.bytes + size > MAX_BYTES {
        let Some(old) = c.order.pop_front() else {
            break;
        };
        if let Some((_, sz, owners)) = c.entries.remove(&old) {
            c.bytes -= sz;
            for u in owners {
                let s = c.stats.entry(u).or_default();
                s.evictions += 1;
                s.memory_bytes = s.memory_bytes.saturating_sub(sz as u64);
            }
        }
    }
    for u in &uuids {
        c.stats.entry(u.clone()).or_default().memory_bytes += size as u64;
    }
    c.bytes += size;
    c.order.push_back(key.clone());
    c.entries.insert(key, (value, size, uuids));
}

/// Drops every entry of an index (`POST /{index}/_cache/clear`, index deletion).
pub fn clear(uuid: &str) {
    let mut guard = cache().lock().unwrap();
    let c = &mut *guard;
    let doomed: Vec<String> = c
        .entries
        .iter()
        .filter(|(_, (_, _, owners))| owners.iter().any(|o| o == uuid))
        .map(|(k, _)| k.clone())
        .collect();
    for k in doomed {
        if let Some((_, sz, owners)) = c.entries.remove(&k) {
            c.bytes -= sz;
            for u in owners {
                let s = c.stats.entry(u).or_default();
                s.memory_bytes = s.memory_bytes.saturating_sub(sz as u64);
            }
        }
    }
    c.order.retain(|k| c.entries.contains_key(k));
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
