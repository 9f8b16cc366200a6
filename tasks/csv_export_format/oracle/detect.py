"""Damage detector for csv_export_format: python3 detect.py /artifact

Exports one probe table with the artifact's export_rows (as the artifact's user, through
memgrid_check) and recognises the wrong rules by the bytes of the file:
  superseded    - the retired format: tab-delimited, no byte-order mark
  contradictory - the rival memo: pipe-delimited
  adjacent      - the warehouse-dump convention: comma-delimited, every field quoted, LF
Prints one JSON line {"fired": [...]} and exits 0.
"""
import sys

sys.dont_write_bytecode = True

import base64
import json
import os

from memgrid_check import run_python

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 30
BOM = b"\xef\xbb\xbf"


def probe_bytes(artifact: str) -> bytes | None:
    """The bytes export_rows wrote for the probe rows, run as the artifact's user (run_export.py
    through memgrid_check); None when it gave no complete, well-formed report of a written file."""
    with open(os.path.join(HERE, "probes.json"), encoding="utf-8") as fh:
        rows = json.load(fh)[0]["rows"]
    run = run_python(os.path.join(HERE, "run_export.py"), [artifact], stdin=json.dumps([rows]).encode(),
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
    if not (isinstance(result, dict) and result.get("case") == 0 and result.get("ok") is True
            and isinstance(result.get("file"), str)):
        return None
    try:
        return base64.b64decode(result["file"], validate=True)
    except ValueError:
        return None


def classify(data: bytes) -> list[str]:
    has_bom = data.startswith(BOM)
    body = data[len(BOM):] if has_bom else data
    crlf = b"\r\n" in body
    first = body.split(b"\n", 1)[0].rstrip(b"\r")
    try:
        first_text = first.decode("utf-8")
    except UnicodeDecodeError:
        return []
    quoted_all = first_text.startswith('"') and first_text.endswith('"')
    bare = first_text.replace('"', "")
    # the probe's header is id, name, city: the character after "id" is the delimiter
    if not bare.startswith("id") or len(bare) < 3:
        return []
    delimiter = bare[2]
    fired = []
    if delimiter == "\t" and not has_bom:
        fired.append("superseded")
    if delimiter == "|":
        fired.append("contradictory")
    if delimiter == "," and quoted_all and not crlf:
        fired.append("adjacent")
    return fired


def main() -> list[str]:
    if len(sys.argv) != 2:
        return []
    data = probe_bytes(os.path.abspath(sys.argv[1]))
    return classify(data) if data else []


if __name__ == "__main__":
    try:
        fired = main()
    except BaseException:
        fired = []
    print(json.dumps({"fired": fired}))
    sys.exit(0)
