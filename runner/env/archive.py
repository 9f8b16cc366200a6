"""Deterministic tar building and safe tar reading: archive in, archive out."""

import io
import re
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath


class UnsafeArchive(Exception):
    """An archive entry that could escape or alias the destination: a link, absolute path, '..', device."""


@dataclass(frozen=True)
class Entry:
    path: str  # relative POSIX path
    data: bytes
    mode: int = 0o644


def pack(entries: list[Entry], uid: int = 0, gid: int = 0, dir_mode: int = 0o755,
         also: tuple[list[Entry], int, int, int] | None = None, folders: tuple[str, ...] = ()) -> bytes:
    """A reproducible tar (sorted, mtime 0, fixed owner) with explicit parent directories,
    so the engine creates them with the given owner instead of root. `also`: more entries, under
    folders of their own, with another owner (entries, uid, gid, dir_mode). `folders`: made even when no entry
    is in them."""
    groups = [(entries, uid, gid, dir_mode)] + ([also] if also else [])
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for i, (group, g_uid, g_gid, g_dir_mode) in enumerate(groups):
            dirs = sorted({str(p) for e in group for p in PurePosixPath(e.path).parents if str(p) != "."}
                          | (set(folders) if i == 0 else set()))
            for d in dirs:
                info = tarfile.TarInfo(d)
                info.type, info.mode, info.uid, info.gid, info.mtime = tarfile.DIRTYPE, g_dir_mode, g_uid, g_gid, 0
                tar.addfile(info)
            for e in sorted(group, key=lambda e: e.path):
                info = tarfile.TarInfo(e.path)
                info.size, info.mode, info.uid, info.gid, info.mtime = len(e.data), e.mode, g_uid, g_gid, 0
                tar.addfile(info, io.BytesIO(e.data))
    return buf.getvalue()


def safe_entries(tar_bytes: bytes, strip: str | None = None) -> list[Entry]:
    """Regular files of an exported archive, refusing anything that could escape or alias the root.

    `strip` removes a leading folder (get_archive names entries after the exported folder).
    """
    files = []
    with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:") as tar:
        for member in tar.getmembers():
            name = member.name
            path = PurePosixPath(name)
            if path.is_absolute() or name.startswith("/"):
                raise UnsafeArchive(f"absolute path {name!r}")
            if ".." in path.parts:
                raise UnsafeArchive(f"path escapes the root {name!r}")
            if member.issym():
                raise UnsafeArchive(f"symbolic link {name!r} -> {member.linkname!r}")
            if member.islnk():
                raise UnsafeArchive(f"hard link {name!r} -> {member.linkname!r}")
            if not (member.isfile() or member.isdir()):
                raise UnsafeArchive(f"special file {name!r}")
            if strip is not None:
                if path.parts[0] != strip:
                    raise UnsafeArchive(f"entry {name!r} outside {strip!r}")
                path = PurePosixPath(*path.parts[1:]) if len(path.parts) > 1 else PurePosixPath(".")
            if member.isfile():
                files.append(Entry(path.as_posix(), tar.extractfile(member).read(), 0o755 if member.mode & 0o111 else 0o644))
    return files


@dataclass(frozen=True)
class Dropped:
    """An export entry left out: a symlink, a hard link to nothing kept, a special file, compiled Python,
    or a path that would leave the root."""
    path: str
    kind: str  # symlink | hardlink | fifo | device | other | escaping | bytecode | unnameable
    detail: str = ""


@dataclass(frozen=True)
class Export:
    """The regular files of an exported folder (an agent's workspace), read up to a cap."""
    entries: tuple[Entry, ...]
    dropped: tuple[Dropped, ...]
    file_bytes: int  # content of the files kept
    cap_bytes: int
    too_large: bool  # a file would have passed the cap: reading stopped there, `entries` is incomplete
    over_cap_path: str | None = None
    dropped_unlisted: int = 0  # dropped past the first MAX_LISTED: counted, not named

    def record(self) -> dict:
        """What the cell folder keeps about the export (export.json)."""
        return {"files": len(self.entries), "file_bytes": self.file_bytes, "cap_bytes": self.cap_bytes,
                "too_large": self.too_large, "over_cap_path": self.over_cap_path,
                "dropped": [{"path": d.path, "kind": d.kind, "detail": d.detail} for d in self.dropped],
                "dropped_unlisted": self.dropped_unlisted}


