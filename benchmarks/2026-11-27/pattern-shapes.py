"""Keyword pattern shapes (wildcard/regexp open at one or both ends) against OpenSearch and Lode:
one connection each, request cache off, 3 warm-ups then the median of 15, OpenSearch first.
Both engines must hold the 1.12M reference `accounts` index.

    OS_PORT=9212 LODE_PORT=9492 python3 pattern-shapes.py
"""
import os
import http.client, json, time, statistics, random, sys
random.seed(3)
def conn(p): return http.client.HTTPConnection('127.0.0.1', p, timeout=60)
OS=int(os.environ.get('OS_PORT','9212')); LODE=int(os.environ.get('LODE_PORT','9492'))
C={OS:conn(OS),LODE:conn(LODE)}
def req(p, body):
    c=C[p]; c.request('POST','/accounts/_search?request_cache=false',json.dumps(body),{'content-type':'application/json'}); r=c.getresponse(); d=json.loads(r.read()); return d
shapes={
 'infix *NNN*': lambda: {"size":10,"query":{"wildcard":{"acctId":"*%03d*"%random.randint(0,999)}}},
 'leading *N?N': lambda: {"size":10,"query":{"wildcard":{"acctId":"*%d?%d"%(random.randint(0,9),random.randint(0,9))}}},
 'regexp .*NN[0-9]': lambda: {"size":10,"query":{"regexp":{"acctId":".*%02d[0-9]"%random.randint(0,99)}}},
 'ci leading a*NNN': lambda: {"size":10,"query":{"wildcard":{"acctId":{"value":"a*%03d"%random.randint(0,999),"case_insensitive":True}}}},
 'userName *X*': lambda: {"size":10,"query":{"wildcard":{"userName":"*"+random.choice("物流集团有限公司华美")+"*"}}},
 'userName *X': lambda: {"size":10,"query":{"wildcard":{"userName":"*"+random.choice(["公司","集团","物流","科技"])}}},
}
for name,f in shapes.items():
    res={}
    for p in (OS,LODE):
        ts=[]
        for i in range(18):
            b=f(); t=time.perf_counter(); d=req(p,b); dt=(time.perf_counter()-t)*1000
            if i>=3: ts.append(dt)
        res[p]=statistics.median(ts)
        tot=d['hits']['total']
    print(f"{name:22s} OS {res[OS]:7.2f}  Lode {res[LODE]:7.2f}  ratio {res[OS]/res[LODE]:5.2f}")
