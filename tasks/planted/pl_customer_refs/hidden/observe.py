"""Harness of this task's judge, run by check.py as the artifact's user:
memgrid_check.run_python(<this file>, [ARTIFACT, MODULE, FUNCTION...], stdin=<JSON list of calls>).

It imports FUNCTION... from MODULE of the artifact and makes the calls in order, each
{"function": name, "args": [...], "kwargs": {...}} (inputs only: the expected values stay in check.py).
An argument {"$ref": i} stands for what call i returned, so a call can take what an earlier one made;
{"$tuple": [...]} is a tuple (JSON has none).
It prints, on its own copy of stdout (the artifact's prints go to stderr), one JSON line each:
  {"import": "ok"}  or  {"import_error": "..."} (and nothing more)
  {"call": i, "returned": true, "value": ENCODED}
  {"call": i, "returned": false, "error": "<class>", "value_error": bool, "message": "...", "timeout": bool}
  {"done": n}
ENCODED keeps what `==`, `is` and `type(v) is` tell apart: ["n"] None, ["b", x] bool, ["i", x] int,
["f", x] float, ["s", x] str (a subclass of int, float or str adds its class name: ["i", x, "Name"]),
["dec", str] Decimal, ["l", [...]] list, ["t", [...]] tuple, ["d", [[k, v], ...]] dict,
["o", class name, repr] anything else (equal to nothing in the judge).
The import and each call get CALL_TIMEOUT seconds; after a timeout nothing more runs.
"""
import sys

sys.dont_write_bytecode = True

import decimal
import json
import os
import signal

CALL_TIMEOUT = 5


class CallTimeout(BaseException):
    pass


class RefError(Exception):
    pass


def on_alarm(signum, frame):
    raise CallTimeout(f"no answer within {CALL_TIMEOUT}s")


def describe(exc):
    try:
        return f"{type(exc).__name__}: {exc}"[:2000]
    except BaseException:
        return f"{type(exc).__name__}: <unprintable>"


def shown(v):
    try:
        return repr(v)[:300]
    except BaseException:
        return f"<unprintable {type(v).__name__}>"


def encode(v, depth=0):
    t = type(v)
    if depth > 40:
        return ["o", t.__name__, "<nested too deep>"]
    if v is None:
        return ["n"]
    if t is bool:
        return ["b", v]
    sub = [] if t in (int, float, str) else [t.__name__]
    if isinstance(v, int):
        return ["i", int.__index__(v)] + sub
    if isinstance(v, float):
        return ["f", float.__float__(v)] + sub
    if isinstance(v, str):
        return ["s", str.__str__(v)] + sub
    if isinstance(v, decimal.Decimal):
        return ["dec", decimal.Decimal.__str__(v)]
    if isinstance(v, (list, tuple)):
        return ["l" if isinstance(v, list) else "t", [encode(x, depth + 1) for x in v]]
    if isinstance(v, dict):
        return ["d", [[encode(k, depth + 1), encode(x, depth + 1)] for k, x in dict.items(v)]]
    return ["o", t.__name__, shown(v)]


def main():
    artifact, module, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    calls = json.loads(sys.stdin.read())
    # The report gets its own copy of stdout; fd 1 (and so print) now goes to stderr.
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)

    def emit(record):
        report.write(json.dumps(record) + "\n")
        report.flush()

    sys.path.insert(0, artifact)
    signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.alarm(CALL_TIMEOUT)
        try:
            mod = __import__(module, fromlist=names)
            functions = {name: getattr(mod, name) for name in names}
        finally:
            signal.alarm(0)
    except BaseException as exc:  # ImportError, AttributeError, SyntaxError, SystemExit, ...
        emit({"import_error": describe(exc)})
        return
    emit({"import": "ok"})

    results = {}

    def resolve(arg):
        if isinstance(arg, list):
            return [resolve(a) for a in arg]
        if isinstance(arg, dict):
            if set(arg) == {"$ref"}:
                if arg["$ref"] not in results:
                    raise RefError(f"call {arg['$ref']}, whose result this call takes, raised")
                return results[arg["$ref"]]
            if set(arg) == {"$tuple"}:
                return tuple(resolve(arg["$tuple"]))
            return {k: resolve(a) for k, a in arg.items()}
        return arg

    done = 0
    for i, c in enumerate(calls):
        try:
            signal.alarm(CALL_TIMEOUT)
            try:
                got = functions[c["function"]](*resolve(c.get("args", [])), **resolve(c.get("kwargs", {})))
            finally:
                signal.alarm(0)
        except BaseException as exc:
            emit({"call": i, "returned": False, "error": type(exc).__name__, "value_error": isinstance(exc, ValueError),
                  "message": describe(exc), "timeout": isinstance(exc, CallTimeout)})
            done += 1
            if isinstance(exc, CallTimeout):
                break
            continue
        results[i] = got
        try:
            value = encode(got)
            json.dumps(value)
        except BaseException:
            value = ["o", type(got).__name__, shown(got)]
        emit({"call": i, "returned": True, "value": value})
        done += 1
    emit({"done": done})


if __name__ == "__main__":
    try:
        main()
    except BaseException:
        pass
    os._exit(0)  # no atexit hooks or lingering threads of the artifact after the report
