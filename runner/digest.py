"""Content digests: the identity of everything that defines a cell."""

import hashlib
import json
from pathlib import Path


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def canonical_json(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sha256_json(obj) -> str:
    return sha256_bytes(canonical_json(obj))


CACHES = frozenset({"__pycache__"})
# What a task or arm is, for its digest: not caches, nor the packages an image build resolves from
# the committed requirements.txt, package-lock.json or wheel-files.yaml (they appear on first build and would change the digest mid-run),
# nor the *.egg-info `pip install -e arms/recall` writes (a checkout without it is the same arm).
GENERATED = CACHES | {"pydeps", "node_modules", "assets"}


def tree_files(root: Path, skip: frozenset[str] = CACHES) -> list[Path]:
    """Regular files under root, sorted by relative path, without the `skip` folders; links are refused."""
    files = []
    for p in sorted(root.rglob("*")):
        if skip & set(p.relative_to(root).parts) or p.suffix == ".pyc":
            continue
        if p.is_symlink():
            raise ValueError(f"{p}: symbolic links are not allowed in a task or arm tree; replace it with a copy of the file")
        if p.is_file():
            files.append(p)
    return files


def tree_digest(root: Path, leave_out: tuple[str, ...] = ()) -> str:
    """sha256 over (relative path, file sha256) pairs: renames and edits both change it. `leave_out`: relative
    paths (a file, or a folder with all under it) that are not part of what is digested."""
    entries = [[p.relative_to(root).as_posix(), sha256_file(p)] for p in tree_files(root, GENERATED)
               if not any(part.endswith(".egg-info") for part in p.relative_to(root).parts)]
    return sha256_json([e for e in entries if not any(e[0] == o or e[0].startswith(o.rstrip("/") + "/") for o in leave_out)])
