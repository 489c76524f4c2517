"""Field-level security (a role's `field_security`) on a node of its own with
`xpack.security.enabled`. Every expected answer is computed here from the documents this
module indexes, with the fields the user's roles do not grant removed.
"""

import fnmatch
import os
import re
import subprocess
import threading

import pytest
from elasticsearch import ApiError, Elasticsearch, helpers

from conftest import lode_binary

ELASTIC_PASSWORD = "fls-Secret-41"
URL_RE = re.compile(r"http://127\.0\.0\.1:\d+")

TEAMS = ["red", "blue", "green"]
WORDS = ["alpha", "bravo", "charlie", "delta"]


def make_doc(i):
    d = {
        "name": "user%d" % i,
        "email": "user%d@corp.example" % i,
        "salary": 1000 + 37 * i,
        "team": TEAMS[i % 3],
        "bio": "likes %s and %s" % (WORDS[i % 4], WORDS[(i + 1) % 4]),
        "customer": {"handle": "h%d" % i, "phone": "555-%04d" % i, "level": i % 4},
    }
    if i % 2 == 0:
        d["tags"] = ["t%d" % (i % 3), "even"]
    return d


DOCS = [make_doc(i) for i in range(14)]
MAPPING = {"properties": {
    "name": {"type": "keyword"},
    "email": {"type": "keyword"},
    "salary": {"type": "integer"},
    "team": {"type": "keyword"},
    "bio": {"type": "text"},
    "tags": {"type": "keyword"},
    "customer": {"properties": {
        "handle": {"type": "keyword"}, "phone": {"type": "keyword"}, "level": {"type": "integer"}}},
}}

BASIC = {"grant": ["name", "bio", "tags", "team", "customer.*"], "except": ["customer.handle"]}
ROLES = {
    "fls_basic": {"indices": [{"names": ["people*"], "privileges": ["read"],
                               "field_security": BASIC}]},
    # a second role granting one more field: roles unite
    "fls_salary": {"cluster": ["manage_own_api_key"],
                   "indices": [{"names": ["people"], "privileges": ["read"],
                                "field_security": {"grant": ["salary"]}}]},
    # document-level security without field-level security
    "dls_red": {"indices": [{"names": ["people"], "privileges": ["read"],
                             "query": {"term": {"team": "red"}}}]},
    # reads and sees the mapping of a few fields
    "fls_meta": {"indices": [{"names": ["people"], "privileges": ["read", "view_index_metadata"],
                              "field_security": {"grant": ["name", "customer.phone", "tag*"]}}]},
    # document- and field-level security in one entry; the role query reads a hidden field
    "low_pay_names": {"indices": [{"names": ["people"], "privileges": ["read"],
                                   "query": {"range": {"salary": {"lt": 1200}}},
                                   "field_security": {"grant": ["name"]}}]},
    # sees some aliases' metadata
    "alias_viewer": {"indices": [{"names": ["people", "people-view", "w-*"],
                                  "privileges": ["view_index_metadata"]}]},
    # may write, sees `name` only
    "fls_writer": {"indices": [{"names": ["people", "people-w"], "privileges": ["read", "write"],
                                "field_security": {"grant": ["name"]}}]},
}
USERS = {
    "alice": ["fls_basic"],
    "bob": ["fls_basic", "fls_salary"],
    "carol": ["fls_basic", "dls_red"],
    "walt": ["fls_writer"],
    "vera": ["alias_viewer"],
    "mia": ["fls_meta"],
    "dora": ["low_pay_names"],
}
# alias → indices
ALIASES = {"people-view": ["people"], "people-all": ["people", "people-w"], "w-view": ["people-w"],
           "w-people": ["people"]}
PASSWORD = "user-pw-%s-1"


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    base = tmp_path_factory.mktemp("fls")
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
    adm = Elasticsearch(url, basic_auth=("elastic", ELASTIC_PASSWORD), request_timeout=30,
                        max_retries=0)
    for index in ("people", "people-w"):
        adm.indices.create(index=index, mappings=MAPPING)
        helpers.bulk(adm, ({"_index": index, "_id": str(i), "_source": d}
                           for i, d in enumerate(DOCS)), refresh=True)
    for alias, indices in ALIASES.items():
        for index in indices:
            adm.indices.put_alias(index=index, name=alias)
    for name, role in ROLES.items():
        adm.security.put_role(name=name, **role)
    for name, roles in USERS.items():
        adm.security.put_user(username=name, password=PASSWORD % name, roles=roles)
    try:
        yield url
    finally:
        proc.kill()
        proc.wait(10)


