"""Oracle checker for api_version_header: python3 check.py /artifact"""
import sys

sys.dont_write_bytecode = True

import json
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE_TIMEOUT = 20
REVISION_HEADER = "x-ledger-revision"
REVISION = "2023-11-07"


def probe(artifact, cases_path):
    """Return (results, error) from running probe.py against the artifact."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    try:
        proc = subprocess.run(
            [sys.executable, "-B", os.path.join(HERE, "probe.py"), artifact, cases_path],
            cwd=tempfile.gettempdir(), env=env, capture_output=True, text=True,
            timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return None, f"building the requests timed out after {PROBE_TIMEOUT}s"
    lines = proc.stdout.strip().splitlines()
    try:
        data = json.loads(lines[-1])
    except (IndexError, ValueError):
        tail = (proc.stderr.strip().splitlines() or [""])[-1][:200]
        return None, f"probe produced no result (exit {proc.returncode}, stderr: {tail!r})"
    if isinstance(data, dict):
        return None, f"cannot import ledgerclient: {data.get('import_error')}"
    return data, None


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
    cases_path = os.path.join(HERE, "cases.json")
    with open(cases_path, encoding="utf-8") as fh:
        cases = json.load(fh)
    results, error = probe(artifact, cases_path)
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
