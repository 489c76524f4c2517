"""The security layer: a node of its own with `xpack.security.enabled` and HTTP TLS (a CA and
server certificate made here with trustme), driven with the official client's `basic_auth=`,
`api_key=` and `ca_certs=`. Expected hits are computed from the documents this module indexes."""

import base64
import json
import os
import re
import subprocess
import threading
import time

import pytest
import trustme
from elasticsearch import (AuthenticationException, AuthorizationException, BadRequestError,
                           Elasticsearch, helpers)

from conftest import lode_binary

ELASTIC_PASSWORD = "bootstrap-Secret-41"
CLI_PASSWORD = "cli-Secret-Pw-77"
URL_RE = re.compile(r"https://127\.0\.0\.1:\d+")

DOCS = {
    "logs-a": [{"msg": "alpha %d" % i, "n": i} for i in range(7)],
    "logs-b": [{"msg": "beta %d" % i, "n": i} for i in range(4)],
}

READER_ROLE = {
    "cluster": ["monitor", "manage_own_api_key"],
    "indices": [{"names": ["logs-a", "view-a"], "privileges": ["read"]}],
}
WRITER_ROLE = {"indices": [{"names": ["logs-a"], "privileges": ["write"]}]}
MANAGER_ROLE = {"cluster": ["manage"]}


def _start(binary, data_dir, settings, env=None, timeout=60):
    cmd = [binary, "serve", "-E", "http.port=0", "-E", "path.data=%s" % data_dir,
           "-E", "cluster.routing.allocation.disk.threshold_enabled=false"]
    for s in settings:
        cmd += ["-E", s]
    stderr = open(os.path.join(data_dir, "..", "stderr.log"), "wb")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL,
                            env=dict(os.environ, **(env or {})))
    found = {}
    ready = threading.Event()

    def drain():
        for raw in iter(proc.stdout.readline, b""):
            m = URL_RE.search(raw.decode("utf-8", "replace"))
            if m and "url" not in found:
                found["url"] = m.group(0)
                ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    ready.wait(timeout)
    if "url" not in found:
        proc.kill()
        raise RuntimeError("secure lode did not start")
    return proc, found["url"]


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    base = tmp_path_factory.mktemp("secure")
    data = base / "data"
    data.mkdir()
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    ca_path, cert_path, key_path = base / "ca.pem", base / "cert.pem", base / "key.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    cert.cert_chain_pems[0].write_to_path(str(cert_path))
    for extra in cert.cert_chain_pems[1:]:
        with open(cert_path, "ab") as fh:
            fh.write(extra.bytes())
    cert.private_key_pem.write_to_path(str(key_path))
    binary = lode_binary()
    # `lode users` writes the store before the node starts
    subprocess.run([binary, "users", "useradd", "cli_user", "-p", CLI_PASSWORD, "-r", "viewer",
                    "-E", "path.data=%s" % data], check=True)
    proc, url = _start(binary, str(data), [
        "xpack.security.enabled=true",
        "xpack.security.http.ssl.enabled=true",
        "xpack.security.http.ssl.certificate=%s" % cert_path,
        "xpack.security.http.ssl.key=%s" % key_path,
        "xpack.security.http.ssl.certificate_authorities=%s" % ca_path,
    ], env={"ELASTIC_PASSWORD": ELASTIC_PASSWORD})
    n = {"url": url, "ca": str(ca_path), "data": str(data), "binary": binary, "base": base}
    admin = client(n, ("elastic", ELASTIC_PASSWORD))
    for index, docs in DOCS.items():
        admin.indices.create(index=index)
        helpers.bulk(admin, ({"_index": index, "_id": str(i), "_source": d}
                             for i, d in enumerate(docs)), refresh=True)
    admin.indices.put_alias(index="logs-a", name="view-a")
    admin.indices.put_alias(index="logs-a,logs-b", name="logs-both")
    admin.security.put_role(name="logs_a_reader", **READER_ROLE)
    admin.security.put_role(name="logs_a_writer", **WRITER_ROLE)
    admin.security.put_role(name="cluster_manager", **MANAGER_ROLE)
    admin.security.put_user(username="reader", password="reader-pw-1", roles=["logs_a_reader"])
    admin.security.put_user(username="writer", password="writer-pw-1", roles=["logs_a_writer"])
    admin.security.put_user(username="manager", password="manager-pw-1", roles=["cluster_manager"])
    try:
        yield n
    finally:
        proc.kill()
        proc.wait(10)