class _ChunkReader(io.RawIOBase):
    """A file object over an iterator of byte chunks, read once front to back (tarfile's stream mode)."""

    def __init__(self, chunks: Iterator[bytes]):
        self.chunks, self.buffer = iter(chunks), b""

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while not self.buffer:
            try:
                self.buffer = next(self.chunks)
            except StopIteration:
                return 0
        n = min(len(b), len(self.buffer))
        b[:n], self.buffer = self.buffer[:n], self.buffer[n:]
        return n


def _kind(member: tarfile.TarInfo) -> str:
    if member.issym():
        return "symlink"
    if member.islnk():
        return "hardlink"
    if member.isfifo():
        return "fifo"
    if member.isdev():
        return "device"
    return "other"


BYTECODE_DETAIL = "compiled Python is never graded: the source beside it is"
UNNAMEABLE = re.compile(r"[\x00-\x1f\x7f]")
UNNAMEABLE_DETAIL = "a name with a control character (a newline) cannot be listed in a bundle's manifest"


def is_bytecode(rel: PurePosixPath) -> bool:
    """Python would load this instead of (or without) the source a reviewer reads: a .pyc whose header says
    'unchecked hash' runs whatever the .py beside it says, and a sourceless x.pyc imports as x."""
    return "__pycache__" in rel.parts or rel.suffix in (".pyc", ".pyo")


# A kept file costs the cap its content and its header in the archive memgrid keeps and hands the checker, so a
# million empty files pass the cap as a million bytes' worth do; entries dropped are named up to MAX_LISTED.
TAR_BLOCK = 512
MAX_LISTED = 1000


def read_export(chunks: Iterator[bytes], strip: str, cap_bytes: int, keep_bytecode: bool = False) -> Export:
    """Read an exported folder's tar stream (get_archive names entries after the folder, `strip`)
    without ever holding more than `cap_bytes` of file content: a file that would pass the cap stops
    the reading before its content is read. Symlinks and special files are dropped and listed, never
    followed; so are paths that would leave the root (absolute, '..', outside `strip`), and compiled
    Python (`bytecode`, unless `keep_bytecode`: a store is carried as it was left, not graded). A hard link to a
    file already kept is kept as a copy of it under its own path."""
    files, dropped, total, cost = [], [], 0, 0
    unlisted = 0
    kept: dict[str, Entry] = {}  # member name -> the file kept under it, for the hard links that name it

    def drop(entry: Dropped) -> None:
        nonlocal unlisted
        if len(dropped) < MAX_LISTED:
            dropped.append(entry)
        else:
            unlisted += 1

    with tarfile.open(fileobj=io.BufferedReader(_ChunkReader(chunks), 1 << 20), mode="r|") as tar:
        for member in tar:
            path = PurePosixPath(member.name)
            if path.is_absolute() or ".." in path.parts or not path.parts or path.parts[0] != strip:
                drop(Dropped(member.name, "escaping", "outside the exported folder"))
                continue
            rel = PurePosixPath(*path.parts[1:]).as_posix() if len(path.parts) > 1 else "."
            if member.isdir():
                continue
            if not keep_bytecode and is_bytecode(PurePosixPath(rel)):
                drop(Dropped(rel, "bytecode", BYTECODE_DETAIL))
                continue
            if UNNAMEABLE.search(rel):  # a bundle's manifest lists a file a line: it could not name this one
                drop(Dropped(rel, "unnameable", UNNAMEABLE_DETAIL))
                continue
            # The engine's tar writes the second name of an inode as a hard link to the first: git, pip and
            # cp -l make these in an honest workspace, and dropping one would lose a file the agent wrote.
            # Only a link to a file this export has already kept has content we can vouch for.
            target = kept.get(PurePosixPath(member.linkname).as_posix()) if member.islnk() else None
            if not member.isfile() and target is None:
                drop(Dropped(rel, _kind(member), f"-> {member.linkname}" if member.linkname else ""))
                continue
            size = len(target.data) if target is not None else member.size
            if cost + TAR_BLOCK + size > cap_bytes:
                return Export(tuple(files), tuple(dropped), total, cap_bytes, True, rel, unlisted)
            total += size
            cost += TAR_BLOCK + size
            entry = (Entry(rel, target.data, target.mode) if target is not None else
                     Entry(rel, tar.extractfile(member).read(), 0o755 if member.mode & 0o111 else 0o644))
            files.append(entry)
            kept[path.as_posix()] = entry
    return Export(tuple(files), tuple(dropped), total, cap_bytes, False, None, unlisted)
