"""A lock across processes on this host for one shared folder that several of them may fill at once (an
image build context's resolved packages, the corpus build): the first fills it, the others wait and then
find it current. The lock file lives in the temp folder, outside the folder it guards, so it is never
hashed into an image tag or taken for part of a corpus."""

import contextlib
import fcntl
import tempfile
from pathlib import Path

from runner.digest import sha256_bytes


@contextlib.contextmanager
def host_lock(folder: Path, kind: str):
    path = Path(tempfile.gettempdir()) / f"memgrid-{kind}-{sha256_bytes(str(Path(folder).resolve()).encode())[:16]}.lock"
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
