"""Role mappings, document-level security and `_cat` filtered per index, on a node of its own
with `xpack.security.enabled` (plain HTTP on loopback). Every expected answer is computed here
from the documents and roles this module creates.
"""

import os
import re
import subprocess
import threading

import pytest
from elasticsearch import ApiError, Elasticsearch, helpers

from conftest import lode_binary

ELASTIC_PASSWORD = "dls-Secret-93"
URL_RE = re.compile(r"http://127\.0\.0\.1:\d+")

TEAMS = ["red", "blue", "green"]
DOCS = {
    "sales-1": [{"team": TEAMS[i % 3], "n": i, "msg": "deal %d" % i} for i in range(30)],
    "sales-2": [{"team": TEAMS[(i + 1) % 3], "n": 100 + i, "msg": "deal %d" % i} for i in range(12)],
    "hr": [{"team": "red", "n": i, "msg": "salary %d" % i} for i in range(5)],
}

RED_ONLY = {"term": {"team": "red"}}
RED_ROLE = {"cluster": ["monitor"],
            "indices": [{"names": ["sales-*"], "privileges": ["read", "monitor"], "query": RED_ONLY}]}
# a second role: blue documents of sales-2 only, given as a string, as ES stores queries
BLUE_ROLE = {"indices": [{"names": ["sales-2"], "privileges": ["read"],
                          "query": '{"term": {"team": "blue"}}'}]}


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    base = tmp_path_factory.mktemp("dls")
    data = base / "data"
    data.mkdir()
    cmd = [lode_binary(), "serve", "-E", "http.port=0", "-E", "path.data=%s" % data,
           "-E", "cluster.routing.allocation.disk.threshold_enabled=false",
           "-E", "xpack.security.enabled=true"]
    stderr = open(base / "stderr.log", "wb")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL,
                            env=dict(os.environ, ELASTIC_PASSWORD=ELASTIC_PASSWORD))
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
    ready.wait(60)
    if "url" not in found:
        proc.kill()
        raise RuntimeError("secure lode did not start")
    url = found["url"]
    admin = Elasticsearch(url, basic_auth=("elastic", ELASTIC_PASSWORD), request_timeout=30,
                          max_retries=0)
    for index, docs in DOCS.items():
        admin.indices.create(index=index, mappings={"properties": {
            "team": {"type": "keyword"}, "n": {"type": "integer"}, "msg": {"type": "text"}}})
        helpers.bulk(admin, ({"_index": index, "_id": str(i), "_source": d}
                             for i, d in enumerate(docs)), refresh=True)
    admin.indices.put_alias(index="sales-1", name="sales-view")
    admin.security.put_role(name="red_sales", **RED_ROLE)
    admin.security.put_role(name="blue_sales_2", **BLUE_ROLE)
    admin.security.put_user(username="red", password="red-pw-123", roles=["red_sales"])
    admin.security.put_user(username="redblue", password="redblue-pw-1",
                            roles=["red_sales", "blue_sales_2"])
    try:
        yield url
    finally:
        proc.kill()
        proc.wait(10)


def user(url, name, password):
    return Elasticsearch(url, basic_auth=(name, password), request_timeout=30, max_retries=0)


def admin(url):
    return user(url, "elastic", ELASTIC_PASSWORD)


def visible(index, teams):
    return {str(i) for i, d in enumerate(DOCS[index]) if d["team"] in teams}


def ids_of(resp):
    return {(h["_index"], h["_id"]) for h in resp["hits"]["hits"]}


