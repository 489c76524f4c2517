"""Chinese segmentation built in: the IK plugin's `ik_smart` / `ik_max_word` and the
analysis-smartcn plugin's `smartcn` analyzers and tokenizers.

Expected tokens are computed here from the jieba dictionary (the `jieba` package ships the
same `dict.txt` that Lode's segmenter bundles) following the documented rules:
- ik_smart: jieba's precise segmentation without HMM of each run of Chinese characters;
- ik_max_word: every dictionary word of 2+ characters of each run, ordered by start then
  longer first, with the characters IK's output walk leaves between the end of one word and
  the start of the next as single CN_CHAR tokens;
- match hits: a document matches when the query's ik_smart tokens are among its ik_max_word
  tokens.
"""

import re

import jieba
import pytest

from conftest import make_index

jieba.setLogLevel(60)
jieba.initialize()

INDEX = "chinese_docs"

DOCS = [
    "我爱北京天安门",
    "中华人民共和国国歌",
    "南京市长江大桥欢迎您",
    "全文检索引擎支持中文分词",
    "北京是中华人民共和国的首都",
    "长江是中国最长的河流",
    "搜索引擎的分词质量决定了检索效果",
    "研究生命起源是科学的重要课题",
    "上海和北京都是大城市",
    "天安门广场位于北京市中心",
    "人民群众是历史的创造者",
    "国歌的歌词很有力量",
]

QUERIES = [
    "北京天安门",
    "中华人民共和国",
    "人民",
    "长江大桥",
    "中文分词",
    "搜索引擎",
    "生命起源",
    "国歌",
    "首都上海",
]

HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def is_word(w):
    return bool(jieba.dt.FREQ.get(w))


def ik_smart(text):
    """(token, start, end, type) for a text of Chinese runs and punctuation."""
    out = []
    for m in HAN.finditer(text):
        pos = m.start()
        for w in jieba.lcut(m.group(), HMM=False):
            out.append((w, pos, pos + len(w), "CN_WORD" if len(w) > 1 else "CN_CHAR"))
            pos += len(w)
    return out


def ik_max_word(text):
    out = []
    for m in HAN.finditer(text):
        run, base = m.group(), m.start()
        words = [(i, j) for i in range(len(run)) for j in range(len(run), i + 1, -1) if is_word(run[i:j])]
        index = 0
        for i, j in words:
            out.extend((run[k], base + k, base + k + 1, "CN_CHAR") for k in range(index, i))
            out.append((run[i:j], base + i, base + j, "CN_WORD"))
            index = j
        out.extend((run[k], base + k, base + k + 1, "CN_CHAR") for k in range(index, len(run)))
    return out


def tokens(resp):
    return [(t["token"], t["start_offset"], t["end_offset"], t["type"], t["position"]) for t in resp["tokens"]]


def numbered(toks):
    return [(t, s, e, ty, p) for p, (t, s, e, ty) in enumerate(toks)]


@pytest.fixture(scope="module")
def chinese(es):
    body = {
        "settings": {
            "number_of_shards": 2,
            "analysis": {
                "analyzer": {
                    "ik_upper": {"tokenizer": "ik_smart", "filter": ["uppercase"]},
                    "cn_stop": {"tokenizer": "smartcn_tokenizer", "filter": ["smartcn_stop"]},
                }
            },
        },
        "mappings": {
            "properties": {
                "text": {"type": "text", "analyzer": "ik_max_word", "search_analyzer": "ik_smart"},
                "smart": {"type": "text", "analyzer": "smartcn"},
            }
        },
    }
    return make_index(es, INDEX, body, [(str(i), {"text": d, "smart": d}) for i, d in enumerate(DOCS)])


@pytest.mark.parametrize("text", DOCS)
def test_analyze_ik_smart(es, text):
    expected = numbered(ik_smart(text))
    assert tokens(es.indices.analyze(analyzer="ik_smart", text=text).body) == expected
    assert tokens(es.indices.analyze(tokenizer="ik_smart", text=text).body) == expected


@pytest.mark.parametrize("text", DOCS)
def test_analyze_ik_max_word(es, text):
    expected = numbered(ik_max_word(text))
    assert tokens(es.indices.analyze(analyzer="ik_max_word", text=text).body) == expected
    assert tokens(es.indices.analyze(tokenizer="ik_max_word", text=text).body) == expected


def test_ik_max_word_plugin_example(es):
    # The IK plugin's README example: its dictionary and jieba's agree on this sentence.
    resp = es.indices.analyze(analyzer="ik_max_word", text="中华人民共和国国歌").body
    assert [t["token"] for t in resp["tokens"]] == [
        "中华人民共和国", "中华人民", "中华", "华人", "人民共和国", "人民", "共和国", "共和", "国", "国歌"]
    resp = es.indices.analyze(analyzer="ik_smart", text="中华人民共和国国歌").body
    assert [t["token"] for t in resp["tokens"]] == ["中华人民共和国", "国歌"]


