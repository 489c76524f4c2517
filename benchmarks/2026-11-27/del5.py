"""2.5% of the accounts documents updated (balance changed), 2.5% deleted: the same ids on
both engines (ids 0..1119999 by a seeded draw), then a refresh."""
import json, random, sys, urllib.request
url = sys.argv[1].rstrip("/")
rng = random.Random(5)
ids = rng.sample(range(1120000), 56000)
upd, dele = ids[:28000], ids[28000:]
def post(path, body):
    req = urllib.request.Request(url + path, data=body.encode(), method="POST",
                                 headers={"content-type": "application/x-ndjson"})
    with urllib.request.urlopen(req, timeout=300) as r:
        out = json.load(r)
    assert not out.get("errors"), str(out)[:500]
for start in range(0, len(upd), 2000):
    lines = []
    for i in upd[start:start + 2000]:
        lines.append(json.dumps({"update": {"_index": "accounts", "_id": str(i)}}))
        lines.append(json.dumps({"doc": {"balance": round(rng.uniform(-1000, 1000), 2)}}))
    post("/_bulk", "\n".join(lines) + "\n")
for start in range(0, len(dele), 2000):
    lines = [json.dumps({"delete": {"_index": "accounts", "_id": str(i)}}) for i in dele[start:start + 2000]]
    post("/_bulk", "\n".join(lines) + "\n")
post("/accounts/_refresh", "")
print("updated", len(upd), "deleted", len(dele))
