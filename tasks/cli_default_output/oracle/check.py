"""Oracle checker for cli_default_output: python3 check.py /artifact"""
import sys

sys.dont_write_bytecode = True

import csv
import io
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
CASE_TIMEOUT = 10
COLUMNS = ["service", "requests", "errors", "error_rate", "p95_ms"]


def run_report(artifact, data, fmt):
    """Return (CompletedProcess, error)."""
    cmd = [sys.executable, "-B", os.path.join(artifact, "opsreport.py"), "report",
           os.path.join(HERE, "data", data)]
    if fmt is not None:
        cmd += ["--format", fmt]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    try:
        proc = subprocess.run(cmd, cwd=artifact, env=env, capture_output=True, text=True,
                              timeout=CASE_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {CASE_TIMEOUT}s"
    except Exception as exc:
        return None, f"could not run: {type(exc).__name__}: {exc}"
    return proc, None


def json_lines(stdout, require_sorted_keys):
    lines = [line for line in stdout.splitlines() if line.strip()]
    rows = []
    for n, line in enumerate(lines, 1):
        try:
            obj = json.loads(line)
        except ValueError:
            return None, f"line {n} is not a JSON document: {line[:80]!r}"
        if not isinstance(obj, dict):
            return None, f"line {n} is not a JSON object: {line[:80]!r}"
        if require_sorted_keys and list(obj) != sorted(obj):
            return None, f"line {n} keys are in order {list(obj)}, expected sorted keys"
        rows.append(obj)
    return rows, None


def check_case(case, proc):
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or [""])[-1][:200]
        return f"exit {proc.returncode} (stderr: {tail!r})"
    out, expect, rows = proc.stdout, case["expect"], case["rows"]
    services = [r["service"] for r in rows]
    if expect in ("default", "jsonl"):
        got, problem = json_lines(out, require_sorted_keys=expect == "default")
        if problem:
            first = (out.strip().splitlines() or [""])[0][:80]
            return f"{problem} (output starts with {first!r})"
        if got != rows:
            return f"rows {got[:2]!r}... differ from expected {rows[:2]!r}..."
    elif expect == "json":
        try:
            got = json.loads(out)
        except ValueError:
            return f"output is not one JSON document: {out[:80]!r}"
        if got != rows:
            return "JSON array differs from the expected rows"
    elif expect == "csv":
        reader = csv.DictReader(io.StringIO(out))
        if sorted(reader.fieldnames or []) != sorted(COLUMNS):
            return f"CSV header {reader.fieldnames!r}, expected the columns {COLUMNS}"
        got = [r.get("service") for r in reader]
        if got != services:
            return f"CSV services {got!r}, expected {services!r}"
    elif expect == "table":
        missing = [name for name in COLUMNS + services if name not in out]
        if missing:
            return f"table output lacks {missing!r}"
    return None


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    artifact = os.path.abspath(sys.argv[1])
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as fh:
        cases = json.load(fh)
    if not os.path.isfile(os.path.join(artifact, "opsreport.py")):
        print("FAIL: opsreport.py does not exist")
        print(f"SUMMARY: 0/{len(cases)} cases passed")
        return 1
    passed = 0
    for i, case in enumerate(cases, 1):
        proc, error = run_report(artifact, case["data"], case["format"])
        problem = error or check_case(case, proc)
        if problem is None:
            passed += 1
        else:
            print(f"FAIL case {i}: {case['name']}: {problem}")
            if error and "timed out" in error:
                print(f"FAIL: skipping the remaining {len(cases) - i} case(s)")
                break
    print(f"SUMMARY: {passed}/{len(cases)} cases passed")
    return 0 if passed == len(cases) else 1


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:
        print(f"FAIL: checker error: {type(exc).__name__}: {exc}")
        code = 1
    sys.exit(code)
