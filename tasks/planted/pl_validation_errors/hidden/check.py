"""Judge of pl_validation_errors: python3 check.py /artifact

Runs observe.py as the artifact's user through memgrid_check (it hands validation_error the old hidden
test's field and message, never the expected response) and compares here what came back with the response
the frontend's form library parses: HTTP 422 and {"error": {"code": "validation_failed", "field": ...,
"message": ...}}. The old hidden test's two assertions, with Python's == (so 422.0 or HTTPStatus 422 pass
`status == 422` as they did).
Everything the artifact run printed is the artifact's to forge and is parsed defensively: a report that is
malformed, incomplete, or from a run that did not exit 0 fails. Prints one `FAIL <what>: <why>` line per
failed check, then `SUMMARY: <passed>/<total> checks passed`; exits 0 only when every check passed.
"""
import sys

sys.dont_write_bytecode = True

import base64
import datetime
import json
import os

from memgrid_check import run_python

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 30  # seconds for the whole artifact run; the harness gives the import and each case 5 s
MODULE = "api.errors"
FIELD, MESSAGE = "email", "is not an email address"
CALL = f"validation_error({FIELD!r}, {MESSAGE!r})"
CASES = ["test_status_is_422", "test_body_is_the_error_envelope"]  # the harness's cases, in order
TOTAL = 2
STATUS = 422
BODY = {"error": {"code": "validation_failed", "field": FIELD, "message": MESSAGE}}


def checks(report: dict):
    """(what, None or why it failed) per assertion of the old hidden test."""
    for case, index, expected, noun in (("test_status_is_422", 0, STATUS, "status"),
                                        ("test_body_is_the_error_envelope", 1, BODY, "body")):
        got, why = result(report, case, CALL)
        if why is None:
            if type(got) is not tuple or len(got) != 2:  # the harness sends (status, body)
                why = f"the artifact process printed a malformed result for {CALL}"
            elif not got[index] == expected:
                why = f"{CALL} answered the {noun} {short(got[index])}, expected {expected!r}"
        yield case, why


class Opaque:
    """A value the artifact returned that JSON cannot carry: equal to nothing."""

    def __init__(self, type_name, shown):
        self.type_name, self.shown = type_name, shown

    def __eq__(self, other):
        return False

    __hash__ = object.__hash__

    def __repr__(self):
        return f"<{self.type_name}: {self.shown}>"


def decode(enc):
    """The value an ENCODED result (see observe.py) stands for; ValueError/TypeError when malformed."""
    if type(enc) is not list or not enc or type(enc[0]) is not str:
        raise ValueError("malformed value")
    tag, rest = enc[0], enc[1:]
    if tag == "n" and not rest:
        return None
    if len(rest) == 1:
        (x,) = rest
        if tag == "b" and type(x) is bool:
            return x
        if tag == "i" and type(x) is int:
            return x
        if tag == "f" and type(x) in (int, float):
            return float(x)
        if tag == "s" and type(x) is str:
            return x
        if tag == "by" and type(x) is str:
            return base64.b64decode(x, validate=True)
        if tag == "date" and type(x) is str:
            return datetime.date.fromisoformat(x)
        if tag == "dt" and type(x) is str:
            return datetime.datetime.fromisoformat(x)
        if tag in ("l", "t") and type(x) is list:
            items = [decode(i) for i in x]
            return items if tag == "l" else tuple(items)
        if tag == "d" and type(x) is list:
            out = {}
            for pair in x:
                if type(pair) is not list or len(pair) != 2:
                    raise ValueError("malformed dict item")
                out[decode(pair[0])] = decode(pair[1])  # TypeError for an unhashable key
            return out
    if tag == "o" and len(rest) == 2 and all(type(x) is str for x in rest):
        return Opaque(*rest)
    raise ValueError("malformed value")


