"""Integers beyond 64 bits survive `_update`, as ES keeps them (`BigInteger`) in `_source`.

Python's `json` reads such integers exactly, so the oracle is the document merged here: the
stored source with the partial `doc` deep-merged in (ES's `XContentHelper.update`).
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
