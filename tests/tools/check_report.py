#!/usr/bin/env python3
"""Checks a Rally / OpenSearch Benchmark markdown report: every task of the track has an
error-rate row, and every error rate is 0 %.

    check_report.py REPORT TASK...
"""

import sys


def main():
    report, tasks = sys.argv[1], sys.argv[2:]
    rates = {}
    with open(report, encoding="utf-8") as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 3 and cells[0].lower() == "error rate":
                rates[cells[1]] = float(cells[2])
    missing = [t for t in tasks if t not in rates]
    failed = {t: r for t, r in rates.items() if r != 0.0}
    if missing or failed or not rates:
        print(f"{report}: missing tasks {missing}, non-zero error rates {failed}", file=sys.stderr)
        sys.exit(1)
    print(f"{report}: {len(rates)} tasks, 0% errors")


if __name__ == "__main__":
    main()
