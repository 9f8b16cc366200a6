"""Child process for check.py / detect.py: calls the artifact's resolve_settings.

python3 probe.py ARTIFACT < cases.json  -> prints one JSON line: a list with, per case,
{"ok": result, "mutated": bool} or {"error": "..."}; or {"import_error": "..."}.
Runs in its own process so that a hanging or crashing artifact cannot take the oracle down.
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


def main():
    artifact = sys.argv[1]
    cases = json.loads(sys.stdin.read())
    sys.path.insert(0, artifact)
    try:
        from tidepool.settings import resolve_settings
    except BaseException as exc:
        print(json.dumps({"import_error": f"{type(exc).__name__}: {exc}"}))
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
            out.append({"error": f"{type(exc).__name__}: {exc}"})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    os._exit(0)
