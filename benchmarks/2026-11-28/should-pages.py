"""`page acctType asc,balance desc +should` (wide-shapes-2.py) at fixed depths: the median of
N drawn requests (X, Y from the 30 balance types, size from the shape's list), per depth, on
one Lode (request cache off, 3 warm-ups per depth). Also prints a digest of the answers so two
builds can be compared for equality.

    LODE_PORT=9610 N=50 python3 should-pages.py
"""
import os, http.client, json, time, statistics, random, hashlib

PORT = int(os.environ.get('LODE_PORT', '9610')); N = int(os.environ.get('N', '50'))
C = http.client.HTTPConnection('127.0.0.1', PORT, timeout=120)
BAL = ["消费", "充值", "货款结算", "退款", "提现", "转账转入", "转账转出", "手续费", "佣金收入",
       "服务费", "运费", "平台补贴", "红包", "返现", "利息收入", "冻结", "解冻", "保证金缴纳",
       "保证金退还", "积分兑换", "广告费", "分润", "预付款", "押金", "奖励金", "提现退回", "赔付",
       "调账", "退款冲正", "罚款"]
SORTS = {'acctType asc,balance desc': [{"acctType": "asc"}, {"balance": "desc"}]}
if os.environ.get('ALL_SORTS'):
    SORTS.update({'acctType desc,balance asc': [{"acctType": "desc"}, {"balance": "asc"}],
                  'acctType asc,createdTime asc': [{"acctType": "asc"}, {"createdTime": "asc"}]})

def req(body):
    C.request('POST', '/accounts/_search?request_cache=false', json.dumps(body),
              {'content-type': 'application/json'})
    r = C.getresponse(); d = r.read(); assert r.status == 200, d[:300]; return json.loads(d)

digest = hashlib.sha1()
for sname, sort in SORTS.items():
    for frm in [0, 10, 990, 5000, 9990]:
        rnd = random.Random(frm * 7 + len(sname))
        def draw():
            size = min(rnd.choice([1, 5, 10, 20, 50, 100]), 10000 - frm)
            return {"query": {"bool": {"should": [{"term": {"balanceTypeName": rnd.choice(BAL)}},
                                                   {"term": {"balanceTypeName": rnd.choice(BAL)}}],
                                       "minimum_should_match": 1}},
                    "sort": sort, "from": frm, "size": size}
        for _ in range(3): req(draw())
        ts = []
        for _ in range(N):
            b = draw(); t = time.perf_counter(); d = req(b); ts.append(time.perf_counter() - t)
            digest.update(json.dumps([[h['_id'], h['sort']] for h in d['hits']['hits']]).encode())
        print(f"{sname:30s} from={frm:5d} median {statistics.median(ts)*1000:8.2f} ms  p90 {sorted(ts)[int(.9*len(ts))]*1000:8.2f} ms")
print("answers digest", digest.hexdigest())
