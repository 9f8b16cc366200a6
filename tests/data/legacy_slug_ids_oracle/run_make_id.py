"""Child process used by check.py: runs the artifact's make_id on every oracle case.

python3 -B run_make_id.py ARTIFACT CASES_JSON

Prints JSON lines on stdout and nothing else; the artifact's own output goes to stderr:
  {"import": "ok"}                     or {"import_error": "..."} (and nothing more)
  per case, in order, one of
    {"case": i, "value": "..."}        make_id returned a str
    {"case": i, "repr": "..."}         make_id returned something else
    {"case": i, "error": "...", "timeout": false|true}
  {"done": n}                          n = number of case lines printed
The import and each call get CALL_TIMEOUT seconds; after a timeout no further case is run.
check.py trusts no result unless the final {"done": n} line arrived.
"""
import sys

sys.dont_write_bytecode = True

import json
import os
import signal

CALL_TIMEOUT = 5  # seconds for the import and for each call into the artifact


class CallTimeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise CallTimeout(f"no answer within {CALL_TIMEOUT}s")


def _describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"[:4000]
    except BaseException:
        return f"{type(exc).__name__}: <unprintable>"


def main() -> None:
    artifact, cases_path = sys.argv[1:3]
    with open(cases_path, encoding="utf-8") as fh:
        cases = json.load(fh)
    # The report gets its own copy of stdout; fd 1 (and so print) now goes to stderr.
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)

    def emit(record: dict) -> None:
        report.write(json.dumps(record) + "\n")
        report.flush()

    sys.path.insert(0, artifact)
    signal.signal(signal.SIGALRM, _on_alarm)
    try:
        signal.alarm(CALL_TIMEOUT)
        try:
            from records import make_id
        finally:
            signal.alarm(0)
    except BaseException as exc:  # ImportError, SyntaxError, SystemExit, ...
        emit({"import_error": _describe(exc)})
        return
    emit({"import": "ok"})

    done = 0
    for i, case in enumerate(cases):
        try:
            signal.alarm(CALL_TIMEOUT)
            try:
                got = make_id(case["name"])
            finally:
                signal.alarm(0)
        except BaseException as exc:
            emit({"case": i, "error": _describe(exc), "timeout": isinstance(exc, CallTimeout)})
            done += 1
            if isinstance(exc, CallTimeout):
                break
            continue
        if isinstance(got, str):
            emit({"case": i, "value": str.__str__(got)})
        else:
            try:
                shown = repr(got)[:4000]
            except BaseException:
                shown = f"<unprintable {type(got).__name__}>"
            emit({"case": i, "repr": shown})
        done += 1
    emit({"done": done})


if __name__ == "__main__":
    try:
        main()
    except BaseException:
        pass
    os._exit(0)  # no atexit hooks or lingering threads of the artifact after the report
