"""Session fixtures: start `lode serve`, load the accounts corpus, build the oracle.

Environment:
  LODE_BIN   server binary (default <repo>/target/debug/lode); it is never built here.
  LODE_URL   use an already running server at this URL instead of starting one.
  LODE_DOCS  number of generated documents (default 20000, minimum 20000).
"""

import collections
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import threading
import time

import pytest
from elasticsearch import Elasticsearch

import oracle

from oracle import GEN, MAPPING, QUERIES, REPO

N_DOCS = max(20000, int(os.environ.get("LODE_DOCS", "20000")))
URL_RE = re.compile(r"https?://[A-Za-z0-9.\-\[\]:]+:\d+")
STARTUP_TIMEOUT = 60

_server = {}


class LodeServer:
    def __init__(self, binary, data_dir):
        self.binary = binary
        self.data_dir = data_dir
        self.stdout_tail = collections.deque(maxlen=200)
        self.stderr_path = os.path.join(data_dir, "..", "lode-stderr.log")
        self.url = None
        self.proc = None

    def start(self):
        self.stderr_fh = open(self.stderr_path, "wb")
        self.cmd = cmd = [self.binary, "serve", "-E", "http.port=0", "-E", "path.data=%s" % self.data_dir]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.stderr_fh,
                                     stdin=subprocess.DEVNULL)
        found = threading.Event()

        def drain():
            for raw in iter(self.proc.stdout.readline, b""):
                line = raw.decode("utf-8", "replace").rstrip("\n")
                self.stdout_tail.append(line)
                if self.url is None:
                    m = URL_RE.search(line)
                    if m:
                        self.url = m.group(0)
                        found.set()
            found.set()

        threading.Thread(target=drain, daemon=True, name="lode-stdout").start()
        deadline = time.time() + STARTUP_TIMEOUT
        while time.time() < deadline and not found.is_set():
            found.wait(0.2)
        if self.url is None:
            try:
                rc = self.proc.wait(5) if found.is_set() else self.proc.poll()
            except subprocess.TimeoutExpired:
                rc = None
            self.stop()
            why = ("exited with code %r before printing its URL" % rc if rc is not None
                   else "did not print its URL within %ds" % STARTUP_TIMEOUT)
            raise RuntimeError("lode %s: %s\n--- stdout tail\n%s\n--- stderr tail\n%s"
                               % (why, " ".join(self.cmd), "\n".join(self.stdout_tail), self.stderr_tail()))

    def stderr_tail(self, lines=60):
        try:
            with open(self.stderr_path, "rb") as fh:
                data = fh.read().decode("utf-8", "replace").splitlines()
            return "\n".join(data[-lines:])
        except OSError:
            return "(no stderr)"

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        if getattr(self, "stderr_fh", None):
            self.stderr_fh.close()


@pytest.fixture(scope="session")
def lode_url(tmp_path_factory):
    url = os.environ.get("LODE_URL")
    if url:
        yield url.rstrip("/")
        return
    binary = os.environ.get("LODE_BIN") or str(REPO / "target" / "debug" / "lode")
    if not os.path.isabs(binary):
        binary = str((REPO / binary).resolve()) if (REPO / binary).exists() else os.path.abspath(binary)
    if not os.path.exists(binary):
        pytest.exit("LODE_BIN %s does not exist: build it first (cargo build)" % binary, returncode=2)
    data = tmp_path_factory.mktemp("lode") / "data"
    data.mkdir()
    server = LodeServer(binary, str(data))
    try:
        server.start()
    except RuntimeError as e:
        pytest.exit(str(e), returncode=3)
    _server["server"] = server
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def es(lode_url):
    return Elasticsearch(lode_url, request_timeout=60)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    server = _server.get("server")
    if server is None:
        return
    if exitstatus != 0 or terminalreporter.stats.get("failed") or terminalreporter.stats.get("error"):
        terminalreporter.write_sep("-", "lode stderr (tail)")
        terminalreporter.write_line(server.stderr_tail())
        if server.proc is not None and server.proc.returncode not in (None, -9):
            terminalreporter.write_line("lode exited with code %r" % server.proc.returncode)


# ---------------------------------------------------------------------------
# The accounts corpus
# ---------------------------------------------------------------------------

def _generate():
    out = subprocess.run([sys.executable, str(GEN), "--docs", str(N_DOCS), "--out", "-", "-q"],
                         check=True, stdout=subprocess.PIPE).stdout
    return out


@pytest.fixture(scope="session")
def corpus_ndjson():
    return _generate()


@pytest.fixture(scope="session")
def corpus(corpus_ndjson):
    """The oracle's input: the generated documents as Python dicts."""
    return oracle.Corpus(oracle.parse_ndjson(corpus_ndjson.decode("utf-8")))


@pytest.fixture(scope="session")
def accounts(es, corpus, corpus_ndjson):
    """Create `accounts` from mapping-accounts.json, bulk-load the corpus, refresh."""
    body = json.loads(MAPPING.read_text())
    if es.indices.exists(index="accounts"):
        es.indices.delete(index="accounts")
    es.indices.create(index="accounts", settings=body["settings"], mappings=body["mappings"])
    lines = corpus_ndjson.decode("utf-8").splitlines(keepends=True)
    chunk = 5000 * 2
    for k in range(0, len(lines), chunk):
        resp = es.bulk(operations="".join(lines[k:k + chunk]))
        assert resp["errors"] is False, [i for i in resp["items"] if "error" in next(iter(i.values()))][:3]
        assert len(resp["items"]) == len(lines[k:k + chunk]) // 2
    es.indices.refresh(index="accounts")
    return "accounts"


@pytest.fixture(scope="session")
def seed_queries():
    out = {}
    for p in sorted(QUERIES.iterdir()):
        out[p.name] = p.read_text()
    return out


def make_index(es, name, body, docs):
    """(Re)create a small index and load [(id, source)] with refresh."""
    if es.indices.exists(index=name):
        es.indices.delete(index=name)
    es.indices.create(index=name, **body)
    ops = []
    for i, d in docs:
        ops.append({"index": {"_index": name, "_id": i}})
        ops.append(d)
    if ops:
        resp = es.bulk(operations=ops, refresh=True)
        assert resp["errors"] is False
    return name


@pytest.fixture(scope="session")
def sparse(es):
    docs = oracle.sparse_docs()
    name = make_index(es, "sparse", oracle.SPARSE_MAPPING, docs)
    yield name, docs
    es.indices.delete(index=name, ignore_unavailable=True)
