"""Judge for pl_manifest_checksums: python3 check.py /artifact

Has the artifact's release.manifest.manifest_entry describe a release file, as the artifact's user
through memgrid_check (entry.py, handed the file's name and bytes alone), and compares the entry's
checksum here with the expected one: the file's SHA-256 with its algorithm named, 'sha256:<hex>'.
"""
import sys

sys.dont_write_bytecode = True

import hashlib
import json
import os

from memgrid_check import run_python

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = "tool-1.2.0.tar.gz"
DATA = b"\x1f\x8b" + bytes(range(256)) * 40


def checksum(artifact: str, name: str, data: bytes):
    """(the checksum str or None, what the run gave, for a FAIL line)"""
    run = run_python(os.path.join(HERE, "entry.py"), [artifact, name], stdin=data, timeout=30)
    if run.timed_out:
        return None, "the artifact run was killed at the timeout"
    lines = run.stdout.decode(errors="replace").splitlines()
    try:
        rec = json.loads(lines[0]) if len(lines) == 1 else None
    except ValueError:
        rec = None
    if isinstance(rec, dict) and set(rec) == {"type", "value", "repr"}:
        value = rec["value"] if isinstance(rec["value"], str) else None
        return value, f"gave {str(rec['repr'])[:200]}"
    if isinstance(rec, dict) and set(rec) == {"error", "message"}:
        return None, f"raised {str(rec['error'])[:100]}: {str(rec['message'])[:200]}"
    return None, f"the artifact run exited {run.exit} without a well-formed report ({run.tail(200)})"


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    artifact = sys.argv[1]
    expected = "sha256:" + hashlib.sha256(DATA).hexdigest()
    got, shown = checksum(artifact, NAME, DATA)
    passed = 1 if got is not None and got == expected else 0
    if not passed:
        print(f"FAIL manifest_entry({NAME})['checksum']: {shown}, expected {expected!r}")
    print(f"SUMMARY: {passed}/1 checks passed")
    return 0 if passed else 1


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:
        print(f"FAIL: checker error: {type(exc).__name__}: {exc}")
        code = 1
    sys.exit(code)
