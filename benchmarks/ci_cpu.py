"""Where the suite's CPU goes: runs the tests as `make test` does (ci_timing.py's run) under the kernel's process
accounting (acct(2)), then prints how busy the machine's cores were and the CPU seconds of each program that ran,
most first, with how many processes of it ran: the test workers, the CLIs they start, the engine (dockerd and the
helpers it re-executes, containerd, runc, the shims) and every process inside the containers.

ci_timing.py says which test files take a worker's time; this says what the machine spent it on. When the cores are
busy all the suite long, more workers cannot make CI faster, and only less work can: fewer containers (each costs
the engine a fixed share), fewer runs of a program, lighter ones.

A process is named by the kernel's name of the thread that exited last (`comm`, 15 characters): a Python process that
loaded pyarrow usually ends as `jemalloc_bg_thd` (the pytest workers, memgrid's CLI, the benchmarks it runs), and
`exe` is dockerd running itself again (archive copies into and out of containers, a container's network hook).
Programs still running when the suite ends (dockerd, containerd) are counted from /proc instead, their own time only.
Accounting is machine-wide: whatever else runs meanwhile is counted too, so run it on an otherwise idle machine.
acct(2) needs root (CI runs as root); without it only the busy share is printed. The kernel keeps one accounting
file: this script replaces any accounting already on and turns it off when it ends, so a run of it inside the suite
it measures (test_benchmarks runs every benchmark's --quick) leaves the kernel's accounting alone: the outer run names
its file in MEMGRID_CPU_ACCOUNTING, and a run that finds it set measures the busy share only.

    .venv/bin/python benchmarks/ci_cpu.py [--tests tests] [--workers 3] [--top 25] [--not-docker] [--quick]
"""

import ctypes
import os
import struct
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ci_timing import run_suite, suite_arguments

ACCT_V3 = struct.Struct("<BBHIIIIIIfHH")  # struct acct_v3 (linux/acct.h) up to ac_stime; ac_comm at 48
RECORD = 64
AHZ = 100  # acct v3's clock ticks a second
ACCOUNTING_ENV = "MEMGRID_CPU_ACCOUNTING"
LIVE = ("dockerd", "containerd")  # the engine's daemons: they outlive the suite, so no record of theirs is written


@dataclass
class Program:
    processes: int = 0
    cpu_seconds: float = 0.0


def comp_t(value: int) -> int:
    """acct's 16-bit float: 13 bits of mantissa, 3 of base-8 exponent."""
    return (value & 0x1FFF) << (3 * ((value >> 13) & 7))


def read_accounting(data: bytes) -> dict[str, Program]:
    """CPU seconds (user and system) and process count per program name, from acct v3 records."""
    programs: dict[str, Program] = {}
    for start in range(0, len(data) - RECORD + 1, RECORD):
        record = data[start:start + RECORD]
        _, version, *_, utime, stime = ACCT_V3.unpack_from(record)
        if version & 0x7F != 3:
            raise ValueError(f"process accounting record {start // RECORD}: version {version & 0x7F}, not 3")
        name = record[48:64].split(b"\0", 1)[0].decode(errors="replace") or "?"
        program = programs.setdefault(name, Program())
        program.processes += 1
        program.cpu_seconds += (comp_t(utime) + comp_t(stime)) / AHZ
    return programs


def busy_ticks() -> tuple[int, int]:
    """(ticks the cores were busy, all ticks) since boot: /proc/stat's first line, idle and iowait as not busy."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)


def daemon_seconds() -> dict[str, float]:
    """Each running engine daemon's own CPU seconds (utime + stime, not its children's: acct records those)."""
    hz = os.sysconf("SC_CLK_TCK")
    seen: dict[str, float] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        if name in LIVE:
            fields = stat.rsplit(")", 1)[1].split()
            seen[name] = seen.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / hz
    return seen


def set_accounting(path: Path | None) -> str | None:
    """Turn accounting on into `path` (off with None); why not, or None when done."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.acct(str(path).encode() if path else None) != 0:
        return os.strerror(ctypes.get_errno())
    return None


def main() -> int:
    args = suite_arguments(__doc__.splitlines()[0], "programs")
    with tempfile.TemporaryDirectory(prefix="memgrid-ci-cpu-") as scratch:
        accounting = Path(scratch) / "pacct"
        accounting.touch()
        recording = False
        if os.environ.get(ACCOUNTING_ENV):
            print(f"process accounting left on for the outer run ({ACCOUNTING_ENV}): only the busy share is measured")
        elif refused := set_accounting(accounting):
            print(f"process accounting refused ({refused}; it needs root): only the busy share is measured")
        else:
            recording = True
            os.environ[ACCOUNTING_ENV] = str(accounting)  # the suite's own quick run of this script sees it
        daemons_before, (busy_before, all_before) = daemon_seconds(), busy_ticks()
        try:
            code, wall = run_suite(args.tests, args.workers, args.not_docker, Path(scratch) / "junit.xml")
        finally:
            if recording:
                set_accounting(None)
        busy, total = (now - then for now, then in zip(busy_ticks(), (busy_before, all_before)))
        programs = read_accounting(accounting.read_bytes()) if recording else {}
    if code not in (0, 1):
        print(f"pytest could not run the suite (exit {code}); see its output with: pytest {' '.join(args.tests)}")
        return 1
    for name, seconds in (daemon_seconds().items() if recording else ()):  # beside the records, never alone
        programs.setdefault(name, Program()).cpu_seconds += seconds - daemons_before.get(name, 0.0)
    cores = os.cpu_count() or 1
    busy_seconds = busy / os.sysconf("SC_CLK_TCK")
    share = busy / total if total else 0.0
    counted = sum(p.cpu_seconds for p in programs.values())
    ranked = sorted(programs.items(), key=lambda kv: -kv[1].cpu_seconds)
    for name, program in ranked[:args.top]:
        runs = "running" if name in LIVE else f"{program.processes:6d} ran"
        print(f"{program.cpu_seconds:9.1f} s  {100 * program.cpu_seconds / counted if counted else 0:5.1f} %  "
              f"{runs:>10}  {name}")
    if programs:
        print(f"{counted:9.1f} s  100.0 %  all {len(programs)} programs "
              f"({sum(p.processes for p in programs.values())} processes)")
        top = ", ".join(f"{n} {100 * p.cpu_seconds / counted:.0f} %" for n, p in ranked[:3])
    else:
        top = "programs not measured"
    print(f"figure: {wall:.0f} s wall, {busy_seconds:.0f} CPU seconds of {cores} cores ({100 * share:.0f} % busy); "
          f"most CPU: {top}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
