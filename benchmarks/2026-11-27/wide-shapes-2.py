"""Wider variations of the 14 reference queries (page, trend, bucket/group, metric/sum, range,
term, match, ids_range): other sort fields, orders, filters, from/size; date_histogram windows,
intervals, time zones, bounds, offsets, keys, orders; terms orders, include/exclude, missing;
metrics under range filters; date math and formats; track_total_hits variants; _source
filtering, docvalue_fields, fields, stored_fields; highlight; match operators, fuzziness,
multi_match; large terms queries; constant_score, function_score.

Same harness as wide-shapes.py: one connection per engine, request cache off, 3 warm-up requests
then the median of 15 (each request drawn afresh from the shape, seeded), OpenSearch first then
Lode, per shape. It also compares the answers of the 15 timed requests: hits.total (value and
relation), hit ids and sort values (and scores within 1e-4 relative), and the aggregations, and
prints the first difference of each shape. Both engines must hold the 1.12M reference `accounts`
index.

    OS_PORT=9312 LODE_PORT=9520 python3 wide-shapes-2.py [shape-substring ...]
"""
import os
import http.client, json, time, statistics, random, sys

random.seed(24)
def conn(port): return http.client.HTTPConnection('127.0.0.1', port, timeout=120)
OS = int(os.environ.get('OS_PORT', '9312')); LODE = int(os.environ.get('LODE_PORT', '9520'))
C = {OS: conn(OS), LODE: conn(LODE)}

def req(port, body, path='/accounts/_search?request_cache=false'):
    c = C[port]; b = json.dumps(body)
    c.request('POST', path, b, {'content-type': 'application/json'})
    r = c.getresponse(); d = r.read(); return r.status, json.loads(d)

# Corpus: createdTime uniform over 2018-01-01T00:00+08:00 .. 2021-12-31 (1461 days).
T0 = 1514736000000; DAY = 86400000; DAYS = 1461
ACCT_TYPES = ["BASIC", "SETTLEMENT", "DEPOSIT", "CREDIT", "VIRTUAL", "ESCROW"]
BAL_TYPES = ["消费", "充值", "货款结算", "退款", "提现", "转账转入", "转账转出", "手续费", "佣金收入",
             "服务费", "运费", "平台补贴", "红包", "返现", "利息收入", "冻结", "解冻", "保证金缴纳",
             "保证金退还", "积分兑换", "广告费", "分润", "预付款", "押金", "奖励金", "提现退回", "赔付",
             "调账", "退款冲正", "罚款"]
REMARK_WORDS = ["order", "payment", "refund", "withdrawal", "bank", "monthly", "settlement",
                "manual", "adjustment", "promo", "reward", "service", "fee", "deposit", "frozen",
                "released", "transfer", "rebate", "shipping", "subsidy"]
NAME_WORDS = ["江苏", "千米", "网络", "科技", "物流", "华美", "广东", "深圳", "商贸", "有限公司", "集团"]
TZS = ["+08:00", "Asia/Shanghai", "UTC", "-05:00", "America/New_York", "Europe/Berlin", "+05:30"]

def ri(a, b): return random.randint(a, b)
def pick(xs): return random.choice(xs)
def day_start(d): return T0 + d * DAY
def win(days=None):
    days = days or pick([1, 7, 30, 180])
    s = day_start(ri(0, DAYS - days)); return {"range": {"createdTime": {"gte": s, "lt": s + days * DAY}}}
def iso(ms, tz='+0800'):
    # createdTimeStr's format: yyyy-MM-dd'T'HH:mm:ss.SSSZ, in +08:00.
    t = time.gmtime(ms / 1000 + 8 * 3600)
    return time.strftime('%Y-%m-%dT%H:%M:%S', t) + '.%03d' % (ms % 1000) + tz
def acct(): return "A%011d" % ri(0, 199999)
def from_deep(): return pick([0, 10, 90, 990, 5000, 9990])
def size_any(): return pick([1, 5, 10, 20, 50, 100])

def page(sort, query, frm=None, size=None):
    frm = from_deep() if frm is None else frm
    size = size_any() if size is None else size
    size = min(size, 10000 - frm)
    return {"query": query, "sort": sort, "from": frm, "size": size}

