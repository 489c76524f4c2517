use std::collections::{HashMap, HashSet};
use std::io::{self, BufWriter, Cursor, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::{fmt, result};

use common::HasLen;

use super::FileHandle;
use crate::core::META_FILEPATH;
use crate::directory::error::{DeleteError, OpenReadError, OpenWriteError};
use crate::directory::{
    AntiCallToken, Directory, FileSlice, TerminatingWrite, WatchCallback, WatchCallbackList,
    WatchHandle, WritePtr,
};

const MEMORY_USAGE_UPDATE_THRESHOLD: usize = 10_000;

struct MemoryUsageTracker {
    shared_usage: Arc<AtomicUsize>,
    reported_bytes: usize,
    unreported_bytes: usize,
}

impl MemoryUsageTracker {
    fn new(shared_usage: Arc<AtomicUsize>) -> Self {
        Self {
            shared_usage,
            reported_bytes: 0,
            unreported_bytes: 0,
        }
    }

    fn add(&mut self, num_bytes: usize) {
        self.unreported_bytes += num_bytes;
        if self.unreported_bytes >= MEMORY_USAGE_UPDATE_THRESHOLD {
            self.shared_usage
                .fetch_add(self.unreported_bytes, Ordering::Relaxed);
            self.reported_bytes += self.unreported_bytes;
            self.unreported_bytes = 0;
        }
    }

    fn release(&mut self) {
        if self.reported_bytes > 0 {
            self.shared_usage
                .fetch_sub(self.reported_bytes, Ordering::Relaxed);
            self.reported_bytes = 0;
        }
        self.unreported_bytes = 0;
    }
}

impl Drop for MemoryUsageTracker {
    fn drop(&mut self) {
        self.release();
    }
}

/// Writer associated with the [`RamDirectory`].
///
/// The Writer just writes a buffer.
struct VecWriter {
    path: PathBuf,
    shared_directory: RamDirectory,
    data: Cursor<Vec<u8>>,
    memory_usage: MemoryUsageTracker,
    is_finished: bool,
}

impl VecWriter {
    fn new(path_buf: PathBuf, shared_directory: RamDirectory) -> VecWriter {
        let memory_usage =
            MemoryUsageTracker::new(Arc::clone(&shared_directory.active_writer_mem_usage));
        VecWriter {
            path: path_buf,
            data: Cursor::new(Vec::new()),
            shared_directory,
            memory_usage,
            is_finished: true,
        }
    }
}

impl Drop for VecWriter {
    fn drop(&mut self) {
        if !self.is_finished {
            warn!(
                "You forgot to terminate {:?} before its writer got Drop. Do not rely on drop. \
                 This also occurs when the indexer crashed, so you may want to check the logs for \
                 the root cause.",
                self.path
            );
        }
        if let Ok(mut fs) = self.shared_directory.fs.write() {
            fs.active_writers.remove(&self.path);
        }
    }
}

impl Write for VecWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.is_finished = false;
        let previous_capacity = self.data.get_ref().capacity();
        self.data.write_all(buf)?;
        let capacity = self.data.get_ref().capacity();
        self.memory_usage.add(capacity - previous_capacity);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl TerminatingWrite for VecWriter {
    fn terminate_ref(&mut self, _: AntiCallToken) -> io::Result<()> {
        let mut data = std::mem::take(self.data.get_mut());
        data.shrink_to_fit();
        let mut fs = self.shared_directory.fs.write().unwrap();
        fs.active_writers.remove(&self.path);
        fs.write_owned(self.path.clone(), data);
        self.is_finished = true;
        self.memory_usage.release();
        Ok(())
    }
}

#[derive(Default)]
struct InnerDirectory {
    fs: HashMap<PathBuf, FileSlice>,
    active_writers: HashSet<PathBuf>,
    watch_router: WatchCallbackList,
}

impl InnerDirectory {
    fn write(&mut self, path: PathBuf, data: &[u8]) -> bool {
        self.write_owned(path, data.to_vec())
    }

    fn write_owned(&mut self, path: PathBuf, data: Vec<u8>) -> bool {
        self.fs.insert(path, FileSlice::from(data)).is_some()
    }

    fn open_read(&self, path: &Path) -> Result<FileSlice, OpenReadError> {
        self.fs
            .get(path)
            .ok_or_else(|| OpenReadError::FileDoesNotExist(PathBuf::from(path)))
            .cloned()
    }

    fn delete(&mut self, path: &Path) -> result::Result<(), DeleteError> {
        match self.fs.remove(path) {
            Some(_) => Ok(()),
            None => Err(DeleteError::FileDoesNotExist(PathBuf::from(path))),
        }
    }

    fn exists(&self, path: &Path) -> bool {
        self.fs.contains_key(path) || self.active_writers.contains(path)
    }

    fn watch(&mut self, watch_handle: WatchCallback) -> WatchHandle {
        self.watch_router.subscribe(watch_handle)
    }

    fn total_mem_usage(&self) -> usize {
        self.fs.values().map(|f| f.len()).sum()
    }
}

impl fmt::Debug for RamDirectory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RamDirectory")
    }
}

/// A Directory storing everything in anonymous memory.
///
/// It is mainly meant for unit testing.
/// Writes are only made visible upon terminating the writer.
#[derive(Clone, Default)]
pub struct RamDirectory {
    fs: Arc<RwLock<InnerDirectory>>,
    active_writer_mem_usage: Arc<AtomicUsize>,
}

impl RamDirectory {
    /// Constructor
    pub fn create() -> RamDirectory {
        Self::default()
    }

