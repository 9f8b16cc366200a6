"""Runs the artifact's invoice_total on invoices in a child process (shared by check/detect).

The child builds invoicing.Line objects from [description, quantity, unit_price] triples,
calls invoice_total on each invoice and reports, per invoice, either the result as a string
or the exception. One JSON line after a marker.
"""
import sys

sys.dont_write_bytecode = True

import json
import os
import subprocess
from decimal import Decimal, InvalidOperation

MARK = "@@MONEY-ORACLE@@"

CHILD = r"""
import sys, json
sys.dont_write_bytecode = True
from decimal import Decimal
artifact, invoices, mark = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
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
sys.stdout.write("\n" + mark + json.dumps(report) + "\n")
sys.stdout.flush()
"""


def run_invoices(artifact: str, invoices: list, timeout: float = 20) -> dict:
    """Return {"import_error", "results"} or {"error": "..."} when the child gave no report."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    cwd = "/tmp" if os.path.isdir("/tmp") else artifact
    try:
        proc = subprocess.run(
            [sys.executable, "-B", "-c", CHILD, artifact, json.dumps(invoices), MARK],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout}s"}
    except Exception as exc:
        return {"error": f"could not run: {type(exc).__name__}: {exc}"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARK):
            try:
                report = json.loads(line[len(MARK):])
            except ValueError:
                break
            if complete(report, len(invoices)):
                return report
            break
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]
    return {"error": f"child exited {proc.returncode} without a complete report ({tail})"}


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