def user(url, name):
    return Elasticsearch(url, basic_auth=(name, PASSWORD % name), request_timeout=30,
                         max_retries=0)


def admin(url):
    return Elasticsearch(url, basic_auth=("elastic", ELASTIC_PASSWORD), request_timeout=30,
                         max_retries=0)


# --- the expected view, computed independently --------------------------------------------

def grants_of(name):
    """The (grant, except) groups of the user's roles on `people` (None: every field)."""
    groups = []
    for role in USERS[name]:
        for entry in ROLES[role]["indices"]:
            if not any(fnmatch.fnmatchcase("people", p) for p in entry["names"]):
                continue
            fs = entry.get("field_security")
            if fs is None:
                return None
            groups.append((fs.get("grant", ["*"]), fs.get("except", [])))
    return groups


def allowed(groups, path):
    if groups is None:
        return True
    for grant, exc in groups:
        ok = path.startswith("_") or any(fnmatch.fnmatchcase(path, g) for g in grant)
        if ok and not any(fnmatch.fnmatchcase(path, e) for e in exc):
            return True
    return False


def view(groups, value, path=""):
    """`value` with the leaves at paths not allowed removed, and emptied objects/arrays."""
    if groups is None:
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            p = path + k
            if isinstance(v, dict):
                sub = view(groups, v, p + ".")
                if sub:
                    out[k] = sub
            elif isinstance(v, list):
                sub = [x for x in (view_elem(groups, e, p) for e in v) if x is not None]
                if sub:
                    out[k] = sub
            elif allowed(groups, p):
                out[k] = v
        return out
    return value


def view_elem(groups, v, path):
    if isinstance(v, dict):
        sub = view(groups, v, path + ".")
        return sub or None
    return v if allowed(groups, path) else None


def leaves(doc, path=""):
    for k, v in doc.items():
        if isinstance(v, dict):
            yield from leaves(v, path + k + ".")
        else:
            yield path + k, v


def visible_docs(name):
    """(id, doc) the user may read (document-level security of roles without a query lifts it)."""
    queries = []
    for role in USERS[name]:
        for entry in ROLES[role]["indices"]:
            if "people" in entry["names"] or "people*" in entry["names"]:
                if "query" not in entry:
                    return list(enumerate(DOCS))
                queries.append(entry["query"]["term"])
    return [(i, d) for i, d in enumerate(DOCS)
            if any(d[f] == v for q in queries for f, v in q.items())]


# --- tests --------------------------------------------------------------------------------

def test_roles_keep_and_validate_field_security(node):
    adm = admin(node)
    r = adm.security.get_role(name="fls_basic")["fls_basic"]
    assert r["indices"][0]["field_security"] == BASIC
    with pytest.raises(ApiError) as e:
        adm.security.put_role(name="bad", indices=[{
            "names": ["x"], "privileges": ["read"],
            "field_security": {"grant": ["f1", "f2"], "except": ["f3"]}}])
    assert e.value.meta.status == 400
    assert e.value.body["error"]["type"] == "parse_exception"
    assert "Exceptions for field permissions must be a subset of the granted fields but f3 " \
           "is not a subset of f1,f2" in e.value.body["error"]["reason"]
    with pytest.raises(ApiError) as e:
        adm.security.put_role(name="bad", indices=[{
            "names": ["x"], "privileges": ["read"], "field_security": {"except": ["f3"]}}])
    assert e.value.meta.status == 400


