"""Damage detector for cli_exit_codes: python3 detect.py /artifact

Runs the artifact's validate_config.py on invalid configurations (the checker's own files
under configs/, handed over as content alone, run as the artifact's user through memgrid_check)
and names the condition whose wrong exit status it uses for every one of them.
Prints one JSON line.
  superseded:    65 (sysexits EX_DATAERR, the retired rule)
  contradictory: 10
  adjacent:      4  (the ingest tools' "input rejected" status)
"""
import sys

sys.dont_write_bytecode = True

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check import run_validate  # noqa: E402  (the judge's own module: the CLI runs as the artifact's user)

CASE_TIMEOUT = 5
PROBES = ["invalid_missing_port.json", "invalid_port_range.json",
          "invalid_not_object.json", "invalid_empty_name.json"]
STATUS = {65: "superseded", 10: "contradictory", 4: "adjacent"}


def detect(artifact: str) -> list:
    script = os.path.join(artifact, "validate_config.py")
    if not os.path.isfile(script):
        return []
    codes = set()
    for name in PROBES:
        try:
            result = run_validate(artifact, name, timeout=CASE_TIMEOUT)
        except Exception:
            return []
        if result.timed_out:
            return []
        codes.add(result.exit)
    if len(codes) == 1:
        code = codes.pop()
        if code in STATUS:
            return [STATUS[code]]
    return []


if __name__ == "__main__":
    try:
        fired = detect(os.path.abspath(sys.argv[1])) if len(sys.argv) == 2 else []
    except BaseException:
        fired = []
    print(json.dumps({"fired": fired}))
    sys.exit(0)
