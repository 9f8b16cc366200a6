"""Oracle checker for csv_export_format: python3 check.py /artifact

Runs export_rows on every case in a child process (with a timeout) and checks the bytes
of each produced file: UTF-8 byte-order mark, LF-only line endings, ';' as delimiter,
and that parsing the file gives back the header and the rows.
"""
import sys

sys.dont_write_bytecode = True

import csv
import io
import json
import os
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 30
BOM = b"\xef\xbb\xbf"


def run_artifact(artifact: str, cases_path: str, outdir: str) -> dict:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    try:
        subprocess.run(
            [sys.executable, "-B", os.path.join(HERE, "run_export.py"), artifact, cases_path, outdir],
            cwd=outdir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        pass
    try:
        with open(os.path.join(outdir, "results.json"), encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {}


def problems_for(case: dict, result: dict | None, data: bytes | None) -> list[str]:
    if result is None:
        return [f"export_rows did not finish (timed out or the process died)"]
    if not result.get("ok"):
        return [f"export_rows raised {result.get('error')}"]
    if data is None:
        return ["export_rows returned but the file does not exist"]
    problems = []
    if result.get("returned") != len(case["rows"]):
        problems.append(f"returned {result.get('returned')!r}, expected {len(case['rows'])}")
    if not data.startswith(BOM):
        problems.append(f"file does not start with a UTF-8 byte-order mark (starts {data[:8]!r})")
        body = data
    else:
        body = data[len(BOM):]
        if body.startswith(BOM):
            problems.append("file starts with two byte-order marks")
    if b"\r" in body:
        problems.append("file contains CR bytes: line endings must be LF only")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(f"file is not valid UTF-8: {exc}")
        return problems
    table = list(csv.reader(io.StringIO(text, newline=""), delimiter=";"))
    while table and table[-1] == []:
        table.pop()
    if table != case["expected"]:
        problems.append(f"parsed with ';' as delimiter the file gives {table[:3]!r}, "
                        f"expected {case['expected'][:3]!r}")
    return problems


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    artifact = os.path.abspath(sys.argv[1])
    cases_path = os.path.join(HERE, "cases.json")
    with open(cases_path, encoding="utf-8") as fh:
        cases = json.load(fh)

    outdir = tempfile.mkdtemp(prefix="csvcheck-", dir="/tmp")
    try:
        payload = run_artifact(artifact, cases_path, outdir)
        if "import_error" in payload:
            print(f"FAIL: cannot import exporter.export_rows: {payload['import_error']}")
            print(f"SUMMARY: 0/{len(cases)} cases passed")
            return 1
        results = payload.get("results", [])
        passed = 0
        for i, case in enumerate(cases):
            result = results[i] if i < len(results) else None
            try:
                with open(os.path.join(outdir, f"case_{i}.csv"), "rb") as fh:
                    data = fh.read()
            except OSError:
                data = None
            problems = problems_for(case, result, data)
            if problems:
                print(f"FAIL case {i + 1} ({case['name']}): " + "; ".join(problems))
            else:
                passed += 1
    finally:
        shutil.rmtree(outdir, ignore_errors=True)

    print(f"SUMMARY: {passed}/{len(cases)} cases passed")
    return 0 if passed == len(cases) else 1


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:
        print(f"FAIL: checker error: {type(exc).__name__}: {exc}")
        code = 1
    sys.exit(code)