def client(node, basic_auth=None, api_key=None):
    return Elasticsearch(node["url"], ca_certs=node["ca"], basic_auth=basic_auth, api_key=api_key,
                         request_timeout=30, max_retries=0)


def admin(node):
    return client(node, ("elastic", ELASTIC_PASSWORD))


def hits_by_index(resp):
    out = {}
    for h in resp["hits"]["hits"]:
        out.setdefault(h["_index"], set()).add(h["_id"])
    return out


def all_ids(index):
    return {str(i) for i in range(len(DOCS[index]))}


def test_missing_credentials_401_with_challenges(node):
    with pytest.raises(AuthenticationException) as e:
        client(node).info()
    assert e.value.meta.status == 401
    err = e.value.body["error"]
    assert err["type"] == "security_exception"
    assert err["reason"] == "missing authentication credentials for REST request [/]"
    challenges = e.value.meta.headers.get("WWW-Authenticate")
    assert 'Basic realm="security" charset="UTF-8"' in challenges
    assert "ApiKey" in challenges


def test_wrong_password_401(node):
    with pytest.raises(AuthenticationException) as e:
        client(node, ("elastic", "not-the-password")).info()
    assert e.value.body["error"]["reason"] == \
        "unable to authenticate user [elastic] for REST request [/]"
    with pytest.raises(AuthenticationException):
        client(node, ("nobody", "whatever1")).info()


def test_superuser_over_tls(node):
    es = admin(node)
    assert es.info()["version"]["number"].startswith("8.")
    me = es.security.authenticate()
    assert me["username"] == "elastic"
    assert me["roles"] == ["superuser"]
    assert me["authentication_type"] == "realm"
    r = es.search(index="logs-*", size=100)
    assert hits_by_index(r) == {"logs-a": all_ids("logs-a"), "logs-b": all_ids("logs-b")}


def test_wildcard_expands_to_authorized_indices_only(node):
    es = client(node, ("reader", "reader-pw-1"))
    r = es.search(index="logs-*", size=100)
    assert hits_by_index(r) == {"logs-a": all_ids("logs-a")}
    assert r["hits"]["total"]["value"] == len(DOCS["logs-a"])
    r = es.search(size=100)  # no index: every index the user may read
    assert hits_by_index(r) == {"logs-a": all_ids("logs-a")}
    assert es.count(index="logs-*")["count"] == len(DOCS["logs-a"])


def test_explicit_forbidden_index_403(node):
    es = client(node, ("reader", "reader-pw-1"))
    with pytest.raises(AuthorizationException) as e:
        es.search(index="logs-b")
    assert e.value.meta.status == 403
    assert e.value.body["error"]["type"] == "security_exception"
    assert e.value.body["error"]["reason"] == (
        "action [indices:data/read/search] is unauthorized for user [reader] with effective "
        "roles [logs_a_reader] on indices [logs-b], this action is granted by the index "
        "privileges [read,all]")
    with pytest.raises(AuthorizationException):
        es.search(index="logs-a,logs-b")
    with pytest.raises(AuthorizationException):
        es.get(index="logs-b", id="0")
    assert es.get(index="logs-a", id="0")["_source"] == DOCS["logs-a"][0]


