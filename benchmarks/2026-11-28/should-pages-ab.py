"""A/B of two Lode servers on copies of one index (`page acctType asc,balance desc +should`):
each drawn request goes to both, alternating which goes first, so that the machine's load
(shared) falls on both alike; medians of N per depth.

    A_PORT=9611 B_PORT=9610 N=50 python3 should-pages-ab.py
"""
import os, http.client, json, time, statistics, random

A = int(os.environ.get('A_PORT', '9611')); B = int(os.environ.get('B_PORT', '9610'))
N = int(os.environ.get('N', '50'))
C = {p: http.client.HTTPConnection('127.0.0.1', p, timeout=120) for p in (A, B)}
BAL = ["消费", "充值", "货款结算", "退款", "提现", "转账转入", "转账转出", "手续费", "佣金收入",
       "服务费", "运费", "平台补贴", "红包", "返现", "利息收入", "冻结", "解冻", "保证金缴纳",
       "保证金退还", "积分兑换", "广告费", "分润", "预付款", "押金", "奖励金", "提现退回", "赔付",
       "调账", "退款冲正", "罚款"]

def req(port, body):
    c = C[port]
    c.request('POST', '/accounts/_search?request_cache=false', json.dumps(body),
              {'content-type': 'application/json'})
    r = c.getresponse(); d = r.read(); assert r.status == 200, d[:300]; return json.loads(d)

for frm in [0, 10, 990, 5000, 9990]:
    rnd = random.Random(frm)
    ts = {A: [], B: []}; same = 0
    for i in range(N + 3):
        size = min(rnd.choice([1, 5, 10, 20, 50, 100]), 10000 - frm)
        body = {"query": {"bool": {"should": [{"term": {"balanceTypeName": rnd.choice(BAL)}},
                                               {"term": {"balanceTypeName": rnd.choice(BAL)}}],
                                   "minimum_should_match": 1}},
                "sort": [{"acctType": "asc"}, {"balance": "desc"}], "from": frm, "size": size}
        out = {}
        for p in ((A, B) if i % 2 else (B, A)):
            t = time.perf_counter(); d = req(p, body); dt = time.perf_counter() - t
            out[p] = [(h['_id'], h['sort']) for h in d['hits']['hits']]
            if i >= 3: ts[p].append(dt)
        same += out[A] == out[B]
    ma, mb = statistics.median(ts[A]) * 1000, statistics.median(ts[B]) * 1000
    print(f"from={frm:5d}  A {ma:7.2f} ms  B {mb:7.2f} ms  B/A {mb/ma:5.2f}  same answers {same}/{N+3}")
