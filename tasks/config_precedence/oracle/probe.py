"""Harness for check.py / detect.py: calls the artifact's resolve_settings on each input.

Run by memgrid_check.run_python(..., [ARTIFACT], stdin=<JSON list of {"defaults", "file", "env", "cli"}>)
as the artifact's user: it is handed the four arguments per case, never the expected settings.
Prints one JSON line on its own copy of stdout (the artifact's prints go to stderr): a list with,
per case, {"ok": result, "mutated": bool} or {"error": "..."}; or {"import_error": "..."}.
"""
import sys

sys.dont_write_bytecode = True

import copy
import json
import os


def jsonable(value):
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"
    except BaseException:
        return f"{type(exc).__name__}: <unprintable>"


def main(report):
    artifact = sys.argv[1]
    cases = json.loads(sys.stdin.buffer.read())
    sys.path.insert(0, artifact)
    try:
        from tidepool.settings import resolve_settings
    except BaseException as exc:
        report.write(json.dumps({"import_error": describe(exc)}) + "\n")
        return
    out = []
    for case in cases:
        args = [case["defaults"], case["file"], case["env"], case["cli"]]
        before = copy.deepcopy(args)
        try:
            result = resolve_settings(*args)
            if not isinstance(result, dict):
                result = dict(result)
            out.append({"ok": jsonable(result), "mutated": args != before})
        except BaseException as exc:
            out.append({"error": describe(exc)})
    report.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    # The report gets its own copy of stdout; fd 1 (and so print) now goes to stderr.
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    try:
        main(report)
    except BaseException:
        pass
    report.flush()
    os._exit(0)
