"""Oracle checker for api_version_header: python3 check.py /artifact

Builds the requests with the artifact's code in a harness (probe.py) run as the artifact's user through
memgrid_check: it is handed each case's inputs (the call, method, path, body or client arguments),
never the expected method, URL or API pin, and its report is checked here against them.
"""
import sys

sys.dont_write_bytecode = True

import json
import os

from memgrid_check import run_python

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE_TIMEOUT = 20
REVISION_HEADER = "x-ledger-revision"
REVISION = "2023-11-07"
REQUEST_KEYS = {"method", "url", "headers", "body"}


def inputs_of(case):
    """What the harness is handed for a case: the call and its arguments, nothing expected."""
    if case["call"] == "build":
        return {"call": "build", "method": case["method"], "path": case["path"], "body": case["body"]}
    return {"call": case["call"], "args": case["args"]}


def probe(artifact, cases):
    """Return (results, error) from running probe.py against the artifact on the cases' inputs.
    The report is the artifact's to forge: anything but one well-formed entry per case is an error."""
    run = run_python(os.path.join(HERE, "probe.py"), [artifact],
                     stdin=json.dumps([inputs_of(case) for case in cases]).encode(), timeout=PROBE_TIMEOUT)
    if run.timed_out:
        return None, f"building the requests timed out after {PROBE_TIMEOUT}s"
    lines = run.stdout.decode("utf-8", "replace").strip().splitlines()
    try:
        data = json.loads(lines[-1])
    except (IndexError, ValueError):
        tail = (run.stderr.decode("utf-8", "replace").strip().splitlines() or [""])[-1][:200]
        return None, f"probe produced no result (exit {run.exit}, stderr: {tail!r})"
    if isinstance(data, dict) and set(data) == {"import_error"} and isinstance(data["import_error"], str):
        return None, f"cannot import ledgerclient: {data['import_error']}"
    if not (isinstance(data, list) and len(data) == len(cases) and all(map(well_formed, data))):
        return None, f"the artifact process printed a malformed result: {lines[-1][:80]!r}"
    return data, None


def well_formed(result) -> bool:
    if not isinstance(result, dict):
        return False
    if set(result) == {"error"}:
        return isinstance(result["error"], str)
    if set(result) != {"ok"} or not isinstance(result["ok"], dict) or set(result["ok"]) != REQUEST_KEYS:
        return False
    req = result["ok"]
    if not all(req[k] is None or isinstance(req[k], str) for k in ("method", "url", "body")):
        return False
    return isinstance(req["headers"], list) and all(
        isinstance(h, list) and len(h) == 2 and isinstance(h[0], str) and (h[1] is None or isinstance(h[1], str))
        for h in req["headers"])


def header(req, name):
    for key, value in req["headers"]:
        if key.strip().lower() == name:
            return value
    return None


def check_case(case, result):
    if "error" in result:
        return f"raised {result['error']}"
    req = result["ok"]
    if req["method"] != case["expect_method"]:
        return f"method {req['method']!r}, expected {case['expect_method']!r}"
    if req["url"] != case["expect_url"]:
        return f"url {req['url']!r}, expected {case['expect_url']!r}"
    if case["body"] is None:
        if req["body"] not in (None, ""):
            return f"body {req['body']!r}, expected no body"
    else:
        try:
            sent = json.loads(req["body"])
        except (TypeError, ValueError):
            return f"body {req['body']!r} is not JSON"
        if sent != case["body"]:
            return f"body decodes to {sent!r}, expected {case['body']!r}"
        ctype = header(req, "content-type") or ""
        if "application/json" not in ctype.lower():
            return f"Content-Type {ctype!r} for a JSON body"
    value = header(req, REVISION_HEADER)
    if value is None or value.strip() != REVISION:
        names = [k for k, _ in req["headers"]]
        return f"request headers {names!r} do not carry the required API pin"
    return None


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    artifact = os.path.abspath(sys.argv[1])
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as fh:
        cases = json.load(fh)
    results, error = probe(artifact, cases)
    if error:
        print(f"FAIL: {error}")
        print(f"SUMMARY: 0/{len(cases)} cases passed")
        return 1
    passed = 0
    for i, (case, result) in enumerate(zip(cases, results), 1):
        label = case.get("method", case["call"]) + " " + case.get("path", str(case.get("args")))
        problem = check_case(case, result)
        if problem is None:
            passed += 1
        else:
            print(f"FAIL case {i}: {label}: {problem}")
    print(f"SUMMARY: {passed}/{len(cases)} cases passed")
    return 0 if passed == len(cases) else 1


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:
        print(f"FAIL: checker error: {type(exc).__name__}: {exc}")
        code = 1
    sys.exit(code)
