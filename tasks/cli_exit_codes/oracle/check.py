"""Oracle checker for cli_exit_codes: python3 check.py /artifact"""
import sys

sys.dont_write_bytecode = True

import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
CASE_TIMEOUT = 5


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    artifact = os.path.abspath(sys.argv[1])
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as fh:
        cases = json.load(fh)

    script = os.path.join(artifact, "validate_config.py")
    if not os.path.isfile(script):
        print(f"FAIL: {script} does not exist")
        print(f"SUMMARY: 0/{len(cases)} cases passed")
        return 1

    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    passed = 0
    for i, case in enumerate(cases, 1):
        config = os.path.join(HERE, "configs", case["config"])
        try:
            result = subprocess.run(
                [sys.executable, "-B", script, config],
                cwd=artifact, env=env, capture_output=True, text=True,
                timeout=CASE_TIMEOUT, stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            print(f"FAIL case {i}: {case['config']}: timed out after {CASE_TIMEOUT}s; "
                  f"skipping the remaining {len(cases) - i} case(s)")
            break
        except Exception as exc:
            print(f"FAIL case {i}: {case['config']}: could not run: {type(exc).__name__}: {exc}")
            continue
        if result.returncode == case["expected_exit"]:
            passed += 1
        else:
            tail = (result.stderr.strip().splitlines() or [""])[-1][:200]
            print(f"FAIL case {i}: {case['config']}: exit {result.returncode}, "
                  f"expected {case['expected_exit']} (stderr: {tail!r})")

    print(f"SUMMARY: {passed}/{len(cases)} cases passed")
    return 0 if passed == len(cases) else 1


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:
        print(f"FAIL: checker error: {type(exc).__name__}: {exc}")
        code = 1
    sys.exit(code)
