"""Observes an artifact's retry schedule in a child process run as the artifact's user (shared by
check.py and detect.py).

The child replaces time.sleep with a recorder before importing the artifact's
tideclient.retry, so nothing really sleeps; it reports backoff_delays() (twice) and, for
call_with_retry, how many calls were made and which waits happened when the call fails
0, 2, 5 times or every time. One JSON line, after a marker.
"""
import sys

sys.dont_write_bytecode = True

import json
import math

from memgrid_check import PYTHON, run_artifact

MARK = "@@RETRY-ORACLE@@"
FAILURES = {"none": 0, "two": 2, "five": 5, "always": None}
RUNAWAY = 200

CHILD = r"""
import sys, json, time
sys.dont_write_bytecode = True
artifact, failures, runaway, mark = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
slept = []
def fake_sleep(seconds):
    slept.append(seconds)
time.sleep = fake_sleep
report = {"import_error": None, "schedule": None, "schedule2": None, "scenarios": {}}

def numbers(value):
    try:
        items = list(value)
    except BaseException as exc:
        return f"not a sequence: {type(value).__name__}"
    out = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, float)):
            try:
                item = float(item)
            except BaseException:
                return f"not a number: {item!r}"[:200]
        out.append(float(item))
    return out

sys.path.insert(0, artifact)
try:
    from tideclient.retry import TransientError, backoff_delays, call_with_retry
except BaseException as exc:
    report["import_error"] = f"{type(exc).__name__}: {exc}"[:300]
else:
    for key in ("schedule", "schedule2"):
        try:
            report[key] = numbers(backoff_delays())
        except BaseException as exc:
            report[key] = f"backoff_delays() raised {type(exc).__name__}: {exc}"[:300]
    class Runaway(BaseException):
        pass
    for name, fail in failures.items():
        del slept[:]
        calls = [0]
        def fn(fail=fail):
            calls[0] += 1
            if calls[0] > runaway:
                raise Runaway()
            if fail is None or calls[0] <= fail:
                raise TransientError("503 Service Unavailable")
            return "payload"
        try:
            got = call_with_retry(fn, sleep=fake_sleep)
            outcome = "returned " + repr(got)[:100]
        except Runaway:
            outcome = f"kept retrying past {runaway} calls"
        except TransientError:
            outcome = "raised TransientError"
        except BaseException as exc:
            outcome = f"raised {type(exc).__name__}: {exc}"[:200]
        report["scenarios"][name] = {"calls": calls[0], "slept": numbers(slept), "outcome": outcome}
sys.stdout.write("\n" + mark + json.dumps(report) + "\n")
sys.stdout.flush()
"""


def observe(artifact: str, timeout: float = 20) -> dict:
    """Return the child's report, or {"error": "..."} when it gave no complete, well-formed one
    (it exited early, hung, crashed or printed something else). The child runs as the artifact's
    user (memgrid_check): it is handed the scenarios, never the expected schedule."""
    try:
        run = run_artifact([*PYTHON, "-c", CHILD, artifact, json.dumps(FAILURES), str(RUNAWAY), MARK], timeout=timeout)
    except Exception as exc:
        return {"error": f"could not run: {type(exc).__name__}: {exc}"}
    if run.timed_out:
        return {"error": f"timed out after {timeout}s"}
    for line in reversed(run.stdout.decode(errors="replace").splitlines()):
        if line.startswith(MARK):
            try:
                report = json.loads(line[len(MARK):])
            except ValueError:
                break
            if complete(report):
                return report
            break
    return {"error": f"child exited {run.exit} without a complete report ({run.tail(200)})"}


def complete(report) -> bool:
    """A report the checker may grade: an import error, or both schedules and every scenario."""
    if not isinstance(report, dict) or set(report) != {"import_error", "schedule", "schedule2", "scenarios"}:
        return False
    if report["import_error"] is not None:
        return isinstance(report["import_error"], str)
    for key in ("schedule", "schedule2"):
        value = report[key]
        if not (isinstance(value, str) or (isinstance(value, list) and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in value))):
            return False
    scenarios = report["scenarios"]
    if not isinstance(scenarios, dict) or set(scenarios) != set(FAILURES):
        return False
    for seen in scenarios.values():
        if not (isinstance(seen, dict) and set(seen) == {"calls", "slept", "outcome"}
                and type(seen["calls"]) is int and isinstance(seen["outcome"], str)
                and isinstance(seen["slept"], (list, str))):
            return False
    return True


def same(a, b) -> bool:
    """Two schedules (lists of seconds) are equal up to float noise."""
    return (isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
            and all(math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9) for x, y in zip(a, b)))
