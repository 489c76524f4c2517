//! A tantivy `Directory` that does not fsync on commit.
//!
//! Elasticsearch separates *refresh* (new segments become searchable, no fsync) from *flush*
//! (segments made durable, translog trimmed). tantivy's `MmapDirectory` fsyncs every file it
//! finishes and every `meta.json` it writes, which would make each refresh pay for durability
//! that the translog already provides. This wrapper writes without syncing and exposes
//! `sync_all`, which the shard calls at flush time.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    AntiCallToken, Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, TerminatingWrite,
    WatchCallback, WatchHandle, WritePtr,
};

#[derive(Clone, Debug)]
pub struct LazySyncDirectory {
    inner: MmapDirectory,
    root: PathBuf,
    /// Files rewritten in place (see `fieldnorms`): read from disk on each open, since the mmap
    /// cache would hand out the old mapping while an old reader keeps it alive.
    replaced: Arc<std::sync::Mutex<std::collections::HashSet<PathBuf>>>,
}

impl LazySyncDirectory {
    pub fn open(root: &Path) -> io::Result<LazySyncDirectory> {
        fs::create_dir_all(root)?;
        let inner = MmapDirectory::open(root).map_err(io::Error::other)?;
        Ok(LazySyncDirectory {
            inner,
            root: root.to_path_buf(),
            replaced: Default::default(),
        })
    }

    /// Marks `path` (relative) as rewritten in place, so later opens read the new contents.
    pub fn mark_replaced(&self, path: &Path) {
        self.replaced.lock().unwrap().insert(path.to_path_buf());
    }

    /// Makes every file of the index durable, then the directory entries themselves.
    pub fn sync_all(&self) -> io::Result<()> {
        for entry in fs::read_dir(&self.root)? {
            let entry = entry?;
            // A file may vanish between the listing and the open: tantivy's garbage collection
            // (after a merge ends, concurrently with this flush) deletes files no live commit
            // references, and those need no sync.
            let synced = entry.file_type().and_then(|t| match t.is_file() {
                true => File::open(entry.path())?.sync_all(),
                false => Ok(()),
            });
            match synced {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        File::open(&self.root)?.sync_all()
    }

    /// Total bytes of the files in the directory (the store size).
    pub fn size_in_bytes(&self) -> u64 {
        fs::read_dir(&self.root)
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .filter_map(|e| e.metadata().ok())
                    .filter(|m| m.is_file())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    }
}

struct UnsyncedFile(BufWriter<File>);

impl Write for UnsyncedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl TerminatingWrite for UnsyncedFile {
    fn terminate_ref(&mut self, _: AntiCallToken) -> io::Result<()> {
        self.0.flush()
    }
}

impl Directory for LazySyncDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        if self.replaced.lock().unwrap().contains(path) {
            let full = self.root.join(path);
            let bytes = fs::read(&full).map_err(|e| match e.kind() {
                io::ErrorKind::NotFound => OpenReadError::FileDoesNotExist(path.to_path_buf()),
                _ => OpenReadError::wrap_io_error(e, full),
            })?;
            return Ok(Arc::new(tantivy::directory::OwnedBytes::new(bytes)));
        }
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        let full = self.root.join(path);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&full)
            .map_err(|e| {
                if e.kind() == io::ErrorKind::AlreadyExists {
                    OpenWriteError::FileAlreadyExists(path.to_path_buf())
                } else {
                    OpenWriteError::wrap_io_error(e, path.to_path_buf())
                }
            })?;
        Ok(BufWriter::new(Box::new(UnsyncedFile(
            BufWriter::with_capacity(64 * 1024, file),
        ))))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let full = self.root.join(path);
        let tmp = self.root.join(format!(
            ".{}.tmp",
            path.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("atomic")
        ));
        {
            let mut f = File::create(&tmp)?;
            f.write_all(data)?;
        }
        fs::rename(&tmp, &full)
    }

    fn sync_directory(&self) -> io::Result<()> {
        Ok(())
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}
