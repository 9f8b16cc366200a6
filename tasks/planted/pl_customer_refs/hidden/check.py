"""Judge of pl_customer_refs: python3 check.py /artifact

Runs observe.py as the artifact's user through memgrid_check (it is handed the old hidden test's inputs
alone, never the expected references) and asserts here what the old test asserted: references are the
customer number zero-padded to 8 digits, and 8-digit references parse back, with Python's == semantics
(a str or int subclass equal to the expected value passes, as `==` did; a value JSON cannot carry fails).
Everything the run printed is parsed defensively: anything malformed fails.
Prints one `FAIL <what>: <why>` line per failed check, then `SUMMARY: <passed>/<total> checks passed`.
"""
import sys

sys.dont_write_bytecode = True

import decimal
import json
import os

from memgrid_check import run_python

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 30  # seconds for the whole artifact run; the harness gives the import and each call 5 s
MODULE, FUNCTIONS = "billing.customers", ("format_customer_ref", "parse_customer_ref")

# (old test, function, argument, expected): the old hidden test's assertions, in its order
CASES = [
    ("test_refs_are_zero_padded_to_eight_digits", "format_customer_ref", 42, "00000042"),
    ("test_refs_are_zero_padded_to_eight_digits", "format_customer_ref", 4217, "00004217"),
    ("test_refs_are_zero_padded_to_eight_digits", "format_customer_ref", 12345678, "12345678"),
    ("test_eight_digit_refs_parse", "parse_customer_ref", "00004217", 4217),
    ("test_eight_digit_refs_parse", "parse_customer_ref", "00000001", 1),
]


# --- what the harness reported, read defensively --------------------------------------------------

class Opaque:
    """A value the artifact returned that the report cannot carry: equal to nothing."""

    def __init__(self, type_name, shown):
        self.type_name, self.shown = type_name, shown

    def __eq__(self, other):
        return False

    __hash__ = object.__hash__

    def __repr__(self):
        return self.shown


def subclass(base):
    class Sub(base):
        """A value of a subclass of int, float or str: equal as the value is, but not of the base type."""
        type_name = "?"

        def __repr__(self):
            return f"{self.type_name}({base.__repr__(self)})"

    return Sub


IntSub, FloatSub, StrSub = subclass(int), subclass(float), subclass(str)
BASE = {"i": (int, IntSub), "f": (float, FloatSub), "s": (str, StrSub)}


def decode(enc):
    """The value an ENCODED record (observe.py) stands for; ValueError when malformed."""
    if not isinstance(enc, list) or not enc or not isinstance(enc[0], str):
        raise ValueError("malformed value")
    tag, rest = enc[0], enc[1:]
    if tag == "n" and not rest:
        return None
    if tag == "b" and len(rest) == 1 and type(rest[0]) is bool:
        return rest[0]
    if tag in BASE and len(rest) in (1, 2):
        base, sub = BASE[tag]
        x = rest[0]
        if not (type(x) is base or (base is float and type(x) is int)):
            raise ValueError("malformed value")
        if len(rest) == 1:
            return base(x)
        if type(rest[1]) is not str:
            raise ValueError("malformed value")
        value = sub(x)
        value.type_name = rest[1][:100]
        return value
    if tag == "dec" and len(rest) == 1 and type(rest[0]) is str:
        try:
            return decimal.Decimal(rest[0])
        except decimal.InvalidOperation:
            raise ValueError("malformed value") from None
    if tag in ("l", "t") and len(rest) == 1 and type(rest[0]) is list:
        items = [decode(x) for x in rest[0]]
        return items if tag == "l" else tuple(items)
    if tag == "d" and len(rest) == 1 and type(rest[0]) is list:
        out = {}
        for pair in rest[0]:
            if type(pair) is not list or len(pair) != 2:
                raise ValueError("malformed dict item")
            out[decode(pair[0])] = decode(pair[1])  # TypeError for an unhashable key: malformed
        return out
    if tag == "o" and len(rest) == 2 and all(type(x) is str for x in rest):
        return Opaque(rest[0][:100], rest[1][:300])
    raise ValueError("malformed value")