def test_terms_lookup_needs_read_on_the_looked_up_index(node):
    # ES's terms lookup runs a get as the searching user: indices:data/read/get on its index
    es = client(node, ("reader", "reader-pw-1"))
    lookup_b = {"terms": {"n": {"index": "logs-b", "id": "2", "path": "n"}}}
    with pytest.raises(AuthorizationException) as e:
        es.search(index="logs-a", query=lookup_b)
    assert e.value.meta.status == 403
    assert e.value.body["error"]["type"] == "security_exception"
    assert e.value.body["error"]["reason"] == (
        "action [indices:data/read/get] is unauthorized for user [reader] with effective "
        "roles [logs_a_reader] on indices [logs-b], this action is granted by the index "
        "privileges [read,all]")
    # every path that resolves lookups: count, aggregation filters, msearch items, by-query
    with pytest.raises(AuthorizationException):
        es.count(index="logs-a", query=lookup_b)
    with pytest.raises(AuthorizationException):
        es.search(index="logs-a", size=0, aggs={"f": {"filter": lookup_b}})
    # a missing index the user may not read is refused too, before it is resolved
    with pytest.raises(AuthorizationException):
        es.search(index="logs-a", query={"terms": {"n": {"index": "nope", "id": "1", "path": "n"}}})
    # a lookup on an index the user reads (by name or alias) works
    for lookup_index in ["logs-a", "view-a"]:
        q = {"terms": {"n": {"index": lookup_index, "id": "3", "path": "n"}}}
        r = es.search(index="logs-a", query=q, size=100)
        want = {str(i) for i, d in enumerate(DOCS["logs-a"]) if d["n"] == DOCS["logs-a"][3]["n"]}
        assert hits_by_index(r) == {"logs-a": want}
    # the superuser may look up in logs-b
    r = admin(node).search(index="logs-a", query=lookup_b, size=100)
    want = {str(i) for i, d in enumerate(DOCS["logs-a"]) if d["n"] == DOCS["logs-b"][2]["n"]}
    assert hits_by_index(r) == {"logs-a": want}


def test_aliases_checked_on_the_alias_name(node):
    es = client(node, ("reader", "reader-pw-1"))
    r = es.search(index="view-a", size=100)
    assert hits_by_index(r) == {"logs-a": all_ids("logs-a")}
    with pytest.raises(AuthorizationException):
        es.search(index="logs-both")
    # the superuser reads both through the alias
    r = admin(node).search(index="logs-both", size=100)
    assert hits_by_index(r) == {"logs-a": all_ids("logs-a"), "logs-b": all_ids("logs-b")}


def test_write_vs_read(node):
    reader = client(node, ("reader", "reader-pw-1"))
    with pytest.raises(AuthorizationException) as e:
        reader.index(index="logs-a", id="r1", document={"msg": "nope"})
    assert "indices:data/write/index" in e.value.body["error"]["reason"]
    writer = client(node, ("writer", "writer-pw-1"))
    assert writer.index(index="logs-a", id="w1", document={"msg": "w"})["result"] == "created"
    with pytest.raises(AuthorizationException):
        writer.search(index="logs-a")
    with pytest.raises(AuthorizationException):
        writer.index(index="logs-b", id="w1", document={"msg": "w"})
    # a write that would create an index needs create_index
    with pytest.raises(AuthorizationException):
        writer.index(index="logs-a-new", id="1", document={"msg": "w"})
    admin(node).delete(index="logs-a", id="w1", refresh=True)


def test_bulk_items_checked_one_by_one(node):
    writer = client(node, ("writer", "writer-pw-1"))
    r = writer.bulk(operations=[
        {"index": {"_index": "logs-a", "_id": "b1"}}, {"msg": "ok"},
        {"index": {"_index": "logs-b", "_id": "b1"}}, {"msg": "forbidden"},
        {"delete": {"_index": "logs-a", "_id": "b1"}},
        {"create": {"_index": "logs-a-new", "_id": "n1"}}, {"msg": "would create an index"},
    ])
    assert r["errors"] is True
    statuses = [list(i.values())[0]["status"] for i in r["items"]]
    assert statuses == [201, 403, 200, 403]
    assert r["items"][3]["create"]["error"]["type"] == "security_exception"
    forbidden = r["items"][1]["index"]
    assert forbidden["_index"] == "logs-b" and forbidden["_id"] == "b1"
    assert forbidden["error"]["type"] == "security_exception"
    assert not admin(node).exists(index="logs-b", id="b1")
    assert not admin(node).indices.exists(index="logs-a-new")


