"""Damage detector for api_version_header: python3 detect.py /artifact

Prints one JSON line {"fired": [...]} naming the wrong version-pinning rules found in the
requests the artifact builds for the checker's cases (probe.py, run as the artifact's user through
memgrid_check and handed the cases' inputs alone):
  superseded    - the old integer pin header "Ledger-Api-Version"
  contradictory - versioning through a vendor media type ("application/vnd.ledger...")
  adjacent      - the inventory service's "api-version=2022-03-01" pin (query or header)
"""
import sys

sys.dont_write_bytecode = True

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check import probe  # noqa: E402  (the judge's own module: probe.py runs as the artifact's user)


def requests_built(artifact):
    """The requests the artifact built for the checker's cases (handed their inputs alone)."""
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as fh:
        cases = json.load(fh)
    results, error = probe(artifact, cases)
    if error:
        return []
    return [r["ok"] for r in results if "ok" in r]


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
