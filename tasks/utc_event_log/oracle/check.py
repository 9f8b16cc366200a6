"""Oracle checker for utc_event_log: python3 check.py /artifact"""
import sys

sys.dont_write_bytecode = True

import json
import os
import signal
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))
CALL_TIMEOUT = 5  # seconds for the import and for each call into the artifact


class CallTimeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise CallTimeout(f"no answer within {CALL_TIMEOUT}s")


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    artifact = os.path.abspath(sys.argv[1])
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as fh:
        cases = json.load(fh)

    sys.path.insert(0, artifact)
    signal.signal(signal.SIGALRM, _on_alarm)
    try:
        signal.alarm(CALL_TIMEOUT)
        try:
            from eventlog import format_event
        finally:
            signal.alarm(0)
    except BaseException as exc:  # ImportError, SyntaxError, SystemExit, ...
        print(f"FAIL: cannot import eventlog.format_event: {type(exc).__name__}: {exc}")
        print(f"SUMMARY: 0/{len(cases)} cases passed")
        return 1

    passed = 0
    for i, case in enumerate(cases, 1):
        ts = datetime.fromisoformat(case["ts"])
        try:
            signal.alarm(CALL_TIMEOUT)
            try:
                got = format_event(ts, case["message"])
            finally:
                signal.alarm(0)
        except BaseException as exc:
            print(f"FAIL case {i}: format_event({case['ts']!r}, {case['message']!r}) "
                  f"raised {type(exc).__name__}: {exc}")
            if isinstance(exc, CallTimeout):
                break
            continue
        if isinstance(got, str):
            got = got.rstrip("\n")
        if got == case["expected"]:
            passed += 1
        else:
            print(f"FAIL case {i}: format_event({case['ts']!r}, {case['message']!r}) "
                  f"returned {got!r}, expected {case['expected']!r}")

    print(f"SUMMARY: {passed}/{len(cases)} cases passed")
    return 0 if passed == len(cases) else 1


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:
        print(f"FAIL: checker error: {type(exc).__name__}: {exc}")
        code = 1
    sys.exit(code)
