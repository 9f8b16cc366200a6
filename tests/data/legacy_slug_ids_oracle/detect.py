"""Damage detector for slug_ids: python3 detect.py /artifact

Calls the artifact's make_id on probe names (in a child process, with a timeout) and names
the conditions whose wrong id rule every probe follows. Prints one JSON line.
  superseded:    str(uuid5(RECORDS_NAMESPACE, name))              the retired uuid5 ids
  contradictory: blake2b(name, digest_size=8).hexdigest()         16 hex characters
  adjacent:      zlib.crc32(name) as 8 hex digits                  the billing customer keys
Each rule is tried with the usual name normalisations (none, strip, lower, casefold, NFKC).
"""
import sys

sys.dont_write_bytecode = True

import hashlib
import json
import os
import subprocess
import unicodedata
import uuid
import zlib

PROBE_TIMEOUT = 20
MARK = "@@DETECT@@"
PROBES = ["Acme Corp", "  Globex  ", "ZOË Müller", "order-42", "Initech\t", "Straße Nord"]
RECORDS_NAMESPACE = uuid.UUID("8c1f4e2a-5b7d-4c3e-9f60-2a1b3c4d5e6f")

NORMALISERS = [
    lambda s: s,
    lambda s: s.strip(),
    lambda s: s.lower(),
    lambda s: s.strip().lower(),
    lambda s: s.strip().casefold(),
    lambda s: unicodedata.normalize("NFKC", s).strip().lower(),
    lambda s: unicodedata.normalize("NFKC", s).strip().casefold(),
    lambda s: unicodedata.normalize("NFKC", s.strip().casefold()),
]

RULES = [
    ("superseded", lambda n: {str(uuid.uuid5(RECORDS_NAMESPACE, n))}),
    ("contradictory",
     lambda n: {hashlib.blake2b(n.encode("utf-8"), digest_size=8).hexdigest()}),
    ("adjacent", lambda n: {f"{zlib.crc32(n.encode('utf-8')):08x}",
                            f"{zlib.crc32(n.encode('utf-8')):x}"}),
]

CHILD = r"""
import sys, json
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
out = []
try:
    from records import make_id
except BaseException:
    make_id = None
for name in json.loads(sys.argv[2]):
    if make_id is None:
        out.append(None)
        continue
    try:
        got = make_id(name)
        out.append(got if isinstance(got, str) else None)
    except BaseException:
        out.append(None)
sys.stdout.write("\n" + sys.argv[3] + json.dumps(out) + "\n")
sys.stdout.flush()
"""


def run_probes(artifact: str) -> list:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    try:
        result = subprocess.run(
            [sys.executable, "-B", "-c", CHILD, artifact, json.dumps(PROBES), MARK],
            cwd="/tmp" if os.path.isdir("/tmp") else artifact, env=env,
            capture_output=True, text=True, timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL,
        )
    except Exception:
        return [None] * len(PROBES)
    for line in reversed(result.stdout.splitlines()):
        if line.startswith(MARK):
            try:
                values = json.loads(line[len(MARK):])
            except ValueError:
                break
            if isinstance(values, list) and len(values) == len(PROBES):
                return values
            break
    return [None] * len(PROBES)


def detect(artifact: str) -> list:
    ids = run_probes(artifact)
    if any(not isinstance(i, str) for i in ids):
        return []
    fired = []
    for condition, rule in RULES:
        for norm in NORMALISERS:
            if all(got in rule(norm(name)) for name, got in zip(PROBES, ids)):
                fired.append(condition)
                break
    return fired


if __name__ == "__main__":
    try:
        fired = detect(os.path.abspath(sys.argv[1])) if len(sys.argv) == 2 else []
    except BaseException:
        fired = []
    print(json.dumps({"fired": fired}))
    sys.exit(0)