def trend(interval, days, tz, **kw):
    s = day_start(ri(0, DAYS - days))
    h = dict(interval, field="createdTime", time_zone=tz, **kw)
    return {"size": 0, "query": {"bool": {"filter": [{"range": {"createdTime": {"gte": s, "lt": s + days * DAY}}}]}},
            "aggs": {"t": {"date_histogram": h}}}

shapes = {
 # --- page: other sort fields x orders x filters x from x size
 'page balance desc +term status': lambda: page([{"balance": {"order": "desc"}}], {"bool": {"filter": [{"term": {"status": ri(0, 3)}}]}}),
 'page balance asc +window': lambda: page([{"balance": "asc"}], {"bool": {"filter": [win(pick([30, 180, 365]))]}}),
 'page createdTime asc +term status': lambda: page([{"createdTime": {"order": "asc"}}], {"bool": {"filter": [{"term": {"status": ri(0, 3)}}]}}),
 'page createdTimeStr desc +must_not': lambda: page([{"createdTimeStr": "desc"}], {"bool": {"filter": [{"term": {"acctType": pick(ACCT_TYPES)}}], "must_not": [{"term": {"status": ri(0, 3)}}]}}),
 'page acctType asc,balance desc +should': lambda: page([{"acctType": "asc"}, {"balance": "desc"}], {"bool": {"should": [{"term": {"balanceTypeName": pick(BAL_TYPES)}}, {"term": {"balanceTypeName": pick(BAL_TYPES)}}], "minimum_should_match": 1}}),
 'page userName desc +match remark': lambda: page([{"userName": "desc"}], {"match": {"remark": pick(REMARK_WORDS)}}, frm=pick([0, 90, 990])),
 'page createdTime desc +range balance': lambda: page([{"createdTime": "desc"}], {"range": {"balance": {"gte": ri(0, 5000)}}}),
 'page status desc,createdTime asc +term acctType': lambda: page([{"status": "desc"}, {"createdTime": "asc"}], {"term": {"acctType": pick(ACCT_TYPES)}}),
 'page balanceTypeName asc,acctId desc +window': lambda: page([{"balanceTypeName": "asc"}, {"acctId": "desc"}], {"bool": {"filter": [win(pick([7, 30]))]}}, frm=pick([0, 90, 990])),
 'page createdTime desc +must range,term': lambda: page([{"createdTime": "desc"}], {"bool": {"must": [{"range": {"balance": {"gt": -100, "lte": ri(100, 20000)}}}], "filter": [{"term": {"status": 0}}]}}),
 # --- trend: date_histogram windows, intervals, time zones, bounds
 'trend hour 1-3d tz': lambda: trend({"calendar_interval": "hour"}, ri(1, 3), pick(TZS), min_doc_count=0),
 'trend day 7-90d tz format': lambda: trend({"calendar_interval": "day"}, ri(7, 90), pick(TZS), min_doc_count=0, format="yyyy-MM-dd"),
 'trend week 90-365d mdc1': lambda: trend({"calendar_interval": "week"}, ri(90, 365), pick(TZS), min_doc_count=1),
 'trend month 1-4y ext_bounds': lambda: (lambda d: d)(trend({"calendar_interval": "month"}, ri(365, 1400), pick(TZS), min_doc_count=0,
                                       extended_bounds={"min": "2017-06-01", "max": "2022-06-01"}, format="yyyy-MM-dd")),
 'trend quarter/year keyed order': lambda: trend({"calendar_interval": pick(["quarter", "year", "1q", "1y"])}, ri(400, 1461), pick(TZS), keyed=True, order={"_count": pick(["asc", "desc"])}),
 'trend fixed 12h offset 30d': lambda: trend({"fixed_interval": pick(["12h", "3h", "90m", "2d"])}, 30, "UTC", offset=pick(["+6h", "-1h", "+30m"])),
 'trend day createdTimeStr +sum': lambda: (lambda s, n: {"size": 0, "query": {"range": {"createdTimeStr": {"gte": iso(s), "lt": iso(s + n * DAY)}}},
                                        "aggs": {"t": {"date_histogram": {"field": "createdTimeStr", "calendar_interval": "1d", "time_zone": "+08:00", "min_doc_count": 0},
                                                       "aggs": {"s": {"sum": {"field": "balance"}}}}}})(day_start(ri(0, 1300)), ri(10, 60)),
 'trend month 5y whole tz': lambda: {"size": 0, "aggs": {"t": {"date_histogram": {"field": "createdTime", "calendar_interval": "month", "time_zone": pick(TZS)}}}},
 # --- terms aggs
 'terms btn order _key mdc': lambda: {"size": 0, "query": {"bool": {"filter": [win(pick([30, 180]))]}}, "aggs": {"a": {"terms": {"field": "balanceTypeName", "size": ri(5, 50), "order": {"_key": pick(["asc", "desc"])}, "min_doc_count": ri(1, 200)}}}},
 'terms acctType order avg desc +win': lambda: {"size": 0, "query": {"bool": {"filter": [win()]}}, "aggs": {"a": {"terms": {"field": "acctType", "order": {"b": pick(["asc", "desc"])}}, "aggs": {"b": {"avg": {"field": "balance"}}}}}},
 'terms btn include/exclude': lambda: {"size": 0, "aggs": {"a": {"terms": {"field": "balanceTypeName", "size": 50, "include": random.sample(BAL_TYPES, 12), "exclude": random.sample(BAL_TYPES, 3)}}}},
 'terms btn include regex +term': lambda: {"size": 0, "query": {"term": {"acctType": pick(ACCT_TYPES)}}, "aggs": {"a": {"terms": {"field": "balanceTypeName", "include": pick(["退款.*", ".*费", "转账.*", "保证金.*"])}}}},
 'terms status missing order _count asc': lambda: {"size": 0, "query": {"range": {"balance": {"gte": ri(-500, 500)}}}, "aggs": {"a": {"terms": {"field": "status", "missing": -1, "order": {"_count": "asc"}}}}},
 'terms userName size10 +term': lambda: {"size": 0, "query": {"term": {"balanceTypeName": pick(BAL_TYPES[:10])}}, "aggs": {"a": {"terms": {"field": "userName", "size": 10}}}},
 'terms userName > sum +term': lambda: {"size": 0, "query": {"term": {"balanceTypeName": pick(BAL_TYPES[:10])}}, "aggs": {"a": {"terms": {"field": "userName", "size": 10}, "aggs": {"s": {"sum": {"field": "balance"}}}}}},
 'terms acctId > max createdTime +win': lambda: {"size": 0, "query": {"bool": {"filter": [win(pick([7, 30, 180]))]}}, "aggs": {"a": {"terms": {"field": "acctId", "size": pick([10, 100])}, "aggs": {"m": {"max": {"field": "createdTime"}}}}}},
 'terms userName order sum desc +term': lambda: {"size": 0, "query": {"term": {"balanceTypeName": pick(BAL_TYPES[:10])}}, "aggs": {"a": {"terms": {"field": "userName", "size": 10, "order": {"s": "desc"}}, "aggs": {"s": {"sum": {"field": "balance"}}}}}},
 # --- metrics under range filters
 'metrics 5 under range balance': lambda: (lambda lo: {"size": 0, "query": {"range": {"balance": {"gte": lo, "lt": lo + ri(10, 5000)}}}, "aggs": {
     "s": {"sum": {"field": "balance"}}, "a": {"avg": {"field": "balance"}}, "mn": {"min": {"field": "createdTime"}}, "mx": {"max": {"field": "createdTime"}}, "c": {"value_count": {"field": "acctId"}}}})(ri(-1000, 10000)),
 'stats+ext_stats +win': lambda: {"size": 0, "query": {"bool": {"filter": [win()]}}, "aggs": {"s": {"stats": {"field": "balance"}}, "e": {"extended_stats": {"field": "balance", "sigma": pick([1, 2, 3])}}}},
 'weighted_avg balance by status +win': lambda: {"size": 0, "query": {"bool": {"filter": [win(pick([30, 180, 365]))]}}, "aggs": {"w": {"weighted_avg": {"value": {"field": "balance"}, "weight": {"field": "status"}}}}},
 # --- range counts
 'range createdTimeStr gt/lte format': lambda: (lambda d: {"size": 0, "track_total_hits": True, "query": {"range": {"createdTimeStr": {"gt": d, "lte": pick(["2021-06-30", "2021-12-31", "2020-12-31"]), "format": "yyyy-MM-dd"}}}})(
     "%04d-%02d-%02d" % (pick([2018, 2019, 2020]), ri(1, 12), ri(1, 28))),
 'range date math now-Ny/d': lambda: {"size": 0, "track_total_hits": True, "query": {"range": {"createdTime": {"gte": "now-%dy/d" % ri(6, 8), "lt": "now-%dM/M" % ri(60, 70)}}}},
 'range balance gt/lte tth true': lambda: (lambda lo: {"size": 0, "track_total_hits": True, "query": {"range": {"balance": {"gt": lo, "lte": lo + ri(1, 20000)}}}})(ri(-2000, 20000)),
 'track_total_hits int/false page': lambda: {"size": 10, "track_total_hits": pick([False, 50000, 500000, 100]), "query": {"range": {"createdTime": {"gte": day_start(ri(0, 1400))}}}, "sort": [{"createdTime": "desc"}]},
 'range count default tth': lambda: {"size": 0, "query": {"range": {"createdTimeStr": {"gte": iso(day_start(ri(0, 1460)))}}}},
 # --- fetch variants
 '_source includes/excludes page': lambda: dict(page([{"createdTime": "desc"}], {"term": {"status": ri(0, 3)}}, frm=pick([0, 90, 990])),
                                            _source={"includes": pick([["acct*", "balance"], ["user*"], ["*Time*"]]), "excludes": pick([["acctType"], ["userName.*"], []])}),
 'docvalue_fields+fields+stored _none_': lambda: dict(page([{"balance": "desc"}], {"term": {"acctType": pick(ACCT_TYPES)}}, frm=pick([0, 90, 990]), size=20),
                                                 docvalue_fields=["createdTime", {"field": "createdTimeStr", "format": "epoch_millis"}, "status"], stored_fields="_none_"),
 'fields param + _source false': lambda: dict(page([{"createdTime": "asc"}], {"bool": {"filter": [win(7)]}}, frm=pick([0, 90]), size=20),
                                          fields=["acctId", "balance", {"field": "createdTime", "format": "yyyy-MM-dd"}], _source=False),
 # --- ids_range with other id counts and windows
 'ids_range n ids +window': lambda: {"size": 50, "query": {"bool": {"filter": [{"terms": {"_id": [str(ri(1, 1120000)) for _ in range(pick([5, 50, 200, 1000]))]}},
                                                                      {"range": {"createdTime": {"gte": day_start(ri(0, 1400))}}}]}}},
 # --- match variants
 'match highlight remark': lambda: {"size": 10, "query": {"match": {"remark": pick(REMARK_WORDS)}}, "highlight": {"fields": {"remark": {}}}},
 'match operator and userName.analyzed': lambda: {"size": 10, "query": {"match": {"userName.analyzed": {"query": pick(NAME_WORDS) + " " + pick(NAME_WORDS), "operator": "and"}}}},
 'match fuzziness remark': lambda: {"size": 10, "query": {"match": {"remark": {"query": pick(["refnd", "paymnt", "ordr", "shiping", "setlement"]), "fuzziness": "AUTO"}}}},
 'multi_match remark,userName.analyzed': lambda: {"size": 10, "query": {"multi_match": {"query": pick(REMARK_WORDS) + " " + pick(NAME_WORDS), "fields": ["remark", "userName.analyzed^2"]}}},
 'match count userName.analyzed': lambda: {"size": 0, "query": {"match": {"userName.analyzed": pick(NAME_WORDS) + pick(NAME_WORDS)}}},
 # --- term variants
 'terms query 500 acctIds': lambda: {"size": 10, "query": {"terms": {"acctId": [acct() for _ in range(500)]}}, "sort": [{"createdTime": "desc"}]},
 'term acctId count': lambda: {"size": 0, "query": {"term": {"acctId": acct()}}},
 'constant_score term +sort': lambda: {"size": 10, "query": {"constant_score": {"filter": {"term": {"balanceTypeName": pick(BAL_TYPES)}}, "boost": 2.0}}, "sort": [{"balance": pick(["asc", "desc"])}]},
 'function_score fvf balance': lambda: {"size": 10, "query": {"function_score": {"query": {"term": {"acctType": pick(ACCT_TYPES)}}, "field_value_factor": {"field": "status", "factor": 1.5, "modifier": "log1p", "missing": 1}, "boost_mode": "replace"}}},
}

