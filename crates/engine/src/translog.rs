//! The per-shard write-ahead log (Elasticsearch's translog).
//!
//! Every acknowledged operation is appended here before the response. Records are
//! `[len: u32][crc32: u32][payload]`, so recovery stops cleanly at a torn or corrupted tail.
//! Files are generations (`translog-<gen>.tlog`); a flush rolls to a new generation and, once
//! the index commit is durable, deletes the older ones (`translog.ckp` names the oldest
//! generation recovery must read).
//!
//! Durability `request` uses group commit: a writer waits until its record is fsynced, and one
//! fsync covers every record appended before it, so concurrent writers share fsyncs.

use parking_lot::{Condvar, Mutex};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

const CHECKPOINT: &str = "translog.ckp";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Index = 1,
    Delete = 2,
}

/// One logged operation.
#[derive(Debug, Clone, PartialEq)]
pub struct TranslogOp {
    pub kind: OpKind,
    pub seq_no: u64,
    pub version: u64,
    pub id: String,
    pub routing: Option<String>,
    pub source: Vec<u8>,
}

impl TranslogOp {
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.kind as u8);
        out.extend_from_slice(&self.seq_no.to_le_bytes());
        out.extend_from_slice(&self.version.to_le_bytes());
        put_bytes(out, self.id.as_bytes());
        match &self.routing {
            Some(r) => {
                out.push(1);
                put_bytes(out, r.as_bytes());
            }
            None => out.push(0),
        }
        put_bytes(out, &self.source);
    }

    fn decode(mut b: &[u8]) -> Option<TranslogOp> {
        let kind = match take(&mut b, 1)?[0] {
            1 => OpKind::Index,
            2 => OpKind::Delete,
            _ => return None,
        };
        let seq_no = u64::from_le_bytes(take(&mut b, 8)?.try_into().ok()?);
        let version = u64::from_le_bytes(take(&mut b, 8)?.try_into().ok()?);
        let id = String::from_utf8(get_bytes(&mut b)?.to_vec()).ok()?;
        let routing = match take(&mut b, 1)?[0] {
            0 => None,
            _ => Some(String::from_utf8(get_bytes(&mut b)?.to_vec()).ok()?),
        };
        let source = get_bytes(&mut b)?.to_vec();
        Some(TranslogOp {
            kind,
            seq_no,
            version,
            id,
            routing,
            source,
        })
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if b.len() < n {
        return None;
    }
    let (head, tail) = b.split_at(n);
    *b = tail;
    Some(head)
}

fn get_bytes<'a>(b: &mut &'a [u8]) -> Option<&'a [u8]> {
    let n = u32::from_le_bytes(take(b, 4)?.try_into().ok()?) as usize;
    take(b, n)
}

/// A position in the log: generation in the high 24 bits, byte offset in the low 40.
pub type Location = u64;

fn location(generation: u64, offset: u64) -> Location {
    (generation << 40) | offset
}

struct Writer {
    generation: u64,
    file: BufWriter<File>,
    /// A second handle on the same file, fsynced without holding the writer lock.
    sync_handle: File,
    offset: u64,
    ops: u64,
    /// Bytes and ops in generations not yet trimmed (everything since the last flush).
    uncommitted_bytes: u64,
    uncommitted_ops: u64,
    scratch: Vec<u8>,
}

#[derive(Debug, Default, Clone, Copy)]
pub struct TranslogStats {
    pub operations: u64,
    pub size_in_bytes: u64,
    pub uncommitted_operations: u64,
    pub uncommitted_size_in_bytes: u64,
    pub fsyncs: u64,
    pub earliest_last_modified_age: u64,
}

pub struct Translog {
    dir: PathBuf,
    writer: Mutex<Writer>,
    sync_lock: Mutex<()>,
    /// Group commit: one leader fsyncs for everyone waiting; the others sleep on `sync_done`.
    group: Mutex<Group>,
    sync_done: Condvar,
    async_waiters: Mutex<AsyncWaiters>,
    synced: AtomicU64,
    fsyncs: AtomicU64,
    last_sync: Mutex<Instant>,
}

