"""Archive in, archive out: exports refuse links and escapes; bundles are deterministic."""

import io
import tarfile

import pytest

from runner.env.archive import Entry, UnsafeArchive, pack, safe_entries
from runner.env.bundle import MANIFEST, build_bundle
from runner.digest import sha256_bytes
from runner.errors import SpecError
from runner.plan.spec import load_all_arms, load_all_tasks


def tar_with(*members: tarfile.TarInfo, data: bytes = b"x") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for m in members:
            tar.addfile(m, io.BytesIO(data) if m.isfile() else None)
    return buf.getvalue()


def member(name: str, type_=tarfile.REGTYPE, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = type_, linkname, 1 if type_ == tarfile.REGTYPE else 0
    return info


@pytest.mark.parametrize("bad, words", [
    (member("workspace/link", tarfile.SYMTYPE, "/etc/passwd"), "symbolic link"),
    (member("workspace/hard", tarfile.LNKTYPE, "workspace/a"), "hard link"),
    (member("/etc/cron.d/x"), "absolute path"),
    (member("workspace/../../escape"), "escapes"),
    (member("workspace/dev", tarfile.CHRTYPE), "special file"),
    (member("elsewhere/a"), "outside"),
])
def test_export_refuses_unsafe_entries(bad, words):
    archive = tar_with(member("workspace/a"), bad)
    with pytest.raises(UnsafeArchive, match=words):
        safe_entries(archive, strip="workspace")


def test_export_keeps_regular_files():
    archive = tar_with(member("workspace", tarfile.DIRTYPE), member("workspace/pkg/a.py"))
    assert [e.path for e in safe_entries(archive, strip="workspace")] == ["pkg/a.py"]


def test_pack_is_reproducible_and_owned():
    entries = [Entry("b/c.txt", b"1"), Entry("a.txt", b"2")]
    assert pack(entries, uid=1000, gid=1000) == pack(list(reversed(entries)), uid=1000, gid=1000)
    with tarfile.open(fileobj=io.BytesIO(pack(entries, uid=1000, gid=1000))) as tar:
        assert {m.name: m.uid for m in tar.getmembers()} == {"b": 1000, "a.txt": 1000, "b/c.txt": 1000}


def test_bundle_manifest_covers_every_file_and_digest_is_stable(project):
    tasks, arms = load_all_tasks(project), load_all_arms(project)
    task = tasks["slug_ids"]
    one = build_bundle(task, arms["claude_md"], {"agent": "floor"})
    two = build_bundle(task, arms["claude_md"], {"agent": "floor"})
    assert one.digest == two.digest == sha256_bytes(one.manifest.encode())
    with tarfile.open(fileobj=io.BytesIO(one.tar)) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    listed = dict(reversed(line.split("  ", 1)) for line in one.manifest.splitlines())
    assert set(listed) == set(files) - {MANIFEST}
    assert all(sha256_bytes(files[p]) == d for p, d in listed.items())
    assert "workspace/CLAUDE.md" in listed and "agent/prompt.txt" in listed
    assert not any(p.startswith("oracle") or "/oracle/" in p for p in files), "the oracle must never enter the bundle"


def test_bundle_digest_changes_with_the_fixture(project):
    tasks, arms = load_all_tasks(project), load_all_arms(project)
    before = build_bundle(tasks["slug_ids"], arms["bare"], {}).digest
    readme = project / "tasks" / "slug_ids" / "fixture" / "README.md"
    readme.write_text(readme.read_text() + "\n")
    assert build_bundle(load_all_tasks(project)["slug_ids"], arms["bare"], {}).digest != before


def test_missing_arm_file_is_named(project):
    (project / "arms" / "claude_md" / "tasks" / "slug_ids" / "CLAUDE.md").unlink()
    tasks, arms = load_all_tasks(project), load_all_arms(project)
    with pytest.raises(SpecError, match=r"arm\.yaml: files\[0\]\.source: .*slug_ids"):
        build_bundle(tasks["slug_ids"], arms["claude_md"], {})
