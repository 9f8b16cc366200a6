"""Harness for check.py / detect.py: builds requests with the artifact's code.

Run by memgrid_check.run_python(probe.py, [ARTIFACT], stdin=<JSON list of inputs>) as the artifact's
user: sys.argv == ['-c', ARTIFACT]. Each input is {"call": "build", "method", "path", "body"} or
{"call": "client_<method>", "args": [...]}: inputs only, never the expected requests.
Prints one JSON document on its own copy of stdout (the artifact's prints go to stderr): a list with
one entry per input, {"ok": {"method", "url", "headers": [[name, value], ...], "body"}} or
{"error": "..."}; or {"import_error": "..."}.
"""
import sys

sys.dont_write_bytecode = True

import json
import os


def as_text(value):
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def field(req, name):
    if isinstance(req, dict):
        return req.get(name)
    return getattr(req, name, None)


def describe(req):
    headers = field(req, "headers") or {}
    items = headers.items() if hasattr(headers, "items") else list(headers)
    return {
        "method": as_text(field(req, "method")),
        "url": as_text(field(req, "url")),
        "headers": [[str(k), as_text(v)] for k, v in items],
        "body": as_text(field(req, "body")),
    }


def run_case(mod, case):
    call = case["call"]
    if call == "build":
        return describe(mod.build_request(case["method"], case["path"], case["body"]))
    sent = []

    def transport(req):
        sent.append(req)
        return 200, b"{}" if call == "client_post_entry" else b"[]"

    client = mod.LedgerClient(transport)
    getattr(client, call[len("client_"):])(*case["args"])
    if len(sent) != 1:
        raise RuntimeError(f"expected one request to reach the transport, got {len(sent)}")
    return describe(sent[0])


def main(report):
    artifact = sys.argv[1]
    cases = json.loads(sys.stdin.read())
    sys.path.insert(0, artifact)
    out = []
    try:
        import ledgerclient as mod
    except BaseException as exc:
        report.write(json.dumps({"import_error": f"{type(exc).__name__}: {exc}"}) + "\n")
        return
    for case in cases:
        try:
            out.append({"ok": run_case(mod, case)})
        except BaseException as exc:
            out.append({"error": f"{type(exc).__name__}: {exc}"})
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