def test_ik_mixed_text(es):
    text = "Lode 2.0 支持中文分词, iPhone15 the END"
    resp = es.indices.analyze(analyzer="ik_smart", text=text).body
    expected = [("lode", 0, 4, "ENGLISH"), ("2.0", 5, 8, "ARABIC")]
    expected += ik_smart(text)
    at = text.index("iPhone15")
    end = text.index("END")
    expected += [("iphone15", at, at + 8, "LETTER"), ("end", end, end + 3, "ENGLISH")]  # "the" is an IK stop word
    assert tokens(resp) == numbered(expected)
    resp = es.indices.analyze(analyzer="ik_max_word", text="iPhone15").body
    assert tokens(resp) == numbered([("iphone15", 0, 8, "LETTER"), ("iphone", 0, 6, "ENGLISH"), ("15", 6, 8, "ARABIC")])


def test_smartcn(es):
    text = "我购买了道具和服装。Tests 1234"
    words = jieba.lcut("我购买了道具和服装", HMM=False)
    resp = es.indices.analyze(analyzer="smartcn", text=text).body
    # The full stop is a stop word and leaves a position gap; English is stemmed.
    expected, pos = [], 0
    for w in words:
        start = text.index(w, expected[-1][2] if expected else 0)
        expected.append((w, start, start + len(w), "word", pos))
        pos += 1
    expected += [("test", 10, 15, "word", pos + 1), ("1234", 16, 20, "word", pos + 2)]
    assert tokens(resp) == expected
    resp = es.indices.analyze(tokenizer="smartcn_tokenizer", text=text).body
    assert [t["token"] for t in resp["tokens"]] == words + [",", "tests", "1234"]
    assert {t["type"] for t in resp["tokens"]} == {"word"}


def test_index_level_analyze(es, chinese):
    text = "lode支持中文分词"
    resp = es.indices.analyze(index=INDEX, analyzer="ik_upper", text=text).body
    assert [t["token"] for t in resp["tokens"]] == ["LODE"] + [w for w, *_ in ik_smart(text)]
    resp = es.indices.analyze(index=INDEX, field="text", text=text).body
    assert [t["token"] for t in resp["tokens"]] == ["lode"] + [w for w, *_ in ik_max_word(text)]
    resp = es.indices.analyze(index=INDEX, analyzer="cn_stop", text="北京，上海。").body
    assert [t["token"] for t in resp["tokens"]] == ["北京", "上海"]
    assert [t["position"] for t in resp["tokens"]] == [0, 2]


def test_mapping_keeps_analyzers(es, chinese):
    props = es.indices.get_mapping(index=INDEX)[INDEX]["mappings"]["properties"]
    assert props["text"] == {"type": "text", "analyzer": "ik_max_word", "search_analyzer": "ik_smart"}


def doc_terms(text):
    return {t for t, *_ in ik_max_word(text)}


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("operator", ["or", "and"])
def test_match_hits(es, chinese, query, operator):
    q_terms = [t for t, *_ in ik_smart(query)]
    check = any if operator == "or" else all
    expected = {str(i) for i, d in enumerate(DOCS) if check(t in doc_terms(d) for t in q_terms)}
    resp = es.search(index=INDEX, query={"match": {"text": {"query": query, "operator": operator}}}, size=50)
    assert {h["_id"] for h in resp["hits"]["hits"]} == expected
    assert resp["hits"]["total"]["value"] == len(expected)


def test_match_smartcn_field(es, chinese):
    words = jieba.lcut("天安门广场", HMM=False)
    expected = {str(i) for i, d in enumerate(DOCS)
                if any(w in {t for r in HAN.findall(d) for t in jieba.lcut(r, HMM=False)} for w in words)}
    resp = es.search(index=INDEX, query={"match": {"smart": "天安门广场"}}, size=50)
    assert {h["_id"] for h in resp["hits"]["hits"]} == expected


def test_highlight(es, chinese):
    resp = es.search(index=INDEX, query={"match": {"text": "长江大桥"}},
                     highlight={"fields": {"text": {"number_of_fragments": 0}}}, size=50)
    assert resp["hits"]["hits"]
    for h in resp["hits"]["hits"]:
        frag = h["highlight"]["text"][0]
        assert frag.replace("<em>", "").replace("</em>", "") == DOCS[int(h["_id"])]
        marked = re.findall(r"<em>(.*?)</em>", frag)
        assert marked and all(m in "长江大桥" for m in marked)