#[derive(Default)]
struct Group {
    leader: bool,
    waiters: usize,
}

/// Called once the operation it waits for is durable (or the fsync failed).
pub type SyncCallback = Box<dyn FnOnce(io::Result<()>) + Send>;

/// Asynchronous waiters: requests that hand their wait to a leader thread instead of blocking
/// a thread each (the HTTP layer awaits them).
#[derive(Default)]
struct AsyncWaiters {
    leader_running: bool,
    waiting: Vec<(Location, SyncCallback)>,
}

/// How long a group-commit leader keeps gathering while new writers keep arriving, and the
/// pause without arrivals after which it fsyncs: a lone writer pays ~`GATHER_QUIET`, a crowd
/// shares one fsync among many (an HDD's ~10 ms fsync makes this matter most).
const GATHER_QUIET: std::time::Duration = std::time::Duration::from_micros(100);
const GATHER_MAX: std::time::Duration = std::time::Duration::from_micros(500);
const GATHER_ENOUGH: usize = 256;

/// What recovery found on disk.
pub struct Recovered {
    pub ops: Vec<TranslogOp>,
    /// Bytes cut off a torn or corrupted tail.
    pub truncated_bytes: u64,
}

impl Translog {
    /// Opens the log in `dir`, returning the operations recorded since the last flush.
    /// A torn or corrupted tail is truncated, never an error.
    pub fn open(dir: &Path) -> io::Result<(Translog, Recovered)> {
        fs::create_dir_all(dir)?;
        let min_gen = read_checkpoint(dir).unwrap_or(1);
        let mut gens: Vec<u64> = list_generations(dir)?;
        gens.sort_unstable();
        let mut ops = Vec::new();
        let mut truncated = 0;
        for &g in gens.iter().filter(|g| **g >= min_gen) {
            let path = gen_path(dir, g);
            let (mut found, valid_len, total_len) = read_generation(&path)?;
            if valid_len < total_len {
                truncated += total_len - valid_len;
                let f = OpenOptions::new().write(true).open(&path)?;
                f.set_len(valid_len)?;
                f.sync_all()?;
            }
            ops.append(&mut found);
        }
        for &g in gens.iter().filter(|g| **g < min_gen) {
            let _ = fs::remove_file(gen_path(dir, g));
        }
        // New operations always go to a fresh generation: recovery replays and then flushes.
        let generation = gens
            .last()
            .copied()
            .unwrap_or(0)
            .max(min_gen.saturating_sub(1))
            + 1;
        let writer = open_writer(dir, generation)?;
        let uncommitted_bytes: u64 = gens
            .iter()
            .filter(|g| **g >= min_gen)
            .filter_map(|g| fs::metadata(gen_path(dir, *g)).ok())
            .map(|m| m.len())
            .sum();
        let tl = Translog {
            dir: dir.to_path_buf(),
            writer: Mutex::new(Writer {
                uncommitted_bytes,
                uncommitted_ops: ops.len() as u64,
                ..writer
            }),
            sync_lock: Mutex::new(()),
            group: Mutex::new(Group::default()),
            sync_done: Condvar::new(),
            async_waiters: Mutex::new(AsyncWaiters::default()),
            synced: AtomicU64::new(location(generation, 0)),
            fsyncs: AtomicU64::new(0),
            last_sync: Mutex::new(Instant::now()),
        };
        if read_checkpoint(dir).is_none() {
            write_checkpoint(dir, min_gen)?;
        }
        Ok((
            tl,
            Recovered {
                ops,
                truncated_bytes: truncated,
            },
        ))
    }

    /// Appends one operation (buffered, not yet durable) and returns where it ends.
    pub fn append(&self, op: &TranslogOp) -> io::Result<Location> {
        let mut w = self.writer.lock();
        let mut scratch = std::mem::take(&mut w.scratch);
        scratch.clear();
        op.encode(&mut scratch);
        let crc = crc32fast::hash(&scratch);
        w.file.write_all(&(scratch.len() as u32).to_le_bytes())?;
        w.file.write_all(&crc.to_le_bytes())?;
        w.file.write_all(&scratch)?;
        let n = 8 + scratch.len() as u64;
        w.offset += n;
        w.ops += 1;
        w.uncommitted_bytes += n;
        w.uncommitted_ops += 1;
        w.scratch = scratch;
        Ok(location(w.generation, w.offset))
    }

