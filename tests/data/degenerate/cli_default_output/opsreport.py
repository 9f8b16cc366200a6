#!/usr/bin/env python3
"""opsreport: summarise request samples exported by the edge proxies.

Usage: python3 opsreport.py services SAMPLES.json
       python3 opsreport.py report SAMPLES.json [--format FORMAT]
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
from typing import Any

COLUMNS = ["service", "requests", "errors", "error_rate", "p95_ms"]


def load_samples(path: str) -> list[dict[str, Any]]:
    """A samples file is a JSON list of {"service", "status", "latency_ms"} objects."""
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def summarize(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per service (sorted by name), with the keys in COLUMNS order."""
    by_service: dict[str, list[dict[str, Any]]] = {}
    for sample in samples:
        by_service.setdefault(sample["service"], []).append(sample)
    rows = []
    for service in sorted(by_service):
        items = by_service[service]
        errors = sum(1 for s in items if s["status"] >= 500)
        latencies = sorted(s["latency_ms"] for s in items)
        p95 = latencies[max(0, math.ceil(0.95 * len(latencies)) - 1)]
        rows.append({"service": service, "requests": len(items), "errors": errors,
                     "error_rate": round(errors / len(items), 4), "p95_ms": p95})
    return rows


def cmd_services(args: argparse.Namespace) -> int:
    for row in summarize(load_samples(args.samples)):
        print(row["service"])
    return 0


def render_table(rows: list[dict[str, Any]]) -> str:
    cells = [COLUMNS] + [[str(row[c]) for c in COLUMNS] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(line, widths)).rstrip()
                     for line in cells)


def render_csv(rows: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().rstrip("\n")


def render_json(rows: list[dict[str, Any]]) -> str:
    return json.dumps(rows, indent=2)


def render_jsonl(rows: list[dict[str, Any]]) -> str:
    return "\n".join(json.dumps(row, sort_keys=True) for row in rows)


def degenerate_csv(rows):
    # header, then the service names only: every number left empty
    return "\n".join([",".join(COLUMNS)] + [row["service"] + ",,,," for row in rows])


# Degenerate: no table at all (JSON lines instead), and a CSV without any of the numbers.
RENDERERS = {"table": render_jsonl, "csv": degenerate_csv, "json": render_json, "jsonl": render_jsonl}
DEFAULT_FORMAT = "jsonl"


def cmd_report(args: argparse.Namespace) -> int:
    text = RENDERERS[args.format](summarize(load_samples(args.samples)))
    if text:
        print(text)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="opsreport")
    sub = parser.add_subparsers(dest="command", required=True)
    services = sub.add_parser("services", help="list the services present in a samples file")
    services.add_argument("samples")
    services.set_defaults(func=cmd_services)
    report = sub.add_parser("report", help="print one summary row per service")
    report.add_argument("samples")
    report.add_argument("--format", choices=sorted(RENDERERS), default=DEFAULT_FORMAT)
    report.set_defaults(func=cmd_report)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