def test_search_count_and_aggs_see_only_matching_documents(node):
    red = user(node, "red", "red-pw-123")
    r = red.search(index="sales-*", size=100, query={"match_all": {}},
                   aggs={"teams": {"terms": {"field": "team"}}, "total": {"sum": {"field": "n"}}})
    expected = {(i, d) for i in ("sales-1", "sales-2") for d in visible(i, {"red"})}
    assert ids_of(r) == expected
    assert r["hits"]["total"]["value"] == len(expected)
    assert [(b["key"], b["doc_count"]) for b in r["aggregations"]["teams"]["buckets"]] == \
        [("red", len(expected))]
    assert r["aggregations"]["total"]["value"] == sum(
        d["n"] for i in ("sales-1", "sales-2") for d in DOCS[i] if d["team"] == "red")
    # the user's own query is combined with the role query as a filter
    r = red.search(index="sales-1", size=100, query={"range": {"n": {"gte": 10}}})
    assert {h["_id"] for h in r["hits"]["hits"]} == {
        str(i) for i, d in enumerate(DOCS["sales-1"]) if d["team"] == "red" and d["n"] >= 10}
    assert red.count(index="sales-2")["count"] == len(visible("sales-2", {"red"}))
    # through an alias
    assert red.count(index="sales-view")["count"] == len(visible("sales-1", {"red"}))
    # the administrator sees everything
    assert admin(node).count(index="sales-1")["count"] == len(DOCS["sales-1"])


def test_queries_of_several_roles_are_or_ed(node):
    rb = user(node, "redblue", "redblue-pw-1")
    r = rb.search(index="sales-2", size=100)
    assert {h["_id"] for h in r["hits"]["hits"]} == visible("sales-2", {"red", "blue"})
    # sales-1 is granted by red_sales only
    r = rb.search(index="sales-1", size=100)
    assert {h["_id"] for h in r["hits"]["hits"]} == visible("sales-1", {"red"})


def test_get_and_mget_hide_documents_outside_the_query(node):
    red = user(node, "red", "red-pw-123")
    shown = sorted(visible("sales-1", {"red"}))[0]
    hidden = sorted(set(map(str, range(len(DOCS["sales-1"])))) - visible("sales-1", {"red"}))[0]
    assert red.get(index="sales-1", id=shown)["_source"] == DOCS["sales-1"][int(shown)]
    with pytest.raises(ApiError) as e:
        red.get(index="sales-1", id=hidden)
    assert e.value.status_code == 404
    assert e.value.body == {"_index": "sales-1", "_id": hidden, "found": False}
    with pytest.raises(ApiError) as e:
        red.get_source(index="sales-1", id=hidden)
    assert e.value.status_code == 404
    docs = red.mget(index="sales-1", ids=[shown, hidden])["docs"]
    assert [d["found"] for d in docs] == [True, False]


def test_scroll_and_msearch_keep_the_filter(node):
    red = user(node, "red", "red-pw-123")
    seen = set()
    r = red.search(index="sales-1", scroll="1m", size=3)
    while r["hits"]["hits"]:
        seen |= {h["_id"] for h in r["hits"]["hits"]}
        r = red.scroll(scroll_id=r["_scroll_id"], scroll="1m")
    red.clear_scroll(scroll_id=r["_scroll_id"])
    assert seen == visible("sales-1", {"red"})
    m = red.msearch(searches=[{"index": "sales-2"}, {"query": {"match_all": {}}, "size": 100}])
    assert {h["_id"] for h in m["responses"][0]["hits"]["hits"]} == visible("sales-2", {"red"})


def test_suggest_and_profile_are_refused_under_dls(node):
    red = user(node, "red", "red-pw-123")
    with pytest.raises(ApiError) as e:
        red.search(index="sales-1", suggest={"s": {"text": "deal", "term": {"field": "msg"}}})
    assert e.value.status_code == 400
    assert e.value.body["error"]["type"] == "security_exception"
    assert e.value.body["error"]["reason"] == \
        "Suggest isn't supported if document level security is enabled"
    with pytest.raises(ApiError) as e:
        red.search(index="sales-1", profile=True)
    assert e.value.body["error"]["reason"] == \
        "A search request cannot be profiled if document level security is enabled"


def test_role_shows_its_query(node):
    role = admin(node).security.get_role(name="blue_sales_2")["blue_sales_2"]
    assert role["indices"][0]["query"] in ('{"term":{"team":"blue"}}',)