    /// Returns once everything up to `loc` is fsynced. Concurrent callers share one fsync:
    /// the first becomes the leader, waits briefly while more writers join, and fsyncs for all.
    pub fn sync_to(&self, loc: Location) -> io::Result<()> {
        if self.synced.load(Ordering::Acquire) >= loc {
            return Ok(());
        }
        let mut g = self.group.lock();
        g.waiters += 1;
        let result = loop {
            if self.synced.load(Ordering::Acquire) >= loc {
                break Ok(());
            }
            if g.leader {
                self.sync_done.wait(&mut g);
                continue;
            }
            g.leader = true;
            let started = Instant::now();
            let mut seen = g.waiters;
            while seen < GATHER_ENOUGH && started.elapsed() < GATHER_MAX {
                self.sync_done.wait_for(&mut g, GATHER_QUIET);
                if g.waiters == seen {
                    break;
                }
                seen = g.waiters;
            }
            drop(g);
            let r = {
                let _turn = self.sync_lock.lock();
                self.sync_now()
            };
            g = self.group.lock();
            g.leader = false;
            self.sync_done.notify_all();
            if r.is_err() {
                break r;
            }
        };
        g.waiters -= 1;
        result
    }

    /// Registers `done` to run once everything up to `loc` is fsynced. Returns true when the
    /// caller must start the leader (`run_async_leader`) on a thread of its own.
    pub fn enqueue_sync(&self, loc: Location, done: SyncCallback) -> bool {
        if self.synced.load(Ordering::Acquire) >= loc {
            done(Ok(()));
            return false;
        }
        let mut w = self.async_waiters.lock();
        w.waiting.push((loc, done));
        !std::mem::replace(&mut w.leader_running, true)
    }

    /// The asynchronous group-commit leader: gathers waiters while they keep arriving, fsyncs
    /// once for all of them, answers them, and repeats until nobody waits.
    pub fn run_async_leader(&self) {
        loop {
            let started = Instant::now();
            let mut seen = self.async_waiters.lock().waiting.len();
            while seen < GATHER_ENOUGH && started.elapsed() < GATHER_MAX {
                std::thread::sleep(GATHER_QUIET);
                let now = self.async_waiters.lock().waiting.len();
                if now == seen {
                    break;
                }
                seen = now;
            }
            let result = {
                let _turn = self.sync_lock.lock();
                self.sync_now()
            };
            let synced = self.synced.load(Ordering::Acquire);
            let mut finished = false;
            let ready: Vec<SyncCallback> = {
                let mut w = self.async_waiters.lock();
                let (ready, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut w.waiting)
                    .into_iter()
                    .partition(|(loc, _)| result.is_err() || *loc <= synced);
                w.waiting = rest;
                if w.waiting.is_empty() {
                    w.leader_running = false;
                    finished = true;
                }
                ready.into_iter().map(|(_, cb)| cb).collect()
            };
            let failed = result.as_ref().err().map(|e| (e.kind(), e.to_string()));
            for cb in ready {
                cb(match &failed {
                    None => Ok(()),
                    Some((kind, msg)) => Err(io::Error::new(*kind, msg.clone())),
                });
            }
            if finished {
                return;
            }
        }
    }

    /// Fsyncs everything appended so far (the caller holds `sync_lock` or does not care).
    fn sync_now(&self) -> io::Result<()> {
        let (handle, target) = {
            let mut w = self.writer.lock();
            w.file.flush()?;
            (w.sync_handle.try_clone()?, location(w.generation, w.offset))
        };
        handle.sync_data()?;
        self.fsyncs.fetch_add(1, Ordering::Relaxed);
        self.synced.fetch_max(target, Ordering::AcqRel);
        *self.last_sync.lock() = Instant::now();
        Ok(())
    }

