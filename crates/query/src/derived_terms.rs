//! Structures derived from a segment's keyword column dictionary for pattern queries (its
//! terms reversed, its terms as one flat text), kept per segment and column.
//!
//! A segment's terms never change, so what is derived from them is built once and kept, like
//! global ordinals: on a segment's second query that would use it, so that a one-off query
//! pays only its scan. Built structures share a byte budget, least recently used first out
//! (merged-away segments age out).

use std::any::{Any, TypeId};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tantivy::index::SegmentId;

type Key = (SegmentId, String, TypeId);

/// One cache entry: `None` after a segment's first query, then the structure once built
/// (concurrent requests wait for one build: the slot's lock is held while it builds).
type Slot = Option<Arc<Built>>;

#[derive(Default)]
struct Built {
    value: parking_lot::Mutex<Option<Arc<dyn Any + Send + Sync>>>,
    /// The structure's size once built.
    bytes: AtomicUsize,
}

/// Entries, most recently used last.
static CACHE: Mutex<Vec<(Key, Slot)>> = Mutex::new(Vec::new());
/// What the built structures may take together.
const CACHE_BYTES: usize = 256 << 20;
/// How many segments' first queries are remembered.
const MAX_ENTRIES: usize = 4096;

/// The `T` of `field` in segment `segment`: `None` the first time it is asked for (the
/// caller scans), built by `build` on the second, kept for those that follow.
pub(crate) fn derived<T: Send + Sync + 'static>(
    segment: SegmentId,
    field: &str,
    size: impl FnOnce(&T) -> usize,
    build: impl FnOnce() -> std::io::Result<T>,
) -> std::io::Result<Option<Arc<T>>> {
    let key = (segment, field.to_string(), TypeId::of::<T>());
    let slot = {
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        let at = cache.iter().position(|(k, _)| *k == key);
        let mut entry = match at {
            Some(i) => cache.remove(i),
            None => (key, None),
        };
        let slot = if at.is_some() {
            Some(entry.1.get_or_insert_with(Default::default).clone())
        } else {
            None
        };
        cache.push(entry);
        evict(&mut cache);
        slot
    };
    let Some(slot) = slot else { return Ok(None) };
    let value = {
        let mut value = slot.value.lock();
        match &*value {
            Some(built) => built.clone(),
            None => {
                let built = build()?;
                slot.bytes.store(size(&built), Ordering::Relaxed);
                value.insert(Arc::new(built)).clone()
            }
        }
    };
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    evict(&mut cache);
    Ok(value.downcast::<T>().ok())
}

fn entry_bytes(slot: &Slot) -> usize {
    slot.as_ref().map_or(0, |s| s.bytes.load(Ordering::Relaxed))
}

fn evict(cache: &mut Vec<(Key, Slot)>) {
    let mut total: usize = cache.iter().map(|(_, s)| entry_bytes(s)).sum();
    while cache.len() > 1 && (total > CACHE_BYTES || cache.len() > MAX_ENTRIES) {
        total = total.saturating_sub(entry_bytes(&cache.remove(0).1));
    }
}
