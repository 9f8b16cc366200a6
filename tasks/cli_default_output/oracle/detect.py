"""Damage detector for cli_default_output: python3 detect.py /artifact

Runs `opsreport.py report DATA` without --format (as the artifact's user, through memgrid_check)
and names the wrong default it sees:
  superseded    - CSV (a comma-separated header row naming the columns)
  contradictory - one JSON array for the whole report
  adjacent      - a Markdown table (pipe rows with a |---| separator line)
Prints one JSON line {"fired": [...]}.
"""
import sys

sys.dont_write_bytecode = True

import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check import run_report  # noqa: E402  (the judge's own module: the CLI runs as the artifact's user)

TIMEOUT = 10
MD_SEPARATOR = re.compile(r"^\|?(\s*:?-{3,}:?\s*\|)+\s*:?-*:?\s*\|?$")


def default_output(artifact):
    report, error = run_report(artifact, "wide.json", None, timeout=TIMEOUT)
    return report.stdout if error is None and report.returncode == 0 else ""


def classify(out):
    text = out.strip()
    if not text:
        return []
    try:
        if isinstance(json.loads(text), list):
            return ["contradictory"]
    except ValueError:
        pass
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if all(line.startswith("|") for line in lines) and any(MD_SEPARATOR.match(l) for l in lines):
        return ["adjacent"]
    header = [cell.strip().strip('"').lower() for cell in lines[0].split(",")]
    if len(header) >= 3 and "service" in header and not lines[0].startswith(("{", "[", "|")):
        return ["superseded"]
    return []


def main():
    fired = []
    try:
        if len(sys.argv) == 2:
            fired = classify(default_output(os.path.abspath(sys.argv[1])))
    except BaseException:
        fired = []
    print(json.dumps({"fired": fired}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
