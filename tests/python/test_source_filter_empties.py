"""`_source` filtering of empty objects and arrays, as ES 8 filters `_source` bytes.

ES 8 (`SourceFilter#filterBytes`) parses the source through Jackson's `FilteringParserDelegate`
with ES's `FilterPathBasedFilter`, excludes first, then includes over what they left. The
oracle below restates that filter for plain (wildcard-free) dotted patterns:

- a property a pattern names (or lies under) is kept whole by an include, dropped by an
  exclude; a property no pattern reaches into is dropped by includes, kept whole by excludes;
- otherwise its value is filtered with the same patterns (arrays add nothing to the path):
  scalars are dropped by includes and kept by excludes; an object or array left empty is
  dropped, except, under excludes, one that was empty in the source
  (`includeEmptyObject`/`includeEmptyArray` return `!inclusive && !contentsFiltered`);
- a source filtered away entirely is `{}`.
"""

import itertools
import re

import pytest

INDEX = "source_filter_empties"

DOCS = {
    "1": {"a": [{}, [], {"b": 1, "c": 2}, 3, [{"b": 4}], [[]], {"c": {}}], "e": {}, "f": [],
          "g": {"b": {}, "c": [], "d": 1}},
    "2": {"a": {"b": [], "c": {}}, "e": [{}], "f": [[], {}], "g": {"b": [{}], "c": [1]}},
    "3": {"a": [{"b": {}}, {"b": [{}]}], "g": {}, "f": 0},
}

PATTERNS = [[], ["a"], ["a.b"], ["a.c"], ["e"], ["g.b"], ["g.c", "a.b"], ["f.x"], ["e.x", "g"]]


def under(path, pattern):
    return path == pattern or path.startswith(pattern + ".")


def reaches_into(path, pattern):
    return pattern.startswith(path + ".")


def stage(value, path, patterns, inclusive):
    """The filtered value, or None when dropped."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            p = f"{path}.{k}" if path else k
            if any(under(p, pat) for pat in patterns):
                if inclusive:
                    out[k] = v
                continue
            if not any(reaches_into(p, pat) for pat in patterns):
                if not inclusive:
                    out[k] = v
                continue
            kept = stage(v, p, patterns, inclusive)
            if kept is not None:
                out[k] = kept
        if out or (not inclusive and not value):
            return out
        return None
    if isinstance(value, list):
        out = [x for x in (stage(v, path, patterns, inclusive) for v in value) if x is not None]
        if out or (not inclusive and not value):
            return out
        return None
    return None if inclusive else value


def oracle(source, includes, excludes):
    out = source
    if excludes:
        out = stage(out, "", excludes, False)
    if includes and out is not None:
        out = stage(out, "", includes, True)
    return {} if out is None else out


@pytest.fixture(scope="module")
def index(es):
    es.indices.delete(index=INDEX, ignore_unavailable=True)
    es.indices.create(index=INDEX, mappings={"dynamic": False})
    for i, d in DOCS.items():
        es.index(index=INDEX, id=i, document=d)
    es.indices.refresh(index=INDEX)
    yield
    es.indices.delete(index=INDEX)


CASES = [(inc, exc) for inc, exc in itertools.product(PATTERNS, PATTERNS) if inc or exc]


@pytest.mark.parametrize("includes,excludes", CASES)
def test_search_source_filter(es, index, includes, excludes):
    resp = es.search(index=INDEX, size=10, sort=["_doc"],
                     source={"includes": includes, "excludes": excludes})
    got = {h["_id"]: h["_source"] for h in resp["hits"]["hits"]}
    assert got == {i: oracle(d, includes, excludes) for i, d in DOCS.items()}


@pytest.mark.parametrize("includes,excludes", CASES[::5])
def test_get_source_params(es, index, includes, excludes):
    for i, d in DOCS.items():
        params = {}
        if includes:
            params["source_includes"] = includes
        if excludes:
            params["source_excludes"] = excludes
        got = es.get(index=INDEX, id=i, **params)["_source"]
        assert got == oracle(d, includes, excludes)


# --- a wildcard in the excludes: ES 8's SourceFilter filters the parsed map instead
# (`canFilterBytes` is false), with `XContentMapValues#filter`:
# - a key no include can reach (not matched, no include continues below it) is dropped; a key an
#   exclude matches is dropped;
# - a key an include matches is kept whole when no exclude continues below it, else filtered
#   with every include matching; a matched object or array is kept even when left empty;
# - otherwise objects and arrays are filtered and kept when not empty, leaves dropped;
# - inside arrays, objects and arrays left empty are dropped (empty ones included); scalars are
#   kept when the array's key was matched by an include.

def wmatch(pattern, path):
    return re.fullmatch(".*".join(re.escape(x) for x in pattern.split("*")), path) is not None


def continues_below(path, patterns):
    below = path + "."
    for pat in patterns:
        if "*" not in pat:
            if pat.startswith(below):
                return True
            continue
        lit = pat.split("*")[0]
        if lit.startswith(below) or below.startswith(lit):
            return True
    return False


def map_object(obj, path, includes, excludes):
    out = {}
    for k, v in obj.items():
        p = f"{path}.{k}" if path else k
        if includes is not None and not (
                any(wmatch(i, p) for i in includes) or continues_below(p, includes)):
            continue
        if any(wmatch(e, p) for e in excludes):
            continue
        matched = includes is None or any(wmatch(i, p) for i in includes)
        sub = includes
        if matched:
            if not continues_below(p, excludes):
                out[k] = v
                continue
            sub = None
        if isinstance(v, dict):
            if sub is not None and not continues_below(p, sub):
                continue
            f = map_object(v, p, sub, excludes)
            if matched or f:
                out[k] = f
        elif isinstance(v, list):
            f = map_array(v, p, sub, excludes, matched)
            if matched or f:
                out[k] = f
        elif matched:
            out[k] = v
    return out


def map_array(items, path, includes, excludes, matched):
    out = []
    for v in items:
        if isinstance(v, dict):
            f = map_object(v, path, includes, excludes)
        elif isinstance(v, list):
            f = map_array(v, path, includes, excludes, matched)
        else:
            if matched:
                out.append(v)
            continue
        if f:
            out.append(f)
    return out


WILDCARD_EXCLUDES = [["z*"], ["a.c*"], ["a.*"], ["g.*", "a.b"], ["*.c"]]


@pytest.mark.parametrize("excludes", WILDCARD_EXCLUDES)
@pytest.mark.parametrize("includes", [[], ["a"], ["a.b", "g"], ["a*"], ["e", "f"]])
def test_wildcard_excludes_filter_the_map(es, index, includes, excludes):
    resp = es.search(index=INDEX, size=10, sort=["_doc"],
                     source={"includes": includes, "excludes": excludes})
    got = {h["_id"]: h["_source"] for h in resp["hits"]["hits"]}
    want = {i: map_object(d, "", includes or None, excludes) for i, d in DOCS.items()}
    assert got == want