    /// Fsyncs if anything is unsynced (the `async` durability timer).
    pub fn sync(&self) -> io::Result<()> {
        let _turn = self.sync_lock.lock();
        let end = {
            let w = self.writer.lock();
            location(w.generation, w.offset)
        };
        if self.synced.load(Ordering::Acquire) >= end {
            return Ok(());
        }
        self.sync_now()
    }

    pub fn since_last_sync(&self) -> std::time::Duration {
        self.last_sync.lock().elapsed()
    }

    /// Starts a new generation; returns it. Operations appended from now on belong to it.
    pub fn roll(&self) -> io::Result<u64> {
        let _turn = self.sync_lock.lock();
        let mut w = self.writer.lock();
        w.file.flush()?;
        w.sync_handle.sync_data()?;
        self.fsyncs.fetch_add(1, Ordering::Relaxed);
        let next = w.generation + 1;
        let fresh = open_writer(&self.dir, next)?;
        let (ub, uo) = (w.uncommitted_bytes, w.uncommitted_ops);
        *w = Writer {
            uncommitted_bytes: ub,
            uncommitted_ops: uo,
            ..fresh
        };
        self.synced.store(location(next, 0), Ordering::Release);
        Ok(next)
    }

    /// Forgets generations older than `generation` (their operations are in a durable commit).
    pub fn trim_below(&self, generation: u64) -> io::Result<()> {
        write_checkpoint(&self.dir, generation)?;
        for g in list_generations(&self.dir)? {
            if g < generation {
                let _ = fs::remove_file(gen_path(&self.dir, g));
            }
        }
        let mut w = self.writer.lock();
        if w.generation >= generation {
            w.uncommitted_bytes = w.offset;
            w.uncommitted_ops = w.ops;
        }
        Ok(())
    }

    pub fn stats(&self) -> TranslogStats {
        let w = self.writer.lock();
        TranslogStats {
            operations: w.uncommitted_ops,
            size_in_bytes: w.uncommitted_bytes + 55,
            uncommitted_operations: w.uncommitted_ops,
            uncommitted_size_in_bytes: w.uncommitted_bytes + 55,
            fsyncs: self.fsyncs.load(Ordering::Relaxed),
            earliest_last_modified_age: 0,
        }
    }

    pub fn uncommitted_bytes(&self) -> u64 {
        self.writer.lock().uncommitted_bytes
    }
}

fn gen_path(dir: &Path, g: u64) -> PathBuf {
    dir.join(format!("translog-{g}.tlog"))
}

fn list_generations(dir: &Path) -> io::Result<Vec<u64>> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir)? {
        let name = e?.file_name();
        let name = name.to_string_lossy();
        if let Some(g) = name
            .strip_prefix("translog-")
            .and_then(|s| s.strip_suffix(".tlog"))
            .and_then(|s| s.parse().ok())
        {
            out.push(g);
        }
    }
    Ok(out)
}

fn open_writer(dir: &Path, generation: u64) -> io::Result<Writer> {
    let path = gen_path(dir, generation);
    let file = OpenOptions::new().create(true).append(true).open(&path)?;
    let offset = file.metadata()?.len();
    let sync_handle = file.try_clone()?;
    File::open(dir)?.sync_all()?;
    Ok(Writer {
        generation,
        file: BufWriter::with_capacity(256 * 1024, file),
        sync_handle,
        offset,
        ops: 0,
        uncommitted_bytes: 0,
        uncommitted_ops: 0,
        scratch: Vec::new(),
    })
}