    /// Returns the size of the files and an estimate of active writer allocations.
    ///
    /// Active writer allocations are reported in 10 kB increments.
    pub fn total_mem_usage(&self) -> usize {
        self.fs.read().unwrap().total_mem_usage()
            + self.active_writer_mem_usage.load(Ordering::Relaxed)
    }

    /// Write a copy of all of the files saved in the [`RamDirectory`] in the target [`Directory`].
    ///
    /// Files are all written using the [`Directory::open_write()`] meaning, even if they were
    /// written using the [`Directory::atomic_write()`] api.
    ///
    /// If an error is encountered, files may be persisted partially.
    pub fn persist(&self, dest: &dyn Directory) -> crate::Result<()> {
        let wlock = self.fs.write().unwrap();
        for (path, file) in wlock.fs.iter() {
            let mut dest_wrt = dest.open_write(path)?;
            dest_wrt.write_all(file.read_bytes()?.as_slice())?;
            dest_wrt.terminate()?;
        }
        Ok(())
    }
}

impl Directory for RamDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        let file_slice = self.open_read(path)?;
        Ok(Arc::new(file_slice))
    }

    fn open_read(&self, path: &Path) -> result::Result<FileSlice, OpenReadError> {
        self.fs.read().unwrap().open_read(path)
    }

    fn delete(&self, path: &Path) -> result::Result<(), DeleteError> {
        crate::fail_point!("RamDirectory::delete", |_| {
            Err(DeleteError::IoError {
                io_error: Arc::new(io::Error::from(io::ErrorKind::Other)),
                filepath: path.to_path_buf(),
            })
        });
        self.fs.write().unwrap().delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        Ok(self
            .fs
            .read()
            .map_err(|e| OpenReadError::IoError {
                io_error: Arc::new(io::Error::other(e.to_string())),
                filepath: path.to_path_buf(),
            })?
            .exists(path))
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        let path_buf = PathBuf::from(path);
        let mut fs = self.fs.write().unwrap();
        if fs.exists(path) || !fs.active_writers.insert(path_buf.clone()) {
            return Err(OpenWriteError::FileAlreadyExists(path_buf));
        }
        drop(fs);
        let vec_writer = VecWriter::new(path_buf, self.clone());
        Ok(BufWriter::new(Box::new(vec_writer)))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        let bytes =
            self.open_read(path)?
                .read_bytes()
                .map_err(|io_error| OpenReadError::IoError {
                    io_error: Arc::new(io_error),
                    filepath: path.to_path_buf(),
                })?;
        Ok(bytes.as_slice().to_owned())
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let path_buf = PathBuf::from(path);
        self.fs.write().unwrap().write(path_buf, data);
        if path == *META_FILEPATH {
            drop(self.fs.write().unwrap().watch_router.broadcast());
        }
        Ok(())
    }

    fn watch(&self, watch_callback: WatchCallback) -> crate::Result<WatchHandle> {
        Ok(self.fs.write().unwrap().watch(watch_callback))
    }

    fn sync_directory(&self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::path::Path;

    use super::{RamDirectory, MEMORY_USAGE_UPDATE_THRESHOLD};
    use crate::directory::TerminatingWrite;
    use crate::Directory;

    #[test]
    fn test_persist() {
        let msg_atomic: &'static [u8] = b"atomic is the way";
        let msg_seq: &'static [u8] = b"sequential is the way";
        let path_atomic: &'static Path = Path::new("atomic");
        let path_seq: &'static Path = Path::new("seq");
        let directory = RamDirectory::create();
        assert!(directory.atomic_write(path_atomic, msg_atomic).is_ok());
        let mut wrt = directory.open_write(path_seq).unwrap();
        assert!(wrt.write_all(msg_seq).is_ok());
        assert!(wrt.terminate().is_ok());
        let directory_copy = RamDirectory::create();
        assert!(directory.persist(&directory_copy).is_ok());
        assert_eq!(directory_copy.atomic_read(path_atomic).unwrap(), msg_atomic);
        assert_eq!(directory_copy.atomic_read(path_seq).unwrap(), msg_seq);
    }

    #[test]
    fn test_dropped_writer_releases_path() {
        let dir = RamDirectory::default();
        let path = Path::new("file");
        let writer = dir.open_write(path).unwrap();
        assert!(dir.open_write(path).is_err());

        drop(writer);
        dir.open_write(path).unwrap().terminate().unwrap();
        assert!(dir.exists(path).unwrap());
    }

    #[test]
    fn test_active_writer_memory_usage() {
        let dir = RamDirectory::default();
        let path = Path::new("file");
        let mut writer = dir.open_write(path).unwrap();
        assert_eq!(dir.total_mem_usage(), 0);

        writer.write_all(&[0u8]).unwrap();
        assert_eq!(dir.total_mem_usage(), 0);
        writer
            .write_all(&vec![0u8; MEMORY_USAGE_UPDATE_THRESHOLD])
            .unwrap();
        let first_capacity = dir.total_mem_usage();
        assert!(first_capacity >= MEMORY_USAGE_UPDATE_THRESHOLD);

        writer.write_all(&vec![0u8; first_capacity + 1]).unwrap();
        let grown_capacity = dir.total_mem_usage();
        assert!(grown_capacity > first_capacity);

        writer.flush().unwrap();
        assert_eq!(dir.total_mem_usage(), grown_capacity);
        assert_eq!(dir.clone().total_mem_usage(), dir.total_mem_usage());

        let file_len = 1 + MEMORY_USAGE_UPDATE_THRESHOLD + first_capacity + 1;
        writer.terminate().unwrap();
        assert_eq!(dir.total_mem_usage(), file_len);

        dir.delete(path).unwrap();
        assert_eq!(dir.total_mem_usage(), 0);
    }
}
