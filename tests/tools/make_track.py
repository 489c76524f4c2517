#!/usr/bin/env python3
"""Writes a small Rally / OpenSearch Benchmark track of the reference workload.

The track is built from the repository's own workload (crates/bench/workload): the accounts
mapping, N documents from its deterministic generator, and every reference query file. Its
schedule is what the issue asks a benchmark-only race to cover: delete and create the index,
wait for health, bulk with two clients, refresh, every query kind, a force merge.

    make_track.py OUT_DIR [--docs N] [--iterations N] [--warmup-iterations N] [--no-request-cache]
"""

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WORKLOAD = os.path.join(ROOT, "crates", "bench", "workload")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--docs", type=int, default=4000)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--warmup-iterations", type=int, default=1)
    ap.add_argument("--no-request-cache", action="store_true",
                    help="search operations bypass the shard request cache (request_cache=false), "
                         "so a comparison measures the query, not a cache hit")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    gen = subprocess.run(
        [sys.executable, os.path.join(WORKLOAD, "gen_accounts.py"), "-n", str(args.docs), "--quiet"],
        check=True, capture_output=True, text=True).stdout.splitlines()
    sources = gen[1::2]  # action line, source line, ...
    docs_path = os.path.join(args.out, "documents.json")
    with open(docs_path, "w", encoding="utf-8") as f:
        f.write("\n".join(sources) + "\n")

    with open(os.path.join(WORKLOAD, "mapping-accounts.json"), encoding="utf-8") as f:
        mapping = json.load(f)
    with open(os.path.join(args.out, "index.json"), "w", encoding="utf-8") as f:
        json.dump(mapping, f)

    queries = []
    qdir = os.path.join(WORKLOAD, "queries")
    for name in sorted(os.listdir(qdir)):
        if name.endswith(".json"):
            with open(os.path.join(qdir, name), encoding="utf-8") as f:
                queries.append((name[: -len(".json")], json.load(f)))

    def search_op(name, body):
        op = {"name": name, "operation-type": "search", "index": "accounts", "body": body}
        if args.no_request_cache:
            op["request-cache"] = False
        return op

    search = [{
        "operation": search_op(name, body),
        "clients": 1, "warmup-iterations": args.warmup_iterations, "iterations": args.iterations,
    } for name, body in queries]
    track = {
        "version": 2,
        "description": "Lode's reference workload, small",
        "indices": [{"name": "accounts", "body": "index.json"}],
        "corpora": [{"name": "accounts", "documents": [{
            "source-file": "documents.json",
            "document-count": len(sources),
            "uncompressed-bytes": os.path.getsize(docs_path),
            "target-index": "accounts",
        }]}],
        "schedule": [
            {"operation": {"operation-type": "delete-index"}},
            {"operation": {"operation-type": "create-index"}},
            {"operation": {"name": "check-cluster-health", "operation-type": "cluster-health",
                           "request-params": {"wait_for_status": "green"},
                           "retry-until-success": True}},
            {"operation": {"operation-type": "bulk", "bulk-size": 500}, "clients": 2},
            {"operation": {"operation-type": "refresh"}},
            *search,
            {"operation": {"operation-type": "force-merge", "max-num-segments": 1}},
        ],
    }
    with open(os.path.join(args.out, "track.json"), "w", encoding="utf-8") as f:
        json.dump(track, f, indent=1)
    print(" ".join(name for name, _ in queries))


if __name__ == "__main__":
    main()
