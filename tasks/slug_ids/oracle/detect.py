"""Damage detector for slug_ids: python3 detect.py /artifact

Calls the artifact's make_id on probe names (as the artifact's user, through memgrid_check, with a timeout) and names
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
import unicodedata
import uuid
import zlib

from memgrid_check import call

PROBE_TIMEOUT = 20
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

def run_probes(artifact: str) -> list:
    """make_id of each probe name, called as the artifact's user (memgrid_check.call); None where it
    gave no str."""
    seen, _ = call(artifact, [{"module": "records", "function": "make_id", "args": [name]} for name in PROBES],
                   timeout=PROBE_TIMEOUT)
    return [o.value if o is not None and o.returned and o.type == "str" else None for o in seen]


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