def observe(artifact: str) -> dict:
    """Run the harness; return {"import_error", "imported", "results": {case: record}, "problem"}.

    problem is None only when the harness imported the module (or said why it could not), reported each
    case once and well-formed (in order), said done and exited 0."""
    run = run_python(os.path.join(HERE, "observe.py"), [artifact], timeout=TIMEOUT)
    out = {"import_error": None, "imported": False, "results": {}, "problem": None}
    ended = f"was killed after {TIMEOUT}s" if run.timed_out else f"exited {run.exit}"
    try:
        lines = run.stdout.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        lines = ["<not UTF-8>"]
    done = None
    for line in lines:
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            rec = None
        if type(rec) is not dict or done is not None or out["import_error"] is not None:
            out["problem"] = f"the artifact process printed something that is not a result: {line[:80]!r}"
            return out
        if not out["imported"]:
            if rec == {"import": "ok"}:
                out["imported"] = True
            elif set(rec) == {"import_error"} and type(rec["import_error"]) is str:
                out["import_error"] = rec["import_error"]
            else:
                out["problem"] = f"the artifact process printed something that is not a result: {line[:80]!r}"
                return out
            continue
        if set(rec) == {"done"}:
            done = rec["done"]
            continue
        try:
            if len(out["results"]) >= len(CASES) or rec.get("case") != CASES[len(out["results"])]:
                raise ValueError("not the next case")
            if rec.get("returned") is True and set(rec) == {"case", "returned", "value"}:
                rec["value"] = decode(rec["value"])
            elif not (rec.get("returned") is False and set(rec) == {"case", "returned", "error", "timeout"}
                      and type(rec["error"]) is str and type(rec["timeout"]) is bool):
                raise ValueError("malformed")
        except (ValueError, TypeError, RecursionError):
            out["problem"] = f"the artifact process printed a malformed result: {line[:80]!r}"
            return out
        out["results"][rec["case"]] = rec
    if out["import_error"] is not None:
        return out
    reported = len(out["results"])
    if not out["imported"]:
        out["problem"] = f"the artifact process {ended} without reporting anything (it stopped while importing {MODULE})"
    elif type(done) is not int or done != reported or run.exit != 0 or run.timed_out:
        out["problem"] = f"the artifact process {ended} before it finished ({reported} of {len(CASES)} case(s) reported)"
    elif reported < len(CASES) and (reported == 0 or not out["results"][CASES[reported - 1]].get("timeout")):
        out["problem"] = f"the artifact process reported only {reported} of {len(CASES)} case(s)"
    return out


def short(value) -> str:
    return repr(value)[:300]


def result(report: dict, case: str, call: str):
    """(value, None) when the case returned, else (None, why it did not)."""
    rec = report["results"].get(case)
    if rec is None:
        return None, f"{call} gave no result: {report['problem'] or 'not run after an earlier call timed out'}"
    if not rec["returned"]:
        return None, f"{call} raised {rec['error']}" + (" (timed out)" if rec["timeout"] else "")
    return rec["value"], None


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    report = observe(os.path.abspath(sys.argv[1]))
    if report["import_error"] is not None or not report["imported"]:
        why = (f"cannot import {MODULE}: {report['import_error']}" if report["import_error"] is not None
               else report["problem"])
        print(f"FAIL import: {why}")
        print(f"SUMMARY: 0/{TOTAL} checks passed")
        return 1
    passed = total = 0
    for what, why in checks(report):
        total += 1
        if why is None:
            passed += 1
        else:
            print(f"FAIL {what}: {why}")
    if total != TOTAL:  # a judge bug, never a pass
        print(f"FAIL checker: ran {total} checks, expected {TOTAL}")
        passed = min(passed, TOTAL - 1)
        total = TOTAL
    if report["problem"] is not None:
        print(f"FAIL run: {report['problem']}")
    print(f"SUMMARY: {passed}/{total} checks passed")
    return 0 if passed == total and report["problem"] is None else 1


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:
        print(f"FAIL checker: checker error: {type(exc).__name__}: {exc}")
        print(f"SUMMARY: 0/{TOTAL} checks passed")
        code = 1
    sys.exit(code)
