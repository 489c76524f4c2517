//! Slots for running request handlers on the I/O runtime's own worker threads.
//!
//! A handler normally runs on one of Tokio's blocking threads, which costs a wake-up of that
//! thread and another of the worker that writes the response: for a cheap search or get that
//! is about half of its CPU. Searches and gets take an inline slot when one is free and run
//! where the request was read. There are fewer slots than workers, so a long search holds at
//! most one worker and the runtime keeps accepting, reading and answering on the others;
//! requests that find every slot taken go to the blocking threads as before.
//!
//! One more thing keeps connections served while a handler runs inline: Tokio's I/O driver
//! is polled by a worker that has nothing to run, and the worker that read the request may
//! be the one that was polling it, while the others sleep until notified. A watchdog thread
//! (outside the runtime) looks at the running inline handlers every millisecond; one that has
//! run longer than [`HANDOFF_AFTER`] gets an empty task spawned into the runtime from
//! outside, which wakes a sleeping worker: it runs the task, finds nothing else and polls the
//! driver. Cheap handlers finish before that and pay nothing for it.
//!
//! That wake is not enough on its own: a task the busy worker scheduled for itself (its LIFO
//! slot) cannot be stolen by the others, and one in its run queue is stolen only by a worker
//! that is awake, so a connection woken there can wait for the handler to end (a `_tasks`
//! listing that never saw the search it was polling for). A long handler therefore calls
//! [`hand_off_worker`] from its cancellation probes: Tokio's `block_in_place` moves the LIFO
//! task to the run queue and offers the worker to a new thread, and a task spawned inside it
//! (where this thread holds no worker, so it goes to the shared queue) wakes a sleeping
//! worker, which steals whatever this one still holds. `block_in_place` with a closure that
//! returns at once usually takes the worker back before the new thread starts, so the wake
//! is what frees the queue, probe after probe, whether or not the worker moved.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The most inline slots (the runtime's workers are bounded well below this).
const MAX_SLOTS: usize = 64;
/// How long an inline handler may run before another worker is woken for the I/O driver.
const HANDOFF_AFTER: Duration = Duration::from_millis(1);
const WATCH_EVERY: Duration = Duration::from_millis(1);

static RUNNING: AtomicUsize = AtomicUsize::new(0);
/// Per slot: 0 when free, else the start (microseconds since `EPOCH`, at least 1), with the
/// top bit set once the watchdog has woken a worker for it.
static STARTED: [AtomicU64; MAX_SLOTS] = [const { AtomicU64::new(0) }; MAX_SLOTS];
const KICKED: u64 = 1 << 63;
static EPOCH: OnceLock<Instant> = OnceLock::new();
static RUNTIME: OnceLock<tokio::runtime::Handle> = OnceLock::new();

fn now_micros() -> u64 {
    (EPOCH.get_or_init(Instant::now).elapsed().as_micros() as u64).max(1)
}

/// One of the inline slots, given back when dropped.
pub struct InlineSlot {
    index: usize,
}

impl InlineSlot {
    /// A slot if fewer than `limit` handlers run inline now.
    pub fn take(limit: usize) -> Option<InlineSlot> {
        let limit = limit.min(MAX_SLOTS);
        RUNNING
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < limit).then_some(n + 1)
            })
            .ok()?;
        let start = now_micros();
        // A free entry exists: at most `limit` slots are taken, each holding one entry.
        let index = (0..MAX_SLOTS)
            .find(|&i| {
                STARTED[i]
                    .compare_exchange(0, start, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            })
            .expect("a free inline entry");
        Some(InlineSlot { index })
    }
}

impl Drop for InlineSlot {
    fn drop(&mut self) {
        STARTED[self.index].store(0, Ordering::Release);
        RUNNING.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The inline slots for a runtime of `workers` threads: one worker stays free.
pub fn slots_for(workers: usize) -> usize {
    workers.saturating_sub(1).min(MAX_SLOTS)
}

/// Starts the watchdog for the runtime `handle` (once per process).
pub fn watch(handle: tokio::runtime::Handle) {
    if RUNTIME.set(handle).is_err() {
        return;
    }
    std::thread::Builder::new()
        .name("lode-inline-watch".into())
        .spawn(|| loop {
            if RUNNING.load(Ordering::Acquire) == 0 {
                std::thread::sleep(WATCH_EVERY * 10);
                continue;
            }
            kick_long_runners(now_micros());
            lode_engine::cancel::tick_probe_clock();
            std::thread::sleep(WATCH_EVERY);
        })
        .expect("spawn the inline watchdog");
}

/// Frees what the current worker holds (its LIFO slot, its run queue) for the other workers,
/// on a multi-threaded runtime: the caller is a handler that has run long on a worker and
/// goes on running. Called again later, it frees what was scheduled here since.
pub fn hand_off_worker() {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
        return;
    }
    tokio::task::block_in_place(|| {
        // No worker is held here: the task is queued remotely and a sleeping worker woken.
        drop(handle.spawn(async {}));
    });
}

/// Wakes a worker once for each inline handler that has run past `HANDOFF_AFTER`.
fn kick_long_runners(now: u64) -> usize {
    let mut kicked = 0;
    for entry in &STARTED {
        let v = entry.load(Ordering::Acquire);
        if v == 0 || v & KICKED != 0 || now.saturating_sub(v) < HANDOFF_AFTER.as_micros() as u64 {
            continue;
        }
        if entry
            .compare_exchange(v, v | KICKED, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            if let Some(rt) = RUNTIME.get() {
                // Spawned from outside the runtime: queued remotely, which notifies a
                // sleeping worker.
                drop(rt.spawn(async {}));
            }
            kicked += 1;
        }
    }
    kicked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_bounded_given_back_and_kicked_once_when_long() {
        let a = InlineSlot::take(2).expect("first");
        let b = InlineSlot::take(2).expect("second");
        assert!(InlineSlot::take(2).is_none());
        drop(a);
        let c = InlineSlot::take(2).expect("freed");
        assert!(InlineSlot::take(0).is_none());
        let later = now_micros() + 10_000;
        assert_eq!(kick_long_runners(later), 2);
        assert_eq!(kick_long_runners(later), 0, "a handler is kicked once");
        drop((b, c));
        assert_eq!(RUNNING.load(Ordering::Acquire), 0);
        assert!(STARTED.iter().all(|e| e.load(Ordering::Acquire) == 0));
        assert_eq!(slots_for(3), 2);
        assert_eq!(slots_for(1), 0);
    }
}
