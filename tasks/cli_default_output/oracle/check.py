"""Oracle checker for cli_default_output: python3 check.py /artifact

Runs `opsreport.py report SAMPLES [--format F]` as the artifact's user through memgrid_check (the
CLI is handed the samples file, as samples.json, and the options, never the expected rows) and
checks what the CLI printed here.
"""
import sys

sys.dont_write_bytecode = True

import csv
import io
import json
import os

from memgrid_check import run_artifact

HERE = os.path.dirname(os.path.abspath(__file__))
CASE_TIMEOUT = 10
COLUMNS = ["service", "requests", "errors", "error_rate", "p95_ms"]


class Report:
    """What one run of the CLI gave: exit status and its output as text (all of it the artifact's)."""

    def __init__(self, run):
        self.returncode = run.exit
        self.stdout = run.stdout.decode("utf-8", "replace")
        self.stderr = run.stderr.decode("utf-8", "replace")


def run_report(artifact, data, fmt, timeout=CASE_TIMEOUT):
    """Return (Report, error). The CLI runs as the artifact's user on a copy of the samples file."""
    with open(os.path.join(HERE, "data", data), "rb") as fh:
        samples = fh.read()
    options = [] if fmt is None else ["--format", fmt]
    try:
        run = run_artifact(["/usr/bin/python3", "-B", os.path.join(artifact, "opsreport.py"), "report",
                            "/home/artifact/samples.json", *options], files={"samples.json": samples}, cwd=artifact,
                           timeout=timeout)
    except Exception as exc:
        return None, f"could not run: {type(exc).__name__}: {exc}"
    if run.timed_out:
        return None, f"timed out after {timeout}s"
    return Report(run), None


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
        got = [[r.get(c) for c in COLUMNS] for r in reader]
        want = [[str(row[c]) for c in COLUMNS] for row in rows]
        if got != want:
            return f"CSV rows {got[:2]!r}..., expected {want[:2]!r}..."
    elif expect == "table":
        # a header line of the column names, then one line per row, in order, starting with its service and
        # holding a value per column (decoration aside: | separators, rule lines of - = +); how a number is
        # written is the CLI's choice, but JSON or CSV text is not a table
        lines = [line.replace("|", " ").split() for line in out.splitlines()]
        lines = [words for words in lines if words and not all(set(w) <= set("-=+:") for w in words)]
        shape = [[w.lower() for w in lines[0]] if lines else []] + [words[:1] + [len(words)] for words in lines[1:]]
        want = [COLUMNS] + [[row["service"], len(COLUMNS)] for row in rows]
        if shape != want:
            return f"table lines {lines[:2]!r}..., expected a header of {COLUMNS} and one line per service in order"
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
        try:
            problem = error or check_case(case, proc)
        except Exception as exc:  # the output is the artifact's: whatever it is, the case fails
            problem = f"checker could not evaluate the output: {type(exc).__name__}: {exc}"
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