def test_writes_that_create_an_index_need_create_index(node):
    es = admin(node)
    es.security.put_role(name="logs_writer", indices=[{"names": ["logs-*"], "privileges": ["write"]}])
    es.security.put_user(username="wide_writer", password="wide-writer-1", roles=["logs_writer"])
    w = client(node, ("wide_writer", "wide-writer-1"))
    with pytest.raises(AuthorizationException) as e:
        w.index(index="logs-zzz", id="1", document={"msg": "x"})
    assert e.value.body["error"]["reason"].startswith("action [indices:admin/auto_create]")
    r = w.bulk(operations=[{"index": {"_index": "logs-zzz", "_id": "1"}}, {"msg": "x"},
                           {"index": {"_index": "logs-b", "_id": "ww"}}, {"msg": "y"}])
    assert [list(i.values())[0]["status"] for i in r["items"]] == [403, 201]
    assert r["items"][0]["index"]["error"]["reason"].startswith("action [indices:admin/auto_create]")
    assert not es.indices.exists(index="logs-zzz")
    es.delete(index="logs-b", id="ww", refresh=True)


def test_mget_and_msearch_items(node):
    es = client(node, ("reader", "reader-pw-1"))
    r = es.mget(docs=[{"_index": "logs-a", "_id": "1"}, {"_index": "logs-b", "_id": "1"}])
    assert r["docs"][0]["found"] is True
    assert r["docs"][1]["error"]["type"] == "security_exception"
    r = es.msearch(searches=[{"index": "logs-a"}, {}, {"index": "logs-b"}, {},
                             {"index": "logs-*"}, {"size": 100}])
    assert r["responses"][0]["hits"]["total"]["value"] == len(DOCS["logs-a"])
    assert r["responses"][1]["status"] == 403
    assert hits_by_index(r["responses"][2]) == {"logs-a": all_ids("logs-a")}


def raw_request(node, auth, method, path, body, content_type="application/json"):
    """The response's bytes, as sent by the server."""
    import ssl
    import urllib.request
    ctx = ssl.create_default_context(cafile=node["ca"])
    token = base64.b64encode(("%s:%s" % auth).encode()).decode()
    req = urllib.request.Request(node["url"] + path, data=body, method=method, headers={
        "Content-Type": content_type, "Authorization": "Basic " + token})
    with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
        return r.status, r.read()


def test_refused_items_leave_the_other_sources_as_sent(node):
    """Refused items are put back into an `_mget` / `_msearch` answer whose other documents
    keep their stored `_source` bytes (a big integer, `1.0`, an escape, inner whitespace)."""
    text = b'{"msg" : "raw",  "big": 18446744073709551616, "f": 1.0, "s": "\\u00e9"}'
    root = ("elastic", ELASTIC_PASSWORD)
    reader = ("reader", "reader-pw-1")
    assert raw_request(node, root, "PUT", "/logs-a/_doc/raw?refresh=true", text)[0] == 201
    try:
        docs = [{"_index": "logs-b", "_id": "1"}, {"_index": "logs-a", "_id": "raw"},
                {"_index": "logs-b", "_id": "2"}]
        status, raw = raw_request(node, reader, "POST", "/_mget", json.dumps({"docs": docs}).encode())
        assert status == 200 and b'"_source":' + text in raw
        got = json.loads(raw)["docs"]
        assert [d.get("error", {}).get("type") for d in got] == [
            "security_exception", None, "security_exception"]
        assert [d["_id"] for d in got] == ["1", "raw", "2"]
        assert got[1]["_source"] == json.loads(text)
        lines = [{"index": "logs-b"}, {}, {"index": "logs-a"}, {"query": {"ids": {"values": ["raw"]}}},
                 {"index": "logs-b"}, {}]
        body = b"".join(json.dumps(x).encode() + b"\n" for x in lines)
        status, raw = raw_request(node, reader, "POST", "/_msearch", body, "application/x-ndjson")
        assert status == 200 and b'"_source":' + text in raw
        got = json.loads(raw)["responses"]
        assert [r["status"] for r in got] == [403, 200, 403]
        assert [h["_source"] for h in got[1]["hits"]["hits"]] == [json.loads(text)]
    finally:
        admin(node).delete(index="logs-a", id="raw", refresh=True)


