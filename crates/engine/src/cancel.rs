//! Cancellation tokens: one flag a running request polls (ES's `CancellableTask`), set by
//! `POST /_tasks/{id}/_cancel` or by the HTTP layer when the client's connection closes
//! (ES's `RestCancellableNodeClient`). A child token (an `_msearch` item) is cancelled with
//! its parent. The HTTP layer makes a request's token *current* on the thread that runs its
//! handler, so handlers that support cancellation pick it up without new parameters.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use crate::error::EsError;

/// Tells whether the client that sent a request has closed its connection.
pub type CloseProbe = Box<dyn Fn() -> bool + Send + Sync>;

/// How often a token with a close probe asks it: at the first check once this long has passed
/// since the last probe. A probe is a system call, and an inline handler's worker frees its
/// queued tasks at each one, so it goes by the clock: checks come per block of work, which can
/// be anywhere from microseconds (a cheap scorer) to a second apart (a script per document).
const PROBE_INTERVAL_MS: u64 = 10;

/// The clock probes go by, in [`monotonic_ms`]: advanced by [`tick_probe_clock`], so a check
/// costs an atomic load, not a clock read (a full scan checks once per block of 64 documents).
static PROBE_CLOCK_MS: AtomicU64 = AtomicU64::new(0);

/// Advances the clock close probes go by. `lode-http`'s inline watchdog, the only one to set
/// close probes, ticks it every millisecond while an inline handler runs.
pub fn tick_probe_clock() {
    PROBE_CLOCK_MS.store(monotonic_ms(), Ordering::Relaxed);
}

#[derive(Default)]
struct State {
    cancelled: AtomicBool,
    reason: OnceLock<String>,
    /// Set for a request whose handler runs on the connection's own thread, where the HTTP
    /// layer cannot see the connection close: the token asks the socket instead.
    close_probe: OnceLock<CloseProbe>,
    last_probe_ms: AtomicU64,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("cancelled", &self.cancelled)
            .field("reason", &self.reason)
            .field("close_probe", &self.close_probe.get().is_some())
            .finish()
    }
}

fn monotonic_ms() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64
}

impl State {
    fn closed_by_client(&self) -> bool {
        let Some(probe) = self.close_probe.get() else {
            return false;
        };
        let now = PROBE_CLOCK_MS.load(Ordering::Relaxed);
        if now.saturating_sub(self.last_probe_ms.load(Ordering::Relaxed)) < PROBE_INTERVAL_MS {
            return false;
        }
        self.last_probe_ms.store(now, Ordering::Relaxed);
        probe()
    }
}

#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    state: Arc<State>,
    parent: Option<Box<CancelToken>>,
}

thread_local! {
    static CURRENT: RefCell<Option<CancelToken>> = const { RefCell::new(None) };
}

impl CancelToken {
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// A token cancelled with `self` (and on its own).
    pub fn child(&self) -> CancelToken {
        CancelToken {
            state: Arc::default(),
            parent: Some(Box::new(self.clone())),
        }
    }

    /// Cancels with ES's reason (`by user request`, `channel closed`); the first reason stays.
    pub fn cancel(&self, reason: &str) {
        let _ = self.state.reason.set(reason.to_string());
        self.state.cancelled.store(true, Ordering::Release);
    }

    /// Makes the token ask `probe` now and then whether the client is gone (ES's "channel
    /// closed" cancellation), for a handler that runs where the connection cannot be watched.
    pub fn set_close_probe(&self, probe: CloseProbe) {
        let _ = self.state.close_probe.set(probe);
        self.state
            .last_probe_ms
            .store(monotonic_ms(), Ordering::Relaxed);
    }

    /// Whether the token was cancelled, without asking the client's connection: what the task
    /// list shows as `cancelled`. The probe belongs to the thread running the request.
    pub fn is_marked_cancelled(&self) -> bool {
        self.state.cancelled.load(Ordering::Acquire)
    }

    /// This token's own flag (not its parent's), the client's connection asked now and then.
    pub fn is_cancelled_itself(&self) -> bool {
        if self.state.cancelled.load(Ordering::Acquire) {
            return true;
        }
        if self.state.closed_by_client() {
            self.cancel("channel closed");
            return true;
        }
        false
    }

    pub fn is_cancelled(&self) -> bool {
        self.is_cancelled_itself() || self.parent.as_ref().is_some_and(|p| p.is_cancelled())
    }

