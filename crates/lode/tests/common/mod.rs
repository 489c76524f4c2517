//! Starts a real `lode serve` on an ephemeral port for integration tests.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A running `lode serve` child process with its own data directory.
/// The process is killed when the value is dropped.
pub struct Node {
    pub url: String,
    pub data: PathBuf,
    child: Option<Child>,
    _tmp: Option<tempfile::TempDir>,
}

impl Node {
    /// A fresh node with a temporary data directory.
    pub fn start() -> Node {
        Node::start_with(&[])
    }

    /// A fresh node with extra `-E name=value` settings (pass them as `["-E", "x=y"]`).
    pub fn start_with(extra: &[&str]) -> Node {
        let tmp = tempfile::tempdir().expect("tempdir");
        let data = tmp.path().join("data");
        let mut node = Node::start_on(&data, extra);
        node._tmp = Some(tmp);
        node
    }

    /// A node on an existing data directory (to test restarts).
    pub fn start_on(data: &Path, extra: &[&str]) -> Node {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lode"));
        cmd.arg("serve")
            .arg("-E")
            .arg("http.port=0")
            .arg("-E")
            .arg(format!("path.data={}", data.display()))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("spawn lode serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("lode serve exited before it was ready")
                .expect("read stdout");
            if let Some(pos) = line.find("http://") {
                break line[pos..]
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .trim_end_matches('/')
                    .to_string();
            }
        };
        // Keep draining stdout so the child never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Node {
            url,
            data: data.to_path_buf(),
            child: Some(child),
            _tmp: None,
        }
    }

    /// SIGKILL, as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM and wait for a clean shutdown.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(c.id().to_string())
                .status();
            let _ = c.wait();
        }
    }

    /// Keep the data directory alive after the node stops (for restarts).
    pub fn take_tmp(&mut self) -> Option<tempfile::TempDir> {
        self._tmp.take()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}
