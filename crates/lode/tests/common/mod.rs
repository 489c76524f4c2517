//! Starts a real `lode serve` on an ephemeral port for integration tests.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// How long a starting node (including its translog recovery) may take to print its address.
pub const READY_TIMEOUT: Duration = Duration::from_secs(120);

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

    /// A node on an existing data directory (to test restarts). Panics if the node does not
    /// print its address within `READY_TIMEOUT` (a hung recovery must fail the test, not hang it).
    pub fn start_on(data: &Path, extra: &[&str]) -> Node {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lode"));
        cmd.arg("serve")
            .arg("-E")
            .arg("http.port=0")
            .arg("-E")
            .arg(format!("path.data={}", data.display()))
            // A nearly full build disk must not flood-stage-block the tests' indices.
            .arg("-E")
            .arg("cluster.routing.allocation.disk.threshold_enabled=false")
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("spawn lode serve");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        // Reads the address line, then keeps draining stdout so the child never blocks on a
        // full pipe.
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(pos) = line.find("http://") {
                    if let Some(tx) = tx.take() {
                        let url = line[pos..]
                            .split_whitespace()
                            .next()
                            .unwrap()
                            .trim_end_matches('/')
                            .to_string();
                        let _ = tx.send(url);
                    }
                }
            }
        });
        let url = match rx.recv_timeout(READY_TIMEOUT) {
            Ok(url) => url,
            Err(e) => {
                let _ = child.kill();
                let status = child.wait();
                panic!(
                    "lode serve on {} was not ready ({e}); exit status {status:?}",
                    data.display()
                );
            }
        };
        Node {
            url,
            data: data.to_path_buf(),
            child: Some(child),
            _tmp: None,
        }
    }

    /// The server's process id (while it runs).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// One request against this node: `(status, body)`; panics on a transport error.
    pub fn req(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let b = body.map(|v| v.to_string());
        request(method, &format!("{}{path}", self.url), b.as_deref())
    }

    /// An NDJSON `_bulk` request (the body must end with a newline).
    pub fn bulk(&self, path: &str, ndjson: &str) -> (u16, Value) {
        request("POST", &format!("{}{path}", self.url), Some(ndjson))
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

    /// SIGTERM, then wait at most `bound` for the process to exit. `Err` (after a SIGKILL) when
    /// it is still running at the bound: a hung shutdown fails the test instead of hanging it.
    pub fn terminate_within(
        &mut self,
        bound: Duration,
    ) -> Result<std::process::ExitStatus, String> {
        self.signal_within("TERM", bound)
    }

    /// Sends `signal` (a `kill -s` name: `TERM`, `INT`), then waits at most `bound` for the
    /// process to exit, as `terminate_within`.
    pub fn signal_within(
        &mut self,
        signal: &str,
        bound: Duration,
    ) -> Result<std::process::ExitStatus, String> {
        let mut c = self.child.take().ok_or("the node is not running")?;
        let _ = Command::new("kill")
            .arg("-s")
            .arg(signal)
            .arg(c.id().to_string())
            .status();
        let until = std::time::Instant::now() + bound;
        loop {
            if let Some(status) = c.try_wait().map_err(|e| e.to_string())? {
                return Ok(status);
            }
            if std::time::Instant::now() >= until {
                let _ = c.kill();
                let _ = c.wait();
                return Err(format!("still running {bound:?} after SIGTERM"));
            }
            std::thread::sleep(Duration::from_millis(20));
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

/// An HTTP agent with bounded timeouts, so a request to a killed server fails instead of hanging.
pub fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(5))
        .timeout(Duration::from_secs(60))
        .build()
}

/// One request: `Ok((status, body))` for any HTTP response (the body parsed as JSON, or a JSON
/// string when it is not JSON), `Err` for a transport error (refused, reset, timed out).
pub fn try_request(
    agent: &ureq::Agent,
    method: &str,
    url: &str,
    body: Option<&str>,
) -> Result<(u16, Value), String> {
    let req = agent
        .request(method, url)
        .set("content-type", "application/json");
    let resp = match body {
        Some(b) => req.send_string(b),
        None => req.call(),
    };
    let resp = match resp {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => return Err(format!("{method} {url}: {e}")),
    };
    let status = resp.status();
    let text = resp
        .into_string()
        .map_err(|e| format!("{method} {url}: reading body: {e}"))?;
    Ok((
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    ))
}

/// One request that must get an HTTP response.
pub fn request(method: &str, url: &str, body: Option<&str>) -> (u16, Value) {
    thread_local! {
        static AGENT: ureq::Agent = agent();
    }
    AGENT
        .with(|a| try_request(a, method, url, body))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The shard directories of an index under `path.data` (`indices/<uuid>/<shard>`), found by the
/// index name recorded in `_state.json`.
pub fn shard_dirs(data: &Path, index: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(data.join("indices"))
        .expect("indices dir")
        .flatten()
    {
        let state = e.path().join("_state.json");
        let Ok(raw) = std::fs::read(&state) else {
            continue;
        };
        let v: Value = serde_json::from_slice(&raw).expect("index state json");
        if v["name"] == index {
            let mut shards: Vec<(usize, PathBuf)> = std::fs::read_dir(e.path())
                .unwrap()
                .flatten()
                .filter_map(|s| {
                    let n: usize = s.file_name().to_str()?.parse().ok()?;
                    Some((n, s.path()))
                })
                .collect();
            shards.sort();
            out.extend(shards.into_iter().map(|(_, p)| p));
        }
    }
    out
}

/// The newest translog generation file of a shard (`translog/translog-<gen>.tlog`).
pub fn newest_translog(shard_dir: &Path) -> PathBuf {
    let dir = shard_dir.join("translog");
    let mut gens: Vec<(u64, PathBuf)> = std::fs::read_dir(&dir)
        .expect("translog dir")
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let g = name
                .strip_prefix("translog-")?
                .strip_suffix(".tlog")?
                .parse()
                .ok()?;
            Some((g, e.path()))
        })
        .collect();
    gens.sort();
    gens.pop().expect("a translog generation").1
}
