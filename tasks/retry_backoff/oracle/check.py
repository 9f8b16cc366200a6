"""Oracle checker for retry_backoff: python3 check.py /artifact

Compares the artifact's backoff_delays() and the waits call_with_retry makes (time.sleep is
replaced, nothing really sleeps) with the expected retry schedule.
"""
import sys

sys.dont_write_bytecode = True

import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import observe, same  # noqa: E402


def evaluate(report: dict, expected: list, case: dict) -> str | None:
    """Return None when the case passes, else the reason."""
    schedule = report["schedule"]
    kind = case["kind"]
    if kind in ("schedule", "max", "total", "deterministic") and not isinstance(schedule, list):
        return str(schedule)
    if kind == "schedule":
        return None if same(schedule, expected) else f"backoff_delays() = {schedule}, expected {expected}"
    if kind == "deterministic":
        return None if same(schedule, report["schedule2"]) else (
            f"two calls gave {schedule} and {report['schedule2']}")
    if kind == "max":
        got = max(schedule, default=0.0)
        return None if math.isclose(got, case["expected"], abs_tol=1e-9) else (
            f"longest wait {got}s, expected {case['expected']}s")
    if kind == "total":
        got = sum(schedule)
        return None if math.isclose(got, case["expected"], abs_tol=1e-6) else (
            f"total wait {got}s, expected {case['expected']}s")
    seen = report["scenarios"].get(case["scenario"])
    if seen is None:
        return "scenario did not run"
    problems = []
    if seen["calls"] != case["calls"]:
        problems.append(f"{seen['calls']} call(s), expected {case['calls']}")
    if not same(seen["slept"], case["slept"]):
        problems.append(f"waited {seen['slept']}, expected {case['slept']}")
    if seen["outcome"] != case["outcome"]:
        problems.append(f"{seen['outcome']}, expected {case['outcome']}")
    return "; ".join(problems) or None


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    artifact = os.path.abspath(sys.argv[1])
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as fh:
        spec = json.load(fh)
    cases = spec["cases"]
    report = observe(artifact)
    if "error" in report or report.get("import_error"):
        reason = report.get("error") or f"cannot import tideclient.retry: {report['import_error']}"
        print(f"FAIL: {reason}")
        print(f"SUMMARY: 0/{len(cases)} cases passed")
        return 1
    passed = 0
    for i, case in enumerate(cases, 1):
        try:
            reason = evaluate(report, spec["schedule"], case)
        except Exception as exc:
            reason = f"checker could not evaluate the case: {type(exc).__name__}: {exc}"
        if reason is None:
            passed += 1
        else:
            print(f"FAIL case {i} ({case['name']}): {reason}")
    print(f"SUMMARY: {passed}/{len(cases)} cases passed")
    return 0 if passed == len(cases) else 1


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:
        print(f"FAIL: checker error: {type(exc).__name__}: {exc}")
        code = 1
    sys.exit(code)
