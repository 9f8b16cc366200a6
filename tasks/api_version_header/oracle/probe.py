"""Child process for check.py / detect.py: builds requests with the artifact's code.

python3 probe.py ARTIFACT CASES.json  -> prints one JSON document (a list, one entry per case).
Runs in its own process so that a hanging or crashing artifact cannot take the oracle down.
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


def main():
    artifact, cases_path = sys.argv[1], sys.argv[2]
    with open(cases_path, encoding="utf-8") as fh:
        cases = json.load(fh)
    sys.path.insert(0, artifact)
    out = []
    try:
        import ledgerclient as mod
    except BaseException as exc:
        print(json.dumps({"import_error": f"{type(exc).__name__}: {exc}"}))
        return
    for case in cases:
        try:
            out.append({"ok": run_case(mod, case)})
        except BaseException as exc:
            out.append({"error": f"{type(exc).__name__}: {exc}"})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    os._exit(0)