@pytest.mark.parametrize("name", ["alice", "bob", "carol"])
def test_search_and_get_return_only_granted_fields(node, name):
    c = user(node, name)
    groups = grants_of(name)
    expected = {str(i): view(groups, d) for i, d in visible_docs(name)}
    r = c.search(index="people", size=100)
    assert {h["_id"]: h["_source"] for h in r["hits"]["hits"]} == expected
    one = next(iter(expected))
    assert c.get(index="people", id=one)["_source"] == expected[one]
    assert c.get_source(index="people", id=one).body == expected[one]
    got = c.mget(index="people", ids=list(expected))["docs"]
    assert {d["_id"]: d["_source"] for d in got} == expected
    # source filtering of the request applies on top
    r = c.search(index="people", size=100, source_includes=["customer.*", "email"])
    for h in r["hits"]["hits"]:
        want = {k: v for k, v in expected[h["_id"]].items() if k in ("customer", "email")}
        assert h.get("_source", {}) == want


def test_queries_on_hidden_fields_match_nothing(node):
    alice = user(node, "alice")
    bob = user(node, "bob")
    d = DOCS[3]
    # granted fields are searchable
    r = alice.search(index="people", query={"term": {"name": d["name"]}})
    assert [h["_id"] for h in r["hits"]["hits"]] == ["3"]
    r = alice.search(index="people", size=100, query={"match": {"bio": "alpha"}})
    assert {h["_id"] for h in r["hits"]["hits"]} == {
        str(i) for i, x in enumerate(DOCS) if "alpha" in x["bio"]}
    # hidden ones do not exist for the user
    for q in ({"term": {"email": d["email"]}}, {"term": {"customer.handle": "h3"}},
              {"range": {"salary": {"gte": 0}}}, {"exists": {"field": "salary"}},
              {"query_string": {"query": "\"%s\"" % d["email"]}}):
        assert alice.search(index="people", query=q)["hits"]["total"]["value"] == 0, q
        assert alice.count(index="people", query=q)["count"] == 0, q
    # bob's second role grants `salary`
    assert bob.count(index="people", query={"range": {"salary": {"gte": 0}}})["count"] == len(DOCS)
    assert bob.count(index="people", query={"exists": {"field": "email"}})["count"] == 0
    assert admin(node).count(index="people", query={"term": {"email": d["email"]}})["count"] == 1


def test_aggregations_see_no_hidden_values(node):
    alice = user(node, "alice")
    bob = user(node, "bob")
    aggs = {"emails": {"terms": {"field": "email"}}, "pay": {"sum": {"field": "salary"}},
            "levels": {"terms": {"field": "customer.level"}},
            "handles": {"cardinality": {"field": "customer.handle"}}}
    r = alice.search(index="people", size=0, aggs=aggs)["aggregations"]
    assert r["emails"]["buckets"] == []
    assert r["pay"]["value"] == 0
    assert r["handles"]["value"] == 0
    levels = {}
    for d in DOCS:
        levels[d["customer"]["level"]] = levels.get(d["customer"]["level"], 0) + 1
    assert {b["key"]: b["doc_count"] for b in r["levels"]["buckets"]} == levels
    r = bob.search(index="people", size=0, aggs=aggs)["aggregations"]
    assert r["pay"]["value"] == sum(d["salary"] for d in DOCS)
    assert r["emails"]["buckets"] == []


def test_fields_docvalues_and_highlight_omit_hidden_fields(node):
    alice = user(node, "alice")
    groups = grants_of("alice")
    r = alice.search(index="people", size=100, fields=["*"],
                     docvalue_fields=["email", "salary", "name"], source=False)
    for h in r["hits"]["hits"]:
        d = DOCS[int(h["_id"])]
        want = {}
        for path, v in leaves(d):
            if path in MAPPING_LEAVES and allowed(groups, path):
                want[path] = v if isinstance(v, list) else [v]
        got = {k: v for k, v in h.get("fields", {}).items() if k in MAPPING_LEAVES}
        assert got == want, h["_id"]
    r = alice.search(index="people", query={"match": {"bio": "alpha"}},
                     highlight={"fields": {"bio": {}, "email": {}}})
    for h in r["hits"]["hits"]:
        assert set(h["highlight"]) == {"bio"}


MAPPING_LEAVES = {"name", "email", "salary", "team", "bio", "tags",
                  "customer.handle", "customer.phone", "customer.level"}