def test_cat_apis_list_only_permitted_indices(node):
    red = user(node, "red", "red-pw-123")
    rows = red.cat.indices(format="json")
    assert sorted(r["index"] for r in rows) == ["sales-1", "sales-2"]
    rows = admin(node).cat.indices(format="json")
    assert sorted(r["index"] for r in rows) == sorted(DOCS)
    # an explicit index the user may not monitor is refused
    with pytest.raises(ApiError) as e:
        red.cat.indices(index="hr", format="json")
    assert e.value.status_code == 403
    # _cat/count counts what the user may read
    assert int(red.cat.count(index="sales-2", format="json")[0]["count"]) == \
        len(visible("sales-2", {"red"}))
    # a user without the cluster privilege gets ES's 403
    admin(node).security.put_role(name="reader_only", indices=[
        {"names": ["sales-1"], "privileges": ["read"]}])
    admin(node).security.put_user(username="nocluster", password="nocluster-pw",
                                  roles=["reader_only"])
    with pytest.raises(ApiError) as e:
        user(node, "nocluster", "nocluster-pw").cat.indices(format="json")
    assert e.value.status_code == 403
    assert "cluster:monitor/state" in e.value.body["error"]["reason"]


def test_role_mappings_api(node):
    es = admin(node)
    rules = {"all": [{"field": {"groups": "cn=admins,dc=example,dc=com"}},
                     {"except": {"field": {"username": "guest"}}}]}
    r = es.security.put_role_mapping(name="admins", roles=["superuser"], enabled=True,
                                     rules=rules, metadata={"version": 1})
    assert r == {"role_mapping": {"created": True}}
    r = es.security.put_role_mapping(name="admins", roles=["superuser", "viewer"], enabled=False,
                                     rules=rules)
    assert r == {"role_mapping": {"created": False}}
    got = es.security.get_role_mapping(name="admins")
    assert got == {"admins": {"enabled": False, "roles": ["superuser", "viewer"],
                              "rules": rules, "metadata": {}}}
    es.security.put_role_mapping(name="other", roles=["viewer"], enabled=True,
                                 rules={"field": {"realm.name": "ldap1"}})
    assert sorted(es.security.get_role_mapping()) == ["admins", "other"]
    with pytest.raises(ApiError) as e:
        es.security.get_role_mapping(name="nope")
    assert e.value.status_code == 404
    for body, reason in (
        ({"roles": ["r"], "enabled": True}, "failed to parse role-mapping [bad]. missing field [rules]"),
        ({"rules": {"field": {"username": "*"}}, "enabled": True},
         "failed to parse role-mapping [bad]. missing field [roles]"),
        ({"roles": ["r"], "rules": {"field": {"username": "*"}}},
         "failed to parse role-mapping [bad]. missing field [enabled]"),
    ):
        with pytest.raises(ApiError) as e:
            es.perform_request("PUT", "/_security/role_mapping/bad", body=body,
                               headers={"content-type": "application/json",
                                        "accept": "application/json"})
        assert e.value.status_code == 400
        assert e.value.body["error"]["reason"] == reason
    with pytest.raises(ApiError) as e:
        es.security.put_role_mapping(name="bad", roles=["r"], enabled=True, rules={"nope": {}})
    assert e.value.status_code == 400
    # role mappings do not apply to native realm users (as in ES): the red user keeps its roles
    es.security.put_role_mapping(name="everyone", roles=["superuser"], enabled=True,
                                 rules={"field": {"username": "*"}})
    me = user(node, "red", "red-pw-123").security.authenticate()
    assert me["roles"] == ["red_sales"]
    assert user(node, "red", "red-pw-123").count(index="sales-1")["count"] == \
        len(visible("sales-1", {"red"}))
    # managing mappings needs manage_security
    with pytest.raises(ApiError) as e:
        user(node, "red", "red-pw-123").security.get_role_mapping()
    assert e.value.status_code == 403
    for name in ("admins", "other", "everyone"):
        assert es.security.delete_role_mapping(name=name) == {"found": True}
    with pytest.raises(ApiError) as e:
        es.security.delete_role_mapping(name="admins")
    assert e.value.status_code == 404
    assert e.value.body == {"found": False}
