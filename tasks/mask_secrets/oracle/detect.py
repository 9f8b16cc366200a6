"""Damage detector for mask_secrets: python3 detect.py /artifact

Redacts a probe record with the artifact's redact (as the artifact's user, through memgrid_check)
and recognises the wrong masking rules by the value left in the "password" field (every rule
masks that key):
  superseded    - the retired marker "[REDACTED]"
  contradictory - the rival memo: first four characters followed by "..."
  adjacent      - the card-number convention: first six and last four kept, "#" in between
Prints one JSON line {"fired": [...]} and exits 0.
"""
import sys

sys.dont_write_bytecode = True

import json
import os

from memgrid_check import run_python

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 30


def probe_result(artifact: str, record: dict) -> dict | None:
    """What redact returned for the probe record, run as the artifact's user (run_redact.py through
    memgrid_check); None when it gave no complete, well-formed report of a returned dict."""
    run = run_python(os.path.join(HERE, "run_redact.py"), [artifact], stdin=json.dumps([record]).encode(),
                     timeout=TIMEOUT)
    if run.timed_out:
        return None
    try:
        records = [json.loads(line) for line in run.stdout.decode("utf-8").splitlines()]
    except ValueError:
        return None
    if len(records) != 3 or records[0] != {"import": "ok"} or records[2] != {"done": 1}:
        return None
    result = records[1]
    if not (isinstance(result, dict) and result.get("case") == 0 and isinstance(result.get("result"), dict)):
        return None
    return result["result"]


def classify(original: str, masked) -> list[str]:
    if not isinstance(masked, str) or masked == original:
        return []
    fired = []
    if masked.strip() == "[REDACTED]":
        fired.append("superseded")
    if masked in (original[:4] + "...", original[:4] + "\u2026"):
        fired.append("contradictory")
    if masked == original[:6] + "#" * (len(original) - 10) + original[-4:]:
        fired.append("adjacent")
    return fired


def main() -> list[str]:
    if len(sys.argv) != 2:
        return []
    with open(os.path.join(HERE, "probes.json"), encoding="utf-8") as fh:
        probe = json.load(fh)[0]["record"]
    result = probe_result(os.path.abspath(sys.argv[1]), probe)
    if not isinstance(result, dict):
        return []
    return classify(probe["password"], result.get("password"))


if __name__ == "__main__":
    try:
        fired = main()
    except BaseException:
        fired = []
    print(json.dumps({"fired": fired}))
    sys.exit(0)
