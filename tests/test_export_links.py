"""The workspace export keeps what an honest agent wrote and drops what would make the graded code differ
from the code shown: hard links come out as files, compiled Python never comes out at all.

The streams are made the way the engine's get_archive makes them: a tar of the folder named after it, where
the second name of an inode is a hard link (LNKTYPE) to the first."""

import io
import os
import tarfile
from pathlib import Path

from runner.env.archive import BYTECODE_DETAIL, MAX_LISTED, TAR_BLOCK, read_export


def folder_stream(folder: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(folder, arcname=folder.name)
    return buf.getvalue()


def chunks(data: bytes, size: int = 777):
    return (data[i:i + size] for i in range(0, len(data), size))


def linked_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "mod.py").write_bytes(b"def answer():\n    return 42\n")
    os.link(ws / "pkg" / "mod.py", ws / "pkg" / "zz_copy.py")  # cp -l, git's object store, pip's cache
    return ws


def test_the_stream_really_holds_a_hard_link(tmp_path):
    data = folder_stream(linked_workspace(tmp_path))
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        links = [m for m in tar.getmembers() if m.islnk()]
    assert [(m.name, m.linkname) for m in links] == [("workspace/pkg/zz_copy.py", "workspace/pkg/mod.py")]


def test_both_names_of_a_hard_link_export_with_the_same_bytes(tmp_path):
    export = read_export(chunks(folder_stream(linked_workspace(tmp_path))), strip="workspace", cap_bytes=1 << 20)
    assert {e.path: e.data for e in export.entries} == {"pkg/mod.py": b"def answer():\n    return 42\n",
                                                       "pkg/zz_copy.py": b"def answer():\n    return 42\n"}
    assert export.dropped == ()


def test_the_cap_counts_both_names(tmp_path):
    ws = tmp_path / "workspace"
    ws.mkdir()
    (ws / "a.bin").write_bytes(b"x" * 600)
    os.link(ws / "a.bin", ws / "b.bin")
    data = folder_stream(ws)  # each name costs its content and its header
    assert read_export(chunks(data), strip="workspace", cap_bytes=1200 + 2 * TAR_BLOCK).file_bytes == 1200
    capped = read_export(chunks(data), strip="workspace", cap_bytes=1199 + 2 * TAR_BLOCK)
    assert capped.too_large and capped.over_cap_path == "b.bin"
    assert [e.path for e in capped.entries] == ["a.bin"]


def test_many_empty_files_pass_the_cap_as_their_archive_does():
    """Empty files cost the controller an entry each and the checker a header each: counted against the cap
    (the archive memgrid keeps and hands on), so a workspace of many of them stops at it like a big file."""
    n = 2000
    data = _stream(*((_member(f"workspace/f{i:05}"), b"") for i in range(n)))
    capped = read_export(chunks(data, 1 << 16), strip="workspace", cap_bytes=1000 * TAR_BLOCK)
    assert capped.too_large and len(capped.entries) == 1000 and capped.over_cap_path == "f01000", capped.over_cap_path
    assert not read_export(chunks(data, 1 << 16), strip="workspace", cap_bytes=n * TAR_BLOCK).too_large


def test_what_is_dropped_is_named_up_to_a_bound_and_counted_past_it():
    n = MAX_LISTED + 250
    data = _stream(*((_member(f"workspace/l{i:05}", tarfile.SYMTYPE, "/etc/passwd"), None) for i in range(n)))
    export = read_export(chunks(data, 1 << 16), strip="workspace", cap_bytes=1 << 20)
    assert len(export.dropped) == MAX_LISTED and export.dropped_unlisted == 250 and not export.too_large
    record = export.record()
    assert len(record["dropped"]) == MAX_LISTED and record["dropped_unlisted"] == 250


