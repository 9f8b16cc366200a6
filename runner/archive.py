"""Deterministic tar building and safe tar reading: archive in, archive out."""

import io
import tarfile
from dataclasses import dataclass
from pathlib import PurePosixPath


class UnsafeArchive(Exception):
    """An archive entry that could escape or alias the destination: a link, absolute path, '..', device."""


@dataclass(frozen=True)
class Entry:
    path: str  # relative POSIX path
    data: bytes
    mode: int = 0o644


def pack(entries: list[Entry], uid: int = 0, gid: int = 0, dir_mode: int = 0o755) -> bytes:
    """A reproducible tar (sorted, mtime 0, fixed owner) with explicit parent directories,
    so the engine creates them with the given owner instead of root."""
    buf = io.BytesIO()
    dirs = sorted({str(p) for e in entries for p in PurePosixPath(e.path).parents if str(p) != "."})
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.uid, info.gid, info.mtime = tarfile.DIRTYPE, dir_mode, uid, gid, 0
            tar.addfile(info)
        for e in sorted(entries, key=lambda e: e.path):
            info = tarfile.TarInfo(e.path)
            info.size, info.mode, info.uid, info.gid, info.mtime = len(e.data), e.mode, uid, gid, 0
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