    /// Why it was cancelled (its own reason first, else its parent's).
    pub fn reason(&self) -> Option<String> {
        if self.is_cancelled_itself() {
            return Some(self.state.reason.get().cloned().unwrap_or_default());
        }
        self.parent.as_ref().and_then(|p| p.reason())
    }

    /// ES's `task_cancelled_exception` (`task cancelled [by user request]`) once cancelled.
    pub fn check(&self) -> Result<(), EsError> {
        match self.reason() {
            Some(reason) => Err(task_cancelled(&reason)),
            None => Ok(()),
        }
    }

    /// The token of the request the calling thread runs, if any.
    pub fn current() -> Option<CancelToken> {
        CURRENT.with(|c| c.borrow().clone())
    }

    /// Runs `f` with `token` current on this thread (restoring the previous one after).
    pub fn run_current<R>(token: Option<CancelToken>, f: impl FnOnce() -> R) -> R {
        struct Restore(Option<CancelToken>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let prev = self.0.take();
                CURRENT.with(|c| *c.borrow_mut() = prev);
            }
        }
        let prev = CURRENT.with(|c| std::mem::replace(&mut *c.borrow_mut(), token));
        let _restore = Restore(prev);
        f()
    }
}

/// ES's `TaskCancelledException`: a 400 (ES 8 maps it to `BAD_REQUEST`).
pub fn task_cancelled(reason: &str) -> EsError {
    EsError::new(
        400,
        "task_cancelled_exception",
        format!("task cancelled [{reason}]"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_sets_the_flag_and_keeps_the_first_reason() {
        let t = CancelToken::new();
        assert!(!t.is_cancelled());
        assert!(t.check().is_ok());
        t.cancel("by user request");
        t.cancel("channel closed");
        assert!(t.is_cancelled());
        let e = t.check().unwrap_err();
        assert_eq!(e.kind, "task_cancelled_exception");
        assert_eq!(e.reason, "task cancelled [by user request]");
        assert_eq!(e.status, 400);
    }

    #[test]
    fn a_child_is_cancelled_with_its_parent_but_not_the_reverse() {
        let parent = CancelToken::new();
        let child = parent.child();
        let other = parent.child();
        child.cancel("by user request");
        assert!(child.is_cancelled() && !parent.is_cancelled() && !other.is_cancelled());
        parent.cancel("channel closed");
        assert!(other.is_cancelled());
        assert!(!other.is_cancelled_itself());
        assert_eq!(other.reason().as_deref(), Some("channel closed"));
    }

    #[test]
    fn a_close_probe_cancels_with_channel_closed_when_asked_after_its_interval() {
        let t = CancelToken::new();
        let closed = Arc::new(AtomicBool::new(false));
        let seen = closed.clone();
        t.set_close_probe(Box::new(move || seen.load(Ordering::Relaxed)));
        assert!(!t.is_cancelled());
        closed.store(true, Ordering::Relaxed);
        let deadline = Instant::now() + std::time::Duration::from_secs(5);
        while !t.is_cancelled() {
            assert!(Instant::now() < deadline, "the probe was never asked");
            tick_probe_clock();
        }
        assert_eq!(t.reason().as_deref(), Some("channel closed"));
    }

    #[test]
    fn a_close_probe_is_asked_by_the_clock_however_few_the_checks() {
        // A script scorer checks every 256 documents, which can be a second apart.
        let t = CancelToken::new();
        let asked = Arc::new(AtomicU64::new(0));
        let count = asked.clone();
        t.set_close_probe(Box::new(move || {
            count.fetch_add(1, Ordering::Relaxed);
            false
        }));
        for _ in 0..3 {
            std::thread::sleep(std::time::Duration::from_millis(PROBE_INTERVAL_MS + 5));
            tick_probe_clock();
            assert!(!t.is_cancelled());
        }
        // Three checks, each past the interval (a count-based cadence would ask none).
        assert_eq!(asked.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn the_current_token_is_scoped_to_the_call() {
        assert!(CancelToken::current().is_none());
        let t = CancelToken::new();
        let seen = CancelToken::run_current(Some(t.clone()), || {
            CancelToken::current().map(|c| Arc::ptr_eq(&c.state, &t.state))
        });
        assert_eq!(seen, Some(true));
        assert!(CancelToken::current().is_none());
    }
}
