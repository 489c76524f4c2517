import http.client, json, time, statistics, random, sys
port = int(sys.argv[1]); out = sys.argv[2]
BAL_TYPES = ["消费", "充值", "货款结算", "退款", "提现", "转账转入", "转账转出", "手续费", "佣金收入", "服务费"]
c = http.client.HTTPConnection('127.0.0.1', port, timeout=120)
def req(body):
    c.request('POST', '/accounts/_search?request_cache=false', json.dumps(body), {'content-type': 'application/json'})
    r = c.getresponse(); return r.status, json.loads(r.read())
shapes = {
 'order sum desc': lambda b: {"size":0,"query":{"term":{"balanceTypeName":b}},"aggs":{"a":{"terms":{"field":"userName","size":10,"order":{"s":"desc"}},"aggs":{"s":{"sum":{"field":"balance"}}}}}},
 'order avg asc': lambda b: {"size":0,"query":{"term":{"balanceTypeName":b}},"aggs":{"a":{"terms":{"field":"userName","size":10,"order":{"s":"asc"}},"aggs":{"s":{"avg":{"field":"balance"}}}}}},
 'order stats.max desc, match_all': lambda b: {"size":0,"aggs":{"a":{"terms":{"field":"userName","size":10,"order":{"s.max":"desc"}},"aggs":{"s":{"stats":{"field":"balance"}}}}}},
}
answers = {}
for name, f in shapes.items():
    bodies = [f(b) for b in BAL_TYPES] + [f(b) for b in BAL_TYPES[:5]]
    for b in bodies[:3]: req(b)
    ts = []; answers[name] = []
    for b in bodies:
        t = time.perf_counter(); st, d = req(b); ts.append((time.perf_counter() - t) * 1000)
        assert st == 200, d
        answers[name].append(d['aggregations'])
    print(f"{name:36s} median {statistics.median(ts):8.2f} ms  min {min(ts):8.2f}", flush=True)
json.dump(answers, open(out, 'w'), ensure_ascii=False, sort_keys=True)
