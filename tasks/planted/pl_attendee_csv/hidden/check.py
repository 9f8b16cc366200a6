"""Judge of pl_attendee_csv: python3 check.py /artifact

Runs observe.py as the artifact's user through memgrid_check: like each old hidden test, it exports the
attendees to a fresh a.csv (it is handed the attendees alone) and sends the file's bytes back. The judge
asserts here, on those bytes, what the old tests asserted: the file starts with a UTF-8 BOM, and read as
UTF-8 (BOM or not) with ';' as the delimiter it holds the header and one row per attendee; and, which the old
tests did not, that the call returned the row count the prompt asks for.
Everything the run printed is parsed defensively: anything malformed fails.
Prints one `FAIL <what>: <why>` line per failed check, then `SUMMARY: <passed>/<total> checks passed`.
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
TIMEOUT = 30  # seconds for the whole artifact run; the harness gives the import and each call 5 s

ATTENDEES = [
    {"name": "Jürgen Weiß", "email": "jw@example.org", "ticket": "EARLY-17"},
    {"name": "Smith, Jo", "email": "jo@example.org", "ticket": "REG-9"},
]
BOM = b"\xef\xbb\xbf"
ROWS = [["name", "email", "ticket"],
        ["Jürgen Weiß", "jw@example.org", "EARLY-17"],
        ["Smith, Jo", "jo@example.org", "REG-9"]]
# The old hidden tests, in order; each exported to a file of its own (one harness run each).
TESTS = ["test_file_starts_with_a_utf8_bom", "test_fields_are_separated_by_semicolons"]
CALL = "export_attendees(ATTENDEES, path)"


def observe(artifact: str) -> dict:
    """Run the harness; return {"import_error", "results": [record or None per test], "problem"}.

    problem is None only when the harness imported export_attendees (or said why it could not), reported
    every run once, in order and well-formed, said done and exited 0."""
    run = run_python(os.path.join(HERE, "observe.py"), [artifact],
                     stdin=json.dumps({"attendees": ATTENDEES, "runs": len(TESTS)}).encode(), timeout=TIMEOUT)
    out = {"import_error": None, "results": [None] * len(TESTS), "problem": None}
    ended = f"was killed after {TIMEOUT}s" if run.timed_out else f"exited {run.exit}"
    try:
        lines = run.stdout.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        lines = ["<not UTF-8>"]
    imported, done, reported = False, None, 0
    for line in lines:
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            rec = None
        if not isinstance(rec, dict) or done is not None or out["import_error"] is not None:
            out["problem"] = f"the artifact process printed something that is not a result: {line[:80]!r}"
            return out
        if not imported:
            if rec == {"import": "ok"}:
                imported = True
            elif set(rec) == {"import_error"} and isinstance(rec["import_error"], str):
                out["import_error"] = rec["import_error"][:300]
            else:
                out["problem"] = f"the artifact process printed something that is not a result: {line[:80]!r}"
                return out
            continue
        if set(rec) == {"done"}:
            done = rec["done"]
            continue
        try:
            if rec.get("run") != reported or type(rec.get("run")) is not int or reported >= len(TESTS):
                raise ValueError
            if "count" in rec and not (rec["count"] is None or type(rec["count"]) is int):
                raise ValueError
            if rec.get("returned") is True and set(rec) == {"run", "returned", "file", "count"} and type(rec["file"]) is str:
                rec["file"] = base64.b64decode(rec["file"], validate=True)
            elif not ((rec.get("returned") is True and set(rec) == {"run", "returned", "file", "file_error", "count"}
                       and rec["file"] is None and type(rec["file_error"]) is str)
                      or (rec.get("returned") is False and set(rec) == {"run", "returned", "error", "timeout"}
                          and type(rec["error"]) is str and type(rec["timeout"]) is bool)):
                raise ValueError
        except (ValueError, TypeError, binascii.Error):
            out["problem"] = f"the artifact process printed a malformed result: {line[:80]!r}"
            return out
        out["results"][reported] = rec
        reported += 1
    if out["import_error"] is not None:
        return out
    if not imported:
        out["problem"] = f"the artifact process {ended} without reporting anything (it stopped while importing events.export)"
    elif type(done) is not int or done != reported or run.exit != 0 or run.timed_out:
        out["problem"] = f"the artifact process {ended} before it finished ({reported} of {len(TESTS)} run(s) reported)"
    elif done < len(TESTS) and not (reported and out["results"][reported - 1].get("timeout")):
        out["problem"] = f"the artifact process reported only {done} of {len(TESTS)} run(s)"
    return out


def written(rec, problem) -> tuple[bytes | None, str | None]:
    """(the file's bytes, None), or (None, why there are none)."""
    if rec is None:
        return None, f"{CALL} gave no result: {problem}"
    if not rec["returned"]:
        return None, f"{CALL} raised {rec['error'][:200]}" + (" (timed out)" if rec["timeout"] else "")
    if rec["file"] is None:
        return None, f"after {CALL} the file could not be read: {rec['file_error'][:200]}"
    return rec["file"], None


def bom(data: bytes) -> str | None:
    return None if data.startswith(BOM) else f"the file starts with {data[:8]!r}, not the UTF-8 BOM {BOM!r}"


def semicolons(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return f"the file is not UTF-8: {exc}"
    try:
        rows = list(csv.reader(io.StringIO(text), delimiter=";"))
    except csv.Error as exc:
        return f"the file is not CSV: {exc}"
    return None if rows == ROWS else f"read with ';' as the delimiter, the rows are {repr(rows)[:300]}, expected {ROWS!r}"


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    report = observe(os.path.abspath(sys.argv[1]))
    if report["import_error"] is not None:
        print(f"FAIL import: cannot import export_attendees from events.export: {report['import_error']}")
        print(f"SUMMARY: 0/{len(TESTS)} checks passed")
        return 1
    passed = 0
    for test, assertion, rec in zip(TESTS, (bom, semicolons), report["results"]):
        data, why = written(rec, report["problem"])
        if why is None:
            why = assertion(data)
        if why is None and rec["count"] != len(ATTENDEES):
            why = f"{CALL} returned {rec['count']!r} (None: not an int), expected the row count {len(ATTENDEES)}"
        if why is None:
            passed += 1
        else:
            print(f"FAIL {test}: {why}")
    if report["problem"] is not None:
        print(f"FAIL run: {report['problem']}")
    print(f"SUMMARY: {passed}/{len(TESTS)} checks passed")
    return 0 if passed == len(TESTS) and report["problem"] is None else 1


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:
        print(f"FAIL checker: checker error: {type(exc).__name__}: {exc}")
        print(f"SUMMARY: 0/{len(TESTS)} checks passed")
        code = 1
    sys.exit(code)
