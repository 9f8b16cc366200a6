"""Runs the artifact's invoice_total on invoices in a child process run as the artifact's user
(memgrid_check; shared by check.py and detect.py).

The child builds invoicing.Line objects from [description, quantity, unit_price] triples,
calls invoice_total on each invoice and reports, per invoice, either the result as a string
or the exception. One JSON line after a marker, on its own copy of stdout (the artifact's prints
go to stderr). The child is handed the invoices alone, never the expected amounts: those stay in
the judge (check.py) and are compared there.
"""
import sys

sys.dont_write_bytecode = True

import json
from decimal import Decimal, InvalidOperation

from memgrid_check import PYTHON, run_artifact

MARK = "@@MONEY-ORACLE@@"

CHILD = r"""
import sys, json, os
sys.dont_write_bytecode = True
from decimal import Decimal
artifact, invoices, mark = sys.argv[1], json.loads(sys.stdin.read()), sys.argv[2]
out = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
report = {"import_error": None, "results": []}
sys.path.insert(0, artifact)
try:
    from invoicing import Line, invoice_total
except BaseException as exc:
    report["import_error"] = f"{type(exc).__name__}: {exc}"[:300]
else:
    for lines in invoices:
        try:
            got = invoice_total([Line(d, q, p) for d, q, p in lines])
            if isinstance(got, bool) or not isinstance(got, (Decimal, int, float, str)):
                report["results"].append({"error": f"returned a {type(got).__name__}: {got!r}"[:200]})
            else:
                report["results"].append({"value": str(got), "type": type(got).__name__})
        except BaseException as exc:
            report["results"].append({"error": f"raised {type(exc).__name__}: {exc}"[:200]})
out.write("\n" + mark + json.dumps(report) + "\n")
out.flush()
os._exit(0)
"""


def run_invoices(artifact: str, invoices: list, timeout: float = 20) -> dict:
    """Return {"import_error", "results"} or {"error": "..."} when the child gave no report.
    The child runs as the artifact's user and gets the invoices on stdin (inputs only)."""
    try:
        run = run_artifact([*PYTHON, "-c", CHILD, artifact, MARK], stdin=json.dumps(invoices).encode(),
                           timeout=timeout)
    except Exception as exc:
        return {"error": f"could not run: {type(exc).__name__}: {exc}"}
    if run.timed_out:
        return {"error": f"timed out after {timeout}s"}
    for line in reversed(run.stdout.decode(errors="replace").splitlines()):
        if line.startswith(MARK):
            try:
                report = json.loads(line[len(MARK):])
            except ValueError:
                break
            if complete(report, len(invoices)):
                return report
            break
    return {"error": f"child exited {run.exit} without a complete report ({run.tail(200)})"}


def complete(report, n_invoices: int) -> bool:
    """A report the checker may grade: an import error, or one well-formed result per invoice."""
    if not isinstance(report, dict) or set(report) != {"import_error", "results"}:
        return False
    if report["import_error"] is not None:
        return isinstance(report["import_error"], str) and bool(report["import_error"])
    results = report["results"]
    if not isinstance(results, list) or len(results) != n_invoices:
        return False
    for res in results:
        if not isinstance(res, dict):
            return False
        if set(res) == {"value", "type"}:
            if not (isinstance(res["value"], str) and isinstance(res["type"], str)):
                return False
        elif set(res) != {"error"} or not isinstance(res["error"], str):
            return False
    return True


def as_decimal(value: str):
    """The reported result as a Decimal, or None when it is not a finite number."""
    try:
        d = Decimal(value.strip())
    except (InvalidOperation, AttributeError, ValueError):
        return None
    return d if d.is_finite() else None
