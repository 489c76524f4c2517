//! Slots for running request handlers on the I/O runtime's own worker threads.
//!
//! A handler normally runs on one of Tokio's blocking threads, which costs a wake-up of that
//! thread and another of the worker that writes the response: for a cheap search or get that
//! is about half of its CPU. Searches and gets take an inline slot when one is free and run
//! where the request was read. There are fewer slots than workers, so a long search holds at
//! most one worker and the runtime keeps accepting, reading and answering on the others;
//! requests that find every slot taken go to the blocking threads as before.

use std::sync::atomic::{AtomicUsize, Ordering};

static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// One of the inline slots, given back when dropped.
pub struct InlineSlot(());

impl InlineSlot {
    /// A slot if fewer than `limit` handlers run inline now.
    pub fn take(limit: usize) -> Option<InlineSlot> {
        RUNNING
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < limit).then_some(n + 1)
            })
            .ok()
            .map(|_| InlineSlot(()))
    }
}

impl Drop for InlineSlot {
    fn drop(&mut self) {
        RUNNING.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The inline slots for a runtime of `workers` threads: one worker stays free.
pub fn slots_for(workers: usize) -> usize {
    workers.saturating_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_bounded_and_given_back() {
        let a = InlineSlot::take(2).expect("first");
        let b = InlineSlot::take(2).expect("second");
        assert!(InlineSlot::take(2).is_none());
        drop(a);
        let c = InlineSlot::take(2).expect("freed");
        drop((b, c));
        assert!(InlineSlot::take(0).is_none());
        assert_eq!(slots_for(3), 2);
        assert_eq!(slots_for(1), 0);
    }
}
