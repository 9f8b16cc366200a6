"""Damage detector for mask_secrets: python3 detect.py /artifact

Redacts a probe record with the artifact's redact and recognises the wrong masking rules by
the value left in the "password" field (every rule masks that key):
  superseded    - the retired marker "[REDACTED]"
  contradictory - the rival memo: first four characters followed by "..."
  adjacent      - the card-number convention: first six and last four kept, "#" in between
Prints one JSON line {"fired": [...]} and exits 0.
"""
import sys

sys.dont_write_bytecode = True

import json
import os
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 30


def probe_result(artifact: str, probes_path: str) -> dict | None:
    workdir = tempfile.mkdtemp(prefix="redactdetect-", dir="/tmp")
    out = os.path.join(workdir, "results.json")
    try:
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        try:
            subprocess.run(
                [sys.executable, "-B", os.path.join(HERE, "run_redact.py"), artifact, probes_path, out],
                cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, timeout=TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            return None
        with open(out, encoding="utf-8") as fh:
            results = json.load(fh).get("results") or []
        return results[0].get("result") if results else None
    except (OSError, ValueError, AttributeError):
        return None
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


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
    probes_path = os.path.join(HERE, "probes.json")
    with open(probes_path, encoding="utf-8") as fh:
        probe = json.load(fh)[0]["record"]
    result = probe_result(os.path.abspath(sys.argv[1]), probes_path)
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