def test_cluster_monitor_vs_manage(node):
    reader = client(node, ("reader", "reader-pw-1"))
    assert reader.cluster.health()["status"] in ("green", "yellow")
    with pytest.raises(AuthorizationException) as e:
        reader.cluster.put_settings(transient={"search.max_buckets": 10000})
    assert e.value.body["error"]["reason"] == (
        "action [cluster:admin/settings/update] is unauthorized for user [reader] with "
        "effective roles [logs_a_reader], this action is granted by the cluster privileges "
        "[manage,all]")
    manager = client(node, ("manager", "manager-pw-1"))
    assert manager.cluster.put_settings(transient={"search.max_buckets": 10000})["acknowledged"]
    # manage does not include the security APIs
    with pytest.raises(AuthorizationException):
        manager.security.put_user(username="x", password="xxxxxx1", roles=[])


def test_api_key_create_use_invalidate(node):
    es = admin(node)
    k = es.security.create_api_key(name="ingest-key", expiration="1d")
    assert set(k) >= {"id", "name", "api_key", "encoded", "expiration"}
    assert k["name"] == "ingest-key"
    assert base64.b64decode(k["encoded"]).decode() == "%s:%s" % (k["id"], k["api_key"])
    keyed = client(node, api_key=(k["id"], k["api_key"]))
    me = keyed.security.authenticate()
    assert me["authentication_type"] == "api_key" and me["api_key"]["id"] == k["id"]
    assert me["username"] == "elastic"
    r = keyed.search(index="logs-*", size=100)
    assert set(hits_by_index(r)) == {"logs-a", "logs-b"}
    got = es.security.get_api_key(id=k["id"])["api_keys"]
    assert [g["name"] for g in got] == ["ingest-key"] and got[0]["invalidated"] is False
    assert k["api_key"] not in open(os.path.join(node["data"], "_security.json")).read()
    inv = es.security.invalidate_api_key(ids=[k["id"]])
    assert inv["invalidated_api_keys"] == [k["id"]]
    assert inv["previously_invalidated_api_keys"] == [] and inv["error_count"] == 0
    again = es.security.invalidate_api_key(ids=[k["id"]])
    assert again["previously_invalidated_api_keys"] == [k["id"]]
    with pytest.raises(AuthenticationException):
        keyed.search(index="logs-*")
    # the encoded form works as well (`api_key="..."`)
    k2 = es.security.create_api_key(name="encoded-key")
    assert client(node, api_key=k2["encoded"]).count(index="logs-b")["count"] == len(DOCS["logs-b"])


def test_role_descriptors_limit_a_key(node):
    es = admin(node)
    k = es.security.create_api_key(name="b-only", role_descriptors={
        "b_reader": {"indices": [{"names": ["logs-b"], "privileges": ["read"]}]}})
    keyed = client(node, api_key=(k["id"], k["api_key"]))
    assert hits_by_index(keyed.search(index="logs-*", size=100)) == {"logs-b": all_ids("logs-b")}
    with pytest.raises(AuthorizationException):
        keyed.search(index="logs-a")
    with pytest.raises(AuthorizationException):
        keyed.cluster.health()
    # a key is also bounded by its owner: the reader asks for logs-* and gets logs-a only
    reader = client(node, ("reader", "reader-pw-1"))
    rk = reader.security.create_api_key(name="reader-key", role_descriptors={
        "wide": {"indices": [{"names": ["logs-*"], "privileges": ["read"]}]}})
    rkeyed = client(node, api_key=(rk["id"], rk["api_key"]))
    assert hits_by_index(rkeyed.search(index="logs-*", size=100)) == \
        {"logs-a": all_ids("logs-a")}
    with pytest.raises(AuthorizationException):
        rkeyed.search(index="logs-b")
    # manage_own_api_key: the reader sees its own keys only
    mine = reader.security.get_api_key()["api_keys"]
    assert {m["name"] for m in mine} == {"reader-key"}


