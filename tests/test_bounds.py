"""Bounds the controller keeps without Docker: the output capture and the streamed workspace export."""

import io
import tarfile

import pytest

from runner.env.archive import read_export
from runner.env.sandbox import BoundedCapture, DiskBudget, ExecResult, probe


def feed_all(capture: BoundedCapture, data: bytes, chunk: int) -> None:
    for i in range(0, len(data), chunk):
        capture.feed(data[i:i + chunk], float(i))


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_capture_under_its_bounds_keeps_every_line(chunk):
    data = b"".join(b'{"n": %d}\n' % i for i in range(300)) + b"tail without newline"
    capture = BoundedCapture(head=10_000, tail=10_000)
    feed_all(capture, data, chunk)
    lines, dropped_bytes, dropped_lines = capture.result()
    assert [line for _, line in lines] == data.decode().split("\n")
    assert (dropped_bytes, dropped_lines) == (0, 0)


@pytest.mark.parametrize("chunk", [3, 64, 1000])
def test_capture_of_a_flood_keeps_head_and_tail_and_counts_the_middle(chunk):
    first, last = b'{"type": "system", "subtype": "init"}\n', b'{"type": "result"}\n'
    middle = b"".join(b"line %06d\n" % i for i in range(20_000))  # 12 bytes a line
    data = first + middle + last
    capture = BoundedCapture(head=1000, tail=1000)
    feed_all(capture, data, chunk)
    lines, dropped_bytes, dropped_lines = capture.result()
    text = [line for _, line in lines]
    assert text[0] == first.decode().strip() and text[-1] == last.decode().strip()
    assert sum(len(line) + 1 for line in text) <= 2000 + 2 * chunk  # bounded, whatever the chunking
    assert all(line.startswith(("{", "line ")) and len(line) in (len(first) - 1, 11, len(last) - 1) for line in text), \
        "a line cut by the bounds must be dropped whole"
    assert dropped_bytes == len(data) - sum(len(line) + 1 for line in text)
    assert len(text) + dropped_lines == 20_002


def test_capture_drops_one_giant_line_whole():
    data = b"head\n" + b"x" * 50_000 + b"\nend\n"
    capture = BoundedCapture(head=100, tail=100)
    feed_all(capture, data, 512)
    lines, dropped_bytes, dropped_lines = capture.result()
    assert [line for _, line in lines] == ["head", "end"]
    assert dropped_lines == 1 and dropped_bytes == 50_001


def test_capture_times_each_line_by_its_last_chunk():
    capture = BoundedCapture(head=1000, tail=1000)
    capture.feed(b"init\npart", 1.0)
    capture.feed(b"ial\n", 2.0)
    capture.feed(b"result\n", 3.0)
    lines, _, _ = capture.result()
    assert lines[:3] == ((1.0, "init"), (2.0, "partial"), (3.0, "result"))


def test_a_probe_whose_output_the_engine_lost_is_read_again_and_no_more_than_its_reads():
    """Issue 74: the engine once returned a verifier's run (exit 0 in 0.3 s) with no output at all. A probe that came
    back empty is run again; one that printed, failed with stderr, or ran out of time is taken as it is; the reads
    are bounded."""
    def runs(*results):
        queue = list(results)
        return lambda: queue.pop(0)

    lost, report = ExecResult(0, "", "", 0.3), ExecResult(0, '{"ok": true}', "", 0.3)
    assert probe(runs(lost, lost, report)) == (report, 2)
    assert probe(runs(report)) == (report, 0)
    for taken in (ExecResult(1, "", "Traceback ...", 0.3), ExecResult(124, "", "", 60.0), ExecResult(137, "", "", 0.1)):
        assert probe(runs(taken, report)) == (taken, 0)
    assert probe(runs(lost, lost, lost, report)) == (lost, 2)  # PROBE_READS = 3: the fourth run is never asked for


def test_disk_budget_mounts_sum_to_the_budget():
    for mib in (64, 100, 2048, 65536):
        mounts = DiskBudget(mib).mounts()
        assert sum(mounts.values()) == mib and min(mounts.values()) >= 8


