"""Damage detector for api_version_header: python3 detect.py /artifact

Prints one JSON line {"fired": [...]} naming the wrong version-pinning rules found in the
requests the artifact builds:
  superseded    - the old integer pin header "Ledger-Api-Version"
  contradictory - versioning through a vendor media type ("application/vnd.ledger...")
  adjacent      - the inventory service's "api-version=2022-03-01" pin (query or header)
"""
import sys

sys.dont_write_bytecode = True

import json
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE_TIMEOUT = 20


def requests_built(artifact):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    try:
        proc = subprocess.run(
            [sys.executable, "-B", os.path.join(HERE, "probe.py"), artifact,
             os.path.join(HERE, "cases.json")],
            cwd=tempfile.gettempdir(), env=env, capture_output=True, text=True,
            timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL,
        )
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except Exception:
        return []
    if not isinstance(data, list):
        return []
    return [r["ok"] for r in data if isinstance(r, dict) and "ok" in r]


def fired_for(reqs):
    fired = set()
    for req in reqs:
        url = (req.get("url") or "").lower()
        for key, value in req.get("headers") or []:
            name = str(key).strip().lower()
            text = str(value or "").strip().lower()
            if name == "ledger-api-version":
                fired.add("superseded")
            if "vnd.ledger" in text:
                fired.add("contradictory")
            if text == "2022-03-01":
                fired.add("adjacent")
        if "api-version=2022-03-01" in url:
            fired.add("adjacent")
    order = ["superseded", "contradictory", "adjacent"]
    return [c for c in order if c in fired]


def main():
    fired = []
    try:
        if len(sys.argv) == 2:
            fired = fired_for(requests_built(os.path.abspath(sys.argv[1])))
    except BaseException:
        fired = []
    print(json.dumps({"fired": fired}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
