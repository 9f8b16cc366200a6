"""Oracle checker for csv_export_format: python3 check.py /artifact

Runs export_rows on every case in a child process (run_export.py, with a timeout, as the artifact's
user through memgrid_check: it is handed the rows, never the expected tables) and checks the bytes
of each produced file here: UTF-8 byte-order mark, LF-only line endings, ';' as delimiter,
and that parsing the file gives back the header and the rows.
"""
import sys

sys.dont_write_bytecode = True

import base64
import binascii
import csv
import io
import json
import os

from memgrid_check import run_python

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 30
BOM = b"\xef\xbb\xbf"


def run_artifact(artifact: str, row_lists: list) -> dict:
    """Return {"import_error", "results", "problem"}: results holds, in order, the well-formed case
    records the child reported (each with the file's bytes decoded into "data"); problem says why the
    report is not complete (None when the child imported export_rows or said why not, reported every
    case and said done)."""
    run = run_python(os.path.join(HERE, "run_export.py"), [artifact], stdin=json.dumps(row_lists).encode(),
                     timeout=TIMEOUT)
    return parse_report(run, len(row_lists))


def parse_report(run, n_cases: int) -> dict:
    out = {"import_error": None, "results": [], "problem": None}
    ended = f"was killed after {TIMEOUT}s" if run.timed_out else f"exited {run.exit}"
    try:
        lines = run.stdout.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        lines = ["<not UTF-8>"]
    imported = done = False
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            rec = None
        if not isinstance(rec, dict) or done:
            out["problem"] = f"the artifact process printed something that is not a result: {line[:80]!r}"
            return out
        if not imported:
            if rec == {"import": "ok"}:
                imported = True
            elif set(rec) == {"import_error"} and isinstance(rec["import_error"], str):
                out["import_error"] = rec["import_error"]
                return out
            else:
                out["problem"] = f"the artifact process printed something that is not a result: {line[:80]!r}"
                return out
            continue
        if rec == {"done": n_cases} and len(out["results"]) == n_cases:
            done = True
            continue
        result = well_formed(rec, len(out["results"]))
        if result is None or len(out["results"]) >= n_cases:
            out["problem"] = f"the artifact process printed a malformed result: {line[:80]!r}"
            return out
        out["results"].append(result)
    if not imported:
        out["problem"] = f"the artifact process {ended} without reporting anything (it stopped while importing exporter)"
    elif not done:
        out["problem"] = (f"the artifact process {ended} before it finished "
                          f"({len(out['results'])} of {n_cases} case(s) reported)")
    return out


def well_formed(rec: dict, index: int) -> dict | None:
    """The case record as problems_for takes it ("data": the file's bytes or None), or None when malformed."""
    if type(rec.get("case")) is not int or rec["case"] != index:
        return None
    if rec.get("ok") is False and set(rec) == {"case", "ok", "error"} and isinstance(rec["error"], str):
        return {"ok": False, "error": rec["error"]}
    if rec.get("ok") is not True or set(rec) != {"case", "ok", "returned", "file", "size"}:
        return None
    if rec["file"] is None:
        if rec["size"] is not None and (type(rec["size"]) is not int or rec["size"] < 0):
            return None
        return {"ok": True, "returned": rec["returned"], "data": None, "size": rec["size"]}
    if not isinstance(rec["file"], str):
        return None
    try:
        data = base64.b64decode(rec["file"], validate=True)
    except (binascii.Error, ValueError):
        return None
    return {"ok": True, "returned": rec["returned"], "data": data, "size": len(data)}


def problems_for(case: dict, result: dict | None, data: bytes | None) -> list[str]:
    if result is None:
        return [f"export_rows did not finish (timed out or the process died)"]
    if not result.get("ok"):
        return [f"export_rows raised {result.get('error')}"]
    if data is None:
        if result.get("size") is not None:
            return [f"the file is {result['size']} bytes, more than the checker reads"]
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
    try:
        table = list(csv.reader(io.StringIO(text, newline=""), delimiter=";"))
    except csv.Error as exc:
        problems.append(f"parsed with ';' as delimiter the file is not CSV: {exc}")
        return problems
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
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as fh:
        cases = json.load(fh)

    report = run_artifact(artifact, [case["rows"] for case in cases])
    if report["import_error"] is not None:
        print(f"FAIL: cannot import exporter.export_rows: {report['import_error']}")
        print(f"SUMMARY: 0/{len(cases)} cases passed")
        return 1
    results = report["results"]
    passed = 0
    for i, case in enumerate(cases):
        result = results[i] if i < len(results) else None
        problems = problems_for(case, result, result.get("data") if result else None)
        if problems:
            print(f"FAIL case {i + 1} ({case['name']}): " + "; ".join(problems))
        else:
            passed += 1
    if report["problem"] is not None:
        print(f"FAIL: {report['problem']}")

    print(f"SUMMARY: {passed}/{len(cases)} cases passed")
    return 0 if passed == len(cases) and report["problem"] is None else 1


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:
        print(f"FAIL: checker error: {type(exc).__name__}: {exc}")
        code = 1
    sys.exit(code)
