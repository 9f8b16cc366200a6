"""Oracle checker for slug_ids: python3 check.py /artifact

Runs make_id on every oracle name in a child process (run_make_id.py, with a timeout) and
compares each returned id with the expected one. Only a complete, well-formed report from the
child counts: a child that exits early, hangs, crashes or prints anything else fails.
"""
import sys

sys.dont_write_bytecode = True

import json
import os
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 45  # seconds for the whole child; the child limits the import and each call to 5 s


def run_artifact(artifact: str, cases_path: str, n_cases: int) -> dict:
    """Return {"import_error", "results", "problem"}.

    results holds the well-formed case records in order; problem is None only when the child
    imported make_id (or reported why it could not), reported every case it ran and said done.
    """
    workdir = tempfile.mkdtemp(prefix="slugcheck-", dir="/tmp")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    try:
        proc = subprocess.run(
            [sys.executable, "-B", os.path.join(HERE, "run_make_id.py"), artifact, cases_path],
            cwd=workdir, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT,
        )
        stdout, rc = proc.stdout, proc.returncode
    except subprocess.TimeoutExpired as exc:
        stdout, rc = exc.stdout or b"", None
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return parse_report(stdout, rc, n_cases)


def parse_report(stdout: bytes, rc, n_cases: int) -> dict:
    out = {"import_error": None, "imported": False, "results": [], "problem": None}
    ended = f"was killed after {TIMEOUT}s" if rc is None else f"exited {rc}"
    try:
        lines = stdout.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        lines = ["<not UTF-8>"]
    done = None
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            rec = None
        if not isinstance(rec, dict) or done is not None:
            out["problem"] = f"the artifact process printed something that is not a result: {line[:80]!r}"
            return out
        if not out["imported"] and out["import_error"] is None:
            if rec == {"import": "ok"}:
                out["imported"] = True
            elif set(rec) == {"import_error"} and isinstance(rec["import_error"], str):
                out["import_error"] = rec["import_error"]
            else:
                out["problem"] = f"the artifact process printed something that is not a result: {line[:80]!r}"
                return out
            continue
        if out["import_error"] is not None:
            out["problem"] = f"the artifact process printed something after its import error: {line[:80]!r}"
            return out
        if set(rec) == {"done"}:
            done = rec["done"]
            continue
        if not well_formed(rec, len(out["results"])) or len(out["results"]) >= n_cases:
            out["problem"] = f"the artifact process printed a malformed result: {line[:80]!r}"
            return out
        out["results"].append(rec)
    if out["import_error"] is not None:
        return out
    if not out["imported"]:
        out["problem"] = (f"the artifact process {ended} without reporting anything "
                          f"(it stopped while importing records)")
    elif type(done) is not int or done != len(out["results"]) or rc != 0:
        out["problem"] = (f"the artifact process {ended} before it finished "
                          f"({len(out['results'])} of {n_cases} case(s) reported)")
    elif done < n_cases and not (out["results"] and out["results"][-1].get("timeout")):
        out["problem"] = f"the artifact process reported only {done} of {n_cases} case(s)"
    return out


def well_formed(rec: dict, index: int) -> bool:
    if rec.get("case") != index or type(rec.get("case")) is not int:
        return False
    keys = set(rec) - {"case"}
    if keys == {"value"} or keys == {"repr"}:
        return isinstance(rec.get("value", rec.get("repr")), str)
    return keys == {"error", "timeout"} and isinstance(rec["error"], str) and isinstance(rec["timeout"], bool)


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    artifact = os.path.abspath(sys.argv[1])
    cases_path = os.path.join(HERE, "cases.json")
    with open(cases_path, encoding="utf-8") as fh:
        cases = json.load(fh)

    report = run_artifact(artifact, cases_path, len(cases))
    if report["import_error"] is not None:
        print(f"FAIL: cannot import records.make_id: {report['import_error']}")
        print(f"SUMMARY: 0/{len(cases)} cases passed")
        return 1
    if not report["imported"]:
        print(f"FAIL: {report['problem']}")
        print(f"SUMMARY: 0/{len(cases)} cases passed")
        return 1

    results = report["results"]
    passed = 0
    for i, case in enumerate(cases, 1):
        if i > len(results):
            print(f"FAIL case {i}: make_id({case['name']!r}) gave no result: {report['problem']}")
            continue
        res = results[i - 1]
        if "error" in res:
            print(f"FAIL case {i}: make_id({case['name']!r}) raised {res['error']}")
            if res["timeout"]:
                break
            continue
        if "value" in res and res["value"] == case["id"]:
            passed += 1
        else:
            got = repr(res["value"]) if "value" in res else res["repr"]
            print(f"FAIL case {i}: make_id({case['name']!r}) returned {got}, "
                  f"expected {case['id']!r}")

    if report["problem"] is not None and len(results) >= len(cases):
        print(f"FAIL: {report['problem']}")
    print(f"SUMMARY: {passed}/{len(cases)} cases passed")
    return 0 if passed == len(cases) and report["problem"] is None else 1


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:
        print(f"FAIL: checker error: {type(exc).__name__}: {exc}")
        code = 1
    sys.exit(code)