def test_users_and_roles_apis(node):
    es = admin(node)
    assert es.security.put_user(username="tmp", password="tmp-pw-01",
                                roles=["viewer"], full_name="T")["created"] is True
    got = es.security.get_user(username="tmp")["tmp"]
    assert got["roles"] == ["viewer"] and got["full_name"] == "T" and got["enabled"] is True
    tmp = client(node, ("tmp", "tmp-pw-01"))
    assert tmp.count(index="logs-b")["count"] == len(DOCS["logs-b"])  # viewer reads everything
    with pytest.raises(AuthorizationException):
        tmp.index(index="logs-b", document={})
    es.security.disable_user(username="tmp")
    with pytest.raises(AuthenticationException):
        tmp.count(index="logs-b")
    es.security.enable_user(username="tmp")
    es.security.change_password(username="tmp", password="tmp-pw-02")
    with pytest.raises(AuthenticationException):
        tmp.count(index="logs-b")
    assert client(node, ("tmp", "tmp-pw-02")).count(index="logs-b")["count"] == len(DOCS["logs-b"])
    assert es.security.delete_user(username="tmp")["found"] is True
    role = es.security.get_role(name="logs_a_reader")["logs_a_reader"]
    assert role["cluster"] == READER_ROLE["cluster"]
    assert role["indices"][0]["names"] == ["logs-a", "view-a"]
    assert "superuser" in es.security.get_role()
    with pytest.raises(BadRequestError) as e:
        es.security.put_role(name="bad", cluster=["not_a_privilege"])
    assert e.value.body["error"]["type"] == "illegal_argument_exception"
    assert es.security.put_role(name="gone", cluster=["monitor"])["role"]["created"] is True
    assert es.security.delete_role(name="gone")["found"] is True
    # role mappings are stored and served (test_security_dls.py covers them in full)
    assert es.security.put_role_mapping(name="m", roles=["viewer"], enabled=True,
                                        rules={"field": {"username": "*"}})["role_mapping"]["created"] is True
    assert es.security.delete_role_mapping(name="m")["found"] is True


def test_failed_logins_are_rate_limited(node):
    es = admin(node)
    es.security.put_user(username="victim", password="victim-pw-1", roles=["viewer"])
    for _ in range(5):
        with pytest.raises(AuthenticationException):
            client(node, ("victim", "wrong-guess")).info()
    # locked out from this address: even the right password is refused for a while
    with pytest.raises(AuthenticationException):
        client(node, ("victim", "victim-pw-1")).info()
    # other users are not affected
    assert client(node, ("reader", "reader-pw-1")).cluster.health()


def test_cli_users_and_no_clear_passwords_on_disk(node):
    es = client(node, ("cli_user", CLI_PASSWORD))
    me = es.security.authenticate()
    assert me["username"] == "cli_user" and me["roles"] == ["viewer"]
    secrets = [ELASTIC_PASSWORD, CLI_PASSWORD, "reader-pw-1", "writer-pw-1"]
    for root, _, files in os.walk(node["data"]):
        for f in files:
            with open(os.path.join(root, f), "rb") as fh:
                data = fh.read()
            for s in secrets:
                assert s.encode() not in data, "%s holds a password in clear" % f


