"""The download manifest."""

import hashlib
from pathlib import Path


def manifest_entry(path):
    """{'name': ..., 'size': ..., 'checksum': ...} for the release file at `path`."""
    path = Path(path)
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 16), b""):
            digest.update(block)
    # The mirrors once changed hash functions; naming the algorithm keeps old manifests unambiguous.
    return {"name": path.name, "size": path.stat().st_size, "checksum": "sha256:" + digest.hexdigest()}


def build_manifest(folder):
    return [manifest_entry(p) for p in sorted(Path(folder).iterdir()) if p.is_file()]
