"""Every benchmark still runs: each `benchmarks/*.py` (but private helpers, `_*.py`) is run with `--quick`
and must exit 0 and print its figure, a line starting with `figure:` (benchmarks/README.md). The scripts
are discovered, so a benchmark added later is covered without touching this file. A benchmark that
imports benchmarks/_engine.py needs the Docker engine: it gets the engine fixture (skipped without an
engine, failed under CI). Figures' values are not judged here: a benchmark is a script, never a timed test,
so two run at a time (most of a quick run is waiting on containers and interpreter start)."""

import os
import re
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO / "benchmarks"
FIGURE = "figure:"
# A hard stop for a hung benchmark; a quick run takes seconds (the slowest, claude_code.py, ~30 s, more
# when it builds the recall corpus for the first time on this checkout).
TIMEOUT_SECONDS = 300
PARALLEL = 2  # the machine's cores


def discovered() -> list[Path]:
    return sorted(p for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_"))


def needs_engine(script: Path, seen: frozenset[Path] = frozenset()) -> bool:
    """It imports _engine or memgrid's engine module, itself or through another benchmark it imports (executors.py
    runs throughput.py's grids): without the engine marker, `make test-fast` would run it with no engine."""
    text = script.read_text()
    if re.search(r"^\s*(from (_engine|runner\.env\.engine) import|import (_engine|runner\.env\.engine))\b", text, re.MULTILINE):
        return True
    siblings = (BENCHMARKS / f"{name}.py" for name in re.findall(r"^\s*from (\w+) import", text, re.MULTILINE))
    return any(s.is_file() and s not in seen and needs_engine(s, seen | {script}) for s in siblings)


DRY = [s for s in discovered() if not needs_engine(s)]
ENGINE = [s for s in discovered() if needs_engine(s)]


def run_quick(script: Path) -> subprocess.CompletedProcess | None:
    """None when it ran over the timeout."""
    try:
        return subprocess.run([sys.executable, str(script), "--quick"], cwd=REPO, capture_output=True, text=True,
                              timeout=TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        return None


@pytest.fixture(scope="module")
def quick_runs(request):
    """start(scripts) queues the quick runs of those whose tests were selected (each once); the returned
    futures give their results."""
    selected = {item.callspec.params["script"] for item in request.session.items
                if item.module is request.module and hasattr(item, "callspec")}
    pool, futures = ThreadPoolExecutor(max_workers=PARALLEL), {}

    def start(scripts: list[Path]) -> dict[Path, Future]:
        for script in scripts:
            if script in selected and script not in futures:
                futures[script] = pool.submit(run_quick, script)
        return futures

    yield start
    pool.shutdown(cancel_futures=True)


def check(script: Path, out: subprocess.CompletedProcess | None) -> None:
    if out is None:
        pytest.fail(f"{script.name} --quick ran over {TIMEOUT_SECONDS} s: its quick mode must take seconds")
    assert out.returncode == 0, (f"{script.name} --quick exited {out.returncode}\n--- stdout\n{out.stdout[-3000:]}"
                                 f"\n--- stderr\n{out.stderr[-5000:]}")
    figures = [line for line in out.stdout.splitlines() if line.startswith(FIGURE)]
    assert figures, f"{script.name} --quick printed no line starting with {FIGURE!r}:\n{out.stdout[-3000:]}"


def test_discovery_finds_the_shipped_benchmarks_and_sorts_them_by_engine():
    names = {s.stem for s in discovered()}
    assert {"rss", "report_time", "haystack_stats", "overhead", "claude_code", "agents"} <= names
    assert not any(n.startswith("_") for n in names)
    assert {s.stem for s in ENGINE} >= {"overhead", "throughput", "task_check", "claude_code", "agents", "executors"}
    assert "rss" in {s.stem for s in DRY}


@pytest.mark.parametrize("script", DRY, ids=lambda s: s.stem)
def test_dry_benchmark_runs_quick_and_prints_its_figure(script, quick_runs):
    check(script, quick_runs(DRY)[script].result())


@pytest.mark.parametrize("script", ENGINE, ids=lambda s: s.stem)
def test_engine_benchmark_runs_quick_and_prints_its_figure(script, engine, images, quick_runs):
    check(script, quick_runs(ENGINE)[script].result())


def test_ci_cpu_sums_the_kernels_accounting_records_by_program(monkeypatch):
    """ci_cpu.py's figures come from acct v3 records: each 64 bytes, CPU ticks as acct's 13-bit-mantissa floats,
    the program's name at byte 48. Two records of one program and one of another, written as the kernel writes
    them; a record of another version is refused, not summed as garbage."""
    import struct

    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import ci_cpu

    def record(name: bytes, utime: int, stime: int, version: int = 3) -> bytes:
        head = struct.pack("<BBHIIIIIIfHH", 0, version, 0, 0, 0, 0, 1, 1, 0, 1.0, utime, stime)
        return head + bytes(48 - len(head)) + name.ljust(16, b"\0")

    large = (1 << 13) | 25  # exponent 1: 25 x 8 = 200 ticks
    data = record(b"runc", 30, 20) + record(b"runc", 50, 0) + record(b"exe", large, 0)
    programs = ci_cpu.read_accounting(data)
    assert {n: (p.processes, p.cpu_seconds) for n, p in programs.items()} == {"runc": (2, 1.0), "exe": (1, 2.0)}
    with pytest.raises(ValueError, match="version 2"):
        ci_cpu.read_accounting(record(b"runc", 1, 1, version=2))


def test_ci_cpu_inside_the_suite_it_measures_leaves_the_outer_runs_accounting_on(tmp_path):
    """The kernel keeps one accounting file: the suite's own quick run of ci_cpu.py, under a ci_cpu.py run of the
    whole suite, would switch the outer run's accounting to its own file and then off, and the outer table would
    lose every process after it. Told by the outer run's variable, it measures the busy share alone."""
    outer = tmp_path / "pacct"
    out = subprocess.run([sys.executable, str(BENCHMARKS / "ci_cpu.py"), "--quick"], cwd=REPO, capture_output=True,
                         text=True, timeout=TIMEOUT_SECONDS, env={**os.environ, "MEMGRID_CPU_ACCOUNTING": str(outer)})
    assert out.returncode == 0, out.stderr[-3000:]
    assert "process accounting left on for the outer run" in out.stdout, out.stdout
    assert "figure:" in out.stdout and "programs not measured" in out.stdout
