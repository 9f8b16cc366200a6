"""Child process used by check.py and detect.py: runs the artifact's redact.

python3 -B run_redact.py ARTIFACT CASES_JSON OUT_JSON
For every case writes {"result": ..., "mutated": bool} or {"error": "..."}; OUT_JSON is
rewritten after each case.
"""
import sys

sys.dont_write_bytecode = True

import copy
import json
import os


def _write(out: str, payload: dict) -> None:
    with open(out + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(payload, fh, ensure_ascii=False)
    os.replace(out + ".tmp", out)


def main() -> None:
    artifact, cases_path, out = sys.argv[1:4]
    with open(cases_path, encoding="utf-8") as fh:
        cases = json.load(fh)
    sys.path.insert(0, artifact)
    try:
        from logsafe import redact
    except BaseException as exc:  # ImportError, SyntaxError, SystemExit, ...
        _write(out, {"import_error": f"{type(exc).__name__}: {exc}"[:300]})
        return
    results: list[dict] = []
    for case in cases:
        record = copy.deepcopy(case["record"])
        try:
            result = redact(record)
            if not isinstance(result, dict):
                raise TypeError(f"redact returned {type(result).__name__}, not dict")
            # a JSON round trip makes the result comparable with the expected record
            result = json.loads(json.dumps(result, default=repr, ensure_ascii=False))
            results.append({"result": result, "mutated": record != case["record"]})
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
