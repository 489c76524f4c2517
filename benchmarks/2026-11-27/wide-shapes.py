"""Query shapes wider than `lode bench --vary`: other sort fields and orders, keyword sorts,
calendar histograms, range/composite/cardinality aggregations, leading wildcards,
minimum_should_match, exists counts, min/max. One connection per engine, request cache off,
3 warm-up requests then the median of 15 (each request drawn from the shape), OpenSearch
first then Lode, per shape. Both engines must hold the 1.12M reference `accounts` index.

    OS_PORT=9212 LODE_PORT=9492 python3 wide-shapes.py [shape-substring ...]
"""
import os
import http.client, json, time, statistics, random, sys
random.seed(7)
def conn(port): return http.client.HTTPConnection('127.0.0.1', port, timeout=60)
OS=int(os.environ.get('OS_PORT','9212')); LODE=int(os.environ.get('LODE_PORT','9492'))
C={OS:conn(OS),LODE:conn(LODE)}
def req(port, body, path='/accounts/_search?request_cache=false'):
    c=C[port]; b=json.dumps(body)
    c.request('POST', path, b, {'content-type':'application/json'})
    r=c.getresponse(); d=r.read(); return r.status, json.loads(d)
T0=1577808000000; DAY=86400000
def win(): 
    s=T0+random.randint(0,1400)*DAY; return {"range":{"createdTime":{"gte":s,"lt":s+random.choice([1,7,30,180])*DAY}}}
shapes={
 'sort balance desc p0': lambda: {"size":10,"sort":[{"balance":"desc"}]},
 'sort balance asc from100 +win': lambda: {"from":100,"size":10,"query":{"bool":{"filter":[win()]}},"sort":[{"balance":"asc"}]},
 'sort status asc,createdTime desc': lambda: {"size":10,"sort":[{"status":"asc"},{"createdTime":"desc"}]},
 'sort acctId asc p0': lambda: {"size":10,"sort":[{"acctId":"asc"}]},
 'sort acctId desc from1000': lambda: {"from":1000,"size":10,"sort":[{"acctId":"desc"}]},
 'sort userName asc +term': lambda: {"size":10,"query":{"term":{"acctType":"BASIC"}},"sort":[{"userName":"asc"}]},
 'sort createdTimeStr asc from500': lambda: {"from":500,"size":10,"sort":[{"createdTimeStr":"asc"}]},
 'sort createdTime desc +match': lambda: {"size":10,"query":{"match":{"remark":"payment"}},"sort":[{"createdTime":"desc"}]},
 'sort _score match userName.analyzed': lambda: {"size":10,"query":{"match":{"userName.analyzed":"华美 物流"}}},
 'track_total_hits true range': lambda: {"size":0,"track_total_hits":True,"query":{"range":{"balance":{"gte":random.randint(0,3000),"lt":5000}}}},
 'terms userName size10': lambda: {"size":0,"aggs":{"a":{"terms":{"field":"userName","size":10}}}},
 'terms acctId size100 +win': lambda: {"size":0,"query":{"bool":{"filter":[win()]}},"aggs":{"a":{"terms":{"field":"acctId","size":100}}}},
 'terms acctType > avg balance': lambda: {"size":0,"aggs":{"a":{"terms":{"field":"acctType"},"aggs":{"b":{"avg":{"field":"balance"}}}}}},
 'date_hist month createdTimeStr': lambda: {"size":0,"aggs":{"a":{"date_histogram":{"field":"createdTimeStr","calendar_interval":"month"}}}},
 'date_hist 1d createdTime +win': lambda: {"size":0,"query":{"bool":{"filter":[win()]}},"aggs":{"a":{"date_histogram":{"field":"createdTime","fixed_interval":"1h"}}}},
 'histogram balance 100': lambda: {"size":0,"aggs":{"a":{"histogram":{"field":"balance","interval":100}}}},
 'range agg balance': lambda: {"size":0,"aggs":{"a":{"range":{"field":"balance","ranges":[{"to":100},{"from":100,"to":1000},{"from":1000}]}}}},
 'percentiles balance': lambda: {"size":0,"aggs":{"a":{"percentiles":{"field":"balance"}}}},
 'cardinality acctId': lambda: {"size":0,"aggs":{"a":{"cardinality":{"field":"acctId"}}}},
 'stats balance +term': lambda: {"size":0,"query":{"term":{"balanceTypeName":"退款"}},"aggs":{"a":{"stats":{"field":"balance"}}}},
 'composite acctType,status': lambda: {"size":0,"aggs":{"a":{"composite":{"size":100,"sources":[{"t":{"terms":{"field":"acctType"}}},{"s":{"terms":{"field":"status"}}}]}}}},
 'prefix acctId': lambda: {"size":10,"query":{"prefix":{"acctId":"A000001%02d"%random.randint(0,99)}}},
 'wildcard acctId': lambda: {"size":10,"query":{"wildcard":{"acctId":"*%03d"%random.randint(0,999)}}},
 'match_phrase userName.analyzed': lambda: {"size":10,"query":{"match_phrase":{"userName.analyzed":"物流集团"}}},
 'query_string': lambda: {"size":10,"query":{"query_string":{"query":"remark:(order OR shipping) AND acctType:BASIC"}}},
 'bool should msm': lambda: {"size":10,"query":{"bool":{"should":[{"term":{"acctType":"BASIC"}},{"term":{"status":1}},{"match":{"remark":"refund"}}],"minimum_should_match":2}}},
 'exists remark count': lambda: {"size":0,"track_total_hits":True,"query":{"exists":{"field":"remark"}}},
 'search_after balance': lambda: {"size":10,"sort":[{"balance":"desc"},{"acctId":"asc"}],"search_after":[random.randint(100,5000),"A00000100000"]},
 'top_hits per acctType': lambda: {"size":0,"aggs":{"a":{"terms":{"field":"acctType"},"aggs":{"h":{"top_hits":{"size":3,"sort":[{"createdTime":"desc"}]}}}}}},
 'sig terms / filters agg': lambda: {"size":0,"aggs":{"a":{"filters":{"filters":{"x":{"term":{"status":0}},"y":{"range":{"balance":{"gt":1000}}}}}}}},
 'min/max createdTime': lambda: {"size":0,"aggs":{"a":{"min":{"field":"createdTime"}},"b":{"max":{"field":"createdTime"}}}},
 'range double filter page': lambda: {"size":20,"query":{"bool":{"filter":[{"range":{"balance":{"gte":1000,"lte":1001}}}]}}},
}
only=sys.argv[1:] 
N=15
print(f"{'shape':40s} {'OS ms':>8s} {'Lode ms':>8s} {'OS/Lode':>8s}  totals")
for name,f in shapes.items():
    if only and not any(o in name for o in only): continue
    bodies=[f() for _ in range(N)]
    res={}
    tot={}
    for port in (OS,LODE):
        for b in bodies[:3]: req(port,b)
        ts=[]
        for b in bodies:
            t=time.perf_counter(); st,d=req(port,b); ts.append((time.perf_counter()-t)*1000)
            if st!=200: print(name, port, st, json.dumps(d)[:300]); break
        res[port]=statistics.median(ts)
        tot[port]=json.dumps(d.get('hits',{}).get('total'))
    flag='' if tot[OS]==tot[LODE] else f" DIFF {tot[OS]} vs {tot[LODE]}"
    print(f"{name:40s} {res[OS]:8.2f} {res[LODE]:8.2f} {res[OS]/res[LODE]:8.2f} {flag}")