def test_non_loopback_without_security_refuses_to_start(node, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    r = subprocess.run([node["binary"], "serve", "-E", "network.host=0.0.0.0",
                        "-E", "http.port=0", "-E", "path.data=%s" % data],
                       capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode != 0
    assert b"lode.security.allow_insecure_network" in r.stderr
    assert b"lode ready" not in r.stdout


def test_malformed_http_head_over_tls_gets_es_error_json(node):
    """The request-head check runs on the decrypted bytes: a bad protocol version is ES's
    400 error JSON over TLS too (before authentication, as Netty's decoder runs first)."""
    import json
    import socket
    import ssl
    ctx = ssl.create_default_context(cafile=node["ca"])
    host, port = node["url"][len("https://"):].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as raw:
        with ctx.wrap_socket(raw, server_hostname=host) as s:
            s.sendall(b"GET / HTTP/7.3\r\nHost: x\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.split(b" ")[1] == b"400"
    err = json.loads(body)["error"]
    assert err["type"] == "illegal_argument_exception"
    assert err["reason"] == "Unexpected http protocol version: HTTP/7.3"


def test_plain_http_to_the_tls_port_is_refused(node):
    import http.client
    import urllib.error
    import urllib.request
    plain = node["url"].replace("https://", "http://")
    # rustls answers a plain-text request with a TLS alert, which no HTTP client reads as HTTP
    with pytest.raises((urllib.error.URLError, http.client.HTTPException, OSError)):
        urllib.request.urlopen(plain + "/", timeout=10).read()


def test_scrolls_belong_to_who_opened_them(node):
    from elasticsearch import NotFoundError
    reader = client(node, ("reader", "reader-pw-1"))
    r = reader.search(index="logs-*", scroll="1m", size=2, sort=["n"])
    sid = r["_scroll_id"]
    assert [h["_source"]["n"] for h in r["hits"]["hits"]] == [0, 1]
    other = client(node, ("cli_user", CLI_PASSWORD))
    with pytest.raises(NotFoundError) as e:
        other.scroll(scroll_id=sid, scroll="1m")
    assert e.value.body["error"]["type"] == "search_context_missing_exception"
    with pytest.raises(NotFoundError):
        other.clear_scroll(scroll_id=sid)
    nxt = reader.scroll(scroll_id=sid, scroll="1m")
    assert [h["_source"]["n"] for h in nxt["hits"]["hits"]] == [2, 3]
    assert reader.clear_scroll(scroll_id=sid)["succeeded"] is True


def test_wildcards_follow_expand_wildcards(node):
    es = admin(node)
    es.indices.create(index="logs-hidden", settings={"index.hidden": True})
    es.index(index="logs-hidden", id="h", document={"msg": "hidden"}, refresh=True)
    es.security.put_role(name="all_logs_reader",
                         indices=[{"names": ["logs-*"], "privileges": ["read"]}])
    es.security.put_user(username="all_logs", password="all-logs-pw1", roles=["all_logs_reader"])
    u = client(node, ("all_logs", "all-logs-pw1"))
    assert set(hits_by_index(u.search(index="logs-*", size=100))) == {"logs-a", "logs-b"}
    r = u.search(index="logs-*", size=100, expand_wildcards="all")
    assert set(hits_by_index(r)) == {"logs-a", "logs-b", "logs-hidden"}
    es.indices.delete(index="logs-hidden")


def test_has_privileges(node):
    reader = client(node, ("reader", "reader-pw-1"))
    r = reader.security.has_privileges(
        cluster=["monitor", "manage"],
        index=[{"names": ["logs-a", "logs-b"], "privileges": ["read", "write"]}])
    assert r["username"] == "reader"
    assert r["has_all_requested"] is False
    assert r["cluster"] == {"monitor": True, "manage": False}
    assert r["index"] == {"logs-a": {"read": True, "write": False},
                          "logs-b": {"read": False, "write": False}}
    ok = reader.security.has_privileges(index=[{"names": ["logs-a"], "privileges": ["read"]}])
    assert ok["has_all_requested"] is True
    privs = reader.security.get_user_privileges()
    assert privs["cluster"] == sorted(READER_ROLE["cluster"])
    assert privs["indices"][0]["names"] == ["logs-a", "view-a"]


def test_security_apis_refuse_unknown_parameters(node):
    es = admin(node)
    with pytest.raises(BadRequestError) as e:
        es.perform_request("GET", "/_security/user", params={"sise": "1"})
    assert e.value.body["error"]["type"] == "illegal_argument_exception"
    assert e.value.body["error"]["reason"] == \
        "request [/_security/user] contains unrecognized parameter: [sise]"
    # refresh is accepted on changes
    assert es.security.put_role(name="refreshed", cluster=["monitor"],
                                refresh="wait_for")["role"]["created"] is True


def test_run_as_is_refused(node):
    with pytest.raises(BadRequestError) as e:
        admin(node).options(headers={"es-security-runas-user": "reader"}).info()
    assert e.value.body["error"]["type"] == "illegal_argument_exception"