def _member(name: str, kind=tarfile.REGTYPE, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info


def _stream(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for info, data in members:
            info.size = len(data) if data is not None else 0
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def test_a_hard_link_to_anything_not_kept_is_dropped():
    data = _stream(
        (_member("workspace/kept.py"), b"ok\n"),
        (_member("workspace/shadow", tarfile.LNKTYPE, "/etc/shadow"), None),
        (_member("workspace/up", tarfile.LNKTYPE, "workspace/../etc/passwd"), None),
        (_member("workspace/other", tarfile.LNKTYPE, "elsewhere/secret"), None),
        (_member("workspace/early", tarfile.LNKTYPE, "workspace/later.py"), None),  # named before it was read
        (_member("workspace/later.py"), b"later\n"),
        (_member("workspace/pipe", tarfile.FIFOTYPE), None),
        (_member("workspace/to_pipe", tarfile.LNKTYPE, "workspace/pipe"), None),
    )
    export = read_export(chunks(data), strip="workspace", cap_bytes=1 << 20)
    assert [e.path for e in export.entries] == ["kept.py", "later.py"]
    assert {(d.path, d.kind) for d in export.dropped} == {
        ("shadow", "hardlink"), ("up", "hardlink"), ("other", "hardlink"), ("early", "hardlink"),
        ("pipe", "fifo"), ("to_pipe", "hardlink")}
    assert next(d for d in export.dropped if d.path == "shadow").detail == "-> /etc/shadow"


def test_compiled_python_never_leaves_the_workspace(tmp_path):
    ws = tmp_path / "workspace"
    (ws / "pkg" / "__pycache__").mkdir(parents=True)
    (ws / "pkg" / "mod.py").write_text("def answer():\n    return 0\n")  # what a reviewer reads
    (ws / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\xa7\r\r\n\x03\x00\x00\x00smuggled")
    (ws / "pkg" / "mod.pyc").write_bytes(b"sourceless")
    (ws / "pkg" / "old.pyo").write_bytes(b"optimised")
    (ws / "pkg" / "__pycache__" / "notes.txt").write_bytes(b"anything under a cache folder")
    export = read_export(chunks(folder_stream(ws)), strip="workspace", cap_bytes=1 << 20)
    assert [e.path for e in export.entries] == ["pkg/mod.py"]
    assert {(d.path, d.kind, d.detail) for d in export.dropped} == {
        (p, "bytecode", BYTECODE_DETAIL) for p in ("pkg/__pycache__/mod.cpython-311.pyc", "pkg/mod.pyc",
                                                   "pkg/old.pyo", "pkg/__pycache__/notes.txt")}
    assert export.file_bytes == len("def answer():\n    return 0\n")
    assert {d["kind"] for d in export.record()["dropped"]} == {"bytecode"}


def test_a_hard_link_cannot_carry_bytecode_under_another_name(tmp_path):
    ws = tmp_path / "workspace"
    ws.mkdir()
    (ws / "a.pyc").write_bytes(b"bytecode")
    os.link(ws / "a.pyc", ws / "b.pyc")
    os.link(ws / "a.pyc", ws / "c.txt")
    export = read_export(chunks(folder_stream(ws)), strip="workspace", cap_bytes=1 << 20)
    assert export.entries == ()
    assert {(d.path, d.kind) for d in export.dropped} == {("a.pyc", "bytecode"), ("b.pyc", "bytecode"),
                                                          ("c.txt", "hardlink")}


def test_a_name_a_manifest_cannot_list_is_dropped_and_named(tmp_path):
    """A bundle's MANIFEST.sha256 names a file a line: a name with a newline (or any control character) would break
    it, and a store carrying one made step 2's bundle fail its own verification (a discard the agent chose)."""
    from runner.env.bundle import bundle_of

    ws = tmp_path / "workspace"
    ws.mkdir()
    (ws / "notes.md").write_text("kept\n")
    (ws / "a\nb").write_text("x")
    (ws / "tab\there").write_text("y")
    export = read_export(chunks(folder_stream(ws)), strip="workspace", cap_bytes=1 << 20)
    assert [e.path for e in export.entries] == ["notes.md"]
    assert sorted((d.path, d.kind) for d in export.dropped) == [("a\nb", "unnameable"), ("tab\there", "unnameable")]
    assert bundle_of(list(export.entries)).manifest.count("\n") == 1