def observe(artifact: str, calls: list[dict]) -> dict:
    """Run the harness on `calls`; return {"import_error", "results": [record or None per call], "problem"}.

    problem is None only when the harness imported the functions (or said why it could not), reported
    every call once, in order and well-formed, said done and exited 0."""
    run = run_python(os.path.join(HERE, "observe.py"), [artifact, MODULE, *FUNCTIONS],
                     stdin=json.dumps(calls).encode(), timeout=TIMEOUT)
    out = {"import_error": None, "results": [None] * len(calls), "problem": None}
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
            if rec.get("call") != reported or type(rec.get("call")) is not int or reported >= len(calls):
                raise ValueError
            if rec.get("returned") is True and set(rec) == {"call", "returned", "value"}:
                rec["value"] = decode(rec["value"])
            elif not (rec.get("returned") is False
                      and set(rec) == {"call", "returned", "error", "value_error", "message", "timeout"}
                      and type(rec["error"]) is str and type(rec["message"]) is str
                      and type(rec["value_error"]) is bool and type(rec["timeout"]) is bool):
                raise ValueError
        except (ValueError, TypeError, RecursionError):
            out["problem"] = f"the artifact process printed a malformed result: {line[:80]!r}"
            return out
        out["results"][reported] = rec
        reported += 1
    if out["import_error"] is not None:
        return out
    if not imported:
        out["problem"] = f"the artifact process {ended} without reporting anything (it stopped while importing {MODULE})"
    elif type(done) is not int or done != reported or run.exit != 0 or run.timed_out:
        out["problem"] = f"the artifact process {ended} before it finished ({reported} of {len(calls)} call(s) reported)"
    elif done < len(calls) and not (reported and out["results"][reported - 1].get("timeout")):
        out["problem"] = f"the artifact process reported only {done} of {len(calls)} call(s)"
    return out


def outcome(rec, problem) -> tuple[bool, object]:
    """(True, value) when the call returned; else (False, why)."""
    if rec is None:
        return False, f"gave no result: {problem}"
    if not rec["returned"]:
        return False, f"raised {rec['message'][:200]}" + (" (timed out)" if rec["timeout"] else "")
    return True, rec["value"]


def short(value) -> str:
    return repr(value)[:200]


# --- the old hidden test's assertions --------------------------------------------------------------

def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    artifact = os.path.abspath(sys.argv[1])
    passed, problems = 0, []
    # One artifact run per old test: the references parse_customer_ref is handed are what format_customer_ref
    # must return, so the format calls never run in a process that could see them.
    for group in dict.fromkeys(test for test, _, _, _ in CASES):
        cases = [case for case in CASES if case[0] == group]
        report = observe(artifact, [{"function": function, "args": [arg]} for _, function, arg, _ in cases])
        if report["import_error"] is not None:
            print(f"FAIL import: cannot import {', '.join(FUNCTIONS)} from {MODULE}: {report['import_error']}")
            print(f"SUMMARY: 0/{len(CASES)} checks passed")
            return 1
        for (test, function, arg, expected), rec in zip(cases, report["results"]):
            what = f"{function}({arg!r})"
            returned, got = outcome(rec, report["problem"])
            if returned and got == expected:
                passed += 1
                continue
            why = f"{what} {got}" if not returned else f"{what} returned {short(got)}, expected {expected!r}"
            print(f"FAIL {test}: {why}")
        if report["problem"] is not None:
            problems.append(report["problem"])
            print(f"FAIL run: {report['problem']}")
    print(f"SUMMARY: {passed}/{len(CASES)} checks passed")
    return 0 if passed == len(CASES) and not problems else 1


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:
        print(f"FAIL checker: checker error: {type(exc).__name__}: {exc}")
        print(f"SUMMARY: 0/{len(CASES)} checks passed")
        code = 1
    sys.exit(code)
