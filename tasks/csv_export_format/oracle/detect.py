"""Damage detector for csv_export_format: python3 detect.py /artifact

Exports one probe table with the artifact's export_rows and recognises the wrong rules
by the bytes of the file:
  superseded    - the retired format: tab-delimited, no byte-order mark
  contradictory - the rival memo: pipe-delimited
  adjacent      - the warehouse-dump convention: comma-delimited, every field quoted, LF
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
BOM = b"\xef\xbb\xbf"


def probe_bytes(artifact: str) -> bytes | None:
    outdir = tempfile.mkdtemp(prefix="csvdetect-", dir="/tmp")
    try:
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        try:
            subprocess.run(
                [sys.executable, "-B", os.path.join(HERE, "run_export.py"), artifact,
                 os.path.join(HERE, "probes.json"), outdir],
                cwd=outdir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, timeout=TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            return None
        try:
            with open(os.path.join(outdir, "results.json"), encoding="utf-8") as fh:
                results = json.load(fh).get("results") or []
            if not results or not results[0].get("ok"):
                return None
            with open(os.path.join(outdir, "case_0.csv"), "rb") as fh:
                return fh.read()
        except (OSError, ValueError, AttributeError):
            return None
    finally:
        shutil.rmtree(outdir, ignore_errors=True)


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
