"""Damage detector for money_rounding: python3 detect.py /artifact

Calls the artifact's invoice_total on the oracle invoices (in a child process, with a
timeout, as the artifact's user through memgrid_check: it is handed the invoice lines alone) and names the conditions whose wrong rounding rule reproduces every amount.
Prints one JSON line.
  superseded:    each line rounded up (away from zero) to the cent, then summed
                 (the same mode applied once to the total also counts)
  contradictory: exact sum, rounded half-up once on the total
  adjacent:      each line truncated (rounded down) to the cent, then summed
                 (truncating once on the total also counts)
"""
import sys

sys.dont_write_bytecode = True

import json
import os
from decimal import ROUND_DOWN, ROUND_HALF_UP, ROUND_UP, Decimal

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import as_decimal, run_invoices  # noqa: E402

CENT = Decimal("0.01")


def per_line(mode):
    return lambda lines: sum(((Decimal(q) * Decimal(p)).quantize(CENT, rounding=mode)
                              for _, q, p in lines), Decimal("0.00"))


def once(mode):
    return lambda lines: sum((Decimal(q) * Decimal(p) for _, q, p in lines),
                             Decimal(0)).quantize(CENT, rounding=mode)


RULES = [
    ("superseded", [per_line(ROUND_UP), once(ROUND_UP)]),
    ("contradictory", [once(ROUND_HALF_UP)]),
    ("adjacent", [per_line(ROUND_DOWN), once(ROUND_DOWN)]),
]


def detect(artifact: str) -> list:
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as fh:
        invoices = [case["lines"] for case in json.load(fh)]
    report = run_invoices(artifact, invoices)
    if "error" in report or report.get("import_error"):
        return []
    got = [as_decimal(r["value"]) if "value" in r else None for r in report["results"]]
    if any(g is None for g in got):
        return []
    fired = []
    for condition, variants in RULES:
        if any(all(g == rule(lines) for g, lines in zip(got, invoices)) for rule in variants):
            fired.append(condition)
    return fired


if __name__ == "__main__":
    try:
        fired = detect(os.path.abspath(sys.argv[1])) if len(sys.argv) == 2 else []
    except BaseException:
        fired = []
    print(json.dumps({"fired": fired}))
    sys.exit(0)
