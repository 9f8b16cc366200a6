"""Oracle checker for mask_secrets: python3 check.py /artifact

Runs redact on every oracle record in a child process (run_redact.py, with a timeout, as the
artifact's user through memgrid_check: it is handed the records, never the expected ones) and
compares each result with the expected redacted record here; the argument must not be modified.
"""
import sys

sys.dont_write_bytecode = True

import json
import os

from memgrid_check import run_python

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 30


def run_artifact(artifact: str, records: list) -> dict:
    """Return {"import_error", "results", "problem"}: results holds, in order, the well-formed case
    records the child reported; problem says why the report is not complete (None when the child
    imported redact or said why not, reported every case and said done)."""
    run = run_python(os.path.join(HERE, "run_redact.py"), [artifact], stdin=json.dumps(records).encode(),
                     timeout=TIMEOUT)
    return parse_report(run, len(records))


def parse_report(run, n_cases: int) -> dict:
    out = {"import_error": None, "results": [], "problem": None}
    ended = f"was killed after {TIMEOUT}s" if run.timed_out else f"exited {run.exit}"
    try:
        lines = run.stdout.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        lines = ["<not UTF-8>"]
    imported = done = False
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            rec = None
        if not isinstance(rec, dict) or done:
            out["problem"] = f"the artifact process printed something that is not a result: {line[:80]!r}"
            return out
        if not imported:
            if rec == {"import": "ok"}:
                imported = True
            elif set(rec) == {"import_error"} and isinstance(rec["import_error"], str):
                out["import_error"] = rec["import_error"]
                return out
            else:
                out["problem"] = f"the artifact process printed something that is not a result: {line[:80]!r}"
                return out
            continue
        if rec == {"done": n_cases} and len(out["results"]) == n_cases:
            done = True
            continue
        if not well_formed(rec, len(out["results"])) or len(out["results"]) >= n_cases:
            out["problem"] = f"the artifact process printed a malformed result: {line[:80]!r}"
            return out
        out["results"].append(rec)
    if not imported:
        out["problem"] = f"the artifact process {ended} without reporting anything (it stopped while importing logsafe)"
    elif not done:
        out["problem"] = (f"the artifact process {ended} before it finished "
                          f"({len(out['results'])} of {n_cases} case(s) reported)")
    return out


def well_formed(rec: dict, index: int) -> bool:
    """{"case": index, "error": str} or {"case": index, "result": dict, "mutated": bool}."""
    if type(rec.get("case")) is not int or rec["case"] != index:
        return False
    if set(rec) == {"case", "error"}:
        return isinstance(rec["error"], str)
    return (set(rec) == {"case", "result", "mutated"} and isinstance(rec["result"], dict)
            and isinstance(rec["mutated"], bool))


def differences(got, want, path="") -> list[str]:
    if isinstance(got, dict) and isinstance(want, dict):
        out = []
        for key in want:
            if key not in got:
                out.append(f"{path}{key}: missing")
            else:
                out += differences(got[key], want[key], f"{path}{key}.")
        out += [f"{path}{key}: unexpected key" for key in got if key not in want]
        return out
    if got != want or type(got) is not type(want):
        return [f"{path.rstrip('.')}: got {got!r}, expected {want!r}"]
    return []


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    artifact = os.path.abspath(sys.argv[1])
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as fh:
        cases = json.load(fh)

    report = run_artifact(artifact, [case["record"] for case in cases])
    if report["import_error"] is not None:
        print(f"FAIL: cannot import logsafe.redact: {report['import_error']}")
        print(f"SUMMARY: 0/{len(cases)} cases passed")
        return 1
    results = report["results"]
    passed = 0
    for i, case in enumerate(cases):
        label = f"case {i + 1} ({case['name']})"
        if i >= len(results):
            print(f"FAIL {label}: redact did not finish (timed out or the process died)")
            continue
        result = results[i]
        if "error" in result:
            print(f"FAIL {label}: redact raised {result['error']}")
            continue
        problems = differences(result["result"], case["expected"])
        if result["mutated"]:
            problems.append("the record passed in was modified")
        if problems:
            print(f"FAIL {label}: " + "; ".join(problems[:4]))
        else:
            passed += 1
    if report["problem"] is not None:
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
