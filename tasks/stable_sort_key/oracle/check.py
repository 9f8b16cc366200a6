"""Oracle checker for stable_sort_key: python3 check.py /artifact

Runs sort_tickets on every oracle ticket set in a child process (run_sort.py, with a timeout, as
the artifact's user through memgrid_check: it is handed the ticket sets, never the expected
orders) and compares the returned order of ids with the expected listing order here.
"""
import sys

sys.dont_write_bytecode = True

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from observe import sort_orders  # noqa: E402

TIMEOUT = 30


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    artifact = os.path.abspath(sys.argv[1])
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as fh:
        cases = json.load(fh)

    payload = sort_orders(artifact, [case["tickets"] for case in cases], TIMEOUT)
    if "import_error" in payload:
        print(f"FAIL: cannot import tickets.sort_tickets: {payload['import_error']}")
        print(f"SUMMARY: 0/{len(cases)} cases passed")
        return 1
    results = payload.get("results", [])
    passed = 0
    for i, case in enumerate(cases):
        label = f"case {i + 1} ({case['name']})"
        if i >= len(results):
            print(f"FAIL {label}: sort_tickets did not finish (timed out or the process died)")
            continue
        result = results[i]
        if "error" in result:
            print(f"FAIL {label}: sort_tickets raised {result['error']}")
        elif result.get("ids") != case["expected"]:
            print(f"FAIL {label}: order {result.get('ids')}, expected {case['expected']}")
        else:
            passed += 1

    if payload.get("problem"):
        print(f"FAIL: {payload['problem']}")
    print(f"SUMMARY: {passed}/{len(cases)} cases passed")
    return 0 if passed == len(cases) and not payload.get("problem") else 1


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:
        print(f"FAIL: checker error: {type(exc).__name__}: {exc}")
        code = 1
    sys.exit(code)
