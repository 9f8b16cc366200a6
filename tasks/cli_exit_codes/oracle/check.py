"""Oracle checker for cli_exit_codes: python3 check.py /artifact

Runs `validate_config.py CONFIG.json` on each configuration as the artifact's user through
memgrid_check (the CLI is handed the file's content alone, as config.json, never its case name or
the expected status) and compares the exit status here.
"""
import sys

sys.dont_write_bytecode = True

import json
import os

from memgrid_check import run_artifact

HERE = os.path.dirname(os.path.abspath(__file__))
CASE_TIMEOUT = 5


def run_validate(artifact, config, timeout=CASE_TIMEOUT):
    """validate_config.py on a copy of configs/<config>, run as the artifact's user: an ArtifactRun."""
    with open(os.path.join(HERE, "configs", config), "rb") as fh:
        content = fh.read()
    # Handed the file's content alone, as config.json: not its case name (valid_/invalid_ hints the answer).
    return run_artifact(["/usr/bin/python3", "-B", os.path.join(artifact, "validate_config.py"), "/home/artifact/config.json"],
                        files={"config.json": content}, cwd=artifact, timeout=timeout)


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

    passed = 0
    for i, case in enumerate(cases, 1):
        try:
            result = run_validate(artifact, case["config"])
        except Exception as exc:
            print(f"FAIL case {i}: {case['config']}: could not run: {type(exc).__name__}: {exc}")
            continue
        if result.timed_out:
            print(f"FAIL case {i}: {case['config']}: timed out after {CASE_TIMEOUT}s; "
                  f"skipping the remaining {len(cases) - i} case(s)")
            break
        if result.exit == case["expected_exit"]:
            passed += 1
        else:
            tail = (result.stderr.decode("utf-8", "replace").strip().splitlines() or [""])[-1][:200]
            print(f"FAIL case {i}: {case['config']}: exit {result.exit}, "
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
