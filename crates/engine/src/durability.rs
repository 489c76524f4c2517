//! Deferred durability: a request handler runs inside [`deferred`], its `request`-durability
//! waits are collected instead of blocking its thread, and the caller (the HTTP layer) awaits
//! them before answering. A blocked thread per waiting write is what made `request` durability
//! cost throughput; here waiting writes cost nothing but a callback.

use std::cell::RefCell;
use std::sync::Arc;

use crate::shard::Shard;
use crate::translog::{Location, SyncCallback};

/// One shard's furthest translog location a request still waits for.
type Wait = (Arc<Shard>, Location);

thread_local! {
    static PENDING: RefCell<Option<Vec<Wait>>> = const { RefCell::new(None) };
}

/// Writes whose durability the caller must still wait for (at most one entry per shard).
#[derive(Default)]
pub struct PendingSyncs(Vec<Wait>);

impl PendingSyncs {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Calls `done` once every pending write is durable, with the first error if any.
    pub fn on_durable(self, done: SyncCallback) {
        if self.0.is_empty() {
            done(Ok(()));
            return;
        }
        let remaining = Arc::new(std::sync::Mutex::new((
            self.0.len(),
            None::<std::io::Error>,
            Some(done),
        )));
        for (shard, loc) in self.0 {
            let remaining = remaining.clone();
            shard.sync_translog_async(
                loc,
                Box::new(move |r| {
                    let mut g = remaining.lock().unwrap();
                    if let Err(e) = r {
                        g.1.get_or_insert(e);
                    }
                    g.0 -= 1;
                    if g.0 == 0 {
                        let err = g.1.take();
                        if let Some(done) = g.2.take() {
                            drop(g);
                            done(match err {
                                None => Ok(()),
                                Some(e) => Err(e),
                            });
                        }
                    }
                }),
            );
        }
    }
}

/// Runs `f` with durability waits deferred; returns its result and the waits it left.
pub fn deferred<T>(f: impl FnOnce() -> T) -> (T, PendingSyncs) {
    let outer = PENDING.with(|p| p.borrow_mut().replace(Vec::new()));
    let out = f();
    let pending = PENDING.with(|p| std::mem::replace(&mut *p.borrow_mut(), outer));
    (out, PendingSyncs(pending.unwrap_or_default()))
}

/// Records a durability wait when inside [`deferred`]; otherwise hands it back to be waited
/// for on the spot.
pub(crate) fn defer(shard: Arc<Shard>, loc: Location) -> Option<Wait> {
    PENDING.with(|p| match p.borrow_mut().as_mut() {
        Some(list) => {
            match list.iter_mut().find(|(s, _)| Arc::ptr_eq(s, &shard)) {
                Some(entry) => entry.1 = entry.1.max(loc),
                None => list.push((shard, loc)),
            }
            None
        }
        None => Some((shard, loc)),
    })
}
