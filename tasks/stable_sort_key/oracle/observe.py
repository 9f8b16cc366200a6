"""Judge side of run_sort.py (shared by check.py and detect.py): runs the harness as the
artifact's user through memgrid_check, hands it the ticket lists alone (inputs only: expected
orders stay in check.py) and parses what it printed, which the artifact could forge: a malformed
line ends the report, and no line is trusted beyond its shape.
"""
import sys

sys.dont_write_bytecode = True

import json
import os

from memgrid_check import run_python

HERE = os.path.dirname(os.path.abspath(__file__))


def well_formed(rec) -> bool:
    if not isinstance(rec, dict):
        return False
    if set(rec) == {"ids"}:
        return isinstance(rec["ids"], list) and all(type(x) in (int, str) for x in rec["ids"])
    return set(rec) == {"error"} and isinstance(rec["error"], str)


def sort_orders(artifact: str, ticket_sets: list, timeout: float) -> dict:
    """{"import_error": "..."} or {"results": [{"ids": [...]} | {"error": "..."}, ...], "problem": str | None}.

    results holds the well-formed records in order, up to the first line that is not one; cases
    past the end of results did not finish (the run timed out, died or printed something else)."""
    run = run_python(os.path.join(HERE, "run_sort.py"), [artifact], stdin=json.dumps(ticket_sets).encode(),
                     timeout=timeout)
    out = {"results": [], "problem": None}
    try:
        lines = run.stdout.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        lines = ["<not UTF-8>"]
    for n, line in enumerate(lines):
        try:
            rec = json.loads(line)
        except ValueError:
            rec = None
        if n == 0 and isinstance(rec, dict) and set(rec) == {"import_error"} and isinstance(rec["import_error"], str):
            return {"import_error": rec["import_error"]}
        if isinstance(rec, dict) and set(rec) == {"done"}:
            break
        if not well_formed(rec) or len(out["results"]) >= len(ticket_sets):
            out["problem"] = f"the artifact process printed something that is not a result: {line[:80]!r}"
            break
        out["results"].append(rec)
    return out
