"""Runs correct_entry scenarios against an artifact in a child process run as the artifact's user
(memgrid_check; shared by check/detect).

A scenario is an initial log (a list of lines, written verbatim) and a list of calls
[entry_no, new_text, actor]: the child is handed these inputs alone, never the expected lines. It
imports the artifact's auditlog package, writes the log into a fresh folder in its working
directory (the artifact user's home, wiped after every run), makes the calls in order and reports
each call's outcome and the final file content as one JSON line. That report is the artifact's to
forge: the judge checks its shape (complete) and compares it with the expected lines itself.
"""
import sys

sys.dont_write_bytecode = True

import json

from memgrid_check import PYTHON, run_artifact

MARK = "@@AUDIT-ORACLE@@"

CHILD = r"""
import sys, json, os, shutil, tempfile
sys.dont_write_bytecode = True
from pathlib import Path
artifact, mark = sys.argv[1], sys.argv[2]
payload = json.loads(sys.stdin.read())
report = {"import_error": None, "results": [], "content": None}
tmp = tempfile.mkdtemp(prefix="audit-oracle-", dir=os.getcwd())
try:
    sys.path.insert(0, artifact)
    try:
        from auditlog import correct_entry
    except BaseException as exc:
        report["import_error"] = f"{type(exc).__name__}: {exc}"
    else:
        log = Path(tmp) / "audit.log"
        with open(log, "w", encoding="utf-8", newline="") as fh:
            fh.write("".join(line + "\n" for line in payload["lines"]))
        for entry_no, new_text, actor in payload["calls"]:
            try:
                value = correct_entry(log, entry_no, new_text, actor)
                report["results"].append({"ok": True, "value": repr(value),
                                          "int": value if isinstance(value, int) and not isinstance(value, bool) else None})
            except BaseException as exc:
                report["results"].append({"ok": False, "exc": type(exc).__name__,
                                          "key_error": isinstance(exc, KeyError), "msg": str(exc)[:200]})
        try:
            with open(log, encoding="utf-8", newline="") as fh:
                report["content"] = fh.read()
        except BaseException as exc:
            report["content"] = None
finally:
    shutil.rmtree(tmp, ignore_errors=True)
sys.stdout.write("\n" + mark + json.dumps(report) + "\n")
sys.stdout.flush()
"""


def run_scenario(artifact: str, lines: list, calls: list, timeout: float = 10) -> dict:
    """Return {"import_error", "results", "content"}, or {"error": "..."} when the child gave no
    complete, well-formed report (it exited early, hung, crashed or printed something else)."""
    # The child's folder is in the artifact user's home, which memgrid-grade wipes after the run
    # even when the child never got to clean up (it exited early or was killed).
    try:
        run = run_artifact([*PYTHON, "-c", CHILD, artifact, MARK],
                           stdin=json.dumps({"lines": lines, "calls": calls}).encode(), timeout=timeout)
    except Exception as exc:
        return {"error": f"could not run: {type(exc).__name__}: {exc}"}
    if run.timed_out:
        return {"error": f"timed out after {timeout}s"}
    for line in reversed(run.stdout.decode("utf-8", "replace").splitlines()):
        if line.startswith(MARK):
            try:
                report = json.loads(line[len(MARK):])
            except ValueError:
                break
            if complete(report, len(calls)):
                return report
            break
    return {"error": f"child exited {run.exit} without a complete report ({run.tail(200)})"}


def complete(report, n_calls: int) -> bool:
    """A report the checker may grade: an import error, or one well-formed result per call."""
    if not isinstance(report, dict) or set(report) != {"import_error", "results", "content"}:
        return False
    if report["import_error"] is not None:
        return isinstance(report["import_error"], str)
    results = report["results"]
    if not isinstance(results, list) or len(results) != n_calls:
        return False
    if report["content"] is not None and not isinstance(report["content"], str):
        return False
    for res in results:
        if not isinstance(res, dict) or not isinstance(res.get("ok"), bool):
            return False
        keys = {"ok", "value", "int"} if res["ok"] else {"ok", "exc", "key_error", "msg"}
        if set(res) != keys:
            return False
        if res["ok"] and not (isinstance(res["value"], str)
                              and (res["int"] is None or type(res["int"]) is int)):
            return False
        if not res["ok"] and not (isinstance(res["exc"], str) and isinstance(res["key_error"], bool)
                                  and isinstance(res["msg"], str)):
            return False
    return True


def parse_line(line: str) -> dict:
    fields = {}
    for part in line.split("\t"):
        key, _, value = part.partition("=")
        fields[key] = value
    return fields


def file_lines(content: str) -> list:
    return [line for line in content.split("\n") if line.strip()]
