"""_analyze with the `standard` analyzer: one token per Han character,
lowercased ASCII words, offsets, positions and token types."""

import pytest

import oracle


def tokens(resp):
    return [(t["token"], t["start_offset"], t["end_offset"], t["type"], t["position"]) for t in resp["tokens"]]


def expected(text):
    return [(tok, s, e, typ, pos) for pos, (tok, s, e, typ) in enumerate(oracle.standard_tokens(text))]


@pytest.mark.parametrize("text", [
    "我是中国人",
    "江苏千米网络科技有限公司",
    "订单退款 Service Fee",
    "Hello World-Wide top-up via Bank card",
    "2021年 rebate Q3",
])
def test_standard_analyzer(es, text):
    resp = es.indices.analyze(analyzer="standard", text=text).body
    assert tokens(resp) == expected(text)


def test_standard_analyzer_cjk_unigrams_exact(es):
    resp = es.indices.analyze(analyzer="standard", text="我是中国人").body
    assert [t["token"] for t in resp["tokens"]] == ["我", "是", "中", "国", "人"]
    assert all(t["type"] == "<IDEOGRAPHIC>" for t in resp["tokens"])
    assert [t["position"] for t in resp["tokens"]] == [0, 1, 2, 3, 4]


def test_standard_analyzer_no_stopwords(es):
    resp = es.indices.analyze(analyzer="standard", text="The quick AND the dead").body
    assert [t["token"] for t in resp["tokens"]] == ["the", "quick", "and", "the", "dead"]


def test_analyze_multiple_texts_positions_continue(es):
    resp = es.indices.analyze(analyzer="standard", text=["中国", "人"]).body
    # a named analyzer has no position gap; offsets continue after a gap of 1
    assert [(t["token"], t["position"], t["start_offset"], t["end_offset"]) for t in resp["tokens"]] == \
        [("中", 0, 0, 1), ("国", 1, 1, 2), ("人", 2, 3, 4)]


def test_analyze_with_field(es, accounts):
    text = "河南锦程鼎盛电子有限公司"
    resp = es.indices.analyze(index="accounts", field="userName.analyzed", text=text).body
    assert [t["token"] for t in resp["tokens"]] == list(text)
    # a keyword field keeps the whole value as one token
    resp = es.indices.analyze(index="accounts", field="userName", text=text).body
    assert [t["token"] for t in resp["tokens"]] == [text]


def test_keyword_and_whitespace_analyzers(es):
    assert [t["token"] for t in es.indices.analyze(analyzer="keyword", text="Hello World 中国").body["tokens"]] == \
        ["Hello World 中国"]
    assert [t["token"] for t in es.indices.analyze(analyzer="whitespace", text="Hello World 中国").body["tokens"]] == \
        ["Hello", "World", "中国"]