def tar_of(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def member(name: str, kind=tarfile.REGTYPE, linkname: str = "", mode: int = 0o644) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, linkname, mode
    return info


def chunked(data: bytes, size: int = 1000):
    pulled = []

    def gen():
        for i in range(0, len(data), size):
            pulled.append(size)
            yield data[i:i + size]
    return gen(), pulled


def test_export_drops_links_and_special_files_and_keeps_the_rest():
    data = tar_of([
        (member("workspace", tarfile.DIRTYPE), None),
        (member("workspace/app.py", mode=0o755), b"print(1)\n"),
        (member("workspace/.venv/bin/python", tarfile.SYMTYPE, "/usr/bin/python3"), None),
        (member("workspace/leak", tarfile.SYMTYPE, "/etc/passwd"), None),
        (member("workspace/again.py", tarfile.LNKTYPE, "workspace/app.py"), None),
        (member("workspace/shadow", tarfile.LNKTYPE, "/etc/shadow"), None),
        (member("workspace/pipe", tarfile.FIFOTYPE), None),
        (member("workspace/dev", tarfile.CHRTYPE), None),
        (member("../escape.py"), b"x"),
        (member("elsewhere/file.py"), b"x"),
    ])
    stream, _ = chunked(data)
    export = read_export(stream, strip="workspace", cap_bytes=1 << 20)
    assert [(e.path, e.data, e.mode) for e in export.entries] == [("app.py", b"print(1)\n", 0o755),
                                                                  ("again.py", b"print(1)\n", 0o755)]
    assert {(d.path, d.kind) for d in export.dropped} == {
        (".venv/bin/python", "symlink"), ("leak", "symlink"), ("shadow", "hardlink"), ("pipe", "fifo"),
        ("dev", "device"), ("../escape.py", "escaping"), ("elsewhere/file.py", "escaping")}
    assert next(d for d in export.dropped if d.path == "leak").detail == "-> /etc/passwd"
    assert not export.too_large and export.file_bytes == 18


def test_export_stops_reading_at_the_cap():
    big = b"z" * 200_000
    data = tar_of([(member("workspace/small.py"), b"ok\n"), (member("workspace/big.bin"), big),
                   (member("workspace/after.py"), b"never read\n")])
    stream, pulled = chunked(data, 1000)
    export = read_export(stream, strip="workspace", cap_bytes=50_000)
    assert export.too_large and export.over_cap_path == "big.bin"
    assert [e.path for e in export.entries] == ["small.py"]
    assert sum(pulled) < 50_000, f"read {sum(pulled)} bytes of the stream past a 50,000-byte cap"
    record = export.record()
    assert record["too_large"] and record["over_cap_path"] == "big.bin"


def test_one_controller_per_run_and_a_killed_one_leaves_no_lock(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    from runner.errors import UserError
    from runner.exec.run import claim_run

    run_dir = tmp_path / "runs" / "r1"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from pathlib import Path; "
                               "from runner.exec.run import claim_run; claim_run(Path(sys.argv[1])); print('held', flush=True); "
                               "time.sleep(60)", str(run_dir)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(UserError, match=f"another memgrid process \\(pid {holder.pid}\\)"):
            claim_run(run_dir)
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=10)
    claim_run(run_dir)  # the kernel dropped the dead controller's lock: resuming is never refused


def test_a_corpus_rebuilt_under_a_run_is_refused_not_read(tmp_path):
    """A run reads its corpus lazily; another process may rebuild it meanwhile (measured: a grid after a
    generator change did, under a running grid). The run must fail loudly, never read the new corpus."""
    import json as json_module

    from runner.corpus.build import MANIFEST, CorpusChanged, MemorySource, load_settings, write_condition
    from runner.digest import sha256_file

    from conftest import REPO

    settings = load_settings(REPO)
    target = settings.condition_dir("present", 0, tmp_path)

    def session(text):
        return json_module.dumps({"ts": "2026-01-01", "role": "user", "content": text}) + "\n"

    write_condition(target, [("a", session("retry with backoff")), ("b", session("hello"))], [], {})
    locked = {("present", 0): sha256_file(target / MANIFEST)}
    memory = MemorySource(settings, tmp_path, locked=locked)
    assert [name for name, _ in memory.documents("present", 0)] == ["a", "b"]
    write_condition(target, [("a", session("a rival rule")), ("b", session("hello"))], [], {})  # the rebuild
    with pytest.raises(CorpusChanged, match="changed under the run"):
        memory.documents("present", 0)
    (target / "docs" / "b.jsonl").write_text(session("edited in place"))  # a file swapped behind its manifest
    fresh = MemorySource(settings, tmp_path, locked={("present", 0): sha256_file(target / MANIFEST)})
    with pytest.raises(CorpusChanged, match="b.jsonl"):
        fresh.documents("present", 0)


def test_a_bad_run_id_is_refused_before_the_engine_is_asked(tmp_path):
    import os
    import subprocess
    import sys

    from conftest import REPO

    proc = subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", "grid", "--preset", "harness",
                           "--run-id", "../escape", "--runs-dir", str(tmp_path / "runs")],
                          env={**os.environ, "MEMGRID_ROOT": str(REPO), "DOCKER_HOST": "unix:///nonexistent/docker.sock"},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--run-id '../escape'" in lines[0], proc.stderr
    assert not (tmp_path / "runs").exists()