/// Reads the valid records of one generation: (ops, valid length, file length).
fn read_generation(path: &Path) -> io::Result<(Vec<TranslogOp>, u64, u64)> {
    let mut f = File::open(path)?;
    let mut buf = Vec::new();
    f.seek(SeekFrom::Start(0))?;
    f.read_to_end(&mut buf)?;
    let mut ops = Vec::new();
    let mut pos = 0usize;
    while pos + 8 <= buf.len() {
        let len = u32::from_le_bytes(buf[pos..pos + 4].try_into().unwrap()) as usize;
        let crc = u32::from_le_bytes(buf[pos + 4..pos + 8].try_into().unwrap());
        let end = pos + 8 + len;
        if end > buf.len() {
            break;
        }
        let payload = &buf[pos + 8..end];
        if crc32fast::hash(payload) != crc {
            break;
        }
        match TranslogOp::decode(payload) {
            Some(op) => ops.push(op),
            None => break,
        }
        pos = end;
    }
    Ok((ops, pos as u64, buf.len() as u64))
}

fn read_checkpoint(dir: &Path) -> Option<u64> {
    let s = fs::read_to_string(dir.join(CHECKPOINT)).ok()?;
    let v: serde_json::Value = serde_json::from_str(&s).ok()?;
    v.get("min_generation")?.as_u64()
}

fn write_checkpoint(dir: &Path, min_generation: u64) -> io::Result<()> {
    let tmp = dir.join("translog.ckp.tmp");
    {
        let mut f = File::create(&tmp)?;
        f.write_all(
            serde_json::json!({ "min_generation": min_generation })
                .to_string()
                .as_bytes(),
        )?;
        f.sync_all()?;
    }
    fs::rename(&tmp, dir.join(CHECKPOINT))?;
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(seq: u64) -> TranslogOp {
        TranslogOp {
            kind: OpKind::Index,
            seq_no: seq,
            version: 1,
            id: format!("id{seq}"),
            routing: None,
            source: br#"{"a":1}"#.to_vec(),
        }
    }

    #[test]
    fn recovers_appended_ops_and_cuts_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (tl, rec) = Translog::open(dir.path()).unwrap();
            assert!(rec.ops.is_empty());
            for i in 0..5 {
                let loc = tl.append(&op(i)).unwrap();
                tl.sync_to(loc).unwrap();
            }
        }
        // Tear the last record in half.
        let g = list_generations(dir.path())
            .unwrap()
            .into_iter()
            .max()
            .unwrap();
        let p = gen_path(dir.path(), g);
        let len = fs::metadata(&p).unwrap().len();
        OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(len - 3)
            .unwrap();
        let (tl, rec) = Translog::open(dir.path()).unwrap();
        assert_eq!(rec.ops.len(), 4);
        assert_eq!(rec.ops[3], op(3));
        assert!(rec.truncated_bytes > 0);
        // After a flush-style trim, nothing is replayed.
        let g = tl.roll().unwrap();
        tl.trim_below(g).unwrap();
        drop(tl);
        let (_tl, rec) = Translog::open(dir.path()).unwrap();
        assert!(rec.ops.is_empty());
    }

    #[test]
    fn corrupted_record_stops_replay() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (tl, _) = Translog::open(dir.path()).unwrap();
            for i in 0..3 {
                tl.append(&op(i)).unwrap();
            }
            tl.sync().unwrap();
        }
        let g = list_generations(dir.path())
            .unwrap()
            .into_iter()
            .max()
            .unwrap();
        let p = gen_path(dir.path(), g);
        let mut bytes = fs::read(&p).unwrap();
        let last = bytes.len() - 2;
        bytes[last] ^= 0xff;
        fs::write(&p, bytes).unwrap();
        let (_tl, rec) = Translog::open(dir.path()).unwrap();
        assert_eq!(rec.ops.len(), 2);
    }

    #[test]
    fn concurrent_writers_share_fsyncs() {
        let dir = tempfile::tempdir().unwrap();
        let (tl, _) = Translog::open(dir.path()).unwrap();
        let tl = std::sync::Arc::new(tl);
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let tl = tl.clone();
                std::thread::spawn(move || {
                    for i in 0..50 {
                        let loc = tl.append(&op(t * 1000 + i)).unwrap();
                        tl.sync_to(loc).unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert!(tl.stats().fsyncs <= 400);
        assert_eq!(tl.stats().uncommitted_operations, 400);
    }
}
