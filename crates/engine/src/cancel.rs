//! Cancellation tokens: one flag a running request polls (ES's `CancellableTask`), set by
//! `POST /_tasks/{id}/_cancel` or by the HTTP layer when the client's connection closes
//! (ES's `RestCancellableNodeClient`). A child token (an `_msearch` item) is cancelled with
//! its parent. The HTTP layer makes a request's token *current* on the thread that runs its
//! handler, so handlers that support cancellation pick it up without new parameters.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use crate::error::EsError;

#[derive(Debug, Default)]
struct State {
    cancelled: AtomicBool,
    reason: OnceLock<String>,
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

    /// This token's own flag (not its parent's): what the task list shows as `cancelled`.
    pub fn is_cancelled_itself(&self) -> bool {
        self.state.cancelled.load(Ordering::Acquire)
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
