"""Oracle checker for mask_secrets: python3 check.py /artifact

Runs redact on every oracle record in a child process (with a timeout) and compares the
result with the expected redacted record; the argument must not be modified.
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
    workdir = tempfile.mkdtemp(prefix="redactcheck-", dir="/tmp")
    out = os.path.join(workdir, "results.json")
    try:
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        try:
            subprocess.run(
                [sys.executable, "-B", os.path.join(HERE, "run_redact.py"), artifact, cases_path, out],
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


def differences(got, want, path="") -> list[str]:
    if isinstance(got, dict) and isinstance(want, dict):
        out = []
        for key in want:
            if key not in got:
                out.append(f"{path}{key}: missing")
            else:
                out += differences(got[key], want[key], f"{path}{key}.")
        out += [f"{path}{key}: unexpected key" for key in got if key not in want]
        return out
    if got != want or type(got) is not type(want):
        return [f"{path.rstrip('.')}: got {got!r}, expected {want!r}"]
    return []


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
        print(f"FAIL: cannot import logsafe.redact: {payload['import_error']}")
        print(f"SUMMARY: 0/{len(cases)} cases passed")
        return 1
    results = payload.get("results", [])
    passed = 0
    for i, case in enumerate(cases):
        label = f"case {i + 1} ({case['name']})"
        if i >= len(results):
            print(f"FAIL {label}: redact did not finish (timed out or the process died)")
            continue
        result = results[i]
        if "error" in result:
            print(f"FAIL {label}: redact raised {result['error']}")
            continue
        problems = differences(result["result"], case["expected"])
        if result.get("mutated"):
            problems.append("the record passed in was modified")
        if problems:
            print(f"FAIL {label}: " + "; ".join(problems[:4]))
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
