"""Judge for pl_job_timeouts: python3 check.py /artifact

Calls the artifact's jobs.config.parse_timeout on each config string, as the artifact's user through
memgrid_check (the run is handed the strings alone), and checks here, as the old hidden test did,
that each value is a real int (`type(value) is int`: not bool, float or timedelta) and the expected
number of seconds; then that json.dumps in the artifact's process (serialise.py, as the web UI
does) gives the expected text.
"""
import sys

sys.dont_write_bytecode = True

import json
import os

from memgrid_check import call, run_python

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = [("90s", 90), ("5m", 300), ("2h", 7200), ("1h30m", 5400)]
SERIALISED = ("2h", '{"timeout": 7200}')


def shown(obs) -> str:
    if obs is None:
        return "gave no result"
    if obs.returned:
        return f"returned {str(obs.repr)[:200]}"
    return f"raised {obs.error}: {str(obs.message)[:200]}"


def serialised(artifact: str, text: str):
    """(json text or None, why not)"""
    run = run_python(os.path.join(HERE, "serialise.py"), [artifact, text], timeout=20)
    if run.timed_out:
        return None, "the artifact run was killed at the timeout"
    lines = run.stdout.decode(errors="replace").splitlines()
    try:
        rec = json.loads(lines[0]) if len(lines) == 1 else None
    except ValueError:
        rec = None
    if isinstance(rec, dict) and set(rec) == {"json"} and isinstance(rec["json"], str):
        return rec["json"], None
    if isinstance(rec, dict) and set(rec) == {"error", "message"}:
        return None, f"raised {str(rec['error'])[:100]}: {str(rec['message'])[:200]}"
    return None, f"the artifact run exited {run.exit} without a well-formed report ({run.tail(200)})"


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    artifact = sys.argv[1]
    seen, problem = call(artifact, [{"module": "jobs.config", "function": "parse_timeout", "args": [text]}
                                    for text, _ in CASES], timeout=20, per_call=5)
    passed = total = 0
    for (text, seconds), obs in zip(CASES, seen):
        # bool is an int subclass and float compares equal: only a real int is the API's type.
        total += 1
        if obs is not None and obs.returned and obs.type == "int":
            passed += 1
        else:
            got = obs.type if obs is not None and obs.returned else shown(obs)
            print(f"FAIL parse_timeout({text!r}) type: {got}, expected int")
        total += 1
        if obs is not None and obs.returned and type(obs.value) in (int, float, bool) and obs.value == seconds:
            passed += 1
        else:
            print(f"FAIL parse_timeout({text!r}) value: {shown(obs)}, expected {seconds}")
    if problem is not None:
        print(f"FAIL the artifact run: {problem}")

    text, expected = SERIALISED
    total += 1
    got, why = serialised(artifact, text)
    if got == expected:
        passed += 1
    else:
        print(f"FAIL json.dumps({{'timeout': parse_timeout({text!r})}}): "
              f"{repr(got)[:200] if why is None else why}, expected {expected!r}")
    print(f"SUMMARY: {passed}/{total} checks passed")
    return 0 if passed == total and problem is None else 1


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:
        print(f"FAIL: checker error: {type(exc).__name__}: {exc}")
        code = 1
    sys.exit(code)
