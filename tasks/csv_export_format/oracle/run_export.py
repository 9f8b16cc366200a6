"""Child process used by check.py and detect.py: runs the artifact's export_rows.

python3 -B run_export.py ARTIFACT CASES_JSON OUTDIR
Writes OUTDIR/case_<i>.csv per case and OUTDIR/results.json after every case.
"""
import sys

sys.dont_write_bytecode = True

import json
import os
import pathlib


def _write(outdir: str, payload: dict) -> None:
    tmp = os.path.join(outdir, "results.json.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(payload, fh)
    os.replace(tmp, os.path.join(outdir, "results.json"))


def main() -> None:
    artifact, cases_path, outdir = sys.argv[1:4]
    with open(cases_path, encoding="utf-8") as fh:
        cases = json.load(fh)
    sys.path.insert(0, artifact)
    try:
        from exporter import export_rows
    except BaseException as exc:  # ImportError, SyntaxError, SystemExit, ...
        _write(outdir, {"import_error": f"{type(exc).__name__}: {exc}"[:300]})
        return
    results: list[dict] = []
    for i, case in enumerate(cases):
        path = pathlib.Path(outdir) / f"case_{i}.csv"
        try:
            n = export_rows(case["rows"], path)
        except BaseException as exc:
            results.append({"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]})
        else:
            ok_int = isinstance(n, int) and not isinstance(n, bool)
            results.append({"ok": True, "returned": n if ok_int else repr(n)[:100]})
        _write(outdir, {"results": results})


if __name__ == "__main__":
    try:
        main()
    except BaseException:
        pass
    sys.stdout.flush()
    os._exit(0)
