//! HTTP connection counts for `_nodes/stats/http` (`current_open`, `total_opened`). The HTTP
//! layer owns the connections and counts them here, where the stats API reads them.

use std::sync::atomic::{AtomicU64, Ordering};

static OPEN: AtomicU64 = AtomicU64::new(0);
static TOTAL: AtomicU64 = AtomicU64::new(0);

/// Counts one accepted connection as open until the guard drops with it.
pub struct ConnectionGuard(());

impl ConnectionGuard {
    pub fn opened() -> ConnectionGuard {
        TOTAL.fetch_add(1, Ordering::Relaxed);
        OPEN.fetch_add(1, Ordering::Relaxed);
        ConnectionGuard(())
    }
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        OPEN.fetch_sub(1, Ordering::Relaxed);
    }
}

/// (`current_open`, `total_opened`).
pub fn snapshot() -> (u64, u64) {
    (OPEN.load(Ordering::Relaxed), TOTAL.load(Ordering::Relaxed))
}
