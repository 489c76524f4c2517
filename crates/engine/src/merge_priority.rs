//! Background merges yield the CPU to requests.
//!
//! tantivy merges segments on threads of its own (`merge_thread_N`, started lazily by its
//! segment updater: not ours to configure), which on a 2-core machine take a whole core from
//! the searches and bulk requests running beside them: the latency spikes after merges that
//! Elasticsearch users fight. Lucene throttles merge I/O; here the merge threads get a lower
//! scheduling priority (nice 10: about a tenth of a busy core's time when requests want it)
//! and still run at full speed on idle CPU. `LODE_MERGE_NICE` overrides the niceness (0 keeps
//! them level with requests).

use std::collections::HashSet;

/// Niceness given to merge threads.
const DEFAULT_NICE: i32 = 10;

/// Finds merge threads by name and lowers their priority, once each.
#[derive(Default)]
pub struct MergePriority {
    done: HashSet<u32>,
}

impl MergePriority {
    /// Lowers the priority of merge threads started since the last call (Linux only: each
    /// thread has its own niceness there; elsewhere nothing happens).
    pub fn apply(&mut self) {
        let nice = niceness();
        if nice == 0 {
            return;
        }
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            return;
        };
        let mut alive = HashSet::new();
        for task in tasks.flatten() {
            let Some(tid) = task
                .file_name()
                .to_str()
                .and_then(|t| t.parse::<u32>().ok())
            else {
                continue;
            };
            alive.insert(tid);
            if self.done.contains(&tid) {
                continue;
            }
            let is_merge = std::fs::read_to_string(task.path().join("comm"))
                .is_ok_and(|comm| comm.starts_with("merge_thread"));
            if is_merge && set_niceness(tid, nice) {
                tracing::debug!(tid, nice, "merge thread priority lowered");
                self.done.insert(tid);
            }
        }
        // Thread ids are reused once a thread ends.
        self.done.retain(|tid| alive.contains(tid));
    }
}

fn niceness() -> i32 {
    std::env::var("LODE_MERGE_NICE")
        .ok()
        .and_then(|v| v.parse::<i32>().ok())
        .map(|n| n.clamp(0, 19))
        .unwrap_or(DEFAULT_NICE)
}

#[cfg(target_os = "linux")]
fn set_niceness(tid: u32, nice: i32) -> bool {
    // On Linux, PRIO_PROCESS with a thread id sets that one thread's niceness.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, nice) == 0 }
}

#[cfg(not(target_os = "linux"))]
fn set_niceness(_tid: u32, _nice: i32) -> bool {
    false
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn tid() -> u32 {
        unsafe { libc::syscall(libc::SYS_gettid) as u32 }
    }

    fn nice_of(tid: u32) -> i32 {
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
        // After the ")" closing the name: state is field 3, niceness field 19.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        rest.split(' ').nth(16).unwrap().parse().unwrap()
    }

    #[test]
    fn merge_threads_get_lower_priority_and_others_do_not() {
        let base = nice_of(tid());
        if base >= niceness() {
            return; // Running niced already: raising priority back needs privileges.
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let spawn = |name: &str| {
            let tx = tx.clone();
            std::thread::Builder::new()
                .name(name.to_string())
                .spawn(move || {
                    tx.send(tid()).unwrap();
                    std::thread::park();
                })
                .unwrap()
        };
        let merge = spawn("merge_thread_0");
        let merge_tid = rx.recv().unwrap();
        let other = spawn("thrd-tantivy-index0");
        let other_tid = rx.recv().unwrap();
        MergePriority::default().apply();
        assert_eq!(nice_of(merge_tid), niceness());
        assert_eq!(nice_of(other_tid), base);
        for t in [merge, other] {
            t.thread().unpark();
            t.join().unwrap();
        }
    }
}
