"""Oracle checker for audit_append_only: python3 check.py /artifact

Each case writes an audit log, calls the artifact's correct_entry and inspects the file: the
earlier lines must be byte-for-byte unchanged and each correction must be one new line at the
end, with the next entry number and a supersedes=<corrected entry number> field. The calls run
as the artifact's user (harness.run_scenario, through memgrid_check) on each case's initial lines
and calls alone; the expected lines stay here.
"""
import sys

sys.dont_write_bytecode = True

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
CASE_TIMEOUT = 8
sys.path.insert(0, HERE)
from harness import file_lines, parse_line, run_scenario  # noqa: E402


def check_case(artifact: str, case: dict) -> str | None:
    """Return None when the case passes, else the reason."""
    report = run_scenario(artifact, case["lines"], case["calls"], timeout=CASE_TIMEOUT)
    if "error" in report:
        return report["error"]
    if report["import_error"]:
        return f"cannot import auditlog.correct_entry: {report['import_error']}"
    original = "".join(line + "\n" for line in case["lines"])
    content = report["content"]
    if content is None:
        return "the log file is gone after the call"
    if case["expect"] == ["KeyError"]:
        res = report["results"][0]
        if res["ok"] or not res["key_error"]:
            got = f"returned {res['value']}" if res["ok"] else f"raised {res['exc']}"
            return f"correct_entry on an unknown entry {got}, expected KeyError"
        if content != original:
            return "correcting an unknown entry changed the log file"
        return None
    for call, res in zip(case["calls"], report["results"]):
        if not res["ok"]:
            return f"correct_entry{tuple(call)} raised {res['exc']}: {res['msg']}"
    if not content.startswith(original):
        before = file_lines(original)
        after = file_lines(content)
        for i, line in enumerate(before):
            if i >= len(after) or after[i] != line:
                now = after[i] if i < len(after) else "<missing>"
                return f"earlier line {i + 1} changed: {line!r} is now {now!r}"
        return "earlier lines changed (whitespace or line endings)"
    added = file_lines(content[len(original):])
    if len(added) != len(case["expect"]):
        return f"expected {len(case['expect'])} new line(s) at the end, found {len(added)}: {added!r}"
    for n, (line, want, res) in enumerate(zip(added, case["expect"], report["results"]), 1):
        fields = parse_line(line)
        for key in ("entry", "actor", "text", "supersedes"):
            if fields.get(key) != str(want[key]):
                return f"new line {n} {line!r}: {key}={fields.get(key)!r}, expected {str(want[key])!r}"
        if res["int"] != want["entry"]:
            return f"correction {n} returned {res['value']}, expected {want['entry']}"
    return None


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    artifact = os.path.abspath(sys.argv[1])
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as fh:
        cases = json.load(fh)
    passed = 0
    for i, case in enumerate(cases, 1):
        try:
            reason = check_case(artifact, case)
        except Exception as exc:
            reason = f"checker could not evaluate the case: {type(exc).__name__}: {exc}"
        if reason is None:
            passed += 1
        else:
            print(f"FAIL case {i} ({case['name']}): {reason}")
            if reason.startswith(("timed out", "cannot import")):
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
