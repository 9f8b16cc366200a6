"""Oracle checker for config_precedence: python3 check.py /artifact"""
import sys

sys.dont_write_bytecode = True

import json
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE_TIMEOUT = 20


def probe(artifact, cases):
    """Return (results, error) from running probe.py against the artifact."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    try:
        proc = subprocess.run(
            [sys.executable, "-B", os.path.join(HERE, "probe.py"), artifact],
            input=json.dumps(cases), cwd=tempfile.gettempdir(), env=env,
            capture_output=True, text=True, timeout=PROBE_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return None, f"resolve_settings timed out after {PROBE_TIMEOUT}s"
    lines = proc.stdout.strip().splitlines()
    try:
        data = json.loads(lines[-1])
    except (IndexError, ValueError):
        tail = (proc.stderr.strip().splitlines() or [""])[-1][:200]
        return None, f"probe produced no result (exit {proc.returncode}, stderr: {tail!r})"
    if isinstance(data, dict):
        return None, f"cannot import tidepool.settings.resolve_settings: {data.get('import_error')}"
    return data, None


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    artifact = os.path.abspath(sys.argv[1])
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as fh:
        cases = json.load(fh)
    results, error = probe(artifact, cases)
    if error:
        print(f"FAIL: {error}")
        print(f"SUMMARY: 0/{len(cases)} cases passed")
        return 1
    passed = 0
    for i, (case, result) in enumerate(zip(cases, results), 1):
        if "error" in result:
            print(f"FAIL case {i}: {case['name']}: raised {result['error']}")
            continue
        got = result["ok"]
        if got != case["expected"]:
            diff = {k: (got.get(k, "<missing>") if isinstance(got, dict) else got, v)
                    for k, v in case["expected"].items()
                    if not isinstance(got, dict) or got.get(k, "<missing>") != v}
            extra = sorted(set(got) - set(case["expected"])) if isinstance(got, dict) else []
            print(f"FAIL case {i}: {case['name']}: (got, expected) per key {diff}"
                  + (f"; unexpected keys {extra}" if extra else ""))
        elif result.get("mutated"):
            print(f"FAIL case {i}: {case['name']}: resolve_settings modified its arguments")
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
