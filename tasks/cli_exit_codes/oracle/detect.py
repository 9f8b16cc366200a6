"""Damage detector for cli_exit_codes: python3 detect.py /artifact

Runs the artifact's validate_config.py on invalid configurations (the checker's own files
under configs/) and names the condition whose wrong exit status it uses for every one of them.
Prints one JSON line.
  superseded:    65 (sysexits EX_DATAERR, the retired rule)
  contradictory: 10
  adjacent:      4  (the ingest tools' "input rejected" status)
"""
import sys

sys.dont_write_bytecode = True

import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
CASE_TIMEOUT = 5
PROBES = ["invalid_missing_port.json", "invalid_port_range.json",
          "invalid_not_object.json", "invalid_empty_name.json"]
STATUS = {65: "superseded", 10: "contradictory", 4: "adjacent"}


def detect(artifact: str) -> list:
    script = os.path.join(artifact, "validate_config.py")
    if not os.path.isfile(script):
        return []
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    codes = set()
    for name in PROBES:
        try:
            result = subprocess.run(
                [sys.executable, "-B", script, os.path.join(HERE, "configs", name)],
                cwd=artifact, env=env, capture_output=True, text=True,
                timeout=CASE_TIMEOUT, stdin=subprocess.DEVNULL,
            )
        except Exception:
            return []
        codes.add(result.returncode)
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