def test_scroll_pages_are_filtered(node):
    alice = user(node, "alice")
    groups = grants_of("alice")
    seen = {}
    r = alice.search(index="people", size=5, scroll="1m", sort=["_doc"])
    while r["hits"]["hits"]:
        for h in r["hits"]["hits"]:
            seen[h["_id"]] = h["_source"]
        r = alice.scroll(scroll_id=r["_scroll_id"], scroll="1m")
    alice.clear_scroll(scroll_id=r["_scroll_id"])
    assert seen == {str(i): view(groups, d) for i, d in enumerate(DOCS)}


def test_updates_are_refused_under_field_level_security(node):
    walt = user(node, "walt")
    with pytest.raises(ApiError) as e:
        walt.update(index="people-w", id="1", doc={"name": "changed"})
    assert e.value.meta.status == 400
    assert e.value.body["error"]["type"] == "security_exception"
    assert e.value.body["error"]["reason"] == \
        "Can't execute an update request if field or document level security is enabled"
    r = walt.bulk(operations=[
        {"update": {"_index": "people-w", "_id": "2"}}, {"doc": {"name": "x"}},
        {"index": {"_index": "people-w", "_id": "new"}}, {"name": "new", "email": "n@x"},
    ], refresh=True)
    assert r["errors"] is True
    upd, idx = r["items"]
    assert upd["update"]["status"] == 400
    assert upd["update"]["error"]["type"] == "security_exception"
    assert idx["index"]["status"] == 201
    adm = admin(node)
    # nothing changed by the refused updates; the indexed document is whole
    assert adm.get(index="people-w", id="1")["_source"] == DOCS[1]
    assert adm.get(index="people-w", id="2")["_source"] == DOCS[2]
    assert adm.get(index="people-w", id="new")["_source"] == {"name": "new", "email": "n@x"}
    # ... and walt reads back only `name`
    assert walt.get(index="people-w", id="new")["_source"] == {"name": "new"}


def test_sort_on_a_hidden_field_sees_every_value_missing(node):
    alice = user(node, "alice")
    bob = user(node, "bob")
    # alice cannot read `salary`: every document is missing it, the tie is broken by `name`
    r = alice.search(index="people", size=100, sort=[{"salary": "desc"}, {"name": "asc"}])
    assert [h["_id"] for h in r["hits"]["hits"]] == \
        [str(i) for i, _ in sorted(enumerate(DOCS), key=lambda p: p[1]["name"])]
    assert len({str(h["sort"][0]) for h in r["hits"]["hits"]}) == 1
    # bob can
    r = bob.search(index="people", size=100, sort=[{"salary": "desc"}])
    assert [h["_id"] for h in r["hits"]["hits"]] == \
        [str(i) for i, _ in sorted(enumerate(DOCS), key=lambda p: -p[1]["salary"])]
    assert [h["sort"][0] for h in r["hits"]["hits"]] == sorted(
        (d["salary"] for d in DOCS), reverse=True)


def test_cat_aliases_lists_what_the_subject_may_see(node):
    def can(name, target):
        return any(any(fnmatch.fnmatchcase(target, p) for p in e["names"])
                   and set(e["privileges"]) & {"view_index_metadata", "manage", "all"}
                   for role in USERS[name] for e in ROLES[role]["indices"])

    every = sorted((a, i) for a, ixs in ALIASES.items() for i in ixs)
    rows = admin(node).cat.aliases(format="json", h="alias,index")
    assert sorted((r["alias"], r["index"]) for r in rows) == every
    for name in ("vera", "alice"):
        c = user(node, name)
        want = [(a, i) for a, i in every if can(name, a) and can(name, i)]
        rows = c.cat.aliases(format="json", h="alias,index")
        assert sorted((r["alias"], r["index"]) for r in rows) == want, name
        rows = c.cat.aliases(name="*view", format="json", h="alias,index")
        assert sorted((r["alias"], r["index"]) for r in rows) == \
            [(a, i) for a, i in want if a.endswith("view")]
    # vera does see some, alice (read only) none
    assert user(node, "vera").cat.aliases(format="json")
    assert user(node, "alice").cat.aliases(format="json").body == []


