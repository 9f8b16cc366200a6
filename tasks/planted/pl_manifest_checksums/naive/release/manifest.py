"""The download manifest."""

import hashlib
from pathlib import Path


def manifest_entry(path):
    """{'name': ..., 'size': ..., 'checksum': ...} for the release file at `path`."""
    path = Path(path)
    data = path.read_bytes()
    return {"name": path.name, "size": len(data), "checksum": hashlib.sha256(data).hexdigest()}


def build_manifest(folder):
    return [manifest_entry(p) for p in sorted(Path(folder).iterdir()) if p.is_file()]
