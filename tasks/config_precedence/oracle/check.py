"""Oracle checker for config_precedence: python3 check.py /artifact

Calls resolve_settings on every case in a child process (probe.py, with a timeout, as the artifact's
user through memgrid_check: it is handed the four arguments, never the expected settings) and compares
each result with the expected settings here.
"""
import sys

sys.dont_write_bytecode = True

import json
import os

from memgrid_check import run_python

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE_TIMEOUT = 20
ARGUMENTS = ("defaults", "file", "env", "cli")


def probe(artifact, cases):
    """Return (results, error) from running probe.py against the artifact on the cases' arguments."""
    run = run_python(os.path.join(HERE, "probe.py"), [artifact],
                     stdin=json.dumps([{k: case[k] for k in ARGUMENTS} for case in cases]).encode(),
                     timeout=PROBE_TIMEOUT)
    if run.timed_out:
        return None, f"resolve_settings timed out after {PROBE_TIMEOUT}s"
    lines = run.stdout.decode("utf-8", errors="replace").strip().splitlines()
    try:
        data = json.loads(lines[-1])
    except (IndexError, ValueError):
        return None, f"probe produced no result (exit {run.exit}, stderr: {run.tail(200)!r})"
    if isinstance(data, dict) and set(data) == {"import_error"}:
        return None, f"cannot import tidepool.settings.resolve_settings: {data['import_error']}"
    if not (isinstance(data, list) and len(data) == len(cases) and all(map(well_formed, data))):
        return None, f"probe produced a malformed result: {lines[-1][:80]!r}"
    return data, None


def well_formed(result) -> bool:
    """{"error": str} or {"ok": <settings>, "mutated": bool}: what probe.py prints per case."""
    if not isinstance(result, dict):
        return False
    if set(result) == {"error"}:
        return isinstance(result["error"], str)
    return set(result) == {"ok", "mutated"} and isinstance(result["mutated"], bool)


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