def test_get_mapping_shows_only_readable_fields(node):
    mia = user(node, "mia")
    groups = grants_of("mia")

    def keep(props, prefix=""):
        out = {}
        for k, v in props.items():
            if "properties" in v:
                sub = keep(v["properties"], prefix + k + ".")
                if sub:
                    out[k] = dict(v, properties=sub)
            elif allowed(groups, prefix + k):
                out[k] = v
        return out

    want = keep(MAPPING["properties"])
    assert want and set(want) != set(MAPPING["properties"])
    got = mia.indices.get_mapping(index="people")["people"]["mappings"]["properties"]
    assert got == want
    got = mia.indices.get(index="people")["people"]["mappings"]["properties"]
    assert got == want
    # the administrator sees the whole mapping
    got = admin(node).indices.get_mapping(index="people")["people"]["mappings"]["properties"]
    assert got == MAPPING["properties"]
    # and mia reads what the mapping shows
    r = mia.search(index="people", size=100)
    assert {h["_id"]: h["_source"] for h in r["hits"]["hits"]} == {
        str(i): view(groups, d) for i, d in enumerate(DOCS)}


def test_msearch_and_by_query_apis_apply_field_level_security(node):
    alice = user(node, "alice")
    groups = grants_of("alice")
    r = alice.msearch(searches=[
        {"index": "people"}, {"query": {"term": {"name": "user4"}}},
        {"index": "people"}, {"query": {"term": {"email": "user4@corp.example"}}},
    ])["responses"]
    assert [h["_source"] for h in r[0]["hits"]["hits"]] == [view(groups, DOCS[4])]
    assert r[1]["hits"]["total"]["value"] == 0
    # an update by query would write back documents walt sees only part of
    walt = user(node, "walt")
    with pytest.raises(ApiError) as e:
        walt.update_by_query(index="people-w", query={"match_all": {}})
    assert e.value.meta.status == 400
    assert e.value.body["error"]["type"] == "security_exception"
    assert admin(node).get(index="people-w", id="3")["_source"] == DOCS[3]
    # a delete by query on a hidden field matches nothing (walt sees `name` only)
    r = walt.delete_by_query(index="people-w", query={"term": {"email": DOCS[5]["email"]}},
                             refresh=True)
    assert r["deleted"] == 0
    r = walt.delete_by_query(index="people-w", query={"term": {"name": DOCS[5]["name"]}},
                             refresh=True)
    assert r["deleted"] == 1
    assert not admin(node).exists(index="people-w", id="5")


def test_terms_lookups_read_the_document_as_the_user_may(node):
    adm = admin(node)
    adm.index(index="people-lookup", id="lk", document={"name": "user7", "email": "user9"},
              refresh=True)
    alice = user(node, "alice")

    def lookup(path):
        return {"terms": {"name": {"index": "people-lookup", "id": "lk", "path": path}}}

    # the granted field's values are looked up
    r = alice.search(index="people", query=lookup("name"))
    assert [h["_id"] for h in r["hits"]["hits"]] == ["7"]
    # the hidden one gives no terms (the administrator's lookup finds user9)
    assert alice.count(index="people", query=lookup("email"))["count"] == 0
    r = adm.search(index="people", query=lookup("email"))
    assert [h["_id"] for h in r["hits"]["hits"]] == ["9"]


def test_scripts_runtime_fields_and_top_hits_see_the_filtered_source(node):
    alice = user(node, "alice")
    bob = user(node, "bob")
    groups = grants_of("alice")
    # a runtime field without a script reads `_source`: the hidden value is not there
    rt = {"salary": {"type": "long"}}
    q = {"range": {"salary": {"gte": 0}}}
    r = alice.search(index="people", query=q, runtime_mappings=rt, size=100)
    assert r["hits"]["total"]["value"] == 0
    r = bob.search(index="people", query=q, runtime_mappings=rt, size=100)
    assert r["hits"]["total"]["value"] == len(DOCS)
    # scripts' params._source
    r = alice.search(index="people", size=100, query={"match_all": {}}, script_fields={
        "n": {"script": "params._source.name"},
        "s": {"script": "params._source.salary"}})
    for h in r["hits"]["hits"]:
        d = DOCS[int(h["_id"])]
        assert h["fields"]["n"] == [d["name"]]
        assert h["fields"].get("s") in (None, [None])
    # doc values: the hidden field is mapped but has none
    sf = {"k": {"script": "doc['salary'].size()"}, "v": {"script": "doc['name'].value"}}
    for c, size in ((alice, 0), (bob, 1)):
        r = c.search(index="people", size=100, script_fields=sf)
        for h in r["hits"]["hits"]:
            assert h["fields"]["k"] == [size]
            assert h["fields"]["v"] == [DOCS[int(h["_id"])]["name"]]
    # top_hits
    r = alice.search(index="people", size=0, aggs={"by_team": {
        "terms": {"field": "team"}, "aggs": {"top": {"top_hits": {"size": 20}}}}})
    for b in r["aggregations"]["by_team"]["buckets"]:
        hits = b["top"]["hits"]["hits"]
        assert {h["_id"] for h in hits} == {
            str(i) for i, d in enumerate(DOCS) if d["team"] == b["key"]}
        for h in hits:
            assert h["_source"] == view(groups, DOCS[int(h["_id"])])


