"""Oracle checker for stable_sort_key: python3 check.py /artifact

Runs sort_tickets on every oracle ticket set in a child process (with a timeout) and compares
the returned order of ids with the expected listing order.
"""
import sys

sys.dont_write_bytecode = True

import json
import os
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 30


def run_artifact(artifact: str, cases_path: str) -> dict:
    workdir = tempfile.mkdtemp(prefix="sortcheck-", dir="/tmp")
    out = os.path.join(workdir, "results.json")
    try:
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        try:
            subprocess.run(
                [sys.executable, "-B", os.path.join(HERE, "run_sort.py"), artifact, cases_path, out],
                cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, timeout=TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            pass
        try:
            with open(out, encoding="utf-8") as fh:
                return json.load(fh)
        except (OSError, ValueError):
            return {}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    artifact = os.path.abspath(sys.argv[1])
    cases_path = os.path.join(HERE, "cases.json")
    with open(cases_path, encoding="utf-8") as fh:
        cases = json.load(fh)

    payload = run_artifact(artifact, cases_path)
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

    print(f"SUMMARY: {passed}/{len(cases)} cases passed")
    return 0 if passed == len(cases) else 1


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:
        print(f"FAIL: checker error: {type(exc).__name__}: {exc}")
        code = 1
    sys.exit(code)