# ---------------------------------------------------------------- answer comparison
def close(a, b):
    if isinstance(a, bool) or isinstance(b, bool): return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or abs(a - b) <= 1e-6 * max(abs(a), abs(b)) or abs(a - b) < 1e-9
    return a == b

def diff(a, b, path=''):
    """The first difference between two JSON values, or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a: return f"{path}.{k}: only in Lode = {json.dumps(b[k], ensure_ascii=False)[:120]}"
            if k not in b: return f"{path}.{k}: only in OS = {json.dumps(a[k], ensure_ascii=False)[:120]}"
            d = diff(a[k], b[k], f"{path}.{k}")
            if d: return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b): return f"{path}: length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = diff(x, y, f"{path}[{i}]")
            if d: return d
        return None
    if not close(a, b): return f"{path}: OS {json.dumps(a, ensure_ascii=False)[:120]} vs Lode {json.dumps(b, ensure_ascii=False)[:120]}"
    return None

def answer(d):
    """What must agree: total, hits (id, sort key, fetched content), aggregations."""
    h = d.get('hits', {})
    hits = []
    for x in h.get('hits', []):
        e = {'_id': x.get('_id')}
        for k in ('_source', 'fields', 'highlight'):
            if k in x: e[k] = x[k]
        # The sort key: sort values, else the score rounded (float sums differ in the last bits).
        e['key'] = x['sort'] if 'sort' in x else (round(x['_score'], 4) if x.get('_score') is not None else None)
        hits.append(e)
    return {'total': h.get('total'), 'hits': hits, 'aggregations': d.get('aggregations')}

def bm25_scaled(ka, kb):
    """Scores that differ by BM25's (k1 + 1) = 2.2 only: Lode scores as Elasticsearch 8's
    default similarity (LegacyBM25Similarity) does, OpenSearch 3 as Lucene 10's BM25, which
    dropped that constant factor (same order, same ratios)."""
    if not ka or len(ka) != len(kb) or not all(isinstance(x, float) for x in ka + kb): return False
    return all(abs(y - 2.2 * x) <= 2e-4 * max(1.0, abs(y)) for x, y in zip(ka, kb))

def compare(a, b):
    """(hard difference or None, number of hits that differ only by the order of equal sort keys).
    Equal keys are ordered by Lucene doc id in ES, which depends on each engine's segments, so two
    correct engines may return different documents among ties; the keys themselves must agree."""
    d = diff(a['total'], b['total'], 'hits.total') or diff(a['aggregations'], b['aggregations'], 'aggregations')
    if d: return d, 0
    ha, hb = a['hits'], b['hits']
    ka, kb = [x['key'] for x in ha], [x['key'] for x in hb]
    d = diff(ka, kb, 'hits[].sort')
    if d and not bm25_scaled(ka, kb): return d, 0
    # The keys agree (or differ by BM25's constant only): compare each common hit's content.
    ma = {x['_id']: {k: v for k, v in x.items() if k != 'key'} for x in ha}
    mb = {x['_id']: {k: v for k, v in x.items() if k != 'key'} for x in hb}
    for i in ma:
        if i in mb:
            d = diff(ma[i], mb[i], f'hit[{i}]')
            if d: return d, 0
    ties = sum(1 for x, y in zip(ha, hb) if x['_id'] != y['_id'])
    return None, ties

only = sys.argv[1:]
N = 15
print(f"{'shape':42s} {'OS ms':>8s} {'Lode ms':>8s} {'OS/Lode':>8s}  answers")
for name, f in shapes.items():
    if only and not any(o in name for o in only): continue
    bodies = [f() for _ in range(N)]
    res = {}; ans = {}; err = None
    for port in (OS, LODE):
        for b in bodies[:3]: req(port, b)
        ts = []; ans[port] = []
        for b in bodies:
            t = time.perf_counter(); st, d = req(port, b); ts.append((time.perf_counter() - t) * 1000)
            if st != 200:
                err = f"{'OS' if port == OS else 'Lode'} {st} {json.dumps(d, ensure_ascii=False)[:300]}"
            ans[port].append(answer(d) if st == 200 else {'status': st})
        res[port] = statistics.median(ts)
    flag = ''
    if err: flag = ' ERROR ' + err
    else:
        ties = 0
        for i, (a, b) in enumerate(zip(ans[OS], ans[LODE])):
            d, t = compare(a, b); ties += t
            if d:
                flag = f" DIFF req{i} {d}\n    body {json.dumps(bodies[i], ensure_ascii=False)[:400]}"; break
        if not flag and ties: flag = f" ({ties} hits differ among equal sort keys)"
    print(f"{name:42s} {res[OS]:8.2f} {res[LODE]:8.2f} {res[OS]/res[LODE]:8.2f} {flag}", flush=True)