def test_suggesters_do_not_read_hidden_fields(node):
    alice = user(node, "alice")
    sugg = {"hidden": {"text": "user3@corp.exampel", "term": {"field": "email"}},
            "shown": {"text": "user3x", "term": {"field": "name"}}}
    # what an unrestricted subject gets, computed from the documents: the close values
    emails = {d["email"] for d in DOCS}
    r = admin(node).search(index="people", size=0, suggest=sugg)["suggest"]
    assert {o["text"] for o in r["hidden"][0]["options"]} <= emails
    assert "user3@corp.example" in {o["text"] for o in r["hidden"][0]["options"]}
    r = alice.search(index="people", size=0, suggest=sugg)["suggest"]
    assert r["hidden"][0]["text"] == "user3@corp.exampel"
    assert r["hidden"][0]["options"] == []
    names = {d["name"] for d in DOCS}
    shown = {o["text"] for o in r["shown"][0]["options"]}
    assert shown and shown <= names
    # the phrase suggester neither
    phrase = {"p": {"text": "user3@corp.exampel", "phrase": {"field": "email"}}}
    r = alice.search(index="people", size=0, suggest=phrase)["suggest"]
    assert all(e["options"] == [] for e in r["p"])


def test_api_keys_are_bounded_by_their_own_and_their_owners_fields(node):
    def key_client(resp):
        return Elasticsearch(node, api_key=(resp["id"], resp["api_key"]), request_timeout=30,
                             max_retries=0)

    descriptors = {"k": {"indices": [{"names": ["people"], "privileges": ["read"],
                                      "field_security": {"grant": ["name", "salary", "email"]}}]}}
    # the superuser's key: its own descriptors only
    k = key_client(admin(node).security.create_api_key(name="k1", role_descriptors=descriptors))
    g_key = [(["name", "salary", "email"], [])]
    r = k.search(index="people", size=100)
    assert {h["_id"]: h["_source"] for h in r["hits"]["hits"]} == {
        str(i): view(g_key, d) for i, d in enumerate(DOCS)}
    # bob's key: the intersection of the key's fields and bob's (name, salary)
    k = key_client(user(node, "bob").security.create_api_key(name="k2",
                                                             role_descriptors=descriptors))
    g_bob = grants_of("bob")
    r = k.search(index="people", size=100)
    for h in r["hits"]["hits"]:
        d = DOCS[int(h["_id"])]
        want = {p: v for p, v in leaves(d) if allowed(g_key, p) and allowed(g_bob, p)}
        assert dict(leaves(h["_source"])) == want


def test_role_query_sees_the_fields_the_role_hides(node):
    dora = user(node, "dora")
    want = {str(i): {"name": d["name"]} for i, d in enumerate(DOCS) if d["salary"] < 1200}
    assert want and len(want) < len(DOCS)
    r = dora.search(index="people", size=100)
    assert {h["_id"]: h["_source"] for h in r["hits"]["hits"]} == want
    assert dora.count(index="people")["count"] == len(want)
    # her own queries on the hidden field match nothing
    assert dora.count(index="people", query={"range": {"salary": {"lt": 1200}}})["count"] == 0
    hidden = next(str(i) for i, d in enumerate(DOCS) if d["salary"] >= 1200)
    assert dora.get(index="people", id=next(iter(want)))["_source"] == want[next(iter(want))]
    with pytest.raises(ApiError) as e:
        dora.get(index="people", id=hidden)
    assert e.value.meta.status == 404
