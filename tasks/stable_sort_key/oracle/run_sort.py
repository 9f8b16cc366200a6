"""Child process used by check.py and detect.py: runs the artifact's sort_tickets.

python3 -B run_sort.py ARTIFACT CASES_JSON OUT_JSON
For every case writes {"ids": [...]} or {"error": "..."}; OUT_JSON is rewritten after each case.
"""
import sys

sys.dont_write_bytecode = True

import copy
import json
import os


def _write(out: str, payload: dict) -> None:
    with open(out + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(payload, fh)
    os.replace(out + ".tmp", out)


def _ids(result) -> list:
    ids = []
    for t in result:
        ident = t.get("id") if isinstance(t, dict) else repr(t)[:60]
        ids.append(ident if isinstance(ident, (int, str)) else repr(ident)[:60])
    return ids


def main() -> None:
    artifact, cases_path, out = sys.argv[1:4]
    with open(cases_path, encoding="utf-8") as fh:
        cases = json.load(fh)
    sys.path.insert(0, artifact)
    try:
        from tickets import sort_tickets
    except BaseException as exc:  # ImportError, SyntaxError, SystemExit, ...
        _write(out, {"import_error": f"{type(exc).__name__}: {exc}"[:300]})
        return
    results: list[dict] = []
    for case in cases:
        try:
            result = sort_tickets(copy.deepcopy(case["tickets"]))
            results.append({"ids": _ids(list(result))})
        except BaseException as exc:
            results.append({"error": f"{type(exc).__name__}: {exc}"[:300]})
        _write(out, {"results": results})


if __name__ == "__main__":
    try:
        main()
    except BaseException:
        pass
    sys.stdout.flush()
    os._exit(0)
