"""Integers beyond doubles (2^53) and beyond 64 bits survive `_update` and
`_update_by_query`, as ES keeps them (`Long`, `BigInteger`) in `_source`.

Python's `json` reads such integers exactly, so the oracle is the document computed here: the
stored source with the partial `doc` deep-merged in (ES's `XContentHelper.update`), or what
the script does, in Python ints (Painless `long` arithmetic on a `long`).
"""

import copy

BIG = 123456789012345678901234567890
NEG = -99999999999999999999
INDEX = "update_big_integers"


def merge(target, patch):
    for k, v in patch.items():
        if isinstance(target.get(k), dict) and isinstance(v, dict):
            merge(target[k], v)
        else:
            target[k] = copy.deepcopy(v)


def test_partial_updates_keep_integers_beyond_64_bits(es):
    es.indices.delete(index=INDEX, ignore_unavailable=True)
    es.indices.create(index=INDEX, mappings={"dynamic": False, "properties": {"n": {"type": "long"}}})
    doc = {"big": BIG, "o": {"x": [NEG, 1], "y": "s"}, "n": 1}
    es.index(index=INDEX, id="1", document=doc)
    patches = [{"n": 2}, {"o": {"z": BIG + 1}}, {"arr": [2**64, 2**70, -(2**63) - 1]}]
    for p in patches:
        es.update(index=INDEX, id="1", doc=p)
        merge(doc, p)
        assert es.get(index=INDEX, id="1")["_source"] == doc
    # doc_as_upsert and upsert create documents from the body as written
    es.update(index=INDEX, id="2", doc={"big": BIG}, doc_as_upsert=True)
    assert es.get(index=INDEX, id="2")["_source"] == {"big": BIG}
    es.update(index=INDEX, id="3", doc={"n": 1}, upsert={"big": NEG})
    assert es.get(index=INDEX, id="3")["_source"] == {"big": NEG}
    # and through _bulk
    es.bulk(operations=[{"update": {"_index": INDEX, "_id": "2"}}, {"doc": {"more": 2**65}}])
    assert es.get(index=INDEX, id="2")["_source"] == {"big": BIG, "more": 2**65}
    es.indices.delete(index=INDEX)


LONG = 2**53 + 1          # the first integer a double cannot hold
ULONG = 2**64 - 2         # beyond `long`: a BigInteger to Painless, passed along untouched
SCRIPTED = "update_big_integers_scripted"


def test_scripts_keep_integers_beyond_doubles(es):
    es.indices.delete(index=SCRIPTED, ignore_unavailable=True)
    es.indices.create(index=SCRIPTED, mappings={"properties": {
        "n": {"type": "long"}, "m": {"type": "long"}, "o": {"type": "object", "enabled": False}}})
    doc = {"n": LONG, "m": 1, "o": {"u": ULONG, "big": BIG, "neg": -(2**63)}}
    es.index(index=SCRIPTED, id="1", document=doc, refresh=True)

    es.update(index=SCRIPTED, id="1", script="ctx._source.m += 1")
    doc["m"] += 1
    assert es.get(index=SCRIPTED, id="1")["_source"] == doc

    r = es.update(index=SCRIPTED, id="1", script="ctx._source.n += 1", source=True)
    doc["n"] += 1
    assert es.get(index=SCRIPTED, id="1")["_source"] == doc
    assert r["get"]["_source"]["n"] == LONG + 1

    # a script copying the values writes them as they were
    es.update(index=SCRIPTED, id="1", script="ctx._source.o.c = [ctx._source.o.u, ctx._source.o.big]")
    doc["o"]["c"] = [ULONG, BIG]
    assert es.get(index=SCRIPTED, id="1")["_source"] == doc

    es.bulk(operations=[{"update": {"_index": SCRIPTED, "_id": "1"}},
                        {"script": {"source": "ctx._source.m += params.k", "params": {"k": LONG}}}],
            refresh=True)
    doc["m"] += LONG
    assert es.get(index=SCRIPTED, id="1")["_source"] == doc

    r = es.update_by_query(index=SCRIPTED, script="ctx._source.n *= 2", refresh=True)
    assert r["updated"] == 1
    doc["n"] *= 2
    assert es.get(index=SCRIPTED, id="1")["_source"] == doc
    r = es.update_by_query(index=SCRIPTED, refresh=True)
    assert r["updated"] == 1
    assert es.get(index=SCRIPTED, id="1")["_source"] == doc

    # a scripted upsert starts from the body's upsert as written
    es.update(index=SCRIPTED, id="2", script="ctx._source.m = 1", scripted_upsert=True,
              upsert={"n": LONG, "o": {"big": BIG}})
    assert es.get(index=SCRIPTED, id="2")["_source"] == {"n": LONG, "o": {"big": BIG}, "m": 1}
    es.indices.delete(index=SCRIPTED)


def test_noop_detection_compares_integers_exactly(es):
    es.indices.delete(index=SCRIPTED, ignore_unavailable=True)
    es.indices.create(index=SCRIPTED, mappings={"properties": {"n": {"type": "long"}}})
    es.index(index=SCRIPTED, id="1", document={"n": 2**53}, refresh=True)
    r = es.update(index=SCRIPTED, id="1", doc={"n": LONG})
    assert r["result"] == "updated"
    assert es.get(index=SCRIPTED, id="1")["_source"] == {"n": LONG}
    assert es.update(index=SCRIPTED, id="1", doc={"n": LONG})["result"] == "noop"
    assert es.update(index=SCRIPTED, id="1", doc={"n": LONG + 1})["result"] == "updated"
    es.indices.delete(index=SCRIPTED)
