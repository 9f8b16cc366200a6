"""Where the suite's time goes: runs the tests as `make test` does (pytest-xdist, whole files on a worker) and
prints each file's seconds of one worker (its tests' setup, call and teardown; a module fixture counts once),
slowest first, then the suite's wall time beside the workers' sum. Run it before and after a change that may slow
CI, on the same machine, and compare the tables: CI's budget is 1,500 s and its hard limit 5,400 s, and a slow
machine of this kind takes 3-4x a fast one's time, so compare the ratios, not the seconds across machines.

A file's figure comes from pytest's own JUnit XML (`--junitxml`), not from a plugin of ours; `--report FILE` reads
one written earlier (e.g. by `make test PYTEST_ARGS=--junitxml=FILE`) instead of running the suite.

    .venv/bin/python benchmarks/ci_timing.py [--tests tests] [--workers 3] [--top 25] [--not-docker] [--report F]
"""

import argparse
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Two Docker-free files: the same code path (pytest, xdist, the XML) in seconds.
QUICK = {"tests": ["tests/test_costs.py", "tests/test_stream_json.py"], "workers": 2}


def run_suite(tests: list[str], workers: int, not_docker: bool, report: Path) -> tuple[int, float]:
    """pytest as `make test` runs it; (its exit code, its wall seconds)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}", *tests]
    if workers > 1:
        cmd += ["-n", str(workers), "--dist", "loadfile"]
    if not_docker:
        cmd += ["-m", "not docker"]
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    wall = time.monotonic() - started
    summary = [l for l in proc.stdout.splitlines() if l.strip()][-1:]
    print(f"pytest exited {proc.returncode}: {' '.join(summary)}")
    return proc.returncode, wall


def seconds_by_file(report: Path) -> tuple[dict[str, float], int]:
    """A file's seconds and the number of test cases the report holds. JUnit's `time` of a case is its setup, call
    and teardown together; its `classname` is the module's dotted path (tests.test_x[.Class])."""
    by_file: dict[str, float] = {}
    cases = 0
    for case in ET.parse(report).getroot().iter("testcase"):
        module = case.get("classname", "")
        parts = module.split(".")
        while parts and not parts[-1].startswith("test_"):
            parts.pop()  # a test class's name
        path = "/".join(parts) + ".py" if parts else module
        by_file[path] = by_file.get(path, 0.0) + float(case.get("time") or 0)
        cases += 1
    return by_file, cases


def suite_arguments(description: str, shown: str, **more: dict) -> argparse.Namespace:
    """The options of a script that runs the suite as `make test` does (this one, ci_cpu.py), `more` besides;
    --quick sets the two Docker-free files."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--tests", nargs="+", default=["tests"], help="what pytest runs (default: the whole suite)")
    ap.add_argument("--workers", type=int, default=3, help="pytest-xdist workers (the Makefile's TEST_WORKERS)")
    ap.add_argument("--not-docker", action="store_true", help="only the tests that need no engine (make test-fast)")
    ap.add_argument("--top", type=int, default=25, help=f"{shown} shown")
    for flag, options in more.items():
        ap.add_argument(flag, **options)
    ap.add_argument("--quick", action="store_true", help="two Docker-free files (the suite checks the script runs)")
    args = ap.parse_args()
    if args.quick:
        args.tests, args.workers = QUICK["tests"], QUICK["workers"]
    return args


def main() -> int:
    args = suite_arguments(__doc__.splitlines()[0], "files", **{
        "--report": dict(type=Path, help="read this JUnit XML instead of running the suite")})

    wall = None
    if args.report:
        report = args.report
        if not report.is_file():
            print(f"{report}: no such file: fix: pass the JUnit XML pytest wrote (--junitxml=FILE)", file=sys.stderr)
            return 2
        by_file, cases = seconds_by_file(report)
    else:
        with tempfile.TemporaryDirectory(prefix="memgrid-ci-timing-") as scratch:
            report = Path(scratch) / "junit.xml"
            code, wall = run_suite(args.tests, args.workers, args.not_docker, report)
            if code not in (0, 1):  # 1: some test failed, its time still counts; anything else ran nothing useful
                print(f"pytest could not run the suite (exit {code}); see its output with: pytest {' '.join(args.tests)}")
                return 1
            by_file, cases = seconds_by_file(report)
    total = sum(by_file.values())
    for path, seconds in sorted(by_file.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"{seconds:9.1f} s  {100 * seconds / total if total else 0:5.1f} %  {path}")
    print(f"{total:9.1f} s  100.0 %  all {len(by_file)} files, {cases} tests")
    if wall is None:
        print(f"figure: {total:.0f} s of workers over {len(by_file)} files ({cases} tests)")
    else:
        print(f"figure: {wall:.0f} s wall, {total:.0f} s of {args.workers} workers "
              f"({total / wall if wall else 0:.2f} busy on average) over {len(by_file)} files ({cases} tests)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
